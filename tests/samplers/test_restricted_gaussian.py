"""Exact Gaussian restricted to a ball (samplers research note §3)."""

import math
import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.special
import scipy.stats

from dpsample.domains import Ball
from dpsample.samplers import restricted_gaussian as rg

ALPHA = 1e-3  # KS significance level of each acceptance test


def _naive(seed, mean, std, radius, num):
    """Naive rejection (exact, usable only where its acceptance is not tiny)."""
    rng = np.random.default_rng(seed)
    out = []
    while sum(len(o) for o in out) < num:
        g = rng.normal(size=(4 * num, len(mean))) * std + mean
        out.append(g[np.linalg.norm(g, axis=1) <= radius])
    return np.concatenate(out)[:num]


@pytest.mark.parametrize("k", [0.5, 1.0, 1.5, 4.5, 49.5, 499.5, 4999.5])
def test_log_gammainc_matches_scipy(k):
    v = np.concatenate(
        [
            k * np.geomspace(1e-3, 0.999, 50),
            k + np.linspace(-5, 5, 41) * math.sqrt(k),
            k * np.geomspace(1.001, 50, 50),
        ]
    )
    v = v[v > 0]
    with np.errstate(divide="ignore"):
        ref = np.log(scipy.special.gammainc(k, v))
    ours = np.asarray(jax.jit(lambda v: rg._log_gammainc(k, v))(jnp.asarray(v)))
    ok = ref > -700  # scipy underflows below; ours keeps going in log space
    err = np.abs(ours[ok] - ref[ok]) / np.maximum(1.0, np.abs(ref[ok]))
    assert err.max() < 1e-10
    assert np.all(np.isfinite(ours))


def _draw(seed, mean, std, ball, num):
    return np.asarray(
        jax.jit(rg.sample, static_argnums=(3, 4))(
            jax.random.key(seed), jnp.asarray(mean), std, ball, num
        )
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    "mean",
    # off the axes too: d = 2 draws the coordinate along the line orthogonal to the
    # mean's direction, with its sign, in a path of its own
    [(0.9, 0.0), (0.54, -0.72), (0.9, 0.0, 0.0)],
)
def test_matches_naive_rejection_near_boundary(mean):
    dim = len(mean)
    ball = Ball(1.0, dim=dim)
    mean = np.asarray(mean)
    xs = _draw(0, mean, 0.3, ball, 20_000)
    ref = _naive(1, mean, 0.3, 1.0, 20_000)
    perp = np.zeros(dim)
    perp[:2] = (-mean[1], mean[0])  # orthogonal to the mean
    for stat in (
        lambda x: x[:, 0],
        lambda x: np.linalg.norm(x, axis=1),
        lambda x: x[:, 1],
        lambda x: x @ perp,
    ):
        assert scipy.stats.ks_2samp(stat(xs), stat(ref)).pvalue > ALPHA
    # Power: a 30% larger std is rejected on the same statistics.
    wrong = _draw(2, mean, 0.39, ball, 20_000)
    assert scipy.stats.ks_2samp(wrong[:, 0], ref[:, 0]).pvalue < ALPHA


@pytest.mark.slow
def test_d1_matches_truncated_normal_also_outside():
    ball = Ball(1.0, dim=1)
    for mean, std in [(0.3, 0.5), (3.0, 0.5), (-2.0, 0.05)]:
        xs = _draw(3, [mean], std, ball, 20_000)[:, 0]
        lo, hi = (-1 - mean) / std, (1 - mean) / std
        ref = scipy.stats.truncnorm(lo, hi, loc=mean, scale=std)
        assert scipy.stats.kstest(xs, ref.cdf).pvalue > ALPHA
    wrong = scipy.stats.truncnorm(-1.3 / 0.6, 0.7 / 0.6, loc=0.3, scale=0.6)
    xs = _draw(4, [0.3], 0.5, ball, 20_000)[:, 0]
    assert scipy.stats.kstest(xs, wrong.cdf).pvalue < ALPHA


def _axial_cdf_scipy(radius, dim, a, s):
    """Axial marginal by quadrature, with scipy's gammainc (an independent check)."""
    t = np.linspace(-radius, radius, 400_001)[1:-1]
    with np.errstate(divide="ignore"):  # log(0) far in the tails: -inf, fine
        log_p = np.log(
            scipy.special.gammainc(0.5 * (dim - 1), (radius**2 - t**2) / (2 * s**2))
        )
    logp = -0.5 * ((t - a) / s) ** 2 + log_p
    p = np.exp(logp - logp.max())
    cdf = np.cumsum(p)
    return lambda x: np.interp(x, t, cdf / cdf[-1])


@pytest.mark.slow
def test_d1000_mean_on_boundary_fast_and_exact():
    dim, s = 1000, 0.01
    ball = Ball(1.0, dim=dim)
    mean = np.zeros(dim)
    mean[0] = 1.0
    # naive rejection would accept ~3e-7 of its proposals here
    start = time.perf_counter()
    xs = _draw(5, mean, s, ball, 4000)
    assert time.perf_counter() - start < 60.0
    assert np.all(np.linalg.norm(xs, axis=1) <= 1.0 + 1e-12)
    t = xs[:, 0]
    assert scipy.stats.kstest(t, _axial_cdf_scipy(1.0, dim, 1.0, s)).pvalue > ALPHA
    assert (
        scipy.stats.kstest(t, _axial_cdf_scipy(1.0, dim, 1.0, 1.1 * s)).pvalue < ALPHA
    )
    # Radial law given t: PIT of |z|^2/s^2 under the truncated chi^2_{d-1}.
    k = 0.5 * (dim - 1)
    z_sq = np.sum(xs[:, 1:] ** 2, axis=1)
    v_max = (1.0 - t**2) / (2 * s**2)
    pit = scipy.special.gammainc(k, z_sq / (2 * s**2)) / scipy.special.gammainc(
        k, v_max
    )
    assert scipy.stats.kstest(pit, "uniform").pvalue > ALPHA
    # Direction: orthogonal part isotropic, so each coordinate has mean 0.
    z = xs[:, 1:]
    zscore = z.mean(axis=0) / (z.std(axis=0) / math.sqrt(len(z)))
    assert np.mean(np.abs(zscore) > 3.29) < 0.01


@pytest.mark.slow
def test_shapes_vmap_centre_and_inside():
    ball = Ball(2.0, center=jnp.array([1.0, -1.0]))
    x = rg.sample(jax.random.key(0), jnp.array([5.0, 5.0]), 0.3, ball)
    assert x.shape == (2,)
    means = jnp.array([[0.0, 0.0], [1.0, -1.0], [10.0, 0.0]])
    keys = jax.random.split(jax.random.key(1), 3)
    xs = jax.vmap(lambda k, m: rg.sample(k, m, 0.5, ball, 7))(keys, means)
    assert xs.shape == (3, 7, 2)
    assert bool(ball.contains(xs.reshape(-1, 2), atol=1e-12).all())
    # mean at the centre: the axis is arbitrary, the law is still the right one
    xs = np.asarray(
        rg.sample(jax.random.key(2), jnp.array([1.0, -1.0]), 0.5, ball, 5000)
    )
    assert abs(xs[:, 0].mean() - 1.0) < 4 * xs[:, 0].std() / math.sqrt(5000)


def test_bad_input():
    ball = Ball(1.0, dim=2)
    with pytest.raises(ValueError):
        rg.sample(jax.random.key(0), jnp.zeros(3), 1.0, ball)
    with pytest.raises(ValueError):
        rg.sample(jax.random.key(0), jnp.zeros(2), -1.0, ball)
    with pytest.raises(ValueError):
        rg.sample(jax.random.key(0), jnp.array([jnp.nan, 0.0]), 1.0, ball)
    with pytest.raises(ValueError):
        rg.sample(jax.random.key(0), jnp.zeros(2), 1.0, ball, 0)
    with pytest.raises(TypeError):
        rg.sample(jax.random.key(0), jnp.zeros(2), 1.0, "ball")


def test_candidate_budget():
    assert rg.num_candidates(1) == 60
    p0 = (1 - math.exp(-1)) / (1 + math.exp(-1))
    for num in (1, 10, 100):
        m = rg.num_candidates(num)
        assert scipy.stats.binom.cdf(num - 1, m, p0) <= rg.FAILURE_TARGET
        assert scipy.stats.binom.cdf(num - 1, m - 1, p0) > rg.FAILURE_TARGET


def test_num_candidates_is_the_one_by_one_scan():
    """The block scan returns the first size of the one-by-one scan (issue 27)."""
    for num in (1, 2, 7, 64, 65, 300):
        size = math.ceil(num / rg._ACCEPT_LOWER_BOUND)
        while (
            scipy.stats.binom.cdf(num - 1, size, rg._ACCEPT_LOWER_BOUND)
            > rg.FAILURE_TARGET
        ):
            size += 1
        assert rg.num_candidates(num) == size
