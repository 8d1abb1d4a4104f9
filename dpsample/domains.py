"""Domains K over which a :class:`~dpsample.problem.Problem` is optimised.

A domain is public: its shape (radius, centre, dimension) must never be chosen from the
private data. Two domains are provided:

* :class:`Ball`: the closed Euclidean ball ``{x : ||x - c|| <= R}``, with projection,
  diameter and exact uniform sampling.
* :class:`Unconstrained`: all of ``R^d`` (infinite diameter, identity projection),
  used by stationary-point finders that need no constraint.

Both are immutable; methods that take points are jittable and accept either one point of
shape ``(d,)`` or a batch of shape ``(..., d)``.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from dpsample._src import precision, validation
from dpsample.types import Array, ArrayLike, PRNGKey

__all__ = [
    "Ball",
    "Unconstrained",
    "Domain",
    "projection_operands",
    "project_with",
]


def _check_dim(dim: int | None) -> int | None:
    if dim is None:
        return None
    return validation.positive_int("dim", dim)


def _require_dim(dim: int | None, what: str) -> int:
    if dim is None:
        raise ValueError(
            f"{what} needs the dimension of the domain; pass dim=... or call "
            "with_dim(d) (a Problem does this for you)"
        )
    return dim


@dataclasses.dataclass(frozen=True, eq=False)
class Ball:
    """The closed Euclidean ball ``K = {x in R^d : ||x - center||_2 <= radius}``.

    Args:
        radius: Radius ``R > 0`` (finite). A public constant.
        center: Centre ``c`` (a finite vector of shape ``(d,)``), or ``None`` for the
            origin. Stored as a float64 JAX array.
        dim: Dimension ``d``. Inferred from ``center`` when given; with
            ``center=None`` it may stay ``None`` until a Problem supplies it
            (see :meth:`with_dim`).

    Raises:
        ValueError: If the radius is not positive and finite, the centre is not a
            finite vector, or ``dim`` disagrees with ``center``.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> import dpsample
        >>> from dpsample.domains import Ball
        >>> ball = Ball(2.0, dim=3)
        >>> ball.diameter
        4.0
        >>> [round(v, 6) for v in ball.project(jnp.array([3.0, 4.0, 0.0])).tolist()]
        [1.2, 1.6, 0.0]
        >>> pts = ball.sample_uniform(jax.random.key(0), 5)
        >>> pts.shape, bool(ball.contains(pts).all())
        ((5, 3), True)
    """

    radius: float
    center: Array | None = None
    dim: int | None = dataclasses.field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        radius = validation.positive("radius", self.radius)
        object.__setattr__(self, "radius", radius)
        dim = _check_dim(self.dim)
        center = self.center
        if center is not None:
            center_np = np.asarray(center, dtype=np.float64)
            if center_np.ndim != 1 or center_np.shape[0] < 1:
                raise ValueError(
                    "Expected center to be a vector of shape (d,), got shape "
                    f"{center_np.shape}"
                )
            if not np.all(np.isfinite(center_np)):
                raise ValueError("Expected center to be finite, found NaN or inf")
            if dim is not None and dim != center_np.shape[0]:
                raise ValueError(
                    f"Expected dim={dim} to match center of dimension "
                    f"{center_np.shape[0]}"
                )
            dim = center_np.shape[0]
            center = jnp.asarray(center_np, dtype=jnp.float64)
        object.__setattr__(self, "center", center)
        object.__setattr__(self, "dim", dim)

    def __repr__(self) -> str:
        center = None if self.center is None else np.asarray(self.center).tolist()
        return f"Ball(radius={self.radius!r}, center={center!r}, dim={self.dim!r})"

    @property
    def bounded(self) -> bool:
        """Whether the domain has finite diameter (always ``True`` for a ball)."""
        return True

    @property
    def diameter(self) -> float:
        """Diameter ``D = 2 R``."""
        return 2.0 * self.radius

    @property
    def center_point(self) -> Array:
        """The centre as an array of shape ``(d,)`` (zeros when ``center is None``)."""
        if self.center is not None:
            return self.center
        return jnp.zeros((_require_dim(self.dim, "center_point"),), jnp.float64)

    @property
    def max_norm(self) -> float:
        """``sup_{x in K} ||x|| = ||c|| + R``: the radius to use for loss constants."""
        if self.center is None:
            return self.radius
        return float(np.linalg.norm(np.asarray(self.center))) + self.radius

    def with_dim(self, dim: int) -> Ball:
        """Return this ball with its dimension set to ``dim``.

        Raises:
            ValueError: If the ball already has a different dimension.
        """
        dim = validation.positive_int("dim", dim)
        if self.dim == dim:
            return self
        if self.dim is not None:
            raise ValueError(f"Ball has dimension {self.dim}, cannot set dim={dim}")
        return Ball(self.radius, self.center, dim=dim)

    def _offset(self, x: Array) -> Array:
        return x if self.center is None else x - self.center

    def contains(self, x: ArrayLike, atol: float = 1e-9) -> Array:
        """Whether ``||x - c|| <= R + atol`` (over the last axis of ``x``).

        Args:
            x: A point ``(d,)`` or a batch ``(..., d)``.
            atol: Absolute slack on the radius.

        Returns:
            A boolean array of shape ``x.shape[:-1]``.
        """
        x = jnp.asarray(x, jnp.float64)
        return jnp.linalg.norm(self._offset(x), axis=-1) <= self.radius + atol

    def project(self, x: ArrayLike) -> Array:
        r"""Euclidean projection onto the ball (jittable; vmappable; batch-aware).

        .. math:: \Pi_K(x) = c + (x - c) \min(1, R / \|x - c\|).

        Args:
            x: A point ``(d,)`` or a batch ``(..., d)``.

        Returns:
            The projected point(s), same shape as ``x``.
        """
        return project_with(x, {"radius": self.radius, "center": self.center})

    def sample_uniform(self, rng_key: PRNGKey, num: int) -> Array:
        """Draw ``num`` points exactly uniformly from the ball.

        A Gaussian direction ``g / ||g||`` times the radius ``R U^{1/d}`` with ``U``
        uniform on ``[0, 1]`` (so ``||x - c|| / R`` has CDF ``t^d``).

        Args:
            rng_key: A JAX PRNG key.
            num: Number of points (static).

        Returns:
            An array of shape ``(num, d)``.
        """
        dim = _require_dim(self.dim, "sample_uniform")
        dir_key, rad_key = jax.random.split(rng_key)
        g = jax.random.normal(dir_key, (num, dim), jnp.float64)
        norm = jnp.linalg.norm(g, axis=-1, keepdims=True)
        u = jax.random.uniform(rad_key, (num, 1), jnp.float64)
        pts = g / norm * (self.radius * u ** (1.0 / dim))
        return pts if self.center is None else pts + self.center


@dataclasses.dataclass(frozen=True)
class Unconstrained:
    """All of ``R^d``: infinite diameter, identity projection.

    Args:
        dim: Dimension ``d`` (or ``None`` until a Problem supplies it).

    Examples:
        >>> from dpsample.domains import Unconstrained
        >>> dom = Unconstrained(2)
        >>> dom.diameter, dom.bounded
        (inf, False)
    """

    dim: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "dim", _check_dim(self.dim))

    radius = math.inf

    @property
    def bounded(self) -> bool:
        """Whether the domain has finite diameter (always ``False`` here)."""
        return False

    @property
    def diameter(self) -> float:
        """Diameter, ``inf``."""
        return math.inf

    @property
    def center_point(self) -> Array:
        """The origin, shape ``(d,)``: the reference point used by Problem checks."""
        return jnp.zeros((_require_dim(self.dim, "center_point"),), jnp.float64)

    @property
    def max_norm(self) -> float:
        """``sup_{x in K} ||x||``, ``inf``."""
        return math.inf

    def with_dim(self, dim: int) -> Unconstrained:
        """Return this domain with its dimension set to ``dim``."""
        dim = validation.positive_int("dim", dim)
        if self.dim == dim:
            return self
        if self.dim is not None:
            raise ValueError(
                f"Unconstrained has dimension {self.dim}, cannot set dim={dim}"
            )
        return Unconstrained(dim)

    def contains(self, x: ArrayLike, atol: float = 0.0) -> Array:
        """Whether ``x`` is finite (every finite point lies in ``R^d``)."""
        del atol
        return jnp.all(jnp.isfinite(jnp.asarray(x, jnp.float64)), axis=-1)

    def project(self, x: ArrayLike) -> Array:
        """The identity."""
        return jnp.asarray(x, jnp.float64)


Domain = Ball | Unconstrained
"""Type of the domains a Problem accepts."""


def projection_operands(domain: Domain, project: bool = True) -> dict[str, Any] | None:
    """The projection onto ``domain`` as traced operands, for jitted loops.

    ``None`` (the identity) for :class:`Unconstrained` or ``project=False``; for a
    :class:`Ball`, ``{"radius": R, "center": c}`` (``c`` may be ``None``). Passing
    these to a jitted core as arguments, rather than closing over the ball, keeps
    the compilation keyed on structure only: another ball of the same dimension
    reuses it. Apply them with :func:`project_with`.

    Args:
        domain: The domain.
        project: Whether the loop projects at all.

    Returns:
        The operands, or ``None``.

    Examples:
        >>> import jax.numpy as jnp
        >>> from dpsample.domains import Ball, project_with, projection_operands
        >>> ops = projection_operands(Ball(1.0, dim=2))
        >>> project_with(jnp.array([3.0, 4.0]), ops).tolist()
        [0.6000000000000001, 0.8]
        >>> projection_operands(Ball(1.0, dim=2), project=False) is None
        True
    """
    if project and isinstance(domain, Ball):
        return {"radius": jnp.float64(domain.radius), "center": domain.center}
    return None


def project_with(x: ArrayLike, operands: dict[str, Any] | None) -> Array:
    r"""Project ``x`` with the operands of :func:`projection_operands` (jittable).

    :math:`c + (x - c)\min(1, R/\|x - c\|)` over the last axis, with the squared
    norm (so the gradient stays finite at the centre); ``operands=None`` is the
    identity. :meth:`Ball.project` is this function, so a loop that projects with
    traced operands computes bit for bit the iterates of the closed-over ball.

    Args:
        x: A point ``(d,)`` or a batch ``(..., d)``.
        operands: ``{"radius": R, "center": c or None}`` or ``None``.

    Returns:
        The projected point(s), float64, same shape as ``x``.
    """
    x = jnp.asarray(x, jnp.float64)
    if operands is None:
        return x
    radius, center = operands["radius"], operands["center"]
    offset = x if center is None else x - center
    sq = jnp.sum(offset**2, axis=-1, keepdims=True)
    outside = sq > radius**2
    safe = jnp.where(outside, sq, 1.0)
    scaled = jnp.where(outside, offset * (radius / jnp.sqrt(safe)), offset)
    return scaled if center is None else scaled + center


#: Rounding slack of :func:`require_member`: a point at distance at most
#: ``R (1 + MEMBER_RTOL) + MEMBER_ATOL`` from the centre of a ball of radius ``R`` is
#: a point of the ball up to rounding (a projected iterate, a net point).
MEMBER_RTOL = 1e-9
MEMBER_ATOL = 1e-12


def require_member(domain: Domain, x: ArrayLike, name: str = "x0") -> Array:
    """``x`` (a finite point of the right dimension) as a point of ``domain``.

    Used on public start points before any private computation (the declared
    constants hold on the domain only). A point of a :class:`Ball` is returned
    unchanged (bit for bit); a point within rounding of it (see
    :data:`MEMBER_RTOL`) is projected onto it; a point farther out is refused. On
    :class:`Unconstrained` every finite point is a member.

    Raises:
        ValueError: If ``x`` lies outside the ball.
    """
    arr = jnp.asarray(x, jnp.float64)
    if not isinstance(domain, Ball):
        return arr
    offset = np.asarray(arr) - (0.0 if domain.center is None else domain.center)
    dist = float(np.linalg.norm(offset))
    radius = float(domain.radius)
    if not dist <= radius * (1.0 + MEMBER_RTOL) + MEMBER_ATOL:
        raise ValueError(
            f"Expected {name} in the domain K = {domain!r} (||{name} - center|| = "
            f"{dist:.6g} > radius {radius:.6g}): the declared constants hold on K "
            "only, so a start outside K has no sensitivity bound; start inside K "
            "(e.g. domain.project(x0)) or declare the problem on a larger domain"
        )
    if dist > radius:  # within rounding of K: onto K
        arr = domain.project(arr)
    return arr


precision.scope_public(globals())
