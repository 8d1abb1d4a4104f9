"""Benchmark: the default rule of the warm start (issues 16 item 5 and 24).

``warm_start(key, problem, epsilon=2, delta=1e-5)`` with its defaults (sampler
and finder chosen by the public default rule,
:func:`dpsample.pipelines.choose_sampler`: the net where its psi is below the loss
range within the compute cap, else a cold start) on the smooth sigmoid
problem of ``tests/test_warm_start_choice.py``: n = 4,000 examples of
:func:`dpsample.datasets.make_classification` (``||a|| <= 1``), the sigmoid loss on
``Ball(1)`` with its derived constants, for d = 1 ... 10. The finder is the
pipeline's default, DP-SGD with its defaults (``--finder dp_spider`` runs
DP-SPIDER; ``--finder-steps`` fixes DP-SGD's ``num_steps``).

Reported per d: the chosen sampler (and method), the rule's sentence, the sampler
plan's per-example evaluations and the plan's forecast, the plan time, and the wall
time of the run (plan + run, first call: compilation included). JSON to
``benchmarks/results/warm_start_choice.json``.

Usage::

    python benchmarks/bench_warm_start_choice.py [--dims 1 2 3] [--n 4000] [--quick]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time

import jax

import dpsample
from dpsample import Budget
from dpsample.datasets import make_classification
from dpsample.losses import sigmoid
from dpsample.pipelines import WarmStart

OUT = pathlib.Path(__file__).parent / "results" / "warm_start_choice.json"


def problem(d: int, n: int) -> dpsample.Problem:
    """The sigmoid problem on ``Ball(1)`` in ``R^d`` (constants for ``||a|| <= 1``)."""
    loss = sigmoid()
    c = loss.constants(radius=1.0)
    return dpsample.Problem(
        loss.loss_fn,
        make_classification(jax.random.key(d), n, d),
        dpsample.Ball(1.0, dim=d),
        lipschitz=c.lipschitz,
        smoothness=c.smoothness,
        loss_range=c.loss_range,
        oscillation=c.oscillation,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dims", type=int, nargs="+", default=list(range(1, 11)))
    parser.add_argument("--n", type=int, default=4000)
    parser.add_argument("--epsilon", type=float, default=2.0)
    parser.add_argument("--delta", type=float, default=1e-5)
    parser.add_argument("--finder", default=None)
    parser.add_argument("--finder-steps", type=int, default=None)
    parser.add_argument("--quick", action="store_true", help="d = 1; n = 1000")
    args = parser.parse_args(argv)
    if args.quick:
        args.dims, args.n = [1], 1000
    options = {"num_steps": args.finder_steps} if args.finder_steps else {}
    rows = []
    for d in args.dims:
        prob = problem(d, args.n)
        algo = WarmStart(finder=args.finder, finder_options=options)
        t0 = time.perf_counter()
        plan = algo.plan(prob.spec, Budget(args.epsilon, args.delta))
        t_plan = time.perf_counter() - t0
        res = algo.run(jax.random.key(0), plan, prob.data)
        jax.block_until_ready(res.value)
        wall = time.perf_counter() - t0
        warm = plan["sampler"] != "none"
        stage = plan.stage("sampler") if warm else None
        row = {
            "d": d,
            "sampler": plan["sampler"],
            "finder": plan["finder"],
            "method": stage.get("method") if warm else None,
            "rule": plan.params["default_rule"].note,
            "sampler_evaluations": stage.cost.evaluations if warm else 0,
            "sampler_forecast_s": stage.estimated_seconds() if warm else 0.0,
            "plan_evaluations": plan.cost.evaluations,
            "psi": plan["psi"],
            "psi_source": res.info["psi_source"],
            "epsilon_spent": res.privacy.epsilon(args.delta),
            "plan_s": t_plan,
            "wall_s": wall,
        }
        rows.append(row)
        print(
            f"d={d:2d}  {row['sampler']:5s} {row['finder']:8s} "
            f"sampler evals {row['sampler_evaluations']:.3g} "
            f"(forecast {row['sampler_forecast_s']:.1f} s)  total evals "
            f"{row['plan_evaluations']:.3g}  psi {row['psi']:.3g} "
            f"({row['psi_source']})  eps {row['epsilon_spent']:.3g}  "
            f"plan {t_plan:.1f} s  wall {wall:.1f} s",
            flush=True,
        )
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(json.dumps({"args": vars(args), "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
