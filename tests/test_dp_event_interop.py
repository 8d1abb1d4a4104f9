"""``PrivacyGuarantee.to_dp_event`` / ``from_dp_event`` against dp_accounting.

The exported event, composed by dp_accounting's own accountant (PLD or RDP, built
with the guarantee's relation), must never give a smaller epsilon than dpsample's at
the guarantee's delta and at others, on guarantees of real plans (DP-SGD, the net
mechanism, Gibbs, the warm start) and on every kind of component; the round trip
through ``from_dp_event`` must too. The PLD accountant is built with the
guarantee's own discretisation interval (``pld_discretization``): at that interval
the two compute the same PLD, equal up to floating-point rounding of its
convolutions (``ROUNDING``, deterministic arithmetic, not a statistical tolerance;
1.5e-12 relative measured) and, for pure parts, one step of the loss grid
(``_grid``).
"""

import functools
import math

import dp_accounting
import pytest
from dp_accounting import pld, rdp

from dpsample import registry
from dpsample.privacy import PrivacyGuarantee
from dpsample.privacy.relations import ADD_OR_REMOVE_ONE, REPLACE_ONE
from tests.contract_cases import CASES

DELTAS = (1e-3, 1e-5, 1e-8)
ROUNDING = 1e-9


def _theirs(g, accountant, event):
    if accountant == "pld":
        acc = pld.PLDAccountant(
            neighboring_relation=g.relation,
            value_discretization_interval=g.pld_discretization(),
        )
    else:
        acc = rdp.RdpAccountant(neighboring_relation=g.relation)
    return acc.compose(event)


def _check(g, accountant):
    """Theirs >= ours, and the round trip >= ours, at DELTAS and the plan's delta."""
    event = g.to_dp_event(accountant, accept_assumptions=True)
    acc = _theirs(g, accountant, event)
    back = PrivacyGuarantee.from_dp_event(
        event, relation=g.relation, accountant=accountant, assumptions=g.assumptions
    )
    assert back.assumptions == g.assumptions
    for delta in DELTAS:
        ours = g.epsilon(delta)
        floor = ours * (1 - ROUNDING) - _grid(g)
        assert acc.get_epsilon(delta) >= floor, (delta, accountant)
        assert back.epsilon(delta) >= floor, (delta, accountant)
    return acc, back


def _grid(g):
    """One step of the privacy-loss grid: randomised response (the export of a
    pure part) and dpsample's worst-case pure PLD are the same two-point loss
    distribution built by two dp_accounting functions, whose pessimistic rounding
    to the grid can differ by one step (1.2e-9 relative measured on the warm
    start)."""
    return g.pld_discretization()


@functools.cache
def _plan(name):
    case = CASES[name]
    problem = case.make_problem(0, case.n)
    return registry.create(name).plan(problem.spec, case.budget, **case.options)


@pytest.mark.parametrize(
    "name",
    [
        "net",
        "gibbs",
        # planning DP-SGD (its calibration) costs seconds: in the slow suite
        pytest.param("dp_sgd", marks=pytest.mark.slow),
        pytest.param("warm_start", marks=pytest.mark.slow),
    ],
)
def test_planned_guarantees_export_no_smaller(name):
    plan = _plan(name)
    g = plan.guarantee
    exported = 0
    for accountant in ("pld", "rdp"):
        try:
            acc, back = _check(g, accountant)
        except ValueError as err:
            # refused loudly: only where that accountant has no analysis
            assert "accountant" in str(err), err
            continue
        exported += 1
        d = plan.budget.delta
        assert acc.get_epsilon(d) >= g.epsilon(d) * (1 - ROUNDING) - _grid(g)
    assert exported >= 1  # every planned guarantee exports for some accountant
    if g.assumptions:  # the net's: refused unless accepted
        with pytest.raises(ValueError, match="conditional"):
            g.to_dp_event()


def test_exact_encodings_round_trip_to_the_same_epsilon():
    gauss = PrivacyGuarantee.gaussian(2.0).repeat(5)
    sampled = PrivacyGuarantee.from_event(
        dp_accounting.PoissonSampledDpEvent(0.01, dp_accounting.GaussianDpEvent(1.0)),
        relation=ADD_OR_REMOVE_ONE,
    ).repeat(20)
    for g, accountant in ((gauss, "pld"), (gauss, "rdp"), (sampled, "pld")):
        acc, back = _check(g, accountant)
        for delta in DELTAS:
            assert back.epsilon(delta) == pytest.approx(g.epsilon(delta), rel=ROUNDING)
    # the PLD accountant reproduces our PLD route exactly at the same interval
    acc = _theirs(gauss, "pld", gauss.to_dp_event("pld"))
    assert acc.get_epsilon(1e-5) == pytest.approx(
        gauss.report(1e-5)["routes"]["pld"], rel=ROUNDING
    )


@pytest.mark.parametrize("relation", [REPLACE_ONE, ADD_OR_REMOVE_ONE])
@pytest.mark.parametrize(
    "make",
    [
        lambda r: PrivacyGuarantee.pure(0.5, relation=r).repeat(20),
        lambda r: PrivacyGuarantee.pure(3.0, relation=r),
        lambda r: PrivacyGuarantee.exponential_mechanism(0.3, relation=r).repeat(30),
        lambda r: PrivacyGuarantee.laplace(3.0, relation=r).repeat(5),
        lambda r: PrivacyGuarantee.from_event(
            dp_accounting.LaplaceDpEvent(4.0), relation=r
        ).repeat(5),
        lambda r: PrivacyGuarantee.from_event(
            dp_accounting.GaussianDpEvent(3.0), relation=r
        ).repeat(4),
        lambda r: PrivacyGuarantee.gaussian(1.0, relation=r).compose(
            PrivacyGuarantee.pure(0.2, relation=r)
        ),
    ],
    ids=[
        "pure_x20",
        "pure_3",
        "expmech",
        "laplace",
        "event_laplace",
        "event_gauss",
        "mixed",
    ],
)
def test_every_component_kind_exports_no_smaller(make, relation):
    g = make(relation)
    for accountant in ("pld", "rdp"):
        _check(g, accountant)


def test_zcdp_exports_for_rdp_only():
    g = PrivacyGuarantee.zcdp(0.05).repeat(3)
    acc, _ = _check(g, "rdp")
    assert acc.get_epsilon(1e-5) == pytest.approx(g.epsilon(1e-5), rel=ROUNDING)
    with pytest.raises(ValueError, match="zCDP component"):
        g.to_dp_event("pld")


def test_refusals_are_loud():
    with pytest.raises(ValueError, match="TV slack"):
        PrivacyGuarantee.pure(1.0).with_tv_slack(1e-9).to_dp_event()
    with pytest.raises(ValueError, match="adds a delta"):
        PrivacyGuarantee.approx(1.0, 1e-6).to_dp_event("rdp")
    conditional = PrivacyGuarantee.gaussian(2.0).assuming("the declared bound holds")
    with pytest.raises(ValueError, match="the declared bound holds"):
        conditional.to_dp_event()
    assert conditional.to_dp_event(accept_assumptions=True) is not None
    with pytest.raises(ValueError, match="accountant"):
        PrivacyGuarantee.gaussian(2.0).to_dp_event("moments")
    truncated = PrivacyGuarantee.from_event(
        dp_accounting.TruncatedSubsampledGaussianDpEvent(100, 0.1, 20, 1.0)
    )
    with pytest.raises(ValueError, match="RDP accountant"):
        truncated.to_dp_event("rdp")
    with pytest.raises(TypeError, match="DpEvent"):
        PrivacyGuarantee.from_dp_event("gaussian")


def test_randomized_response_repeat_count_is_not_dropped():
    # dp_accounting 0.6's PLD accountant composes a repeated randomised response
    # once; dpsample's own route and the export must count every run
    rr = dp_accounting.RandomizedResponseDpEvent(2.0 / (math.e + 1.0), 2)  # eps 1
    g = PrivacyGuarantee.from_event(rr).repeat(10)
    assert g.epsilon(1e-6) > 5.0  # 10 runs of 1-DP at delta 1e-6: about 6.7
    assert g.epsilon(1e-6) == pytest.approx(
        PrivacyGuarantee.pure(1.0).repeat(10).epsilon(1e-6), rel=1e-6
    )
    _check(g, "pld")


def test_an_untrusted_rdp_curve_is_not_exported():
    # dp_accounting's RDP of a tiny-rate, huge-noise Poisson Gaussian comes out
    # negative (cancellation; tests/test_extreme_settings.py): dpsample has no RDP
    # route for it, and the export for the RDP accountant refuses it too
    event = dp_accounting.PoissonSampledDpEvent(
        1e-4, dp_accounting.GaussianDpEvent(1e7)
    )
    g = PrivacyGuarantee.from_event(event, relation=ADD_OR_REMOVE_ONE)
    assert "rdp" not in g.report(1e-12)["routes"]
    with pytest.raises(ValueError, match="trusts"):
        g.to_dp_event("rdp")
