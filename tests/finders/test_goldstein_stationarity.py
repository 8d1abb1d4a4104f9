"""Goldstein stationarity by the min-norm QP against closed forms (spec 004 §5.2)."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dpsample
from dpsample.finders.goldstein_stationarity import (
    goldstein_stationarity,
    min_norm_convex_combination,
)

SEED = 20240


def _problem(fn, d):
    """A data-free objective ``fn`` as a Problem (n = 1 dummy example)."""
    return dpsample.Problem(
        lambda x, z: fn(x) + 0.0 * z, jnp.zeros(1), dpsample.domains.Unconstrained(d)
    )


def kink(big_l, a):
    return lambda x: big_l * jnp.abs(jnp.dot(a, x))


def kink_value(big_l, a, x, rho):
    return 0.0 if abs(float(np.dot(a, x))) <= rho else big_l


def ring(big_l, r):
    return lambda x: big_l * jnp.abs(jnp.linalg.norm(x) - r)


def ring_value(big_l, r, x, rho):
    nx = float(np.linalg.norm(x))
    if abs(nx - r) <= rho or nx <= rho:
        return 0.0
    return big_l * math.sqrt(1.0 - rho**2 / nx**2)


def norm_value(big_l, x, rho):
    nx = float(np.linalg.norm(x))
    return 0.0 if nx <= rho else big_l * math.sqrt(1.0 - rho**2 / nx**2)


def test_min_norm_known_hulls():
    # Segment between (1, 1) and (-1, 1): min-norm point (0, 1).
    v, w, gap = min_norm_convex_combination(np.array([[1.0, 1.0], [-1.0, 1.0]]))
    assert v == pytest.approx(1.0, abs=1e-8)
    np.testing.assert_allclose(w, [0.5, 0.5], atol=1e-6)
    assert abs(gap) < 1e-8
    # Triangle containing the origin: value 0.
    tri = np.array([[1.0, 0.0], [-0.5, 0.8], [-0.5, -0.8]])
    v, w, _ = min_norm_convex_combination(tri)
    assert v < 1e-6 and w.min() >= 0 and w.sum() == pytest.approx(1.0)
    # A single point: its norm.
    v, _, _ = min_norm_convex_combination(np.array([[3.0, 4.0]]))
    assert v == pytest.approx(5.0)


def test_min_norm_matches_brute_force():
    rng = np.random.default_rng(SEED)
    for _ in range(5):
        g = rng.normal(size=(6, 3)) + np.array([1.5, 0.0, 0.0])
        v, _, gap = min_norm_convex_combination(g)
        # Brute force over a fine Dirichlet sample (an upper bound on the minimum).
        lam = rng.dirichlet(np.ones(6), size=200_000)
        brute = np.linalg.norm(lam @ g, axis=1).min()
        assert v <= brute + 1e-9
        assert abs(gap) < 1e-6  # KKT certificate of optimality


def test_min_norm_bad_input():
    with pytest.raises(ValueError):
        min_norm_convex_combination(np.zeros(3))
    with pytest.raises(ValueError):
        min_norm_convex_combination(np.array([[np.nan, 1.0]]))


@pytest.mark.slow
@pytest.mark.parametrize(
    "x, rho", [((0.05, 0.3), 0.1), ((0.5, 0.3), 0.1), ((-0.09, 2.0), 0.1)]
)
def test_kink_closed_form(x, rho):
    a = np.array([1.0, 0.0])
    prob = _problem(kink(2.0, jnp.asarray(a)), 2)
    r = goldstein_stationarity(
        prob, jnp.asarray(x), radius=rho, num_samples=64, rng_key=jax.random.key(SEED)
    )
    assert r.value == pytest.approx(kink_value(2.0, a, np.asarray(x), rho), abs=1e-6)
    assert r.num_points == 69 and r.points.shape == (69, 2)
    assert np.all(np.linalg.norm(r.points - np.asarray(x), axis=1) <= rho + 1e-12)


@pytest.mark.slow
def test_norm_closed_form_is_an_upper_bound_that_converges():
    x, rho = jnp.array([0.3, 0.4]), 0.25  # ||x|| = 0.5
    truth = norm_value(1.0, np.asarray(x), rho)
    prob = _problem(lambda y: jnp.linalg.norm(y), 2)
    vals = [
        goldstein_stationarity(
            prob, x, radius=rho, num_samples=k, rng_key=jax.random.key(SEED)
        ).value
        for k in (20, 400)
    ]
    assert all(v >= truth - 1e-9 for v in vals)  # an upper bound
    # In d = 2 the extreme boundary gradient is hit to within O(1/k^2) angle.
    assert vals[1] - truth < 0.01
    assert vals[1] <= vals[0] + 1e-12 or vals[1] - truth < 0.01
    # Power: the bound separates the true value from a wrong radius.
    assert abs(vals[1] - norm_value(1.0, np.asarray(x), 0.5 * rho)) > 0.05


@pytest.mark.parametrize("x", [(0.0, 0.0), (0.9, 0.0), (2.0, 1.0), (0.35, 0.0)])
def test_ring_closed_form(x):
    rho = 0.2
    prob = _problem(ring(1.0, 1.0), 2)
    r = goldstein_stationarity(
        prob, jnp.asarray(x), radius=rho, num_samples=400, rng_key=jax.random.key(3)
    )
    truth = ring_value(1.0, 1.0, np.asarray(x), rho)
    assert r.value >= truth - 1e-9
    assert r.value - truth < 0.02


def test_empirical_risk_is_certified():
    # ERM of |x - a_i| over data: at x between the two atoms, 0 is in the hull.
    data = {"a": jnp.array([[0.0], [0.1]])}
    prob = dpsample.Problem(
        lambda x, z: jnp.abs(x[0] - z["a"][0]), data, dpsample.domains.Unconstrained(1)
    )
    r = goldstein_stationarity(
        prob, jnp.array([0.05]), radius=0.01, num_samples=20, rng_key=jax.random.key(0)
    )
    assert r.value < 1e-9
    r = goldstein_stationarity(
        prob, jnp.array([1.0]), radius=0.01, num_samples=20, rng_key=jax.random.key(0)
    )
    assert r.value == pytest.approx(1.0)


def test_bad_input():
    prob = _problem(lambda y: jnp.sum(jnp.abs(y)), 2)
    key = jax.random.key(0)
    with pytest.raises(ValueError):
        goldstein_stationarity(
            prob, jnp.zeros(3), radius=0.1, num_samples=5, rng_key=key
        )
    with pytest.raises(ValueError):
        goldstein_stationarity(
            prob, jnp.zeros(2), radius=0.0, num_samples=5, rng_key=key
        )
    with pytest.raises(ValueError):
        goldstein_stationarity(
            prob, jnp.zeros(2), radius=0.1, num_samples=0, rng_key=key
        )
    with pytest.raises(TypeError):
        goldstein_stationarity(prob, jnp.zeros(2), radius=0.1, num_samples=5, rng_key=0)
    with pytest.raises(TypeError):
        goldstein_stationarity(
            "p", jnp.zeros(2), radius=0.1, num_samples=5, rng_key=key
        )
