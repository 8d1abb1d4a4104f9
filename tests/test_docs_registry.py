"""The docs' algorithm tables read the registry (issue 12).

* ``docs/index.md`` has the one table of every registered algorithm (section
  "Algorithms"): its names are exactly ``dpsample.registry.names()``, in the
  registry's order, and each row's kind, seed and theorem are those that
  ``dpsample list`` prints.
* The ``dpsample list`` excerpt in ``docs/cli.md`` shows only registered names, each
  with its registered kind and its ``seed ..., theorem`` source.

Fast: it reads the registry's class attributes (no JAX compilation).
"""

from __future__ import annotations

import pathlib
import re

import pytest

from dpsample import registry
from dpsample.cli import list_algorithms

DOCS = pathlib.Path(__file__).resolve().parent.parent / "docs"


def _section(text: str, heading: str) -> str:
    """The body of the ``## heading`` section of a Markdown page."""
    match = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert match, f"no '## {heading}' section"
    return match.group(1)


def _index_rows() -> list[tuple[str, str, str, str]]:
    """``(name, kind, seed, theorem)`` of the algorithm table of ``docs/index.md``."""
    body = _section((DOCS / "index.md").read_text(encoding="utf-8"), "Algorithms")
    lines = [line for line in body.splitlines() if line.startswith("|")]
    assert lines, "docs/index.md's Algorithms section has no table"
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    assert header == ["name", "kind", "seed", "theorem"]
    assert set(lines[1].replace("|", "").strip()) <= {"-", ":", " "}
    rows = []
    for line in lines[2:]:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        assert len(cells) == 4, f"malformed row: {line!r}"
        name, kind, seed, theorem = cells
        assert re.fullmatch(r"`[a-z0-9_]+`", name), f"name not in backticks: {line!r}"
        rows.append((name.strip("`"), kind, seed, theorem))
    return rows


def _listed() -> dict[str, dict[str, str]]:
    """What ``dpsample list`` prints, by name."""
    return {a["name"]: a for a in list_algorithms()["algorithms"]}


def test_list_prints_the_registry():
    assert list(_listed()) == list(registry.names())


def test_index_table_lists_every_registered_algorithm_once():
    names = [row[0] for row in _index_rows()]
    assert len(names) == len(set(names)), "a name appears twice"
    missing = sorted(set(registry.names()) - set(names))
    unknown = sorted(set(names) - set(registry.names()))
    assert not missing, f"registered but not in docs/index.md: {missing}"
    assert not unknown, f"in docs/index.md but not registered: {unknown}"
    assert names == list(registry.names()), "not in the registry's order"


@pytest.mark.parametrize("row", _index_rows(), ids=lambda row: row[0])
def test_index_row_is_what_dpsample_list_prints(row):
    name, kind, seed, theorem = row
    listed = _listed()
    assert name in listed, f"{name!r} is not registered"
    a = listed[name]
    assert (kind, seed, theorem) == (a["kind"], a["seed"], a["theorem"])


def test_cli_list_excerpt_shows_registered_algorithms():
    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    body = _section(text, "`dpsample list`")
    block = re.search(r"```text\n(.*?)```", body, re.S)
    assert block, "docs/cli.md's `dpsample list` section has no example output"
    lines = block.group(1).splitlines()
    assert lines[0].split() == ["NAME", "KIND", "GUARANTEE", "SOURCE"]
    listed = _listed()
    assert len(lines) > 1
    for line in lines[1:]:
        name, kind = line.split()[:2]
        assert name in listed, f"docs/cli.md shows {name!r}, which is not registered"
        a = listed[name]
        assert kind == a["kind"]
        assert f"seed {a['seed']}, " in line, f"{name}: source is not {a['seed']!r}"


# docs/choosing_a_pipeline.md (issue 28): its snippet spells out
# ``registry.names(kind)`` for every kind, and its "Which warm start" table has one row
# per registered sampler.


def _choosing() -> str:
    return (DOCS / "choosing_a_pipeline.md").read_text(encoding="utf-8")


def _names_shown(text: str) -> dict[str, tuple[str, ...]]:
    """``kind -> names`` from the ``registry.names("kind")  # (...)`` lines."""
    shown = {}
    pattern = r'registry\.names\("([a-z_]+)"\)\s*((?:#[^\n]*\n?)+)'
    for kind, comment in re.findall(pattern, text):
        body = " ".join(line.lstrip("# ") for line in comment.splitlines())
        assert "..." not in body, f"names({kind!r}) is abbreviated: {body!r}"
        shown[kind] = tuple(re.findall(r"'([a-z0-9_]+)'", body))
    return shown


def test_choosing_a_pipeline_shows_every_kinds_registered_names():
    shown = _names_shown(_choosing())
    kinds = {e.kind for e in registry.entries()}
    assert set(shown) == kinds, f"kinds shown {sorted(shown)}, registered {kinds}"
    for kind, names in shown.items():
        assert names == registry.names(kind), kind


def test_choosing_a_pipeline_sampler_table_has_one_row_per_registered_sampler():
    body = _section(_choosing(), "2. Warm start or not, and which warm start")
    table = body.split("### Which warm start", 1)[1].split("###", 1)[0]
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    names = [re.match(r'\| `"([a-z0-9_]+)"`', row).group(1) for row in rows]
    assert names == list(registry.names("sampler"))


def test_every_name_in_backticks_on_choosing_a_pipeline_that_looks_registered_is():
    # a quoted algorithm name (finder="...", sampler="...") must be registered
    text = _choosing()
    quoted = re.findall(r'(?:finder|sampler|algorithm)="([a-z0-9_]+)"', text)
    assert quoted, "the page names no algorithm by a finder=/sampler= argument"
    unknown = sorted(set(quoted) - set(registry.names()))
    assert not unknown, f"docs/choosing_a_pipeline.md names unregistered {unknown}"
