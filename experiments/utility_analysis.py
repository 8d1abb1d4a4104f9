"""Paired comparisons of the utility benchmark (``experiments/utility.toml``).

Reads a sweep's cell files and writes, next to them:

* ``cells.csv``: one row per cell: ``problem, entry, n, d, epsilon, delta, seed,
  status`` (``ok``; ``refused``: the entry's plan raised before any private
  computation; ``failed``: anything else), the measurements
  (``excess_empirical_risk``, ``heldout_risk``, ``heldout_excess``,
  ``gradient_norm``), ``epsilon_spent`` (the released point's guarantee at the cell's
  delta), ``seconds`` (the cell's wall time) and ``message`` (a refusal's reason);
* ``comparisons.csv``: for every grid point ``(problem, n, d, epsilon)`` and every
  entry, the entry against each baseline (``dp_sgd``: the library's DP-SGD at its
  defaults; ``dp_sgd_practice``: DP-SGD as practitioners run it; ``best``: the entry
  with the least mean excess risk at that point), **paired by seed** (the seeds both
  finished): ``pairs``, both arms' mean excess risk, ``ratio_of_means``,
  ``median_ratio`` (of the per-seed ratios, over the pairs whose baseline excess is
  positive), ``wins`` (pairs where the entry's excess is lower), the two-sided
  Wilcoxon signed-rank ``p_value`` (``scipy.stats.wilcoxon`` on the paired
  differences; 1 when every difference is 0; exact for few pairs), and both arms'
  mean spent epsilon;
* ``comparisons.md`` (the table at ``epsilon``, with the refusals and failures),
  ``pivot.md`` (every entry's ratio to DP-SGD's default, one column per point) and
  ``figures/excess_by_entry.png`` (excess risk by entry, one panel per problem);
* with ``--default``: ``goal.md`` (issue 24's goal for the default rule).

Every number is a **non-private diagnostic** (it reads the training data).

Usage::

    python experiments/utility_analysis.py experiments/results/utility
    python experiments/utility_analysis.py runs/utility_smoke
    python experiments/utility_analysis.py experiments/results/utility \
        --default experiments/results/utility_default   # + the default rule, goal.md
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from experiments.problems.utility import problem_name  # noqa: E402
from experiments.problems.utility_grid import entry_label  # noqa: E402

__all__ = [
    "BASELINES",
    "cell_table",
    "compare",
    "figure",
    "goal",
    "goal_markdown",
    "main",
    "markdown",
    "paired",
    "pivot_markdown",
    "status_of",
    "with_default",
]

#: The baselines every entry is compared with (``best`` is computed per point).
BASELINES = ("dp_sgd", "dp_sgd_practice", "best")
MEASURES = ("excess_empirical_risk", "heldout_risk", "heldout_excess", "gradient_norm")
POINT = ["problem", "n", "d", "epsilon"]
# The line of dpsample.config.execution that starts the private run: a failure whose
# traceback does not reach it happened while planning (or loading), before any
# private computation: a refusal.
_RUN_LINE = "planned.algorithm.run("


def status_of(record: Mapping[str, Any]) -> str:
    """``ok``, ``refused`` (the plan raised) or ``failed`` (anything else).

    Args:
        record: A cell record (:func:`dpsample.validation.cells.run_cell`).

    Returns:
        The status.

    Examples:
        >>> status_of({"status": "ok"})
        'ok'
        >>> status_of({"status": "failed", "error": {"traceback": "in _plan"}})
        'refused'
        >>> tb = "planned.algorithm.run(key, plan, problem.data)"
        >>> status_of({"status": "failed", "error": {"traceback": tb}})
        'failed'
    """
    if record.get("status") == "ok":
        return "ok"
    tb = str(record.get("error", {}).get("traceback", ""))
    return "failed" if _RUN_LINE in tb else "refused"


def cell_table(records: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """One row per cell record (see the module docstring for the columns).

    Args:
        records: ``{key: record}`` (:func:`dpsample.validation.cells.load_records`).

    Returns:
        The table.
    """
    rows = []
    for key, rec in records.items():
        cfg = rec["config"]
        values = rec.get("measurements", {}).get("values", {})
        data = cfg["data"]
        row = {
            "key": key,
            "problem": problem_name(cfg),
            "entry": entry_label(cfg),
            "n": data.get("n"),
            "d": data.get("d"),
            "epsilon": float(cfg["privacy"]["epsilon"]),
            "delta": float(cfg["privacy"]["delta"]),
            "seed": int(cfg["job"].get("seed", 0)),
            "domain": cfg["domain"]["kind"],
            "status": status_of(rec),
            "epsilon_spent": rec.get("guarantee", {}).get("epsilon", math.nan),
            "seconds": float(rec.get("seconds", math.nan)),
            "message": str(rec.get("error", {}).get("message", "")),
        }
        if row["n"] is None:  # a bundled dataset: n, d are the run's public facts
            facts = rec.get("public", {}).get("problem", {})
            row["n"], row["d"] = facts.get("n"), facts.get("dim")
        for m in MEASURES:
            row[m] = float(values.get(m, math.nan))
        rows.append(row)
    cols = ["key", "problem", "entry", "n", "d", "epsilon", "delta", "seed", "domain"]
    cols += ["status", *MEASURES, "epsilon_spent", "seconds", "message"]
    table = pd.DataFrame(rows, columns=cols)
    return table.sort_values(["problem", "n", "d", "epsilon", "entry", "seed"])


def paired(entry: pd.DataFrame, base: pd.DataFrame, measure: str) -> dict[str, float]:
    """The paired comparison of two arms' rows at one grid point (joined on seed).

    Args:
        entry: The entry's finished rows (``seed``, ``measure``, ``epsilon_spent``).
        base: The baseline's.
        measure: The column compared.

    Returns:
        ``pairs, entry_mean, base_mean, ratio_of_means, median_ratio, wins,
        p_value, entry_epsilon, base_epsilon``.

    Examples:
        >>> import pandas as pd
        >>> a = pd.DataFrame({"seed": range(8), "x": [1.0] * 8, "epsilon_spent": 1.0})
        >>> b = a.assign(x=2.0)
        >>> r = paired(a, b, "x")
        >>> r["ratio_of_means"], r["wins"], round(r["p_value"], 4)
        (0.5, 8, 0.0078)
    """
    cols = ["seed", measure, "epsilon_spent"]
    both = entry[cols].merge(base[cols], on="seed", suffixes=("_e", "_b")).dropna()
    x, y = both[f"{measure}_e"].to_numpy(), both[f"{measure}_b"].to_numpy()
    out = {
        "pairs": len(both),
        "entry_mean": float(x.mean()) if len(x) else math.nan,
        "base_mean": float(y.mean()) if len(y) else math.nan,
        "entry_epsilon": float(both["epsilon_spent_e"].mean()) if len(x) else math.nan,
        "base_epsilon": float(both["epsilon_spent_b"].mean()) if len(x) else math.nan,
        "wins": int(np.sum(x < y)),
    }
    mean_ratio = out["entry_mean"] / out["base_mean"] if out["base_mean"] else math.nan
    out["ratio_of_means"] = mean_ratio
    pos = y > 0
    out["median_ratio"] = float(np.median(x[pos] / y[pos])) if pos.any() else math.nan
    diff = x - y
    if len(diff) == 0:
        out["p_value"] = math.nan
    elif np.all(diff == 0):
        out["p_value"] = 1.0  # a tie: no evidence either way
    else:
        from scipy.stats import wilcoxon

        out["p_value"] = float(wilcoxon(x, y, alternative="two-sided").pvalue)
    return out


def compare(
    cells: pd.DataFrame, measure: str = "excess_empirical_risk"
) -> pd.DataFrame:
    """Every entry against each baseline at every grid point (module docstring).

    An entry that did not finish at a point (refused or failed on some seed) is
    compared on the seeds it finished; one that finished none gets no row. The
    ``best`` entry of a point is the finished entry with the least mean
    ``measure`` among those that finished every seed of the point.

    Args:
        cells: :func:`cell_table`'s table (or a synthetic one with its columns).
        measure: The compared measurement.

    Returns:
        ``comparisons.csv``'s table.
    """
    ok = cells[cells["status"] == "ok"]
    rows = []
    for point, group in ok.groupby(POINT, sort=True):
        seeds = group["seed"].nunique()
        means = {
            e: g[measure].mean()
            for e, g in group.groupby("entry")
            if g["seed"].nunique() == seeds and np.isfinite(g[measure].mean())
        }
        best = min(means, key=means.get) if means else None
        for entry, rows_e in group.groupby("entry"):
            for baseline in BASELINES:
                name = best if baseline == "best" else baseline
                rows_b = group[group["entry"] == name] if name else group.iloc[:0]
                if rows_b.empty:
                    continue
                rows.append(
                    dict(zip(POINT, point, strict=True))
                    | {"entry": entry, "baseline": baseline, "baseline_entry": name}
                    | paired(rows_e, rows_b, measure)
                )
    cols = [*POINT, "entry", "baseline", "baseline_entry", "pairs", "entry_mean"]
    cols += ["base_mean", "ratio_of_means", "median_ratio", "wins", "p_value"]
    cols += ["entry_epsilon", "base_epsilon"]
    return pd.DataFrame(rows, columns=cols)


def with_default(cells: pd.DataFrame, rule: pd.DataFrame) -> pd.DataFrame:
    """The benchmark's cells with the default rule's run (``utility_default.toml``).

    The rule's ``warm_start`` cells become the entry ``default`` (the library's
    default after issue 24); the benchmark's own ``warm_start`` cells (the previous
    default) become ``previous_default``; any other entry of the rule's run (DP-SGD
    on the non-smooth problem, whose default changed) replaces the benchmark's cells
    of the same point and seed.

    Args:
        cells: The benchmark's :func:`cell_table`.
        rule: The default rule run's :func:`cell_table`.

    Returns:
        The merged table.

    Examples:
        >>> import pandas as pd
        >>> row = {"problem": "p", "n": 1, "d": 1, "epsilon": 1.0, "seed": 0}
        >>> a = pd.DataFrame([row | {"entry": "warm_start"}, row | {"entry": "dp_sgd"}])
        >>> b = pd.DataFrame([row | {"entry": "warm_start"}])
        >>> sorted(with_default(a, b)["entry"])
        ['default', 'dp_sgd', 'previous_default']
    """
    old = cells.assign(entry=cells["entry"].replace({"warm_start": "previous_default"}))
    new = rule.assign(entry=rule["entry"].replace({"warm_start": "default"}))
    keys = [*POINT, "entry", "seed"]
    replaced = old.merge(new[keys], on=keys, how="left", indicator=True)
    old = old[(replaced["_merge"] == "left_only").to_numpy()]
    return pd.concat([old, new], ignore_index=True).sort_values(
        [*POINT, "entry", "seed"]
    )


#: Issue 24's goal for the default: within this factor of the best entry's mean
#: excess risk in at least :data:`GOAL_SHARE` of the cells...
GOAL_BEST = 1.25
GOAL_SHARE = 0.9
#: ...and in no cell worse than DP-SGD's default by more than this factor (paired).
GOAL_DP_SGD = 1.10


def goal(comparisons: pd.DataFrame, entry: str = "default") -> pd.DataFrame:
    """Issue 24's goal for ``entry``, point by point.

    Columns: the point, ``vs_best`` (ratio of means to the best entry, paired),
    ``within_best`` (``vs_best <= 1.25``), ``vs_dp_sgd`` (ratio of means to DP-SGD
    at its defaults, paired), its Wilcoxon ``p_dp_sgd``, ``worse_than_dp_sgd``
    (``vs_dp_sgd > 1.10``; a point where DP-SGD refused has no comparison) and
    ``significantly_worse`` (that, with ``p < 0.05``).

    Args:
        comparisons: :func:`compare`'s table.
        entry: The entry judged.

    Returns:
        One row per point where ``entry`` finished.
    """
    mine = comparisons[comparisons["entry"] == entry]
    rows = []
    for point, group in mine.groupby(POINT, sort=True):
        by = {r["baseline"]: r for _, r in group.iterrows()}
        best = by.get("best")
        sgd = by.get("dp_sgd")
        row = dict(zip(POINT, point, strict=True))
        row["excess"] = float(group["entry_mean"].iloc[0])
        row["best_entry"] = None if best is None else best["baseline_entry"]
        row["vs_best"] = math.nan if best is None else float(best["ratio_of_means"])
        row["vs_dp_sgd"] = math.nan if sgd is None else float(sgd["ratio_of_means"])
        row["p_dp_sgd"] = math.nan if sgd is None else float(sgd["p_value"])
        row["wins_dp_sgd"] = None if sgd is None else f"{sgd['wins']}/{sgd['pairs']}"
        rows.append(row)
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    table["within_best"] = table["vs_best"] <= GOAL_BEST
    table["worse_than_dp_sgd"] = table["vs_dp_sgd"] > GOAL_DP_SGD
    table["significantly_worse"] = table["worse_than_dp_sgd"] & (
        table["p_dp_sgd"] < 0.05
    )
    return table


def goal_markdown(table: pd.DataFrame, entry: str = "default") -> str:
    """:func:`goal`'s table and its summary line, in markdown."""
    if table.empty:
        return f"No finished cell of `{entry}`.\n"
    share = float(table["within_best"].mean())
    worse = table[table["worse_than_dp_sgd"]]
    lines = [
        f"`{entry}` within {GOAL_BEST}x of the best entry's mean excess risk at "
        f"{int(table['within_best'].sum())} of {len(table)} points ({share:.0%}; "
        f"goal {GOAL_SHARE:.0%}); worse than DP-SGD's default by more than "
        f"{GOAL_DP_SGD - 1:.0%} at {len(worse)} points "
        f"({int(table['significantly_worse'].sum())} with Wilcoxon p < 0.05).",
        "",
        "| problem | n | d | eps | excess | best entry | vs best | vs dp_sgd "
        "[p, wins] |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for _, r in table.iterrows():
        lines.append(
            f"| {r['problem']} | {r['n']} | {r['d']} | {r['epsilon']:g} | "
            f"{_fmt(r['excess'])} | {r['best_entry']} | {_fmt(r['vs_best'])} | "
            f"{_fmt(r['vs_dp_sgd'])} [{_fmt(r['p_dp_sgd'])}, {r['wins_dp_sgd']}] |"
        )
    return "\n".join(lines) + "\n"


def pivot_markdown(comparisons: pd.DataFrame, baseline: str = "dp_sgd") -> str:
    """Every entry's ratio of means to ``baseline``, one column per grid point.

    A cell reads ``ratio`` with ``*`` when the paired Wilcoxon ``p < 0.05`` (below
    1: the entry is better); ``-`` where the entry did not finish there.

    Args:
        comparisons: :func:`compare`'s table.
        baseline: ``"dp_sgd"``, ``"dp_sgd_practice"`` or ``"best"``.

    Returns:
        Markdown text.

    Examples:
        >>> import pandas as pd
        >>> c = pd.DataFrame([{"problem": "p", "n": 10, "d": 1, "epsilon": 1.0,
        ...     "entry": "net", "baseline": "dp_sgd", "ratio_of_means": 0.5,
        ...     "p_value": 0.01}])
        >>> print(pivot_markdown(c).splitlines()[2])
        | net | 0.5* |
    """
    rows = comparisons[comparisons["baseline"] == baseline]
    points = sorted({tuple(r) for r in rows[POINT].itertuples(index=False)})
    head = [f"{p} n={n} d={d} eps={e:g}" for p, n, d, e in points]
    lines = ["| entry | " + " | ".join(head) + " |", "|---" * (len(head) + 1) + "|"]
    for entry, group in rows.groupby("entry", sort=True):
        by = {tuple(r[POINT]): r for _, r in group.iterrows()}
        cells = []
        for point in points:
            r = by.get(point)
            if r is None:
                cells.append("-")
            else:
                star = "*" if r["p_value"] < 0.05 else ""
                cells.append(f"{_fmt(float(r['ratio_of_means']))}{star}")
        lines.append(f"| {entry} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        if not math.isfinite(v):
            return "-"
        return f"{v:.3g}"
    return str(v)


def markdown(cells: pd.DataFrame, comparisons: pd.DataFrame) -> str:
    """The comparisons as a markdown table, then the refusals and failures.

    Args:
        cells: :func:`cell_table`'s table.
        comparisons: :func:`compare`'s table.

    Returns:
        Markdown text.
    """
    lines = [
        "Excess empirical risk over the non-private multi-start optimum (mean over",
        "the paired seeds; NOT PRIVATE: diagnostics that read the training data).",
        "`vs dp_sgd` / `vs practice` / `vs best`: ratio of means [Wilcoxon p, wins",
        "of the entry / pairs].",
        "",
        "| problem | n | d | eps | entry | excess | eps spent | vs dp_sgd | "
        "vs practice | vs best (entry) | s/cell |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    secs = cells.groupby([*POINT, "entry"])["seconds"].mean()
    for key, group in comparisons.groupby([*POINT, "entry"], sort=True):
        by = {r["baseline"]: r for _, r in group.iterrows()}
        first = next(iter(by.values()))

        def cell(b: str, by: Mapping[str, Any] = by) -> str:
            if b not in by:
                return "-"
            r = by[b]
            text = f"{_fmt(r['ratio_of_means'])} [{_fmt(r['p_value'])}, "
            text += f"{r['wins']}/{r['pairs']}]"
            return text + (f" ({r['baseline_entry']})" if b == "best" else "")

        problem, n, d, eps, entry = key
        lines.append(
            f"| {problem} | {n} | {d} | {eps:g} | {entry} | "
            f"{_fmt(first['entry_mean'])} | {_fmt(first['entry_epsilon'])} | "
            f"{cell('dp_sgd')} | {cell('dp_sgd_practice')} | {cell('best')} | "
            f"{_fmt(float(secs.get(key, math.nan)))} |"
        )
    bad = cells[cells["status"] != "ok"]
    if len(bad):
        lines += [
            "",
            "Refused (the plan raised before any private computation) and failed "
            "cells:",
            "",
            "| problem | n | d | eps | entry | status | seeds | message |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for key, group in bad.groupby([*POINT, "entry", "status"], sort=True):
            problem, n, d, eps, entry, status = key
            msg = str(group["message"].iloc[0]).replace("|", "\\|").replace("\n", " ")
            lines.append(
                f"| {problem} | {n} | {d} | {eps:g} | {entry} | {status} | "
                f"{len(group)} | {msg} |"
            )
    return "\n".join(lines) + "\n"


def figure(cells: pd.DataFrame, path: str | Path) -> Path | None:
    """Excess risk by entry, one panel per problem (its most-run ``(n, d)``).

    Args:
        cells: :func:`cell_table`'s table.
        path: The PNG to write.

    Returns:
        The path, or ``None`` when no cell finished.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = cells[cells["status"] == "ok"]
    if ok.empty:
        return None
    problems = sorted(ok["problem"].unique())
    fig, axes = plt.subplots(
        len(problems), 1, figsize=(9, 2.8 * len(problems)), squeeze=False
    )
    for ax, problem in zip(axes[:, 0], problems, strict=True):
        rows = ok[ok["problem"] == problem]
        n, d = rows.groupby(["n", "d"]).size().idxmax()
        rows = rows[(rows["n"] == n) & (rows["d"] == d)]
        entries = sorted(rows["entry"].unique())
        epsilons = sorted(rows["epsilon"].unique())
        for j, eps in enumerate(epsilons):
            sub = rows[rows["epsilon"] == eps]
            for i, entry in enumerate(entries):
                y = sub.loc[sub["entry"] == entry, "excess_empirical_risk"].to_numpy()
                x = np.full(len(y), i + 0.15 * (j - (len(epsilons) - 1) / 2))
                ax.plot(
                    x,
                    y,
                    "o",
                    ms=3,
                    alpha=0.6,
                    color=f"C{j}",
                    label=f"eps = {eps:g}" if i == 0 else None,
                )
        ax.set_yscale("symlog", linthresh=1e-4)
        ax.set_xticks(range(len(entries)), entries, rotation=30, ha="right", fontsize=7)
        ax.set_title(f"{problem} (n = {n}, d = {d})", fontsize=9)
        ax.set_ylabel("excess F_D (NOT PRIVATE)", fontsize=7)
        ax.legend(fontsize=6)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv: Sequence[str] | None = None) -> int:
    """Write ``cells.csv``, ``comparisons.csv``, ``comparisons.md`` and the figure."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", help="the sweep's output folder (holds cells/)")
    parser.add_argument(
        "--default",
        metavar="RULE_FOLDER",
        help="the default rule's sweep (experiments/utility_default.toml): its "
        "warm_start cells join as the entry 'default', and goal.md judges it",
    )
    args = parser.parse_args(argv)
    from dpsample.validation.cells import load_records

    folder = Path(args.folder)
    records = load_records(folder / "cells")
    if not records:
        print(f"no cell files in {folder / 'cells'}", file=sys.stderr)
        return 2
    cells = cell_table(records)
    if args.default:
        cells = with_default(
            cells, cell_table(load_records(Path(args.default) / "cells"))
        )
    comparisons = compare(cells)
    cells.to_csv(folder / "cells.csv", index=False)
    comparisons.to_csv(folder / "comparisons.csv", index=False)
    (folder / "comparisons.md").write_text(markdown(cells, comparisons))
    (folder / "pivot.md").write_text(pivot_markdown(comparisons))
    written = ["cells.csv", "comparisons.csv", "comparisons.md", "pivot.md"]
    if args.default:
        text = goal_markdown(goal(comparisons))
        (folder / "goal.md").write_text(text)
        written.append("goal.md")
        print(text.splitlines()[0])
    fig = figure(cells, folder / "figures" / "excess_by_entry.png")
    print(f"wrote {folder}/" + ", ".join(written) + (f", {fig}" if fig else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
