"""Every benchmark runs, in its quick mode, from a clean checkout (issue 27).

Each ``benchmarks/bench_*.py`` (what ``make bench`` runs) and the planning table
``gibbs_proximal_feasibility.py`` run in a fresh process against a mirror of the
checkout whose ``benchmarks/`` folder is a copy, so their result files go to a
temporary folder and the committed ``benchmarks/results/`` stay as they are. A
benchmark that needs a GPU or a package that is not installed would be skipped with
the reason (none does today: the Opacus rows of ``bench_finders.py`` print their own
"skipped" line without torch). ``contract_metrics.py`` is a code-metrics tool (git
worktrees and mypy), not a benchmark: it is left out.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "benchmarks"
SCRIPTS = sorted(p.name for p in BENCH.glob("bench_*.py"))
#: Arguments of the smoke run: ``--quick``, or the smallest run a benchmark's own
#: options give where its quick mode takes minutes (measured at load average 8-12
#: on 2 cores: saddle_table --quick 361 s, sweep --quick 257 s). The code paths are
#: the quick mode's; only sizes and the number of finders or cells shrink.
QUICK_ARGS = {
    "gibbs_proximal_feasibility.py": [],  # a table of plans: seconds, no mode
    "bench_saddle_table.py": ["--n", "1000", "--finders", "dp_sgd"],
    "bench_sweep.py": ["--cells", "2", "--repeats", "1", "--no-save"],
    # the checkout against itself: the mirror has no .git for `git archive`
    "bench_issue24_before_after.py": ["--quick", "--before-tree", "."],
}


@pytest.fixture(scope="module")
def mirror(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The checkout, with ``benchmarks/`` copied (results to a temporary folder)."""
    root = tmp_path_factory.mktemp("checkout")
    for entry in REPO.iterdir():
        if entry.name not in ("benchmarks", ".git"):
            (root / entry.name).symlink_to(entry)
    (root / "benchmarks" / "results").mkdir(parents=True)
    for script in BENCH.glob("*.py"):
        shutil.copy(script, root / "benchmarks" / script.name)
    return root


def test_every_benchmark_has_a_quick_mode():
    assert "bench_finders.py" in SCRIPTS and "bench_nets.py" in SCRIPTS
    for name in SCRIPTS:
        assert re.search(r"[\"']--quick[\"']", (BENCH / name).read_text()), name


@pytest.mark.slow
@pytest.mark.bench  # 4-10 minutes in all: `make bench-smoke`, outside `make test`
@pytest.mark.parametrize("name", [*SCRIPTS, "gibbs_proximal_feasibility.py"])
def test_benchmark_runs_in_quick_mode(name: str, mirror: Path) -> None:
    env = dict(os.environ, JAX_PLATFORMS="cpu", PYTHONPATH=str(mirror))
    proc = subprocess.run(
        [
            sys.executable,
            str(mirror / "benchmarks" / name),
            *QUICK_ARGS.get(name, ["--quick"]),
        ],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=mirror,
        env=env,
    )
    assert proc.returncode == 0, (proc.stdout[-3000:], proc.stderr[-3000:])
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
