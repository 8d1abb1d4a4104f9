"""dp_accounting's Gaussian PLDs, with the per-grid-point loop vectorised.

dp_accounting (0.6) builds the privacy loss distribution (PLD) of a Gaussian
mechanism by the connect-the-dots algorithm: it evaluates the hockey-stick
divergence at every point of the loss grid, and for each point it inverts the
privacy loss in pure Python (``GaussianPrivacyLoss.inverse_privacy_loss``, one call
per grid point). That loop was the bulk of every plan's time (issue 27): 140,000
calls a truncated Poisson PLD at the guarantee's ``1e-4`` grid, up to two million
(about 10 s) for a long full-batch schedule, 29 million in one DP-SGD calibration.

:func:`accountant_pld` builds **the same PLD as dp_accounting's** ``PLDAccountant``
for the events whose analysis is a Gaussian one (``GaussianDpEvent``, a
``PoissonSampledDpEvent`` of one, ``TruncatedSubsampledGaussianDpEvent``): the same
constructors of dp_accounting, called with a subclass of its ``GaussianPrivacyLoss``
whose ``get_delta_for_epsilon`` inverts the loss on the whole grid at once, by the
same formula in the same operation order (libm's ``exp``/``log1p`` elementwise, as
dp_accounting's ``math`` calls; ``tests/test_plan_speed.py`` checks the PLDs and
their epsilons are the accountant's bit for bit). Nothing else is rewritten: the
tails, the connect-the-dots discretisation, the truncated mixture and the
compositions are dp_accounting's own code, but for more of its pure-Python or
per-call-overhead passes, done here by the same operations (issue 27): a
self-composition's Chernoff truncation bounds (40 ``scipy.special.logsumexp``
calls, batched, and on a long input only the orders that can decide a bound:
:func:`_self_convolve`), the dense connect-the-dots PMF, built from its
probability array instead of through a dict (:func:`_connect_dots_fixed_gap`),
the noise's CDFs without scipy's distribution wrapper
(:meth:`_VectorGaussianPrivacyLoss.noise_cdf`), and the accountant's composition
with its tail truncation found by a ``cumsum`` instead of a Python loop
(:func:`_compose`). Cases it does not vectorise (add/remove adjacency under
subsampling) run dp_accounting's loop unchanged, and events it does not cover
give ``None`` (the caller runs the accountant).

What stays dp_accounting's own and bounds a plan at the extreme settings (a
2.6-million-point PLD self-composed to 6.6 million points, DP-SGD at ``n =
1e7``): the FFTs of the self-composition and ``get_epsilon_for_delta``'s
Python loop over the grid (a libm ``exp`` per point, which numpy's ``exp`` does
not reproduce bit for bit).

It reaches two private names of dp_accounting
(``privacy_loss_distribution._create_pld_pmf_from_monotone_privacy_loss`` and
``_pld_for_subsampled_mechanism``); where a version lacks them,
:func:`accountant_pld` returns ``None`` and the accountant runs as before (slower,
same values).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import dp_accounting
import numpy as np
from dp_accounting.pld import pld_pmf as _pmf_mod
from dp_accounting.pld import privacy_loss_distribution as _pld_mod
from dp_accounting.pld import privacy_loss_mechanism as _plm
from scipy import fft as _fft
from scipy import signal as _signal
from scipy import special as _special

from dpsample._src import precision

__all__: list[str] = []

_AdjacencyType = _plm.AdjacencyType
_REPLACE_ONE = dp_accounting.NeighboringRelation.REPLACE_ONE
_SUBSAMPLED_RELATIONS = (
    dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE,
    dp_accounting.NeighboringRelation.REPLACE_SPECIAL,
)
_CREATE_PMF: Any = getattr(_pld_mod, "_create_pld_pmf_from_monotone_privacy_loss", None)
_FOR_SUBSAMPLED: Any = getattr(_pld_mod, "_pld_for_subsampled_mechanism", None)
_LOG2 = math.log(2)


def _elementwise(fn: Any) -> Any:
    """``fn`` (a ``math`` function) on every element: libm's values, bit for bit."""
    ufunc = np.frompyfunc(fn, 1, 1)
    return lambda x: ufunc(x).astype(np.float64)


#: ``math.exp`` and ``math.log1p`` elementwise: numpy's own ``exp`` differs from
#: libm's by an ulp on some arguments, and dp_accounting calls ``math``'s.
_math_exp = _elementwise(math.exp)
_math_log1p = _elementwise(math.log1p)


#: From this ``x`` on, ``x + log1p(-exp(-2 x))`` is ``x`` in float64 (issue 27):
#: ``exp(-2 x) <= e^-40 < 2^-57`` is below a quarter of ``x``'s ulp (at least
#: ``2^-48`` for ``x >= 16``), so the sum rounds to ``x`` whatever ``exp``'s last bit.
_LOG_SINH_FLAT = 20.0


def _log_sinh_sum(x: np.ndarray) -> np.ndarray:
    """``x + log1p(-exp(-2 x))`` (``x > 0``) with libm's ``exp`` and ``log1p``.

    The elementwise libm calls (:func:`_elementwise`, about 100 ns an element:
    most of a wide grid's inversion) are made only where they can change the
    sum, below :data:`_LOG_SINH_FLAT`; above it the sum is ``x`` exactly, as
    dp_accounting's ``common.log_sinh`` computes it.
    """
    out = np.array(x, dtype=np.float64, copy=True)
    near = x < _LOG_SINH_FLAT
    if np.any(near):
        small = x[near]
        out[near] = small + _math_log1p(-_math_exp(-2 * small))
    return out


class _VectorGaussianPrivacyLoss(_plm.GaussianPrivacyLoss):
    """dp_accounting's ``GaussianPrivacyLoss``; the loss inverted on a whole grid."""

    def _inverse_privacy_losses(self, eps: np.ndarray) -> np.ndarray | None:
        """``[inverse_privacy_loss(e) for e in eps]`` as one numpy expression.

        The formulas and operation order of dp_accounting's scalar methods
        (``_inverse_privacy_loss_replace``, ``common.log_sinh``,
        ``common.asinh_exp`` and the ``_without_subsampling`` inverses); ``None``
        where they are not vectorised here (add/remove under subsampling).
        """
        sd2, sens = self._standard_deviation**2, self.sensitivity
        if self.sampling_prob == 1.0:
            if self.adjacency_type == _AdjacencyType.REPLACE:
                return np.where(eps == 0, 0.0, -eps * sd2 / sens / 2)
            if self.adjacency_type == _AdjacencyType.REMOVE:
                return -0.5 * sens - eps * sd2 / sens
            if self.adjacency_type == _AdjacencyType.ADD:
                return sens + (-0.5 * sens - eps * sd2 / sens)
            return None
        if self.adjacency_type != _AdjacencyType.REPLACE:
            return None
        q = self.sampling_prob
        log_alpha = (
            0.5 * (sens / self._standard_deviation) ** 2 + math.log1p(-q) - math.log(q)
        )
        half = np.abs(eps) / 2
        safe = np.where(half == 0, 1.0, half)  # log_sinh(0) = 0, set below
        log_sinh = _log_sinh_sum(safe) - _LOG2
        a = log_alpha + np.where(half == 0, 0.0, log_sinh)
        sign = np.where(eps >= 0, -1.0, 1.0)  # asinh_exp(a, -sign(eps)), |b| = 1
        asinh = sign * np.logaddexp(0.5 * np.logaddexp(0, 2 * a), a)
        x = sd2 / sens * (asinh - eps / 2)
        return np.where(eps == 0, 0.0, x)

    def noise_cdf(self, x: Any) -> Any:
        """The noise's CDF: scipy's ``norm(scale=sd).cdf`` without its wrapper.

        scipy computes ``ndtr((x - 0) / sd)`` on every point and handles
        ``nan`` and ``+-inf`` by masks, to the same values ``ndtr`` gives
        them; its per-call masks and copies were a fifth of a wide grid's time
        (issue 27). Scalars go to scipy.
        """
        if isinstance(x, numbers.Number):
            return super().noise_cdf(x)
        return _special.ndtr(np.asarray(x, dtype=np.float64) / self._standard_deviation)

    def noise_log_cdf(self, x: Any) -> Any:
        """The noise's log-CDF: ``log_ndtr(x / sd)``, as :meth:`noise_cdf`."""
        if isinstance(x, numbers.Number):
            return super().noise_log_cdf(x)
        return _special.log_ndtr(
            np.asarray(x, dtype=np.float64) / self._standard_deviation
        )

    def get_delta_for_epsilon(self, epsilon: Any) -> Any:
        """dp_accounting's hockey-stick divergence, the cut-offs computed at once."""
        if isinstance(epsilon, numbers.Number):
            return super().get_delta_for_epsilon(epsilon)
        epsilons = np.asarray(epsilon, dtype=float)
        x_cutoffs = self._inverse_privacy_losses(epsilons)
        if x_cutoffs is None:
            return super().get_delta_for_epsilon(epsilon)
        # REPLACE, or sampling_prob == 1: dp_accounting inverts every epsilon
        deltas = self.mu_upper_cdf(x_cutoffs) - np.exp(
            epsilons + self.mu_lower_log_cdf(x_cutoffs)
        )
        return np.clip(deltas, 0, 1)


_FIXED_GAP: Any = getattr(
    _pmf_mod, "create_pmf_pessimistic_connect_dots_fixed_gap", None
)


def _create_pmf(privacy_loss: Any, **kwargs: Any) -> Any:
    """dp_accounting's ``_create_pld_pmf_from_monotone_privacy_loss``.

    Its continuous connect-the-dots branch, step by step, with a dense PMF built
    from the probability array itself (:func:`_connect_dots_fixed_gap`); every
    other case is dp_accounting's own call.
    """
    interval = kwargs["value_discretization_interval"]
    if (
        _FIXED_GAP is None
        or not (kwargs["use_connect_dots"] and kwargs["pessimistic_estimate"])
        or privacy_loss.is_discrete
    ):
        return _CREATE_PMF(privacy_loss, **kwargs)
    bounds = privacy_loss.connect_dots_bounds()
    if bounds.epsilon_upper is None or bounds.epsilon_lower is None:
        return _CREATE_PMF(privacy_loss, **kwargs)  # raises, as there
    upper = math.ceil(bounds.epsilon_upper / interval)
    lower = math.floor(bounds.epsilon_lower / interval)
    deltas = privacy_loss.get_delta_for_epsilon(np.arange(lower, upper + 1) * interval)
    return _connect_dots_fixed_gap(interval, lower, upper, deltas)


def _connect_dots_fixed_gap(
    discretization: float, lower: int, upper: int, deltas: Any
) -> Any:
    """``pld_pmf.create_pmf_pessimistic_connect_dots_fixed_gap``, dense part.

    dp_accounting computes the probabilities as an array, puts them in a dict
    keyed by ``lower..upper`` and, above its sparse size, reads the dict back
    into a list (two pure-Python passes over up to 10^5 points, most of a plain
    Gaussian's PLD): the same array goes to the dense PMF directly here. Small
    supports and inputs it refuses go to dp_accounting's function.
    """
    deltas = np.asarray(deltas, dtype=np.float64)
    size = upper - lower + 1
    if (
        size <= _pmf_mod._MAX_PMF_SPARSE_SIZE  # noqa: SLF001
        or deltas.size != size
        or np.any(deltas < 0)
        or np.any(deltas > 1)
        or np.any(np.diff(deltas) > _pmf_mod._DELTA_DIFF_TOLERANCE)  # noqa: SLF001
    ):
        return _FIXED_GAP(discretization, lower, upper, deltas)
    deltas = np.minimum.accumulate(deltas)
    delta_diffs = np.diff(deltas)
    probs = np.zeros_like(deltas)
    probs[0] = 1 - deltas[0] + delta_diffs[0] / math.expm1(discretization)
    probs[1:-1] = (
        delta_diffs[1:] - delta_diffs[:-1] * math.exp(discretization)
    ) / math.expm1(discretization)
    probs[-1] = delta_diffs[-1] / math.expm1(-discretization)
    probs = np.maximum(0.0, probs)
    return _pmf_mod.DensePLDPmf(discretization, lower, probs, deltas[-1], True)


def _gaussian_pld(
    standard_deviation: float,
    interval: float,
    relation: Any,
    sampling_prob: float = 1.0,
) -> Any:
    """dp_accounting's ``from_gaussian_mechanism`` (its defaults), vectorised."""

    def single(adjacency_type: Any) -> Any:
        return _create_pmf(
            _VectorGaussianPrivacyLoss(
                standard_deviation,
                sensitivity=1,
                pessimistic_estimate=True,
                log_mass_truncation_bound=-50,
                sampling_prob=sampling_prob,
                adjacency_type=adjacency_type,
            ),
            pessimistic_estimate=True,
            value_discretization_interval=interval,
            use_connect_dots=True,
        )

    if relation in _SUBSAMPLED_RELATIONS:
        return _FOR_SUBSAMPLED(single, sampling_prob)
    if relation == _REPLACE_ONE:
        return _pld_mod.PrivacyLossDistribution(single(_AdjacencyType.REPLACE))
    raise ValueError(f"Unsupported neighboring relation: {relation}")


def _truncated_subsampled_gaussian_pld(event: Any, interval: float, relation: Any):
    """dp_accounting's ``from_truncated_subsampled_gaussian_mechanism``, vectorised.

    The sensitivity-2 branch's ``z / 2`` is dp_accounting's definition of this
    event (a truncated batch can differ in two rows), mirrored bit for bit, not a
    convention of dpsample's (those live in :mod:`dpsample.privacy.relations`).
    """
    # Deferred: scipy.stats costs about 0.3 s to import; only this event needs it.
    from scipy import stats

    n, q = event.dataset_size, event.sampling_probability
    m, z = event.truncated_batch_size, event.noise_multiplier
    sens_1 = _gaussian_pld(z, interval, relation, q)
    truncation = stats.binom.sf(m - 1, n - 1, q)
    if truncation == 0.0:
        return sens_1
    conditional = stats.binom.sf(m, n, q) * m / truncation / n
    sens_2 = _gaussian_pld(z / 2, interval, _REPLACE_ONE, conditional)
    return sens_2.compute_mixture(sens_1, truncation)


#: Above this many grid points the Chernoff orders of a self-composition are
#: computed row by row (the ``40 x n`` array costs more than the 40 calls save).
_ROWS_AT_ONCE = 1000


def _log_mgfs(probs: np.ndarray, orders: np.ndarray) -> np.ndarray:
    """``[scipy.special.logsumexp(arange(n) * t, b=probs) for t in orders]``.

    scipy's ``logsumexp`` (1.17, real inputs, ``b`` given, no sign), its
    operations in its order, without its per-call array-API dispatch (0.5-1 ms a
    call, 40 calls per self-composition: most of a calibration's time in
    dp_accounting's ``compute_self_convolve_bounds``). Short inputs take all
    orders as the rows of one array (the reductions run along each contiguous
    row, as on a vector), long ones one order at a time.
    """
    size = len(probs)
    if size <= _ROWS_AT_ONCE:
        b = np.broadcast_to(probs, (len(orders), size))
        a = np.arange(size)[None, :] * orders[:, None]
        return _logsumexp_rows(a, b)
    a_all = np.arange(size)
    return np.array(
        [_logsumexp_rows((a_all * t)[None, :], probs[None, :])[0] for t in orders]
    )


def _logsumexp_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The ``logsumexp(a[i], b=b[i])`` of scipy for every row ``i`` (see above)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        out_inf = np.log(np.sum(b * np.exp(a), axis=1, keepdims=True))
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(b == 0, -np.inf, a)
        a_max = np.max(a, axis=1, keepdims=True)
        mask = a == a_max
        a = np.where(mask, -np.inf, a)
        m = np.sum(b * mask.astype(np.float64), axis=1, keepdims=True)
        e = b * np.exp(a - a_max)
        total = np.sum(e, axis=1, keepdims=True)
        total = np.where(total == 0, total, total / m)
        sgn = np.sign(total + 1) * np.sign(m)
        total = np.where(total < -1, -total - 2, total)
        out = np.log1p(total) + np.log(np.abs(m)) + a_max
        out = np.where(sgn < 0, np.nan, out)
    return np.where(np.isfinite(out), out, out_inf)[:, 0]


#: Longest block of the log-MGF enclosures (:func:`_log_mgf_enclosures`); the
#: block is shorter where more releases are composed (an enclosure's width, in
#: grid steps of the bound, is about the block times the count), and below
#: :data:`_MGF_MIN_BLOCK` every order is evaluated.
_MGF_BLOCK = 1024
_MGF_MIN_BLOCK = 16
#: Absolute and relative slack of those enclosures: far above the rounding of
#: either computation (about ``1e-13`` for 10^7 terms), far below a grid step.
_MGF_SLACK = 1e-9


def _log_mgf_enclosures(
    probs: np.ndarray, orders: np.ndarray, block: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per order ``t``, ``[low, high]`` around :func:`_log_mgfs`' value.

    In a block of indices ``s..e`` every term ``p_i exp(i t)`` lies between
    ``P exp(min(s t, e t))`` and ``P exp(max(s t, e t))`` with ``P`` the block's
    mass (``fl(i t)`` is monotone in ``i`` like ``i t``), so the log-sums of the
    block masses at the blocks' ends enclose the log-MGF; :data:`_MGF_SLACK`
    covers the rounding of both sides. ``probs`` must be finite and ``>= 0``.
    """
    size = len(probs)
    starts = np.arange(0, size, block)
    ends = np.minimum(starts + block, size) - 1
    with np.errstate(divide="ignore"):
        log_mass = np.log(np.add.reduceat(probs, starts))
    first = orders[:, None] * starts[None, :]
    last = orders[:, None] * ends[None, :]
    low = _special.logsumexp(log_mass + np.minimum(first, last), axis=1)
    high = _special.logsumexp(log_mass + np.maximum(first, last), axis=1)
    return (
        low - _MGF_SLACK * (1.0 + np.abs(low)),
        high + _MGF_SLACK * (1.0 + np.abs(high)),
    )


def _chernoff_orders(
    probs: np.ndarray, orders: np.ndarray, num_times: int, offset: float
) -> np.ndarray:
    """Indices of the ``orders`` whose bound can decide a truncation bound.

    dp_accounting takes the smallest ``ceil`` of the positive orders' bounds
    and the largest ``floor`` of the negative ones'. A bound is monotone in the
    log-MGF, so each order's bound lies between its values at the enclosure's
    ends (:func:`_log_mgf_enclosures`); an order whose best case cannot reach
    the best worst case of its side (or the trivial bound) never decides it,
    and its log-MGF is not needed. Orders with a non-finite enclosure are kept.
    Long, non-negative ``probs`` only (all orders otherwise).
    """
    size = len(probs)
    block = min(_MGF_BLOCK, size // (2000 * max(1, num_times)))
    if (
        size <= _ROWS_AT_ONCE
        or block < _MGF_MIN_BLOCK
        or not np.all(np.isfinite(probs))
        or np.any(probs < 0)
    ):
        return np.arange(len(orders))
    low, high = _log_mgf_enclosures(probs, orders, block)
    with np.errstate(all="ignore"):
        at_low = (num_times * low + offset) / orders
        at_high = (num_times * high + offset) / orders
    finite = np.isfinite(at_low) & np.isfinite(at_high)
    up, down = orders > 0, orders < 0
    # positive orders: bound in [at_low, at_high]; negative: [at_high, at_low]
    best_up = min(
        [(size - 1) * num_times] + [math.ceil(b) for b in at_high[up & finite]]
    )
    best_down = max([0] + [math.floor(b) for b in at_high[down & finite]])
    keep = ~finite
    keep |= up & finite & (np.ceil(np.where(finite, at_low, 0.0)) <= best_up)
    keep |= down & finite & (np.floor(np.where(finite, at_low, 0.0)) >= best_down)
    return np.flatnonzero(keep)


def _self_convolve(
    probs: np.ndarray, num_times: int, tail_mass_truncation: float
) -> tuple[int, np.ndarray]:
    """dp_accounting's ``common.self_convolve``, its bounds' logsumexps batched.

    ``compute_self_convolve_bounds`` (Chernoff bounds at its 40 default orders,
    :func:`_log_mgfs` for the log-MGFs, the same loop) and the same FFT. On a
    long input only the orders that can decide a bound are evaluated
    (:func:`_chernoff_orders`; issue 27: 40 passes over millions of points at
    the extreme settings): the bounds are the same integers.
    """
    size = len(probs)
    upper_bound, lower_bound = (size - 1) * num_times, 0
    if tail_mass_truncation != 0:
        orders = np.concatenate((np.arange(-20, 0), np.arange(1, 21))) / size
        offset = math.log(2 / tail_mass_truncation)
        used = orders[_chernoff_orders(probs, orders, num_times, offset)]
        for order, log_mgf_value in zip(used, _log_mgfs(probs, used), strict=True):
            bound = (num_times * log_mgf_value + offset) / order
            if not math.isfinite(bound):
                continue
            if order > 0:
                upper_bound = min(upper_bound, math.ceil(bound))
            if order < 0:
                lower_bound = max(lower_bound, math.floor(bound))
    output_len = upper_bound - lower_bound + 1
    fast_len = _fft.next_fast_len(max(output_len, size))
    convolution = np.real(_fft.ifft(_fft.fft(probs, fast_len) ** num_times))
    return lower_bound, np.roll(convolution, -lower_bound)[:output_len]


def _self_compose_pmf(pmf: Any, num_times: int, tail: float) -> Any:
    """``DensePLDPmf.self_compose`` (dp_accounting 0.6) on :func:`_self_convolve`."""
    if not isinstance(pmf, _pmf_mod.DensePLDPmf) or num_times <= 0:
        return pmf.self_compose(num_times, tail)
    # pylint: disable=protected-access
    lower_loss = pmf._lower_loss * num_times  # noqa: SLF001
    truncation_lower_bound, probs = _self_convolve(pmf._probs, num_times, tail)  # noqa: SLF001
    inf_prob = tail - math.expm1(num_times * math.log1p(-pmf._infinity_mass))  # noqa: SLF001
    return _pmf_mod.DensePLDPmf(
        pmf._discretization,  # noqa: SLF001
        lower_loss + truncation_lower_bound,
        np.array(probs),
        inf_prob,
        pmf._pessimistic_estimate,  # noqa: SLF001
    )


def _self_compose(pld: Any, num_times: int, tail: float = 1e-15) -> Any:
    """``PrivacyLossDistribution.self_compose(num_times)``, the same PLD, faster."""
    # pylint: disable=protected-access
    remove = _self_compose_pmf(pld._pmf_remove, num_times, tail)  # noqa: SLF001
    if pld._symmetric:  # noqa: SLF001
        return _pld_mod.PrivacyLossDistribution(remove)
    add = _self_compose_pmf(pld._pmf_add, num_times, tail)  # noqa: SLF001
    return _pld_mod.PrivacyLossDistribution(remove, add)


def _prefix_to_truncate(arr: np.ndarray, threshold: float) -> int:
    """dp_accounting's ``_find_prefix_to_truncate``: its running sum as a ``cumsum``.

    The loop adds the elements one by one from ``0`` and stops at the first
    index where the sum exceeds ``threshold``; ``np.cumsum`` makes the same
    additions in the same order (a sequential accumulation), so the index is
    the same, without a Python step per element (issue 27: millions of steps
    through a wide PLD's tiny tail).
    """
    above = np.cumsum(arr) > threshold
    return int(np.argmax(above)) if above.any() else len(arr)


def _truncate_tails(
    probs: np.ndarray, tail_mass_truncation: float, pessimistic_estimate: bool
) -> tuple[int, np.ndarray, float]:
    """dp_accounting's ``pld_pmf._truncate_tails`` on :func:`_prefix_to_truncate`."""
    if tail_mass_truncation == 0:
        return 0, probs, 0
    left_idx = _prefix_to_truncate(probs, tail_mass_truncation / 2)
    right_idx = len(probs) - _prefix_to_truncate(
        np.flip(probs), tail_mass_truncation / 2
    )
    right_idx = max(right_idx, left_idx + 1)
    left_mass = np.sum(probs[:left_idx])
    right_mass = np.sum(probs[right_idx:])
    truncated_probs = probs[left_idx:right_idx]
    if pessimistic_estimate:
        truncated_probs[0] += left_mass
        return left_idx, truncated_probs, right_mass
    truncated_probs[-1] += right_mass
    return left_idx, truncated_probs, 0


def _compose_pmfs(pmf1: Any, pmf2: Any, tail_mass_truncation: float) -> Any:
    """dp_accounting's ``compose_pmfs``; dense PMFs on :func:`_truncate_tails`."""
    if (
        isinstance(pmf1, _pmf_mod.SparsePLDPmf)
        and isinstance(pmf2, _pmf_mod.SparsePLDPmf)
        and pmf1.size * pmf2.size <= _pmf_mod._MAX_PMF_SPARSE_SIZE  # noqa: SLF001
    ):
        return pmf1.compose(pmf2, tail_mass_truncation)
    one, two = pmf1.to_dense_pmf(), pmf2.to_dense_pmf()
    if type(one) is not _pmf_mod.DensePLDPmf or type(two) is not type(one):
        return one.compose(two, tail_mass_truncation)
    # DensePLDPmf.compose (dp_accounting 0.6), step by step
    # pylint: disable=protected-access
    one.validate_composable(two)
    lower_loss = one._lower_loss + two._lower_loss  # noqa: SLF001
    probs = _signal.fftconvolve(one._probs, two._probs)  # noqa: SLF001
    infinity_mass = (
        one._infinity_mass  # noqa: SLF001
        + two._infinity_mass  # noqa: SLF001
        - one._infinity_mass * two._infinity_mass  # noqa: SLF001
    )
    offset, probs, right_tail = _truncate_tails(
        probs,
        tail_mass_truncation,
        one._pessimistic_estimate,  # noqa: SLF001
    )
    return _pmf_mod.DensePLDPmf(
        one._discretization,  # noqa: SLF001
        lower_loss + offset,
        probs,
        infinity_mass + right_tail,
        one._pessimistic_estimate,  # noqa: SLF001
    )


def _compose(first: Any, second: Any, tail_mass_truncation: float = 1e-15) -> Any:
    """dp_accounting's ``PrivacyLossDistribution.compose``, on :func:`_compose_pmfs`."""
    # pylint: disable=protected-access
    remove = _compose_pmfs(
        first._pmf_remove,  # noqa: SLF001
        second._pmf_remove,  # noqa: SLF001
        tail_mass_truncation,
    )
    if first._symmetric and second._symmetric:  # noqa: SLF001
        return _pld_mod.PrivacyLossDistribution(remove)
    add = _compose_pmfs(
        first._pmf_add,  # noqa: SLF001
        second._pmf_add,  # noqa: SLF001
        tail_mass_truncation,
    )
    return _pld_mod.PrivacyLossDistribution(remove, add)


def _event_pld(event: Any, relation: Any, interval: float, count: int) -> Any | None:
    """The PLD the accountant composes for ``compose(event, count)`` (or ``None``)."""
    if isinstance(event, dp_accounting.GaussianDpEvent):
        if not event.noise_multiplier > 0:
            return None
        return _gaussian_pld(
            event.noise_multiplier / math.sqrt(count), interval, relation
        )
    if isinstance(event, dp_accounting.PoissonSampledDpEvent):
        inner = event.event
        if not (
            isinstance(inner, dp_accounting.GaussianDpEvent)
            and inner.noise_multiplier > 0
            and event.sampling_probability > 0
        ):
            return None
        return _self_compose(
            _gaussian_pld(
                inner.noise_multiplier, interval, relation, event.sampling_probability
            ),
            count,
        )
    if isinstance(event, dp_accounting.TruncatedSubsampledGaussianDpEvent):
        if not (
            event.noise_multiplier > 0
            and event.sampling_probability > 0
            and event.truncated_batch_size > 0
            and event.dataset_size > 0
        ):
            return None
        pld = _truncated_subsampled_gaussian_pld(event, interval, relation)
        return _self_compose(pld, count)
    return None


def accountant_pld(
    parts: Sequence[tuple[Any, int]], relation: Any, interval: float
) -> Any | None:
    """The PLD of dp_accounting's ``PLDAccountant`` after ``compose(e, k)`` per part.

    ``PLDAccountant(relation, interval)``, then ``compose(event, count)`` for each
    ``(event, count)`` of ``parts`` with ``count > 0``: the same PLD, bit for bit,
    where every event is a Gaussian, a Poisson-subsampled Gaussian or a truncated
    subsampled Gaussian with positive noise and sampling rate; ``None`` otherwise
    (and where dp_accounting lacks the private constructors used here): the caller
    then runs the accountant. The accountant's branches are followed step by step
    (``count`` Gaussians as one of noise ``z / sqrt(count)``, the others
    self-composed ``count`` times, each composed onto the running PLD, which starts
    as the identity).
    """
    if _CREATE_PMF is None or _FOR_SUBSAMPLED is None:
        return None
    if relation != _REPLACE_ONE and relation not in _SUBSAMPLED_RELATIONS:
        return None
    plds = []
    for event, count in parts:
        if count > 0:
            pld = _event_pld(event, relation, interval, int(count))
            if pld is None:
                return None
            plds.append(pld)
    total = _pld_mod.identity(value_discretization_interval=interval)
    for pld in plds:
        total = _compose(total, pld)
    return total


precision.scope_public(globals())
