"""The **non-private** minimum of the empirical risk over a net (a diagnostic).

Never release its output: it reads the private data without any guarantee. It is
the reference ``min_P F_D`` against which the exponential mechanism's excess risk is
compared (Theorem 5.8).
"""

from __future__ import annotations

from typing import Any

from dpsample import progress
from dpsample._src import precision, validation
from dpsample.nets.ball import problem_ball
from dpsample.nets.grid import GridNet
from dpsample.nets.points import PointNet
from dpsample.nets.resolve import resolve_net
from dpsample.nets.stream import jit_net, resolve_chunk_size, stream_min
from dpsample.types import Array, ArrayLike

__all__ = ["net_minimum"]


def net_minimum(
    problem: Any,
    net: GridNet | PointNet | ArrayLike | None = None,
    *,
    spacing: float | None = None,
    epsilon: float | None = None,
    chunk_size: int | None = None,
    max_points: int = 10**8,
) -> tuple[Array, float]:
    """**Non-private** minimum of the empirical risk ``F_D`` over a net (diagnostic).

    .. warning::

        **Not differentially private.** This reads the private data and returns its
        exact minimiser over the net: it is a diagnostic for the excess empirical
        risk of :func:`~dpsample.nets.exponential_mechanism` (compare ``F_D(out) -
        min_P F_D`` with the Theorem 5.8 bound). Its outputs must never be released,
        published or fed into anything that is.

    Streams the net in the same chunks as
    :func:`~dpsample.nets.exponential_mechanism` (one jitted ``lax.fori_loop``
    carrying the running minimum and its flat index), so memory is
    ``O(chunk_size * (n + d))`` whatever the net size. Ties go to the smallest flat
    index; NaN risks are skipped.

    Args:
        problem: A :class:`dpsample.problem.Problem` whose domain is a
            :class:`~dpsample.domains.Ball`.
        net: A :class:`~dpsample.nets.GridNet` of the same ball, a
            :class:`~dpsample.nets.PointNet` or an array of points ``(N, d)`` in
            ``K``.
        spacing: Lattice spacing of a grid net (exclusive with ``net``).
        epsilon: Use :func:`~dpsample.nets.exponential_mechanism`'s default net for
            this ``eps`` (the :class:`~dpsample.nets.GridNet` of covering radius
            ``D d / (eps n)``), when neither ``net`` nor ``spacing`` is given.
        chunk_size: Points per chunk, a positive multiple of
            :data:`~dpsample.nets.stream.NOISE_BLOCK`; default as in
            :func:`~dpsample.nets.exponential_mechanism`.
        max_points: Refuse nets with more than this many points.

    Returns:
        ``(point, risk)``: the minimising net point (float64, shape ``(d,)``) and
        ``min_P F_D`` as a Python float (``inf`` if every risk is NaN).

    Raises:
        ValueError: On an invalid net, spacing, epsilon or chunk size, a non-Ball
            domain, or if none of ``net``, ``spacing``, ``epsilon`` is given.

    Examples:
        >>> import jax.numpy as jnp
        >>> import dpsample
        >>> from dpsample.domains import Ball
        >>> from dpsample.problem import Problem
        >>> from dpsample.nets import net_minimum
        >>> data = {"x": jnp.ones((50, 1)), "y": jnp.ones(50)}
        >>> loss = lambda x, z: -z["y"] * jnp.dot(z["x"], x)
        >>> problem = Problem(loss, data, Ball(1.0, dim=1), lipschitz=1.0)
        >>> point, risk = net_minimum(problem, spacing=0.25)  # NOT private
        >>> point.tolist(), risk
        ([1.0], -1.0)
    """
    if epsilon is not None:
        epsilon = validation.positive("epsilon", epsilon)
    max_points = validation.positive_int("max_points", max_points)
    ball = problem_ball(problem, "net_minimum")
    n = int(problem.n)
    net = resolve_net(
        ball,
        n,
        net=net,
        spacing=spacing,
        epsilon=epsilon,
        max_points=max_points,
        what="net_minimum",
    )
    chunk_size = resolve_chunk_size(chunk_size, n, net.num_candidates)
    point, risk, _ = stream_min(
        problem.data,
        jit_net(net),
        loss_fn=problem.loss_fn,
        chunk_size=chunk_size,
        num_chunks=-(-net.num_candidates // chunk_size),
        show_progress=progress.is_enabled(),
    )
    return point, float(risk)


precision.scope_public(globals())
