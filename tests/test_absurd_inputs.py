"""Absurd public inputs are refused, not crashed (issue 25).

Before: epsilon = 1e6 ran the calibrators for minutes or out of memory, and the
pure components' PLD overflowed (``OverflowError: math range error``);
``num_rounds = 10**7`` raised ``MemoryError`` in kl_spider's schedule and
``num_steps = 10**9`` in quasar_sgd's; dp_sgd, dp_spider and spider_sosp planned
for minutes at 10**9 steps. Now every plan checks its public sizes first
(:func:`dpsample.base.check_public_sizes`): an epsilon above ``MAX_EPSILON`` (the
net's exponential mechanism, which calibrates nothing, excepted) and each count
option above its cap in ``MAX_COUNTS`` are refused with a ``ValueError`` that
names the option and the largest value accepted, before anything is allocated.
Each case must answer within a time bound and a host-memory bound (tracemalloc's
peak, which numpy allocations report to).
"""

from __future__ import annotations

import math
import re
import time
import tracemalloc

import pytest
from contract_cases import CASES

from dpsample import registry
from dpsample.base import MAX_COUNTS, MAX_EPSILON
from dpsample.plan import Budget
from dpsample.privacy import PrivacyGuarantee
from dpsample.privacy.calibration import CalibrationError, calibrate

NAMES = registry.names()
#: A refusal is a check of public numbers: well under a second, a few MiB.
SECONDS, PEAK_BYTES = 2.0, 32 * 2**20


def _plan(name: str, budget: Budget | None = None, **extra):
    case = CASES[name]
    spec = case.make_problem(0, 16).spec
    options = {**case.options, **extra}
    return registry.create(name).plan(spec, budget or case.budget, **options)


def _refused_quickly(call, match: str) -> None:
    tracemalloc.start()
    start = time.perf_counter()
    try:
        with pytest.raises(ValueError, match=match):
            call()
    finally:
        elapsed = time.perf_counter() - start
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert elapsed < SECONDS, f"refused after {elapsed:.1f} s"
    assert peak < PEAK_BYTES, f"allocated {peak / 2**20:.0f} MiB before refusing"


def _cap(name: str, option: str) -> int | None:
    own = getattr(registry.get(name).cls, "max_counts", {})
    return {**MAX_COUNTS, **own}.get(option)


def _count_cases():
    cases = []
    for name in NAMES:
        for option in registry.get(name).options():
            cap = _cap(name, option.name)
            if cap is not None:
                cases += [(name, option.name, cap + 1), (name, option.name, 10**12)]
    return cases


def test_every_count_option_of_every_algorithm_has_a_cap():
    # a new count option (an int named num_*, max_* or *_size that the host
    # loops over) must get a cap; sizes bounded by n or d are checked elsewhere
    bounded_elsewhere = {
        "batch_size",
        "max_batch_size",
        "anchor_batch_size",
        "variation_batch_size",
        "grad_batch_size",
        "hessian_batch_size",
        "hessian_rank",
        "projection_dim",
        "rank_bound",
        "max_points",  # the net's size cap (a net over it is refused)
    }
    for name in NAMES:
        for option in registry.get(name).options():
            if option.annotation.startswith("int"):
                assert option.name in MAX_COUNTS or option.name in bounded_elsewhere, (
                    name,
                    option.name,
                )


@pytest.mark.parametrize(("name", "option", "value"), _count_cases(), ids=str)
def test_a_count_above_its_cap_is_refused_before_planning(name, option, value):
    cap = _cap(name, option)
    _refused_quickly(
        lambda: _plan(name, **{option: value}),
        f"{name}: {option}={value} is above the largest accepted, {cap}",
    )


@pytest.mark.parametrize("epsilon", [MAX_EPSILON * (1 + 1e-9), 1e6, 1e12, math.inf])
@pytest.mark.parametrize("name", NAMES)
def test_an_epsilon_above_the_cap_is_refused_before_planning(name, epsilon):
    if math.isinf(epsilon):  # Budget refuses it already
        with pytest.raises(ValueError):
            Budget(epsilon, 1e-5)
        return
    budget = Budget(epsilon, CASES[name].budget.delta)
    # the net calibrates nothing: quick and sound at any epsilon
    if getattr(registry.get(name).cls, "max_epsilon", 0) == math.inf:
        start = time.perf_counter()
        plan = _plan(name, budget)
        assert time.perf_counter() - start < SECONDS
        assert plan.guarantee.epsilon(budget.delta) <= epsilon
        return
    _refused_quickly(
        lambda: _plan(name, budget), re.escape(f"epsilon={epsilon:g} is above")
    )


@pytest.mark.parametrize("name", ["dp_sgd", "dp_spider", "dp_stochastic_trust_region"])
def test_a_batch_larger_than_n_is_refused(name):
    option = {
        "dp_sgd": "batch_size",
        "dp_spider": "variation_batch_size",
        "dp_stochastic_trust_region": "grad_batch_size",
    }[name]
    _refused_quickly(lambda: _plan(name, **{option: 17}), f"{option}=17 <= n=16")


def test_the_calibrator_refuses_a_huge_epsilon_quickly():
    def make(s):
        return PrivacyGuarantee.gaussian(s).repeat(10)

    for eps in (MAX_EPSILON * 1.01, 1e6):
        start = time.perf_counter()
        with pytest.raises(CalibrationError, match="above the largest"):
            calibrate(make, epsilon=eps, delta=1e-5)
        assert time.perf_counter() - start < SECONDS


def test_pure_components_at_huge_epsilon_account_without_overflow():
    # dp_accounting's PLD of a pure mechanism computes exp(epsilon): 1e6
    # overflowed; the pure route answers
    assert PrivacyGuarantee.pure(1e6).epsilon(1e-5) == 1e6
    assert PrivacyGuarantee.exponential_mechanism(1e6).delta(1e6) == 0.0
    # with a Gaussian: no route covers both (the approx part has no RDP curve and,
    # past 500, no PLD): inf, a valid (useless) bound, not a crash
    both = PrivacyGuarantee.approx(1e6, 1e-7).compose(PrivacyGuarantee.gaussian(2.0))
    assert both.epsilon(1e-5) >= 1e6


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_a_tiny_epsilon_plans_soundly_or_is_refused(name):
    budget = Budget(1e-9, CASES[name].budget.delta)
    try:
        plan = _plan(name, budget)
    except ValueError as err:
        assert str(err)
        return
    assert plan.guarantee.epsilon(budget.delta) <= 1e-9 * (1 + 1e-9)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "option"),
    [
        ("dp_sgd", "num_steps"),
        ("kl_spider", "num_rounds"),
        ("quasar_sgd", "num_steps"),
    ],
)
def test_a_count_at_its_cap_plans_in_seconds(name, option):
    start = time.perf_counter()
    plan = _plan(name, **{option: _cap(name, option)})
    assert time.perf_counter() - start < 30.0
    assert (
        plan.guarantee.epsilon(CASES[name].budget.delta) <= CASES[name].budget.epsilon
    )


def test_a_plan_over_its_budget_is_refused_by_the_contract():
    """quasar_sgd at epsilon 1e-9 composed to 6.9e-5 (the PLD composing its runs
    cannot resolve the budget): ``plan`` refuses it instead of returning it."""
    with pytest.raises(ValueError, match="over the budget") as err:
        _plan("quasar_sgd", Budget(1e-9, CASES["quasar_sgd"].budget.delta))
    assert "a larger epsilon or delta plans" in str(err.value)
    # power: the same case plans at its own budget, within it
    plan = _plan("quasar_sgd")
    budget = CASES["quasar_sgd"].budget
    assert plan.guarantee.epsilon(budget.delta) <= budget.epsilon * (1 + 1e-9)
