"""dpsample.models.MLP: the loss, its layout, and the ghost-clipping sum."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dpsample
from dpsample.domains import Ball, Unconstrained
from dpsample.finders import dp_sgd, oracles
from dpsample.models import ACTIVATIONS, HEADS, MLP


def _data(head, n=40, p=5, k=3, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, p))
    if head == "cross_entropy":
        y = rng.integers(0, k, n)
    elif head == "logistic":
        y = rng.choice([-1.0, 1.0], n)
    else:
        y = rng.normal(size=(n, k)) if k > 1 else rng.normal(size=n)
    return {"x": x, "y": y}


def _out(head, k=3):
    return 1 if head == "logistic" else k


def _vmap_clipped_sum(net, theta, batch, w, bound):
    g = jax.vmap(jax.grad(net), (None, 0))(theta, batch)
    norms = jnp.linalg.norm(g, axis=1)
    return (w * jnp.minimum(1.0, bound / norms)) @ g, norms


@pytest.mark.slow
@pytest.mark.parametrize("activation,head", list(itertools.product(ACTIVATIONS, HEADS)))
def test_ghost_sum_equals_the_per_example_sum(activation, head):
    k = _out(head)
    net = MLP((5, 7, 6, k), activation=activation, head=head)
    data = _data(head, k=k)
    theta = net.init(jax.random.key(1)) * 2.0
    w = jnp.asarray(np.r_[np.ones(30), np.zeros(5), np.full(5, 0.5)])
    _, norms = _vmap_clipped_sum(net, theta, data, w, 1.0)
    bound = float(jnp.median(norms))  # about half the rows are clipped
    ref, _ = _vmap_clipped_sum(net, theta, data, w, bound)
    ghost = net.clipped_gradient_sum(theta, data, w, bound)
    assert ghost.dtype == jnp.float64
    np.testing.assert_allclose(ghost, ref, rtol=1e-10, atol=1e-12 * bound)
    # float32: the same sum up to float32 rounding of the rows
    data32 = {"x": data["x"].astype(np.float32), "y": data["y"]}
    if head == "squared":
        data32["y"] = data["y"].astype(np.float32)
    g32 = net.clipped_gradient_sum(theta, data32, w, bound, "float32")
    assert g32.dtype == jnp.float64
    assert float(jnp.linalg.norm(g32 - ref)) <= 1e-4 * bound * float(w.sum())


def test_loss_matches_a_hand_written_network():
    net = MLP((3, 4, 2), activation="tanh", head="cross_entropy")
    theta = net.init(jax.random.key(0))
    (w1, b1), (w2, b2) = net.unravel(theta)
    assert w1.shape == (3, 4) and b2.shape == (2,)
    np.testing.assert_array_equal(net.ravel(net.unravel(theta)), theta)
    a, y = jnp.array([0.5, -1.0, 2.0]), 1
    logits = jnp.tanh(a @ w1 + b1) @ w2 + b2
    want = jax.nn.logsumexp(logits) - logits[y]
    assert float(net(theta, {"x": a, "y": y})) == pytest.approx(float(want), rel=1e-14)
    np.testing.assert_allclose(net.apply(theta, a), logits, rtol=1e-14)
    assert net.apply(theta, jnp.stack([a, a])).shape == (2, 2)
    assert net.dim == 3 * 4 + 4 + 4 * 2 + 2 == theta.shape[0]


@pytest.mark.slow
def test_problem_and_oracle_use_the_ghost_path():
    """first_kind on an MLP problem: clip bound from the model's margin, same mean."""
    net = MLP((5, 8, 3))
    data = _data("cross_entropy", n=60)
    prob = dpsample.Problem(net, data, Unconstrained(net.dim))
    generic = dpsample.Problem(lambda t, ex: net(t, ex), data, Unconstrained(net.dim))
    kw = dict(noise_multiplier=1.0, sampling="poisson", batch_size=20, clip_norm=0.7)
    for dtype in ("float64", "float32"):
        o_fast = oracles.first_kind(prob, gradient_dtype=dtype, **kw)
        m = o_fast.max_batch_size
        assert o_fast.clip_bound == pytest.approx(
            0.7 / net.gradient_margin(dtype, m), rel=1e-15
        )
        assert net.gradient_margin(dtype, m) >= oracles.clip_margin(dtype, m, net.dim)
        # the generic (vmap) path clipped at the same bound
        f_gen = oracles.clip_margin(dtype, m, net.dim)
        o_gen = oracles.first_kind(
            generic,
            gradient_dtype=dtype,
            **{**kw, "clip_norm": o_fast.clip_bound * f_gen},
        )
        assert o_gen.clip_bound == pytest.approx(o_fast.clip_bound, rel=1e-14)
        x = net.init(jax.random.key(2)) * 3.0
        tol = 1e-12 if dtype == "float64" else 1e-5
        fast, gen = jax.jit(o_fast.mean_fn), jax.jit(o_gen.mean_fn)
        for i in range(3):
            key = jax.random.key(i)
            a, b = fast(key, x), gen(key, x)
            assert float(jnp.linalg.norm(a - b)) <= tol * 0.7 * m / 20
            assert float(jnp.linalg.norm(a)) > 1e-3  # not trivially zero
        assert o_fast.event == o_gen.event  # same accounting


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_ghost_rows_never_exceed_the_bound(dtype):
    """Each row's computed contribution (batch of one) has norm <= C: margin works."""
    net = MLP((16, 12, 4), activation="relu")
    data = _data("cross_entropy", n=600, p=16, k=4, seed=3)
    prob = dpsample.Problem(net, data, Unconstrained(net.dim))
    theta = net.init(jax.random.key(0))
    norms = jax.vmap(jax.grad(net), (None, 0))(theta, data)
    c = float(jnp.median(jnp.linalg.norm(norms, axis=1)))
    o1 = oracles.first_kind(
        prob,
        noise_multiplier=1.0,
        sampling="fresh",
        batch_size=1,
        clip_norm=c,
        gradient_dtype=dtype,
    )
    key = jax.random.key(0)
    rows = jax.jit(jax.vmap(lambda i: o1.mean_fn(key, theta, i[None])))(
        jnp.arange(prob.n)
    )
    out = np.linalg.norm(np.asarray(rows, np.float64), axis=1)
    assert out.max() <= c
    assert np.mean(out > c / net.gradient_margin(dtype, 1) * (1 - 1e-5)) > 0.4


@pytest.mark.slow
def test_ghost_sum_keeps_the_sensitivity_in_float32():
    """Batches differing in one row: computed sums at most 2C apart."""
    net = MLP((8, 16, 3))
    data = _data("cross_entropy", n=257, p=8, seed=4)
    data["x"][256] = -data["x"][0] * 50.0  # the replacement row, pointing away
    theta = net.init(jax.random.key(1))
    c = 0.5
    bound = c / net.gradient_margin("float32", 256)
    d32 = {"x": data["x"].astype(np.float32), "y": data["y"]}
    rows = np.arange(256)
    other = rows.copy()
    other[0] = 256
    s = net.clipped_gradient_sum(
        theta, jax.tree.map(lambda v: v[rows], d32), jnp.ones(256), bound, "float32"
    )
    t = net.clipped_gradient_sum(
        theta, jax.tree.map(lambda v: v[other], d32), jnp.ones(256), bound, "float32"
    )
    gap = float(jnp.linalg.norm(s - t))
    assert gap <= 2 * c
    assert gap > 0.5 * c  # the two rows are clipped: the bound is nearly binding


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_non_finite_rows_contribute_zero(dtype):
    net = MLP((3, 4, 2))
    theta = net.init(jax.random.key(0))
    x = np.ones((4, 3))
    x[1] = 1e300 if dtype == "float64" else 1e30  # squared norm overflows
    y = np.array([0, 1, 0, 1])
    w = jnp.ones(4)
    keep = np.array([0, 2, 3])
    got = net.clipped_gradient_sum(theta, {"x": x, "y": y}, w, 1e3, dtype)
    want = net.clipped_gradient_sum(
        theta, {"x": x[keep], "y": y[keep]}, jnp.ones(3), 1e3, dtype
    )
    assert bool(jnp.all(jnp.isfinite(got)))
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.slow
def test_dp_sgd_trains_an_mlp():
    """DP-SGD on the ghost path: a generous budget lowers the training loss."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    net = MLP((64, 16, 10))
    data = {"x": digits.data / 16.0, "y": digits.target.astype(np.int64)}
    net.check_data(data)
    prob = dpsample.Problem(net, data, Ball(30.0, dim=net.dim))
    x0 = net.init(jax.random.key(0))
    res = dp_sgd(
        jax.random.key(1),
        prob,
        epsilon=8.0,
        delta=1e-5,
        x0=x0,
        clip_norm=1.0,
        batch_size=128,
        num_steps=300,
        learning_rate=0.5,
        output="last",
    )
    assert prob.empirical_risk(res.value) < 0.6 * prob.empirical_risk(x0)
    eps = res.privacy.epsilon(1e-5)
    assert 0 < eps <= 8.0


def test_bad_inputs():
    with pytest.raises(ValueError, match="at least"):
        MLP((4,))
    with pytest.raises(ValueError, match="activation"):
        MLP((4, 2), activation="swish")
    with pytest.raises(ValueError, match="head"):
        MLP((4, 2), head="hinge")
    with pytest.raises(ValueError, match="one output"):
        MLP((4, 2), head="logistic")
    with pytest.raises(ValueError, match="two outputs"):
        MLP((4, 1))
    with pytest.raises(ValueError):
        MLP((4, 0, 2))
    net = MLP((3, 4, 2))
    good = {"x": np.zeros((5, 3)), "y": np.zeros(5, np.int64)}
    net.check_data(good)
    for bad, match in [
        ({"x": np.zeros((5, 3))}, "keys"),
        ({**good, "x": np.zeros((5, 4))}, "shape"),
        ({**good, "x": np.full((5, 3), np.nan)}, "NaN"),
        ({**good, "y": np.zeros(5)}, "integers"),
        ({**good, "y": np.full(5, 2)}, r"\[0, 2\)"),
    ]:
        with pytest.raises(ValueError, match=match):
            net.check_data(bad)
    logistic = MLP((3, 2, 1), head="logistic")
    with pytest.raises(ValueError, match="-1 or \\+1"):
        logistic.check_data({"x": np.zeros((2, 3)), "y": np.array([0, 1])})
    squared = MLP((3, 2, 2), head="squared")
    with pytest.raises(ValueError, match="shape"):
        squared.check_data({"x": np.zeros((2, 3)), "y": np.zeros(2)})
