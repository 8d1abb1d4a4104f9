"""DP-SGD's default lot under a compute cap: two public rules, paired by seed.

Under ``Budget(max_evaluations=E)`` DP-SGD's default ``T`` is cut to ``floor(E /
m)``. Two rules for the lot there (issue 24):

* ``kept``: the uncapped schedule's lot (the library's rule);
* ``fixed_point``: the least lot ``b`` at or above it that meets Abadi et al.'s
  condition ``epsilon <= (b / n)^2 T(b)`` at the ``T`` it runs, ``T(b) = min(T_0,
  floor(E / m(b)))`` (:func:`fixed_point_lot`; about ``n^2 epsilon / E``).

Both run the same schedule otherwise (step ``1/(2M)``, output rule, calibrated
noise), on the utility benchmark's problems (``experiments/problems/utility.py``),
8 seeds each, excess empirical risk (a non-private diagnostic), two-sided Wilcoxon
signed-rank test. Run it niced (about 8 minutes on a loaded 2-core machine)::

    nice -n 10 python experiments/capped_lot.py > experiments/results/capped_lot/log.txt
"""

from __future__ import annotations

import copy
import math
import sys
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

#: (problem, n, d, epsilon, max_evaluations)
POINTS = (
    ("logistic", 10_000, 10, 1.0, 200_000),
    ("welsch", 10_000, 10, 1.0, 200_000),
    ("saddle", 10_000, 10, 1.0, 200_000),
    ("welsch", 10_000, 10, 1.0, 30_000),
    ("logistic", 10_000, 10, 1.0, 30_000),
    ("welsch", 10_000, 10, 4.0, 200_000),
)
SEEDS = 8
MEASURE = ["experiments.problems.utility:measure"]


def fixed_point_lot(
    n: int,
    epsilon: float,
    lot: int,
    num_steps: int,
    cap: int,
    rows: Callable[[int], int],
) -> int:
    """The least ``b >= lot`` with ``epsilon <= (b/n)^2 min(T_0, cap // rows(b))``.

    Iterates ``b <- ceil(n sqrt(epsilon / T(b)))`` upward (``T(b)`` falls as ``b``
    grows, so the sequence increases and stops); ``lot`` where no ``b <= n`` meets
    the condition with a step in the cap.

    Examples:
        >>> from experiments.capped_lot import fixed_point_lot
        >>> fixed_point_lot(10_000, 1.0, 71, 20_000, 100_000, lambda b: b + 10)
        1016
    """
    b = lot
    while rows(b) <= cap:
        t = min(num_steps, cap // rows(b))
        need = math.ceil(n * math.sqrt(epsilon / t))
        if need <= b:
            return b
        if b >= n:
            break
        b = min(n, need)
    return lot


def main() -> int:
    """Run both rules at :data:`POINTS`; print one line per point."""
    import numpy as np
    from scipy import stats

    from dpsample import config
    from dpsample.finders.batches import resolve_sampling
    from dpsample.validation.cells import run_cell
    from experiments.problems import utility_grid as ug

    for name, n, d, eps, cap in POINTS:
        base = {"job": {"kind": "finder", "name": "dp_sgd", "seed": 0}}
        base |= ug._sections("dp_sgd", name, n, d)
        base["options"] = {}
        base["privacy"] = {"epsilon": eps, "delta": 1e-6}
        free = config.plan_config(config.resolve_config(copy.deepcopy(base))).plan
        spec = free.spec
        lots = {
            "kept": int(free["batch_size"]),
            "fixed_point": fixed_point_lot(
                n,
                eps,
                int(free["batch_size"]),
                int(free["num_steps"]),
                cap,
                lambda b, spec=spec: resolve_sampling(spec, "poisson", b, None)[1],
            ),
        }
        base["privacy"]["max_evaluations"] = cap
        risk: dict[str, list[float]] = {"kept": [], "fixed_point": []}
        facts = {}
        for seed in range(SEEDS):
            for rule, lot in lots.items():
                cfg = copy.deepcopy(base)
                cfg["job"]["seed"] = seed
                cfg["options"]["batch_size"] = lot
                rec = run_cell(cfg, MEASURE, paths=[str(REPO)])
                if rec["status"] != "ok":
                    raise RuntimeError(rec["error"]["message"])
                risk[rule].append(
                    rec["measurements"]["values"]["excess_empirical_risk"]
                )
                info = rec["public"]["info"]
                facts[rule] = (
                    info["batch_size"],
                    info["num_steps"],
                    info["noise_multiplier"],
                )
        a, b = np.array(risk["fixed_point"]), np.array(risk["kept"])
        p = stats.wilcoxon(a, b).pvalue
        (lk, tk, zk), (lf, tf, zf) = facts["kept"], facts["fixed_point"]
        ratio = a.mean() / b.mean()
        print(
            f"{name} n={n} d={d} eps={eps} max_evaluations={cap:,}: "
            f"kept lot {lk} T {tk} z {zk:.2f} | fixed_point lot {lf} T {tf} "
            f"z {zf:.2f} | mean excess kept {b.mean():.3g} fixed_point "
            f"{a.mean():.3g} ratio {ratio:.3g} p = {p:.3g}, fixed_point better in "
            f"{int((a < b).sum())}/{SEEDS}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
