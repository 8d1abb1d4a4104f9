"""The fixed-budget Gopi–Lee–Liu rejection RGO."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats

from dpsample import Ball, Problem
from dpsample.samplers import rgo
from dpsample.samplers.target import GibbsTarget

ALPHA = 1e-3
BETA, MU = 8.0, 1.0


def _abs_sin_problem(seed=0, n=30, radius=1.0):
    """Non-convex, non-smooth, 1-Lipschitz per-example losses in 1-D.

    A third of the examples are ``|sin(c (x - a))|/c`` (non-convex), the rest
    ``|x + 1.5|``, so ``F_D`` has slope >= 1/3 on the ball: the tilt ``exp(-beta F)``
    visibly moves the RGO law away from its Gaussian proposal at every ``y``.
    """
    rng = np.random.default_rng(seed)
    data = {
        "c": jnp.asarray(rng.uniform(1, 3, n)),
        "a": jnp.asarray(rng.uniform(-1, 1, n)),
        "wave": jnp.arange(n) < n // 3,
    }

    def loss(x, z):
        wave = jnp.abs(jnp.sin(z["c"] * (x[0] - z["a"]))) / z["c"]
        return jnp.where(z["wave"], wave, jnp.abs(x[0] + 1.5))

    return Problem(loss, data, Ball(radius, dim=1), lipschitz=1.0)


def _rgo_cdf(problem, beta, mu, y, eta):
    """CDF of exp(-beta F - beta mu x^2/2 - (x-y)^2/(2 eta)) on the ball, quadrature."""
    r = problem.domain.radius
    grid = np.linspace(-r, r, 40_001)
    risk = np.asarray(jax.vmap(problem.empirical_risk)(jnp.asarray(grid)[:, None]))
    logp = -beta * risk - 0.5 * beta * mu * grid**2 - (grid - y) ** 2 / (2 * eta)
    cdf = np.cumsum(np.exp(logp - logp.max()))
    return lambda x: np.interp(x, grid, cdf / cdf[-1])


def _draws(target, y, eta, num, seed, **kw):
    keys = jax.random.split(jax.random.key(seed), num)
    fn = jax.jit(jax.vmap(lambda k: rgo.sample(k, target, jnp.array([y]), eta, **kw)))
    return fn(keys)


@pytest.mark.parametrize("y", [0.1, 0.95])
def test_ks_against_quadrature_with_power(y):
    problem = _abs_sin_problem()
    target = GibbsTarget.create(problem, beta=BETA, mu=MU)
    eta = 0.1 / BETA**2  # c = 0.1: the tilt exp(-beta F) matters across the proposal
    xs, info = _draws(target, y, eta, 20_000, seed=1)
    xs = np.asarray(xs[:, 0])
    assert bool(info.is_accepted.all())
    assert scipy.stats.kstest(xs, _rgo_cdf(problem, BETA, MU, y, eta)).pvalue > ALPHA
    # Power: a wrong beta (1.5x) and the bare proposal (no correction) are rejected.
    wrong = _rgo_cdf(problem, 1.5 * BETA, MU, y, eta)
    assert scipy.stats.kstest(xs, wrong).pvalue < ALPHA
    proposal_only = _rgo_cdf(
        problem, 0.0, 0.0, y / (1 + eta * BETA * MU), eta / (1 + eta * BETA * MU)
    )
    assert scipy.stats.kstest(xs, proposal_only).pvalue < ALPHA


def test_acceptance_at_theorem_step_size():
    problem = _abs_sin_problem()
    target = GibbsTarget.create(problem, beta=BETA, mu=MU)
    delta_inner = 1e-6
    eta = 2.0**-8 / (BETA**2 * math.log(1 / delta_inner))  # paper preset
    _, info = _draws(target, 0.5, eta, 4000, seed=2)
    trials = np.asarray(info.num_trials)
    # per-trial acceptance p: calls / total trials (geometric); MCSE by the delta method
    p_hat = len(trials) / trials.sum()
    se = p_hat * np.std(trials) / np.mean(trials) / math.sqrt(len(trials))
    assert p_hat - 3.29 * se >= 1 / 3
    # and at the acceptance ceiling eta = 1/(8 beta^2 G^2) too
    _, info = _draws(target, 0.5, 1 / (8 * BETA**2), 4000, seed=3)
    trials = np.asarray(info.num_trials)
    p_hat = len(trials) / trials.sum()
    se = p_hat * np.std(trials) / np.mean(trials) / math.sqrt(len(trials))
    assert p_hat + 3.29 * se >= 1 / 3


def test_counters():
    problem = _abs_sin_problem()
    target = GibbsTarget.create(problem, beta=BETA, mu=MU)
    _, info = _draws(target, 0.3, 0.05 / BETA**2, 4000, seed=4)
    evals = np.asarray(info.num_loss_evaluations)
    trials = np.asarray(info.num_trials)
    # E[evaluations per trial] = sum_a 2a/a! = 2e (two losses per series term)
    per_trial = evals.sum() / trials.sum()
    ratio = evals / trials
    assert abs(per_trial - 2 * math.e) < 4 * ratio.std() / math.sqrt(len(ratio))
    assert 9.0 < evals.mean() < 17.0
    assert np.all(
        np.asarray(info.num_loss_evaluations_budget) == 2 * rgo.pool_size(50, 20)
    )


def test_fallback_is_data_independent():
    """With one trial and a huge step, rejections are common; the fallback is the
    proposal draw, identical for two different datasets under the same key."""
    p1 = _abs_sin_problem(seed=0)
    p2 = _abs_sin_problem(seed=7)
    t1 = GibbsTarget.create(p1, beta=BETA, mu=MU)
    t2 = GibbsTarget.create(p2, beta=BETA, mu=MU)
    x1, i1 = _draws(t1, 0.2, 1.0, 500, seed=5, num_trials=1)
    x2, i2 = _draws(t2, 0.2, 1.0, 500, seed=5, num_trials=1)
    both_failed = ~np.asarray(i1.is_accepted) & ~np.asarray(i2.is_accepted)
    assert both_failed.sum() > 20
    np.testing.assert_array_equal(
        np.asarray(x1)[both_failed], np.asarray(x2)[both_failed]
    )
    # and accepted draws do depend on the data (a sanity check of the comparison)
    both_ok = np.asarray(i1.is_accepted) & np.asarray(i2.is_accepted)
    assert both_ok.sum() > 20


def test_pool_and_budget_tv():
    assert rgo.pool_size(50, 20) == 358
    assert rgo.pool_size(10, 20) < rgo.pool_size(50, 20)
    tv = rgo.budget_tv(50, 20)
    assert (2 / 3) ** 50 < tv < 1.1 * (2 / 3) ** 50
    # the pool tail is the exact law of sum_i A_i(A_i+1)/2: check by simulation
    rng = np.random.default_rng(0)
    u = rng.random((200_000, 10))
    depth = 1 + sum((u < 1 / math.factorial(a)).astype(int) for a in range(2, 21))
    demand = (depth * (depth + 1) // 2).sum(axis=1)
    assert abs(demand.mean() - 10 * math.e) < 5 * demand.std() / math.sqrt(len(demand))
    assert np.all(demand <= rgo.pool_size(10, 20))


def test_bad_input():
    problem = _abs_sin_problem()
    target = GibbsTarget.create(problem, beta=BETA, mu=MU)
    key = jax.random.key(0)
    with pytest.raises(ValueError):
        rgo.sample(key, target, jnp.zeros(2), 0.1)
    with pytest.raises(ValueError):
        rgo.sample(key, target, jnp.zeros(1), 0.0)
    with pytest.raises(ValueError):
        rgo.sample(key, target, jnp.zeros(1), 0.1, num_trials=0)
    with pytest.raises(ValueError):
        rgo.sample(key, target, jnp.zeros(1), 0.1, num_levels=0)
    with pytest.raises(TypeError):
        rgo.sample(key, problem, jnp.zeros(1), 0.1)
