"""Where the proximal Gibbs route plans: a table by d, n and epsilon (public only).

Every cell is a *plan* of ``Gibbs()`` (the proximal route at its defaults: the cap
``beta G D <= c_gen log n``, GLL's proven step constant, ``tv_fraction = 1/2``,
``max_proximal_steps = 10^6``) on a canonical spec: ``K`` = the unit ball (``D =
2``), ``G = 1``, loss range ``B = 2``, non-convex, ``delta = 1e-6``. No data is read
and nothing runs: a plan is public arithmetic, so the table costs seconds.

A cell shows ``ok`` with the schedule's steps and per-example evaluations, or the
refusal: the steps the schedule would need (``T``) and why it is refused ("over
10^6": ``max_proximal_steps``; "TV": the per-step RGO budget ``tau/(2T)`` is below
what float64 budgets reach), and the ``beta`` that the refusal offers (found by the
public search of :meth:`dpsample.base.PrivateAlgorithm.plan`: the largest value
checked to plan), with its evaluations.

Usage: ``python benchmarks/gibbs_proximal_feasibility.py [--markdown]``; the
markdown table goes to stdout (it is the table of ``docs/samplers_proximal.md``)
and the rows to ``benchmarks/results/gibbs_proximal_feasibility.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import time
from pathlib import Path

import jax.numpy as jnp
import numpy as np

from dpsample import Ball, Budget, Problem
from dpsample.errors import PlanRefusal
from dpsample.samplers.gibbs import Gibbs

DIMS = (1, 2, 5, 10, 20)
SIZES = (1_000, 10_000, 100_000)
EPSILONS = (0.25, 1.0, 4.0)
DELTA = 1e-6
OUT = Path(__file__).parent / "results" / "gibbs_proximal_feasibility.json"


def spec(d: int, n: int):  # noqa: ANN201 - a ProblemSpec
    """The canonical public spec (the loss is never evaluated: plans only)."""
    return Problem(
        lambda x, z: jnp.sum(jnp.abs(x - z)) / math.sqrt(d),
        np.zeros((n, d)),
        Ball(1.0, dim=d),
        lipschitz=1.0,
        loss_range=2.0,
    ).spec


def cell(d: int, n: int, eps: float) -> dict:
    """One plan at the defaults: its outcome, as public facts."""
    row: dict = {"d": d, "n": n, "epsilon": eps}
    t0 = time.perf_counter()
    try:
        plan = Gibbs().plan(spec(d, n), Budget(eps, DELTA))
    except PlanRefusal as refusal:
        text = str(refusal)
        steps = re.search(r"T=(\d+) steps|needs ([\d,]+) steps", text)
        row["outcome"] = "refused"
        row["steps_needed"] = (
            int((steps.group(1) or steps.group(2)).replace(",", "")) if steps else None
        )
        row["why"] = "TV" if "too small" in text else "steps"
        row["beta_cap"] = float(re.search(r"beta = ([0-9.e+-]+)", text).group(1))
        if refusal.fix is not None:
            row["beta_offered"] = float(refusal.fix[1])
            row["offered_gives"] = refusal.fix[2]
    else:
        row["outcome"] = "ok"
        row["beta_cap"] = plan["beta"]
        row["steps"] = plan["num_steps"]
        row["evaluations"] = plan.cost.evaluations
        row["spent_epsilon"] = plan.spent_epsilon()
    row["plan_seconds"] = round(time.perf_counter() - t0, 2)
    return row


def markdown(rows: list[dict]) -> str:
    """The table of the docs: one line per (d, n), one column per epsilon."""
    head = "| d | n | " + " | ".join(f"eps = {e:g}" for e in EPSILONS) + " |"
    lines = [head, "|---|---|" + "---|" * len(EPSILONS)]
    by = {(r["d"], r["n"], r["epsilon"]): r for r in rows}
    for d in DIMS:
        for n in SIZES:
            cells = []
            for e in EPSILONS:
                r = by[(d, n, e)]
                if r["outcome"] == "ok":
                    cells.append(f"ok: {r['steps']:,} steps")
                    continue
                need = r.get("steps_needed")
                why = "over 10^6" if r["why"] == "steps" else "TV unreachable"
                text = f"refused ({why}; T = {need:.2g})" if need else "refused"
                if "beta_offered" in r:
                    gives = re.match(r"([\d,]+) per-example", r["offered_gives"])
                    ev = f", {float(gives.group(1).replace(',', '')):.2g} evals"
                    text += f"; beta = {r['beta_offered']:.3g}{ev if gives else ''}"
                    text += f" (cap {r['beta_cap']:.3g})"
                else:
                    text += "; no beta plans"
                cells.append(text)
            lines.append(f"| {d} | {n:,} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true", help="print the table")
    args = parser.parse_args()
    rows = []
    for d in DIMS:
        for n in SIZES:
            for eps in EPSILONS:
                rows.append(cell(d, n, eps))
                if not args.markdown:
                    print(rows[-1], flush=True)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(rows, indent=1) + "\n")
    if args.markdown:
        print(markdown(rows))


if __name__ == "__main__":
    main()
