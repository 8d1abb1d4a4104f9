"""Packaging facts a user relies on: the licence text and PEP 561 type hints ship,
and the declared dependency floors are the versions ``make test-min`` installs."""

from __future__ import annotations

import importlib.resources
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_license_file_matches_the_declared_license():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert meta["license"] == "Apache-2.0"  # PEP 639: an SPDX expression
    assert meta["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text


def test_py_typed_is_in_the_package_and_its_data():
    assert importlib.resources.files("dpsample").joinpath("py.typed").is_file()
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "py.typed" in config["tool"]["setuptools"]["package-data"]["dpsample"]


def _floors() -> dict[str, str]:
    """Every ``name>=floor`` of the core dependencies and the extras."""
    from packaging.requirements import Requirement

    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = meta["optional-dependencies"]
    specs = [*meta["dependencies"]]
    for name in ("sweep", "diagnostics", "datasets"):
        specs += extras[name]
    floors = {}
    for text in specs:
        req = Requirement(text)
        (low,) = [s.version for s in req.specifier if s.operator == ">="]
        floors[req.name] = low
        if req.name == "dask" and "distributed" in req.extras:
            floors["distributed"] = low
    return floors


def _pins() -> dict[str, str]:
    lines = (ROOT / "constraints" / "minimum.txt").read_text().splitlines()
    pins = [line.split("#")[0].strip() for line in lines]
    return dict(p.split("==") for p in pins if p)


def test_minimum_constraints_pin_every_declared_floor():
    from packaging.version import Version

    floors, pins = _floors(), _pins()
    assert set(floors) <= set(pins)
    for name, low in floors.items():
        assert Version(pins[name]) == Version(low), (name, pins[name], low)


def test_minimum_environment_is_git_ignored_and_run_by_ci():
    assert ".venv-min/" in (ROOT / ".gitignore").read_text().splitlines()
    assert "make test-min" in (ROOT / ".ci" / "run").read_text()
