"""Benchmark: why the Goldstein finders' defaults end far from DP-SGD (issue 24, s. 2).

The problem their theorem covers in the utility benchmark: ``absolute``
(``experiments/problems/utility.py``), least absolute deviations ``|y - <a, x>|``, rows
in the unit ball, ``G = 1``, non-smooth, range 6 on ``K = Ball(3)``, ``delta = 1e-6``.
Seed ``s`` draws the data from ``jax.random.key(1000 + s)`` and runs every arm with the
run key ``jax.random.key(s)`` (paired by seed, every arm at the cell's whole
``(epsilon, delta)``). Arms:

* ``dp_sgd``: ``dp_sgd`` at its defaults;
* ``zo_corrected`` / ``fo_corrected``: ``goldstein_zero_order`` /
  ``goldstein_first_order`` with ``preset="corrected"`` (the defaults before issue
  24: Theorem 3.1 corrected, ``sizing="practical"``, Mode B);
* ``zo_practical`` / ``fo_practical``: the same finders with ``preset="practical"``
  (single pass, not in the paper: ``Sigma = 1``, the smallest batch ``B`` whose
  release noise norm is at most ``L``, ``T = n / B``, ``D = Phi / (L T)``, ``M = 1``,
  the mean of the last ``ceil(T/2)`` iterates;
  :func:`~dpsample.finders.goldstein.goldstein_theorem_parameters`);
* ``zo_corrected_noiseless`` (diagnosis, the first ``--noiseless`` seeds): the
  ``"corrected"`` zero-order schedule run by
  :func:`~dpsample.finders.goldstein.make_runner` with the tree noise set to zero
  (**not private**): what that schedule reaches without noise.

Measured at the released point (non-private diagnostics): the excess empirical risk
over the exact least-absolute-deviations optimum on ``K`` (HiGHS linear programme,
projected onto ``K``: an upper bound on ``min_K F_D`` when it is outside, never the
case here) and the norm of the empirical risk's (sub)gradient. For every arm against
``dp_sgd``: the median, the median of the per-seed ratios, the seeds at least as close
and the two-sided Wilcoxon signed-rank p-value of the log ratios (exact for 8 pairs:
smallest 2/256). The default plans' noise diagnosis (per-coordinate release noise,
its norm against ``L``, ``eta`` times that norm against ``D``, the random-walk
displacement ``D sqrt(T)`` against the measured ``||x_out - x0||``) is in
``"diagnosis"``. JSON to ``benchmarks/results/goldstein_defaults.json``.

Usage::

    nice -n 10 python benchmarks/bench_goldstein_defaults.py [--cells 1000:10:1]
        [--seeds 8] [--first-seed 0] [--noiseless 2] [--skip-zero-order] [--quick]
"""

from __future__ import annotations

import argparse
import json
import math
import pathlib
import statistics
import sys
import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import scipy.optimize
import scipy.stats

import dpsample
from dpsample.finders.dp_sgd import DPSGD
from dpsample.finders.goldstein import (
    GoldsteinFirstOrder,
    GoldsteinZeroOrder,
    make_runner,
)
from dpsample.plan import Budget

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from experiments.problems import utility  # noqa: E402

OUT = pathlib.Path(__file__).parent / "results" / "goldstein_defaults.json"
DELTA = 1e-6
RADIUS = 3.0
LIPSCHITZ, GAP = 1.0, 6.0
CELLS = ("1000:10:1",)


def make_problem(n: int, d: int, seed: int) -> dpsample.Problem:
    """The utility benchmark's ``absolute`` problem on the data of ``seed``."""
    data = utility.make_absolute(jax.random.key(1000 + seed), n, d)
    return dpsample.Problem(
        utility.absolute(),
        data,
        dpsample.Ball(RADIUS, dim=d),
        lipschitz=LIPSCHITZ,
        loss_range=GAP,
        loss_floor=0.0,
    )


def risk_floor(problem: dpsample.Problem) -> float:
    """``F_D`` at the exact LAD solution (linear programme), projected onto ``K``."""
    a = np.asarray(problem.data["x"])
    y = np.asarray(problem.data["y"])
    n, d = a.shape
    cost = np.r_[np.zeros(d), np.ones(n) / n]
    a_ub = np.block([[a, -np.eye(n)], [-a, -np.eye(n)]])
    res = scipy.optimize.linprog(
        cost,
        A_ub=a_ub,
        b_ub=np.r_[y, -y],
        bounds=[(None, None)] * d + [(0, None)] * n,
        method="highs",
    )
    x = res.x[:d]
    norm = float(np.linalg.norm(x))
    if norm > RADIUS:
        x = x * RADIUS / norm
    return float(problem.empirical_risk(jnp.asarray(x)))


def measure(problem: dpsample.Problem, floor: float, x: Any) -> dict[str, float]:
    """Excess empirical risk and (sub)gradient norm at ``x``."""
    x = jnp.asarray(x, jnp.float64)
    g = jax.grad(problem.empirical_risk)(x)
    return {
        "grad_norm": float(jnp.linalg.norm(g)),
        "excess_risk": float(problem.empirical_risk(x)) - floor,
        "norm": float(jnp.linalg.norm(x)),
    }


def diagnosis(plan: Any) -> dict[str, float]:
    """The default plan's noise against its signal and step (public numbers)."""
    p = plan.params
    d = plan.spec.dim
    sigma = float(p["tree_sigma"].value)
    t = int(p["num_iters"].value)
    big_d = float(p["clip_radius"].value)
    eta = float(p["step_size"].value)
    return {
        "release_noise_std_per_coordinate": sigma,
        "release_noise_norm_over_L": sigma * math.sqrt(d) / LIPSCHITZ,
        "eta_noise_norm_over_D": eta * sigma * math.sqrt(d) / big_d,
        "random_walk_displacement_D_sqrt_T": big_d * math.sqrt(t),
        "num_iters": t,
        "clip_radius": big_d,
        "alpha": float(p["alpha"].value),
        "period": int(p["period"].value),
        "num_directions": int(p["num_directions"].value),
    }


def _paired_p(ratios: list[float]) -> float:
    """Two-sided Wilcoxon signed-rank p-value of ``log(arm / dp_sgd)``."""
    logs = np.log(ratios)
    if np.all(logs == 0):
        return 1.0
    return float(scipy.stats.wilcoxon(logs).pvalue)


def run_cell(
    cell: str, seeds: range, noiseless: int, zero_order: bool
) -> dict[str, Any]:
    """Every arm on every seed of one cell."""
    n_text, d_text, eps_text = cell.split(":")
    n, d, eps = int(n_text), int(d_text), float(eps_text)
    budget = Budget(eps, DELTA)
    spec = make_problem(n, d, 0).spec
    plans: dict[str, Any] = {"dp_sgd": (DPSGD(), DPSGD().plan(spec, budget))}
    finders = {"fo": GoldsteinFirstOrder()}
    if zero_order:
        finders = {"zo": GoldsteinZeroOrder()} | finders
    for short, alg in finders.items():
        for preset in ("corrected", "practical"):
            plans[f"{short}_{preset}"] = (alg, alg.plan(spec, budget, preset=preset))
    rows: dict[str, list[dict[str, float]]] = {}
    wall: dict[str, float] = {}

    def timed(arm: str, fn: Any, *args: Any) -> Any:
        t0 = time.perf_counter()
        out = fn(*args)
        wall[arm] = wall.get(arm, 0.0) + time.perf_counter() - t0
        return out

    noiseless_runner = None
    for i, seed in enumerate(seeds):
        prob = make_problem(n, d, seed)
        floor = risk_floor(prob)
        key = jax.random.key(seed)
        for arm, (alg, plan) in plans.items():
            res = timed(arm, alg.run, key, plan, prob.data)
            rows.setdefault(arm, []).append(measure(prob, floor, res.value))
            if arm == "zo_corrected" and i < noiseless:
                if noiseless_runner is None:
                    noiseless_runner = make_runner(
                        prob.loss_fn, dict(res.info.plan.items())
                    )
                out = noiseless_runner(key, prob.data, jnp.zeros(d), 0.0, 0.0, 0.0)
                rows.setdefault("zo_corrected_noiseless", []).append(
                    measure(prob, floor, out.value)
                )
        print(
            f"  seed {seed}: "
            + ", ".join(f"{a} {v[-1]['excess_risk']:.3g}" for a, v in rows.items()),
            flush=True,
        )
    keys = ("num_iters", "anchor_batch", "period", "clip_radius", "num_directions")
    out_cell: dict[str, Any] = {
        "cell": cell,
        "seeds": [seeds.start, seeds.stop - 1],
        "plans": {
            arm: {k: plan[k] for k in keys} | {"sigma": plan["tree_sigma"]}
            for arm, (_, plan) in plans.items()
            if arm != "dp_sgd"
        },
        "diagnosis": {
            arm: diagnosis(plan) for arm, (_, plan) in plans.items() if arm != "dp_sgd"
        },
        "wall_s": wall,
        "arms": {},
    }
    base = rows["dp_sgd"]
    for arm, vals in rows.items():
        entry: dict[str, Any] = {}
        pairs = list(zip(vals, base[: len(vals)], strict=True))
        for metric in ("grad_norm", "excess_risk", "norm"):
            xs = [v[metric] for v in vals]
            ratios = [v[metric] / max(b[metric], 1e-300) for v, b in pairs]
            entry[metric] = {
                "median": statistics.median(xs),
                "median_ratio_to_dp_sgd": statistics.median(ratios),
                "seeds_at_least_as_close": sum(
                    v[metric] <= b[metric] for v, b in pairs
                ),
                "wilcoxon_p": _paired_p(ratios)
                if arm != "dp_sgd" and len(pairs) > 1
                else None,
                "per_seed": xs,
            }
        out_cell["arms"][arm] = entry
    for short in finders:  # the new preset against the old, paired by seed
        new, old = rows[f"{short}_practical"], rows[f"{short}_corrected"]
        ratios = [
            a["excess_risk"] / b["excess_risk"] for a, b in zip(new, old, strict=True)
        ]
        out_cell["arms"][f"{short}_practical"]["vs_corrected"] = {
            "median_ratio": statistics.median(ratios),
            "seeds_better": sum(r < 1 for r in ratios),
            "wilcoxon_p": _paired_p(ratios) if len(ratios) > 1 else None,
        }
    return out_cell


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--noiseless", type=int, default=2)
    parser.add_argument("--skip-zero-order", action="store_true")
    parser.add_argument("--cells", nargs="+", default=list(CELLS))
    parser.add_argument("--out", default=str(OUT))
    parser.add_argument(
        "--quick", action="store_true", help="first cell, 2 seeds, no noiseless run"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.seeds, args.cells, args.noiseless = 2, args.cells[:1], 0
    jax.config.update("jax_enable_x64", True)  # the measurements in float64
    t_all = time.perf_counter()
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    results = []
    for cell in args.cells:
        t0 = time.perf_counter()
        res = run_cell(cell, seeds, args.noiseless, not args.skip_zero_order)
        res["cell_wall_s"] = time.perf_counter() - t0
        results.append(res)
        print(f"{cell} ({res['cell_wall_s']:.0f} s) plans {res['plans']}")
        print(f"  diagnosis {res['diagnosis']}")
        for arm, e in res["arms"].items():
            g, r = e["grad_norm"], e["excess_risk"]
            print(
                f"  {arm:22s} excess med {r['median']:.3g} "
                f"(x{r['median_ratio_to_dp_sgd']:.3g} of dp_sgd, "
                f"{r['seeds_at_least_as_close']} <=, p {r['wilcoxon_p']})  "
                f"|grad| med {g['median']:.3g} (x{g['median_ratio_to_dp_sgd']:.3g})"
            )
            if "vs_corrected" in e:
                print(f"    vs corrected: {e['vs_corrected']}")
        sys.stdout.flush()
    payload = {
        "command": "nice -n 10 python benchmarks/bench_goldstein_defaults.py "
        + " ".join(argv if argv is not None else sys.argv[1:]),
        "delta": DELTA,
        "total_wall_s": time.perf_counter() - t_all,
        "cells": results,
    }
    pathlib.Path(args.out).write_text(json.dumps(payload, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
