"""Gradient norm and smallest Hessian eigenvalue along the iterates of every finder.

One strict-saddle problem whose declared constants hold on all of R^d, so that every
finder can run it (Stochastic Spider and the trust-region methods take unconstrained
steps and reject a ball): the periodic loss

    f(x; z) = -cos(x_1 - z_1) + cos(x_2 - z_2),   z in cancelling pairs (z, -z),

so ``F(x) = -A_1 cos(x_1) + A_2 cos(x_2)`` with ``A_j = mean_i cos(z_ij) > 0``: a strict
saddle at 0 (gradient exactly 0, ``lambda_min = -A_2``), minima at ``(0, ±pi)``.
Global constants ``G = sqrt(2)``, ``M = 1``, ``rho = 1``, range ``B = 4``; n = 2000.

Every finder starts at the exact saddle, at two privacy levels (epsilon 1 and 8, delta
1e-5): DP-SGD (clipped, Poisson batches), DP-SPIDER (seed 003), Stochastic Spider (seed
000 Algorithm 1, with Algorithm 2's selected iterate marked), DP-TR and DP-STR (seed
001, until their stopping rule fires). The iterates come from
``return_iterates=True`` (DP-SGD, DP-SPIDER, DP-TR and DP-STR; for DP-TR / DP-STR,
checked: the last iterate is exactly the released point) and, for Stochastic Spider,
from :func:`~dpsample.finders.spider_sosp.stochastic_spider` run with the key and plan
that :func:`~dpsample.finders.spider_sosp.spider_sosp` uses (checked: the selected
iterate equals the released point). The measurements along the iterates use the
private data and are **non-private diagnostics**.

Writes ``docs/figures/finder_trajectories.png`` and
``experiments/results/finder_trajectories.json``.

Usage: ``python experiments/finder_trajectories.py``.
"""

from __future__ import annotations

import json
import pathlib
import sys
import time

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
from dpsample.domains import Unconstrained  # noqa: E402
from dpsample.finders import trust_region  # noqa: E402
from dpsample.finders.dp_sgd import dp_sgd  # noqa: E402
from dpsample.finders.dp_spider import dp_spider  # noqa: E402
from dpsample.finders.spider_sosp import (  # noqa: E402
    plan_spider,
    spider_sosp,
    stochastic_spider,
)

N, DIM, SHIFT, DELTA, STEPS = 2_000, 2, 0.3, 1e-5, 300
EPSILONS = (1.0, 8.0)
ALPHA = 0.1  # common SOSP accuracy (DP-TR's default; Spider's alpha override)
STR_BATCH = 500
FINDERS = ("DP-SGD (clip 1)", "DP-SPIDER", "Stochastic Spider", "DP-TR", "DP-STR")
COLORS = dict(zip(FINDERS, ("C0", "C1", "C2", "C3", "C4"), strict=True))


def cosine_loss(x, example):
    c = jnp.cos(x - example["z"])
    return -jnp.sum(c[:-1]) + c[-1]


def make_problem() -> dpsample.Problem:
    rng = np.random.default_rng(0)
    u = SHIFT * rng.standard_normal((N // 2, DIM))
    z = np.zeros((N, DIM))
    z[0::2], z[1::2] = u, -u
    return dpsample.Problem(
        cosine_loss,
        {"z": z},
        Unconstrained(DIM),
        lipschitz=float(np.sqrt(DIM)),
        smoothness=1.0,
        hessian_lipschitz=1.0,
        loss_range=2.0 * DIM,
    )


def run_dp_sgd(key, problem, eps):
    res = dp_sgd(
        key,
        problem,
        epsilon=eps,
        delta=DELTA,
        x0=jnp.zeros(DIM),
        num_steps=STEPS,
        batch_size=500,
        learning_rate=0.5,
        clip_norm=1.0,
        output="last",
        return_iterates=True,
    )
    return np.asarray(res.info["iterates"]), res, None


def run_dp_spider(key, problem, eps):
    res = dp_spider(
        key,
        problem,
        epsilon=eps,
        delta=DELTA,
        x0=jnp.zeros(DIM),
        num_steps=STEPS,
        phase_length=10,
        learning_rate=0.5,
        variation_batch_size=500,
        output="last",
        return_iterates=True,
    )
    return np.asarray(res.info["iterates"]), res, None


def run_stochastic_spider(key, problem, eps):
    x0 = jnp.zeros(DIM)
    kw = dict(epsilon=eps, delta=DELTA, num_iters=STEPS, alpha=ALPHA)
    res = spider_sosp(key, problem, x0=x0, **kw)
    # spider_sosp splits its key into (split, permutation, Algorithm 1, Algorithm 2)
    # and runs Algorithm 1 with this plan: replay it to get the iterates.
    plan = plan_spider(problem, **kw)
    k_alg1 = jax.random.split(key, 4)[2]
    xs = np.asarray(stochastic_spider(k_alg1, problem, plan, x0=x0).value)
    sel = res.info["selected"]
    if sel is not None:
        assert np.array_equal(xs[sel], np.asarray(res.value)), "replay mismatch"
    return xs, res, sel


def _tr_iterates(res):
    """DP-TR/DP-STR iterates from ``return_iterates=True`` (last one released)."""
    xs = np.asarray(res.info["iterates"])
    assert len(xs) == res.info["iterations_run"]
    assert np.array_equal(xs[-1], np.asarray(res.value)), "last iterate != released"
    return xs


def run_dp_tr(key, problem, eps):
    res = trust_region.dp_trust_region(
        key,
        problem,
        epsilon=eps,
        delta=DELTA,
        x0=jnp.zeros(DIM),
        alpha=ALPHA,
        return_iterates=True,
    )
    return _tr_iterates(res), res, None


def run_dp_str(key, problem, eps):
    res = trust_region.dp_stochastic_trust_region(
        key,
        problem,
        epsilon=eps,
        delta=DELTA,
        x0=jnp.zeros(DIM),
        grad_batch_size=STR_BATCH,
        hessian_batch_size=STR_BATCH,
        alpha=ALPHA,
        accounting="tight",
        return_iterates=True,
    )
    return _tr_iterates(res), res, None


RUNNERS = dict(
    zip(
        FINDERS,
        (run_dp_sgd, run_dp_spider, run_stochastic_spider, run_dp_tr, run_dp_str),
        strict=True,
    )
)


def measures(problem, xs):
    """Exact ||grad F|| and lambda_min(hess F) along the iterates (non-private)."""
    gn = jax.vmap(lambda x: jnp.linalg.norm(problem.gradient(x)))(jnp.asarray(xs))
    hs = jax.vmap(problem.hessian)(jnp.asarray(xs))
    return np.asarray(gn), np.linalg.eigvalsh(np.asarray(hs))[:, 0]


def main() -> int:
    problem = make_problem()
    thr = -np.sqrt(problem.hessian_lipschitz * ALPHA)
    fig, axes = plt.subplots(2, len(EPSILONS), figsize=(12, 7.5), sharex=True)
    summary: dict = {
        "problem": {
            "loss": "-cos(x1 - z1) + cos(x2 - z2), z in cancelling pairs",
            "n": N,
            "dim": DIM,
            "shift_scale": SHIFT,
            "constants": {"G": problem.lipschitz, "M": 1.0, "rho": 1.0, "B": 4.0},
            "start": "the exact saddle x0 = 0",
            "alpha": ALPHA,
            "delta": DELTA,
        },
        "runs": {},
    }
    for j, eps in enumerate(EPSILONS):
        for i, name in enumerate(FINDERS):
            key = jax.random.key(100 * j + i)
            start = time.perf_counter()
            xs, res, sel = RUNNERS[name](key, problem, eps)
            wall = time.perf_counter() - start
            gn, lam = measures(problem, xs)
            t = np.arange(1, len(xs) + 1)
            ax_g, ax_l = axes[0, j], axes[1, j]
            ax_g.semilogy(t, np.maximum(gn, 1e-8), color=COLORS[name], label=name)
            ax_l.plot(t, lam, color=COLORS[name], label=name)
            if sel is not None:
                ax_g.plot(t[sel], max(gn[sel], 1e-8), "o", color=COLORS[name], ms=6)
                ax_l.plot(t[sel], lam[sel], "o", color=COLORS[name], ms=6)
            sosp = (gn <= ALPHA) & (lam >= thr)
            escaped = np.flatnonzero(lam > 0)
            g_rel, l_rel = measures(problem, np.asarray(res.value)[None])
            summary["runs"][f"{name} eps={eps:g}"] = {
                "accounted_epsilon": res.privacy.epsilon(DELTA),
                "iterations": len(xs),
                "first_iteration_lambda_min_positive": (
                    int(escaped[0]) + 1 if escaped.size else None
                ),
                "fraction_alpha_sosp_iterates": float(np.mean(sosp)),
                "released_gradient_norm": float(g_rel[0]),
                "released_min_eigenvalue": float(l_rel[0]),
                "released_is_alpha_sosp": bool(g_rel[0] <= ALPHA and l_rel[0] >= thr),
                "selected_index": sel,
                "selection_slacks": (
                    {k: res.info[k] for k in ("grad_slack", "eig_slack")}
                    if "grad_slack" in res.info
                    else None
                ),
                "converged": res.info.get("converged"),
                "cap_hit": res.info.get("cap_hit"),
                "wall_seconds": wall,
                "gradient_norms": [float(f"{v:.4g}") for v in gn],
                "min_eigenvalues": [float(f"{v:.4g}") for v in lam],
            }
        axes[0, j].axhline(ALPHA, color="k", ls=":", lw=1, label="alpha")
        axes[1, j].axhline(thr, color="k", ls=":", lw=1, label="-sqrt(rho alpha)")
        axes[0, j].set_title(
            f"epsilon = {eps:g}, delta = {DELTA:g} (n = {N}, d = {DIM})"
        )
        axes[1, j].set_xlabel("iteration (log scale)")
        axes[1, j].set_xscale("log")
    axes[0, 0].set_ylabel("||grad F(x_t)||")
    axes[1, 0].set_ylabel("lambda_min(hess F(x_t))")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    h2, l2 = axes[1, 0].get_legend_handles_labels()
    fig.legend(
        handles + h2[-1:], labels + l2[-1:], loc="lower center", ncol=7, fontsize=9
    )
    fig.suptitle(
        "Finders started at a strict saddle (non-private diagnostics; "
        "dot: Stochastic Spider's AboveThreshold selection)"
    )
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    out = ROOT / "docs" / "figures" / "finder_trajectories.png"
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    res_dir = ROOT / "experiments" / "results"
    res_dir.mkdir(exist_ok=True)
    (res_dir / "finder_trajectories.json").write_text(json.dumps(summary, indent=1))
    for k, v in summary["runs"].items():
        short = {
            a: (round(b, 4) if isinstance(b, float) else b)
            for a, b in v.items()
            if a not in ("gradient_norms", "min_eigenvalues")
        }
        print(k, short)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
