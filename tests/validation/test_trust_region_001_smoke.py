"""Experiment ``trust_region_001`` (seed 001, spec 001 section 6): its problem's closed
forms against the library's losses, and the spec's smoke size run as a user runs it
(``dpsample sweep --smoke``)."""

import json
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from test_experiments_seed000 import _smoke  # noqa: E402

from dpsample import Problem  # noqa: E402
from dpsample.domains import Unconstrained  # noqa: E402
from experiments.problems import trust_region_001 as tr001  # noqa: E402


@pytest.mark.slow  # 8 s: eager jax.hessian of a 300 x 22 risk
@pytest.mark.parametrize("problem", ["A", "B"])
def test_closed_forms_match_the_loss(problem):
    data = tr001.make(jax.random.key(0), 300, 22, dataset="ijcnn")
    prob = Problem(tr001.loss(problem).loss_fn, data, Unconstrained(22))
    obj = tr001._Objective(np.asarray(data["x"]), np.asarray(data["y"]), problem)
    for w in np.random.default_rng(1).normal(size=(3, 22)):
        wj = jnp.asarray(w)
        assert obj.value(w) == pytest.approx(float(prob.empirical_risk(wj)), rel=1e-12)
        grad = np.asarray(jax.grad(prob.empirical_risk)(wj))
        np.testing.assert_allclose(obj.grad(w), grad, atol=1e-12)
        hess = np.asarray(jax.hessian(prob.empirical_risk)(wj))
        np.testing.assert_allclose(obj.hess(w), hess, atol=1e-12)


def test_reference_optimum_is_stationary():
    data = tr001.make(jax.random.key(1), 400, 22, dataset="ijcnn")
    x, y = np.asarray(data["x"]), np.asarray(data["y"])
    f_star, w_star = tr001.reference_optimum(x, y, "B")
    obj = tr001._Objective(x, y, "B")
    assert obj.value(w_star) == pytest.approx(f_star)
    assert np.linalg.norm(obj.grad(w_star)) < 1e-7
    assert f_star <= obj.value(np.zeros(22))


@pytest.mark.slow
def test_trust_region_001_smoke(tmp_path):
    # the shared smoke runner: `dpsample sweep --smoke --workers 0` into tmp_path,
    # report.md and slopes.csv written, every summary row finite and not failed
    summary = _smoke("trust_region_001", tmp_path)
    out = tmp_path / "trust_region_001"
    assert (out / "report.md").exists()
    assert set(summary["algorithm"]) == {
        "dp_sgd",
        "dp_trust_region",
        "dp_stochastic_trust_region",
    }
    cells = [json.loads(p.read_text()) for p in (out / "cells").glob("*.json")]
    assert len(cells) == 3 and all(c["status"] == "ok" for c in cells)
    for cell in cells:
        values = cell["measurements"]["values"]
        for name in ("optimality_gap", "grad_norm", "lambda_min", "accuracy"):
            assert np.isfinite(values[name]), (name, values[name])
        assert values["optimality_gap"] >= -1e-9  # the reference is the best
        assert values["wall_time"] > 0 and values["warm_wall_time"] > 0
        assert np.isfinite([values[f"gap_trace_{j:02d}"] for j in range(1, 11)]).all()
    # the gap-against-time figures and table, from the cells
    paths = tr001.write_time_figures(str(out))
    assert len(paths) == 1 and Path(paths[0]).exists()
    table = pd.read_csv(out / "gap_vs_time.csv")
    assert len(table) == 30 and np.isfinite(table["gap"]).all()  # 10 per finder
    assert set(table["algorithm"]) == {c["config"]["job"]["name"] for c in cells}
