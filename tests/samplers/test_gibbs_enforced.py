"""Gibbs guarantees enforced at the declared constants (issues 24/25's leftover).

By default the routes whose guarantee goes through the exact target (proximal,
MALA) clip every loss value (the net's cone or range clip), so the target is that
of the clipped loss and its pure bound ``beta osc/n`` holds whatever the data;
projected Langevin clips per-example gradients at ``G``. ``enforce_sensitivity=False``
is the opt-in that clips nothing and states the constants as assumptions.
"""

import importlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from dpsample import Ball, Budget, Problem
from dpsample.errors import MissingConstantError
from dpsample.nets.clipped import run_clipped

G = importlib.import_module("dpsample.samplers.gibbs")

EPS, DELTA = 1.0, 1e-5
N = 40


def _loss(x, z):
    # z = (location, scale): the scale makes one example 1000x steeper
    return z[1] * jnp.abs(x[0] - z[0])


def _data(outlier: bool) -> jnp.ndarray:
    z = np.stack([np.linspace(-0.5, 0.5, N), np.ones(N)], axis=1)
    if outlier:
        z[0] = (1.0, 1000.0)  # the replaced example: G declared 1000x too small
    return jnp.asarray(z)


def _problem(outlier: bool = False, **consts) -> Problem:
    # true constants for the examples of scale 1: |x - z| on K lies in [0, 1.5]
    consts = {"lipschitz": 1.0, "loss_range": 1.5, "loss_floor": 0.0} | consts
    return Problem(_loss, _data(outlier), Ball(1.0, dim=1), **consts)


def _mala(**kw):
    return G.Gibbs(method="mala", tv_bound=1e-7, **kw)


def _log_density(plan, problem, grid, *, clipped: bool):
    """The normalised log-density of the plan's target on a grid of ``K`` (d = 1)."""
    loss_fn, data = problem.loss_fn, problem.data
    if clipped:
        loss_fn, data = run_clipped(plan.internal["clipped_loss"], loss_fn, data)
    risk = jax.vmap(lambda x: jnp.mean(jax.vmap(loss_fn, in_axes=(None, 0))(x, data)))(
        grid[:, None]
    )
    logp = -plan["beta"] * (risk + 0.5 * plan["mu"] * grid**2)
    return logp - jax.scipy.special.logsumexp(logp)


def test_default_plan_enforces_the_target_bound_by_clipping_values():
    spec = _problem().spec
    plan = _mala().plan(spec, Budget(EPS, DELTA))
    assert plan["enforce_sensitivity"] is True
    assert "loss_floor" in plan.params["enforce_sensitivity"].note  # the range clip
    assert plan.internal["clip"] == "range"
    assert plan["sensitivity_oscillation"] == pytest.approx(2 * 1.5 / N)  # 2 B / n
    assert plan["bound"] == "pure"
    # only what no clip enforces remains: MALA's declared TV bound
    (assumed,) = plan.guarantee.assumptions
    assert "tv_bound" in assumed
    # the opt-in is today's path: every declared constant, stated as assumed
    out = _mala(enforce_sensitivity=False).plan(spec, Budget(EPS, DELTA))
    assert out.internal["clip"] == "none"
    assumed = out.guarantee.assumptions
    assert len(assumed) == 2 and any("loss_range B = 1.5" in a for a in assumed)
    assert "sensitivity_oscillation" not in out.params


def test_a_range_without_floor_is_enforced_by_the_cone():
    spec = _problem(loss_floor=None).spec
    plan = _mala().plan(spec, Budget(EPS, DELTA))
    assert plan.internal["clip"] == "cone"
    assert plan["sensitivity_oscillation"] == pytest.approx(2 * 1.0 * 2.0 / N)
    # neither G nor a located range: refused before any private computation
    bare = _problem(lipschitz=None, loss_floor=None).spec
    with pytest.raises(MissingConstantError, match="enforce_sensitivity=False"):
        _mala(step_size=0.05).plan(bare, Budget(EPS, DELTA))
    opt_in = _mala(enforce_sensitivity=False, step_size=0.05)
    assert opt_in.plan(bare, Budget(EPS, DELTA)).guarantee.conditional
    with pytest.raises(TypeError, match="bool"):
        _mala(enforce_sensitivity=1).plan(spec, Budget(EPS, DELTA))


def test_paper_preset_is_refused_when_enforced():
    with pytest.raises(ValueError, match="paper"):
        _mala(preset="paper").plan(_problem().spec, Budget(EPS, DELTA))


@pytest.mark.slow
@pytest.mark.parametrize("clip_consts", [{}, {"loss_floor": None}])
def test_clipped_target_keeps_its_bound_on_neighbours_beyond_the_constants(
    clip_consts,
):
    """The sensitivity check, exact in d = 1: on replace-one neighbours whose
    replaced example is 1000x steeper than declared, the clipped target's privacy
    loss ``max_x |log pi_D(x)/pi_D'(x)|`` stays within the pure bound the plan
    claims; the opt-in's (nothing clipped) is far beyond the bound it claims."""
    grid = jnp.linspace(-1.0, 1.0, 4001)
    d, d_prime = _problem(**clip_consts), _problem(outlier=True, **clip_consts)
    for enforce in (True, False):
        plan = _mala(enforce_sensitivity=enforce, beta=10.0).plan(
            d.spec, Budget(EPS, DELTA)
        )
        loss = float(
            jnp.max(
                jnp.abs(
                    _log_density(plan, d, grid, clipped=enforce)
                    - _log_density(plan, d_prime, grid, clipped=enforce)
                )
            )
        )
        if enforce:
            # the exact target's bound: pure, beta osc/n at the enforced osc
            claimed = plan["beta"] * plan["sensitivity_oscillation"]
            assert plan["bound"] == "pure"
            assert loss <= claimed * (1 + 1e-9)
            # the clipped outlier moves the target by at least 3/8 of the bound here
            assert loss > 0.3 * claimed
        else:
            pure = plan["beta"] * d.utility_oscillation() / N
            assert loss > 5 * pure  # the unenforced bound fails on these neighbours


@pytest.mark.slow
def test_nothing_clipped_gives_the_same_release():
    """Where every loss lies within the declared constants, the clipped target is the
    target: the default's release equals the opt-in's, bit for bit (same key)."""
    p = _problem()
    kw = dict(epsilon=EPS, delta=DELTA, method="mala", tv_bound=1e-7, beta=10.0)
    kw |= dict(num_steps=20, step_size=0.05)
    on = G.gibbs(jax.random.key(5), p, **kw)
    off = G.gibbs(jax.random.key(5), p, enforce_sensitivity=False, **kw)
    assert on.info["clip"] == "range" and off.info["clip"] == "none"
    np.testing.assert_array_equal(np.asarray(on.value), np.asarray(off.value))


@pytest.mark.slow
def test_langevin_clips_gradients_and_its_opt_in_is_conditional():
    p = _problem()
    kw = dict(epsilon=EPS, delta=DELTA, method="langevin", max_steps=20)
    on = G.gibbs(jax.random.key(1), p, **kw)
    assert not on.privacy.conditional and on.info["clip"] == "gradient"
    assert on.info["clip_norm"] == 1.0
    off = G.gibbs(jax.random.key(1), p, enforce_sensitivity=False, **kw)
    assert off.privacy.conditional and off.info["clip"] == "none"
    assert "clip_norm" not in off.info
    assert "not enforced" in off.privacy.assumptions[0]
    # within the constants nothing is clipped: the same release up to the clipped
    # mean's rounding (clipping.clipped_mean sums, then divides)
    np.testing.assert_allclose(np.asarray(on.value), np.asarray(off.value), rtol=1e-12)
    # beyond them the clip binds: the releases differ
    q = _problem(outlier=True)
    on_q = G.gibbs(jax.random.key(1), q, **kw)
    off_q = G.gibbs(jax.random.key(1), q, enforce_sensitivity=False, **kw)
    assert not np.array_equal(np.asarray(on_q.value), np.asarray(off_q.value))
    assert not on_q.privacy.conditional and off_q.privacy.conditional
