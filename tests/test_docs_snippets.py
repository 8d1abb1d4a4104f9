"""Every ```python block of README.md and docs/*.md runs (issue 28).

A page's blocks run in order in one namespace (a later block may use an earlier
one's names), in a fresh Python process with JAX's defaults (float64 off, as a
reader's session has it; the test session's conftest turns it on), with the working
directory set to a temporary folder so that blocks writing files leave nothing
behind. A block may be skipped by writing, on the line just before its fence,

    <!-- skip: the reason -->

and the test reports each skipped block with its reason (``pytest -rs``). A page whose
blocks are all skipped still has them checked to compile. Slow: the pages' examples
compile and run real pipelines (about 4 minutes in one process, all pages together,
on the shared 2-core machine).
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_FENCE = re.compile(
    r"(?:^<!--\s*skip:\s*(?P<reason>.*?)\s*-->\n)?^```python\n(?P<code>.*?)^```\s*$",
    re.M | re.S,
)


@dataclass(frozen=True)
class Block:
    """One ```python block: where it starts, its code, why it is skipped (if it is)."""

    line: int
    code: str
    skip: str | None


def _source(code: str) -> str:
    """A block's Python: a doctest-style block (``>>>``) keeps its statements only.

    Its printed outputs are checked by the page's own doctest runner
    (``tests/test_privacy_report.py`` for privacy.md); here it runs as a reader's
    session does. Blank lines stay, so line numbers in a traceback match the page.
    """
    if not code.lstrip().startswith(">>>"):
        return code
    lines = []
    for text in code.splitlines():
        stripped = text.strip()
        if stripped.startswith(">>>") or stripped.startswith("..."):
            lines.append(stripped[4:])
        else:
            lines.append("")  # an expected output
    return "\n".join(lines) + "\n"


def blocks(text: str) -> list[Block]:
    """The ```python blocks of a Markdown text, in order (doctest prompts removed)."""
    found = []
    for match in _FENCE.finditer(text):
        line = text.count("\n", 0, match.start("code"))  # the fence's line, 1-based
        found.append(Block(line, _source(match.group("code")), match.group("reason")))
    return found


def _relative(page: pathlib.Path) -> str:
    return str(page.relative_to(ROOT))


def test_blocks_finds_fences_and_skip_marks():
    text = textwrap.dedent(
        """\
        intro
        ```python
        a = 1
        ```
        <!-- skip: needs data -->
        ```python
        b = 2
        ```
        ```text
        not python
        ```
        """
    )
    found = blocks(text)
    assert [(b.line, b.code, b.skip) for b in found] == [
        (2, "a = 1\n", None),
        (6, "b = 2\n", "needs data"),
    ]


def test_every_page_with_python_is_collected():
    pages = {_relative(p) for p in PAGES if blocks(p.read_text(encoding="utf-8"))}
    assert "README.md" in pages
    assert len(pages) >= 10, sorted(pages)


_RUNNER = """
import json, sys
namespace = {"__name__": "__main__"}
for where, code in json.load(open(sys.argv[1], encoding="utf-8")):
    print("BLOCK", where, flush=True)
    exec(compile(code, where, "exec"), namespace)
"""


@pytest.mark.slow
@pytest.mark.parametrize(
    "page",
    [p for p in PAGES if blocks(p.read_text(encoding="utf-8"))],
    ids=_relative,
)
def test_page_snippets_run(page, tmp_path):
    # A fresh interpreter, as a reader's: not this session's JAX settings (conftest
    # enables float64 globally; a reader's JAX has it off), in an empty folder.
    runnable, skipped = [], []
    for block in blocks(page.read_text(encoding="utf-8")):
        where = f"{_relative(page)}:{block.line}"
        compile(block.code, where, "exec")  # a skipped block still compiles
        if block.skip is None:
            runnable.append((where, block.code))
        else:
            skipped.append(f"{where} ({block.skip})")
    (tmp_path / "blocks.json").write_text(json.dumps(runnable), encoding="utf-8")
    (tmp_path / "run_blocks.py").write_text(_RUNNER, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_ENABLE_X64")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    env["MPLBACKEND"] = "Agg"
    done = subprocess.run(
        [sys.executable, "run_blocks.py", "blocks.json"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode:
        started = [
            line for line in done.stdout.splitlines() if line.startswith("BLOCK")
        ]
        where = started[-1].split()[1] if started else "?"
        raise AssertionError(f"the block at {where} fails:\n{done.stderr[-3000:]}")
    if skipped:
        pytest.skip("ran the others; skipped " + "; ".join(skipped))
