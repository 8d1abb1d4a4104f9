"""Recompute the committed sweeps' tables, figures and reports from their cells.

No cell is run: each experiment's committed cells (``experiments/results/NAME/cells/``
or ``cells.tar.xz``, unpacked to a temporary folder) are read, matched to the spec's
cells, and :func:`dpsample.validation.engine.write_outputs` writes ``summary.csv``,
``slopes.csv``, ``comparisons.csv`` (where the spec declares comparisons),
``figures/`` and ``report.md`` back into ``experiments/results/NAME/``. Use it after a
change to the tables' statistics (issue 26); the cells' own measurements are
unchanged, so a measurement a hook gained since the cells ran stays empty until the
experiment is re-run.

A cell is matched by its key first. A cell run before the spec spelled out an option
whose old default it then pinned (:data:`LEGACY_DEFAULTS`) has another key; it is
matched by its configuration with that option read as its old default, and counted in
the output ("legacy-matched").

    python experiments/retabulate.py                 # every experiment with results
    python experiments/retabulate.py sosp_rates      # one
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dpsample.validation import load_records, load_spec
from dpsample.validation.engine import write_outputs

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "experiments" / "results"
#: Options a spec later pinned to the default its cells ran under: ``dp_sgd`` did not
#: clip before ``enforce_sensitivity`` existed (default ``True`` since), and
#: dp_sgd_002 and saddle_escape_002 then asked for ``false`` (commit 8c6d0b0).
#: DP-TR / DP-STR ran Theorem 15/18's schedule, stop and point before ``preset``
#: existed; the seed-001 specs then asked for ``"theorem"`` (issue 24). Spider-SOSP's
#: cells without a preset ran its former default, now ``"practical_iterate"``, which
#: ``sosp_rates`` pins (issue 24). A value that is a mapping is by job name (``"*"``:
#: every other job).
LEGACY_DEFAULTS: Mapping[str, Any] = {
    "options.enforce_sensitivity": False,
    "options.preset": {"spider_sosp": "practical_iterate", "*": "theorem"},
}
NOTE = (
    "recomputed from the committed cells by `experiments/retabulate.py` "
    "(no cell was run; the wall time above is the cells' own)"
)
OUTPUTS = ("summary.csv", "slopes.csv", "comparisons.csv", "report.md")
#: Results written by their own scripts, not by the sweep engine: never touched here
#: (``utility``: ``experiments/utility_analysis.py``).
OWN_SCRIPTS = ("utility",)


def _normal(config: Mapping[str, Any]) -> str:
    """The configuration with each legacy option at its old default removed."""
    cfg = json.loads(json.dumps(config))
    job = cfg.get("job", {}).get("name") if isinstance(cfg.get("job"), dict) else None
    for path, default in LEGACY_DEFAULTS.items():
        if isinstance(default, Mapping):
            default = default.get(job, default["*"])
        *head, last = path.split(".")
        node = cfg
        for part in head:
            node = node.get(part, {}) if isinstance(node, dict) else {}
        if isinstance(node, dict) and node.get(last, default) == default:
            node.pop(last, None)
    return json.dumps(cfg, sort_keys=True)


def matched_records(
    cells: Sequence[Any], records: Mapping[str, dict[str, Any]]
) -> tuple[dict[str, dict[str, Any]], int]:
    """``{cell key: record}`` by key, then by legacy-normalised configuration.

    Returns:
        The records and how many were matched by configuration.
    """
    out = {c.key: records[c.key] for c in cells if c.key in records}
    spare = {}
    for key, rec in records.items():
        if key not in out and "config" in rec:
            spare.setdefault(_normal(rec["config"]), []).append(rec)
    legacy = 0
    for c in cells:
        if c.key in out:
            continue
        found = spare.get(_normal(c.config))
        if found:
            out[c.key] = found.pop(0)
            legacy += 1
    return out, legacy


def retabulate(name: str) -> str:
    """Recompute one experiment's outputs; a one-line account."""
    if name in OWN_SCRIPTS:
        raise ValueError(f"{name}'s results are written by its own script")
    res = RESULTS / name
    spec = load_spec(Path("experiments") / f"{name}.toml")
    cells = spec.cells()
    with tempfile.TemporaryDirectory(prefix=f"retab-{name}-") as tmp:
        out = Path(tmp)
        if (res / "cells").is_dir():
            folder = res / "cells"
        else:
            subprocess.run(
                ["tar", "-C", tmp, "-xJf", str(res / "cells.tar.xz")], check=True
            )
            folder = out / "cells"
        records, legacy = matched_records(cells, load_records(folder))
        write_outputs(spec, out, cells=cells, records=records, note=NOTE)
        for file in OUTPUTS:
            if (out / file).exists():
                shutil.copyfile(out / file, res / file)
        (res / "figures").mkdir(exist_ok=True)
        for fig in (out / "figures").iterdir():
            shutil.copyfile(fig, res / "figures" / fig.name)
    found = sum(r.get("status") == "ok" for r in records.values())
    return (
        f"{name}: {len(cells)} cells, {found} finished found "
        f"({legacy} legacy-matched), {len(cells) - len(records)} not found"
    )


def main(argv: Sequence[str]) -> None:
    names = list(argv) or sorted(
        p.name
        for p in RESULTS.iterdir()
        if (ROOT / "experiments" / f"{p.name}.toml").exists()
        and p.name not in OWN_SCRIPTS
        and ((p / "cells").is_dir() or (p / "cells.tar.xz").exists())
    )
    for name in names:
        print(retabulate(name), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
