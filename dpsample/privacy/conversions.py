"""Closed forms dp_accounting lacks, for :mod:`dpsample.privacy.guarantee`.

Binary randomised response's Renyi curve (which bounds the Renyi DP of every
epsilon-DP mechanism) and the zCDP conversions of seed 000 Lemma A.4. The names are
re-exported by :mod:`dpsample.privacy.guarantee` and :mod:`dpsample.privacy`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from dpsample._src import precision

__all__ = [
    "randomized_response_rdp",
    "epsilon_to_zcdp",
    "zcdp_to_epsilon",
    "zcdp_to_delta",
]


def randomized_response_rdp(
    epsilon: float, orders: Sequence[float] | np.ndarray
) -> np.ndarray:
    r"""Renyi divergence of binary randomised response with parameter epsilon.

    .. math::
        D_\alpha = \frac{1}{\alpha - 1}\log\big(p^\alpha q^{1-\alpha}
        + q^\alpha p^{1-\alpha}\big),\qquad p = \frac{e^\epsilon}{1 + e^\epsilon},
        \; q = 1 - p.

    Every epsilon-DP pair of distributions is a post-processing of this pair, so by the
    data-processing inequality this curve bounds the Renyi DP of *any* epsilon-DP
    mechanism. Computed in log space; the limit alpha -> 1 (KL) is handled.

    Args:
        epsilon: the pure-DP parameter (> 0, finite).
        orders: Renyi orders (> 1).

    Returns:
        The Renyi DP curve at ``orders`` (float64 array), each value <= epsilon.

    Examples:
        >>> from dpsample.privacy.guarantee import randomized_response_rdp
        >>> float(randomized_response_rdp(1.0, [2.0])[0]) < 1.0
        True
    """
    eps = float(epsilon)
    log_p = -math.log1p(math.exp(-eps))  # log(e^eps / (1 + e^eps))
    log_q = log_p - eps  # log(1 / (1 + e^eps)), no overflow at large eps
    out = []
    for a in orders:
        a = float(a)
        if abs(a - 1.0) < 1e-9:
            out.append((math.exp(log_p) - math.exp(log_q)) * eps)
            continue
        t1 = a * log_p + (1 - a) * log_q
        t2 = a * log_q + (1 - a) * log_p
        m = max(t1, t2)
        log_sum = m + math.log(math.exp(t1 - m) + math.exp(t2 - m))
        out.append(min(log_sum / (a - 1.0), eps))
    return np.asarray(out, dtype=np.float64)


def zcdp_to_epsilon(rho: float, delta: float) -> float:
    """Seed 000 Lemma A.4: rho-zCDP implies (rho + 2 sqrt(rho log(1/delta)), delta)-DP.

    Examples:
        >>> round(zcdp_to_epsilon(0.5, 1e-5), 4)
        5.2985
    """
    if delta <= 0:
        return math.inf if rho > 0 else 0.0
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


def epsilon_to_zcdp(epsilon: float, delta: float) -> float:
    r"""Inverse of :func:`zcdp_to_epsilon`: the largest rho it maps to ``epsilon``.

    .. math::

        \rho = \big(\sqrt{\varepsilon + \ln(1/\delta)} - \sqrt{\ln(1/\delta)}\big)^2,
        \qquad \rho + 2\sqrt{\rho \ln(1/\delta)} = \varepsilon

    (the exact solution, not the small-epsilon ``eps^2/(4 ln(1/delta))``).

    Examples:
        >>> rho = epsilon_to_zcdp(1.0, 1e-5)
        >>> round(zcdp_to_epsilon(rho, 1e-5), 12)
        1.0
    """
    ell = math.log(1.0 / delta)
    return (math.sqrt(epsilon + ell) - math.sqrt(ell)) ** 2


def zcdp_to_delta(rho: float, epsilon: float) -> float:
    """Inverse of :func:`zcdp_to_epsilon`: delta = exp(-(eps - rho)^2 / (4 rho)).

    Examples:
        >>> abs(zcdp_to_delta(0.5, zcdp_to_epsilon(0.5, 1e-5)) - 1e-5) < 1e-12
        True
    """
    if rho == 0:
        return 0.0
    if epsilon <= rho:
        return 1.0
    return min(1.0, math.exp(-((epsilon - rho) ** 2) / (4.0 * rho)))


precision.scope_public(globals())
