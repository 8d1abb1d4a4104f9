"""Which net runs: the theorem's default, a spacing, or the caller's net (public).

:func:`resolve_net` turns the options of the mechanisms over nets (``net``,
``spacing``, or Theorem 5.8's default radius for ``epsilon``) into a validated
:class:`~dpsample.nets.GridNet` or :class:`~dpsample.nets.PointNet` of the ball ``K``;
:func:`check_net_in_ball` is the check a caller's net must pass (also used by the
warm-start pipeline). Everything here reads public values only.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from dpsample._src import precision, validation
from dpsample.domains import Ball
from dpsample.nets.ball import ball_center, theorem_radius
from dpsample.nets.grid import GridNet, grid_net
from dpsample.nets.points import PointNet
from dpsample.types import Array, ArrayLike

__all__ = ["check_net_in_ball", "default_net", "resolve_net"]


def check_net_in_ball(net: GridNet | PointNet, ball: Ball) -> None:
    """Check that a (caller's) net lies in the ball ``K`` and has its dimension.

    A :class:`GridNet` must be centred at ``K``'s centre with a radius at most
    ``K``'s; every point of a :class:`PointNet` must be finite and lie in ``K``.

    Raises:
        ValueError: Otherwise (before any private computation).

    Examples:
        >>> import numpy as np
        >>> from dpsample.domains import Ball
        >>> from dpsample.nets import PointNet, check_net_in_ball
        >>> check_net_in_ball(PointNet(np.zeros((2, 1))), Ball(1.0, dim=1))
        >>> check_net_in_ball(PointNet(np.full((2, 1), 2.0)), Ball(1.0, dim=1))
        Traceback (most recent call last):
        ...
        ValueError: every net point must lie in the domain K
    """
    if net.dim != ball.dim:
        raise ValueError(f"net has dimension {net.dim}, the domain has {ball.dim}")
    if isinstance(net, GridNet):
        same_center = np.allclose(
            np.asarray(net.center), ball_center(ball), rtol=0, atol=1e-12
        )
        if not (same_center and net.radius <= ball.radius):
            raise ValueError("the GridNet covers a different ball than the domain")
    elif isinstance(net.points, jax.Array):
        # on the points' own device: two scalars come back, not the (N, d) array;
        # evaluated now even inside a caller's jit (the net is a concrete constant)
        with jax.ensure_compile_time_eval():
            finite, far = _device_extent(net.points, jnp.asarray(ball_center(ball)))
        if not bool(finite):
            raise ValueError(
                "Expected net points to be finite, found NaN or inf values"
            )
        if not float(far) <= ball.radius * (1.0 + 1e-12) + 1e-12:
            raise ValueError("every net point must lie in the domain K")
    else:
        points = np.asarray(net.points, np.float64)
        validation.finite_tree("net points", points)
        dist = np.linalg.norm(points - ball_center(ball), axis=-1)
        if not bool(np.all(dist <= ball.radius * (1.0 + 1e-12) + 1e-12)):
            raise ValueError("every net point must lie in the domain K")


@jax.jit
def _device_extent(points: jax.Array, center: jax.Array) -> tuple[Array, Array]:
    """Whether every point is finite, and the largest distance to ``center`` (f64)."""
    p = points.astype(jnp.float64)
    return jnp.all(jnp.isfinite(p)), jnp.max(jnp.linalg.norm(p - center, axis=-1))


def default_net(ball: Ball, epsilon: float, n: int) -> GridNet:
    """The default net: the :class:`GridNet` with covering radius ``D d / (eps n)``.

    Shared by :func:`~dpsample.nets.exponential_mechanism` and
    :func:`~dpsample.nets.net_minimum`. Depends on public values only (``K``,
    ``eps``, ``n``).

    Raises:
        ValueError: If ``eps n <= d``.

    Examples:
        >>> from dpsample.domains import Ball
        >>> from dpsample.nets.resolve import default_net
        >>> default_net(Ball(1.0, dim=1), 1.0, 50).size()
        27
    """
    radius = theorem_radius(ball, epsilon, n)
    if radius is None:
        raise ValueError(
            f"The default net radius r = D d / (eps n) needs eps * n > d; got "
            f"eps * n = {epsilon * n!r} <= d = {ball.dim}. Pass spacing= or net= "
            "to choose a net explicitly"
        )
    assert ball.dim is not None
    return grid_net(ball, spacing=2.0 * radius / math.sqrt(ball.dim))


def resolve_net(
    ball: Ball,
    n: int,
    *,
    net: GridNet | PointNet | ArrayLike | None,
    spacing: float | None,
    epsilon: float | None,
    max_points: int,
    what: str,
) -> GridNet | PointNet:
    """Validated net from ``net``/``spacing``/the default (public values only).

    Args:
        ball: The ball ``K``.
        n: Number of examples (for the default radius).
        net: A net of ``K`` (or an ``(N, d)`` array of its points), or ``None``.
        spacing: A grid spacing (exclusive with ``net``), or ``None``.
        epsilon: The default net's epsilon, when neither is given.
        max_points: Refuse nets with more points.
        what: The caller's name, for messages.

    Returns:
        The net.

    Raises:
        ValueError: On conflicting or invalid options, a net outside ``K``, or more
            than ``max_points`` points.
    """
    if net is not None and spacing is not None:
        raise ValueError("Pass either net or spacing, not both")
    if net is None:
        if spacing is not None:
            net = grid_net(ball, spacing=spacing)
        elif epsilon is not None:
            net = default_net(ball, epsilon, n)
        else:
            raise ValueError(
                f"{what} needs net=, spacing= or epsilon= (the default net of "
                "exponential_mechanism depends on epsilon)"
            )
    elif not isinstance(net, GridNet | PointNet):
        points = np.asarray(net, np.float64)
        if points.ndim != 2 or points.shape[0] < 1:
            raise ValueError(f"Expected net points of shape (N, d), got {points.shape}")
        net = PointNet(points)
    check_net_in_ball(net, ball)
    if net.size() > max_points:
        raise ValueError(
            f"The net has {net.size()} points, more than max_points={max_points}; "
            "increase spacing (or raise max_points)"
        )
    return net


precision.scope_public(globals())
