"""The seed-000 experiments ``gibbs_exact`` and ``sosp_rates``: their problems' closed
forms, and each spec's smoke size run as a user runs it (``dpsample sweep --smoke``)."""

import math
import os
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from dpsample import Problem  # noqa: E402
from dpsample.domains import Unconstrained  # noqa: E402
from experiments.problems import cosine_saddle, gibbs_exact  # noqa: E402


def test_gibbs_exact_population_risk_matches_monte_carlo():
    rng = np.random.default_rng(0)
    z = 0.3 + 0.5 * rng.standard_normal(400_000)
    u = np.array([-0.9, -0.2, 0.3, 0.75])
    per = np.abs(np.sin(2.0 * (u[:, None] - z[None, :]))) / 2.0
    mc, se = per.mean(axis=1), per.std(axis=1) / math.sqrt(z.size)
    exact = gibbs_exact.population_1d(u, center=0.3, tau=0.5, freq=2.0)
    assert np.all(np.abs(exact - mc) <= 5.0 * se)


@pytest.mark.parametrize("d", [1, 2])
def test_gibbs_exact_quadrature_integrates_the_ball_and_its_loss_is_1_lipschitz(d):
    quad = gibbs_exact.Quadrature(d, 1.0, gibbs_exact.QUAD_POINTS[d])
    volume = 2.0 if d == 1 else math.pi
    assert quad.weights.sum() == pytest.approx(volume, rel=2e-3)
    loss = gibbs_exact.loss(2.0)
    grad = jax.grad(loss.loss_fn)
    x = jax.random.uniform(jax.random.key(1), (200, d), minval=-1.0, maxval=1.0)
    ex = {"x": jnp.full(d, 0.3), "y": 1.0}
    norms = jnp.linalg.norm(jax.vmap(lambda p: grad(p, ex))(x), axis=1)
    assert float(norms.max()) <= 1.0 + 1e-12
    assert loss.constants(dim=d).lipschitz == 1.0


def test_gibbs_exact_worst_case_loss_is_the_brute_force_maximum():
    # d = 1, n = 3: the exact loss max over (i, z', x) by direct computation
    z = np.array([[0.1], [-0.4], [0.7]])
    beta, freq = 6.0, 2.0
    quad = gibbs_exact.Quadrature(1, 1.0, 801)
    f = np.abs(np.sin(freq * (quad.axis[:, None] - z[None, :, 0]))) / freq
    p = quad.gibbs(beta * f.mean(axis=1))
    got = gibbs_exact._worst_case_loss(quad, z, p, beta=beta, freq=freq)
    period = np.pi / freq
    want = 0.0
    for i in range(3):
        for zr in np.arange(gibbs_exact.G4_REPLACEMENTS[1]) * period / 64:
            fr = np.abs(np.sin(freq * (quad.axis - zr))) / freq
            f2 = f.copy()
            f2[:, i] = fr
            p2 = quad.gibbs(beta * f2.mean(axis=1))
            ratio = np.log(p / quad.weights) - np.log(p2 / quad.weights)
            want = max(want, float(np.max(np.abs(ratio))))
    assert got == pytest.approx(want, rel=1e-9)
    assert got <= 2.0 * beta * 1.0 * 2.0 / 3


def test_cosine_saddle_closed_forms_match_the_loss():
    d, n = 4, 50
    data = cosine_saddle.make(jax.random.key(3), n, d, tau=0.3)
    prob = Problem(cosine_saddle.loss(1.0), data, Unconstrained(d))
    fd = cosine_saddle._Empirical(np.asarray(data["x"]), 1.0)
    for x in np.random.default_rng(2).normal(size=(5, d)):
        assert fd.value(x) == pytest.approx(float(prob.empirical_risk(x)), rel=1e-10)
        grad = np.asarray(jax.grad(prob.empirical_risk)(jnp.asarray(x)))
        np.testing.assert_allclose(fd.grad(x), grad, atol=1e-12)
        hess = np.asarray(jax.hessian(prob.empirical_risk)(jnp.asarray(x)))
        np.testing.assert_allclose(np.diag(fd.hess_diag(x)), hess, atol=1e-12)


def _run_smoke(name, tmp_path, env=None, timeout=600):
    """``dpsample sweep experiments/NAME.toml --smoke`` into ``tmp_path / NAME``."""
    env = dict(os.environ, JAX_PLATFORMS="cpu", **(env or {}))
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(REPO), env.get("PYTHONPATH")) if p
    )
    out = tmp_path / name
    proc = subprocess.run(
        [sys.executable, "-m", "dpsample.cli", "sweep", f"experiments/{name}.toml"]
        + ["--out", str(out), "--smoke", "--workers", "0"],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=REPO,
    )
    return proc, out


def _smoke(name, tmp_path):
    proc, out = _run_smoke(name, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = pd.read_csv(out / "summary.csv")
    assert len(summary) > 0
    assert np.isfinite(summary["measured_mean"]).all()
    assert (summary["failed"] == 0).all()
    assert (out / "slopes.csv").exists() and (out / "report.md").exists()
    return summary


@pytest.mark.slow
def test_gibbs_exact_smoke(tmp_path):
    summary = _smoke("gibbs_exact", tmp_path)
    assert {
        "G3_generalization_vs_n",
        "KS_sampler_vs_quadrature",
        "KS_released_sampler_vs_quadrature",
    } <= set(summary["prediction"])
    released = summary[summary["prediction"] == "KS_released_sampler_vs_quadrature"]
    # a KS distance of draws of the released sampler, against its critical value
    assert ((released["measured_mean"] > 0) & (released["measured_mean"] <= 1)).all()
    assert np.allclose(released["bound"], 1.358 / np.sqrt(200))


@pytest.mark.slow
def test_sosp_rates_smoke(tmp_path):
    summary = _smoke("sosp_rates", tmp_path)
    s1 = summary[summary["prediction"] == "S1_o1_calls_within_cap"]
    assert len(s1) > 0 and s1["holds"].all()
