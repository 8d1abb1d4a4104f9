r"""The regularised Gibbs mechanism: privacy bounds, calibration and the top level.

The target (seed 000 Sec. 5.1) is

.. math::
    \pi_D(x) \propto \exp\big(-\beta(F_D(x) + \tfrac{\mu}{2}\|x\|^2)\big)\,
    \mathbf 1_K(x),

on a ball ``K`` of diameter ``D``, for a ``G``-Lipschitz, possibly non-convex and
non-smooth loss. This module provides

* :func:`target_privacy`: every valid privacy bound of the *exact* target (the
  always-valid oscillation bound, the LSI bounds, and the Gopi–Lee–Liu Gaussian-DP
  bound for declared-convex losses) in a :class:`GibbsPrivacyReport` that names the
  tightest at a given ``delta``;
* :func:`calibrate` and :func:`theorem_5_6`: from ``(epsilon, delta)`` to
  ``(beta, mu)`` (spec 000 section 3.6 and the defaults table section 6.2);
* :func:`gibbs`: the private top level, releasing one point of ``K`` sampled by the
  proximal sampler (default), projected Langevin, or MALA, with the guarantee of what
  ran.

Bounds on the exact target (replace-one neighbours, ``osc`` the declared
``problem.utility_oscillation()``, a bound on
:math:`\operatorname{osc}_K(f(\cdot,z) - f(\cdot,z'))`):

======================  ==========================================  =================
name                    guarantee                                   valid when
======================  ==========================================  =================
``"pure"``              bounded-range exponential mechanism with    always
                        :math:`\varepsilon = \beta\,osc/n`
                        (:math:`\le 2\beta G D/n`)
``"lsi_zcdp"``          :math:`C\Lambda^2/2`-zCDP,                  ``mu > 0``, ``G``
                        :math:`\Lambda = 2\beta G/n`
``"gll_gdp"``           Gaussian DP with                            declared convex,
                        :math:`s = 2G\sqrt{\beta}/(n\sqrt{\mu})`    ``mu > 0``
``"minami"``            seed 000 Thm 5.1 as printed (E2):           only where
                        :math:`\Lambda\sqrt{C}\sqrt{1+2\log(1/\delta)}`  implied (see
                                                                    :mod:`~dpsample.privacy.lsi`)
======================  ==========================================  =================

``C`` is the best LSI constant of :func:`dpsample.privacy.lsi.gibbs_lsi_constants`.
For non-convex losses it is exponential in ``beta`` (Holley–Stroock
:math:`e^{\beta GD}/(\beta\mu)`), so the pure bound wins at every useful temperature
(errata E23); the report shows that.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from scipy import stats

from dpsample._src import precision, validation
from dpsample.domains import Ball
from dpsample.errors import MissingConstantError
from dpsample.privacy.guarantee import PrivacyGuarantee
from dpsample.privacy.lsi import (
    GibbsLSIConstants,
    gibbs_lsi_constants,
    lsi_zcdp,
    minami,
    minami_epsilon,
    minami_is_implied,
)
from dpsample.privacy.result import PrivateResult
from dpsample.problem import Problem
from dpsample.samplers import langevin, mala, proximal, restricted_gaussian
from dpsample.samplers.target import GibbsTarget
from dpsample.types import Array, PRNGKey

__all__ = [
    "C_GEN",
    "DEFAULT_MALA_STEPS",
    "MAX_LANGEVIN_STEPS",
    "MAX_PROXIMAL_STEPS",
    "PRESETS",
    "TV_FRACTION",
    "GibbsCalibration",
    "GibbsPrivacyReport",
    "calibrate",
    "default_mu",
    "empirical_risk_bound",
    "gaussian_noise_multiplier",
    "gibbs",
    "gll_gaussian_dp",
    "initial_point",
    "oscillation_bound",
    "target_privacy",
    "theorem_5_6",
]

#: Generalisation/mixing cap of the defaults table: ``beta G D <= C_GEN log n``.
C_GEN = 0.5
#: Share of ``delta`` given to the sampler's total-variation error (the rest goes to
#: the exact target's delta).
TV_FRACTION = 0.5
#: Most projected-Langevin steps ``gibbs`` runs when the budget allows more.
MAX_LANGEVIN_STEPS = 10_000
#: MALA steps run by ``gibbs`` unless ``num_steps`` is given.
DEFAULT_MALA_STEPS = 1_000

MAX_PROXIMAL_STEPS = 1_000_000
"""The most proximal steps :func:`gibbs` runs before refusing (the proven schedule
grows like ``beta^2 G^2 C_LSI``; larger runs take hours)."""
#: Calibration presets (spec 000 section 3.6).
PRESETS = ("tightest", "budget", "paper")
METHODS = ("proximal", "langevin", "mala")


# --------------------------------------------------------------------------------------
# bounds on the exact target


def oscillation_bound(target: GibbsTarget) -> PrivacyGuarantee:
    r"""The always-valid bound: a bounded-range mechanism with ``beta osc / n``.

    With :math:`g = F_D - F_{D'}`, the regulariser cancels and
    :math:`\log\frac{\pi_D(x)}{\pi_{D'}(x)} = -\beta g(x) - \log
    \mathbb{E}_{\pi_{D'}} e^{-\beta g}`, whose range over ``x`` is at most
    :math:`\beta\operatorname{osc}_K g \le \beta\,osc/n` (``osc`` =
    ``problem.utility_oscillation()``, e.g. ``2 G D``). So :math:`\pi_D` is
    :math:`\beta\,osc/n`-DP and, as a bounded-range mechanism, also
    :math:`(\beta\,osc/n)^2/8`-zCDP. No convexity, LSI or ``mu`` is needed (spec 000
    section 3.2).

    Raises:
        dpsample.errors.MissingConstantError: no oscillation bound is declared.

    Examples:
        >>> import jax.numpy as jnp
        >>> import dpsample
        >>> from dpsample import Ball, Problem
        >>> from dpsample.samplers.gibbs import oscillation_bound
        >>> from dpsample.samplers.target import GibbsTarget
        >>> p = Problem(lambda x, z: jnp.abs(x[0] - z), jnp.zeros(10),
        ...             Ball(1.0, dim=1), lipschitz=1.0)
        >>> oscillation_bound(GibbsTarget.create(p, beta=5.0, mu=0.0)).epsilon(0.0)
        2.0
    """
    eps = target.beta * target.problem.utility_oscillation() / target.problem.n
    return PrivacyGuarantee.exponential_mechanism(eps, relation=target.problem.relation)


def gll_gaussian_dp(target: GibbsTarget) -> PrivacyGuarantee:
    r"""Gopi–Lee–Liu Gaussian DP for declared-convex losses (GLL Thm 4/13).

    If ``F_D`` and ``F_D'`` are convex, :math:`F + \tfrac{\mu}{2}\|x\|^2` is
    :math:`\mu`-strongly convex and :math:`F_D - F_{D'}` is :math:`2G/n`-Lipschitz
    (replace-one), so sampling :math:`\propto e^{-\beta(F + \mu\|x\|^2/2)}` is
    :math:`s`-GDP with :math:`s = (2G/n)\sqrt{\beta/\mu}`: the privacy curve of the
    Gaussian mechanism with noise multiplier ``1/s``. (GLL state ``G sqrt(k)/(n
    sqrt(mu))`` for ``f(., s) - f(., s')`` ``G``-Lipschitz; each ``f`` ``G``-Lipschitz
    gives ``2G``.) Its zCDP parameter ``s^2/2`` equals the LSI route with the
    Bakry–Émery constant; the Gaussian curve is tighter than converting that zCDP.

    Raises:
        dpsample.errors.MissingConstantError: ``G`` not declared.
        ValueError: ``mu == 0``.

    Examples:
        >>> import jax.numpy as jnp
        >>> import dpsample
        >>> from dpsample import Ball, Problem
        >>> from dpsample.samplers.gibbs import gll_gaussian_dp
        >>> from dpsample.samplers.target import GibbsTarget
        >>> p = Problem(lambda x, z: jnp.abs(x[0] - z), jnp.zeros(100),
        ...             Ball(1.0, dim=1), lipschitz=1.0)
        >>> g = gll_gaussian_dp(GibbsTarget.create(p, beta=100.0, mu=4.0))
        >>> round(g.zcdp_rho(), 12)  # s = 0.1
        0.005
    """
    g = validation.require_constant(
        "lipschitz", target.problem.lipschitz, needed_for="the GLL Gaussian-DP bound"
    )
    if target.mu <= 0:
        raise ValueError("the GLL Gaussian-DP bound needs mu > 0")
    s = 2.0 * g / target.problem.n * math.sqrt(target.beta / target.mu)
    return PrivacyGuarantee.gaussian(1.0 / s, relation=target.problem.relation)


class GibbsPrivacyReport(NamedTuple):
    """Every valid privacy bound of the exact Gibbs target, and why.

    Attributes:
        beta: inverse temperature.
        mu: regularisation.
        convex: whether the losses were declared convex.
        bounds: ``{name: PrivacyGuarantee}`` of the delta-free valid bounds
            (``"pure"``, ``"lsi_zcdp"``, ``"gll_gdp"``).
        lsi_constants: every available LSI constant bound.
        lsi_constant: the best ``(name, value)`` LSI bound, or ``None``.
        notes: ``{name: explanation}`` for every bound, including those not available.
        minami_inputs: ``(C, G, beta, n)`` for the printed Theorem 5.1, or ``None``.
    """

    beta: float
    mu: float
    convex: bool
    bounds: dict[str, PrivacyGuarantee]
    lsi_constants: GibbsLSIConstants
    lsi_constant: tuple[str, float] | None
    notes: dict[str, str]
    minami_inputs: tuple[float, float, float, int] | None

    def minami_epsilon(self, delta: float) -> float:
        """The printed Theorem 5.1 epsilon at ``delta`` (``inf`` if unavailable)."""
        if self.minami_inputs is None:
            return math.inf
        c, g, beta, n = self.minami_inputs
        return minami_epsilon(c, lipschitz=g, beta=beta, n=n, delta=delta)

    def valid_guarantees(self, delta: float) -> dict[str, PrivacyGuarantee]:
        """The valid bounds at ``delta``: :attr:`bounds` plus Minami where implied."""
        out = dict(self.bounds)
        if self.minami_inputs is not None and 0 < delta < 1:
            c, g, beta, n = self.minami_inputs
            if minami_is_implied(c, lipschitz=g, beta=beta, n=n, delta=delta):
                m = minami(c, lipschitz=g, beta=beta, n=n, delta=delta)
                if m is not None:
                    out["minami"] = m
        return out

    def epsilons(self, delta: float) -> dict[str, float]:
        """``{name: epsilon at delta}`` for every valid bound."""
        return {k: g.epsilon(delta) for k, g in self.valid_guarantees(delta).items()}

    def tightest(self, delta: float) -> tuple[str, PrivacyGuarantee]:
        """``(name, guarantee)`` of the valid bound with the least epsilon at delta."""
        guarantees = self.valid_guarantees(delta)
        eps = {k: g.epsilon(delta) for k, g in guarantees.items()}
        name = min(eps, key=eps.get)
        return name, guarantees[name]

    def epsilon(self, delta: float) -> float:
        """The smallest valid epsilon at ``delta``."""
        return min(self.epsilons(delta).values())

    def explain(self, delta: float) -> str:
        """A human-readable summary: each bound's epsilon, the tightest and why."""
        eps = self.epsilons(delta)
        name = min(eps, key=eps.get)
        lines = [
            f"Gibbs target beta={self.beta:g}, mu={self.mu:g}, "
            f"convex={self.convex}; epsilon at delta={delta:g}:"
        ]
        for k in sorted(eps, key=eps.get):
            lines.append(f"  {k:10s} {eps[k]:.6g}   {self.notes.get(k, '')}")
        for k, note in self.notes.items():
            if k not in eps:
                lines.append(f"  {k:10s} n/a        {note}")
        if self.lsi_constant is not None:
            lines.append(
                f"  best LSI constant: {self.lsi_constant[0]} = "
                f"{self.lsi_constant[1]:.6g}"
            )
        lines.append(f"tightest: {name}")
        return "\n".join(lines)


def target_privacy(target: GibbsTarget, *, convex: bool = False) -> GibbsPrivacyReport:
    r"""Every valid privacy bound of the exact target :math:`\pi_D`.

    Bounds (all from declared public constants, replace-one neighbours):

    * ``"pure"``: :func:`oscillation_bound`, always valid;
    * ``"lsi_zcdp"``: :func:`dpsample.privacy.lsi.lsi_zcdp` with the best LSI
      constant (Bakry–Émery if ``convex``, else Holley–Stroock / Lipschitz
      perturbation) and :math:`\Lambda = 2\beta G/n`; needs ``mu > 0`` and ``G``;
    * ``"gll_gdp"``: :func:`gll_gaussian_dp`, only for ``convex=True`` and ``mu > 0``;
    * ``"minami"``: seed 000 Theorem 5.1 as printed (erratum E2), added by
      :meth:`GibbsPrivacyReport.valid_guarantees` only at deltas where it is implied
      by the self-contained LSI tail bound.

    Privacy:
        Each bound is a guarantee for releasing one exact sample of
        :math:`\pi_D`; a sampler adds its own error (see :func:`gibbs`).

    Args:
        target: the :class:`~dpsample.samplers.target.GibbsTarget`.
        convex: a public declaration that every ``f(., z)`` is convex on ``K``.

    Returns:
        A :class:`GibbsPrivacyReport`.

    Raises:
        dpsample.errors.MissingConstantError: if no bound at all can be formed.

    Examples:
        >>> import jax.numpy as jnp
        >>> import dpsample
        >>> from dpsample import Ball, Problem
        >>> from dpsample.samplers.gibbs import target_privacy
        >>> from dpsample.samplers.target import GibbsTarget
        >>> p = Problem(lambda x, z: jnp.abs(x[0] - z), jnp.zeros(100),
        ...             Ball(1.0, dim=1), lipschitz=1.0)
        >>> r = target_privacy(GibbsTarget.create(p, beta=2.0, mu=0.25))
        >>> sorted(r.bounds), r.tightest(1e-6)[0]
        (['lsi_zcdp', 'pure'], 'pure')
        >>> r.epsilon(1e-6) <= 2 * 2.0 * 1.0 * 2.0 / 100
        True
    """
    if not isinstance(target, GibbsTarget):
        raise TypeError(f"Expected a GibbsTarget, got {type(target).__name__}")
    problem = target.problem
    beta, mu = float(target.beta), float(target.mu)
    bounds: dict[str, PrivacyGuarantee] = {}
    notes: dict[str, str] = {}
    try:
        bounds["pure"] = oscillation_bound(target)
        notes["pure"] = "beta*osc/n bounded range: always valid (no LSI, no convexity)"
    except MissingConstantError:
        notes["pure"] = "needs an oscillation bound (G with a Ball, B, or oscillation)"

    consts = gibbs_lsi_constants(problem, beta=beta, mu=mu, convex=convex)
    best = consts.best()
    g = problem.lipschitz
    minami_inputs = None
    if best is None or g is None:
        why = "mu = 0" if mu == 0 else "needs the Lipschitz constant G"
        notes["lsi_zcdp"] = f"LSI route unavailable: {why}"
        notes["minami"] = f"Theorem 5.1 unavailable: {why}"
    else:
        lam = 2.0 * beta * g / problem.n
        zc = lsi_zcdp(best[1], log_density_lipschitz=lam, relation=problem.relation)
        if zc is None:
            notes["lsi_zcdp"] = f"LSI constant ({best[0]}) overflows: vacuous"
        else:
            bounds["lsi_zcdp"] = zc
            notes["lsi_zcdp"] = (
                f"C*Lambda^2/2-zCDP with C={best[1]:.4g} ({best[0]}), Lambda=2 beta G/n"
            )
        if math.isfinite(best[1]):
            minami_inputs = (best[1], g, beta, problem.n)
        notes["minami"] = (
            "seed 000 Thm 5.1 as printed (E2); used only where implied by the LSI "
            "tail bound"
        )
    if convex and mu > 0 and g is not None:
        bounds["gll_gdp"] = gll_gaussian_dp(target)
        notes["gll_gdp"] = "Gopi-Lee-Liu Gaussian DP (declared-convex losses)"
    else:
        notes["gll_gdp"] = "needs declared-convex losses, mu > 0 and G"
    if not bounds and minami_inputs is None:
        raise MissingConstantError(
            "no privacy bound of the Gibbs target can be formed from the declared "
            "constants; declare lipschitz=G (with a Ball), loss_range=B or oscillation"
        )
    return GibbsPrivacyReport(
        beta, mu, bool(convex), bounds, consts, best, notes, minami_inputs
    )


# --------------------------------------------------------------------------------------
# calibration


def _ball(problem: Problem) -> Ball:
    if not isinstance(problem, Problem):
        raise TypeError(f"Expected a Problem, got {type(problem).__name__}")
    if not isinstance(problem.domain, Ball):
        raise ValueError("the Gibbs mechanism needs a Ball domain K")
    return problem.domain


def default_mu(problem: Problem, beta: float) -> float:
    """Theorem 5.6's ``mu = d / (D^2 beta)`` (so ``beta mu = d / D^2``)."""
    ball = _ball(problem)
    return problem.dim / (ball.diameter**2 * beta)


def empirical_risk_bound(problem: Problem, *, beta: float, mu: float) -> float | None:
    r"""Explicit Lemma 5.3 bound on the excess empirical risk of the exact target.

    With :math:`\tilde G = G + \mu R_K` (:math:`R_K = \max_K\|x\|`, erratum E22) and
    :math:`\beta\tilde G D \ge d` (spec 000 section 3.4):

    .. math::
        \mathbb{E}_{\pi}F_D - \min_K F_D \le \frac{d}{\beta}\Big(1 +
        \log\frac{\beta\tilde G D}{d}\Big) + \frac{1}{\beta}
        + \frac{\mu}{2}R_K^2 .

    Returns ``None`` when ``beta G~ D < d`` (the lemma is vacuous there, E23) or ``G``
    is not declared.

    Examples:
        >>> import jax.numpy as jnp
        >>> import dpsample
        >>> from dpsample import Ball, Problem
        >>> from dpsample.samplers.gibbs import empirical_risk_bound
        >>> p = Problem(lambda x, z: jnp.abs(x[0] - z), jnp.zeros(10),
        ...             Ball(1.0, dim=1), lipschitz=1.0)
        >>> round(empirical_risk_bound(p, beta=50.0, mu=0.0), 4)
        0.1321
        >>> empirical_risk_bound(p, beta=0.1, mu=0.0) is None
        True
    """
    ball = _ball(problem)
    beta = validation.positive("beta", beta)
    mu = validation.nonnegative("mu", mu)
    if problem.lipschitz is None:
        return None
    r_k = ball.max_norm
    g_tilde = problem.lipschitz + mu * r_k
    d, diam = problem.dim, ball.diameter
    if beta * g_tilde * diam < d:
        return None
    return (
        d / beta * (1.0 + math.log(beta * g_tilde * diam / d))
        + 1.0 / beta
        + 0.5 * mu * r_k**2
    )


class GibbsCalibration(NamedTuple):
    """The outcome of :func:`calibrate` / :func:`theorem_5_6`.

    Attributes:
        beta: inverse temperature.
        mu: regularisation ``d / (D^2 beta)``.
        epsilon: the tightest valid epsilon of the exact target at ``delta``
            (``<= `` the target epsilon for :func:`calibrate`).
        delta: the delta it was computed at.
        bound: the name of the tightest valid bound.
        binding: ``"privacy"`` (the epsilon target limits beta) or ``"cap"`` (the
            generalisation/mixing cap ``beta G D <= c_gen log n`` does).
        preset: the preset used.
        beta_cap: the cap on beta (``None`` when disabled).
        c_beta: ``beta G D sqrt(log(1/delta)) / (epsilon log(n d))``, Theorem 5.6's
            O(1) constant at this beta.
        risk_bound: :func:`empirical_risk_bound` at ``(beta, mu)`` (``None`` when
            vacuous).
        report: the :class:`GibbsPrivacyReport` at ``(beta, mu)``.
    """

    beta: float
    mu: float
    epsilon: float
    delta: float
    bound: str
    binding: str
    preset: str
    beta_cap: float | None
    c_beta: float | None
    risk_bound: float | None
    report: GibbsPrivacyReport


def _report_at(problem: Problem, beta: float, convex: bool) -> GibbsPrivacyReport:
    target = GibbsTarget.create(problem, beta=beta, mu=default_mu(problem, beta))
    return target_privacy(target, convex=convex)


def _preset_epsilon(
    problem: Problem, beta: float, delta: float, convex: bool, preset: str
) -> float:
    report = _report_at(problem, beta, convex)
    if preset == "tightest":
        return report.epsilon(delta)
    if preset == "budget":
        if "pure" not in report.bounds:
            raise MissingConstantError("preset 'budget' needs an oscillation bound")
        return report.bounds["pure"].epsilon(0.0)
    return report.minami_epsilon(delta)  # "paper"


def _largest_beta(pred: Any, hi: float, rtol: float = 1e-7) -> float:
    """Largest ``beta`` in ``(0, hi]`` with ``pred(beta)`` (``pred`` monotone)."""
    if pred(hi):
        return hi
    lo = hi
    while not pred(lo):
        lo /= 4.0
        if lo < hi * 1e-30:
            raise ValueError("no inverse temperature meets the privacy target")
    for _ in range(200):
        if hi / lo - 1.0 <= rtol:
            break
        mid = math.sqrt(lo * hi)
        if pred(mid):
            lo = mid
        else:
            hi = mid
    return lo


def _scale(problem: Problem) -> float:
    """``G D`` (or ``osc / 2``) for the beta cap and Theorem 5.6's parametrisation."""
    ball = _ball(problem)
    if problem.lipschitz is not None:
        return problem.lipschitz * ball.diameter
    return problem.utility_oscillation() / 2.0


def calibrate(
    problem: Problem,
    *,
    epsilon: float,
    delta: float,
    convex: bool = False,
    preset: str = "tightest",
    c_gen: float | None = C_GEN,
) -> GibbsCalibration:
    r"""The largest ``beta`` (with ``mu = d/(D^2 beta)``) meeting ``(epsilon, delta)``.

    The presets (spec 000 section 3.6 and the defaults table section 6.2) differ in
    the bound that limits ``beta``:

    * ``"tightest"`` (default): the minimum over every *valid* bound of
      :func:`target_privacy` is ``<= epsilon`` at ``delta``;
    * ``"budget"``: the pure bound ``beta osc / n <= epsilon``;
    * ``"paper"``: the printed Theorem 5.1 with the Holley–Stroock constant,
      :math:`(2\beta G/n)\, e^{\beta\,osc_F/2} (D/\sqrt d) \sqrt{1 + 2\log(1/\delta)}
      \le \varepsilon` (Theorem 5.6's privacy proof).

    Every preset is also capped by ``beta G D <= c_gen log n`` (``c_gen = 1/2``:
    :data:`C_GEN`), which keeps the LSI constant ``e^{beta G D} D^2/d`` (mixing time,
    generalisation) polynomial; pass ``c_gen=None`` to disable it. Every returned
    ``beta`` additionally satisfies the ``"tightest"`` condition, so the claimed
    epsilon (the minimum over valid bounds) is at most the target. ``epsilon`` is
    non-decreasing in ``beta`` for every bound, so bisection finds the largest one.

    Args:
        problem: the :class:`~dpsample.problem.Problem` (Ball domain).
        epsilon: target epsilon, > 0.
        delta: target delta, in (0, 1).
        convex: public declaration that the losses are convex.
        preset: ``"tightest"``, ``"budget"`` or ``"paper"``.
        c_gen: the cap constant, > 0, or ``None``.

    Returns:
        A :class:`GibbsCalibration`.

    Raises:
        ValueError: invalid inputs, or a preset that needs a missing constant.

    Examples:
        >>> import jax.numpy as jnp
        >>> import dpsample
        >>> from dpsample import Ball, Problem
        >>> from dpsample.samplers.gibbs import calibrate
        >>> p = Problem(lambda x, z: jnp.abs(x[0] - z), jnp.zeros(1000),
        ...             Ball(1.0, dim=1), lipschitz=1.0)
        >>> cal = calibrate(p, epsilon=1.0, delta=1e-6, c_gen=None)
        >>> round(cal.beta, 3), cal.bound, cal.binding  # beta * 2GD / n = epsilon
        (250.0, 'pure', 'privacy')
        >>> calibrate(p, epsilon=1.0, delta=1e-6).binding  # beta G D <= log(n) / 2
        'cap'
    """
    target_eps = validation.positive("epsilon", epsilon)
    dlt = validation.delta_in_open_unit(delta)
    if preset not in PRESETS:
        raise ValueError(f"Expected preset in {PRESETS}, got {preset!r}")
    _ball(problem)
    if preset == "paper" and problem.lipschitz is None:
        validation.require_constant(
            "lipschitz", None, needed_for="the 'paper' preset (Theorem 5.1)"
        )
    scale = _scale(problem)
    beta_cap = None
    if c_gen is not None:
        c_gen = validation.positive("c_gen", c_gen)
        beta_cap = c_gen * math.log(max(problem.n, 2)) / scale

    def ok_tightest(beta: float) -> bool:
        return _preset_epsilon(problem, beta, dlt, convex, "tightest") <= target_eps

    def ok(beta: float) -> bool:
        if _preset_epsilon(problem, beta, dlt, convex, preset) > target_eps:
            return False
        return preset == "tightest" or ok_tightest(beta)

    # Upper end of the search: the cap, else a beta well past the pure bound's limit
    # (a tighter bound can allow more; grow until the condition fails).
    if beta_cap is not None:
        hi = beta_cap
    else:
        hi = target_eps * problem.n / scale
        while ok(hi) and hi < 1e12:
            hi *= 4.0
    beta = _largest_beta(ok, hi)
    binding = "cap" if beta_cap is not None and beta >= beta_cap else "privacy"
    mu = default_mu(problem, beta)
    report = _report_at(problem, beta, convex)
    name, _ = report.tightest(dlt)
    claimed = report.epsilon(dlt)
    if claimed > target_eps:  # final check (never return an overshoot)
        raise ValueError("calibration failed its final check")  # pragma: no cover
    d_term = math.log(problem.n * problem.dim)
    c_beta = (
        beta * scale * math.sqrt(math.log(1.0 / dlt)) / (target_eps * d_term)
        if d_term > 0
        else None
    )
    return GibbsCalibration(
        beta=beta,
        mu=mu,
        epsilon=claimed,
        delta=dlt,
        bound=name,
        binding=binding,
        preset=preset,
        beta_cap=beta_cap,
        c_beta=c_beta,
        risk_bound=empirical_risk_bound(problem, beta=beta, mu=mu),
        report=report,
    )


def theorem_5_6(
    problem: Problem,
    *,
    epsilon: float,
    delta: float,
    c_beta: float | None = None,
    c_gen: float | None = C_GEN,
) -> GibbsCalibration:
    r"""Seed 000 Theorem 5.6's setting with its O(1) constant named.

    .. math::
        \beta = c_\beta\,\frac{\varepsilon\log(nd)}{GD\sqrt{\log(1/\delta)}},\qquad
        \mu = \frac{d}{D^2\beta}.

    With ``c_beta=None`` (the defaults table's "paper" preset) ``c_beta`` is the largest
    value for which the printed Theorem 5.1 bound with the Holley–Stroock constant is
    ``<= epsilon`` (and ``beta G D <= c_gen log n``): this is :func:`calibrate` with
    ``preset="paper"``. With an explicit ``c_beta`` the resulting ``beta`` is used as
    is and the returned ``epsilon`` is the tightest *valid* bound at it, which may
    exceed the target (check it). The paper's risk bound is meaningful only for
    ``d < beta G D`` (errata E22/E23); ``risk_bound`` is ``None`` otherwise.

    Examples:
        >>> import jax.numpy as jnp
        >>> import dpsample
        >>> from dpsample import Ball, Problem
        >>> from dpsample.samplers.gibbs import theorem_5_6
        >>> p = Problem(lambda x, z: jnp.abs(x[0] - z), jnp.zeros(1000),
        ...             Ball(1.0, dim=1), lipschitz=1.0)
        >>> cal = theorem_5_6(p, epsilon=0.5, delta=1e-6, c_beta=1.0)
        >>> round(cal.beta * 2.0, 4)  # beta G D = eps log(n d) / sqrt(log(1/delta))
        0.9292
    """
    if c_beta is None:
        return calibrate(
            problem, epsilon=epsilon, delta=delta, preset="paper", c_gen=c_gen
        )
    eps = validation.positive("epsilon", epsilon)
    dlt = validation.delta_in_open_unit(delta)
    c_beta = validation.positive("c_beta", c_beta)
    g = validation.require_constant(
        "lipschitz", problem.lipschitz, needed_for="Theorem 5.6"
    )
    ball = _ball(problem)
    scale = g * ball.diameter
    beta = (
        c_beta
        * eps
        * math.log(problem.n * problem.dim)
        / (scale * math.sqrt(math.log(1.0 / dlt)))
    )
    beta = validation.positive("beta", beta)
    beta_cap = None
    binding = "privacy"
    if c_gen is not None:
        beta_cap = validation.positive("c_gen", c_gen) * math.log(problem.n) / scale
        if beta > beta_cap:
            beta, binding = beta_cap, "cap"
    mu = default_mu(problem, beta)
    report = _report_at(problem, beta, False)
    name, _ = report.tightest(dlt)
    return GibbsCalibration(
        beta=beta,
        mu=mu,
        epsilon=report.epsilon(dlt),
        delta=dlt,
        bound=name,
        binding=binding,
        preset="paper",
        beta_cap=beta_cap,
        c_beta=c_beta,
        risk_bound=empirical_risk_bound(problem, beta=beta, mu=mu),
        report=report,
    )


# --------------------------------------------------------------------------------------
# the top level


def initial_point(rng_key: PRNGKey, target: GibbsTarget) -> Array:
    r"""A draw of :math:`\pi_0 \propto e^{-\beta\mu\|x\|^2/2}` on ``K`` (public).

    For ``mu > 0`` this is the exact restricted Gaussian ``N(0, I/(beta mu)) ∩ K``
    (``N(0, (D^2/d) I) ∩ K`` for Theorem 5.6's ``mu``); for ``mu = 0`` it is uniform
    on ``K``. It reads no private data.
    """
    ball = target.problem.domain
    if target.mu > 0:
        std = 1.0 / math.sqrt(target.beta * target.mu)
        return _restricted_sample(rng_key, jnp.zeros(target.problem.dim), std, ball)
    return ball.sample_uniform(rng_key, 1)[0]


_restricted_sample = jax.jit(
    restricted_gaussian.sample, static_argnames=("ball", "num")
)


def _gaussian_delta(sigma: float, epsilon: float) -> float:
    """Exact delta(epsilon) of the Gaussian mechanism with noise multiplier sigma."""
    a = 1.0 / (2.0 * sigma)
    return float(
        stats.norm.cdf(a - epsilon * sigma)
        - math.exp(epsilon) * stats.norm.cdf(-a - epsilon * sigma)
    )


def gaussian_noise_multiplier(*, epsilon: float, delta: float) -> float:
    """Smallest Gaussian noise multiplier that is ``(epsilon, delta)``-DP.

    Bisection on the exact Gaussian privacy curve (Balle and Wang 2018), then a final
    check through :class:`~dpsample.privacy.PrivacyGuarantee` (dp_accounting's
    pessimistic PLD), raising the value by 0.1% steps until that check passes.

    Examples:
        >>> from dpsample.samplers.gibbs import gaussian_noise_multiplier
        >>> round(gaussian_noise_multiplier(epsilon=1.0, delta=1e-5), 2)
        3.73
    """
    eps = validation.positive("epsilon", epsilon)
    dlt = validation.delta_in_open_unit(delta)
    lo, hi = 1e-3, 1.0
    while _gaussian_delta(hi, eps) > dlt:
        lo, hi = hi, hi * 2.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if _gaussian_delta(mid, eps) > dlt:
            lo = mid
        else:
            hi = mid
    sigma = hi * (1.0 + 1e-6)
    for _ in range(100):
        if PrivacyGuarantee.gaussian(sigma).epsilon(dlt) <= eps:
            return sigma
        sigma *= 1.001
    raise ValueError("Gaussian calibration failed its final check")  # pragma: no cover


def _run_chain(
    rng_key: PRNGKey,
    kernel: Any,
    state: Any,
    target: GibbsTarget,
    step_size: float,
    num_steps: int,
) -> Any:
    """``num_steps`` kernel steps under one ``jit``/``lax.scan``; the last state."""

    @jax.jit
    def run(key: PRNGKey, state: Any) -> Any:
        def body(s: Any, k: PRNGKey) -> tuple[Any, None]:
            new, _ = kernel(k, s, target, step_size)
            return new, None

        final, _ = jax.lax.scan(body, state, jax.random.split(key, num_steps))
        return final

    return run(rng_key, state)


def gibbs(
    rng_key: PRNGKey,
    problem: Problem,
    *,
    epsilon: float,
    delta: float,
    method: str = "proximal",
    convex: bool = False,
    preset: str = "tightest",
    c_gen: float | None = C_GEN,
    beta: float | None = None,
    mu: float | None = None,
    step_size: float | None = None,
    num_steps: int | None = None,
    tv_fraction: float = TV_FRACTION,
    tv_bound: float | None = None,
    max_steps: int = MAX_LANGEVIN_STEPS,
    allow_unproven_schedule: bool = False,
    max_proximal_steps: int = MAX_PROXIMAL_STEPS,
    **proximal_options: Any,
) -> PrivateResult:
    r"""Release one approximate sample of the regularised Gibbs target, privately.

    1. ``(beta, mu)``: :func:`calibrate` at ``(epsilon, (1 - tv_fraction) delta)``
       (``mu = d/(D^2 beta)``), or the public ``beta`` / ``mu`` given.
    2. A public initial point :func:`initial_point`.
    3. The chosen sampler, run for a number of steps fixed by public values only:

       * ``"proximal"`` (default): the alternating proximal sampler with the
         Gopi–Lee–Liu rejection RGO (:mod:`dpsample.samplers.proximal`), scheduled by
         ``proximal.schedule`` for TV error ``tau = tv_fraction delta / (1 +
         e^epsilon)`` with the best LSI constant. Works for non-smooth losses.
       * ``"langevin"``: projected Langevin (:mod:`dpsample.samplers.langevin`) with
         per-example gradients clipped to ``G``; the number of steps is the largest
         the budget allows (at most ``max_steps``) unless ``num_steps`` is given.
       * ``"mala"``: MALA (:mod:`dpsample.samplers.mala`); **refused** unless the
         caller declares a public ``tv_bound`` (see Privacy).

    Privacy:
        Replace-one neighbours; all sensitivities come from declared constants.

        * ``"proximal"``: the exact target's tightest valid bound
          (:func:`target_privacy`) with TV slack ``tv_total`` of the schedule
          (mixing error + ``T delta_inner`` + the fixed-budget truncation): an exact
          ``(eps, delta_0)``-DP mechanism sampled within TV ``tau`` of every
          ``pi_D`` is ``(eps, delta_0 + (1 + e^eps) tau)``-DP (spec 000 section 3.7,
          erratum E25).
        * ``"langevin"``: the trajectory bound
          :func:`dpsample.samplers.langevin.trajectory_guarantee`
          (``alpha K h beta^2 G^2 / n^2`` Rényi DP); it needs no convexity, and it
          does not use the target (the projected chain is biased).
        * ``"mala"``: no bound of its own (see :mod:`dpsample.samplers.mala`); with a
          declared ``tv_bound`` the exact target's guarantee with that TV slack is
          returned; it rests on the caller's declaration, which
          ``privacy.assumptions`` (and ``info["privacy_rests_on"]``) state.

        The result's guarantee is checked to be ``(epsilon, delta)``-DP before any
        private computation; otherwise a ``ValueError`` is raised. ``info`` holds
        public values only (no acceptance counts or other data-dependent counters;
        use :func:`dpsample.samplers.diagnostics.run` for those, non-privately).

    Args:
        rng_key: PRNG key (consumed).
        problem: the :class:`~dpsample.problem.Problem` (Ball domain).
        epsilon: target epsilon, > 0.
        delta: target delta, in (0, 1).
        method: ``"proximal"``, ``"langevin"`` or ``"mala"``.
        convex: public declaration that the losses are convex.
        preset: calibration preset (:func:`calibrate`).
        c_gen: calibration cap constant (:func:`calibrate`), or ``None``.
        beta: a public inverse temperature (skips calibration).
        mu: a public regularisation (default ``d/(D^2 beta)``).
        step_size: sampler step (default: the proximal schedule's, or
            :func:`dpsample.samplers.langevin.default_step_size`).
        num_steps: sampler steps (default: the proximal schedule's, the budget's for
            Langevin, :data:`DEFAULT_MALA_STEPS` for MALA).
        tv_fraction: share of ``delta`` given to the sampler's TV error, in (0, 1).
        tv_bound: MALA only: a public TV bound the caller vouches for.
        max_steps: the most Langevin steps run by default.
        allow_unproven_schedule: proximal only: accept a schedule whose step
            constant exceeds GLL's proof constant (``schedule.proven`` false, e.g.
            ``c_step=proximal.C_STEP_PRACTICAL``). Its TV slack is then nominal, not a
            theorem, and the guarantee's ``assumptions`` (and
            ``info["privacy_rests_on"]``) say so. Off by default.
        max_proximal_steps: refuse (``ValueError``, before any private
            computation) a proximal schedule longer than this.
        **proximal_options: passed to ``proximal.schedule`` (e.g. ``c_step``,
            ``num_trials``, ``num_levels``).

    Returns:
        :class:`~dpsample.privacy.PrivateResult` with ``value`` the point (shape
        ``(d,)``), ``privacy`` the guarantee and ``info`` a dict of public values
        (``method``, ``beta``, ``mu``, ``bound``, ``preset``, ``binding``,
        ``step_size``, ``num_steps``, ``tv_slack``, ``schedule`` ...).

    Raises:
        ValueError: invalid inputs, an unknown method, MALA without ``tv_bound``, or
            a configuration whose guarantee exceeds ``(epsilon, delta)``.
        dpsample.errors.MissingConstantError: a constant the route needs is missing.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> import dpsample
        >>> from dpsample import Ball, Problem
        >>> from dpsample.samplers.gibbs import gibbs
        >>> p = Problem(lambda x, z: jnp.abs(x[0] - z), jnp.zeros(50),
        ...             Ball(1.0, dim=1), lipschitz=1.0)
        >>> res = gibbs(jax.random.key(0), p, epsilon=1.0, delta=1e-5,
        ...             method="langevin", max_steps=200)
        >>> res.value.shape, res.info["num_steps"], res.privacy.epsilon(1e-5) <= 1.0
        ((1,), 200, True)

    References:
        A. Ganesh, D. Liu, S. Oh and A. Thakurta, `Private (stochastic) non-convex
        optimization revisited <https://arxiv.org/abs/2302.09699>`_, 2023 (Sec. 5.1,
        Thm 5.6, 5.7). S. Gopi, Y. T. Lee and D. Liu, `Private convex optimization
        via exponential mechanism <https://arxiv.org/abs/2203.00263>`_, COLT 2022.
        Y. Chen, S. Chewi, A. Salim and A. Wibisono, `Improved analysis for a
        proximal algorithm for sampling <https://arxiv.org/abs/2202.06386>`_, COLT
        2022.
    """
    # ---- public validation and planning, before any private computation ----------
    target_eps = validation.positive("epsilon", epsilon)
    dlt = validation.delta_in_open_unit(delta)
    if method not in METHODS:
        raise ValueError(f"Expected method in {METHODS}, got {method!r}")
    frac = validation.delta_in_open_unit(tv_fraction, name="tv_fraction")
    _ball(problem)
    max_steps = validation.positive_int("max_steps", max_steps)
    if proximal_options and method != "proximal":
        raise TypeError(
            f"unexpected options {sorted(proximal_options)} for method {method!r}"
        )
    if tv_bound is not None and method != "mala":
        raise ValueError("tv_bound is only for method='mala'")
    if method == "mala" and tv_bound is None:
        raise ValueError(
            "MALA has no privacy bound of its own (its accept/reject step reads the "
            "data; no TV bound to the target is available for this setting): pass "
            "a public tv_bound you vouch for, or use method='proximal' or "
            "'langevin'"
        )
    delta_target = (1.0 - frac) * dlt

    if beta is None:
        if mu is not None:
            raise ValueError("mu without beta: pass both, or neither (calibration)")
        cal = calibrate(
            problem,
            epsilon=target_eps,
            delta=delta_target,
            convex=convex,
            preset=preset,
            c_gen=c_gen,
        )
        beta_v, mu_v, binding = cal.beta, cal.mu, cal.binding
    else:
        beta_v = validation.positive("beta", beta)
        mu_v = default_mu(problem, beta_v) if mu is None else mu
        binding = "given"
    target = GibbsTarget.create(problem, beta=beta_v, mu=mu_v)
    report = target_privacy(target, convex=convex)
    bound_name, exact = report.tightest(delta_target)
    info: dict[str, Any] = {
        "method": method,
        "beta": beta_v,
        "mu": mu_v,
        "preset": preset if beta is None else None,
        "binding": binding,
        "convex": bool(convex),
        "n": problem.n,
        "dim": problem.dim,
    }

    if method == "proximal":
        tau = frac * dlt / (1.0 + math.exp(target_eps))
        if report.lsi_constant is None:
            raise ValueError(
                "the proximal schedule needs an LSI constant (mu > 0 and G declared)"
            )
        if step_size is not None or num_steps is not None:
            raise ValueError(
                "the proximal route takes step_size/num_steps from its schedule (its "
                "TV bound depends on them); tune it through proximal options"
            )
        sched = proximal.schedule(
            target,
            tv_target=tau,
            lsi_constant=report.lsi_constant[1],
            convex=convex,
            **proximal_options,
        )
        h, steps = sched.step_size, sched.num_steps
        max_prox = validation.positive_int("max_proximal_steps", max_proximal_steps)
        if steps > max_prox:
            raise ValueError(
                f"the proximal schedule needs {steps} steps (step size {h:.3g}, LSI "
                f"constant {report.lsi_constant[1]:.3g}) for TV {tau:.3g}, more than "
                f"max_proximal_steps={max_prox}: lower beta, declare convex=True if "
                "the losses are convex, use c_step=proximal.C_STEP_PRACTICAL with "
                "allow_unproven_schedule=True, or raise max_proximal_steps"
            )
        if not sched.proven:
            if not allow_unproven_schedule:
                raise ValueError(
                    f"the proximal schedule with c_step={sched.c_step:g} exceeds GLL's "
                    "proof constant, so its TV bound is not a theorem; pass "
                    "allow_unproven_schedule=True to run it anyway (the guarantee is "
                    "then labelled nominal)"
                )
            info["privacy_rests_on"] = (
                "a nominal TV bound: the step constant exceeds GLL's proof constant"
            )
        privacy = exact.with_tv_slack(sched.tv_total)
        if not sched.proven:
            privacy = privacy.assuming(
                f"the proximal schedule's TV bound {sched.tv_total:.3g} with "
                f"c_step = {sched.c_step:g} (above GLL's proof constant) holds: "
                "nominal, not proven"
            )
        info.update(
            bound=bound_name,
            step_size=float(h),
            num_steps=int(steps),
            tv_slack=float(sched.tv_total),
            schedule=sched._asdict(),
            lsi_constant=report.lsi_constant,
        )
        kernel = proximal.build_kernel(
            num_trials=sched.num_trials, num_levels=sched.num_levels
        )
        make_state = proximal.init
    elif method == "langevin":
        g = validation.require_constant(
            "lipschitz", problem.lipschitz, needed_for="the Langevin route"
        )
        h = (
            langevin.default_step_size(target)
            if step_size is None
            else langevin.check_step_size(target, step_size)
        )
        if num_steps is None:
            nm = gaussian_noise_multiplier(epsilon=target_eps, delta=dlt)
            total_time = problem.n**2 / (2.0 * (beta_v * g * nm) ** 2)
            steps = min(max_steps, int(math.floor(total_time / h)))
            if steps < 1:
                raise ValueError(
                    f"the budget allows a total Langevin time {total_time:.3g} < one "
                    f"step of size {h:.3g}; reduce step_size or beta"
                )
        else:
            steps = validation.positive_int("num_steps", num_steps)
        privacy = langevin.trajectory_guarantee(target, step_size=h, num_steps=steps)
        info.update(
            bound="langevin_trajectory",
            step_size=float(h),
            num_steps=int(steps),
            tv_slack=0.0,
            total_time=float(h * steps),
            clip_norm=g,
        )
        kernel = langevin.build_kernel(clip_norm=g)
        make_state = langevin.init
    else:  # mala
        tv = validation.probability("tv_bound", tv_bound)
        h = (
            langevin.default_step_size(target)
            if step_size is None
            else langevin.check_step_size(target, step_size)
        )
        steps = (
            DEFAULT_MALA_STEPS
            if num_steps is None
            else validation.positive_int("num_steps", num_steps)
        )
        privacy = exact.with_tv_slack(tv).assuming(
            f"MALA is within total variation {tv:g} of the Gibbs target (tv_bound "
            "declared by the caller; MALA has no bound of its own)"
        )
        info.update(
            bound=bound_name,
            step_size=float(h),
            num_steps=int(steps),
            tv_slack=tv,
            privacy_rests_on="the caller's declared tv_bound (MALA has no bound of "
            "its own)",
        )
        kernel = mala.build_kernel()
        make_state = mala.init

    claimed = privacy.epsilon(dlt)
    if not claimed <= target_eps * (1.0 + 1e-9):
        raise ValueError(
            f"the {method} route's guarantee is epsilon={claimed:.6g} at "
            f"delta={dlt:g}, above the target {target_eps:g}; adjust beta, the steps "
            "or tv_fraction"
        )
    info["epsilon"] = claimed
    info["delta"] = dlt

    # ---- private computation ------------------------------------------------------
    init_key, run_key = jax.random.split(rng_key)
    x0 = initial_point(init_key, target)
    state = make_state(x0, target)
    final = _run_chain(run_key, kernel, state, target, float(h), int(steps))
    value = jnp.asarray(final.position, jnp.float64)
    return PrivateResult(value, privacy, info)


precision.scope_public(globals())
