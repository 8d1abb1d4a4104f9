r"""Exact sampler of an isotropic Gaussian restricted to a Euclidean ball.

Draws from

.. math::
    \nu(x) \propto \exp\Big(-\frac{\|x - m\|^2}{2 s^2}\Big)\,
    \mathbf{1}\{\|x - c\| \le R\},

the proposal of the Gopi–Lee–Liu restricted Gaussian oracle and the initial law of the
proximal sampler (seed 000 App. D.3, erratum E26). Naive rejection from
``N(m, s^2 I)`` is exact but its acceptance, ``P(ncx2_d(|m-c|^2/s^2) <= R^2/s^2)``,
collapses in high dimension when ``m`` is near the boundary (about ``3e-7`` at
``d = 1000``, ``|m - c| = R``, ``s = 0.01 R``). This module uses the exact
axis/radial decomposition of the samplers research note §3 instead, ``O(d)`` work per
draw plus a dimension-light 1-D part:

* Write ``x - c = t u + z`` with ``u = (m - c)/a``, ``a = |m - c|`` and ``z ⊥ u``.
  The axial coordinate has density on ``[-R, R]``

  .. math::
      g(t) \propto \exp\Big(-\frac{(t - a)^2}{2 s^2}\Big)\,
      P\Big(\frac{d-1}{2}, \frac{R^2 - t^2}{2 s^2}\Big),

  with ``P`` the regularised lower incomplete gamma function (the
  ``chi^2_{d-1}`` CDF). ``log g`` is concave for every ``d >= 1`` (for ``d >= 3`` the
  ``chi^2_{d-1}`` density is log-concave, for ``d = 2`` its CDF is concave; the
  composition of a concave non-decreasing function with the concave
  ``(R^2 - t^2)/(2 s^2)`` is concave). ``t`` is drawn exactly by rejection from a
  three-piece envelope (a flat top over the interval where ``log g`` is within 1 of
  its maximum, and two exponential tails whose slopes are secants, which bound a
  concave function from above). Its acceptance is at least
  ``(1 - 1/e)/(1 + 1/e) > 0.46`` for every ``(m, s, R, d)``.
* Given ``t``, ``|z|^2 / s^2`` is ``chi^2_{d-1}`` truncated to
  ``[0, (R^2 - t^2)/s^2]``, drawn by inversion of ``P`` (closed form for ``d = 2, 3``;
  bisection in float64 otherwise, since JAX has no ``gammaincinv``), and ``z/|z|`` is
  uniform on the unit sphere of ``u^⊥`` (a projected, normalised Gaussian). For
  ``d = 2``, ``u^⊥`` is a line and ``z`` its coordinate, ``N(0, s^2)`` truncated to
  ``|z| <= sqrt(R^2 - t^2)``: a symmetric law, drawn with its sign by inversion from
  one uniform on ``[-1, 1)`` (one word pair and one ``erfinv`` per draw, where the
  general route would spend three word pairs and three ``erfinv``).

Fixed budget. The ``num`` draws of one call share the axial law; the call draws
``num_candidates(num)`` envelope candidates in one batch (two uniforms each) and keeps
the first ``num`` accepted ones, which are i.i.d. from ``g``. The work is the same for
every ``m`` (which, inside the proximal sampler, depends on the private data), so
running time does not leak it. Fewer than ``num`` acceptances happen with probability
at most ``FAILURE_TARGET = 1e-16`` per call; the missing draws then use the axial
mode. Special functions use a fixed number of terms (no data-dependent loops).

Departures from the exact law (:func:`tv_bound`, counted by
:mod:`dpsample.samplers.rgo` and :func:`dpsample.samplers.proximal.schedule` in their
TV slacks): the shortfall above, and the resolution of the float64 uniforms behind
the three discrete decisions of every candidate (``jax.random.uniform`` returns
multiples of ``2^-52``; coupled with an exact uniform ``U``, a comparison
``U < c`` changes with probability ``< 2^-52``): the piece of the envelope (two
thresholds) and the acceptance test (one). Not counted, as everywhere in the
library: float64 evaluation of real-valued functions (the log-density, envelope
and special functions, whose accuracy the tests check against scipy) and the
float64 representation of continuous draws.

All functions are jittable and vmappable and work in float64.

References:
    Gopi, Lee, Liu, `Private Convex Optimization via Exponential Mechanism
    <https://proceedings.mlr.press/v178/gopi22a.html>`_, COLT 2022 (App. A: the
    restricted Gaussian proposal).

    Devroye, `Non-Uniform Random Variate Generation
    <https://luc.devroye.org/rnbookindex.html>`_, Springer 1986, Ch. VII
    (log-concave densities).
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import scipy.stats

from dpsample._src import precision, validation
from dpsample._src.random_words import NORMAL_WORDS, UNIFORM_WORDS, WordStream
from dpsample.domains import Ball
from dpsample.types import Array, ArrayLike, PRNGKey

__all__ = [
    "sample",
    "sample_unchecked",
    "draws_from_stream",
    "words_needed",
    "axial_logdensity",
    "num_candidates",
    "tv_bound",
    "FAILURE_TARGET",
    "UNIFORM_RESOLUTION",
]

FAILURE_TARGET = 1e-16
"""Per call: bound on the probability that the pooled axial rejection falls short."""

UNIFORM_RESOLUTION = 2.0**-52
"""Spacing of float64 ``jax.random.uniform`` draws on ``[0, 1)`` (mantissa bits)."""

_ACCEPT_LOWER_BOUND = (1.0 - math.exp(-1.0)) / (1.0 + math.exp(-1.0))

# Uniform comparisons per envelope candidate: the piece (two thresholds on one
# uniform) and the acceptance test (one).
_DECISIONS_PER_CANDIDATE = 3


@functools.lru_cache(maxsize=256)
def num_candidates(num: int) -> int:
    """Envelope candidates drawn for ``num`` axial draws (static, fixed budget).

    The smallest ``M`` with ``P(Binomial(M, p0) < num) <= FAILURE_TARGET`` for the
    envelope's worst-case acceptance ``p0 = (1 - 1/e)/(1 + 1/e)``, so that ``num``
    accepted candidates are available except with probability ``<= FAILURE_TARGET``.

    Args:
        num: Number of draws sharing one axial law.

    Returns:
        ``M`` (e.g. 60 for one draw, about 4 per draw for a hundred).

    Examples:
        >>> from dpsample.samplers.restricted_gaussian import num_candidates
        >>> num_candidates(1)
        60
    """
    num = validation.positive_int("num", num)
    size = math.ceil(num / _ACCEPT_LOWER_BOUND)
    # the first size whose tail meets the target, scanned a block of sizes at a
    # time (scipy's binomial CDF elementwise: the values of the one-by-one scan,
    # whose per-call overhead was most of a Gibbs plan, issue 27)
    block = 64
    while True:
        sizes = np.arange(size, size + block)
        tails = scipy.stats.binom.cdf(num - 1, sizes, _ACCEPT_LOWER_BOUND)
        passing = np.flatnonzero(~(tails > FAILURE_TARGET))
        if passing.size:
            return int(sizes[passing[0]])
        size += block


def tv_bound(num: int) -> float:
    r"""TV distance between one call's ``num`` draws and ``num`` exact draws.

    .. math::
        p_{RG} + 3 M 2^{-52}, \qquad M = \mathrm{num\_candidates}(num):

    the pooled shortfall (:data:`FAILURE_TARGET`) plus the resolution of the float64
    uniforms in the three comparisons of each of the ``M`` candidates (a union bound
    under the coupling ``u = 2^-52 floor(2^52 U)``, ``U`` exact: a comparison
    ``u < c`` differs from ``U < c`` only if ``u < c <= U``). Float64 evaluation of
    the density and representation of continuous draws are outside the bound
    (module docstring).

    Args:
        num: Number of draws of the call (they share one axial law).

    Returns:
        The bound (a float).

    Examples:
        >>> from dpsample.samplers.restricted_gaussian import tv_bound
        >>> f"{tv_bound(1):.2e}"
        '4.01e-14'
    """
    size = num_candidates(num)
    return FAILURE_TARGET + _DECISIONS_PER_CANDIDATE * size * UNIFORM_RESOLUTION


_BISECTION_STEPS = 64  # an interval halved 64 times: below float64 resolution.
_RADIAL_STEPS = 60  # |z|^2 to absolute error R^2 2^-60.
_LOG_MARGIN = 1e-9  # log-space headroom on the flat top (rounding in the mode).


class _Envelope(NamedTuple):
    """A three-piece envelope of a concave log-density ``h`` on ``[lo, hi]``."""

    lo: Array
    hi: Array
    mode: Array
    h_mode: Array
    t_left: Array
    h_left: Array
    t_right: Array
    h_right: Array


def _num_terms(k: float) -> int:
    # Series at v <= k + 1: term ratios (k+1)/(k+1+i) multiply below 1e-17 within
    # about 9 sqrt(k) terms; the continued fraction at v >= k + 1 converges at the
    # same rate. Checked against scipy.special.gammainc to 1e-10 relative error for
    # k in [0.5, 5e4] (tests/samplers/test_restricted_gaussian.py).
    return 40 + int(10.0 * math.sqrt(k))


def _log_gammainc(k: float, v: Array) -> Array:
    """``log P(k, v)`` for a static ``k > 0`` and ``v >= 0``, fixed cost, no underflow.

    The series ``P = v^k e^-v / Gamma(k+1) sum_j v^j / ((k+1)...(k+j))`` (summed in
    log space) for ``v < k + 1``, and ``log1p(-Q)`` with ``Q`` from the Lentz continued
    fraction for ``v >= k + 1``; both with a fixed number of terms (no while loop), so
    the cost does not depend on ``v``.
    """
    v_safe = jnp.maximum(v, 1e-300)
    if k == 0.5:  # d = 2: P(1/2, v) = erf(sqrt(v))
        return jnp.where(
            v > 0, jnp.log(jax.scipy.special.erf(jnp.sqrt(v_safe))), -jnp.inf
        )
    if k == 1.0:  # d = 3: P(1, v) = 1 - exp(-v)
        return jnp.where(v > 0, jnp.log(-jnp.expm1(-v_safe)), -jnp.inf)
    num = _num_terms(k)
    j = np.arange(1, num + 1, dtype=np.float64)
    # log((k+1)...(k+j)) as constants (a cumsum would be quadratic on XLA:CPU).
    log_rising = np.cumsum(np.log(k + j))
    vs = jnp.minimum(v_safe, k + 1.0)
    log_terms = jnp.log(vs)[..., None] * j - log_rising
    log_sum = jnp.logaddexp(0.0, jax.nn.logsumexp(log_terms, axis=-1))
    series = k * jnp.log(vs) - vs - math.lgamma(k + 1.0) + log_sum

    x = jnp.maximum(v_safe, k + 1.0)
    tiny = 1e-300

    def body(i, carry):
        b, c, d, h = carry
        an = -i * (i - k)
        b = b + 2.0
        d = an * d + b
        d = jnp.where(jnp.abs(d) < tiny, tiny, d)
        c = b + an / c
        c = jnp.where(jnp.abs(c) < tiny, tiny, c)
        d = 1.0 / d
        return b, c, d, h * d * c

    b = x + 1.0 - k
    init = (b, jnp.full_like(x, 1.0 / tiny), 1.0 / b, 1.0 / b)
    h = jax.lax.fori_loop(1, num + 1, body, init)[3]
    log_q = -x + k * jnp.log(x) - math.lgamma(k) + jnp.log(h)
    cf = jnp.log1p(-jnp.exp(log_q))
    out = jnp.where(v_safe < k + 1.0, series, cf)
    return jnp.where(v > 0, out, -jnp.inf)


def _axial_h(t: Array, a: Array, s: Array, radius: float, dim: int) -> Array:
    """Axial log-density ``h(t)`` up to a constant; ``-inf`` outside ``(-R, R)``."""
    quad = -0.5 * ((t - a) / s) ** 2
    if dim == 1:
        return jnp.where(jnp.abs(t) <= radius, quad, -jnp.inf)
    v = (radius**2 - t**2) / (2.0 * s**2)
    return quad + _log_gammainc(0.5 * (dim - 1), v)


def _axial_dh(t: Array, a: Array, s: Array, radius: float, dim: int) -> Array:
    """``h'(t)`` for ``|t| < R`` and ``d >= 2``."""
    k = 0.5 * (dim - 1)
    v = jnp.maximum((radius**2 - t**2) / (2.0 * s**2), 1e-300)
    log_density = (k - 1.0) * jnp.log(v) - v - math.lgamma(k)
    ratio = jnp.exp(log_density - _log_gammainc(k, v))
    return -(t - a) / s**2 - t / s**2 * ratio


def axial_logdensity(
    t: ArrayLike, distance: ArrayLike, std: ArrayLike, radius: float, dim: int
) -> Array:
    r"""Unnormalised log-density of the axial coordinate ``t = <x - c, u>``.

    .. math::
        \log g(t) = -\frac{(t - a)^2}{2 s^2}
        + \log P\Big(\frac{d-1}{2}, \frac{R^2 - t^2}{2 s^2}\Big)

    on ``[-R, R]`` (``-inf`` outside), with ``a = |m - c|`` the distance of the mean
    from the centre. Exposed for tests and diagnostics.

    Args:
        t: Axial coordinate(s).
        distance: ``a = |m - c| >= 0``.
        std: ``s > 0``.
        radius: ``R`` (static).
        dim: ``d`` (static).

    Returns:
        ``log g(t)`` up to an additive constant, same shape as ``t``.

    Examples:
        >>> import dpsample
        >>> from dpsample.samplers.restricted_gaussian import axial_logdensity
        >>> float(axial_logdensity(2.0, 0.0, 1.0, 1.0, 3))
        -inf
    """
    t = jnp.asarray(t, jnp.float64)
    return _axial_h(
        t,
        jnp.asarray(distance, jnp.float64),
        jnp.asarray(std, jnp.float64),
        radius,
        dim,
    )


def _bisect(pred, lo: Array, hi: Array, steps: int) -> tuple[Array, Array]:
    """Shrink ``[lo, hi]``, moving ``lo`` up where ``pred`` holds, ``hi`` down else."""

    def body(_, bounds):
        lo, hi = bounds
        mid = 0.5 * (lo + hi)
        ok = pred(mid)
        return jnp.where(ok, mid, lo), jnp.where(ok, hi, mid)

    return jax.lax.fori_loop(0, steps, body, (lo, hi))


def _envelope(h_fn, lo: Array, hi: Array, mode: Array) -> _Envelope:
    """Flat top where ``h >= h(mode) - 1``, secant tails outside it."""
    h_mode = h_fn(mode)

    def high(t):
        return h_fn(t) >= h_mode - 1.0

    # Both ends in one loop, as a pair: ``t_right`` is the last ``hi`` of the search
    # on ``[mode, hi]`` for ``high``, ``t_left`` the last ``lo`` of the search on
    # ``[lo, mode]`` for ``~high`` (elementwise, so each is what its own search gives).
    flip = jnp.array([False, True])
    los, his = _bisect(
        lambda t: high(t) != flip,
        jnp.stack([mode, jnp.broadcast_to(lo, mode.shape)]),
        jnp.stack([jnp.broadcast_to(hi, mode.shape), mode]),
        _BISECTION_STEPS,
    )
    t_right, t_left = his[0], los[1]
    return _Envelope(lo, hi, mode, h_mode, t_left, h_fn(t_left), t_right, h_fn(t_right))


def _secant(h_end: Array, h_mode: Array, t_end: Array, mode: Array) -> Array:
    """Secant slope from the mode to a tail point (bounds a concave ``h`` beyond)."""
    gap = t_end - mode
    ok = (gap != 0) & jnp.isfinite(h_end)
    return jnp.where(ok, (h_end - h_mode) / jnp.where(ok, gap, 1.0), 0.0)


def _log_tail_mass(h_end: Array, top: Array, rate: Array, length: Array) -> Array:
    """``log int_0^length exp(h_end - top - rate e) de`` (``-inf`` if empty)."""
    valid = (length > 0) & (rate > 0) & jnp.isfinite(h_end)
    lam = jnp.where(valid, rate, 1.0)
    length = jnp.where(valid, length, 1.0)
    log_mass = h_end - top + jnp.log(-jnp.expm1(-lam * length)) - jnp.log(lam)
    return jnp.where(valid, log_mass, -jnp.inf)


def _tail_offset(u: Array, rate: Array, length: Array) -> Array:
    """Offset in ``[0, length]`` with density ``∝ exp(-rate e)`` by inversion."""
    lam = jnp.where(rate > 0, rate, 1.0)
    return jnp.minimum(-jnp.log1p(u * jnp.expm1(-lam * length)) / lam, length)


def _draw_pooled(stream: WordStream, env: _Envelope, h_fn, num: int) -> Array:
    """``num`` i.i.d. exact draws from ``exp(h)`` on ``[lo, hi]``, fixed budget.

    ``num_candidates(num)`` candidates from the envelope (two uniforms each: one picks
    the piece and the position inside it, one decides acceptance); the accepted ones,
    in order, are i.i.d. from the target. The first ``num`` are returned; missing ones
    (probability ``<= FAILURE_TARGET``) are replaced by the mode.
    """
    size = num_candidates(num)
    top = env.h_mode + _LOG_MARGIN
    slope_r = _secant(env.h_right, env.h_mode, env.t_right, env.mode)
    slope_l = _secant(env.h_left, env.h_mode, env.t_left, env.mode)
    len_r = env.hi - env.t_right
    len_l = env.t_left - env.lo
    log_m = jnp.stack(
        [
            _log_tail_mass(env.h_left, top, slope_l, len_l),
            jnp.log(jnp.maximum(env.t_right - env.t_left, 1e-300)),
            _log_tail_mass(env.h_right, top, -slope_r, len_r),
        ]
    )
    probs = jnp.exp(log_m - jax.nn.logsumexp(log_m))
    p_left, p_mid = probs[0], probs[1]
    u = stream.uniform((size,))
    in_left = u < p_left
    in_mid = (~in_left) & (u < p_left + p_mid)
    # The fraction of u inside its piece is again uniform on [0, 1].
    f_left = jnp.clip(u / jnp.maximum(p_left, 1e-300), 0.0, 1.0)
    f_mid = jnp.clip((u - p_left) / jnp.maximum(p_mid, 1e-300), 0.0, 1.0)
    f_right = jnp.clip(
        (u - p_left - p_mid) / jnp.maximum(1.0 - p_left - p_mid, 1e-300), 0.0, 1.0
    )
    left = env.t_left - _tail_offset(f_left, slope_l, len_l)
    mid = env.t_left + f_mid * (env.t_right - env.t_left)
    right = env.t_right + _tail_offset(f_right, -slope_r, len_r)
    t = jnp.where(in_left, left, jnp.where(in_mid, mid, right))
    log_env = jnp.where(
        in_left,
        env.h_left + slope_l * (t - env.t_left),
        jnp.where(in_mid, top, env.h_right + slope_r * (t - env.t_right)),
    )
    log_u = jnp.log(stream.uniform((size,)))
    accepted = log_u <= h_fn(t) - log_env
    rank = jnp.cumsum(accepted.astype(jnp.int32)) - 1
    slot = jnp.where(accepted & (rank < num), rank, num)
    out = jnp.full((num + 1,), env.mode, jnp.float64).at[slot].set(t)
    return out[:num]


def _axial_envelope(a: Array, s: Array, radius: float, dim: int) -> _Envelope:
    r = jnp.asarray(radius, jnp.float64)

    def h_fn(t):
        return _axial_h(t, a, s, radius, dim)

    if dim == 1:
        mode = jnp.minimum(a, r)
    else:
        lo, hi = _bisect(
            lambda t: _axial_dh(t, a, s, radius, dim) > 0, -r, r, _BISECTION_STEPS
        )
        mode = 0.5 * (lo + hi)
    return _envelope(h_fn, -r, r, mode)


def _draw_radial(u: Array, t: Array, s: Array, radius: float, dim: int):
    """``|z|`` given ``t``: ``|z|^2/s^2 ~ chi^2_{d-1}`` truncated to ``(R^2-t^2)/s^2``.

    By inversion of ``P(k, .)``, ``k = (d-1)/2``: in closed form for ``d = 3``
    (``P = 1 - e^-v``), by bisection in float64 for ``d > 3`` (JAX has no
    ``gammaincinv``). One uniform ``u`` in ``[1e-300, 1)`` per draw. ``d = 2`` draws
    the signed coordinate instead (:func:`_draw_line`).
    """
    k = 0.5 * (dim - 1)
    v_max = jnp.maximum((radius**2 - t**2) / (2.0 * s**2), 0.0)
    if dim == 3:
        v = jnp.minimum(-jnp.log1p(u * jnp.expm1(-v_max)), v_max)
    else:
        target = jnp.log(u) + _log_gammainc(k, v_max)
        lo, hi = _bisect(
            lambda v: _log_gammainc(k, v) <= target,
            jnp.zeros_like(v_max),
            v_max,
            _RADIAL_STEPS,
        )
        v = 0.5 * (lo + hi)
    return jnp.sqrt(2.0 * v) * s


def _draw_line(w: Array, t: Array, s: Array, radius: float) -> Array:
    """``d = 2``: the coordinate along ``u^⊥`` given ``t``, with its sign.

    ``N(0, s^2)`` truncated to ``|z| <= sqrt(R^2 - t^2)``, by inversion of its CDF
    from one uniform ``w`` on ``[-1, 1)``: ``z = sqrt(2) s erfinv(w erf(c))`` with
    ``c = sqrt(R^2 - t^2) / (sqrt(2) s)``. Its absolute value is the radius ``|z|``
    (``|z|^2/s^2 ~ chi^2_1`` truncated, ``P(1/2, v) = erf(sqrt(v))``), and its sign is
    uniform and independent of it.
    """
    v_max = jnp.maximum((radius**2 - t**2) / (2.0 * s**2), 0.0)
    root = jax.scipy.special.erfinv(w * jax.scipy.special.erf(jnp.sqrt(v_max)))
    v = jnp.minimum(root**2, v_max)
    # The sign of w, not of root (the same, erfinv being odd): XLA:CPU would otherwise
    # fuse erfinv's polynomial into each consumer of the draw and recompute it there.
    return jnp.where(w < 0.0, -1.0, 1.0) * jnp.sqrt(2.0 * v) * s


def words_needed(num: int, dim: int) -> int:
    """Random 32-bit words one call of ``num`` draws in dimension ``dim`` uses.

    Two uniforms per envelope candidate (``num_candidates(num)`` of them) and, for
    ``d >= 3``, one uniform for each radius and ``d`` normals for each direction;
    for ``d = 2``, one uniform for each signed coordinate along the line ``u^⊥``
    (:mod:`dpsample._src.random_words`).

    Args:
        num: Number of draws ``>= 1``.
        dim: The dimension ``d >= 1``.

    Returns:
        The number of words.

    Examples:
        >>> from dpsample.samplers.restricted_gaussian import words_needed
        >>> words_needed(100, 2)
        1740
    """
    num = validation.positive_int("num", num)
    dim = validation.positive_int("dim", dim)
    words = 2 * num_candidates(num) * UNIFORM_WORDS
    if dim == 2:
        words += num * UNIFORM_WORDS
    elif dim > 2:
        words += num * UNIFORM_WORDS + num * dim * NORMAL_WORDS
    return words


def draws_from_stream(
    stream: WordStream, mean: Array, std: Array, ball: Ball, num: int
) -> Array:
    """The draws of :func:`sample_unchecked` from the next words of a stream.

    For callers that draw the random words of a whole step at once (the restricted
    Gaussian oracle). ``sample_unchecked(key, ...)`` is this function on
    ``WordStream.draw(key, words_needed(num, d))``.

    Args:
        stream: A :class:`~dpsample._src.random_words.WordStream` with at least
            ``words_needed(num, d)`` unused words.
        mean: The Gaussian's mean, a float64 array of shape ``(d,)``.
        std: The standard deviation ``s > 0``, a float64 scalar array.
        ball: The :class:`~dpsample.domains.Ball` (static).
        num: Number of draws ``>= 1`` (static).

    Returns:
        ``num`` draws of shape ``(num, d)``.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> from dpsample._src import precision
        >>> from dpsample._src.random_words import WordStream
        >>> from dpsample.domains import Ball
        >>> from dpsample.samplers import restricted_gaussian as rg
        >>> ball, mean, std = Ball(1.0, dim=3), jnp.zeros(3), jnp.asarray(0.5)
        >>> key = jax.random.key(0)
        >>> @jax.jit
        ... def draws(key):
        ...     stream = WordStream.draw(key, rg.words_needed(2, 3))
        ...     return rg.draws_from_stream(stream, mean, std, ball, 2)
        >>> with precision.float64():
        ...     xs = draws(key)
        >>> bool((xs == rg.sample_unchecked(key, mean, std, ball, 2)).all())
        True
    """
    dim = mean.shape[-1]
    radius = ball.radius
    center = (
        jnp.zeros((dim,), jnp.float64) if ball.center is None else ball.center_point
    )
    offset = mean - center
    a = jnp.linalg.norm(offset)
    e1 = jnp.zeros((dim,), jnp.float64).at[0].set(1.0)
    axis = jnp.where(a > 0, offset / jnp.where(a > 0, a, 1.0), e1)
    env = _axial_envelope(a, std, radius, dim)
    t = _draw_pooled(stream, env, lambda t: _axial_h(t, a, std, radius, dim), num)
    x = t[:, None] * axis
    if dim == 2:
        w = 2.0 * stream.uniform((num,)) - 1.0  # exact: a multiple of 2^-51
        z = jax.vmap(lambda wi, ti: _draw_line(wi, ti, std, radius))(w, t)
        x = x + z[:, None] * jnp.stack([-axis[1], axis[0]])
    elif dim > 2:
        u = stream.uniform((num,), minval=1e-300)
        r = jax.vmap(lambda ui, ti: _draw_radial(ui, ti, std, radius, dim))(u, t)
        g = stream.normal((num, dim))
        g = g - (g @ axis)[:, None] * axis
        w = g / jnp.maximum(jnp.linalg.norm(g, axis=1, keepdims=True), 1e-300)
        x = x + r[:, None] * w
    return center + x


@functools.partial(jax.jit, static_argnums=(3, 4))
def _draws(rng_key: PRNGKey, mean: Array, std: Array, ball: Ball, num: int) -> Array:
    """``num`` draws sharing one axial law, shape ``(num, d)`` (compiled per ball)."""
    stream = WordStream.draw(rng_key, words_needed(num, mean.shape[-1]))
    out = draws_from_stream(stream, mean, std, ball, num)
    stream.check_used()
    return out


def _check(mean: ArrayLike, std: ArrayLike, ball: Ball) -> tuple[Array, Array]:
    if not isinstance(ball, Ball):
        raise TypeError(f"Expected a Ball, got {type(ball).__name__}")
    mean = jnp.asarray(mean, jnp.float64)
    if mean.ndim != 1:
        raise ValueError(f"Expected mean of shape (d,), got shape {mean.shape}")
    if ball.dim is not None and ball.dim != mean.shape[0]:
        raise ValueError(
            f"Expected mean of dimension {ball.dim} (the ball's), got {mean.shape[0]}"
        )
    std = jnp.asarray(std, jnp.float64)
    if std.ndim != 0:
        raise ValueError(f"Expected a scalar std, got shape {std.shape}")
    if not isinstance(std, jax.core.Tracer):
        validation.positive("std", float(std))
    if not isinstance(mean, jax.core.Tracer):
        validation.finite_tree("mean", np.asarray(mean))
    return mean, std


def sample_unchecked(
    rng_key: PRNGKey, mean: Array, std: Array, ball: Ball, num: int
) -> Array:
    """``num`` draws of :func:`sample`, shape ``(num, d)``, without input checks.

    :func:`sample` after its checks, for callers that checked ``mean``, ``std`` and
    ``ball`` themselves (the restricted Gaussian oracle, on traced values). The same
    draws as ``sample(rng_key, mean, std, ball, num)`` for valid inputs.

    Args:
        rng_key: A JAX PRNG key (typed, ``jax.random.key(seed)``).
        mean: The Gaussian's mean, a float64 array of shape ``(d,)``.
        std: The standard deviation ``s > 0``, a float64 scalar array.
        ball: The :class:`~dpsample.domains.Ball` (static).
        num: Number of draws ``>= 1`` (static).

    Returns:
        ``num`` draws of shape ``(num, d)``.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> from dpsample.domains import Ball
        >>> from dpsample.samplers import restricted_gaussian
        >>> ball, mean, std = Ball(1.0, dim=3), jnp.zeros(3), jnp.asarray(0.5)
        >>> key = jax.random.key(0)
        >>> xs = restricted_gaussian.sample_unchecked(key, mean, std, ball, 2)
        >>> ys = restricted_gaussian.sample(key, mean, std, ball, 2)
        >>> xs.shape, bool((xs == ys).all())
        ((2, 3), True)
    """
    return _draws(rng_key, mean, std, ball, num)


def sample(
    rng_key: PRNGKey,
    mean: ArrayLike,
    std: ArrayLike,
    ball: Ball,
    num: int | None = None,
) -> Array:
    r"""Draw exactly from ``N(mean, std^2 I_d)`` restricted to ``ball``.

    .. math::
        x \sim \nu, \qquad \nu(x) \propto
        \exp\Big(-\frac{\|x - m\|^2}{2 s^2}\Big)\,\mathbf{1}\{\|x - c\| \le R\}.

    Axis/radial decomposition (module docstring): an exact fixed-budget rejection
    draw of the axial coordinate from a log-concave density, an inversion draw of the
    truncated ``chi^2_{d-1}`` radius and a uniform direction. ``O(d)`` work per draw;
    the 1-D part costs ``O(sqrt(d))`` per special-function call. The mode search is
    shared by all ``num`` draws. Jittable (``ball`` and ``num`` static) and
    vmappable over ``rng_key``, ``mean`` and ``std``; ``jit`` is left to the caller.

    Args:
        rng_key: A JAX PRNG key (typed, ``jax.random.key(seed)``).
        mean: The Gaussian's mean ``m``, shape ``(d,)``; it may lie outside the ball.
        std: The standard deviation ``s > 0`` (a scalar).
        ball: The :class:`~dpsample.domains.Ball` ``B(c, R)``.
        num: Number of draws (static), or ``None`` for a single draw.

    Returns:
        One draw of shape ``(d,)``, or ``num`` draws of shape ``(num, d)``. Every draw
        lies in the ball up to float rounding.

    Raises:
        TypeError: If ``ball`` is not a Ball.
        ValueError: If ``mean`` is not a finite vector of the ball's dimension,
            ``std`` is not a positive scalar (checked when concrete) or ``num < 1``.

    Privacy:
        No private data is read; inside a private sampler ``mean`` may depend on the
        data, and the work done is the same for every ``mean`` (fixed candidate
        budget), so running time does not leak it. Some draws fall back to the axial
        mode with probability at most :data:`FAILURE_TARGET` (``1e-16``) per call;
        with the resolution of the uniforms the draws are :func:`tv_bound`-close in
        TV to exact ones (float64 arithmetic aside); callers count it as TV error.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> import dpsample
        >>> from dpsample.domains import Ball
        >>> from dpsample.samplers import restricted_gaussian
        >>> ball = Ball(1.0, dim=1000)
        >>> mean = jnp.zeros(1000).at[0].set(1.0)   # mean on the boundary
        >>> xs = restricted_gaussian.sample(jax.random.key(0), mean, 0.01, ball, 4)
        >>> xs.shape, bool(ball.contains(xs).all())
        ((4, 1000), True)

    References:
        Samplers research note §3 (the decomposition); Gopi, Lee, Liu (2022), App. A.
    """
    mean, std = _check(mean, std, ball)
    if num is None:
        return _draws(rng_key, mean, std, ball, 1)[0]
    num = validation.positive_int("num", num)
    return _draws(rng_key, mean, std, ball, num)


precision.scope_public(globals())
