"""dp_accounting's RDP of a Gaussian sampled without replacement, without its O(a^3).

dp_accounting (0.6) bounds the Renyi DP of a Gaussian mechanism on a subsample
drawn without replacement (Wang, Balle and Kasiviswanathan 2019, Theorem 27) order
by order: for every integer order ``a <= 256`` it recomputes, in pure Python, the
first ``a`` forward differences of ``exp(cgf)`` in log space (``O(a^2)`` scalar
operations), so one RDP curve on dpsample's 159 orders makes about 2.3 million
``_log_sub_sign`` calls. That was DP-STR's whole plan (issue 27: 12 curves in its
calibration, 17-21 s).

:func:`wor_gaussian_rdp` returns **the same curve, bit for bit**: the forward
differences are computed once per noise level, for the largest order (the ``k``-th
difference at 0 depends on the first ``k + 1`` values only, by the same operations,
so a longer run has the shorter one as its prefix), each of the ``a - 1`` stages
as one numpy expression over the whole vector in dp_accounting's operation order
(``np.exp``/``np.log1p`` where it calls numpy's, libm's ``math.exp``/``math.log1p``
elementwise where it calls ``math``'s: numpy's own differ from libm's by an ulp on
some arguments); the per-order sums keep dp_accounting's sequential
log-space accumulation. :class:`RdpAccountant` is dp_accounting's accountant with
that one event routed here; every other event, every error and every unusual
argument (``q`` outside ``(0, 1)``, a non-positive or infinite noise, an infinite
order) go to dp_accounting's own code. ``tests/test_fast_rdp.py`` checks the
curves equal dp_accounting's exactly.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import dp_accounting
import numpy as np
from dp_accounting.rdp import rdp_privacy_accountant as _rdp_mod
from scipy import special

from dpsample._src import precision
from dpsample.privacy.fast_pld import _elementwise

__all__ = ["RdpAccountant", "wor_gaussian_rdp"]

_math_exp = _elementwise(math.exp)
_math_log1p = _elementwise(math.log1p)
#: dp_accounting's switch from the exact bound to its Stirling form.
_MAX_EXACT_ORDER = 256
#: dp_accounting's own function, for every argument not handled here.
_SLOW: Any = getattr(_rdp_mod, "_compute_rdp_sample_wor_gaussian", None)


@functools.lru_cache(maxsize=64)
def _forward_diffs(sigma: float, n: int) -> np.ndarray:
    """``_get_forward_diffs(cgf, n)[0]`` of dp_accounting, stage by stage.

    ``cgf(x) = x (x + 1) / (2 sigma^2)``; each stage replaces ``vec[j]`` by the
    log-space difference of ``vec[j + 1]`` and ``vec[j]`` (dp_accounting's
    in-place loop reads ``vec[j + 1]`` before it is rewritten, so a stage is one
    elementwise expression), and ``deltas[i]`` is ``vec[0]`` after stage ``i``.
    """
    denom = 2.0 * sigma**2
    x = np.arange(n + 2, dtype=np.float64)
    vec = np.zeros(n + 3)
    vec[1:] = x * 1.0 * (x + 1) / denom
    signs = np.ones(n + 3, dtype=bool)
    deltas = np.zeros(n + 2)
    with np.errstate(all="ignore"):
        for i in range(n + 2):
            m = n + 2 - i
            a, b = vec[:m], vec[1 : m + 1]
            sa, sb = signs[:m], signs[1 : m + 1]
            same = sa == sb
            # signs agree: _log_sub_sign(logx=b, logy=a), the sign toggled if b < 0
            # (for exp(cgf) every element takes the first branch: the others are
            # computed only where they occur)
            gt, lt = same & (b > a), same & (b < a)
            new = b + _math_log1p(np.where(gt, -np.exp(a - b), 0.0))
            if lt.any():
                new = np.where(lt, a + np.log1p(-np.exp(b - a)), new)
            new = np.where(same & ~gt & ~lt, -np.inf, new)
            if not same.all():  # signs differ: _log_add(a, b), the sign of b
                lo, hi = np.minimum(a, b), np.maximum(a, b)
                add = ~same & (lo != -np.inf)
                r_add = _math_log1p(_math_exp(np.where(add, lo - hi, 0.0))) + hi
                new = np.where(add, r_add, np.where(same, new, hi))
            vec[:m] = new
            signs[:m] = np.where(same, ~lt == sb, sb)
            deltas[i] = vec[0]
    deltas.setflags(write=False)
    return deltas


def _wor_int(q: float, sigma: float, alpha: int) -> float:
    """dp_accounting's ``_compute_rdp_sample_wor_gaussian_int(q, sigma, alpha)``."""
    if alpha == 1:
        return 0
    denom = 2.0 * sigma**2

    def func(x: float) -> float:
        return 1.0 * x / (2.0 * sigma**2)

    log_f2m1 = func(2.0) + math.log1p(-np.exp(-func(2.0)))
    i = np.arange(3, alpha + 1)
    log_q = np.log(q)
    log_comb = special.gammaln(alpha + 1) - special.gammaln(i + 1)
    log_comb = log_comb - special.gammaln(alpha - i + 1)
    cgf = (i - 1) * 1.0 * ((i - 1) + 1) / denom  # cgf(i - 1)
    first = (
        2 * np.log(q)
        + (
            special.gammaln(alpha + 1)
            - special.gammaln(2 + 1)
            - special.gammaln(alpha - 2 + 1)
        )
        + np.minimum(np.log(4) + log_f2m1, func(2.0) + np.log(2))
    )
    if alpha <= _MAX_EXACT_ORDER:
        deltas = _forward_diffs(sigma, _MAX_EXACT_ORDER)
        lo = deltas[2 * (i // 2) - 1]
        hi = deltas[2 * ((i + 1) // 2) - 1]
        s = np.log(4) + 0.5 * (lo + hi)
        s = np.minimum(s, np.log(2) + cgf)
        s = s + (i * log_q + log_comb)
    else:
        s = np.log(2) + cgf + i * log_q + log_comb
    log_a: Any = 0
    log1p, exp, ninf = math.log1p, math.exp, -np.inf
    for term in (float(first), *s.tolist()):  # _log_add(log_a, term), inlined
        lo, hi = (log_a, term) if log_a <= term else (term, log_a)
        log_a = hi if lo == ninf else log1p(exp(lo - hi)) + hi
    return float(log_a) if alpha <= _MAX_EXACT_ORDER else log_a


def _wor_scalar(q: float, sigma: float, alpha: float, ints: dict[int, float]) -> float:
    """``_compute_rdp_sample_wor_gaussian_scalar`` for ``0 < q < 1``, finite order."""

    def at(a: int) -> float:
        if a not in ints:
            ints[a] = _wor_int(q, sigma, a)
        return ints[a]

    if float(alpha).is_integer():
        return at(int(alpha)) / (alpha - 1)
    alpha_f, alpha_c = math.floor(alpha), math.ceil(alpha)
    x, y = at(alpha_f), at(alpha_c)
    t = alpha - alpha_f
    return ((1 - t) * x + t * y) / (alpha - 1)


@functools.lru_cache(maxsize=256)
def _wor_curve(q: float, sigma: float, orders: tuple[float, ...]) -> np.ndarray:
    ints: dict[int, float] = {}
    out = np.array([_wor_scalar(q, sigma, a, ints) for a in np.array(orders)])
    out.setflags(write=False)
    return out


def wor_gaussian_rdp(q: float, sigma: float, orders: Sequence[float]) -> np.ndarray:
    """dp_accounting's RDP curve of a Gaussian on a subsample without replacement.

    ``_compute_rdp_sample_wor_gaussian(q, sigma, orders)`` of dp_accounting, bit for
    bit, in milliseconds instead of seconds; memoised on the public arguments (a
    shared read-only array). Arguments outside ``0 < q < 1``, a noise that is not
    positive and finite, or an order that is not finite and ``>= 1`` go to
    dp_accounting's own function.

    Args:
        q: Sampling proportion ``m / n``.
        sigma: Noise multiplier of the Gaussian.
        orders: RDP orders.

    Returns:
        The RDP at every order.

    Examples:
        >>> from dp_accounting.rdp import rdp_privacy_accountant as slow
        >>> from dpsample.privacy.fast_rdp import wor_gaussian_rdp
        >>> orders = [1.5, 2.0, 3.0, 10.0, 64.0]
        >>> fast = wor_gaussian_rdp(0.01, 1.3, orders)
        >>> exact = slow._compute_rdp_sample_wor_gaussian(0.01, 1.3, orders)
        >>> bool((fast == exact).all())
        True
    """
    key = tuple(float(a) for a in orders)
    usual = 0 < q < 1 and 0 < sigma < math.inf and all(1 <= a < math.inf for a in key)
    if not usual:
        return np.asarray(_SLOW(q, sigma, orders))
    try:
        curve = _wor_curve(q, sigma, key)
    except (ValueError, ArithmeticError):  # dp_accounting raises or returns it
        curve = None
    if curve is None or np.isnan(curve).any():  # extremes: dp_accounting's path
        return np.asarray(_SLOW(q, sigma, orders))
    return curve


class RdpAccountant(dp_accounting.rdp.RdpAccountant):
    """dp_accounting's ``RdpAccountant``, sampled-without-replacement Gaussians fast.

    The same accountant (orders, relation, every event, every error): only the
    composition of a ``SampledWithoutReplacementDpEvent`` of a Gaussian under
    ``REPLACE_ONE`` computes its curve by :func:`wor_gaussian_rdp` (the same
    values) and adds ``count`` times it, as dp_accounting does.

    Examples:
        >>> import dp_accounting
        >>> from dpsample.privacy.fast_rdp import RdpAccountant
        >>> rel = dp_accounting.NeighboringRelation.REPLACE_ONE
        >>> ev = dp_accounting.SampledWithoutReplacementDpEvent(
        ...     1000, 10, dp_accounting.GaussianDpEvent(1.0))
        >>> fast = RdpAccountant(neighboring_relation=rel).compose(ev, 100)
        >>> slow = dp_accounting.rdp.RdpAccountant(neighboring_relation=rel)
        >>> bool(fast.get_epsilon(1e-5) == slow.compose(ev, 100).get_epsilon(1e-5))
        True
    """

    def _maybe_compose(self, event: Any, count: int, do_compose: bool) -> Any:
        if (
            do_compose
            and _SLOW is not None
            and isinstance(event, dp_accounting.SampledWithoutReplacementDpEvent)
            and self._neighboring_relation
            is dp_accounting.NeighboringRelation.REPLACE_ONE
        ):
            sigma = _rdp_mod._effective_gaussian_noise_multiplier(event.event)  # noqa: SLF001
            if not isinstance(sigma, dp_accounting.DpEvent):
                self._rdp += count * wor_gaussian_rdp(
                    event.sample_size / event.source_dataset_size,
                    sigma,
                    self._orders,
                )
                return None
        return super()._maybe_compose(event, count, do_compose)


precision.scope_public(globals())
