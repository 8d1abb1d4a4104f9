"""DP-SGD's default lot (issue 24): the benchmark re-tabulated with the new lot.

The new default lot ``max(ceil(sqrt(d log(1/delta)/epsilon)), ceil(n sqrt(epsilon/T)))``
(``dpsample.finders.dp_sgd``; docs/finders.md "DP-SGD's default lot") changes the
``dp_sgd`` entry at every smooth point and the default warm start's finder. This
script merges the cells run with it (``experiments/results/utility_lot/cells.tar.xz``)
into the committed benchmark's cells and runs ``utility_analysis.py`` on the result::

    python experiments/utility_lot.py experiments/results/utility_lot  # goal.md
    python experiments/utility_lot.py experiments/results/utility_lot --before

(``--before``: the same merge with the cells of the code before the change, written
to ``goal_before.md``).

What the tarball holds (``dpsample.validation.run_cell`` records, the benchmark's cell
keys, 8 seeds; ``python experiments/utility_lot.py --help``):

* ``new/``: the ``dp_sgd`` entry (the library's DP-SGD at its defaults) at every point
  where its lot changed: the committed cells' configurations, re-run with the new
  default (every smooth point, and the MLP at ``epsilon = 4``; at the MLP's other
  epsilons and on the non-smooth problem the lot is unchanged);
* ``replay_base/``, ``replay_new/``: the default warm start at the points where it
  warm-starts (the two bumps, the robust regression at ``d = 1``), before and after
  the change, with stage A (the net) **not re-run**: its released ``x_0`` is read
  from the committed cell and stage B (DP-SGD) re-run from it with the pipeline's
  own key and plan (the net's output does not depend on the finder). Both arms run
  on the code of this branch's base (``replay_base``) and head (``replay_new``):
  the committed default cells were run before the enforced net route changed the
  net's psi, so they do not reproduce on either.

* ``default_floor/``: the default warm start on the two bumps run whole (the net,
  then DP-SGD with the new lot) on the merged code of issue 29, with the benchmark
  spec's configuration, which declares ``loss_floor`` (``basins_default_lot.toml``
  beside the tarball: the two-bump grids of ``utility_default.toml``); these replace
  the replays there.

At the cold-start points the default is DP-SGD alone, releasing bit for bit what
``dp_sgd`` releases (``_run_cold``: the same key and plan; checked on the saddle,
``n = 1,000``, seed 0): the merge takes the ``default`` cells there from ``new/``,
relabelled. Every number is a non-private diagnostic.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import tarfile
import tempfile
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def _point(record: dict) -> tuple:
    c = record["config"]
    fn = c["data"].get("function", "")
    name = fn.split("make_")[-1] if "make_" in fn else "mlp"
    return (name, c["data"].get("n"), c["data"].get("d"), c["privacy"]["epsilon"])


def _extract(archive: Path, into: Path) -> Path:
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return into


def merge(lot: Path, work: Path, before: bool = False) -> tuple[Path, Path]:
    """The merged benchmark and default-rule folders (each holding ``cells/``).

    ``before``: the code before the change instead (the committed ``dp_sgd`` cells,
    and ``replay_base/`` for the default warm start).
    """
    runs = _extract(lot / "cells.tar.xz", work / "lot")
    bench = _extract(RESULTS / "utility" / "cells.tar.xz", work / "bench")
    rule = _extract(RESULTS / "utility" / "cells_default_rule.tar.xz", work / "rule")
    new = {}
    for f in sorted((runs / "new").glob("*.json")):
        if before:  # the committed cell of the same key
            f = bench / "cells" / f.name
        rec = json.loads(f.read_text())
        (bench / "cells" / f.name).write_text(f.read_text())  # same key: replaced
        new[(_point(rec), rec["config"]["job"]["seed"])] = rec
    replay = runs / ("replay_base" if before else "replay_new")
    for f in sorted(replay.glob("*.json")):
        (rule / "cells" / f.name).write_text(f.read_text())
    warm = {f.name for f in replay.glob("*.json")}
    for f in sorted((rule / "cells").glob("*.json")):
        rec = json.loads(f.read_text())
        if f.name in warm or rec["config"]["job"]["name"] != "warm_start":
            continue
        twin = new.get((_point(rec), rec["config"]["job"]["seed"]))
        if twin is None:  # the lot is unchanged there (the non-smooth problem)
            continue
        cold = copy.deepcopy(twin)
        cold["config"], cold["key"] = rec["config"], rec["key"]
        f.write_text(json.dumps(cold))
    floor = runs / "default_floor"
    if not before and floor.is_dir():
        # The default warm start on the two bumps, run whole (net and DP-SGD) on the
        # merged code with the spec's configuration, which declares loss_floor: it
        # replaces the replays there (run on configurations without the floor).
        fresh = {}
        for f in sorted(floor.glob("*.json")):
            rec = json.loads(f.read_text())
            fresh[(_point(rec), rec["config"]["job"]["seed"])] = f
        for f in sorted((rule / "cells").glob("*.json")):
            rec = json.loads(f.read_text())
            point = (_point(rec), rec["config"]["job"]["seed"])
            if rec["config"]["job"]["name"] == "warm_start" and point in fresh:
                f.unlink()
                src = fresh[point]
                (rule / "cells" / src.name).write_text(src.read_text())
    return bench, rule


def main(argv: list[str] | None = None) -> int:
    """Merge, analyse, and copy ``goal.md`` and ``pivot.md`` next to the tarball."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", help="holds cells.tar.xz (new/, replay_*/)")
    parser.add_argument(
        "--before",
        action="store_true",
        help="tabulate the code before the change (writes goal_before.md)",
    )
    args = parser.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import utility_analysis

    lot = Path(args.folder)
    with tempfile.TemporaryDirectory() as tmp:
        bench, rule = merge(lot, Path(tmp), before=args.before)
        code = utility_analysis.main([str(bench), "--default", str(rule)])
        names = (
            ("goal.md",) if args.before else ("goal.md", "pivot.md", "comparisons.csv")
        )
        for name in names:
            out = "goal_before.md" if args.before else name
            (lot / out).write_text((bench / name).read_text())
    return code


if __name__ == "__main__":
    raise SystemExit(main())
