"""Per-example clipping in floating point, shared by the oracles and the models.

:func:`clip_margin` is the rounding margin that makes a clipped sum keep its
sensitivity *as computed*; :func:`clip_coefficients` turns squared row norms into the
clipping weights. Both the per-example path of
:func:`dpsample.finders.oracles.first_kind` and the ghost path of
:class:`dpsample.models.MLP` use them, so the two paths clip by the same rule.
"""

from __future__ import annotations

import math
from typing import Any

import jax.numpy as jnp

from dpsample._src import validation
from dpsample.types import Array

__all__ = [
    "GRADIENT_DTYPES",
    "MIN_CLIP_FLOAT32",
    "MAX_CLIP_FLOAT32",
    "check_gradient_dtype",
    "clip_margin",
    "clip_coefficients",
]

#: Dtypes of the first-kind oracle's per-example gradient computation.
GRADIENT_DTYPES = ("float64", "float32")
#: Clip bounds accepted by the float32 path (keeps squared norms near the bound normal).
MIN_CLIP_FLOAT32 = 1e-12
MAX_CLIP_FLOAT32 = 1e12


def check_gradient_dtype(gradient_dtype: Any, clipped: bool) -> str:
    """Validate ``gradient_dtype``; return ``"float64"`` or ``"float32"``."""
    try:
        name = jnp.dtype(gradient_dtype).name
    except TypeError:
        name = None
    if name not in GRADIENT_DTYPES:
        raise ValueError(
            f"Expected gradient_dtype in {GRADIENT_DTYPES}, got {gradient_dtype!r}"
        )
    if name == "float32" and not clipped:
        raise ValueError(
            "gradient_dtype='float32' needs per-example clipping (clip_norm=...): "
            "without clipping the guarantee rests on the declared Lipschitz bound, "
            "which float32 rounding of the gradients could exceed"
        )
    return name


def clip_margin(gradient_dtype: str, rows: int, dim: int) -> float:
    r"""Factor ``F >= 1`` by which the clip bound is shrunk to absorb rounding.

    The first-kind oracle clips every per-example gradient at ``C / F`` and sums the
    clipped rows in ``gradient_dtype`` (unit roundoff ``u``: ``2^-24`` for float32,
    ``2^-53`` for float64); the sum is converted to float64 and divided by ``b``
    there. With ``gamma_k = k u / (1 - k u)`` (Higham, *Accuracy and Stability of
    Numerical Algorithms*, Sec. 3.1: any summation order, with or without FMA):

    * the computed squared norm of a row is within a factor ``1 +- gamma_d`` of the
      exact one, and rounding the bound, the square root and the quotient costs at
      most ``(1 + u)^3 / (1 - u)``, so every scaled row has exact norm at most
      ``rho C / F`` with ``rho = (1 + u)^3 / ((1 - u) sqrt(1 - gamma_d))``;
    * the computed sum of ``k <= m`` such rows is within ``gamma_m k rho C / F`` of
      the exact sum, and the float64 division by ``b`` adds at most ``2 u_64`` of the
      sum's norm.

    Two batches that differ by one added, removed or replaced row (``|S| <= m``)
    therefore give computed statistics at most
    ``rho (1 + (2m + 1)(gamma_m + 2 u_64)) C / F`` (times 2 for a replacement) apart,
    which is at most ``C`` (``2C``) with

    .. math::
        F = \rho\,\big(1 + (2m + 1)(\gamma_m + 2 u_{64})\big).

    So the sensitivity ``2C/b`` holds for the *floating-point* statistic, not only in
    exact arithmetic (the noise addition itself is the usual floating-point caveat,
    see ``docs/sharp_edges.md``). ``F - 1`` is about ``1e-11`` in float64 and
    ``2 m^2 2^-24`` in float32 (``0.8 %`` at ``m = 256``, ``d = 4810``). Underflow
    is harmless: the float32 path requires ``1e-12 <= C <= 1e12`` so that squared
    norms near the bound are normal numbers, and rows whose squared norm overflows
    contribute zero.

    Args:
        gradient_dtype: ``"float64"`` or ``"float32"``.
        rows: ``m``, the number of rows summed (padded batch size).
        dim: ``d``, the gradient dimension.

    Returns:
        The factor ``F``.

    Raises:
        ValueError: If ``m u`` or ``d u`` is so large that the bound fails
            (``F > 2``); use float64 then.

    Examples:
        >>> from dpsample.finders.oracles import clip_margin
        >>> clip_margin("float64", 256, 4810) - 1 < 1e-10
        True
        >>> round(clip_margin("float32", 256, 4810), 3)  # clip at 99.2 % of C
        1.008
    """
    name = check_gradient_dtype(gradient_dtype, clipped=True)
    m = validation.positive_int("rows", rows)
    d = validation.positive_int("dim", dim)
    u = float(jnp.finfo(name).eps) / 2.0
    u64 = float(jnp.finfo(jnp.float64).eps) / 2.0
    factor = math.inf
    if max(m, d) * u < 0.5:
        gamma_m, gamma_d = m * u / (1 - m * u), d * u / (1 - d * u)
        rho = (1 + u) ** 3 / ((1 - u) * math.sqrt(1 - gamma_d))
        factor = rho * (1 + (2 * m + 1) * (gamma_m + 2 * u64))
    if not factor <= 2.0:
        raise ValueError(
            f"{name} rounding over m={m} rows of dimension d={dim} is too large for a "
            "provable clip bound (margin factor > 2); use gradient_dtype='float64'"
        )
    return factor


def clip_coefficients(
    sq_norms: Array, weights: Array, bound: Array, dtype: Any
) -> tuple[Array, Array]:
    r"""Clipping weights ``c_i = w_i min(1, bound / ||g_i||)`` from squared norms.

    Rows whose squared norm is not finite (an overflowing, infinite or NaN gradient)
    get ``c_i = 0`` and ``finite_i = False``: the caller zeroes them, so no row ever
    contributes more than ``bound`` and a NaN example cannot poison the sum.
    ``bound`` already includes the margin of :func:`clip_margin`.

    Args:
        sq_norms: ``||g_i||^2``, shape ``(m,)``, in ``dtype``.
        weights: ``w``, shape ``(m,)``.
        bound: The clip bound.
        dtype: The arithmetic's dtype.

    Returns:
        ``(coef, finite)``, both of shape ``(m,)``.
    """
    ft = jnp.dtype(dtype)
    finite = jnp.isfinite(sq_norms)
    norms = jnp.sqrt(jnp.where(finite, sq_norms, 0.0))
    tiny = jnp.finfo(ft).tiny
    scale = jnp.minimum(1.0, jnp.asarray(bound).astype(ft) / jnp.maximum(norms, tiny))
    coef = jnp.where(finite, jnp.asarray(weights).astype(ft) * scale, 0.0).astype(ft)
    return coef, finite
