"""Progress for long compiled loops and sweeps: a bar on a terminal, lines in logs.

Gibbs chains, finders with thousands of steps and exponential mechanisms over nets of
millions of points each run as one compiled ``lax.scan`` / ``lax.fori_loop``. With
progress on, :func:`scan` and :func:`fori_loop` (drop-ins for JAX's) report to the
host through ``jax.experimental.io_callback`` at most :data:`MAX_REPORTS` times a loop
(plus one at the start and one at the end): the steps run as an outer scan over chunks
of ``ceil(length / MAX_REPORTS)`` steps, and the host hears the step count once per
chunk, never once per step (no per-step branch either: on a GPU a ``lax.cond`` in the
step would read its predicate back to the host every step). With progress off they *are*
``lax.scan`` and ``lax.fori_loop``: no callback, no chunks, nothing else in the graph.

Whether progress is on:

1. inside ``with dpsample.progress.enabled(True)`` (or ``False``), that;
2. else the environment variable ``DPSAMPLE_PROGRESS`` (``1``/``0``, ``on``/``off``,
   ``true``/``false``, ``yes``/``no``, or ``auto``);
3. else ``auto``: on when ``sys.stderr`` is a terminal. Tests, CI logs, pipes and
   notebooks without a terminal stay quiet unless progress is asked for.

Importing dpsample changes no setting. The library's jitted cores take the resolved
setting (:func:`is_enabled`, read on the host before the compiled call) as a static
argument, so toggling takes effect on the next call, each setting compiles once, and
the off path is the same program as without this module.

One display, :class:`Progress`, serves the loops and the sweeps
(:func:`dpsample.validation.sweep`): on a terminal, one line on ``sys.stderr`` redrawn
with a carriage return (the label, the percentage, ``done/total``, the elapsed time and
the ETA); when stderr is not a terminal but progress was asked for
(``DPSAMPLE_PROGRESS=1``, ``enabled(True)``, a sweep's ``progress=True``), plain lines
at most every :data:`LINE_SECONDS` seconds, for CI and batch logs. The ETA is the
measured rate's (none before a unit has finished after the first), never a forecast.
The reports of a loop reach the host in the order of its steps: each report's step
count is threaded through the steps it counts and into the next report, so the
compiler cannot move the end before the start.

Privacy: the host sees only the step count, which is public (the work a run does is
fixed by its plan, whatever the data); no value computed from the data leaves the
device for the bar.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import math
import operator
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TextIO, TypeVar

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.experimental import io_callback

__all__ = [
    "ENV_VAR",
    "LINE_SECONDS",
    "MAX_REPORTS",
    "Progress",
    "enabled",
    "fori_loop",
    "is_enabled",
    "scan",
]

C = TypeVar("C")

#: The environment variable read when no :func:`enabled` context is active.
ENV_VAR = "DPSAMPLE_PROGRESS"

#: At most this many host reports per loop during the steps (plus one at the start and
#: at most one at the end).
MAX_REPORTS = 100

_ON = ("1", "on", "true", "yes")
_OFF = ("0", "off", "false", "no")

# None: no context (fall back on the environment variable, then auto).
_SETTING: contextvars.ContextVar[bool | str | None] = contextvars.ContextVar(
    "dpsample_progress", default=None
)


def _stderr_is_tty() -> bool:
    return _is_tty(sys.stderr)


def is_enabled() -> bool:
    """Whether progress bars are on here and now (context, then environment, then TTY).

    Read on the host; the library's jitted cores take its value as a static argument.

    Raises:
        ValueError: ``DPSAMPLE_PROGRESS`` holds a value other than those listed in
            the module docstring.

    Examples:
        >>> from dpsample import progress
        >>> with progress.enabled(False):
        ...     progress.is_enabled()
        False
    """
    setting = _SETTING.get()
    if isinstance(setting, bool):
        return setting
    if setting == "auto":
        return _stderr_is_tty()
    raw = os.environ.get(ENV_VAR, "").strip().lower()
    if raw in _ON:
        return True
    if raw in _OFF:
        return False
    if raw not in ("", "auto"):
        raise ValueError(f"Expected {ENV_VAR} in {_ON + _OFF + ('auto',)}, got {raw!r}")
    return _stderr_is_tty()


@contextlib.contextmanager
def enabled(on: bool | None = True) -> Iterator[None]:
    """Turn progress bars on (``True``), off (``False``) or to ``auto`` (``None``).

    The setting holds in the enclosed block (this thread or task only) and takes
    precedence over ``DPSAMPLE_PROGRESS`` (auto included); the previous one is
    restored on exit.

    Args:
        on: ``True``, ``False``, or ``None`` for auto (on when stderr is a terminal).

    Examples:
        >>> from dpsample import progress
        >>> with progress.enabled(True):
        ...     progress.is_enabled()
        True
    """
    if on is not None and not isinstance(on, bool):
        raise TypeError(f"Expected on to be a bool or None, got {on!r}")
    token = _SETTING.set("auto" if on is None else on)
    try:
        yield
    finally:
        _SETTING.reset(token)


# ------------------------------------------------------------------- the display
#: Plain-line mode (stderr not a terminal) writes at most one line per this many
#: seconds, plus the first line and the last.
LINE_SECONDS = 10.0

_REDRAW_SECONDS = 0.1  # a terminal bar is redrawn at most ten times a second
_STYLES = ("bar", "lines")


def _is_tty(stream: Any) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream
        return False


def _duration(seconds: float) -> str:
    """``7s``, ``1m03s``, ``2h05m07s`` (whole seconds, rounded down)."""
    hours, rest = divmod(max(0, int(seconds)), 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m{secs:02d}s"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


class Progress:
    """The progress display of compiled loops and sweeps: one bar or periodic lines.

    On a terminal (``style="bar"``), one line redrawn in place with a carriage
    return, at most ten times a second, ended by a newline on :meth:`close`::

        dp_sgd:  42% [########............] 8400/20000 steps, 12s elapsed, ETA 16s

    Elsewhere (``style="lines"``: CI logs, batch jobs, pipes), a plain line at most
    every ``interval`` seconds (default :data:`LINE_SECONDS`), plus the first and
    the last::

        sweep: 12/40 cells (2 failed), 1m03s elapsed, ETA 3m10s

    The ETA comes from the measured rate only, never from a forecast: none until a
    unit (a step, a cell) has finished after the first one; then the time since the
    first finished unit over the units finished since, times the units left. The
    time to the first unit (compilation, workers starting) is warm-up, not a rate.
    What is drawn depends on the counts and the clock only.

    Args:
        label: The display's label (public text).
        total: Units in all (cached ones included).
        unit: The units' name (``"steps"``, ``"cells"``).
        cached: Units done before this run (count as done, not in the rate).
        stream: Where to write (default ``sys.stderr`` when created).
        style: ``"bar"``, ``"lines"``, or ``None``: a bar when ``stream`` is a
            terminal, lines otherwise.
        interval: Seconds between draws at most (default 0.1 for a bar,
            :data:`LINE_SECONDS` for lines); the first and last are always drawn.
        clock: Seconds on a monotonic clock (default ``time.monotonic``).

    Raises:
        ValueError: An unknown ``style``, or a negative ``total`` or ``cached``.

    Examples:
        >>> import io
        >>> from dpsample.progress import Progress
        >>> ticks = iter([0.0, 0.0, 30.0, 60.0, 90.0])
        >>> log = io.StringIO()
        >>> p = Progress("sweep", 4, unit="cells", stream=log, interval=0.0,
        ...              clock=lambda: next(ticks))
        >>> p.update(0)
        >>> p.update(1)
        >>> p.update(2, failed=1)
        >>> p.close()
        >>> print(log.getvalue(), end="")
        sweep: 0/4 cells, 0s elapsed, ETA --
        sweep: 1/4 cells, 30s elapsed, ETA --
        sweep: 3/4 cells (1 failed), 1m00s elapsed, ETA 15s
    """

    def __init__(
        self,
        label: str,
        total: int,
        *,
        unit: str = "steps",
        cached: int = 0,
        stream: TextIO | None = None,
        style: str | None = None,
        interval: float | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        if style is not None and style not in _STYLES:
            raise ValueError(f"Expected style in {_STYLES} or None, got {style!r}")
        if total < 0 or cached < 0:
            raise ValueError(f"Expected total, cached >= 0, got {total}, {cached}")
        self.label, self.total, self.unit, self.cached = label, total, unit, cached
        self.stream = sys.stderr if stream is None else stream
        self.style = style or ("bar" if _is_tty(self.stream) else "lines")
        if interval is None:
            interval = _REDRAW_SECONDS if self.style == "bar" else LINE_SECONDS
        self.interval = interval
        self._clock = time.monotonic if clock is None else clock
        self.start = self._clock()
        self.done = self.failed = 0
        self._mark: tuple[float, int] | None = None  # (time, units): the first unit
        self._drawn_at = -math.inf
        self._drawn: tuple[int, int] | None = None  # (done, failed) last drawn
        self._width = 0  # the longest text drawn (a bar)
        self.closed = False

    @property
    def finished(self) -> int:
        """Units finished: cached, done and failed."""
        return self.cached + self.done + self.failed

    def eta(self, now: float) -> float | None:
        """Seconds left at ``now`` from the measured rate (``None``: no rate yet)."""
        left = self.total - self.finished
        if left <= 0:
            return 0.0
        if self._mark is None:
            return None
        since, first = self._mark
        ran = self.done + self.failed - first
        return (now - since) / ran * left if ran > 0 else None

    def line(self, now: float | None = None) -> str:
        """The display's text at ``now`` (default the clock's time)."""
        now = self._clock() if now is None else now
        notes = [f"{self.failed} failed"] * bool(self.failed)
        notes += [f"{self.cached} cached"] * bool(self.cached)
        eta = self.eta(now)
        tail = (
            f"{self.finished}/{self.total} {self.unit}"
            + (f" ({', '.join(notes)})" if notes else "")
            + f", {_duration(now - self.start)} elapsed, ETA "
            + ("--" if eta is None else _duration(eta))
        )
        if self.style == "lines":
            return f"{self.label}: {tail}"
        width = 20
        frac = min(1.0, self.finished / self.total) if self.total else 1.0
        fill = int(width * frac)
        return (
            f"{self.label}: {int(100 * frac):3d}% [{'#' * fill}{'.' * (width - fill)}]"
            f" {tail}"
        )

    def update(self, done: int, *, failed: int = 0, force: bool = False) -> None:
        """Record ``done`` (and ``failed``) units of this run; draw if it is time.

        Drawn when nothing was drawn yet, when all units are finished, with
        ``force``, or when ``interval`` seconds have passed since the last draw.
        """
        now = self._clock()
        self.done, self.failed = int(done), int(failed)
        if self._mark is None and self.done + self.failed > 0:
            self._mark = (now, self.done + self.failed)
        due = now - self._drawn_at >= self.interval
        if force or due or self._drawn is None or self.finished >= self.total:
            if (self.done, self.failed) != self._drawn or force or due:
                self._draw(now)

    def close(self) -> None:
        """Draw the last state (if not drawn yet) and end the line."""
        if self.closed:
            return
        self.closed = True
        if (self.done, self.failed) != self._drawn:
            self._draw(self._clock())
        if self.style == "bar" and self._drawn is not None:
            self._write("\n")

    def _draw(self, now: float) -> None:
        self._drawn_at, self._drawn = now, (self.done, self.failed)
        text = self.line(now)
        if self.style == "bar":  # blank what a longer previous text left
            text, self._width = text.ljust(self._width), max(self._width, len(text))
            self._write("\r" + text)
        else:
            self._write(text + "\n")

    def _write(self, text: str) -> None:
        if self.stream is None:  # sys.stderr can be None (pythonw)
            return
        self.stream.write(text)
        self.stream.flush()


# --------------------------------------------------------- compiled loops' reports
_SHOWN: dict[tuple[str, int], Progress] = {}
_LOCK = threading.Lock()


def _report(done: Any, *, label: str, total: int) -> None:
    """Host side: ``done`` of ``total`` steps of the loop ``label``.

    A report of 0 starts the loop's display (ending one left open under the same
    label, e.g. by an interrupted run); the report of ``total`` closes it.
    """
    done = int(done)
    with _LOCK:
        key = (label, total)
        shown = _SHOWN.get(key)
        if shown is None or done == 0 or done < shown.done:
            if shown is not None:
                shown.close()
            shown = _SHOWN[key] = Progress(label, total)
        shown.update(done)
        if done >= total:
            shown.close()
            del _SHOWN[key]


def _host_report(done: Any, *, label: str, total: int) -> np.ndarray:
    _report(done, label=label, total=total)  # looked up when called
    return np.zeros((), np.int32)


def _stride(total: int) -> int:
    return max(1, math.ceil(total / MAX_REPORTS))


def _report_on_device(count: jax.Array, *, label: str, total: int) -> jax.Array:
    """Device side: send the step count (public) to the host; return it again.

    The count returned depends on the report's result (a zero), and the next
    report's count on it, so the reports run in the order of the steps, each after
    the steps it counts: the host never sees the end before the start. Only the
    count leaves the device.
    """
    token = io_callback(
        functools.partial(_host_report, label=label, total=total),
        jax.ShapeDtypeStruct((), jnp.int32),
        count,
        ordered=False,
    )
    return count + token


def _chunked_scan(
    f: Callable[[C, Any], tuple[C, Any]],
    init: C,
    xs: Any,
    total: int,
    reverse: bool,
    unroll: int | bool,
    label: str,
) -> tuple[C, Any]:
    """``lax.scan`` of ``total`` steps as an outer scan over chunks of ``stride``.

    Reports 0 first (the display appears, its clock starts); the outer body runs
    ``stride`` steps (an inner ``lax.scan`` of ``f`` that also counts the steps)
    and then reports the count; the ``total % stride`` steps left over run after
    it, then report the total. The count threads through the steps and the reports,
    so each report runs after the steps it counts and before the next ones (no
    reordering by the compiler). No per-step branch: on an accelerator a
    ``lax.cond`` in the step would cost a device-to-host read of its predicate
    every step.
    """
    stride = _stride(total)
    chunks, left = divmod(total, stride)
    main = chunks * stride
    # In processing order: forward, the first `main` steps then the rest; reverse,
    # the last `main` steps (from the end) then the first `left`.
    lo, hi = (left, total) if reverse else (0, main)
    rest = (0, left) if reverse else (main, total)

    def part(bounds: tuple[int, int], shape: tuple[int, ...] | None = None) -> Any:
        a, b = bounds
        if xs is None:
            return None
        return jax.tree.map(
            lambda x: x[a:b] if shape is None else x[a:b].reshape(shape + x.shape[1:]),
            xs,
        )

    def counted(cn: tuple[C, jax.Array], x: Any) -> tuple[tuple[C, jax.Array], Any]:
        c, n = cn
        c, y = f(c, x)
        return (c, n + 1), y

    def outer(cn: tuple[C, jax.Array], x_chunk: Any) -> tuple[Any, Any]:
        (c, n), ys = lax.scan(counted, cn, x_chunk, stride, reverse, unroll)
        return (c, _report_on_device(n, label=label, total=total)), ys

    count = _report_on_device(jnp.int32(0), label=label, total=total)
    (carry, count), ys = lax.scan(
        outer, (init, count), part((lo, hi), (chunks, stride)), chunks, reverse
    )
    ys = jax.tree.map(lambda y: y.reshape((main,) + y.shape[2:]), ys)
    if not left:
        return carry, ys
    (carry, count), rest_ys = lax.scan(
        counted, (carry, count), part(rest), left, reverse, unroll
    )
    _report_on_device(count, label=label, total=total)
    pair = (rest_ys, ys) if reverse else (ys, rest_ys)
    return carry, jax.tree.map(lambda a, b: jnp.concatenate([a, b]), *pair)


# ----------------------------------------------------------------------- the loops
def scan(
    f: Callable[[C, Any], tuple[C, Any]],
    init: C,
    xs: Any = None,
    length: int | None = None,
    reverse: bool = False,
    unroll: int | bool = 1,
    *,
    label: str = "scan",
    show: bool | None = None,
) -> tuple[C, Any]:
    """``jax.lax.scan`` with a progress bar when progress is on.

    Off, this is exactly ``lax.scan(f, init, xs, length, reverse, unroll)``. On, the
    steps run as an outer scan over at most :data:`MAX_REPORTS` chunks of
    ``ceil(length / MAX_REPORTS)`` steps (each an inner ``lax.scan`` of ``f``), plus
    the steps left over; at the start, after each chunk and at the end, the step
    count goes to the host. ``f`` runs the same steps in the same order on the same
    inputs, so the results are the same; no branch or callback runs per step. The
    count is never batched, so under ``jax.vmap`` the bar advances once per chunk,
    not once per batch element.

    Args:
        f: The body ``(carry, x) -> (carry, y)``, as for ``jax.lax.scan``.
        init: The initial carry.
        xs: The scanned-over pytree (``None`` with ``length``).
        length: The number of steps (default: the leading axis of ``xs``).
        reverse: Scan from the end, as ``jax.lax.scan``.
        unroll: As for ``jax.lax.scan``.
        label: The bar's label (public text: the algorithm's name).
        show: Draw the bar (``True``), don't (``False``), or read
            :func:`is_enabled` now (``None``). Inside ``jax.jit``, pass it resolved
            on the host as a static argument: jit caches the first trace's choice.

    Returns:
        ``(final carry, stacked outputs)``, as ``jax.lax.scan``.

    Examples:
        >>> import jax.numpy as jnp
        >>> from dpsample import progress
        >>> def step(c, x):
        ...     return c + x, 2 * x
        >>> c, ys = progress.scan(step, 0, jnp.arange(5), label="demo", show=False)
        >>> int(c), ys.tolist()
        (10, [0, 2, 4, 6, 8])
    """
    if show is None:
        show = is_enabled()
    if not show:
        return lax.scan(f, init, xs, length, reverse, unroll)
    sizes = {int(x.shape[0]) for x in jax.tree.leaves(xs)}
    if length is not None:
        sizes.add(int(length))
    if len(sizes) != 1:  # lax.scan's own check, before the chunks slice xs
        raise ValueError(f"scan got xs leading sizes and length {sorted(sizes)}")
    (length,) = sizes
    if length == 0:
        return lax.scan(f, init, xs, length, reverse, unroll)
    return _chunked_scan(f, init, xs, int(length), reverse, unroll, label)


def fori_loop(
    lower: int,
    upper: int,
    body_fun: Callable[[Any, C], C],
    init_val: C,
    *,
    label: str = "loop",
    show: bool | None = None,
) -> C:
    """``jax.lax.fori_loop`` with a progress bar when progress is on.

    Off, or when ``lower`` and ``upper`` are not Python integers (the total is then
    unknown when tracing), this is exactly ``lax.fori_loop(lower, upper, body_fun,
    init_val)``. On, the iterations run as :func:`scan` runs its steps (chunks, then
    a report to the host after each), with the index ``i`` in the dtype
    ``lax.fori_loop`` gives it.

    Args:
        lower: The first index.
        upper: One past the last index.
        body_fun: The body ``(i, value) -> value``.
        init_val: The initial value.
        label: The bar's label (public text).
        show: As for :func:`scan`.

    Returns:
        The final loop value, as ``jax.lax.fori_loop``.

    Examples:
        >>> from dpsample import progress
        >>> int(progress.fori_loop(0, 4, lambda i, c: c + i, 0, show=False))
        6
    """
    if show is None:
        show = is_enabled()
    try:
        first, last = operator.index(lower), operator.index(upper)
    except TypeError:  # traced bounds: no known total
        first = last = 0
    if not show or last <= first:
        return lax.fori_loop(lower, upper, body_fun, init_val)
    # lax.fori_loop's index: the bounds' dtype (int32, or int64 under x64).
    index = jnp.arange(first, last, dtype=jnp.asarray(first).dtype)

    def step(c: C, i: jax.Array) -> tuple[C, None]:
        return body_fun(i, c), None

    return _chunked_scan(step, init_val, index, last - first, False, 1, label)[0]
