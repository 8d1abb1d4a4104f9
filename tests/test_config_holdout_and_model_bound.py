"""``[data] holdout`` (a public train/test split of a bundled dataset) and ``[model]
lipschitz`` (a declared per-example gradient bound: ``dp_sgd`` without ``clip_norm``
runs seed 002's Algorithm 2 on the network), and ``model.*`` sweep axes.

Both keys have no default, so a configuration without them resolves as before (the
cell keys of the committed sweeps do not move).
"""

import jax
import numpy as np
import pytest

from dpsample.config import ConfigError, build_spec, execute, resolve_config
from dpsample.datasets import holdout_split, load_sklearn, sklearn_shape
from dpsample.validation import SpecError, load_spec


def _raw(model=None, data=None, options=None):
    return {
        "job": {"kind": "finder", "name": "dp_sgd", "seed": 3},
        "data": {"source": "sklearn", "name": "digits", **(data or {})},
        "model": {"kind": "mlp", "hidden": [4], **(model or {})},
        "domain": {"kind": "unconstrained"},
        "privacy": {"epsilon": 1.0, "delta": 1e-5},
        "options": {
            "learning_rate": 0.5,
            "num_steps": 4,
            "batch_size": 64,
            **(options if options is not None else {"clip_norm": 1.0}),
        },
    }


def test_holdout_split_is_a_public_partition():
    train, test = holdout_split(1797, 0.2, seed=0)
    assert len(test) == round(0.2 * 1797) and len(train) == 1797 - len(test)
    assert np.array_equal(np.sort(np.concatenate([train, test])), np.arange(1797))
    again = holdout_split(1797, 0.2, seed=0)
    assert np.array_equal(again[1], test)  # a function of (n, fraction, seed) only
    assert not np.array_equal(holdout_split(1797, 0.2, seed=1)[1], test)
    for bad in (0.0, 1.0, -0.1, 1e-6):
        with pytest.raises(ValueError):
            holdout_split(100, bad)


def test_load_sklearn_parts_are_the_rows_of_the_split():
    full = load_sklearn("digits", class_index=True)
    train_rows, test_rows = holdout_split(1797, 0.25, seed=4)
    for part, rows in (("train", train_rows), ("test", test_rows)):
        got = load_sklearn(
            "digits", class_index=True, holdout=0.25, holdout_seed=4, part=part
        )
        np.testing.assert_array_equal(got["x"], full["x"][rows])
        np.testing.assert_array_equal(got["y"], full["y"][rows])
        assert sklearn_shape("digits", holdout=0.25, part=part) == got["x"].shape
    with pytest.raises(ValueError, match="part"):
        load_sklearn("digits", holdout=0.25, part="validation")


def test_config_without_the_new_keys_is_unchanged():
    cfg = resolve_config(_raw())
    assert "holdout" not in cfg["data"] and "holdout_seed" not in cfg["data"]
    assert "lipschitz" not in cfg["model"]


@pytest.mark.slow  # 9-20 s: keeps the fast suite under 5 minutes
def test_holdout_trains_on_the_training_rows():
    cfg = resolve_config(_raw(data={"holdout": 0.2, "holdout_seed": 0}))
    spec, _ = build_spec(cfg)
    assert spec.n == 1438
    ex = execute({**cfg, "output": {"diagnostics": False}})
    assert ex.problem.n == 1438
    train = load_sklearn("digits", class_index=True, holdout=0.2)
    np.testing.assert_array_equal(ex.problem.data["x"], train["x"])


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ({"holdout": 1.5}, "holdout"),
        ({"holdout": 0.0}, "holdout"),
        ({"holdout_seed": 1}, "holdout_seed needs holdout"),
    ],
)
def test_bad_holdout_is_refused(data, match):
    with pytest.raises(ConfigError, match=match):
        resolve_config(_raw(data=data))


@pytest.mark.slow  # 9-20 s: keeps the fast suite under 5 minutes
def test_declared_bound_runs_algorithm_2():
    cfg = resolve_config(
        _raw(model={"lipschitz": 5.0}, options={"enforce_sensitivity": False})
    )
    spec, facts = build_spec(cfg)
    assert spec.lipschitz == 5.0
    assert facts["constants"] == {"lipschitz": 5.0}
    assert facts["constant_sources"]["lipschitz"] == "declared"
    ex = execute({**cfg, "output": {"diagnostics": False}})
    info = ex.result.info
    assert info.mode == "no_clipping" and info.contribution_bound == 5.0
    assert any("declared lipschitz G = 5" in a for a in ex.result.privacy.assumptions)
    # the same run clipped at C = G: the same noise (Algorithm 1 at the same C)
    clipped = resolve_config(_raw(options={"clip_norm": 5.0}))
    ex1 = execute({**clipped, "output": {"diagnostics": False}})
    assert ex1.result.info.noise_std == pytest.approx(info.noise_std, rel=1e-9)
    # on the event (no row above C) the two trajectories coincide
    grads = jax.vmap(jax.grad(ex.problem.loss_fn), in_axes=(None, 0))(
        ex.plan["x0"], ex.problem.data
    )
    assert float(np.max(np.linalg.norm(grads, axis=1))) < 5.0
    np.testing.assert_allclose(ex1.result.value, ex.result.value, atol=1e-9)


@pytest.mark.parametrize(
    ("model", "options", "match"),
    [
        ({"lipschitz": -1.0}, {}, "lipschitz"),
        ({}, {}, "clip_norm"),  # no declared bound: clipping is still required
        ({"lipschitz": 2.0}, {"learning_rate": None}, "learning_rate"),
    ],
)
def test_model_bound_refusals(model, options, match):
    raw = _raw(model=model, options={})
    for key, value in options.items():
        if value is None:
            raw["options"].pop(key)
    with pytest.raises(ConfigError, match=match):
        resolve_config(raw)


def test_sweep_axes_may_name_the_model():
    spec = load_spec(
        {
            "experiment": {"name": "m"},
            "config": _raw(),
            "grid": [{"model": {"hidden": [[4], [8]], "init_seed": [0, 1]}}],
        }
    )
    assert set(spec.axes()) == {"model.hidden", "model.init_seed"}
    assert len(spec.cells()) == 4
    with pytest.raises(SpecError, match="not a path"):
        load_spec(
            {
                "experiment": {"name": "m"},
                "config": _raw(),
                "grid": [{"modell.hidden": [[4]]}],
            }
        )
