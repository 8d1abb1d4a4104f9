"""Benchmark: the Goldstein finders' practical and theory sizings, side by side.

The default ``sizing="practical"`` (Mode B, coupled zero-order differences, ``m`` of
hundreds) against ``sizing="theory"`` (the theorem's ``m``, Mode A) and the theory
``m`` in Mode B, for the zero- and first-order single-pass finders at their default
``alpha``, on the ring ``f(x; z) = | ||x - z|| - 1 |`` (``z ~ N(0, 0.01 I)``, ``L = 1``,
``x0 = (0.3, ..., 0.3)``, epsilon = 1, delta = 1e-5).

Per configuration, in one run (interleaved by seed): ``m``, the planned evaluations,
the wall time of the first call (planning, compilation and the run: what a user
waits for) and of the later calls (warm), and two **non-private** diagnostics of the
released point averaged over the seeds: the empirical risk ``F(x_out)`` (``F >= 0``;
``F(x0)`` is printed) and the certified Goldstein value at radius ``2 alpha``
(:func:`dpsample.finders.goldstein_stationarity`).

    python benchmarks/bench_goldstein_sizing.py [--n 1000] [--d 2] [--seeds 3] [--quick]

Writes ``benchmarks/results/goldstein_sizing.json`` and prints a markdown table.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import time

import jax
import jax.numpy as jnp
import numpy as np

import dpsample
from dpsample.finders.goldstein import goldstein_first_order, goldstein_zero_order
from dpsample.finders.goldstein_stationarity import goldstein_stationarity

_THEORY_B = {"sizing": "theory", "enforce_sensitivity": True}
_THEORY_A = {"sizing": "theory", "enforce_sensitivity": False}  # the opt-in
CONFIGS = (
    ("zero_order", "practical (default)", {}),
    ("zero_order", "theory, Mode B", _THEORY_B),
    ("zero_order", "theory (Mode A)", _THEORY_A),
    ("first_order", "practical (default)", {}),
    ("first_order", "theory, Mode B", _THEORY_B),
    ("first_order", "theory (Mode A)", _THEORY_A),
)
FINDERS = {"zero_order": goldstein_zero_order, "first_order": goldstein_first_order}


def _ring(x, ex):
    return jnp.abs(jnp.sqrt(jnp.sum((x - ex["z"]) ** 2) + 1e-12) - 1.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--d", type=int, default=2)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="n = 200, one seed")
    args = parser.parse_args()
    if args.quick:
        args.n, args.seeds = 200, 1
    jax.config.update("jax_enable_x64", True)
    n, d = args.n, args.d
    rng = np.random.default_rng(0)
    data = {"z": jnp.asarray(0.1 * rng.standard_normal((n, d)))}
    prob = dpsample.Problem(
        _ring,
        data,
        dpsample.domains.Unconstrained(d),
        lipschitz=1.0,
        loss_range=2.0,
    )
    x0 = jnp.full(d, 0.3)

    def risk(x):
        return float(jnp.mean(jax.vmap(_ring, in_axes=(None, 0))(x, data)))

    rows: dict[tuple[str, str], dict] = {
        (f, label): {"times": [], "risk": [], "goldstein": []}
        for f, label, _ in CONFIGS
    }
    for seed in range(args.seeds):
        for finder, label, kw in CONFIGS:
            cfg = (finder, label)
            t0 = time.perf_counter()
            res = FINDERS[finder](
                jax.random.key(seed), prob, epsilon=1.0, delta=1e-5, x0=x0, **kw
            )
            jax.block_until_ready(res.value)
            rows[cfg]["times"].append(time.perf_counter() - t0)
            plan = res.info.plan
            rows[cfg]["plan"] = plan
            rows[cfg]["risk"].append(risk(res.value))
            stat = goldstein_stationarity(
                prob,
                res.value,
                radius=2 * plan["alpha"],
                num_samples=64,
                rng_key=jax.random.key(99),
            )
            rows[cfg]["goldstein"].append(float(stat.value))
    out = []
    for (finder, label), r in rows.items():
        p = r["plan"]
        warm = r["times"][1:] or r["times"]
        out.append(
            {
                "finder": finder,
                "sizing": label,
                "num_directions": int(p["num_directions"]),
                "enforce_sensitivity": bool(p["enforce_sensitivity"]),
                "difference_sensitivity": float(p["difference_sensitivity"]),
                "evaluations": int(p["loss_evaluations"] + p["gradient_evaluations"]),
                "first_call_s": r["times"][0],
                "warm_call_s": float(np.median(warm)),
                "risk_mean": float(np.mean(r["risk"])),
                "risk_per_seed": r["risk"],
                "goldstein_mean": float(np.mean(r["goldstein"])),
                "alpha": float(p["alpha"]),
            }
        )
    result = {
        "command": f"python benchmarks/bench_goldstein_sizing.py --n {n} --d {d} "
        f"--seeds {args.seeds}",
        "n": n,
        "d": d,
        "risk_at_x0": risk(x0),
        "rows": out,
    }
    path = pathlib.Path(__file__).parent / "results" / "goldstein_sizing.json"
    path.write_text(json.dumps(result, indent=1) + "\n")
    print(
        f"n = {n}, d = {d}, F(x0) = {result['risk_at_x0']:.3f}, alpha = "
        f"{out[0]['alpha']:.3f}"
    )
    print(
        "| finder | sizing | m | difference sensitivity | evaluations "
        "| first call, s | warm call, s | F(x_out), mean | Goldstein value, mean |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in out:
        print(
            f"| {r['finder']} | {r['sizing']} | {r['num_directions']:,} "
            f"| {r['difference_sensitivity']:.3g} | {r['evaluations']:,} "
            f"| {r['first_call_s']:.1f} | {r['warm_call_s']:.1f} "
            f"| {r['risk_mean']:.3f} | {r['goldstein_mean']:.3f} |"
        )


if __name__ == "__main__":
    main()
