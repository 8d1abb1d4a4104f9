"""The seed-003 experiment ``warm_start_003``: its problems' closed forms and declared
constants, and the spec's smoke size run as a user runs it (``dpsample sweep
--smoke``)."""

import math
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from test_experiments_seed000 import _smoke  # noqa: E402

from experiments.problems import warm_start_003 as ws  # noqa: E402


def _risk(loss_fn, data):
    def risk(x):
        return jnp.mean(jax.vmap(lambda ex: loss_fn(x, ex))(data))

    return risk


def test_cosine_closed_form_gradient_and_constants():
    d, n = 3, 40
    data = ws.make_cosine(jax.random.key(0), n, d, tau=0.5, mu=1.0)
    loss = ws.cosine(1.0)
    z = np.asarray(data["x"])
    c, s = np.cos(z).mean(axis=0), np.sin(z).mean(axis=0)
    w = 1.0 / math.sqrt(d)
    grad = jax.grad(_risk(loss, data))
    per_example = jax.vmap(jax.grad(loss), in_axes=(None, 0))
    for x in np.random.default_rng(1).normal(scale=2.0, size=(5, d)):
        want = w * (c * np.sin(x) - s * np.cos(x))
        np.testing.assert_allclose(np.asarray(grad(jnp.asarray(x))), want, atol=1e-12)
        # declared G = a = 1: every per-example gradient is at most a
        norms = np.linalg.norm(np.asarray(per_example(jnp.asarray(x), data)), axis=1)
        assert norms.max() <= 1.0 + 1e-12
    # min F_D = -(a/sqrt d) sum_j hypot(C_j, S_j), inside K = Ball(2 sqrt d)
    x_star = np.arctan2(s, c)
    assert np.linalg.norm(x_star) < 2.0 * math.sqrt(d)
    f_star = float(_risk(loss, data)(jnp.asarray(x_star)))
    assert f_star == pytest.approx(-w * np.hypot(c, s).sum(), rel=1e-12)


def test_quasar_glm_is_realizable_at_w_star():
    d, n = 4, 64
    data = ws.make_quasar_glm(jax.random.key(2), n, d, b=0.5)
    risk = _risk(ws.quasar_glm(0.5, 1.0), data)
    w_star = jnp.full(d, 1.0 / math.sqrt(d))
    assert float(risk(w_star)) == pytest.approx(0.0, abs=1e-14)
    assert float(jnp.linalg.norm(jax.grad(risk)(w_star))) < 1e-12
    # quasar-convexity with q = (1 - b)/(1 + b) = 1/3 on random points of Ball(2)
    for w in np.random.default_rng(3).normal(size=(20, d)):
        w = jnp.asarray(2.0 * w / max(1.0, np.linalg.norm(w)))
        lhs = float(jnp.dot(jax.grad(risk)(w), w - w_star))
        assert lhs >= (1.0 / 3.0) * float(risk(w)) - 1e-12


def test_trig_gradient_and_test_points():
    d, n = 100, 100
    data = ws.make_trig(jax.random.key(1000), n, d)
    assert np.asarray(data["x"]).shape == (n, d)
    assert np.linalg.norm(np.asarray(data["x"]), axis=1).max() <= 1.0
    test = np.asarray(ws.trig_test_points(1000, n, d))
    assert test.shape == (ws.TRIG_TEST, d)
    assert not np.isin(test, np.asarray(data["x"])).any()  # held out
    w = jnp.asarray(ws.trig_start(d))
    assert float(jnp.linalg.norm(w)) <= 2.0
    grad = jax.grad(_risk(ws.trig(1.0), data))(w)
    xbar = np.asarray(data["x"]).mean(axis=0)
    assert float(jnp.linalg.norm(grad)) == pytest.approx(
        ws._trig_grad(np.asarray(w), xbar, 1.0), rel=1e-12
    )


@pytest.mark.slow
def test_warm_start_003_smoke(tmp_path):
    # report.md and slopes.csv written, every summary row finite and not failed
    summary = _smoke("warm_start_003", tmp_path)
    assert {"warm_start", "dp_spider"} <= set(summary["algorithm"])
    assert (summary["guarantee_epsilon"] <= 1.0 + 1e-9).all()
