"""The oracles' functional form: static structures and the statistics they compute.

An oracle of :mod:`dpsample.finders.oracles` splits into a hashable *static*
structure (:class:`FirstKindFn`, :class:`SecondKindFn`: the loss function, the
sampling scheme, the batch sizes, clipping) and a pytree of traced *operands* (the
data and the noise parameters), so that a jitted loop keyed on the structure
compiles once per structure and shapes (:meth:`FirstKindOracle.functional
<dpsample.finders.oracles.FirstKindOracle.functional>`). Calling a structure with
its operands releases the noisy statistic; :meth:`FirstKindFn.mean` is the noiseless
one. The gradient sums here are the numerics the oracles' rounding margins cover
(:mod:`dpsample._src.clipping`).

Everything here is pure JAX; the privacy accounting of a release is the oracle's
(:class:`~dpsample.finders.oracles.OracleRecord`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from dpsample._src import precision
from dpsample._src.clipping import clipped_sum, usable_clip_bound
from dpsample.finders.batches import draw_batch
from dpsample.types import Array, PRNGKey

__all__ = [
    "FirstKindFn",
    "SecondKindFn",
    "cast_floating",
    "clipped_gradient_sum",
    "per_example_gradients",
    "scaled_distance",
    "weighted_gradient_sum",
]


def weighted_gradient_sum(loss_fn: Any, x: Array, batch: Any, w: Array) -> Array:
    """``grad_x sum_i w_i f(x, z_i)``: one backward pass, no per-example gradients."""

    def total(p: Array) -> Array:
        return jnp.sum(w * jax.vmap(loss_fn, in_axes=(None, 0))(p, batch))

    return jax.grad(total)(x)


def per_example_gradients(loss_fn: Any, x: Array, batch: Any) -> Array:
    """The ``(m, d)`` per-example gradients ``grad f(x, z_i)``."""
    return jax.vmap(jax.grad(loss_fn), in_axes=(None, 0))(x, batch)


def cast_floating(tree: Any, dtype: str) -> Any:
    """Floating leaves of ``tree`` in ``dtype``; other leaves unchanged."""

    def cast(leaf: Any) -> Any:
        leaf = jnp.asarray(leaf)
        if jnp.issubdtype(leaf.dtype, jnp.floating):
            return leaf.astype(dtype)
        return leaf

    return jax.tree.map(cast, tree)


def clipped_gradient_sum(
    loss_fn: Any,
    x: Array,
    batch: Any,
    w: Array,
    bound: Array,
    dtype: str,
    ghost: bool,
) -> Array:
    r"""``sum_i w_i clip_bound(grad f(x, z_i))`` (float64), gradients in ``dtype``.

    Norms, scale and weighted sum are fused: one pass computes the squared norms,
    then one matrix-vector product ``c^T G`` with ``c_i = w_i min(1, bound /
    ||g_i||)`` sums the rows (the ``(m, d)`` matrix of per-example gradients is not
    scaled and copied first). Rows whose squared norm is not finite (an overflowing,
    infinite or NaN gradient) contribute zero, so the output never exceeds the bound
    per row and a NaN example cannot poison (or reveal itself in) the release
    (:func:`~dpsample._src.clipping.clipped_sum`). ``bound`` already includes
    the margin of :func:`~dpsample._src.clipping.clip_margin`. ``ghost`` asks the
    loss (a :class:`~dpsample._src.clipping.GhostClippedLoss`) for its own clipped
    sum (no ``(m, d)`` per-example gradients); the oracle decides it, once, with
    :func:`~dpsample._src.clipping.resolve_clipping`.
    """
    if ghost:  # layered model: no (m, d) per-example gradients
        return loss_fn.clipped_gradient_sum(x, batch, w, bound, dtype)
    ft = jnp.dtype(dtype)
    g = per_example_gradients(loss_fn, x.astype(ft), cast_floating(batch, dtype))
    return clipped_sum(g, w, bound, ft)


def scaled_distance(x: Array, y: Array) -> Array:
    """``||x - y||``, scaled by the largest entry so that tiny steps do not underflow.

    ``d + 4`` roundings at most (subtraction, quotient, square, ``d - 1`` additions,
    square root, product), which :func:`~dpsample._src.clipping.difference_margin`'s
    factor covers.
    """
    diff = x - y
    s = jnp.max(jnp.abs(diff))
    return s * jnp.linalg.norm(diff / jnp.where(s > 0, s, 1.0))


@dataclasses.dataclass(frozen=True)
class FirstKindFn:
    """Static structure of an O1 oracle: hashable, equal across equal structures.

    ``fn(operands, rng_key, x, indices=None)`` is ``O1(x)`` with ``operands =
    {"data": ..., "noise_std": s1}`` (plus ``"clip_bound"``, the clip norm after
    the rounding margin of :func:`~dpsample._src.clipping.clip_margin`, when
    clipped; the floating leaves of ``"data"`` are in ``gradient_dtype``).
    """

    loss_fn: Callable[..., Any]
    sampling: str
    n: int
    batch_size: int
    max_batch_size: int
    clipped: bool
    gradient_dtype: str = "float64"
    ghost: bool = False

    def mean(
        self, operands: dict[str, Any], rng_key: PRNGKey, x: Array, indices: Any
    ) -> Array:
        """The noiseless batch mean of the (clipped) gradients (not private)."""
        batch, w = draw_batch(self, rng_key, operands["data"], indices)
        if not self.clipped:
            total = weighted_gradient_sum(self.loss_fn, x, batch, w)
        else:
            total = clipped_gradient_sum(
                self.loss_fn,
                x,
                batch,
                w,
                jnp.asarray(operands["clip_bound"]),
                self.gradient_dtype,
                self.ghost,
            )
        return total / self.batch_size

    def __call__(
        self,
        operands: dict[str, Any],
        rng_key: PRNGKey,
        x: Array,
        indices: Any = None,
    ) -> Array:
        """The release ``O1(x)``: the batch mean plus Gaussian noise."""
        k_batch, k_noise = jax.random.split(rng_key)
        mean = self.mean(operands, k_batch, x, indices)
        noise = jax.random.normal(k_noise, mean.shape, jnp.float64)
        return mean + operands["noise_std"] * noise


@dataclasses.dataclass(frozen=True)
class SecondKindFn:
    """Static structure of an O2 oracle: hashable, equal across equal structures.

    ``fn(operands, rng_key, x, y, indices=None)`` is ``O2(x, y)`` with ``operands =
    {"data": ..., "noise_multiplier": z, "cap": 2G or inf}``, plus ``"smoothness"``
    when ``M`` is declared, ``"clip_margin"`` (``F`` of
    :func:`~dpsample._src.clipping.clip_margin`) when clipped, and ``"margin"``,
    ``"floor"`` (``F`` and ``A G`` of
    :func:`~dpsample._src.clipping.difference_margin`) when not.
    """

    loss_fn: Callable[..., Any]
    sampling: str
    n: int
    batch_size: int
    max_batch_size: int
    clip: bool
    has_smoothness: bool

    def difference_bound(self, operands: dict[str, Any], x: Array, y: Array) -> Array:
        """``C(x, y) = min(M ||x - y||, 2G)`` (``0`` at ``x == y``)."""
        if not self.has_smoothness:
            return jnp.where(jnp.any(x != y), operands["cap"], 0.0)
        return jnp.minimum(
            operands["smoothness"] * scaled_distance(x, y), operands["cap"]
        )

    def accounted_bound(self, operands: dict[str, Any], x: Array, y: Array) -> Array:
        """The per-example bound the noise is scaled to: ``C`` or ``F C + A G``.

        Clipped: ``C(x, y)`` (rows are clipped below it). Unclipped: ``C_eff = F C +
        A G`` (:func:`~dpsample._src.clipping.difference_margin`), except ``0`` at
        ``x == y``, where the release is the constant zero.
        """
        c = self.difference_bound(operands, x, y)
        if self.clip:
            return c
        c_eff = operands["margin"] * c + operands["floor"]
        return jnp.where(jnp.all(x == y), 0.0, c_eff)

    def noise_std(self, operands: dict[str, Any], x: Array, y: Array) -> Array:
        """Noise std ``z C_eff(x, y) / b`` of the release at ``(x, y)``."""
        bound = self.accounted_bound(operands, x, y)
        return operands["noise_multiplier"] * (bound / self.batch_size)

    def mean(
        self,
        operands: dict[str, Any],
        rng_key: PRNGKey,
        x: Array,
        y: Array,
        indices: Any,
    ) -> Array:
        """The noiseless paired-difference batch mean (not private)."""
        batch, w = draw_batch(self, rng_key, operands["data"], indices)
        loss_fn = self.loss_fn
        if not self.clip:
            total = weighted_gradient_sum(loss_fn, x, batch, w) - weighted_gradient_sum(
                loss_fn, y, batch, w
            )
        else:
            diff = per_example_gradients(loss_fn, x, batch) - per_example_gradients(
                loss_fn, y, batch
            )
            bound = usable_clip_bound(self.difference_bound(operands, x, y), "float64")
            total = clipped_sum(diff, w, bound / operands["clip_margin"], jnp.float64)
        # x == y (public): the release is the constant zero, whatever the data.
        return jnp.where(jnp.all(x == y), 0.0, total / self.batch_size)

    def __call__(
        self,
        operands: dict[str, Any],
        rng_key: PRNGKey,
        x: Array,
        y: Array,
        indices: Any = None,
    ) -> Array:
        """The release ``O2(x, y)``: the paired mean plus Gaussian noise."""
        k_batch, k_noise = jax.random.split(rng_key)
        mean = self.mean(operands, k_batch, x, y, indices)
        noise = jax.random.normal(k_noise, mean.shape, jnp.float64)
        return mean + self.noise_std(operands, x, y) * noise


precision.scope_public(globals())
