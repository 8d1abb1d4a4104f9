"""Nets of a ball and the exponential mechanism over them (Theorem 5.8), streamed.

Theorem 5.8 of Ganesh, Liu, Oh and Thakurta runs the exponential mechanism with utility
``-F_D`` over an ``r``-net ``P`` of the domain ``K``. Nets of useful radius have
``(D/r)^d`` points, so this module never materialises them:

* :class:`GridNet` enumerates the cubic lattice net of a ball by a flat index over the
  net points only (row-compressed, via a small host-side row table), chunk by chunk;
  :func:`grid_net` builds one for a given spacing.
* :class:`PointNet` wraps an explicit, data-independent set of points, e.g. from
  :func:`random_net` (uniform points; :func:`random_net_size` gives a size that makes
  it an ``r``-net with a stated probability).
* :func:`exponential_mechanism` scans the net in chunks with Gumbel-max sampling, so
  its memory does not grow with the net.
* :func:`net_minimum` is a **non-private** diagnostic: the exact minimiser of the
  empirical risk over the same net, streamed the same way (never release it).

Nets depend only on public quantities (the domain, the spacing or a public key), never
on the data: that is what makes the exponential mechanism over them private.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from dpsample._src import precision, validation
from dpsample.domains import Ball
from dpsample.privacy import PrivacyGuarantee, PrivateResult
from dpsample.types import Array, ArrayLike, PRNGKey

__all__ = [
    "GridNet",
    "PointNet",
    "exponential_mechanism",
    "grid_net",
    "grid_net_size_bound",
    "net_minimum",
    "net_size_bound",
    "random_net",
    "random_net_size",
]

NOISE_BLOCK = 256
"""Gumbel noise is drawn in blocks of this many consecutive flat indices.

Block ``b`` uses the key ``fold_in(key, b)``, so the noise attached to a candidate
depends only on its flat index: the output for a given key does not depend on the
chunk size, which must be a multiple of this block.
"""

_MAX_CHUNK = 65536
_AUTO_CHUNK_ELEMENTS = 1 << 22  # chunk * n <= 4M float64 (32 MiB) per loss matrix
_MAX_ROWS = 1 << 24  # largest row table of a GridNet (rows of the enumeration)
_BUILD_BLOCK = 1 << 13  # rows per block while building the row table
_SLACK = 1e-12  # relative slack on the lattice threshold (keeps extra points only)


def _vector_isqrt(values: np.ndarray) -> np.ndarray:
    """Exact ``floor(sqrt(v))`` for non-negative int64 ``v`` (vectorised)."""
    root = np.floor(np.sqrt(values.astype(np.float64))).astype(np.int64)
    root = np.where(root * root > values, root - 1, root)
    return np.where((root + 1) * (root + 1) <= values, root + 1, root)


def _row_table(
    dim: int, half_width: int, threshold: int
) -> tuple[np.ndarray, np.ndarray]:
    """Host-side row table of the row-compressed enumeration (see :class:`GridNet`).

    Valid prefixes ``(j_1, ..., j_{d-1})`` (``sum j_k^2 <= threshold``, ``|j_k| <= m``)
    are built coordinate by coordinate, each extending only the valid shorter ones, into
    preallocated arrays filled in blocks of about ``_BUILD_BLOCK`` rows: ``O(rows * d)``
    time, ``O(rows * d)`` memory with ``rows <= (2m + 1)^(d - 1)`` and
    ``O(_BUILD_BLOCK + m)`` temporaries.

    Returns:
        ``(prefixes (rows, d - 1), offsets (rows + 1,))``, int64, rows in lexicographic
        order of the prefix (first coordinate most significant); row ``r`` holds the
        flat indices ``[offsets[r], offsets[r + 1])``, ``offsets[0] = 0``.

    Raises:
        ValueError: If there would be more than ``_MAX_ROWS`` rows.
    """
    m, t = half_width, threshold
    step = max(1, _BUILD_BLOCK // (2 * m + 1))  # parents per block
    prefixes = np.zeros((1, 0), np.int64)
    sq = np.zeros(1, np.int64)
    for k in range(dim - 1):
        widths = np.minimum(_vector_isqrt(t - sq), m)
        ends = np.cumsum(2 * widths + 1)
        total = int(ends[-1])
        if total > _MAX_ROWS:
            raise ValueError(
                f"The grid net would need a row table of more than {_MAX_ROWS} rows "
                f"(half-width {m} in dimension {dim}); increase spacing"
            )
        new_prefixes = np.empty((total, k + 1), np.int64)
        new_sq = np.empty(total, np.int64)
        for a in range(0, sq.shape[0], step):
            b = min(a + step, sq.shape[0])
            w = widths[a:b]
            counts = 2 * w + 1
            lo, hi = int(ends[a] - counts[0]), int(ends[b - 1])
            parent = np.repeat(np.arange(a, b), counts)
            first = np.cumsum(counts) - counts
            coord = np.arange(hi - lo, dtype=np.int64) - np.repeat(first + w, counts)
            new_prefixes[lo:hi, :k] = prefixes[parent]
            new_prefixes[lo:hi, k] = coord
            new_sq[lo:hi] = sq[parent] + coord * coord
        prefixes, sq = new_prefixes, new_sq
        del new_prefixes, new_sq, widths, ends
    rows = sq.shape[0]
    offsets = np.empty(rows + 1, np.int64)
    offsets[0] = 0
    for a in range(0, rows, _BUILD_BLOCK):
        b = min(a + _BUILD_BLOCK, rows)
        offsets[a + 1 : b + 1] = 2 * np.minimum(_vector_isqrt(t - sq[a:b]), m) + 1
    np.cumsum(offsets, out=offsets)
    return prefixes, offsets


@jax.tree_util.register_pytree_node_class
class GridNet:
    """Cubic lattice net of the ball ``K = B(c, R)``, streamed by a flat index.

    The net is the set of lattice points ``c + h j``, ``j`` in ``Z^d``, with
    ``||h j|| <= R + h sqrt(d)/2`` (tested exactly in integers as
    ``||j||^2 <= threshold``; then ``|j_k| <= m``), each **projected onto** ``K``.

    Enumeration (row-compressed): a *row* is a prefix ``(j_1, ..., j_{d-1})`` with
    ``s = sum j_k^2 <= threshold``; it holds the points whose last coordinate ranges
    over ``[-w, w]``, ``w = min(m, isqrt(threshold - s))``. A host-side int64 table
    of the valid rows (prefix and cumulative offset, from which ``w`` follows;
    ``O((2m+1)^(d-1))`` entries, never ``O(size)``) maps the flat index
    ``0 <= i < size()`` to its row by a binary search on the offsets
    (:func:`jax.numpy.searchsorted`), so every flat index is a net point: nothing
    outside the ball is evaluated. Rows are in lexicographic order of the prefix, and
    the flat order is the lexicographic order of ``j``; ``d = 1`` is a single row with
    the empty prefix.

    Covering guarantee: for ``x in K`` let ``g = c + h round((x - c)/h)`` be the
    nearest lattice point. Then ``||x - g|| <= h sqrt(d)/2``, so
    ``||g - c|| <= R + h sqrt(d)/2`` and ``g`` is in the net; projection onto ``K`` is
    non-expansive and fixes ``x``, so ``||Pi_K(g) - x|| <= ||g - x|| <= h sqrt(d)/2``.
    Hence every point of ``K`` is within :attr:`covering_radius` ``= h sqrt(d)/2`` of
    a net point, and every net point lies in ``K``. Several outside lattice points can
    project to the same boundary point; these duplicates are kept (the net is a
    multiset). They are data-independent, so they change the base measure of the
    exponential mechanism but not its privacy; :meth:`size` counts them.

    A ``GridNet`` is a JAX pytree: the public spec (centre, radius, spacing, ``m``,
    threshold, size) is static, the row table is its array leaves, so it is passed
    to jitted code as an argument, not baked in as a constant. Build one with
    :func:`grid_net`.

    Attributes:
        center: The centre ``c`` as a tuple of floats.
        radius: ``R``.
        spacing: Lattice spacing ``h``.
        half_width: ``m``, the largest ``|j_k|``.
        threshold: The largest ``||j||^2`` kept (an integer).
        prefixes: Row table, int64 ``(rows, d - 1)``: the first ``d - 1`` coordinates.
        offsets: Row table, int64 ``(rows + 1,)``: row ``r`` holds the flat indices
            ``[offsets[r], offsets[r + 1])`` (``2w + 1`` of them); ``offsets[0] = 0``
            and ``offsets[-1] = size()``.

    Examples:
        >>> import dpsample
        >>> from dpsample.domains import Ball
        >>> from dpsample.nets import grid_net
        >>> net = grid_net(Ball(1.0, dim=2), spacing=0.5)
        >>> net.size(), net.num_candidates, net.num_rows, round(net.covering_radius, 4)
        (21, 21, 5, 0.3536)
        >>> pts, mask = net.chunk(0, 256)
        >>> pts.shape, int(mask.sum())
        ((256, 2), 21)
    """

    __slots__ = (
        "center",
        "radius",
        "spacing",
        "half_width",
        "threshold",
        "prefixes",
        "offsets",
        "_size",
    )

    def __init__(
        self,
        center: tuple[float, ...],
        radius: float,
        spacing: float,
        half_width: int,
        threshold: int,
        prefixes: Any = None,
        offsets: Any = None,
        size: int | None = None,
    ) -> None:
        self.center = tuple(float(v) for v in center)
        self.radius = float(radius)
        self.spacing = float(spacing)
        self.half_width = int(half_width)
        self.threshold = int(threshold)
        if prefixes is None:
            prefixes, offsets = _row_table(
                len(self.center), self.half_width, self.threshold
            )
            size = int(offsets[-1])
        self.prefixes, self.offsets = prefixes, offsets
        self._size = int(size)  # type: ignore[arg-type]

    # ---- pytree protocol: static spec, dynamic row table -------------------------
    def tree_flatten(self) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        """Children: the row table; auxiliary data: the spec and the size."""
        return (self.prefixes, self.offsets), (*self._spec, self._size)

    @classmethod
    def tree_unflatten(cls, aux: tuple[Any, ...], children: Any) -> GridNet:
        """Rebuild from :meth:`tree_flatten`'s output (leaves may be tracers)."""
        net = object.__new__(cls)  # no validation: leaves may be tracers or None
        (net.center, net.radius, net.spacing, net.half_width, net.threshold) = aux[:5]
        net._size = aux[5]
        net.prefixes, net.offsets = children
        return net

    @property
    def _spec(self) -> tuple[Any, ...]:
        return (self.center, self.radius, self.spacing, self.half_width, self.threshold)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GridNet) and self._spec == other._spec

    def __hash__(self) -> int:
        return hash(self._spec)

    def __repr__(self) -> str:
        return (
            f"GridNet(center={self.center}, radius={self.radius}, "
            f"spacing={self.spacing}, half_width={self.half_width}, "
            f"threshold={self.threshold}, size={self._size}, "
            f"rows={self._rows})"
        )

    @property
    def dim(self) -> int:
        """Dimension ``d``."""
        return len(self.center)

    @property
    def side(self) -> int:
        """Number of lattice indices per axis, ``2m + 1``."""
        return 2 * self.half_width + 1

    @property
    def num_rows(self) -> int:
        """Number of rows of the table (valid prefixes), ``<= (2m + 1)^(d - 1)``."""
        return int(self.offsets.shape[0]) - 1

    @property
    def _rows(self) -> int | None:
        shape = getattr(self.offsets, "shape", None)
        return None if shape is None else int(shape[0]) - 1

    @property
    def num_candidates(self) -> int:
        """Length of the enumeration: equal to :meth:`size` (only net points).

        :meth:`chunk` pads the last chunk past it with masked rows.
        """
        return self._size

    @property
    def covering_radius(self) -> float:
        """``h sqrt(d) / 2``: every point of ``K`` is this close to a net point."""
        return self.spacing * math.sqrt(self.dim) / 2.0

    @property
    def ball(self) -> Ball:
        """The ball ``K`` this net covers."""
        return Ball(self.radius, np.asarray(self.center, np.float64))

    def size(self) -> int:
        """Exact number of net points (with multiplicity), from the row table.

        Row ``(j_1, ..., j_{d-1})`` with ``s = sum j_k^2`` contributes
        ``2 min(m, isqrt(threshold - s)) + 1`` points; the table was built in
        ``O(rows * d)`` time, without enumerating the points.

        Returns:
            The number of net points.
        """
        return self._size

    def lattice_index(self, flat_index: ArrayLike) -> tuple[Array, Array]:
        """Integer lattice coordinates ``j`` of flat indices (jittable).

        Args:
            flat_index: Integer array of flat indices (any shape ``S``).

        Returns:
            ``(j, mask)``: int64 ``j`` of shape ``S + (d,)`` and boolean ``mask`` of
            shape ``S``, true for indices in ``[0, size())``; indices outside are
            clamped into range (their ``j`` is a valid net point, masked out).
        """
        flat = jnp.asarray(flat_index, jnp.int64)
        mask = (flat >= 0) & (flat < self._size)
        safe = jnp.clip(flat, 0, self._size - 1)
        offsets = jnp.asarray(self.offsets, jnp.int64)
        if self.num_rows == 1:  # d = 1 (or a single row): no search needed
            row = jnp.zeros_like(safe)
        else:
            row = jnp.searchsorted(offsets, safe, side="right") - 1
        # Row r covers last coordinates -w..w; its middle (j_d = 0) is at flat index
        # offsets[r] + w = (offsets[r] + offsets[r + 1] - 1) / 2 (an exact integer).
        middle = (offsets[row] + offsets[row + 1] - 1) // 2
        last = safe - middle
        prefix = jnp.asarray(self.prefixes, jnp.int64)[row]
        return jnp.concatenate([prefix, last[..., None]], axis=-1), mask

    def decode(self, flat_index: ArrayLike) -> tuple[Array, Array]:
        """Points and validity mask of flat indices (jittable).

        Args:
            flat_index: Integer array of flat indices (any shape ``S``).

        Returns:
            ``(points, mask)``: ``points`` of shape ``S + (d,)`` (lattice points
            projected onto ``K``, float64) and boolean ``mask`` of shape ``S``, true
            for indices in ``[0, size())``.
        """
        j, mask = self.lattice_index(flat_index)
        offset = j.astype(jnp.float64) * self.spacing
        norm = jnp.linalg.norm(offset, axis=-1, keepdims=True)
        scale = jnp.minimum(1.0, self.radius / jnp.where(norm > 0, norm, 1.0))
        center = jnp.asarray(self.center, jnp.float64)
        return center + offset * scale, mask

    def chunk(self, index: ArrayLike, chunk_size: int) -> tuple[Array, Array]:
        """Chunk ``index`` of the enumeration: flat indices ``[i c, (i + 1) c)``.

        Args:
            index: Chunk number ``i`` (may be traced).
            chunk_size: Chunk length ``c`` (static).

        Returns:
            ``(points (c, d), mask (c,))`` as in :meth:`decode`.
        """
        start = jnp.asarray(index, jnp.int64) * chunk_size
        return self.decode(start + jnp.arange(chunk_size, dtype=jnp.int64))

    def points(self, max_points: int = 10**6) -> Array:
        """Materialise the net points (with multiplicity), for small nets and tests.

        Args:
            max_points: Refuse to materialise more points than this.

        Returns:
            Array of shape ``(size(), d)``, in flat-index order.

        Raises:
            ValueError: If the net has more than ``max_points`` points.
        """
        if self._size > max_points:
            raise ValueError(
                f"Refusing to materialise {self._size} points "
                f"(> max_points={max_points}); stream the net with chunk()"
            )
        return _decode_all(self)


@jax.jit
def _decode_all(net: GridNet) -> Array:
    return net.decode(jnp.arange(net.size(), dtype=jnp.int64))[0]


class PointNet(NamedTuple):
    """An explicit, data-independent set of points of ``K`` used as a net.

    Attributes:
        points: Array of shape ``(N, d)``; every point must lie in ``K``.
        covering_radius: A public covering radius, or ``None`` when unknown (e.g. a
            random net, which is an ``r``-net only with some probability; see
            :func:`random_net_size`).

    Examples:
        >>> import jax.numpy as jnp
        >>> import dpsample
        >>> from dpsample.nets import PointNet
        >>> net = PointNet(jnp.zeros((3, 2)))
        >>> net.size(), net.num_candidates, net.dim
        (3, 3, 2)
    """

    points: Array
    covering_radius: float | None = None

    @property
    def dim(self) -> int:
        """Dimension ``d``."""
        return int(self.points.shape[-1])

    @property
    def num_candidates(self) -> int:
        """Number of points ``N``."""
        return int(self.points.shape[0])

    def size(self) -> int:
        """Number of points ``N``."""
        return self.num_candidates

    def chunk(self, index: ArrayLike, chunk_size: int) -> tuple[Array, Array]:
        """Points ``[i c, (i + 1) c)`` (clamped) and their validity mask.

        Args:
            index: Chunk number ``i`` (may be traced).
            chunk_size: Chunk length ``c`` (static).

        Returns:
            ``(points (c, d), mask (c,))``; rows past ``N`` repeat a valid point and
            are masked out.
        """
        flat = jnp.asarray(index, jnp.int64) * chunk_size
        flat = flat + jnp.arange(chunk_size, dtype=jnp.int64)
        pts = jnp.asarray(self.points, jnp.float64)
        mask = flat < self.num_candidates
        return pts[jnp.clip(flat, 0, self.num_candidates - 1)], mask


def _center(ball: Ball) -> np.ndarray:
    """The ball's centre as a host NumPy array (safe inside a caller's trace)."""
    if ball.center is None:
        return np.zeros(ball.dim, np.float64)
    return np.asarray(ball.center, np.float64)


def _require_ball(domain: Any, what: str) -> Ball:
    if not isinstance(domain, Ball):
        raise ValueError(
            f"{what} needs a Ball domain (a bounded K with a centre), got "
            f"{type(domain).__name__}"
        )
    if domain.dim is None:
        raise ValueError(
            f"{what} needs the dimension of the ball; pass Ball(..., dim=)"
        )
    return domain


def grid_net(ball: Ball, *, spacing: float) -> GridNet:
    """The cubic lattice net of ``ball`` with the given spacing.

    The covering radius is ``spacing * sqrt(d) / 2``; to get covering radius ``r``
    use ``spacing = 2 r / sqrt(d)``. See :class:`GridNet` for the construction and the
    covering proof. Builds the row table on the host: ``O(rows * d)`` time and
    memory, ``rows <= (2m + 1)^(d - 1)`` (about ``size()^((d - 1)/d)``).

    Args:
        ball: The (public) ball ``K``; its dimension must be known.
        spacing: Lattice spacing ``h > 0``.

    Returns:
        The :class:`GridNet`.

    Raises:
        ValueError: If ``spacing`` is not positive and finite, the ball has no
            dimension, or the spacing is so small that the row table would exceed
            ``2^24`` rows.

    Examples:
        >>> import dpsample
        >>> from dpsample.domains import Ball
        >>> from dpsample.nets import grid_net
        >>> net = grid_net(Ball(1.0, dim=1), spacing=0.25)
        >>> net.size(), net.half_width
        (9, 4)
    """
    ball = _require_ball(ball, "grid_net")
    h = validation.positive("spacing", spacing)
    d = ball.dim
    reach = (ball.radius + h * math.sqrt(d) / 2.0) / h  # in lattice units
    if reach > 2.0**31:
        raise ValueError(
            f"spacing={h!r} is too small for a ball of radius {ball.radius!r}: "
            f"{reach:.3g} lattice points per axis"
        )
    threshold = math.floor(reach * reach * (1.0 + _SLACK))
    half_width = math.isqrt(threshold)
    center = tuple(float(v) for v in _center(ball))
    return GridNet(center, float(ball.radius), h, half_width, threshold)


def grid_net_size_bound(dim: int, radius: float, spacing: float) -> float:
    r"""Upper bound on :meth:`GridNet.size` for a ball of radius ``R``, spacing ``h``.

    The axis-aligned cubes of side ``h`` centred at the kept lattice points
    (``||h j|| <= R + h sqrt(d)/2``) are disjoint and lie in the ball of radius
    ``R + h sqrt(d)``, so

    .. math:: |P| \le \min\Big\{ V_d \big(R/h + \sqrt d\big)^d,\;
        (2m + 1)^d \Big\},\qquad V_d = \frac{\pi^{d/2}}{\Gamma(d/2 + 1)},

    with ``m = floor(R/h + sqrt(d)/2)``. For covering radius ``r`` (``h = 2r/sqrt d``)
    this is ``V_d d^{d/2} (1 + D/(4r))^d``, below Theorem 5.8's packing bound
    ``(1 + 2D/r)^d`` (:func:`net_size_bound`) once ``D/r`` is moderately large.

    Args:
        dim: ``d``.
        radius: ``R``.
        spacing: ``h``.

    Returns:
        The bound (float).

    Examples:
        >>> import dpsample
        >>> from dpsample.domains import Ball
        >>> from dpsample.nets import grid_net, grid_net_size_bound
        >>> grid_net(Ball(1.0, dim=2), spacing=0.1).size() <= grid_net_size_bound(
        ...     2, 1.0, 0.1)
        True
    """
    d = validation.positive_int("dim", dim)
    r = validation.positive("radius", radius)
    h = validation.positive("spacing", spacing)
    log_vd = 0.5 * d * math.log(math.pi) - math.lgamma(0.5 * d + 1.0)
    vol = math.exp(min(log_vd + d * math.log(r / h + math.sqrt(d)), 700.0))
    m = math.floor(r / h + math.sqrt(d) / 2.0)
    return float(min(vol, float(2 * m + 1) ** d))


def net_size_bound(dim: int, diameter: float, radius: float) -> float:
    """Theorem 5.8's size bound ``(1 + 2D/r)^d`` for a maximal ``r``-packing.

    Same as :func:`dpsample.bounds.net_size_bound`.

    Args:
        dim: ``d``.
        diameter: ``D``.
        radius: ``r``.

    Returns:
        The bound.

    Examples:
        >>> import dpsample
        >>> from dpsample.nets import net_size_bound
        >>> net_size_bound(1, 2.0, 1.0)
        5.0
    """
    from dpsample import bounds

    return bounds.net_size_bound(diameter=diameter, dim=dim, radius=radius)


def random_net(rng_key: PRNGKey, ball: Ball, num_points: int) -> PointNet:
    """``num_points`` i.i.d. uniform points of ``ball`` (a random net).

    The key must be public and independent of the data (the net is part of the
    mechanism's public description). Whether the points form an ``r``-net is itself
    random; :func:`random_net_size` gives a size for which this holds with probability
    ``>= 1 - failure_prob``.

    Args:
        rng_key: A PRNG key, independent of the data (consumed).
        ball: The ball ``K`` (dimension known).
        num_points: Number of points.

    Returns:
        A :class:`PointNet` with ``covering_radius=None``.

    Examples:
        >>> import jax
        >>> import dpsample
        >>> from dpsample.domains import Ball
        >>> from dpsample.nets import random_net
        >>> net = random_net(jax.random.key(0), Ball(1.0, dim=2), 50)
        >>> net.points.shape
        (50, 2)
    """
    ball = _require_ball(ball, "random_net")
    num = validation.positive_int("num_points", num_points)
    return PointNet(ball.sample_uniform(rng_key, num), None)


def random_net_size(ball: Ball, covering_radius: float, failure_prob: float) -> int:
    r"""Number of uniform points that make an ``r``-net of ``ball`` w.p. ``1 - beta``.

    Bound proved here (``K = B(c, R)``, ``D = 2R``, ``r < D``):

    .. math::

        N = \Big\lceil \Big(\frac{2D}{r}\Big)^d
            \Big( d \log\big(1 + \tfrac{2D}{r}\big) + \log\tfrac1\beta \Big)
            \Big\rceil .

    Proof. Let ``C`` be a maximal ``r/2``-separated subset of ``K``: it is an
    ``r/2``-cover of ``K`` and, since the balls of radius ``r/4`` around its points
    are disjoint and lie in ``B(c, R + r/4)``, ``|C| <= (1 + 4R/r)^d = (1 + 2D/r)^d``.
    If every ball ``B(y, r/2)``, ``y in C``, contains a sample, then every ``x in K``
    is within ``r/2 + r/2 = r`` of a sample. For ``y in K`` and ``rho = r/2 <= R``,
    the ball ``B(y', rho/2)`` with ``y'`` the point at distance ``min(rho/2, ||y-c||)``
    from ``y`` towards ``c`` lies in ``B(y, rho) ∩ K``, so a uniform point of ``K``
    falls in ``B(y, r/2)`` with probability ``p >= (rho/(2R))^d = (r/(2D))^d``. A union
    bound gives failure probability ``<= |C| (1 - p)^N <= |C| e^{-pN} <= beta`` for the
    ``N`` above. (If ``r >= D`` one point suffices, as any point is within ``D`` of all
    of ``K``; the formula is used for ``r < D``, where ``r/2 < R`` holds.)

    The bound is loose by roughly ``2^d d log(D/r)`` against a grid; prefer
    :func:`grid_net` for small ``d``.

    Args:
        ball: The ball ``K``.
        covering_radius: ``r > 0``.
        failure_prob: ``beta`` in ``(0, 1)``.

    Returns:
        ``N`` (a Python int).

    Examples:
        >>> import dpsample
        >>> from dpsample.domains import Ball
        >>> from dpsample.nets import random_net_size
        >>> random_net_size(Ball(1.0, dim=1), 0.5, 0.05)
        42
    """
    ball = _require_ball(ball, "random_net_size")
    r = validation.positive("covering_radius", covering_radius)
    beta = validation.delta_in_open_unit(failure_prob, "failure_prob")
    d, diam = ball.dim, ball.diameter
    if r >= diam:
        return 1
    ratio = 2.0 * diam / r
    log_n = d * math.log(ratio) + math.log(d * math.log1p(ratio) + math.log(1.0 / beta))
    if log_n > math.log(2.0**62):
        raise ValueError(
            f"random_net_size for r={r!r} in dimension {d} exceeds 2^62 points"
        )
    return math.ceil(ratio**d * (d * math.log1p(ratio) + math.log(1.0 / beta)))


# --------------------------------------------------------------------------- core


def _block_gumbel(key: PRNGKey, start: Array, chunk_size: int) -> Array:
    """Gumbel noise for flat indices ``[start, start + chunk_size)``.

    Block ``b = index // NOISE_BLOCK`` draws its ``NOISE_BLOCK`` values from
    ``fold_in(key, b)``, so each index gets the same noise whatever the chunking.
    """
    first = start // NOISE_BLOCK
    blocks = first + jnp.arange(chunk_size // NOISE_BLOCK, dtype=jnp.int64)

    def one(b: Array) -> Array:
        k = jax.random.fold_in(key, b.astype(jnp.uint32))
        return jax.random.gumbel(k, (NOISE_BLOCK,), dtype=jnp.float64)

    return jax.vmap(one)(blocks).reshape(chunk_size)


def _risk_batch(loss_fn: Callable[..., Array], xs: Array, data: Any) -> Array:
    """``F_D`` at each row of ``xs``: mean over the examples of ``loss_fn(x, z)``."""
    per_example = jax.vmap(loss_fn, in_axes=(None, 0))
    return jax.vmap(lambda x: jnp.mean(per_example(x, data)))(xs)


def _net_point(net: GridNet | PointNet, index: Array) -> Array:
    """The net point at a (traced) flat index."""
    if isinstance(net, GridNet):
        return net.decode(index)[0]
    return jnp.asarray(net.points, jnp.float64)[index]


@functools.partial(jax.jit, static_argnames=("loss_fn", "chunk_size", "num_chunks"))
def _stream_argmax(
    rng_key: PRNGKey,
    data: Any,
    net: GridNet | PointNet,
    inverse_temperature: Array,
    *,
    loss_fn: Callable[..., Array],
    chunk_size: int,
    num_chunks: int,
) -> tuple[Array, Array]:
    """Gumbel-max over the net, one chunk at a time; returns (point, flat index).

    ``net`` is a pytree argument: a :class:`GridNet`'s row table (or a
    :class:`PointNet`'s points) is dynamic, its spec static.
    """

    def body(i: Array, carry: tuple[Array, Array]) -> tuple[Array, Array]:
        best_score, best_index = carry
        start = i.astype(jnp.int64) * chunk_size
        pts, mask = net.chunk(i, chunk_size)
        risk = _risk_batch(loss_fn, pts, data)
        noise = _block_gumbel(rng_key, start, chunk_size)
        scores = -inverse_temperature * risk + noise
        scores = jnp.where(mask & ~jnp.isnan(scores), scores, -jnp.inf)
        j = jnp.argmax(scores)
        better = scores[j] > best_score
        return (
            jnp.where(better, scores[j], best_score),
            jnp.where(better, start + j, best_index),
        )

    init = (jnp.array(-jnp.inf, jnp.float64), jnp.array(0, jnp.int64))
    _, best = lax.fori_loop(0, num_chunks, body, init)
    return _net_point(net, best), best


@functools.partial(jax.jit, static_argnames=("loss_fn", "chunk_size", "num_chunks"))
def _stream_min(
    data: Any,
    net: GridNet | PointNet,
    *,
    loss_fn: Callable[..., Array],
    chunk_size: int,
    num_chunks: int,
) -> tuple[Array, Array, Array]:
    """Running minimum of ``F_D`` over the net; returns (point, risk, flat index).

    Same chunks as :func:`_stream_argmax`; ties go to the smallest flat index, and
    NaN risks are never selected.
    """

    def body(i: Array, carry: tuple[Array, Array]) -> tuple[Array, Array]:
        best_risk, best_index = carry
        start = i.astype(jnp.int64) * chunk_size
        pts, mask = net.chunk(i, chunk_size)
        risk = _risk_batch(loss_fn, pts, data)
        risk = jnp.where(mask & ~jnp.isnan(risk), risk, jnp.inf)
        j = jnp.argmin(risk)
        better = risk[j] < best_risk
        return (
            jnp.where(better, risk[j], best_risk),
            jnp.where(better, start + j, best_index),
        )

    init = (jnp.array(jnp.inf, jnp.float64), jnp.array(0, jnp.int64))
    best_risk, best = lax.fori_loop(0, num_chunks, body, init)
    return _net_point(net, best), best_risk, best


def _auto_chunk_size(n: int, num_candidates: int) -> int:
    size = _MAX_CHUNK
    while size > NOISE_BLOCK and size * n > _AUTO_CHUNK_ELEMENTS:
        size //= 2
    while size > NOISE_BLOCK and size // 2 >= num_candidates:
        size //= 2
    return size


def _check_net_in_ball(net: GridNet | PointNet, ball: Ball) -> None:
    if net.dim != ball.dim:
        raise ValueError(f"net has dimension {net.dim}, the domain has {ball.dim}")
    if isinstance(net, GridNet):
        same_center = np.allclose(
            np.asarray(net.center), _center(ball), rtol=0, atol=1e-12
        )
        if not (same_center and net.radius <= ball.radius):
            raise ValueError("the GridNet covers a different ball than the domain")
    else:
        points = np.asarray(net.points, np.float64)
        validation.finite_tree("net points", points)
        dist = np.linalg.norm(points - _center(ball), axis=-1)
        if not bool(np.all(dist <= ball.radius * (1.0 + 1e-12) + 1e-12)):
            raise ValueError("every net point must lie in the domain K")


def _problem_ball(problem: Any, what: str) -> Ball:
    """The problem's Ball domain with its dimension filled in (public)."""
    domain = problem.domain
    if isinstance(domain, Ball) and domain.dim is None:
        domain = domain.with_dim(problem.dim)
    ball = _require_ball(domain, what)
    if ball.dim != problem.dim:
        raise ValueError(
            f"domain dimension {ball.dim} != problem dimension {problem.dim}"
        )
    return ball


def _theorem_radius(ball: Ball, epsilon: float, n: int) -> float | None:
    """Theorem 5.8's net radius ``r = D d / (eps n)``, or None if ``eps n <= d``."""
    d = ball.dim
    assert d is not None
    return ball.diameter * d / (epsilon * n) if epsilon * n > d else None


def _default_net(ball: Ball, epsilon: float, n: int) -> GridNet:
    """The default net: the :class:`GridNet` with covering radius ``D d / (eps n)``.

    Shared by :func:`exponential_mechanism` and :func:`net_minimum`. Depends on public
    values only (``K``, ``eps``, ``n``).
    """
    radius = _theorem_radius(ball, epsilon, n)
    if radius is None:
        raise ValueError(
            f"The default net radius r = D d / (eps n) needs eps * n > d; got "
            f"eps * n = {epsilon * n!r} <= d = {ball.dim}. Pass spacing= or net= "
            "to choose a net explicitly"
        )
    assert ball.dim is not None
    return grid_net(ball, spacing=2.0 * radius / math.sqrt(ball.dim))


def _resolve_net(
    ball: Ball,
    n: int,
    *,
    net: GridNet | PointNet | ArrayLike | None,
    spacing: float | None,
    epsilon: float | None,
    max_points: int,
    what: str,
) -> GridNet | PointNet:
    """Validated net from ``net``/``spacing``/the default (public values only)."""
    if net is not None and spacing is not None:
        raise ValueError("Pass either net or spacing, not both")
    if net is None:
        if spacing is not None:
            net = grid_net(ball, spacing=spacing)
        elif epsilon is not None:
            net = _default_net(ball, epsilon, n)
        else:
            raise ValueError(
                f"{what} needs net=, spacing= or epsilon= (the default net of "
                "exponential_mechanism depends on epsilon)"
            )
    elif not isinstance(net, GridNet | PointNet):
        points = np.asarray(net, np.float64)
        if points.ndim != 2 or points.shape[0] < 1:
            raise ValueError(f"Expected net points of shape (N, d), got {points.shape}")
        net = PointNet(points)
    _check_net_in_ball(net, ball)
    if net.size() > max_points:
        raise ValueError(
            f"The net has {net.size()} points, more than max_points={max_points}; "
            "increase spacing (or raise max_points)"
        )
    return net


def _resolve_chunk_size(chunk_size: int | None, n: int, num_candidates: int) -> int:
    if chunk_size is None:
        return _auto_chunk_size(n, num_candidates)
    chunk_size = validation.positive_int("chunk_size", chunk_size)
    if chunk_size % NOISE_BLOCK:
        raise ValueError(
            f"Expected chunk_size={chunk_size} to be a multiple of "
            f"NOISE_BLOCK={NOISE_BLOCK}"
        )
    return chunk_size


def _jit_net(net: GridNet | PointNet) -> GridNet | PointNet:
    """The net as passed to the jitted core (PointNet: float64 points only)."""
    if isinstance(net, GridNet):
        return net
    return PointNet(jnp.asarray(net.points, jnp.float64), None)


def exponential_mechanism(
    rng_key: PRNGKey,
    problem: Any,
    *,
    epsilon: float,
    spacing: float | None = None,
    net: GridNet | PointNet | ArrayLike | None = None,
    chunk_size: int | None = None,
    max_points: int = 10**8,
) -> PrivateResult:
    r"""Exponential mechanism over a net of the ball ``K`` (Theorem 5.8), streamed.

    Outputs a net point ``p`` with probability

    .. math::

        \Pr[p] \propto \exp(-k F_D(p)),\qquad
        k = \frac{\varepsilon}{\Delta_{osc}},\qquad
        \Delta_{osc} = \frac{\text{problem.utility\_oscillation()}}{n},

    where ``utility_oscillation()`` bounds ``osc_K(f(., z) - f(., z'))`` per example
    from declared constants only (``min(2GD, 2B, oscillation)``). When the Lipschitz
    bound binds, ``k = eps n / (2 G D)``: this is the spec's errata E28 correction of
    the paper's ``eps n / (G D)``, which needs ``f(., z) - f(., z')`` to be
    ``G``-Lipschitz rather than each ``f(., z)``.

    Default net: the :class:`GridNet` with covering radius equal to the theorem's
    ``r = D d / (eps n)``, i.e. ``spacing = 2 r / sqrt(d)``; it needs ``eps n > d``.
    Then (see :func:`dpsample.bounds.theorem_5_8_risk_bound`)
    ``E[F_D(out)] - min_K F_D <= G r + (log|P| + 1)/k``.

    Sampling is Gumbel-max: ``argmax_p (-k F_D(p) + G_p)`` with i.i.d. standard Gumbel
    ``G_p``, computed chunk by chunk inside one ``lax.fori_loop`` that carries only the
    running best (score, index). Each chunk decodes the net points of ``chunk_size``
    consecutive flat indices (a :class:`GridNet` enumerates only net points, row by
    row; see there), evaluates ``F_D`` (vmapped over points and examples; a linear-model
    loss becomes one ``(chunk, d) x (d, n)`` matrix product), and adds Gumbel noise
    drawn per block of :data:`NOISE_BLOCK` flat indices from
    ``fold_in(rng_key, block)``; only the padding past the last net point in the final
    chunk is masked (score ``-inf``). Memory is ``O(chunk_size * (n + d))`` plus the
    grid's row table (``O((2m + 1)^(d - 1))``), independent of the net size, and the
    output for a given key does not depend on ``chunk_size``. Everything runs in
    float64. :func:`net_minimum` streams the same net non-privately, for diagnostics.

    Privacy:
        Replace-one neighbours ``D ~ D'`` (``problem.relation``). With
        ``g = F_D - F_D'``, the privacy loss at ``p`` is
        ``-k g(p) + log E_{pi_D}[e^{k g}]``, which lies in
        ``[-k (g(p) - min g), k (max g - g(p))]``; its range over outputs is at most
        ``k osc_K(g) <= k Delta_osc = eps``. So the mechanism is ``eps``-DP, and, as a
        bounded-range mechanism, ``eps^2/8``-zCDP (Cesar and Rogers 2021); the
        returned guarantee is
        :meth:`~dpsample.privacy.PrivacyGuarantee.exponential_mechanism`. The
        sensitivity uses declared constants only; the net depends only on public
        values (the domain and ``spacing``, or a user net that must not depend on the
        data), and ``info`` holds only public quantities. The loss must be finite on
        ``K``: a NaN risk value is treated as never selected.

        Floating-point caveat: the proof (and so the returned guarantee) is for the
        ideal mechanism in real arithmetic, like the Gaussian and Laplace mechanisms'
        (see :mod:`dpsample.mechanisms.gaussian`, ``docs/sharp_edges.md``). Each
        ``G_p`` is ``jax.random.gumbel`` in float64, ``-log(-log U)`` with ``U`` on a
        grid of step ``2^-52`` in ``[2.2e-308, 1)``: the noise takes values in
        ``[-6.56, 36.04]`` only and its upper tail is coarsely discretised. So a
        point whose score ``-k F_D(p)`` is more than ``42.6`` below the best is
        never selected (the ideal mechanism selects it with probability below
        ``e^-42.6`` relative to the best), and points far below the best are not
        selected with probabilities exactly proportional to ``exp(-k F_D(p))``.
        The sampler departs from the ideal one only on events of small probability
        (extreme Gumbel draws, near-ties at rounding level), but it is not exactly
        ``eps``-DP: a point can have probability zero under ``D`` and a positive
        one under a neighbour. What the code does about numerics: the net points,
        the inverse temperature, the scores and the noise are float64; scores are
        the unnormalised ``-k F_D(p)``, so nothing is exponentiated and nothing
        overflows, and a NaN score is never selected; the noise of each point
        comes from ``fold_in(rng_key, block)``, independent of the data and of
        ``chunk_size``; every net point is evaluated whatever the data. No exact
        (base-2) sampler is used (Ilvento 2020).

    Args:
        rng_key: PRNG key (consumed).
        problem: A :class:`dpsample.problem.Problem` whose domain is a
            :class:`~dpsample.domains.Ball`.
        epsilon: ``eps > 0`` (finite).
        spacing: Lattice spacing of the default grid net; overrides the theorem's
            radius (then ``eps n > d`` is not required).
        net: A :class:`GridNet` of the same ball, a :class:`PointNet`, or an array of
            points ``(N, d)`` in ``K``; all must be data-independent. Exclusive with
            ``spacing``.
        chunk_size: Candidates per chunk, a positive multiple of :data:`NOISE_BLOCK`;
            default: at most 65536, reduced so a chunk's ``(chunk, n)`` loss matrix
            stays within 32 MiB. It affects speed and memory only, not the output.
        max_points: Refuse nets with more than this many points.

    Returns:
        :class:`~dpsample.privacy.PrivateResult` with ``value`` the selected point
        (float64, shape ``(d,)``), ``privacy`` the ``eps``-DP exponential-mechanism
        guarantee and ``info`` a dict of public quantities: ``net`` (``"grid"`` or
        ``"points"``), ``net_size``, ``num_candidates`` (the enumeration length,
        equal to ``net_size``), ``covering_radius``, ``spacing``,
        ``theorem_radius``, ``inverse_temperature``, ``sensitivity_oscillation``,
        ``epsilon``, ``n``, ``dim``, ``chunk_size``, ``num_chunks``.

    Raises:
        ValueError: On invalid ``epsilon``, ``spacing``, ``chunk_size`` or net; if the
            domain is not a Ball; if ``eps n <= d`` without ``spacing``/``net``; or if
            the net exceeds ``max_points``.
        dpsample.errors.MissingConstantError: If no oscillation bound can be derived
            from the declared constants.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> import dpsample
        >>> from dpsample.domains import Ball
        >>> from dpsample.problem import Problem
        >>> from dpsample.nets import exponential_mechanism
        >>> data = {"x": jnp.ones((50, 1)), "y": jnp.ones(50)}
        >>> loss = lambda x, z: -z["y"] * jnp.dot(z["x"], x)
        >>> problem = Problem(loss, data, Ball(1.0, dim=1), lipschitz=1.0)
        >>> res = exponential_mechanism(jax.random.key(0), problem, epsilon=1.0)
        >>> res.value.shape, res.info["net_size"], res.info["inverse_temperature"]
        ((1,), 27, 12.5)
        >>> res.privacy.epsilon(0.0)
        1.0

    References:
        F. McSherry and K. Talwar, `Mechanism design via differential privacy
        <https://doi.org/10.1109/FOCS.2007.66>`_, 2007.
        A. Ganesh, D. Liu, S. Oh and A. Thakurta, `Private (stochastic) non-convex
        optimization revisited: second-order stationary points and excess risks
        <https://arxiv.org/abs/2302.09699>`_, 2023 (Theorem 5.8).
        M. Cesar and R. Rogers, `Bounding, concentrating, and truncating: unifying
        privacy loss composition for data analytics
        <https://arxiv.org/abs/2004.07223>`_, 2021.
        C. Ilvento, `Implementing the exponential mechanism with base-2 differential
        privacy <https://arxiv.org/abs/1912.04222>`_, CCS 2020.
    """
    # ---- public validation, before any private computation --------------------
    epsilon = validation.positive("epsilon", epsilon)
    max_points = validation.positive_int("max_points", max_points)
    ball = _problem_ball(problem, "exponential_mechanism")
    dim, n = ball.dim, int(problem.n)
    osc = validation.positive("utility_oscillation", problem.utility_oscillation())
    sensitivity = osc / n
    inverse_temperature = epsilon / sensitivity
    theorem_radius = _theorem_radius(ball, epsilon, n)
    net = _resolve_net(
        ball,
        n,
        net=net,
        spacing=spacing,
        epsilon=epsilon,
        max_points=max_points,
        what="exponential_mechanism",
    )
    net_size = net.size()
    num_candidates = net.num_candidates
    chunk_size = _resolve_chunk_size(chunk_size, n, num_candidates)
    num_chunks = -(-num_candidates // chunk_size)

    info = {
        "net": "grid" if isinstance(net, GridNet) else "points",
        "net_size": net_size,
        "num_candidates": num_candidates,
        "covering_radius": net.covering_radius,
        "spacing": net.spacing if isinstance(net, GridNet) else None,
        "theorem_radius": theorem_radius,
        "inverse_temperature": inverse_temperature,
        "sensitivity_oscillation": sensitivity,
        "epsilon": epsilon,
        "n": n,
        "dim": dim,
        "chunk_size": chunk_size,
        "num_chunks": num_chunks,
    }
    privacy = PrivacyGuarantee.exponential_mechanism(epsilon, relation=problem.relation)

    # ---- private computation ---------------------------------------------------
    point, _ = _stream_argmax(
        rng_key,
        problem.data,
        _jit_net(net),
        jnp.asarray(inverse_temperature, jnp.float64),
        loss_fn=problem.loss_fn,
        chunk_size=chunk_size,
        num_chunks=num_chunks,
    )
    return PrivateResult(point, privacy, info)


def net_minimum(
    problem: Any,
    net: GridNet | PointNet | ArrayLike | None = None,
    *,
    spacing: float | None = None,
    epsilon: float | None = None,
    chunk_size: int | None = None,
    max_points: int = 10**8,
) -> tuple[Array, float]:
    """**Non-private** minimum of the empirical risk ``F_D`` over a net (diagnostic).

    .. warning::

        **Not differentially private.** This reads the private data and returns its
        exact minimiser over the net: it is a diagnostic for the excess empirical risk
        of :func:`exponential_mechanism` (compare ``F_D(out) - min_P F_D`` with the
        Theorem 5.8 bound). Its outputs must never be released, published or fed into
        anything that is.

    Streams the net in the same chunks as :func:`exponential_mechanism` (one jitted
    ``lax.fori_loop`` carrying the running minimum and its flat index), so memory is
    ``O(chunk_size * (n + d))`` whatever the net size. Ties go to the smallest flat
    index; NaN risks are skipped.

    Args:
        problem: A :class:`dpsample.problem.Problem` whose domain is a
            :class:`~dpsample.domains.Ball`.
        net: A :class:`GridNet` of the same ball, a :class:`PointNet` or an array of
            points ``(N, d)`` in ``K``.
        spacing: Lattice spacing of a grid net (exclusive with ``net``).
        epsilon: Use :func:`exponential_mechanism`'s default net for this ``eps``
            (the :class:`GridNet` of covering radius ``D d / (eps n)``), when neither
            ``net`` nor ``spacing`` is given.
        chunk_size: Points per chunk, a positive multiple of :data:`NOISE_BLOCK`;
            default as in :func:`exponential_mechanism`.
        max_points: Refuse nets with more than this many points.

    Returns:
        ``(point, risk)``: the minimising net point (float64, shape ``(d,)``) and
        ``min_P F_D`` as a Python float (``inf`` if every risk is NaN).

    Raises:
        ValueError: On an invalid net, spacing, epsilon or chunk size, a non-Ball
            domain, or if none of ``net``, ``spacing``, ``epsilon`` is given.

    Examples:
        >>> import jax.numpy as jnp
        >>> import dpsample
        >>> from dpsample.domains import Ball
        >>> from dpsample.problem import Problem
        >>> from dpsample.nets import net_minimum
        >>> data = {"x": jnp.ones((50, 1)), "y": jnp.ones(50)}
        >>> loss = lambda x, z: -z["y"] * jnp.dot(z["x"], x)
        >>> problem = Problem(loss, data, Ball(1.0, dim=1), lipschitz=1.0)
        >>> point, risk = net_minimum(problem, spacing=0.25)  # NOT private
        >>> point.tolist(), risk
        ([1.0], -1.0)
    """
    if epsilon is not None:
        epsilon = validation.positive("epsilon", epsilon)
    max_points = validation.positive_int("max_points", max_points)
    ball = _problem_ball(problem, "net_minimum")
    n = int(problem.n)
    net = _resolve_net(
        ball,
        n,
        net=net,
        spacing=spacing,
        epsilon=epsilon,
        max_points=max_points,
        what="net_minimum",
    )
    chunk_size = _resolve_chunk_size(chunk_size, n, net.num_candidates)
    point, risk, _ = _stream_min(
        problem.data,
        _jit_net(net),
        loss_fn=problem.loss_fn,
        chunk_size=chunk_size,
        num_chunks=-(-net.num_candidates // chunk_size),
    )
    return point, float(risk)


precision.scope_public(globals())
