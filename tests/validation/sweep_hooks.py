"""Small specs and measurement hooks for the sweep-engine tests.

Dask workers import this module too (the specs put this folder on their
``pythonpath``), so it imports nothing from the tests' conftest.
"""

import os
import sys
import time
from pathlib import Path

HERE = str(Path(__file__).resolve().parent)


def tiny_spec(name="tiny", ns=(40, 60), seeds=2, measures=(), predictions=None):
    """Exponential mechanism over a net of [-1, 1] on tiny synthetic data (fast)."""
    if predictions is None:
        predictions = [
            {"name": "grad", "measurement": "gradient_norm", "slopes": {"n": -0.5}}
        ]
    return {
        "experiment": {
            "name": name,
            "seeds": seeds,
            "measure": list(measures),
            "pythonpath": [HERE],
        },
        "config": {
            "job": {"kind": "sampler", "name": "net"},
            "data": {"source": "synthetic", "kind": "classification", "n": 40, "d": 1},
            "loss": {"name": "sigmoid"},
            "domain": {"kind": "ball", "radius": 1.0},
            "privacy": {"epsilon": 1.0, "delta": 1e-6},
        },
        "grid": [{"data.n": list(ns)}],
        "prediction": predictions,
    }


def worker_facts(execution):
    """Where the cell ran: worker environment and start method, as numbers."""
    del execution
    return {
        "xla_single_thread": float(
            "--xla_cpu_multi_thread_eigen=false" in os.environ.get("XLA_FLAGS", "")
        ),
        "jax_on_cpu": float(os.environ.get("JAX_PLATFORMS") == "cpu"),
        # XLA sizes its thread pool from the affinity mask: every thread on one core
        "one_core": float(
            all(
                len(os.sched_getaffinity(int(tid))) == 1
                for tid in os.listdir("/proc/self/task")
            )
        ),
        # Dask's default MALLOC_TRIM_THRESHOLD_ doubles JAX cells' CPU time
        "malloc_trim_unset": float("MALLOC_TRIM_THRESHOLD_" not in os.environ),
        # a forked worker would inherit the test process's modules, pytest included
        "pytest_imported": float("pytest" in sys.modules),
        "pid": float(os.getpid()),
    }


def slow(execution):
    """Sleep (DPSAMPLE_TEST_CELL_SLEEP seconds, default 0.5): cells stay in flight."""
    del execution
    time.sleep(float(os.environ.get("DPSAMPLE_TEST_CELL_SLEEP", "0.5")))
    return {"slept": 1.0}


def fail_at_60(execution):
    """An assertion about the run that fails the cells with n = 60."""
    n = int(execution.problem.n)
    assert n != 60, f"planted failure at n = {n}"
    return {"n_seen": float(n)}


def not_a_dict(execution):
    del execution
    return [1.0]


def one_column_too_many(rng_key, n, d):
    """A [data] function that returns d + 1 columns."""
    import jax.numpy as jnp

    del rng_key
    return {"x": jnp.zeros((n, d + 1)), "y": jnp.ones(n)}


COMPILES = {"count": 0, "listening": False}


def _on_duration(name, duration, **kwargs):
    del duration, kwargs
    if name == "/jax/core/compile/backend_compile_duration":
        COMPILES["count"] += 1


def compiles(execution):
    """XLA backend compilations so far in this process (after the cell ran).

    Eager diagnostics (the measurements' ``jax.grad`` calls) trace on every call
    but compile each primitive once per shape, so this counts what a second cell
    of the same shapes would have to compile again."""
    del execution
    return {"compiles": float(COMPILES["count"])}


def listen_to_compiles():
    """Start counting compilations (once per process)."""
    import jax.monitoring

    if not COMPILES["listening"]:
        jax.monitoring.register_event_duration_secs_listener(_on_duration)
        COMPILES["listening"] = True
