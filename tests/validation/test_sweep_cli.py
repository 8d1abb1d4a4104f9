"""`dpsample sweep`: the demo's smoke grid as a user runs it; dry run, failures."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from sweep_hooks import HERE

from dpsample import cli
from dpsample.config import to_toml

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "experiments" / "sweep_demo.toml"


def _command():
    script = Path(sys.executable).parent / "dpsample"
    if script.exists() or shutil.which("dpsample", path=str(script.parent)):
        return [str(script)]
    return [sys.executable, "-m", "dpsample.cli"]


def _sweep(*args, timeout=600):
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(REPO), env.get("PYTHONPATH")) if p
    )
    return subprocess.run(
        [*_command(), "sweep", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=REPO,
    )


def _main(capsys, monkeypatch, *args):
    """``dpsample sweep ...`` in this process: (status, stdout, stderr)."""
    monkeypatch.setattr(sys, "path", list(sys.path))  # main() may add the cwd
    status = cli.main(["sweep", *map(str, args)])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_dry_run_lists_the_cells_and_runs_nothing(tmp_path, capsys, monkeypatch):
    status, out, err = _main(
        capsys, monkeypatch, DEMO, "--out", tmp_path / "out", "--smoke", "--dry-run"
    )
    assert status == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("dpsample sweep sweep_demo (smoke grid): 4 cells")
    assert "by the plans' forecasts" in lines[1] and "no cell" in lines[1]
    assert sum(line.startswith("  to run") for line in lines) == 4
    assert not (tmp_path / "out").exists()


def test_out_defaults_to_the_results_folder_beside_the_spec(capsys, monkeypatch):
    """Without --out: experiments/results/NAME (full), runs/NAME_smoke (smoke)."""
    monkeypatch.chdir(REPO)
    for flags, folder in (
        ((), os.path.join("experiments", "results", "sweep_demo")),
        (("--smoke",), os.path.join("runs", "sweep_demo_smoke")),
    ):
        status, _, err = _main(
            capsys, monkeypatch, "experiments/sweep_demo.toml", *flags, "--dry-run"
        )
        assert status == 0, err
        assert f"writing to {folder}" in err


@pytest.mark.slow
def test_demo_smoke_grid_runs_and_a_second_run_skips_it(tmp_path):
    out = tmp_path / "out"
    res = _sweep(DEMO, "--out", out, "--smoke", "--workers", "0")
    assert res.returncode == 0, res.stderr
    assert "4 cells (4 run now, 0 already done), 0 failed" in res.stdout
    summary = pd.read_csv(out / "summary.csv")
    assert set(summary["prediction"]) == {
        "empirical_risk_vs_n",
        "empirical_risk_vs_epsilon",
        "population_risk",
    }
    assert summary["holds"].all()  # Theorem 5.8's bounds are far above these risks
    assert (out / "report.md").exists() and list((out / "figures").glob("*.png"))
    res = _sweep(DEMO, "--out", out, "--smoke", "--workers", "0")
    assert res.returncode == 0, res.stderr
    assert "(0 run now, 4 already done)" in res.stdout


def test_failed_cells_give_exit_status_3_and_are_named(tmp_path, capsys, monkeypatch):
    spec = tmp_path / "failing.toml"
    doc = {
        "experiment": {
            "name": "failing",
            "seeds": 1,
            "measure": ["sweep_hooks:fail_at_60"],
            "pythonpath": [HERE],
        },
        "config": {
            "job": {"kind": "sampler", "name": "net"},
            "data": {"source": "synthetic", "kind": "classification", "n": 40, "d": 1},
            "loss": {"name": "sigmoid"},
            "domain": {"kind": "ball", "radius": 1.0},
            "privacy": {"epsilon": 1.0, "delta": 1e-6},
        },
    }
    spec.write_text(to_toml(doc) + '[[grid]]\n"data.n" = [40, 60]\n')
    out = tmp_path / "out"
    status, _, err = _main(capsys, monkeypatch, spec, "--out", out, "--workers", "0")
    assert status == 3, err
    assert "1 cell(s) failed" in err
    failed = list((out / "cells").glob("*.failed.json"))
    assert len(failed) == 1
    assert f"{failed[0]}: AssertionError: planted failure at n = 60" in err
    status, text, _ = _main(
        capsys, monkeypatch, spec, "--out", out, "--dry-run", "--skip-failed"
    )
    assert status == 0
    assert "1 done, 1 failed, 0 to run" in text
    assert "cost: 0 cells" in text


def test_a_bad_spec_is_a_usage_error(tmp_path, capsys, monkeypatch):
    spec = tmp_path / "bad.toml"
    spec.write_text('[experiment]\nname = "bad"\n[[grid]]\n"data.n" = [1]\n')
    status, _, err = _main(capsys, monkeypatch, spec, "--out", tmp_path / "out")
    assert status == 2
    assert err.startswith("dpsample: error: ")
    assert "no base configuration" in err
