"""docs/api/ has one page per public module, and the API index lists each (issue 28).

The pages are ``::: dpsample.module`` stubs that mkdocstrings fills from the docstrings
(``make docs``); a module added without its page, or a page left behind by a removed
module, fails here rather than silently missing from the site.
"""

from __future__ import annotations

import pathlib
import pkgutil

import dpsample

API = pathlib.Path(__file__).resolve().parent.parent / "docs" / "api"


def _public_modules() -> list[str]:
    names = [
        m.name
        for m in pkgutil.walk_packages(dpsample.__path__, "dpsample.")
        if not any(part.startswith("_") for part in m.name.split("."))
    ]
    return ["dpsample", *sorted(names)]


def test_every_public_module_has_a_page_and_no_page_is_stale():
    modules = set(_public_modules())
    pages = {p.stem for p in API.glob("*.md")} - {"index"}
    assert not modules - pages, f"modules without a page: {sorted(modules - pages)}"
    assert not pages - modules, f"pages of no public module: {sorted(pages - modules)}"


def test_each_page_renders_its_own_module():
    for module in _public_modules():
        text = (API / f"{module}.md").read_text(encoding="utf-8")
        assert f"\n::: {module}\n" in text, module


def test_the_api_index_links_every_page():
    index = (API / "index.md").read_text(encoding="utf-8")
    for module in _public_modules():
        assert f"[`{module}`]({module}.md)" in index, module
