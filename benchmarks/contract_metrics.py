"""Structure metrics of the package before and after the one contract (issue 12).

For a git revision (or the working tree) this measures what issue 12 asks to change:

* **module sizes**: lines of every module of ``dpsample/``, the largest listed;
* **planning styles**: public algorithms that plan through the one contract
  (``PrivateAlgorithm`` subclasses) and the functions that plan in some other way
  (top-level ``plan_*``, ``*_parameters``, ``_defaults``-style helpers);
* **names defined twice**: public top-level names defined in more than one module:
  ``def``, ``class`` and module-level assignments (aliases such as ``gaussian =
  PrivacyGuarantee.gaussian`` included, also inside a top-level ``if``/``try``).
  Re-exports do not count (imports are not definitions), nor do type variables
  (``F = TypeVar(...)`` only types its module's signatures); BlackJAX's kernel
  protocol ``init`` / ``build_kernel`` / ``as_top_level_api``, defined by every
  kernel module on purpose, is left out. ``tests/test_no_duplicate_names.py``
  checks the same count;
* **private cross-imports**: a module importing another module's ``_name``
  (``from dpsample.x import _y``) or reaching ``module._name`` through an imported
  module; ``dpsample._src`` is the shared internal layer, so importing its *public*
  names is fine;
* **type-checker errors**: ``mypy`` on all of ``dpsample/`` with the same settings
  for every revision (``--ignore-missing-imports``, no per-module ignore list).

Usage::

    python benchmarks/contract_metrics.py [--rev 42f0eab] [--rev HEAD] [--no-mypy]
        [--json benchmarks/results/contract_metrics.json]

A revision is checked out with ``git worktree`` into a temporary folder; ``.`` means
the working tree as it is.
"""

from __future__ import annotations

import argparse
import ast
import collections
import json
import pathlib
import re
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
PLANNING = re.compile(
    r"^(plan_\w+|\w+_parameters|_defaults|_plan_\w+|resolve_\w+_schedule)$"
)
#: Layers whose modules hold private algorithms (where a planning function is a style).
ALGORITHM_LAYERS = (
    "dpsample.finders",
    "dpsample.samplers",
    "dpsample.nets",
    "dpsample.pipelines",
    "dpsample.mechanisms",
)
#: BlackJAX's kernel shape: every kernel module defines these on purpose (one protocol).
KERNEL_PROTOCOL = frozenset({"init", "build_kernel", "as_top_level_api"})


def _is_type_variable(value: ast.expr | None) -> bool:
    if not isinstance(value, ast.Call):
        return False
    f = value.func
    name = f.id if isinstance(f, ast.Name) else getattr(f, "attr", "")
    return name in ("TypeVar", "ParamSpec", "TypeVarTuple")


def _assigned(body: list[ast.stmt]) -> list[str]:
    """Names a module body assigns at top level (also in a top-level if/try)."""
    names: list[str] = []
    for node in body:
        if isinstance(node, ast.Assign) and not _is_type_variable(node.value):
            for target in node.targets:
                names += [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            if not _is_type_variable(node.value):
                names.append(node.target.id)
        elif isinstance(node, (ast.If, ast.Try)):
            names += _assigned(node.body) + _assigned(node.orelse)
            if isinstance(node, ast.Try):
                names += _assigned(node.finalbody)
                for handler in node.handlers:
                    names += _assigned(handler.body)
    return names


def _modules(tree: pathlib.Path) -> dict[str, pathlib.Path]:
    pkg = tree / "dpsample"
    out = {}
    for path in sorted(pkg.rglob("*.py")):
        rel = path.relative_to(tree).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _resolve(module: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    # a package's __init__ is its own module name; a plain module drops its last part
    base = base[: len(base) - node.level + (1 if _is_package(module) else 0)]
    return ".".join(base + ([node.module] if node.module else []))


_PACKAGES: set[str] = set()


def _is_package(module: str) -> bool:
    return module in _PACKAGES


def measure(tree: pathlib.Path, *, run_mypy: bool = True) -> dict:
    """The metrics of the ``dpsample`` package under ``tree``."""
    modules = _modules(tree)
    _PACKAGES.clear()
    _PACKAGES.update(m for m, p in modules.items() if p.name == "__init__.py")
    sizes = {m: len(p.read_text().splitlines()) for m, p in modules.items()}
    defined: dict[str, list[str]] = collections.defaultdict(list)
    planners: list[str] = []
    contract_classes: list[str] = []
    cross: list[str] = []
    for module, path in modules.items():
        tree_ast = ast.parse(path.read_text())
        node: ast.AST
        imported_modules: dict[str, str] = {}
        for node in tree_ast.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                if not node.name.startswith("_") and node.name not in KERNEL_PROTOCOL:
                    defined[node.name].append(module)
                if (
                    PLANNING.match(node.name)
                    and not isinstance(node, ast.ClassDef)
                    and module.startswith(ALGORITHM_LAYERS)
                ):
                    planners.append(f"{module}.{node.name}")
                if isinstance(node, ast.ClassDef) and any(
                    (isinstance(b, ast.Name) and b.id == "PrivateAlgorithm")
                    or (isinstance(b, ast.Attribute) and b.attr == "PrivateAlgorithm")
                    for b in node.bases
                ):
                    contract_classes.append(f"{module}.{node.name}")
        for name in _assigned(tree_ast.body):
            if not name.startswith("_") and name not in KERNEL_PROTOCOL:
                defined[name].append(module)
        for node in ast.walk(tree_ast):
            if isinstance(node, ast.ImportFrom):
                source = _resolve(module, node)
                if not source.startswith("dpsample"):
                    continue
                for alias in node.names:
                    name = alias.name
                    target = f"{source}.{name}"
                    if target in modules:
                        imported_modules[alias.asname or name] = target
                    if name.startswith("_") and not name.startswith("__"):
                        if target in modules and name == "_src":
                            continue  # the shared internal layer itself
                        if source != module:
                            cross.append(f"{module}: from {source} import {name}")
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("dpsample") and alias.asname:
                        imported_modules[alias.asname] = alias.name
        for node in ast.walk(tree_ast):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in imported_modules
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
            ):
                cross.append(f"{module}: {imported_modules[node.value.id]}.{node.attr}")
    twice = {n: ms for n, ms in defined.items() if len(set(ms)) > 1}
    result = {
        "modules": len(sizes),
        "lines": sum(sizes.values()),
        "largest": sorted(sizes.items(), key=lambda kv: -kv[1])[:8],
        "over_800_lines": sorted(m for m, s in sizes.items() if s > 800),
        "contract_classes": sorted(contract_classes),
        "other_planners": sorted(planners),
        "names_defined_twice": dict(sorted(twice.items())),
        "private_cross_imports": sorted(set(cross)),
    }
    if run_mypy:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "mypy",
                "--config-file",
                "/dev/null",
                "--ignore-missing-imports",
                "--python-version",
                "3.11",
                "--no-incremental",
                "dpsample",
            ],
            cwd=tree,
            capture_output=True,
            text=True,
        )
        last = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
        found = re.search(r"Found (\d+) errors? in (\d+) files?", last)
        result["mypy_errors"] = int(found.group(1)) if found else 0
        result["mypy_files_with_errors"] = int(found.group(2)) if found else 0
        result["mypy_summary"] = last
    return result


def _at_revision(rev: str, run_mypy: bool) -> dict:
    if rev == ".":
        return measure(ROOT, run_mypy=run_mypy)
    with tempfile.TemporaryDirectory() as tmp:
        where = pathlib.Path(tmp) / "tree"
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(where), rev],
            check=True,
            capture_output=True,
        )
        try:
            return measure(where, run_mypy=run_mypy)
        finally:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(where)],
                check=False,
                capture_output=True,
            )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", action="append", help="git revision, or '.' (repeat)")
    parser.add_argument("--no-mypy", action="store_true")
    parser.add_argument("--json", type=pathlib.Path)
    args = parser.parse_args(argv)
    revs = args.rev or ["."]
    results = {rev: _at_revision(rev, not args.no_mypy) for rev in revs}
    for rev, r in results.items():
        print(f"== {rev}")
        print(f"  modules {r['modules']}, lines {r['lines']}")
        print("  largest: " + ", ".join(f"{m} {s}" for m, s in r["largest"]))
        big = r["over_800_lines"]
        print(f"  modules over 800 lines: {len(big)} {big}")
        print(f"  PrivateAlgorithm classes: {len(r['contract_classes'])}")
        others = r["other_planners"]
        print(f"  other planning functions: {len(others)} {others}")
        print(
            f"  names defined twice: {len(r['names_defined_twice'])} "
            f"{sorted(r['names_defined_twice'])}"
        )
        print(f"  private cross-imports: {len(r['private_cross_imports'])}")
        for line in r["private_cross_imports"]:
            print(f"    {line}")
        if "mypy_errors" in r:
            print(f"  mypy: {r['mypy_summary']}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
