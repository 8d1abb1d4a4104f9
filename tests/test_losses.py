"""Derived loss constants hold numerically under their stated assumptions."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from dpsample import losses
from dpsample.domains import Ball

KEY = jax.random.key(0)
D = 3
RADIUS = 2.0
F = 0.8  # feature_bound
Y = 1.5  # label_bound (regression)


def _examples(key, n, *, regression, on_sphere=False):
    ka, kr, ky = jax.random.split(key, 3)
    a = jax.random.normal(ka, (n, D))
    a = a / jnp.linalg.norm(a, axis=1, keepdims=True)
    if not on_sphere:
        a = a * jax.random.uniform(kr, (n, 1))
    a = F * a
    if regression:
        y = jax.random.uniform(ky, (n,), minval=-Y, maxval=Y)
    else:
        y = jnp.where(jax.random.bernoulli(ky, 0.5, (n,)), 1.0, -1.0)
    return {"x": a, "y": y}


CASES = [
    ("logistic_nonconvex", losses.logistic_nonconvex(reg=0.5), False),
    ("sigmoid", losses.sigmoid(), False),
    ("sigmoid_l2", losses.sigmoid(reg=0.1), False),
    ("tukey", losses.tukey_biweight(c=1.0), True),
    ("welsch", losses.welsch(scale=0.7), True),
    ("linear", losses.linear(), False),
    ("squared", losses.squared(), True),
]


def _measure(loss, regression, key):
    """Max observed G, M, rho and range over random points, pairs and examples."""
    n, m = 400, 400
    k1, k2, k3, k4, k5 = jax.random.split(key, 5)
    ball = Ball(RADIUS, dim=D)
    data = _examples(k1, n, regression=regression, on_sphere=True)
    xs = ball.sample_uniform(k2, m)
    # Nearby pairs probe the local constants; scale chosen so that features of the
    # curvature are resolved.
    xp = ball.project(xs + 0.05 * jax.random.normal(k3, (m, D)))
    u = jax.random.normal(k4, (D,))
    u = u / jnp.linalg.norm(u)
    grad = jax.grad(loss.loss_fn)

    def hvp(x, ex):
        return jax.jvp(lambda p: grad(p, ex), (x,), (u,))[1]

    over_data = lambda f: jax.vmap(jax.vmap(f, (None, 0)), (0, None))  # noqa: E731
    g, gp = over_data(grad)(xs, data), over_data(grad)(xp, data)
    h, hp = over_data(hvp)(xs, data), over_data(hvp)(xp, data)
    dist = jnp.linalg.norm(xs - xp, axis=1)[:, None]
    # Extremes of the loss on the sphere (where ranges are attained), for the range.
    edge = jax.random.normal(k5, (m, D))
    edge = RADIUS * edge / jnp.linalg.norm(edge, axis=1, keepdims=True)
    f_edge = over_data(loss.loss_fn)(jnp.concatenate([edge, -edge, xs]), data)
    return {
        "lipschitz": float(jnp.linalg.norm(g, axis=-1).max()),
        "smoothness": float((jnp.linalg.norm(g - gp, axis=-1) / dist).max()),
        "hessian_lipschitz": float((jnp.linalg.norm(h - hp, axis=-1) / dist).max()),
        "loss_range": float(f_edge.max() - f_edge.min()),
    }


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "loss", "regression"), CASES, ids=[c[0] for c in CASES]
)
def test_constants_hold(name, loss, regression):
    consts = loss.constants(
        feature_bound=F, radius=RADIUS, label_bound=Y, dim=D
    )._asdict()
    seen = _measure(loss, regression, jax.random.fold_in(KEY, len(name)))
    for key, value in seen.items():
        declared = consts[key]
        assert declared is not None, key
        assert value <= declared * (1 + 1e-9) + 1e-12, (key, value, declared)
    # The bounds are not vacuous: the Lipschitz bound is approached.
    assert seen["lipschitz"] >= 0.3 * consts["lipschitz"]
    assert consts["oscillation"] <= 2 * consts["loss_range"] + 1e-12


def test_logistic_spec_constants():
    # Spec 001, sec. 6.3: data term G = 1, M = 1/4, rho = 1/(6 sqrt 3); regulariser
    # |r'| <= 9 lam/(8 sqrt 3), r'' in [-lam/2, 2 lam], |r'''| <= 4.6686 lam.
    lam = 1e-3
    c = losses.logistic_nonconvex(reg=lam).constants(radius=1.0)
    assert c.smoothness == pytest.approx(0.25 + 2 * lam)
    assert c.hessian_lipschitz == pytest.approx(0.096225 + 0.0046686, abs=1e-6)
    assert c.lipschitz == pytest.approx(1.0 + 2 * lam)  # min(2R, 0.6495 sqrt d)
    c_d = losses.logistic_nonconvex(reg=lam).constants(radius=10.0, dim=4)
    assert c_d.lipschitz == pytest.approx(1.0 + lam * 9 / (8 * math.sqrt(3)) * 2)
    assert c.loss_range == pytest.approx(1.0 + lam * 1.0)
    assert c.oscillation == pytest.approx(2.0)


def test_regulariser_derivative_maxima():
    w = jnp.linspace(-5, 5, 200001)
    phi = lambda t: t**2 / (1 + t**2)  # noqa: E731
    d1 = jax.vmap(jax.grad(phi))(w)
    d2 = jax.vmap(jax.grad(jax.grad(phi)))(w)
    d3 = jax.vmap(jax.grad(jax.grad(jax.grad(phi))))(w)
    assert float(jnp.abs(d1).max()) == pytest.approx(3 * math.sqrt(3) / 8, rel=1e-8)
    assert float(d2.min()) == pytest.approx(-0.5, rel=1e-8)
    assert float(d2.max()) == pytest.approx(2.0, rel=1e-8)
    assert float(jnp.abs(d3).max()) == pytest.approx(losses._REG_THIRD_MAX, rel=1e-8)
    assert losses._REG_THIRD_MAX == pytest.approx(4.6686, abs=1e-4)


def test_sigmoid_sign_and_range():
    loss = losses.sigmoid()
    ex = {"x": jnp.array([1.0, 0.0, 0.0]), "y": jnp.array(1.0)}
    x_good = jnp.array([3.0, 0.0, 0.0])  # positive margin -> small loss
    assert float(loss.loss_fn(x_good, ex)) < 0.1
    assert float(loss.loss_fn(-x_good, ex)) > 0.9
    c = loss.constants()
    assert (c.lipschitz, c.loss_range) == (0.25, 1.0)
    assert c.hessian_lipschitz == 0.125
    assert loss.constants(radius=1.0).loss_range == pytest.approx(math.tanh(0.5))


def test_missing_radius_gives_none():
    assert losses.linear().constants().loss_range is None
    assert losses.squared().constants().lipschitz is None
    assert losses.logistic_nonconvex(reg=0.1).constants().lipschitz is None
    assert losses.logistic_nonconvex(reg=0.0).constants().lipschitz == 1.0


def test_tukey_saturates_and_is_bounded():
    loss = losses.tukey_biweight(c=2.0)
    ex = {"x": jnp.array([1.0, 0.0, 0.0]), "y": jnp.array(100.0)}
    x = jnp.zeros(D)
    assert float(loss.loss_fn(x, ex)) == pytest.approx(4.0 / 6.0)
    np.testing.assert_array_equal(jax.grad(loss.loss_fn)(x, ex), jnp.zeros(D))


def test_invalid_parameters():
    with pytest.raises(ValueError):
        losses.logistic_nonconvex(reg=-1.0)
    with pytest.raises(ValueError):
        losses.tukey_biweight(c=0.0)
    with pytest.raises(ValueError):
        losses.welsch(scale=-1.0)
    with pytest.raises(ValueError):
        losses.linear().constants(feature_bound=0.0)
    with pytest.raises(ValueError):
        losses.linear().constants(radius=-1.0)
