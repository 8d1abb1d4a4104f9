"""Noise calibration: the smallest noise whose guarantee meets a target epsilon."""

from __future__ import annotations

import math
from collections.abc import Callable

from dpsample._src import validation
from dpsample.privacy.guarantee import PrivacyGuarantee

__all__ = ["calibrate_noise", "CalibrationError"]


class CalibrationError(ValueError):
    """No noise level in the searched range meets the target."""


def calibrate_noise(
    make_guarantee: Callable[[float], PrivacyGuarantee],
    *,
    epsilon: float,
    delta: float,
    initial: float = 1.0,
    min_lower: float = 1e-6,
    max_upper: float = 1e9,
    rtol: float = 1e-6,
) -> float:
    """Smallest noise ``s`` with ``make_guarantee(s).epsilon(delta) <= epsilon``.

    The bracket is found geometrically from ``initial`` (halving or doubling), so
    accountants are only queried near the answer, never at extreme noise levels where
    a PLD grid would be huge; then bisection in ``log s`` narrows it to relative width
    ``rtol``. The returned value is the upper end of the final bracket, and a final
    check confirms that its guarantee is at most the target (it never overshoots,
    cf. opacus#346). ``epsilon(delta)`` must be non-increasing in ``s``.

    Args:
        make_guarantee: maps a noise parameter (e.g. a noise multiplier) to the
            guarantee of the whole computation at that noise.
        epsilon: target epsilon (> 0).
        delta: target delta, in [0, 1).
        initial: first noise parameter tried.
        min_lower: if even this little noise meets the target, it is returned.
        max_upper: the largest noise parameter tried.
        rtol: relative width of the final bracket.

    Returns:
        The calibrated noise parameter.

    Raises:
        CalibrationError: if even ``max_upper`` does not meet the target.

    Examples:
        >>> from dpsample.privacy import PrivacyGuarantee, calibrate_noise
        >>> s = calibrate_noise(lambda s: PrivacyGuarantee.gaussian(s).repeat(10),
        ...                     epsilon=1.0, delta=1e-5)
        >>> PrivacyGuarantee.gaussian(s).repeat(10).epsilon(1e-5) <= 1.0
        True
    """
    target = validation.positive("epsilon", epsilon)
    dlt = validation.probability("delta", delta)
    if dlt >= 1.0:
        raise ValueError(f"Expected delta={dlt!r} < 1")
    s0 = validation.positive("initial", initial)
    floor = validation.positive("min_lower", min_lower)
    ceiling = validation.positive("max_upper", max_upper)

    def eps_at(s: float) -> float:
        return make_guarantee(s).epsilon(dlt)

    if eps_at(s0) <= target:
        hi, lo = s0, s0 / 2.0
        while eps_at(lo) <= target:
            hi, lo = lo, lo / 2.0
            if lo < floor:
                return hi
    else:
        lo, hi = s0, s0 * 2.0
        while eps_at(hi) > target:
            lo, hi = hi, hi * 2.0
            if hi > ceiling:
                raise CalibrationError(
                    f"no noise parameter <= {ceiling:g} reaches epsilon={target:g} "
                    f"at delta={dlt:g}"
                )
    for _ in range(200):
        if hi / lo - 1.0 <= rtol:
            break
        mid = math.sqrt(lo * hi)
        if eps_at(mid) <= target:
            hi = mid
        else:
            lo = mid
    if eps_at(hi) > target:  # final check, never return an overshoot
        raise CalibrationError("calibration failed its final check")  # pragma: no cover
    return hi
