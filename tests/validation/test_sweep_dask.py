"""`dpsample sweep --address` on a real cluster: `dask scheduler` + two `dask worker`.

One worker is killed (SIGKILL to its process group: nanny and worker, as when a node
dies) while cells are in flight; the scheduler reruns its cells on the other worker
and every cell ends with exactly one result.
"""

import json
import os
import signal
import time
from pathlib import Path

import pytest
from dask_procs import BIN, free_port, scheduler, start, stop, worker
from sweep_hooks import HERE

from dpsample.config import to_toml
from dpsample.validation import load_spec
from dpsample.validation.engine import worker_environment

REPO = Path(__file__).resolve().parents[2]


def _env(**extra):
    env = dict(os.environ, **worker_environment(), **extra)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(REPO), HERE, env.get("PYTHONPATH")) if p
    )
    return env


def _spec_file(tmp_path):
    doc = {
        "experiment": {
            "name": "killed_worker",
            "seeds": 2,
            "measure": ["sweep_hooks:slow"],
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
    text = to_toml(doc) + '[[grid]]\n"data.n" = [40, 50, 60, 70, 80]\n'
    path = tmp_path / "spec.toml"
    path.write_text(text)
    return path


@pytest.mark.slow
def test_sweep_on_a_cluster_survives_a_killed_worker(tmp_path):
    from distributed import Client

    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    env = _env(DPSAMPLE_TEST_CELL_SLEEP="1.5")
    procs = []
    log = open(tmp_path / "cluster.log", "w")  # noqa: SIM115
    try:
        procs.append(scheduler(port, env, log, REPO))
        for name in ("w1", "w2"):
            procs.append(worker(address, tmp_path / "dask", env, log, REPO, name))
        with Client(address, timeout=120) as client:
            client.wait_for_workers(2, timeout=180)
            w1 = next(
                addr
                for addr, w in client.scheduler_info()["workers"].items()
                if w["name"] == "w1"
            )
            spec = _spec_file(tmp_path)
            out = tmp_path / "out"
            sweep = start(
                [BIN / "dpsample", "sweep", spec, "--out", out, "--address", address],
                _env(),
                log,
                REPO,
            )
            procs.append(sweep)
            # kill w1 once a cell is finished and w1 has one in flight
            deadline = time.monotonic() + 300
            while True:
                assert sweep.poll() is None, (tmp_path / "cluster.log").read_text()
                assert time.monotonic() < deadline, "no cell finished"
                in_flight = client.processing().get(w1, ())
                if in_flight and list((out / "cells").glob("*.json")):
                    break
                time.sleep(0.05)
            os.killpg(procs[1].pid, signal.SIGKILL)  # worker w1 and its nanny
            killed_at = len(list((out / "cells").glob("*.json")))
        assert sweep.wait(timeout=600) == 0, (tmp_path / "cluster.log").read_text()
    finally:
        for proc in reversed(procs):
            stop(proc)
        log.close()

    cells = load_spec(spec).cells()
    assert len(cells) == 10 and killed_at < 10
    files = sorted(p.name for p in (out / "cells").iterdir())
    assert files == sorted(f"{c.key}.json" for c in cells)  # one result each
    records = [json.loads((out / "cells" / f).read_text()) for f in files]
    assert all(r["status"] == "ok" for r in records)
    # the cells in flight on w1 were run again elsewhere
    lost = {k.removeprefix("dpsample-cell-") for k in in_flight}
    assert lost and lost <= {r["key"] for r in records}
    summary = (out / "summary.csv").read_text().splitlines()
    assert len(summary) == 1  # no predictions: header only
