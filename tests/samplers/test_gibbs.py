"""The private top level `gibbs`: routes, guarantees, public info, bad input."""

import importlib
import math

import jax
import jax.numpy as jnp
import pytest

import dpsample
from dpsample.domains import Ball
from dpsample.errors import MissingConstantError
from dpsample.problem import Problem
from dpsample.samplers import proximal

# ``dpsample.samplers.gibbs`` as an attribute is the top-level function;
# the tests need the module.
G = importlib.import_module("dpsample.samplers.gibbs")

EPS, DELTA = 1.0, 1e-5


def _problem(n=40, **consts):
    consts.setdefault("lipschitz", 1.0)
    return Problem(
        lambda x, z: jnp.abs(x[0] - z),
        jnp.linspace(-0.5, 0.5, n),
        Ball(1.0, dim=1),
        **consts,
    )


@pytest.mark.slow
def test_langevin_route_guarantee_and_public_info():
    p = _problem()
    res = G.gibbs(
        jax.random.key(0),
        p,
        epsilon=EPS,
        delta=DELTA,
        method="langevin",
        max_steps=100,
    )
    assert res.value.shape == (1,)
    assert bool(p.domain.contains(res.value))
    assert res.privacy.epsilon(DELTA) <= EPS
    info = res.info
    assert info["bound"] == "langevin_trajectory"
    assert info["num_steps"] == 100
    cal = G.calibrate_gibbs(p, epsilon=EPS, delta=DELTA * (1 - G.TV_FRACTION))
    assert info["beta"] == pytest.approx(cal.beta)
    assert info["mu"] == pytest.approx(cal.mu)
    # The guarantee is the trajectory bound of what ran.
    rho = info["num_steps"] * info["step_size"] * (info["beta"] / p.n) ** 2
    assert res.privacy.zcdp_rho() == pytest.approx(rho)
    # Only public values.
    assert set(info) >= {"method", "beta", "mu", "step_size", "num_steps", "epsilon"}


@pytest.mark.slow
def test_langevin_steps_fill_the_budget():
    p = _problem()
    res = G.gibbs(
        jax.random.key(1),
        p,
        epsilon=EPS,
        delta=DELTA,
        method="langevin",
        beta=5.0,
        step_size=0.5,
        max_steps=10**7,  # the largest accepted (MAX_COUNTS); does not bind here
    )
    nm = G.gaussian_noise_to_sensitivity(epsilon=EPS, delta=DELTA)
    total_time = p.n**2 / (2 * (5.0 * 1.0 * nm) ** 2)
    assert res.info["num_steps"] == math.floor(total_time / 0.5)
    assert res.privacy.epsilon(DELTA) <= EPS


@pytest.mark.slow
def test_explicit_configuration_over_budget_is_refused():
    p = _problem()
    with pytest.raises(ValueError, match="above the target"):
        G.gibbs(
            jax.random.key(0),
            p,
            epsilon=EPS,
            delta=DELTA,
            method="langevin",
            beta=50.0,
            step_size=0.5,
            num_steps=10_000,
        )


@pytest.mark.slow
def test_mala_needs_a_declared_tv_bound():
    p = _problem()
    with pytest.raises(ValueError, match="MALA has no privacy bound"):
        G.gibbs(jax.random.key(0), p, epsilon=EPS, delta=DELTA, method="mala")
    res = G.gibbs(
        jax.random.key(0),
        p,
        epsilon=EPS,
        delta=DELTA,
        method="mala",
        tv_bound=1e-7,
        num_steps=50,
        step_size=0.05,
    )
    assert res.privacy.tv_slack == 1e-7
    assert res.privacy.epsilon(DELTA) <= EPS
    assert "declared" in res.info["privacy_rests_on"]
    # the guarantee itself says so; the target's bound is enforced by clipping the
    # loss values (the default), so nothing else is assumed
    (assumed,) = res.privacy.assumptions
    assert "tv_bound" in assumed and "1e-07" in assumed
    # the opt-in (enforce_sensitivity=False) states the declared G the target's
    # bound rests on (no clip enforces a Lipschitz bound of the loss; issue 25)
    plan = G.Gibbs(
        method="mala",
        tv_bound=1e-7,
        num_steps=50,
        step_size=0.05,
        enforce_sensitivity=False,
    ).plan(p.spec, dpsample.Budget(EPS, DELTA))
    (lip,) = [a for a in plan.guarantee.assumptions if "tv_bound" not in a]
    assert "G-Lipschitz" in lip and "not enforced" in lip
    with pytest.raises(ValueError):  # a TV bound too large for delta
        G.gibbs(
            jax.random.key(0),
            p,
            epsilon=EPS,
            delta=DELTA,
            method="mala",
            tv_bound=1e-3,
            num_steps=5,
        )


@pytest.mark.parametrize(
    "kwargs",
    [
        {"epsilon": 0.0},
        {"epsilon": -1.0},
        {"delta": 0.0},
        {"delta": 1.5},
        {"method": "hmc"},
        {"beta": 0.0, "method": "langevin"},
        {"beta": -2.0, "method": "langevin"},
        {"beta": 1.0, "mu": -1.0, "method": "langevin"},
        {"mu": 1.0, "method": "langevin"},
        {"step_size": 0.0, "method": "langevin"},
        {"tv_fraction": 1.0},
        {"tv_bound": 1e-8, "method": "langevin"},
        {"num_steps": 0, "method": "langevin"},
    ],
)
def test_bad_input_is_rejected_before_sampling(kwargs):
    args = {"epsilon": EPS, "delta": DELTA, "method": "langevin"} | kwargs
    with pytest.raises(ValueError):
        G.gibbs(jax.random.key(0), _problem(), **args)


def test_missing_constants():
    p = Problem(
        lambda x, z: jnp.abs(x[0] - z),
        jnp.zeros(5),
        Ball(1.0, dim=1),
        loss_range=1.0,
    )
    with pytest.raises(MissingConstantError):
        G.gibbs(jax.random.key(0), p, epsilon=EPS, delta=DELTA, method="langevin")


@pytest.mark.slow
def test_step_size_warning_is_raised_for_smooth_losses():
    p = Problem(
        lambda x, z: (x[0] - z) ** 2 / 4,
        jnp.zeros(40),
        Ball(1.0, dim=1),
        lipschitz=1.0,
        smoothness=0.5,
    )
    from dpsample.samplers.langevin import StepSizeWarning

    with pytest.warns(StepSizeWarning):
        G.gibbs(
            jax.random.key(0),
            p,
            epsilon=EPS,
            delta=DELTA,
            method="langevin",
            beta=2.0,
            step_size=5.0,
            num_steps=1,
        )


def test_unconstrained_domain_is_refused():
    from dpsample.domains import Unconstrained

    p = Problem(
        lambda x, z: jnp.abs(x[0] - z), jnp.zeros(5), Unconstrained(1), lipschitz=1.0
    )
    with pytest.raises(ValueError, match="Ball"):
        G.gibbs(jax.random.key(0), p, epsilon=EPS, delta=DELTA, method="langevin")


@pytest.mark.slow
def test_proximal_route_guarantee_from_its_schedule():
    p = _problem(n=40)
    delta = 1e-3  # a proven (GLL constant) schedule short enough for a fast test
    res = G.gibbs(jax.random.key(3), p, epsilon=EPS, delta=delta, beta=0.2)
    assert res.info["method"] == "proximal"
    assert bool(p.domain.contains(res.value))
    sched = res.info["schedule"]
    assert sched["proven"]
    assert res.privacy.tv_slack == pytest.approx(sched["tv_total"])
    tau = G.TV_FRACTION * delta / (1 + math.exp(EPS))
    assert sched["tv_total"] <= tau * (1 + 1e-9)
    assert res.privacy.epsilon(delta) <= EPS
    assert res.info["num_steps"] == sched["num_steps"]
    assert res.info["bound"] == "pure"
    assert "privacy_rests_on" not in res.info
    # a proven schedule: the TV slack is a theorem, but the RGO rests on the
    # declared G, which no clip enforces (issue 25); the target's bound is enforced
    # by clipping the loss values (the default), so only the RGO's remains
    (text,) = res.privacy.assumptions
    assert "G-Lipschitz" in text and "not enforced" in text and "RGO" in text
    assert res.info["clip"] == "cone"
    with pytest.raises(ValueError, match="schedule"):
        G.gibbs(jax.random.key(3), p, epsilon=EPS, delta=DELTA, step_size=0.1)


@pytest.mark.slow
def test_proximal_unproven_schedule_is_refused_unless_allowed():
    p = _problem(n=40)
    kw = dict(epsilon=EPS, delta=DELTA, c_step=proximal.C_STEP_PRACTICAL)
    with pytest.raises(ValueError, match="proof constant"):
        G.gibbs(jax.random.key(4), p, **kw)
    res = G.gibbs(jax.random.key(4), p, allow_unproven_schedule=True, **kw)
    assert "nominal" in res.info["privacy_rests_on"]
    # carried by the guarantee itself, beside the declared G (issue 25)
    (assumed,) = [a for a in res.privacy.assumptions if "not proven" in a]
    assert "c_step" in assumed
    assert not res.info["schedule"]["proven"]
    assert res.privacy.epsilon(DELTA) <= EPS


def test_proximal_route_refuses_a_plan_over_the_compute_budget():
    """Issue 16 item 3: the proximal schedule (tied to its TV bound) is refused when
    its cost exceeds ``max_evaluations``, never planned in full regardless (it
    was, before this check)."""
    from dpsample import Budget
    from dpsample.samplers.gibbs import Gibbs

    problem = Problem(
        lambda x, z: jnp.abs(x[0] - z),
        jnp.zeros(50),
        Ball(1.0, dim=1),
        lipschitz=1.0,
    )
    options = {
        "beta": 3.0,
        "mu": 0.2,
        "convex": True,
        "c_step": proximal.C_STEP_PRACTICAL,
        "allow_unproven_schedule": True,
    }
    free = Gibbs().plan(problem.spec, Budget(4.0, 1e-5), **options)
    cost = free.cost.evaluations
    fits = Gibbs().plan(problem.spec, Budget(4.0, 1e-5, cost), **options)
    assert fits.cost.evaluations == cost
    with pytest.raises(ValueError, match="max_evaluations"):
        Gibbs().plan(problem.spec, Budget(4.0, 1e-5, cost - 1), **options)


def test_proximal_num_trials_row_says_whether_the_given_value_ran():
    # the schedule treats a given num_trials as a minimum: the row is the caller's
    # ("user") only where that value ran unchanged, else the rule's, saying it raised it
    spec = _problem(n=40).spec
    budget = dpsample.Budget(EPS, 1e-3)
    default = G.Gibbs().plan(spec, budget, beta=0.2).params["num_trials"]
    assert (default.source, default.value) == ("default", 50)
    more = G.Gibbs().plan(spec, budget, beta=0.2, num_trials=57).params["num_trials"]
    assert (more.source, more.value) == ("user", 57)
    low = G.Gibbs().plan(spec, budget, beta=0.2, num_trials=1).params["num_trials"]
    assert low.source == "theorem" and 1 < low.value <= 50
    assert low.note.startswith("raised from the given 1:")
