r"""Forecasts of a plan's wall time, from a short timing on this machine.

A :class:`~dpsample.plan.Cost` counts the work of a planned run in per-example
evaluations (losses, gradients, Hessian-vector products) and sequential steps; those
counts are public and exact. :func:`estimate_seconds` turns them into a forecast of
the private run's wall time on this machine:

.. math::

    \hat t = n_g t_g + n_\ell t_\ell + n_h t_h + T t_{step},

where ``t_g``, ``t_l``, ``t_h`` are the measured times of one per-example gradient,
loss and Hessian-vector product of the spec's loss (a jitted, vmapped batch of
:data:`BATCH` zero examples of the spec's shapes at the domain centre: public inputs
only, never the data) and ``t_step`` the overhead of one step of a jitted
``lax.scan`` that draws Gaussian noise of dimension ``d`` (the net mechanism's
losses, scored in bulk over a grid of points, take ``t_\ell`` of such a grid:
:data:`GRID_LOSS_ALGORITHMS`). A first run in a process
also compiles its programs, which on a CPU is most of a short run's time: the
forecast adds

.. math::

    \hat t_{compile} = u_A \, t_{ref},

where ``t_ref`` is the measured compile time of those four timed programs (so it
follows the loss's size and the machine's speed and load) and ``u_A`` the
algorithm's :data:`COMPILE_UNITS` (a pipeline adds its stages' and its own). A
second run of the same shapes in the same process compiles nothing and takes about
the first sum alone (:func:`estimate_seconds` with ``compiled=True``). The timing
takes about a second and is cached per loss function and shapes.

The forecast is an estimate (machine load and cache effects move it), for deciding
whether to run or to pass a compute budget (``max_evaluations``), not a guarantee.
"""

from __future__ import annotations

import time
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from dpsample._src import precision

__all__ = [
    "BATCH",
    "COMPILE_UNITS",
    "DEFAULT_COMPILE_UNITS",
    "GRID_LOSS_ALGORITHMS",
    "UnitTimes",
    "estimate_seconds",
    "unit_times",
]

#: Examples per timed batch.
BATCH = 256
_REPEATS = 5
_STEPS = 512
_POINTS = 64


class UnitTimes(NamedTuple):
    """Measured seconds per unit of work.

    Attributes:
        gradient: One per-example gradient.
        loss: One per-example loss.
        hvp: One per-example Hessian-vector product.
        step: One sequential step (scan overhead and a ``d``-dimensional noise draw).
        compile: Seconds to compile the four timed programs (the reference compile
            the per-algorithm :data:`COMPILE_UNITS` are counted in).
        grid_loss: One loss of a (points x examples) grid scored in bulk, as the
            algorithms of :data:`GRID_LOSS_ALGORITHMS` score theirs.
    """

    gradient: float
    loss: float
    hvp: float
    step: float
    compile: float = 0.0
    grid_loss: float = 0.0


_CACHE: dict[Any, UnitTimes] = {}

#: A first run's compilation and first-call overheads, in units of the reference
#: compile ``UnitTimes.compile``, per registered algorithm: measured on the example
#: configurations on a 2-core CPU (first run minus second run, divided by the
#: reference; ``dp_sgd`` the geometric mean of its two configurations, 2.2 and 1.5;
#: ``warm_start`` the pipeline's own part beyond its stages). Algorithms without an
#: example configuration take :data:`DEFAULT_COMPILE_UNITS`.
COMPILE_UNITS: dict[str, float] = {
    "dp_sgd": 1.8,
    "dp_spider": 3.5,
    "gibbs": 3.3,
    "goldstein_zero_order": 8.4,
    "net": 2.1,
    "spider_sosp": 3.5,
    "warm_start": 3.6,
}

#: Algorithms whose loss evaluations are a (points x examples) grid scored in bulk
#: (the net mechanism's streamed scores, :mod:`dpsample.nets.stream`): their loss
#: evaluations are forecast at ``UnitTimes.grid_loss``, not ``UnitTimes.loss``.
GRID_LOSS_ALGORITHMS = frozenset({"net"})

#: :data:`COMPILE_UNITS` of an algorithm without a measured entry (their median).
DEFAULT_COMPILE_UNITS = 3.5


def _timed(fn: Any, *args: Any) -> tuple[float, float]:
    """``(best run seconds, compile seconds)`` of a jitted ``fn`` on ``args``."""
    t0 = time.perf_counter()
    fn.lower(*args).compile()
    compile_seconds = time.perf_counter() - t0
    jax.block_until_ready(fn(*args))  # warm
    best = float("inf")
    for _ in range(_REPEATS):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        best = min(best, time.perf_counter() - t0)
    return best, compile_seconds


@precision.scoped
def unit_times(spec: Any) -> UnitTimes:
    """Time one gradient, loss, HVP and step for ``spec``'s loss (cached).

    Args:
        spec: A :class:`~dpsample.problem.ProblemSpec` (only its loss, dimension,
            domain centre and example shapes are used).

    Returns:
        :class:`UnitTimes`.

    Examples:
        >>> import jax.numpy as jnp
        >>> from dpsample import Ball, Problem
        >>> from dpsample.cost import unit_times
        >>> p = Problem(lambda x, z: jnp.sum((x - z) ** 2), jnp.zeros((4, 2)),
        ...             Ball(1.0, dim=2))
        >>> t = unit_times(p.spec)
        >>> 0 < t.gradient < 1e-2 and 0 < t.step < 1e-2
        True
    """
    shapes = tuple(
        (leaf.shape, str(leaf.dtype)) for leaf in jax.tree.leaves(spec.example)
    )
    key: Any = (spec.loss_fn, spec.dim, jax.tree.structure(spec.example), shapes)
    try:
        if key in _CACHE:
            return _CACHE[key]
    except TypeError:  # an unhashable loss: time it again
        key = None
    x = jnp.asarray(spec.domain.center_point, jnp.float64)
    batch = jax.tree.map(
        lambda leaf: jnp.zeros((BATCH, *leaf.shape), leaf.dtype), spec.example
    )
    loss_fn = spec.loss_fn
    grad_fn = jax.grad(loss_fn)
    v = jnp.ones_like(x) / jnp.sqrt(x.shape[0])

    def hvp(p: Any, ex: Any) -> Any:
        return jax.jvp(lambda q: grad_fn(q, ex), (p,), (v,))[1]

    grads = jax.jit(jax.vmap(grad_fn, in_axes=(None, 0)))
    losses = jax.jit(jax.vmap(loss_fn, in_axes=(None, 0)))
    hvps = jax.jit(jax.vmap(hvp, in_axes=(None, 0)))

    points = x + jnp.zeros((_POINTS, x.shape[0]), x.dtype)
    grid = jax.jit(jax.vmap(lambda p, b: jnp.sum(losses(p, b)), in_axes=(0, None)))

    @jax.jit
    def steps(k: Any, p: Any) -> Any:
        def body(q: Any, kk: Any) -> tuple[Any, None]:
            return q + 1e-3 * jax.random.normal(kk, q.shape, q.dtype), None

        return jax.lax.scan(body, p, jax.random.split(k, _STEPS))[0]

    timed = [
        _timed(grads, x, batch),
        _timed(losses, x, batch),
        _timed(hvps, x, batch),
        _timed(steps, jax.random.key(0), x),
    ]
    out = UnitTimes(
        gradient=timed[0][0] / BATCH,
        loss=timed[1][0] / BATCH,
        hvp=timed[2][0] / BATCH,
        step=timed[3][0] / _STEPS,
        compile=sum(c for _, c in timed),
        grid_loss=_timed(grid, points, batch)[0] / (_POINTS * BATCH),
    )
    if key is not None:
        _CACHE[key] = out
    return out


def estimate_seconds(
    spec: Any, cost: Any, algorithm: str | None = None, *, compiled: bool = False
) -> float:
    """Forecast wall time of a run of ``cost`` on ``spec`` (see the module docstring).

    Args:
        spec: The plan's :class:`~dpsample.problem.ProblemSpec`.
        cost: The plan's :class:`~dpsample.plan.Cost`.
        algorithm: The registry name whose compilation the forecast includes
            (:data:`COMPILE_UNITS`); ``None`` counts none.
        compiled: Leave compilation out (a run whose programs are compiled).

    Returns:
        Seconds (a float).

    Examples:
        >>> import jax.numpy as jnp
        >>> from dpsample import Ball, Problem
        >>> from dpsample.cost import estimate_seconds
        >>> from dpsample.plan import Cost
        >>> p = Problem(lambda x, z: jnp.sum((x - z) ** 2), jnp.zeros((4, 2)),
        ...             Ball(1.0, dim=2))
        >>> work = Cost(gradient_evaluations=1000, steps=10)
        >>> first = estimate_seconds(p.spec, work, "dp_sgd")
        >>> first > estimate_seconds(p.spec, work, "dp_sgd", compiled=True) > 0
        True
    """
    t = unit_times(spec)
    compile_seconds = 0.0
    if algorithm is not None and not compiled:
        compile_seconds = (
            COMPILE_UNITS.get(algorithm, DEFAULT_COMPILE_UNITS) * t.compile
        )
    loss = t.grid_loss if algorithm in GRID_LOSS_ALGORITHMS else t.loss
    return compile_seconds + (
        cost.gradient_evaluations * t.gradient
        + cost.loss_evaluations * loss
        + cost.hessian_vector_products * t.hvp
        + cost.steps * t.step
    )


precision.scope_public(globals())
