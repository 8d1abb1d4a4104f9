"""Streaming over a net: chunked loss evaluation, Gumbel-max and running minimum.

The jitted cores shared by :func:`~dpsample.nets.exponential_mechanism` (private
Gumbel-max selection) and :func:`~dpsample.nets.net_minimum` (the non-private
diagnostic) scan a net chunk by chunk inside one ``lax.fori_loop`` carrying only the
running best, so memory does not grow with the net. They are keyed on the loss
function, the chunk size, the number of chunks, the net's static spec and whether a
progress bar is drawn (:mod:`dpsample.progress`, one report per 1% of the chunks at
most; it changes no result); the data, the inverse temperature and the key are traced
operands.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from dpsample import progress
from dpsample._src import precision, validation
from dpsample.nets.grid import GridNet
from dpsample.nets.points import PointNet
from dpsample.types import Array, PRNGKey

__all__ = [
    "CHUNK_LIMITS",
    "NOISE_BLOCK",
    "auto_chunk_size",
    "block_gumbel",
    "chunk_limits",
    "chunk_rule",
    "jit_net",
    "net_point",
    "resolve_chunk_size",
    "risk_batch",
    "stream_argmax",
    "stream_min",
]

NOISE_BLOCK = 256
"""Gumbel noise is drawn in blocks of this many consecutive flat indices.

Block ``b`` uses the key ``fold_in(key, b)``, so the noise attached to a candidate
depends only on its flat index: the output for a given key does not depend on the
chunk size, which must be a multiple of this block.
"""

#: ``{backend: (largest chunk, largest chunk x n)}`` of the default chunk size. On
#: the CPU a chunk's ``(chunk, n)`` float64 loss matrix stays within 32 MiB (the
#: caches); an accelerator is fed much larger chunks (2 GiB of loss values), or its
#: many cores idle between small kernels (``benchmarks/bench_gpu.py``, docs/gpu.md).
CHUNK_LIMITS = {"cpu": (65536, 1 << 22), "accelerator": (1 << 20, 1 << 28)}


def block_gumbel(rng_key: PRNGKey, start: Array, chunk_size: int) -> Array:
    """Gumbel noise for flat indices ``[start, start + chunk_size)``.

    Block ``b = index // NOISE_BLOCK`` draws its ``NOISE_BLOCK`` values from
    ``fold_in(rng_key, b)``, so each index gets the same noise whatever the chunking.
    """
    first = start // NOISE_BLOCK
    blocks = first + jnp.arange(chunk_size // NOISE_BLOCK, dtype=jnp.int64)

    def one(b: Array) -> Array:
        k = jax.random.fold_in(rng_key, b.astype(jnp.uint32))
        return jax.random.gumbel(k, (NOISE_BLOCK,), dtype=jnp.float64)

    return jax.vmap(one)(blocks).reshape(chunk_size)


def risk_batch(loss_fn: Callable[..., Array], xs: Array, data: Any) -> Array:
    """``F_D`` at each row of ``xs``: mean over the examples of ``loss_fn(x, z)``."""
    per_example = jax.vmap(loss_fn, in_axes=(None, 0))
    return jax.vmap(lambda x: jnp.mean(per_example(x, data)))(xs)


def net_point(net: GridNet | PointNet, index: Array) -> Array:
    """The net point at a (traced) flat index."""
    if isinstance(net, GridNet):
        return net.decode(index)[0]
    return jnp.asarray(net.points, jnp.float64)[index]


_STATIC = ("loss_fn", "chunk_size", "num_chunks", "show_progress")


@functools.partial(jax.jit, static_argnames=_STATIC)
def stream_argmax(
    rng_key: PRNGKey,
    data: Any,
    net: GridNet | PointNet,
    inverse_temperature: Array,
    *,
    loss_fn: Callable[..., Array],
    chunk_size: int,
    num_chunks: int,
    show_progress: bool = False,
) -> tuple[Array, Array]:
    """Gumbel-max over the net, one chunk at a time; returns (point, flat index).

    ``net`` is a pytree argument: a :class:`GridNet`'s row table (or a
    :class:`PointNet`'s points) is dynamic, its spec static.
    """

    def body(i: Array, carry: tuple[Array, Array]) -> tuple[Array, Array]:
        best_score, best_index = carry
        start = i.astype(jnp.int64) * chunk_size
        pts, mask = net.chunk(i, chunk_size)
        risk = risk_batch(loss_fn, pts, data)
        noise = block_gumbel(rng_key, start, chunk_size)
        scores = -inverse_temperature * risk + noise
        scores = jnp.where(mask & ~jnp.isnan(scores), scores, -jnp.inf)
        j = jnp.argmax(scores)
        better = scores[j] > best_score
        return (
            jnp.where(better, scores[j], best_score),
            jnp.where(better, start + j, best_index),
        )

    init = (jnp.array(-jnp.inf, jnp.float64), jnp.array(0, jnp.int64))
    label = "net exponential mechanism (chunks)"
    _, best = progress.fori_loop(
        0, num_chunks, body, init, label=label, show=show_progress
    )
    return net_point(net, best), best


@functools.partial(jax.jit, static_argnames=_STATIC)
def stream_min(
    data: Any,
    net: GridNet | PointNet,
    *,
    loss_fn: Callable[..., Array],
    chunk_size: int,
    num_chunks: int,
    show_progress: bool = False,
) -> tuple[Array, Array, Array]:
    """Running minimum of ``F_D`` over the net; returns (point, risk, flat index).

    Same chunks as :func:`stream_argmax`; ties go to the smallest flat index, and
    NaN risks are never selected.
    """

    def body(i: Array, carry: tuple[Array, Array]) -> tuple[Array, Array]:
        best_risk, best_index = carry
        start = i.astype(jnp.int64) * chunk_size
        pts, mask = net.chunk(i, chunk_size)
        risk = risk_batch(loss_fn, pts, data)
        risk = jnp.where(mask & ~jnp.isnan(risk), risk, jnp.inf)
        j = jnp.argmin(risk)
        better = risk[j] < best_risk
        return (
            jnp.where(better, risk[j], best_risk),
            jnp.where(better, start + j, best_index),
        )

    init = (jnp.array(jnp.inf, jnp.float64), jnp.array(0, jnp.int64))
    best_risk, best = progress.fori_loop(
        0, num_chunks, body, init, label="net minimum (chunks)", show=show_progress
    )
    return net_point(net, best), best_risk, best


def chunk_limits(backend: str | None = None) -> tuple[int, int]:
    """``(largest chunk, largest chunk x n)`` of the default chunk on ``backend``.

    ``backend`` defaults to JAX's default backend (public: it is where the
    mechanism runs, not anything about the data); every backend but the CPU gets
    :data:`CHUNK_LIMITS`'s accelerator row.
    """
    if backend is None:
        backend = jax.default_backend()
    return CHUNK_LIMITS["cpu" if backend == "cpu" else "accelerator"]


def chunk_rule(backend: str | None = None) -> str:
    """The default chunk's rule in words, as a plan's parameter table states it.

    Examples:
        >>> from dpsample.nets.stream import chunk_rule
        >>> chunk_rule("cpu"), chunk_rule("gpu")
        ('<= 65536, chunk x n <= 4M values', '<= 1048576, chunk x n <= 256M values')
    """
    size, elements = chunk_limits(backend)
    return f"<= {size}, chunk x n <= {elements >> 20}M values"


def auto_chunk_size(n: int, num_candidates: int, backend: str | None = None) -> int:
    """The default chunk size, from the backend's :func:`chunk_limits`.

    On the CPU: at most 65536 rows, halved (down to :data:`NOISE_BLOCK`) while the
    chunk's ``(chunk, n)`` float64 loss matrix exceeds ``2^22`` values (32 MiB); on
    an accelerator at most ``2^20`` rows and ``2^28`` values (2 GiB). Then halved
    while half a chunk still holds every candidate. The chunk changes speed and
    memory only: the noise of a candidate depends on its index alone
    (:data:`NOISE_BLOCK`), so the release is the same.

    Examples:
        >>> from dpsample.nets.stream import auto_chunk_size
        >>> auto_chunk_size(100, 10**6, "cpu"), auto_chunk_size(100, 300, "cpu")
        (32768, 512)
        >>> auto_chunk_size(569, 10**7, "gpu")
        262144
    """
    size, elements = chunk_limits(backend)
    while size > NOISE_BLOCK and size * n > elements:
        size //= 2
    while size > NOISE_BLOCK and size // 2 >= num_candidates:
        size //= 2
    return size


def resolve_chunk_size(chunk_size: int | None, n: int, num_candidates: int) -> int:
    """The caller's chunk size, or the default :func:`auto_chunk_size`.

    A chunk size given must be a positive multiple of :data:`NOISE_BLOCK`.

    Raises:
        ValueError: A chunk size that is not a positive multiple of the block.
    """
    if chunk_size is None:
        return auto_chunk_size(n, num_candidates)
    chunk_size = validation.positive_int("chunk_size", chunk_size)
    if chunk_size % NOISE_BLOCK:
        raise ValueError(
            f"Expected chunk_size={chunk_size} to be a multiple of "
            f"NOISE_BLOCK={NOISE_BLOCK}"
        )
    return chunk_size


def jit_net(net: GridNet | PointNet) -> GridNet | PointNet:
    """The net as passed to the jitted core (PointNet: float64 points only)."""
    if isinstance(net, GridNet):
        return net
    return PointNet(jnp.asarray(net.points, jnp.float64), None)


precision.scope_public(globals())
