"""The utility benchmark's goal table re-measured against current baselines (issue 24).

The committed benchmark (``experiments/results/utility/cells.tar.xz``, run on
2026-11-28) predates the batch sampler, the enforced Gibbs clips and DP-SGD's new
lot. This script re-tabulates it with the cells of two sweeps run on 2026-11-29:

* ``cells_baselines.tar.xz``: ``experiments/utility_baselines.toml`` (the two DP-SGD
  entries at every point of the default grid, the default grid's cell keys); they
  **replace** every committed ``dp_sgd`` cell;
* ``cells_default_rule.tar.xz``: ``experiments/utility_default.toml`` (the default
  rule's ``warm_start``), joined as the entry ``default``;

and writes ``goal.md``, ``comparisons.csv``/``.md``, ``pivot.md``, ``cells.csv`` and
the figure into the folder (``experiments/utility_analysis.py``). The other entries'
cells are the committed ones (their former defaults: see docs/utility_benchmark.md).

    dpsample sweep experiments/utility_baselines.toml --workers 1 --out runs/ubase
    dpsample sweep experiments/utility_default.toml --workers 2 --out runs/udef
    # (their cells folders packed as the two tarballs above)
    python experiments/utility_remeasured.py experiments/results/utility_remeasured
"""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def main(argv: list[str] | None = None) -> int:
    """Merge the cells and run the analysis into ``argv[0]``."""
    args = sys.argv[1:] if argv is None else argv
    folder = Path(args[0] if args else RESULTS / "utility_remeasured").resolve()
    with tempfile.TemporaryDirectory(prefix="utility-remeasured-") as tmp:
        merged, rule = Path(tmp) / "merged", Path(tmp) / "rule"
        with tarfile.open(RESULTS / "utility" / "cells.tar.xz") as tar:
            tar.extractall(merged, filter="data")
        dropped = 0
        for path in (merged / "cells").glob("*.json"):
            job = json.loads(path.read_text()).get("config", {}).get("job", {})
            if job.get("name") == "dp_sgd":
                path.unlink()
                dropped += 1
        with tarfile.open(folder / "cells_baselines.tar.xz") as tar:
            tar.extractall(merged, filter="data")
        with tarfile.open(folder / "cells_default_rule.tar.xz") as tar:
            tar.extractall(rule, filter="data")
        print(f"replaced {dropped} committed dp_sgd cells by the baselines' run")
        analysis = Path(__file__).resolve().parent / "utility_analysis.py"
        subprocess.run(
            [sys.executable, str(analysis), str(merged), "--default", str(rule)],
            check=True,
        )
        for name in ("goal.md", "comparisons.csv", "comparisons.md", "pivot.md"):
            (folder / name).write_bytes((merged / name).read_bytes())
        (folder / "cells.csv").write_bytes((merged / "cells.csv").read_bytes())
        (folder / "figures").mkdir(exist_ok=True)
        fig = merged / "figures" / "excess_by_entry.png"
        if fig.exists():
            (folder / "figures" / fig.name).write_bytes(fig.read_bytes())
    print(f"wrote {folder}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
