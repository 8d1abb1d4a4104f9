"""Benchmark: Goldstein finders (seed 004), calibration and oracle cost.

(a) Noise calibration of the single-pass tree mechanism (``H + 1`` Gaussian node
    releases) and of the multi-pass composition, measured side by side in one run:

    * ``rdp_bisection``: what the finders do (bisection on dp_accounting's RDP
      accountant, final check on the returned guarantee);
    * ``calibrate_noise``: :func:`dpsample.privacy.calibrate_noise` on the full
      guarantee (tightest of RDP/PLD/zCDP at every bisection step).

    Reported: wall time of each and the ratio of the noise multipliers (the PLD-tight
    calibration gives less noise; the ratio is the price of the fast search).

(b) Wall time per O2NC step (compilation excluded by a warm-up call) of the
    zero-order and first-order single-pass finders on the ring ``|‖x‖ − 1|`` in
    ``d = 2``, same plan (``m = 32``, enforced sensitivity), interleaved rounds,
    medians.

Writes ``benchmarks/results/goldstein.json``. ``--quick`` runs fewer rounds.
"""

from __future__ import annotations

import json
import math
import pathlib
import sys
import time

import jax
import jax.numpy as jnp

import dpsample
from dpsample.finders import goldstein as gs
from dpsample.finders.accounting import gaussian_sum_guarantee
from dpsample.privacy import calibrate_noise


def _calibration(quick: bool) -> list[dict]:
    rows = []
    cases = [("single", 1.0), ("single", 8.0), ("multi", 1.0)]
    if quick:
        cases = cases[:2]
    for passes, eps in cases:
        kw = dict(
            n=4000,
            dim=2,
            epsilon=eps,
            delta=1e-6,
            lipschitz=1.0,
            initial_gap=1.0,
            alpha=0.1,
            num_directions=32,
            enforce_sensitivity=True,
            passes=passes,
        )
        if passes == "multi":
            kw.update(n=200, beta=0.3, num_iters=400)
        plan = gs.goldstein_theorem_parameters(**kw)
        t0 = time.perf_counter()
        noise, _ = gs.goldstein_guarantee(plan)
        t_rdp = time.perf_counter() - t0
        if passes == "single":
            reps = plan["tree_height"] + 1
            z_fast = noise["tree_noise_multiplier"]

            def make(c, reps=reps):  # c: noise multiplier (std over the bound)
                return gaussian_sum_guarantee(c).repeat(reps)
        else:
            n_a, n_d = plan["num_anchors"], plan["num_differences"]
            z_fast = noise["anchor_noise_multiplier"] / math.sqrt(n_a)

            def make(c, n_a=n_a, n_d=n_d):
                g = gaussian_sum_guarantee(c * math.sqrt(n_a)).repeat(n_a)
                return g.compose(gaussian_sum_guarantee(c * math.sqrt(n_d)).repeat(n_d))

        t0 = time.perf_counter()
        z_tight = calibrate_noise(make, epsilon=eps, delta=1e-6, rtol=1e-4)
        t_tight = time.perf_counter() - t0
        rows.append(
            {
                "passes": passes,
                "epsilon": eps,
                "rdp_bisection_s": t_rdp,
                "calibrate_noise_s": t_tight,
                "time_ratio": t_tight / t_rdp,
                "noise_ratio_fast_over_tight": z_fast / z_tight,
            }
        )
    return rows


def _oracle_cost(quick: bool) -> dict:
    n = 2000
    prob = dpsample.Problem(
        lambda x, z: jnp.abs(jnp.linalg.norm(x) - 1.0) + 0.0 * z["a"][0],
        {"a": jnp.zeros((n, 1))},
        dpsample.domains.Unconstrained(2),
        lipschitz=1.0,
    )
    common = dict(
        epsilon=4.0,
        delta=1e-6,
        alpha=0.1,
        initial_gap=1.0,
        num_directions=32,
        enforce_sensitivity=True,
        concentration_radius=0.5,
    )
    runners = {}
    for kind in ("zero_order", "first_order"):
        plan = gs.goldstein_theorem_parameters(
            n=n, dim=2, lipschitz=1.0, estimator=kind, **common
        )
        run = gs.make_runner(prob.loss_fn, plan)
        runners[kind] = (run, plan["num_iters"])
    x0 = jnp.array([2.0, 0.0])
    times = {k: [] for k in runners}
    rounds = 2 if quick else 5
    for run, _ in runners.values():  # warm-up (compile)
        jax.block_until_ready(run(jax.random.key(0), prob.data, x0, 0.1, 0.0, 0.0))
    for r in range(rounds):
        for kind, (run, big_t) in runners.items():
            t0 = time.perf_counter()
            jax.block_until_ready(
                run(jax.random.key(r + 1), prob.data, x0, 0.1, 0.0, 0.0)
            )
            times[kind].append((time.perf_counter() - t0) / big_t)
    med = {k: sorted(v)[len(v) // 2] for k, v in times.items()}
    return {
        "seconds_per_step": med,
        "num_iters": {k: v[1] for k, v in runners.items()},
        "ratio_zero_over_first": med["zero_order"] / med["first_order"],
    }


def main(argv: list[str]) -> int:
    quick = "--quick" in argv
    cal = _calibration(quick)
    cost = _oracle_cost(quick)
    print(
        "(a) calibration: RDP bisection (finders) vs calibrate_noise (tightest route)"
    )
    print(
        "| passes | eps | rdp_bisection s | calibrate_noise s | time ratio | z ratio |"
    )
    print("|---|---|---|---|---|---|")
    for r in cal:
        print(
            f"| {r['passes']} | {r['epsilon']:g} | {r['rdp_bisection_s']:.3f} | "
            f"{r['calibrate_noise_s']:.3f} | {r['time_ratio']:.1f} | "
            f"{r['noise_ratio_fast_over_tight']:.3f} |"
        )
    print("\n(b) seconds per O2NC step (ring, d = 2, m = 32, n = 2000)")
    print("| zero_order | first_order | ratio zo/fo |")
    print("|---|---|---|")
    s = cost["seconds_per_step"]
    print(
        f"| {s['zero_order'] * 1e6:.1f} us | {s['first_order'] * 1e6:.1f} us | "
        f"{cost['ratio_zero_over_first']:.2f} |"
    )
    out = pathlib.Path(__file__).resolve().parent / "results" / "goldstein.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"calibration": cal, "oracle_cost": cost}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
