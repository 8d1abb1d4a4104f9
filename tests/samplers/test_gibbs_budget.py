"""The Gibbs routes spend the budget they are given (issue 24, section 3).

Projected Langevin's guarantee is the trajectory's Gaussian bound, which does not use
the target's LSI constant: its ``beta`` is the largest whose trajectory over the
planned steps meets ``(epsilon, delta)``, and the generalisation cap ``c_gen`` is an
option (off by default there). The proximal route's TV slack comes from a schedule
that is feasible only under the cap, so it keeps the cap and says so. All checks are
plans: public arithmetic, no data, no run.
"""

import math
import re

import dp_accounting
import jax.numpy as jnp
import numpy as np
import pytest

from dpsample import Ball, Budget, Problem
from dpsample.errors import PlanRefusal
from dpsample.samplers import langevin, proximal
from dpsample.samplers.gibbs import C_GEN, Gibbs
from dpsample.samplers.target import GibbsTarget

N, DELTA = 2000, 1e-6


def _cosine(d):
    def loss(x, z):
        return -jnp.sum(jnp.cos(x - z)) / math.sqrt(d)

    data = np.random.default_rng(0).normal(1.0, 0.5, size=(N, d))
    return Problem(
        loss,
        data,
        Ball(2.0 * math.sqrt(d), dim=d),
        lipschitz=1.0,
        smoothness=1.0 / math.sqrt(d),
        loss_range=2.0 * math.sqrt(d),
    ).spec


def _absolute(d=2):  # non-smooth: no smoothness declared
    return Problem(
        lambda x, z: jnp.sum(jnp.abs(x - z)) / math.sqrt(d),
        np.zeros((N, d)),
        Ball(3.0, dim=d),
        lipschitz=1.0,
        loss_range=6.0,
    ).spec


def _target(spec, beta):  # Theorem 5.6's mu = d/(D^2 beta)
    return GibbsTarget.create(
        spec, beta=beta, mu=spec.dim / (spec.domain.diameter**2 * beta)
    )


def _trajectory_epsilon(spec, beta, step_size, num_steps):
    guarantee = langevin.trajectory_guarantee(
        _target(spec, beta), step_size=step_size, num_steps=num_steps
    )
    return guarantee.epsilon(DELTA)


@pytest.mark.parametrize(
    ("d", "eps"),
    [
        (2, 1.0),
        (2, 0.25),
        # the Gaussian calibration at epsilon 4 costs about 3 s (exact PLDs)
        pytest.param(10, 4.0, marks=pytest.mark.slow),
    ],
)
def test_langevin_beta_spends_the_budget(d, eps):
    spec = _cosine(d)
    plan = Gibbs(method="langevin").plan(spec, Budget(eps, DELTA))
    beta, h, steps = plan["beta"], plan["step_size"], plan["num_steps"]
    assert 0.95 * eps <= plan.spent_epsilon() <= eps
    assert steps == 10_000
    # dp_accounting's own PLD accountant on the trajectory's Gaussian (noise over
    # sensitivity n / (beta G sqrt(2 h T))), from the plan's public values only;
    # its discretisation (1e-4 a composition here) is the only slack.
    z = spec.n / (beta * spec.lipschitz * math.sqrt(2.0 * h * steps))
    accountant = dp_accounting.pld.PLDAccountant()
    accountant.compose(dp_accounting.GaussianDpEvent(z))
    assert accountant.get_epsilon(DELTA) <= eps + 1e-3
    # Power: a 2% larger beta (with its own default step) overshoots the budget.
    bigger = 1.02 * beta
    h_big = langevin.default_step_size(_target(spec, bigger))
    assert _trajectory_epsilon(spec, bigger, h_big, steps) > eps
    # The cap is off on this route, and the plan says what binds.
    assert plan["c_gen"] is None and plan.params["c_gen"].source == "default"
    assert "privacy binds" in plan.params["beta"].note
    assert plan.internal["binding"] == "privacy"


def test_c_gen_option_still_caps():
    spec = _cosine(2)
    plan = Gibbs(method="langevin", c_gen=C_GEN).plan(spec, Budget(1.0, DELTA))
    cap = C_GEN * math.log(spec.n) / (spec.lipschitz * spec.domain.diameter)
    assert plan["beta"] == pytest.approx(cap, rel=1e-12)
    assert plan.params["c_gen"].source == "user"
    assert plan.internal["binding"] == "cap" and "cap binds" in plan.params["beta"].note
    assert plan.spent_epsilon() < 0.5  # the cap leaves the budget unspent here
    # A cap above the budget's beta does not bind.
    loose = Gibbs(method="langevin", c_gen=1e6).plan(spec, Budget(1.0, DELTA))
    assert loose.internal["binding"] == "privacy" and loose.spent_epsilon() >= 0.95


def test_nonsmooth_step_rule_says_what_would_spend_the_budget():
    spec = _absolute()
    plan = Gibbs(method="langevin").plan(spec, Budget(1.0, DELTA))
    # beta^2 h = 0.03/G^2 for every large beta: the budget cannot set beta.
    assert plan.internal["binding"] == "step_rule"
    assert plan.spent_epsilon() < 0.1
    note = plan.params["beta"].note
    assert "num_steps=" in note and "step_size" in note
    # With a fixed public step the trajectory's privacy grows with beta again.
    fixed = Gibbs(method="langevin", step_size=1e-4).plan(spec, Budget(1.0, DELTA))
    assert fixed.internal["binding"] == "privacy"
    assert 0.95 <= fixed.spent_epsilon() <= 1.0


def test_proximal_route_keeps_the_cap_and_says_so():
    spec = Problem(
        lambda x, z: jnp.abs(x[0] - z),
        jnp.linspace(-0.5, 0.5, 10),
        Ball(1.0, dim=1),
        lipschitz=1.0,
    ).spec
    plan = Gibbs().plan(spec, Budget(1.0, 1e-3))  # a feasible schedule (tiny n)
    assert plan["c_gen"] == C_GEN and plan.params["c_gen"].source == "default"
    assert "rests on the cap" in plan.params["c_gen"].note
    with pytest.raises(ValueError, match="c_gen"):
        Gibbs(c_gen="off").plan(spec, Budget(1.0, 1e-3))


def test_langevin_steps_over_the_compute_cap_name_steps_that_plan():
    spec = _cosine(2)
    budget = Budget(1.0, DELTA, max_evaluations=50 * N + 7)
    with pytest.raises(PlanRefusal, match=r"It plans with num_steps=50 ") as info:
        Gibbs(method="langevin", num_steps=100).plan(spec, budget)
    assert "max_evaluations" in str(info.value)
    plan = Gibbs(method="langevin", num_steps=50).plan(spec, budget)
    assert plan["num_steps"] == 50 and plan.spent_epsilon() >= 0.95
    # Without num_steps the cap sets the steps and beta still spends the budget.
    capped = Gibbs(method="langevin").plan(spec, budget)
    assert capped["num_steps"] == 50 and capped.spent_epsilon() >= 0.95


@pytest.mark.slow  # the search re-plans about 20 times (one exact PLD each): ~10 s
def test_a_given_beta_over_budget_names_a_beta_that_plans():
    spec = Problem(
        lambda x, z: jnp.abs(x[0] - z),
        jnp.linspace(-0.5, 0.5, 40),
        Ball(1.0, dim=1),
        lipschitz=1.0,
    ).spec
    budget = Budget(1.0, 1e-5)
    kw = {"method": "langevin", "step_size": 0.5, "num_steps": 10_000}
    with pytest.raises(PlanRefusal, match="above the target") as info:
        Gibbs(beta=50.0, **kw).plan(spec, budget)
    found = re.search(r"It plans with beta=([0-9.e+-]+) ", str(info.value))
    assert found, str(info.value)
    beta = float(found.group(1))
    assert Gibbs(beta=beta, **kw).plan(spec, budget).spent_epsilon() <= 1.0
    with pytest.raises(PlanRefusal):  # near the boundary: 5% more is refused
        Gibbs(beta=1.05 * beta, **kw).plan(spec, budget)
    assert "drop beta=" in str(info.value)


def test_proximal_schedule_floor_names_a_tv_target_that_plans():
    spec = Problem(
        lambda x, z: jnp.abs(x[0] - z), jnp.zeros(3), Ball(1.0, dim=1), lipschitz=1.0
    ).spec
    target = GibbsTarget.create(spec, beta=40.0, mu=0.01)
    with pytest.raises(proximal.ProximalScheduleError, match="too small") as info:
        proximal.schedule(target, tv_target=1e-9, convex=True)
    found = re.search(r"raise tv_target=([0-9.e+-]+) \(checked", str(info.value))
    assert found, str(info.value)
    tau = float(found.group(1))
    assert proximal.schedule(target, tv_target=tau, convex=True).tv_total <= tau
    # Doubling from 1e-9: half the offered value (less its rounding) was refused.
    with pytest.raises(proximal.ProximalScheduleError):
        proximal.schedule(target, tv_target=tau / 2.1, convex=True)
