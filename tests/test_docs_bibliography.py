"""The docs' citations resolve in docs/bibliography.md (issue 28).

* Every page's first mention of "seed 00N" (outside code and headings) links to the
  seed's entry, ``bibliography.md#seed-00N``, and that anchor exists.
* Every erratum the docs cite ("errata E28", "E25-E27") and every item of seed 003's
  spec ("spec 003 B6", "spec A10" on the warm-start page) has a row in the
  bibliography's tables, so a reader without the specs learns what it says.
"""

from __future__ import annotations

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
BIB = (DOCS / "bibliography.md").read_text(encoding="utf-8")
PAGES = [
    ROOT / "README.md",
    *sorted(p for p in DOCS.glob("*.md") if p != DOCS / "bibliography.md"),
]
_SEED = re.compile(r"\b[Ss]eed (00[0-4])\b")


def _prose(text: str) -> list[str]:
    """The page's lines outside fenced code and headings, inline code blanked."""
    lines, fenced = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
            continue
        if not fenced and not line.startswith("#"):
            lines.append(re.sub(r"`[^`]*`", "``", line))
    return lines


def _rows(table_heading: str) -> set[str]:
    body = BIB.split(table_heading, 1)[1].split("\n\n**", 1)[0]
    return set(re.findall(r"^\| ([A-Z][0-9]+) \|", body, re.M))


@pytest.mark.parametrize("seed", ["000", "001", "002", "003", "004"])
def test_bibliography_has_an_anchor_per_seed(seed):
    assert f'<a id="seed-{seed}"></a>**seed {seed}**' in BIB


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_first_mention_of_each_seed_links_to_the_bibliography(page):
    target = "docs/bibliography.md" if page.name == "README.md" else "bibliography.md"
    first: dict[str, str] = {}
    for line in _prose(page.read_text(encoding="utf-8")):
        for match in _SEED.finditer(line):
            first.setdefault(match.group(1), line[match.start() - 1 : match.end() + 40])
    for seed, context in first.items():
        link = f"]({target}#seed-{seed})"
        assert context.startswith("[") and link in context, (
            f"{page.name}: the first mention of seed {seed} is not a link to "
            f"{target}#seed-{seed}: {context!r}"
        )


def test_every_cited_erratum_of_seed_000_has_a_row():
    cited = set()
    for page in PAGES:
        for line in _prose(page.read_text(encoding="utf-8")):
            for a, b in re.findall(r"errat(?:a|um) E(\d+)(?:[–-]E(\d+))?", line):
                cited.update(f"E{i}" for i in range(int(a), int(b or a) + 1))
    assert cited, "the docs cite no erratum: this test checks nothing"
    rows = _rows("**Seed 000's spec")
    assert cited <= rows, f"errata cited without a row: {sorted(cited - rows)}"


def test_every_cited_item_of_seed_003s_spec_has_a_row():
    cited = set()
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        cited.update(re.findall(r"spec 003 ([AB][0-9]+)", text))
        if page.name == "warm_start.md":  # the page of seed 003: "spec A10"
            cited.update(re.findall(r"spec ([AB][0-9]+)", text))
    assert {"B6", "B20"} <= cited
    rows = _rows("**Seed 003's spec")
    assert cited <= rows, f"spec 003 items cited without a row: {sorted(cited - rows)}"
