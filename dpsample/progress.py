"""Progress bars for long compiled loops: on a terminal, quiet otherwise.

Gibbs chains, finders with thousands of steps and exponential mechanisms over nets of
millions of points each run as one compiled ``lax.scan`` / ``lax.fori_loop``. With
progress on, :func:`scan` and :func:`fori_loop` (drop-ins for JAX's) report to the host
through ``jax.debug.callback`` at most :data:`MAX_REPORTS` times a loop (plus one at
the start and one at the end): the steps run as an outer scan over chunks of
``ceil(length / MAX_REPORTS)`` steps, and the host hears the step count once per
chunk, never once per step (no per-step branch either: on a GPU a ``lax.cond`` in the
step would read its predicate back to the host every step). With progress off they *are*
``lax.scan`` and ``lax.fori_loop``: no callback, no chunks, nothing else in the graph.

Whether progress is on:

1. inside ``with dpsample.progress.enabled(True)`` (or ``False``), that;
2. else the environment variable ``DPSAMPLE_PROGRESS`` (``1``/``0``, ``on``/``off``,
   ``true``/``false``, ``yes``/``no``, or ``auto``);
3. else ``auto``: on when ``sys.stderr`` is a terminal. Tests, CI logs, pipes and
   notebooks without a terminal stay quiet.

Importing dpsample changes no setting. The library's jitted cores take the resolved
setting (:func:`is_enabled`, read on the host before the compiled call) as a static
argument, so toggling takes effect on the next call, each setting compiles once, and
the off path is the same program as without this module.

The bar is one line on ``sys.stderr``, redrawn with a carriage return: the label, the
percentage, ``done/total`` steps, the elapsed time and the ETA.

Privacy: the host sees only the step count, which is public (the work a run does is
fixed by its plan, whatever the data); no value computed from the data leaves the
device for the bar.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import math
import operator
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import jax
import jax.numpy as jnp
from jax import lax

__all__ = [
    "ENV_VAR",
    "MAX_REPORTS",
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
    isatty = getattr(sys.stderr, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream
        return False


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


# ----------------------------------------------------------------------- the bar
def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"


@dataclasses.dataclass
class _Bar:
    label: str
    total: int
    first_done: int
    first_time: float
    done: int = 0
    drawn: float = -math.inf

    def line(self, now: float, width: int = 20) -> str:
        fill = width * self.done // self.total
        percent = 100 * self.done // self.total
        elapsed = now - self.first_time
        ran = self.done - self.first_done
        left = self.total - self.done
        eta = _clock(elapsed / ran * left) if ran > 0 else "--:--"
        return (
            f"{self.label}: {percent:3d}% [{'#' * fill}{'.' * (width - fill)}]"
            f" {self.done}/{self.total} steps, {_clock(elapsed)} elapsed, ETA {eta}"
        )


_BARS: dict[tuple[str, int], _Bar] = {}
_REDRAW_SECONDS = 0.1  # the host redraws at most ten times a second (and at the end)
_LOCK = threading.Lock()


def _report(done: Any, *, label: str, total: int) -> None:
    """Host side: redraw the bar of ``label`` after ``done`` of ``total`` steps."""
    done = int(done)
    now = time.monotonic()
    with _LOCK:
        key = (label, total)
        bar = _BARS.get(key)
        if bar is None or done <= bar.done:  # a new loop under the same label
            bar = _BARS[key] = _Bar(label, total, first_done=done, first_time=now)
        bar.done = done
        last = done >= total
        if last:
            del _BARS[key]
        elif now - bar.drawn < _REDRAW_SECONDS:
            return
        bar.drawn = now
        stream = sys.stderr
        if stream is None:
            return
        stream.write("\r" + bar.line(now) + ("\n" if last else ""))
        stream.flush()


def _stride(total: int) -> int:
    return max(1, math.ceil(total / MAX_REPORTS))


def _report_on_device(done: Any, *, label: str, total: int) -> None:
    """Device side: send the step count ``done`` (public) to the host."""

    def callback(d: Any) -> None:  # looks up _report when called
        _report(d, label=label, total=total)

    jax.debug.callback(callback, done)


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

    Reports 0 first (the bar appears, its clock starts); the outer body runs
    ``stride`` steps (an inner ``lax.scan`` of ``f``) and then reports; the ``total %
    stride`` steps left over run after it, then report the total. No per-step branch:
    on an accelerator a ``lax.cond`` in the step would cost a device-to-host read of
    its predicate every step.
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

    def outer(c: C, inp: tuple[jax.Array, Any]) -> tuple[C, Any]:
        j, x_chunk = inp
        c, ys = lax.scan(f, c, x_chunk, stride, reverse, unroll)
        done = (chunks - j if reverse else j + 1) * stride
        _report_on_device(done, label=label, total=total)
        return c, ys

    _report_on_device(jnp.int32(0), label=label, total=total)  # the bar appears
    carry, ys = lax.scan(
        outer,
        init,
        (jnp.arange(chunks, dtype=jnp.int32), part((lo, hi), (chunks, stride))),
        reverse=reverse,
    )
    ys = jax.tree.map(lambda y: y.reshape((main,) + y.shape[2:]), ys)
    if not left:
        return carry, ys
    carry, rest_ys = lax.scan(f, carry, part(rest), left, reverse, unroll)
    _report_on_device(jnp.int32(total), label=label, total=total)
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
