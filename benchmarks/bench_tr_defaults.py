"""Benchmark: DP-TR / DP-STR's defaults against DP-SGD's at equal budget (issue 24).

Problems Theorems 15/18 (seed 001) cover: twice differentiable with declared
Lipschitz ``G``, smoothness ``M`` and Hessian-Lipschitz ``rho``, unconstrained (the
trust-region steps are not projected). From ``experiments/problems/utility.py``,
``delta = 1e-6``; seed ``s`` draws the data from ``jax.random.key(1000 + s)`` and
runs every arm with ``jax.random.key(s)`` (paired by seed: the same data and budget,
each arm its own schedule):

* ``saddle``: ``sum_j s_j cos(x_j - z_j)``, ``G = sqrt d``, ``M = rho = 1``,
  range ``2 d``, start at the strict saddle (the origin);
* ``welsch``: the library's ``welsch(1)`` robust regression with 10% outliers
  (``G = e^{-1/2}``, ``M = 1``, ``rho = 1.3803``, range ``1/2``).

* ``logistic``: the utility grid's logistic GLM (``logistic_nonconvex(reg=0)``: ``G
  = 1``, ``M = 1/4``, ``rho = 1/(6 sqrt 3)`` on all of ``R^d``). Its range is not
  bounded on ``R^d`` (the utility grid runs it on ``Ball(4)``, which DP-TR refuses,
  so it has no DP-TR entry there), but ``L(0) = ln 2`` and ``L >= 0`` make
  ``initial_gap = ln 2`` a public bound from the origin: the trust-region arms run
  unconstrained with it; ``dp_sgd`` runs as in the utility grid, on ``Ball(4)``
  (the minimiser, norm about 2, is inside).

Arms (each at the cell's whole ``(epsilon, delta)``): ``dp_sgd`` at its defaults;
``tr_theorem`` / ``str_theorem``: ``preset="theorem"`` (Theorem 15/18's schedule,
stopping rule and output: the defaults before this change); ``tr_default`` /
``str_default``: the current defaults (``preset="practical"``).

Measured at the released point (non-private diagnostics): ``||grad F_D||`` and
``F_D - min F_D`` (saddle: closed form; welsch, logistic: L-BFGS-B on ``R^d`` from
the origin and from ``w*``, the better end). Per cell and arm: the median over
seeds, the median of the per-seed ratios to ``dp_sgd``, the seeds on which the arm
is at least as close, the two-sided exact Wilcoxon signed-rank p of the per-seed
log ratios against ``dp_sgd``, and (``vs_theorem``) the same statistics of each
default against its theorem preset. JSON to ``benchmarks/results/tr_defaults.json``
(``--out``: the check cells' file).

Usage::

    nice -n 10 python benchmarks/bench_tr_defaults.py [--cells saddle:10000:10:1 ...]
        [--seeds 0-7] [--arms dp_sgd tr_theorem ...] [--out FILE] [--quick]
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
from dpsample.finders.trust_region import DPStochasticTrustRegion, DPTrustRegion
from dpsample.losses import logistic_nonconvex, welsch
from dpsample.plan import Budget

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from experiments.problems import cosine_saddle, utility  # noqa: E402

OUT = pathlib.Path(__file__).parent / "results" / "tr_defaults.json"
DELTA = 1e-6
CELLS = ("welsch:10000:10:1", "saddle:10000:10:1")
ARMS = ("dp_sgd", "tr_theorem", "tr_default", "str_theorem", "str_default")


def make_problem(
    name: str, n: int, d: int, seed: int, ball: bool = False
) -> dpsample.Problem:
    """The cell's problem on the data of ``seed`` (unconstrained unless ``ball``)."""
    key = jax.random.key(1000 + seed)
    dom = dpsample.domains.Unconstrained(d)
    if name == "logistic":
        loss = logistic_nonconvex(reg=0.0)
        c = loss.constants(radius=4.0) if ball else loss.constants()
        return dpsample.Problem(
            loss.loss_fn,
            utility.make_logistic(key, n, d),
            dpsample.Ball(4.0, dim=d) if ball else dom,
            lipschitz=c.lipschitz,
            smoothness=c.smoothness,
            hessian_lipschitz=c.hessian_lipschitz,
            loss_range=c.loss_range,
        )
    if name == "saddle":
        return dpsample.Problem(
            cosine_saddle.loss(),
            utility.make_saddle(key, n, d),
            dom,
            lipschitz=math.sqrt(d),
            smoothness=1.0,
            hessian_lipschitz=1.0,
            loss_range=2.0 * d,
        )
    loss = welsch(1.0)
    c = loss.constants()
    return dpsample.Problem(
        loss.loss_fn,
        utility.make_welsch(key, n, d),
        dom,
        lipschitz=c.lipschitz,
        smoothness=c.smoothness,
        hessian_lipschitz=c.hessian_lipschitz,
        loss_range=c.loss_range,
    )


def risk_floor(name: str, problem: dpsample.Problem) -> float:
    """``min F_D`` (non-private reference; an upper bound for welsch)."""
    if name == "saddle":
        z = np.asarray(problem.data["x"])
        c, s = np.cos(z).mean(axis=0), np.sin(z).mean(axis=0)
        return float(-np.sum(np.hypot(c, s)))
    f = jax.jit(jax.value_and_grad(problem.empirical_risk))

    def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
        v, g = f(jnp.asarray(x))
        return float(v), np.asarray(g, np.float64)

    best = math.inf
    for x0 in (np.zeros(problem.dim), np.full(problem.dim, 1.5 / problem.dim**0.5)):
        res = scipy.optimize.minimize(
            fun, x0, jac=True, method="L-BFGS-B", options={"gtol": 1e-12}
        )
        best = min(best, float(res.fun))
    return best


def measure(problem: dpsample.Problem, floor: float, x: Any) -> dict[str, float]:
    """Gradient norm and excess empirical risk at ``x``."""
    g = jax.grad(problem.empirical_risk)(x)
    return {
        "grad_norm": float(jnp.linalg.norm(g)),
        "excess_risk": float(problem.empirical_risk(x)) - floor,
    }


def _compare(vals: list[dict], base: list[dict], metric: str) -> dict[str, Any]:
    ratios = [
        v[metric] / max(b[metric], 1e-300) for v, b in zip(vals, base, strict=True)
    ]
    logs = np.log(np.maximum(ratios, 1e-300))
    p = float(scipy.stats.wilcoxon(logs).pvalue) if np.any(logs != 0) else 1.0
    return {
        "median_ratio": statistics.median(ratios),
        "seeds_at_least_as_close": sum(
            v[metric] <= b[metric] for v, b in zip(vals, base, strict=True)
        ),
        "wilcoxon_p": p,
    }


def run_cell(cell: str, seeds: list[int], arms: list[str]) -> dict[str, Any]:
    """Every arm on every seed of one cell."""
    name, n_text, d_text, eps_text = cell.split(":")
    n, d, eps = int(n_text), int(d_text), float(eps_text)
    budget = Budget(eps, DELTA)
    spec = make_problem(name, n, d, seeds[0]).spec
    gap = {"initial_gap": math.log(2.0)} if name == "logistic" else {}
    algos = {
        "dp_sgd": (DPSGD(), {}),
        "tr_theorem": (DPTrustRegion(), {"preset": "theorem", **gap}),
        "tr_default": (DPTrustRegion(), gap),
        "str_theorem": (DPStochasticTrustRegion(), {"preset": "theorem", **gap}),
        "str_default": (DPStochasticTrustRegion(), gap),
    }
    sgd_ball = name == "logistic"
    sgd_spec = make_problem(name, n, d, seeds[0], ball=sgd_ball).spec
    plans = {
        a: (
            algos[a][0],
            algos[a][0].plan(
                sgd_spec if a == "dp_sgd" else spec, budget, **algos[a][1]
            ),
        )
        for a in arms
    }
    rows: dict[str, list[dict[str, float]]] = {a: [] for a in arms}
    wall = dict.fromkeys(arms, 0.0)
    for seed in seeds:
        prob = make_problem(name, n, d, seed)
        floor = risk_floor(name, prob)
        key = jax.random.key(seed)
        for arm, (algo, plan) in plans.items():
            t0 = time.perf_counter()
            on = (
                make_problem(name, n, d, seed, True)
                if arm == "dp_sgd" and sgd_ball
                else prob
            )
            res = algo.run(key, plan, on.data)
            wall[arm] += time.perf_counter() - t0
            rows[arm].append(measure(prob, floor, res.value))
    keys = (
        "num_iters",
        "alpha",
        "radius",
        "stop_threshold",
        "sigma_grad",
        "sigma_hess",
    )
    out: dict[str, Any] = {
        "cell": cell,
        "seeds": seeds,
        "plans": {
            a: {
                k: p[k]
                for k in (*keys, "grad_batch_size", "hessian_batch_size", "output")
                if k in p.params
            }
            if a != "dp_sgd"
            else {k: p[k] for k in ("num_steps", "batch_size")}
            for a, (_, p) in plans.items()
        },
        "wall_s": wall,
        "arms": {},
    }
    for arm, vals in rows.items():
        entry: dict[str, Any] = {}
        for metric in ("grad_norm", "excess_risk"):
            xs = [v[metric] for v in vals]
            entry[metric] = {"median": statistics.median(xs), "per_seed": xs}
            if arm != "dp_sgd" and "dp_sgd" in rows:
                entry[metric]["vs_dp_sgd"] = _compare(vals, rows["dp_sgd"], metric)
            thm = arm.replace("default", "theorem")
            if arm.endswith("default") and thm in rows:
                entry[metric]["vs_theorem"] = _compare(vals, rows[thm], metric)
        out["arms"][arm] = entry
    return out


def _seeds(text: str) -> list[int]:
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0-7", help="a range, e.g. 8-15")
    parser.add_argument("--cells", nargs="+", default=list(CELLS))
    parser.add_argument("--arms", nargs="+", default=list(ARMS))
    parser.add_argument("--out", default=str(OUT))
    parser.add_argument("--quick", action="store_true", help="first cell, 2 seeds")
    args = parser.parse_args(argv)
    if args.quick:
        args.seeds, args.cells = "0-1", args.cells[:1]
    jax.config.update("jax_enable_x64", True)  # the measurements in float64
    t_all = time.perf_counter()
    payload: dict[str, Any] = {
        "command": "nice -n 10 python benchmarks/bench_tr_defaults.py "
        + " ".join(argv if argv is not None else sys.argv[1:]),
        "delta": DELTA,
        "cells": [],
    }
    for cell in args.cells:
        t0 = time.perf_counter()
        res = run_cell(cell, _seeds(args.seeds), args.arms)
        res["cell_wall_s"] = time.perf_counter() - t0
        payload["cells"].append(res)
        print(f"{cell} seeds {args.seeds} ({res['cell_wall_s']:.0f} s)")
        for arm, e in res["arms"].items():
            line = f"  {arm:12s}"
            for metric in ("excess_risk", "grad_norm"):
                m = e[metric]
                line += f" {metric} med {m['median']:.3g}"
                for vs in ("vs_dp_sgd", "vs_theorem"):
                    if vs in m:
                        c = m[vs]
                        line += (
                            f" [{vs} x{c['median_ratio']:.3g} "
                            f"{c['seeds_at_least_as_close']}<= p={c['wilcoxon_p']:.3g}]"
                        )
            print(line)
        sys.stdout.flush()
        payload["total_wall_s"] = time.perf_counter() - t_all
        pathlib.Path(args.out).write_text(json.dumps(payload, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
