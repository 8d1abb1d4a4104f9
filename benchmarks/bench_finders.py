"""Benchmark: DP-SGD throughput; DP-SPIDER, Stochastic Spider and DP-TR per step.

(a) DP-SGD throughput (examples/s) of one clipped step on an MLP (64-64-10, tanh,
    cross-entropy) over scikit-learn's digits data, batch size 256, clip norm 1.0, on
    this CPU, measured side by side in one run (interleaved rounds, medians):

    * ``dpsample``: the first-kind oracle of :mod:`dpsample.finders.oracles` with
      per-example clipping (``vmap`` of ``grad`` over a flat parameter vector from
      ``ravel_pytree``), fixed-size batches drawn without replacement inside the jitted
      step, Gaussian noise, SGD update; ``lax.scan`` over steps;
    * ``jax_sgd``: non-private JAX SGD (one mean-loss gradient per step), same model,
      batch and sampling;
    * ``opacus``: Opacus ``GradSampleModule`` + ``DPOptimizer`` on the same model,
      batch and clipping (torch CPU build); skipped with a message if not installed;
    * ``torch_sgd``: non-private torch SGD for reference.

    Ratios: dpsample / opacus (target >= 2) and jax_sgd / dpsample (target <= 3).

(b) Cost per iteration relative to one full-batch gradient, on the same MLP, measured
    side by side (interleaved rounds, medians, compilation excluded by a warm-up call):

    * DP-SPIDER (seed 003): full-batch anchors every q = 10 steps, Poisson variation
      batches of expected size 256, paired differences;
    * Stochastic Spider (seed 000 Algorithm 1, the empirical variant of Theorem 4.2):
      full-batch O1 on drift resets and kicks, full-batch paired O2 otherwise, run
      through the public :func:`~dpsample.finders.spider_sosp.stochastic_spider`
      (repeated calls reuse one compilation), with Theorem 4.2's plan at epsilon = 1
      and two overrides of the drift threshold (kicks off, no O1 cap): an O1 + O2 mix
      (the threshold is the drift of a pilot run's first 10 steps, so drift resets come
      about every 10 steps, comparable to DP-SPIDER's q = 10), and the O2 steady
      state (every step after the first is a paired O2 difference, two full-batch
      gradients). The theorem's own threshold is so small on this problem that every
      step resets by O1 and the cap stops the run early; the branch counts are
      reported;
    * the reference: one full-batch gradient step, timed as a jitted ``lax.scan`` of
      full-batch gradient-descent steps (per step, so dispatch overhead is excluded as
      it is for the finders' scans).

(c) DP-TR (seed 001 Algorithm 1) per iteration relative to one full-batch gradient plus
    one full Hessian (jitted together), on a non-convex sigmoid GLM over the digits
    features (d = 64; a full Hessian of the MLP, d = 4810, is not cheap). DP-TR runs its
    host loop of jitted iterations (noisy gradient and Hessian, exact subproblem by a
    float64 eigendecomposition, step), with the stopping rule disabled so that every
    round runs the same number of iterations.

Usage: ``python benchmarks/bench_finders.py [--quick]``; JSON to
``benchmarks/results/finders.json``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import pathlib
import statistics
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree
from sklearn.datasets import load_digits

ROOT = pathlib.Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run from a checkout without installing the package
    sys.path.insert(0, str(ROOT))

import dpsample  # noqa: F401, E402  (x64)
from dpsample.domains import Unconstrained  # noqa: E402
from dpsample.finders import oracles, trust_region  # noqa: E402
from dpsample.finders.dp_spider import _spider_iterates  # noqa: E402
from dpsample.finders.spider_sosp import plan_spider, stochastic_spider  # noqa: E402
from dpsample.losses import sigmoid  # noqa: E402
from dpsample.problem import Problem  # noqa: E402

HIDDEN, BATCH, CLIP, LR = 64, 256, 1.0, 0.1


def _data():
    digits = load_digits()
    x = digits.data / 16.0
    return x.astype(np.float64), digits.target.astype(np.int64)


def _init_params(key, p, k):
    k1, k2 = jax.random.split(key)
    return {
        "w1": jax.random.normal(k1, (p, HIDDEN)) / np.sqrt(p),
        "b1": jnp.zeros(HIDDEN),
        "w2": jax.random.normal(k2, (HIDDEN, k)) / np.sqrt(HIDDEN),
        "b2": jnp.zeros(k),
    }


def _make_problem(x, y):
    params = _init_params(jax.random.key(0), x.shape[1], 10)
    flat, unravel = ravel_pytree(params)

    def loss_fn(theta, ex):
        prm = unravel(theta)
        h = jnp.tanh(ex["x"] @ prm["w1"] + prm["b1"])
        logits = h @ prm["w2"] + prm["b2"]
        return jax.nn.logsumexp(logits) - logits[ex["y"]]

    prob = Problem(
        loss_fn,
        {"x": x, "y": y},
        Unconstrained(flat.shape[0]),
        lipschitz=10.0,
        smoothness=10.0,
        hessian_lipschitz=10.0,  # benchmark declarations: the cost does not use them
        loss_range=10.0,
    )
    return prob, flat


def _time(fn, *args):
    start = time.perf_counter()
    out = fn(*args)
    jax.block_until_ready(out)
    return time.perf_counter() - start


def bench_jax(prob, theta0, steps, rounds):
    o1 = oracles.first_kind(
        prob,
        noise_multiplier=1.0,
        sampling="without_replacement",
        batch_size=BATCH,
        clip_norm=CLIP,
    )

    @jax.jit
    def dp_run(key, theta):
        def step(t, k):
            return t - LR * o1.estimate_fn(k, t), None

        return jax.lax.scan(step, theta, jax.random.split(key, steps))[0]

    data = prob.data

    @jax.jit
    def sgd_run(key, theta):
        def step(t, k):
            idx = jax.random.choice(k, prob.n, (BATCH,), replace=False)
            batch = jax.tree.map(lambda a: a[idx], data)
            g = jax.grad(
                lambda p: jnp.mean(jax.vmap(prob.loss_fn, (None, 0))(p, batch))
            )(t)
            return t - LR * g, None

        return jax.lax.scan(step, theta, jax.random.split(key, steps))[0]

    key = jax.random.key(1)
    _time(dp_run, key, theta0)
    _time(sgd_run, key, theta0)  # compile
    return dp_run, sgd_run


def bench_torch(x, y, steps):
    try:
        import torch
    except ImportError:
        return None, "torch not installed (pip install torch==2.13.0 opacus)"
    try:
        from opacus import GradSampleModule
        from opacus.optimizers import DPOptimizer
    except ImportError:
        return None, "opacus not installed (pip install opacus after torch==2.13.0)"
    torch.set_num_threads(2)
    torch.manual_seed(0)
    xt = torch.tensor(x, dtype=torch.float64)
    yt = torch.tensor(y)

    def model():
        return torch.nn.Sequential(
            torch.nn.Linear(x.shape[1], HIDDEN),
            torch.nn.Tanh(),
            torch.nn.Linear(HIDDEN, 10),
        ).double()

    lossf = torch.nn.CrossEntropyLoss()
    dp_model = GradSampleModule(model())
    dp_opt = DPOptimizer(
        torch.optim.SGD(dp_model.parameters(), lr=LR),
        noise_multiplier=1.0,
        max_grad_norm=CLIP,
        expected_batch_size=BATCH,
    )
    plain = model()
    opt = torch.optim.SGD(plain.parameters(), lr=LR)
    gen = torch.Generator().manual_seed(0)

    def run_dp():
        for _ in range(steps):
            idx = torch.randperm(xt.shape[0], generator=gen)[:BATCH]
            dp_opt.zero_grad()
            lossf(dp_model(xt[idx]), yt[idx]).backward()
            dp_opt.step()

    def run_plain():
        for _ in range(steps):
            idx = torch.randperm(xt.shape[0], generator=gen)[:BATCH]
            opt.zero_grad()
            lossf(plain(xt[idx]), yt[idx]).backward()
            opt.step()

    run_dp()
    run_plain()  # warm up
    import opacus

    return (run_dp, run_plain, torch.__version__, opacus.__version__), None


def bench_spider(prob, theta0, steps):
    o1 = oracles.first_kind(prob, noise_multiplier=1.0)
    o2 = oracles.second_kind(
        prob, noise_multiplier=1.0, sampling="poisson", batch_size=BATCH
    )
    run = jax.jit(
        lambda key, w: _spider_iterates(
            key, o1, o2, w, num_steps=steps, phase_length=10, learning_rate=LR
        )[-1]
    )
    _time(run, jax.random.key(2), theta0)
    return run, o2.max_batch_size


def bench_stochastic_spider(prob, theta0, steps, **overrides):
    plan = plan_spider(prob, epsilon=1.0, delta=1e-5, num_iters=steps, **overrides)

    def run(key, x0):
        xs, info, _ = stochastic_spider(key, prob, plan, x0=x0)
        return xs, info

    xs, _ = run(jax.random.key(3), theta0)  # compile once; later calls reuse it
    return run, plan, np.asarray(xs)


def bench_full_gradient(prob, theta0, steps):
    data = prob.data

    @jax.jit
    def gd(theta):
        def step(t, _):
            g = jax.grad(
                lambda p: jnp.mean(jax.vmap(prob.loss_fn, (None, 0))(p, data))
            )(t)
            return t - LR * g, None

        return jax.lax.scan(step, theta, None, length=steps)[0]

    _time(gd, theta0)
    return gd


def _glm_problem(x, y):
    loss = sigmoid()
    feats = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    labels = np.where(y < 5, 1.0, -1.0)
    c = loss.constants(feature_bound=1.0, radius=1.0, label_bound=1.0, dim=64)
    # The sigmoid GLM's G, M, rho hold on all of R^d (no regulariser).
    return Problem(
        loss.loss_fn,
        {"x": feats, "y": labels},
        Unconstrained(feats.shape[1]),
        lipschitz=c.lipschitz,
        smoothness=c.smoothness,
        hessian_lipschitz=c.hessian_lipschitz,
        loss_range=c.loss_range,
    )


def bench_trust_region(prob, iters):
    w0 = jnp.zeros(prob.dim)
    kw = dict(sigma_g=1e-3, sigma_h=1e-3, radius=0.1, num_iters=iters)

    def run(key):
        # stop_threshold < 0: the dual stopping rule never fires (lambda >= 0).
        return trust_region._run(
            key, prob, w0, stop_threshold=-1.0, batch_sizes=None, **kw
        )

    data = prob.data

    @jax.jit
    def grad_and_hessian(w):
        def risk(p):
            return jnp.mean(jax.vmap(prob.loss_fn, (None, 0))(p, data))

        return jax.grad(risk)(w), jax.hessian(risk)(w)

    _time(lambda k: run(k)[0], jax.random.key(4))
    _time(grad_and_hessian, w0)
    return run, grad_and_hessian


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    steps, rounds = (20, 3) if args.quick else (50, 5)
    load_start = os.getloadavg()
    x, y = _data()
    prob, theta0 = _make_problem(x, y)
    print(f"digits n={prob.n}, MLP 64-{HIDDEN}-10 (d={prob.dim}), batch={BATCH}")

    dp_run, sgd_run = bench_jax(prob, theta0, steps, rounds)
    torch_fns, torch_msg = bench_torch(x, y, steps)
    t_dp, t_sgd, t_op, t_tp = [], [], [], []
    for r in range(rounds):
        key = jax.random.key(100 + r)
        t_dp.append(_time(dp_run, key, theta0))
        t_sgd.append(_time(sgd_run, key, theta0))
        if torch_fns is not None:
            start = time.perf_counter()
            torch_fns[0]()
            t_op.append(time.perf_counter() - start)
            start = time.perf_counter()
            torch_fns[1]()
            t_tp.append(time.perf_counter() - start)

    def thr(ts):
        return steps * BATCH / statistics.median(ts)

    res = {
        "dpsample_dp_sgd": thr(t_dp),
        "jax_sgd": thr(t_sgd),
    }
    if torch_fns is not None:
        res["opacus_dp_sgd"] = thr(t_op)
        res["torch_sgd"] = thr(t_tp)
    print("\n(a) throughput, examples/s (median of interleaved rounds)")
    print(f"{'implementation':<18}{'examples/s':>14}")
    for k, v in res.items():
        print(f"{k:<18}{v:>14.0f}")
    ratios = {"jax_sgd / dpsample": res["jax_sgd"] / res["dpsample_dp_sgd"]}
    if torch_fns is not None:
        ratios["dpsample / opacus"] = res["dpsample_dp_sgd"] / res["opacus_dp_sgd"]
    else:
        print(f"opacus column skipped: {torch_msg}")
    for k, v in ratios.items():
        print(f"ratio {k:<22}{v:>8.2f}")

    spider_steps = 50 if args.quick else 200
    run, m2 = bench_spider(prob, theta0, spider_steps)
    # Two Stochastic Spider configurations (plan of Theorem 4.2 at epsilon = 1 with
    # overrides; on this problem the theorem's own drift threshold kappa is so small
    # that every step resets by O1 and the O1 cap ends the run early, which measures
    # nothing useful). No kicks (alpha ~ 0), no cap (N1_max = T):
    # * "o2_steady": kappa = inf, so after the first O1 call every step is a paired
    #   O2 difference (two full-batch gradients);
    # * "mixed": kappa = the drift of a pilot run's first 10 steps after its O1 call,
    #   so that drift resets (O1) come about every 10 steps, as DP-SPIDER's anchors.
    no_kick = dict(alpha=1e-12, max_o1_calls=spider_steps)
    steady = bench_stochastic_spider(
        prob, theta0, spider_steps, drift_threshold=1e300, **no_kick
    )
    path = np.concatenate([np.asarray(theta0)[None], steady[2][:10]])
    drift_10 = float(np.sum(np.diff(path, axis=0) ** 2))  # drift after 10 steps
    spiders = {
        "mixed": bench_stochastic_spider(
            prob, theta0, spider_steps, drift_threshold=drift_10, **no_kick
        )[:2],
        "o2_steady": steady[:2],
    }
    gd = bench_full_gradient(prob, theta0, spider_steps)
    t_run, t_grad = [], []
    t_s = {k: [] for k in spiders}
    branches = {}
    for r in range(rounds):
        t_run.append(_time(run, jax.random.key(200 + r), theta0))
        for name, (s_run, _) in spiders.items():
            start = time.perf_counter()
            _, s_info = s_run(jax.random.key(300 + r), theta0)
            t_s[name].append(time.perf_counter() - start)
            branches.setdefault(name, s_info["branch_counts"])
        t_grad.append(_time(gd, theta0 + 1e-3 * r))
    full = statistics.median(t_grad) / spider_steps
    per_iter = statistics.median(t_run) / spider_steps
    s_per_iter = {k: statistics.median(v) / spider_steps for k, v in t_s.items()}
    print(
        f"\n(b) cost per iteration / one full-batch gradient ({spider_steps} "
        "iterations per round, median of interleaved rounds)"
    )
    print(f"{'finder':<44}{'ms/iter':>10}{'ratio':>8}")
    rows_b = [
        ("full-batch gradient step (reference)", full),
        (f"DP-SPIDER (q=10, Poisson b2={BATCH}, padded {m2})", per_iter),
        ("Stochastic Spider, O1 + O2 mix", s_per_iter["mixed"]),
        ("Stochastic Spider, O2 steady state", s_per_iter["o2_steady"]),
    ]
    for name, t in rows_b:
        print(f"{name:<44}{t * 1e3:>10.3f}{t / full:>8.2f}")
    for name, counts in branches.items():
        print(f"Stochastic Spider branch counts ({name}): {counts}")

    tr_iters = 20 if args.quick else 50
    glm = _glm_problem(x, y)
    tr_run, gh = bench_trust_region(glm, tr_iters)
    t_tr, t_gh = [], []
    for r in range(rounds):
        start = time.perf_counter()
        _, tr_info = tr_run(jax.random.key(400 + r))
        t_tr.append(time.perf_counter() - start)
        assert tr_info["iterations_run"] == tr_iters
        gh_times = [_time(gh, jnp.full(glm.dim, 1e-3 * (r + k))) for k in range(5)]
        t_gh.append(statistics.median(gh_times))
    tr_per_iter = statistics.median(t_tr) / tr_iters
    gh_cost = statistics.median(t_gh)
    print(
        f"\n(c) DP-TR on a sigmoid GLM (digits, d={glm.dim}, n={glm.n}): "
        f"{tr_per_iter * 1e3:.3f} ms/iteration; full-batch gradient + Hessian "
        f"{gh_cost * 1e3:.3f} ms; ratio {tr_per_iter / gh_cost:.2f}"
    )
    load_end = os.getloadavg()
    print(
        f"\nload average (1, 5, 15 min) at start {load_start}, at end {load_end} "
        f"on {os.cpu_count()} cores (a shared machine makes the torch rows noisy)"
    )
    out = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(),
        "jax": jax.__version__,
        "load_average": {"start": load_start, "end": load_end},
        "cpu_count": os.cpu_count(),
        "config": {
            "n": prob.n,
            "dim": prob.dim,
            "batch": BATCH,
            "clip": CLIP,
            "steps": steps,
            "rounds": rounds,
        },
        "throughput_examples_per_s": res,
        "ratios": ratios,
        "opacus": None
        if torch_fns is None
        else {
            "torch": torch_fns[2],
            "opacus": torch_fns[3],
        },
        "opacus_skipped": torch_msg,
        "per_iteration_vs_full_gradient": {
            "iterations": spider_steps,
            "ms_full_batch_gradient": full * 1e3,
            "dp_spider": {
                "ms_per_iteration": per_iter * 1e3,
                "ratio": per_iter / full,
                "phase_length": 10,
                "variation_batch": BATCH,
                "variation_padded": m2,
            },
            "stochastic_spider": {
                name: {
                    "ms_per_iteration": s_per_iter[name] * 1e3,
                    "ratio": s_per_iter[name] / full,
                    "variant": plan.variant,
                    "drift_threshold": plan.drift_threshold,
                    "alpha_kick": plan.alpha_kick,
                    "branch_counts": branches[name],
                }
                for name, (_, plan) in spiders.items()
            },
        },
        "dp_trust_region": {
            "problem": "sigmoid GLM on digits (rows normalised, labels digit < 5)",
            "n": glm.n,
            "dim": glm.dim,
            "iterations": tr_iters,
            "ms_per_iteration": tr_per_iter * 1e3,
            "ms_full_gradient_plus_hessian": gh_cost * 1e3,
            "ratio": tr_per_iter / gh_cost,
        },
    }
    path = pathlib.Path(__file__).resolve().parent / "results" / "finders.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(out, indent=2))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
