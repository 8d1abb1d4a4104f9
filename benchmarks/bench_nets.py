"""Benchmark: the streamed net exponential mechanism (dpsample.nets) in d = 3.

For grid nets of about 1e5, 1e6 and 1e7 points of the unit ball in d = 3 and a
synthetic linear-model dataset (n = 569, the size of the breast-cancer data), it
reports

(a) wall time of ``nets.exponential_mechanism`` (compiled, median of repeats; it
    includes building the net's row table on the host) as a ratio to a roofline for
    the same work: the single matrix product ``(net x d) @ (d x n)`` in NumPy
    float64 over exactly the net points (``net`` = the number of net points), done in
    row blocks of the mechanism's chunk size (the full product, net x n float64,
    would need up to 45 GB, so it cannot be formed whole); the grid enumerates only
    net points, so both sides do the same rows. Target <= 2x for the squared loss (a
    linear-model loss); the sigmoid loss (one exp per entry) is reported as well.
    Mechanism and roofline runs are interleaved (3 pairs per row): times are
    medians, the ratio is the median of the per-pair ratios;
(b) peak memory of a fresh subprocess per size: after imports and problem setup the
    Linux peak-RSS watermark is reset (``/proc/self/clear_refs``), and the figure is
    the peak RSS (``VmHWM``) of the run above the RSS it started from (compilation
    plus execution); ``ru_maxrss`` of each process is also recorded, but it is
    dominated by the import-time peak. A compile-only subprocess gives the baseline.
    Target: growth from 1e6 to 1e7 points < 10%.

Usage: ``python benchmarks/bench_nets.py [--quick]``; results also go to
``benchmarks/results/nets.json``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import pathlib
import resource
import statistics
import subprocess
import sys
import time

import numpy as np

N, DIM, SEED = 569, 3, 0
TARGETS = (100_000, 1_000_000, 10_000_000)
RESULTS = pathlib.Path(__file__).resolve().parent / "results" / "nets.json"
ROOT = pathlib.Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run from a checkout without installing the package
    sys.path.insert(0, str(ROOT))


def spacing_for(target: int, dim: int = DIM, radius: float = 1.0) -> float:
    """Spacing whose grid net of the ball has about ``target`` points."""
    log_vd = 0.5 * dim * math.log(math.pi) - math.lgamma(0.5 * dim + 1.0)
    per_axis = math.exp((math.log(target) - log_vd) / dim)  # (R/h + sqrt(d)/2)
    return radius / (per_axis - math.sqrt(dim) / 2.0)


def make_problem(loss_name: str):
    import jax.numpy as jnp

    from dpsample import losses
    from dpsample.domains import Ball
    from dpsample.problem import Problem

    rng = np.random.default_rng(SEED)
    a = rng.normal(size=(N, DIM))
    a /= np.linalg.norm(a, axis=1, keepdims=True)
    w = np.array([0.6, -0.3, 0.2])
    if loss_name == "squared":
        loss = losses.squared()
        y = np.clip(a @ w + 0.1 * rng.normal(size=N), -1.0, 1.0)
        consts = loss.constants(radius=1.0, label_bound=1.0)
    else:
        loss = losses.sigmoid()
        y = np.where(a @ w + 0.3 * rng.normal(size=N) > 0, 1.0, -1.0)
        consts = loss.constants(radius=1.0)
    data = {"x": jnp.asarray(a), "y": jnp.asarray(y)}
    return Problem(loss.loss_fn, data, Ball(1.0, dim=DIM), **consts._asdict())


def run_mechanism(problem, target: int, seed: int):
    import jax

    from dpsample import nets

    res = nets.exponential_mechanism(
        jax.random.key(seed), problem, epsilon=1.0, spacing=spacing_for(target)
    )
    res.value.block_until_ready()
    return res


def roofline_seconds(problem, net_size: int, chunk: int) -> float:
    """NumPy float64 ``(net x d) @ (d x n)`` over ``net_size`` rows, in row blocks.

    Blocks of ``chunk`` rows (the mechanism's chunk size), the last one shorter:
    exactly ``net_size`` rows in total, the product the mechanism must compute.
    """
    a_t = np.ascontiguousarray(np.asarray(problem.data["x"]).T)
    pts = np.random.default_rng(1).uniform(-1, 1, size=(chunk, DIM))
    out = np.empty((chunk, N))
    full, rest = divmod(net_size, chunk)
    time.sleep(0.5)  # let XLA's CPU worker threads go idle after a JAX run
    start = time.perf_counter()
    for _ in range(full):
        np.matmul(pts, a_t, out=out)
    if rest:
        np.matmul(pts[:rest], a_t, out=out[:rest])
    return time.perf_counter() - start


def time_row(loss_name: str, target: int, repeats: int) -> dict:
    """Median times of ``repeats`` interleaved (mechanism, roofline) pairs.

    Interleaving exposes both to the same background load (the machine may be
    shared); the reported ratio is the median of the per-pair ratios.
    """
    problem = make_problem(loss_name)
    res = run_mechanism(problem, target, seed=0)  # warm-up: compiles
    info = res.info
    times, roof = [], []
    for r in range(repeats):
        start = time.perf_counter()
        run_mechanism(problem, target, seed=r + 1)
        times.append(time.perf_counter() - start)
        roof.append(roofline_seconds(problem, info["net_size"], info["chunk_size"]))
    t, t_roof = statistics.median(times), statistics.median(roof)
    ratio = statistics.median(a / b for a, b in zip(times, roof, strict=True))
    return {
        "loss": loss_name,
        "target": target,
        "net_size": info["net_size"],
        "num_candidates": info["num_candidates"],
        "chunk_size": info["chunk_size"],
        "num_chunks": info["num_chunks"],
        "seconds": t,
        "roofline_seconds": t_roof,
        "ratio": ratio,
        "ns_per_point": 1e9 * t / info["net_size"],
        "repeats": repeats,
        "seconds_all": times,
        "roofline_seconds_all": roof,
    }


def _status_bytes(field: str) -> int | None:
    """A ``/proc/self/status`` memory field (e.g. ``VmHWM``) in bytes, if available."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def _reset_peak() -> bool:
    """Reset the peak-RSS watermark (Linux clear_refs 5); False if unsupported."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        return False
    return True


def child(target: int) -> None:
    """Subprocess body: print peak-memory figures (JSON) for one run.

    After importing and building the problem, the peak-RSS watermark is reset, so the
    reported ``delta`` is the peak RSS reached by the mechanism (compilation and
    execution) above the RSS it started from. ``target == 0`` only compiles the chunk
    program of the 1e6 net (the compile-only baseline).
    """
    import gc

    import jax
    import jax.numpy as jnp

    from dpsample import nets
    from dpsample._src import precision

    problem = make_problem("squared")
    gc.collect()
    reset = _reset_peak()
    before = _status_bytes("VmRSS") if reset else None
    if target:
        run_mechanism(problem, target, seed=0)
    else:
        net = nets.grid_net(problem.domain, spacing=spacing_for(TARGETS[1]))
        chunk = nets.stream.auto_chunk_size(problem.n, net.num_candidates)
        with precision.float64():  # an internal: lowered as the library runs it
            nets.stream.stream_argmax.lower(
                jax.random.key(0),
                problem.data,
                net,
                jnp.asarray(1.0),
                loss_fn=problem.loss_fn,
                chunk_size=chunk,
                num_chunks=-(-net.num_candidates // chunk),
            ).compile()
    scale = 1 if sys.platform == "darwin" else 1024  # ru_maxrss: KiB on Linux
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale
    peak = _status_bytes("VmHWM") if reset else None
    delta = peak - before if reset and peak is not None and before else None
    print(json.dumps({"ru_maxrss": maxrss, "rss_before": before, "delta": delta}))


def peak_memory(target: int) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--child", str(target)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--quick", action="store_true", help="1 repeat, no 1e7 row")
    args = parser.parse_args()
    if args.child is not None:
        child(args.child)
        return

    import jax

    targets = TARGETS[:2] if args.quick else TARGETS
    load_start = list(os.getloadavg())  # other work on the machine skews timings
    rows = []
    print(f"net exponential mechanism, d={DIM}, n={N}, float64, {jax.devices()[0]}")
    print(
        "roofline: numpy float64 (net x d) @ (d x n) over exactly the net points, "
        "in blocks of the chunk size"
    )
    header = (
        f"{'loss':8s} {'net size':>10s} {'seconds':>9s} {'roofline s':>10s} "
        f"{'ratio':>6s}"
    )
    print(header)
    for loss_name in ("squared", "sigmoid"):
        for target in targets:
            repeats = 1 if args.quick else 3
            row = time_row(loss_name, target, repeats)
            rows.append(row)
            print(
                f"{row['loss']:8s} {row['net_size']:>10d} {row['seconds']:9.3f} "
                f"{row['roofline_seconds']:10.3f} {row['ratio']:6.2f}"
            )
    print("target: ratio <= 2 for squared (linear-model loss); sigmoid reported")

    mem_targets = targets[1:] if len(targets) > 2 else targets
    memory = {"sizes": list(mem_targets), "compile_only": peak_memory(0)}
    for target in mem_targets:
        memory[str(target)] = peak_memory(target)
    mib = 2**20
    print(
        "memory: peak RSS above the RSS after imports and problem setup "
        "(watermark reset in a fresh process)"
    )
    print(f"  compile only (1e6 chunk program): {_fmt(memory['compile_only'], mib)}")
    for target in mem_targets:
        print(f"  {target:>10d} points: {_fmt(memory[str(target)], mib)}")
    lo, hi = (memory[str(t)]["delta"] for t in mem_targets[-2:])
    if lo and hi is not None:
        memory["growth"] = (hi - lo) / lo
        print(
            f"memory growth {mem_targets[-2]} -> {mem_targets[-1]} points: "
            f"{100 * memory['growth']:+.1f}% (target < 10%)"
        )
    else:
        memory["growth"] = None
        print("memory growth: peak-RSS reset unsupported here; see ru_maxrss")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            {
                "benchmark": "nets",
                "dim": DIM,
                "n": N,
                "device": str(jax.devices()[0]),
                "timing": rows,
                "memory": memory,
                "command": "python benchmarks/bench_nets.py",
                "roofline": (
                    "numpy float64 (net x d) @ (d x n) over exactly the net points "
                    "(net_size rows), in row blocks of chunk_size"
                ),
                "date": datetime.date.today().isoformat(),
                "load_average_start_end": [load_start, list(os.getloadavg())],
            },
            indent=2,
        )
        + "\n"
    )
    print(f"wrote {RESULTS}")


def _fmt(mem: dict, mib: int) -> str:
    delta = mem["delta"]
    text = "n/a" if delta is None else f"{delta / mib:7.1f} MiB"
    return f"{text} (process ru_maxrss {mem['ru_maxrss'] / mib:.1f} MiB)"


if __name__ == "__main__":
    main()
