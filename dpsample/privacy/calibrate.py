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
    lower: float = 1e-3,
    upper: float = 1e3,
    max_upper: float = 1e9,
    rtol: float = 1e-6,
) -> float:
    """Smallest noise ``s`` with ``make_guarantee(s).epsilon(delta) <= epsilon``.

    Bisection in ``log s`` on a bracket whose upper end satisfies the target (the
    bracket is widened geometrically up to ``max_upper``). The returned value is the
    upper end of the final bracket, and a final check confirms that its guarantee is
    at most the target (it never overshoots, cf. opacus#346). ``epsilon(delta)`` must
    be non-increasing in ``s``.

    Args:
        make_guarantee: maps a noise parameter (e.g. a noise multiplier) to the
            guarantee of the whole computation at that noise.
        epsilon: target epsilon (> 0).
        delta: target delta, in [0, 1).
        lower: initial lower end of the search bracket.
        upper: initial upper end of the search bracket.
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
    lo = validation.positive("lower", lower)
    hi = validation.positive("upper", upper)

    def eps_at(s: float) -> float:
        return make_guarantee(s).epsilon(dlt)

    while eps_at(hi) > target:
        lo = hi
        hi *= 10.0
        if hi > max_upper:
            raise CalibrationError(
                f"no noise parameter <= {max_upper:g} reaches epsilon={target:g} at "
                f"delta={dlt:g}"
            )
    while lo > 1e-12 and eps_at(lo) <= target:
        hi = lo
        lo /= 10.0
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
