"""Gradient norm and smallest Hessian eigenvalue along the iterates of each finder.

One strict-saddle problem (spec 002 §5.4 E3: ``x^T H x / 2 + sum x_j^4 / 4`` with
``H = diag(1, 1, -1)`` plus per-example shifts that average out, n = 1000, d = 3, on
the ball of radius 1.5), every finder started at the exact saddle, at two privacy
levels. The measurements along the (public) iterates use the private data and are
**non-private diagnostics**. Writes ``docs/figures/finder_trajectories.png`` and
``experiments/results/finder_trajectories.json``.

Usage: ``python experiments/finder_trajectories.py``.
"""

from __future__ import annotations

import json
import pathlib
import sys

import jax
import jax.numpy as jnp
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import dpsample  # noqa: E402
from dpsample.finders import dp_sgd, dp_spider  # noqa: E402
from dpsample.finders import stationarity as st  # noqa: E402

N, DIM, RADIUS, SHIFT, DELTA, STEPS = 1000, 3, 1.5, 0.1, 1e-5, 300
EPSILONS = (5.0, 50.0)
ALPHA = 0.02


def make_problem() -> dpsample.Problem:
    rng = np.random.default_rng(0)
    u = rng.standard_normal((N // 2, DIM))
    u = SHIFT * u / np.linalg.norm(u, axis=1, keepdims=True)
    z = np.zeros((N, DIM))
    z[0::2], z[1::2] = u, -u
    h = jnp.array([1.0, 1.0, -1.0])

    def loss(x, ex):
        return 0.5 * jnp.sum(h * x**2) + 0.25 * jnp.sum(x**4) + x @ ex["z"]

    r = RADIUS
    return dpsample.Problem(
        loss,
        {"z": z},
        dpsample.Ball(r, dim=DIM),
        lipschitz=r + r**3 + SHIFT,
        smoothness=1.0 + 3.0 * r**2,
        hessian_lipschitz=6.0 * r,
        loss_range=2.0 * (r**2 / 2 + r**4 / 4 + SHIFT * r),
    )


def run(problem, name, eps, key):
    x0 = jnp.zeros(DIM)
    common = dict(epsilon=eps, delta=DELTA, x0=x0, num_steps=STEPS)
    common.update(learning_rate=0.1, return_iterates=True, output="last")
    if name == "DP-SGD (no clipping)":
        res = dp_sgd(key, problem, batch_size=250, **common)
    elif name == "DP-SGD (clip 1.0)":
        res = dp_sgd(key, problem, batch_size=250, clip_norm=1.0, **common)
    else:
        res = dp_spider(
            key, problem, phase_length=10, variation_batch_size=250, **common
        )
    xs = np.asarray(res.info["iterates"])
    grad_fn = jax.jit(jax.vmap(problem.gradient))
    hess_fn = jax.jit(jax.vmap(problem.hessian))
    gn = np.linalg.norm(np.asarray(grad_fn(xs)), axis=1)
    lam = np.linalg.eigvalsh(np.asarray(hess_fn(xs)))[:, 0]
    final = st.stationarity_report(problem, xs[-1], alpha=ALPHA)
    return gn, lam, res.privacy.epsilon(DELTA), final


def main() -> int:
    problem = make_problem()
    names = ("DP-SGD (no clipping)", "DP-SGD (clip 1.0)", "DP-SPIDER")
    fig, axes = plt.subplots(2, len(EPSILONS), figsize=(11, 6.5), sharex=True)
    summary = {}
    for j, eps in enumerate(EPSILONS):
        for i, name in enumerate(names):
            gn, lam, eps_acc, final = run(problem, name, eps, jax.random.key(10 + i))
            t = np.arange(1, STEPS + 1)
            axes[0, j].semilogy(t, gn, label=name)
            axes[1, j].plot(t, lam, label=name)
            summary[f"{name} eps={eps:g}"] = {
                "accounted_epsilon": eps_acc,
                "final_gradient_norm": final.gradient_norm,
                "final_min_eigenvalue": final.min_eigenvalue,
                "final_is_alpha_sosp": final.is_sosp,
                "fraction_alpha_sosp": float(
                    np.mean(
                        (gn <= ALPHA)
                        & (lam >= -np.sqrt(problem.hessian_lipschitz * ALPHA))
                    )
                ),
            }
        thr = -np.sqrt(problem.hessian_lipschitz * ALPHA)
        axes[0, j].axhline(ALPHA, color="k", ls=":", lw=1, label="alpha")
        axes[1, j].axhline(thr, color="k", ls=":", lw=1, label="-sqrt(rho alpha)")
        axes[0, j].set_title(f"epsilon = {eps:g}, delta = {DELTA:g} (n = {N})")
        axes[1, j].set_xlabel("iteration")
    axes[0, 0].set_ylabel("||grad F(x_t)||")
    axes[1, 0].set_ylabel("lambda_min(hess F(x_t))")
    axes[1, 0].legend(fontsize=8)
    fig.suptitle("Finders started at a strict saddle (non-private diagnostics)")
    fig.tight_layout()
    out = ROOT / "docs" / "figures" / "finder_trajectories.png"
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    res_dir = ROOT / "experiments" / "results"
    res_dir.mkdir(exist_ok=True)
    (res_dir / "finder_trajectories.json").write_text(json.dumps(summary, indent=2))
    for k, v in summary.items():
        print(
            k, {a: (round(b, 4) if isinstance(b, float) else b) for a, b in v.items()}
        )
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
