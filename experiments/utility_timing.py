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
estimate is then a lower bound, and says so). ``--point problem:n:d`` times a problem
at another point (where the default grid runs an entry only off the core point), and
``--report LOG...`` prints the table, the grids' estimates and, against the committed
run's ``cells.csv``, the ratio of its recorded run times to the model's.
"""

from __future__ import annotations

import argparse
import json
import math
import re
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
    parser.add_argument(
        "--only",
        nargs="*",
        default=None,
        help="problems:entries to time, e.g. "
        "basins:net,warm_start (an empty entry list: every entry)",
    )
    parser.add_argument(
        "--point",
        nargs="*",
        default=(),
        help="problem:n:d to time instead of the problem's core point, e.g. "
        "absolute:1000:10 (where the default grid runs an entry only off its core)",
    )
    args = parser.parse_args(argv)
    points = dict(TIMING["points"])
    for item in args.point:
        name, n, d = item.split(":")
        points[name] = ((int(n), int(d)),)
    grid = dict(TIMING, epsilons=(args.epsilon,), points=points)
    head = ug.HEADER.format(name="utility_timing", seeds=1, sizing="")
    doc = tomllib.loads(head + "\n" + ug._tables(grid, "grid"))
    doc["experiment"]["pythonpath"] = [str(REPO)]
    spec = load_spec(doc)
    out = Path(args.out)
    folder = out / "cells"
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    only = {}
    for item in args.only or ():
        name, _, entries = item.partition(":")
        only[name] = set(entries.split(",")) if entries else None
    for cell in spec.cells():
        cfg = cell.config
        name, entry = problem_name(cfg), ug.entry_label(cfg)
        if only and (name not in only or (only[name] and entry not in only[name])):
            continue
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
        rows.append(
            {
                "problem": problem_name(cfg),
                "entry": ug.entry_label(cfg),
                "n": cfg["data"].get("n", ug.MLP_N),
                "d": cfg["data"].get("d", ug.MLP_D),
                "status": info["status"],
                "process_wall": wall,
                "first_cpu": times[0][0],
                "first_wall": times[0][1],
                "next_cpu": times[1][0],
                "next_wall": times[1][1],
                "error": info.get("error", ""),
            }
        )
        print(
            f"{wall:7.1f} s process | seed 0: {cpu0:6.1f} s cpu {wall0:6.1f} s wall | "
            f"seed 1: {cpu1:6.1f} s cpu {wall1:6.1f} s wall | {info['status']:7s} "
            f"{label}  {info.get('error', '')[:70]}",
            flush=True,
        )
    path = out / "timing.json"
    old = json.loads(path.read_text()) if path.exists() else []
    path.write_text(json.dumps(old + rows, indent=1))
    return 0


_LINE = re.compile(
    r"seed 0:\s+(?P<c0>\S+) s cpu\s+\S+ s wall \| seed 1:\s+(?P<c1>\S+) s cpu.*?\| "
    r"(?P<status>\w+)\s+(?P<problem>\w+) (?P<entry>\w+) n=(?P<n>\w+) d=(?P<d>\w+)"
)


def parse_log(text: str) -> list[dict[str, object]]:
    """The rows of this script's printed lines (``first_cpu``, ``next_cpu``, ...).

    Args:
        text: The printed output.

    Returns:
        One dict per timed cell.
    """
    rows = []
    for line in text.splitlines():
        m = _LINE.search(line)
        if m:
            rows.append(
                {
                    "problem": m["problem"],
                    "entry": m["entry"],
                    "n": int(m["n"]) if m["n"].isdigit() else ug.MLP_N,
                    "d": int(m["d"]) if m["d"].isdigit() else ug.MLP_D,
                    "status": m["status"],
                    "first_cpu": float(m["c0"]),
                    "next_cpu": float(m["c1"]),
                }
            )
    return rows


def estimate(
    rows: list[dict[str, object]],
    grid: dict[str, object],
    *,
    timeout_cpu: float,
    refusal_cpu: float = 1.0,
    n_exponent: float = 1.3,
) -> tuple[float, list[str]]:
    """Worker CPU-seconds of a grid, extrapolated from the timed cells.

    Model: a block (problem, entry, n, d) at each epsilon costs its first seed
    (start-up share and compilation: ``first_cpu``, counted again at every epsilon)
    plus ``seeds - 1`` further seeds (``next_cpu``), the per-seed part scaled by
    ``(n / n_timed)^n_exponent`` (linearly below ``n_timed``) and by ``d / d_timed``
    (not below ``d_timed``) from the timed cell of the same
    problem and entry (per-example gradient work, and schedules whose length grows
    with ``n``: DP-SGD's default per-seed cost grew 19x from ``n = 10^4`` to
    ``10^5`` on the GLM, exponent 1.27); a refusal costs ``refusal_cpu`` per cell, a
    timed-out cell ``timeout_cpu`` per seed (a lower bound). An entry timed at
    several ``n`` is scaled from the timed cell nearest in ``n`` (log scale).

    Args:
        rows: Timed cells (:func:`parse_log`).
        grid: :data:`~experiments.problems.utility_grid.DEFAULT` or another grid.
        timeout_cpu: CPU seconds charged per seed of a timed-out entry.
        refusal_cpu: CPU seconds of a refused cell (its plan).
        n_exponent: Growth of the per-seed cost with ``n``.

    Returns:
        The total and the notes (untimed blocks, timeouts).
    """
    timed: dict[tuple[object, object], list[dict[str, object]]] = {}
    for row in rows:
        timed.setdefault((row["problem"], row["entry"]), []).append(row)
    total, notes = 0.0, []
    seeds = int(grid["seeds"])
    for name, entry, n, d, epsilons in ug.cells_of(grid):
        near = timed.get((name, entry))
        # the timed cell nearest in n (an entry timed at several n: each its own)
        r = (
            None
            if near is None
            else min(near, key=lambda t: abs(math.log(n / float(t["n"]))))
        )
        if r is None:
            notes.append(f"untimed: {name} {entry}")
            continue
        if r["status"] == "failed":
            total += len(epsilons) * seeds * refusal_cpu
            continue
        if r["status"] == "timeout":
            notes.append(f"timeout (lower bound): {name} {entry} n={n} d={d}")
            total += len(epsilons) * seeds * timeout_cpu
            continue
        ratio = n / r["n"]
        scale = ratio ** (n_exponent if ratio > 1 else 1.0) * max(1.0, d / r["d"])
        first = float(r["first_cpu"]) + float(r["next_cpu"]) * (scale - 1.0)
        total += len(epsilons) * (first + (seeds - 1) * float(r["next_cpu"]) * scale)
    return total, notes


def run_ratio(
    rows: list[dict[str, object]], cells_csv: Path, *, n_exponent: float = 1.3
) -> tuple[float, float, int]:
    """The recorded run times of a run's cells against the model's per-seed CPU time.

    For every ``ok`` cell of ``cells_csv`` (``utility_analysis.py``'s table; its
    ``seconds`` are the private run's wall time) whose entry is timed ``ok``, the
    model's per-seed CPU time (``next_cpu`` scaled as in :func:`estimate`, first
    cells not counted); the entry ``default`` (another grid) is left out.

    Args:
        rows: Timed cells (:func:`parse_log`).
        cells_csv: A run's ``cells.csv``.
        n_exponent: Growth of the per-seed cost with ``n``.

    Returns:
        ``(recorded seconds, model CPU-seconds, cells compared)``.
    """
    import csv

    timed: dict[tuple[object, object], list[dict[str, object]]] = {}
    for row in rows:
        timed.setdefault((row["problem"], row["entry"]), []).append(row)
    recorded = model = 0.0
    count = 0
    with cells_csv.open(newline="") as fh:
        for c in csv.DictReader(fh):
            near = timed.get((c["problem"], c["entry"]))
            if c["status"] != "ok" or c["entry"] == "default" or not near:
                continue
            n, d = int(c["n"]), int(c["d"])
            r = min(near, key=lambda t: abs(math.log(n / float(t["n"]))))
            if r["status"] != "ok":
                continue
            ratio = n / float(r["n"])
            scale = ratio ** (n_exponent if ratio > 1 else 1.0)
            model += float(r["next_cpu"]) * scale * max(1.0, d / float(r["d"]))
            recorded += float(c["seconds"])
            count += 1
    return recorded, model, count


def report(logs: list[str], *, timeout_cpu: float = 50.0) -> str:
    """The timing table (markdown) and the grids' estimates, from printed logs.

    Later logs override earlier ones for the same (problem, entry, n).

    Args:
        logs: Paths of this script's printed output.
        timeout_cpu: CPU seconds charged per seed of a timed-out entry.

    Returns:
        Markdown.
    """
    rows: dict[tuple[str, str, object], dict[str, object]] = {}
    for path in logs:
        for r in parse_log(Path(path).read_text()):
            rows[(str(r["problem"]), str(r["entry"]), r["n"])] = r
    lines = [
        "| problem | n | d | entry | status | first seed (CPU s) | next seed (CPU s) |",
        "|---|---|---|---|---|---|---|",
    ]
    for (name, entry, _), r in sorted(rows.items(), key=lambda kv: str(kv[0])):
        first = "-" if r["status"] != "ok" else f"{r['first_cpu']:.1f}"
        nxt = "-" if r["status"] != "ok" else f"{r['next_cpu']:.1f}"
        status = {"failed": "refused", "timeout": "> 150 s wall"}.get(
            str(r["status"]), str(r["status"])
        )
        lines.append(
            f"| {name} | {r['n']} | {r['d']} | {entry} | {status} | {first} | {nxt} |"
        )
    for label, grid in (("default", ug.DEFAULT), ("cluster", ug.CLUSTER)):
        total, notes = estimate(list(rows.values()), grid, timeout_cpu=timeout_cpu)
        blocks = ug.cells_of(grid)
        cells = sum(len(e) for *_, e in blocks) * int(grid["seeds"])
        lines += [
            "",
            f"{label}: {cells} cells, estimated {total:,.0f} worker CPU-seconds "
            f"({total / 3600:.1f} worker-hours; {total / 7200:.2f} h wall on 2 "
            f"workers); {len(notes)} note(s)",
        ]
        lines += [f"  {n}" for n in sorted(set(notes))[:20]]
    run = REPO / "experiments" / "results" / "utility" / "cells.csv"
    if run.exists():
        recorded, model, count = run_ratio(list(rows.values()), run)
        lines += [
            "",
            f"the committed run ({run.relative_to(REPO)}, load average 8-13): "
            f"{count} cells, {recorded:,.0f} s recorded against {model:,.0f} model "
            f"CPU-s a seed ({recorded / model:.1f}x)",
        ]
    return "\n".join(lines)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--report":
        print(report(sys.argv[2:]))
        raise SystemExit(0)
    raise SystemExit(main())
