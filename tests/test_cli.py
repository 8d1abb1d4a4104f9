"""The dpsample command, run as a user would (subprocess), and its configuration."""

import json
import math
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from dpsample import cli, config
from dpsample.config import ConfigError

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((REPO / "examples").glob("*.toml"))
NET_IRIS = REPO / "examples" / "net_iris.toml"
FILES = ("released.json", "report.json", "config.toml")


def _command():
    """The installed ``dpsample`` script of this interpreter, else ``-m``."""
    script = Path(sys.executable).parent / "dpsample"
    if script.exists() or shutil.which("dpsample", path=str(script.parent)):
        return [str(script)]
    return [sys.executable, "-m", "dpsample.cli"]


def _run(*args, timeout=600):
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(REPO), env.get("PYTHONPATH")) if p
    )
    return subprocess.run(
        [*_command(), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=REPO,
    )


def _edit(tmp_path, source, old, new, name="edited.toml"):
    text = Path(source).read_text()
    assert old in text, old
    path = tmp_path / name
    path.write_text(text.replace(old, new, 1))
    return path


def _check_output_folder(folder, budget):
    assert sorted(p.name for p in folder.iterdir()) == sorted(FILES)
    released = json.loads((folder / "released.json").read_text())
    report = json.loads((folder / "report.json").read_text())
    resolved = tomllib.loads((folder / "config.toml").read_text())
    point = released["point"]
    assert point == report["released"]["point"]
    assert len(point) == report["problem"]["dim"] and all(map(math.isfinite, point))
    priv = report["privacy"]
    assert priv["within_budget"] and priv["epsilon"] <= budget["epsilon"] + 1e-9
    assert priv["delta"] == budget["delta"] and priv["relation"] == "REPLACE_ONE"
    assert priv["routes"] and priv["tightest_route"] in priv["routes"]
    assert "NOT PRIVATE" in report["non_private_diagnostics"]["label"]
    assert resolved["resolved"]["dpsample_version"] == report["dpsample_version"]
    assert set(resolved["resolved"]["constants"]) <= set(config.CONSTANTS)
    # the run's key is written nowhere (whoever knows it can redraw the noise)
    assert "seed" not in report["job"] and "seed" not in resolved["job"]
    return released, report, resolved


# ------------------------------------------------------------- quickstart (process)
@pytest.mark.slow
def test_quickstart_json_report_is_within_budget():
    proc = _run(
        "quickstart", "--json", "--radius", "4", "--epsilon", "2", "--seed", "3"
    )
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout)
    assert set(r) >= {
        "problem",
        "released",
        "privacy",
        "warm_start_bound",
        "stationarity_bound",
        "dispatcher",
        "schedule",
        "non_private_diagnostics",
    }
    for key in ("point", "warm_start"):  # both released, both in the ball
        assert len(r["released"][key]) == r["problem"]["dim"] == 2
        assert math.hypot(*r["released"][key]) <= 4.0 + 1e-9
    priv = r["privacy"]
    assert priv["relation"] == "REPLACE_ONE"
    assert priv["total"]["epsilon"] <= 2.0 and priv["total"]["within_budget"]
    assert priv["stages"]["sampler"]["pure_epsilon"] == pytest.approx(1.0)
    assert priv["stages"]["finder"]["epsilon_at_delta"] <= 1.0 + 1e-9
    stages = [s["name"] for s in priv["ledger"]["stages"]]
    assert len(stages) == 2 and "sampler" in stages[0] and "finder" in stages[1]
    assert priv["ledger"]["spent_epsilon"] <= 2.0 + 1e-9
    psi = r["warm_start_bound"]
    assert psi["psi"] == pytest.approx(
        psi["covering_term"] + psi["tail_term"] + psi["minimizer_gap"]
    )
    assert 0 < psi["failure_prob"] < 1
    assert r["stationarity_bound"]["warm_start"] > 0
    assert isinstance(r["dispatcher"]["warm_start"], bool)
    diag = r["non_private_diagnostics"]
    assert "NOT PRIVATE" in diag["label"]
    for point in ("warm_start", "output"):
        assert 0.0 <= diag[point]["training_accuracy"] <= 1.0
        assert diag[point]["gradient_norm"] >= 0.0
        assert set(diag[point]) >= {"empirical_risk", "min_hessian_eigenvalue"}
    assert diag["gap_over_net_minimum"] >= -1e-12


@pytest.mark.slow
def test_quickstart_human_output_has_every_section():
    proc = _run("quickstart")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for section in (
        "RELEASED POINT",
        "PRIVACY (REPLACE_ONE neighbours)",
        "TOTAL    epsilon =",
        "ledger",
        "WARM-START BOUND",
        "STATIONARITY BOUND",
        "dispatcher:",
        "NON-PRIVATE DIAGNOSTICS",
        "smallest Hessian eigenvalue",
        "training accuracy",
    ):
        assert section in out, section


# -------------------------------------------------------------------- run (process)
@pytest.mark.slow
def test_run_writes_the_folder_refuses_it_and_overwrite_replaces_it(tmp_path):
    # one first run serves both checks (it was two tests, each with its own run)
    out = tmp_path / "net"
    first = _run("run", NET_IRIS, "-o", out, "--seed", "12345")
    assert first.returncode == 0, first.stderr
    released, report, resolved = _check_output_folder(
        out, {"epsilon": 2.0, "delta": 1e-6}
    )
    assert report["privacy"]["pure_epsilon"] == pytest.approx(2.0)
    assert resolved["output"]["dir"] == str(out)
    before = {f: (out / f).read_bytes() for f in FILES}

    # without --overwrite the folder is refused and left as it was
    again = _run("run", NET_IRIS, "--output", out)
    assert again.returncode == 2
    assert "already exists" in again.stderr and "--overwrite" in again.stderr
    assert "Traceback" not in again.stderr
    assert {f: (out / f).read_bytes() for f in FILES} == before
    assert sorted(p.name for p in out.parent.iterdir()) == ["net"]  # no temp left

    point = released["point"]
    (out / "stale.txt").write_text("from an earlier run")
    # The written config.toml is itself a valid configuration; the seed is not in
    # it (a comment says so): given again, it reproduces the point.
    copy = tmp_path / "copy.toml"
    shutil.copy(out / "config.toml", copy)
    assert "seed omitted" in copy.read_text()
    assert "seed" not in tomllib.loads(copy.read_text())["job"]
    second = _run("run", copy, "--overwrite", "--seed", "12345")  # [output] dir: out
    assert second.returncode == 0, second.stderr
    assert sorted(p.name for p in out.iterdir()) == sorted(FILES)
    assert json.loads((out / "released.json").read_text())["point"] == point
    third = _run("run", copy, "--overwrite", "--seed", "54321", "--json")
    assert third.returncode == 0, third.stderr
    report = json.loads(third.stdout)
    assert "seed" not in report["job"]
    assert config.SEED_ASSUMPTION in report["privacy"]["assumptions"]
    assert json.loads((out / "released.json").read_text())["point"] != point
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copy.toml", "net"]


# Every example config runs through `dpsample run` (printed output, folder, resolved
# config): tests/test_report_privacy.py::test_every_example_config_runs, on the runs its
# privacy checks make anyway (the same command in process); the installed script
# itself is run above and below (net_iris).


def test_examples_exist():
    assert len(EXAMPLES) >= 3
    kinds = {tomllib.loads(p.read_text())["job"]["kind"] for p in EXAMPLES}
    assert kinds == {"pipeline", "sampler", "finder"}


# ---------------------------------------------------------- errors (process, exit 2)
@pytest.mark.slow
@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ('name = "iris"', 'name = "mnist"', ["'mnist'", "'breast_cancer'", "'wine'"]),
        ('name = "sigmoid"', 'name = "hinge"', ["'hinge'", "'tukey_biweight'"]),
        ('name = "net"', 'name = "mcmc"', ["'mcmc'", "'net'", "'gibbs'"]),
        ("epsilon = 2.0", "epsilon = 0.0", ["epsilon", "> 0"]),
    ],
    ids=["dataset", "loss", "sampler", "epsilon0"],
)
def test_bad_configs_exit_2_with_the_choices(tmp_path, old, new, expected):
    path = _edit(tmp_path, NET_IRIS, old, new)
    proc = _run("run", path, "--output", tmp_path / "out")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("dpsample: error: ")
    assert "Traceback" not in proc.stderr
    for text in expected:
        assert text in proc.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("quickstart", "--epsilon", "0"), "finite number > 0"),
        (("quickstart", "--epsilon", "0.001"), "failure_prob"),  # infeasible budget
    ],
)
def test_bad_arguments_fail_cleanly(args, expected):
    proc = _run(*args)
    assert proc.returncode == 2
    assert proc.stderr.startswith("usage: dpsample") or proc.stderr.startswith(
        "dpsample: error: "
    )
    assert "error:" in proc.stderr and expected in proc.stderr
    assert "Traceback" not in proc.stderr


# -------------------------------------------------------------- in-process checks
@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("quickstart", "--epsilon", "-1"), "finite number > 0"),
        (("quickstart", "--epsilon", "nan"), "finite number > 0"),
        (("quickstart", "--delta", "1.5"), "(0, 1)"),
        (("quickstart", "--radius", "abc"), "expected a number"),
        (("nonsense",), "invalid choice"),
        (("run",), "CONFIG.toml"),
        (("run", "missing.toml"), "'missing.toml' not found"),
    ],
)
def test_main_usage_errors_exit_2(args, expected, capsys):
    try:
        status = cli.main(list(args))
    except SystemExit as exc:  # argparse's own usage errors
        status = exc.code
    assert status == 2
    err = capsys.readouterr().err
    assert "error: " in err and expected in err and "Traceback" not in err


def _net_config(**sections):
    raw = tomllib.loads(NET_IRIS.read_text())
    for name, body in sections.items():
        raw[name] = body if body is None else raw.get(name, {}) | body
    return {k: v for k, v in raw.items() if v is not None}


@pytest.mark.parametrize(
    ("sections", "expected"),
    [
        ({"job": {"kind": "optimizer"}}, "valid choices: 'sampler', 'finder'"),
        ({"job": {"seed": 1.5}}, "[job] seed must be an integer"),
        ({"job": {"seed": True}}, "[job] seed must be an integer"),
        ({"job": {"colour": "red"}}, "unknown key 'colour' in [job]"),
        ({"data": None}, "missing section [data]"),
        ({"data": {"source": "web"}}, "valid choices: 'sklearn', 'synthetic'"),
        ({"data": {"features": []}}, "[data] features"),
        ({"loss": {"name": 3}}, "[loss] name must be a string"),
        ({"loss": {"lipschitz": -1.0}}, "[loss] lipschitz must be a finite number > 0"),
        ({"loss": {"c": 2.0}}, "unknown key 'c' in [loss]"),
        ({"loss": {"label_bound": -1.0}}, "[loss] label_bound must be >= 0"),
        ({"domain": {"kind": "unconstrained"}}, "unknown key 'radius' in [domain]"),
        ({"domain": {"radius": "big"}}, "[domain] radius must be a number"),
        ({"privacy": {"delta": 1.0}}, "[privacy] delta must lie in (0, 1)"),
        ({"privacy": {"epsilon": math.inf}}, "finite number > 0"),
        ({"options": {"spacings": 0.1}}, "valid options: net, spacing"),
        ({"options": {"epsilon": 3.0}}, "set it in [privacy]"),
        ({"output": {"overwrite": "yes"}}, "[output] overwrite must be a boolean"),
        ({"extra": {}}, "unknown section [extra]"),
    ],
)
def test_resolve_config_names_the_bad_key(sections, expected):
    raw = _net_config(**sections)
    with pytest.raises(ConfigError) as err:
        config.resolve_config(raw)
    assert expected in str(err.value)


def test_options_checked_against_the_function():
    finder = {
        "job": {"kind": "finder", "name": "goldstein_zero_order"},
        "data": {"source": "synthetic", "kind": "classification", "n": 50, "d": 2},
        "loss": {"name": "sigmoid"},
        "domain": {"kind": "unconstrained"},
        "privacy": {"epsilon": 1.0, "delta": 1e-6},
    }
    # alpha has a default since issue 16 (default_alpha): no longer required
    assert config.resolve_config(finder)["options"] == {}
    with pytest.raises(ConfigError, match="alpha must be a number"):
        config.resolve_config(finder | {"options": {"alpha": "big"}})
    assert config.resolve_config(finder | {"options": {"alpha": 0.1}})["options"] == {
        "alpha": 0.1
    }
    pipeline = finder | {"job": {"kind": "pipeline", "name": "warm_start"}}
    from dpsample.config import jobs

    for option in ("sampler", "finder"):
        names = jobs.stage_names(option)
        with pytest.raises(ConfigError) as err:
            config.resolve_config(pipeline | {"options": {option: "nope"}})
        assert all(repr(n) in str(err.value) for n in names)
        ok = config.resolve_config(pipeline | {"options": {option: names[0]}})
        assert ok["options"][option] == names[0]


@pytest.mark.slow
def test_declared_constants_override_derived_ones():
    raw = _net_config(loss={"lipschitz": 0.75})
    problem, facts = config.build_problem(config.resolve_config(raw))
    assert problem.lipschitz == 0.75 and facts["constant_sources"]["lipschitz"] == (
        "declared"
    )
    assert facts["constant_sources"]["smoothness"] == "derived"
    assert facts["assumptions"]["radius"] == 4.0  # the ball's largest norm
    with pytest.raises(ConfigError, match="below the domain's largest norm"):
        config.build_problem(config.resolve_config(_net_config(loss={"radius": 1.0})))
    with pytest.raises(ConfigError, match="feature_bound"):
        config.build_problem(
            config.resolve_config(_net_config(data={"normalize_rows": False}))
        )
    raw = _net_config(loss={"name": "squared"})
    raw["data"] = {"source": "synthetic", "kind": "regression", "n": 20, "d": 2}
    with pytest.raises(ConfigError, match="label_bound"):
        config.build_problem(config.resolve_config(raw))
    raw["loss"]["label_bound"] = 3.0
    problem, facts = config.build_problem(config.resolve_config(raw))
    assert facts["assumptions"]["label_bound"] == 3.0 and problem.n == 20


@pytest.mark.slow
def test_failed_write_leaves_no_folder(tmp_path, monkeypatch):
    def boom(doc, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(config, "to_toml", boom)
    out = tmp_path / "out"
    with pytest.raises(RuntimeError, match="disk full"):
        cli.run_config(str(NET_IRIS), output=str(out))
    assert list(tmp_path.iterdir()) == []


def test_main_reports_library_errors_without_traceback(tmp_path, capsys):
    path = _edit(tmp_path, NET_IRIS, "spacing = 0.1", "spacing = 0.1\nmax_points = 10")
    assert cli.main(["run", str(path), "-o", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("dpsample: error: ") and "max_points" in err
    assert not (tmp_path / "o").exists()


def test_toml_round_trip_and_jsonable():
    doc = {
        "job": {"kind": "finder", "name": "dp_sgd", "seed": 0},
        "options": {"x0": [0.0, 1.5], "finder_options": {"num_steps": 3}},
        "resolved": {"odd key": 'quote " and \\ and é', "big": math.inf, "no": None},
    }
    back = tomllib.loads(config.to_toml(doc))
    assert back["options"] == doc["options"] and back["job"] == doc["job"]
    assert back["resolved"] == {"odd key": 'quote " and \\ and é', "big": math.inf}
    import numpy as np

    from dpsample.privacy import PrivacyGuarantee

    g = PrivacyGuarantee.exponential_mechanism(0.5)
    safe = config.jsonable({"g": g, "a": np.ones(2), "t": (1, math.nan)}, delta=1e-6)
    json.dumps(safe, allow_nan=False)
    assert safe["g"]["pure_epsilon"] == 0.5 and safe["g"]["epsilon"] <= 0.5
    assert safe["a"] == [1.0, 1.0] and safe["t"] == [1, "nan"]


def test_sampler_domain_table_becomes_a_ball():
    raw = tomllib.loads(
        (REPO / "examples" / "warm_start_sosp_breast_cancer.toml").read_text()
    )
    bad = raw | {
        "options": raw["options"] | {"sampler_domain": {"radius": 8.0, "r": 1}}
    }
    with pytest.raises(ConfigError, match="sampler_domain"):
        config.execute(config.resolve_config(bad), diagnostics=False)
    no_radius = raw | {"options": raw["options"] | {"sampler_domain": {}}}
    with pytest.raises(ConfigError, match="radius"):
        config.execute(config.resolve_config(no_radius), diagnostics=False)
