"""Options several declarations share are written once (issue 29, item 1).

:class:`dpsample.options.SharedOptions` is the one mechanism: the first-order finders'
table (``finders.planning.finder_option``) and DP-TR/DP-STR's
(``finders.trust_region.options.tr_option``) are two of its tables. Each declaration
that takes a shared option gets the same field (default, doc, source, rule) as every
other one, and the same as writing :func:`dpsample.options.option` by hand (so moving
the tables onto the class changed no plan).
"""

from __future__ import annotations

import dataclasses

import pytest

from dpsample.finders import planning
from dpsample.finders.sgd_options import DPSGDOptions
from dpsample.finders.spider_options import DPSpiderOptions
from dpsample.finders.trust_region import options as tr_options
from dpsample.options import Options, SharedOptions, option

TABLES = {
    "finder": (planning._FINDER_OPTIONS, (DPSGDOptions, DPSpiderOptions)),
    "trust_region": (
        tr_options._TR_OPTIONS,
        (tr_options.DPTrustRegionOptions, tr_options.DPStochasticTrustRegionOptions),
    ),
}


def _fields(declaration: type[Options]) -> dict[str, dataclasses.Field]:
    return {f.name: f for f in dataclasses.fields(declaration)}


@pytest.mark.parametrize("table", sorted(TABLES))
def test_each_declaration_gets_the_table_field(table):
    shared, declarations = TABLES[table]
    for name in shared.names():
        default, doc, source, rule = shared.entries[name]
        by_hand = option(default, doc, source=source, rule=rule)
        users = [d for d in declarations if name in _fields(d)]
        assert users, f"{table}: no declaration takes the shared option {name!r}"
        for declaration in users:
            field = _fields(declaration)[name]
            assert field.default is by_hand.default or field.default == by_hand.default
            assert dict(field.metadata) == dict(by_hand.metadata), (declaration, name)


def test_thin_names_are_the_tables_fields():
    for name in planning._FINDER_OPTIONS.names():
        got = planning.finder_option(name)
        assert dict(got.metadata) == dict(planning._FINDER_OPTIONS.field(name).metadata)
    for name in tr_options._TR_OPTIONS.names():
        got = tr_options.tr_option(name)
        assert dict(got.metadata) == dict(tr_options._TR_OPTIONS.field(name).metadata)


def test_a_bad_table_is_refused_when_made():
    with pytest.raises(ValueError, match="expected source"):
        SharedOptions(x0=(None, "Start.", "user", ""))
    with pytest.raises(ValueError, match="expected \\(default, doc, source, rule\\)"):
        SharedOptions(x0=(None, "Start."))
    with pytest.raises(KeyError, match="no shared option 'rate'"):
        planning.finder_option("rate")
