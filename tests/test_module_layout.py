"""The package's layout (issue 29 item 5): no module over 800 lines, no import circle.

Both read the sources only (no import). An import circle is a cycle of module-level
imports among dpsample's modules, found with :mod:`ast`: an import inside a function
(a lazy import that breaks a real cost, which says so) or under ``if TYPE_CHECKING:``
does not run when the module is imported, so it is no arrow. ``from pkg import name``
is an arrow to ``pkg.name`` when that is a module, else to ``pkg``. Each check is
also run on a small planted package, where it must find what was planted.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import import_graph

PACKAGE = Path(__file__).resolve().parents[1] / "dpsample"
MAX_LINES = 800


def _line_counts(root: Path) -> dict[str, int]:
    return {
        str(path.relative_to(root)): len(path.read_text(encoding="utf-8").splitlines())
        for path in import_graph.modules(root).values()
    }


def _top_level_imports(tree: ast.Module) -> Iterator[ast.Import | ast.ImportFrom]:
    """Import statements that run on import: top level, in ``try``/``if`` bodies,
    except under ``if TYPE_CHECKING:`` (never inside a function or class)."""
    todo: list[ast.stmt] = list(tree.body)
    while todo:
        node = todo.pop(0)
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If):
            test = node.test
            name = test.id if isinstance(test, ast.Name) else getattr(test, "attr", "")
            if name != "TYPE_CHECKING":
                todo.extend(node.body)
            todo.extend(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody):
                todo.extend(block)
            for handler in node.handlers:
                todo.extend(handler.body)


def _import_graph(root: Path) -> dict[str, set[str]]:
    """``{module: modules of the package it imports at module level}``."""
    modules = import_graph.modules(root)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in _top_level_imports(tree):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:  # relative: up from this module's package
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*up, base] if base else up)
                targets = [
                    f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                    for a in node.names
                ]
            graph[name] |= {t for t in targets if t in modules and t != name}
    return graph


def _planted(tmp_path: Path) -> Path:
    """A package with a circle a -> b -> a, a lazy import, a TYPE_CHECKING import,
    a relative import and a 801-line module."""
    root = tmp_path / "pkg"
    (root / "sub").mkdir(parents=True)
    files = {
        "__init__.py": "",
        "a.py": "from pkg import b\n",
        "b.py": "import os\nfrom .sub import c\nif True:\n    from pkg.a import x\n",
        "sub/__init__.py": "",
        "sub/c.py": "def f():\n    from pkg import a\n",
        "sub/d.py": (
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.a\n"
            + "x = 1\n" * 798
        ),
    }
    for name, text in files.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


def test_the_checks_find_what_is_planted(tmp_path):
    root = _planted(tmp_path)
    graph = _import_graph(root)
    assert graph == {
        "pkg": set(),
        "pkg.a": {"pkg.b"},
        "pkg.b": {"pkg.sub.c", "pkg.a"},
        "pkg.sub": set(),
        "pkg.sub.c": set(),  # a lazy import is no arrow
        "pkg.sub.d": set(),  # nor one under TYPE_CHECKING
    }
    assert import_graph.circles(graph) == [{"pkg.a", "pkg.b"}]
    counts = _line_counts(root)
    assert counts["sub/d.py"] == MAX_LINES + 1 and counts["a.py"] == 1


def test_no_module_is_over_800_lines():
    over = {f: n for f, n in _line_counts(PACKAGE).items() if n > MAX_LINES}
    assert not over, f"modules over {MAX_LINES} lines: {over}"


def test_no_import_circle_among_the_modules():
    graph = _import_graph(PACKAGE)
    assert len(graph) > 100 and graph["dpsample.validation.spec"]  # power: it reads
    assert not import_graph.circles(graph), import_graph.circles(graph)
