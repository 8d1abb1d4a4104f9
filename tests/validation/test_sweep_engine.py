"""The engine: outputs, resume, failures, interruption, progress, a LocalCluster."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import dask
import distributed  # noqa: F401  (loads the distributed.* config keys)
import pandas as pd
import pytest
from sweep_hooks import tiny_spec

from dpsample import progress
from dpsample.validation import load_records, plan_sweep, run_sweep, sweep
from dpsample.validation.tables import SLOPE_COLUMNS, SUMMARY_COLUMNS

REPO = Path(__file__).resolve().parents[2]


def _mtimes(folder):
    return {p.name: p.stat().st_mtime_ns for p in (folder / "cells").iterdir()}


def test_sweep_writes_every_output_and_a_second_run_skips_finished_cells(tmp_path):
    out = tmp_path / "sweep"
    first = run_sweep(tiny_spec(), out, workers=0)
    assert (first.cells, first.ran, first.skipped, first.failed) == (4, 4, 0, {})
    assert len(list((out / "cells").glob("*.json"))) == 4
    summary = pd.read_csv(out / "summary.csv")
    assert tuple(summary.columns[: len(SUMMARY_COLUMNS)]) == SUMMARY_COLUMNS
    assert summary["n"].tolist() == [40, 60] and summary["seeds"].tolist() == [2, 2]
    assert summary["label"].str.startswith("NOT PRIVATE").all()
    slopes = pd.read_csv(out / "slopes.csv")
    assert tuple(slopes.columns[: len(SLOPE_COLUMNS)]) == SLOPE_COLUMNS
    assert slopes["variable"].tolist() == ["n"]
    figure = out / "figures" / "grad__n.png"
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    report = (out / "report.md").read_text()
    for text in ("## Reading", "## Summary", "## Slopes", "figures/grad__n.png"):
        assert text in report
    assert "NOT PRIVATE" in report
    assert "- wall time: " in report and "s for this invocation" in report
    assert "from the first cell's start to the last's finish" in report

    before = _mtimes(out)
    again = run_sweep(tiny_spec(), out, workers=0)
    assert (again.ran, again.skipped) == (0, 4)
    assert _mtimes(out) == before  # nothing rewritten
    pd.testing.assert_frame_equal(again.summary, first.summary)

    more = run_sweep(tiny_spec(seeds=3), out, workers=0)  # one more seed per point
    assert (more.cells, more.ran, more.skipped) == (6, 2, 4)


def test_a_failing_cell_is_isolated_reported_and_retried(tmp_path):
    spec = tiny_spec(measures=["sweep_hooks:fail_at_60"])
    out = run_sweep(spec, tmp_path, workers=0)
    assert out.ran == 4 and len(out.failed) == 2
    records = load_records(tmp_path / "cells")
    failed = {k for k, r in records.items() if r["status"] == "failed"}
    assert failed == set(out.failed)
    assert all(
        records[k]["config"]["data"]["n"] == 60
        and "planted failure" in records[k]["error"]["traceback"]
        for k in failed
    )
    assert sorted(p.name for p in (tmp_path / "cells").glob("*.failed.json")) == sorted(
        f"{k}.failed.json" for k in failed
    )
    row40, row60 = out.summary.to_dict(orient="records")
    assert (row40["seeds"], row40["failed"]) == (2, 0)
    assert (row60["seeds"], row60["failed"]) == (0, 2)
    assert "cell(s) failed" in (tmp_path / "report.md").read_text()
    # the same sweep again retries the failed cells only, unless told not to
    assert run_sweep(spec, tmp_path, workers=0).ran == 2
    assert run_sweep(spec, tmp_path, workers=0, retry_failed=False).ran == 0
    table = sweep(spec, out=tmp_path, workers=0, retry_failed=False)
    assert set(table.attrs["failed"]) == failed
    assert all(v.startswith("AssertionError") for v in table.attrs["failed"].values())


def test_an_interrupted_sweep_keeps_finished_cells_and_resumes(tmp_path, monkeypatch):
    calls = []

    def interrupt_on_third(cfg, measures, *, key, paths):
        calls.append(key)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(cfg, measures, key=key, paths=paths)

    from dpsample.validation import engine

    real = engine.run_cell
    monkeypatch.setattr(engine, "run_cell", interrupt_on_third)
    with pytest.raises(KeyboardInterrupt):
        run_sweep(tiny_spec(), tmp_path, workers=0)
    assert len(load_records(tmp_path / "cells")) == 2
    assert not (tmp_path / "summary.csv").exists()
    monkeypatch.setattr(engine, "run_cell", real)
    resumed = run_sweep(tiny_spec(), tmp_path, workers=0)
    assert (resumed.ran, resumed.skipped, resumed.failed) == (2, 2, {})
    assert set(load_records(tmp_path / "cells")) == set(calls[:2]) | {
        c.key for c in plan_sweep(tiny_spec(), tmp_path).cells
    }


def test_dry_run_plan_and_cost_estimate(tmp_path):
    plan = plan_sweep(tiny_spec(), tmp_path, workers=2)
    assert (len(plan.cells), len(plan.todo), plan.estimate_seconds) == (4, 4, None)
    # before any cell has run, the dry run forecasts from the plans (issue 13):
    # one plan per grid point, its seeds sharing it
    from dpsample.config import plan_config

    fresh = plan_sweep(tiny_spec(), tmp_path, workers=2, forecast=True)
    assert fresh.estimate_source == "plans" and fresh.unplanned == 0
    by_n = {
        c.axes["data.n"]: plan_config(c.config).plan.estimated_seconds()
        for c in fresh.todo
    }
    assert fresh.estimate_seconds == pytest.approx(2 * sum(by_n.values()))
    assert fresh.estimate_seconds > 0
    run_sweep(tiny_spec(ns=(40,)), tmp_path, workers=0)
    plan = plan_sweep(tiny_spec(ns=(40, 60, 80)), tmp_path, workers=2)
    assert (len(plan.done), len(plan.todo)) == (2, 4)
    records = load_records(tmp_path / "cells")
    mean = sum(r["seconds"] for r in records.values()) / 2
    assert plan.seconds_per_cell == pytest.approx(mean)
    assert plan.estimate_seconds == pytest.approx(4 * mean)
    assert plan.estimate_source == "timed cells"
    assert plan.estimate_wall_seconds == pytest.approx(2 * mean)
    # seeds of one grid point are submitted one after another (shared shapes)
    assert [c.axes["data.n"] for c in plan.todo] == sorted(
        c.axes["data.n"] for c in plan.todo
    )


@pytest.mark.slow  # four small sweeps: about 9 s
def test_progress_reaches_the_sweep_as_lines_without_a_terminal(
    tmp_path, monkeypatch, capsys
):
    # Before issue 28: without a terminal the sweep printed nothing until it ended,
    # whatever DPSAMPLE_PROGRESS said. Now the setting reaches it, and a log gets
    # plain lines as the cells finish (here one per cell: LINE_SECONDS = 0).
    monkeypatch.setattr(progress, "LINE_SECONDS", 0.0)
    monkeypatch.setenv(progress.ENV_VAR, "1")
    run_sweep(tiny_spec(ns=(40,)), tmp_path / "a", workers=0)
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith("sweep: ")]
    assert [ln.split(",")[0] for ln in lines] == [
        "sweep: 0/2 cells",
        "sweep: 1/2 cells",
        "sweep: 2/2 cells",
    ]
    assert lines[0].endswith("ETA --") and lines[1].endswith("ETA --")
    assert lines[-1].endswith("ETA 0s") and "\r" not in err
    monkeypatch.setenv(progress.ENV_VAR, "0")
    run_sweep(tiny_spec(ns=(40,)), tmp_path / "b", workers=0)
    assert "sweep: " not in capsys.readouterr().err  # off: quiet
    run_sweep(tiny_spec(ns=(40,)), tmp_path / "c", workers=0, progress=True)
    assert "sweep: 2/2 cells" in capsys.readouterr().err  # the argument wins
    run_sweep(tiny_spec(ns=(40,)), tmp_path / "c", workers=0, progress=True)
    assert "sweep: " not in capsys.readouterr().err  # nothing to run: no display


@pytest.mark.slow
def test_on_a_local_cluster_cells_run_in_spawned_single_threaded_workers(tmp_path):
    environ = dict(os.environ)
    method = dask.config.get("distributed.worker.multiprocessing-method")
    pre_spawn = dask.config.get("distributed.nanny.pre-spawn-environ")
    spec = tiny_spec(ns=(40,), measures=["sweep_hooks:worker_facts"])
    out = run_sweep(spec, tmp_path, workers=2)
    assert out.ran == 2 and out.failed == {}
    records = load_records(tmp_path / "cells")
    assert len(records) == 2
    for rec in records.values():
        facts = rec["measurements"]["values"]
        assert facts["pid"] != os.getpid() and rec["pid"] == facts["pid"]
        assert facts["xla_single_thread"] == 1.0 and facts["jax_on_cpu"] == 1.0
        assert facts["one_core"] == 1.0  # pinned: XLA's pool follows the affinity
        assert facts["pytest_imported"] == 0.0  # spawned, not forked
        assert facts["malloc_trim_unset"] == float(
            "MALLOC_TRIM_THRESHOLD_" not in environ
        )
    # the cluster's settings were scoped: nothing leaks into this process
    assert dict(os.environ) == environ
    assert dask.config.get("distributed.worker.multiprocessing-method") == method
    assert dask.config.get("distributed.nanny.pre-spawn-environ") == pre_spawn


@pytest.mark.slow
def test_a_second_local_cluster_on_the_machine_does_not_warn(tmp_path):
    # Another sweep (or any server) already holds distributed's default HTTP port:
    # the embedded cluster must not fall back from it with a warning (pytest turns
    # warnings into errors, so two sweeps on two pytest workers used to collide).
    import socket
    import warnings

    holder = socket.socket()
    try:
        holder.bind(("127.0.0.1", 8787))
        holder.listen()
    except OSError:  # already held by something else: the same situation
        pass
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            out = run_sweep(tiny_spec(ns=(40,)), tmp_path, workers=1)
    finally:
        holder.close()
    assert out.ran == out.cells and out.failed == {}


_SNAPSHOT = textwrap.dedent(
    """
    import json, multiprocessing, os, sys
    import dask, dpsample, jax
    def snap():
        import matplotlib
        return {
            "environ": dict(os.environ),
            "dask": json.dumps(dask.config.config, sort_keys=True, default=repr),
            "start": multiprocessing.get_start_method(allow_none=True),
            "backend": matplotlib.rcParams._get_backend_or_none(),
            "x64": jax.config.jax_enable_x64,
            "pyplot": "matplotlib.pyplot" in sys.modules,
            "path": list(sys.path),
        }
    before = snap()
    import dpsample.validation
    from dpsample.validation import cells, engine, figures, report, spec, tables
    after = snap()
    print(json.dumps({k: before[k] == after[k] for k in before}))
    """
)


@pytest.mark.slow
def test_importing_the_validation_package_changes_no_global_state():
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(REPO), env.get("PYTHONPATH")) if p
    )
    res = subprocess.run(
        [sys.executable, "-c", _SNAPSHOT],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=True,
    )
    same = json.loads(res.stdout.strip().splitlines()[-1])
    assert all(same.values()), same


@pytest.mark.slow
def test_cells_of_the_same_shapes_reuse_the_compilation(tmp_path):
    """In one worker, a second cell of the same shapes (another seed and data)
    compiles nothing (XLA backend compilations counted by jax.monitoring); a cell
    with another n compiles again (the counter is live)."""
    import sweep_hooks

    spec = tiny_spec(
        name="reuse", ns=(40, 60), seeds=2, measures=["sweep_hooks:compiles"]
    )
    spec["config"]["job"] = {"kind": "finder", "name": "dp_sgd"}
    spec["config"]["options"] = {"num_steps": 3, "batch_size": 8}
    sweep_hooks.listen_to_compiles()
    run_sweep(spec, tmp_path, workers=0)  # cells in order, in this process
    records = sorted(
        load_records(tmp_path / "cells").values(), key=lambda r: r["started"]
    )
    counts = [
        (r["config"]["data"]["n"], r["measurements"]["values"]["compiles"])
        for r in records
    ]
    assert [n for n, _ in counts] == [40, 40, 60, 60]
    (_, first), (_, second), (_, third), (_, fourth) = counts
    assert first > 0  # the counter sees the cell's compilations
    assert second == first  # same shapes: nothing compiled again
    assert third > second  # another n: compiled again (power)
    assert fourth == third


def test_outputs_without_comparisons_remove_an_earlier_comparisons_csv(tmp_path):
    """Issue 26's leftover: a spec that no longer declares comparisons leaves no
    stale ``comparisons.csv`` (no cell runs: ``records={}``, every cell missing)."""
    from dpsample.validation import load_spec, write_outputs

    arms = [
        {"label": "a", "where": {"algorithm": ["net"]}},
        {"label": "b", "where": {"algorithm": ["net"]}},
    ]
    paired = {"name": "c", "measurement": "gradient_norm", "by": ["n"], "arms": arms}
    base = tiny_spec(ns=(40,), seeds=1)
    table = tmp_path / "comparisons.csv"
    write_outputs(load_spec({**base, "comparison": [paired]}), tmp_path, records={})
    assert table.is_file()  # power: a spec with comparisons writes the table
    write_outputs(load_spec(base), tmp_path, records={})
    assert not table.exists()
    assert (tmp_path / "summary.csv").is_file()
