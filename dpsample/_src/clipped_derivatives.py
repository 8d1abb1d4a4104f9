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
  ``min(1, (L/F) / ||H_i||_F)`` (Frobenius norm; ``||H||_2 <= ||H||_F``, so the
  clipped ``H_i`` has operator norm ``<= L``) and the scaled Hessians are summed as
  rows of length ``d²`` by :func:`~dpsample._src.clipping.clipped_sum`, with the
  margin ``F = clip_margin("float64", m, d²)`` over the ``m`` (padded) rows. By
  :func:`~dpsample._src.clipping.clip_margin` (its bound holds for any summation
  order or blocking, so for the chunked sum below), the computed mean ``Ĥ`` has
  ``||Ĥ||_2 <= ||Ĥ||_F <= L`` (so the fixed-work eigenvalue's error bound
  ``η(d, L)`` of :func:`dpsample._src.fixed_eig.min_eigenvalue_error` applies with
  ``B = L``, no further margin) and two replace-one neighbours give computed means
  with ``||Ĥ - Ĥ'||_2 <= ||Ĥ - Ĥ'||_F <= 2L/n``, hence (Weyl) exact smallest
  eigenvalues at most ``2L/n`` apart.

Work and memory. A per-example Hessian is ``d x d``: the examples are processed in
``ceil(n / b)`` chunks of ``b = max(1, min(n, 2^22 // d²))`` examples (a
``lax.scan`` of fixed length; the last chunk is padded with weight-0 copies of
existing records), so at most ``b d² <= max(2^22, d²)`` float64 entries of
per-example Hessians (32 MiB, or one Hessian if ``d² > 2^22``) exist at a time. The
work is ``n`` per-example Hessians (``n d`` Hessian-vector products, the same count
as one full-data Hessian) plus ``O(n d²)`` for the norms and the sum, whatever the
data: no step depends on a value, and the chunk size depends on ``n`` and ``d``
only. Records whose clipped row is not finite contribute zero (public rule of
:func:`~dpsample._src.clipping.clip_coefficients`).

What clipping costs in utility: the clipped quantities equal the true ones only
where the declared bounds hold, the Hessian bound **in Frobenius norm** (up to
``sqrt(rank)`` times the operator norm). Where a clip is active the score is that of
the clipped mean (e.g. a shrunk negative eigenvalue), not of the empirical risk.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from dpsample._src import precision
from dpsample._src.clipping import (
    clip_margin,
    clipped_mean,
    clipped_sum,
    usable_clip_bound,
)
from dpsample.types import Array

__all__ = [
    "HESSIAN_CHUNK_ENTRIES",
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


def clipped_hessian_mean(loss_fn: Any, x: Array, data: Any, bound: Any) -> Array:
    r"""Mean of the per-example Hessians at ``x``, each clipped to ``||H_i||_F <= L``.

    ``(1/n) sum_i min(1, (L/F) / ||H_i||_F) H_i`` with the margin
    ``F = clip_margin("float64", m, d²)`` (``m`` the padded number of rows), computed
    in chunks of :func:`hessian_chunk` examples (module docstring: fixed work, memory
    ``b d²``). The computed mean has ``||Ĥ||_2 <= ||Ĥ||_F <= L`` and moves by at most
    ``2L/n`` in Frobenius (so in operator) norm when one record is replaced.
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
        >>> def loss(x, z):  # Hessian 2 z I: Frobenius norm 2 sqrt(2) |z|
        ...     return z * (x @ x)
        >>> with jax.enable_x64(True):
        ...     h = clipped_hessian_mean(loss, jnp.zeros(2), jnp.array([1.0, 0.0]), 1.0)
        >>> round(float(h[0, 0]), 6), round(float(h[0, 1]), 6)  # (1/sqrt 2) / 2
        (0.353553, 0.0)
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
        rows = hess(x, records).reshape(b, d * d)
        return total + clipped_sum(rows, w, usable, "float64"), None

    total, _ = jax.lax.scan(add, jnp.zeros(d * d, jnp.float64), (blocks, weights))
    return (total / n).reshape(d, d)


precision.scope_public(globals())
