r"""The clips that enforce the net mechanism's score sensitivity, and its routes.

The exponential mechanism of :mod:`dpsample.nets.mechanism` scores net points by
``-F_D``; its sensitivity ``osc/n`` rests on a bound ``osc`` of ``osc_K(f(., z) -
f(., z'))``. By default a clip enforces it whatever the loss and data:
:class:`ConeClippedLoss` clips each loss into the cone of slope ``G`` around the
centre (the ``2 G D`` route, its anchors from :func:`cone_clip_data`) and
:class:`RangeClippedLoss` into the declared interval ``[loss_floor, loss_floor +
B]`` (the ``2 B`` route). :func:`sensitivity_route` picks the route from the public
constants (or, with the opt-in ``enforce_sensitivity=False``, states the tightest
declared bound as an assumption).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from dpsample._src import precision, validation
from dpsample.domains import Ball
from dpsample.errors import MissingConstantError
from dpsample.nets.ball import ball_center
from dpsample.problem import ProblemSpec
from dpsample.types import Array

__all__ = [
    "CLIP_NOTES",
    "SENSITIVITY_ROUTES",
    "ConeClippedLoss",
    "RangeClippedLoss",
    "clipped_loss",
    "cone_clip_data",
    "run_clipped",
    "sensitivity_route",
]


@dataclasses.dataclass(frozen=True)
class ConeClippedLoss:
    r"""A per-example loss clipped into the cone of slope ``G`` around the centre.

    ``f~(p, z) = clip(f(p, z), a_z - w(p), a_z + w(p))`` with ``w(p) = G min(||p -
    c||, R)`` and the anchor ``a_z = f(c, z)`` (a NaN value becomes ``a_z``, a
    non-finite anchor ``0``). It is called on examples ``{"example": z, "anchor":
    a_z}`` (:func:`cone_clip_data`). Each ``f~(., z)`` lies in ``a_z + [-G R, G R]``,
    so ``osc(f~(., z) - f~(., z')) <= 4 G R = 2 G D`` for *any* loss and data: the
    Lipschitz route of ``utility_oscillation`` is enforced. A ``G``-Lipschitz loss
    is unchanged on ``K`` (``|f(p, z) - f(c, z)| <= G ||p - c||``). Hashable (a
    static argument of the compiled scan).

    Examples:
        >>> import jax.numpy as jnp
        >>> from dpsample.nets.clipped import ConeClippedLoss, cone_clip_data
        >>> loss = ConeClippedLoss(lambda x, z: 100.0 * z * x[0], 1.0, (0.0,), 1.0)
        >>> data = cone_clip_data(loss, jnp.array([1.0]))
        >>> example = {"example": data["example"][0], "anchor": data["anchor"][0]}
        >>> float(loss(jnp.array([0.5]), example))  # 50 clipped to G |p - c| = 0.5
        0.5
    """

    loss_fn: Callable[..., Any]
    lipschitz: float
    center: tuple[float, ...]
    radius: float

    def __call__(self, x: Array, example: Any) -> Array:
        """``f~(x, z)`` for ``example = {"example": z, "anchor": a_z}``."""
        f = self.loss_fn(x, example["example"])
        a = example["anchor"]
        c = jnp.asarray(self.center, jnp.float64)
        w = self.lipschitz * jnp.minimum(jnp.linalg.norm(x - c), self.radius)
        return jnp.where(jnp.isnan(f), a, jnp.clip(f, a - w, a + w))


@dataclasses.dataclass(frozen=True)
class RangeClippedLoss:
    r"""A per-example loss clipped into the declared interval ``[a, a + B]``.

    ``f~(p, z) = clip(f(p, z), a, a + B)`` with ``a`` the declared ``loss_floor`` and
    ``B`` the declared ``loss_range`` (a NaN value becomes ``a``). Every ``f~(., z)``
    lies in ``[a, a + B]``, so ``f~(p, z) - f~(p, z')`` lies in ``[-B, B]`` and
    ``osc(f~(., z) - f~(., z')) <= 2 B`` for *any* loss and data: the range route of
    ``utility_oscillation`` is enforced. A loss whose values lie in the declared
    interval on ``K`` is unchanged there. Hashable (a static argument of the compiled
    scan); it needs no extra data.

    Examples:
        >>> import jax.numpy as jnp
        >>> from dpsample.nets.clipped import RangeClippedLoss
        >>> loss = RangeClippedLoss(lambda x, z: 100.0 * z * x[0], -0.5, 1.0)
        >>> float(loss(jnp.array([0.5]), jnp.array(1.0)))  # 50 clipped to -0.5 + 1
        0.5
        >>> float(loss(jnp.array([0.5]), jnp.array(jnp.nan)))  # NaN to the floor
        -0.5
    """

    loss_fn: Callable[..., Any]
    floor: float
    loss_range: float

    def __call__(self, x: Array, example: Any) -> Array:
        """``f~(x, z)``: the loss clipped into ``[floor, floor + loss_range]``."""
        f = self.loss_fn(x, example)
        lo = jnp.asarray(self.floor, jnp.float64)
        hi = jnp.asarray(self.floor + self.loss_range, jnp.float64)
        return jnp.where(jnp.isnan(f), lo, jnp.clip(f, lo, hi))


def cone_clip_data(loss: ConeClippedLoss, data: Any) -> dict[str, Any]:
    """The examples with their anchors ``f(c, z)`` (non-finite anchors set to 0)."""
    c = jnp.asarray(loss.center, jnp.float64)
    a = jax.vmap(loss.loss_fn, in_axes=(None, 0))(c, data)
    return {"example": data, "anchor": jnp.where(jnp.isfinite(a), a, 0.0)}


def sensitivity_route(
    spec: ProblemSpec, enforce: bool
) -> tuple[float, str, str | None]:
    """``(osc, clip, assumption)`` of the score sensitivity (public inputs only).

    ``clip`` is the clip that runs: ``"cone"`` (:class:`ConeClippedLoss`),
    ``"range"`` (:class:`RangeClippedLoss`) or ``"none"``. Enforced (the default),
    ``osc`` is the tightest bound a clip enforces, ``2 G D`` by the cone clip or
    ``2 B`` by the range clip when ``loss_floor`` locates the interval, and the
    guarantee is unconditional; a tighter bound that no clip enforces (a range
    without a floor, or a declared oscillation of differences, a property of
    pairs) is not used, and a problem with no enforceable bound is refused. With
    ``enforce=False`` (the opt-in) ``osc`` is ``utility_oscillation()``, the
    tightest declared bound, stated as an assumption.

    Raises:
        MissingConstantError: If ``enforce`` and neither ``G`` (on the bounded
            ``K``) nor ``loss_range`` with ``loss_floor`` is declared.
    """
    tightest = validation.positive("utility_oscillation", spec.utility_oscillation())
    g, diameter = spec.lipschitz, spec.domain.diameter
    b, floor = spec.loss_range, spec.loss_floor
    routes = {}
    if g is not None:
        routes["cone"] = 2.0 * g * diameter
    if b is not None and floor is not None:
        routes["range"] = 2.0 * b
    if enforce:
        if not routes:
            raise MissingConstantError(
                "the net exponential mechanism enforces its score sensitivity by "
                "clipping each loss, which needs a declared lipschitz G (the cone "
                "route 2 G D) or loss_range with loss_floor (the range route 2 B); "
                f"only an unenforceable bound {tightest:.6g} is declared (a range "
                "without a floor, or an oscillation). Declare one of them, or pass "
                "enforce_sensitivity=False to run on the declared bound (the "
                "guarantee is then conditional on it)"
            )
        clip = min(routes, key=routes.__getitem__)
        return routes[clip], clip, None
    if tightest >= routes.get("cone", math.inf):
        part = (
            f"every f(., z) is G-Lipschitz on K with the declared lipschitz G = "
            f"{g:.6g}, so osc_K(f(., z) - f(., z')) <= 2 G D"
        )
    elif b is not None and tightest >= 2.0 * b:
        located = (
            f"[{floor:.6g}, {floor + b:.6g}] (the declared loss_floor + B)"
            if floor is not None
            else f"an interval of length the declared loss_range B = {b:.6g}"
        )
        part = (
            f"every f(., z) takes values in {located} on K, so the oscillation <= 2 B"
        )
    else:
        part = (
            "the declared oscillation bounds osc_K(f(., z) - f(., z')) for every "
            "pair of examples"
        )
    return (
        tightest,
        "none",
        (
            f"{part}: the score sensitivity is {tightest:.6g}/n (not enforced: "
            "enforce_sensitivity=False, no clipping)"
        ),
    )


def clipped_loss(
    spec: ProblemSpec, clip: str, ball: Ball
) -> ConeClippedLoss | RangeClippedLoss | None:
    """The clip :func:`sensitivity_route` chose, at the public constants (or ``None``).

    ``ball`` is the domain ``K`` (its centre and radius anchor the cone).

    Examples:
        >>> import jax.numpy as jnp
        >>> from dpsample import Ball, Problem
        >>> from dpsample.nets.clipped import clipped_loss
        >>> p = Problem(lambda x, z: jnp.abs(x[0] - z), jnp.zeros(4),
        ...             Ball(1.0, dim=1), lipschitz=1.0)
        >>> clipped_loss(p.spec, "cone", p.domain).radius
        1.0
    """
    if clip == "cone":
        assert spec.lipschitz is not None
        return ConeClippedLoss(
            spec.loss_fn,
            float(spec.lipschitz),
            tuple(float(v) for v in ball_center(ball)),
            float(ball.radius),
        )
    if clip == "range":
        assert spec.loss_floor is not None and spec.loss_range is not None
        return RangeClippedLoss(
            spec.loss_fn, float(spec.loss_floor), float(spec.loss_range)
        )
    return None


def run_clipped(
    clipped: ConeClippedLoss | RangeClippedLoss | None,
    loss_fn: Callable[..., Any],
    data: Any,
) -> tuple[Callable[..., Any], Any]:
    """``(loss, data)`` that run: ``loss_fn`` under the plan's clip (if any).

    The clip's public constants are the plan's; its loss is the one that runs (a
    pipeline may run a plan on another Problem object). The cone clip's examples
    carry their anchors (:func:`cone_clip_data`).

    Examples:
        >>> import jax.numpy as jnp
        >>> from dpsample.nets.clipped import RangeClippedLoss, run_clipped
        >>> loss, data = run_clipped(RangeClippedLoss(None, 0.0, 1.0),
        ...                          lambda x, z: 5.0 * z, jnp.ones(2))
        >>> float(loss(jnp.zeros(1), data[0]))
        1.0
    """
    if isinstance(clipped, ConeClippedLoss):
        clipped = dataclasses.replace(clipped, loss_fn=loss_fn)
        return clipped, cone_clip_data(clipped, data)
    if isinstance(clipped, RangeClippedLoss):
        return dataclasses.replace(clipped, loss_fn=loss_fn), data
    return loss_fn, data


#: The bound each clip enforces (``"none"``: the tightest declared, assumed).
SENSITIVITY_ROUTES = {"cone": "2 G D", "range": "2 B", "none": "declared, not enforced"}

#: What the plan's ``enforce_sensitivity`` note says of each clip.
CLIP_NOTES = {
    "cone": (
        "per-example losses clipped into the cone a_z +- G min(||p - c||, R), a_z = "
        "f(c, z): osc <= 2 G D whatever the data"
    ),
    "range": (
        "per-example losses clipped into the declared interval [loss_floor, "
        "loss_floor + B] (NaN to the floor): osc <= 2 B whatever the data"
    ),
    "none": "no clip runs (neither G nor loss_floor declared, or the opt-in)",
}


precision.scope_public(globals())
