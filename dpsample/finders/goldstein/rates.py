r"""The theorems' rates and the default smoothing radius of a Goldstein run.

:func:`rate` is the norm target ``beta`` a run reaches at smoothing radius ``alpha``
(seed 004's Theorems 3.1, corrected or as printed, and 4.1); :func:`default_alpha`
balances the certified radius ``2 alpha`` against it. Public inputs only.
"""

from __future__ import annotations

import math
from typing import Any

from dpsample._src import precision, validation
from dpsample.finders.goldstein.options import GOLDSTEIN_PRESETS, PASSES

__all__ = ["default_alpha", "rate"]


def _choice(name: str, value: Any, options: tuple[str, ...]) -> str:
    if value not in options:
        raise ValueError(f"Expected {name} in {options}, got {value!r}")
    return str(value)


def rate(
    *,
    n: int,
    dim: int,
    epsilon: float,
    lipschitz: float,
    initial_gap: float,
    alpha: float,
    passes: str = "single",
    preset: str = "corrected",
) -> float:
    r"""The theorem's norm target ``beta`` reached at smoothing radius ``alpha``.

    * single pass, ``"corrected"`` (Theorem 3.1 / C.4 corrected, spec 004 §4.1):
      :math:`(\Phi L^2\sqrt d/(n\alpha))^{1/3} + (\Phi L d/(n\alpha\varepsilon))^{1/2}`;
    * ``"practical"``: the corrected rate (its radius is the corrected one's);
    * single pass, ``"paper"`` (as printed):
      :math:`(\Phi L^2/(n\alpha))^{1/3} + (\Phi d L/(n\alpha\varepsilon))^{1/2} +
      (\Phi^2 L^3 d^{3/2}/(n^2\alpha^2\varepsilon))^{1/5}`;
    * multi pass (Theorem 4.1):
      :math:`(L d^{3/4}\sqrt\Phi/(n\varepsilon\sqrt\alpha))^{2/3}`.

    Constants and logarithms are dropped, as in the paper's rates.

    Examples:
        >>> from dpsample.finders.goldstein import rate
        >>> b1 = rate(n=1000, dim=2, epsilon=1.0, lipschitz=1.0, initial_gap=1.0,
        ...           alpha=0.1)
        >>> b2 = rate(n=8000, dim=2, epsilon=1.0, lipschitz=1.0, initial_gap=1.0,
        ...           alpha=0.1)
        >>> 0 < b2 < b1
        True
    """
    n_, d = float(n), float(dim)
    big_l, phi, a, eps = lipschitz, initial_gap, alpha, epsilon
    if passes == "multi":
        return float(
            (big_l * d**0.75 * math.sqrt(phi) / (n_ * eps * math.sqrt(a))) ** (2 / 3)
        )
    if preset in ("corrected", "practical"):
        return float(
            (phi * big_l**2 * math.sqrt(d) / (n_ * a)) ** (1 / 3)
            + (phi * big_l * d / (n_ * a * eps)) ** 0.5
        )
    return float(
        (phi * big_l**2 / (n_ * a)) ** (1 / 3)
        + (phi * d * big_l / (n_ * a * eps)) ** 0.5
        + (phi**2 * big_l**3 * d**1.5 / (n_**2 * a**2 * eps)) ** 0.2
    )


def default_alpha(
    *,
    n: int,
    dim: int,
    epsilon: float,
    lipschitz: float,
    initial_gap: float,
    passes: str = "single",
    preset: str = "corrected",
) -> float:
    r"""The default smoothing radius: balance the radius and the norm targets.

    A run at smoothing radius :math:`\alpha` certifies
    :math:`(2\alpha, \beta(\alpha))`-Goldstein stationarity with :math:`\beta` the
    theorem's rate (:func:`rate`), decreasing in :math:`\alpha`. Both targets are
    made relative to their trivial scales: the radius to :math:`\Phi/L` (the largest
    the theorems allow, :math:`\alpha \le \Phi/L`) and the norm to :math:`L` (every
    subgradient's bound). The default is the :math:`\alpha` that makes them equal,

    .. math::

        \frac{2\alpha L}{\Phi} = \frac{\beta(\alpha)}{L},

    (unique: the left side increases and the right side decreases), capped at
    :math:`\Phi/L`. Public inputs only; scale-invariant (domain times ``c``:
    :math:`\alpha` times ``c``). Pass ``alpha`` for a target radius ``r``: ``alpha =
    r / 2``.

    Examples:
        >>> from dpsample.finders.goldstein import default_alpha, rate
        >>> a = default_alpha(n=4000, dim=2, epsilon=10.0, lipschitz=2**0.5,
        ...                   initial_gap=4.0)
        >>> b = rate(n=4000, dim=2, epsilon=10.0, lipschitz=2**0.5, initial_gap=4.0,
        ...          alpha=a)
        >>> round(2 * a * 2**0.5 / 4.0 - b / 2**0.5, 9), round(a, 3)
        (0.0, 0.256)
    """
    n = validation.positive_int("n", n)
    d = validation.positive_int("dim", dim)
    eps = validation.positive("epsilon", epsilon)
    big_l = validation.positive("lipschitz", lipschitz)
    phi = validation.positive("initial_gap", initial_gap)
    passes = _choice("passes", passes, PASSES)
    preset = _choice("preset", preset, GOLDSTEIN_PRESETS)

    def excess(a: float) -> float:
        beta = rate(
            n=n,
            dim=d,
            epsilon=eps,
            lipschitz=big_l,
            initial_gap=phi,
            alpha=a,
            passes=passes,
            preset=preset,
        )
        return 2.0 * a * big_l / phi - beta / big_l

    hi = phi / big_l
    if excess(hi) <= 0.0:
        return hi
    lo = hi / 2.0
    while excess(lo) > 0.0:
        hi, lo = lo, lo / 2.0
    for _ in range(200):
        if hi / lo - 1.0 <= 1e-12:
            break
        mid = math.sqrt(lo * hi)
        if excess(mid) > 0.0:
            hi = mid
        else:
            lo = mid
    return hi


precision.scope_public(globals())
