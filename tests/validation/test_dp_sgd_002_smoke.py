"""Experiment ``dp_sgd_002`` (seed 002, spec 002 section 5.4 E1): the pilot's ``C`` in
the spec, the non-private reference's update, and the spec's smoke size run as a user
runs it (``dpsample sweep --smoke``)."""

import json
import sys
import tomllib
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from test_experiments_seed000 import _smoke  # noqa: E402

from dpsample.models import MLP  # noqa: E402
from experiments.problems import dp_sgd_002 as e1  # noqa: E402

SPEC = tomllib.loads((REPO / "experiments" / "dp_sgd_002.toml").read_text())


@pytest.mark.slow  # 7 s in the fast suite
def test_nonprivate_step_is_the_poisson_batch_sum_over_b():
    net = MLP((3, 2, 2))
    data = {
        "x": jax.random.normal(jax.random.key(0), (6, 3)),
        "y": jnp.array([0, 1, 0, 1, 1, 0]),
    }
    x0 = net.init(jax.random.key(1))
    key = jax.random.key(2)
    xs = e1.nonprivate_iterates(
        net, data, x0, num_steps=1, batch_size=3.0, learning_rate=0.7, key=key
    )
    mask = jax.random.uniform(jax.random.split(key, 1)[0], (6,)) < 0.5
    grads = jax.vmap(jax.grad(net), in_axes=(None, 0))(x0, data)
    expected = x0 - 0.7 * jnp.sum(grads * mask[:, None], axis=0) / 3.0
    np.testing.assert_allclose(xs[0], expected, atol=1e-12)


def test_epoch_ends():
    assert e1._epoch_steps(225, 1438, 128.0)[:3] == [0, 11, 22]
    assert e1._epoch_steps(225, 1438, 128.0)[-1] == 225
    assert len(e1._epoch_steps(225, 1438, 128.0)) == 21  # the start and 20 epochs


@pytest.mark.slow  # 15-40 s: the pilot's 225 steps and 1,438 x 225 gradient norms
def test_spec_clip_bound_is_the_pilot_rounded_up():
    cfg = SPEC["config"]
    steps = SPEC["grid"][0]["options.num_steps"][0]
    top, c = e1.pilot_clip_bound(
        hidden=tuple(cfg["model"]["hidden"]),
        holdout=cfg["data"]["holdout"],
        holdout_seed=cfg["data"]["holdout_seed"],
        init_seed=cfg["model"]["init_seed"],
        num_steps=steps,
        batch_size=float(cfg["options"]["batch_size"]),
        learning_rate=cfg["options"]["learning_rate"],
    )
    assert top == pytest.approx(7.653, abs=1e-3)
    assert c == 7.7
    assert SPEC["grid"][0]["options.clip_norm"] == [c]
    assert SPEC["grid"][1]["model.lipschitz"] == [c]


@pytest.mark.slow  # about 50 s: two cells of 23 steps with their hooks
def test_dp_sgd_002_smoke(tmp_path):
    summary = _smoke("dp_sgd_002", tmp_path)
    out = tmp_path / "dp_sgd_002"
    cells = [json.loads(p.read_text()) for p in (out / "cells").glob("*.json")]
    assert len(cells) == 2 and all(c["status"] == "ok" for c in cells)
    modes = {c["public"]["info"]["mode"] for c in cells}
    assert modes == {"clipped", "no_clipping"}
    for cell in cells:
        assert "iterates" not in cell["public"]["info"]  # measured, then dropped
        values = cell["measurements"]["values"]
        assert values["clip_bound"] == 7.7
        for k in range(3):  # the start and two epochs
            for name in ("test_acc", "train_acc", "nonprivate_test_acc"):
                assert 0.0 <= values[f"{name}_epoch_{k:02d}"] <= 1.0
        assert 0.0 <= values["event_failure_fraction"] <= 1.0
    # the same key and the same noise: off-event steps aside, the arms coincide
    a, b = (c["measurements"]["values"] for c in cells)
    if a["event_failure_fraction"] == 0.0 == b["event_failure_fraction"]:
        np.testing.assert_allclose(
            cells[0]["released"]["point"], cells[1]["released"]["point"], atol=1e-8
        )
    assert {"gradient_bound_event", "test_accuracy"} <= set(summary["prediction"])
    paths = e1.write_tables(str(out))
    assert all(Path(p).exists() for p in paths)
    table = pd.read_csv(out / "accuracy_vs_epoch.csv")
    assert set(table["arm"]) == {"clipped", "no_clipping", "non_private"}
