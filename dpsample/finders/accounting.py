"""Accounting of the gradient oracles: sensitivities, events, Poisson batch sizes.

Noise multipliers. Throughout :mod:`dpsample.finders` a ``noise_multiplier`` ``z`` is
the ecosystem's (Abadi et al.; Opacus, TF Privacy, dp-accounting): the std of the
noise added to a *sum* of per-example terms, divided by the bound ``C`` on one term
(so ``z C / b`` on a mean over ``b``). It does not depend on the neighbouring
relation; the functions here turn it into noise over sensitivity for the relation
(``z / 2`` for replace-one, whose sensitivity is ``2C``; ``z`` for add/remove) by
the conventions of :mod:`dpsample.privacy.relations`, the one place that holds them
(``C_SENS`` and ``sum_sensitivity_factor`` are re-exported from there).

Everything here is public-side: functions of public parameters only.
"""

from __future__ import annotations

import math
from typing import Any

import dp_accounting
from scipy import stats

from dpsample._src import precision, validation
from dpsample.privacy import relations
from dpsample.privacy.calibration import (
    CALIBRATION_CACHE_SIZE,
    COARSE_PLD_INTERVAL,
    calibrate,
    coarse_epsilon,
)
from dpsample.privacy.guarantee import PrivacyGuarantee
from dpsample.privacy.relations import C_SENS, sum_sensitivity_factor

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
    "dp_sgd_guarantee",
    "gaussian_event",
    "gaussian_sum_guarantee",
    "multiplier_estimate",
    "poisson_max_batch",
    "poisson_overflow_probability",
    "replace_one_event",
    "sum_sensitivity_factor",
    "truncated_poisson_event",
    "without_replacement_event",
]

#: Batch-sampling schemes understood by :mod:`dpsample.finders.oracles`.
SAMPLING_SCHEMES = ("full_batch", "poisson", "without_replacement", "fresh")

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
        relation = relations.REPLACE_ONE
    z = validation.positive("noise_multiplier", noise_multiplier)
    return PrivacyGuarantee.gaussian(
        relations.noise_to_sensitivity(z, relation), relation=relation
    )


def without_replacement_event(n: int, b: int, noise_multiplier: float) -> Any:
    """``SampledWithoutReplacementDpEvent`` of a size-``b`` batch, for ``REPLACE_ONE``.

    dp_accounting's RDP accountant (the only one that analyses this event) reads the
    inner Gaussian's noise multiplier relative to the *replace-one sensitivity* of the
    sum (Wang, Balle, Kasiviswanathan 2019, Thm 27), i.e. ``2C``, not relative to
    ``C``; so the event carries ``z / 2`` for the ecosystem's multiplier ``z``
    (:func:`~dpsample.privacy.relations.event_noise_multiplier`).
    """
    event = dp_accounting.SampledWithoutReplacementDpEvent
    inner = relations.event_noise_multiplier(event, noise_multiplier)
    return event(n, b, dp_accounting.GaussianDpEvent(inner))


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
            return gaussian_event(z)
        return without_replacement_event(n, n, z)
    if sampling == "without_replacement":
        if route == "rdp":
            return without_replacement_event(n, b, z)
        return None
    if route == "pld":
        return truncated_poisson_event(n, b / n, m, z)
    return None


def gaussian_event(noise_multiplier: float) -> Any:
    """``GaussianDpEvent`` of noise multiplier ``z`` on a sum (dp_accounting's unit).

    Its PLD under REPLACE_ONE is the noise on a sum of sensitivity ``2C``
    (dp_accounting's PLD accountant applies the relation itself).
    """
    event = dp_accounting.GaussianDpEvent
    return event(relations.event_noise_multiplier(event, noise_multiplier))


def truncated_poisson_event(n: int, rate: float, m: int, noise_multiplier: float):
    """``TruncatedSubsampledGaussianDpEvent`` of a Poisson batch padded to ``m`` rows.

    Analysed by dp_accounting's PLD accountant for the relation itself.
    """
    event = dp_accounting.TruncatedSubsampledGaussianDpEvent
    return event(
        dataset_size=n,
        sampling_probability=rate,
        truncated_batch_size=m,
        noise_multiplier=relations.event_noise_multiplier(event, noise_multiplier),
    )


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
    # rho = factor^2 / (2 z^2) a step: z = sqrt(factor^2 / 2 steps amp / rho)
    half_square = C_SENS**2 / 2.0  # 2.0 for REPLACE_ONE, exactly
    return math.sqrt(half_square * max(1, int(steps)) * amplification / rho)


def dp_sgd_guarantee(
    noise_multiplier: float,
    sampling_rate: float,
    steps: int,
    *,
    sampling: str = "poisson",
    dataset_size: int | None = None,
    max_batch_size: int | None = None,
    relation: Any = relations.REPLACE_ONE,
) -> PrivacyGuarantee:
    """Guarantee of ``steps`` DP-SGD steps with noise multiplier ``z``.

    ``noise_multiplier`` = noise std of the sum of clipped gradients over the clip norm
    (the ecosystem's convention and dpsample's everywhere: the same value as
    :func:`dp_sgd_transform` and the oracles of :func:`dp_sgd` take). The relation
    decides the sensitivity (``2C`` for replace-one). Schemes:

    * ``"poisson"``: ``PoissonSampledDpEvent(q, GaussianDpEvent(z))``; with
      ``dataset_size`` and ``max_batch_size`` the truncated event
      ``TruncatedSubsampledGaussianDpEvent`` (a padded buffer); analysed by
      dp_accounting for ``relation`` (replace-one: PLD; add/remove: RDP and PLD).
    * ``"without_replacement"``: fixed batches ``b = q n`` (needs ``dataset_size``),
      ``SampledWithoutReplacementDpEvent(n, b, GaussianDpEvent(z / 2))`` for
      replace-one (dp_accounting's RDP reads the inner multiplier relative to the
      replace-one sensitivity ``2C``,
      :func:`~dpsample.finders.accounting.without_replacement_event`).
    * ``"full_batch"``: the Gaussian mechanism
      (:func:`~dpsample.finders.accounting.gaussian_sum_guarantee`: noise over
      sensitivity ``z / 2`` under replace-one; equal to dp_accounting's PLD of
      ``GaussianDpEvent(z)`` for ``REPLACE_ONE``).

    Args:
        noise_multiplier: ``z > 0``.
        sampling_rate: ``q`` in ``(0, 1]``.
        steps: ``T >= 1``.
        sampling: The scheme that ran.
        dataset_size: ``n`` (needed for truncated Poisson and without replacement).
        max_batch_size: Padded Poisson size.
        relation: Neighbouring relation (default replace-one, as in the seeds).

    Lives beside the oracles' events (re-exported by :mod:`dpsample.finders.dp_sgd`,
    its home before the split, and :mod:`dpsample.finders`).

    Returns:
        The composed :class:`~dpsample.privacy.PrivacyGuarantee`.

    Examples:
        >>> from dpsample.finders import dp_sgd_guarantee
        >>> g = dp_sgd_guarantee(1.1, 256 / 60000, 1000)
        >>> 0.5 < g.epsilon(1e-5) < 3.0
        True
    """
    z = validation.positive("noise_multiplier", noise_multiplier)
    q = validation.probability("sampling_rate", sampling_rate, open_left=True)
    t = validation.positive_int("steps", steps)
    if sampling == "poisson":
        if max_batch_size is not None:
            if dataset_size is None:
                raise ValueError("a truncated Poisson batch needs dataset_size")
            ev = truncated_poisson_event(
                validation.positive_int("dataset_size", dataset_size),
                q,
                validation.positive_int("max_batch_size", max_batch_size),
                z,
            )
        else:
            ev = dp_accounting.PoissonSampledDpEvent(q, gaussian_event(z))
        return PrivacyGuarantee.from_event(ev, relation=relation).repeat(t)
    if relation != relations.REPLACE_ONE:
        raise ValueError(f"sampling={sampling!r} is accounted for REPLACE_ONE only")
    if sampling == "without_replacement":
        if dataset_size is None:
            raise ValueError("sampling without replacement needs dataset_size")
        n = validation.positive_int("dataset_size", dataset_size)
        b = max(1, round(q * n))
        ev = without_replacement_event(n, b, z)
        return PrivacyGuarantee.from_event(ev, relation=relation).repeat(t)
    if sampling == "full_batch":
        return gaussian_sum_guarantee(z, relation).repeat(t)
    raise ValueError(
        "Expected sampling in ('poisson', 'without_replacement', 'full_batch'), got "
        f"{sampling!r}"
    )


precision.scope_public(globals())
