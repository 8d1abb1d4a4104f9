"""The cubic lattice net of a ball, enumerated by a flat index over its points.

:class:`GridNet` enumerates the lattice points of a ball ``K`` (projected onto ``K``)
row by row from a small host-side row table, so a net of ``10^9`` points is streamed
chunk by chunk and never materialised; :func:`grid_net` builds one for a spacing, and
:func:`grid_net_size_bound` bounds its size without building it. A grid net depends
only on public values (the ball and the spacing).
"""

from __future__ import annotations

import math
import sys
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from dpsample._src import precision, validation
from dpsample.domains import Ball
from dpsample.nets.ball import ball_center, require_ball
from dpsample.types import Array, ArrayLike

__all__ = [
    "MAX_ROWS",
    "GridNet",
    "grid_net",
    "grid_net_rows_bound",
    "grid_net_size_bound",
]

_LOG_FLOAT_MAX = math.log(sys.float_info.max)

#: Largest row table of a :class:`GridNet` (rows of its enumeration).
MAX_ROWS = 1 << 24
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
        ValueError: If there would be more than ``MAX_ROWS`` rows.
    """
    m, t = half_width, threshold
    step = max(1, _BUILD_BLOCK // (2 * m + 1))  # parents per block
    prefixes = np.zeros((1, 0), np.int64)
    sq = np.zeros(1, np.int64)
    for k in range(dim - 1):
        widths = np.minimum(_vector_isqrt(t - sq), m)
        ends = np.cumsum(2 * widths + 1)
        total = int(ends[-1])
        if total > MAX_ROWS:
            raise ValueError(
                f"The grid net would need a row table of more than {MAX_ROWS} rows "
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
        return Ball(self.radius, jnp.asarray(self.center, jnp.float64))

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
    ball = require_ball(ball, "grid_net")
    h = validation.positive("spacing", spacing)
    d = ball.dim
    assert d is not None
    reach = _reach(ball.radius, h, d)
    if reach > 2.0**31:
        raise ValueError(
            f"spacing={h!r} is too small for a ball of radius {ball.radius!r}: "
            f"{reach:.3g} lattice points per axis"
        )
    threshold = math.floor(reach * reach * (1.0 + _SLACK))
    half_width = math.isqrt(threshold)
    center = tuple(float(v) for v in ball_center(ball))
    return GridNet(center, float(ball.radius), h, half_width, threshold)


def _reach(radius: float, spacing: float, dim: int) -> float:
    """Largest ``||j||`` (lattice units) a kept point may have: ``R/h + sqrt(d)/2``."""
    return (radius + spacing * math.sqrt(dim) / 2.0) / spacing


def grid_net_rows_bound(dim: int, radius: float, spacing: float) -> float:
    """Upper bound ``(2m + 1)^(d - 1)`` on the rows of :func:`grid_net`'s row table.

    With ``m`` the net's half-width (the largest ``|j_k|``); a net whose bound is at
    most :data:`MAX_ROWS` can be built.

    Args:
        dim: ``d``.
        radius: ``R``.
        spacing: ``h``.

    Returns:
        The bound (float; ``inf`` beyond the float range).

    Examples:
        >>> from dpsample.domains import Ball
        >>> from dpsample.nets import grid_net
        >>> from dpsample.nets.grid import grid_net_rows_bound
        >>> net = grid_net(Ball(1.0, dim=3), spacing=0.25)
        >>> net.num_rows <= grid_net_rows_bound(3, 1.0, 0.25)
        True
    """
    d = validation.positive_int("dim", dim)
    reach = _reach(validation.positive("radius", radius), spacing, d)
    if reach > 2.0**31:
        return math.inf
    m = math.isqrt(math.floor(reach * reach * (1.0 + _SLACK)))
    log_rows = (d - 1) * math.log(2 * m + 1)
    return math.exp(log_rows) if log_rows < _LOG_FLOAT_MAX else math.inf


def grid_net_size_bound(dim: int, radius: float, spacing: float) -> float:
    r"""Upper bound on :meth:`GridNet.size` for a ball of radius ``R``, spacing ``h``.

    The axis-aligned cubes of side ``h`` centred at the kept lattice points
    (``||h j|| <= R + h sqrt(d)/2``) are disjoint and lie in the ball of radius
    ``R + h sqrt(d)``, so

    .. math:: |P| \le \min\Big\{ V_d \big(R/h + \sqrt d\big)^d,\;
        (2m + 1)^d \Big\},\qquad V_d = \frac{\pi^{d/2}}{\Gamma(d/2 + 1)},

    with ``m = floor(R/h + sqrt(d)/2)``. For covering radius ``r`` (``h = 2r/sqrt d``)
    this is ``V_d d^{d/2} (1 + D/(4r))^d``, below Theorem 5.8's packing bound
    ``(1 + 2D/r)^d`` (:func:`dpsample.bounds.net_size_bound`) once ``D/r`` is
    moderately large.

    Args:
        dim: ``d``.
        radius: ``R``.
        spacing: ``h``.

    Returns:
        The bound (float; ``inf`` beyond the float range).

    Examples:
        >>> import dpsample
        >>> from dpsample.domains import Ball
        >>> from dpsample.nets import grid_net, grid_net_size_bound
        >>> grid_net_size_bound(400, 1.0, 0.1)  # (2m + 1)^d is past 1e308
        inf
        >>> grid_net(Ball(1.0, dim=2), spacing=0.1).size() <= grid_net_size_bound(
        ...     2, 1.0, 0.1)
        True
    """
    d = validation.positive_int("dim", dim)
    r = validation.positive("radius", radius)
    h = validation.positive("spacing", spacing)
    log_vd = 0.5 * d * math.log(math.pi) - math.lgamma(0.5 * d + 1.0)
    log_vol = log_vd + d * math.log(r / h + math.sqrt(d))
    m = math.floor(r / h + math.sqrt(d) / 2.0)
    log_bound = min(log_vol, d * math.log(2 * m + 1))
    # In log space: (2m + 1)^d overflows a float from d of a few hundred; a bound
    # beyond the float range is infinite (no net that size can be built).
    return math.exp(log_bound) if log_bound < _LOG_FLOAT_MAX else math.inf


precision.scope_public(globals())
