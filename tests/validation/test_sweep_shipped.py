"""Sweeps on workers that do not share the client's files (issue 28, item 8).

A real ``dask scheduler`` and ``dask worker`` run in a working directory of their own,
with a ``PYTHONPATH`` that does not hold the experiment's folder. The experiment's
package (a data function and a measurement hook) lives only in the client's
``[experiment] pythonpath``: the client ships its sources (``validation/ship.py``)
and every cell reports that its hook was imported from the shipped copy, not from
the client's path (which this worker could read, being on the same machine: under
the old behaviour, which sent that path, the check fails).
"""

import json
import os
from pathlib import Path

import pytest
from dask_procs import free_port, scheduler, stop, worker

from dpsample.config import to_toml
from dpsample.validation.engine import run_sweep, worker_environment
from dpsample.validation.ship import collect_sources, referenced_modules

REPO = Path(__file__).resolve().parents[2]

HOOKS = """
import os
import jax
import jax.numpy as jnp


def make(rng_key, n, d):
    k1, k2 = jax.random.split(rng_key)
    x = jax.random.normal(k1, (n, d))
    x = x / jnp.linalg.norm(x, axis=1, keepdims=True)
    y = jnp.where(jax.random.bernoulli(k2, 0.5, (n,)), 1.0, -1.0)
    return {"x": x, "y": y}


def measure(execution):
    shipped = "dpsample-sources" in os.path.abspath(__file__)
    return {"shipped": float(shipped), "worker_cwd_is_home": float(
        os.getcwd() == os.environ.get("SHIPPED_TEST_WORKER_HOME"))}
"""


def _experiment(root: Path) -> Path:
    package = root / "src" / "shipexp"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "hooks.py").write_text(HOOKS)
    doc = {
        "experiment": {
            "name": "shipped",
            "seeds": 2,
            "measure": ["shipexp.hooks:measure"],
            "pythonpath": [str(root / "src")],
        },
        "config": {
            "job": {"kind": "sampler", "name": "net"},
            "data": {
                "source": "module",
                "function": "shipexp.hooks:make",
                "n": 40,
                "d": 1,
                "seed": 3,
            },
            "loss": {"name": "sigmoid"},
            "domain": {"kind": "ball", "radius": 1.0},
            "privacy": {"epsilon": 1.0, "delta": 1e-6},
        },
    }
    path = root / "spec.toml"
    path.write_text(to_toml(doc) + '[[grid]]\n"data.n" = [40, 50]\n')
    return path


def test_only_referenced_modules_of_the_pythonpath_are_collected(tmp_path):
    spec = _experiment(tmp_path)
    (tmp_path / "src" / "unrelated.py").write_text("x = 1\n")
    (tmp_path / "src" / "shipexp" / "__pycache__").mkdir()
    (tmp_path / "src" / "shipexp" / "__pycache__" / "hooks.py").write_text("")
    cfg = {"data": {"function": "shipexp.hooks:make"}, "loss": {"name": "sigmoid"}}
    names = referenced_modules(["shipexp.hooks:measure", "dpsample.x:y"], [cfg])
    assert names == {"shipexp", "dpsample"}
    files = collect_sources(names, [str(tmp_path / "src"), str(REPO)])
    assert sorted(files) == ["shipexp/__init__.py", "shipexp/hooks.py"]
    assert files["shipexp/hooks.py"] == (tmp_path / "src/shipexp/hooks.py").read_bytes()
    assert spec.exists()


def test_too_much_to_ship_is_refused(tmp_path, monkeypatch):
    from dpsample.validation import ship

    _experiment(tmp_path)
    monkeypatch.setattr(ship, "MAX_BYTES", 10)
    with pytest.raises(ValueError, match="narrow .experiment. pythonpath"):
        collect_sources({"shipexp"}, [str(tmp_path / "src")])


@pytest.mark.slow
def test_sweep_runs_on_workers_without_the_experiment_folder(tmp_path):
    spec = _experiment(tmp_path)
    home = tmp_path / "worker_home"
    home.mkdir()
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    env = dict(os.environ, **worker_environment())
    env["PYTHONPATH"] = str(REPO)  # dpsample, not the experiment's folder
    env["SHIPPED_TEST_WORKER_HOME"] = str(home)
    log = open(tmp_path / "cluster.log", "w")  # noqa: SIM115
    procs = []
    try:
        procs.append(scheduler(port, env, log, home))
        procs.append(worker(address, home / "dask", env, log, home))
        from distributed import Client

        with Client(address, timeout=120) as client:
            client.wait_for_workers(1, timeout=180)
            # the worker cannot import the experiment from its own path
            assert not client.run(
                lambda: (
                    __import__("importlib.util").util.find_spec("shipexp") is not None
                )
            ).popitem()[1]
            outcome = run_sweep(spec, tmp_path / "out", client=client, progress=False)
    finally:
        for proc in reversed(procs):
            stop(proc)
        log.close()
    records = [
        json.loads(p.read_text()) for p in (tmp_path / "out" / "cells").glob("*.json")
    ]
    assert outcome.ran == 4 and len(records) == 4, (
        tmp_path / "cluster.log"
    ).read_text()
    assert all(r["status"] == "ok" for r in records), records[0].get("error")
    for r in records:
        assert r["measurements"]["values"]["shipped"] == 1.0
        assert r["measurements"]["values"]["worker_cwd_is_home"] == 1.0
