"""``report.md`` of a sweep: both tables, the figures and a short reading."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from dpsample._src import precision
from dpsample.validation.tables import LABEL, SLOPE_COLUMNS, SUMMARY_COLUMNS

__all__ = ["markdown_table", "reading", "render_report"]


def _cell(value: Any) -> str:
    if value is None or value is pd.NA:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.4g}"
    try:
        if pd.isna(value):
            return ""
    except (TypeError, ValueError):
        pass
    return str(value).replace("|", "\\|")


def markdown_table(frame: pd.DataFrame, columns: Sequence[str]) -> str:
    """A GitHub-flavoured markdown table of ``frame[columns]`` (floats to 4 digits).

    Args:
        frame: The table.
        columns: The columns to show.

    Returns:
        The markdown text (a placeholder line for an empty table).

    Examples:
        >>> import pandas as pd
        >>> from dpsample.validation.report import markdown_table
        >>> frame = pd.DataFrame({"a": [1.23456], "b": [True]})
        >>> print(markdown_table(frame, ["a", "b"]))
        | a | b |
        |---|---|
        | 1.235 | yes |
    """
    if frame.empty:
        return "(no rows)"
    lines = [
        "| " + " | ".join(columns) + " |",
        "|" + "|".join("---" for _ in columns) + "|",
    ]
    for row in frame[list(columns)].itertuples(index=False):
        lines.append("| " + " | ".join(_cell(v) for v in row) + " |")
    return "\n".join(lines)


def _point(row: Any, axes: Sequence[str]) -> str:
    shown = [f"{a} = {_cell(getattr(row, a, None))}" for a in ("n", "d", "epsilon")]
    return ", ".join([f"{row.algorithm}", *shown])


def reading(
    summary: pd.DataFrame, slopes: pd.DataFrame, failed: Mapping[str, Any]
) -> list[str]:
    """The short reading of ``report.md``: bounds, slopes, failures, one line each.

    Args:
        summary: ``summary.csv``.
        slopes: ``slopes.csv``.
        failed: ``{key: record}`` of failed (or lost) cells.

    Returns:
        Markdown bullet lines.
    """
    out = []
    for pred, rows in summary.groupby("prediction", sort=False):
        checked = rows[rows["holds"].notna()]
        if checked.empty:
            continue
        held = int(checked["holds"].sum())
        worst = (
            checked.loc[checked["ratio"].idxmax()]
            if checked["ratio"].notna().any()
            else None
        )
        line = (
            f"**{pred}**: the bound held (no seed above it) at {held} of "
            f"{len(checked)} grid points"
        )
        if worst is not None:
            line += (
                f"; largest measured/bound ratio {worst['ratio']:.3g} "
                f"({_point(worst, ())})"
            )
        if held < len(checked):
            bad = checked[~checked["holds"].astype(bool)]
            line += "; **exceeded** at " + "; ".join(
                _point(r, ()) for r in bad.itertuples(index=False)
            )
        out.append(f"- {line}.")
    for row in slopes.itertuples(index=False):
        verdict = "consistent" if row.consistent else "**not consistent**"
        where = f" at {row.at}" if row.at else ""
        out.append(
            f"- **{row.prediction}** vs {row.variable}{where}: fitted slope "
            f"{_cell(row.fitted_slope)} (95% bootstrap interval "
            f"[{_cell(row.ci_low)}, {_cell(row.ci_high)}], {row.points} points), "
            f"theory {row.theory_slope:g}: {verdict}."
        )
    if failed:
        out.append(
            f"- **{len(failed)} cell(s) failed** (listed below); the tables leave "
            "them out."
        )
    return out or ["- Nothing to read: no predictions with a bound or a slope."]


def render_report(
    *,
    experiment: str,
    description: str,
    summary: pd.DataFrame,
    slopes: pd.DataFrame,
    figures: Sequence[str | os.PathLike[str]],
    failed: Mapping[str, Mapping[str, Any]],
    facts: Mapping[str, Any],
    folder: str | os.PathLike[str],
) -> str:
    """The text of ``report.md``.

    Args:
        experiment: The experiment's name.
        description: Its description.
        summary: ``summary.csv``.
        slopes: ``slopes.csv``.
        figures: The figure files (linked relative to ``folder``).
        failed: ``{key: record}`` of failed cells.
        facts: Lines of facts about the sweep (``{label: value}``).
        folder: Where ``report.md`` goes.

    Returns:
        Markdown.
    """
    lines = [f"# Sweep `{experiment}`", ""]
    if description:
        lines += [description.strip(), ""]
    lines += [f"- {k}: {v}" for k, v in facts.items()]
    lines += [
        "",
        f"> Measured values are **{LABEL}**. They are there to check the theory, "
        "never to be released. The released points' guarantees are in each cell "
        "file (`guarantee`) and, as the largest epsilon per grid point, in "
        "`summary.csv` (`guarantee_epsilon`).",
        "",
        "## Reading",
        "",
        *reading(summary, slopes, failed),
        "",
        "## Summary (`summary.csv`)",
        "",
        markdown_table(summary, [*SUMMARY_COLUMNS, "failed"]),
        "",
        "## Slopes (`slopes.csv`)",
        "",
        "Log-log least squares of the measured mean on the variable over the grid; "
        "95% bootstrap interval over seeds; consistent when the theory slope lies "
        "in the interval or within 0.15 of the fit.",
        "",
        markdown_table(slopes, [*SLOPE_COLUMNS, "at", "points"]),
        "",
    ]
    if figures:
        lines += ["## Figures", ""]
        for path in figures:
            rel = os.path.relpath(path, folder)
            lines += [f"![{Path(path).stem}]({rel})", ""]
    if failed:
        lines += ["## Failed cells", ""]
        for key, rec in failed.items():
            err = rec.get("error", {})
            message = str(err.get("message", "")).splitlines()[:1]
            lines.append(
                f"- `{key}`: {err.get('type', 'error')}: "
                f"{message[0] if message else ''} (traceback in "
                f"`cells/{key}.failed.json`)"
            )
        lines.append("")
    return "\n".join(lines)


precision.scope_public(globals())
