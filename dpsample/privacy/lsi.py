r"""Log-Sobolev (LSI) constants of Gibbs targets and the privacy they imply.

Convention (spec 000 section 1.3): a probability measure :math:`\pi` satisfies LSI with
constant :math:`C` if, for every smooth :math:`f`,

.. math::
    \operatorname{Ent}_\pi(f^2) \le 2 C\, \mathbb{E}_\pi \|\nabla f\|^2 ,

so that :math:`N(0, s^2 I)` has :math:`C = s^2`.

LSI constants (upper bounds; smaller is better):

* :func:`bakry_emery`: a potential that is :math:`\kappa`-strongly convex, also when
  restricted to a convex set, gives :math:`C \le 1/\kappa`;
* :func:`holley_stroock`: a bounded perturbation :math:`d\mu/d\pi \propto e^{-W}` with
  :math:`\operatorname{osc} W \le b` gives :math:`C(\mu) \le e^{b}\, C(\pi)`;
* :func:`lipschitz_perturbation`: :math:`\pi \propto e^{-V - W}` with :math:`V`
  :math:`\alpha`-strongly convex and :math:`W` :math:`L`-Lipschitz gives
  :math:`C \le \inf_{0<u<\alpha} u^{-1} \exp(L^2 / (2(\alpha - u)))`;
* :func:`gibbs_lsi_constants`: all of the above for the regularised Gibbs target
  :math:`\pi_D \propto \exp(-\beta(F_D + \tfrac{\mu}{2}\|x\|^2))` on a ball ``K``, from
  the Problem's *declared* constants only.

For non-convex losses both perturbation bounds are **exponential in beta**
(:math:`e^{\beta G D}` and :math:`e^{\beta G^2/\mu}`): at the inverse temperatures that
make a sampler useful they are astronomically large and the LSI privacy bounds below
are vacuous; the always-valid oscillation bound of
:func:`dpsample.samplers.gibbs.target_privacy` then wins (spec 000 errata E23).

Privacy from LSI (replace-one neighbours, :math:`h = \log(d\pi_D/d\pi_{D'})`,
whose gradient is bounded by
:math:`\Lambda = \beta \operatorname{Lip}(F_D - F_{D'}) \le 2\beta G/n`):

* :func:`lsi_zcdp`: the self-contained bound of samplers.md section 6.2 (Herbst plus
  LSI of both targets), :math:`D_\alpha(\pi_D\|\pi_{D'}) \le \alpha C \Lambda^2 / 2`,
  i.e. :math:`C\Lambda^2/2`-zCDP;
* :func:`minami_epsilon` / :func:`minami`: seed 000 Theorem 5.1 (Minami et al. 2016)
  *as printed*, with the erratum E2 (``2 G beta / n``, not ``2 G beta / r``):
  :math:`\varepsilon = \Lambda \sqrt{C}\sqrt{1 + 2\log(1/\delta)}`. Its form was not
  verified against Minami et al.; :func:`minami_is_implied` says when it follows from
  the self-contained tail bound (then it is safe to use).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from dpsample._src import precision, validation
from dpsample.domains import Ball
from dpsample.privacy.guarantee import REPLACE_ONE, PrivacyGuarantee

__all__ = [
    "GibbsLSIConstants",
    "bakry_emery",
    "gibbs_lsi_constants",
    "holley_stroock",
    "lipschitz_perturbation",
    "lsi_zcdp",
    "minami",
    "minami_epsilon",
    "minami_is_implied",
]


#: zCDP parameters above this are treated as vacuous (no bound is returned).
VACUOUS_RHO = 1e12


def bakry_emery(strong_convexity: float) -> float:
    r"""LSI constant of a :math:`\kappa`-strongly log-concave measure: ``1 / kappa``.

    .. math::
        \pi \propto e^{-V},\ \nabla^2 V \succeq \kappa I
        \;\Longrightarrow\; C_{LSI}(\pi) \le 1/\kappa .

    It also holds for :math:`\pi` restricted to a convex set (the indicator keeps the
    potential convex; Bakry–Émery).

    Args:
        strong_convexity: ``kappa > 0``.

    Returns:
        The bound ``1 / kappa``.

    Examples:
        >>> from dpsample.privacy.lsi import bakry_emery
        >>> bakry_emery(4.0)
        0.25

    References:
        D. Bakry and M. Émery, Diffusions hypercontractives, 1985.
    """
    return 1.0 / validation.positive("strong_convexity", strong_convexity)


def holley_stroock(base_constant: float, oscillation: float) -> float:
    r"""Holley–Stroock: a bounded perturbation multiplies the LSI constant by ``e^osc``.

    .. math::
        \frac{d\mu}{d\pi} \propto e^{-W},\ \sup W - \inf W \le b
        \;\Longrightarrow\; C_{LSI}(\mu) \le e^{b}\, C_{LSI}(\pi).

    (Seed 000 Lemma 5.2: ``c <= dmu/dpi <= C`` gives the factor ``C / c = e^b``.)

    Args:
        base_constant: ``C_LSI(pi) > 0``.
        oscillation: ``b >= 0``.

    Returns:
        ``exp(b) * base_constant`` (``inf`` on overflow: the bound is then vacuous).

    Examples:
        >>> import math
        >>> from dpsample.privacy.lsi import holley_stroock
        >>> holley_stroock(0.5, math.log(4.0))
        2.0

    References:
        R. Holley and D. Stroock, Logarithmic Sobolev inequalities and stochastic
        Ising models, J. Stat. Phys., 1987. S. Chewi, Log-Concave Sampling (book
        draft), Prop. 2.3.1.
    """
    c0 = validation.positive("base_constant", base_constant)
    b = validation.nonnegative("oscillation", oscillation)
    try:
        return c0 * math.exp(b)
    except OverflowError:
        return math.inf


def lipschitz_perturbation(strong_convexity: float, lipschitz: float) -> float:
    r"""LSI constant of a strongly log-concave measure perturbed by a Lipschitz term.

    .. math::
        \pi \propto e^{-V - W},\ V\ \alpha\text{-strongly convex},\
        W\ L\text{-Lipschitz}\;\Longrightarrow\;
        C_{LSI}(\pi) \le \inf_{0<u<\alpha} \frac{1}{u}
        \exp\Big(\frac{L^2}{2(\alpha - u)}\Big) \le \frac{2}{\alpha} e^{L^2/\alpha}.

    The infimum is attained at the root in ``(0, alpha)`` of
    ``2 (alpha - u)^2 = L^2 u``, i.e.
    ``u* = ((4 alpha + L^2) - sqrt((4 alpha + L^2)^2 - 16 alpha^2)) / 4``. For ``L = 0``
    it reduces to Bakry–Émery, ``1 / alpha``.

    The form is the one recorded from Chewi's book (Prop. 2.3.4) in the project's
    sampler notes (samplers.md section 6.3). Applying it with ``V`` including the
    indicator of a convex ``K`` is the notes' inference (the convex-potential proof
    carries over); it is only used as one of several bounds, and for the Gibbs target
    it is typically worse than Holley–Stroock.

    Args:
        strong_convexity: ``alpha > 0``.
        lipschitz: ``L >= 0``.

    Returns:
        The bound (``inf`` on overflow).

    Examples:
        >>> from dpsample.privacy.lsi import lipschitz_perturbation
        >>> lipschitz_perturbation(2.0, 0.0)
        0.5
        >>> round(lipschitz_perturbation(1.0, 1.0), 4)
        5.4366

    References:
        S. Chewi, Log-Concave Sampling (book draft), Prop. 2.3.4.
    """
    a = validation.positive("strong_convexity", strong_convexity)
    lip = validation.nonnegative("lipschitz", lipschitz)
    if lip == 0.0:
        return 1.0 / a
    s = 4.0 * a + lip**2
    # Stable form of the smaller root: (s - sqrt(s^2 - 16 a^2)) / 4.
    u = 4.0 * a**2 / (s + math.sqrt(s * s - 16.0 * a * a))
    log_c = -math.log(u) + lip**2 / (2.0 * (a - u))
    return math.exp(log_c) if log_c < 700.0 else math.inf


class GibbsLSIConstants(NamedTuple):
    r"""LSI constant bounds for the regularised Gibbs target on ``K``.

    The target is :math:`\pi_D \propto e^{-\beta(F_D + \mu\|x\|^2/2)}`.

    Each field is an upper bound valid for **every** dataset (declared constants
    only), or ``None`` when its hypotheses are not available.

    Attributes:
        bakry_emery: ``1 / (beta mu)``; only for declared-convex losses.
        holley_stroock: ``exp(beta osc_K F_D) / (beta mu)`` with
            ``osc_K F_D <= min(G D, B)``.
        lipschitz_perturbation: :func:`lipschitz_perturbation` with
            ``alpha = beta mu`` and ``L = beta G``.
    """

    bakry_emery: float | None
    holley_stroock: float | None
    lipschitz_perturbation: float | None

    def best(self) -> tuple[str, float] | None:
        """The smallest available bound as ``(name, value)``, or ``None``."""
        items = [(k, v) for k, v in self._asdict().items() if v is not None]
        return min(items, key=lambda kv: kv[1]) if items else None


def _risk_oscillation(problem: Any) -> float | None:
    """A declared bound on ``osc_K F_D`` (``min(G D, B)``), or ``None``."""
    bounds = []
    if problem.lipschitz is not None and isinstance(problem.domain, Ball):
        bounds.append(problem.lipschitz * problem.domain.diameter)
    if problem.loss_range is not None:
        bounds.append(problem.loss_range)
    return min(bounds) if bounds else None


def gibbs_lsi_constants(
    problem: Any, *, beta: float, mu: float, convex: bool = False
) -> GibbsLSIConstants:
    r"""Every available LSI constant bound for the regularised Gibbs target.

    The potential is :math:`U = \beta F_D + \tfrac{\beta\mu}{2}\|x\|^2 + \iota_K`; its
    regulariser part is :math:`\beta\mu`-strongly convex (spec 000 erratum E26: not
    :math:`\mu`). The reference measure :math:`\pi_0 \propto e^{-\beta\mu\|x\|^2/2}` on
    ``K`` has :math:`C \le 1/(\beta\mu)` (Bakry–Émery on a convex set). Then:

    * convex losses (``convex=True``, a public declaration): ``U`` is
      :math:`\beta\mu`-strongly convex and :math:`C \le 1/(\beta\mu)`;
    * Holley–Stroock (seed 000 Lemma 5.2, App. D.1):
      :math:`C \le e^{\beta \operatorname{osc}_K F_D}/(\beta\mu)` with
      :math:`\operatorname{osc}_K F_D \le \min(GD, B)`; with
      :math:`\mu = d/(D^2\beta)` this is the paper's :math:`e^{\beta G D} D^2/d`;
    * Lipschitz perturbation: ``V`` the regulariser, ``W = beta F_D`` which is
      :math:`\beta G`-Lipschitz.

    With ``mu = 0`` no bound is returned (the uniform law on ``K`` would need its own
    LSI constant, which dpsample does not provide).

    Args:
        problem: the :class:`~dpsample.problem.Problem` (Ball domain).
        beta: inverse temperature, > 0.
        mu: regularisation, >= 0.
        convex: whether every ``f(., z)`` is declared convex on ``K``.

    Returns:
        A :class:`GibbsLSIConstants`.

    Examples:
        >>> import jax.numpy as jnp
        >>> import dpsample
        >>> from dpsample import Ball, Problem
        >>> from dpsample.privacy.lsi import gibbs_lsi_constants
        >>> p = Problem(lambda x, z: jnp.abs(x[0] - z), jnp.zeros(5), Ball(1.0, dim=1),
        ...             lipschitz=1.0)
        >>> c = gibbs_lsi_constants(p, beta=2.0, mu=0.25)
        >>> c.bakry_emery is None, round(c.holley_stroock, 4)
        (True, 109.1963)
    """
    beta = validation.positive("beta", beta)
    mu = validation.nonnegative("mu", mu)
    if mu == 0.0:
        return GibbsLSIConstants(None, None, None)
    kappa = beta * mu
    be = bakry_emery(kappa) if convex else None
    osc = _risk_oscillation(problem)
    hs = None if osc is None else holley_stroock(1.0 / kappa, beta * osc)
    lp = (
        None
        if problem.lipschitz is None
        else lipschitz_perturbation(kappa, beta * problem.lipschitz)
    )
    return GibbsLSIConstants(be, hs, lp)


def lsi_zcdp(
    lsi_constant: float,
    *,
    log_density_lipschitz: float,
    relation: Any = REPLACE_ONE,
) -> PrivacyGuarantee | None:
    r"""The zCDP of a Gibbs target from LSI (samplers.md section 6.2, self-contained).

    Let :math:`P = \pi_D`, :math:`Q = \pi_{D'}` both satisfy LSI with constant
    :math:`C` and let :math:`h = \log(dP/dQ)` be :math:`\Lambda`-Lipschitz on ``K``.
    LSI of ``Q`` gives :math:`KL(P\|Q) \le C\Lambda^2/2`; Herbst's argument under
    ``P`` gives :math:`\log \mathbb{E}_P e^{\lambda(h - \mathbb{E}_P h)} \le
    C\Lambda^2\lambda^2/2`. Hence

    .. math::
        D_\alpha(P\|Q) = \tfrac{1}{\alpha-1}\log \mathbb{E}_P e^{(\alpha-1)h}
        \le \alpha\, \frac{C\Lambda^2}{2}\quad(\alpha > 1),

    i.e. :math:`C\Lambda^2/2`-zCDP. For the Gibbs target
    :math:`\Lambda = \beta\operatorname{Lip}(F_D - F_{D'}) \le 2\beta G/n` under
    replace-one. No convexity is needed beyond what the LSI constant assumes. (GLL
    Cor. 14 is the strongly convex special case ``C = 1/(k mu)``, ``Lambda = k G``.)

    Args:
        lsi_constant: an LSI constant valid for every dataset (``inf`` or ``None``
            gives ``None``).
        log_density_lipschitz: :math:`\Lambda > 0`.
        relation: the neighbouring relation the guarantee is stated for.

    Returns:
        ``PrivacyGuarantee.zcdp(C Lambda^2 / 2)``, or ``None`` if the constant is
        unavailable or the bound is vacuous (``rho > VACUOUS_RHO``).

    Examples:
        >>> from dpsample.privacy.lsi import lsi_zcdp
        >>> round(lsi_zcdp(2.0, log_density_lipschitz=0.1).zcdp_rho(), 12)
        0.01
    """
    lam = validation.positive("log_density_lipschitz", log_density_lipschitz)
    if lsi_constant is None or not math.isfinite(lsi_constant):
        return None
    c = validation.positive("lsi_constant", lsi_constant)
    rho = c * lam**2 / 2.0
    if not rho <= VACUOUS_RHO:
        return None
    return PrivacyGuarantee.zcdp(rho, relation=relation)


def minami_epsilon(
    lsi_constant: float, *, lipschitz: float, beta: float, n: int, delta: float
) -> float:
    r"""Seed 000 Theorem 5.1 (Minami et al.) as printed, with erratum E2.

    .. math::
        \varepsilon = \frac{2G\beta}{n}\sqrt{C_{LSI}}\sqrt{1 + 2\log(1/\delta)} .

    The paper prints ``2 G beta / r``; ``r`` is a typo for ``n`` (E2). The appendix's
    replacement ``sqrt(3 log(1/delta))`` is not used (it needs ``delta <= 1/e``, E24).

    Args:
        lsi_constant: worst-case LSI constant over datasets, > 0 (may be ``inf``).
        lipschitz: per-example Lipschitz constant ``G``.
        beta: inverse temperature.
        n: dataset size.
        delta: in (0, 1).

    Returns:
        The printed epsilon (``inf`` for an infinite constant).

    Examples:
        >>> import math
        >>> from dpsample.privacy.lsi import minami_epsilon
        >>> e = minami_epsilon(4.0, lipschitz=1.0, beta=10.0, n=100, delta=math.exp(-4))
        >>> round(e, 6)
        1.2
    """
    g = validation.positive("lipschitz", lipschitz)
    b = validation.positive("beta", beta)
    n = validation.positive_int("n", n)
    dlt = validation.delta_in_open_unit(delta)
    if lsi_constant is None or not math.isfinite(lsi_constant):
        return math.inf
    c = validation.positive("lsi_constant", lsi_constant)
    return 2.0 * g * b / n * math.sqrt(c) * math.sqrt(1.0 + 2.0 * math.log(1.0 / dlt))


def minami_is_implied(
    lsi_constant: float, *, lipschitz: float, beta: float, n: int, delta: float
) -> bool:
    r"""Whether the printed Theorem 5.1 follows from the self-contained LSI tail bound.

    With :math:`a = \Lambda\sqrt{C}`, :math:`\Lambda = 2\beta G/n`, the privacy loss
    :math:`h(X)`, :math:`X \sim \pi_D`, has mean :math:`\le a^2/2` and (Herbst)
    Gaussian tails with variance proxy :math:`a^2`, so
    :math:`\Pr[h > a^2/2 + a\sqrt{2\log(1/\delta)}] \le \delta` and the target is
    :math:`(a^2/2 + a\sqrt{2\log(1/\delta)}, \delta)`-DP. The printed
    :math:`a\sqrt{1 + 2\log(1/\delta)}` is at least that iff
    :math:`a \le 2(\sqrt{1 + 2L} - \sqrt{2L})`, ``L = log(1/delta)``; outside that
    range the printed form is not established here and dpsample does not use it.

    Args:
        lsi_constant: worst-case LSI constant, > 0.
        lipschitz: ``G``.
        beta: inverse temperature.
        n: dataset size.
        delta: in (0, 1).

    Returns:
        ``True`` when the printed bound is implied.

    Examples:
        >>> from dpsample.privacy.lsi import minami_is_implied
        >>> minami_is_implied(1.0, lipschitz=1.0, beta=1.0, n=100, delta=1e-6)
        True
        >>> minami_is_implied(1.0, lipschitz=1.0, beta=100.0, n=100, delta=1e-6)
        False
    """
    dlt = validation.delta_in_open_unit(delta)
    if lsi_constant is None or not math.isfinite(lsi_constant):
        return False
    a = (
        2.0
        * validation.positive("beta", beta)
        * validation.positive("lipschitz", lipschitz)
        / validation.positive_int("n", n)
        * math.sqrt(validation.positive("lsi_constant", lsi_constant))
    )
    big_l = math.log(1.0 / dlt)
    return a <= 2.0 * (math.sqrt(1.0 + 2.0 * big_l) - math.sqrt(2.0 * big_l))


def minami(
    lsi_constant: float,
    *,
    lipschitz: float,
    beta: float,
    n: int,
    delta: float,
    relation: Any = REPLACE_ONE,
) -> PrivacyGuarantee | None:
    """Theorem 5.1 as an ``approx(epsilon, delta)`` guarantee (``None`` if infinite).

    See :func:`minami_epsilon` for the formula and :func:`minami_is_implied` for when
    it is established; this constructor does not check the latter (callers that need
    a *valid* bound must).

    Examples:
        >>> import math
        >>> from dpsample.privacy.lsi import minami
        >>> g = minami(4.0, lipschitz=1.0, beta=10.0, n=100, delta=math.exp(-4))
        >>> round(g.epsilon(math.exp(-4)), 2)  # the worst-case PLD, discretised
        1.2
    """
    eps = minami_epsilon(lsi_constant, lipschitz=lipschitz, beta=beta, n=n, delta=delta)
    if not math.isfinite(eps):
        return None
    return PrivacyGuarantee.approx(eps, delta, relation=relation)


precision.scope_public(globals())
