"""Benchmark: DP-SPIDER's defaults against DP-SGD's at equal budget (issue 24, sec. 2).

Problems Theorem 3.2 (Arora et al. Thm B.3) covers: smooth, Lipschitz, a public
initial gap, on a ball. Every cell is one problem at one ``(d, epsilon)``, ``n = 2000``,
``delta = 1e-6``, 8 seeds; seed ``s`` draws the data from ``jax.random.key(1000 + s)``
and runs every arm with the run key ``jax.random.key(s)`` (paired by seed: the same
data, the same budget, each arm its own schedule):

* ``cosine``: ``experiments/problems/warm_start_003.py``'s cosine,
  ``f(x; z) = -(1/sqrt d) sum_j cos(x_j - z_j)``, ``z ~ N(1, 0.25 I)``, on
  ``K = Ball(2 sqrt d)`` with its exact constants ``G = 1``, ``M = 1/sqrt d``,
  range ``2 sqrt d``; ``d = 5, 10``, ``epsilon = 1, 4``.
* ``logistic``: ``experiments/problems/utility.py``'s logistic GLM (rows on the unit
  sphere, labels from ``w* = 2 u``), the library's ``logistic_nonconvex(reg=0)`` with
  its derived constants on ``K = Ball(4)``; ``d = 10``, ``epsilon = 1, 4``.

Arms (each at the cell's whole ``(epsilon, delta)``):

* ``dp_sgd``: ``dp_sgd`` at its defaults (tail average of the last ``ceil(T/2)``);
* ``spider_theorem``: ``dp_spider(preset="theorem")``: Thm B.3's schedule and its
  uniform random iterate (the defaults before this change);
* ``spider_theorem_tail`` / ``spider_theorem_last``: the same run (same key, same
  iterates), released by the tail average / the last iterate (post-processing);
* ``spider_default``: ``dp_spider`` at its current defaults.

Measured at the released point (non-private diagnostics, they read the data): the
gradient norm of the empirical risk ``||grad F_D||`` and the excess empirical risk
``F_D - min_K F_D`` (cosine: closed form; logistic: projected gradient descent, convex,
20,000 steps of ``1/M``). Reported per cell and arm: the median over seeds, and for
every arm against ``dp_sgd`` the median of the per-seed ratios, the number of seeds on
which the arm is at least as close, and the two-sided Wilcoxon signed-rank p-value of
the per-seed log ratios (exact for 8 pairs: its smallest value is 2/256 = 0.0078).
JSON to ``benchmarks/results/spider_defaults.json``.

Usage::

    nice -n 15 python benchmarks/bench_spider_defaults.py [--cells cosine:5:1 ...]
        [--quick]
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
import scipy.stats

import dpsample
from dpsample.finders.dp_sgd import DPSGD
from dpsample.finders.dp_spider import DPSpider
from dpsample.finders.outputs import release
from dpsample.losses import logistic_nonconvex
from dpsample.plan import Budget

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from experiments.problems import utility, warm_start_003  # noqa: E402

OUT = pathlib.Path(__file__).parent / "results" / "spider_defaults.json"
N = 2000
DELTA = 1e-6
CELLS = ("cosine:5:1", "cosine:5:4", "cosine:10:1", "cosine:10:4")
CELLS += ("logistic:10:1", "logistic:10:4")


def make_problem(name: str, d: int, seed: int) -> dpsample.Problem:
    """The cell's problem on the data of ``seed``."""
    key = jax.random.key(1000 + seed)
    if name == "cosine":
        r = math.sqrt(d)
        return dpsample.Problem(
            warm_start_003.cosine(1.0),
            warm_start_003.make_cosine(key, N, d),
            dpsample.Ball(2.0 * r, dim=d),
            lipschitz=1.0,
            smoothness=1.0 / r,
            hessian_lipschitz=1.0 / r,
            loss_range=2.0 * r,
        )
    loss = logistic_nonconvex(reg=0.0)
    c = loss.constants(radius=4.0)
    return dpsample.Problem(
        loss.loss_fn,
        utility.make_logistic(key, N, d),
        dpsample.Ball(4.0, dim=d),
        lipschitz=c.lipschitz,
        smoothness=c.smoothness,
        hessian_lipschitz=c.hessian_lipschitz,
        loss_range=c.loss_range,
    )


def risk_floor(name: str, problem: dpsample.Problem) -> float:
    """``min_K F_D`` (non-private reference)."""
    if name == "cosine":
        z = np.asarray(problem.data["x"])
        c, s = np.cos(z).mean(axis=0), np.sin(z).mean(axis=0)
        return float(-np.sum(np.hypot(c, s)) / math.sqrt(z.shape[1]))
    grad = jax.jit(jax.grad(problem.empirical_risk))
    step = 1.0 / float(problem.smoothness)

    def body(_: int, x: Any) -> Any:
        return problem.domain.project(x - step * grad(x))

    x = jax.lax.fori_loop(0, 20_000, body, jnp.zeros(problem.dim))
    return float(problem.empirical_risk(x))


def measure(problem: dpsample.Problem, floor: float, x: Any) -> dict[str, float]:
    """Gradient norm and excess empirical risk at ``x``."""
    g = jax.grad(problem.empirical_risk)(x)
    return {
        "grad_norm": float(jnp.linalg.norm(g)),
        "excess_risk": float(problem.empirical_risk(x)) - floor,
    }


def _paired_p(ratios: list[float]) -> float:
    """Two-sided Wilcoxon signed-rank p-value of ``log(arm / dp_sgd)`` (exact)."""
    return float(scipy.stats.wilcoxon(np.log(ratios)).pvalue)


def run_cell(cell: str, seeds: int, spider_options: dict[str, Any]) -> dict[str, Any]:
    """Every arm on every seed of one cell."""
    name, d_text, eps_text = cell.split(":")
    d, eps = int(d_text), float(eps_text)
    budget = Budget(eps, DELTA)
    spec = make_problem(name, d, 0).spec
    sgd_plan = DPSGD().plan(spec, budget)
    thm_plan = DPSpider().plan(spec, budget, preset="theorem", return_iterates=True)
    new_plan = DPSpider().plan(spec, budget, **spider_options)
    rows: dict[str, list[dict[str, float]]] = {}
    wall: dict[str, float] = {}
    for seed in range(seeds):
        prob = make_problem(name, d, seed)
        floor = risk_floor(name, prob)
        key = jax.random.key(seed)
        t0 = time.perf_counter()
        sgd = DPSGD().run(key, sgd_plan, prob.data)
        wall["dp_sgd"] = wall.get("dp_sgd", 0.0) + time.perf_counter() - t0
        rows.setdefault("dp_sgd", []).append(measure(prob, floor, sgd.value))
        t0 = time.perf_counter()
        thm = DPSpider().run(key, thm_plan, prob.data)
        wall["spider_theorem"] = wall.get("spider_theorem", 0.0)
        wall["spider_theorem"] += time.perf_counter() - t0
        rows.setdefault("spider_theorem", []).append(measure(prob, floor, thm.value))
        k_out = jax.random.split(key)[1]  # the run's own output key
        for rule in ("tail_average", "last"):
            x, _ = release(k_out, thm.info.iterates, rule, prob.domain)
            arm = "spider_theorem_" + ("tail" if rule == "tail_average" else rule)
            rows.setdefault(arm, []).append(measure(prob, floor, x))
        t0 = time.perf_counter()
        new = DPSpider().run(key, new_plan, prob.data)
        wall["spider_default"] = wall.get("spider_default", 0.0)
        wall["spider_default"] += time.perf_counter() - t0
        rows.setdefault("spider_default", []).append(measure(prob, floor, new.value))
    out: dict[str, Any] = {
        "cell": cell,
        "plans": {
            "dp_sgd": {k: sgd_plan[k] for k in ("num_steps", "batch_size")},
            "spider_theorem": {k: thm_plan[k] for k in ("num_steps", "phase_length")},
            "spider_default": {
                k: new_plan[k] for k in ("num_steps", "phase_length", "output")
            },
        },
        "wall_s": wall,
        "arms": {},
    }
    base = rows["dp_sgd"]
    for arm, vals in rows.items():
        entry: dict[str, Any] = {}
        for metric in ("grad_norm", "excess_risk"):
            xs = [v[metric] for v in vals]
            ratios = [
                v[metric] / max(b[metric], 1e-300)
                for v, b in zip(vals, base, strict=True)
            ]
            entry[metric] = {
                "median": statistics.median(xs),
                "median_ratio_to_dp_sgd": statistics.median(ratios),
                "seeds_at_least_as_close": sum(
                    v[metric] <= b[metric] for v, b in zip(vals, base, strict=True)
                ),
                "wilcoxon_p": _paired_p(ratios) if arm != "dp_sgd" else None,
                "per_seed": xs,
            }
        out["arms"][arm] = entry
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--cells", nargs="+", default=list(CELLS))
    parser.add_argument("--out", default=str(OUT))
    parser.add_argument("--quick", action="store_true", help="first cell, 2 seeds")
    args = parser.parse_args(argv)
    if args.quick:
        args.seeds, args.cells = 2, args.cells[:1]
    jax.config.update("jax_enable_x64", True)  # the measurements in float64
    t_all = time.perf_counter()
    results = []
    for cell in args.cells:
        t0 = time.perf_counter()
        res = run_cell(cell, args.seeds, {})
        res["cell_wall_s"] = time.perf_counter() - t0
        results.append(res)
        print(f"{cell}  ({res['cell_wall_s']:.0f} s)  plans {res['plans']}")
        for arm, e in res["arms"].items():
            g, r = e["grad_norm"], e["excess_risk"]
            print(
                f"  {arm:22s} |grad| med {g['median']:.3g} "
                f"(x{g['median_ratio_to_dp_sgd']:.2f} of dp_sgd, "
                f"{g['seeds_at_least_as_close']}/{args.seeds} <=)  "
                f"excess med {r['median']:.3g} (x{r['median_ratio_to_dp_sgd']:.2f}, "
                f"{r['seeds_at_least_as_close']}/{args.seeds} <=)"
            )
        sys.stdout.flush()
    payload = {
        "command": "nice -n 15 python benchmarks/bench_spider_defaults.py "
        + " ".join(argv if argv is not None else sys.argv[1:]),
        "n": N,
        "delta": DELTA,
        "seeds": args.seeds,
        "total_wall_s": time.perf_counter() - t_all,
        "cells": results,
    }
    pathlib.Path(args.out).write_text(json.dumps(payload, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
