"""Benchmark: issue 24's own before/after figures, re-measured with the same seeds.

Issue 24 opened with figures measured on the code before it (the last commit before
its first change, :data:`BEFORE`): a Cauchy-loss regression at ``d = 5`` where the
default ``warm_start`` ended 800x worse than ``dp_sgd``; the cosine problem of
``experiments/problems/warm_start_003.py`` at ``d = 5, 10`` where the default warm
start lost to a cold start; the two-bump barrier problem where the net warm start won
1,000x at ``epsilon = 1`` and the default lost it at ``epsilon = 4``; ``gibbs``
spending a few percent of its budget. This script runs the same public calls on that
commit (``git archive`` into a temporary folder) and on this checkout, one process
per tree (``PYTHONPATH`` the tree), with the same data and the same run keys (seeds
0-5, paired), and prints each figure before and after.

Problems (data drawn here with NumPy, fixed seeds, written once and read by both
trees; the losses are plain JAX functions of this script; every constant declared is
exact):

* ``cauchy``: ``log(1 + (y - <a, x>)^2)``, rows on the unit sphere, ``y = <a, w*> +
  N(0, 0.1^2)`` with 10% of the labels replaced by ``U(-3, 3)``, ``||w*|| = 1``,
  ``K = Ball(3)``: ``G = 1``, ``M = 2``, Hessian-Lipschitz ``2.9143``, range
  ``log(1 + 36)``. The issue's own Cauchy instance is not in the repository; this is
  one of the same kind (``n = 2,000``, ``d = 5``, ``epsilon = 1``).
* ``cosine``: warm_start_003's ``-(1/sqrt d) sum_j cos(x_j - z_j)``,
  ``z ~ N(1, 0.25 I)``, ``K = Ball(2 sqrt d)``, ``G = 1``, ``M = 1/sqrt d``, range
  ``2 sqrt d`` (``n = 2,000``).
* ``basins``: the utility benchmark's two bumps (``experiments/problems/utility.py``,
  ``BASINS``), ``n = 4,000``, ``d = 2``, ``K = Ball(2)``; its ``loss_floor`` is given
  to the tree that accepts it (after; the API before had no floor).

Measured (non-private diagnostics, NumPy closed forms): excess empirical risk over
the best of a multi-start L-BFGS-B optimum (inside ``K``) and every released point of
both trees, and ``||grad F_D||``; medians over the 6 seeds, the per-seed ratio
after/before and a two-sided Wilcoxon signed-rank p-value (scipy), and each tree's
spent epsilon. JSON to ``benchmarks/results/issue24_before_after.json``.

Usage::

    python benchmarks/bench_issue24_before_after.py [--seeds 6] [--quick]
        [--before-tree PATH]

``--quick``: the Cauchy case only, ``dp_sgd`` and the default warm start, 2 seeds, no
JSON (a smoke of the code paths); ``--before-tree`` runs another checkout as "before"
instead of ``git archive`` of :data:`BEFORE` (the smoke test passes this checkout);
``--from-json BEFORE AFTER`` tabulates two workers' files run apart (``--worker
DATA_FOLDER SEEDS OUT``, one per tree, ``PYTHONPATH`` the tree).
"""

from __future__ import annotations

import argparse
import inspect
import json
import math
import os
import pathlib
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "issue24_before_after.json"
#: The last commit before issue 24's first change (47fadf8, 2026-11-28 07:23).
BEFORE = "cf86678"
DELTA = 1e-6


def _utility():
    """The utility benchmark's problem module (this checkout's, never the tree's)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from experiments.problems import utility

    return utility


def basins_setup() -> dict:
    """The two bumps ``(height, width, centre)`` and their declared constants.

    Read from ``experiments/problems/utility.py`` here and handed to each tree's
    worker in ``problems.json`` (the tree before issue 24 has no such module).
    """
    u = _utility()
    return {
        "bumps": [list(u.BASINS["shallow"]), list(u.BASINS["deep"])],
        "tau": u.BASINS["tau"],
        "constants": u.basins_constants(),
    }


#: Each case: problem, n, d, epsilons, arms.
CASES = (
    (
        "cauchy",
        2000,
        5,
        (1.0,),
        ("warm_start", "dp_spider", "warm_start_dp_sgd", "dp_sgd"),
    ),
    ("cosine", 2000, 5, (1.0, 4.0), ("warm_start", "dp_spider", "dp_sgd")),
    ("cosine", 2000, 10, (1.0, 4.0), ("warm_start", "dp_spider", "dp_sgd")),
    ("basins", 4000, 2, (1.0, 4.0), ("warm_start", "dp_sgd")),
)


# ------------------------------------------------------------------ problems
def radius(name: str, d: int) -> float:
    return {"cauchy": 3.0, "cosine": 2.0 * math.sqrt(d), "basins": 2.0}[name]


def constants(name: str, d: int, setup: dict) -> dict[str, float]:
    """The declared constants (exact for the problem's data law and ``K``)."""
    if name == "cauchy":
        return {
            "lipschitz": 1.0,
            "smoothness": 2.0,
            "hessian_lipschitz": 2.9143,  # >= max_r |4r(r^2-3)/(1+r^2)^3| = 2.91421
            "loss_range": math.log(1.0 + 36.0),
            "loss_floor": 0.0,
        }
    if name == "cosine":
        s = 1.0 / math.sqrt(d)
        return {
            "lipschitz": 1.0,
            "smoothness": s,
            "hessian_lipschitz": s,
            "loss_range": 2.0 * math.sqrt(d),
        }
    return dict(setup["constants"])


def make_data(name: str, n: int, d: int, setup: dict) -> dict[str, np.ndarray]:
    rs = np.random.RandomState(
        1000 + 10 * d + {"cauchy": 1, "cosine": 2, "basins": 3}[name]
    )
    if name == "cauchy":
        a = rs.normal(size=(n, d))
        a /= np.linalg.norm(a, axis=1, keepdims=True)
        w = np.ones(d) / math.sqrt(d)
        y = a @ w + 0.1 * rs.normal(size=n)
        out = rs.rand(n) < 0.1
        y[out] = rs.uniform(-3.0, 3.0, size=int(out.sum()))
        return {"x": a, "y": np.clip(y, -3.0, 3.0)}
    if name == "cosine":
        return {"x": 1.0 + 0.5 * rs.normal(size=(n, d)), "y": np.ones(n)}
    return {"x": setup["tau"] * rs.normal(size=(n, d)), "y": np.ones(n)}


def loss_fn(name: str, setup: dict):
    import jax.numpy as jnp

    if name == "cauchy":
        return lambda x, ex: jnp.log1p((ex["y"] - jnp.dot(ex["x"], x)) ** 2)
    if name == "cosine":
        return lambda x, ex: -jnp.sum(jnp.cos(x - ex["x"])) / jnp.sqrt(x.shape[-1])

    def basins(x, ex):
        e1 = jnp.zeros(x.shape[-1], x.dtype).at[0].set(1.0)
        v = x - ex["x"]
        total = 0.0
        for a, s, c in setup["bumps"]:
            total = total + a * jnp.exp(-0.5 * jnp.sum((v - c * e1) ** 2) / s**2)
        return -total

    return basins


def value_and_grad(
    name: str, data: dict, x: np.ndarray, setup: dict
) -> tuple[float, np.ndarray]:
    """``F_D(x)`` and its gradient in float64 NumPy (closed forms)."""
    a, y = data["x"], data["y"]
    d = x.shape[0]
    if name == "cauchy":
        r = y - a @ x
        return float(np.mean(np.log1p(r**2))), -(2 * r / (1 + r**2)) @ a / len(r)
    if name == "cosine":
        c, s = np.cos(a).mean(0), np.sin(a).mean(0)
        f = -np.sum(c * np.cos(x) + s * np.sin(x)) / math.sqrt(d)
        return float(f), (c * np.sin(x) - s * np.cos(x)) / math.sqrt(d)
    f, g = 0.0, np.zeros(d)
    e1 = np.eye(d)[0]
    for h, s, cen in setup["bumps"]:
        v = x - a - cen * e1
        w = h * np.exp(-0.5 * np.sum(v**2, 1) / s**2)
        f -= w.mean()
        g += (w[:, None] * v).mean(0) / s**2
    return float(f), g


def reference(name: str, data: dict, d: int, setup: dict) -> float:
    """Least ``F_D`` of L-BFGS-B from landmarks and 8 random starts, inside ``K``."""
    from scipy.optimize import minimize

    r = radius(name, d)
    rs = np.random.RandomState(20261129)
    starts = [np.zeros(d)]
    if name == "basins":
        starts += [c * np.eye(d)[0] for _, _, c in setup["bumps"]]
    if name == "cosine":
        c, s = np.cos(data["x"]).mean(0), np.sin(data["x"]).mean(0)
        starts.append(np.arctan2(s, c))
    for _ in range(8):
        u = rs.normal(size=d)
        starts.append(u / np.linalg.norm(u) * r * rs.rand() ** (1 / d))
    best = math.inf
    for x0 in starts:
        res = minimize(
            lambda x: value_and_grad(name, data, x, setup),
            x0,
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": 500},
        )
        if np.linalg.norm(res.x) <= r * (1 + 1e-9):
            best = min(best, float(res.fun))
    return best


# ------------------------------------------------------------------ one tree
def _problem(name, n, d, folder):
    setup = json.loads((folder / "problems.json").read_text())
    import dpsample

    data = dict(np.load(folder / f"{name}_{n}_{d}.npz"))
    consts = constants(name, d, setup)
    accepted = inspect.signature(dpsample.Problem).parameters
    consts = {k: v for k, v in consts.items() if k in accepted}
    dom = dpsample.Ball(radius(name, d), dim=d)
    return dpsample.Problem(loss_fn(name, setup), data, dom, **consts), sorted(consts)


def _arm(arm, key, problem, eps):
    import dpsample
    from dpsample.finders import dp_sgd, dp_spider

    kw = {"epsilon": eps, "delta": DELTA}
    if arm == "warm_start":
        return dpsample.warm_start(key, problem, **kw)
    if arm == "warm_start_dp_sgd":
        return dpsample.warm_start(key, problem, finder="dp_sgd", **kw)
    return {"dp_sgd": dp_sgd, "dp_spider": dp_spider}[arm](key, problem, **kw)


def _stage_a(res) -> str:
    info = res.info
    if not isinstance(info, dict) and hasattr(info, "_asdict"):
        info = info._asdict()
    try:
        got = {k: info[k] for k in ("sampler", "method", "rule") if k in info}
    except TypeError:
        got = {}
    return json.dumps({k: str(v)[:160] for k, v in got.items()})


#: The ``--quick`` case: the Cauchy problem, two arms.
QUICK_CASES = (("cauchy", 2000, 5, (1.0,), ("warm_start", "dp_sgd")),)


def worker(folder: pathlib.Path, seeds: int, out: pathlib.Path) -> None:
    """Run every case of this tree (``dpsample`` from ``PYTHONPATH``) into ``out``."""
    import jax

    import dpsample
    from dpsample.samplers import gibbs

    quick = seeds < 0
    seeds = abs(seeds)
    rows, checks = [], []
    for name, n, d, epsilons, arms in QUICK_CASES if quick else CASES:
        problem, declared = _problem(name, n, d, folder)
        for eps in epsilons:
            for arm in arms:
                for seed in range(seeds):
                    t0 = time.perf_counter()
                    try:
                        res = _arm(arm, jax.random.key(seed), problem, eps)
                        x = np.asarray(res.value, dtype=np.float64).tolist()
                        spent = float(res.privacy.epsilon(DELTA))
                        err, stage = None, _stage_a(res)
                    except Exception as e:  # a refusal of this tree: recorded
                        x, spent, err, stage = (
                            None,
                            None,
                            f"{type(e).__name__}: {e}",
                            "",
                        )
                    rows.append(
                        {
                            "problem": name,
                            "n": n,
                            "d": d,
                            "epsilon": eps,
                            "arm": arm,
                            "seed": seed,
                            "x": x,
                            "epsilon_spent": spent,
                            "error": err,
                            "stage_a": stage,
                            "seconds": time.perf_counter() - t0,
                            "declared": declared,
                        }
                    )
                    print(
                        f"{name} d={d} eps={eps} {arm} seed {seed}: "
                        f"{'refused' if err else 'ok'} {rows[-1]['seconds']:.1f} s",
                        file=sys.stderr,
                        flush=True,
                    )
    if quick:
        out.write_text(json.dumps({"rows": rows, "checks": checks}))
        return
    # gibbs at its defaults: which route, the share of epsilon it spends, plan time
    for name, n, d in (("cauchy", 2000, 5), ("basins", 4000, 2)):
        problem, _ = _problem(name, n, d, folder)
        t0 = time.perf_counter()
        try:
            res = gibbs(jax.random.key(0), problem, epsilon=1.0, delta=DELTA)
            spent, err = float(res.privacy.epsilon(DELTA)), None
        except Exception as e:
            spent, err = None, f"{type(e).__name__}: {e}"
        checks.append(
            {
                "check": "gibbs_default",
                "problem": name,
                "d": d,
                "epsilon": 1.0,
                "epsilon_spent": spent,
                "error": err,
                "seconds": time.perf_counter() - t0,
            }
        )
    # a warm start that carries a real psi at moderate d: runs, or what the refusal says
    problem, _ = _problem("cosine", 2000, 10, folder)
    for sampler in ("net", "gibbs"):
        t0 = time.perf_counter()
        try:
            res = dpsample.warm_start(
                jax.random.key(0), problem, epsilon=1.0, delta=DELTA, sampler=sampler
            )
            err, x = None, np.asarray(res.value, dtype=np.float64).tolist()
        except Exception as e:
            err, x = f"{type(e).__name__}: {e}", None
        checks.append(
            {
                "check": f"warm_start_sampler_{sampler}",
                "problem": "cosine",
                "d": 10,
                "epsilon": 1.0,
                "x": x,
                "error": err,
                "seconds": time.perf_counter() - t0,
            }
        )
    out.write_text(json.dumps({"rows": rows, "checks": checks}))


# ------------------------------------------------------------------ both trees
def _run_tree(tree: pathlib.Path, folder: pathlib.Path, seeds: int, tag: str) -> dict:
    out = folder / f"{tag}.json"
    env = dict(os.environ, PYTHONPATH=str(tree))
    subprocess.run(
        [sys.executable, __file__, "--worker", str(folder), str(seeds), str(out)],
        cwd=tree,
        env=env,
        check=True,
    )
    return json.loads(out.read_text())


def _median(v):
    v = [x for x in v if x is not None and math.isfinite(x)]
    return float(np.median(v)) if v else math.nan


def summarize(trees: dict, data: dict, setup: dict, cases: tuple = CASES) -> list[dict]:
    """Per (case, epsilon, arm): medians before/after, paired ratio and Wilcoxon p."""
    from scipy.stats import wilcoxon

    refs = {}
    for (name, n, d), dat in data.items():
        best = reference(name, dat, d, setup)
        for tag in trees:
            for r in trees[tag]["rows"]:
                if (r["problem"], r["n"], r["d"]) == (name, n, d) and r[
                    "x"
                ] is not None:
                    x = np.array(r["x"])
                    best = min(best, value_and_grad(name, dat, x, setup)[0])
        refs[(name, n, d)] = best
    for tag in trees:
        for r in trees[tag]["rows"]:
            key = (r["problem"], r["n"], r["d"])
            if r["x"] is None:
                r["excess"] = r["grad_norm"] = None
                continue
            f, g = value_and_grad(r["problem"], data[key], np.array(r["x"]), setup)
            r["excess"], r["grad_norm"] = f - refs[key], float(np.linalg.norm(g))
    table = []
    for name, n, d, epsilons, arms in cases:
        for eps in epsilons:
            for arm in arms:
                pick = {
                    tag: sorted(
                        (
                            r
                            for r in trees[tag]["rows"]
                            if (r["problem"], r["d"], r["epsilon"], r["arm"])
                            == (name, d, eps, arm)
                        ),
                        key=lambda r: r["seed"],
                    )
                    for tag in trees
                }
                row = {"problem": name, "n": n, "d": d, "epsilon": eps, "arm": arm}
                for tag, rs in pick.items():
                    row[f"{tag}_excess"] = _median([r["excess"] for r in rs])
                    row[f"{tag}_grad"] = _median([r["grad_norm"] for r in rs])
                    row[f"{tag}_spent"] = _median([r["epsilon_spent"] for r in rs])
                    row[f"{tag}_refused"] = sum(r["error"] is not None for r in rs)
                    row[f"{tag}_stage_a"] = sorted({r["stage_a"] for r in rs})[:2]
                after = {r["seed"]: r for r in pick["after"]}
                pairs = [  # paired by seed: the seeds both trees ran
                    (b["excess"], after[b["seed"]]["excess"])
                    for b in pick["before"]
                    if b["seed"] in after
                    and b["excess"] is not None
                    and after[b["seed"]]["excess"] is not None
                ]
                if pairs:
                    ratios = [a / b for b, a in pairs if b > 0]
                    row["ratio_after_before"] = _median(ratios)
                    row["after_better"] = sum(a < b for b, a in pairs)
                    diff = [a - b for b, a in pairs]
                    row["p_value"] = (
                        1.0 if not any(diff) else float(wilcoxon(diff).pvalue)
                    )
                    row["pairs"] = len(pairs)
                table.append(row)
    return table


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=6)
    parser.add_argument(
        "--quick", action="store_true", help="one case, 2 seeds, no JSON"
    )
    parser.add_argument(
        "--before-tree", help="a checkout to run as 'before' (default: git archive)"
    )
    parser.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument(
        "--from-json",
        nargs=2,
        metavar=("BEFORE", "AFTER"),
        help="tabulate two workers' JSON files (run apart) instead of running",
    )
    args = parser.parse_args(argv)
    if args.worker:
        worker(
            pathlib.Path(args.worker[0]),
            int(args.worker[1]),
            pathlib.Path(args.worker[2]),
        )
        return 0
    cases = QUICK_CASES if args.quick else CASES
    if args.from_json:
        trees = {
            tag: json.loads(pathlib.Path(path).read_text())
            for tag, path in zip(("before", "after"), args.from_json, strict=True)
        }
        setup = basins_setup()
        data = {(nm, n, d): make_data(nm, n, d, setup) for nm, n, d, _, _ in cases}
        return _report(trees, data, setup, cases, args)
    # a negative count tells the worker to run the quick case
    seeds = -2 if args.quick else args.seeds
    setup = basins_setup()
    with tempfile.TemporaryDirectory() as tmp:
        folder = pathlib.Path(tmp)
        (folder / "problems.json").write_text(json.dumps(setup))
        data = {}
        for name, n, d, _, _ in cases:
            data[(name, n, d)] = make_data(name, n, d, setup)
            np.savez(folder / f"{name}_{n}_{d}.npz", **data[(name, n, d)])
        if args.before_tree:
            before = pathlib.Path(args.before_tree).resolve()
        else:
            before = folder / "before_tree"
            before.mkdir()
            archive = subprocess.run(
                ["git", "-C", str(ROOT), "archive", BEFORE],
                check=True,
                capture_output=True,
            ).stdout
            subprocess.run(["tar", "x", "-C", str(before)], input=archive, check=True)
        trees = {
            "before": _run_tree(before, folder, seeds, "before"),
            "after": _run_tree(ROOT, folder, seeds, "after"),
        }
    return _report(trees, data, setup, cases, args)


def _report(
    trees: dict, data: dict, setup: dict, cases: tuple, args: argparse.Namespace
) -> int:
    """Print the before/after table and the checks; write the JSON (not quick)."""
    table = summarize(trees, data, setup, cases)
    head = (
        "problem",
        "d",
        "eps",
        "arm",
        "before excess",
        "after excess",
        "after/before",
        "wins",
        "p",
        "before |grad|",
        "after |grad|",
        "spent b/a",
    )
    print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
    for r in table:
        print(
            f"| {r['problem']} | {r['d']} | {r['epsilon']:g} | {r['arm']} | "
            f"{r['before_excess']:.3g} | {r['after_excess']:.3g} | "
            f"{r.get('ratio_after_before', math.nan):.3g} | "
            f"{r.get('after_better', '-')}/{r.get('pairs', 0)} | "
            f"{r.get('p_value', math.nan):.3g} | "
            f"{r['before_grad']:.3g} | {r['after_grad']:.3g} | "
            f"{r['before_spent']:.3g}/{r['after_spent']:.3g} |"
        )
    for tag in trees:
        for c in trees[tag]["checks"]:
            what = (
                c["error"][:300]
                if c["error"]
                else (
                    f"spent {c['epsilon_spent']:.4g} of 1"
                    if c.get("epsilon_spent") is not None
                    else "ran"
                )
            )
            print(
                f"{tag}: {c['check']} ({c['problem']}, d={c['d']}): {what} "
                f"[{c['seconds']:.1f} s]"
            )
    if not args.quick:
        seeds = args.seeds
        OUT.parent.mkdir(parents=True, exist_ok=True)
        OUT.write_text(
            json.dumps(
                {
                    "before": BEFORE,
                    "seeds": seeds,
                    "table": table,
                    "checks": {t: trees[t]["checks"] for t in trees},
                },
                indent=1,
            )
        )
        print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
