"""Load a repository script (under ``experiments/``, ``tools/``, ``benchmarks/``) as a
module, by path, for the tests that exercise it: one place for the four lines of
:mod:`importlib` that would otherwise be copied into each test file."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def load_script(relative: str) -> ModuleType:
    """The script at ``ROOT / relative`` as a fresh module named after its file."""
    path = ROOT / relative
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
