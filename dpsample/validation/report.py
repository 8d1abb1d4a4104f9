"""``report.md`` of a sweep: both tables, the figures and a short reading."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from dpsample._src import precision
from dpsample.validation.tables import (
    COMPARISON_COLUMNS,
    EPSILON_TOLERANCE,
    LABEL,
    MAX_CI_WIDTH,
    MIN_POINTS,
    MIN_SEEDS,
    SATURATION,
    SLOPE_COLUMNS,
    SUMMARY_COLUMNS,
    VERDICTS,
)

__all__ = ["headline", "markdown_table", "reading", "render_report"]


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


def _count(frame: pd.DataFrame, column: str, value: bool) -> int:
    col = frame[column]
    return int((col.notna() & (col.astype("boolean") == value)).sum())


def headline(
    summary: pd.DataFrame,
    slopes: pd.DataFrame,
    comparisons: pd.DataFrame | None = None,
) -> list[str]:
    """The lines ``report.md`` leads with: informative bounds, slope verdicts.

    Args:
        summary: ``summary.csv``.
        slopes: ``slopes.csv``.
        comparisons: ``comparisons.csv`` (``None``: the spec has none).

    Returns:
        Markdown lines.

    Examples:
        >>> import pandas as pd
        >>> from dpsample.validation.report import headline
        >>> summary = pd.DataFrame({
        ...     "holds": [True, True, False, None],
        ...     "informative": [True, False, True, None]})
        >>> slopes = pd.DataFrame({"verdict": ["consistent", "underpowered"]})
        >>> first, second = headline(summary, slopes)
        >>> first.split(" (")[0]
        '**Informative bounds: 1 of 2 hold**'
        >>> first.split(" (")[1]
        '3 rows with a bound: 2 informative, 1 not, 0 undecided; all 3: 2 hold).'
        >>> second.split(", ")[:3]
        ['**Slopes (2 fits):** 1 consistent', '0 not consistent', '1 underpowered']
    """
    checked = summary[summary["holds"].notna()]
    inf = checked[checked["informative"].astype("boolean").fillna(False).astype(bool)]
    held = _count(inf, "holds", True)
    lines = [
        f"**Informative bounds: {held} of {len(inf)} hold** ({len(checked)} rows "
        f"with a bound: {len(inf)} informative, "
        f"{_count(checked, 'informative', False)} not, "
        f"{int(checked['informative'].isna().sum())} undecided; all "
        f"{len(checked)}: {_count(checked, 'holds', True)} hold)."
    ]
    if len(slopes):
        counts = slopes["verdict"].value_counts()
        parts = [f"{int(counts.get(v, 0))} {v}" for v in reversed(VERDICTS)]
        lines.append(f"**Slopes ({len(slopes)} fits):** " + ", ".join(parts) + ".")
    if comparisons is not None and len(comparisons):
        off = int((~comparisons["epsilon_match"].astype(bool)).sum())
        lines.append(
            f"**Comparisons ({len(comparisons)} paired rows):** {off} at budgets "
            f"more than {EPSILON_TOLERANCE:.0%} apart (flagged)."
        )
    return lines


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
        inf = checked[checked["informative"].astype("boolean").fillna(False)]
        line = (
            f"**{pred}**: the bound held (no seed above it) at {held} of "
            f"{len(checked)} grid points; informative at {len(inf)} of them, "
            f"held at {_count(inf, 'holds', True)}"
        )
        why = checked.loc[~checked["informative"].astype("boolean").fillna(False)]
        reasons = why["not_informative"].dropna()
        reasons = reasons[reasons != ""].value_counts()
        if len(reasons):
            line += (
                " (not informative: "
                + "; ".join(f"{k} at {v}" for k, v in reasons.items())
                + ")"
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
        verdict = row.verdict if row.consistent else f"**{row.verdict}**"
        where = f" at {row.at}" if row.at else ""
        dropped = f"; dropped {row.dropped}" if row.dropped else ""
        out.append(
            f"- **{row.prediction}** vs {row.variable}{where}: fitted slope "
            f"{_cell(row.fitted_slope)} (95% interval "
            f"[{_cell(row.ci_low)}, {_cell(row.ci_high)}], {row.points} points, "
            f"at least {row.min_seeds} seeds each{dropped}), "
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
    comparisons: pd.DataFrame | None = None,
) -> str:
    """The text of ``report.md``: it leads with :func:`headline`.

    Args:
        experiment: The experiment's name.
        description: Its description.
        summary: ``summary.csv``.
        slopes: ``slopes.csv``.
        figures: The figure files (linked relative to ``folder``).
        failed: ``{key: record}`` of failed cells.
        facts: Lines of facts about the sweep (``{label: value}``).
        folder: Where ``report.md`` goes.
        comparisons: ``comparisons.csv`` (``None``: the spec declares none).

    Returns:
        Markdown.
    """
    lines = [f"# Sweep `{experiment}`", ""]
    for line in headline(summary, slopes, comparisons):  # one paragraph each
        lines += [line, ""]
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
        "Log-log least squares of the measured mean on the variable over the points "
        "inside the theory's regime (a point leaves when its mean is not positive, "
        f"exceeds {SATURATION:g} times the measurement's ceiling, or where the bound "
        "reaches the ceiling; `dropped` says which); the 95% interval is the union "
        "of the lack-of-fit t interval (residuals across points) and the seed "
        f"bootstrap's. Verdict: *too few points/seeds* below {MIN_POINTS} points or "
        f"{MIN_SEEDS} seeds per point; else *not consistent* when the theory slope "
        f"is outside the interval, *underpowered* when inside one wider than "
        f"{MAX_CI_WIDTH:g}, *consistent* otherwise.",
        "",
        markdown_table(slopes, [*SLOPE_COLUMNS, "at", "points", "min_seeds"]),
        "",
    ]
    if comparisons is not None:
        lines += [
            "## Comparisons (`comparisons.csv`)",
            "",
            "Arms paired by grid point and seed index: median of the per-seed ratio "
            "a/b, two-sided Wilcoxon signed-rank p-value (`min_p`: the smallest it "
            "can be with this many pairs), each arm's spent epsilon; "
            f"`epsilon_match` is false when they differ by more than "
            f"{EPSILON_TOLERANCE:.0%}.",
            "",
            markdown_table(comparisons, [*COMPARISON_COLUMNS, "min_p"]),
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
