"""Experiment ``goldstein_004`` (seed 004, spec 004 sections 5.2-5.3): its test
functions, declared constants and exact ring Goldstein value, and the spec's smoke size
run as a user runs it (``dpsample sweep --smoke``)."""

import json
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

from dpsample import Problem  # noqa: E402
from dpsample.domains import Unconstrained  # noqa: E402
from dpsample.finders.goldstein_stationarity import goldstein_stationarity  # noqa: E402
from experiments.problems import goldstein_004 as g4  # noqa: E402


def test_chebyshev_rosenbrock_minimum_and_start():
    for d in (2, 3, 5):
        f = g4.chebyshev_rosenbrock
        assert float(f(jnp.ones(d))) == 0.0
        _, phi = g4.constants("chebyshev_rosenbrock", d)
        assert float(f(jnp.zeros(d))) == pytest.approx(phi)


def test_spec_lipschitz_of_chebyshev_rosenbrock_fails_from_d_3():
    # spec 5.2 item 4's 1/4 + sqrt(5) sqrt(d - 1): right at d = 2, too small at d = 3
    assert g4.cr_lipschitz(2) == pytest.approx(0.25 + math.sqrt(5.0))
    x = jnp.asarray([0.1, 0.5, -2.0])  # t_1 = +1, t_2 = -1, x_1 > 0, x_2 > 0
    norm = float(jnp.linalg.norm(jax.grad(g4.chebyshev_rosenbrock)(x)))
    assert norm == pytest.approx(math.sqrt((9 / 4) ** 2 + 9 + 1))
    assert norm > 0.25 + math.sqrt(5.0 * 2)
    assert norm <= g4.cr_lipschitz(3) + 1e-12


@pytest.mark.parametrize("function", g4.FUNCTIONS)
def test_declared_lipschitz_bounds_sampled_gradients(function):
    d = 3
    data = g4.make(jax.random.key(0), 50, d, function=function)
    big_l, _ = g4.constants(function, d)
    grad = jax.vmap(jax.grad(g4.loss(function)), in_axes=(None, 0))
    for x in np.random.default_rng(1).normal(scale=2.0, size=(20, d)):
        norms = np.linalg.norm(np.asarray(grad(jnp.asarray(x), data)), axis=1)
        assert norms.max() <= big_l + 1e-12


def test_noise_is_in_the_ball_and_relu_labels_planted():
    data = g4.make(jax.random.key(2), 500, 4, function="ring")
    assert np.linalg.norm(np.asarray(data["x"]), axis=1).max() <= g4.NOISE_RADIUS
    relu = g4.make(jax.random.key(3), 200, 4, function="relu")
    a = np.asarray(relu["x"])
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0)
    w_model = np.eye(4)[0] - np.eye(4)[1]  # w + b = e_1: the planted model
    loss = jax.vmap(g4.loss("relu"), in_axes=(None, 0))(jnp.asarray(w_model), relu)
    assert float(jnp.max(loss)) < 1e-12


@pytest.mark.parametrize(
    "x, rho, want",
    [
        ((2.0, 0.0), 0.1, 0.0),  # the centre c: ||x - c|| = 0 <= rho
        ((0.0, 0.0), 0.1, math.sqrt(1 - 0.01 / 4)),  # the start, distance 2
        ((3.05, 0.0), 0.1, 0.0),  # inside the band
        ((2.0, 1.2), 0.1, math.sqrt(1 - 0.01 / 1.44)),
    ],
)
def test_ring_closed_form(x, rho, want):
    assert g4.ring_goldstein_value(np.asarray(x), rho) == pytest.approx(want)


def test_ring_closed_form_is_below_the_qp_bound():
    # the QP (M1) is an upper bound converging to the exact value from above
    prob = Problem(
        g4.loss("ring"),
        {"x": jnp.zeros((1, 2)), "y": jnp.ones(1)},
        Unconstrained(2),
    )
    for x in ((0.0, 0.0), (2.0, 1.5), (0.9, 0.3)):
        exact = g4.ring_goldstein_value(np.asarray(x), 0.4)
        qp = goldstein_stationarity(
            prob, jnp.asarray(x), radius=0.4, num_samples=400, rng_key=jax.random.key(0)
        ).value
        assert exact - 1e-9 <= qp <= exact + 0.02


@pytest.mark.slow
def test_goldstein_004_smoke(tmp_path):
    summary = _smoke("goldstein_004", tmp_path)
    out = tmp_path / "goldstein_004"
    algorithms = {"goldstein_zero_order", "goldstein_first_order"}
    assert set(summary["algorithm"]) == algorithms
    cells = [json.loads(p.read_text()) for p in (out / "cells").glob("*.json")]
    assert len(cells) == 3 and all(c["status"] == "ok" for c in cells)
    for cell in cells:
        values = cell["measurements"]["values"]
        for name in ("goldstein_value", "goldstein_erm", "population_gap"):
            assert np.isfinite(values[name]), (name, values[name])
        assert 0.0 <= values["goldstein_value"] <= 1.0  # the ring, L = 1
        assert values["certified_radius"] == pytest.approx(0.1)  # 2 alpha, fixed
