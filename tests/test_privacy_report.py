"""``print(result.privacy)``, ``result.report()``, the CLI's PRIVACY block: one table.

A plan attaches its budget and stages to its guarantee (``ReportContext``); the
report reads the guarantee there, lists the stages, the mechanisms (kind x count,
never one line per step), every route, the verdict with the assumptions and the
ledger, and renders the same as HTML. The CLI prints this object's text, so the
block printed by ``dpsample quickstart`` is ``str(result.privacy)`` of the same run,
and its ledger lines are the numbers of the ``BudgetLedger`` the run charged.
"""

import contextlib
import html.parser
import io

import dp_accounting
import pytest

from dpsample import cli, registry
from dpsample.config.execution import _stage_ledger
from dpsample.privacy import PrivacyGuarantee, PrivacyReport
from dpsample.privacy.report import DISPLAY_DELTA, ledger_name
from tests.contract_cases import CASES


@pytest.fixture(scope="module")
def warm_plan():
    case = CASES["warm_start"]
    problem = case.make_problem(0, case.n)
    return registry.create("warm_start").plan(problem.spec, case.budget, **case.options)


def test_report_keeps_the_dict_it_replaced():
    g = PrivacyGuarantee.exponential_mechanism(0.1).repeat(100)
    r = g.report(1e-5)
    assert isinstance(r, PrivacyReport)
    assert set(r) == {
        "delta",
        "epsilon",
        "tightest",
        "routes",
        "tv_slack",
        "relation",
        "components",
        "assumptions",
        "conditional",
    }
    assert r.as_dict() == dict(r) and r["epsilon"] == g.epsilon(1e-5)
    assert r["routes"]["rdp"] == r["epsilon"] and r["tightest"] == "rdp"
    assert r["components"] == [("exponential_mechanism(epsilon=0.1)", 100)]


def test_planned_guarantee_prints_its_stages_budget_and_ledger(warm_plan):
    g = warm_plan.guarantee
    text = str(g)
    assert text == str(g.report()) == str(PrivacyReport(g, warm_plan.budget.delta))
    lines = text.splitlines()
    assert lines[0] == "PRIVACY (REPLACE_ONE neighbours)"
    assert lines[1].startswith("  stage sampler  net: ")
    assert lines[2].startswith("  stage finder   dp_sgd: epsilon = ")
    total = g.epsilon(warm_plan.budget.delta)
    assert f"  TOTAL    epsilon = {total:.6g} at delta = 1e-05" in text
    assert "budget (2, 1e-05)" in text
    if g.assumptions:
        assert "within budget, conditional, assuming:" in text
        for a in g.assumptions:
            assert f"  - {a}" in text
    else:
        assert "           within budget\n" in text
    seeded = str(g.assuming("the seed is secret"))
    assert "within budget, conditional, assuming:" in seeded
    assert "  - the seed is secret" in seeded
    # the ledger lines are the BudgetLedger's numbers (what `dpsample run` charges)
    ledger = _stage_ledger("warm_start", warm_plan)
    for name, stage in ledger.stages:
        assert f"{name:<48} epsilon {stage.epsilon(ledger.delta):.6g}" in text
    assert f"spent (composed) epsilon {ledger.spent_epsilon():.6g}" in text
    assert [n for n, _ in ledger.stages] == [
        ledger_name("warm_start", s, p.algorithm) for s, p in warm_plan.stages
    ]


def test_context_is_kept_by_assuming_and_dropped_by_combinators(warm_plan):
    g = warm_plan.guarantee
    assert g.context is not None and g.context.delta == warm_plan.budget.delta
    assert g.assuming("the seed is secret").context is g.context
    assert g.repeat(2).context is None
    assert g.compose(PrivacyGuarantee.pure(0.1)).context is None
    # a context changes no number
    bare = PrivacyGuarantee(g.components, g.relation, g.tv_slack, g.assumptions)
    assert bare.epsilon(1e-5) == g.epsilon(1e-5)


def test_unplanned_guarantee_prints_at_the_display_delta():
    g = PrivacyGuarantee.gaussian(2.0).assuming("x <b> y")
    text = str(g)
    assert f"at delta = {DISPLAY_DELTA:g}" in text and "no plan gave" in text
    assert "conditional, assuming:" in text and "  - x <b> y" in text
    with pytest.raises(ValueError, match="give a delta"):
        g.report()
    assert "no plan gave" not in str(g.report(1e-6))


def test_print_summarises_a_long_schedule_as_kind_and_count():
    events = [dp_accounting.GaussianDpEvent(nm) for nm in (100.0, 110.0, 120.0)]
    g = PrivacyGuarantee.none()
    for ev, k in zip(events, (445, 445, 445), strict=True):
        g = g.compose(PrivacyGuarantee.from_event(ev).repeat(k))
    g = g.compose(PrivacyGuarantee.pure(0.5))
    text = str(g.report(1e-5))
    assert "  mechanisms  Gaussian x1335 (3 settings)" in text
    assert "pure(epsilon=0.5) x1" in text
    assert "DpEvent" not in text and len(text.splitlines()) == 4


class _Balanced(html.parser.HTMLParser):
    """Checks that every opened tag is closed in order; collects the text."""

    VOID = {"br", "hr", "img", "meta", "link", "input"}

    def __init__(self):
        super().__init__()
        self.stack, self.text, self.tags = [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        assert self.stack and self.stack.pop() == tag, (tag, self.stack)

    def handle_data(self, data):
        self.text.append(data)


def _parse(markup):
    parser = _Balanced()
    parser.feed(markup)
    parser.close()
    assert parser.stack == []
    return parser


def test_html_is_well_formed_and_escaped(warm_plan):
    g = warm_plan.guarantee.assuming("a < b & c")
    parser = _parse(g._repr_html_())
    text = "".join(parser.text)
    assert "a < b & c" in text  # escaped in the markup, restored by the parser
    assert "a < b & c" not in g._repr_html_()
    assert parser.tags.count("table") == 2  # the report and the ledger
    assert "warm_start/sampler:net" in text and "spent (composed)" in text
    assert g._repr_html_() == g.report()._repr_html_()
    assert "within budget, conditional" in text
    # a bad parse fails this check (a test that cannot fail is a bug)
    with pytest.raises(AssertionError):
        _parse("<div><table></div></table>")


@pytest.mark.slow
def test_cli_quickstart_prints_the_runs_report():
    from dpsample.config import execute, resolve_config

    cfg = cli.quickstart_config(
        epsilon=2.0,
        delta=1e-6,
        radius=4.0,
        seed=3,
        features=cli.QUICKSTART_FEATURES,
    )
    ex = execute(resolve_config(cfg))
    text = str(ex.result.privacy)
    assert text == str(ex.result.report())
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main(["quickstart", "--radius", "4", "--seed", "3"]) == 0
    printed = out.getvalue()
    start = printed.index("PRIVACY (")
    assert printed[start : start + len(text) + 1] == text + "\n"
    for name, stage in ex.ledger.stages:
        assert f"{name:<48} epsilon {stage.epsilon(ex.ledger.delta):.6g}" in text
    assert f"spent (composed) epsilon {ex.ledger.spent_epsilon():.6g}" in text
    assert "PRNG seed is kept secret" in text


@pytest.mark.slow
def test_docs_sections_run():
    """The snippets of docs/privacy.md's report and dp-accounting sections."""
    import doctest
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "privacy.md").read_text()
    start = text.index("## Reading a guarantee")
    end = text.index("## Budget ledger and calibration")
    blocks = re.findall(r"```python\n(.*?)```", text[start:end], re.S)
    assert len(blocks) == 2
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    parser = doctest.DocTestParser()
    for i, block in enumerate(blocks):
        runner.run(parser.get_doctest(block, {}, f"privacy.md[{i}]", "privacy.md", 0))
    result = runner.summarize(verbose=False)
    assert result.failed == 0 and result.attempted >= 10
