r"""KL-Spider's public schedule: levels, steps, noise and the certified floor.

:func:`kl_spider_schedule` computes, from public quantities only, the schedule that
:class:`~dpsample.pipelines.kl_spider.KLSpider` runs (Menart et al.'s KL-Spider for
``(gamma, kappa)``-KL* losses): the number of rounds ``K``, the target levels
``Phi_k`` and steps ``T_k``, the step lengths, thresholds and noise scales, their
sensitivities and the total zCDP of the run (:data:`ZCDP_PER_RHO`). The last level
is Menart's floor, or the lowest floor the concentration bound certifies.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from dpsample._src import precision, validation

__all__ = [
    "FLOOR_CONSTANT",
    "KLSpiderSchedule",
    "ZCDP_PER_RHO",
    "check_exponent",
    "gradient_cost",
    "kl_spider_schedule",
]

#: Total zCDP of Menart's noise at parameter ``rho'`` under replace-one:
#: ``K`` anchors cost ``2 rho'``, the variations ``rho'/8``.
ZCDP_PER_RHO = 17.0 / 8.0

#: Menart's floor constant: ``(32 gamma L sqrt(K d ln(1/beta')) / (n sqrt(rho)))^k``.
FLOOR_CONSTANT = 32.0


class KLSpiderSchedule(NamedTuple):
    """KL-Spider's public schedule (:func:`kl_spider_schedule`).

    Attributes:
        num_rounds: ``K``.
        contraction: ``c``.
        levels: ``(Phi_1, ..., Phi_K)``.
        steps: ``(T_1, ..., T_K)``: round ``k`` takes ``T_k + 1`` steps and releases
            one anchor and ``T_k`` variations.
        step_lengths: ``s_k = Phi_k^(1/kappa) / (4 gamma beta_s)``.
        thresholds: The stop test's ``7 Phi_k^(1/kappa) / (8 gamma)``.
        anchor_noise: ``sigma_hat``, std per coordinate of an anchor's noise.
        variation_noise: ``(sigma_1, ..., sigma_K)``.
        anchor_sensitivity: ``2L/n`` (replace-one).
        variation_sensitivities: ``2 beta_s s_k / n``.
        floor: The level the rounds stop shrinking at.
        floor_source: ``"menart"`` or ``"certified"`` (raised to pass the check).
        beta_prime: Menart's ``beta'``.
        union_count: ``N = sum (T_k + 1)`` estimates in the union bound.
        certified: Every estimate is within ``Phi_k^(1/kappa)/(8 gamma)`` of the
            gradient with probability ``>= 1 - failure_prob`` (see
            :mod:`dpsample.pipelines.kl_spider`).
        rho: Menart's noise parameter ``rho'``.
        zcdp: ``sum Delta^2 / (2 sigma^2)`` over every release.
    """

    num_rounds: int
    contraction: float
    levels: tuple[float, ...]
    steps: tuple[int, ...]
    step_lengths: tuple[float, ...]
    thresholds: tuple[float, ...]
    anchor_noise: float
    variation_noise: tuple[float, ...]
    anchor_sensitivity: float
    variation_sensitivities: tuple[float, ...]
    floor: float
    floor_source: str
    beta_prime: float
    union_count: int
    certified: bool
    rho: float
    zcdp: float

    @property
    def num_steps(self) -> int:
        """Steps of the whole run, ``sum (T_k + 1)`` (frozen ones included)."""
        return sum(t + 1 for t in self.steps)

    @property
    def num_variations(self) -> int:
        """Variation releases, ``sum T_k``."""
        return sum(self.steps)


def _levels_and_steps(
    f0: float, c: float, floor: float, k: int, kappa: float
) -> tuple[list[float], list[int]]:
    levels, steps, phi = [], [], f0
    for _ in range(k):
        phi = max(phi / c, floor)
        levels.append(phi)
        steps.append(max(1, math.ceil((f0 / phi) ** ((2.0 - kappa) / kappa) - 1e-12)))
    return levels, steps


def _build(
    *,
    n: int,
    d: int,
    big_l: float,
    beta_s: float,
    gamma: float,
    kappa: float,
    f0: float,
    rho: float,
    fail: float,
    k: int,
    floor: float,
    floor_source: str,
    beta_prime: float,
) -> KLSpiderSchedule:
    c = 1.0 + f0 ** ((2.0 - kappa) / kappa) / (64.0 * gamma**2 * beta_s)
    levels, steps = _levels_and_steps(f0, c, floor, k, kappa)
    roots = [p ** (1.0 / kappa) for p in levels]
    s = [r / (4.0 * gamma * beta_s) for r in roots]
    sig_a = big_l * math.sqrt(k) / (n * math.sqrt(rho))
    sig_v = [
        r * math.sqrt(t * k) / (gamma * n * math.sqrt(rho))
        for r, t in zip(roots, steps, strict=True)
    ]
    sens_a = 2.0 * big_l / n
    sens_v = [2.0 * beta_s * si / n for si in s]
    zcdp = k * sens_a**2 / (2.0 * sig_a**2) + math.fsum(
        t * dv**2 / (2.0 * sv**2)
        for t, dv, sv in zip(steps, sens_v, sig_v, strict=True)
    )
    count = sum(t + 1 for t in steps)
    tail = math.sqrt(d) + math.sqrt(2.0 * math.log(count / fail))
    certified = all(
        math.sqrt(sig_a**2 + t * sv**2) * tail <= r / (8.0 * gamma)
        for r, t, sv in zip(roots, steps, sig_v, strict=True)
    )
    return KLSpiderSchedule(
        num_rounds=k,
        contraction=c,
        levels=tuple(levels),
        steps=tuple(steps),
        step_lengths=tuple(s),
        thresholds=tuple(7.0 * r / (8.0 * gamma) for r in roots),
        anchor_noise=sig_a,
        variation_noise=tuple(sig_v),
        anchor_sensitivity=sens_a,
        variation_sensitivities=tuple(sens_v),
        floor=floor,
        floor_source=floor_source,
        beta_prime=beta_prime,
        union_count=count,
        certified=certified,
        rho=rho,
        zcdp=zcdp,
    )


def kl_spider_schedule(
    *,
    n: int,
    dim: int,
    lipschitz: float,
    smoothness: float,
    kl_gamma: float,
    kl_exponent: float,
    initial_gap: float,
    rho: float,
    failure_prob: float,
    num_rounds: int | None = None,
) -> KLSpiderSchedule:
    r"""KL-Spider's schedule from public numbers only (Menart Alg. 1, corrected).

    ``c = 1 + F0^((2-kappa)/kappa) / (64 gamma^2 beta_s)``; ``K = max(1, ceil((1 +
    64 F0^(-(2-kappa)/kappa) gamma^2 beta_s) (ln F0 + kappa ln(n sqrt(rho) / (gamma L
    sqrt(d))))))`` unless ``num_rounds`` is given; ``beta' = min(1/2, (beta/K) (gamma
    L sqrt(K d) / (n sqrt(rho) F0^(1/kappa)))^(2-kappa))``; the floor ``min(F0, (32
    gamma L sqrt(K d ln(1/beta')) / (n sqrt(rho)))^kappa)``, raised (bisection in
    ``log``) to the smallest level that passes the certificate of the module
    docstring when Menart's does not; ``Phi_k = max(Phi_{k-1}/c, floor)``,
    ``T_k = ceil((F0/Phi_k)^((2-kappa)/kappa))``. See the module docstring for the
    noise and the certificate.

    Args:
        n: Number of examples.
        dim: ``d``.
        lipschitz: Declared ``L``.
        smoothness: Declared ``beta_s``.
        kl_gamma: Declared ``gamma > 0``.
        kl_exponent: Declared ``kappa`` in ``[1, 2]``.
        initial_gap: Public ``F0 >= F_D(w0) - inf F_D``.
        rho: Menart's noise parameter ``rho'`` (the run's total zCDP is
            ``17 rho'/8``).
        failure_prob: ``beta`` in ``(0, 1)``.
        num_rounds: Override of ``K``.

    Returns:
        :class:`KLSpiderSchedule`.

    Examples:
        >>> from dpsample.pipelines.kl_spider_schedule import kl_spider_schedule
        >>> s = kl_spider_schedule(n=100_000, dim=2, lipschitz=2.0, smoothness=1.0,
        ...     kl_gamma=0.5 ** 0.5, kl_exponent=1.5, initial_gap=2 ** 0.75,
        ...     rho=0.05, failure_prob=0.01)
        >>> s.num_rounds, sorted(set(s.steps)), s.num_steps, s.certified
        (405, [2, 3], 1564, True)
        >>> s.floor_source, round(s.floor, 4)
        ('menart', 0.0997)
        >>> round(s.zcdp / s.rho, 6)  # 17/8: anchors 2 rho', variations rho'/8
        2.125
        >>> bool(s.levels[-1] == s.floor)
        True
    """
    n = validation.positive_int("n", n)
    d = validation.positive_int("dim", dim)
    big_l = validation.positive("lipschitz", lipschitz)
    beta_s = validation.positive("smoothness", smoothness)
    gamma = validation.positive("kl_gamma", kl_gamma)
    kappa = check_exponent(kl_exponent)
    f0 = validation.positive("initial_gap", initial_gap)
    rho = validation.positive("rho", rho)
    fail = validation.delta_in_open_unit(failure_prob, name="failure_prob")
    ratio = f0 ** (-(2.0 - kappa) / kappa) * gamma**2 * beta_s
    if num_rounds is None:
        log_term = math.log(f0) + kappa * math.log(
            n * math.sqrt(rho) / (gamma * big_l * math.sqrt(d))
        )
        k = max(1, math.ceil((1.0 + 64.0 * ratio) * log_term))
    else:
        k = validation.positive_int("num_rounds", num_rounds)
    beta_prime = min(
        0.5,
        (fail / k)
        * (gamma * big_l * math.sqrt(k * d) / (n * math.sqrt(rho) * f0 ** (1 / kappa)))
        ** (2.0 - kappa),
    )
    menart = (
        FLOOR_CONSTANT
        * gamma
        * big_l
        * math.sqrt(k * d * math.log(1.0 / beta_prime))
        / (n * math.sqrt(rho))
    ) ** kappa
    common = dict(
        n=n,
        d=d,
        big_l=big_l,
        beta_s=beta_s,
        gamma=gamma,
        kappa=kappa,
        f0=f0,
        rho=rho,
        fail=fail,
        k=k,
        beta_prime=beta_prime,
    )
    sched = _build(floor=min(menart, f0), floor_source="menart", **common)  # type: ignore[arg-type]
    if sched.certified:
        return sched
    if menart >= f0:
        return sched._replace(floor_source="menart (not certified)")
    top = _build(floor=f0, floor_source="certified", **common)  # type: ignore[arg-type]
    if not top.certified:
        return top._replace(floor_source="menart (not certified)")
    lo, hi = math.log(menart), math.log(f0)  # lo fails, hi passes
    for _ in range(60):
        if hi - lo < 1e-6:
            break
        mid = 0.5 * (lo + hi)
        if _build(floor=math.exp(mid), floor_source="certified", **common).certified:  # type: ignore[arg-type]
            hi = mid
        else:
            lo = mid
    return _build(floor=math.exp(hi), floor_source="certified", **common)  # type: ignore[arg-type]


def check_exponent(kl_exponent: Any) -> float:
    """``kl_exponent`` (``kappa``) if it lies in ``[1, 2]``, else a ``ValueError``."""
    kappa = validation.positive("kl_exponent", kl_exponent)
    if not 1.0 <= kappa <= 2.0:
        raise ValueError(
            f"Expected kl_exponent={kappa!r} in [1, 2] (Menart's KL-Spider needs "
            "kappa in [1, 2]; mu-PL* is kappa = 2)"
        )
    return kappa


def gradient_cost(sched: KLSpiderSchedule, n: int) -> int:
    """Per-example gradients: ``n`` per anchor, ``2n`` per variation."""
    return n * (sched.num_rounds + 2 * sched.num_variations)


precision.scope_public(globals())
