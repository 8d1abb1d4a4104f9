"""``[model]``: ``dpsample run`` trains ``dpsample.models.MLP`` with DP-SGD.

The example ``examples/mlp_digits.toml`` runs end to end (cut to a few steps), the
parameter dimension is the network's, the start point is the public
``MLP.init(key(init_seed))``, and a configuration that cannot train the model is
refused with a ``ConfigError`` before any data are read.
"""

import json
import tomllib
from pathlib import Path

import jax
import numpy as np
import pytest

from dpsample import cli
from dpsample.config import (
    ConfigError,
    build_spec,
    execute,
    plan_config,
    resolve_config,
)
from dpsample.config import problem as config_problem
from dpsample.datasets import load_sklearn
from dpsample.models import MLP

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "mlp_digits.toml"


def _example(**options):
    raw = tomllib.loads(EXAMPLE.read_text())
    raw["options"] |= options
    return raw


def _cfg(model=None, data=None, **sections):
    raw = {
        "job": {"kind": "finder", "name": "dp_sgd"},
        "data": data or {"source": "sklearn", "name": "iris"},
        "model": {"kind": "mlp", "hidden": [4], **(model or {})},
        "domain": {"kind": "unconstrained"},
        "privacy": {"epsilon": 1.0, "delta": 1e-5},
        "options": {"clip_norm": 1.0, "learning_rate": 0.5, "num_steps": 3},
    }
    return raw | sections


@pytest.fixture
def no_data(monkeypatch):
    """Reading the data fails the test: errors must come before it."""

    def refuse(_):
        raise AssertionError("the data were read")

    monkeypatch.setattr(config_problem, "load_data", refuse)


# ------------------------------------------------------------------ the example
@pytest.mark.slow
def test_the_example_runs_through_the_cli_and_its_copy_reproduces(tmp_path):
    path = tmp_path / "mlp.toml"
    text = EXAMPLE.read_text().replace("num_steps = 200", "num_steps = 5")
    path.write_text(text)
    out = tmp_path / "out"
    assert cli.main(["run", str(path), "-o", str(out), "--seed", "3"]) == 0
    report = json.loads((out / "report.json").read_text())
    net = MLP((64, 32, 10), activation="tanh")
    assert report["problem"]["dim"] == net.dim == 2410
    assert report["problem"]["model"]["layer_sizes"] == [64, 32, 10]
    assert len(report["released"]["point"]) == net.dim
    priv = report["privacy"]
    assert priv["within_budget"] and priv["epsilon"] <= 1.0 + 1e-9
    assert priv["delta"] == 1e-5 and priv["relation"] == "REPLACE_ONE"
    diag = report["non_private_diagnostics"]
    assert "NOT PRIVATE" in diag["label"]
    assert 0.0 <= diag["output"]["training_accuracy"] <= 1.0
    assert np.isfinite(diag["output"]["empirical_risk"])
    # the start is the public init, recorded as such in the plan
    x0 = report["plan"]["params"]["x0"]
    assert x0["source"] == "default" and "MLP.init" in x0["note"]
    np.testing.assert_allclose(x0["value"], net.init(jax.random.key(0)))
    # the written config.toml is a configuration: the same seed, the same point
    copy = tmp_path / "copy.toml"
    copy.write_text((out / "config.toml").read_text())
    again = tmp_path / "again"
    assert cli.main(["run", str(copy), "-o", str(again), "--seed", "3"]) == 0
    point = json.loads((again / "released.json").read_text())["point"]
    assert point == report["released"]["point"]


def test_the_example_plans_the_networks_dimension_and_start():
    planned = plan_config(resolve_config(_example()))
    net = MLP((64, 32, 10), activation="tanh")
    assert planned.spec.dim == planned.facts["dim"] == net.dim
    assert planned.plan["clip_norm"] == 1.0 and planned.plan.spent_epsilon() <= 1.0
    np.testing.assert_array_equal(planned.plan["x0"], net.init(jax.random.key(0)))
    assert planned.spec.lipschitz is None and planned.spec.smoothness is None


@pytest.mark.parametrize(
    ("model", "sizes"),
    [
        ({"hidden": [5]}, (4, 5, 3)),
        ({"hidden": [6, 2], "activation": "relu"}, (4, 6, 2, 3)),
        ({"hidden": []}, (4, 3)),
    ],
)
def test_the_dimension_is_the_mlps(model, sizes):
    cfg = resolve_config(_cfg(model))
    spec, facts = build_spec(cfg)
    net = MLP(sizes, activation=model.get("activation", "tanh"))
    assert spec.dim == facts["dim"] == net.dim
    assert spec.loss_fn == net and cfg["data"]["class_index"] is True


def test_a_given_x0_and_init_seed_set_the_start():
    net = MLP((4, 4, 3))
    planned = plan_config(resolve_config(_cfg({"init_seed": 7})))
    np.testing.assert_array_equal(planned.plan["x0"], net.init(jax.random.key(7)))
    x0 = np.linspace(-0.1, 0.1, net.dim).tolist()
    cfg = _cfg()
    cfg["options"] |= {"x0": x0}
    planned = plan_config(resolve_config(cfg))
    np.testing.assert_array_equal(planned.plan["x0"], x0)
    assert planned.plan.source("x0") == "user"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("head", "data", "metric"),
    [
        ("cross_entropy", {"source": "sklearn", "name": "iris"}, "training_accuracy"),
        (
            "logistic",
            {"source": "synthetic", "kind": "classification", "n": 60, "d": 3},
            "training_accuracy",
        ),
        (
            "squared",
            {"source": "synthetic", "kind": "regression", "n": 60, "d": 3},
            "training_rmse",
        ),
    ],
)
def test_each_head_trains_and_reports_its_metric(head, data, metric):
    cfg = resolve_config(
        _cfg({"head": head}, data, job={"kind": "finder", "name": "dp_sgd", "seed": 1})
    )
    report = execute(cfg).report
    assert report["privacy"]["within_budget"]
    out = report["non_private_diagnostics"]["output"]
    assert np.isfinite(out[metric]) and np.isfinite(out["empirical_risk"])


def test_a_ball_domain_has_the_models_dimension():
    cfg = resolve_config(_cfg(domain={"kind": "ball", "radius": 50.0}))
    spec, _ = build_spec(cfg)
    assert spec.domain.dim == MLP((4, 4, 3)).dim
    assert np.linalg.norm(plan_config(cfg).plan["x0"]) <= 50.0


# --------------------------------------------------------------- bad configs
MODEL = {"kind": "mlp", "hidden": [4]}


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"loss": {"name": "sigmoid"}}, "cannot both be given"),
        ({"job": {"kind": "sampler", "name": "net"}}, "cannot be trained by sampler"),
        ({"job": {"kind": "finder", "name": "dp_spider"}}, "cannot be trained"),
        ({"options": {"learning_rate": 0.5, "num_steps": 3}}, "clip_norm"),
        ({"options": {"clip_norm": 1.0, "num_steps": 3}}, "learning_rate"),
        ({"options": {"clip_norm": 1.0, "learning_rate": 0.5}}, "num_steps"),
        ({"model": MODEL | {"activation": "swish"}}, "activation 'swish'"),
        ({"model": MODEL | {"head": "hinge"}}, "head 'hinge'"),
        ({"model": MODEL | {"hidden": [0]}}, "layer widths"),
        ({"model": MODEL | {"hidden": ["a"]}}, "layer widths"),
        ({"model": MODEL | {"hidden": 4}}, "hidden must be a list"),
        ({"model": MODEL | {"depth": 2}}, "unknown key 'depth'"),
        ({"model": {"hidden": [4]}}, "missing key 'kind'"),
        ({"model": MODEL | {"kind": "cnn"}}, "unknown \\[model\\] kind 'cnn'"),
        ({"model": MODEL | {"init_seed": -1}}, "init_seed"),
        (
            {"data": {"source": "synthetic", "kind": "classification", "n": 9, "d": 2}},
            "needs class labels",
        ),
        (
            {"data": {"source": "sklearn", "name": "iris", "positive_class": 0}},
            "positive_class",
        ),
        (
            {"data": {"source": "sklearn", "name": "iris", "class_index": False}},
            "class_index",
        ),
        (
            {
                "model": MODEL | {"head": "logistic"},
                "data": {"source": "sklearn", "name": "diabetes"},
            },
            "regression",
        ),
    ],
)
def test_bad_configs_are_refused_before_the_data(no_data, change, match):
    with pytest.raises(ConfigError, match=match):
        execute(resolve_config(_cfg() | change))


def test_class_index_without_a_model_is_refused():
    raw = _cfg(data={"source": "sklearn", "name": "iris", "class_index": True})
    raw.pop("model")
    raw["loss"] = {"name": "sigmoid"}
    with pytest.raises(ConfigError, match="class_index"):
        resolve_config(raw)


@pytest.mark.parametrize(
    ("domain", "match"),
    [
        ({"kind": "ball", "radius": 0.01}, "outside the radius"),
        ({"kind": "ball", "radius": 5.0, "center": [0.0, 0.0]}, "center has 2"),
    ],
)
def test_a_domain_inconsistent_with_the_model_is_refused(no_data, domain, match):
    with pytest.raises(ConfigError, match=match):
        execute(resolve_config(_cfg(domain=domain)))


# ----------------------------------------------------------------- the labels
def test_class_index_labels_are_the_classes():
    from sklearn.datasets import load_digits

    data = load_sklearn("digits", class_index=True)
    assert data["y"].dtype == np.int64 and data["x"].shape == (1797, 64)
    np.testing.assert_array_equal(data["y"], load_digits().target)
    np.testing.assert_allclose(np.linalg.norm(data["x"], axis=1), 1.0)
    with pytest.raises(ValueError, match="positive_class"):
        load_sklearn("iris", class_index=True, positive_class=0)
    with pytest.raises(ValueError, match="regression"):
        load_sklearn("diabetes", class_index=True)
