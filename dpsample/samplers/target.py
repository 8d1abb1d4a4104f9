"""The regularised Gibbs target shared by every sampler (seed 000, Sec. 5.1)."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from dpsample._src import precision, validation
from dpsample.domains import Ball, require_member
from dpsample.problem import Problem
from dpsample.types import Array, ArrayLike

__all__ = ["GibbsTarget", "check_position"]


class GibbsTarget(NamedTuple):
    r"""The target ``pi(x) ∝ exp(-beta (F_D(x) + mu/2 ||x||^2))`` on the ball ``K``.

    .. math::
        \pi(x) \propto \exp\big(-\beta (F_D(x) + \tfrac{\mu}{2}\|x\|^2)\big)
        \,\mathbf{1}_K(x).

    The potential ``beta (F_D + mu/2 ||x||^2)`` is ``beta mu``-strongly convex in its
    regulariser part (not ``mu``: spec 000 erratum E26).

    Attributes:
        problem: the :class:`~dpsample.problem.Problem` (its domain must be a Ball).
        beta: inverse temperature, > 0.
        mu: regularisation strength, >= 0.

    Examples:
        >>> import jax.numpy as jnp
        >>> import dpsample
        >>> from dpsample import Ball, Problem
        >>> from dpsample.samplers.target import GibbsTarget
        >>> data = {"x": jnp.ones((4, 1)), "y": jnp.ones(4)}
        >>> problem = Problem(lambda x, z: jnp.abs(x[0] - z["y"]), data,
        ...                   Ball(2.0, dim=1), lipschitz=1.0)
        >>> target = GibbsTarget.create(problem, beta=3.0, mu=0.5)
        >>> float(target.potential(jnp.array([1.0])))
        0.75
        >>> float(target.logdensity(jnp.array([5.0])))
        -inf
    """

    problem: Problem
    beta: float
    mu: float

    @classmethod
    def create(cls, problem: Problem, *, beta: float, mu: float) -> GibbsTarget:
        """Validate ``beta > 0``, ``mu >= 0`` and a Ball domain, then build."""
        if not isinstance(problem, Problem):
            raise TypeError(f"Expected a Problem, got {type(problem).__name__}")
        if not isinstance(problem.domain, Ball):
            raise ValueError("the Gibbs target needs a Ball domain K")
        return cls(
            problem,
            validation.positive("beta", beta),
            validation.nonnegative("mu", mu),
        )

    def potential(self, x: ArrayLike) -> Array:
        """``beta (F_D(x) + mu/2 ||x||^2)`` (finite everywhere; K is not applied)."""
        x = jnp.asarray(x, jnp.float64)
        return self.beta * (
            self.problem.empirical_risk(x) + 0.5 * self.mu * jnp.sum(x**2)
        )

    def logdensity(self, x: ArrayLike) -> Array:
        """Unnormalised log-density: ``-potential(x)`` on K, ``-inf`` outside."""
        x = jnp.asarray(x, jnp.float64)
        inside = self.problem.domain.contains(x, atol=0.0)
        return jnp.where(inside, -self.potential(x), -jnp.inf)


def check_position(
    target: GibbsTarget, position: ArrayLike, name: str = "position"
) -> Array:
    """A sampler's start point: shape ``(d,)`` and, when concrete, a point of ``K``.

    The samplers' guarantees (the Gibbs target's, the Langevin trajectory's) are
    stated for chains on ``K`` started at a data-independent point of ``K``; a
    concrete position that is not finite or lies outside ``K`` is refused before
    any private computation (within rounding of ``K`` it is projected onto ``K``,
    :func:`~dpsample.domains.require_member`). A traced position (under ``vmap`` or
    ``jit``) cannot be inspected and is the caller's responsibility.

    Raises:
        ValueError: Wrong shape, or a concrete position that is not finite or not
            in ``K``.

    Examples:
        >>> import jax.numpy as jnp
        >>> from dpsample import Ball, Problem
        >>> from dpsample.samplers.target import GibbsTarget, check_position
        >>> p = Problem(lambda x, z: jnp.abs(x[0] - z), jnp.zeros(4),
        ...             Ball(1.0, dim=1), lipschitz=1.0)
        >>> t = GibbsTarget.create(p, beta=1.0, mu=0.0)
        >>> check_position(t, jnp.array([0.5])).tolist()
        [0.5]
    """
    x = jnp.asarray(position, jnp.float64)
    dim = target.problem.dim
    if x.shape != (dim,):
        raise ValueError(f"Expected {name} of shape ({dim},), got shape {x.shape}")
    if isinstance(x, jax.core.Tracer):
        return x
    if not np.all(np.isfinite(np.asarray(x))):
        raise ValueError(f"Expected {name} to be finite, found NaN or inf values")
    return require_member(target.problem.domain, x, name)


precision.scope_public(globals())
