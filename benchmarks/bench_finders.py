"""Benchmark: DP-SGD throughput; DP-SPIDER, Stochastic Spider and DP-TR per step.

(a) DP-SGD throughput (examples/s) of one clipped step on an MLP (64-64-10, tanh,
    cross-entropy) over scikit-learn's digits data, batch size 256, clip norm 1.0, on
    this CPU, measured side by side in one run (interleaved rounds, medians), in
    float64 and in float32 (like for like: every row of one dtype computes its
    gradients in that dtype):

    * ``dpsample``: the library's own path, i.e. the module-level compiled core that
      :func:`~dpsample.finders.dp_sgd` runs (``dp_sgd._sgd_scan`` driven by the
      first-kind oracle's ``functional()`` pair, built with the arguments ``dp_sgd``
      passes) on a problem whose loss is :class:`dpsample.models.MLP` (so the clipped
      sum takes the ghost-clipping path: no per-example gradients), with
      ``sampling="without_replacement"`` (a fresh uniform batch of 256 per step,
      drawn inside the jitted step), ``clip_norm=1.0`` and ``gradient_dtype``
      ``"float64"`` or ``"float32"`` (norms and clipped sum in that dtype; iterates
      and Gaussian noise in float64);
    * ``generic``: the same core on the same network written as a plain flat-vector
      ``loss_fn`` (a lambda: dpsample cannot see its layers, so it vmaps per-example
      gradients and materialises the ``(256, d)`` matrix): what any user-written loss
      costs;
    * ``jax_sgd``: non-private JAX SGD (one mean-loss gradient per step of
      ``MLP.batch_losses``), same model, batch, dtype and sampler
      (:func:`~dpsample.finders.batches.sample_batch`);
    * ``opacus``: Opacus ``GradSampleModule`` + ``DPOptimizer`` on the same model,
      batch, clipping and dtype, one ``torch.randperm`` batch per step (torch CPU
      build, 2 threads); skipped with a message if not installed;
    * ``torch_sgd``: non-private torch SGD for reference;
    * ``poisson``: the ``dpsample`` row with ``dp_sgd``'s default sampling (Poisson,
      expected batch 256 in the default padded buffer), counted per expected example
      (no Opacus counterpart: Opacus' Poisson loader varies the batch shape).

    Ratios per dtype: dpsample / opacus (target >= 2) and jax_sgd / dpsample
    (target <= 3).

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
from sklearn.datasets import load_digits

ROOT = pathlib.Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run from a checkout without installing the package
    sys.path.insert(0, str(ROOT))

from dpsample._src import precision  # noqa: E402
from dpsample.domains import Unconstrained  # noqa: E402
from dpsample.finders import batches, oracles, trust_region  # noqa: E402
from dpsample.finders.dp_sgd import _sgd_scan  # noqa: E402
from dpsample.finders.functional import cast_floating  # noqa: E402
from dpsample.finders.spider_loop import spider_iterates  # noqa: E402
from dpsample.finders.spider_sosp import plan_spider, stochastic_spider  # noqa: E402
from dpsample.losses import sigmoid  # noqa: E402
from dpsample.models import MLP  # noqa: E402
from dpsample.problem import Problem  # noqa: E402

HIDDEN, BATCH, CLIP, LR = 64, 256, 1.0, 0.1


def _data():
    digits = load_digits()
    x = digits.data / 16.0
    return x.astype(np.float64), digits.target.astype(np.int64)


def _make_problem(x, y):
    """The MLP problem (ghost path), its flat-loss twin (vmap path), and theta0."""
    net = MLP((x.shape[1], HIDDEN, 10), activation="tanh", head="cross_entropy")
    theta0 = net.init(jax.random.key(0))
    consts = dict(
        lipschitz=10.0,
        smoothness=10.0,
        hessian_lipschitz=10.0,  # benchmark declarations: the cost does not use them
        loss_range=10.0,
    )
    data = {"x": x, "y": y}
    prob = Problem(net, data, Unconstrained(net.dim), **consts)

    def loss_fn(theta, ex):  # the same network, layers invisible to dpsample
        return net(theta, ex)

    generic = Problem(loss_fn, data, Unconstrained(net.dim), **consts)
    return prob, generic, theta0


def _time(fn, *args):
    start = time.perf_counter()
    out = fn(*args)
    jax.block_until_ready(out)
    return time.perf_counter() - start


DTYPES = ("float64", "float32")


def _sgd_reference(prob, theta0, dtype, steps):
    """Non-private JAX SGD in ``dtype``: same model, batch and sampler as dpsample."""
    net = prob.loss_fn
    data = cast_floating(prob.data, dtype)
    t0 = theta0.astype(dtype)

    @jax.jit
    def run(key):
        def step(t, k):
            idx, _ = batches.sample_batch(
                k, prob.n, sampling="without_replacement", batch_size=BATCH
            )
            batch = jax.tree.map(lambda a: a[idx], data)
            g = jax.grad(lambda p: jnp.mean(net.batch_losses(p, batch)))(t)
            return t - LR * g, None

        return jax.lax.scan(step, t0, jax.random.split(key, steps))[0]

    return run


def bench_jax(prob, generic, theta0, steps):
    """Compiled runs ``fn(key)`` of ``steps`` steps each, keyed by row name."""
    runs = {}
    configs = [
        ("dpsample", prob, "without_replacement"),
        ("generic", generic, "without_replacement"),
        ("poisson", prob, "poisson"),
    ]
    for dtype in DTYPES:
        for name, problem, sampling in configs:
            # The oracle dp_sgd builds for these arguments, driven by dp_sgd's own
            # compiled core (Unconstrained domain: no projection, ball=None). Its
            # noise_multiplier=1.0 means what Opacus's does below: noise std 1.0 * CLIP
            # on the clipped sum (the ecosystem's convention, dpsample's everywhere).
            o1 = oracles.first_kind(
                problem,
                noise_multiplier=1.0,
                sampling=sampling,
                batch_size=BATCH,
                clip_norm=CLIP,
                gradient_dtype=dtype,
            )
            o_fn, o_ops = o1.functional()

            def dp_run(key, o_fn=o_fn, o_ops=o_ops):
                return _sgd_scan(
                    key,
                    theta0,
                    jnp.float64(LR),
                    None,
                    o_ops,
                    o_fn=o_fn,
                    num_steps=steps,
                )

            runs[f"{name}_{dtype}"] = dp_run
            if sampling == "poisson":
                padded = o1.max_batch_size

        runs[f"jax_sgd_{dtype}"] = _sgd_reference(prob, theta0, dtype, steps)
    for fn in runs.values():
        _time(fn, jax.random.key(1))  # compile
    return runs, padded


def bench_torch(x, y, steps):
    try:
        import torch
    except ImportError:
        return None, "torch not installed (pip install torch==2.13.0 opacus)"
    try:
        import opacus
        from opacus import GradSampleModule
        from opacus.optimizers import DPOptimizer
    except ImportError:
        return None, "opacus not installed (pip install opacus after torch==2.13.0)"
    torch.set_num_threads(2)
    torch.manual_seed(0)
    yt = torch.tensor(y)
    lossf = torch.nn.CrossEntropyLoss()
    runs = {}
    for dtype in DTYPES:
        tdt = getattr(torch, dtype)
        xt = torch.tensor(x, dtype=tdt)

        def model(tdt=tdt):
            return torch.nn.Sequential(
                torch.nn.Linear(x.shape[1], HIDDEN),
                torch.nn.Tanh(),
                torch.nn.Linear(HIDDEN, 10),
            ).to(tdt)

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

        def run(net, optimizer, xt=xt, gen=gen):
            for _ in range(steps):
                idx = torch.randperm(xt.shape[0], generator=gen)[:BATCH]
                optimizer.zero_grad()
                lossf(net(xt[idx]), yt[idx]).backward()
                optimizer.step()

        # fn(key) like the JAX rows; torch draws its batches from its own generator
        runs[f"opacus_{dtype}"] = lambda key, r=run, m=dp_model, o=dp_opt: r(m, o)
        runs[f"torch_sgd_{dtype}"] = lambda key, r=run, m=plain, o=opt: r(m, o)
    for fn in runs.values():
        fn(None)  # warm up
    return (runs, torch.__version__, opacus.__version__), None


def bench_spider(prob, theta0, steps):
    o1 = oracles.first_kind(prob, noise_multiplier=1.0)
    o2 = oracles.second_kind(
        prob, noise_multiplier=1.0, sampling="poisson", batch_size=BATCH
    )
    run = jax.jit(
        lambda key, w: spider_iterates(
            key, o1, o2, w, num_steps=steps, phase_length=10, learning_rate=LR
        )[-1]
    )
    _time(run, jax.random.key(2), theta0)
    return run, o2.max_batch_size


def bench_stochastic_spider(prob, theta0, steps, **overrides):
    plan = plan_spider(prob, epsilon=1.0, delta=1e-5, num_iters=steps, **overrides)

    def run(key, x0):
        res = stochastic_spider(key, prob, plan, x0=x0)
        return res.value, res.info

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
        return trust_region.step._tr_loop(
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
    rounds_a = 3 if args.quick else 9  # part (a) rounds are cheap: more of them
    load_start = os.getloadavg()
    x, y = _data()
    prob, generic, theta0 = _make_problem(x, y)
    print(f"digits n={prob.n}, MLP 64-{HIDDEN}-10 (d={prob.dim}), batch={BATCH}")

    jax_runs, padded = bench_jax(prob, generic, theta0, steps)
    torch_fns, torch_msg = bench_torch(x, y, steps)
    runs_a = dict(jax_runs)
    if torch_fns is not None:
        runs_a.update(torch_fns[0])
    times_a = {name: [] for name in runs_a}
    loads_a = []
    for r in range(rounds_a):
        loads_a.append(os.getloadavg()[0])
        for name, fn in runs_a.items():
            start = time.perf_counter()
            jax.block_until_ready(fn(jax.random.key(100 + r)))
            times_a[name].append(time.perf_counter() - start)
    res = {name: steps * BATCH / statistics.median(ts) for name, ts in times_a.items()}
    print(
        f"\n(a) throughput, examples/s (median of {rounds_a} interleaved rounds of "
        f"{steps} steps; 1-min load {min(loads_a):.2f}-{max(loads_a):.2f})"
    )
    rows = ["dpsample", "generic", "jax_sgd", "opacus", "torch_sgd", "poisson"]
    labels = {
        "dpsample": "dpsample dp_sgd core (MLP, ghost)",
        "generic": "dpsample, flat loss_fn (vmap)",
        "jax_sgd": "jax_sgd",
        "opacus": "opacus dp-sgd",
        "torch_sgd": "torch_sgd",
        "poisson": f"dpsample, poisson (padded {padded})",
    }
    print(f"{'implementation':<36}" + "".join(f"{d:>12}" for d in DTYPES))
    for row in rows:
        if f"{row}_{DTYPES[0]}" not in res:
            continue
        vals = "".join(f"{res[f'{row}_{d}']:>12.0f}" for d in DTYPES)
        print(f"{labels[row]:<36}{vals}")
    ratios = {}
    for d in DTYPES:
        ratios[f"jax_sgd / dpsample ({d})"] = res[f"jax_sgd_{d}"] / res[f"dpsample_{d}"]
        ratios[f"dpsample / generic ({d})"] = res[f"dpsample_{d}"] / res[f"generic_{d}"]
        if torch_fns is not None:
            ratios[f"dpsample / opacus ({d})"] = (
                res[f"dpsample_{d}"] / res[f"opacus_{d}"]
            )
            ratios[f"generic / opacus ({d})"] = res[f"generic_{d}"] / res[f"opacus_{d}"]
    ratios["dpsample float32 / float64"] = (
        res["dpsample_float32"] / res["dpsample_float64"]
    )
    if torch_fns is None:
        print(f"opacus rows skipped: {torch_msg}")
    for k, v in ratios.items():
        print(f"ratio {k:<32}{v:>8.2f}")

    spider_steps = 50 if args.quick else 200
    # (b) runs on the flat-loss problem: the per-iteration ratios compare like with
    # like (the reference gradient uses the same loss_fn).
    run, m2 = bench_spider(generic, theta0, spider_steps)
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
        generic, theta0, spider_steps, drift_threshold=1e300, **no_kick
    )
    path = np.concatenate([np.asarray(theta0)[None], steady[2][:10]])
    drift_10 = float(np.sum(np.diff(path, axis=0) ** 2))  # drift after 10 steps
    spiders = {
        "mixed": bench_stochastic_spider(
            generic, theta0, spider_steps, drift_threshold=drift_10, **no_kick
        )[:2],
        "o2_steady": steady[:2],
    }
    gd = bench_full_gradient(generic, theta0, spider_steps)
    t_run, t_grad = [], []
    t_s = {k: [] for k in spiders}
    branches = {}
    for r in range(rounds):
        t_run.append(_time(run, jax.random.key(200 + r), theta0))
        for name, (s_run, _) in spiders.items():
            start = time.perf_counter()
            _, s_info = s_run(jax.random.key(300 + r), theta0)
            t_s[name].append(time.perf_counter() - start)
            counts = s_info["branch_counts"]  # a PublicRecord: a mapping
            branches.setdefault(name, {k: int(v) for k, v in counts.items()})
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
            "rounds_throughput": rounds_a,
            "poisson_padded_batch": padded,
            "load_1min_during_throughput_rounds": loads_a,
        },
        "throughput_examples_per_s": res,
        "ratios": ratios,
        "opacus": None
        if torch_fns is None
        else {
            "torch": torch_fns[1],
            "opacus": torch_fns[2],
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
                    "variant": plan["variant"],
                    "drift_threshold": plan["drift_threshold"],
                    "alpha_kick": plan["alpha_kick"],
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
    # float64 throughout, as the library computes: the benchmark drives internals
    # (_sgd_scan, _spider_iterates) that public entry points run in this scope (their
    # int64 batch indices do not lower outside it)
    with precision.float64():
        sys.exit(main(sys.argv[1:]))
