"""The dpsample command, run as a user would (subprocess)."""

import json
import os
import subprocess
import sys

import pytest


def _run(*args, timeout=300):
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    return subprocess.run(
        [sys.executable, "-m", "dpsample.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def test_quickstart_json_report_is_consistent():
    proc = _run("quickstart", "--json", "--radius", "4", "--epsilon", "2")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    x = report["released"]["point"]
    assert len(x) == report["problem"]["dim"] == 2
    assert sum(v * v for v in x) <= 4.0**2 + 1e-9  # inside the ball
    priv = report["privacy"]
    assert priv["pure_epsilon"] == pytest.approx(2.0)
    assert priv["relation"] == "REPLACE_ONE"
    assert priv["epsilon_at_delta"] <= 2.0
    risk = report["risk (NON-PRIVATE diagnostic)"]
    assert risk["excess_empirical_risk"] >= -1e-12
    assert risk["min_empirical_risk_over_net"] <= risk["empirical_risk_at_centre"]
    bound = report["bound"]
    assert bound["total"] == pytest.approx(
        bound["covering_term"] + bound["exponential_mechanism_term"]
    )
    assert report["run"]["net_size"] > 100


def test_quickstart_human_output_labels_diagnostics():
    proc = _run("quickstart", "--radius", "2")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "RELEASED POINT" in out
    assert "NON-PRIVATE DIAGNOSTIC" in out
    assert "pure epsilon-DP" in out
    assert "THEOREM BOUND" in out


@pytest.mark.parametrize(
    "args",
    [
        ("quickstart", "--epsilon", "0"),
        ("quickstart", "--epsilon", "-1"),
        ("quickstart", "--delta", "1.5"),
        ("nonsense",),
    ],
)
def test_bad_arguments_fail_cleanly(args):
    proc = _run(*args, timeout=120)
    assert proc.returncode == 2
    assert "error" in proc.stderr.lower()
