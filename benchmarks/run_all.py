"""Run every ``benchmarks/bench_*.py`` in turn (``make bench``).

Each benchmark runs in its own subprocess with the current interpreter; extra
arguments (e.g. ``--quick``) are passed to every benchmark. Exits non-zero if any
benchmark fails.
"""

from __future__ import annotations

import pathlib
import subprocess
import sys
import time


def main(argv: list[str]) -> int:
    here = pathlib.Path(__file__).resolve().parent
    failed = []
    for script in sorted(here.glob("bench_*.py")):
        print(f"=== {script.name} ===", flush=True)
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, str(script), *argv], check=False)
        print(
            f"=== {script.name}: rc={proc.returncode}, "
            f"{time.perf_counter() - start:.1f} s ===\n",
            flush=True,
        )
        if proc.returncode:
            failed.append(script.name)
    if failed:
        print("failed: " + ", ".join(failed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
