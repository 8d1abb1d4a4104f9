"""Figure: proximal sampler and MALA against the exact density (1-D, non-convex).

Target ``pi ∝ exp(-beta (F_D(x) + mu/2 x^2))`` on ``[-1, 1]`` with non-convex,
non-smooth per-example losses (``|sin(c (x - a))|/c`` waves and ``|x - a|`` kinks),
``beta = 12``, ``mu = 1``; the exact density by quadrature. Both samplers run 2000
independent chains from the initial law ``pi_0`` for the same number of steps; the
histograms of the final states are drawn over the exact density, with the KS
statistics in the legend.

Usage: ``python experiments/sampler_histogram.py [--quick]``; writes
``docs/figures/sampler_histogram.png``.
"""

from __future__ import annotations

import argparse
import pathlib
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
OUT = ROOT / "docs" / "figures" / "sampler_histogram.png"


def main(argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    import blackjax
    import jax
    import jax.numpy as jnp
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import scipy.stats

    from dpsample import Ball, Problem
    from dpsample.samplers import proximal
    from dpsample.samplers.target import GibbsTarget

    rng = np.random.default_rng(0)
    n = 60
    data = {
        "c": jnp.asarray(rng.uniform(3, 6, n)),
        "a": jnp.asarray(rng.choice([-0.6, 0.5], n) + 0.05 * rng.normal(size=n)),
        "wave": jnp.arange(n) % 3 == 0,
    }

    def loss(x, z):
        wave = jnp.abs(jnp.sin(z["c"] * (x[0] - z["a"]))) / z["c"]
        return jnp.where(z["wave"], wave, jnp.abs(x[0] - z["a"]))

    problem = Problem(loss, data, Ball(1.0, dim=1), lipschitz=1.0)
    beta, mu = 12.0, 1.0
    target = GibbsTarget.create(problem, beta=beta, mu=mu)
    grid = np.linspace(-1, 1, 4001)
    risk = np.asarray(problem.empirical_risk_batch(jnp.asarray(grid)[:, None]))
    logp = -beta * (risk + 0.5 * mu * grid**2)
    dens = np.exp(logp - logp.max())
    dens /= np.trapezoid(dens, grid)
    cdf = np.cumsum(dens) * (grid[1] - grid[0])
    cdf /= cdf[-1]

    num_chains = 500 if args.quick else 2000
    num_steps = 100 if args.quick else 400
    algos = {
        "proximal (GLL RGO)": proximal.as_top_level_api(target, 0.1 / beta**2),
        "MALA (BlackJAX)": blackjax.mala(target.logdensity, 0.02),
    }
    finals = {}
    for name, algo in algos.items():

        @jax.jit
        def go(key, algo=algo):
            k0, k1 = jax.random.split(key)
            x0 = proximal.initial_position(k0, target, num_chains)

            def chain(k, x):
                def body(s, kk):
                    return algo.step(kk, s)[0], None

                s, _ = jax.lax.scan(body, algo.init(x), jax.random.split(k, num_steps))
                return s.position[0]

            return jax.vmap(chain)(jax.random.split(k1, num_chains), x0)

        finals[name] = np.asarray(go(jax.random.key(0)))

    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(grid, dens, "k-", lw=2, label="exact (quadrature)")
    for (name, xs), color in zip(finals.items(), ["C0", "C1"], strict=True):
        ks = scipy.stats.kstest(xs, lambda x: np.interp(x, grid, cdf))
        ax.hist(
            xs,
            bins=60,
            range=(-1, 1),
            density=True,
            alpha=0.45,
            color=color,
            label=f"{name}: KS={ks.statistic:.3f} (p={ks.pvalue:.2g})",
        )
        print(f"{name}: KS={ks.statistic:.4f} p={ks.pvalue:.3g}")
    ax.set_xlabel("x")
    ax.set_ylabel("density")
    ax.set_title(
        f"non-convex, non-smooth Gibbs target (beta={beta:g}, mu={mu:g}, n={n})\n"
        f"{num_chains} chains x {num_steps} steps from pi_0",
        fontsize=10,
    )
    ax.legend(fontsize=8)
    fig.tight_layout()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(OUT, dpi=120)
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
