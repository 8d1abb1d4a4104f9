"""Seed 003 Section 8's rate shapes for the JL method (Lemma 8.1, Corollary 8.2).

Public calculators, read by :class:`~dpsample.pipelines.jl.JLMethod`'s plan to choose
the projected dimension ``k`` (no data): Lemma 8.1's ``argmin_j [g(j) + L/sqrt(j)]``,
the net warm start's ``psi`` in dimension ``j`` (one choice of ``g``), and Corollary
8.2's rate shape for plots and comparisons.
"""

from __future__ import annotations

import math
from typing import Any

from dpsample._src import precision, validation

__all__ = ["corollary_8_2_rate", "lemma_8_1_dimension", "net_psi_shape"]


def corollary_8_2_rate(*, lipschitz: float, n: int, epsilon: float, rank: int) -> float:
    r"""Corollary 8.2's rate shape (constants and logarithms set to 1).

    .. math:: \frac{L}{\sqrt n} + \min\Big(\frac{\sqrt r}{\varepsilon n} r^{1/6},
        (\varepsilon n)^{-3/7}\Big)

    (the paper's introduction prints ``2/7``; the derivation gives ``3/7``, spec
    003 §4.3). For plots and comparisons, not a certified bound.

    Args:
        lipschitz: ``L``, the GLM's Lipschitz constant ``|phi'| X_max``.
        n: Number of examples.
        epsilon: The budget's epsilon.
        rank: ``r``: a public bound on the rank of the features (``d`` if none).

    Returns:
        The rate shape.

    Examples:
        >>> from dpsample.bounds.jl import corollary_8_2_rate
        >>> round(corollary_8_2_rate(lipschitz=1.0, n=10**4, epsilon=1.0, rank=8), 5)
        0.0104
    """
    big_l = validation.positive("lipschitz", lipschitz)
    n = validation.positive_int("n", n)
    en = validation.positive("epsilon", epsilon) * n
    r = validation.positive_int("rank", rank)
    return big_l / math.sqrt(n) + min(r ** (2.0 / 3.0) / en, en ** (-3.0 / 7.0))


def net_psi_shape(
    j: int,
    *,
    lipschitz: float,
    loss_range: float | None,
    diameter: float,
    n: int,
    epsilon: float,
) -> float:
    """The net warm start's psi in dimension ``j`` (Lemma 4.2's shape, constant 1).

    ``psi_j = min(B, G D j/(eps_A n) max(1, ln(eps_A n/sqrt j)))``, ``eps_A = eps/2``:
    the rate :class:`~dpsample.pipelines.jl.JLMethod` minimises over ``j`` with a net
    inner method.

    Examples:
        >>> from dpsample.bounds.jl import net_psi_shape
        >>> round(net_psi_shape(2, lipschitz=1.0, loss_range=None, diameter=2.0,
        ...                     n=1000, epsilon=2.0), 4)
        0.0262
    """
    eps_a = epsilon / 2.0
    psi = lipschitz * diameter * j / (eps_a * n)
    psi *= max(1.0, math.log(eps_a * n / math.sqrt(j)))
    return psi if loss_range is None else min(psi, loss_range)


def lemma_8_1_dimension(
    rate: Any, *, lipschitz: float, max_dim: int
) -> tuple[int, float]:
    r"""Lemma 8.1's ``k = argmin_{1 <= j <= max_dim} [g(j) + L/sqrt(j)]``.

    Args:
        rate: ``g``: a function of the dimension ``j`` (the inner method's
            stationarity rate shape there).
        lipschitz: ``L`` (the GLM's ``|phi'| X_max``).
        max_dim: The cap: ``min(d, declared rank bound)``.

    Returns:
        ``(k, g(k) + L/sqrt(k))`` (the smallest minimiser).

    Examples:
        >>> from dpsample.bounds.jl import lemma_8_1_dimension
        >>> lemma_8_1_dimension(lambda j: 0.01 * j, lipschitz=1.0, max_dim=100)
        (14, 0.40726...)
    """
    cap = validation.positive_int("max_dim", max_dim)
    big_l = validation.positive("lipschitz", lipschitz)
    best, best_value = 1, math.inf
    for j in range(1, cap + 1):
        value = float(rate(j)) + big_l / math.sqrt(j)
        if value < best_value:
            best, best_value = j, value
    return best, best_value


precision.scope_public(globals())
