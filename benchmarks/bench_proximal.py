"""Benchmark: the proximal sampler with the fixed-budget GLL rejection RGO.

Target: ``pi ∝ exp(-beta (F_D + mu/2 ||x||^2))`` on the unit ball in d = 2 with the
non-smooth, 1-Lipschitz absolute-error loss ``|<x, a_i> - b_i|`` (``|a_i| <= 1``),
``beta = 4``, ``mu = 1``. It reports, in one run,

(a) mean per-example loss evaluations per proximal step (the count the sequential
    algorithm needs) for n = 1e3 ... 1e7 (expected flat, about 12);
(b) wall time per step of the proximal sampler (fixed budget, ``jit``, one chain,
    median of repeats) against BlackJAX MALA with full gradients on the same target,
    and their ratio, at the same n (1e3 ... 1e7);
(b2) the same per chain-step with ``CHAINS`` chains under ``vmap`` (how samplers are
    run: the fixed per-call cost of the compiled step is shared), n = 1e3 ... 1e6;
(c) time to a KS accuracy on the 2-D target with n = 1e4, 1e5, 1e6 (reference by
    quadrature): 500 chains of each sampler run for increasing numbers of steps; the
    first wall time at which the KS distance of the first coordinate to the quadrature
    marginal is below 0.08 (the 1e-3 critical value at 500 draws is about 0.087). MALA's
    step size is tuned first (a pilot picks, from a grid, the step whose acceptance is
    closest to 0.574); the proximal sampler runs at its practical step
    ``0.1/beta^2`` (about 0.8 of the largest step its TV accounting allows,
    ``1/(8 beta^2 G^2)``);
(d) the step constant measurement behind ``C_STEP_PRACTICAL``: RGO acceptance rate
    and KS accuracy against quadrature (1-D, ``eta = c/(beta^2 G^2 log(1/delta))``,
    ``delta = 1e-8``) for a range of ``c``.

(b1) with ``--pinned``: (a), (b) and (b2) again with the process pinned to one core
    and timed by process CPU time. XLA:CPU hands the small kernels of one step to
    its thread pool; on this 2-core machine the handoffs cost both samplers more than
    the second core gives them (the proximal step at n = 1e3: 55 us pinned against
    89 us unpinned, wall time; MALA at n = 1e5: 281 against 398 us). Pinned is also
    how a sweep runs them, one single-threaded worker per core.

Usage: ``python benchmarks/bench_proximal.py [--quick]``, then
``python benchmarks/bench_proximal.py --pinned`` (merged into the JSON); results go
to ``benchmarks/results/proximal.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pathlib
import statistics
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
RESULTS = pathlib.Path(__file__).resolve().parent / "results" / "proximal.json"
BETA, MU, DIM = 4.0, 1.0, 2
CHAINS = 32
MALA_STEPS = (0.02, 0.05, 0.1, 0.2, 0.4, 0.8)


def make_problem(n, seed=0):
    import jax.numpy as jnp

    from dpsample import Ball, Problem

    rng = np.random.default_rng(seed)
    a = rng.normal(size=(n, DIM))
    a /= np.maximum(1.0, np.linalg.norm(a, axis=1, keepdims=True))
    b = a @ np.array([0.4, -0.3]) + 0.1 * rng.normal(size=n)
    data = {"a": jnp.asarray(a), "b": jnp.asarray(b)}

    def loss(x, z):
        return jnp.abs(jnp.dot(x, z["a"]) - z["b"])

    return Problem(loss, data, Ball(1.0, dim=DIM), lipschitz=1.0)


def timed(fn, repeats, clock=time.perf_counter):
    import jax

    jax.block_until_ready(fn())  # compile
    times = []
    for _ in range(repeats):
        start = clock()
        jax.block_until_ready(fn())
        times.append(clock() - start)
    return statistics.median(times)


def mala_for(target, step_size):
    import blackjax

    return blackjax.mala(target.logdensity, step_size)


def part_ab(sizes, steps, repeats, chains=1, clock=time.perf_counter):
    import jax
    import jax.numpy as jnp

    from dpsample.samplers import proximal
    from dpsample.samplers.target import GibbsTarget

    rows = []
    for n in sizes:
        target = GibbsTarget.create(make_problem(n), beta=BETA, mu=MU)
        eta = 0.1 / BETA**2
        algo = proximal.as_top_level_api(target, eta)
        mala = mala_for(target, 0.05)

        def run(algo, n_steps):
            @jax.jit
            def go(rng, algo=algo, n_steps=n_steps):
                def chain(k):
                    state = algo.init(jnp.zeros(DIM))

                    def body(s, kk):
                        s, info = algo.step(kk, s)
                        return s, info

                    return jax.lax.scan(body, state, jax.random.split(k, n_steps))

                if chains == 1:
                    return chain(rng)
                return jax.vmap(chain)(jax.random.split(rng, chains))

            return go

        # MALA touches all n examples per step: fewer steps at large n
        mala_steps = max(10, min(steps, steps * 100_000 // (n * chains)))
        prox_run = run(algo, steps)
        mala_run = run(mala, mala_steps)
        key = jax.random.key(0)
        _, info = prox_run(key)
        evals = float(np.mean(np.asarray(info.num_loss_evaluations)))
        budget = int(np.asarray(info.num_loss_evaluations_budget).ravel()[0])
        per = steps * chains
        t_prox = timed(lambda f=prox_run, k=key: f(k), repeats, clock) / per
        mala_total = timed(lambda f=mala_run, k=key: f(k), repeats, clock)
        t_mala = mala_total / (mala_steps * chains)
        rows.append(
            {
                "n": n,
                "chains": chains,
                "evals_per_step": evals,
                "evals_budget_per_step": budget,
                "proximal_us_per_step": 1e6 * t_prox,
                "mala_us_per_step": 1e6 * t_mala,
                "mala_over_proximal": t_mala / t_prox,
            }
        )
        print(
            f"n={n:>8d}  chains={chains:3d}  evals/step={evals:6.2f} (budget {budget})"
            f"  proximal={1e6 * t_prox:9.1f} us  MALA={1e6 * t_mala:9.1f} us  "
            f"MALA/proximal={t_mala / t_prox:7.2f}",
            flush=True,
        )
    return rows


def per_step_parts(sizes, quick, clock):
    """Parts (a)/(b) (one chain) and (b2) (``CHAINS`` chains), timed by ``clock``."""
    one = part_ab(sizes, steps=50 if quick else 200, repeats=3, clock=clock)
    many = part_ab(
        sizes[:4], steps=20 if quick else 100, repeats=3, chains=CHAINS, clock=clock
    )
    return one, many


def reference_marginal(problem):
    import jax.numpy as jnp

    h = 1e-2
    g1 = np.arange(-1 + h / 2, 1, h)
    gx, gy = np.meshgrid(g1, g1, indexing="ij")
    grid = np.stack([gx.ravel(), gy.ravel()], axis=1)
    risk = np.asarray(problem.empirical_risk_batch(jnp.asarray(grid), chunk_size=100))
    logp = -BETA * (risk + 0.5 * MU * np.sum(grid**2, axis=1))
    logp = np.where(np.linalg.norm(grid, axis=1) <= 1.0, logp, -np.inf)
    w = np.exp(logp - logp.max()).reshape(len(g1), len(g1)).sum(axis=1)
    cdf = np.cumsum(w) / w.sum()
    return lambda x: np.interp(x, g1 + h / 2, cdf)


def tune_mala(target, num_chains=100, n_steps=100):
    """The MALA step from ``MALA_STEPS`` whose mean acceptance is closest to 0.574."""
    import jax

    from dpsample.samplers import proximal

    best = None
    for h in MALA_STEPS:
        algo = mala_for(target, h)

        @jax.jit
        def go(key, algo=algo):
            k0, k1 = jax.random.split(key)
            x0 = proximal.initial_position(k0, target, num_chains)

            def chain(k, x):
                def body(s, kk):
                    s, info = algo.step(kk, s)
                    return s, info.acceptance_rate

                return jax.lax.scan(body, algo.init(x), jax.random.split(k, n_steps))[1]

            return jax.vmap(chain)(jax.random.split(k1, num_chains), x0)

        acc = float(np.mean(np.asarray(go(jax.random.key(5)))))
        print(f"  MALA pilot: step={h:5.2f}  acceptance={acc:.3f}", flush=True)
        if best is None or abs(acc - 0.574) < abs(best[1] - 0.574):
            best = (h, acc)
    return best


def part_c(num_chains, step_grids, threshold, n, mala_step=None):
    import jax
    import scipy.stats

    from dpsample.samplers import proximal
    from dpsample.samplers.target import GibbsTarget

    problem = make_problem(n, seed=1)
    target = GibbsTarget.create(problem, beta=BETA, mu=MU)
    cdf = reference_marginal(problem)
    if mala_step is None:
        mala_step, _ = tune_mala(target)
    algos = {
        "proximal": proximal.as_top_level_api(target, 0.1 / BETA**2),
        "mala": mala_for(target, mala_step),
    }
    out = {"n": n, "mala_step": mala_step, "proximal_step": 0.1 / BETA**2}
    for name, algo in algos.items():
        curve = []
        for n_steps in step_grids[name]:

            @jax.jit
            def go(key, algo=algo, n_steps=n_steps):
                k0, k1 = jax.random.split(key)
                x0 = proximal.initial_position(k0, target, num_chains)

                def chain(k, x):
                    def body(s, kk):
                        return algo.step(kk, s)[0], None

                    s, _ = jax.lax.scan(
                        body, algo.init(x), jax.random.split(k, n_steps)
                    )
                    return s.position

                return jax.vmap(chain)(jax.random.split(k1, num_chains), x0)

            key = jax.random.key(7)
            compiled = go.lower(key).compile()  # compile outside the timing
            start = time.perf_counter()
            xs = np.asarray(jax.block_until_ready(compiled(key)))
            seconds = time.perf_counter() - start
            ks = float(scipy.stats.kstest(xs[:, 0], cdf).statistic)
            curve.append({"steps": n_steps, "seconds": seconds, "ks": ks})
            print(
                f"n={n:>8d} {name:9s} steps={n_steps:5d}  time={seconds:7.3f} s  "
                f"KS={ks:.4f}",
                flush=True,
            )
        reached = [c["seconds"] for c in curve if c["ks"] < threshold]
        out[name] = {"curve": curve, "time_to_ks": min(reached) if reached else None}
    tp, tm = out["proximal"]["time_to_ks"], out["mala"]["time_to_ks"]
    out["mala_over_proximal"] = (tm / tp) if (tp and tm) else None
    return out


def part_d(num_draws, c_grid):
    import jax
    import jax.numpy as jnp
    import scipy.stats

    from dpsample import Ball, Problem
    from dpsample.samplers import rgo
    from dpsample.samplers.target import GibbsTarget

    rng = np.random.default_rng(2)
    n = 40
    data = {
        "c": jnp.asarray(rng.uniform(1, 3, n)),
        "a": jnp.asarray(rng.uniform(-1, 1, n)),
    }

    def loss(x, z):
        return jnp.abs(jnp.sin(z["c"] * (x[0] - z["a"]))) / z["c"]

    problem = Problem(loss, data, Ball(1.0, dim=1), lipschitz=1.0)
    beta, mu, y = 8.0, 1.0, 0.6
    target = GibbsTarget.create(problem, beta=beta, mu=mu)
    log_term = math.log(2.0 / 1e-8)
    rows = []
    for c in c_grid:
        eta = c / (beta**2 * log_term)
        # Fine grid around the proposal, trapezoid CDF (left sums would shift it).
        mean, sd = y / (1 + eta * beta * mu), math.sqrt(eta)
        grid = np.linspace(max(-1.0, mean - 15 * sd), min(1.0, mean + 15 * sd), 200_001)
        risk = np.asarray(jax.vmap(problem.empirical_risk)(jnp.asarray(grid)[:, None]))
        logp = -beta * risk - 0.5 * beta * mu * grid**2 - (grid - y) ** 2 / (2 * eta)
        p = np.exp(logp - logp.max())
        cdf = np.concatenate([[0.0], np.cumsum(0.5 * (p[1:] + p[:-1]))])
        cdf /= cdf[-1]
        keys = jax.random.split(jax.random.key(11), num_draws)
        xs, info = jax.jit(
            jax.vmap(
                lambda k, eta=eta: rgo.sample_oracle(k, target, jnp.array([y]), eta)
            )
        )(keys)
        ks = scipy.stats.kstest(
            np.asarray(xs[:, 0]), lambda x, g=grid, cdf=cdf: np.interp(x, g, cdf)
        )
        trials = np.asarray(info.num_trials)
        rows.append(
            {
                "c_step": c,
                "eta_times_beta2G2": eta * beta**2,
                "acceptance": float(len(trials) / trials.sum()),
                "ks_statistic": float(ks.statistic),
                "ks_pvalue": float(ks.pvalue),
            }
        )
        print(
            f"c={c:8.5f}  eta*(beta G)^2={eta * beta**2:.5f}  "
            f"acceptance={rows[-1]['acceptance']:.3f}  KS={ks.statistic:.4f} "
            f"(p={ks.pvalue:.3g})",
            flush=True,
        )
    return rows


def main(argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--only-d", action="store_true", help="run part (d) only; merge into the JSON"
    )
    parser.add_argument(
        "--pinned",
        action="store_true",
        help="parts (a), (b), (b2) on one core, process CPU time; merge into the JSON",
    )
    args = parser.parse_args(argv)
    if args.pinned:
        # Before JAX starts: the threads XLA creates inherit the affinity.
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    import jax

    print(f"jax {jax.__version__}, backend {jax.default_backend()}")
    # Both samplers in float64 (the proximal kernel computes in float64 whatever the
    # caller's mode; MALA is run in it too, so the two do the same arithmetic).
    with jax.enable_x64(True):
        return _main(args)


def _main(args):
    c_grid = (
        [2.0**-8, 0.125, 0.5, 2.0]
        if args.quick
        else [2.0**-8, 0.0625, 0.125, 0.25, 0.5, 1.0, 2.0, 4.0]
    )
    draws = 20_000 if args.quick else 200_000
    sizes = [1_000, 10_000, 100_000] if args.quick else [10**k for k in range(3, 8)]
    if args.pinned:
        results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
        print(f"pinned to CPU {sorted(os.sched_getaffinity(0))}, process CPU time")
        results["a_b_pinned"], results["b2_pinned"] = per_step_parts(
            sizes, args.quick, time.process_time
        )
        RESULTS.write_text(json.dumps(results, indent=2))
        print(f"wrote {RESULTS}")
        return 0
    if args.only_d:
        results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
        results["d"] = part_d(num_draws=draws, c_grid=c_grid)
        RESULTS.write_text(json.dumps(results, indent=2))
        print(f"wrote {RESULTS}")
        return 0
    grids = {
        "proximal": [10, 30, 100] if args.quick else [10, 30, 60, 100, 200, 300],
        "mala": [1, 3, 10] if args.quick else [1, 2, 3, 5, 10, 30],
    }
    c_sizes = [1_000] if args.quick else [10_000, 100_000, 1_000_000]
    # F_D is an average, so the target's shape does not depend on n: MALA's step is
    # tuned once, on the smallest n of part (c), and used at every n.
    from dpsample.samplers.target import GibbsTarget

    pilot = GibbsTarget.create(make_problem(c_sizes[0], seed=1), beta=BETA, mu=MU)
    mala_step, mala_acceptance = tune_mala(pilot)
    a_b, b2 = per_step_parts(sizes, args.quick, time.perf_counter)
    results = {
        "target": {"beta": BETA, "mu": MU, "dim": DIM, "loss": "|<x,a>-b|"},
        "a_b": a_b,
        "b2": b2,
        "c_by_n": [
            part_c(
                num_chains=200 if args.quick else 500,
                step_grids=grids,
                threshold=0.08,
                n=c_n,
                mala_step=mala_step,
            )
            for c_n in c_sizes
        ],
        "mala_tuning": {"step": mala_step, "acceptance": mala_acceptance},
        "d": part_d(num_draws=draws, c_grid=c_grid),
        "quick": args.quick,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2))
    print(f"wrote {RESULTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
