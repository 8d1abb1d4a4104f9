r"""Smallest eigenvalue of a symmetric matrix with fixed work and a public error bound.

LAPACK's symmetric eigensolvers (``eigh``, ``eigvalsh``) iterate until the
off-diagonal part is negligible, so their running time depends on the matrix. On a
private path (a Hessian of the private empirical risk) that time is a side channel:
on two replace-one neighbours it tells them apart (issue 25). This module computes
:math:`\lambda_{\min}` with a number and kind of floating-point operations that
depends on the dimension only:

1. **Scaling** by the public power of two :math:`s = 2^{\lceil\log_2 B\rceil}`
   (:math:`B` a public bound on :math:`\|H\|_2`), exact in binary arithmetic, so
   :math:`A = H/s` has :math:`\|A\|_2 \le 1`.
2. **Householder tridiagonalisation** (Golub & Van Loan 2013, Alg. 8.3.1): ``d - 2``
   reflections, each applied to the whole ``d x d`` matrix with masks (a
   ``lax.fori_loop`` with a static trip count, lowered to a ``scan``); a zero
   column gives the identity reflection by a ``select``, not a branch.
3. **Multisection on Sturm counts** (Kahan 1966; Demmel 1997, Sec. 5.3.4): the
   start interval ``[-2, 2]`` is cut into 16 equal parts, the Sturm counts at the 15
   interior points are computed at once (one ``scan`` of length ``d`` on a vector of
   15 shifts), and the interval is replaced by the part that holds the first
   eigenvalue; :data:`ROUNDS` = 13 rounds always, so the width ends at
   :math:`4 \cdot 16^{-13} = 2^{-50}`.

No step stops early or branches on the data: the work is
``(d - 2)`` rank-two updates of a ``d x d`` matrix and ``13 d`` steps of a
15-wide recurrence, whatever the matrix. (XLA on CPU flushes subnormal numbers to
zero, so no operand takes the slow subnormal path either.)

A-priori error bound (:func:`min_eigenvalue_error`)
---------------------------------------------------

Let :math:`u = 2^{-53}` (unit round-off of float64) and assume
:math:`\|H\|_2 \le B` and :math:`32 d u \le 1/2`. Then the returned value
:math:`\hat\lambda` satisfies

.. math::

    |\hat\lambda - \lambda_{\min}(H)| \le \eta(d, B) :=
    2B\,\big(130\, d^{5/2} + 32\big)\,u .

Proof sketch (every step is a worst-case statement, nothing is measured):

* Scaling by :math:`s \le 2B` is exact (a power of two; values below
  :math:`2^{-1022}` flush to zero, an absolute error below :math:`2^{-1000}` per
  entry). Symmetrising, :math:`A = (H + H^T)/(2s)`, rounds each entry once:
  :math:`\|E_0\|_2 \le \|E_0\|_F \le u\|A\|_F \le u\sqrt d`. Both are covered by
  the extra :math:`2 d^{5/2} u` in :math:`\eta`.
* Householder tridiagonalisation is backward stable: the computed tridiagonal
  :math:`T` is exactly orthogonally similar to :math:`A + E` with
  :math:`\|E\|_F \le 2(d-2)\,\tilde\gamma_{d}\,\|A\|_F` where
  :math:`\tilde\gamma_k = c k u/(1 - c k u)` (Higham 2002, Lemmas 19.2-19.3 and
  Thm 19.4, applied to the reflections from the left and from the right; entries
  below the subdiagonal, which the reflections make zero up to rounding, are
  dropped, which those lemmas cover). We take the constant :math:`c = 32`, a
  generous bound on the few roundings per computed element of a reflection and of
  its application (inner products and rank-two updates carry their own
  :math:`\gamma_d`). With :math:`\|A\|_F \le \sqrt d` and :math:`1 - 32du \ge 1/2`,
  :math:`\|E\|_2 \le 128\, d^{5/2} u`, and by Weyl
  :math:`|\lambda_{\min}(T) - \lambda_{\min}(A)| \le 128\, d^{5/2} u`; in particular
  :math:`\|T\|_2 \le 1 + 128 d^{5/2} u < 2`.
* Sturm count in floating point (Kahan's argument): with
  :math:`t_1 = a_1 - \sigma`, :math:`t_i = (a_i - \sigma) - b_{i-1}^2/t_{i-1}` and a
  pivot of magnitude below ``PIVMIN`` replaced by ``-PIVMIN``, every rounding can
  be pushed back into the data: the computed :math:`t_i` divided by its last
  rounding factor are the *exact* pivots of :math:`\hat T - \sigma I` with
  :math:`|\hat a_i - a_i| \le u |a_i - \sigma| + 2\,\mathrm{PIVMIN}` and
  :math:`\hat b_i^2 = b_i^2 (1 + \theta)`, :math:`|\theta| \le 3u + O(u^2)`. By
  Sylvester's law of inertia, the number of negative computed pivots is exactly the
  number of eigenvalues of :math:`\hat T` below :math:`\sigma`, and
  :math:`\|\hat T - T\|_2 \le u(\|T\| + |\sigma|) + 3.1 u \|T\| + 2\,\mathrm{PIVMIN}
  \le 16 u` for :math:`\|T\| < 2`, :math:`|\sigma| \le 2`. Hence a count ``>= 1``
  at :math:`\sigma` proves :math:`\lambda_{\min}(T) < \sigma + 16u` and a count 0
  proves :math:`\lambda_{\min}(T) \ge \sigma - 16u` (Weyl). This needs no
  monotonicity of the computed count.
* Multisection keeps an interval ``[lo, hi]`` whose ``lo`` has count 0 (or is
  ``-2``) and whose ``hi`` has count ``>= 1`` (or is ``2``), since the new ``hi`` is
  the first interior point with a positive count and the new ``lo`` the point
  before it. The points are dyadic and exact. So
  :math:`\lambda_{\min}(T) \in [lo - 16u, hi + 16u]`, of width
  :math:`2^{-50} + 32u`, and the midpoint is within :math:`2^{-51} + 16u = 32u`
  of :math:`\lambda_{\min}(T)`.
* Together, in units of :math:`s \le 2B`:
  :math:`|\hat\lambda/s - \lambda_{\min}(A)| \le (128 d^{5/2} + \sqrt d + 2^{-900}
  + 32) u \le (130 d^{5/2} + 32) u`, where :math:`A` is the exact symmetric part
  of :math:`H/s`. ∎

The bound is far above the errors one sees (about :math:`10^{-15} B` at
``d = 300``; ``tests/test_fixed_eig.py`` checks it on hard spectra) because it is a
worst case with a generous constant; what matters for privacy is that it is
public: callers add :math:`2\eta` to a sensitivity and :math:`\eta` to a threshold.

References:
    Golub & Van Loan, *Matrix Computations*, 4th ed., 2013, Sec. 8.3.1 and 8.4.1.
    Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., 2002, Ch. 19.
    Demmel, *Applied Numerical Linear Algebra*, 1997, Sec. 5.3.4.
    Kahan, *Accurate eigenvalues of a symmetric tri-diagonal matrix*, Stanford
    CS41, 1966.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from dpsample._src import precision
from dpsample.types import Array, ArrayLike

__all__ = ["ROUNDS", "min_eigenvalue", "min_eigenvalue_error"]

#: Multisection rounds; each divides the interval by 16 (width ``4 * 16**-13``).
ROUNDS = 13
_PARTS = 16
#: Sturm pivots smaller than this in magnitude become ``-PIVMIN`` (LAPACK's guard).
PIVMIN = 2.0**-1000
_U = 2.0**-53


def _power_of_two_at_least(bound: Array) -> Array:
    """``2^e >= bound`` built from its bits (exact; ``exp2`` is not exact in XLA)."""
    _, e = jnp.frexp(bound)  # bound = m 2^e, 1/2 <= m < 1
    e = jnp.clip(e.astype(jnp.int64), -1021, 1023)
    return jax.lax.bitcast_convert_type((e + 1023) << 52, jnp.float64)


def min_eigenvalue_error(dim: int, bound: float) -> float:
    r"""The public a-priori error bound :math:`\eta(d, B)` of :func:`min_eigenvalue`.

    :math:`\eta = 2B(130 d^{5/2} + 32)u`, :math:`u = 2^{-53}`, valid for every
    symmetric ``d x d`` matrix with :math:`\|H\|_2 \le B` (module docstring).

    Args:
        dim: ``d >= 1``, with ``32 d u <= 1/2`` (``d <= 2**47``).
        bound: ``B > 0``, finite.

    Returns:
        ``eta`` as a float (a public number: it depends on ``d`` and ``B`` only).

    Raises:
        ValueError: ``dim`` or ``bound`` out of range.

    Examples:
        >>> from dpsample._src.fixed_eig import min_eigenvalue_error
        >>> eta = min_eigenvalue_error(300, 1.0)
        >>> 1e-9 < eta < 1e-7
        True
    """
    if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
        raise ValueError(f"Expected a positive integer dim, got {dim!r}")
    if 32.0 * dim * _U > 0.5:
        raise ValueError(f"Expected dim <= 2**47, got {dim}")
    if not (math.isfinite(bound) and bound > 0.0):
        raise ValueError(f"Expected a positive finite bound, got {bound!r}")
    return 2.0 * bound * (130.0 * dim**2.5 + 32.0) * _U


def _tridiagonalize(a: Array) -> tuple[Array, Array]:
    """Householder reduction of symmetric ``a``: (diagonal, subdiagonal); fixed work."""
    d = a.shape[0]
    idx = jnp.arange(d)

    def reflect(k: Array, a: Array) -> Array:
        col = jax.lax.dynamic_index_in_dim(a, k, axis=1, keepdims=False)
        x = jnp.where(idx > k, col, 0.0)
        x1 = jax.lax.dynamic_index_in_dim(col, k + 1, keepdims=False)
        norm = jnp.sqrt(jnp.sum(x * x))
        alpha = jnp.where(x1 >= 0.0, -norm, norm)
        v = x - jnp.where(idx == k + 1, alpha, 0.0)
        vv = jnp.sum(v * v)
        nonzero = vv > 0.0
        beta = jnp.where(nonzero, 2.0 / jnp.where(nonzero, vv, 1.0), 0.0)
        p = beta * (a @ v)
        w = p - (0.5 * beta * (v @ p)) * v
        return a - jnp.outer(v, w) - jnp.outer(w, v)

    a = jax.lax.fori_loop(0, max(d - 2, 0), reflect, a)
    # Gathers, not jnp.diagonal (whose lowering carries a platform ``cond``).
    return a[idx, idx], a[idx[1:], idx[:-1]]


def _sturm_positive(diag: Array, off2: Array, shifts: Array) -> Array:
    """Whether each shift has at least one eigenvalue of the tridiagonal below it."""

    def guard(t: Array) -> Array:
        return jnp.where(jnp.abs(t) < PIVMIN, -PIVMIN, t)

    t0 = guard(diag[0] - shifts)

    def step(t: Array, ab: tuple[Array, Array]) -> tuple[Array, Array]:
        a_i, b2 = ab
        t = guard((a_i - shifts) - b2 / t)
        return t, t < 0.0

    _, neg = jax.lax.scan(step, t0, (diag[1:], off2), unroll=4)
    return (t0 < 0.0) | jnp.any(neg, axis=0)


def _min_eig_scaled(diag: Array, off2: Array) -> Array:
    points = jnp.arange(1, _PARTS, dtype=diag.dtype)

    def round_(
        bounds: tuple[Array, Array], _: None
    ) -> tuple[tuple[Array, Array], None]:
        lo, hi = bounds
        grid = jnp.concatenate([lo[None], lo + (hi - lo) / _PARTS * points, hi[None]])
        positive = _sturm_positive(diag, off2, grid[1:-1])
        first = jnp.where(jnp.any(positive), jnp.argmax(positive) + 1, _PARTS)
        return (grid[first - 1], grid[first]), None

    start = (jnp.asarray(-2.0, diag.dtype), jnp.asarray(2.0, diag.dtype))
    (lo, hi), _ = jax.lax.scan(round_, start, None, length=ROUNDS)
    return 0.5 * (lo + hi)


def min_eigenvalue(h: ArrayLike, bound: ArrayLike) -> Array:
    r"""Smallest eigenvalue of the symmetric part of ``h``, with fixed work.

    Jittable and ``vmap``-able; the operations done depend on ``h.shape`` only. The
    result is within :func:`min_eigenvalue_error` ``(d, bound)`` of
    :math:`\lambda_{\min}((h + h^T)/2)` whenever that matrix has operator norm at
    most ``bound`` (module docstring for the proof). Outside that assumption the
    value is still computed with the same work (and lies in
    ``[-2 s, 2 s]``, ``s`` the power of two at or above ``bound``); a matrix with a
    non-finite entry gives ``nan`` (by a ``select``, not a branch).

    Args:
        h: A square matrix ``(d, d)``, float64 (its symmetric part is used).
        bound: The public bound ``B > 0`` on its operator norm (a scalar; it may be
            traced, so one compilation serves every bound).

    Returns:
        A float64 scalar array.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> from dpsample._src.fixed_eig import min_eigenvalue
        >>> with jax.enable_x64(True):
        ...     h = jnp.array([[2.0, 1.0], [1.0, 2.0]])
        ...     lam = float(jax.jit(min_eigenvalue)(h, 4.0))
        >>> abs(lam - 1.0) < 1e-12
        True
    """
    if not isinstance(bound, jax.core.Tracer):
        b = float(bound)  # type: ignore[arg-type]
        if not (math.isfinite(b) and b > 0.0):
            raise ValueError(f"Expected a positive finite bound, got {bound!r}")
    h = jnp.asarray(h, dtype=jnp.float64)
    if h.ndim != 2 or h.shape[0] != h.shape[1] or h.shape[0] == 0:
        raise ValueError(f"Expected a non-empty square matrix, got shape {h.shape}")
    scale = _power_of_two_at_least(jnp.asarray(bound, dtype=jnp.float64))
    a = (0.5 / scale) * (h + h.T)
    finite = jnp.all(jnp.isfinite(a))
    a = jnp.where(finite, a, 0.0)
    diag, off = _tridiagonalize(a)
    lam = scale * _min_eig_scaled(diag, off * off)
    ok = finite & jnp.all(jnp.isfinite(diag)) & jnp.all(jnp.isfinite(off))
    return jnp.where(ok, lam, jnp.nan)


precision.scope_public(globals())
