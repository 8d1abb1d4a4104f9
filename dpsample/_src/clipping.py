"""Per-example clipping in floating point, shared by every clipping path.

:func:`clip_margin` is the rounding margin that makes a clipped sum keep its
sensitivity *as computed*; :func:`clip_coefficients` turns squared row norms into the
clipping weights, :func:`clipped_sum` applies them and :func:`clipped_mean` is the
whole path (range, margin, sum, division) for a mean of a fixed number of rows. Every
clipping path of the library goes through this module with the same margin: the
per-example path of :func:`dpsample.finders.oracles.first_kind`, the ghost path of
:class:`dpsample.models.MLP`, the clipped paired differences of
:func:`dpsample.finders.oracles.second_kind`, the optax transform
:func:`dpsample.finders.dp_sgd_transform`, the clipped drift of projected Langevin
(:func:`dpsample.samplers.langevin.potential_gradient`, the Langevin route of
:func:`dpsample.samplers.gibbs.gibbs`) and, in Mode B of the Goldstein finders, the
clipped anchor and difference means and the clipped estimators
(:mod:`dpsample.finders.goldstein.o2nc`; the zero-order estimator clips its scalar
differences exactly, then the rows ``diff_j u_j`` with the margin). Norm projections
of iterates onto a ball (the Goldstein step, the domain projections) are not
sensitivity clips and do not use it. :func:`difference_margin` is the rounding
allowance of the *unclipped* paired difference (a noise floor, not a clip margin).

Clip bounds are kept in a range where the analysis holds (:data:`CLIP_RANGES`):
squared norms of rows near the bound are normal numbers (no underflow lets a row
escape clipping) and sums of clipped rows cannot overflow. A fixed bound outside the
range is refused (:func:`check_clip_bound`); a bound computed at run time (the paired
difference's ``min(M ||x - y||, 2G)``) is brought into it by
:func:`usable_clip_bound`, which only ever lowers it.
"""

from __future__ import annotations

import abc
import math
from typing import Any

import jax
import jax.numpy as jnp

from dpsample._src import validation
from dpsample.types import Array

__all__ = [
    "GhostClippedLoss",
    "CLIPPING_PATHS",
    "GHOST_ABOVE_VALUES",
    "GRADIENT_DTYPES",
    "MIN_CLIP_FLOAT32",
    "MAX_CLIP_FLOAT32",
    "MIN_CLIP_FLOAT64",
    "MAX_CLIP_FLOAT64",
    "CLIP_RANGES",
    "check_gradient_dtype",
    "check_clip_bound",
    "usable_clip_bound",
    "clip_margin",
    "clip_coefficients",
    "clipped_sum",
    "clipped_mean",
    "difference_margin",
    "resolve_clipping",
]

#: Dtypes of the first-kind oracle's per-example gradient computation.
GRADIENT_DTYPES = ("float64", "float32")
#: Clip bounds accepted by the float32 path (keeps squared norms near the bound normal).
MIN_CLIP_FLOAT32 = 1e-12
MAX_CLIP_FLOAT32 = 1e12
#: Clip bounds accepted by the float64 path: squared norms near the bound are at least
#: ``1e-280`` (normal; a row above the bound has an entry of square ``>= 1e-280 / d``),
#: and a sum of up to ``2^53`` clipped rows stays below ``1e156`` (finite).
MIN_CLIP_FLOAT64 = 1e-140
MAX_CLIP_FLOAT64 = 1e140
#: ``{dtype: (smallest, largest)}`` clip bound of each gradient dtype.
CLIP_RANGES = {
    "float32": (MIN_CLIP_FLOAT32, MAX_CLIP_FLOAT32),
    "float64": (MIN_CLIP_FLOAT64, MAX_CLIP_FLOAT64),
}


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
            "gradient_dtype='float32' needs per-example clipping (keep "
            "enforce_sensitivity=True): "
            "without clipping the guarantee rests on the declared Lipschitz bound, "
            "which float32 rounding of the gradients could exceed"
        )
    return name


def check_clip_bound(bound: Any, gradient_dtype: str) -> float:
    """``bound`` as a float if it lies in :data:`CLIP_RANGES` for the dtype, else raise.

    Raises:
        ValueError: If the bound is outside the dtype's range (float32: use float64;
            float64: rescale the loss).
    """
    name = check_gradient_dtype(gradient_dtype, clipped=True)
    lo, hi = CLIP_RANGES[name]
    c = validation.positive("clip bound", bound)
    if not lo <= c <= hi:
        hint = (
            "use gradient_dtype='float64'"
            if name == "float32"
            else "rescale the loss so that per-example gradients are of moderate size"
        )
        raise ValueError(
            f"gradient_dtype={name!r} needs a clip bound in [{lo:g}, {hi:g}] (so that "
            f"rounding of the clipped sum is provably bounded), got {c:g}; {hint}"
        )
    return c


def usable_clip_bound(bound: Array, gradient_dtype: str) -> Array:
    """A run-time clip bound brought into :data:`CLIP_RANGES` (never raised).

    Bounds below the dtype's range become ``0`` (every row is clipped to zero, so the
    clipped sum is exactly zero whatever the data), bounds above it are lowered to the
    top of the range. Either way the bound only decreases, so a sensitivity stated for
    ``bound`` still holds. The decision depends on ``bound`` only (public).
    """
    lo, hi = CLIP_RANGES[check_gradient_dtype(gradient_dtype, clipped=True)]
    b = jnp.asarray(bound)
    return jnp.where(b >= lo, jnp.minimum(b, hi), jnp.zeros_like(b))


def clip_margin(gradient_dtype: str, rows: int, dim: int) -> float:
    r"""Factor ``F >= 1`` by which the clip bound is shrunk to absorb rounding.

    Every clipping path (:mod:`dpsample._src.clipping`) clips each row at ``C / F``
    and sums the clipped rows in ``gradient_dtype`` (unit roundoff ``u``: ``2^-24``
    for float32, ``2^-53`` for float64); the sum is converted to float64 and divided
    by ``b`` there. With ``gamma_k = k u / (1 - k u)`` (Higham, *Accuracy and
    Stability of Numerical Algorithms*, Sec. 3.1: any summation order, with or
    without FMA):

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
    is harmless: clip bounds are kept in :data:`CLIP_RANGES` (``[1e-12, 1e12]`` in
    float32, ``[1e-140, 1e140]`` in float64) so that squared norms near the bound are
    normal numbers, and rows whose squared norm overflows contribute zero. A path
    that divides by ``b`` *after* adding the noise (the optax transform) only
    over-covers: the division is then post-processing.

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


def clipped_sum(rows: Array, weights: Array, bound: Array, dtype: Any) -> Array:
    r"""``sum_i w_i min(1, bound / ||r_i||) r_i`` in ``dtype``, returned in float64.

    Norms, scale and weighted sum are fused: one pass computes the squared norms, then
    one matrix-vector product ``c^T R`` with the coefficients of
    :func:`clip_coefficients` sums the rows (no scaled copy of the ``(m, d)`` rows).
    Rows whose squared norm is not finite contribute zero. ``bound`` already includes
    the margin of :func:`clip_margin` and lies in :data:`CLIP_RANGES` (or is ``0``).

    Args:
        rows: ``(m, d)`` rows (per-example gradients or gradient differences).
        weights: ``w``, shape ``(m,)``.
        bound: The clip bound.
        dtype: The arithmetic's dtype.

    Returns:
        The sum, shape ``(d,)``, float64.
    """
    ft = jnp.dtype(dtype)
    g = jnp.asarray(rows).astype(ft)
    coef, finite = clip_coefficients(jnp.sum(g * g, axis=-1), weights, bound, ft)
    g = jnp.where(finite[:, None], g, 0.0)
    total = jnp.dot(coef, g, precision=jax.lax.Precision.HIGHEST)
    return total.astype(jnp.float64)


def clipped_mean(rows: Array, bound: Array | float, dtype: Any = "float64") -> Array:
    r"""``(1/m) sum_i min(1, (C/F) / ||r_i||) r_i`` of ``m`` rows, returned in float64.

    The whole clipping path in one call, for a mean of a fixed number ``m`` of rows
    (the clipped Langevin drift, the Goldstein finders' estimators and batch means):
    the bound ``C`` is brought into :data:`CLIP_RANGES` by :func:`usable_clip_bound`
    (only ever lowered: a run-time bound may be traced), shrunk by
    ``F = clip_margin(dtype, m, d)`` (``m, d`` are the static shape of ``rows``), the
    rows are summed by :func:`clipped_sum` in ``dtype`` (rows whose squared norm is
    not finite contribute zero) and the float64 sum is divided by ``m``. By
    :func:`clip_margin`, the *computed* mean has norm at most ``C``, and two sets of
    ``m`` rows that differ in one row give computed means at most ``2C/m`` apart: the
    exact-arithmetic bounds hold for the floating-point values.

    Args:
        rows: ``(m, d)`` rows.
        bound: ``C``, the bound the caller's sensitivity uses (without the margin).
        dtype: The arithmetic's dtype, ``"float64"`` or ``"float32"``.

    Returns:
        The mean, shape ``(d,)``, float64.

    Examples:
        >>> import jax.numpy as jnp
        >>> from dpsample._src.clipping import clipped_mean
        >>> v = clipped_mean(jnp.array([[3.0, 4.0], [0.3, 0.4]]), 1.0)
        >>> [round(float(x), 6) for x in v]
        [0.45, 0.6]
    """
    name = check_gradient_dtype(dtype, clipped=True)
    r = jnp.asarray(rows)
    if r.ndim != 2:
        raise ValueError(f"Expected rows of shape (m, d), got shape {r.shape}")
    m, d = r.shape
    margin = clip_margin(name, m, d)
    usable = usable_clip_bound(jnp.asarray(bound, jnp.float64), name) / margin
    total = clipped_sum(r, jnp.ones((m,), name), usable, name)
    return total / m


def difference_margin(rows: int, dim: int) -> tuple[float, float]:
    r"""Rounding allowance ``(F, A)`` of the unclipped paired-difference statistic.

    The second-kind oracle without clipping releases
    ``T = fl(fl(S(x) - S(y)) / b)`` where ``S(p) = fl(sum_i w_i v_i(p))`` are two
    float64 gradient sums over the same ``m`` rows (weights ``w_i`` in ``{0, 1}``,
    ``k <= m`` real rows) and ``v_i(p)`` are per-example gradients that obey the
    declared constants: ``||v_i(p)|| <= G`` and ``||v_i(x) - v_i(y)|| <= C`` with
    ``C = min(M ||x - y||, 2G)``. In exact arithmetic two neighbouring batches give
    statistics at most ``2C/b`` apart, which tends to zero with ``||x - y||``; the
    rounding errors of the two sums do not, since they scale with the gradients'
    *magnitudes*. With ``u = 2^-53`` and ``gamma_k = k u / (1 - k u)`` (Higham,
    *Accuracy and Stability of Numerical Algorithms*, Sec. 3.1 and Lemma 3.1: any
    summation order or blocking, with or without FMA):

    * each sum is within ``gamma_m sum_i w_i |v_i(p)|`` of the exact one entrywise,
      so ``S(x) - S(y) = U + E`` with ``U = sum_i w_i (v_i(x) - v_i(y))``,
      ``||U|| <= m C`` and ``||E|| <= 2 gamma_m m G``;
    * the subtraction and the division by ``b`` give ``T = (U + E) o (1 + theta) /
      b`` with ``|theta_j| <= gamma_2``.

    For neighbouring batches (one row replaced), the differences of ``U``, of ``E``
    and of the ``theta`` terms are at most ``2C``, ``4 gamma_m m G`` and ``2 gamma_2
    (m C + 2 gamma_m m G)``, so the *computed* statistics are at most ``2 C_eff / b``
    apart with

    .. math::
        C_{\rm eff} = (1 + m\gamma_2)\, C + 2 m \gamma_m (1 + \gamma_2)\, G,

    a bound that does **not** vanish as ``x -> y``: its second term is a noise floor
    proportional to ``G``. The oracle computes ``C`` itself in floating point
    (``||x - y||``, a product, a minimum) and then the noise std; these ``d + 20`` or
    fewer roundings (the scaled norm included) are absorbed by the factor ``rho = 1
    / (1 - gamma_{d+20})``, so the computed noise scale is at least the exact one.
    The function returns ``F = rho (1 + m gamma_2)`` and ``A = 2 rho m gamma_m (1 +
    gamma_2)``: the oracle uses ``C_eff = F C + A G``. ``A`` is about ``2 m^2 u``
    (``2e-8`` for ``m = 10^4``).

    Rounding *inside* one example's gradient is outside this model, exactly as for
    the unclipped first-kind oracle (the declared ``G`` and ``M`` are trusted to bound
    the computed per-example gradients); clipping (the default) removes that trust.

    Args:
        rows: ``m``, the number of rows of each sum (padded batch size).
        dim: ``d``, the dimension of the points.

    Returns:
        ``(F, A)``.

    Raises:
        ValueError: If ``m`` or ``d`` is so large that the bound fails.

    Examples:
        >>> from dpsample._src.clipping import difference_margin
        >>> f, a = difference_margin(1000, 10)
        >>> 1 < f < 1 + 1e-12, 2e-10 < a < 3e-10
        (True, True)
    """
    m = validation.positive_int("rows", rows)
    d = validation.positive_int("dim", dim)
    u = float(jnp.finfo(jnp.float64).eps) / 2.0
    if max(m, d + 20) * u >= 0.5:
        raise ValueError(
            f"float64 rounding over m={m} rows of dimension d={d} is too large for a "
            "provable bound"
        )

    def gamma(k: int) -> float:
        return k * u / (1 - k * u)

    rho = 1.0 / (1.0 - gamma(d + 20))
    return (
        rho * (1.0 + m * gamma(2)),
        2.0 * rho * m * gamma(m) * (1.0 + gamma(2)),
    )


class GhostClippedLoss(abc.ABC):
    """A per-example loss that computes its own clipped gradient sum.

    The first-kind oracle calls :meth:`clipped_gradient_sum` instead of forming the
    ``(m, d)`` per-example gradients when the problem's loss is an instance of this
    class (ghost clipping, :class:`dpsample.models.MLP`). Subclassing is a claim the
    guarantee rests on: the sum must clip every row at ``bound`` in floating point,
    zero rows whose squared norm is not finite, and :meth:`gradient_margin` must
    bound its rounding as :func:`clip_margin` does for the per-example path.
    """

    @abc.abstractmethod
    def gradient_margin(self, gradient_dtype: str, rows: int) -> float:
        """Rounding margin ``F >= 1`` of :meth:`clipped_gradient_sum` over ``rows``."""

    @abc.abstractmethod
    def clipped_gradient_sum(
        self, theta: Any, batch: Any, weights: Any, bound: Any, gradient_dtype: str
    ) -> Array:
        """``sum_i w_i min(1, bound / ||g_i||) g_i`` (float64), rows of ``batch``."""


#: The first-kind oracle's ways to compute a clipped gradient sum (``clipping=``).
CLIPPING_PATHS = ("auto", "ghost", "per_example")


#: On an accelerator, ``clipping="auto"`` forms per-example gradients while a batch's
#: ``(m, d)`` matrix holds at most this many values (32 MiB in float64), and takes
#: the ghost path above it (``benchmarks/bench_gpu.py``; docs/gpu.md).
GHOST_ABOVE_VALUES = 1 << 22


def resolve_clipping(
    loss_fn: Any,
    clipping: str,
    rows: int = 0,
    dim: int = 0,
    backend: str | None = None,
) -> str:
    """The clipped-sum path of the first-kind oracle: ``"ghost"`` or ``"per_example"``.

    ``"per_example"`` forms the ``(m, d)`` per-example gradients (any loss);
    ``"ghost"`` asks a :class:`GhostClippedLoss` (e.g. :class:`dpsample.models.MLP`)
    for its own clipped sum, from activations and backpropagated output gradients.
    ``"auto"`` (the default) is ``"per_example"`` for any other loss. For a
    :class:`GhostClippedLoss` it is ``"ghost"`` on the CPU; on an accelerator it is
    ``"per_example"`` while the batch's ``rows x dim`` per-example gradients number
    at most :data:`GHOST_ABOVE_VALUES` (there a few large batched kernels beat the
    ghost path's per-layer kernels, 1.4x on the digits MLP) and ``"ghost"`` above
    it (18x on a 1.9M-parameter MLP at batch 1,024), as measured by
    ``benchmarks/bench_gpu.py`` (docs/gpu.md). The choice reads public values only
    (the loss's type, the batch size, the dimension, the backend) and changes no
    guarantee: both paths clip every row at the same bound, each with its own
    rounding margin.

    Raises:
        ValueError: An unknown path, or ``"ghost"`` for a loss that has no ghost path.

    Examples:
        >>> from dpsample._src.clipping import resolve_clipping
        >>> from dpsample.models import MLP
        >>> resolve_clipping(lambda x, z: x, "auto")
        'per_example'
        >>> net = MLP((64, 64, 10))
        >>> [resolve_clipping(net, "auto", 256, net.dim, b) for b in ("cpu", "gpu")]
        ['ghost', 'per_example']
        >>> resolve_clipping(net, "auto", 4096, net.dim, "gpu")  # 20M values
        'ghost'
    """
    if clipping not in CLIPPING_PATHS:
        raise ValueError(f"Expected clipping in {CLIPPING_PATHS}, got {clipping!r}")
    ghost = isinstance(loss_fn, GhostClippedLoss)
    if clipping == "ghost" and not ghost:
        raise ValueError(
            "clipping='ghost' needs a loss that computes its own clipped sum (a "
            "GhostClippedLoss such as dpsample.models.MLP); this loss has none: use "
            "clipping='per_example' or 'auto'"
        )
    if clipping != "auto":
        return clipping
    if not ghost:
        return "per_example"
    if backend is None:
        backend = jax.default_backend()
    if backend == "cpu" or rows * dim > GHOST_ABOVE_VALUES:
        return "ghost"
    return "per_example"
