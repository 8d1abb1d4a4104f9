"""Cells: stable names, atomic files, one run isolated from another's failure."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from sweep_hooks import HERE, tiny_spec

from dpsample.validation import load_spec, run_cell
from dpsample.validation.cells import (
    canonical_config,
    cell_key,
    load_records,
    read_record,
    record_path,
    write_record,
)

REPO = Path(__file__).resolve().parents[2]


def _cfg():
    return load_spec(tiny_spec(ns=(40,), seeds=1)).cells()[0].config


def _reversed(obj):
    if isinstance(obj, dict):
        return {k: _reversed(obj[k]) for k in reversed(list(obj))}
    return obj


def test_key_ignores_dict_order_and_output_but_not_values():
    cfg = _cfg()
    key = cell_key(cfg, ["m:f"])
    assert cell_key(_reversed(cfg), ["m:f"]) == key
    assert cell_key({**cfg, "output": {"dir": "elsewhere"}}, ["m:f"]) == key
    assert cell_key(cfg, ["m:g"]) != key
    assert cell_key(cfg, ["m:f"], version="9.9") != key
    changed = json.loads(json.dumps(cfg))
    changed["privacy"]["epsilon"] = 2.0
    assert cell_key(changed, ["m:f"]) != key


def test_key_is_the_same_in_another_process():
    cfg = _cfg()
    code = textwrap.dedent(
        """
        import json, sys
        from dpsample.validation.cells import cell_key
        cfg = json.loads(sys.stdin.read())
        print(cell_key(cfg, ["m:f"]))
        """
    )
    env = dict(os.environ, PYTHONHASHSEED="12345", JAX_PLATFORMS="cpu")
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(REPO), env.get("PYTHONPATH")) if p
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        input=json.dumps(_reversed(cfg)),
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=300,
    )
    assert out.stdout.strip() == cell_key(cfg, ["m:f"])


@pytest.mark.slow
def test_run_cell_records_measurements_guarantee_and_provenance():
    cfg = _cfg()
    rec = run_cell(cfg, ["sweep_hooks:worker_facts"], paths=[HERE])
    assert rec["status"] == "ok", rec.get("error")
    assert rec["key"] == cell_key(cfg, ["sweep_hooks:worker_facts"])
    assert rec["config"] == canonical_config(cfg)
    values = rec["measurements"]["values"]
    assert rec["measurements"]["label"].startswith("NOT PRIVATE")
    assert {"empirical_risk", "gradient_norm", "min_hessian_eigenvalue"} <= set(values)
    assert values["pid"] == os.getpid()
    assert rec["guarantee"]["pure_epsilon"] == 1.0
    assert rec["guarantee"]["relation"]
    assert len(rec["released"]["point"]) == 1
    assert rec["public"]["problem"]["n"] == 40
    assert set(rec["versions"]) == {"dpsample", "jax", "numpy", "python"}
    assert rec["host"] and rec["seconds"] > 0
    json.dumps(rec, allow_nan=False)  # JSON-safe


@pytest.mark.parametrize(
    "measures, error, text",
    [
        (["sweep_hooks:not_a_dict"], "TypeError", "must return a dict"),
        (["sweep_hooks:no_such_hook"], "ConfigError", "no attribute"),
        (["no_such_module_here:f"], "ConfigError", "cannot import"),
    ],
)
def test_a_failing_cell_is_recorded_with_its_traceback(measures, error, text):
    rec = run_cell(_cfg(), measures, paths=[HERE])
    assert rec["status"] == "failed"
    assert rec["error"]["type"] == error
    assert text in rec["error"]["message"]
    assert "Traceback" in rec["error"]["traceback"]
    assert "measurements" not in rec


@pytest.mark.slow
def test_an_assertion_in_a_hook_fails_only_its_cell():
    cells = load_spec(tiny_spec(seeds=1, measures=["sweep_hooks:fail_at_60"])).cells()
    recs = [run_cell(c.config, ["sweep_hooks:fail_at_60"], paths=[HERE]) for c in cells]
    assert [r["status"] for r in recs] == ["ok", "failed"]
    assert recs[1]["error"]["type"] == "AssertionError"
    assert "planted failure at n = 60" in recs[1]["error"]["traceback"]
    assert recs[0]["measurements"]["values"]["n_seen"] == 40


def test_a_finished_file_replaces_the_failure_and_wins_on_read(tmp_path):
    write_record(tmp_path, {"key": "k1", "status": "failed", "error": {}})
    assert load_records(tmp_path)["k1"]["status"] == "failed"
    write_record(tmp_path, {"key": "k1", "status": "ok", "x": 1})
    assert not record_path(tmp_path, "k1", ok=False).exists()
    assert load_records(tmp_path)["k1"] == {"key": "k1", "status": "ok", "x": 1}
    # a failure written later (another process) does not hide the finished file
    write_record(tmp_path, {"key": "k1", "status": "failed", "error": {}})
    assert load_records(tmp_path)["k1"]["status"] == "ok"
    assert load_records(tmp_path, ["other"]) == {}


_WRITER = textwrap.dedent(
    """
    import sys
    from dpsample.validation.cells import write_record
    folder, big = sys.argv[1], "x" * 20_000_000
    i = 0
    while True:
        write_record(folder, {"key": f"k{i}", "status": "ok", "i": i, "pad": big})
        i += 1
    """
)


@pytest.mark.slow
def test_a_kill_during_a_write_leaves_no_partial_cell(tmp_path):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(REPO), env.get("PYTHONPATH")) if p
    )
    proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(tmp_path)], env=env)
    try:
        # kill as soon as the third file (k2) shows up in any form (final or
        # temporary name): its 20 MB are being written
        deadline = time.monotonic() + 120
        while not list(tmp_path.glob("*k2.*")):
            if time.monotonic() > deadline or proc.poll() is not None:
                pytest.fail("the writer made no progress")
            time.sleep(0.002)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait(timeout=60)
    records = load_records(tmp_path)
    finished = sorted(p.name for p in tmp_path.glob("k*.json"))
    assert len(records) == len(finished) >= 2
    assert "k2" not in records  # it was cut short: no file under its name
    for key, rec in records.items():
        assert rec["key"] == key and len(rec["pad"]) == 20_000_000
        assert read_record(record_path(tmp_path, key)) == rec
