"""No public name is defined in two modules of ``dpsample`` (issue 12).

A *definition* is a module's top-level ``def``, ``class`` or assignment (aliases
such as ``gaussian = PrivacyGuarantee.gaussian`` included), also inside a top-level
``if``/``try``. Imports are not definitions: re-exporting a name is how a package
gives it one public home. Names starting with ``_`` are not public.

``benchmarks/contract_metrics.py`` counts the same thing ("names defined twice").
"""

from __future__ import annotations

import ast
import collections
import pathlib
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[1]

#: Legitimate exceptions, with the reason.
ALLOWED = {
    # BlackJAX's kernel protocol: every kernel module defines these on purpose
    # (one protocol, read as module.init / module.build_kernel / ...).
    "init": "BlackJAX kernel protocol",
    "build_kernel": "BlackJAX kernel protocol",
    "as_top_level_api": "BlackJAX kernel protocol",
}

#: Duplicates that exist today and are still to be removed (each in files outside
#: the change that added this test). The test fails if one disappears without being
#: taken off this list, so the list cannot go stale.
OPEN: dict[str, set[str]] = {}


def _package_files() -> list[str]:
    try:
        out = subprocess.run(
            ["git", "ls-files", "dpsample/*.py"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        out = []
    if not out:  # not a git checkout (e.g. an sdist): walk the package
        out = [str(p.relative_to(ROOT)) for p in (ROOT / "dpsample").rglob("*.py")]
    return sorted(out)


def _is_type_variable(value: ast.expr | None) -> bool:
    """``TypeVar(...)`` / ``ParamSpec(...)``: a typing helper scoped to its module."""
    if not isinstance(value, ast.Call):
        return False
    f = value.func
    name = f.id if isinstance(f, ast.Name) else getattr(f, "attr", "")
    return name in ("TypeVar", "ParamSpec", "TypeVarTuple")


def top_level_definitions(body: list[ast.stmt]) -> list[str]:
    """Names a module body defines at top level (``def``, ``class``, assignment).

    Type variables are left out: they only type the module's own signatures.
    """
    names: list[str] = []
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, ast.Assign) and not _is_type_variable(node.value):
            for target in node.targets:
                names += [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            if not _is_type_variable(node.value):
                names.append(node.target.id)
        elif isinstance(node, ast.If):
            names += top_level_definitions(node.body)
            names += top_level_definitions(node.orelse)
        elif isinstance(node, ast.Try):
            names += top_level_definitions(node.body)
            names += top_level_definitions(node.orelse)
            names += top_level_definitions(node.finalbody)
            for handler in node.handlers:
                names += top_level_definitions(handler.body)
    return names


def _duplicates() -> dict[str, set[str]]:
    defined: dict[str, set[str]] = collections.defaultdict(set)
    for path in _package_files():
        tree = ast.parse((ROOT / path).read_text(), filename=path)
        for name in top_level_definitions(tree.body):
            if not name.startswith("_") and name not in ALLOWED:
                defined[name].add(path)
    return {n: ms for n, ms in defined.items() if len(ms) > 1}


def test_no_public_name_is_defined_in_two_modules():
    twice = _duplicates()
    new = {n: sorted(ms) for n, ms in twice.items() if ms != OPEN.get(n)}
    assert not new, f"public names defined in more than one module: {new}"


def test_open_duplicates_list_is_not_stale():
    twice = _duplicates()
    fixed = sorted(n for n in OPEN if n not in twice)
    assert not fixed, f"no longer defined twice, take them off OPEN: {fixed}"


def test_definitions_count_aliases_but_not_imports():
    tree = ast.parse(
        "from m import a\nimport b\nc = d.e\nf: int = 1\n"
        "if X:\n    g = 1\ndef h(): pass\nclass K: pass\nT = TypeVar('T')\n"
    )
    assert top_level_definitions(tree.body) == ["c", "f", "g", "h", "K"]


def test_privacy_has_no_mechanism_aliases():
    """The removed aliases named the mechanisms' own functions."""
    import dpsample.privacy as privacy

    for name in ("gaussian", "laplace", "exponential_mechanism"):
        assert not hasattr(privacy, name)
        assert name not in privacy.__all__
