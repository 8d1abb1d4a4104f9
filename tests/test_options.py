"""Options declared once (issue 29 item 1): dpsample.options and its declarations.

An algorithm's options are one :class:`~dpsample.options.Options` dataclass; the
plan's keywords, the registry (so the TOML ``[options]`` schema and ``dpsample
list``), the plan's table (``--dry-run``) and the docs' option tables are read from
it. The convenience functions keep explicit signatures (static typing, IDEs, the API
pages), checked here against the declarations.
"""

from __future__ import annotations

import dataclasses
import pathlib
import re

import pytest

from dpsample import registry
from dpsample.config import ConfigError, dry_run, load_config, resolve_config
from dpsample.finders.dp_sgd import dp_sgd
from dpsample.finders.dp_spider import dp_spider
from dpsample.finders.goldstein import (
    GoldsteinZeroOrder,
    goldstein_first_order,
    goldstein_theorem_parameters,
    goldstein_zero_order,
)
from dpsample.finders.goldstein.options import (
    GoldsteinZeroOrderOptions,
)
from dpsample.finders.spider_sosp import spider_sosp
from dpsample.finders.trust_region import (
    dp_stochastic_trust_region,
    dp_trust_region,
)
from dpsample.nets import exponential_mechanism
from dpsample.options import (
    Options,
    expand_option_tables,
    fixed,
    option,
    option_table,
    signature_mismatches,
)
from dpsample.pipelines.jl import jl_glm
from dpsample.pipelines.kl_spider import kl_spider
from dpsample.pipelines.quasar import dp_sgd_quasar
from dpsample.pipelines.warm_start import warm_start
from dpsample.samplers.gibbs import gibbs

ROOT = pathlib.Path(__file__).resolve().parent.parent

#: The convenience function of every registered algorithm (each declares its
#: options), with the keywords it adds and the options it requires although the
#: plan does not.
CONVENIENCE = {
    "goldstein_zero_order": (goldstein_zero_order, ("epsilon", "delta"), ("x0",)),
    "goldstein_first_order": (goldstein_first_order, ("epsilon", "delta"), ("x0",)),
    "dp_spider": (dp_spider, ("epsilon", "delta"), ()),
    "dp_sgd": (dp_sgd, ("epsilon", "delta"), ()),
    "net": (exponential_mechanism, ("epsilon",), ()),
    "dp_trust_region": (dp_trust_region, ("epsilon", "delta"), ("x0",)),
    "dp_stochastic_trust_region": (
        dp_stochastic_trust_region,
        ("epsilon", "delta"),
        ("x0",),
    ),
    "jl_glm": (jl_glm, ("epsilon", "delta", "max_evaluations"), ("glm",)),
    "quasar_sgd": (
        dp_sgd_quasar,
        ("epsilon", "delta"),
        ("quasar_convexity", "failure_prob"),
    ),
    "gibbs": (gibbs, ("epsilon", "delta"), ()),
    "spider_sosp": (spider_sosp, ("epsilon", "delta"), ()),
    "kl_spider": (kl_spider, ("epsilon", "delta"), ("kl_gamma", "kl_exponent")),
    # the net's keywords are folded into sampler_options; ledger, max_evaluations
    # are WarmStart.solve's
    "warm_start": (
        warm_start,
        ("epsilon", "delta", "spacing", "net", "max_points", "chunk_size")
        + ("ledger", "max_evaluations"),
        (),
    ),
}

#: The docs page that shows each declared algorithm's option table.
DOCS_PAGE = {
    "goldstein_zero_order": "goldstein.md",
    "goldstein_first_order": "goldstein.md",
    "dp_spider": "finders.md",
    "dp_sgd": "finders.md",
    "net": "nets.md",
    "dp_trust_region": "finders.md",
    "dp_stochastic_trust_region": "finders.md",
    "jl_glm": "warm_start.md",
    "quasar_sgd": "warm_start.md",
    "gibbs": "samplers_gibbs.md",
    "spider_sosp": "finders.md",
    "kl_spider": "warm_start.md",
    "warm_start": "warm_start.md",
}


@dataclasses.dataclass(frozen=True, kw_only=True)
class _Toy(Options):
    steps: int | None = option(None, "Steps.", source="theorem", rule="T = n")
    scale: float = option(1.0, "Multiplier.", note="O(1) constant")
    mode: str = fixed("a", "Always a.")
    hidden: float = fixed(2.0, "Not shown.", shown=False)


def test_fixed_fields_are_not_options_and_unknown_names_are_refused():
    assert list(_Toy.parameters()) == ["steps", "scale"]
    assert _Toy.from_options({}).mode == "a"
    with pytest.raises(TypeError, match=r"has no option\(s\) \['mode'\]; valid"):
        _Toy.from_options({"mode": "b"})
    with pytest.raises(ValueError, match="Expected source"):
        option(1, "x", source="user")


def test_rows_follow_the_declaration_user_values_and_overrides():
    rows = _Toy.from_options({"scale": 1.0}).rows(resolved={"steps": 7})
    # a value equal to the default is not "user"; fixed rows are shown as default
    assert {k: (p.value, p.source, p.note) for k, p in rows.items()} == {
        "steps": (7, "theorem", "T = n"),
        "scale": (1.0, "default", "O(1) constant"),
        "mode": ("a", "default", ""),
    }
    rows = _Toy.from_options({"steps": 3, "scale": 2.0}).rows(
        sources={"steps": "derived"}, notes={"steps": "capped"}
    )
    assert rows["steps"].source == "user" and rows["steps"].note == "capped"
    assert rows["scale"].source == "user" and rows["scale"].note == "O(1) constant"
    # a None value is no row
    assert "steps" not in _Toy.from_options({}).rows()


def test_the_table_lists_options_not_fixed_fields():
    table = option_table(_Toy).splitlines()
    assert table[2] == "| `steps` | `int | None` | `None` | theorem: T = n | Steps. |"
    assert len(table) == 4 and "mode" not in option_table(_Toy)


@pytest.mark.parametrize("name", sorted(CONVENIENCE))
def test_convenience_signatures_match_their_declarations(name):
    fn, extra, required = CONVENIENCE[name]
    declaration = registry.get(name).cls.options_type
    assert declaration is not None
    assert signature_mismatches(fn, declaration, extra=extra, required=required) == []


def test_every_registered_algorithm_declares_its_options_and_is_checked():
    # Issue 29 item 1: every registered algorithm's options live in one declaration,
    # and each declaration has its convenience signature and docs table checked.
    names = {e.name for e in registry.entries()}
    declared = {e.name for e in registry.entries() if e.cls.options_type is not None}
    assert declared == names
    assert declared == set(CONVENIENCE) == set(DOCS_PAGE)


def test_a_drifted_signature_is_reported():
    def fn(*, epsilon: float, steps: int = 3, other: float = 1.0) -> None:
        """Toy.

        Args:
            epsilon: e.
            steps: s.
        """

    out = signature_mismatches(fn, _Toy, extra=("epsilon",))
    assert out == [
        "other: not an option",
        "scale: missing",
        "steps: default 3, declared None",
        "steps: annotation int, declared int | None",
    ]


@pytest.mark.parametrize("name", sorted(CONVENIENCE))
def test_registry_reads_the_declarations(name):
    entry = registry.get(name)
    declaration = entry.cls.options_type
    assert declaration is not None and declaration.algorithm == name
    assert [o.name for o in entry.options()] == list(declaration.parameters())
    assert entry.cls.option_parameters() == declaration.parameters()


def test_goldstein_first_order_fixes_what_it_does_not_offer():
    fo = {o.name for o in registry.get("goldstein_first_order").options()}
    assert not fo & {"passes", "beta", "c_t", "estimator"}


def test_the_schedule_takes_schedule_options_only():
    kw = dict(n=100, dim=2, epsilon=1.0, delta=1e-5, lipschitz=1.0, initial_gap=1.0)
    with pytest.raises(TypeError, match=r"\['x0'\] are plan options"):
        goldstein_theorem_parameters(alpha=0.1, x0=[0.0, 0.0], **kw)
    with pytest.raises(TypeError, match=r"has no option\(s\) \['bogus'\]"):
        goldstein_theorem_parameters(alpha=0.1, bogus=1, **kw)


@pytest.mark.parametrize("name", sorted(DOCS_PAGE))
def test_the_docs_show_each_declared_table(name):
    page = (ROOT / "docs" / DOCS_PAGE[name]).read_text(encoding="utf-8")
    declaration = registry.get(name).cls.options_type
    assert declaration is not None
    assert option_table(declaration) in expand_option_tables(page)


def test_a_marker_must_name_a_declaration():
    with pytest.raises(TypeError, match="names no Options declaration"):
        expand_option_tables("<!-- options: dpsample.options:option_table -->")


# ----------------------------------------------------------- adding one option
@dataclasses.dataclass(frozen=True, kw_only=True)
class ExtendedOptions(GoldsteinZeroOrderOptions):
    """The zero-order options and one more (declared here only)."""

    algorithm = "goldstein_extended"
    extra_knob: float = option(
        2.5, "A knob added in one place.", source="theorem", rule="the test rule"
    )


class Extended(GoldsteinZeroOrder):
    """The zero-order finder with :class:`ExtendedOptions`."""

    name = "goldstein_extended"
    options_type = ExtendedOptions


def test_an_option_added_to_a_declaration_appears_everywhere(monkeypatch):
    # one edit, the field above; everything below reads it
    entry = registry.Entry(
        "goldstein_extended", "finder", "004", "", "", "", f"{__name__}:Extended"
    )
    entries = registry._entries()
    monkeypatch.setattr(registry, "_entries", lambda: (*entries, entry))

    # the signature: plan keywords and the registry's options
    param = Extended.option_parameters()["extra_knob"]
    assert (param.default, param.annotation) == (2.5, "float")
    assert "extra_knob" in ExtendedOptions.signature().parameters
    option_ = {o.name: o for o in registry.get("goldstein_extended").options()}
    assert option_["extra_knob"].type is float

    # the TOML schema: accepted, type-checked, listed among the valid options
    raw = load_config(str(ROOT / "examples" / "goldstein_synthetic.toml"))
    raw["job"]["name"] = "goldstein_extended"
    raw["options"] |= {"num_directions": 4, "num_iters": 40}
    with pytest.raises(ConfigError, match="extra_knob must be a number"):
        resolve_config({**raw, "options": {**raw["options"], "extra_knob": "x"}})
    with pytest.raises(ConfigError, match="valid options: .*extra_knob"):
        resolve_config({**raw, "options": {**raw["options"], "nope": 1}})

    # the dry run's table: the default with its source and rule, then a user value
    rows = dry_run(resolve_config(raw)).report["plan"]["params"]
    assert rows["extra_knob"] == {
        "value": 2.5,
        "source": "theorem",
        "note": "the test rule",
    }
    raw["options"]["extra_knob"] = 3
    planned = dry_run(resolve_config(raw))
    assert planned.report["plan"]["params"]["extra_knob"]["source"] == "user"
    assert re.search(r"\n +extra_knob += 3 +\[user\]", str(planned.plan))

    # the docs' table
    marker = f"<!-- options: {__name__}:ExtendedOptions -->"
    table = expand_option_tables(marker)
    row = "| `extra_knob` | `float` | `2.5` | theorem: the test rule | A knob added"
    assert row in table
