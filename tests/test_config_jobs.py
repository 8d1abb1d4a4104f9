"""``[job]`` and ``[options]`` through the registry: lookup, option types, the run.

A registered algorithm runs as ``plan`` then ``run`` with the same result as its
convenience function for the same key; the options are checked by name and type
before anything runs; ``[privacy] max_evaluations`` is the plan's compute budget.
Every name a configuration accepts is a registry entry: there is no other table.
"""

from __future__ import annotations

import tomllib
import typing
from pathlib import Path

import jax
import numpy as np
import pytest

from dpsample import config, registry
from dpsample.config import ConfigError, jobs
from dpsample.domains import Ball

REPO = Path(__file__).resolve().parents[1]
DP_SGD = REPO / "examples" / "dp_sgd_synthetic.toml"


def _dp_sgd_config(**sections):
    raw = tomllib.loads(DP_SGD.read_text())
    for name, body in sections.items():
        raw[name] = raw.get(name, {}) | body
    return raw


# --------------------------------------------------------------- the names
def test_every_job_name_resolves_to_its_registry_entry():
    """The configuration keeps no table of its own: its names are the registry's."""
    assert config.job_names() == registry.names()
    for kind in ("sampler", "finder", "pipeline"):
        assert config.job_names(kind) == registry.names(kind)
    for name in config.job_names():
        entry = registry.get(name)
        job = config.resolve_job(entry.kind, name)
        assert job.entry == entry and (job.kind, job.name) == (entry.kind, name)
        assert isinstance(job.create(), entry.create().__class__)


def test_unknown_names_and_kinds_list_the_choices():
    with pytest.raises(ConfigError, match="'dp_sgd' is a finder, not a sampler"):
        config.resolve_job("sampler", "dp_sgd")
    with pytest.raises(ConfigError) as err:
        config.resolve_job("finder", "adam")
    assert all(repr(n) in str(err.value) for n in config.job_names("finder"))
    with pytest.raises(ConfigError, match="valid choices: 'sampler', 'finder'"):
        config.resolve_job("optimizer", "dp_sgd")


# ------------------------------------------------------------------- options
@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"num_steps": 2.5}, "[options] num_steps must be an integer, got 2.5"),
        ({"num_steps": True}, "[options] num_steps must be an integer"),
        ({"project": "yes"}, "[options] project must be a boolean"),
        ({"sampling": 3}, "[options] sampling must be a string"),
        ({"x0": [0.0, "a"]}, "[options] x0 must be a number or a list of numbers"),
        ({"num_step": 3}, "unknown option 'num_step' for dp_sgd; valid options: x0"),
        ({"delta": 1e-6}, "set it in [privacy]"),
        ({"max_evaluations": 10}, "set it in [privacy]"),
    ],
)
def test_options_are_checked_by_name_and_type(options, expected):
    with pytest.raises(ConfigError) as err:
        config.resolve_config(_dp_sgd_config(options=options))
    assert expected in str(err.value)


def test_checked_options_keep_toml_types_and_become_what_the_plan_takes():
    cfg = config.resolve_config(
        _dp_sgd_config(options={"clip_norm": 1, "x0": [0, 0.1, 0, 0, 0]})
    )
    assert cfg["options"]["clip_norm"] == 1.0
    assert isinstance(cfg["options"]["clip_norm"], float)
    assert cfg["options"]["num_steps"] == 200
    assert isinstance(cfg["options"]["num_steps"], int)
    job = config.resolve_job("finder", "dp_sgd")
    runtime = job.runtime_options(cfg["options"], dim=5)
    assert isinstance(runtime["x0"], np.ndarray) and runtime["x0"].dtype == np.float64
    assert runtime["num_steps"] == 200


def test_value_checks_follow_the_annotation():
    check = jobs.check_value
    assert check("k", 3, int | float) == 3 and isinstance(check("k", 3, float), float)
    assert check("k", "a", typing.Literal["a", "b"]) == "a"
    with pytest.raises(ConfigError, match="one of 'a', 'b'"):
        check("k", "c", typing.Literal["a", "b"])
    assert check("k", [1, 2], list[float]) == [1.0, 2.0]
    with pytest.raises(ConfigError, match="must be a list"):
        check("k", [1, "x"], list[int])
    assert check("k", {"a": 1}, dict[str, int]) == {"a": 1}
    assert check("k", object(), typing.Any) is not None
    with pytest.raises(ConfigError, match="which a TOML file cannot give"):
        check("k", "f", jobs.Job | None)
    table = {"radius": 2.0, "center": [0.0, 1.0]}
    assert check("k", table, Ball | None) == table
    ball = jobs.to_runtime(table, Ball | None, dim=2)
    assert isinstance(ball, Ball) and ball.radius == 2.0 and ball.dim == 2
    with pytest.raises(ConfigError, match="needs a radius"):
        jobs.to_runtime({"center": [0.0]}, Ball, dim=1)


# ---------------------------------------------------------------------- runs
@pytest.mark.slow
def test_a_registered_job_runs_its_plan_like_the_function():
    """Same key, same released point as ``dp_sgd(...)``."""
    from dpsample.finders import dp_sgd

    cfg = config.resolve_config(_dp_sgd_config(job={"seed": 3}))
    ex = config.execute(cfg, diagnostics=False)
    assert ex.plan is not None and ex.result.privacy.epsilon(1e-5) <= 2.0
    direct = dp_sgd(
        jax.random.key(3),
        ex.problem,
        epsilon=2.0,
        delta=1e-5,
        num_steps=200,
        batch_size=100,
    )
    np.testing.assert_array_equal(np.asarray(ex.result.value), np.asarray(direct.value))
    # the report is made from the plan and the typed info
    report = ex.report
    assert report["plan"]["params"]["noise_multiplier"]["source"] == "calibrated"
    assert report["plan"]["cost"]["evaluations"] == ex.plan.cost.evaluations
    assert "estimated_seconds" not in report["plan"]["cost"]  # measured instead
    assert report["info"] == config.jsonable(ex.result.info.to_report())
    (stage,) = report["privacy"]["stages"]
    assert stage["requested"] == {"epsilon": 2.0, "delta": 1e-5}
    assert stage["epsilon"] == report["privacy"]["epsilon"]
    assert report["privacy"]["assumptions"] == stage["assumptions"]
    assert ex.config["options"]["x0"] == [0.0] * 5  # the plan's default, written


@pytest.mark.slow
def test_max_evaluations_is_the_plans_compute_budget():
    raw = _dp_sgd_config()
    del raw["options"]["num_steps"]
    free = config.plan_config(config.resolve_config(raw)).plan
    m = free["max_batch_size"]
    assert free["num_steps"] > 10
    cap = 10 * m + 3
    capped_raw = _dp_sgd_config(privacy={"max_evaluations": cap})
    del capped_raw["options"]["num_steps"]
    capped = config.plan_config(config.resolve_config(capped_raw)).plan
    assert capped.budget.max_evaluations == cap
    assert capped["num_steps"] == 10 and capped.cost.evaluations <= cap
    assert "capped" in capped.params["num_steps"].note
    # a schedule fixed by the user that exceeds the cap is refused, naming both
    fixed = config.resolve_config(_dp_sgd_config(privacy={"max_evaluations": cap}))
    with pytest.raises(ValueError, match="max_evaluations"):
        config.plan_config(fixed)
    with pytest.raises(ConfigError, match="max_evaluations must be >= 1"):
        config.resolve_config(_dp_sgd_config(privacy={"max_evaluations": 0}))
    # every job has a plan, so every job takes the compute budget into it
    net = tomllib.loads((REPO / "examples" / "net_iris.toml").read_text())
    free_net = config.plan_config(config.resolve_config(net)).plan
    net["privacy"]["max_evaluations"] = free_net.cost.evaluations
    planned = config.plan_config(config.resolve_config(net)).plan
    assert planned.budget.max_evaluations == free_net.cost.evaluations
    assert planned.cost.evaluations <= planned.budget.max_evaluations
    # the example fixes its spacing: a net over the cap is refused, naming the cap
    net["privacy"]["max_evaluations"] = free_net.cost.evaluations // 2
    with pytest.raises(ValueError, match="max_evaluations"):
        config.plan_config(config.resolve_config(net))
