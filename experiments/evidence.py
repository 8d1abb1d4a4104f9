"""What the evidence says: one table of every tested paper claim (issue 26 item 5).

Reads each committed experiment's tables (``experiments/results/NAME/summary.csv``,
``slopes.csv``, ``comparisons.csv``) and counts, per prediction:

* **rows**: grid points with a bound; **informative**: those whose bound is below the
  measurement's trivial ceiling and whose start point does not already meet it (the
  ``informative`` column); **hold / fail**: among the informative rows only;
* **slopes**: the verdicts of the fitted rates (``consistent`` only where the theory's
  slope lies inside a CI that includes misfit across points; ``underpowered``, ``too
  few points/seeds`` and ``no fit`` are not evidence either way);

and per comparison the paired points and how many differ at Wilcoxon ``p < 0.05``, and
in which direction. The table goes between the markers ``<!-- evidence:start -->`` and
``<!-- evidence:end -->`` of ``docs/validation.md``.

    python experiments/evidence.py            # rewrite the table in docs/validation.md
    python experiments/evidence.py --print    # print it only
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "experiments" / "results"
PAGE = ROOT / "docs" / "validation.md"
START, END = "<!-- evidence:start -->", "<!-- evidence:end -->"
#: Slope verdicts that are evidence (for or against the theory's rate).
DECISIVE = ("consistent", "inconsistent")
#: A comparison's measurement whose name contains one of these is better when larger
#: (an accuracy); every other one (excess risk, gradient norm, gap) when smaller.
HIGHER_IS_BETTER = ("accuracy",)


def _read(path: Path) -> pd.DataFrame:
    if not path.exists() or path.stat().st_size == 0:
        return pd.DataFrame()
    try:
        return pd.read_csv(path)
    except pd.errors.EmptyDataError:
        return pd.DataFrame()


def _truth(column: pd.Series) -> pd.Series:
    """A CSV boolean column (True/False/blank) as booleans, blank as False."""
    return column.map(lambda v: str(v).strip().lower() == "true")


def claims(results: Path = RESULTS) -> pd.DataFrame:
    """One row per (experiment, prediction): rows, informative, hold, fail, slopes.

    Args:
        results: The folder of experiments' results (one sub-folder each).

    Returns:
        Columns ``experiment, prediction, rows, informative, hold, fail, slopes``
        (``slopes``: ``"verdict xN"`` joined by ``", "``, empty where none was fitted).
    """
    out = []
    for folder in sorted(p for p in results.iterdir() if p.is_dir()):
        summary = _read(folder / "summary.csv")
        slopes = _read(folder / "slopes.csv")
        if summary.empty:
            continue
        for prediction, rows in summary.groupby("prediction", sort=False):
            has_bound = rows["bound"].notna() if "bound" in rows else rows.index < 0
            informative = _truth(rows.get("informative", pd.Series(dtype=object)))
            holds = _truth(rows.get("holds_informative", pd.Series(dtype=object)))
            info = has_bound & informative
            verdicts = ""
            if not slopes.empty and "prediction" in slopes:
                mine = slopes[slopes["prediction"] == prediction]
                counts = mine["verdict"].value_counts()
                verdicts = ", ".join(f"{v} x{int(c)}" for v, c in counts.items())
            out.append(
                {
                    "experiment": folder.name,
                    "prediction": prediction,
                    "rows": int(has_bound.sum()),
                    "informative": int(info.sum()),
                    "hold": int((info & holds).sum()),
                    "fail": int((info & ~holds).sum()),
                    "slopes": verdicts,
                }
            )
    return pd.DataFrame(
        out,
        columns=[
            "experiment",
            "prediction",
            "rows",
            "informative",
            "hold",
            "fail",
            "slopes",
        ],
    )


def comparisons(results: Path = RESULTS, alpha: float = 0.05) -> pd.DataFrame:
    """One row per (experiment, comparison): points, and A better / worse at ``p``.

    "A better" is a median ratio ``A/B < 1`` (a smaller measurement: excess risk,
    gradient norm, gap), or ``A/B > 1`` where the measurement (``measurement_a``) is
    one of :data:`HIGHER_IS_BETTER` (an accuracy), with a paired p-value below
    ``alpha``; points whose arms'
    spent epsilons do not agree within 2% are counted apart (``unmatched``), and
    ``testable`` counts the points whose number of pairs can reach ``p < alpha`` at
    all (the test's smallest attainable p-value, ``min_p``).
    """
    out = []
    for folder in sorted(p for p in results.iterdir() if p.is_dir()):
        comp = _read(folder / "comparisons.csv")
        if comp.empty or "comparison" not in comp:
            continue
        for name, rows in comp.groupby("comparison", sort=False):
            matched = _truth(rows["epsilon_match"])
            significant = matched & (rows["p_value"] < alpha)
            names = rows.get("measurement_a", pd.Series("", index=rows.index))
            higher = names.astype(str).apply(
                lambda m: any(word in m for word in HIGHER_IS_BETTER)
            )
            lower_a = rows["median_ratio"] < 1
            higher_a = rows["median_ratio"] > 1
            better = (lower_a & ~higher) | (higher_a & higher)
            worse = (higher_a & ~higher) | (lower_a & higher)
            out.append(
                {
                    "experiment": folder.name,
                    "comparison": name,
                    "points": int(len(rows)),
                    "unmatched": int((~matched).sum()),
                    "testable": int((rows["min_p"] < alpha).sum()),
                    "a_better": int((significant & better).sum()),
                    "a_worse": int((significant & worse).sum()),
                }
            )
    return pd.DataFrame(
        out,
        columns=[
            "experiment",
            "comparison",
            "points",
            "unmatched",
            "testable",
            "a_better",
            "a_worse",
        ],
    )


def _verdicts(slopes: pd.Series) -> str:
    """``"verdict xN, ..."`` summed over the ``slopes`` strings of several rows."""
    counts: dict[str, int] = {}
    for text in slopes:
        for part in filter(None, str(text).split(", ")):
            verdict, _, k = part.rpartition(" x")
            counts[verdict] = counts.get(verdict, 0) + int(k)
    return ", ".join(f"{v} x{k}" for v, k in counts.items()) or "-"


def render(claim_table: pd.DataFrame, comparison_table: pd.DataFrame) -> str:
    """The Markdown: totals, one row per experiment, the bounded predictions."""
    n_info = int(claim_table["informative"].sum())
    n_hold = int(claim_table["hold"].sum())
    decisive = claim_table["slopes"].str.contains("|".join(DECISIVE), regex=True)
    lines = [
        f"**{n_hold} of {n_info} informative rows hold** "
        f"({int(claim_table['rows'].sum())} rows with a bound; a row is informative "
        "where its bound is below the measurement's trivial ceiling and the start "
        "point does not already meet it). Fitted rates that are evidence either way "
        f"(consistent or inconsistent): **{int(decisive.sum())}** predictions; "
        "the others have too few points or seeds, or a CI wider than the stated "
        "width (underpowered).",
        "",
        "| experiment | predictions | rows with a bound | informative | hold | fail "
        "| slope verdicts |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, rows in claim_table.groupby("experiment", sort=False):
        lines.append(
            f"| {name} | {len(rows)} | {int(rows['rows'].sum())} | "
            f"{int(rows['informative'].sum())} | {int(rows['hold'].sum())} | "
            f"{int(rows['fail'].sum())} | {_verdicts(rows['slopes'])} |"
        )
    bounded = claim_table[claim_table["rows"] > 0]
    lines += [
        "",
        "The predictions with a bound:",
        "",
        "| experiment | prediction | rows | informative | hold | fail | slopes |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in bounded.itertuples(index=False):
        lines.append(
            f"| {r.experiment} | {r.prediction} | {r.rows} | {r.informative} | "
            f"{r.hold} | {r.fail} | {r.slopes or '-'} |"
        )
    if not comparison_table.empty:
        lines += [
            "",
            "Paired comparisons (arm A against arm B, by seed, Wilcoxon p < 0.05, "
            "equal budgets within 2%):",
            "",
            "| experiment | comparison (A vs B) | points | budgets unmatched "
            "| enough pairs for p < 0.05 | A better | A worse |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in comparison_table.itertuples(index=False):
            lines.append(
                f"| {r.experiment} | {r.comparison} | {r.points} | {r.unmatched} | "
                f"{r.testable} | {r.a_better} | {r.a_worse} |"
            )
    return "\n".join(lines) + "\n"


def write_page(text: str, page: Path = PAGE) -> None:
    """Replace the block between the markers of ``page`` with ``text``."""
    body = page.read_text(encoding="utf-8")
    if START not in body or END not in body:
        raise SystemExit(f"{page} lacks the markers {START} ... {END}")
    head, rest = body.split(START, 1)
    _, tail = rest.split(END, 1)
    page.write_text(f"{head}{START}\n{text}{END}{tail}", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    """Print or write the evidence table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--print", action="store_true", help="print; write nothing")
    args = ap.parse_args(argv)
    text = render(claims(), comparisons())
    if args.print:
        print(text)
    else:
        write_page(text)
        print(f"wrote the evidence table into {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
