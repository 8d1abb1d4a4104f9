"""The net exponential mechanism's floating-point caveat reaches its reader (issue 11
item 10).

:data:`dpsample.nets.mechanism.FLOAT_CAVEAT` says that the guarantee is for the
ideal mechanism in real arithmetic (docs/sharp_edges.md). The code puts it in the
plan's ``notes``, which ``Plan.to_dict`` (the ``plan`` section of ``report.json`` and
of ``dpsample run --dry-run --json``) and the dry run's text carry. The guarantee
itself does not carry it (its ``assumptions`` are about the inputs, and the
caveat is not one), so these tests check the plan and the report, not the
guarantee.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import jax.numpy as jnp
import pytest

from dpsample import Ball, Budget, Problem, cli
from dpsample.nets import NetExponentialMechanism, PointNet
from dpsample.nets.mechanism import FLOAT_CAVEAT

REPO = Path(__file__).resolve().parents[1]
NET_EXAMPLE = REPO / "examples" / "net_iris.toml"


def _problem(**consts):
    data = {"x": jnp.ones((100, 2)), "y": jnp.ones(100)}
    consts = consts or {"lipschitz": 1.5}
    return Problem(
        lambda x, z: -z["y"] * jnp.dot(z["x"], x), data, Ball(1.0, dim=2), **consts
    )


@pytest.mark.parametrize(
    "options",
    [
        {},  # the theorem's grid, with risk and warm-start bounds
        {"spacing": 0.5},  # a user's grid
        {"net": PointNet(jnp.zeros((3, 2)))},  # a user's points: no covering radius
    ],
    ids=["theorem", "spacing", "points"],
)
def test_every_net_plan_notes_the_float_caveat(options):
    plan = NetExponentialMechanism().plan(_problem().spec, Budget(1.0, 0.0), **options)
    assert FLOAT_CAVEAT in plan.notes
    assert FLOAT_CAVEAT in plan.to_dict()["notes"]  # what report.json writes


def test_the_caveat_is_noted_without_declared_constants():
    """Without a Lipschitz constant (no risk bound) the caveat is still there."""
    plan = NetExponentialMechanism().plan(
        _problem(loss_range=2.0, loss_floor=0.0).spec, Budget(1.0, 0.0)
    )
    assert FLOAT_CAVEAT in plan.notes


def test_the_caveat_is_a_float_caveat():
    assert "float64" in FLOAT_CAVEAT and "docs/sharp_edges.md" in FLOAT_CAVEAT
    assert (REPO / "docs" / "sharp_edges.md").exists()


def _net_example_is_the_net_sampler():
    raw = tomllib.loads(NET_EXAMPLE.read_text())
    return raw["job"] == {"kind": "sampler", "name": "net"}


def test_dry_run_of_the_net_example_shows_the_caveat(capsys):
    assert _net_example_is_the_net_sampler()
    assert cli.main(["run", "--dry-run", str(NET_EXAMPLE)]) == 0
    assert f"note: {FLOAT_CAVEAT}" in capsys.readouterr().out
    assert cli.main(["run", "--dry-run", str(NET_EXAMPLE), "--json"]) == 0
    planned = json.loads(capsys.readouterr().out)
    assert FLOAT_CAVEAT in planned["plan"]["notes"]


@pytest.mark.slow
def test_dpsample_run_of_the_net_example_writes_the_caveat_to_the_report(
    tmp_path, capsys
):
    out = tmp_path / "out"
    assert cli.main(["run", str(NET_EXAMPLE), "-o", str(out)]) == 0
    capsys.readouterr()
    report = json.loads((out / "report.json").read_text())
    assert report["plan"]["algorithm"] == "net"
    assert FLOAT_CAVEAT in report["plan"]["notes"]
