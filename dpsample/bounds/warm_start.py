"""Warm-start bounds: public high-probability bounds ``psi`` on the excess risk.

The net's (:func:`net_warm_start_bound`), the Gibbs sampler's
(:func:`gibbs_warm_start_bound`), the uniform deviation that carries an empirical
bound to the population (:func:`uniform_deviation_bound`) and the quasar-convex
SGD warm start's (:func:`quasar_sgd_expected_gap`,
:func:`quasar_sgd_warm_start_bound`). All logarithms are natural.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from dpsample._src import precision, validation

__all__ = [
    "WarmStartBound",
    "net_warm_start_bound",
    "GibbsWarmStartBound",
    "gibbs_warm_start_bound",
    "UniformDeviationBound",
    "uniform_deviation_bound",
    "QuasarWarmStartBound",
    "quasar_sgd_expected_gap",
    "quasar_sgd_warm_start_bound",
]


class WarmStartBound(NamedTuple):
    """Public high-probability bound ``psi`` on the warm start's excess risk.

    ``Pr[F_D(x_0) - min_K F_D > psi - minimizer_gap] <= failure_prob`` over the
    mechanism's randomness, for every dataset (see :func:`net_warm_start_bound`).

    Attributes:
        psi: The bound ``covering + tail + minimizer_gap``.
        failure_prob: ``zeta``.
        covering: ``G r``: the net minimum exceeds ``min_K F_D`` by at most this.
        tail: ``(ln N + ln(1/zeta)) / k``: the exponential mechanism's excess over the
            net minimum, with probability ``>= 1 - zeta``.
        minimizer_gap: The declared ``g_W >= min_K F_D - inf F_D`` (``0``: ``K``
            contains a global minimiser, or the gap is measured against ``min_K``).
    """

    psi: float
    failure_prob: float
    covering: float
    tail: float
    minimizer_gap: float


def net_warm_start_bound(
    *,
    lipschitz: float,
    covering_radius: float,
    log_net_size: float,
    inverse_temperature: float,
    failure_prob: float,
    minimizer_gap: float = 0.0,
) -> WarmStartBound:
    r"""High-probability excess-risk bound ``psi`` of the net exponential mechanism.

    For ``x_0`` drawn with probability ``∝ exp(-k F_D(p))`` over a net (multiset)
    ``P`` of ``N`` points of ``K`` with covering radius ``r``, and ``F_D``
    ``G``-Lipschitz on ``K``:

    .. math::

        \Pr\Big[F_D(x_0) - \min_K F_D > G r + \frac{\ln N + \ln(1/\zeta)}{k}\Big]
        \le \zeta .

    Derivation (the tail form of Lemma 4.2 / Dwork-Roth Thm 3.11 with the spec's B5
    correction ``(ln N + t)/k``): with ``OPT = min_P F_D``, the points with
    ``F_D >= OPT + s`` carry unnormalised mass at most ``N e^{-k(OPT + s)}`` while the
    normaliser is at least ``e^{-k OPT}``, so ``Pr[F_D(x_0) >= OPT + s] <= N e^{-ks}``;
    ``s = (ln N + ln(1/zeta))/k`` makes it ``zeta``. Every point of ``K`` is within
    ``r`` of ``P`` and ``F_D`` is ``G``-Lipschitz, so ``OPT <= min_K F_D + G r``.
    ``minimizer_gap`` adds the declared ``g_W`` of spec 003 section 2.2 when the
    finder's gap is measured against ``inf_{R^d} F_D``.

    All inputs are public (declared constants, the public net, ``eps_A``, ``n``):
    ``psi`` never depends on the data. The seed's closed form
    ``20 G D (d/(eps n)) ln(eps n/sqrt(d))`` at ``zeta = 2 sqrt(d)/(eps n)`` is a
    looser instance of this bound for its own net (valid when ``eps n/sqrt(d) >= e``).

    Args:
        lipschitz: ``G``, the declared Lipschitz constant of each ``f(., z)`` on ``K``.
        covering_radius: ``r``, the net's public covering radius.
        log_net_size: ``ln N`` (counting multiplicity).
        inverse_temperature: ``k`` of the mechanism that runs.
        failure_prob: ``zeta`` in ``(0, 1)``.
        minimizer_gap: Declared ``g_W >= 0``.

    Returns:
        A :class:`WarmStartBound`.

    Raises:
        ValueError: On invalid inputs.

    Examples:
        >>> import math
        >>> from dpsample.bounds import net_warm_start_bound
        >>> b = net_warm_start_bound(lipschitz=1.0, covering_radius=0.01,
        ...     log_net_size=math.log(100.0), inverse_temperature=50.0,
        ...     failure_prob=0.01)
        >>> round(b.psi, 4), round(b.tail, 4)
        (0.1942, 0.1842)
    """
    g = validation.positive("lipschitz", lipschitz)
    r = validation.nonnegative("covering_radius", covering_radius)
    log_n = validation.nonnegative("log_net_size", log_net_size)
    k = validation.positive("inverse_temperature", inverse_temperature)
    zeta = validation.probability("failure_prob", failure_prob, open_left=True)
    if zeta >= 1.0:
        raise ValueError(f"Expected failure_prob={zeta!r} < 1")
    gap = validation.nonnegative("minimizer_gap", minimizer_gap)
    covering = g * r
    tail = (log_n + math.log(1.0 / zeta)) / k
    return WarmStartBound(covering + tail + gap, zeta, covering, tail, gap)


class GibbsWarmStartBound(NamedTuple):
    """Public high-probability bound ``psi`` for a regularised Gibbs warm start.

    ``Pr[F_D(x_0) - min_K F_D > psi - minimizer_gap] <= failure_prob`` for every
    dataset, where ``x_0`` is the sampler's output (see
    :func:`gibbs_warm_start_bound`).

    Attributes:
        psi: ``min(covering + volume + tail + regularisation + minimizer_gap, cap)``.
        failure_prob: ``zeta + tv_slack``.
        covering: ``G r`` with ``r`` the optimised radius.
        volume: ``d ln(2R/r) / beta`` (the price of the ball ``B(x*, r)`` having
            volume fraction ``>= (r/2R)^d`` of ``K``).
        tail: ``ln(1/zeta) / beta``.
        regularisation: ``mu (max_K |x|^2 - min_K |x|^2) / 2``.
        minimizer_gap: the declared ``g_W``.
        radius: the ``r`` used (``min(d/(beta G), 2R)``).
        tv_slack: the sampler's total-variation distance to the exact target.
        capped: whether the trivial cap ``min(G diam K, loss_range)`` was smaller.
    """

    psi: float
    failure_prob: float
    covering: float
    volume: float
    tail: float
    regularisation: float
    minimizer_gap: float
    radius: float
    tv_slack: float
    capped: bool


def gibbs_warm_start_bound(
    *,
    lipschitz: float,
    radius: float,
    dim: int,
    beta: float,
    mu: float,
    failure_prob: float,
    max_norm: float | None = None,
    min_norm: float = 0.0,
    tv_slack: float = 0.0,
    minimizer_gap: float = 0.0,
    loss_range: float | None = None,
) -> GibbsWarmStartBound:
    r"""High-probability excess-risk bound ``psi`` of the regularised Gibbs sampler.

    The exact target is :math:`\pi(x) \propto e^{-\beta(F_D(x) + \mu\|x\|^2/2)}` on
    a ball :math:`K = B(c, R)` of :math:`\mathbb{R}^d`, with every ``f(., z)``
    ``G``-Lipschitz on ``K``. For every dataset, every ``zeta`` and every
    :math:`r \in (0, 2R]`,

    .. math::

        \Pr_\pi\Big[F_D(x) - \min_K F_D > G r + \frac{d \ln(2R/r) + \ln(1/\zeta)}
        {\beta} + \frac{\mu}{2}\big(\max_K\|x\|^2 - \min_K\|x\|^2\big)\Big]
        \le \zeta ,

    and a sampler whose output law is within total variation ``tau`` of
    :math:`\pi` fails with probability at most ``zeta + tau``.

    Derivation (the volume argument of spec 003 section 2.10, extended to the
    regulariser). Let :math:`x^*` minimise :math:`F_D` on ``K`` and
    :math:`F^* = F_D(x^*)`. The ball :math:`B(c', r/2)` with
    :math:`c' = c + (1 - r/2R)(x^* - c)` lies in :math:`B(x^*, r) \cap K` (for
    ``y`` in it, :math:`\|y - c\| \le (1 - r/2R)\|x^* - c\| + r/2 \le R` and
    :math:`\|y - x^*\| \le r/2 + \|x^* - c\| r/2R \le r`), so its volume is a
    fraction :math:`(r/2R)^d` of ``vol K``. On it
    :math:`F_D \le F^* + G r` (Lipschitz) and the regulariser is at most
    :math:`\mu \max_K\|x\|^2/2`; on the event :math:`\{F_D > F^* + s\}` the potential
    is at least :math:`F^* + s + \mu\min_K\|x\|^2/2`. The ratio of the two
    unnormalised masses gives
    :math:`\Pr_\pi[F_D > F^* + s] \le (2R/r)^d e^{-\beta(s - Gr - \text{reg})}`;
    equating it to ``zeta`` gives the bound. The default ``r = d/(beta G)``
    minimises it (clipped to ``2R``). ``psi`` is also capped by the trivial
    ``min(G diam K, loss_range)`` (which never fails). Every input is public
    (declared constants, the calibrated ``beta`` and ``mu``, the schedule's TV
    bound), so ``psi`` never depends on the data.

    Args:
        lipschitz: ``G``, declared.
        radius: ``R``, the radius of ``K``.
        dim: ``d``.
        beta: The inverse temperature of the target.
        mu: The regularisation of the target (``>= 0``).
        failure_prob: ``zeta`` in ``(0, 1)``.
        max_norm: ``max_K ||x||`` (default ``R``: ``K`` centred at the origin).
        min_norm: ``min_K ||x||`` (default ``0``).
        tv_slack: ``tau``, the sampler's TV distance to the target (``>= 0``).
        minimizer_gap: Declared ``g_W >= 0`` added to ``psi``.
        loss_range: Declared range ``B`` of the losses (for the cap), or ``None``.

    Returns:
        A :class:`GibbsWarmStartBound`.

    Raises:
        ValueError: On invalid inputs, or ``zeta + tau >= 1``.

    Examples:
        >>> from dpsample.bounds import gibbs_warm_start_bound
        >>> b = gibbs_warm_start_bound(lipschitz=1.0, radius=1.0, dim=1,
        ...     beta=200.0, mu=0.0, failure_prob=0.01)
        >>> round(b.psi, 4), round(b.radius, 4)
        (0.058, 0.005)
    """
    g = validation.positive("lipschitz", lipschitz)
    big_r = validation.positive("radius", radius)
    d = validation.positive_int("dim", dim)
    b = validation.positive("beta", beta)
    m = validation.nonnegative("mu", mu)
    zeta = validation.probability("failure_prob", failure_prob, open_left=True)
    top = big_r if max_norm is None else validation.positive("max_norm", max_norm)
    low = validation.nonnegative("min_norm", min_norm)
    if low > top:
        raise ValueError(f"Expected min_norm={low!r} <= max_norm={top!r}")
    tau = validation.nonnegative("tv_slack", tv_slack)
    if not zeta + tau < 1.0:
        raise ValueError(f"Expected failure_prob + tv_slack = {zeta + tau!r} < 1")
    gap = validation.nonnegative("minimizer_gap", minimizer_gap)
    r = min(d / (b * g), 2.0 * big_r)
    covering = g * r
    volume = d * math.log(2.0 * big_r / r) / b
    tail = math.log(1.0 / zeta) / b
    reg = 0.5 * m * (top**2 - low**2)
    psi = covering + volume + tail + reg + gap
    cap = 2.0 * g * big_r
    if loss_range is not None:
        cap = min(cap, validation.positive("loss_range", loss_range))
    cap += gap
    capped = cap < psi
    return GibbsWarmStartBound(
        min(psi, cap), zeta + tau, covering, volume, tail, reg, gap, r, tau, capped
    )


class UniformDeviationBound(NamedTuple):
    """``sup_K |F_S - F| <= bound`` with probability ``>= 1 - failure_prob``.

    Attributes:
        bound: ``2 G r + w sqrt((d ln(1 + 2R/r) + ln(2/zeta)) / (2 m))``.
        failure_prob: ``zeta``.
        radius: the net radius ``r`` minimising the bound.
        width: ``w``, the range of ``f(x, z) - f(c, z)`` over ``z``.
    """

    bound: float
    failure_prob: float
    radius: float
    width: float


def uniform_deviation_bound(
    *,
    lipschitz: float,
    radius: float,
    dim: int,
    n: int,
    failure_prob: float,
    loss_range: float | None = None,
) -> UniformDeviationBound:
    r"""Uniform deviation of an empirical risk from the population risk on a ball.

    For ``m = n`` i.i.d. examples and every ``f(., z)`` ``G``-Lipschitz on
    ``K = B(c, R)``: with probability ``>= 1 - zeta``, for all ``x`` in ``K``,

    .. math::

        |(F_S(x) - F_S(c)) - (F(x) - F(c))| \le 2 G r
            + w \sqrt{\frac{d \ln(1 + 2R/r) + \ln(2/\zeta)}{2 m}},

    minimised over the net radius ``r``. Hoeffding's inequality for the centred
    losses ``f(p, z) - f(c, z)``, whose range over ``z`` is at most
    ``w = min(2 G R, loss_range)`` (spec 003 section 2.7's [I] note: centring makes
    Lipschitzness give the range), and a union bound over an ``r``-net of ``K`` of
    at most ``(1 + 2R/r)^d`` points; Lipschitzness moves from the net to ``K`` at
    cost ``2 G r``. Centring at ``c`` cancels in every excess-risk difference, so
    ``F(x) - F* <= F_S(x) - min_K F_S + 2 bound`` (Lemma E.3's argument).

    Args:
        lipschitz: ``G``.
        radius: ``R``.
        dim: ``d``.
        n: The number of i.i.d. examples of ``S``.
        failure_prob: ``zeta`` in ``(0, 1)``.
        loss_range: Declared range of the losses (tightens ``w``).

    Returns:
        A :class:`UniformDeviationBound`.

    Examples:
        >>> from dpsample.bounds import uniform_deviation_bound
        >>> u = uniform_deviation_bound(lipschitz=1.0, radius=1.0, dim=2, n=10_000,
        ...     failure_prob=0.01)
        >>> round(u.bound, 3)
        0.066
    """
    g = validation.positive("lipschitz", lipschitz)
    big_r = validation.positive("radius", radius)
    d = validation.positive_int("dim", dim)
    m = validation.positive_int("n", n)
    zeta = validation.probability("failure_prob", failure_prob, open_left=True)
    if zeta >= 1.0:
        raise ValueError(f"Expected failure_prob={zeta!r} < 1")
    w = 2.0 * g * big_r
    if loss_range is not None:
        w = min(w, validation.positive("loss_range", loss_range))

    def value(r: float) -> float:
        log_n = d * math.log1p(2.0 * big_r / r) + math.log(2.0 / zeta)
        return 2.0 * g * r + w * math.sqrt(log_n / (2.0 * m))

    # The bound is convex-like in log r: scan a log grid, then refine locally.
    grid = [big_r * 10.0 ** (-8.0 + 8.0 * i / 400) for i in range(401)]
    best = min(grid, key=value)
    lo, hi = best / 1.05, best * 1.05
    for _ in range(100):
        a, b = lo + (hi - lo) / 3.0, hi - (hi - lo) / 3.0
        if value(a) < value(b):
            hi = b
        else:
            lo = a
    r_opt = min((best, 0.5 * (lo + hi)), key=value)
    return UniformDeviationBound(value(r_opt), zeta, r_opt, w)


class QuasarWarmStartBound(NamedTuple):
    """Public high-probability bound ``psi`` of seed 003 Algorithm 3's warm start.

    Attributes:
        psi: ``2 m + selection``.
        failure_prob: ``2^{-k} + zeta_select``.
        expected_gap: ``m``, the in-expectation bound of one run.
        selection: ``(ln k + ln(1/zeta_select)) / k_sel``, the exponential
            mechanism's excess over the best candidate.
        num_runs: ``k``.
    """

    psi: float
    failure_prob: float
    expected_gap: float
    selection: float
    num_runs: int


def quasar_sgd_expected_gap(
    *,
    diameter: float,
    lipschitz: float,
    dim: int,
    noise_std: float,
    num_steps: int,
    learning_rate: float,
    quasar_convexity: float,
) -> float:
    r"""In-expectation excess risk of one run of DP-SGD on a quasar-convex loss.

    Seed 003 Proposition D.1's proof: for an ``F`` that is ``q``-quasar-convex
    with respect to a minimiser ``x*`` in ``K``, noisy gradients
    ``g_t = nabla F(x_t) + u_t`` with ``u_t ~ N(0, sigma^2 I_d)``
    (``E||g_t||^2 <= G^2 + d sigma^2``), projected steps onto ``K`` (projection onto
    a convex set containing ``x*`` keeps the one-step inequality) and an output
    drawn uniformly from ``T`` consecutive iterates,

    .. math::

        \mathbb{E}[F(\hat x) - F^*] \le \frac{D^2}{2\eta q T}
            + \frac{\eta (G^2 + d\sigma^2)}{2 q},

    with ``D`` a bound on the distance from the window's first iterate to ``x*``
    (``diam K`` always works). No smoothness is used.

    Args:
        diameter: ``D``.
        lipschitz: ``G``.
        dim: ``d``.
        noise_std: ``sigma``, the std of the noise on the averaged gradient.
        num_steps: ``T``.
        learning_rate: ``eta``.
        quasar_convexity: ``q`` in ``(0, 1]``.

    Returns:
        The bound.

    Examples:
        >>> from dpsample.bounds import quasar_sgd_expected_gap
        >>> round(quasar_sgd_expected_gap(diameter=2.0, lipschitz=1.0, dim=1,
        ...     noise_std=0.0, num_steps=100, learning_rate=0.2,
        ...     quasar_convexity=1.0), 4)
        0.2
    """
    diam = validation.positive("diameter", diameter)
    g = validation.positive("lipschitz", lipschitz)
    d = validation.positive_int("dim", dim)
    sigma = validation.nonnegative("noise_std", noise_std)
    t = validation.positive_int("num_steps", num_steps)
    eta = validation.positive("learning_rate", learning_rate)
    q = validation.positive("quasar_convexity", quasar_convexity)
    if q > 1.0:
        raise ValueError(f"Expected quasar_convexity={q!r} in (0, 1]")
    return diam**2 / (2.0 * eta * q * t) + eta * (g**2 + d * sigma**2) / (2.0 * q)


def quasar_sgd_warm_start_bound(
    *,
    expected_gap: float,
    num_runs: int,
    selection_inverse_temperature: float,
    selection_failure_prob: float,
) -> QuasarWarmStartBound:
    r"""High-probability ``psi`` of the best-of-``k`` DP-SGD runs (Bassily et al.).

    Each of ``k`` independent runs has ``E[gap] <= m``, so by Markov
    ``Pr[gap_i > 2m] <= 1/2`` and ``Pr[min_i gap_i > 2m] <= 2^{-k}``. The
    exponential mechanism over the ``k`` candidates with
    ``Pr[i] ∝ exp(-k_sel F_D(x_i))`` returns, with probability
    ``>= 1 - zeta_sel``, a candidate within ``(ln k + ln(1/zeta_sel))/k_sel`` of the
    best. So ``Pr[gap > 2m + (ln k + ln(1/zeta_sel))/k_sel] <= 2^{-k} + zeta_sel``
    (seed 003 section 5, high-probability variant; spec 003 section 2.4).

    Args:
        expected_gap: ``m`` (:func:`quasar_sgd_expected_gap`).
        num_runs: ``k``.
        selection_inverse_temperature: ``k_sel``.
        selection_failure_prob: ``zeta_sel`` in ``(0, 1)``.

    Returns:
        A :class:`QuasarWarmStartBound`.

    Examples:
        >>> import math
        >>> from dpsample.bounds import quasar_sgd_warm_start_bound
        >>> b = quasar_sgd_warm_start_bound(expected_gap=0.1, num_runs=4,
        ...     selection_inverse_temperature=100.0, selection_failure_prob=0.01)
        >>> round(b.psi, 4), b.failure_prob
        (0.2599, 0.0725)
    """
    m = validation.nonnegative("expected_gap", expected_gap)
    k = validation.positive_int("num_runs", num_runs)
    k_sel = validation.positive(
        "selection_inverse_temperature", selection_inverse_temperature
    )
    z = validation.probability(
        "selection_failure_prob", selection_failure_prob, open_left=True
    )
    if z >= 1.0:
        raise ValueError(f"Expected selection_failure_prob={z!r} < 1")
    selection = (math.log(k) + math.log(1.0 / z)) / k_sel
    return QuasarWarmStartBound(2.0 * m + selection, 2.0**-k + z, m, selection, k)


precision.scope_public(globals())
