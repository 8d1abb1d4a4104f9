import math
import warnings

import dp_accounting
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from dpsample.domains import Ball, Unconstrained
from dpsample.errors import MissingConstantError
from dpsample.losses import linear, logistic_nonconvex
from dpsample.problem import ConstantViolationWarning, Problem

KEY = jax.random.key(0)
D = 4


def _data(n=30, d=D, key=KEY):
    kx, ky = jax.random.split(key)
    x = jax.random.normal(kx, (n, d))
    x = x / jnp.linalg.norm(x, axis=1, keepdims=True)
    y = jnp.where(jax.random.bernoulli(ky, 0.5, (n,)), 1.0, -1.0)
    return {"x": x, "y": y}


def _problem(reg=0.1, **kw):
    loss = logistic_nonconvex(reg=reg)
    consts = loss.constants(radius=2.0, dim=D)._asdict()
    consts.update(kw)
    return Problem(loss.loss_fn, _data(), Ball(2.0, dim=D), **consts)


def _closed_form_risk(x, data, reg):
    z = data["y"] * (data["x"] @ x)
    return jnp.mean(jnp.log1p(jnp.exp(-z))) + reg * jnp.sum(x**2 / (1 + x**2))


def test_basic_attributes():
    prob = _problem()
    assert prob.n == 30 and prob.dim == D
    assert prob.relation == dp_accounting.NeighboringRelation.REPLACE_ONE
    # F + lam * min(2R, 3 sqrt(3)/8 sqrt(d)) with R = 2, d = 4.
    assert prob.lipschitz == pytest.approx(1.0 + 0.1 * 3 * math.sqrt(3) / 8 * 2)
    assert "n=30" in repr(prob)


def test_risk_and_gradients_match_closed_form():
    prob = _problem()
    data = prob.data
    x = jnp.array([0.3, -1.0, 0.5, 0.2])
    np.testing.assert_allclose(
        prob.empirical_risk(x), _closed_form_risk(x, data, 0.1), rtol=1e-12
    )
    z = data["y"] * (data["x"] @ x)
    s = jax.nn.sigmoid(-z)
    reg_grad = 0.1 * 2 * x / (1 + x**2) ** 2
    per_ex = -(s * data["y"])[:, None] * data["x"] + reg_grad
    np.testing.assert_allclose(prob.per_example_gradients(x), per_ex, rtol=1e-10)
    np.testing.assert_allclose(prob.gradient(x), per_ex.mean(0), rtol=1e-10)
    np.testing.assert_allclose(
        prob.per_example_gradients(x).mean(0), prob.gradient(x), rtol=1e-12
    )
    np.testing.assert_allclose(
        prob.per_example_losses(x).mean(), prob.empirical_risk(x), rtol=1e-12
    )


def test_gradient_vs_finite_differences():
    prob = _problem()
    x = jnp.array([0.3, -1.0, 0.5, 0.2])
    h = 1e-6
    fd = np.array(
        [
            (prob.empirical_risk(x + h * e) - prob.empirical_risk(x - h * e)) / (2 * h)
            for e in jnp.eye(D)
        ]
    )
    np.testing.assert_allclose(prob.gradient(x), fd, atol=1e-8)


@pytest.mark.slow
def test_hessian_and_hvp():
    prob = _problem()
    data = prob.data
    x = jnp.array([0.3, -1.0, 0.5, 0.2])
    v = jnp.array([1.0, 2.0, -0.5, 0.1])
    hess = prob.hessian(x)
    z = data["y"] * (data["x"] @ x)
    s = jax.nn.sigmoid(z)
    w = s * (1 - s)
    closed = (data["x"].T * w) @ data["x"] / prob.n + jnp.diag(
        0.1 * 2 * (1 - 3 * x**2) / (1 + x**2) ** 3
    )
    np.testing.assert_allclose(hess, closed, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(prob.hvp(x, v), hess @ v, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(jax.jit(prob.hvp)(x, v), hess @ v, rtol=1e-10)


def test_empirical_risk_batch():
    prob = _problem()
    xs = Ball(2.0, dim=D).sample_uniform(KEY, 37)
    expected = jax.vmap(prob.empirical_risk)(xs)
    np.testing.assert_allclose(prob.empirical_risk_batch(xs), expected, rtol=1e-12)
    np.testing.assert_allclose(
        prob.empirical_risk_batch(xs, chunk_size=8), expected, rtol=1e-12
    )
    np.testing.assert_allclose(
        jax.jit(prob.empirical_risk_batch)(xs), expected, rtol=1e-12
    )
    with pytest.raises(ValueError, match=r"\(m, 4\)"):
        prob.empirical_risk_batch(xs[0])


def test_methods_jit():
    prob = _problem()
    x = jnp.full((D,), 0.1)
    np.testing.assert_allclose(
        jax.jit(prob.empirical_risk)(x), prob.empirical_risk(x), rtol=1e-12
    )
    np.testing.assert_allclose(jax.jit(prob.gradient)(x), prob.gradient(x))


@pytest.mark.parametrize("shape", [(D + 1,), (1, D), ()])
def test_wrong_x_shape(shape):
    prob = _problem()
    x = jnp.zeros(shape)
    for method in (prob.empirical_risk, prob.gradient, prob.per_example_losses):
        with pytest.raises(ValueError, match=r"shape \(4,\)"):
            method(x)
    with pytest.raises(ValueError, match="v of shape"):
        prob.hvp(jnp.zeros(D), x)
    with pytest.raises(ValueError, match="shape"):
        jax.jit(prob.gradient)(x)


@pytest.mark.parametrize("bad", [jnp.nan, jnp.inf])
def test_non_finite_data(bad):
    data = _data()
    data["x"] = data["x"].at[3, 1].set(bad)
    with pytest.raises(ValueError, match="finite"):
        Problem(linear().loss_fn, data, Ball(1.0, dim=D))


def test_mismatched_leading_axes_and_empty():
    data = _data()
    data["y"] = data["y"][:-1]
    with pytest.raises(ValueError, match="leading axis"):
        Problem(linear().loss_fn, data, Ball(1.0, dim=D))
    empty = {"x": jnp.zeros((0, D)), "y": jnp.zeros((0,))}
    with pytest.raises(ValueError, match="n >= 1"):
        Problem(linear().loss_fn, empty, Ball(1.0, dim=D))
    with pytest.raises(ValueError, match="leading example axis"):
        Problem(linear().loss_fn, {"x": jnp.zeros((3, D)), "y": 1.0}, Ball(1.0, dim=D))


def test_bad_loss():
    def nan_loss(x, ex):
        return jnp.log(-jnp.sum(ex["x"] ** 2))

    with pytest.raises(ValueError, match="nan_loss"):
        Problem(nan_loss, _data(), Ball(1.0, dim=D))

    def vector_loss(x, ex):
        return ex["x"] * x

    with pytest.raises(ValueError, match="scalar"):
        Problem(vector_loss, _data(), Ball(1.0, dim=D))


@pytest.mark.parametrize(
    "kw",
    [
        {"lipschitz": -1.0},
        {"lipschitz": 0.0},
        {"smoothness": -0.5},
        {"hessian_lipschitz": math.nan},
        {"loss_range": math.inf},
        {"oscillation": -2.0},
    ],
)
def test_bad_constants(kw):
    with pytest.raises(ValueError):
        Problem(linear().loss_fn, _data(), Ball(1.0, dim=D), **kw)


def test_zero_smoothness_allowed():
    prob = Problem(
        linear().loss_fn, _data(), Ball(1.0, dim=D), smoothness=0.0, lipschitz=1.0
    )
    assert prob.smoothness == 0.0


def test_domain_and_dim_validation():
    with pytest.raises(TypeError, match="Ball or Unconstrained"):
        Problem(linear().loss_fn, _data(), "ball")
    with pytest.raises(ValueError, match="dim"):
        Problem(linear().loss_fn, _data(), Ball(1.0))
    with pytest.raises(ValueError, match="dimension"):
        Problem(linear().loss_fn, _data(), Ball(1.0, dim=3), dim=D)
    prob = Problem(linear().loss_fn, _data(), Ball(1.0), dim=D)
    assert prob.domain.dim == D
    prob = Problem(linear().loss_fn, _data(), Unconstrained(), dim=D)
    assert prob.dim == D


def test_utility_oscillation():
    data, ball = _data(), Ball(1.5, dim=D)
    fn = linear().loss_fn
    assert Problem(fn, data, ball, lipschitz=1.0).utility_oscillation() == 6.0
    assert (
        Problem(fn, data, ball, lipschitz=1.0, loss_range=2.0).utility_oscillation()
        == 4.0
    )
    assert (
        Problem(
            fn, data, ball, lipschitz=1.0, loss_range=2.0, oscillation=3.5
        ).utility_oscillation()
        == 3.5
    )
    # Unconstrained: 2GD is unavailable.
    unc = Problem(fn, data, Unconstrained(D), lipschitz=1.0, loss_range=5.0)
    assert unc.utility_oscillation() == 10.0
    with pytest.raises(MissingConstantError, match="loss_range"):
        Problem(fn, data, Unconstrained(D), lipschitz=1.0).utility_oscillation()
    with pytest.raises(MissingConstantError):
        Problem(fn, data, ball).utility_oscillation()


def test_utility_oscillation_is_valid_for_linear_loss():
    # osc of f(., z) - f(., z') over the ball = 2 R ||y a - y' a'|| <= declared bound.
    loss = linear()
    data = _data()
    prob = Problem(
        loss.loss_fn, data, Ball(1.0, dim=D), **loss.constants(radius=1.0)._asdict()
    )
    v = data["y"][:, None] * data["x"]
    diffs = jnp.linalg.norm(v[:, None, :] - v[None, :, :], axis=-1)
    assert float(2.0 * diffs.max()) <= prob.utility_oscillation() + 1e-12


def test_check_constants_silent_when_correct():
    prob = _problem()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConstantViolationWarning)
        report = prob.check_constants(KEY, num_points=16)
    assert set(report) == {
        "lipschitz",
        "smoothness",
        "hessian_lipschitz",
        "loss_range",
        "oscillation",
        "loss_floor",
    }
    assert all(0.0 < r <= 1.0 for r in report.values())
    # Unit-norm rows: some sampled gradient is close to the bound.
    assert report["lipschitz"] > 0.3


def test_check_constants_warns_on_under_declared():
    prob = _problem(lipschitz=0.2, loss_range=0.1)
    with pytest.warns(ConstantViolationWarning) as record:
        report = prob.check_constants(KEY, num_points=16)
    messages = " ".join(str(w.message) for w in record)
    assert "lipschitz" in messages and "loss_range" in messages
    assert "smoothness" not in messages
    assert report["lipschitz"] > 1.0 and report["loss_range"] > 1.0
    assert report["smoothness"] <= 1.0


def test_check_constants_smoothness_violation_and_zero_constant():
    loss = logistic_nonconvex(reg=0.0)
    prob = Problem(
        loss.loss_fn,
        _data(),
        Unconstrained(D),
        smoothness=0.01,
        hessian_lipschitz=0.0,
    )
    with pytest.warns(ConstantViolationWarning) as record:
        report = prob.check_constants(KEY, num_points=8)
    assert report["smoothness"] > 1.0
    assert report["hessian_lipschitz"] == math.inf
    assert len(record) == 2
