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

import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import pandas as pd

from dpsample import progress as _progress
from dpsample._src import precision
from dpsample.config import plan_config
from dpsample.validation.cells import (
    load_records,
    record_path,
    run_cell,
    search_path,
    write_record,
)
from dpsample.validation.executors import (
    UNSET,
    WORKER_ENVIRONMENT,
    cpu_count,
    local_client,
    pin_to_one_core,
    run_cells,
    set_thread_affinity,
    sweep_client,
    worker_environment,
)
from dpsample.validation.outputs import write_outputs
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
        workers or cpu_count(),
        source,
        unplanned,
    )


def _forecast_seconds(spec: Spec, todo: Sequence[Cell]) -> tuple[float | None, int]:
    """Sum of the plans' forecast run times of ``todo``; one plan per grid point.

    Cells that differ only in their seed keys share a plan. A grid point whose plan
    cannot be made from the configuration alone (a data source whose shape is known
    only from its data, or a refusal) is counted in the second value and left out.
    """
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
                with sweep_client(address, workers, client) as c:
                    run_cells(c, spec, plan.todo, cells_dir, on_record)
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
