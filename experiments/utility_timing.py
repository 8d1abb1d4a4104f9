"""Time the utility benchmark's cost-defining cells, one at a time (its sizing).

Each cell of :data:`TIMING` (every entry at each problem's core point of the default
grid, ``epsilon`` as given) runs in a fresh process, seed 0 then seed 1, like a sweep
worker (JAX start-up and compilation in seed 0's time, reused by seed 1), under a
time limit per process; the CPU time (on a shared machine the wall time grows with
the load, the CPU time much less) and the wall time of each seed are printed and the
records written to ``OUT/cells`` (the analysis reads them like any sweep's). Run it
niced on a quiet machine::

    nice -n 10 python experiments/utility_timing.py runs/utility_timing [--limit 300]

A cell over the limit is reported as ``> limit`` (and extrapolated at the limit: the
estimate is then a lower bound, and says so).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from experiments.problems import utility_grid as ug  # noqa: E402
from experiments.problems.utility import problem_name  # noqa: E402

#: The core points of the default grid (``n = 10,000``), where most of its cells are.
TIMING = {
    "seeds": 1,
    "epsilons": (1.0,),
    "points": ug.DEFAULT["points"],
    "extra": {},
    "extra_epsilons": (),
}

# Runs seed 0, then seed 1 of the same cell in one process, as a sweep worker runs
# the seeds of a grid point one after another (seed 1 reuses seed 0's compilation):
# the first is the cost of a point's first cell, the second the cost of each further
# seed. CPU time is the process's (time.process_time).
_CHILD = """
import json, sys, time
from dpsample.validation.cells import run_cell, write_record
cfg, measures, paths, folder = json.loads(sys.argv[1])
out = []
for seed in (0, 1):
    cfg["job"]["seed"] = seed
    c0, w0 = time.process_time(), time.perf_counter()
    rec = run_cell(cfg, measures, paths=paths)
    out.append([time.process_time() - c0, time.perf_counter() - w0])
    write_record(folder, rec)
print(json.dumps({"status": rec["status"], "times": out,
                  "error": rec.get("error", {}).get("message", "")[:160]}))
"""


def main(argv: list[str] | None = None) -> int:
    """Run the timing cells; print one line per cell and a summary table."""
    import tomllib

    from dpsample.validation import load_spec

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out")
    parser.add_argument("--limit", type=float, default=300.0)
    parser.add_argument("--epsilon", type=float, default=1.0)
    args = parser.parse_args(argv)
    grid = dict(TIMING, epsilons=(args.epsilon,))
    head = ug.HEADER.format(name="utility_timing", seeds=1, sizing="")
    doc = tomllib.loads(head + "\n" + ug._tables(grid, "grid"))
    doc["experiment"]["pythonpath"] = [str(REPO)]
    spec = load_spec(doc)
    out = Path(args.out)
    folder = out / "cells"
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for cell in spec.cells():
        cfg = cell.config
        label = f"{problem_name(cfg)} {ug.entry_label(cfg)} n={cfg['data'].get('n')}"
        label += f" d={cfg['data'].get('d')} eps={cfg['privacy']['epsilon']}"
        payload = json.dumps(
            [cfg, list(spec.measures), list(spec.pythonpath), str(folder)]
        )
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(
                [sys.executable, "-c", _CHILD, payload],
                capture_output=True,
                text=True,
                timeout=args.limit,
                cwd=REPO,
            )
            wall = time.perf_counter() - t0
            lines = proc.stdout.strip().splitlines()
            info = (
                json.loads(lines[-1])
                if lines
                else {"status": "crash", "error": proc.stderr[-300:]}
            )
        except subprocess.TimeoutExpired:
            wall = args.limit
            info = {"status": "timeout", "error": f"> {args.limit:g} s"}
        times = info.get("times", [[float("nan")] * 2] * 2)
        (cpu0, wall0), (cpu1, wall1) = times
        rows.append((label, info["status"], wall, times, info.get("error", "")))
        print(
            f"{wall:7.1f} s process | seed 0: {cpu0:6.1f} s cpu {wall0:6.1f} s wall | "
            f"seed 1: {cpu1:6.1f} s cpu {wall1:6.1f} s wall | {info['status']:7s} "
            f"{label}  {info.get('error', '')[:70]}",
            flush=True,
        )
    (out / "timing.json").write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
