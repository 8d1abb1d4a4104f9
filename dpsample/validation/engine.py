"""Running a sweep on Dask: cells to files, resume, progress, failures, outputs.

:func:`sweep` expands a spec into cells, skips those whose file is already in
``DIR/cells/``, runs the rest on Dask (an embedded :class:`~distributed.LocalCluster`
of spawned single-threaded process workers, or an existing cluster by address), writes
each finished cell atomically as soon as the client receives it, and then writes
``summary.csv``, ``slopes.csv``, the figures and ``report.md``. A failing cell is
recorded with its traceback (``cells/<key>.failed.json``) and the sweep goes on; the
next run of the same sweep retries it. An interrupted sweep (Ctrl-C, a killed worker,
a killed client) loses at most the cells in flight and resumes with the same call.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import logging
import os
import time
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import pandas as pd

from dpsample import progress as _progress
from dpsample._src import precision
from dpsample.validation.cells import (
    load_records,
    record_path,
    run_cell,
    versions,
    write_record,
)
from dpsample.validation.spec import Cell, Spec, describe_point, load_spec

__all__ = [
    "SweepOutcome",
    "SweepPlan",
    "UNSET",
    "WORKER_ENVIRONMENT",
    "default_out",
    "describe_cell",
    "failed_summary",
    "local_client",
    "pin_to_one_core",
    "set_thread_affinity",
    "plan_sweep",
    "run_sweep",
    "sweep",
    "worker_environment",
    "write_outputs",
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


def _cpu_count() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover (not Linux)
        return max(1, os.cpu_count() or 1)


# ---------------------------------------------------------------------- planning
class SweepPlan(NamedTuple):
    """What a sweep would do (``dpsample sweep --dry-run``).

    Attributes:
        spec: The spec.
        cells: Every cell, in grid order.
        done: Keys of cells with a finished file (skipped).
        failed: Keys of cells whose last run failed (retried unless told not to).
        todo: The cells that would run, in submission order.
        seconds_per_cell: Mean wall time of the spec's cells already on disk, or
            ``None`` when none has run.
        estimate_seconds: Estimated cell-seconds of ``todo`` (per algorithm where
            known), or ``None``.
        workers: Workers assumed for the wall-clock estimate.
        estimate_source: ``"timed cells"`` (from cells already on disk),
            ``"plans"`` (no cell has run: the sum of the cells' plan forecasts,
            :meth:`~dpsample.plan.Plan.estimated_seconds`, which count the private
            run only, not compilation or data loading) or ``None``.
        unplanned: Grid points whose plan could not be made without their data
            (or refused), left out of a ``"plans"`` estimate.
    """

    spec: Spec
    cells: list[Cell]
    done: list[str]
    failed: list[str]
    todo: list[Cell]
    seconds_per_cell: float | None
    estimate_seconds: float | None
    workers: int
    estimate_source: str | None = None
    unplanned: int = 0

    @property
    def estimate_wall_seconds(self) -> float | None:
        """``estimate_seconds`` spread over the workers (start-up not counted)."""
        if self.estimate_seconds is None:
            return None
        return self.estimate_seconds / max(1, min(self.workers, len(self.todo) or 1))


def _shape_key(cell: Cell, seed_keys: Sequence[str]) -> str:
    """Cells with equal keys share array shapes: run them one after another."""
    cfg = json.loads(json.dumps(cell.config))
    for path in seed_keys:
        *head, last = path.split(".")
        node = cfg
        for part in head:
            node = node.get(part, {})
        node.pop(last, None)
    job = cfg.get("job", {})
    return json.dumps([job.get("kind"), job.get("name"), cfg], sort_keys=True)


def plan_sweep(
    spec: Spec | str | os.PathLike[str] | Mapping[str, Any],
    out: str | os.PathLike[str],
    *,
    smoke: bool = False,
    workers: int | None = None,
    retry_failed: bool = True,
    forecast: bool = False,
) -> SweepPlan:
    """Expand a spec and compare it with ``out/cells/``: what is done, what is left.

    Args:
        spec: A :class:`~dpsample.validation.spec.Spec`, a spec file or its dict.
        out: The sweep's folder.
        smoke: The smoke grid.
        workers: Workers for the wall-clock estimate (default the cores here).
        retry_failed: Count failed cells as to run (else as done).
        forecast: When no cell has run yet, estimate the cost from the cells'
            plans (one plan per grid point, seeds share it; public, no data read;
            ``dpsample sweep --dry-run`` does this).

    Returns:
        The :class:`SweepPlan`.
    """
    spec = spec if isinstance(spec, Spec) else load_spec(spec)
    cells = spec.cells(smoke=smoke)
    records = load_records(Path(out) / "cells", [c.key for c in cells])
    done = [c.key for c in cells if records.get(c.key, {}).get("status") == "ok"]
    failed = [c.key for c in cells if records.get(c.key, {}).get("status") == "failed"]
    skip = set(done) | (set() if retry_failed else set(failed))
    todo = [c for c in cells if c.key not in skip]
    todo.sort(key=lambda c: _shape_key(c, spec.seed_keys))
    timings: dict[str, list[float]] = {}
    for c in cells:
        rec = records.get(c.key)
        if rec is not None and isinstance(rec.get("seconds"), int | float):
            timings.setdefault(c.config["job"]["name"], []).append(rec["seconds"])
    every = [s for v in timings.values() for s in v]
    per_cell = sum(every) / len(every) if every else None
    estimate = None
    if per_cell is not None:
        estimate = 0.0
        for c in todo:
            own = timings.get(c.config["job"]["name"])
            estimate += sum(own) / len(own) if own else per_cell
    source = None if estimate is None else "timed cells"
    unplanned = 0
    if estimate is None and forecast and todo:
        estimate, unplanned = _forecast_seconds(spec, todo)
        source = None if estimate is None else "plans"
    return SweepPlan(
        spec,
        cells,
        done,
        failed,
        todo,
        per_cell,
        estimate,
        workers or _cpu_count(),
        source,
        unplanned,
    )


def _forecast_seconds(spec: Spec, todo: Sequence[Cell]) -> tuple[float | None, int]:
    """Sum of the plans' forecast run times of ``todo``; one plan per grid point.

    Cells that differ only in their seed keys share a plan. A grid point whose plan
    cannot be made from the configuration alone (a data source whose shape is known
    only from its data, or a refusal) is counted in the second value and left out.
    """
    from dpsample.config import plan_config
    from dpsample.validation.spec import search_path

    forecasts: dict[str, float | None] = {}
    total, missing = 0.0, 0
    with search_path(spec.pythonpath):
        for cell in todo:
            point = _shape_key(cell, spec.seed_keys)
            if point not in forecasts:
                try:
                    plan = plan_config(cell.config).plan
                    forecasts[point] = float(plan.estimated_seconds())
                except Exception:  # noqa: BLE001 - any failure: not forecast
                    forecasts[point] = None
                    missing += 1
            value = forecasts[point]
            total += 0.0 if value is None else value
    if missing == len(forecasts):
        return None, missing
    return total, missing


# --------------------------------------------------------------------- executors
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
    import signal
    import threading

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
    import dask
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
            n_workers=workers or _cpu_count(),
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
def _client(address: str | None, workers: int | None, client: Any) -> Iterator[Any]:
    if client is not None:
        yield client
    elif address is not None:
        from distributed import Client

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


def _run_cells(
    client: Any,
    spec: Spec,
    todo: Sequence[Cell],
    cells_dir: Path,
    on_record: Callable[[dict[str, Any]], None],
) -> None:
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


def _run_inline(
    spec: Spec,
    todo: Sequence[Cell],
    cells_dir: Path,
    on_record: Callable[[dict[str, Any]], None],
) -> None:
    """``workers = 0``: run the cells one by one in this process (no Dask)."""
    paths = list(spec.pythonpath)
    for cell in todo:
        with _progress.enabled(False):  # the sweep draws its own progress
            record = run_cell(cell.config, spec.measures, key=cell.key, paths=paths)
        write_record(cells_dir, record)
        on_record(record)


# ----------------------------------------------------------------------- outputs
class SweepOutcome(NamedTuple):
    """What :func:`run_sweep` did and wrote.

    Attributes:
        summary: ``summary.csv``.
        slopes: ``slopes.csv``.
        failed: ``{key: record}`` of the cells that failed.
        out: The sweep's folder.
        cells: Cells in the sweep.
        ran: Cells run now.
        skipped: Cells found finished on disk.
        figures: The figure files.
    """

    summary: pd.DataFrame
    slopes: pd.DataFrame
    failed: dict[str, dict[str, Any]]
    out: Path
    cells: int
    ran: int
    skipped: int
    figures: list[Path]


def _atomic_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _wall_time(records: Iterable[Mapping[str, Any]], run_seconds: float | None) -> str:
    """The sweep's wall time for ``report.md``.

    The span of its cell files (first start to last finish; a resumed sweep's span
    includes the pause) and, when given, the wall time of the invocation that
    wrote the report.
    """
    starts, ends = [], []
    for r in records:
        try:
            starts.append(datetime.datetime.fromisoformat(r["started"]))
            ends.append(datetime.datetime.fromisoformat(r["finished"]))
        except (KeyError, TypeError, ValueError):
            continue
    parts = []
    if starts:
        span = (max(ends) - min(starts)).total_seconds()
        parts.append(f"{span:.1f} s from the first cell's start to the last's finish")
    if run_seconds is not None:
        parts.append(f"{run_seconds:.1f} s for this invocation")
    return "; ".join(parts) or "unknown (no cell has run)"


def write_outputs(
    spec: Spec,
    out: str | os.PathLike[str],
    *,
    smoke: bool = False,
    n_boot: int = 2000,
    cells: Sequence[Cell] | None = None,
    run_seconds: float | None = None,
    records: Mapping[str, Mapping[str, Any]] | None = None,
    note: str | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, dict[str, Any]], list[Path]]:
    """Read the spec's cell files and write the tables, figures and report.

    Pure in the cell files (and ``run_seconds``): running it again gives the same
    outputs. Writes ``summary.csv``, ``slopes.csv``, ``comparisons.csv`` (when the
    spec declares comparisons), ``figures/`` and ``report.md``.

    Args:
        spec: The spec.
        out: The sweep's folder.
        smoke: The smoke grid.
        n_boot: Bootstrap resamples of the slope intervals.
        cells: The spec's cells (default: expanded again).
        run_seconds: Wall time of the invocation that ran the cells (reported
            beside the cells' own span when given).
        records: The cells' records by key (default: read from ``out/cells``).
        note: A line added to the report's facts (``"tables"``), e.g. that the
            tables were recomputed from committed cells.

    Returns:
        ``(summary, slopes, failed, figures)``.
    """
    from dpsample.validation.figures import write_figures
    from dpsample.validation.report import render_report
    from dpsample.validation.tables import (
        compare,
        fit_slopes,
        observation,
        profiles,
        slope_fits,
        summarize,
    )

    out = Path(out)
    cells = spec.cells(smoke=smoke) if cells is None else cells
    if records is None:
        records = load_records(out / "cells", [c.key for c in cells])
    else:
        keys = {c.key for c in cells}
        records = {k: dict(r) for k, r in records.items() if k in keys}
    obs = [observation(c, records.get(c.key)) for c in cells]
    summary = summarize(obs, spec.predictions, experiment=spec.name)
    fits = slope_fits(obs, spec.predictions, n_boot=n_boot)
    slopes = fit_slopes(obs, spec.predictions, experiment=spec.name, fits=fits)
    comparisons = compare(obs, spec.comparisons, experiment=spec.name)
    failed = {
        c.key: dict(records[c.key])
        for c in cells
        if records.get(c.key, {}).get("status") == "failed"
    }
    out.mkdir(parents=True, exist_ok=True)
    _atomic_text(out / "summary.csv", summary.to_csv(index=False))
    _atomic_text(out / "slopes.csv", slopes.to_csv(index=False))
    if spec.comparisons:
        _atomic_text(out / "comparisons.csv", comparisons.to_csv(index=False))
    figures = write_figures(
        fits,
        out / "figures",
        experiment=spec.name,
        profiles=profiles(obs, spec.predictions),
    )
    seconds: list[float] = [
        s for r in records.values() if isinstance(s := r.get("seconds"), int | float)
    ]
    finished = sum(r.get("status") == "ok" for r in records.values())
    facts = {
        "spec": f"`{spec.source}`" if spec.source else "(a dict)",
        "grid": "smoke" if smoke else "full",
        "cells": f"{len(cells)} ({finished} finished, {len(failed)} failed, "
        f"{len(cells) - finished - len(failed)} not run)",
        "seeds per grid point": (spec.smoke[1] if smoke and spec.smoke else spec.seeds),
        "cell time": f"{sum(seconds):.1f} s in all, {max(seconds, default=0):.2f} s "
        "the longest",
        "wall time": _wall_time(records.values(), run_seconds),
        "dpsample": versions()["dpsample"],
    }
    if note:
        facts["tables"] = note
    text = render_report(
        experiment=spec.name,
        description=spec.description,
        summary=summary,
        slopes=slopes,
        figures=figures,
        failed=failed,
        facts=facts,
        folder=out,
        comparisons=comparisons if spec.comparisons else None,
    )
    _atomic_text(out / "report.md", text)
    return summary, slopes, failed, figures


# ------------------------------------------------------------------------- sweep
def run_sweep(
    spec: Spec | str | os.PathLike[str] | Mapping[str, Any],
    out: str | os.PathLike[str],
    *,
    smoke: bool = False,
    address: str | None = None,
    workers: int | None = None,
    client: Any = None,
    progress: bool | None = None,
    retry_failed: bool = True,
    n_boot: int = 2000,
) -> SweepOutcome:
    """Run a sweep and write its folder; the engine behind :func:`sweep`.

    Args:
        spec: A :class:`~dpsample.validation.spec.Spec`, a spec file or its dict.
        out: The sweep's folder (``cells/``, ``summary.csv``, ``slopes.csv``,
            ``figures/``, ``report.md``).
        smoke: Run the spec's smoke grid.
        address: A Dask scheduler (``tcp://HOST:PORT``); default an embedded
            ``LocalCluster``.
        workers: Local worker processes (default one per core); ``0`` runs the
            cells one by one in this process, without Dask (for debugging).
        client: An existing :class:`distributed.Client` (overrides ``address``).
        progress: Show progress on stderr (default:
            :func:`dpsample.progress.is_enabled`, i.e. ``DPSAMPLE_PROGRESS``, else
            when stderr is a terminal): a bar on a terminal, a plain line at most
            every :data:`dpsample.progress.LINE_SECONDS` otherwise.
        retry_failed: Rerun cells whose last run failed (else leave them failed).
        n_boot: Bootstrap resamples of the slope intervals.

    Returns:
        A :class:`SweepOutcome`.

    Raises:
        dpsample.validation.spec.SpecError: A bad spec or grid point (before any
            cell runs).
        KeyboardInterrupt: Interrupted; the cells finished so far are on disk.
    """
    t0 = time.perf_counter()
    plan = plan_sweep(
        spec, out, smoke=smoke, workers=workers, retry_failed=retry_failed
    )
    spec = plan.spec
    out = Path(out)
    cells_dir = out / "cells"
    cells_dir.mkdir(parents=True, exist_ok=True)
    counts = {"done": 0, "failed": 0}
    show = _progress.is_enabled() if progress is None else progress
    bar = (
        _progress.Progress(
            "sweep",
            len(plan.cells),
            unit="cells",
            cached=len(plan.cells) - len(plan.todo),
        )
        if show and plan.todo
        else None
    )

    def on_record(record: dict[str, Any]) -> None:
        counts["done" if record["status"] == "ok" else "failed"] += 1
        if bar is not None:
            bar.update(counts["done"], failed=counts["failed"])

    if plan.todo:
        if bar is not None:
            bar.update(0)
        try:
            if workers == 0 and client is None and address is None:
                _run_inline(spec, plan.todo, cells_dir, on_record)
            else:
                with _client(address, workers, client) as c:
                    _run_cells(c, spec, plan.todo, cells_dir, on_record)
        finally:
            if bar is not None:
                bar.close()
    summary, slopes, failed, figures = write_outputs(
        spec,
        out,
        smoke=smoke,
        n_boot=n_boot,
        cells=plan.cells,
        run_seconds=time.perf_counter() - t0 if plan.todo else None,
    )
    return SweepOutcome(
        summary,
        slopes,
        failed,
        out,
        len(plan.cells),
        len(plan.todo),
        len(plan.cells) - len(plan.todo),
        figures,
    )


def sweep(
    spec: Spec | str | os.PathLike[str] | Mapping[str, Any],
    *,
    out: str | os.PathLike[str],
    smoke: bool = False,
    address: str | None = None,
    workers: int | None = None,
    client: Any = None,
    progress: bool | None = None,
    retry_failed: bool = True,
) -> pd.DataFrame:
    """Run a sweep (a grid of ``dpsample run`` cells) and return ``summary.csv``.

    Cells already finished in ``out/cells/`` are skipped, so the same call resumes
    an interrupted sweep. Failed cells do not stop the sweep; they are listed in
    ``summary.attrs["failed"]`` (``{key: error message}``) and in ``report.md``.

    Args:
        spec: A spec file (``experiments/NAME.toml``), its dict or a
            :class:`~dpsample.validation.spec.Spec`.
        out: The sweep's folder.
        smoke: Run the spec's smoke grid.
        address: A Dask scheduler address; default an embedded ``LocalCluster``.
        workers: Local worker processes (default one per core); ``0`` runs the
            cells in this process, without Dask.
        client: An existing :class:`distributed.Client`.
        progress: Show progress on stderr (default:
            :func:`dpsample.progress.is_enabled`, i.e. ``DPSAMPLE_PROGRESS``, else
            when stderr is a terminal): a bar on a terminal, a plain line at most
            every :data:`dpsample.progress.LINE_SECONDS` otherwise.
        retry_failed: Rerun cells whose last run failed.

    Returns:
        The summary table; ``attrs`` holds ``slopes`` (the slopes table as a list
        of dicts), ``failed`` and ``out``.

    Examples:
        >>> import tempfile
        >>> from dpsample.validation import sweep
        >>> spec = {
        ...     "experiment": {"name": "doc", "seeds": 1},
        ...     "config": {
        ...         "job": {"kind": "sampler", "name": "net"},
        ...         "data": {"source": "synthetic", "kind": "classification",
        ...                  "n": 40, "d": 1},
        ...         "loss": {"name": "sigmoid"},
        ...         "domain": {"kind": "ball", "radius": 1.0},
        ...         "privacy": {"epsilon": 1.0, "delta": 1e-6}},
        ...     "grid": [{"data.n": [40]}],
        ...     "prediction": [{"name": "grad", "measurement": "gradient_norm"}]}
        >>> table = sweep(spec, out=tempfile.mkdtemp(), workers=0)
        >>> row = table.to_dict(orient="records")[0]
        >>> row["prediction"], row["n"], row["seeds"], row["label"][:12]
        ('grad', 40, 1, 'NOT PRIVATE:')
    """
    outcome = run_sweep(
        spec,
        out,
        smoke=smoke,
        address=address,
        workers=workers,
        client=client,
        progress=progress,
        retry_failed=retry_failed,
    )
    table = outcome.summary
    table.attrs["slopes"] = outcome.slopes.to_dict(orient="records")
    table.attrs["failed"] = {
        k: f"{r['error']['type']}: {r['error']['message']}"
        for k, r in outcome.failed.items()
    }
    table.attrs["out"] = str(outcome.out)
    return table


def default_out(spec: str | os.PathLike[str], *, smoke: bool = False) -> Path:
    """The folder ``dpsample sweep SPEC.toml`` writes to without ``--out``.

    A full run writes next to the spec, ``<spec folder>/results/<name>`` (where
    ``experiments/results/NAME/`` is committed); a smoke run writes to
    ``runs/<name>_smoke`` in the working directory (ignored by git), so it never
    mixes its cells and report into the committed results.

    Examples:
        >>> from dpsample.validation.engine import default_out
        >>> default_out("experiments/sosp_rates.toml").as_posix()
        'experiments/results/sosp_rates'
        >>> default_out("experiments/sosp_rates.toml", smoke=True).as_posix()
        'runs/sosp_rates_smoke'
    """
    name = load_spec(spec).name
    if smoke:
        return Path("runs") / f"{name}_smoke"
    return Path(spec).parent / "results" / name


def failed_summary(failed: Mapping[str, Mapping[str, Any]], folder: Path) -> list[str]:
    """One line per failed cell: its file and its error."""
    out = []
    for key, rec in failed.items():
        err = rec.get("error", {})
        first = str(err.get("message", "")).splitlines()[:1]
        path = record_path(folder / "cells", key, ok=False)
        out.append(f"{path}: {err.get('type')}: {first[0] if first else ''}")
    return out


def describe_cell(cell: Cell) -> str:
    """``key  seed  axes`` for ``--dry-run``."""
    return f"{cell.key}  seed {cell.seed}  {describe_point(cell.axes)}"


precision.scope_public(globals())
