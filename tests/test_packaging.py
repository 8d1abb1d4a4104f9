"""Packaging facts a user relies on: the licence text and PEP 561 type hints ship."""

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
