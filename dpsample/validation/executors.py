"""Where a sweep's cells run: an embedded Dask cluster set up for JAX, or a client's.

:func:`local_client` starts a ``LocalCluster`` of spawned single-threaded process
workers, each with :func:`worker_environment` and pinned to one core
(:func:`pin_to_one_core`); the engine (:mod:`dpsample.validation.engine`) submits
the cells to it, or to a cluster by address, and writes each record as it arrives.
Dask and ``distributed`` are imported when a cluster is started, not with this
module: they cost about 0.7 s, which a sweep run inline (``workers = 0``) or a
``--dry-run`` does not need.
"""

from __future__ import annotations

import contextlib
import datetime
import logging
import os
import signal
import threading
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from dpsample import progress as _progress
from dpsample._src import precision
from dpsample.validation.cells import (
    run_cell,
    versions,
    write_record,
)
from dpsample.validation.spec import Cell, Spec

# cpu_count, sweep_client and run_cells are shared with the engine and left out of
# __all__ (unscoped, as before the split).
__all__ = [
    "UNSET",
    "WORKER_ENVIRONMENT",
    "local_client",
    "pin_to_one_core",
    "set_thread_affinity",
    "worker_environment",
]

#: Environment of every local worker, set before the worker process starts: XLA on
#: one thread (one worker per core), JAX on the CPU, BLAS libraries on one thread.
#: Dask's default ``MALLOC_TRIM_THRESHOLD_`` is *not* set (see :data:`UNSET`).
WORKER_ENVIRONMENT = {
    "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1",
    "JAX_PLATFORMS": "cpu",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
}
#: Variables of Dask's default pre-spawn environment left unset in local workers:
#: a fixed ``MALLOC_TRIM_THRESHOLD_`` turns off glibc's dynamic mmap threshold, so
#: every large XLA buffer is a fresh ``mmap`` and its pages fault in anew each time;
#: measured on the benchmark's cells (``benchmarks/bench_sweep.py``), it doubles their
#: CPU time.
UNSET = ("MALLOC_TRIM_THRESHOLD_",)


def worker_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """:data:`WORKER_ENVIRONMENT`, keeping other ``XLA_FLAGS`` already set.

    Args:
        environ: The environment to start from (default ``os.environ``).

    Returns:
        The variables to set in each worker.

    Examples:
        >>> from dpsample.validation.engine import worker_environment
        >>> env = worker_environment({"XLA_FLAGS": "--xla_dump_to=/tmp/x"})
        >>> env["XLA_FLAGS"].split()[:2]
        ['--xla_dump_to=/tmp/x', '--xla_cpu_multi_thread_eigen=false']
        >>> env["JAX_PLATFORMS"]
        'cpu'
    """
    environ = os.environ if environ is None else environ
    env = dict(WORKER_ENVIRONMENT)
    given = environ.get("XLA_FLAGS", "").split()
    ours = env["XLA_FLAGS"].split()
    names = {f.split("=")[0] for f in ours}
    kept = [f for f in given if f.split("=")[0] not in names]
    env["XLA_FLAGS"] = " ".join([*kept, *ours])
    return env


def cpu_count() -> int:
    """The cores this process may run on (its affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover (not Linux)
        return max(1, os.cpu_count() or 1)


def _remote(
    cfg: Mapping[str, Any], measures: list[str], key: str, paths: list[str]
) -> dict[str, Any]:
    """The task a worker runs (positional: Dask reserves ``key``).

    Without the runs' own progress bars (:mod:`dpsample.progress`): a worker may
    share the terminal, where the sweep draws its bar.
    """
    with _progress.enabled(False):
        return run_cell(cfg, measures, key=key, paths=paths)


@contextlib.contextmanager
def _scoped_environ(values: Mapping[str, str]) -> Iterator[None]:
    """Set ``values`` in ``os.environ``; afterwards restore it as it was.

    The whole environment is restored: the nanny exports its pre-spawn variables
    (and ``PYTHONHASHSEED``, ``__DASK_PARENT_PID``) into this process to pass them
    to the workers it spawns.
    """
    saved = dict(os.environ)
    os.environ.update(values)
    try:
        yield
    finally:
        for k in [k for k in os.environ if k not in saved]:
            del os.environ[k]
        for k, v in saved.items():
            if os.environ.get(k) != v:
                os.environ[k] = v


def set_thread_affinity(cores: Iterable[int]) -> None:
    """Set the CPU affinity of every thread of this process (Linux) to ``cores``.

    ``os.sched_setaffinity(0, ...)`` changes the calling thread only; threads that
    already run (XLA's pool among them) keep theirs unless each is set.

    Examples:
        >>> import os
        >>> from dpsample.validation.engine import set_thread_affinity
        >>> allowed = os.sched_getaffinity(0)
        >>> set_thread_affinity(allowed)
        >>> os.sched_getaffinity(0) == allowed
        True
    """
    cores = set(cores)
    for tid in os.listdir("/proc/self/task"):
        with contextlib.suppress(OSError):  # a thread that has just ended
            os.sched_setaffinity(int(tid), cores)
    os.sched_setaffinity(0, cores)


def pin_to_one_core(index: int) -> int | None:
    """Pin every thread of this process to one of its allowed cores (Linux).

    The core is ``sorted(allowed)[index % len(allowed)]``. Threads started later
    inherit it. XLA:CPU sizes its thread pool from the process's affinity, and
    jaxlib 0.10 ignores ``--xla_cpu_multi_thread_eigen=false
    intra_op_parallelism_threads=1`` (measured: a jitted matmul-and-exp loop kept 1.9
    cores busy with them set, 1.0 under ``taskset``), so one core per worker is what
    makes a worker single-threaded. Returns the core, or ``None`` where the platform
    has no affinity calls.

    Examples:
        >>> import os
        >>> from dpsample.validation.engine import pin_to_one_core, set_thread_affinity
        >>> before = os.sched_getaffinity(0)
        >>> pin_to_one_core(0) in before
        True
        >>> set_thread_affinity(before)  # undo for the caller
    """
    if not (hasattr(os, "sched_getaffinity") and hasattr(os, "sched_setaffinity")):
        return None
    cores = sorted(os.sched_getaffinity(0))
    core = cores[index % len(cores)]
    set_thread_affinity({core})
    return core


def _pin_worker(dask_worker: Any = None) -> int | None:
    """In a local worker: one core, by the worker's index (LocalCluster names 0..)."""
    name = getattr(dask_worker, "name", 0)
    return pin_to_one_core(name if isinstance(name, int) else 0)


def _ignore_sigint(dask_worker: Any = None) -> None:
    """In a local worker: leave Ctrl-C to the client, which stops the cluster.

    The terminal sends SIGINT to the whole process group; without this each worker
    would die with a traceback of its own while the client shuts the cluster down.
    """
    del dask_worker
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextlib.contextmanager
def local_client(workers: int | None = None) -> Iterator[Any]:
    """A Dask client on an embedded ``LocalCluster`` set up for JAX cells.

    Process workers (``spawn``, never ``fork``), one thread each, ``workers`` of them
    (default one per core), each started with :func:`worker_environment`. The
    multiprocessing method and the environment are set for the cluster's lifetime
    only (``dask.config.set`` in scope; ``os.environ``, into which the nanny exports
    the variables before spawning, is restored afterwards). Each worker is then
    pinned to one core (:func:`pin_to_one_core`, worker ``i`` on allowed core ``i``
    modulo their number): XLA:CPU sizes its thread pool from the affinity mask, and
    the ``XLA_FLAGS`` thread settings alone no longer keep it to one thread.

    Args:
        workers: Number of worker processes.

    Yields:
        A :class:`distributed.Client`.
    """
    import dask  # lazy: dask and distributed cost ~0.7 s; inline sweeps skip them
    from distributed import Client, LocalCluster

    env = worker_environment()
    pre_spawn = {
        **dask.config.get("distributed.nanny.pre-spawn-environ", {}),
        **dict.fromkeys(UNSET),  # None: the nanny leaves them out
        **env,
    }
    settings = {
        "distributed.worker.multiprocessing-method": "spawn",
        "distributed.nanny.pre-spawn-environ": pre_spawn,
    }
    exported = {k: str(v) for k, v in pre_spawn.items() if v is not None}
    with _scoped_environ(exported), dask.config.set(settings):
        cluster = LocalCluster(
            n_workers=workers or cpu_count(),
            threads_per_worker=1,
            processes=True,
            env=env,
            dashboard_address=None,
            # No dashboard, and the scheduler's HTTP server (health and metrics
            # routes, started even without one) on a free loopback port: its
            # default 8787 makes a second sweep on the machine warn "Port 8787 is
            # already in use" (an error under pytest's -W error).
            scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
            silence_logs=logging.ERROR,
        )
        try:
            with Client(cluster) as client:
                client.run(_ignore_sigint)
                client.run(_pin_worker)  # one core each: see pin_to_one_core
                yield client
        finally:
            cluster.close()


@contextlib.contextmanager
def sweep_client(
    address: str | None, workers: int | None, client: Any
) -> Iterator[Any]:
    """The given client, one to ``address``, or a :func:`local_client`."""
    if client is not None:
        yield client
    elif address is not None:
        from distributed import Client  # lazy: see local_client

        with Client(address) as c:
            yield c
    else:
        with local_client(workers) as c:
            yield c


def _lost_cell(
    cell: Cell, measures: Sequence[str], err: BaseException, tb: Any
) -> dict:
    """The record of a cell whose task died (a worker killed too often, ...)."""
    text = "".join(traceback.format_exception(type(err), err, tb))
    now = datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds")
    return {
        "format": "dpsample.sweep.cell/1",
        "key": cell.key,
        "status": "failed",
        "config": dict(cell.config),
        "measures": list(measures),
        "error": {"type": type(err).__name__, "message": str(err), "traceback": text},
        "seconds": None,
        "started": None,
        "finished": now,
        "versions": versions(),
        "host": None,
        "pid": None,
    }


def run_cells(
    client: Any,
    spec: Spec,
    todo: Sequence[Cell],
    cells_dir: Path,
    on_record: Callable[[dict[str, Any]], None],
) -> None:
    """Run ``todo`` on ``client``'s workers; write and report each record."""
    # lazy: distributed (~0.7 s, and ship imports it) only when a cluster runs
    from distributed import as_completed

    from dpsample.validation.ship import ship_sources

    # The workers import the sources shipped from here (their filesystems need not
    # hold the client's pythonpath); without any to ship, the paths are tried.
    shipped = ship_sources(
        client, spec.measures, (c.config for c in todo), spec.pythonpath
    )
    paths = [] if shipped is not None else list(spec.pythonpath)
    futures = {}
    for cell in todo:
        fut = client.submit(
            _remote,
            dict(cell.config),
            list(spec.measures),
            cell.key,
            paths,
            key=f"dpsample-cell-{cell.key}",
            pure=False,
        )
        futures[fut] = cell
    try:
        for fut in as_completed(list(futures)):
            cell = futures.pop(fut)
            if fut.status == "finished":
                record = fut.result()
            elif fut.status == "error":
                record = _lost_cell(
                    cell, spec.measures, fut.exception(), fut.traceback()
                )
            else:  # cancelled: lost, rerun next time
                continue
            fut.release()
            write_record(cells_dir, record)
            on_record(record)
    finally:
        if futures:
            client.cancel(list(futures))


precision.scope_public(globals())
