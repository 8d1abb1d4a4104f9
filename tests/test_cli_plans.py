"""``dpsample list``, ``dpsample run --dry-run`` and the key of a run.

* ``list`` prints every registered algorithm, one a line (name, kind, guarantee,
  seed and theorem), and ``--json`` the same entries.
* ``run --dry-run`` plans from public facts only: the data loaders are replaced by
  functions that raise, and the printed guarantee is the one a real run returns.
* Without a seed the run's key comes from OS entropy and is recorded nowhere; a
  given seed (``[job] seed`` or ``--seed``) is an assumption of the guarantee (the
  verdict names it) and is written neither to ``report.json`` nor to the copied
  ``config.toml``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import jax
import numpy as np
import pytest

from dpsample import cli, config, datasets, registry
from dpsample.config import ConfigError
from dpsample.config import problem as config_problem

REPO = Path(__file__).resolve().parents[1]
SECRET = 987654321

SMALL_DP_SGD = """
[job]
kind = "finder"
name = "dp_sgd"

[data]
source = "synthetic"
kind = "classification"
n = 300
d = 3

[loss]
name = "logistic_nonconvex"

[domain]
kind = "ball"
radius = 2.0

[privacy]
epsilon = 2.0
delta = 1e-5

[options]
num_steps = 30
batch_size = 50

[output]
diagnostics = false  # not what these tests check (and slow to compile)
"""

IRIS_DP_SGD = """
[job]
kind = "finder"
name = "dp_sgd"

[data]
source = "sklearn"
name = "iris"
features = ["sepal length (cm)", 2]
positive_class = "setosa"

[loss]
name = "sigmoid"

[domain]
kind = "ball"
radius = 2.0

[privacy]
epsilon = 1.0
delta = 1e-6
max_evaluations = 20000

[options]
clip_norm = 1.0

[output]
diagnostics = false
"""


def _config(tmp_path, text, name="job.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.fixture
def small(tmp_path):
    """A small DP-SGD configuration file (no seed)."""
    return _config(tmp_path, SMALL_DP_SGD, "small.toml")


def _no_data(monkeypatch):
    """Every way to the data raises (the loader and the sources it calls)."""
    import sklearn.datasets

    def refuse(*args, **kwargs):
        raise AssertionError("the data were read")

    monkeypatch.setattr(config_problem, "load_data", refuse)
    for name in ("load_sklearn", "make_classification", "make_regression"):
        monkeypatch.setattr(datasets, name, refuse)
    for name in datasets.SKLEARN_DATASETS:
        monkeypatch.setattr(sklearn.datasets, f"load_{name}", refuse)


def _main_json(capsys, *args):
    assert cli.main([*map(str, args), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


# ---------------------------------------------------------------------- list
@pytest.mark.slow
def test_list_prints_every_registered_algorithm():
    env = dict(os.environ, JAX_PLATFORMS="cpu", PYTHONPATH=str(REPO))
    proc = subprocess.run(
        [sys.executable, "-m", "dpsample.cli", "list"],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    for entry in registry.entries():
        (line,) = [ln for ln in lines if ln.split()[:1] == [entry.name]]
        for text in (
            entry.kind,
            entry.guarantee_type,
            f"seed {entry.seed}",
            entry.theorem,
        ):
            assert text in line, (entry.name, text)


def test_list_json_has_the_registry_entries_and_their_options(capsys):
    listing = _main_json(capsys, "list")
    assert [a["name"] for a in listing["algorithms"]] == list(registry.names())
    for item in listing["algorithms"]:
        entry = registry.get(item["name"])
        assert (item["kind"], item["seed"], item["theorem"]) == (
            entry.kind,
            entry.seed,
            entry.theorem,
        )
        assert item["guarantee_type"] == entry.guarantee_type
        assert [o["name"] for o in item["options"]] == [o.name for o in entry.options()]
    assert set(listing) == {"algorithms"}  # no other table of algorithms


# ------------------------------------------------------------------- dry run
@pytest.mark.slow
@pytest.mark.parametrize("source", ["synthetic", "sklearn"])
def test_dry_run_reads_no_data_and_prints_the_guarantee_a_run_returns(
    source, small, tmp_path, monkeypatch, capsys
):
    path = small if source == "synthetic" else _config(tmp_path, IRIS_DP_SGD)
    out = tmp_path / "out"
    with monkeypatch.context() as mp:
        _no_data(mp)
        planned = _main_json(capsys, "run", "--dry-run", path, "--seed", 5, "-o", out)
        assert cli.main(["run", "--dry-run", str(path), "--seed", "5"]) == 0
        text = capsys.readouterr().out
    assert not out.exists()  # a dry run writes nothing
    priv = planned["privacy"]
    assert f"guarantee: epsilon={priv['epsilon']:.6g} at delta=" in text
    assert "parameters:" in text and "[calibrated]" in text
    assert "cost:" in text and "on this machine" in text
    assert planned["plan"]["cost"]["estimated_seconds"] >= 0
    assert config.SEED_ASSUMPTION in priv["assumptions"]
    assert (
        "within budget, conditional, assuming:" in text
        and "PRNG seed is kept secret" in text
    )
    if source == "sklearn":
        assert planned["problem"]["n"] == 150 and planned["problem"]["dim"] == 2
        assert planned["plan"]["budget"]["max_evaluations"] == 20000

    report = cli.run_config(str(path), output=str(out), seed=5)
    assert report["privacy"]["epsilon"] == priv["epsilon"]
    assert report["privacy"]["assumptions"] == priv["assumptions"]
    assert report["privacy"]["verdict"] == priv["verdict"]
    assert report["privacy"]["stages"] == priv["stages"]
    assert report["plan"]["params"] == planned["plan"]["params"]
    assert report["problem"] == {k: planned["problem"][k] for k in report["problem"]}


def test_dry_run_without_seed(small, capsys):
    planned = _main_json(capsys, "run", "--dry-run", small)
    assert config.SEED_ASSUMPTION not in planned["privacy"]["assumptions"]
    assert "OS entropy" in planned["job"]["rng_key"]


@pytest.mark.slow
@pytest.mark.parametrize(
    "example", sorted((REPO / "examples").glob("*.toml")), ids=lambda p: p.stem
)
def test_every_example_job_has_a_plan(example, monkeypatch, capsys):
    """``--dry-run`` of each example prints its plan and guarantee, reading no data."""
    raw = tomllib.loads(example.read_text())
    with monkeypatch.context() as mp:
        _no_data(mp)
        planned = _main_json(capsys, "run", "--dry-run", example)
    assert planned["job"] == {
        "kind": raw["job"]["kind"],
        "name": raw["job"]["name"],
        "rng_key": planned["job"]["rng_key"],
    }
    assert planned["plan"]["algorithm"] == raw["job"]["name"]
    assert planned["plan"]["params"] and planned["plan"]["cost"]["steps"] >= 1
    priv = planned["privacy"]
    assert priv["within_budget"] and priv["stages"]
    assert priv["epsilon"] <= raw["privacy"]["epsilon"] * (1 + 1e-9)


@pytest.mark.slow
def test_a_source_without_public_shapes_needs_declared_n_and_d():
    """A source that knows n and d only by reading its data is planned after the
    load in a real run, and refused by a dry run unless it declares them."""
    with pytest.raises(ConfigError, match=r"declare \[data\] n and d"):
        config.data_shape({"source": "module", "function": "pkg.mod:make"})
    assert config.data_shape({"source": "module", "n": 30, "d": 4}) == (30, 4)
    cfg = config.resolve_config(tomllib.loads(SMALL_DP_SGD))
    data = datasets.make_classification(jax.random.key(0), 30, 5)
    spec, facts = config.build_spec(cfg, data=data)
    assert (spec.n, spec.dim, facts["n"]) == (30, 5, 30)
    assert spec.with_data(data).n == 30


def make_data(rng_key, n=None, d=None):
    """A ``[data] source = "module"`` function: 50 rows of norm < 1, labels +-1."""
    x = jax.random.uniform(rng_key, (50, 2), minval=-0.5, maxval=0.5)
    return {"x": x, "y": np.where(np.asarray(x[:, 0]) > 0, 1.0, -1.0)}


MODULE_DP_SGD = SMALL_DP_SGD.replace(
    """source = "synthetic"
kind = "classification"
n = 300
d = 3""",
    f"""source = "module"
function = "{__name__}:make_data"
{{sizes}}""",
)


@pytest.mark.slow
def test_a_module_source_is_dry_run_with_declared_shapes_and_run_without(
    tmp_path, capsys
):
    undeclared = _config(tmp_path, MODULE_DP_SGD.format(sizes=""), "a.toml")
    assert cli.main(["run", "--dry-run", str(undeclared)]) == 2
    assert "declare [data] n and d" in capsys.readouterr().err
    # a real run reads the data first, then plans from their public shapes
    report = cli.run_config(str(undeclared), output=str(tmp_path / "a"), seed=2)
    assert (report["problem"]["n"], report["problem"]["dim"]) == (50, 2)
    declared = _config(tmp_path, MODULE_DP_SGD.format(sizes="n = 50\nd = 2"), "b.toml")
    planned = _main_json(capsys, "run", "--dry-run", declared, "--seed", 2)
    again = cli.run_config(str(declared), output=str(tmp_path / "b"), seed=2)
    assert again["privacy"]["epsilon"] == planned["privacy"]["epsilon"]
    assert again["plan"]["params"] == planned["plan"]["params"]
    assert again["released"] == report["released"]


# ----------------------------------------------------------------- the key
@pytest.mark.slow
def test_without_a_seed_the_key_comes_from_os_entropy_and_is_written_nowhere(
    small, tmp_path, monkeypatch
):
    import secrets

    from dpsample.finders import dp_sgd

    drawn = []

    def randbits(k):
        drawn.append(0x5EED5EED + len(drawn))
        return drawn[-1]

    monkeypatch.setattr(secrets, "randbits", randbits)
    out = tmp_path / "out"
    report = cli.run_config(str(small), output=str(out))
    assert len(drawn) == 2  # both words of the threefry key
    key = jax.random.wrap_key_data(np.asarray(drawn, np.uint32))
    problem = config.build_problem(config.resolve_config(tomllib.loads(SMALL_DP_SGD)))
    direct = dp_sgd(
        key, problem[0], epsilon=2.0, delta=1e-5, num_steps=30, batch_size=50
    )
    assert report["released"]["point"] == np.asarray(direct.value).tolist()
    assert "OS entropy" in report["job"]["rng_key"] and "seed" not in report["job"]
    assert config.SEED_ASSUMPTION not in report["privacy"]["assumptions"]
    for name in ("report.json", "config.toml", "released.json"):
        text = (out / name).read_text()
        assert all(str(v) not in text for v in drawn), name
    assert "seed omitted" not in (out / "config.toml").read_text()


@pytest.mark.slow
@pytest.mark.parametrize("where", ["file", "flag"])
def test_a_given_seed_is_an_assumption_and_is_written_nowhere(where, tmp_path, capsys):
    text = SMALL_DP_SGD
    if where == "file":
        text = text.replace("[job]\n", f"[job]\nseed = {SECRET}\n", 1)
        args = []
    else:
        args = ["--seed", str(SECRET)]
    path = _config(tmp_path, text)
    out = tmp_path / "out"
    assert cli.main(["run", str(path), "-o", str(out), *args]) == 0
    printed = capsys.readouterr().out
    assert (
        "within budget, conditional, assuming:" in printed
        and "PRNG seed is kept secret" in (printed)
    )
    report = json.loads((out / "report.json").read_text())
    assert config.SEED_ASSUMPTION in report["privacy"]["assumptions"]
    assert report["privacy"]["verdict"].startswith(
        "within budget, conditional, assuming: "
    )
    assert config.SEED_ASSUMPTION in report["privacy"]["verdict"]
    copied = (out / "config.toml").read_text()
    assert "seed" not in tomllib.loads(copied)["job"] and "seed omitted" in copied
    for name in ("report.json", "config.toml", "released.json"):
        assert str(SECRET) not in (out / name).read_text(), name
    assert str(SECRET) not in printed
    # the same seed given again reproduces the run from the copied configuration
    again = cli.run_config(
        str(out / "config.toml"), output=str(tmp_path / "again"), seed=SECRET
    )
    assert again["released"]["point"] == report["released"]["point"]


@pytest.mark.slow
def test_quickstart_seed_is_an_assumption_and_the_default_key_is_fresh():
    seeded = cli.quickstart(epsilon=1.0, radius=2.0, seed=5)
    total = seeded["privacy"]["total"]
    assert config.SEED_ASSUMPTION in total["assumptions"]
    assert config.SEED_ASSUMPTION in total["verdict"]
    assert seeded["privacy"]["ledger"]["assumptions"] == total["assumptions"]
    fresh = cli.quickstart(epsilon=1.0, radius=2.0)
    assert config.SEED_ASSUMPTION not in fresh["privacy"]["total"]["assumptions"]
    assert "OS entropy" in fresh["run"]["rng_key"]
    assert "seed" not in json.dumps(fresh["run"])


DP_SPIDER_CAPPED = """
[job]
kind = "finder"
name = "dp_spider"

[data]
source = "synthetic"
kind = "classification"
n = 20000
d = 2
seed = 0

[loss]
name = "logistic_nonconvex"
reg = 0.001

[domain]
kind = "ball"
radius = 2.0

[privacy]
epsilon = 1.0
delta = 1e-5
max_evaluations = 2000000
"""


def test_dry_run_prints_the_capped_cost_of_dp_spider(tmp_path, capsys, monkeypatch):
    """Issue 16 item 3: at n = 20,000 the theorem's schedule is over a million steps;
    ``max_evaluations`` caps it, and the dry run prints the cost that will run."""
    path = _config(tmp_path, DP_SPIDER_CAPPED)
    _no_data(monkeypatch)
    assert cli.main(["run", "--dry-run", str(path)]) == 0
    text = capsys.readouterr().out
    assert "cost: " in text and "gradient evaluations" in text
    planned = _main_json(capsys, "run", "--dry-run", path)
    cost = planned["plan"]["cost"]
    assert 0 < cost["gradient_evaluations"] <= 2_000_000
    steps = planned["plan"]["params"]["num_steps"]
    assert "capped at T=" in steps["note"] and steps["value"] == cost["steps"]
