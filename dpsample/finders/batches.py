"""Batches of the gradient oracles: who is in each release (public randomness).

The sampling schemes of :mod:`dpsample.finders.oracles` and how one batch of each is
drawn, as a fixed-shape, jittable function of a key (never of the data):

* ``"full_batch"``: every example, weight 1;
* ``"without_replacement"``: a uniform size-``b`` subset, drawn afresh at every call
  and *exactly* uniform: the first ``b`` distinct values of iid uniform indices
  (``O(b log b)`` work) when ``b`` is small against ``n``, else the ``O(n)`` sort-free
  smallest-keys method (boundary ties are redrawn);
* ``"poisson"``: every example joins with probability ``q = b / n``, in a fixed
  padded buffer of ``max_batch_size`` slots, found from geometric gaps between the
  joined indices (``O(max_batch_size)`` work); an overflow keeps a uniformly random
  subset of that size (dp_accounting's truncated Poisson event, accounted by the
  oracles), found in ``O(n)`` on that event only.

Every draw's work depends on the key (the sampling randomness) only, never on the
data.
* ``"fresh"``: the caller's disjoint batches, rows of one public random permutation
  (:func:`fresh_batches`; the population variants of seed 000).

What each scheme costs in privacy is :mod:`dpsample.finders.accounting`'s and the
oracles' business; this module only draws.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from dpsample._src import precision, validation
from dpsample.finders import accounting
from dpsample.problem import ProblemSpec
from dpsample.types import Array, ArrayLike, PRNGKey

__all__ = [
    "draw_batch",
    "fresh_batches",
    "gather",
    "resolve_sampling",
    "sample_batch",
]


def _redrawn(rng_key: PRNGKey, draw: Callable[[PRNGKey], tuple[Array, Array]]) -> Array:
    """``draw(key) -> (value, reject)``, redrawn with folded keys until accepted.

    The rejection events used here are symmetric in the indices, so the accepted
    value has the ideal law exactly; the loop depends on the keys only, never on the
    data.
    """

    def redraw(state: tuple[Any, Array, Array]) -> tuple[Any, Array, Array]:
        key = jax.random.fold_in(state[0], 1)
        return (key, *draw(key))

    value, reject = draw(rng_key)
    return jax.lax.while_loop(lambda s: s[2], redraw, (rng_key, value, reject))[1]


def _compact(mask: Array, size: int, fill: int = 0) -> Array:
    """The indices where ``mask`` holds, in increasing order, in ``size`` slots.

    One prefix sum and one scatter (no sort); indices beyond ``size`` are dropped and
    unused slots hold ``fill``.
    """
    slot = jnp.where(mask, jnp.cumsum(mask) - 1, size)  # size: dropped
    ar = jnp.arange(mask.shape[0], dtype=jnp.int32)
    return jnp.full(size, fill, jnp.int32).at[slot].set(ar, mode="drop")


def _uniform_subset_of(rng_key: PRNGKey, mask: Array, k: int) -> Array:
    """A uniformly random ``k``-subset of the indices where ``mask`` holds (``> k``).

    The indices of the ``k`` smallest of iid uniform keys over the masked-in
    indices (masked-out keys count as larger than every other). A tie at the
    boundary (the ``k``-th and ``(k+1)``-th smallest keys equal, both masked in)
    would break symmetry, so such a draw is redrawn (:func:`_redrawn`): the subset is
    then *exactly* uniform, not only up to the tie probability (about ``n^2 2^-53``).
    """
    n = mask.shape[0]

    def draw(key: PRNGKey) -> tuple[Array, Array]:
        keys = jnp.where(mask, jax.random.uniform(key, (n,), jnp.float64), 2.0)
        neg, idx = jax.lax.top_k(-keys, min(k + 1, n))
        tie = (neg[k - 1] == neg[k]) & (-neg[k] < 1.5) if k < n else jnp.bool_(False)
        return idx[:k].astype(jnp.int32), tie

    return _redrawn(rng_key, draw)


#: Slots for the boundary bucket of :func:`_uniform_subset` (a draw whose boundary
#: bucket holds more keys, probability below 1e-30, is redrawn).
_BUCKET_CAP = 32


def _uniform_subset(rng_key: PRNGKey, n: int, k: int) -> Array:
    """A uniformly random ``k``-subset of ``range(n)`` as ``(k,)`` int32 indices.

    The subset is the indices of the ``k`` smallest of ``n`` iid uniform 32-bit keys,
    found in ``O(n)`` without a sort: a histogram over the keys' top
    ``ceil(log2 n)`` bits locates the bucket holding the ``k``-th smallest key, every
    key below that bucket is in, and the bucket's few keys (compacted into
    :data:`_BUCKET_CAP` slots) are ranked pairwise. A draw is redrawn (with a folded
    key) when two keys in the boundary bucket are equal or the bucket overflows the
    slots; both events are symmetric in the indices, so the accepted subset is
    *exactly* uniform (given ideal random bits), not only up to the tie probability.
    Indices come out in increasing order.
    """
    if k >= n:
        return jnp.arange(n, dtype=jnp.int32)
    nbits = max(1, math.ceil(math.log2(n)))
    shift, nb, cap = 32 - nbits, 1 << nbits, _BUCKET_CAP

    def draw(key: PRNGKey) -> tuple[Array, Array]:
        keys = jax.random.bits(key, (n,), jnp.uint32)
        bucket = (keys >> shift).astype(jnp.int32)
        counts = jnp.zeros(nb, jnp.int32).at[bucket].add(1)
        cum = jnp.cumsum(counts)
        boundary = jnp.argmax(cum >= k)
        size = counts[boundary]
        need = k - (cum[boundary] - size)  # keys taken from the boundary bucket
        bidx = _compact(bucket == boundary, cap, fill=n)  # n: no index
        bkey = keys.at[bidx].get(mode="fill", fill_value=0)
        valid = jnp.arange(cap) < size
        pair = valid[:, None] & valid[None, :]
        rank = jnp.sum((bkey[None, :] < bkey[:, None]) & pair, axis=1)
        tie = jnp.any(
            (bkey[None, :] == bkey[:, None]) & pair & ~jnp.eye(cap, dtype=bool)
        )
        chosen = jnp.zeros(n, bool).at[bidx].set(valid & (rank < need), mode="drop")
        return _compact((bucket < boundary) | chosen, k), tie | (size > cap)

    return _redrawn(rng_key, draw)


#: Without-replacement batches use :func:`_distinct_draws` when its ``k`` draws
#: are at most ``n / _DISTINCT_FRACTION`` (else the ``O(n)`` :func:`_uniform_subset`).
_DISTINCT_FRACTION = 4


def _distinct_draw_count(n: int, k: int) -> int:
    """Draws :func:`_distinct_draws` makes for a ``k``-subset of ``range(n)``.

    ``k`` plus a margin over the expected number of repeats (about ``k^2 / (2n)``),
    so that fewer than ``k`` distinct values (a redraw) is rare; the margin moves
    the cost only, never the law.
    """
    return k + 2 * math.ceil(k * k / n) + 16


def _distinct_draws(rng_key: PRNGKey, n: int, k: int) -> Array:
    """A uniformly random ``k``-subset of ``range(n)`` in ``O(k log k)`` work.

    The first ``k`` distinct values of iid uniform indices, in order of first
    appearance, are a uniform ordered ``k``-sample without replacement, so as a set
    a uniform ``k``-subset. :func:`_distinct_draw_count` draws are made as 32-bit
    words; a word at or above ``n floor(2^32 / n)`` is skipped (the rest, reduced
    mod ``n``, are then exactly uniform). Fewer than ``k`` distinct accepted values
    is an event symmetric in the indices, redrawn by :func:`_redrawn`, so the
    accepted subset is *exactly* uniform (given ideal random bits). Indices come out
    in increasing order.
    """
    draws = _distinct_draw_count(n, k)
    limit = (2**32 // n) * n

    def draw(key: PRNGKey) -> tuple[Array, Array]:
        words = jax.random.bits(key, (draws,), jnp.uint32)
        ok = words < jnp.uint32(limit % 2**32) if limit < 2**32 else words >= 0
        value = jnp.where(ok, (words % jnp.uint32(n)).astype(jnp.int32), n)
        order = jnp.argsort(value, stable=True)  # by value, ties by position
        sv = value[order]
        first = jnp.concatenate([jnp.ones(1, bool), sv[1:] != sv[:-1]]) & (sv < n)
        pos = jnp.where(first, order, draws).astype(jnp.int32)  # draws: not a first
        earliest = -jax.lax.top_k(-pos, k)[0]
        chosen = value.at[earliest].get(mode="fill", fill_value=n)
        return jnp.sort(chosen), jnp.sum(first) < k

    return _redrawn(rng_key, draw)


def _without_replacement(rng_key: PRNGKey, n: int, k: int) -> Array:
    """A uniform ``k``-subset of ``range(n)``, increasing (method by ``n``, ``k``)."""
    if k < n and _DISTINCT_FRACTION * _distinct_draw_count(n, k) <= n:
        return _distinct_draws(rng_key, n, k)
    return _uniform_subset(rng_key, n, k)


def _poisson(rng_key: PRNGKey, n: int, q: float, m: int) -> tuple[Array, Array]:
    """A Poisson(``q``) batch of ``range(n)`` in ``m`` padded slots.

    Membership by iid Bernoulli(``q``) is the same law as gaps between consecutive
    joined indices (and before the first) that are iid Geometric(``q``) on
    ``{0, 1, ...}``: ``m + 1`` gaps, inverse-CDF from float64 uniforms, place the
    first ``m + 1`` joined indices in ``O(m)`` work. If the ``(m + 1)``-th lies
    below ``n`` the batch overflows: the indices after it are then iid
    Bernoulli(``q``) independently of the gaps (the memoryless property), drawn in
    ``O(n)`` on that event only, and a uniformly random ``m``-subset of all joined
    indices is kept (the truncated event).
    """
    k_gap, k_rest, k_order = jax.random.split(rng_key, 3)
    u = jax.random.uniform(k_gap, (m + 1,), jnp.float64)
    if q >= 1.0:
        gaps = jnp.zeros(m + 1, jnp.float64)
    else:
        gaps = jnp.minimum(jnp.floor(jnp.log1p(-u) / math.log1p(-q)), float(n))
    pos = jnp.cumsum(gaps + 1.0) - 1.0  # exact: integers below 2^53
    joined = pos < n
    idx = jnp.where(joined, pos, 0.0).astype(jnp.int32)

    def compact(_: None) -> tuple[Array, Array]:
        return idx[:m], joined[:m].astype(jnp.float64)

    def truncate(_: None) -> tuple[Array, Array]:
        ar = jnp.arange(n, dtype=jnp.int32)
        later = jax.random.uniform(k_rest, (n,), jnp.float64) < q
        mask = ((ar > idx[m]) & later).at[idx].set(True)
        return _uniform_subset_of(k_order, mask, m), jnp.ones(m, jnp.float64)

    return jax.lax.cond(joined[m], truncate, compact, None)


def sample_batch(
    rng_key: PRNGKey,
    n: int,
    *,
    sampling: str,
    batch_size: int,
    max_batch_size: int | None = None,
) -> tuple[Array, Array]:
    """Draw one batch as ``(indices, weights)`` of a fixed shape (jittable).

    * ``"full_batch"``: ``arange(n)``, weights 1.
    * ``"without_replacement"``: an exactly uniform size-``batch_size`` subset in
      increasing order, weights 1 (``O(b log b)`` work for ``b`` small against
      ``n``, else ``O(n)``; see the module docstring).
    * ``"poisson"``: each index joins independently with probability
      ``batch_size / n``; the joined indices fill the ``max_batch_size`` slots in
      index order (``O(max_batch_size)`` work, by geometric gaps), the rest are
      padding (weight 0, index 0). If more join than there are slots (an event of
      probability ``overflow_probability``, accounted by the truncated event), a
      uniformly random subset of the joined indices is kept, as that event assumes
      (``O(n)`` work on that event only).

    Args:
        rng_key: A JAX PRNG key.
        n: Dataset size.
        sampling: The scheme.
        batch_size: ``b`` (expected size for Poisson).
        max_batch_size: Padded size for Poisson (default
            :func:`~dpsample.finders.accounting.poisson_max_batch`).

    Returns:
        ``(indices, weights)``, int and float64 arrays of the same length.

    Examples:
        >>> import jax
        >>> from dpsample.finders.batches import sample_batch
        >>> idx, w = sample_batch(jax.random.key(0), 10, sampling="poisson",
        ...                       batch_size=2, max_batch_size=6)
        >>> idx.shape, w.shape
        ((6,), (6,))
    """
    if sampling == "full_batch":
        return jnp.arange(n), jnp.ones(n, jnp.float64)
    if sampling == "without_replacement":
        idx = _without_replacement(rng_key, n, batch_size)
        return idx, jnp.ones(batch_size, jnp.float64)
    if sampling == "poisson":
        m = (
            accounting.poisson_max_batch(n, batch_size / n)
            if max_batch_size is None
            else max_batch_size
        )
        return _poisson(rng_key, n, batch_size / n, m)
    raise ValueError(
        f"sample_batch draws full_batch, poisson or without_replacement batches, got "
        f"{sampling!r}"
    )


def fresh_batches(
    rng_key: PRNGKey, n: int, *, batch_size: int, num_batches: int
) -> Array:
    """Disjoint batches from one public random permutation (``"fresh"`` oracles).

    The permutation depends on the key only (never on the data), so the batches are
    public; each example appears in at most one row.

    Args:
        rng_key: A JAX PRNG key.
        n: Dataset size.
        batch_size: Rows' length ``b``.
        num_batches: Number of rows ``k``; needs ``k b <= n``.

    Returns:
        Indices of shape ``(num_batches, batch_size)``.

    Raises:
        ValueError: If ``num_batches * batch_size > n`` (samples would be reused).

    Examples:
        >>> import jax
        >>> from dpsample.finders.batches import fresh_batches
        >>> fresh_batches(jax.random.key(0), 10, batch_size=3, num_batches=3).shape
        (3, 3)
    """
    validation.check_key(rng_key)
    n = validation.positive_int("n", n)
    b = validation.positive_int("batch_size", batch_size)
    k = validation.positive_int("num_batches", num_batches)
    if b * k > n:
        raise ValueError(
            f"fresh batches need num_batches * batch_size = {k * b} <= n = {n} "
            "(each sample is used at most once)"
        )
    perm = jax.random.permutation(rng_key, n)
    return perm[: k * b].reshape(k, b)


def resolve_sampling(
    spec: ProblemSpec,
    sampling: str,
    batch_size: int | None,
    max_batch_size: int | None,
) -> tuple[int, int, float]:
    """Validate a sampling scheme and its sizes (public inputs only).

    Args:
        spec: The :class:`~dpsample.problem.ProblemSpec` (its ``n``).
        sampling: One of :data:`~dpsample.finders.accounting.SAMPLING_SCHEMES`.
        batch_size: ``b`` (expected size for Poisson); omitted or ``n`` for the
            full batch.
        max_batch_size: Poisson padding (default: overflow probability
            ``<= 1e-12``, :func:`~dpsample.finders.accounting.poisson_max_batch`).

    Returns:
        ``(b, m, overflow_probability)``: the divisor, the padded number of rows
        and the probability that a Poisson batch overflows ``m``.

    Raises:
        ValueError: On an unknown scheme or inconsistent sizes.

    Examples:
        >>> import jax.numpy as jnp
        >>> from dpsample import Ball, Problem
        >>> from dpsample.finders.batches import resolve_sampling
        >>> spec = Problem(lambda x, z: jnp.sum(x * z), jnp.ones((1000, 2)),
        ...                Ball(1.0, dim=2)).spec
        >>> resolve_sampling(spec, "poisson", 10, None)[:2]
        (10, 39)
    """
    if sampling not in accounting.SAMPLING_SCHEMES:
        raise ValueError(
            f"Expected sampling in {accounting.SAMPLING_SCHEMES}, got {sampling!r}"
        )
    n = spec.n
    if sampling == "full_batch":
        if batch_size is not None and int(batch_size) != n:
            raise ValueError(
                f"full_batch uses all n={n} examples; got batch_size={batch_size}"
            )
        if max_batch_size is not None:
            raise ValueError("max_batch_size applies to poisson sampling only")
        return n, n, 0.0
    if batch_size is None:
        raise ValueError(f"sampling={sampling!r} needs a batch_size")
    b = spec.check_batch_size(batch_size)
    if sampling != "poisson":
        if max_batch_size is not None:
            raise ValueError("max_batch_size applies to poisson sampling only")
        return b, b, 0.0
    q = b / n
    if max_batch_size is None:
        m = accounting.poisson_max_batch(n, q)
    else:
        m = spec.check_batch_size(max_batch_size, "max_batch_size")
    return b, m, accounting.poisson_overflow_probability(n, q, m)


def gather(data: Any, idx: Array) -> Any:
    """The rows ``idx`` of every leaf of ``data`` (jittable)."""
    return jax.tree.map(lambda leaf: leaf[idx], data)


def draw_batch(
    structure: Any,
    rng_key: PRNGKey,
    data: Any,
    indices: ArrayLike | None = None,
) -> tuple[Any, Array]:
    """``(batch pytree, weights)`` of one oracle call (jittable).

    Args:
        structure: Anything with the attributes ``sampling``, ``n``, ``batch_size``
            and ``max_batch_size`` (an oracle's static structure,
            :class:`~dpsample.finders.functional.FirstKindFn`).
        rng_key: Key of the batch draw (unused for the full batch and fresh
            batches).
        data: The data pytree (leading axis ``n``).
        indices: The caller's disjoint batch (``"fresh"`` only).

    Returns:
        The gathered batch and its weights (``0`` on Poisson padding rows).

    Raises:
        ValueError: Indices missing for a fresh oracle, of the wrong shape, or
            given to another scheme (public, structural errors).
    """
    if structure.sampling == "fresh":
        if indices is None:
            raise ValueError("a 'fresh' oracle needs the batch indices")
        idx = jnp.asarray(indices)
        if idx.shape != (structure.batch_size,):
            raise ValueError(
                f"Expected indices of shape ({structure.batch_size},), got {idx.shape}"
            )
        return gather(data, idx), jnp.ones(structure.batch_size)
    if indices is not None:
        raise ValueError(
            f"indices are only accepted by 'fresh' oracles, not {structure.sampling!r} "
            "(the accounting assumes the oracle's own sampling)"
        )
    if structure.sampling == "full_batch":
        return data, jnp.ones(structure.n, jnp.float64)
    idx, w = sample_batch(
        rng_key,
        structure.n,
        sampling=structure.sampling,
        batch_size=structure.batch_size,
        max_batch_size=structure.max_batch_size,
    )
    return gather(data, idx), w


precision.scope_public(globals())
