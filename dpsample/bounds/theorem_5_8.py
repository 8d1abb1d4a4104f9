"""Theorem 5.8: the exponential mechanism over a net, its parameters and risk bounds.

Ganesh, Liu, Oh and Thakurta (spec 000-core section 4.2, errata E28), as plain
functions of public constants:

* :func:`theorem_5_8_radius`: the net radius ``r = D d / (eps n)``;
* :func:`net_size_bound`: ``|P| <= (1 + 2D/r)^d`` for a maximal ``r``-packing;
* :func:`exponential_mechanism_excess_risk`: ``(log|P| + 1) / k`` (or the sharper
  ``log|P| / k``), the expected excess of the exponential mechanism over the net
  minimum;
* :func:`theorem_5_8_empirical_risk_bound` and :func:`theorem_5_8_risk_bound`: the
  explicit-constant excess empirical and population risk bounds, term by term.

All logarithms are natural.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from dpsample._src import precision, validation

__all__ = [
    "Theorem58Bound",
    "theorem_5_8_radius",
    "theorem_5_8_inverse_temperature",
    "net_size_bound",
    "exponential_mechanism_excess_risk",
    "theorem_5_8_empirical_risk_bound",
    "theorem_5_8_risk_bound",
]


class Theorem58Bound(NamedTuple):
    """The terms of the explicit-constant Theorem 5.8 bound.

    Attributes:
        covering: ``G r``, the cost of restricting ``K`` to the net.
        exponential_mechanism: ``(log|P| + 1) / k``, the expected excess of the
            exponential mechanism over the net minimum.
        generalization: ``G R_c sqrt(2 log|P| / n)`` for the population bound, ``0.0``
            for the empirical bound.
        total: The sum of the three terms.
        radius: The covering radius ``r`` used.
        log_net_size: The ``log|P|`` used.
        inverse_temperature: The ``k`` used.
    """

    covering: float
    exponential_mechanism: float
    generalization: float
    total: float
    radius: float
    log_net_size: float
    inverse_temperature: float


def theorem_5_8_radius(*, diameter: float, dim: int, epsilon: float, n: int) -> float:
    """Net radius of Theorem 5.8, ``r = D d / (eps n)``.

    This radius approximately minimises ``G r + G D d log(D/r) / (eps n)``. It needs
    ``eps n > d``: otherwise ``r >= D`` and a single point is already an ``r``-net,
    so the bound is vacuous (spec 000-core section 4.2, E28).

    Args:
        diameter: Diameter ``D`` of the domain ``K``.
        dim: Dimension ``d``.
        epsilon: Privacy parameter ``eps > 0``.
        n: Number of examples.

    Returns:
        The radius ``r``.

    Raises:
        ValueError: If a parameter is invalid or ``eps n <= d``.

    Examples:
        >>> from dpsample.bounds import theorem_5_8_radius
        >>> theorem_5_8_radius(diameter=2.0, dim=2, epsilon=1.0, n=100)
        0.04
    """
    diameter = validation.positive("diameter", diameter)
    dim = validation.positive_int("dim", dim)
    epsilon = validation.positive("epsilon", epsilon)
    n = validation.positive_int("n", n)
    if not epsilon * n > dim:
        raise ValueError(
            f"Theorem 5.8 needs epsilon * n > dim, got epsilon * n = {epsilon * n!r} "
            f"<= dim = {dim}"
        )
    return diameter * dim / (epsilon * n)


def theorem_5_8_inverse_temperature(
    *, lipschitz: float, diameter: float, epsilon: float, n: int
) -> float:
    """Inverse temperature ``k = eps n / (2 G D)`` of the exponential mechanism.

    Under replace-one neighbours with each ``f(., z)`` ``G``-Lipschitz on ``K``,
    ``osc_K(F_D - F_D') <= 2 G D / n`` and the exponential mechanism with
    ``k = eps / (2 G D / n)`` is ``eps``-DP. The paper's ``eps n / (G D)`` needs the
    stronger assumption that ``f(., z) - f(., z')`` is ``G``-Lipschitz (errata E28).

    Args:
        lipschitz: ``G``.
        diameter: ``D``.
        epsilon: ``eps > 0``.
        n: Number of examples.

    Returns:
        ``k``.

    Examples:
        >>> from dpsample.bounds import theorem_5_8_inverse_temperature
        >>> theorem_5_8_inverse_temperature(
        ...     lipschitz=1.0, diameter=2.0, epsilon=1.0, n=100)
        25.0
    """
    lipschitz = validation.positive("lipschitz", lipschitz)
    diameter = validation.positive("diameter", diameter)
    epsilon = validation.positive("epsilon", epsilon)
    n = validation.positive_int("n", n)
    return epsilon * n / (2.0 * lipschitz * diameter)


def net_size_bound(*, diameter: float, dim: int, radius: float) -> float:
    """Size bound ``|P| <= (1 + 2D/r)^d`` of a maximal ``r``-packing of ``K``.

    A maximal ``r``-separated subset ``P`` of ``K`` is an ``r``-cover of ``K``. The
    balls of radius ``r/2`` around its points are disjoint and lie in
    ``B(x, D + r/2)`` for any ``x in K``, so
    ``|P| (r/2)^d <= (D + r/2)^d``, i.e. ``|P| <= (1 + 2D/r)^d``.

    Args:
        diameter: Diameter ``D`` of ``K``.
        dim: Dimension ``d``.
        radius: Covering radius ``r``.

    Returns:
        The bound as a float (``inf`` if it overflows).

    Examples:
        >>> from dpsample.bounds import net_size_bound
        >>> net_size_bound(diameter=2.0, dim=2, radius=1.0)
        25.0
    """
    diameter = validation.positive("diameter", diameter)
    dim = validation.positive_int("dim", dim)
    radius = validation.positive("radius", radius)
    try:
        return (1.0 + 2.0 * diameter / radius) ** dim
    except OverflowError:
        return math.inf


def exponential_mechanism_excess_risk(
    inverse_temperature: float, log_net_size: float, *, sharp: bool = False
) -> float:
    r"""Expected excess of the exponential mechanism over the minimum of a finite set.

    For ``p`` drawn with probability ``pi(p) ∝ exp(-k F(p))`` over a finite multiset
    ``P`` and ``OPT = min_P F``:

    .. math::

        \mathbb{E}_\pi[F] - \mathrm{OPT} \le \frac{\log|P| + 1}{k}
        \quad\text{(default)},\qquad
        \mathbb{E}_\pi[F] - \mathrm{OPT} \le \frac{H(\pi)}{k}
        \le \frac{\log|P|}{k} \quad\text{(sharp)}.

    *Tail form* (the one in spec 000-core section 4.2): the mass of
    ``{F >= OPT + t}`` is at most ``|P| e^{-k(OPT+t)} / e^{-k OPT} = |P| e^{-kt}``, so
    ``E[F - OPT] = int_0^inf Pr[F - OPT > t] dt
    <= log|P|/k + int_{log|P|/k}^inf |P| e^{-kt} dt = (log|P| + 1)/k``.

    *Variational form* (sharper by ``1/k``): the Gibbs identity
    ``-(1/k) log Z = E_pi[F] - H(pi)/k`` and ``Z >= e^{-k OPT}`` give
    ``E_pi[F] - OPT <= H(pi)/k <= log|P| / k``.

    The Theorem 5.8 helpers use the tail form, to match the spec's explicit-constant
    statement; pass ``sharp=True`` for the variational one. With
    ``k = eps n / (2 G D)`` the tail form is ``2 G D (log|P| + 1) / (eps n)``. If the
    binding oscillation bound is the range (``2B`` rather than ``2GD``), ``k`` is
    ``eps n / (2B)``: pass the ``inverse_temperature`` reported by the mechanism.

    Args:
        inverse_temperature: ``k > 0``.
        log_net_size: ``log|P| >= 0`` (counting multiplicity).
        sharp: Return ``log|P| / k`` instead of ``(log|P| + 1) / k``.

    Returns:
        The bound.

    Examples:
        >>> import math
        >>> from dpsample.bounds import exponential_mechanism_excess_risk
        >>> exponential_mechanism_excess_risk(2.0, math.log(100.0)) > math.log(100) / 2
        True
        >>> exponential_mechanism_excess_risk(1.0, 0.0, sharp=True)
        0.0
    """
    k = validation.positive("inverse_temperature", inverse_temperature)
    log_size = validation.nonnegative("log_net_size", log_net_size)
    return (log_size if sharp else log_size + 1.0) / k


def _resolve(
    *,
    lipschitz: float,
    diameter: float,
    dim: int,
    epsilon: float,
    n: int,
    radius: float | None,
    log_net_size: float | None,
    net_size: int | None,
    inverse_temperature: float | None,
) -> tuple[float, float, float, float]:
    g = validation.positive("lipschitz", lipschitz)
    diameter = validation.positive("diameter", diameter)
    dim = validation.positive_int("dim", dim)
    epsilon = validation.positive("epsilon", epsilon)
    n = validation.positive_int("n", n)
    if radius is None:
        radius = theorem_5_8_radius(diameter=diameter, dim=dim, epsilon=epsilon, n=n)
    else:
        radius = validation.positive("radius", radius)
    if log_net_size is not None and net_size is not None:
        raise ValueError("Pass at most one of log_net_size and net_size")
    if net_size is not None:
        log_size = math.log(validation.positive_int("net_size", net_size))
    elif log_net_size is not None:
        log_size = validation.nonnegative("log_net_size", log_net_size)
    else:
        log_size = dim * math.log1p(2.0 * diameter / radius)
    if inverse_temperature is None:
        k = theorem_5_8_inverse_temperature(
            lipschitz=g, diameter=diameter, epsilon=epsilon, n=n
        )
    else:
        k = validation.positive("inverse_temperature", inverse_temperature)
    return g, radius, log_size, k


def theorem_5_8_empirical_risk_bound(
    *,
    lipschitz: float,
    diameter: float,
    dim: int,
    epsilon: float,
    n: int,
    radius: float | None = None,
    log_net_size: float | None = None,
    net_size: int | None = None,
    inverse_temperature: float | None = None,
) -> Theorem58Bound:
    r"""Explicit-constant excess *empirical* risk of the exponential mechanism on a net.

    .. math::

        \mathbb{E}[F_D(x_{out})] - \min_K F_D
        \le G r + \frac{\log|P| + 1}{k}
        = G r + \frac{2 G D (\log|P| + 1)}{\varepsilon n}.

    ``F_D`` is ``G``-Lipschitz and every point of ``K`` is within ``r`` of the net, so
    ``min_P F_D <= min_K F_D + G r``; the second term is
    :func:`exponential_mechanism_excess_risk` (tail form).

    Args:
        lipschitz: ``G``.
        diameter: ``D``.
        dim: ``d``.
        epsilon: ``eps``.
        n: Number of examples.
        radius: Covering radius ``r`` of the net actually used; default
            :func:`theorem_5_8_radius`.
        log_net_size: ``log|P|`` of the net actually used; default
            ``d log(1 + 2D/r)`` (:func:`net_size_bound`).
        net_size: ``|P|`` of the net actually used (alternative to ``log_net_size``).
        inverse_temperature: ``k`` actually used; default ``eps n / (2 G D)``.

    Returns:
        A :class:`Theorem58Bound` with ``generalization = 0``.

    Raises:
        ValueError: On invalid inputs, or ``eps n <= d`` when ``radius`` is not given.

    Examples:
        >>> from dpsample.bounds import theorem_5_8_empirical_risk_bound
        >>> b = theorem_5_8_empirical_risk_bound(
        ...     lipschitz=1.0, diameter=2.0, dim=1, epsilon=1.0, n=100, net_size=101)
        >>> round(b.covering, 6), round(b.total, 4)
        (0.02, 0.2446)
    """
    g, r, log_size, k = _resolve(
        lipschitz=lipschitz,
        diameter=diameter,
        dim=dim,
        epsilon=epsilon,
        n=n,
        radius=radius,
        log_net_size=log_net_size,
        net_size=net_size,
        inverse_temperature=inverse_temperature,
    )
    covering = g * r
    em = exponential_mechanism_excess_risk(k, log_size)
    return Theorem58Bound(covering, em, 0.0, covering + em, r, log_size, k)


def theorem_5_8_risk_bound(
    *,
    lipschitz: float,
    diameter: float,
    dim: int,
    epsilon: float,
    n: int,
    radius: float | None = None,
    log_net_size: float | None = None,
    net_size: int | None = None,
    inverse_temperature: float | None = None,
    center_radius: float | None = None,
) -> Theorem58Bound:
    r"""Explicit-constant excess *population* risk of Theorem 5.8.

    .. math::

        \mathbb{E}[F_{\mathcal P}(x_{out})] - \min_K F_{\mathcal P}
        \le G r + \frac{2 G D (\log|P| + 1)}{\varepsilon n}
        + G R_c \sqrt{\frac{2 \log|P|}{n}}.

    Derivation (spec 000-core section 4.2, [D]): let ``p*`` be the net point nearest
    to ``argmin_K F_P`` (data-independent), so ``F_P(p*) <= min_K F_P + G r``. Then
    ``F_P(x_out) <= F_D(x_out) + max_P (F_P - F_D)``,
    ``E F_D(x_out) <= E min_P F_D + (log|P| + 1)/k <= F_P(p*) + (log|P| + 1)/k``
    (``E F_D(p*) = F_P(p*)``), and after centring each loss at a centre ``x_c`` of
    ``K`` (``f(p; z) - f(x_c; z)`` lies in ``[-G R_c, G R_c]``) the maximal
    inequality for ``|P|`` sub-Gaussian averages with variance proxy
    ``(G R_c)^2 / n`` bounds ``E max_P (F_P - F_D)`` by ``G R_c sqrt(2 log|P| / n)``.
    For a ball ``R_c = D / 2``.

    Args:
        lipschitz: ``G``.
        diameter: ``D``.
        dim: ``d``.
        epsilon: ``eps``.
        n: Number of examples.
        radius: Covering radius ``r`` of the net; default :func:`theorem_5_8_radius`.
        log_net_size: ``log|P|``; default ``d log(1 + 2D/r)``.
        net_size: ``|P|`` (alternative to ``log_net_size``).
        inverse_temperature: ``k`` actually used; default ``eps n / (2 G D)``.
        center_radius: ``R_c = max_{x in K} ||x - x_c||``; default ``D / 2`` (a ball).

    Returns:
        A :class:`Theorem58Bound`.

    Raises:
        ValueError: On invalid inputs, or ``eps n <= d`` when ``radius`` is not given.

    Examples:
        >>> from dpsample.bounds import theorem_5_8_risk_bound
        >>> b = theorem_5_8_risk_bound(
        ...     lipschitz=1.0, diameter=2.0, dim=2, epsilon=1.0, n=1000)
        >>> round(b.radius, 6)
        0.004
        >>> b.total == b.covering + b.exponential_mechanism + b.generalization
        True
    """
    g, r, log_size, k = _resolve(
        lipschitz=lipschitz,
        diameter=diameter,
        dim=dim,
        epsilon=epsilon,
        n=n,
        radius=radius,
        log_net_size=log_net_size,
        net_size=net_size,
        inverse_temperature=inverse_temperature,
    )
    if center_radius is None:
        r_c = validation.positive("diameter", diameter) / 2.0
    else:
        r_c = validation.positive("center_radius", center_radius)
    covering = g * r
    em = exponential_mechanism_excess_risk(k, log_size)
    gen = g * r_c * math.sqrt(2.0 * log_size / validation.positive_int("n", n))
    return Theorem58Bound(covering, em, gen, covering + em + gen, r, log_size, k)


precision.scope_public(globals())
