"""Spider-SOSP's presets (issue 24): the default's rows, the old default bit for bit.

The ``"practical"`` preset (the default) runs ``T`` from one O1 anchor's error
(:func:`~dpsample.finders.spider_sosp.schedule.anchor_steps`) and lets Algorithm 2
examine the tail average first; ``"practical_iterate"`` is the default before issue 24
and must reproduce its plans and releases exactly (the values below were produced by
main at 6effd3f, where ``preset="practical"`` was that rule, with this module's
problem, budget, start and key).
"""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest
from _saddles_b import cosine_case

from dpsample import Budget
from dpsample.finders.spider_sosp import SPIDER_PRESETS, SpiderSOSP, stochastic_spider
from dpsample.finders.spider_sosp.schedule import anchor_steps

BUDGET = Budget(2.0, 1e-5)
X0 = [0.05, -0.05]

#: main at 6effd3f, ``SpiderSOSP().plan(cosine_case(400, 2, seed=1).problem.spec,
#: Budget(2.0, 1e-5), x0=X0)`` and its run with ``jax.random.key(0)`` (float64).
OLD_DEFAULT = {
    "num_iters": 13,
    "max_o1_calls": 13,
    "gamma": 2.5167266346974606,
    "alpha_kick": 2.5167266346974606,
    "noise_multiplier_o1": 24.390752525253994,
    "noise_multiplier_o2": 24.390752525253994,
    "zcdp": 0.1748167088311204,
    "kick_std": 0.08623433254425004,
}
OLD_COST = (15200, 10400, 26)
OLD_VALUE = ("0x1.5fee9ce7cd094p-5", "-0x1.8a8ea4dc87af6p+1")
OLD_SELECTED = 12


@pytest.fixture(scope="module")
def case():
    return cosine_case(n=400, dim=2, seed=1)


def test_default_preset_plan_rows(case):
    spec = case.problem.spec
    plan = SpiderSOSP().plan(spec, BUDGET, x0=X0)
    assert plan["preset"] == "practical"
    assert plan.params["preset"].source == "default"
    assert "non-paper" in plan.params["preset"].note
    steps = plan.params["num_iters"]
    assert steps.source == "default"
    assert "non-paper" in steps.note and "zeta1(T)^2" in steps.note
    expected = anchor_steps(
        spec.loss_range * spec.smoothness,
        spec.lipschitz,
        spec.dim,
        spec.n,
        plan["zcdp"],
        plan["selection_share"],
        SPIDER_PRESETS["practical"]["c_T"],
        int(SPIDER_PRESETS["practical"]["max_T"]),
    )
    assert plan["num_iters"] == expected > OLD_DEFAULT["num_iters"]
    for name in ("alpha_kick", "n1_drift"):
        assert plan.params[name].source == "default", name
        assert "c_" in plan.params[name].note, name
    # the tail average is one more selection query than the iterates
    t, s = plan["num_iters"], plan["n_select"]
    assert plan.cost.hessian_vector_products == (t + 1) * s * spec.dim


@pytest.mark.slow  # compiles Algorithm 2's Hessian queries (over 2 s)
def test_old_default_is_a_named_preset_bit_for_bit(case):
    with jax.enable_x64(True):
        plan = SpiderSOSP().plan(
            case.problem.spec, BUDGET, x0=X0, preset="practical_iterate"
        )
        for name, value in OLD_DEFAULT.items():
            assert plan[name] == value, name
        cost = plan.cost
        assert (
            cost.gradient_evaluations,
            cost.hessian_vector_products,
            cost.steps,
        ) == OLD_COST
        assert "non-paper" in plan.params["num_iters"].note
        res = SpiderSOSP().run(jax.random.key(0), plan, case.problem.data)
    assert [float(v).hex() for v in np.asarray(res.value)] == list(OLD_VALUE)
    assert res.info["selected"] == OLD_SELECTED
    assert res.info["released"] == "iterate"
    assert res.info["preset_label"] == "non-paper (practical_iterate)"


@pytest.mark.slow  # compiles Algorithm 2's Hessian queries (over 2 s)
def test_default_releases_the_tail_average(case):
    key = jax.random.key(0)
    with jax.enable_x64(True):
        plan = SpiderSOSP().plan(case.problem.spec, BUDGET, x0=X0)
        res = SpiderSOSP().run(key, plan, case.problem.data)
        # Algorithm 1's key is the run's third (finder.py: split into 4)
        xs = stochastic_spider(jax.random.split(key, 4)[2], case.problem, plan).value
    t = plan["num_iters"]
    assert res.info["released"] == "tail_average" and res.info["selected"] is None
    assert res.info["fallback"] is None
    np.testing.assert_allclose(
        res.value, np.mean(np.asarray(xs)[t // 2 :], axis=0), rtol=1e-12, atol=1e-14
    )
    assert res.privacy.epsilon(BUDGET.delta) <= BUDGET.epsilon
    assert len(xs) - t // 2 == math.ceil(t / 2)


@pytest.mark.parametrize("preset", ["theorem", "nope", "Practical"])
def test_bad_preset_names_are_refused(case, preset):
    with pytest.raises(ValueError, match="practical_iterate"):
        SpiderSOSP().plan(case.problem.spec, BUDGET, preset=preset)
