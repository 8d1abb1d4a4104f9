"""Run every empirical privacy audit of dpsample and tabulate it.

    python experiments/audit_suite.py [--quick] [--only NAME ...]
        [--before PATH] [--out experiments/results/audit_suite.json]

Every case of ``tests/audit_cases.py`` (one per mechanism and pipeline: the same
definitions the tests assert on) is built from this checkout's dpsample, checked
against the library's public call where it runs a private loop, and audited twice
with :func:`dpsample.privacy.audit` (Clopper-Pearson, joint confidence 0.95): the
honest release, whose lower bound must not exceed the claimed epsilon, and its twin
(half the noise unless the case says otherwise), whose lower bound should. A lower
bound above the claim refutes the claim (up to the 5% the confidence allows).

``--before PATH`` also runs the honest audits against the dpsample of another checkout
(``PATH`` is its repository root, e.g. ``git worktree add ../audit-base 5906716``):
the same cases, the claims that code reports and the lower bounds of what it releases.
It runs in a subprocess with ``PYTHONPATH=PATH``; the one renamed keyword the cases
use (the Gaussian mechanism's ``noise_multiplier``, now ``noise_to_sensitivity``,
same meaning) is translated there. Cases that cannot run on that code are reported
with their error.

``--quick`` divides every sample size by 10 (a smoke run: the twins are then often
not flagged). The results go to ``--out`` (JSON) and a markdown table to stdout.

``--merge`` (with ``--only``) updates ``--out`` in place instead of replacing it:
the rows run now replace the rows of the same name (or are added, in the order of
``tests/audit_cases.py``), every other row and the "before" rows are kept, each new
row records its own ``run`` (commit), ``command``, ``date`` and ``load_average``, the
file's ``merged_runs`` lists the merges, and ``table`` is rebuilt from all the rows.
So one row can be re-run without the whole suite (80 minutes)::

    nice -n 10 python experiments/audit_suite.py --only kl_spider --merge
"""

from __future__ import annotations

import argparse
import inspect
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO / "experiments" / "results" / "audit_suite.json"
QUICK_FACTOR = 10


def _import_cases():
    import jax

    jax.config.update("jax_enable_x64", True)
    sys.path.insert(0, str(REPO / "tests"))
    import audit_cases

    return audit_cases


def _translate_old_api() -> list[str]:
    """Let the cases run on the code before the noise-multiplier rename (5906716)."""
    import dpsample.mechanisms as mechanisms

    done = []
    gaussian = mechanisms.gaussian
    if "noise_to_sensitivity" not in inspect.signature(gaussian).parameters:

        def renamed(*args, noise_to_sensitivity=None, **kwargs):
            return gaussian(*args, noise_multiplier=noise_to_sensitivity, **kwargs)

        mechanisms.gaussian = renamed
        done.append("mechanisms.gaussian(noise_to_sensitivity=) -> noise_multiplier=")
    return done


def _samples(audit, quick: bool) -> int:
    return max(audit.num_samples // QUICK_FACTOR, 100) if quick else audit.num_samples


def run_case(case, *, quick: bool, twin: bool) -> dict:
    """Build, check and audit one case; a dict of plain values."""
    row: dict = {"name": case.name, "pair": case.pair, "note": case.note}
    t0 = time.perf_counter()
    try:
        audit = case.build()
        row["claim"] = float(audit.claim)
        row["delta"] = float(audit.delta)
        row["check"] = audit.check() if audit.check else ""
        row["released"] = audit.released() if audit.released else True
        n = _samples(audit, quick)
        row["num_samples"] = n
        honest = audit.run(num_samples=n)
        row["lower_bound"] = float(honest.epsilon_lower_bound)
        row["counts"] = [honest.count_p, honest.count_q, honest.num_eval]
        row["violation"] = bool(row["released"] and row["lower_bound"] > row["claim"])
        if twin and audit.twin is not None:
            res = audit.run(twin=True, num_samples=n)
            row["twin_note"] = audit.twin_note
            row["twin_lower_bound"] = float(res.epsilon_lower_bound)
            row["twin_flagged"] = bool(row["twin_lower_bound"] > row["claim"])
        if twin and audit.power_twin is not None:
            res = audit.run(power=True, num_samples=n)
            row["power_note"] = audit.power_note
            row["power_lower_bound"] = float(res.epsilon_lower_bound)
            row["power_flagged"] = bool(row["power_lower_bound"] > row["claim"])
    except Exception as err:  # reported, not raised: one broken case, one row
        row["error"] = f"{type(err).__name__}: {err}"[:300]
    row["seconds"] = round(time.perf_counter() - t0, 1)
    return row


def run_all(names: list[str], *, quick: bool, twin: bool) -> list[dict]:
    cases = _import_cases().CASES
    rows = []
    for name in names:
        row = run_case(cases[name], quick=quick, twin=twin)
        print(_progress(row), file=sys.stderr, flush=True)
        rows.append(row)
    return rows


def _progress(row: dict) -> str:
    if "error" in row:
        return f"  {row['name']}: {row['error']}"
    twin = row.get("twin_lower_bound")
    twin_txt = "" if twin is None else f", twin {twin:.3f}"
    if row.get("power_lower_bound") is not None:
        twin_txt += f", power twin {row['power_lower_bound']:.3f}"
    return (
        f"  {row['name']}: claim {row['claim']:.3f}, lower bound "
        f"{row['lower_bound']:.3f}{twin_txt} ({row['seconds']} s)"
    )


def _git(path: Path, *args: str) -> str:
    try:
        out = subprocess.run(
            ["git", "-C", str(path), *args], capture_output=True, text=True, check=True
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return out.stdout.strip()


def run_before(path: Path, names: list[str], *, quick: bool) -> dict:
    """The honest audits against the dpsample of the checkout at ``path``."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "before.json"
        cmd = [sys.executable, __file__, "--worker", str(out), "--only", *names]
        if quick:
            cmd.append("--quick")
        env = {**os.environ, "PYTHONPATH": str(path)}
        subprocess.run(cmd, env=env, check=True)
        return json.loads(out.read_text())


def _worker(out: Path, names: list[str], *, quick: bool) -> None:
    import dpsample

    translated = _translate_old_api()
    rows = run_all(names, quick=quick, twin=False)
    result = {
        "dpsample": str(Path(dpsample.__file__).resolve().parent),
        "translated": translated,
        "rows": rows,
    }
    out.write_text(json.dumps(result, indent=1))


def _fmt(x: float | None, digits: int = 2) -> str:
    if x is None:
        return "-"
    if math.isinf(x):
        return "inf"
    return f"{x:.{digits}f}"


def _lb_cell(row: dict | None) -> str:
    if row is None:
        return "-"
    if "error" in row:
        return "n/a (does not run)"
    lb = _fmt(row["lower_bound"])
    if not row.get("released", True):
        return f"refused (its loop: {lb})"
    return lb


def _violation(row: dict | None) -> str:
    if row is None or "error" in row:
        return "-"
    if not row.get("released", True):
        return "no (refused)"
    return "**yes**" if row["violation"] else "no"


def markdown(rows: list[dict], before: dict[str, dict] | None) -> str:
    head = (
        "| mechanism / pipeline | neighbouring pair | delta | claimed epsilon "
        "(before / after) | audited lower bound, before | audited lower bound, after "
        "| half-noise twin, after | violation (before / after) | samples per dataset "
        "| wall time, s (after / before) |"
    )
    lines = [head, "|" + "---|" * 10]
    for row in rows:
        b = before.get(row["name"]) if before is not None else None
        if "error" in row:
            lines.append(f"| {row['name']} | {row['pair']} | error: {row['error']} |")
            continue
        claim_before = _fmt(b["claim"]) if b and "claim" in b else "-"
        twin = row.get("twin_lower_bound")
        if twin is None:
            twin_cell = "-"
        else:
            mark = "flagged" if row["twin_flagged"] else "not flagged"
            twin_cell = f"{_fmt(twin)} ({mark})"
            if row.get("twin_note", "half the noise") != "half the noise":
                twin_cell += f" [{row['twin_note']}]"
        if row.get("power_lower_bound") is not None:
            mark = "flagged" if row["power_flagged"] else "not flagged"
            twin_cell += (
                f"; {row['power_note']}: {_fmt(row['power_lower_bound'])} ({mark})"
            )
        secs = f"{row['seconds']:.0f}"
        if b and "seconds" in b:
            secs += f" / {b['seconds']:.0f}"
        lines.append(
            f"| {row['name']}{' (' + row['note'] + ')' if row['note'] else ''} "
            f"| {row['pair']} | {row['delta']:g} | {claim_before} / "
            f"{_fmt(row['claim'])} | {_lb_cell(b)} | {_lb_cell(row)} | {twin_cell} "
            f"| {_violation(b)} / {_violation(row)} | {row['num_samples']} | {secs} |"
        )
    return "\n".join(lines)


def merge_rows(path: Path, rows: list[dict], *, command: str, commit: str) -> str:
    """Put ``rows`` into the suite file at ``path`` (see ``--merge``); the new table."""
    data = json.loads(path.read_text())
    date = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    load = [round(x, 2) for x in os.getloadavg()]
    stamped = {
        r["name"]: r
        | {"run": commit, "command": command, "date": date, "load_average": load}
        for r in rows
    }
    order = list(_import_cases().CASES)
    merged = {r["name"]: r for r in data["after"]} | stamped
    data["after"] = sorted(
        merged.values(),
        key=lambda r: order.index(r["name"]) if r["name"] in order else len(order),
    )
    data.setdefault("merged_runs", []).append(
        {"command": command, "commit": commit, "date": date, "rows": list(stamped)}
    )
    before = None
    if data.get("before"):
        before = {r["name"]: r for r in data["before"]["rows"]}
    data["table"] = markdown(data["after"], before)
    path.write_text(json.dumps(data, indent=1) + "\n")
    return data["table"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="sample sizes / 10")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="these cases")
    parser.add_argument("--before", type=Path, help="checkout to audit as 'before'")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument(
        "--merge", action="store_true", help="update --out's rows (with --only)"
    )
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.merge and (args.only is None or args.before is not None or args.quick):
        parser.error("--merge needs --only, and takes neither --before nor --quick")
    if args.worker is None:
        sys.path.insert(0, str(REPO))  # this checkout's dpsample
    names = args.only or list(_import_cases().CASES)
    if args.worker is not None:  # dpsample from PYTHONPATH (the other checkout)
        _worker(args.worker, names, quick=args.quick)
        return 0

    import dpsample

    t0 = time.perf_counter()
    print(f"after: dpsample at {Path(dpsample.__file__).parent}", file=sys.stderr)
    rows = run_all(names, quick=args.quick, twin=True)
    before = None
    before_info = None
    if args.before is not None:
        print(f"before: dpsample at {args.before}", file=sys.stderr)
        result = run_before(args.before.resolve(), names, quick=args.quick)
        before = {r["name"]: r for r in result["rows"]}
        before_info = {
            "path": str(args.before),
            "commit": _git(args.before, "rev-parse", "HEAD"),
            "dpsample": result["dpsample"],
            "translated": result["translated"],
        }
    command = "python experiments/audit_suite.py " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )
    commit = _git(REPO, "rev-parse", "--short", "HEAD")
    if _git(REPO, "status", "--porcelain", "--untracked-files=no"):
        commit += "+uncommitted"  # the cases or the library differ from HEAD
    if args.merge:
        table = merge_rows(args.out, rows, command=command, commit=commit)
    else:
        table = markdown(rows, before)
        out = {
            "command": command,
            "commit": _git(REPO, "rev-parse", "HEAD"),
            "quick": args.quick,
            "confidence": _import_cases().CONFIDENCE,
            "machine": platform.platform(),
            "load_average": list(os.getloadavg()),
            "seconds": round(time.perf_counter() - t0, 1),
            "after": rows,
            "before": before_info | {"rows": list(before.values())} if before else None,
            "table": table,
        }
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(out, indent=1) + "\n")
    print(table)
    bad = [r["name"] for r in rows if r.get("violation") or "error" in r]
    if bad:
        print(f"\nviolations or errors: {', '.join(bad)}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
