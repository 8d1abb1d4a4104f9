import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats

from dpsample.domains import Ball, Unconstrained

KEY = jax.random.key(0)


def test_dim_inferred_from_center():
    ball = Ball(1.5, jnp.array([1.0, 2.0, 3.0]))
    assert ball.dim == 3
    assert ball.diameter == 3.0
    assert ball.center.dtype == jnp.float64
    assert ball.max_norm == pytest.approx(math.sqrt(14.0) + 1.5)


def test_with_dim():
    ball = Ball(1.0)
    assert ball.dim is None
    b3 = ball.with_dim(3)
    assert b3.dim == 3 and b3.radius == 1.0
    assert b3.with_dim(3) is b3
    with pytest.raises(ValueError, match="dimension 3"):
        b3.with_dim(4)
    with pytest.raises(ValueError, match="dim"):
        ball.sample_uniform(KEY, 3)
    np.testing.assert_array_equal(b3.center_point, np.zeros(3))


@pytest.mark.parametrize("radius", [0.0, -1.0, math.inf, math.nan])
def test_bad_radius(radius):
    with pytest.raises(ValueError):
        Ball(radius, dim=2)


def test_bad_center():
    with pytest.raises(ValueError, match="finite"):
        Ball(1.0, jnp.array([0.0, jnp.nan]))
    with pytest.raises(ValueError, match="shape"):
        Ball(1.0, jnp.zeros((2, 2)))
    with pytest.raises(ValueError, match="match"):
        Ball(1.0, jnp.zeros(2), dim=3)


@pytest.mark.slow
@pytest.mark.parametrize("center", [None, (0.5, -1.0, 2.0)])
def test_projection_properties(center):
    ball = Ball(0.7, None if center is None else jnp.array(center), dim=3)
    c = ball.center_point
    k1, k2 = jax.random.split(KEY)
    xs = c + 2.0 * jax.random.normal(k1, (200, 3))
    ys = c + 2.0 * jax.random.normal(k2, (200, 3))
    px = jax.jit(jax.vmap(ball.project))(xs)
    py = ball.project(ys)  # batch-aware without vmap
    # Inside the ball.
    assert bool(ball.contains(px).all())
    # Idempotent.
    np.testing.assert_allclose(ball.project(px), px, atol=1e-12)
    # Non-expansive.
    dp = jnp.linalg.norm(px - py, axis=1)
    d = jnp.linalg.norm(xs - ys, axis=1)
    assert bool((dp <= d + 1e-12).all())
    # Outside points land on the sphere, along the ray from the centre.
    out = jnp.linalg.norm(xs - c, axis=1) > ball.radius
    assert int(out.sum()) > 50
    np.testing.assert_allclose(
        jnp.linalg.norm(px - c, axis=1)[out], ball.radius, rtol=1e-12
    )
    cos = jnp.sum((px - c) * (xs - c), 1) / (
        jnp.linalg.norm(px - c, axis=1) * jnp.linalg.norm(xs - c, axis=1)
    )
    np.testing.assert_allclose(cos, 1.0, atol=1e-12)
    # Inside points unchanged.
    inside = ball.sample_uniform(KEY, 50)
    np.testing.assert_array_equal(ball.project(inside), inside)


def test_projection_of_center_is_finite():
    ball = Ball(1.0, dim=2)
    np.testing.assert_array_equal(ball.project(jnp.zeros(2)), jnp.zeros(2))
    g = jax.grad(lambda x: jnp.sum(ball.project(x)))(jnp.zeros(2))
    assert bool(jnp.isfinite(g).all())


@pytest.mark.parametrize("dim", [1, 3, 10])
def test_uniform_radial_cdf(dim):
    # ||x - c|| / R has CDF t^d under the uniform law on the ball.
    ball = Ball(2.0, jnp.full((dim,), 0.3))
    pts = ball.sample_uniform(KEY, 4000)
    assert pts.shape == (4000, dim)
    t = np.asarray(jnp.linalg.norm(pts - ball.center, axis=1) / ball.radius)
    assert t.max() <= 1.0
    assert scipy.stats.kstest(t, lambda s: s**dim).pvalue > 1e-3
    # Power: the wrong exponents are rejected.
    assert scipy.stats.kstest(t, lambda s: s ** (dim * 1.5)).pvalue < 1e-3
    assert scipy.stats.kstest(t, lambda s: s ** (dim / 1.5)).pvalue < 1e-3


def test_uniform_direction_is_isotropic():
    # The first coordinate of a uniform point on the ball of R^3, divided by its norm,
    # is uniform on [-1, 1] (Archimedes).
    pts = Ball(1.0, dim=3).sample_uniform(KEY, 4000)
    u = np.asarray(pts[:, 0] / jnp.linalg.norm(pts, axis=1))
    assert scipy.stats.kstest(u, scipy.stats.uniform(-1, 2).cdf).pvalue > 1e-3


def test_unconstrained():
    dom = Unconstrained(3)
    assert dom.diameter == math.inf and not dom.bounded
    x = jnp.array([1e6, -2.0, 3.0])
    np.testing.assert_array_equal(dom.project(x), x)
    assert bool(dom.contains(x))
    assert Unconstrained().with_dim(2).dim == 2
    with pytest.raises(ValueError):
        Unconstrained(0)
