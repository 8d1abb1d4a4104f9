"""The one progress display (issue 28 item 6): loops and sweeps, terminal and logs.

The glitches seen before, each reproduced here:

* ``dpsample run`` / ``dpsample quickstart`` on a terminal drew a complete
  ``dp_spider`` bar before the real one, which then stayed at 0% (or 97%) with the
  next bar or line glued to it, so the bar went 100% -> 0%: the loop's first and last
  reports had constant operands, so XLA ran them wherever it liked (the end first).
  The reports now arrive in step order (``test_progress.py``); here the commands'
  terminal output is parsed (a pseudo-terminal, as a user sees it): each bar starts
  at 0, never goes back, ends at its total and ends its line before anything else.
* Without a terminal, ``DPSAMPLE_PROGRESS=1`` wrote carriage-return bars into logs;
  now plain lines, at most one every ``LINE_SECONDS`` (plus the first and last).
* The sweep's first ETA counted the warm-up (workers starting, compiling) as the
  rate (29 min for a 1.5-min job); the ETA now comes from the rate measured after
  the first unit, and none is shown before.
"""

from __future__ import annotations

import io
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

from dpsample import progress

REPO = Path(__file__).resolve().parents[1]

#: A progress line or bar segment: label, (percent and bar,) done/total.
_SHOWN = re.compile(
    r"^(?P<label>[^\n]+?): +(?:\d+% \[[#.]+\] )?(?P<done>\d+)/(?P<total>\d+) "
    r"(?:steps|cells)\b"
)


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


class _Clock:
    """A settable clock for the display."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _check_terminal(text: str) -> dict[str, int]:
    """Check bars as a terminal shows them; return ``{label: bars drawn}``.

    Each physical line holding a bar holds that one bar only (its redraws, split by
    carriage returns): it starts at 0, never goes back, and is at its total when
    the line ends (nothing glued after it).
    """
    bars: dict[str, int] = {}
    for line in text.replace("\r\n", "\n").split("\n"):
        segments = [s for s in line.split("\r") if s]
        shown = [_SHOWN.match(s) for s in segments]
        if not any(shown):
            continue
        assert all(shown), f"text glued to a bar: {segments!r}"
        labels = {m.group("label") for m in shown if m}
        assert len(labels) == 1, f"two bars on one line: {segments!r}"
        done = [int(m.group("done")) for m in shown if m]
        total = int(shown[-1].group("total"))  # type: ignore[union-attr]
        assert done[0] == 0, f"a bar that does not start at 0: {segments!r}"
        assert done == sorted(done), f"a bar that goes back: {segments!r}"
        assert done[-1] == total, f"a bar left unfinished: {segments!r}"
        label = labels.pop()
        bars[label] = bars.get(label, 0) + 1
    return bars


def _check_lines(text: str) -> dict[str, list[int]]:
    """Check plain progress lines (no carriage return); return the counts per label."""
    assert "\r" not in text
    counts: dict[str, list[int]] = {}
    totals: dict[str, int] = {}
    for line in text.splitlines():
        m = _SHOWN.match(line)
        if m:
            counts.setdefault(m.group("label"), []).append(int(m.group("done")))
            totals[m.group("label")] = int(m.group("total"))
    for label, done in counts.items():
        assert done[0] == 0 and done[-1] == totals[label], (label, done)
        assert done == sorted(done), (label, done)
    return counts


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ, JAX_PLATFORMS="cpu", DPSAMPLE_COMPILE_CACHE="0", **extra)
    env.pop("DPSAMPLE_PROGRESS", None)
    env.update(extra)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p
    )
    return env


def _on_a_terminal(args: list[str], cwd: Path) -> str:
    """Run ``python -m dpsample.cli ARGS`` with stdout and stderr on one pty."""
    main, child = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "dpsample.cli", *args],
        stdout=child,
        stderr=child,
        stdin=subprocess.DEVNULL,
        env=_env(),
        cwd=cwd,
    )
    os.close(child)
    chunks = []
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # the child closed the terminal (EIO)
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(main)
    assert proc.wait(timeout=600) == 0, b"".join(chunks)[-2000:]
    return b"".join(chunks).decode()


# ------------------------------------------------------------------ the display
def test_no_eta_before_a_measured_rate_and_warm_up_is_not_a_rate():
    # The sweep seen in the issue: the first cell waits 30 s (workers starting,
    # compiling), the others take 1.5 s each; the old rule (elapsed / done x left)
    # gave 29m15s here.
    clock, log = _Clock(), io.StringIO()
    p = progress.Progress(
        "sweep", 60, unit="cells", stream=log, interval=0.0, clock=clock
    )
    p.update(0)
    clock.now = 30.0
    p.update(1)
    assert p.eta(clock.now) is None  # one unit: warm-up only, no rate yet
    etas = []
    for done in range(2, 60):
        clock.now = 30.0 + 1.5 * (done - 1)
        p.update(done)
        etas.append(p.eta(clock.now))
    true_left = [1.5 * (60 - d) for d in range(2, 60)]
    assert etas == pytest.approx(true_left)
    clock.now += 1.5
    p.update(60)
    p.close()
    lines = log.getvalue().splitlines()
    assert lines[0] == "sweep: 0/60 cells, 0s elapsed, ETA --"
    assert lines[1] == "sweep: 1/60 cells, 30s elapsed, ETA --"
    assert lines[2] == "sweep: 2/60 cells, 31s elapsed, ETA 1m27s"
    assert lines[-1] == "sweep: 60/60 cells, 1m58s elapsed, ETA 0s"


def test_lines_are_rate_bounded_and_carry_failures_and_cached():
    clock, log = _Clock(), io.StringIO()
    p = progress.Progress(
        "sweep", 40, unit="cells", cached=5, stream=log, interval=10.0, clock=clock
    )
    assert p.style == "lines"  # not a terminal
    for done in range(36):  # one unit every 0.5 s: 18 s in all
        clock.now = 0.5 * done
        p.update(done - done // 10, failed=done // 10)
    p.close()
    lines = log.getvalue().splitlines()
    assert lines[0] == "sweep: 5/40 cells (5 cached), 0s elapsed, ETA --"
    assert len(lines) == 3  # the first, one after 10 s, the last
    assert lines[-1] == "sweep: 40/40 cells (3 failed, 5 cached), 17s elapsed, ETA 0s"
    assert "\r" not in log.getvalue()


def test_a_terminal_gets_one_bar_that_ends_its_line():
    clock, tty = _Clock(), _Tty()
    p = progress.Progress("dp_sgd", 200, stream=tty, clock=clock)
    assert p.style == "bar"
    for done in range(0, 201, 50):
        clock.now = done / 100
        p.update(done)
    p.close()
    p.close()  # once only
    text = tty.getvalue()
    assert text.endswith(
        "dp_sgd: 100% [####################] 200/200 steps, 2s elapsed, ETA 0s\n"
    )
    assert text.count("\n") == 1
    assert _check_terminal(text) == {"dp_sgd": 1}


def test_style_and_counts_are_checked():
    with pytest.raises(ValueError, match="style"):
        progress.Progress("x", 3, style="fancy")
    with pytest.raises(ValueError, match="total"):
        progress.Progress("x", -1)


def test_a_loop_draws_lines_without_a_terminal_and_a_bar_with_one(monkeypatch):
    xs = jnp.arange(251.0)
    for stream in (io.StringIO(), _Tty()):
        monkeypatch.setattr("sys.stderr", stream)
        progress.scan(lambda c, x: (c + x, None), 0.0, xs, label="demo", show=True)
        jax.effects_barrier()
        text = stream.getvalue()
        if isinstance(stream, _Tty):
            assert _check_terminal(text) == {"demo": 1}
        else:  # a quick loop: its first and last lines only
            assert _check_lines(text) == {"demo": [0, 251]}


def test_a_loop_cut_short_ends_its_line_when_the_next_one_starts(monkeypatch):
    tty = _Tty()
    monkeypatch.setattr("sys.stderr", tty)
    for done in (0, 3):  # interrupted after 3 of 6 steps
        progress._report(done, label="cut", total=6)
    for done in (0, 3, 6):  # run again
        progress._report(done, label="cut", total=6)
    first, second, rest = tty.getvalue().split("\n")
    assert first.split("\r")[-1].startswith("cut:  50% ")  # left as it was
    assert _check_terminal(second) == {"cut": 1} and rest == ""


# ------------------------------------------------------------ the commands' output
@pytest.mark.slow
def test_quickstart_on_a_terminal_draws_each_bar_once_in_order(tmp_path):
    text = _on_a_terminal(["quickstart"], tmp_path)
    bars = _check_terminal(text)
    assert bars == {
        "net exponential mechanism (chunks)": 1,
        "dp_spider": 1,
        "net minimum (chunks)": 1,
    }
    assert "RELEASED POINT" in text


@pytest.mark.slow
def test_run_in_a_log_writes_plain_lines(tmp_path):
    config = REPO / "examples" / "warm_start_breast_cancer.toml"
    proc = subprocess.run(
        [sys.executable, "-m", "dpsample.cli", "run", str(config), "-o", "out"],
        capture_output=True,
        text=True,
        timeout=600,
        env=_env(DPSAMPLE_PROGRESS="1"),
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    counts = _check_lines(proc.stderr)
    assert set(counts) == {
        "net exponential mechanism (chunks)",
        "dp_spider",
        "net minimum (chunks)",
    }
    assert counts["dp_spider"][-1] == 251


@pytest.mark.slow  # DP-SGD compiles for a few seconds
def test_the_docs_snippets_run(capsys):
    text = (REPO / "docs" / "progress.md").read_text()
    snippets = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(snippets) == 3
    for snippet in snippets:
        exec(compile(snippet, "docs/progress.md", "exec"), {})  # noqa: S102
    jax.effects_barrier()
    captured = capsys.readouterr()
    assert _check_lines(captured.err) == {"dp_sgd": [0, 2000]}  # enabled(True)
    assert captured.out.startswith("jobs: 0/3 jobs, 0s elapsed, ETA --\n")
    assert "jobs: 3/3 jobs, " in captured.out
