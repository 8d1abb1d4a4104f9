"""A sweep's outputs from its cell files: the tables, the figures and ``report.md``.

:func:`write_outputs` is a pure function of the cell files (and the invocation's
wall time): running it again, e.g. on committed cells with a newer dpsample, gives
the same ``summary.csv``, ``slopes.csv``, ``comparisons.csv``, ``figures/`` and
``report.md``.
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from dpsample._src import precision
from dpsample.validation.cells import (
    load_records,
    versions,
)
from dpsample.validation.figures import write_figures
from dpsample.validation.report import render_report
from dpsample.validation.spec import Cell, Spec
from dpsample.validation.tables import (
    compare,
    fit_slopes,
    observation,
    profiles,
    slope_fits,
    summarize,
)

__all__ = ["write_outputs"]


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
    spec declares comparisons; else an earlier run's ``comparisons.csv`` is
    removed), ``figures/`` and ``report.md``.

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
    else:  # an earlier run's table would outlive the spec that declared it
        (out / "comparisons.csv").unlink(missing_ok=True)
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


precision.scope_public(globals())
