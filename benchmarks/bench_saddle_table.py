"""Benchmark: every finder with its defaults on seed 000's cosine saddle (issue 16).

The problem of spec 000 §5.4: ``d = 2``,

    f(x; z) = sum_j a s_j cos(x_j - z_j),   s = (-1, +1),  a = 1,  z_j ~ N(0, tau^2),

``tau = 0.1``, so ``F_P(x) = a e^{-tau^2/2} (-cos x_1 + cos x_2)`` has a strict saddle
at 0 and minima at ``(0, +-pi)``. The constants are exact on all of ``R^d``: ``G = a
sqrt(d)``, ``M = rho = a``, ``B = 2 a d``. The data are drawn once (numpy seed 0);
every finder starts next to the saddle, ``x0 = (0.01, 0.01)``, at ``epsilon = 10``,
``delta = 1e-5``, with five keys (``jax.random.key(0..4)``). The finders that project
(``dp_sgd``, ``dp_spider``) run on ``Ball(4)`` (the issue's setting; the minima lie
inside), the others on ``Unconstrained(2)``.

For each finder (looked up in :mod:`dpsample.registry`, so any registered name works)
the table reports the epsilon the plan's guarantee spends at ``delta`` (of the 10
requested), ``||grad F_D||`` at the released point over the five keys (min - max, and
the median; the exact gradient of the empirical risk: a **non-private** diagnostic),
the wall time of the five runs (plan and run; the first run includes compilation) and
the plan's cost in per-example evaluations.

``--ablation`` adds the measurements behind ``docs/finders.md``'s diagnosis of
``spider_sosp`` on this problem: the calibration (``"closed_form"``, the paper's
Lemma A.4, vs. ``"accountant"``, the default), the preset and the kick mode, and,
per key, the index AboveThreshold selects, the thresholds and ``||grad F||`` along
the iterates (first, min, median, last).

Usage::

    python benchmarks/bench_saddle_table.py [--quick] [--n 4000 40000]
        [--finders dp_sgd dp_spider spider_sosp ...] [--epsilon 10] [--ablation]

JSON to ``benchmarks/results/saddle_table.json``. Measure on an idle machine (the
load average is printed and stored).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import sys
import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# User code: the diagnostics below (grad F_D in jnp) want float64 like dpsample's
# own scope; the benchmark, not the library, sets JAX's global configuration.
jax.config.update("jax_enable_x64", True)

import dpsample  # noqa: E402
from dpsample import registry  # noqa: E402
from dpsample.plan import Budget  # noqa: E402

DIM, A, TAU, DELTA = 2, 1.0, 0.1, 1e-5
SIGNS = np.array([-1.0, 1.0])
X0 = np.array([0.01, 0.01])
KEYS = 5
#: Finders that project onto a Ball (the issue ran them on Ball(4)).
BALL_FINDERS = ("dp_sgd", "dp_spider")
#: Per-finder options of the table (``n`` -> options); defaults otherwise.
FINDER_OPTIONS: dict[str, Any] = {}
DEFAULT_FINDERS = ("dp_sgd", "dp_spider", "spider_sosp")


def cosine_loss(x, example):
    """``sum_j a s_j cos(x_j - z_j)`` (spec 000 §5.4)."""
    return jnp.sum(A * SIGNS * jnp.cos(x - example["z"]))


def make_problem(n: int, domain: Any) -> dpsample.Problem:
    """The cosine saddle with ``n`` examples on ``domain`` (data: numpy seed 0)."""
    z = TAU * np.random.default_rng(0).standard_normal((n, DIM))
    return dpsample.Problem(
        cosine_loss,
        {"z": z},
        domain,
        lipschitz=A * float(np.sqrt(DIM)),
        smoothness=A,
        hessian_lipschitz=A,
        loss_range=2.0 * A * DIM,
    )


def grad_norm(problem: dpsample.Problem, x: Any) -> float:
    """``||grad F_D(x)||`` (non-private diagnostic)."""
    return float(jnp.linalg.norm(problem.gradient(jnp.asarray(x))))


def min_eigenvalue(problem: dpsample.Problem, x: Any) -> float:
    """``lambda_min(hess F_D(x))`` (non-private diagnostic; -0.99 at the saddle)."""
    return float(np.linalg.eigvalsh(np.asarray(problem.hessian(jnp.asarray(x))))[0])


def run_finder(
    name: str,
    n: int,
    epsilon: float,
    max_evaluations: int | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """Plan once, run five keys; spent epsilon, gradient norms, wall time, cost."""
    domain = (
        dpsample.Ball(4.0, dim=DIM)
        if name in BALL_FINDERS
        else dpsample.Unconstrained(DIM)
    )
    problem = make_problem(n, domain)
    options = dict(FINDER_OPTIONS.get(name, lambda n: {})(n))
    options.update(extra)
    algo = registry.create(name, x0=X0, **options)
    budget = Budget(epsilon, DELTA, max_evaluations=max_evaluations)
    t0 = time.perf_counter()
    plan = algo.plan(problem.spec, budget)
    t_plan = time.perf_counter() - t0
    norms, eigs, infos = [], [], []
    t0 = time.perf_counter()
    for k in range(KEYS):
        res = algo.run(jax.random.key(k), plan, problem.data)
        jax.block_until_ready(res.value)
        norms.append(grad_norm(problem, res.value))
        eigs.append(min_eigenvalue(problem, res.value))
        infos.append(res.info)
    t_run = time.perf_counter() - t0
    return {
        "finder": name,
        "n": n,
        "epsilon_requested": epsilon,
        "epsilon_spent": plan.spent_epsilon(),
        "grad_norms": norms,
        "min_eigenvalues": eigs,
        "escaped": sum(lam > 0.5 for lam in eigs),
        "max_evaluations": max_evaluations,
        "seconds_plan": t_plan,
        "seconds_runs": t_run,
        "evaluations": plan.cost.evaluations,
        "steps": plan.cost.steps,
        "options": {k: repr(v) for k, v in options.items()},
        "selected": [info.get("selected") for info in infos]
        if name == "spider_sosp"
        else None,
    }


def table(rows: list[dict[str, Any]]) -> str:
    """The issue's table, one line per row (markdown)."""
    lines = [
        "| finder | n | epsilon spent (of requested) | ||grad F|| over 5 keys "
        "(min - max; median) | escaped (lambda_min > 0.5) | wall time (plan + 5 "
        "runs) | evaluations |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        g = r["grad_norms"]
        opts = ", ".join(f"{k}={v}" for k, v in r["options"].items())
        if r.get("max_evaluations") is not None:
            opts = ", ".join(
                x for x in (opts, f"max_evaluations={r['max_evaluations']:.0e}") if x
            )
        name = r["finder"] + (f" ({opts})" if opts else "")
        lines.append(
            f"| `{name}` | {r['n']:,} | {r['epsilon_spent']:.3f} of "
            f"{r['epsilon_requested']:g} | {min(g):.3g} - {max(g):.3g}; "
            f"{statistics.median(g):.3g} | {r.get('escaped', '?')} of {len(g)} | "
            f"{r['seconds_plan']:.1f} + {r['seconds_runs']:.1f} s | "
            f"{r['evaluations']:,} |"
        )
    return "\n".join(lines)


def spider_trace(n: int, epsilon: float, **options: Any) -> list[dict[str, Any]]:
    """Per key: AboveThreshold's choice and ``||grad F||`` along the iterates."""
    from dpsample.finders.spider_sosp import SpiderSOSP, stochastic_spider

    problem = make_problem(n, dpsample.Unconstrained(DIM))
    algo = SpiderSOSP(x0=X0, **options)
    plan = algo.plan(problem.spec, Budget(epsilon, DELTA))
    out = []
    for k in range(KEYS):
        res = algo.run(jax.random.key(k), plan, problem.data)
        k_alg1 = jax.random.split(jax.random.key(k), 4)[2]
        xs = np.asarray(stochastic_spider(k_alg1, problem, plan, x0=X0).value)
        g = np.asarray(jax.vmap(lambda x: jnp.linalg.norm(problem.gradient(x)))(xs))
        out.append(
            {
                "selected": res.info["selected"],
                "grad_at_output": grad_norm(problem, res.value),
                "grad_along": {
                    "first": float(g[0]),
                    "min": float(g.min()),
                    "median": float(np.median(g)),
                    "last": float(g[-1]),
                    "median_last_quarter": float(np.median(g[-len(g) // 4 :])),
                },
                "grad_threshold": res.info.get("grad_threshold"),
                "eig_threshold": res.info.get("eig_threshold"),
                "branch_counts": res.info["branch_counts"],
            }
        )
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="n = 4000 only (unless --n is given)"
    )
    parser.add_argument("--n", type=int, nargs="+", default=[4000, 40000])
    parser.add_argument("--finders", nargs="+", default=list(DEFAULT_FINDERS))
    parser.add_argument("--epsilon", type=float, default=10.0)
    parser.add_argument("--ablation", action="store_true")
    parser.add_argument(
        "--max-evaluations",
        type=float,
        default=None,
        help="compute budget (per run) for every finder of this invocation",
    )
    parser.add_argument(
        "--output", default=str(ROOT / "benchmarks" / "results" / "saddle_table.json")
    )
    args = parser.parse_args(argv)
    sizes = [4000] if args.quick and args.n == [4000, 40000] else args.n
    load = os.getloadavg()[0]
    print(f"load average (1 min) at start: {load:.2f}", flush=True)
    rows = []
    for n in sizes:
        for name in args.finders:
            registry.get(name)  # a clear error for an unknown name
            cap = None if args.max_evaluations is None else int(args.max_evaluations)
            row = run_finder(name, n, args.epsilon, max_evaluations=cap)
            rows.append(row)
            print(table([row]).splitlines()[-1], flush=True)
    print("\n" + table(rows))
    result: dict[str, Any] = {
        "problem": "spec 000 §5.4 cosine saddle, d = 2, a = 1, tau = 0.1",
        "x0": X0.tolist(),
        "delta": DELTA,
        "keys": KEYS,
        "load_average_start": load,
        "rows": rows,
    }
    if args.ablation:
        variants: dict[str, dict[str, Any]] = {
            "defaults": {},
            "paper_calibration": {"calibration": "closed_form"},
            "paper_preset": {"preset": "paper"},
            "kick_perturb": {"kick_mode": "perturb"},
            "forward_order (the pre-issue-16 default)": {"selection_order": "forward"},
            "selection_share_0.1": {"selection_share": 0.1},
        }
        ablation = {}
        for n in sizes:
            for label, opts in variants.items():
                row = run_finder("spider_sosp", n, args.epsilon, **opts)
                row["trace"] = spider_trace(n, args.epsilon, **opts)
                ablation[f"{label}@{n}"] = row
                print(
                    f"ablation {label:>28} n={n}: spent {row['epsilon_spent']:.3f}, "
                    f"||grad|| {min(row['grad_norms']):.3g}-"
                    f"{max(row['grad_norms']):.3g}, selected {row['selected']}",
                    flush=True,
                )
        result["ablation"] = ablation
    result["load_average_end"] = os.getloadavg()[0]
    out = pathlib.Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2, default=repr))
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
