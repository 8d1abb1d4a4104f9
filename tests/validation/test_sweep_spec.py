"""Sweep specs: parsing, grid expansion, seeds, and errors that name the key."""

import copy
from pathlib import Path

import pytest
from sweep_hooks import tiny_spec

from dpsample.config import resolve_config
from dpsample.validation import SpecError, load_spec
from dpsample.validation.cells import canonical_config

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "experiments" / "sweep_demo.toml"


def test_demo_spec_expands_to_resolved_dpsample_run_cells():
    spec = load_spec(DEMO)
    assert spec.name == "sweep_demo"
    assert spec.axes() == ("data.n", "privacy.epsilon")
    cells = spec.cells()
    # (4 values of n) + (4 of epsilon) share the point n = 200, epsilon = 1: 7 points
    assert len(cells) == 7 * spec.seeds
    assert len({c.key for c in cells}) == len(cells)
    for cell in cells:
        # a cell is exactly what `dpsample run` would run: resolving it changes nothing
        assert canonical_config(resolve_config(cell.config)) == cell.config
        assert cell.config["job"]["seed"] == cell.seed
        assert cell.config["data"]["seed"] == 1000 + cell.seed
        assert cell.axes == {
            "data.n": cell.config["data"]["n"],
            "privacy.epsilon": cell.config["privacy"]["epsilon"],
        }
    smoke = spec.cells(smoke=True)
    assert [c.axes["data.n"] for c in smoke] == [100, 100, 200, 200]
    assert [c.seed for c in smoke] == [0, 1, 0, 1]
    assert {p.name for p in spec.predictions} == {
        "empirical_risk_vs_n",
        "empirical_risk_vs_epsilon",
        "population_risk",
    }


def test_dotted_keys_quoted_or_nested_are_the_same_axis():
    quoted = tiny_spec()
    nested = copy.deepcopy(quoted)
    nested["grid"] = [{"data": {"n": [40, 60]}}]
    a, b = load_spec(quoted), load_spec(nested)
    assert a.axes() == b.axes() == ("data.n",)
    assert [c.key for c in a.cells()] == [c.key for c in b.cells()]


def test_zip_pairs_axes_and_product_crosses_them():
    doc = tiny_spec(seeds=1)
    doc["grid"] = [{"data.n": [40, 60], "privacy.epsilon": [1.0, 2.0], "zip": True}]
    pairs = [
        (c.axes["data.n"], c.axes["privacy.epsilon"]) for c in load_spec(doc).cells()
    ]
    assert pairs == [(40, 1.0), (60, 2.0)]
    doc["grid"][0].pop("zip")
    assert len(load_spec(doc).cells()) == 4


def test_a_cell_key_does_not_depend_on_the_spec_that_names_it():
    one = load_spec(tiny_spec(ns=(40,), seeds=1)).cells()[0]
    doc = tiny_spec(seeds=1)
    doc["grid"] = [{"privacy.epsilon": [1.0, 2.0]}]  # n = 40 from the base config
    other = load_spec(doc).cells()
    assert one.key == other[0].key
    assert one.key != other[1].key


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda d: d["experiment"].pop("name"), "needs name"),
        (lambda d: d["experiment"].update(seeds=0), "seeds must be an integer >= 1"),
        (lambda d: d.update(extra={}), "unknown key 'extra'"),
        (lambda d: d["grid"][0].update({"n": [1]}), "not a path into the config"),
        (lambda d: d["grid"][0].update({"data.d": []}), "non-empty list"),
        (lambda d: d["grid"][0].update({"job.seed": [1, 2]}), "seed key"),
        (
            lambda d: d["prediction"][0].update(slopes={"options.steps": -1}),
            "neither a grid axis",
        ),
        (lambda d: d["prediction"][0].pop("measurement"), "needs measurement"),
        (lambda d: d.pop("config"), "no base configuration"),
        (lambda d: d.update(smoke={"grid": [{"data.d": [1]}]}), "not an axis"),
    ],
)
def test_spec_errors_name_the_key(edit, message):
    doc = tiny_spec()
    edit(doc)
    with pytest.raises(SpecError, match=message):
        load_spec(doc).cells()


def test_a_grid_point_that_does_not_resolve_is_named():
    doc = tiny_spec()
    doc["grid"] = [{"privacy.delta": [1e-6, 2.0]}]
    spec = load_spec(doc)
    with pytest.raises(SpecError, match=r"privacy.delta = 2.0.*delta must lie in"):
        spec.cells()


def test_spec_file_paths_and_config_file(tmp_path):
    (tmp_path / "base.toml").write_text(
        '[job]\nkind = "sampler"\nname = "net"\n'
        '[data]\nsource = "synthetic"\nkind = "classification"\nn = 40\nd = 1\n'
        '[loss]\nname = "sigmoid"\n[domain]\nkind = "ball"\nradius = 1.0\n'
        "[privacy]\nepsilon = 1.0\ndelta = 1e-6\n"
        '[output]\ndir = "ignored"\n'
    )
    (tmp_path / "spec.toml").write_text(
        '[experiment]\nname = "f"\nconfig = "base.toml"\npythonpath = ["lib"]\n'
        "[[grid]]\ndata.n = [40, 50]\n"
    )
    spec = load_spec(tmp_path / "spec.toml")
    assert spec.pythonpath[0] == str((tmp_path / "lib").resolve())
    assert "output" not in spec.base
    assert [c.axes["data.n"] for c in spec.cells()] == [40, 50]


# ------------------------------------------------ [data] source = "module" in config
def _module_cfg(**data):
    return {
        "job": {"kind": "sampler", "name": "net"},
        "data": {
            "source": "module",
            "function": "experiments.problems.sweep_demo:make",
            "n": 50,
            "d": 2,
            **data,
        },
        "loss": {"name": "linear", "label_bound": 1.0},
        "domain": {"kind": "ball", "radius": 1.0},
        "privacy": {"epsilon": 1.0, "delta": 1e-6},
    }


def test_module_data_source_builds_the_problem_from_the_named_function():
    from dpsample.config import build_problem

    cfg = resolve_config(_module_cfg(seed=3, params={"mean_norm": 0.25}))
    assert cfg["data"]["seed"] == 3
    problem, facts = build_problem(cfg)
    assert (facts["n"], facts["dim"]) == (50, 2)
    assert facts["constants"]["lipschitz"] == 1.0
    again, _ = build_problem(cfg)
    assert (problem.data["x"] == again.data["x"]).all()  # a function of the seed


@pytest.mark.parametrize(
    "data, message",
    [
        ({"function": "experiments.problems.sweep_demo"}, "module:attribute"),
        ({"function": "experiments.problems.sweep_demo:nope"}, "no attribute"),
        ({"function": "no_such_package_xyz.mod:f"}, "cannot import"),
        ({"function": "dpsample:__version__"}, "is not callable"),
        ({"n": 0}, "n must be >= 1"),
        ({"kind": "classification"}, "unknown key 'kind'"),
    ],
)
def test_module_data_source_errors(data, message):
    from dpsample.config import ConfigError

    with pytest.raises(ConfigError, match=message):
        resolve_config(_module_cfg(**data))


def test_module_data_must_match_declared_sizes_and_declare_label_bounds():
    from dpsample.config import ConfigError, build_problem

    cfg = resolve_config(_module_cfg(function="sweep_hooks:one_column_too_many"))
    with pytest.raises(ConfigError, match=r"returned 3 columns, \[data\] d = 2"):
        build_problem(cfg)
    raw = _module_cfg()
    raw["loss"] = {"name": "linear"}  # labels of a module are not known to be +-1
    with pytest.raises(ConfigError, match=r"declare \[loss\] label_bound"):
        build_problem(resolve_config(raw))
