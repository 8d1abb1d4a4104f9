r"""One batch of random bits per call, cut into the draws a fixed-budget sampler needs.

On XLA:CPU every ``jax.random`` call (each ``split``, ``uniform``, ``normal``,
``randint``) lowers to its own rolled threefry loop, a fixed cost of several
microseconds whatever the number of values. A step of the proximal sampler made about
fourteen such calls for a few thousand words in all, so most of its time went to loop
overhead, not to bits. :class:`WordStream` draws every 32-bit word a call needs with one
``jax.random.bits`` and hands them out in a static order; the conversions reproduce the
laws of ``jax.random`` that the samplers' TV accounting is written for:

* :meth:`WordStream.uniform`: float64 on the grid of multiples of ``2^-52`` in
  ``[0, 1)`` (52 random mantissa bits, as ``jax.random.uniform``), then scaled to
  ``[minval, maxval)`` and clamped below at ``minval``, as ``jax.random.uniform``;
* :meth:`WordStream.normal`: ``sqrt(2) erfinv(u)`` with ``u`` uniform on
  ``[nextafter(-1, 0), 1)``, as ``jax.random.normal``;
* :meth:`WordStream.index`: a uniform 128-bit integer reduced modulo ``n``, exactly
  (four words, Horner's rule in ``uint64``), for ``n <= 2^32``; its TV distance to the
  uniform law on ``n`` values is ``r (n - r) / (n 2^128) <= 2^-67`` with
  ``r = 2^128 mod n``, the model of ``dpsample.samplers.rgo``'s index term.

Threefry's words are independent and uniform (as every ``jax.random`` call assumes), so
disjoint slices of one batch are independent draws. The stream works in float64 and
``uint64``: call it inside the library's float64 scope (:mod:`dpsample._src.precision`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from dpsample.types import Array, PRNGKey

__all__ = [
    "WordStream",
    "UNIFORM_WORDS",
    "NORMAL_WORDS",
    "INDEX_WORDS",
    "MAX_INDEX_RANGE",
]

UNIFORM_WORDS = 2
"""32-bit words per float64 uniform (52 of the 64 bits are used, as ``jax.random``)."""

NORMAL_WORDS = UNIFORM_WORDS
"""32-bit words per float64 standard normal (one uniform)."""

INDEX_WORDS = 4
"""32-bit words per uniform index (a 128-bit integer reduced modulo ``n``)."""

MAX_INDEX_RANGE = 2**32
"""Largest ``n`` for :meth:`WordStream.index` (Horner's rule stays below ``2^64``)."""

_ONE_BITS = np.uint64(0x3FF0000000000000)  # the bits of float64 1.0


class WordStream:
    """A static cursor over one batch of random 32-bit words.

    Each method takes the next unused words (the offsets are Python integers, fixed at
    trace time), so the same code draws the same words from the same key. Draw the
    batch with :meth:`draw`, sized from the ``*_WORDS`` constants, and check with
    :meth:`check_used` that the sizes agree.

    Args:
        words: A ``uint32`` array of shape ``(size,)``.

    Examples:
        >>> import jax
        >>> from dpsample._src import precision
        >>> from dpsample._src.random_words import WordStream, UNIFORM_WORDS
        >>> with precision.float64():
        ...     stream = WordStream.draw(jax.random.key(0), 3 * UNIFORM_WORDS)
        ...     u = stream.uniform((3,))
        ...     stream.check_used()
        >>> u.shape, bool(((u >= 0) & (u < 1)).all())
        ((3,), True)
    """

    def __init__(self, words: Array):
        if words.ndim != 1 or words.dtype != jnp.uint32:
            raise ValueError(
                f"Expected a 1-D uint32 array, got {words.dtype}{words.shape}"
            )
        self.words = words
        self.size = int(words.shape[0])
        self.used = 0

    @classmethod
    def draw(cls, rng_key: PRNGKey, size: int) -> WordStream:
        """``size`` words from one ``jax.random.bits`` call."""
        return cls(jax.random.bits(rng_key, (max(int(size), 0),), jnp.uint32))

    def take(self, count: int) -> Array:
        """The next ``count`` words (a static slice)."""
        count = int(count)
        if self.used + count > self.size:
            raise ValueError(
                f"the stream has {self.size - self.used} words left, {count} asked"
            )
        out = self.words[self.used : self.used + count]
        self.used += count
        return out

    def check_used(self) -> None:
        """Raise if words were left over (a sizing rule out of step with the draws)."""
        if self.used != self.size:
            raise ValueError(f"drew {self.size} words, used {self.used}")

    def _bits64(self, shape: tuple[int, ...]) -> Array:
        num = int(np.prod(shape, dtype=np.int64))
        pairs = self.take(2 * num).reshape(num, 2).astype(jnp.uint64)
        return ((pairs[:, 0] << np.uint64(32)) | pairs[:, 1]).reshape(shape)

    def uniform(
        self, shape: tuple[int, ...], minval: float = 0.0, maxval: float = 1.0
    ) -> Array:
        """Float64 uniforms on ``[minval, maxval)``, as ``jax.random.uniform``."""
        mantissa = self._bits64(shape) >> np.uint64(12)
        unit = jax.lax.bitcast_convert_type(mantissa | _ONE_BITS, jnp.float64) - 1.0
        return jnp.maximum(minval, unit * (maxval - minval) + minval)

    def normal(self, shape: tuple[int, ...]) -> Array:
        """Float64 standard normals, as ``jax.random.normal``."""
        lo = float(np.nextafter(np.float64(-1.0), np.float64(0.0)))
        u = self.uniform(shape, lo, 1.0)
        return np.sqrt(2.0) * jax.scipy.special.erfinv(u)

    def index(self, shape: tuple[int, ...], n: int) -> Array:
        """Int64 indices in ``[0, n)``, a 128-bit integer modulo ``n <= 2^32``."""
        n = int(n)
        if not 1 <= n <= MAX_INDEX_RANGE:
            raise ValueError(f"Expected 1 <= n <= 2^32, got {n}")
        num = int(np.prod(shape, dtype=np.int64))
        words = self.take(INDEX_WORDS * num).reshape(num, INDEX_WORDS)
        words = words.astype(jnp.uint64)
        span, shift = np.uint64(n), np.uint64(32)
        rest = ((words[:, 0] << shift) | words[:, 1]) % span
        for j in range(2, INDEX_WORDS):  # rest < n <= 2^32: rest * 2^32 + w < 2^64
            rest = ((rest << shift) | words[:, j]) % span
        return rest.astype(jnp.int64).reshape(shape)
