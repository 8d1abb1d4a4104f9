"""Benchmark: DP-SGD per-example-gradient throughput and DP-SPIDER's cost per step.

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

(b) DP-SPIDER: wall time per iteration (full-batch anchors every q = 10 steps, Poisson
    variation batches of expected size 256, paired differences) divided by the wall
    time of one full-batch gradient on the same problem.

Usage: ``python benchmarks/bench_finders.py [--quick]``; JSON to
``benchmarks/results/finders.json``.
"""

from __future__ import annotations

import argparse
import datetime
import json
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
from dpsample.finders import oracles  # noqa: E402
from dpsample.finders.dp_spider import _spider_iterates  # noqa: E402
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
    grad = jax.jit(prob.gradient)
    _time(run, jax.random.key(2), theta0)
    _time(grad, theta0)
    return run, grad, o2.max_batch_size


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    steps, rounds = (20, 3) if args.quick else (50, 5)
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
    run, grad, m2 = bench_spider(prob, theta0, spider_steps)
    t_run, t_grad = [], []
    for r in range(rounds):
        t_run.append(_time(run, jax.random.key(200 + r), theta0))
        t_grad.append(_time(grad, theta0 + 1e-3 * r))
    per_iter = statistics.median(t_run) / spider_steps
    full = statistics.median(t_grad)
    print(
        f"\n(b) DP-SPIDER: {per_iter * 1e3:.3f} ms/iteration (q=10, Poisson b2={BATCH},"
        f" padded {m2}); full-batch gradient {full * 1e3:.3f} ms; "
        f"ratio {per_iter / full:.2f}"
    )
    out = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(),
        "jax": jax.__version__,
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
        "spider": {
            "ms_per_iteration": per_iter * 1e3,
            "ms_full_batch_gradient": full * 1e3,
            "ratio": per_iter / full,
            "phase_length": 10,
            "variation_batch": BATCH,
        },
    }
    path = pathlib.Path(__file__).resolve().parent / "results" / "finders.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(out, indent=2))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
