"""Contract tests of `PrivacyGuarantee`: never below the correct accounting.

Part 1 crosses every ``DpEvent`` type that dpsample emits or that
:meth:`PrivacyGuarantee.from_event` accepts with both neighbouring relations and checks
the library's epsilon (and delta) against dp_accounting's own RDP and PLD accountants
and, where one exists, an exact closed form. The library may be *tighter* than one
accountant (it takes the tightest valid route), so the contract is: never below the
smallest *correct* reference, and ``inf`` (no route) where no correct analysis exists.

The conventions (which events dp_accounting reads at unit shift, the factor of each
relation) are :mod:`dpsample.privacy.relations`'; the rewritten references below
take them from there, and the closed forms (``_exact``, ``_exact_pure``) state the
shift of one example themselves, so a wrong factor in that module fails here against
the truth (``tests/test_relations.py`` checks each kind's factor on its own).

``from_event`` reads an event in dp_accounting's convention: a noise multiplier is
relative to one example's contribution bound ``C`` (``GaussianDpEvent``,
``LaplaceDpEvent`` docstrings), so under REPLACE_ONE a bare Gaussian or Laplace
mechanism has sensitivity ``2 C``. Where dp_accounting is known wrong for a relation
the reference is the correct analysis, built here:

* RDP, REPLACE_ONE, bare Gaussian/Laplace (also inside compositions and
  repeat-and-select): dp_accounting's RDP accountant uses unit sensitivity whatever
  the relation. Correct: RDP of the same event with half the noise multiplier (the
  shift doubled). The exact closed forms below check this correction independently.
* PLD, REPLACE_ONE, Laplace: refused by dp_accounting (no wrong number). Correct:
  add/remove PLD of the halved event (for a shift mechanism, add and remove give the
  same PLD, a shift of 2 C at noise b is a shift of C at noise b / 2).
* ``SampledWithoutReplacementDpEvent``: dp_accounting's RDP accountant (the only one
  that supports it, REPLACE_ONE only) documents its inner noise multiplier as relative
  to the replace-one sensitivity (Wang, Balle, Kasiviswanathan 2019, Thm 27); that is
  the convention of the event, so its RDP is the reference as it is.

Part 2 is the contract of ``assumptions``: carried by every combinator and by the
ledger, shown in ``report()`` and ``repr``, and set where a guarantee rests on a
declaration the library does not enforce (the unproven proximal schedule and MALA's
``tv_bound`` are checked in ``tests/samplers/test_gibbs.py``, the CLI's verdict in
``tests/test_report_privacy.py``).
"""

import math

import dp_accounting
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from dp_accounting import dp_event as ev
from dp_accounting import pld as dp_pld
from dp_accounting import rdp as dp_rdp
from scipy import optimize, stats

import dpsample
from dpsample.finders import dp_sgd, dp_spider
from dpsample.finders.goldstein import goldstein_guarantee, goldstein_theorem_parameters
from dpsample.finders.oracles import first_kind, second_kind
from dpsample.privacy import BudgetLedger, PrivacyGuarantee, relations
from dpsample.privacy.guarantee import PLD_DISCRETIZATION, RDP_ORDERS
from dpsample.privacy.relations import ADD_OR_REMOVE_ONE as ADD_REMOVE
from dpsample.privacy.relations import REPLACE_ONE

RELATIONS = {"replace_one": REPLACE_ONE, "add_or_remove": ADD_REMOVE}
DELTAS = (1e-6, 1e-3)
EPSILONS = (0.5, 2.0)

# ----------------------------------------------------------------- the event table
_POISSON = ev.PoissonSampledDpEvent(0.1, ev.GaussianDpEvent(2.0))
_WOR = ev.SampledWithoutReplacementDpEvent(1000, 50, ev.GaussianDpEvent(1.0))
EVENTS = {
    # bare shift mechanisms (gaussian()/laplace() wrap these; from_event reads them
    # relative to the contribution bound)
    "gaussian": ev.GaussianDpEvent(2.0),
    "gaussian_x5": ev.SelfComposedDpEvent(ev.GaussianDpEvent(3.0), 5),
    "laplace": ev.LaplaceDpEvent(1.0),
    "laplace_x3": ev.SelfComposedDpEvent(ev.LaplaceDpEvent(4.0), 3),
    "gaussian+laplace": ev.ComposedDpEvent(
        [ev.GaussianDpEvent(3.0), ev.LaplaceDpEvent(2.0)]
    ),
    # subsampled Gaussians (what DP-SGD, the oracles and the trust region emit)
    "poisson_gaussian_x3": ev.SelfComposedDpEvent(_POISSON, 3),
    "poisson_laplace": ev.PoissonSampledDpEvent(0.05, ev.LaplaceDpEvent(1.0)),
    "truncated_poisson_gaussian": ev.TruncatedSubsampledGaussianDpEvent(
        100, 0.1, 15, 4.0
    ),
    "without_replacement_x10": ev.SelfComposedDpEvent(_WOR, 10),
    "without_replacement+gaussian": ev.ComposedDpEvent([_WOR, ev.GaussianDpEvent(4.0)]),
    # the rest of dp_accounting's event types
    "zcdp": ev.ZCDpEvent(0.1),
    "zcdp_with_xi": ev.ZCDpEvent(0.1, 0.05),
    "randomized_response": ev.RandomizedResponseDpEvent(0.5, 2),
    "discrete_laplace": ev.DiscreteLaplaceDpEvent(1.0, 1),
    "repeat_and_select": ev.RepeatAndSelectDpEvent(
        ev.GaussianDpEvent(2.0), 3.0, math.inf
    ),
    "noop": ev.NoOpDpEvent(),
    "non_private": ev.NonPrivateDpEvent(),
    "zero_noise_gaussian": ev.GaussianDpEvent(0.0),
    "zero_noise_laplace": ev.LaplaceDpEvent(0.0),
    "with_replacement": ev.SampledWithReplacementDpEvent(
        1000, 50, ev.GaussianDpEvent(1.0)
    ),
    "tree_aggregation": ev.SingleEpochTreeAggregationDpEvent(1.0, 4),
    "unsupported": ev.UnsupportedDpEvent(),
}
# dp_accounting's PLD of a mixture of Gaussians takes ~10 s per construction.
SLOW_EVENTS = {
    "mixture_of_gaussians": ev.MixtureOfGaussiansDpEvent(2.0, [0.0, 1.0], [0.5, 0.5]),
}


def _halve_shifts(event):
    """The same event with every bare Gaussian/Laplace shift doubled (REPLACE_ONE)."""
    if isinstance(event, relations.SHIFT_EVENTS):
        return relations.at_unit_shift(event, REPLACE_ONE)
    if isinstance(event, ev.SelfComposedDpEvent):
        return ev.SelfComposedDpEvent(_halve_shifts(event.event), event.count)
    if isinstance(event, ev.ComposedDpEvent):
        return ev.ComposedDpEvent([_halve_shifts(e) for e in event.events])
    if isinstance(event, ev.RepeatAndSelectDpEvent):
        return ev.RepeatAndSelectDpEvent(
            _halve_shifts(event.event), event.mean, event.shape
        )
    return event  # sampled events: dp_accounting analyses the relation itself


def _only_shifts(event):
    if isinstance(event, ev.GaussianDpEvent | ev.LaplaceDpEvent | ev.NoOpDpEvent):
        return True
    if isinstance(event, ev.SelfComposedDpEvent):
        return _only_shifts(event.event)
    if isinstance(event, ev.ComposedDpEvent):
        return all(_only_shifts(e) for e in event.events)
    return False


def _shift_family(event):
    """``[(kind, noise_multiplier, count)]`` of a pure-shift event, or None."""
    if isinstance(event, ev.GaussianDpEvent | ev.LaplaceDpEvent):
        kind = "gaussian" if isinstance(event, ev.GaussianDpEvent) else "laplace"
        return [(kind, event.noise_multiplier, 1)]
    if isinstance(event, ev.SelfComposedDpEvent):
        inner = _shift_family(event.event)
        return None if inner is None else [(k, b, n * event.count) for k, b, n in inner]
    return None


def _exact(event, relation):
    """Exact ``(epsilon(delta), delta(epsilon))`` for k-fold Gaussian or Laplace.

    Gaussian: Gaussian DP with ``mu = sqrt(k) * shift / sigma`` (Dong, Roth, Su 2022),
    ``delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)``. One Laplace:
    ``delta(eps) = 1 - exp((eps - eps0)/2)`` for ``eps < eps0 = shift / b``. The shift
    is the contribution bound, doubled under REPLACE_ONE.
    """
    fam = _shift_family(event)
    if fam is None or len(fam) != 1 or not fam[0][1] > 0:
        return None
    kind, b, k = fam[0]
    shift = 2.0 if relation == REPLACE_ONE else 1.0
    if kind == "gaussian":
        mu = math.sqrt(k) * shift / b

        def delta_of(eps):
            return stats.norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * stats.norm.cdf(
                -eps / mu - mu / 2
            )

        def eps_of(delta):
            return optimize.brentq(
                lambda e: delta_of(e) - delta, 0.0, 200.0, xtol=1e-13
            )

        return eps_of, delta_of
    if k != 1:
        return None
    eps0 = shift / b
    return (
        lambda delta: max(0.0, eps0 + 2.0 * math.log1p(-delta)),
        lambda eps: max(0.0, -math.expm1((eps - eps0) / 2.0)),
    )


def _exact_pure(event, relation):
    """Exact pure epsilon of an event made of Laplace mechanisms only, else None."""
    fam = _shift_family(event)
    if fam is None or any(k != "laplace" or not b > 0 for k, b, _ in fam):
        return None
    shift = 2.0 if relation == REPLACE_ONE else 1.0
    return sum(n * shift / b for _, b, n in fam)


def _references(event, relation):
    """Correct reference accountants: name -> (epsilon(delta), delta(epsilon))."""
    refs = {}
    pld = dp_pld.PLDAccountant(relation, PLD_DISCRETIZATION)
    if pld.supports(event):
        pld.compose(event)
        refs["pld"] = (pld.get_epsilon, pld.get_delta)
    if relation == REPLACE_ONE and _only_shifts(event):
        doubled = dp_pld.PLDAccountant(ADD_REMOVE, PLD_DISCRETIZATION)
        if doubled.supports(_halve_shifts(event)):
            doubled.compose(_halve_shifts(event))
            refs["pld_of_doubled_shift"] = (doubled.get_epsilon, doubled.get_delta)
    rdp_event = _halve_shifts(event) if relation == REPLACE_ONE else event
    rdp = dp_rdp.RdpAccountant(list(RDP_ORDERS), relation)
    if rdp.supports(rdp_event):
        try:
            rdp.compose(rdp_event)
            refs["rdp"] = (rdp.get_epsilon, rdp.get_delta)
        except ZeroDivisionError:  # its Laplace RDP divides by a zero noise
            refs["rdp"] = (lambda delta: math.inf, lambda eps: 1.0)
    exact = _exact(event, relation)
    if exact is not None:
        refs["exact"] = exact
    return refs


def _count(event):
    """Number of composed mechanisms (each pessimistic PLD adds one grid step)."""
    if isinstance(event, ev.SelfComposedDpEvent):
        return event.count * _count(event.event)
    if isinstance(event, ev.ComposedDpEvent):
        return sum(_count(e) for e in event.events)
    return 1


def _check_never_below(guarantee, refs, event):
    """The library's epsilon/delta are never below the smallest correct reference.

    Every reference is a valid upper bound, and the library may take the tightest
    valid route, so the bar is the smallest reference; where an exact closed form
    exists the bar is the truth itself. A pessimistic PLD with grid step ``h``
    overstates each of ``k`` composed losses by at most ``h``, so a PLD reference is
    lowered by ``(k + 1) h``; RDP and the closed forms get a float tolerance only.
    """
    slack = (_count(event) + 1) * PLD_DISCRETIZATION
    for delta in DELTAS:
        ours = guarantee.epsilon(delta)
        if not refs:  # no correct analysis: the library must report no guarantee
            assert ours == math.inf, (delta, guarantee.report(delta))
            continue
        lower = {
            name: float(eps_of(delta)) - (1e-9 if name in ("exact", "rdp") else slack)
            for name, (eps_of, _) in refs.items()
        }
        assert ours >= min(lower.values()), (delta, ours, lower)
        if "exact" in lower:  # the truth itself
            assert ours >= lower["exact"], (delta, ours, lower)
        route = guarantee.report(delta)["routes"]
        if "rdp" in route and "rdp" in refs:  # the same accountant, corrected
            assert route["rdp"] == pytest.approx(refs["rdp"][0](delta), rel=1e-9)
    for eps in EPSILONS:
        ours = guarantee.delta(eps)
        if not refs:
            assert ours == 1.0
            continue
        lower = {
            name: float(delta_of(eps)) - (1e-12 if name in ("exact", "rdp") else 1e-9)
            for name, (_, delta_of) in refs.items()
        }
        assert ours >= min(lower.values()), (eps, ours, lower)
        if "exact" in lower:
            assert ours >= lower["exact"], (eps, ours, lower)


def _check_pure(guarantee, event, relation):
    exact = _exact_pure(event, relation)
    ours = guarantee.epsilon(0.0)
    if exact is None:
        # no exact pure epsilon known here: a finite claim must be backed by one
        assert ours == math.inf or isinstance(event, ev.NoOpDpEvent), ours
    else:
        assert ours == pytest.approx(exact, rel=1e-12)
        assert ours >= exact * (1 - 1e-12)


def _contract(name, events, relation_name):
    event, relation = events[name], RELATIONS[relation_name]
    guarantee = PrivacyGuarantee.from_event(event, relation=relation)
    refs = _references(event, relation)
    _check_never_below(guarantee, refs, event)
    _check_pure(guarantee, event, relation)
    # repeat() of the guarantee is the self-composed event (shift events: cheap PLDs)
    if _only_shifts(event) and math.isfinite(guarantee.epsilon(1e-3)):
        twice = PrivacyGuarantee.from_event(
            ev.SelfComposedDpEvent(event, 2), relation=relation
        )
        assert (
            guarantee.repeat(2).epsilon(1e-3)
            >= twice.epsilon(1e-3) - (2 * _count(event) + 1) * PLD_DISCRETIZATION
        )


@pytest.mark.slow
@pytest.mark.parametrize("relation_name", sorted(RELATIONS))
@pytest.mark.parametrize("name", sorted(EVENTS))
def test_from_event_is_never_below_correct_accounting(name, relation_name):
    _contract(name, EVENTS, relation_name)


@pytest.mark.slow
@pytest.mark.parametrize("relation_name", sorted(RELATIONS))
@pytest.mark.parametrize("name", sorted(SLOW_EVENTS))
def test_from_event_is_never_below_correct_accounting_slow(name, relation_name):
    _contract(name, SLOW_EVENTS, relation_name)


def test_laplace_event_under_replace_one_counts_the_doubled_sensitivity():
    """The issue's example: one example's contribution changes the sum by 2 C."""
    event = dp_accounting.LaplaceDpEvent(1.0)
    assert PrivacyGuarantee.from_event(event, relation=REPLACE_ONE).epsilon(0) == 2.0
    assert PrivacyGuarantee.from_event(event, relation=ADD_REMOVE).epsilon(0) == 1.0
    # the unit-sensitivity constructor: noise relative to the relation's sensitivity
    assert PrivacyGuarantee.laplace(1.0, relation=REPLACE_ONE).epsilon(0) == 1.0


@pytest.mark.parametrize("relation_name", sorted(RELATIONS))
@pytest.mark.parametrize("kind", ["gaussian", "laplace"])
def test_unit_sensitivity_constructors_match_their_convention(kind, relation_name):
    """gaussian(z)/laplace(z): noise relative to the sensitivity under the relation.

    So they are dp_accounting's add/remove (unit-shift) analysis under either
    relation, and ``gaussian(z, REPLACE_ONE)`` is ``from_event(Gaussian(2 z))``.
    """
    relation = RELATIONS[relation_name]
    make = getattr(PrivacyGuarantee, kind)
    event_type = ev.GaussianDpEvent if kind == "gaussian" else ev.LaplaceDpEvent
    g = make(2.0, relation=relation).repeat(3)
    event = ev.SelfComposedDpEvent(event_type(2.0), 3)
    refs = _references(event, ADD_REMOVE)
    _check_never_below(g, refs, event)
    scale = 2.0 if relation == REPLACE_ONE else 1.0
    same = PrivacyGuarantee.from_event(
        ev.SelfComposedDpEvent(event_type(2.0 * scale), 3), relation=relation
    )
    for delta in DELTAS:
        assert g.epsilon(delta) == pytest.approx(same.epsilon(delta), rel=1e-6)


# ------------------------------------------------------------------- assumptions
ASSUMED = "the step schedule's TV bound (not proven)"


def _conditional():
    return PrivacyGuarantee.pure(0.5).assuming(ASSUMED)


def test_assumptions_survive_every_combinator():
    g = _conditional()
    plain = PrivacyGuarantee.gaussian(2.0)
    for h in (
        g,
        g.repeat(3),
        g.compose(plain),
        plain.compose(g),
        g.with_tv_slack(1e-9),
        PrivacyGuarantee.none().compose(g),
    ):
        assert h.assumptions == (ASSUMED,)
        assert h.report(1e-6)["assumptions"] == [ASSUMED]
        assert ASSUMED in repr(h)
    assert plain.assumptions == () and plain.report(1e-6)["assumptions"] == []
    assert "assum" not in repr(plain)
    # sorted, without duplicates, whatever the order of composition
    other = PrivacyGuarantee.laplace(1.0).assuming("a declared bound")
    both = g.compose(other).compose(g)
    assert both.assumptions == ("a declared bound", ASSUMED)
    assert other.compose(g).assumptions == both.assumptions
    # assumptions change no number
    for delta in (0.0, 1e-6):
        assert g.epsilon(delta) == PrivacyGuarantee.pure(0.5).epsilon(delta)


def test_assuming_rejects_empty_or_non_text():
    for bad in ("", "   "):
        with pytest.raises(ValueError, match="assumption"):
            PrivacyGuarantee.pure(1.0).assuming(bad)
    with pytest.raises(TypeError, match="assumption"):
        PrivacyGuarantee.pure(1.0).assuming(3)


def test_ledger_carries_assumptions_of_charged_stages():
    ledger = BudgetLedger(epsilon=2.0, delta=1e-6)
    ledger.charge("exact stage", PrivacyGuarantee.pure(0.5))
    assert ledger.total.assumptions == ()
    ledger.charge("conditional stage", _conditional())
    assert ledger.total.assumptions == (ASSUMED,)
    assert ledger.assumptions == (ASSUMED,)
    # a stage charged through an envelope learns its assumptions after it ran
    ledger.charge("envelope", PrivacyGuarantee.approx(0.5, 1e-7))
    spent = ledger.spent_epsilon()
    ledger.add_assumptions("envelope", "a caller's tv_bound")
    assert ledger.assumptions == ("a caller's tv_bound", ASSUMED)
    assert ledger.spent_epsilon() == spent
    assert dict(ledger.stages)["envelope"].assumptions == ("a caller's tv_bound",)
    with pytest.raises(KeyError, match="no stage"):
        ledger.add_assumptions("missing", "x")


def test_rdp_route_is_additive_over_relation_rewrites():
    """Composition of a REPLACE_ONE Gaussian with itself equals the halved event."""
    a = PrivacyGuarantee.from_event(ev.GaussianDpEvent(2.0), relation=REPLACE_ONE)
    curve = a.repeat(4)._rdp_curve()
    acc = dp_rdp.RdpAccountant(list(RDP_ORDERS))
    acc.compose(ev.GaussianDpEvent(1.0), 4)
    np.testing.assert_allclose(curve, acc.rdp, rtol=1e-12)


# ------------------------------------------- assumptions where the library makes them
def _quadratic_problem(domain=None):
    data = {"z": jnp.linspace(-1.0, 1.0, 8)[:, None]}
    return dpsample.Problem(
        lambda x, z: 0.5 * jnp.sum((x - z["z"]) ** 2),
        data,
        domain or dpsample.Ball(2.0, dim=1),
        lipschitz=3.0,
        smoothness=1.0,
        loss_range=4.5,
    )


def test_oracles_without_clipping_are_conditional_on_the_declarations():
    prob = _quadratic_problem()
    clipped = first_kind(prob, noise_multiplier=1.0, clip_norm=1.0)
    assert clipped.guarantee.assumptions == ()
    assert first_kind(prob, noise_multiplier=1.0).guarantee.assumptions == ()  # G
    trusted = dict(noise_multiplier=1.0, enforce_sensitivity=False)
    (text,) = first_kind(prob, **trusted).guarantee.assumptions
    assert "lipschitz G = 3" in text and "no clipping" in text
    assert first_kind(prob, **trusted).guarantee.conditional
    clipped = second_kind(prob, noise_multiplier=1.0)
    assert clipped.guarantee.assumptions == ()
    (text,) = second_kind(prob, **trusted).guarantee.assumptions
    assert "smoothness M = 1" in text and "2 G = 6" in text
    assert "enforce_sensitivity=False" in text
    # run_guarantee (what the finders compose) keeps them
    o1 = first_kind(prob, **trusted)
    assert o1.run_guarantee(7).assumptions == o1.guarantee.assumptions


@pytest.mark.slow
def test_calibrated_finders_keep_the_assumptions():
    """The calibration's memoised guarantee instances keep every field."""
    prob = _quadratic_problem()
    sgd = dp_sgd(
        jax.random.key(0),
        prob,
        epsilon=2.0,
        delta=1e-5,
        x0=jnp.zeros(1),
        num_steps=5,
        batch_size=4,
        gradient_bound_failure=1e-9,
        enforce_sensitivity=False,
    )
    assert len(sgd.privacy.assumptions) == 2
    assert any("gradient_bound_failure = 1e-09" in a for a in sgd.privacy.assumptions)
    assert sgd.privacy.epsilon(1e-5) <= 2.0  # the numbers are unchanged
    spider = dp_spider(
        jax.random.key(0),
        prob,
        epsilon=2.0,
        delta=1e-5,
        x0=jnp.zeros(1),
        num_steps=6,
        phase_length=3,
        variation_batch_size=4,
        enforce_sensitivity=False,
    )
    texts = spider.privacy.assumptions
    assert len(texts) == 2 and all("not enforced" in t for t in texts)


@pytest.mark.slow
@pytest.mark.parametrize("enforce", [False, True])
def test_goldstein_mode_a_is_conditional_on_the_declared_lipschitz_bound(enforce):
    plan = goldstein_theorem_parameters(
        n=300,
        dim=2,
        epsilon=2.0,
        delta=1e-5,
        lipschitz=1.0,
        initial_gap=1.0,
        alpha=0.1,
        num_directions=8,
        enforce_sensitivity=enforce,
    )
    _, guarantee = goldstein_guarantee(plan)
    if enforce:
        assert guarantee.assumptions == ()
    else:
        (text,) = guarantee.assumptions
        assert "lipschitz L = 1" in text and "enforce_sensitivity=False" in text
