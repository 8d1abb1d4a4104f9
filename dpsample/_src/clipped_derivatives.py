r"""Clipped full-data gradient and Hessian means for the SOSP selections (fixed work).

The two SOSP selections (:func:`dpsample.mechanisms.select_sosp_iterate`, seed
002's Procedure 3′, and the queries of seed 000's Algorithm 2 in
:mod:`dpsample.finders.spider_sosp.selection`) read the norm of the full-data
gradient and the smallest eigenvalue of the full-data Hessian. Their sensitivities
rest on the declared per-example bounds ``||∇f(x, z)|| <= C`` and
``||∇²f(x, z)||_2 <= L``; this module *enforces* them (issue 25, "enforced by
default"), so the sensitivities hold whatever the data:

* :func:`clipped_gradient_mean`: the per-example gradients ``(n, d)`` clipped at
  ``C`` by :func:`dpsample._src.clipping.clipped_mean` (the clip every finder uses,
  with its rounding margin :func:`~dpsample._src.clipping.clip_margin`): the
  *computed* mean has norm ``<= C`` and two replace-one neighbours give computed
  means at most ``2C/n`` apart.
* :func:`clipped_hessian_mean`: each per-example Hessian ``H_i`` is scaled by
  ``min(1, (L/F) / ν(H_i))`` with the fixed-work operator-norm bound

  .. math::

      \nu(H) = \min\big(\|H\|_F,\ \max(\|H\|_1, \|H\|_\infty)\big)
      \ \ge\ \|H\|_2

  (``||H||_2 <= ||H||_F`` and ``||H||_2 <= sqrt(||H||_1 ||H||_inf)``; ``ν`` is the
  operator norm itself for a diagonal or a rank-one Hessian, and at most
  ``sqrt(rank) ||H||_2``), and the scaled Hessians are summed as rows of length
  ``d²`` with the margin ``F = clip_margin("float64", m, d²)`` over the ``m``
  (padded) rows. The computed mean ``Ĥ`` has ``||Ĥ||_2 <= L`` (so the fixed-work
  eigenvalue's error bound ``η(d, L)`` of
  :func:`dpsample._src.fixed_eig.min_eigenvalue_error` applies with ``B = L``, no
  further margin) and two replace-one neighbours give computed means with
  ``||Ĥ - Ĥ'||_2 <= 2L/n``, hence (Weyl) exact smallest eigenvalues at most
  ``2L/n`` apart.

  Why :func:`~dpsample._src.clipping.clip_margin`'s proof carries over from the
  Euclidean norm of a row to ``ν`` and the operator norm: it uses (a) a lower bound
  on the computed norm, ``ν̂ >= ν sqrt(1 - γ_{d²}) (1 - u)`` (the Frobenius part is
  the Euclidean norm of ``d²`` entries, as there; a row sum of ``d`` absolute
  values is within ``γ_{d-1}``, a smaller error, and ``min``/``max`` are exact),
  and (b) that an entrywise rounding ``|E| <= γ Σ_i |y_i|`` of a sum of rows
  ``y_i`` costs at most ``γ Σ_i ν(y_i)`` in the norm. (b) holds for the operator
  norm: ``|E| <= B`` entrywise implies ``||E||_2 <= ||B||_2``, the operator norm is
  a norm (triangle inequality), and ``||  |y| ||_2 <= ν(|y|) = ν(y)``; likewise the
  final division's entrywise rounding ``u |Ŝ|/n`` costs ``u || |Ŝ| ||_2 / n <=
  u (1 + γ_m) Σ_i ν(y_i) / n``, the bound ``clip_margin`` uses. The scaled
  row ``fl(c_i H_i)`` has ``ν <= (1 + u) c_i ν(H_i)``, as the Euclidean norm does
  there. So every bound of ``clip_margin`` holds with ``||.||_2`` of the result
  and ``ν`` of the rows, whatever the summation order or blocking (so for the
  chunked sum below).

Work and memory. A per-example Hessian is ``d x d``: the examples are processed in
``ceil(n / b)`` chunks of ``b = max(1, min(n, 2^22 // d²))`` examples (a
``lax.scan`` of fixed length; the last chunk is padded with weight-0 copies of
existing records), so at most ``b d² <= max(2^22, d²)`` float64 entries of
per-example Hessians (32 MiB, or one Hessian if ``d² > 2^22``) exist at a time. The
work is ``n`` per-example Hessians (``n d`` Hessian-vector products, the same count
as one full-data Hessian) plus ``O(n d²)`` for the norms and the sum, whatever the
data: no step depends on a value, and the chunk size depends on ``n`` and ``d``
only. A record whose gradient norm or Hessian ``ν`` is not finite contributes zero
to that mean (the public rule of :func:`~dpsample._src.clipping.clip_coefficients`).
The per-example gradients are formed at once (``n d`` entries, as the finders'
first-kind oracle does).

What clipping costs in utility: the clipped quantities equal the true ones only
where the declared bounds hold, the Hessian bound for ``ν`` (the operator norm for
diagonal and rank-one Hessians, up to ``sqrt(rank)`` times it otherwise). Where a
clip is active the score is that of the clipped mean (e.g. a shrunk negative
eigenvalue), not of the empirical risk.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from dpsample._src import precision
from dpsample._src.clipping import clip_margin, clipped_mean, usable_clip_bound
from dpsample.types import Array

__all__ = [
    "HESSIAN_CHUNK_ENTRIES",
    "operator_norm_bound",
    "hessian_chunk",
    "clipped_gradient_mean",
    "clipped_hessian_mean",
]

#: Largest number of per-example Hessian entries held at once (``b d²``), unless a
#: single Hessian is larger.
HESSIAN_CHUNK_ENTRIES = 2**22


def hessian_chunk(n: int, dim: int) -> int:
    """Examples per chunk of :func:`clipped_hessian_mean` (public: ``n``, ``d`` only).

    Examples:
        >>> from dpsample._src.clipped_derivatives import hessian_chunk
        >>> hessian_chunk(10_000, 2), hessian_chunk(10_000, 300), hessian_chunk(5, 3000)
        (10000, 46, 1)
    """
    return max(1, min(int(n), HESSIAN_CHUNK_ENTRIES // (int(dim) ** 2)))


def _num_examples(data: Any) -> int:
    leaves = jax.tree_util.tree_leaves(data)
    if not leaves:
        raise ValueError("Expected data with at least one array leaf")
    return int(leaves[0].shape[0])


def clipped_gradient_mean(loss_fn: Any, x: Array, data: Any, bound: Any) -> Array:
    r"""Mean of the per-example gradients at ``x``, each clipped at ``bound``.

    ``(1/n) sum_i min(1, (C/F) / ||∇f(x, z_i)||) ∇f(x, z_i)`` by
    :func:`~dpsample._src.clipping.clipped_mean` (float64): the computed mean has
    norm ``<= C`` and moves by at most ``2C/n`` when one record is replaced.
    Jittable (``bound`` may be traced).

    Args:
        loss_fn: ``loss_fn(x, z) -> scalar``, the per-example loss.
        x: The point, shape ``(d,)``.
        data: The records, a pytree with leading axis ``n``.
        bound: ``C > 0``.

    Returns:
        The clipped mean, shape ``(d,)``.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> from dpsample._src.clipped_derivatives import clipped_gradient_mean
        >>> with jax.enable_x64(True):
        ...     z = jnp.array([[3.0, 4.0], [0.3, 0.4]])
        ...     g = clipped_gradient_mean(lambda x, z: x @ z, jnp.zeros(2), z, 1.0)
        >>> [round(float(v), 6) for v in g]
        [0.45, 0.6]
    """
    rows = jax.vmap(jax.grad(loss_fn), in_axes=(None, 0))(x, data)
    return clipped_mean(rows.reshape(rows.shape[0], -1), bound, "float64")


def operator_norm_bound(h: Array) -> Array:
    r"""``ν(H) = min(||H||_F, max(||H||_1, ||H||_inf)) >= ||H||_2``, fixed work.

    Batched over leading axes (``h`` of shape ``(..., d, d)``); ``inf`` or ``nan``
    when an entry is not finite or the squared Frobenius norm overflows.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> from dpsample._src.clipped_derivatives import operator_norm_bound
        >>> with jax.enable_x64(True):
        ...     diag = jnp.diag(jnp.array([3.0, -4.0]))  # operator norm 4
        ...     ones = jnp.ones((2, 2))  # rank one, operator norm 2
        ...     nus = [float(operator_norm_bound(a)) for a in (diag, ones)]
        >>> nus
        [4.0, 2.0]
    """
    h = jnp.asarray(h)
    frobenius = jnp.sqrt(jnp.sum(h * h, axis=(-2, -1)))
    a = jnp.abs(h)
    rows = jnp.max(jnp.sum(a, axis=-1), axis=-1)
    cols = jnp.max(jnp.sum(a, axis=-2), axis=-1)
    return jnp.minimum(frobenius, jnp.maximum(rows, cols))


def _clipped_hessian_sum(hess: Array, weights: Array, bound: Array) -> Array:
    """``sum_i w_i min(1, bound / ν(H_i)) H_i`` as a ``d²`` row, float64.

    As :func:`dpsample._src.clipping.clipped_sum` with ``ν`` in place of the
    Euclidean norm of a row: Hessians whose ``ν`` is not finite contribute zero.
    """
    b, d = hess.shape[0], hess.shape[-1]
    h = hess.astype(jnp.float64)
    nu = operator_norm_bound(h)
    finite = jnp.isfinite(nu)
    tiny = jnp.finfo(jnp.float64).tiny
    scale = jnp.minimum(1.0, bound / jnp.maximum(jnp.where(finite, nu, 0.0), tiny))
    coef = jnp.where(finite, weights * scale, 0.0)
    rows = jnp.where(finite[:, None], h.reshape(b, d * d), 0.0)
    return jnp.dot(coef, rows, precision=jax.lax.Precision.HIGHEST)


def clipped_hessian_mean(loss_fn: Any, x: Array, data: Any, bound: Any) -> Array:
    r"""Mean of the per-example Hessians at ``x``, each clipped to ``ν(H_i) <= L``.

    ``(1/n) sum_i min(1, (L/F) / ν(H_i)) H_i`` (``ν`` of
    :func:`operator_norm_bound`, an upper bound on the operator norm) with the margin
    ``F = clip_margin("float64", m, d²)`` (``m`` the padded number of rows), computed
    in chunks of :func:`hessian_chunk` examples (module docstring: fixed work, memory
    ``b d²``). The computed mean has ``||Ĥ||_2 <= L`` and moves by at most ``2L/n``
    in operator norm when one record is replaced.
    Jittable (``bound`` may be traced).

    Args:
        loss_fn: ``loss_fn(x, z) -> scalar``, the per-example loss.
        x: The point, shape ``(d,)``.
        data: The records, a pytree with leading axis ``n``.
        bound: ``L > 0``.

    Returns:
        The clipped mean, shape ``(d, d)``, float64.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> from dpsample._src.clipped_derivatives import clipped_hessian_mean
        >>> def loss(x, z):  # Hessian 2 z I: operator norm 2 |z| (= nu)
        ...     return z * (x @ x)
        >>> with jax.enable_x64(True):
        ...     h = clipped_hessian_mean(loss, jnp.zeros(2), jnp.array([1.0, 0.0]), 1.0)
        >>> round(float(h[0, 0]), 6), round(float(h[0, 1]), 6)  # (2 -> 1) / 2
        (0.5, 0.0)
    """
    x = jnp.asarray(x, jnp.float64)
    n, d = _num_examples(data), int(x.shape[0])
    b = hessian_chunk(n, d)
    chunks = -(-n // b)
    m = chunks * b
    margin = clip_margin("float64", m, d * d)
    usable = usable_clip_bound(jnp.asarray(bound, jnp.float64), "float64") / margin
    # Pad with weight-0 copies of existing records (finite whenever the data are; a
    # non-finite row is zeroed anyway), then split into ``chunks`` blocks of ``b``.
    index = jnp.arange(m) % n
    weights = (jnp.arange(m) < n).astype(jnp.float64).reshape(chunks, b)
    blocks = jax.tree_util.tree_map(
        lambda leaf: jnp.take(leaf, index, axis=0).reshape(
            (chunks, b) + leaf.shape[1:]
        ),
        data,
    )
    hess = jax.vmap(jax.hessian(loss_fn), in_axes=(None, 0))

    def add(total: Array, block: tuple[Any, Array]) -> tuple[Array, None]:
        records, w = block
        return total + _clipped_hessian_sum(hess(x, records), w, usable), None

    total, _ = jax.lax.scan(add, jnp.zeros(d * d, jnp.float64), (blocks, weights))
    return (total / n).reshape(d, d)


precision.scope_public(globals())
