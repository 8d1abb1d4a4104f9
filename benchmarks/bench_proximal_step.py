"""Benchmark: one proximal step of two source trees, side by side (paired, alternating).

Times the compiled proximal kernel (``lax.scan`` of ``STEPS`` steps, one chain,
``d = 2``, the absolute-error target of ``bench_proximal.py``) at n = 1e3 and 1e5, as
process CPU time pinned to one core (``taskset -c 0`` when available), for each tree in
turn, ``--rounds`` times, and prints the per-step microseconds and the ratio of the
medians. Each measurement runs in a fresh process with the tree first on ``sys.path``.

Usage::

    git worktree add /tmp/before <commit>
    python benchmarks/bench_proximal_step.py --trees /tmp/before . --rounds 3

``--quick``: one round of 200 steps at n = 1e3 (default trees: this checkout twice).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import shutil
import statistics
import subprocess
import sys

SIZES = (1_000, 100_000)
STEPS = 2000

_CHILD = r"""
import json, statistics, sys, time
tree, bench = sys.argv[1], sys.argv[2]
sys.path[:0] = [tree, bench]
import jax, jax.numpy as jnp
import dpsample
assert dpsample.__file__.startswith(tree), dpsample.__file__
from dpsample.samplers import proximal
from dpsample.samplers.target import GibbsTarget
import bench_proximal as bp
out = {}
with jax.enable_x64(True):
    for n in json.loads(sys.argv[3]):
        target = GibbsTarget.create(bp.make_problem(n), beta=bp.BETA, mu=bp.MU)
        kernel = proximal.build_kernel()
        s0 = proximal.init(jnp.zeros(bp.DIM), target)
        steps = int(sys.argv[4])

        @jax.jit
        def go(key):
            def body(c, k):
                return kernel(k, c, target, 0.1 / bp.BETA**2)[0], None
            return jax.lax.scan(body, s0, jax.random.split(key, steps))[0]

        key = jax.random.key(0)
        jax.block_until_ready(go(key))
        times = []
        for _ in range(7):
            start = time.process_time()
            jax.block_until_ready(go(key))
            times.append(time.process_time() - start)
        out[n] = 1e6 * min(times) / steps
print(json.dumps(out))
"""


def measure(tree: str, sizes=SIZES, steps=STEPS) -> dict[str, float]:
    bench = str(pathlib.Path(__file__).resolve().parent)
    cmd = [sys.executable, "-c", _CHILD, tree, bench, json.dumps(sizes), str(steps)]
    if shutil.which("taskset"):
        cmd = ["taskset", "-c", "0", *cmd]
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trees", nargs=2, metavar=("BEFORE", "AFTER"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="1 round, n = 1e3")
    args = parser.parse_args(argv)
    sizes, steps = SIZES, STEPS
    if args.quick:
        here = str(pathlib.Path(__file__).resolve().parents[1])
        args.trees = args.trees or [here, here]
        args.rounds, sizes, steps = 1, SIZES[:1], 200
    if args.trees is None:
        parser.error("--trees BEFORE AFTER is required (unless --quick)")
    trees = [str(pathlib.Path(t).resolve()) for t in args.trees]
    runs: dict[str, list[dict[str, float]]] = {t: [] for t in trees}
    for r in range(args.rounds):
        for tree in trees:
            runs[tree].append(measure(tree, sizes, steps))
            print(f"round {r + 1} {tree}: {runs[tree][-1]}", flush=True)
    for n in sizes:
        med = [statistics.median(run[str(n)] for run in runs[t]) for t in trees]
        print(
            f"n={n:>7d}  before {med[0]:7.1f} us/step  after {med[1]:7.1f} us/step  "
            f"after/before {med[1] / med[0]:.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
