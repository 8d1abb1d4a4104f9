"""Warm vs cold start at the same (epsilon, delta): seed 003 Theorem 3.2 in numbers.

For each problem, each ``epsilon`` in ``{0.5, 1, 2, 4}`` (``delta = 1e-6`` fixed) and
``S`` seeds, two private runs at the **same** total budget:

* **warm**: ``warm_start(key, problem, epsilon=eps, delta=delta, sampler="net",
  finder="dp_spider")``: the exponential mechanism over the default grid net with
  ``eps/2``, then DP-SPIDER from its output with ``(eps/2, delta)`` and the public
  initial gap ``psi`` (seed 003 Algorithm 2, every parameter at the theorem's default);
* **cold**: ``dp_spider(key, problem, epsilon=eps, delta=delta, x0=<domain centre>,
  initial_gap=problem.loss_range)``: the same finder with the whole budget from the
  default point, its schedule from the same default rules (Arora et al. Thm B.3) at the
  public default gap ``loss_range``.

No finder option is overridden (``num_steps``, ``phase_length``,
``variation_batch_size`` and ``learning_rate`` are the theorem defaults in both arms;
both project onto K and return the uniformly random iterate of the theorem).

Measured on the released point ``x`` (**non-private diagnostics** on the training
data, never released): ``||grad F_D(x)||`` (the paper's metric,
:func:`dpsample.finders.stationarity.gradient_norm`); the gradient mapping
``||x - Pi_K(x - eta grad F_D(x))|| / eta`` with the finder's default step
``eta = 1/(2 beta)`` (the stationarity measure of the projected method that actually
runs: it is 0 at a constrained minimiser on the boundary of K, where the gradient is
not); and the excess risk ``F_D(x) - F_ref`` against a reference minimum over K. For
each cell: mean and standard error over seeds, and the paired difference warm - cold
(seed ``s`` of both arms in one pair) with its standard error. The theorem's rate
shapes ``info["stationarity_bound"]`` (warm) and ``info["cold_start_bound"]`` (cold;
absolute constant set to 1, so shapes, not certified bounds) are reported beside them.

Problems (``d = 2``, so the net is affordable: it has ``~0.1 (eps n / 2)^2`` points):

1. ``breast_cancer``: scikit-learn's bundled breast-cancer data (n = 569), the two
   publicly chosen features "mean concave points" and "mean fractal dimension", rows
   normalised to unit norm, the non-convex sigmoid loss ``1/(1 + exp(y <a, x>))``
   (constants from ``losses.sigmoid().constants(feature_bound=1, radius=8, dim=2)``)
   on ``K = Ball(8)``. ``F_D(0) = 0.5``; the minimum over ``K`` (~0.1645) lies **on the
   boundary** of ``K`` (the unconstrained risk keeps decreasing outwards), where
   ``||grad F_D|| ~ 0.016``; the interior also holds a near-flat plateau
   (``F_D ~ 0.37``, ``||grad F_D|| ~ 3e-4``: "predict every row benign").
   ``F_ref``: minimum over a fine grid (spacing 0.02) refined by projected gradient
   descent (non-private).
2. ``welsch_planted``: realizable robust regression with the Welsch loss
   ``(s^2/2)(1 - exp(-(y - <a, x>)^2 / (2 s^2)))``, ``s = 1``; ``n = 2000`` rows ``a``
   uniform in the unit disc (fixed numpy seed), labels ``y = <a, w*>`` with the
   planted ``w* = (2.4, -1.8)`` (``||w*|| = 3``), ``K = Ball(4)``. Since the loss is
   ``>= 0`` and zero at residual 0, **``w*`` is the global minimiser and
   ``F_D(w*) = 0 = F_ref``** (checked: ``grad F_D(w*) = 0``). The loss is non-convex
   (residuals at the default point 0 reach 3 > s) and flattens far from ``w*``; the
   default point has ``F_D(0) = 0.247`` and ``||grad F_D(0)|| = 0.070``.

Writes ``experiments/results/warm_vs_cold.json`` and ``docs/figures/warm_vs_cold.png``
and prints a markdown table and the timing.

Usage: ``python experiments/warm_vs_cold.py [--seeds S] [--problems NAME ...]``
(``--plot-only`` redraws the table and figure from the saved JSON).
"""

from __future__ import annotations

import argparse
import json
import math
import pathlib
import sys
import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import dpsample  # noqa: E402
from dpsample import datasets, losses, nets  # noqa: E402
from dpsample.finders import dp_spider  # noqa: E402
from dpsample.finders.stationarity import gradient_norm  # noqa: E402
from dpsample.pipelines import warm_start  # noqa: E402

EPSILONS = (0.5, 1.0, 2.0, 4.0)
DELTA = 1e-6
SEEDS = 20
BASE_SEED = 20240217
RESULTS = ROOT / "experiments" / "results" / "warm_vs_cold.json"
FIGURE = ROOT / "docs" / "figures" / "warm_vs_cold.png"
METRICS = ("grad_norm", "grad_mapping", "excess_risk")


# ------------------------------------------------------------------ problems
def breast_cancer() -> tuple[dpsample.Problem, dict[str, Any]]:
    data = datasets.load_sklearn(
        "breast_cancer",
        features=["mean concave points", "mean fractal dimension"],
        normalize_rows=True,
    )
    loss = losses.sigmoid()
    consts = loss.constants(feature_bound=1.0, radius=8.0, dim=2)
    prob = dpsample.Problem(
        loss.loss_fn, data, dpsample.Ball(8.0, dim=2), **consts._asdict()
    )
    # Reference minimum over K (NOT PRIVATE): fine grid, then projected GD.
    x_grid, f_grid = nets.net_minimum(prob, spacing=0.02)
    x_ref = _projected_gd(prob, jnp.asarray(x_grid), steps=5000)
    f_ref = min(f_grid, float(prob.empirical_risk(x_ref)))
    ref = {
        "description": "min over K: grid (spacing 0.02) + projected GD, non-private",
        "x_ref": np.asarray(x_ref).tolist(),
        "f_ref": f_ref,
        "grad_norm_at_ref": gradient_norm(prob, x_ref),
        "norm_x_ref": float(jnp.linalg.norm(x_ref)),
    }
    return prob, ref


WSTAR = (2.4, -1.8)


def welsch_planted(n: int = 2000) -> tuple[dpsample.Problem, dict[str, Any]]:
    rng = np.random.default_rng(BASE_SEED)
    u = rng.standard_normal((n, 2))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    a = u * np.sqrt(rng.uniform(size=(n, 1)))  # uniform in the unit disc
    wstar = np.asarray(WSTAR)
    y = a @ wstar
    loss = losses.welsch(1.0)
    consts = loss.constants(
        feature_bound=1.0, radius=4.0, label_bound=float(np.linalg.norm(wstar)), dim=2
    )
    prob = dpsample.Problem(
        loss.loss_fn,
        {"x": jnp.asarray(a), "y": jnp.asarray(y)},
        dpsample.Ball(4.0, dim=2),
        **consts._asdict(),
    )
    ref = {
        "description": "planted global minimiser w*: F_D(w*) = 0 (realizable)",
        "x_ref": wstar.tolist(),
        "f_ref": 0.0,
        "grad_norm_at_ref": gradient_norm(prob, jnp.asarray(wstar)),
        "norm_x_ref": float(np.linalg.norm(wstar)),
    }
    return prob, ref


PROBLEMS: dict[str, Callable[[], tuple[dpsample.Problem, dict[str, Any]]]] = {
    "breast_cancer": breast_cancer,
    "welsch_planted": welsch_planted,
}
TITLES = {
    "breast_cancer": "breast cancer, sigmoid loss, K = Ball(8) (n = 569, d = 2)",
    "welsch_planted": "planted Welsch regression, K = Ball(4) (n = 2000, d = 2)",
}


def _projected_gd(prob: dpsample.Problem, x: jax.Array, steps: int) -> jax.Array:
    eta = 1.0 / prob.smoothness

    def body(_, w):
        return prob.domain.project(w - eta * prob.gradient(w))

    return jax.jit(lambda w: jax.lax.fori_loop(0, steps, body, w))(x)


def gradient_mapping(prob: dpsample.Problem, x: jax.Array) -> float:
    """``||x - Pi_K(x - eta grad F(x))|| / eta``, ``eta = 1/(2 beta)`` (non-private)."""
    eta = 0.5 / prob.smoothness
    step = prob.domain.project(x - eta * prob.gradient(x))
    return float(jnp.linalg.norm(x - step) / eta)


def measure(prob: dpsample.Problem, x: jax.Array, f_ref: float) -> dict[str, float]:
    """NOT PRIVATE: diagnostics on the training data."""
    return {
        "grad_norm": gradient_norm(prob, x),
        "grad_mapping": gradient_mapping(prob, x),
        "excess_risk": float(prob.empirical_risk(x)) - f_ref,
    }


# ------------------------------------------------------------------ statistics
def mean_se(values: list[float]) -> tuple[float, float]:
    v = np.asarray(values, dtype=np.float64)
    se = float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else float("nan")
    return float(v.mean()), se


def summarise(warm: list[float], cold: list[float]) -> dict[str, float]:
    mw, sw = mean_se(warm)
    mc, sc = mean_se(cold)
    md, sd = mean_se([w - c for w, c in zip(warm, cold, strict=True)])
    return {
        "warm_mean": mw,
        "warm_se": sw,
        "cold_mean": mc,
        "cold_se": sc,
        "diff_mean": md,
        "diff_se": sd,
        "diff_z": md / sd if sd > 0 else float("nan"),
    }


# ------------------------------------------------------------------ runs
def run_cell(
    prob: dpsample.Problem, ref: dict[str, Any], eps: float, seeds: int, index: int
) -> dict[str, Any]:
    x_default = jnp.zeros(prob.dim)  # the domain centre
    runs: dict[str, list[dict[str, float]]] = {"warm": [], "cold": []}
    t_warm = t_cold = 0.0
    info_w = info_c = None
    for s in range(seeds):
        key = jax.random.fold_in(
            jax.random.fold_in(jax.random.key(BASE_SEED), index), s
        )
        k_warm, k_cold = jax.random.split(key)
        t0 = time.perf_counter()
        rw = warm_start(
            k_warm, prob, epsilon=eps, delta=DELTA, sampler="net", finder="dp_spider"
        )
        xw = jax.block_until_ready(rw.value)
        t1 = time.perf_counter()
        rc = dp_spider(
            k_cold,
            prob,
            epsilon=eps,
            delta=DELTA,
            x0=x_default,
            initial_gap=prob.loss_range,
        )
        xc = jax.block_until_ready(rc.value)
        t2 = time.perf_counter()
        t_warm += t1 - t0
        t_cold += t2 - t1
        # Both arms spend at most (eps, delta).
        assert rw.privacy.epsilon(DELTA) <= eps * (1 + 1e-9)
        assert rc.privacy.epsilon(DELTA) <= eps * (1 + 1e-9)
        runs["warm"].append(measure(prob, xw, ref["f_ref"]))
        runs["cold"].append(measure(prob, xc, ref["f_ref"]))
        info_w, info_c = rw.info, rc.info
    assert info_w is not None and info_c is not None
    fw = info_w["finder_info"]
    cell: dict[str, Any] = {
        "epsilon": eps,
        "delta": DELTA,
        "seeds": seeds,
        "stationarity_bound": info_w["stationarity_bound"],
        "cold_start_bound": info_w["cold_start_bound"],
        "psi": info_w["psi"],
        "psi_failure_prob": info_w["psi_failure_prob"],
        "net_size": int(info_w["sampler_info"].get("net_size", -1)),
        "dispatcher": list(info_w["dispatcher"]),
        "warm_schedule": {
            k: fw[k] for k in ("num_steps", "phase_length", "variation_batch_size")
        },
        "cold_schedule": {
            k: info_c[k] for k in ("num_steps", "phase_length", "variation_batch_size")
        },
        "seconds_warm": t_warm,
        "seconds_cold": t_cold,
        "runs": runs,
    }
    for m in METRICS:
        cell[m] = summarise([r[m] for r in runs["warm"]], [r[m] for r in runs["cold"]])
    return cell


# ------------------------------------------------------------------ reporting
def _pm(mean: float, se: float) -> str:
    return f"{mean:.2e} ± {se:.1e}"


def markdown_table(results: dict[str, Any]) -> str:
    lines = [
        "| problem | ε | ‖∇F‖ warm | ‖∇F‖ cold | warm − cold (z) | rate shape "
        "warm / cold | excess risk warm | excess risk cold | grad. mapping warm "
        "| grad. mapping cold |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, res in results["problems"].items():
        for cell in res["cells"]:
            g, r, m = cell["grad_norm"], cell["excess_risk"], cell["grad_mapping"]
            lines.append(
                f"| {name} | {cell['epsilon']:g} "
                f"| {_pm(g['warm_mean'], g['warm_se'])} "
                f"| {_pm(g['cold_mean'], g['cold_se'])} "
                f"| {g['diff_mean']:+.1e} ± {g['diff_se']:.1e} ({g['diff_z']:+.1f}) "
                f"| {cell['stationarity_bound']:.1e} / {cell['cold_start_bound']:.1e} "
                f"| {_pm(r['warm_mean'], r['warm_se'])} "
                f"| {_pm(r['cold_mean'], r['cold_se'])} "
                f"| {_pm(m['warm_mean'], m['warm_se'])} "
                f"| {_pm(m['cold_mean'], m['cold_se'])} |"
            )
    return "\n".join(lines)


def figure(results: dict[str, Any], path: pathlib.Path) -> None:
    names = list(results["problems"])
    fig, axes = plt.subplots(
        2, len(names), figsize=(5.2 * len(names), 7.6), squeeze=False
    )
    for j, name in enumerate(names):
        cells = results["problems"][name]["cells"]
        eps = np.array([c["epsilon"] for c in cells])
        for i, (metric, label) in enumerate(
            (("grad_norm", "‖∇F_D(x)‖"), ("excess_risk", "F_D(x) − F_ref"))
        ):
            ax = axes[i, j]
            for arm, color, marker, shift in (
                ("warm", "C0", "o", 0.97),
                ("cold", "C3", "s", 1.03),
            ):
                mean = np.array([c[metric][f"{arm}_mean"] for c in cells])
                se = np.array([c[metric][f"{arm}_se"] for c in cells])
                lower = np.minimum(se, 0.999 * mean)  # keep the log axis finite
                ax.errorbar(
                    eps * shift,
                    mean,
                    yerr=[lower, se],
                    color=color,
                    marker=marker,
                    capsize=3,
                    label=f"{arm} start (mean ± s.e.)",
                )
            if metric == "grad_norm":
                ax.plot(
                    eps,
                    [c["stationarity_bound"] for c in cells],
                    "C0--",
                    lw=1,
                    label="Thm 3.2 rate shape, warm",
                )
                ax.plot(
                    eps,
                    [c["cold_start_bound"] for c in cells],
                    "C3--",
                    lw=1,
                    label="rate shape, cold (F0 = loss_range)",
                )
                floor = results["problems"][name]["reference"]["grad_norm_at_ref"]
                if floor > 1e-8:  # a minimiser on the boundary of K
                    ax.axhline(
                        floor, color="0.4", ls=":", lw=1, label="‖∇F_D‖ at min over K"
                    )
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xticks(list(eps))
            ax.set_xticklabels([f"{e:g}" for e in eps])
            ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
            ax.set_xlabel("ε (δ = 1e-6)")
            ax.set_ylabel(label)
            if i == 0:
                ax.set_title(TITLES.get(name, name), fontsize=9)
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=7)
    seeds = results["seeds"]
    fig.suptitle(
        f"Warm start (net exp. mech. → DP-SPIDER) vs DP-SPIDER from 0, same (ε, δ); "
        f"{seeds} seeds; non-private diagnostics",
        fontsize=10,
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=130)
    plt.close(fig)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=SEEDS)
    parser.add_argument(
        "--problems", nargs="+", default=list(PROBLEMS), choices=list(PROBLEMS)
    )
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument(
        "--plot-only",
        action="store_true",
        help="redraw the table and figure from the saved JSON",
    )
    args = parser.parse_args(argv)
    if args.plot_only:
        saved = json.loads(RESULTS.read_text())
        print(markdown_table(saved))
        figure(saved, FIGURE)
        return saved
    start = time.perf_counter()
    results: dict[str, Any] = {
        "seeds": args.seeds,
        "delta": DELTA,
        "epsilons": list(EPSILONS),
        "note": "all measurements are NON-PRIVATE diagnostics on the training data",
        "problems": {},
    }
    for index, name in enumerate(args.problems):
        t0 = time.perf_counter()
        prob, ref = PROBLEMS[name]()
        ref["f_default"] = float(prob.empirical_risk(jnp.zeros(prob.dim)))
        ref["grad_norm_default"] = gradient_norm(prob, jnp.zeros(prob.dim))
        cells = []
        for j, eps in enumerate(EPSILONS):
            cell = run_cell(prob, ref, eps, args.seeds, 100 * index + j)
            cells.append(cell)
            g = cell["grad_norm"]
            print(
                f"{name} eps={eps:g}: |grad| warm {g['warm_mean']:.3e} cold "
                f"{g['cold_mean']:.3e} (diff z {g['diff_z']:+.1f}); "
                f"{cell['seconds_warm']:.1f}s warm, {cell['seconds_cold']:.1f}s cold",
                flush=True,
            )
        results["problems"][name] = {
            "n": prob.n,
            "dim": prob.dim,
            "constants": {
                "lipschitz": prob.lipschitz,
                "smoothness": prob.smoothness,
                "loss_range": prob.loss_range,
                "radius": float(prob.domain.radius),
            },
            "reference": ref,
            "cells": cells,
            "seconds": time.perf_counter() - t0,
        }
    results["seconds_total"] = time.perf_counter() - start
    table = markdown_table(results)
    print()
    print(table)
    print(f"\ntotal time: {results['seconds_total']:.1f} s")
    if not args.no_write:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(json.dumps(results, indent=1, default=float) + "\n")
        figure(results, FIGURE)
        print(f"wrote {RESULTS.relative_to(ROOT)} and {FIGURE.relative_to(ROOT)}")
    return results


if __name__ == "__main__":
    main()
