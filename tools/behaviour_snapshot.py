"""A behaviour snapshot: releases, guarantees and reports for fixed keys (issue 29).

A refactor must not change what dpsample releases. This script runs

* every registered algorithm on its contract case (``tests/contract_cases.py``: one
  small problem and options per registry name), plus a few defaults the contract
  cases do not reach (the default ``warm_start`` rule; each Gibbs route);
* every example configuration (``examples/*.toml``), as ``dpsample run --dry-run``
  (the plan) and as ``dpsample run`` (the release and ``report.json``),

with fixed keys and seeds, and writes one JSON: per entry a SHA-256 of the released
array's float64 bytes, its first values, epsilon at the budget's delta, the privacy
report's text and the plan's parameters. Wall times are left out.

    python tools/behaviour_snapshot.py --out before.json
    # ... refactor ...
    python tools/behaviour_snapshot.py --out after.json
    python tools/behaviour_snapshot.py --compare before.json after.json

``--compare`` prints every entry whose fields differ and exits 1 if any does. Run
it with the tree under test first on ``PYTHONPATH``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import re
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# words that mark a machine-dependent field (left out of the snapshot)
_VOLATILE = ("time", "wall", "seconds", "elapsed", "output_dir", "eta", "path")
# machine-dependent phrases inside texts (the plan printout's time forecast)
_VOLATILE_TEXT = re.compile(r"about [^()]*? on this machine")


def _text(value: Any) -> Any:
    """``value`` with every string's machine-dependent phrases blanked."""
    if isinstance(value, str):
        return _VOLATILE_TEXT.sub("about ... on this machine", value)
    if isinstance(value, dict):
        return {k: _text(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_text(v) for v in value]
    return value


def _array(x: Any) -> dict[str, Any]:
    import numpy as np

    a = np.asarray(x, dtype=np.float64)
    return {
        "sha256": hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()[:16],
        "shape": list(a.shape),
        "head": [float(v) for v in a.ravel()[:4]],
    }


def _plain(x: Any, depth: int = 0) -> Any:
    """A JSON-able, machine-independent copy of ``x``."""
    import numpy as np

    if depth > 6:
        return repr(type(x).__name__)
    if isinstance(x, dict):
        return {
            str(k): _plain(v, depth + 1)
            for k, v in sorted(x.items(), key=lambda kv: str(kv[0]))
            if not any(w in str(k).lower() for w in _VOLATILE)
        }
    if isinstance(x, list | tuple):
        return [_plain(v, depth + 1) for v in x]
    if isinstance(x, bool | str) or x is None:
        return x
    if isinstance(x, int | np.integer):
        return int(x)
    if isinstance(x, float | np.floating):
        f = float(x)
        return f if math.isfinite(f) else repr(f)
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        return _array(x) if np.size(x) > 1 else _plain(np.asarray(x).item(), depth)
    return repr(type(x).__name__)


def _result(res: Any, delta: float) -> dict[str, Any]:
    """What a release is: the value, epsilon, the report text, public info."""
    out: dict[str, Any] = {"value": _array(res.value)}
    out["epsilon"] = float(res.privacy.epsilon(delta))
    out["report"] = str(res.report(delta))
    return out


def _guarded(entries: dict[str, Any], label: str, run: Any, delta: float) -> None:
    """Record ``run()``'s release under ``label``; a refusal is behaviour too."""
    try:
        entries[label] = _result(run(), delta)
    except Exception as err:
        entries[label] = {"refused": f"{type(err).__name__}: {err}"}


def _cases() -> dict[str, Any]:
    import jax

    sys.path.insert(0, str(ROOT / "tests"))
    import contract_cases

    import dpsample
    from dpsample.samplers.gibbs import gibbs

    entries: dict[str, Any] = {}
    for name, case in sorted(contract_cases.CASES.items()):

        def run(case: Any = case) -> Any:
            problem = case.make_problem(0, case.n, contract_cases._identity)
            key = jax.random.key(0)
            return case.convenience(key, problem, case.budget, case.options)

        _guarded(entries, f"case:{name}", run, case.budget.delta)
    # defaults the contract cases do not reach: the default warm-start rule
    for label, make in {
        "quadratic": contract_cases.quadratic_ball,
        "cosine": contract_cases.cosine_free,
    }.items():

        def run_default(make: Any = make) -> Any:
            return dpsample.warm_start(
                jax.random.key(1), make(1, 256), epsilon=2.0, delta=1e-5
            )

        _guarded(entries, f"default:warm_start:{label}", run_default, 1e-5)
    # each Gibbs route
    for method, opts in {
        "langevin": {"max_steps": 20},
        "mala": {"max_steps": 20, "tv_bound": 1e-7},
        "proximal": {},
    }.items():

        def run_gibbs(method: str = method, opts: Any = opts) -> Any:
            problem = contract_cases.quadratic_ball(2, 64)
            return gibbs(
                jax.random.key(2),
                problem,
                epsilon=2.0,
                delta=1e-5,
                method=method,
                **opts,
            )

        _guarded(entries, f"gibbs:{method}", run_gibbs, 1e-5)
    return entries


def _examples() -> dict[str, Any]:
    from dpsample.cli import dry_run_config, run_config

    entries: dict[str, Any] = {}
    for path in sorted((ROOT / "examples").glob("*.toml")):
        label = f"example:{path.stem}"
        try:
            entries[label + ":plan"] = _plain(dry_run_config(str(path), seed=0))
        except Exception as err:
            entries[label + ":plan"] = {"refused": f"{type(err).__name__}: {err}"}
        with tempfile.TemporaryDirectory() as tmp:
            try:
                rep = run_config(str(path), output=f"{tmp}/out", seed=0)
                entries[label] = _plain(rep)
            except Exception as err:
                entries[label] = {"refused": f"{type(err).__name__}: {err}"}
    return entries


def snapshot(*, examples: bool = True) -> dict[str, Any]:
    """Every entry of the snapshot, keyed by a label."""
    entries: dict[str, Any] = {}
    for part in (_cases, _examples) if examples else (_cases,):
        t0 = time.perf_counter()
        try:
            entries.update(part())
        except Exception:
            entries[f"error:{part.__name__}"] = traceback.format_exc(limit=3)
        print(f"{part.__name__}: {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return entries


def compare(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """The labels (and fields) that differ between two snapshots."""
    before, after = _text(before), _text(after)
    diffs = []
    for label in sorted(set(before) | set(after)):
        if label not in before or label not in after:
            diffs.append(f"{label}: only in {'after' if label in after else 'before'}")
            continue
        a, b = before[label], after[label]
        if a == b:
            continue
        if isinstance(a, dict) and isinstance(b, dict):
            for key in sorted(set(a) | set(b)):
                if a.get(key) != b.get(key):
                    diffs.append(f"{label}.{key}: {a.get(key)!r} -> {b.get(key)!r}")
        else:
            diffs.append(f"{label}: {a!r} -> {b!r}")
    return diffs


def main(argv: list[str] | None = None) -> int:
    """Write a snapshot, or compare two."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="write the snapshot to this JSON file")
    ap.add_argument("--no-examples", action="store_true", help="contract cases only")
    ap.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"))
    args = ap.parse_args(argv)
    if args.compare:
        before, after = (json.loads(Path(p).read_text()) for p in args.compare)
        diffs = compare(before, after)
        for line in diffs:
            print(line)
        print(
            f"{len(diffs)} difference(s) over {len(set(before) | set(after))} entries"
        )
        return 1 if diffs else 0
    if not args.out:
        ap.error("--out or --compare is required")
    snap = _text(snapshot(examples=not args.no_examples))
    Path(args.out).write_text(json.dumps(snap, indent=1, sort_keys=True) + "\n")
    print(f"{len(snap)} entries -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
