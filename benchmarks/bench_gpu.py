"""Benchmark: dpsample on an accelerator (issue 27, goal 6), one script, a few minutes.

Run on a machine with a GPU (``jax.default_backend() == "gpu"``); ``--quick`` runs the
same code at small sizes on any backend (the smoke test runs it on the CPU). Every part
writes its rows into one JSON (``--out``) as soon as it finishes, so a run stopped at
its time limit keeps what it measured. Parts:

(a) **environment**: JAX version, backend, device kind, memory.

(b) **net**: the exponential mechanism over a net of ``P`` points (``PointNet``, 1e7
    at full size) for a logistic loss with ``n = 569`` examples in ``d = 30`` (the
    breast-cancer shape), through the public
    :func:`~dpsample.nets.exponential_mechanism`: at the CPU's default chunk (4,096
    rows for this ``n``), at the device's default chunk
    (:func:`dpsample.nets.stream.auto_chunk_size` reads the backend) and at fixed
    larger chunks; against a one-shot GEMM of the same size (``(P, d) x (d, n)``,
    the loss, the row means, Gumbel noise and one argmax in one jitted call). The
    chunk affects speed only: every row releases the same point (checked).

(c) **chains**: the proximal sampler (fixed-budget rejection RGO) against BlackJAX MALA
    with full gradients, per chain-step, ``vmap``-ed over 1, 32 and 1,024 chains, at
    ``n = 1e6`` (the target and step sizes of ``benchmarks/bench_proximal.py``).

(d) **dp_sgd**: examples/s of a jitted ``lax.scan`` of clipped DP-SGD steps
    (without-replacement batches drawn inside the step), in float64 and float32, on
    the digits MLP (64-64-10, batch 256) and on a wide MLP (784-1024-1024-10, batch
    1,024, synthetic data; and 64-256-10, batch 256, at the crossover): dpsample's
    ghost-clipping path (``clipping="ghost"``), its per-example path
    (``clipping="per_example"``; the committed GPU figures ran it through a plain
    ``loss_fn`` wrapper of the same network, which is the same ``vmap`` of ``grad``),
    its default (``"auto"``: chosen by device and model),
    ``jax_privacy.clipped_grad`` with Gaussian noise, ``optax.contrib.dpsgd`` and a
    non-private JAX SGD step on the same model, batch and sampler. Rows interleaved
    in rounds; medians.

(e) **contract**: ``tools/behaviour_snapshot.py`` on this device: every registered
    algorithm's contract case, the default warm start, each Gibbs route and every
    example configuration (plan and run); errors counted, and epsilons compared with a
    CPU snapshot given by ``--cpu-snapshot`` (plans are host-side: they must agree).

Usage::

    python benchmarks/bench_gpu.py --out benchmarks/results/gpu.json \
        [--cpu-snapshot snapshot.json] [--parts net,chains,dp_sgd,contract] [--quick]

The absolute times are the device's (named in the JSON); ratios are measured side by
side in one run. ``docs/gpu.md`` holds the table of the last run.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pathlib
import platform
import statistics
import sys
import time
import traceback
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
for p in (ROOT, ROOT / "benchmarks", ROOT / "tools"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

RESULTS = ROOT / "benchmarks" / "results" / "gpu.json"


def _timed(fn, repeats: int) -> float:
    """Median wall seconds of ``fn()`` after one warm-up call (compilation)."""
    jax.block_until_ready(fn())
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn())
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _interleaved(fns: dict[str, Any], rounds: int) -> dict[str, float]:
    """Median seconds per call of each ``fns[name]()``, rows interleaved in rounds."""
    for fn in fns.values():
        jax.block_until_ready(fn())  # compile
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            start = time.perf_counter()
            jax.block_until_ready(fn())
            times[name].append(time.perf_counter() - start)
    return {k: statistics.median(v) for k, v in times.items()}


# ----------------------------------------------------------------------------- (a)
def part_env() -> dict[str, Any]:
    dev = jax.devices()[0]
    stats = {}
    try:
        stats = {k: int(v) for k, v in (dev.memory_stats() or {}).items()}
    except Exception:  # noqa: BLE001 - not every backend reports memory
        pass
    return {
        "jax": jax.__version__,
        "backend": jax.default_backend(),
        "device": str(getattr(dev, "device_kind", dev)),
        "devices": len(jax.devices()),
        "bytes_limit": stats.get("bytes_limit"),
        "python": platform.python_version(),
    }


# ----------------------------------------------------------------------------- (b)
def part_net(quick: bool) -> dict[str, Any]:
    from dpsample import Ball, Problem
    from dpsample.nets import PointNet, exponential_mechanism
    from dpsample.nets.stream import NOISE_BLOCK, auto_chunk_size, block_gumbel

    n, d = 569, 30
    num_points = 20_000 if quick else 10_000_000
    rng = np.random.default_rng(0)
    a = rng.normal(size=(n, d))
    a /= np.maximum(1.0, np.linalg.norm(a, axis=1, keepdims=True))
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    data = {"a": jnp.asarray(a), "y": jnp.asarray(y)}

    def loss(x, z):
        return jnp.logaddexp(0.0, -z["y"] * jnp.dot(x, z["a"]))

    # logistic loss with ||x|| <= 1 and ||a|| <= 1: values in [0, log(1 + e)]
    prob = Problem(
        loss,
        data,
        Ball(1.0, dim=d),
        lipschitz=1.0,
        loss_floor=0.0,
        loss_range=math.log1p(math.e),
    )
    pts = rng.normal(size=(num_points, d))
    pts *= (rng.random((num_points, 1)) ** (1 / d)) / np.linalg.norm(
        pts, axis=1, keepdims=True
    )
    net = PointNet(jnp.asarray(pts))
    key = jax.random.key(3)
    eps = 1.0

    cpu_chunk = 4096  # what auto_chunk_size chose for n = 569 before it read the device
    device_chunk = auto_chunk_size(n, num_points)
    chunks = {"cpu_default": cpu_chunk, "device_default": device_chunk}
    for c in () if quick else (65536, 262144, 1048576):
        if c < num_points and c not in chunks.values():
            chunks[f"chunk_{c}"] = c

    rows: dict[str, Any] = {}
    for name, c in chunks.items():

        def run(c=c):
            return exponential_mechanism(key, prob, epsilon=eps, net=net, chunk_size=c)

        value = np.asarray(run().value)
        t = _timed(lambda run=run: run().value, repeats=2 if quick else 3)
        rows[name] = {
            "chunk": c,
            "seconds": t,
            "ns_per_point": 1e9 * t / num_points,
            "value_head": value[:3].tolist(),
        }
        print(
            f"net {name:>15s} chunk={c:8d}  {t:8.3f} s  "
            f"{1e9 * t / num_points:7.1f} ns/point",
            flush=True,
        )

    # the compiled core alone (no plan, no net check), at the device's chunk
    from dpsample.nets.stream import stream_argmax

    core_net = PointNet(jnp.asarray(pts, jnp.float64))
    num_chunks = -(-num_points // device_chunk)

    def core():
        return stream_argmax(
            key,
            data,
            core_net,
            jnp.float64(eps * n / 2),
            loss_fn=loss,
            chunk_size=device_chunk,
            num_chunks=num_chunks,
        )[0]

    t_core = _timed(core, repeats=2 if quick else 3)
    rows["core_device_chunk"] = {
        "chunk": device_chunk,
        "seconds": t_core,
        "ns_per_point": 1e9 * t_core / num_points,
    }
    print(f"net  core (device chunk) {t_core:8.3f} s", flush=True)

    # one-shot GEMM of the same size: scores of every point at once, one argmax
    beta = eps * n / 2.0  # the scale does not change the cost

    @jax.jit
    def one_shot(k, x, A, yy):
        margins = (x @ A.T) * yy[None, :]
        risk = jnp.mean(jnp.logaddexp(0.0, -margins), axis=1)
        size = (x.shape[0] + NOISE_BLOCK - 1) // NOISE_BLOCK * NOISE_BLOCK
        noise = block_gumbel(k, jnp.int64(0), size)[: x.shape[0]]
        return jnp.argmax(-beta * risk + noise)

    x = jnp.asarray(pts)
    t_gemm = _timed(
        lambda: one_shot(key, x, data["a"], data["y"]), repeats=2 if quick else 3
    )
    rows["one_shot_gemm"] = {
        "seconds": t_gemm,
        "ns_per_point": 1e9 * t_gemm / num_points,
    }
    print(
        f"net   one-shot GEMM  {t_gemm:8.3f} s  "
        f"{1e9 * t_gemm / num_points:7.1f} ns/point",
        flush=True,
    )
    heads = {tuple(r["value_head"]) for k, r in rows.items() if "value_head" in r}
    best = min(v["seconds"] for k, v in rows.items() if "value_head" in v)
    return {
        "num_points": num_points,
        "n": n,
        "d": d,
        "rows": rows,
        "same_release_every_chunk": len(heads) == 1,
        "device_default_over_gemm": rows["device_default"]["seconds"] / t_gemm,
        "cpu_default_over_gemm": rows["cpu_default"]["seconds"] / t_gemm,
        "best_chunk_over_gemm": best / t_gemm,
    }


# ----------------------------------------------------------------------------- (c)
def part_chains(quick: bool) -> dict[str, Any]:
    import bench_proximal as bp

    sizes = [10_000] if quick else [1_000_000]
    rows = []
    for chains in (8,) if quick else (1, 32, 1024):
        steps = 10 if quick else (20 if chains > 1 else 100)
        rows += bp.part_ab(sizes, steps=steps, repeats=2 if quick else 3, chains=chains)
    return {"rows": rows}


# ----------------------------------------------------------------------------- (d)
def _mlp_problem(widths, x, y):
    from dpsample.domains import Unconstrained
    from dpsample.models import MLP
    from dpsample.problem import Problem

    net = MLP(tuple(widths), activation="tanh", head="cross_entropy")
    consts = dict(
        lipschitz=10.0, smoothness=10.0, hessian_lipschitz=10.0, loss_range=10.0
    )
    data = {"x": jnp.asarray(x), "y": jnp.asarray(y)}
    return net, Problem(net, data, Unconstrained(net.dim), **consts)


def _sampler(n, batch):
    from dpsample.finders import batches

    def draw(k, data):
        idx, _ = batches.sample_batch(
            k, n, sampling="without_replacement", batch_size=batch
        )
        return jax.tree.map(lambda a: a[idx], data)

    return draw


def _dp_sgd_rows(net, prob, theta0, batch, steps, dtype, lr=0.1, clip=1.0):
    """name -> fn(): one jitted scan of ``steps`` steps per call (same key)."""
    import optax

    from dpsample.finders import oracles
    from dpsample.finders.dp_sgd import _sgd_scan
    from dpsample.finders.functional import cast_floating

    draw = _sampler(prob.n, batch)
    data = cast_floating(prob.data, dtype)
    t0 = theta0.astype(dtype)
    key = jax.random.key(1)
    rows = {}

    paths = {
        "dpsample_ghost": "ghost",
        "dpsample_per_example": "per_example",
        "dpsample_default": "auto",
    }
    for name, path in paths.items():
        o1 = oracles.first_kind(
            prob,
            noise_multiplier=1.0,
            sampling="without_replacement",
            batch_size=batch,
            clip_norm=clip,
            gradient_dtype=dtype,
            clipping=path,
        )
        o_fn, o_ops = o1.functional()
        rows[name] = lambda o_fn=o_fn, o_ops=o_ops: _sgd_scan(
            key, theta0, jnp.float64(lr), None, o_ops, o_fn=o_fn, num_steps=steps
        )

    @jax.jit
    def jax_sgd(k):
        def step(t, kk):
            b = draw(kk, data)
            g = jax.grad(lambda p: jnp.mean(net.batch_losses(p, b)))(t)
            return t - lr * g, None

        return jax.lax.scan(step, t0, jax.random.split(k, steps))[0]

    rows["jax_sgd"] = lambda: jax_sgd(key)

    per_example = jax.vmap(jax.grad(lambda p, ex: net(p, ex)), in_axes=(None, 0))
    tx = optax.contrib.dpsgd(
        learning_rate=lr, l2_norm_clip=clip, noise_multiplier=1.0, seed=0
    )

    @jax.jit
    def optax_dpsgd(k):
        def step(carry, kk):
            t, s = carry
            b = draw(kk, data)
            g = per_example(t, b)
            u, s = tx.update(g, s, t)
            return (optax.apply_updates(t, u), s), None

        return jax.lax.scan(step, (t0, tx.init(t0)), jax.random.split(k, steps))[0]

    rows["optax_dpsgd"] = lambda: optax_dpsgd(key)

    try:
        import jax_privacy

        cg = jax_privacy.clipped_grad(
            lambda p, ex: net(p, ex),
            l2_clip_norm=clip,
            batch_argnums=1,
            keep_batch_dim=False,
        )

        @jax.jit
        def jp_sgd(k):
            def step(t, kk):
                k1, k2 = jax.random.split(kk)
                b = draw(k1, data)
                g = cg(t, b)
                noise = jax.random.normal(k2, g.shape, g.dtype)
                return t - lr * (g + clip * noise) / batch, None

            return jax.lax.scan(step, t0, jax.random.split(k, steps))[0]

        rows["jax_privacy"] = lambda: jp_sgd(key)
    except ImportError as err:
        print(f"jax_privacy not available: {err}", flush=True)
    return rows


def part_dp_sgd(quick: bool, only: tuple[str, ...] = ()) -> dict[str, Any]:
    from sklearn.datasets import load_digits

    digits = load_digits()
    dx = (digits.data / 16.0).astype(np.float64)
    dy = digits.target.astype(np.int64)
    rng = np.random.default_rng(0)
    wide_n = 8192 if quick else 65536
    wx = rng.normal(size=(wide_n, 784)) / math.sqrt(784)
    wy = rng.integers(0, 10, size=wide_n)
    models = {
        # between the two: rows x params = 256 x 19,210 = 4.9M values, just above
        # the accelerator's per-example limit (GHOST_ABOVE_VALUES = 4.2M)
        "mid_mlp": ((64, 256, 10), dx, dy, 256, 20 if quick else 200),
        "digits_mlp": ((64, 64, 10), dx, dy, 256, 20 if quick else 200),
        "wide_mlp": (
            (784, 256, 256, 10) if quick else (784, 1024, 1024, 10),
            wx,
            wy,
            256 if quick else 1024,
            5 if quick else 20,
        ),
    }
    out: dict[str, Any] = {}
    for mname, (widths, x, y, batch, steps) in models.items():
        if (only and mname not in only) or (quick and mname != "digits_mlp"):
            continue
        net, prob = _mlp_problem(widths, x, y)
        theta0 = net.init(jax.random.key(0))
        for dtype in ("float64",) if quick else ("float64", "float32"):
            rows = _dp_sgd_rows(net, prob, theta0, batch, steps, dtype)
            secs = _interleaved(rows, rounds=2 if quick else 5)
            eps = {k: steps * batch / v for k, v in secs.items()}
            ref = eps["jax_sgd"]
            table = {
                k: {"examples_per_s": v, "over_jax_sgd": v / ref}
                for k, v in eps.items()
            }
            for comp in ("jax_privacy", "optax_dpsgd"):
                if comp in eps:
                    for mine in (
                        "dpsample_default",
                        "dpsample_ghost",
                        "dpsample_per_example",
                    ):
                        if mine in eps:
                            table[mine][f"over_{comp}"] = eps[mine] / eps[comp]
            out[f"{mname}_{dtype}"] = {
                "params": net.dim,
                "batch": batch,
                "steps": steps,
                "rows": table,
            }
            print(f"dp_sgd {mname} {dtype} (p={net.dim}, b={batch}):", flush=True)
            for k, v in table.items():
                extra = "  ".join(
                    f"{kk}={vv:.2f}" for kk, vv in v.items() if kk.startswith("over_")
                )
                print(
                    f"   {k:>22s} {v['examples_per_s']:12.0f} ex/s  {extra}", flush=True
                )
    return out


# ----------------------------------------------------------------------------- (e)
def part_contract(cpu_snapshot: str | None) -> dict[str, Any]:
    """The behaviour snapshot in a fresh process (no global setting of this script)."""
    import subprocess
    import tempfile

    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "snapshot.json"
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            [str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
        )
        proc = subprocess.run(
            [
                sys.executable,
                str(ROOT / "tools" / "behaviour_snapshot.py"),
                "--out",
                str(out),
            ],
            capture_output=True,
            text=True,
            env=env,
        )
        if not out.exists():
            return {"error": proc.stderr[-4000:]}
        snap = json.loads(out.read_text())
    refused = {
        k: v["refused"]
        for k, v in snap.items()
        if isinstance(v, dict) and "refused" in v
    }
    errors = {k: v for k, v in snap.items() if k.startswith("error:")}
    result: dict[str, Any] = {
        "entries": len(snap),
        "refused": refused,
        "errors": errors,
        "seconds": time.perf_counter() - start,
    }
    if cpu_snapshot:
        cpu = json.loads(pathlib.Path(cpu_snapshot).read_text())
        cpu_refused = {
            k for k, v in cpu.items() if isinstance(v, dict) and "refused" in v
        }
        result["refused_here_only"] = sorted(set(refused) - cpu_refused)

        def differ(field: str) -> dict[str, Any]:
            """Entries whose ``field`` differs here from the CPU snapshot's."""
            return {
                k: (cpu[k][field], v[field])
                for k, v in snap.items()
                if isinstance(v, dict)
                and field in v
                and isinstance(cpu.get(k), dict)
                and cpu[k].get(field) != v[field]
            }

        result["epsilon_differs_from_cpu"] = differ("epsilon")
        result["release_differs_from_cpu"] = sorted(differ("value"))
    result["snapshot"] = snap
    print(
        f"contract: {len(snap)} entries, {len(refused)} refused "
        f"({len(result.get('refused_here_only', []))} not refused on the CPU), "
        f"{len(errors)} errors, {result['seconds']:.0f} s",
        flush=True,
    )
    return result


PARTS = {
    "net": part_net,
    "chains": part_chains,
    "dp_sgd": part_dp_sgd,
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (any backend)")
    ap.add_argument("--out", default=str(RESULTS))
    ap.add_argument(
        "--parts",
        default=None,
        help="comma list (default: all; --quick: net,chains,dp_sgd)",
    )
    ap.add_argument("--cpu-snapshot", default=None)
    ap.add_argument("--models", default="", help="dp_sgd: only these (comma list)")
    args = ap.parse_args(argv)
    jax.config.update("jax_enable_x64", True)  # the benchmark's internals are float64
    out_path = pathlib.Path(args.out)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {"environment": part_env(), "quick": args.quick}
    print(json.dumps(results["environment"]), flush=True)

    def save():
        out_path.write_text(json.dumps(results, indent=1, default=str) + "\n")

    save()
    parts = args.parts or (
        "net,chains,dp_sgd" if args.quick else "net,chains,dp_sgd,contract"
    )
    for part in parts.split(","):
        start = time.perf_counter()
        try:
            if part == "contract":
                results[part] = part_contract(args.cpu_snapshot)
            elif part == "dp_sgd":
                only = tuple(m for m in args.models.split(",") if m)
                results[part] = part_dp_sgd(args.quick, only)
            else:
                results[part] = PARTS[part](args.quick)
        except Exception as err:  # noqa: BLE001 - one part's failure keeps the others
            traceback.print_exc()
            results[part] = {"error": f"{type(err).__name__}: {err}"}
        results.setdefault("part_seconds", {})[part] = time.perf_counter() - start
        save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
