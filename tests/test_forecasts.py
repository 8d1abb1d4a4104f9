"""Forecasts hold within 2x of the measured first run, on every example config.

One fresh process plans each ``examples/*.toml`` (in name order), forecasts the run
(:meth:`~dpsample.plan.Plan.estimated_seconds`, compilation included), runs it and
reads the run's measured wall time from its report, back to back, so the forecast's
reference timings and the run see the same machine load.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = """
import glob, json, sys
from dpsample.config import execute, load_config, plan_config, resolve_config
for path in sorted(glob.glob("examples/*.toml")):
    cfg = resolve_config(load_config(path))
    cfg["job"]["seed"] = 0
    forecast = plan_config(cfg).plan.estimated_seconds()
    measured = execute(cfg, diagnostics=False).report["seconds"]
    print(json.dumps([path, forecast, measured]), flush=True)
"""


@pytest.mark.slow
def test_forecasts_are_within_2x_of_the_first_run():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=1800,
    ).stdout
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("[")]
    assert len(rows) == len(list((ROOT / "examples").glob("*.toml"))) > 0
    off = [
        (path, round(f, 2), round(m, 2))
        for path, f, m in rows
        if not 0.5 <= f / m <= 2.0
    ]
    assert not off, f"forecasts off by more than 2x (path, forecast, measured): {off}"
