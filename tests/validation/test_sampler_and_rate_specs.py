"""Issue 26 items 2 and 4: the rate predictions of ``trust_region_001_rates`` and the
exact/released pairs of ``gibbs_released``, on synthetic cells with known answers.

The specs' own predictions are loaded and fed observations whose answer is known: a
rate generated at the theory's slope (consistent) or at another (not consistent), a
released sampler above a bound the exact target meets; and the released sampler's
measurements of ``experiments/problems/gibbs_exact.py`` against the quadrature.
"""

import json
import math
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from test_experiments_seed000 import _smoke  # noqa: E402

from dpsample.validation.spec import load_spec  # noqa: E402
from dpsample.validation.tables import fit_slopes, summarize  # noqa: E402
from experiments.problems import gibbs_exact  # noqa: E402

RATES = REPO / "experiments" / "trust_region_001_rates.toml"
RELEASED = REPO / "experiments" / "gibbs_released.toml"
NS = (4375, 8750, 17500, 35000, 70000)
EPSILONS = (0.25, 0.5, 1.0, 2.0, 4.0)


def _obs(values, *, n, eps, seed, problem="A", alg="dp_trust_region", extra=None):
    return {
        "cell": f"{alg}-{problem}-{n}-{eps}-{seed}",
        "seed": seed,
        "status": "ok",
        "algorithm": alg,
        "n": n,
        "d": 22,
        "epsilon": eps,
        "delta": 1e-5,
        "axes": {"loss.params.problem": problem, "data.n": n, **(extra or {})},
        "values": values,
        "constants": {"lipschitz": 1.0},
        "guarantee_epsilon": eps,
    }


def _pred(spec, name):
    return next(p for p in spec.predictions if p.name == name)


# ------------------------------------------------------- trust_region_001_rates (2)
def test_the_rate_spec_has_five_points_per_slope_and_eight_seeds():
    spec = load_spec(RATES)
    assert spec.seeds >= 8
    rates = [p for p in spec.predictions if p.slopes]
    assert {p.name for p in rates} == {
        "R1_dp_tr_alpha_vs_n_A",
        "R1_dp_tr_alpha_vs_n_B",
        "R2_dp_tr_alpha_vs_epsilon_A",
        "R2_dp_tr_alpha_vs_epsilon_B",
    }
    points = spec.points()
    for pred in rates:
        ((var, slope),) = pred.slopes.items()
        assert slope == pytest.approx(-4 / 7)
        problem = pred.where["loss.params.problem"][0]
        mine = [p for p in points if p["loss.params.problem"] == problem]
        axis = "data.n" if var == "n" else "privacy.epsilon"
        assert len({p[axis] for p in mine}) >= 5
    # alpha is Remark 16's rate with constant 1 at each cell, delta = 1e-5
    for p in points:
        n = p.get("data.n", 35000)
        eps = p.get("privacy.epsilon", 1.0)
        rate = (math.sqrt(22 * math.log(1e5)) / (n * eps)) ** (4 / 7)
        assert p["options.alpha"] == pytest.approx(rate, rel=1e-4)


@pytest.mark.parametrize(
    ("slope", "verdict"), [(-4 / 7, "consistent"), (-0.5, "not consistent")]
)
def test_the_rate_predictions_on_synthetic_alpha(slope, verdict):
    # alpha_hat = 0.5 (n eps / 4375)^slope with 2% seed noise, 8 seeds, 5 points per
    # axis: the theory's -4/7 is inside the interval; DP-GD's -1/2 is outside it
    spec = load_spec(RATES)
    rng = np.random.default_rng(11)
    obs = []
    for s in range(8):
        for n in NS:
            a = 0.5 * (n / 4375) ** slope * rng.lognormal(0.0, 0.02)
            obs.append(_obs({"alpha_hat": a}, n=n, eps=1.0, seed=s))
        for eps in EPSILONS:
            if eps != 1.0:
                a = 0.5 * (35000 * eps / 4375) ** slope * rng.lognormal(0.0, 0.02)
                obs.append(_obs({"alpha_hat": a}, n=35000, eps=eps, seed=s))
    preds = [
        _pred(spec, "R1_dp_tr_alpha_vs_n_A"),
        _pred(spec, "R2_dp_tr_alpha_vs_epsilon_A"),
    ]
    table = fit_slopes(obs, preds, experiment="trust_region_001_rates")
    assert len(table) == 2 and (table["points"] == 5).all()
    assert (table["verdict"] == verdict).all(), table[
        ["prediction", "slope", "ci_low", "ci_high"]
    ]


def test_a_saturated_alpha_leaves_the_rate_fit():
    # alpha_hat above half the ceiling G = 1 at the smallest n: dropped, 4 points left
    spec = load_spec(RATES)
    obs = [
        _obs(
            {"alpha_hat": 0.9 if n == NS[0] else 0.1 * (n / 35000) ** (-4 / 7)},
            n=n,
            eps=1.0,
            seed=s,
        )
        for n in NS
        for s in range(8)
    ]
    row = fit_slopes(obs, [_pred(spec, "R1_dp_tr_alpha_vs_n_A")], experiment="e").iloc[
        0
    ]
    assert row.points == 4 and "n = 4375: saturated" in row.dropped
    assert row.verdict == "too few points/seeds"


# ---------------------------------------------------------------- gibbs_released (4)
def test_every_exact_draw_prediction_is_paired_with_the_released_sampler():
    spec = load_spec(RELEASED)
    names = {p.name: p for p in spec.predictions}
    exact = [n for n in names if n.endswith("_exact")]
    assert {n.split("_")[0] for n in exact} == {"G1", "G2", "G3", "G7"}
    for name in exact:
        e, r = names[name], names[name.replace("_exact", "_released")]
        assert r.measurement == e.measurement + "_released"
        assert (r.bound, r.slopes, r.where, r.ceiling) == (
            e.bound,
            e.slopes,
            e.where,
            e.ceiling,
        )


def test_a_released_sampler_above_the_bound_fails_where_the_exact_target_holds():
    spec = load_spec(RELEASED)
    preds = [
        _pred(spec, "G1_regularised_excess_vs_beta_exact"),
        _pred(spec, "G1_regularised_excess_vs_beta_released"),
    ]
    obs = [
        _obs(
            {
                "gibbs_excess_regularised": 0.03,
                "gibbs_excess_regularised_released": 0.05 if s == 0 else 0.02,
                "lemma_5_3_bound": 0.04,
            },
            n=200,
            eps=100.0,
            seed=s,
            alg="gibbs",
            extra={"options.beta": 16.0},
        )
        for s in range(2)
    ]
    for o in obs:
        o["constants"] = {"loss_range": 0.5}
    table = summarize(obs, preds, experiment="gibbs_released").set_index("prediction")
    exact = table.loc["G1_regularised_excess_vs_beta_exact"]
    released = table.loc["G1_regularised_excess_vs_beta_released"]
    assert exact["informative"] and exact["holds_informative"]
    assert released["informative"] and not released["holds_informative"]
    assert released["failed"] == 0


def _cell(d=1, n=60, beta=4.0):
    z = 0.3 + 0.5 * np.random.default_rng(0).standard_normal((n, d))
    execution = SimpleNamespace(
        config={
            "data": {"params": {"chains": 500}},
            "loss": {"params": {"freq": 2.0}},
            "domain": {"radius": 1.0},
            "job": {"seed": 0},
        },
        problem=SimpleNamespace(data={"x": z}),
        report={"info": {"beta": beta, "mu": d / (4.0 * beta)}},
    )
    return gibbs_exact._Cell(execution)


@pytest.mark.parametrize("d", [1, 2])
def test_the_released_values_evaluate_the_quadrature_tables_pointwise(d):
    # F_D, F_P and F~ at arbitrary points agree with the grid tables at the nodes
    cell = _cell(d)
    fd, fp, ft = cell.at(cell.quad.nodes)
    np.testing.assert_allclose(fd, cell.fd, rtol=0, atol=1e-12)
    np.testing.assert_allclose(fp, cell.fp, rtol=0, atol=1e-12)
    np.testing.assert_allclose(ft, cell.fd + cell.reg, rtol=0, atol=1e-12)


def test_released_values_at_known_laws():
    cell = _cell()
    ftilde = cell.fd + cell.reg
    # every draw at the minimiser of F~: its excess is exactly 0, with no MC error
    at_min = np.repeat(cell.quad.nodes[[int(np.argmin(ftilde))]], 50, axis=0)
    v = cell.released_values(at_min)
    assert v["gibbs_excess_regularised_released"] == pytest.approx(0.0, abs=1e-12)
    assert v["gibbs_excess_regularised_released_mcse"] == pytest.approx(0.0, abs=1e-12)
    # exact draws of the grid law: each released mean within 4 MCSE of the exact one
    rng = np.random.default_rng(1)
    draws = cell.quad.nodes[rng.choice(len(cell.p), size=4000, p=cell.p)]
    v = cell.released_values(draws)
    exact = {
        "gibbs_excess_regularised": float(cell.p @ ftilde - ftilde.min()),
        "gibbs_excess_empirical": float(cell.p @ cell.fd - cell.fd.min()),
        "generalization_gap": float((cell.p - cell.pp) @ (cell.fp - cell.fd)),
        "population_excess_risk": float(cell.p @ cell.fp - cell.fp.min()),
    }
    for name, value in exact.items():
        se = v[f"{name}_released_mcse"]
        assert se > 0 and abs(v[f"{name}_released"] - value) <= 4 * se, name
    # a sampler stuck at the maximiser: far above the exact excess
    at_max = np.repeat(cell.quad.nodes[[int(np.argmax(ftilde))]], 50, axis=0)
    stuck = cell.released_values(at_max)["gibbs_excess_regularised_released"]
    assert stuck == pytest.approx(float(ftilde.max() - ftilde.min()))
    assert stuck > exact["gibbs_excess_regularised"]  # max F~ > E_pi F~


# ------------------------------------------------------------- the specs' smoke sizes
@pytest.mark.slow  # about 35 s: DP-TR's 163 Theorem-15 steps at n = 4,375
def test_trust_region_001_rates_smoke(tmp_path):
    summary = _smoke("trust_region_001_rates", tmp_path)
    assert "R1_dp_tr_alpha_vs_n_A" in set(summary["prediction"])
    (cell,) = [
        json.loads(p.read_text())
        for p in (tmp_path / "trust_region_001_rates" / "cells").glob("*.json")
    ]
    values = cell["measurements"]["values"]
    assert values["alpha"] == cell["config"]["options"]["alpha"] == 0.040382
    assert values["alpha_1_5"] == pytest.approx(1.5 * values["alpha"])
    rho = 1.0 / (6.0 * math.sqrt(3.0)) + 4.6686e-3  # problem A's whole-objective rho
    assert values["alpha_hat"] == pytest.approx(
        max(values["grad_norm"], values["negative_curvature"] ** 2 / rho)
    )


@pytest.mark.slow  # about 45 s: two cells of 200 released runs each
def test_gibbs_released_smoke(tmp_path):
    summary = _smoke("gibbs_released", tmp_path)
    names = set(summary["prediction"])
    for claim in ("G1_regularised_excess_vs_beta", "G3_generalization_vs_n"):
        assert {f"{claim}_exact", f"{claim}_released"} <= names
    ks = summary[summary["prediction"] == "KS_released_sampler_vs_quadrature"]
    assert np.allclose(ks["bound"], 1.358 / np.sqrt(200))
    cells = [
        json.loads(p.read_text())
        for p in (tmp_path / "gibbs_released" / "cells").glob("*.json")
    ]
    for cell in cells:
        v = cell["measurements"]["values"]
        for name in ("gibbs_excess_regularised", "population_excess_risk"):
            assert v[name] > 0 and v[f"{name}_released"] > 0
            assert v[f"{name}_released_mcse"] > 0
