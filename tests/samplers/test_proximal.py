"""The proximal (alternating) sampler with the GLL rejection RGO."""

import math
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats

from dpsample import Ball, Problem
from dpsample._src.arviz import import_arviz
from dpsample.errors import MissingConstantError
from dpsample.samplers import proximal, rgo
from dpsample.samplers.target import GibbsTarget

ALPHA = 1e-3


def _mixed_problem(dim=1, n=40, seed=0, radius=1.0):
    """Non-convex, non-smooth, 1-Lipschitz losses: |sin| waves and |.| kinks."""
    rng = np.random.default_rng(seed)
    data = {
        "c": jnp.asarray(rng.uniform(2, 4, n)),
        "a": jnp.asarray(rng.uniform(-0.8, 0.8, (n, dim))),
        "wave": jnp.arange(n) % 2 == 0,
    }

    def loss(x, z):
        u = x - z["a"]
        wave = jnp.abs(jnp.sin(z["c"] * u[0])) / z["c"]
        kink = jnp.abs(u[-1]) if dim == 1 else jnp.sqrt(jnp.sum(u**2) + 1e-12)
        return jnp.where(z["wave"], wave, kink)

    return Problem(loss, data, Ball(radius, dim=dim), lipschitz=1.0)


def _log_density_grid(problem, beta, mu, grid, risk=None):
    if risk is None:
        risk = np.asarray(problem.empirical_risk_batch(jnp.asarray(grid)))
    logp = -beta * (risk + 0.5 * mu * np.sum(grid**2, axis=1))
    inside = np.linalg.norm(grid, axis=1) <= problem.domain.radius
    return np.where(inside, logp, -np.inf)


def _run_chains(target, step_size, num_chains, num_steps, seed, **kw):
    kernel = proximal.build_kernel(**kw)
    init_key, run_key = jax.random.split(jax.random.key(seed))
    x0 = proximal.initial_position(init_key, target, num_chains)

    def chain(key, x):
        def body(state, k):
            state, info = kernel(k, state, target, step_size)
            return state, (state.position, info)

        return jax.lax.scan(
            body, proximal.init(x, target), jax.random.split(key, num_steps)
        )

    keys = jax.random.split(run_key, num_chains)
    final, (trace, info) = jax.jit(jax.vmap(chain))(keys, x0)
    return final.position, trace, info


@pytest.mark.slow
def test_1d_nonconvex_nonsmooth_ks_with_power():
    beta, mu = 4.0, 1.0
    problem = _mixed_problem()
    target = GibbsTarget.create(problem, beta=beta, mu=mu)
    eta = 0.2 / beta**2
    final, _, info = _run_chains(target, eta, 1000, 150, seed=0)
    xs = np.asarray(final[:, 0])
    grid = np.linspace(-1, 1, 20_001)

    def cdf_for(b):
        logp = _log_density_grid(problem, b, mu, grid[:, None])
        c = np.cumsum(np.exp(logp - logp.max()))
        return lambda x: np.interp(x, grid, c / c[-1])

    assert scipy.stats.kstest(xs, cdf_for(beta)).pvalue > ALPHA
    assert scipy.stats.kstest(xs, cdf_for(2.0 * beta)).pvalue < ALPHA  # power
    assert bool(info.is_accepted.all())


@pytest.mark.slow
def test_2d_nonconvex_nonsmooth_chi_square_with_power():
    beta, mu = 4.0, 1.0
    problem = _mixed_problem(dim=2, seed=1)
    target = GibbsTarget.create(problem, beta=beta, mu=mu)
    final, _, _ = _run_chains(target, 0.2 / beta**2, 1200, 120, seed=1)
    xs = np.asarray(final)
    edges = np.linspace(-1, 1, 7)
    h = 1e-3
    g1 = np.arange(-1 + h / 2, 1, h)
    gx, gy = np.meshgrid(g1, g1, indexing="ij")
    grid = np.stack([gx.ravel(), gy.ravel()], axis=1)
    counts = np.histogram2d(xs[:, 0], xs[:, 1], bins=[edges, edges])[0].ravel()
    # F_D on the 4e6-point grid once for both betas, and jitted: eager dispatch took
    # 49 s a beta on a loaded 2-core machine, the fused program 14 s (same bits).
    risk = np.asarray(jax.jit(problem.empirical_risk_batch)(jnp.asarray(grid)))

    def probs(b):
        logp = _log_density_grid(problem, b, mu, grid, risk)
        w = np.exp(logp - logp.max())
        p = np.histogram2d(grid[:, 0], grid[:, 1], bins=[edges, edges], weights=w)[0]
        return p.ravel() / p.sum()

    def pvalue(p):
        keep = p * len(xs) >= 5
        expected = np.append(p[keep], p[~keep].sum()) * len(xs)
        observed = np.append(counts[keep], counts[~keep].sum())
        return scipy.stats.chisquare(observed, expected).pvalue

    assert pvalue(probs(beta)) > ALPHA
    assert pvalue(probs(1.5 * beta)) < ALPHA  # power


@pytest.mark.slow
def test_gaussian_target_mcse_mean_and_variance():
    """Quadratic loss on a ball: pi = N(zbar/(1+mu), 1/(beta(1+mu))) per axis.

    The step is inside the bound ``eta <= 1/(8 beta^2 G^2)`` under which GLL's
    acceptance and the clipping of ``rho`` are accounted for. The test used to run at
    ``eta (beta G)^2 = 2.9`` on a radius-10 ball, where the sampler is biased: 64
    chains of 2000 steps gave a variance of 0.527 against 0.5 (MCSE z-scores 2.7
    and 2.9), before and after the random-words change.
    """
    beta, mu, dim, radius = 1.0, 1.0, 2, 3.0
    data = jnp.asarray(np.random.default_rng(0).normal(0.5, 1.0, (50, dim)))
    lipschitz = radius + float(jnp.max(jnp.linalg.norm(data, axis=1)))
    problem = Problem(
        lambda x, z: 0.5 * jnp.sum((x - z) ** 2),
        data,
        # The Gaussian's mass beyond radius 3 is 4e-4: truncation moves its variance by
        # 0.002 and its mean by 3e-4, a tenth of the test's MCSE or less.
        Ball(radius, dim=dim),
        lipschitz=lipschitz,
    )
    target = GibbsTarget.create(problem, beta=beta, mu=mu)
    eta = 0.9 / (8 * beta**2 * lipschitz**2)
    _, trace, _ = _run_chains(target, eta, 64, 1500, seed=2, num_trials=30)
    samples = np.asarray(trace[:, 300:, :])  # (chains, draws, dim)
    mean_true = np.asarray(data.mean(axis=0)) / (1 + mu)
    var_true = 1.0 / (beta * (1 + mu))
    z_99 = 2.576

    def check(values, truth):
        ess = float(import_arviz().ess(values))
        mcse = values.std() / math.sqrt(ess)
        return abs(values.mean() - truth) / mcse

    for j in range(dim):
        assert check(samples[:, :, j], mean_true[j]) < z_99
        sq = (samples[:, :, j] - mean_true[j]) ** 2
        assert check(sq, var_true) < z_99
        assert check(sq, 1.0 / (1.5 * beta * (1 + mu))) > z_99  # power: wrong beta


@pytest.mark.slow
def test_counters_at_defaults_and_api():
    beta = 4.0
    problem = _mixed_problem()
    target = GibbsTarget.create(problem, beta=beta, mu=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        algo = proximal.as_top_level_api(target, 0.1 / beta**2)
    state = algo.init(jnp.zeros(1))

    def body(state, key):
        return algo.step(key, state)

    keys = jax.random.split(jax.random.key(3), 2000)
    state, info = jax.jit(lambda s, k: jax.lax.scan(body, s, k))(state, keys)
    evals = np.asarray(info.num_loss_evaluations)
    trials = np.asarray(info.num_trials)
    # 2e evaluations per trial, about 2 trials per step: 11-16 per step
    assert 9.0 < evals.mean() < 17.0
    assert abs(evals.sum() / trials.sum() - 2 * math.e) < 0.3
    assert np.all(
        np.asarray(info.num_loss_evaluations_budget) == 2 * rgo.pool_size(50, 20)
    )
    assert state.position.shape == (1,)


def test_schedule_convex_and_lsi():
    problem = _mixed_problem()
    target = GibbsTarget.create(problem, beta=4.0, mu=1.0)
    s = proximal.schedule(target, tv_target=1e-2, lsi_constant=2.0)
    assert s.tv_total <= 1e-2
    assert s.tv_mixing <= 1e-2 / 4 + 1e-15
    assert s.tv_inner <= 1e-2 / 2 + 1e-15
    assert s.delta_inner == pytest.approx(1e-2 / (2 * s.num_steps))
    assert s.step_size == pytest.approx(
        proximal.C_STEP_PAPER / (16.0 * math.log(2 / s.delta_inner))
    )
    # fixed point: with this eta, T steps reach KL_T <= tau^2/8
    kl_t = s.kl_init * (1 + s.step_size / 2.0) ** (-2 * s.num_steps)
    assert kl_t <= 1e-4 / 8
    assert s.kl_init == pytest.approx(4.0 * 2.0)  # beta G D with D = 2
    assert s.proven and rgo.budget_tv(s.num_trials, s.num_levels) <= s.delta_inner / 2
    practical = proximal.schedule(
        target, tv_target=1e-2, lsi_constant=2.0, c_step=proximal.C_STEP_PRACTICAL
    )
    assert not practical.proven and practical.num_steps < s.num_steps
    convex = proximal.schedule(target, tv_target=1e-2, convex=True)
    assert convex.lsi_constant == pytest.approx(1 / 4.0)
    assert s.step_size <= proximal.max_step_size(target)


def test_bad_input_and_warning():
    problem = _mixed_problem()
    with pytest.raises(ValueError):
        GibbsTarget.create(problem, beta=0.0, mu=1.0)
    with pytest.raises(ValueError):
        GibbsTarget.create(problem, beta=1.0, mu=-1.0)
    target = GibbsTarget.create(problem, beta=4.0, mu=1.0)
    with pytest.raises(ValueError):
        proximal.as_top_level_api(target, 0.0)
    with pytest.raises(ValueError):
        proximal.build_kernel(num_trials=0)
    with pytest.raises(ValueError):
        proximal.init(jnp.zeros(2), target)
    with pytest.raises(ValueError):
        proximal.schedule(target, tv_target=1e-2)  # neither lsi nor convex
    with pytest.raises(ValueError):
        proximal.schedule(target, tv_target=0.0, convex=True)
    with pytest.raises(ValueError):
        proximal.schedule(
            GibbsTarget.create(problem, beta=4.0, mu=0.0), tv_target=0.1, convex=True
        )
    no_g = Problem(problem.loss_fn, problem.data, problem.domain)
    with pytest.raises(MissingConstantError):
        proximal.schedule(
            GibbsTarget.create(no_g, beta=1.0, mu=1.0), tv_target=0.1, convex=True
        )
    with pytest.warns(proximal.StepSizeWarning):
        proximal.as_top_level_api(target, 1.0)


@pytest.mark.slow
def test_vmap_over_chains_and_initial_law():
    problem = _mixed_problem(dim=2, seed=2)
    target = GibbsTarget.create(problem, beta=2.0, mu=1.0)
    final, trace, info = _run_chains(target, 0.02, 4, 5, seed=4, num_trials=10)
    assert final.shape == (4, 2) and trace.shape == (4, 5, 2)
    assert bool(problem.domain.contains(trace.reshape(-1, 2), atol=1e-12).all())
    x0 = np.asarray(proximal.initial_position(jax.random.key(0), target, 4000))
    # pi_0 = N(0, 1/(beta mu)) restricted to the unit ball
    r = np.linalg.norm(x0, axis=1)
    ref = scipy.stats.chi(2, scale=1 / math.sqrt(2.0))
    assert scipy.stats.kstest(r, lambda t: ref.cdf(t) / ref.cdf(1.0)).pvalue > ALPHA
