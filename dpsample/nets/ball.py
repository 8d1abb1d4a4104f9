"""The ball ``K`` a net covers: checks and Theorem 5.8's net radius (public values).

Shared by the net constructors (:mod:`~dpsample.nets.grid`,
:mod:`~dpsample.nets.points`) and the mechanisms over nets.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpsample._src import precision
from dpsample.domains import Ball

__all__ = ["ball_center", "problem_ball", "require_ball", "theorem_radius"]


def ball_center(ball: Ball) -> np.ndarray:
    """The ball's centre as a host NumPy array (safe inside a caller's trace).

    Examples:
        >>> from dpsample.domains import Ball
        >>> from dpsample.nets.ball import ball_center
        >>> ball_center(Ball(1.0, dim=2)).tolist()
        [0.0, 0.0]
    """
    if ball.center is None:
        assert ball.dim is not None
        return np.zeros(ball.dim, np.float64)
    return np.asarray(ball.center, np.float64)


def require_ball(domain: Any, what: str) -> Ball:
    """``domain`` if it is a :class:`~dpsample.domains.Ball` of known dimension.

    Raises:
        ValueError: Naming ``what`` needs it, otherwise.

    Examples:
        >>> from dpsample.domains import Ball, Unconstrained
        >>> from dpsample.nets.ball import require_ball
        >>> require_ball(Ball(1.0, dim=1), "grid_net").radius
        1.0
        >>> require_ball(Unconstrained(1), "grid_net")
        Traceback (most recent call last):
        ...
        ValueError: grid_net needs a Ball domain (a bounded K with a centre), got ...
    """
    if not isinstance(domain, Ball):
        raise ValueError(
            f"{what} needs a Ball domain (a bounded K with a centre), got "
            f"{type(domain).__name__}"
        )
    if domain.dim is None:
        raise ValueError(
            f"{what} needs the dimension of the ball; pass Ball(..., dim=)"
        )
    return domain


def problem_ball(problem: Any, what: str) -> Ball:
    """The Ball domain of a problem or spec, with its dimension filled in (public).

    Examples:
        >>> import jax.numpy as jnp
        >>> from dpsample import Ball, Problem
        >>> from dpsample.nets.ball import problem_ball
        >>> p = Problem(lambda x, z: jnp.abs(x[0] - z), jnp.zeros(3), Ball(1.0),
        ...             dim=1)
        >>> problem_ball(p.spec, "exponential_mechanism").dim
        1
    """
    domain = problem.domain
    if isinstance(domain, Ball) and domain.dim is None:
        domain = domain.with_dim(problem.dim)
    ball = require_ball(domain, what)
    if ball.dim != problem.dim:
        raise ValueError(
            f"domain dimension {ball.dim} != problem dimension {problem.dim}"
        )
    return ball


def theorem_radius(ball: Ball, epsilon: float, n: int) -> float | None:
    """Theorem 5.8's net radius ``r = D d / (eps n)``, or ``None`` if ``eps n <= d``.

    Examples:
        >>> from dpsample.domains import Ball
        >>> from dpsample.nets.ball import theorem_radius
        >>> theorem_radius(Ball(1.0, dim=2), 1.0, 100)
        0.04
        >>> theorem_radius(Ball(1.0, dim=2), 1.0, 2) is None
        True
    """
    d = ball.dim
    assert d is not None
    return ball.diameter * d / (epsilon * n) if epsilon * n > d else None


precision.scope_public(globals())
