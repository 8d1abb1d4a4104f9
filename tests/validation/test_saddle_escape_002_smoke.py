"""Experiment ``saddle_escape_002`` (seed 002, spec 002 section 5.4 E3): the strict
saddle's data and declared constants, and the spec's smoke size run as a user runs it
(``dpsample sweep --smoke``)."""

import json
import sys
import tomllib
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from test_experiments_seed000 import _smoke  # noqa: E402

from experiments.problems import saddle_escape_002 as e3  # noqa: E402

SPEC = tomllib.loads((REPO / "experiments" / "saddle_escape_002.toml").read_text())


def test_data_sum_to_zero_with_norm_sigma():
    data = e3.make(jax.random.key(3), 100, 10, sigma=1.0)
    z = np.asarray(data["x"])
    assert np.abs(z.sum(axis=0)).max() < 1e-12
    np.testing.assert_allclose(np.linalg.norm(z, axis=1), 1.0, rtol=1e-12)
    with pytest.raises(ValueError, match="even"):
        e3.make(jax.random.key(0), 5, 2)


@pytest.mark.slow  # 9 s in the fast suite
def test_declared_constants_bound_the_ball():  # 5 s (16 s at load 10)
    cfg = SPEC["config"]
    radius = cfg["domain"]["radius"]
    gamma = cfg["loss"]["params"]["gamma"]
    sigma = cfg["data"]["params"]["sigma"]
    c = e3.constants(gamma, sigma, radius)
    for key in ("lipschitz", "smoothness", "hessian_lipschitz"):
        assert cfg["loss"][key] == c[key]
    assert cfg["options"]["initial_gap"] == c["f_max"]
    d = cfg["data"]["d"]
    f = e3.loss(gamma)
    rng = np.random.default_rng(0)
    # points on the sphere of radius R (the worst case for the cubic term) and the
    # corners of the ball along coordinate axes; records of norm sigma
    pts = rng.normal(size=(200, d))
    pts = radius * pts / np.linalg.norm(pts, axis=1, keepdims=True)
    pts = np.vstack([pts, radius * np.eye(d), -radius * np.eye(d)])
    zs = rng.normal(size=(200, d))
    zs = sigma * zs / np.linalg.norm(zs, axis=1, keepdims=True)
    grad = jax.vmap(jax.grad(f), in_axes=(0, 0))
    g = grad(jnp.asarray(pts), {"x": jnp.asarray(zs[rng.integers(0, 200, len(pts))])})
    assert float(jnp.max(jnp.linalg.norm(g, axis=1))) <= c["lipschitz"]
    hess = jax.vmap(jax.hessian(f), in_axes=(0, None))(
        jnp.asarray(pts), {"x": jnp.zeros(d)}
    )
    assert float(jnp.max(jnp.abs(jnp.linalg.eigvalsh(hess)))) <= c["smoothness"]
    # rho: the Hessian difference of two points of the ball over their distance
    dist = np.linalg.norm(pts[:100] - pts[100:200], axis=1)
    diff = jnp.linalg.norm(hess[:100] - hess[100:200], ord=2, axis=(1, 2))
    assert float(jnp.max(diff / dist)) <= c["hessian_lipschitz"]
    # the saddle and the minima
    z0 = {"x": jnp.zeros(d)}
    assert float(jnp.linalg.norm(jax.grad(f)(jnp.zeros(d), z0))) == 0.0
    w_min = jnp.zeros(d).at[-1].set(np.sqrt(gamma))
    assert float(f(w_min, z0)) == pytest.approx(-c["f_max"])


@pytest.mark.slow  # about 30 s: one cell of 300 steps and its hook
def test_saddle_escape_002_smoke(tmp_path):
    summary = _smoke("saddle_escape_002", tmp_path)
    cells = [
        json.loads(p.read_text())
        for p in (tmp_path / "saddle_escape_002" / "cells").glob("*.json")
    ]
    assert len(cells) == 1 and cells[0]["status"] == "ok"
    assert "iterates" not in cells[0]["public"]["info"]
    v = cells[0]["measurements"]["values"]
    assert cells[0]["public"]["info"]["mode"] == "no_clipping"
    assert 0 <= v["escape_step"] <= 301 and v["gd_escape_step"] == 301  # never
    assert v["saddle_is_sosp_fixed"] == 0.0  # alpha = 0.05 excludes the saddle
    assert 0.0 <= v["sosp_fraction_theory"] <= 1.0
    assert {"escape_step", "gd_escape_step"} <= set(summary["prediction"])
    # Procedure 3': epsilon_sel = epsilon, total 2 epsilon; one outcome per alpha
    assert v["selection_total_epsilon"] == 2 * v["selection_epsilon"]
    for tag in ("theory", "fixed"):
        outcomes = [v[f"sel_{tag}_{o}"] for o in ("failed", "true_sosp", "false_sosp")]
        assert sorted(outcomes) == [0.0, 0.0, 1.0]
    assert v["sel_fixed_grad_threshold"] < 0  # alpha = 0.05 cannot be certified
    assert v["sel_fixed_failed"] == 1.0
    # Theorem 3.4's half as a bound that can fail (issue 26): the complements, their
    # start values at the saddle, and which rows are informative
    assert v["non_sosp_fraction_theory"] == pytest.approx(1 - v["sosp_fraction_theory"])
    assert v["non_sosp_fraction_escaped_theory"] == pytest.approx(
        1 - v["sosp_fraction_escaped_theory"]
    )
    assert v["non_sosp_fraction_escaped_theory_at_start"] == 1.0  # not off the saddle
    assert v["saddle_is_sosp_theory"] == 1.0  # alpha_theory > gamma^2/rho here
    assert v["non_sosp_fraction_theory_at_start"] == 0.0
    assert v["sosp_half"] == 0.5
    rows = summary.set_index("prediction")["informative"].astype(str)
    assert rows["thm_3_4_half_escaped_sosp_theory_alpha"] == "True"
    assert rows["thm_3_4_half_sosp_theory_alpha_counting_saddle"] == "False"
