"""Theorem 3.2's stationarity bound and the warm start's default failure probability.

:func:`stationarity_abar` is the privacy term ``abar``,
:func:`default_failure_prob` the default ``zeta = sqrt(d) / (eps n)`` and
:func:`theorem_3_2_stationarity_bound` the bound itself (seed 003).
"""

from __future__ import annotations

import math

from dpsample._src import precision, validation

__all__ = [
    "stationarity_abar",
    "default_failure_prob",
    "theorem_3_2_stationarity_bound",
]


def stationarity_abar(dim: int, n: int, epsilon: float, delta: float) -> float:
    """``abar = sqrt(d ln(1/delta)) / (eps n)``, the privacy term of Theorem 3.2."""
    return math.sqrt(dim * math.log(1.0 / delta)) / (epsilon * n)


def default_failure_prob(dim: int, epsilon: float, n: int) -> float | None:
    """The warm start's default failure probability ``zeta = sqrt(d) / (eps n)``.

    Theorem 3.2's choice (seed 003), used by every warm-start sampler's ``psi``.

    Returns:
        ``zeta``, or ``None`` when it is ``>= 1`` (no useful default: ``eps n`` is
        too small).

    Examples:
        >>> from dpsample.bounds import default_failure_prob
        >>> default_failure_prob(4, 1.0, 100), default_failure_prob(4, 0.01, 100)
        (0.02, None)
    """
    zeta = math.sqrt(dim) / (epsilon * n)
    return zeta if zeta < 1.0 else None


def theorem_3_2_stationarity_bound(
    *,
    lipschitz: float,
    smoothness: float,
    initial_gap: float,
    dim: int,
    n: int,
    epsilon: float,
    delta: float,
    failure_prob: float = 0.0,
) -> float:
    r"""Theorem 3.2 / Lemma 3.1 rate shape for DP-SPIDER, absolute constant set to 1.

    .. math::

        (1 - \zeta)\Big(L \bar a + (L \beta \psi)^{1/3} \bar a^{2/3}\Big) + L \zeta,
        \qquad \bar a = \frac{\sqrt{d \ln(1/\delta)}}{\varepsilon n},

    with ``(epsilon, delta)`` the **finder's** budget (spec 003 B4) and ``psi`` its
    public initial gap. With ``failure_prob = 0`` it is Lemma 3.1's cold-start shape
    at ``F_0 = psi``. The theorem is stated with ``≲`` (an unspecified absolute
    constant): this is the rate's shape for plots and comparisons, not a certified
    bound.

    Args:
        lipschitz: ``L``.
        smoothness: ``beta``.
        initial_gap: ``psi`` (or the cold start's public ``F_0``).
        dim: ``d``.
        n: Number of examples.
        epsilon: The finder's epsilon.
        delta: The finder's delta.
        failure_prob: ``zeta``, the probability that ``psi`` fails.

    Returns:
        The rate shape (a float).

    Examples:
        >>> from dpsample.bounds import theorem_3_2_stationarity_bound
        >>> round(theorem_3_2_stationarity_bound(lipschitz=1.0, smoothness=1.0,
        ...     initial_gap=1.0, dim=1, n=1000, epsilon=1.0, delta=1e-5), 5)
        0.02597
    """
    big_l = validation.positive("lipschitz", lipschitz)
    beta = validation.positive("smoothness", smoothness)
    f0 = validation.nonnegative("initial_gap", initial_gap)
    abar = stationarity_abar(
        validation.positive_int("dim", dim),
        validation.positive_int("n", n),
        validation.positive("epsilon", epsilon),
        validation.delta_in_open_unit(delta),
    )
    zeta = validation.probability("failure_prob", failure_prob)
    good = big_l * abar + (big_l * beta * f0) ** (1.0 / 3.0) * abar ** (2.0 / 3.0)
    return (1.0 - zeta) * good + big_l * zeta


precision.scope_public(globals())
