"""Accounting of the gradient oracles: sensitivities, events, Poisson batch sizes.

Noise multipliers. Throughout :mod:`dpsample.finders` a ``noise_multiplier`` ``z`` is
the ecosystem's (Abadi et al.; Opacus, TF Privacy, dp-accounting): the std of the
noise added to a *sum* of per-example terms, divided by the bound ``C`` on one term
(so ``z C / b`` on a mean over ``b``). It does not depend on the neighbouring
relation; the functions here turn it into noise over sensitivity for the relation
(``z / 2`` for replace-one, whose sensitivity is ``2C``; ``z`` for add/remove).

Everything here is public-side: functions of public parameters only.
"""

from __future__ import annotations

import math
from typing import Any

import dp_accounting
from scipy import stats

from dpsample._src import precision, validation
from dpsample.privacy.calibration import (
    CALIBRATION_CACHE_SIZE,
    COARSE_PLD_INTERVAL,
    calibrate,
    coarse_epsilon,
)
from dpsample.privacy.guarantee import PrivacyGuarantee

__all__ = [
    "CALIBRATION_CACHE_SIZE",
    "COARSE_PLD_INTERVAL",
    "C_SENS",
    "MAX_NOISE_MULTIPLIER",
    "MIN_NOISE_MULTIPLIER",
    "POISSON_OVERFLOW_TOL",
    "SAMPLING_SCHEMES",
    "SEARCH_START",
    "calibrate_multiplier",
    "coarse_epsilon",
    "gaussian_sum_guarantee",
    "multiplier_estimate",
    "poisson_max_batch",
    "poisson_overflow_probability",
    "replace_one_event",
    "sum_sensitivity_factor",
    "without_replacement_event",
]

#: Batch-sampling schemes understood by :mod:`dpsample.finders.oracles`.
SAMPLING_SCHEMES = ("full_batch", "poisson", "without_replacement", "fresh")

#: Sensitivity multiplier under replace-one neighbours (spec 000 §1.4): replacing one
#: example moves a sum of per-example terms bounded by ``C`` by at most ``2 C``.
C_SENS = 2.0

#: Default bound on the probability that a Poisson batch overflows its fixed padded
#: size (the overflow is accounted exactly anyway; this only keeps it rare).
POISSON_OVERFLOW_TOL = 1e-12


def poisson_overflow_probability(n: int, rate: float, max_batch: int) -> float:
    """``P[Binomial(n, rate) > max_batch]``: a Poisson batch overflows its padding."""
    return float(stats.binom.sf(max_batch, n, rate))


def poisson_max_batch(n: int, rate: float, tol: float = POISSON_OVERFLOW_TOL) -> int:
    """Smallest ``m`` with ``P[Binomial(n, rate) > m] <= tol`` (at most ``n``).

    Args:
        n: Dataset size.
        rate: Poisson sampling rate ``q`` in ``(0, 1]``.
        tol: Overflow probability bound.

    Returns:
        The padded batch size.

    Examples:
        >>> from dpsample.finders.accounting import poisson_max_batch
        >>> poisson_max_batch(1000, 0.01)
        39
    """
    n = validation.positive_int("n", n)
    rate = validation.probability("rate", rate, open_left=True)
    m = int(stats.binom.isf(tol, n, rate))
    m = max(1, min(n, m))
    while m < n and poisson_overflow_probability(n, rate, m) > tol:
        m += 1
    return m


#: Smallest noise multiplier searched (below it PLD grids explode). A target so loose
#: that this noise already meets it gets this noise (valid, slightly over-noised).
MIN_NOISE_MULTIPLIER = 0.1
#: First and largest noise multipliers of the search. The search grid (powers of two
#: times ``SEARCH_START``) is the one used before noise multipliers took the
#: ecosystem's unit (then ``1.0``, ``0.05`` and ``1e7`` in noise over replace-one
#: sensitivity), expressed in the new unit, so a calibration returns bit for bit the
#: noise it returned then.
SEARCH_START = 2.0
MAX_NOISE_MULTIPLIER = 2e7


def sum_sensitivity_factor(relation: Any) -> float:
    """L2 sensitivity of a sum of per-example terms of norm ``<= C``, in units of ``C``.

    ``2`` for ``REPLACE_ONE`` (one term replaced: ``||a - a'|| <= 2C``), ``1`` for
    ``ADD_OR_REMOVE_ONE`` (one term added or removed).

    Examples:
        >>> import dp_accounting
        >>> from dpsample.finders.accounting import sum_sensitivity_factor
        >>> rel = dp_accounting.NeighboringRelation
        >>> sum_sensitivity_factor(rel.REPLACE_ONE), sum_sensitivity_factor(
        ...     rel.ADD_OR_REMOVE_ONE)
        (2.0, 1.0)
    """
    rel = dp_accounting.NeighboringRelation
    if relation == rel.REPLACE_ONE:
        return C_SENS
    if relation == rel.ADD_OR_REMOVE_ONE:
        return 1.0
    raise ValueError(f"Expected REPLACE_ONE or ADD_OR_REMOVE_ONE, got {relation!r}")


def gaussian_sum_guarantee(noise_multiplier: float, relation: Any = None) -> Any:
    """Guarantee of noise ``N(0, (z C)^2 I)`` on a sum of terms bounded by ``C``.

    ``z`` is the ecosystem's noise multiplier (std of the noise on the sum over ``C``);
    the relation decides the sensitivity (:func:`sum_sensitivity_factor`), so this is
    :meth:`PrivacyGuarantee.gaussian
    <dpsample.privacy.PrivacyGuarantee.gaussian>` at noise over sensitivity ``z / 2``
    under replace-one (the default) and ``z`` under add/remove. Its PLD equals
    dp_accounting's for ``GaussianDpEvent(z)`` under the same relation.

    Examples:
        >>> from dpsample.finders.accounting import gaussian_sum_guarantee
        >>> from dpsample.privacy import PrivacyGuarantee
        >>> gaussian_sum_guarantee(2.0).zcdp_rho() == PrivacyGuarantee.gaussian(
        ...     1.0).zcdp_rho()
        True
    """
    if relation is None:
        relation = dp_accounting.NeighboringRelation.REPLACE_ONE
    z = validation.positive("noise_multiplier", noise_multiplier)
    return PrivacyGuarantee.gaussian(
        z / sum_sensitivity_factor(relation), relation=relation
    )


def without_replacement_event(n: int, b: int, noise_multiplier: float) -> Any:
    """``SampledWithoutReplacementDpEvent`` of a size-``b`` batch, for ``REPLACE_ONE``.

    dp_accounting's RDP accountant (the only one that analyses this event) reads the
    inner Gaussian's noise multiplier relative to the *replace-one sensitivity* of the
    sum (Wang, Balle, Kasiviswanathan 2019, Thm 27), i.e. ``2C``, not relative to
    ``C``; so the event carries ``z / 2`` for the ecosystem's multiplier ``z``.
    """
    return dp_accounting.SampledWithoutReplacementDpEvent(
        n, b, dp_accounting.GaussianDpEvent(noise_multiplier / C_SENS)
    )


def replace_one_event(sampling: str, n: int, b: int, m: int, z: float, route: str):
    """dp_accounting event of one oracle release, for a ``REPLACE_ONE`` accountant.

    ``z`` is the oracle's noise multiplier (std of the noise on the sum over the
    per-example bound ``C``), read by each route as dp_accounting reads it: the PLD
    accountant doubles the sensitivity of ``GaussianDpEvent(z)`` and of the truncated
    Poisson event for ``REPLACE_ONE`` (so they carry ``z``), the RDP accountant
    analyses the full batch as a sample of all ``n`` without replacement
    (:func:`without_replacement_event`, ``z / 2``). Returns ``None`` where the route
    does not analyse the scheme.
    """
    if sampling in ("full_batch", "fresh"):
        if route == "pld":
            return dp_accounting.GaussianDpEvent(z)
        return without_replacement_event(n, n, z)
    if sampling == "without_replacement":
        if route == "rdp":
            return without_replacement_event(n, b, z)
        return None
    if route == "pld":
        return dp_accounting.TruncatedSubsampledGaussianDpEvent(
            dataset_size=n,
            sampling_probability=b / n,
            truncated_batch_size=m,
            noise_multiplier=z,
        )
    return None


def calibrate_multiplier(
    coarse_eps: Any,
    exact_guarantee: Any,
    *,
    epsilon: float,
    delta: float,
    rtol: float = 2e-3,
    guess: float | None = None,
) -> tuple[float, PrivacyGuarantee]:
    """Smallest noise multiplier (to ``rtol``) whose exact guarantee meets the target.

    :func:`dpsample.privacy.calibrate` on its coarse route with the finders' search
    grid (powers of two times :data:`SEARCH_START`, between
    :data:`MIN_NOISE_MULTIPLIER` and :data:`MAX_NOISE_MULTIPLIER`): bisection in
    ``log z`` on ``coarse_eps`` (fast upper bound), then ``z`` grows by ``0.5%``
    steps until ``exact_guarantee(z).epsilon(delta) <= epsilon``. Never returns an
    overshoot. ``guess`` (e.g. :func:`multiplier_estimate`) only saves work: the
    search reads the coarse bound near it, and returns what it returns without it.

    Returns:
        ``(z, exact_guarantee(z))``.
    """
    cal = calibrate(
        exact_guarantee,
        epsilon=epsilon,
        delta=delta,
        coarse_epsilon=coarse_eps,
        initial=SEARCH_START,
        min_lower=MIN_NOISE_MULTIPLIER,
        max_upper=MAX_NOISE_MULTIPLIER,
        rtol=rtol,
        guess=guess,
    )
    return cal.noise, cal.guarantee


def multiplier_estimate(
    epsilon: float, delta: float, steps: int, rate: float = 1.0
) -> float:
    r"""A closed-form estimate of the noise multiplier of ``steps`` Gaussian releases.

    The zCDP calibration of ``steps`` releases of a sum with noise multiplier
    ``z`` under replace-one (sensitivity ``2C``: ``rho = 2 / z^2`` each), each on a
    sample of rate ``q`` (amplification approximated by ``min(1, 4 q^2)``, the
    small-``q`` Renyi slope of the subsampled Gaussian): ``rho* = (sqrt(L +
    epsilon) - sqrt(L))^2`` with ``L = log(1/delta)`` (Bun and Steinke 2016,
    Prop. 1.3), ``z = sqrt(2 steps min(1, 4 q^2) / rho*)``.

    Only a starting point for :func:`calibrate_multiplier`'s search (``guess``):
    it decides which noise levels the search evaluates, never the result.

    Examples:
        >>> from dpsample.finders.accounting import multiplier_estimate
        >>> round(multiplier_estimate(1.0, 1e-6, 10_000), 1)
        1070.0
    """
    eps = validation.positive("epsilon", epsilon)
    dlt = validation.probability("delta", delta, open_left=True)
    log_inv = math.log(1.0 / dlt)
    rho = (math.sqrt(log_inv + eps) - math.sqrt(log_inv)) ** 2
    amplification = min(1.0, 4.0 * float(rate) ** 2)
    return math.sqrt(2.0 * max(1, int(steps)) * amplification / rho)


precision.scope_public(globals())
