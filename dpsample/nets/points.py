"""Explicit nets: a data-independent set of points of ``K`` (e.g. uniform draws).

:class:`PointNet` wraps the points; :func:`random_net` draws uniform points with a
public key and :func:`random_net_size` gives a size that makes them an ``r``-net of
the ball with a stated probability.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from dpsample._src import precision, validation
from dpsample.domains import Ball
from dpsample.nets.ball import require_ball
from dpsample.types import Array, ArrayLike, PRNGKey

__all__ = ["PointNet", "random_net", "random_net_size"]


class PointNet(NamedTuple):
    """An explicit, data-independent set of points of ``K`` used as a net.

    Attributes:
        points: Array of shape ``(N, d)``; every point must lie in ``K``.
        covering_radius: A public covering radius, or ``None`` when unknown (e.g. a
            random net, which is an ``r``-net only with some probability; see
            :func:`random_net_size`).

    Examples:
        >>> import jax.numpy as jnp
        >>> import dpsample
        >>> from dpsample.nets import PointNet
        >>> net = PointNet(jnp.zeros((3, 2)))
        >>> net.size(), net.num_candidates, net.dim
        (3, 3, 2)
    """

    points: Array | np.ndarray
    covering_radius: float | None = None

    @property
    def dim(self) -> int:
        """Dimension ``d``."""
        return int(self.points.shape[-1])

    @property
    def num_candidates(self) -> int:
        """Number of points ``N``."""
        return int(self.points.shape[0])

    def size(self) -> int:
        """Number of points ``N``."""
        return self.num_candidates

    def chunk(self, index: ArrayLike, chunk_size: int) -> tuple[Array, Array]:
        """Points ``[i c, (i + 1) c)`` (clamped) and their validity mask.

        Args:
            index: Chunk number ``i`` (may be traced).
            chunk_size: Chunk length ``c`` (static).

        Returns:
            ``(points (c, d), mask (c,))``; rows past ``N`` repeat a valid point and
            are masked out.
        """
        flat = jnp.asarray(index, jnp.int64) * chunk_size
        flat = flat + jnp.arange(chunk_size, dtype=jnp.int64)
        pts = jnp.asarray(self.points, jnp.float64)
        mask = flat < self.num_candidates
        return pts[jnp.clip(flat, 0, self.num_candidates - 1)], mask


def random_net(rng_key: PRNGKey, ball: Ball, num_points: int) -> PointNet:
    """``num_points`` i.i.d. uniform points of ``ball`` (a random net).

    The key must be public and independent of the data (the net is part of the
    mechanism's public description). Whether the points form an ``r``-net is itself
    random; :func:`random_net_size` gives a size for which this holds with probability
    ``>= 1 - failure_prob``.

    Args:
        rng_key: A PRNG key, independent of the data (consumed).
        ball: The ball ``K`` (dimension known).
        num_points: Number of points.

    Returns:
        A :class:`PointNet` with ``covering_radius=None``.

    Examples:
        >>> import jax
        >>> import dpsample
        >>> from dpsample.domains import Ball
        >>> from dpsample.nets import random_net
        >>> net = random_net(jax.random.key(0), Ball(1.0, dim=2), 50)
        >>> net.points.shape
        (50, 2)
    """
    ball = require_ball(ball, "random_net")
    num = validation.positive_int("num_points", num_points)
    return PointNet(ball.sample_uniform(rng_key, num), None)


def random_net_size(ball: Ball, covering_radius: float, failure_prob: float) -> int:
    r"""Number of uniform points that make an ``r``-net of ``ball`` w.p. ``1 - beta``.

    Bound proved here (``K = B(c, R)``, ``D = 2R``, ``r < D``):

    .. math::

        N = \Big\lceil \Big(\frac{2D}{r}\Big)^d
            \Big( d \log\big(1 + \tfrac{2D}{r}\big) + \log\tfrac1\beta \Big)
            \Big\rceil .

    Proof. Let ``C`` be a maximal ``r/2``-separated subset of ``K``: it is an
    ``r/2``-cover of ``K`` and, since the balls of radius ``r/4`` around its points
    are disjoint and lie in ``B(c, R + r/4)``, ``|C| <= (1 + 4R/r)^d = (1 + 2D/r)^d``.
    If every ball ``B(y, r/2)``, ``y in C``, contains a sample, then every ``x in K``
    is within ``r/2 + r/2 = r`` of a sample. For ``y in K`` and ``rho = r/2 <= R``,
    the ball ``B(y', rho/2)`` with ``y'`` the point at distance ``min(rho/2, ||y-c||)``
    from ``y`` towards ``c`` lies in ``B(y, rho) ∩ K``, so a uniform point of ``K``
    falls in ``B(y, r/2)`` with probability ``p >= (rho/(2R))^d = (r/(2D))^d``. A union
    bound gives failure probability ``<= |C| (1 - p)^N <= |C| e^{-pN} <= beta`` for the
    ``N`` above. (If ``r >= D`` one point suffices, as any point is within ``D`` of all
    of ``K``; the formula is used for ``r < D``, where ``r/2 < R`` holds.)

    The bound is loose by roughly ``2^d d log(D/r)`` against a grid; prefer
    :func:`grid_net` for small ``d``.

    Args:
        ball: The ball ``K``.
        covering_radius: ``r > 0``.
        failure_prob: ``beta`` in ``(0, 1)``.

    Returns:
        ``N`` (a Python int).

    Examples:
        >>> import dpsample
        >>> from dpsample.domains import Ball
        >>> from dpsample.nets import random_net_size
        >>> random_net_size(Ball(1.0, dim=1), 0.5, 0.05)
        42
    """
    ball = require_ball(ball, "random_net_size")
    r = validation.positive("covering_radius", covering_radius)
    beta = validation.delta_in_open_unit(failure_prob, "failure_prob")
    d, diam = ball.dim, ball.diameter
    assert d is not None
    if r >= diam:
        return 1
    ratio = 2.0 * diam / r
    log_n = d * math.log(ratio) + math.log(d * math.log1p(ratio) + math.log(1.0 / beta))
    if log_n > math.log(2.0**62):
        raise ValueError(
            f"random_net_size for r={r!r} in dimension {d} exceeds 2^62 points"
        )
    return math.ceil(ratio**d * (d * math.log1p(ratio) + math.log(1.0 / beta)))


precision.scope_public(globals())
