r"""Calibration of the regularised Gibbs target: ``(epsilon, delta)`` to ``(beta, mu)``.

The target is ``pi_D(x) ∝ exp(-beta (F_D(x) + mu/2 ||x||^2))`` on a ball ``K``
(seed 000 Sec. 5.1). :func:`calibrate_gibbs` finds the largest ``beta`` (with
Theorem 5.6's ``mu = d/(D^2 beta)``) whose tightest valid bound
(:func:`~dpsample.samplers.gibbs_privacy.target_privacy`) meets ``(epsilon, delta)``,
under the presets of spec 000 section 3.6 and the cap ``beta G D <= c_gen log n``;
:func:`theorem_5_6` is the paper's setting with its constant named;
:func:`empirical_risk_bound` is Lemma 5.3's explicit excess-risk bound; and
:func:`gaussian_noise_to_sensitivity` calibrates the Gaussian mechanism that sets the
projected-Langevin route's total time. Every function reads public values only (a
:class:`~dpsample.problem.Problem` or its :class:`~dpsample.problem.ProblemSpec`).
"""

from __future__ import annotations

import functools
import math
from typing import Any, NamedTuple

import dp_accounting

from dpsample._src import precision, validation
from dpsample.domains import Ball
from dpsample.errors import MissingConstantError
from dpsample.nets.ball import problem_ball
from dpsample.privacy.calibration import calibrate, coarse_epsilon
from dpsample.privacy.guarantee import PrivacyGuarantee
from dpsample.problem import Problem, ProblemSpec
from dpsample.samplers import langevin
from dpsample.samplers.gibbs_privacy import GibbsPrivacyReport, target_privacy
from dpsample.samplers.target import GibbsTarget

__all__ = [
    "C_GEN",
    "C_GEN_ROUTE_DEFAULT",
    "GIBBS_PRESETS",
    "GibbsCalibration",
    "LangevinCalibration",
    "calibrate_gibbs",
    "calibrate_langevin",
    "default_mu",
    "empirical_risk_bound",
    "gaussian_noise_to_sensitivity",
    "gibbs_ball",
    "theorem_5_6",
]

#: Generalisation/mixing cap of the defaults table: ``beta G D <= C_GEN log n``.
C_GEN = 0.5
#: ``c_gen`` as the routes take it by default: :data:`C_GEN` where the route's
#: guarantee rests on the cap (proximal, MALA), no cap on projected Langevin.
C_GEN_ROUTE_DEFAULT = "route"
#: Calibration presets (spec 000 section 3.6).
GIBBS_PRESETS = ("tightest", "budget", "paper")
# gaussian_noise_to_sensitivity spends at least 1 - _GAUSSIAN_REFINE_RTOL of its
# epsilon (the noise is within about 4e-6 of the exact minimum, relative).
_GAUSSIAN_REFINE_RTOL = 1e-5


# --------------------------------------------------------------------------------------
# calibration


def gibbs_ball(problem: Problem | ProblemSpec) -> Ball:
    """The Ball domain ``K`` of a problem (or spec) for the Gibbs mechanism.

    Raises:
        TypeError: ``problem`` is neither a Problem nor a ProblemSpec.
        ValueError: The domain is not a Ball.

    Examples:
        >>> import jax.numpy as jnp
        >>> from dpsample import Ball, Problem
        >>> from dpsample.samplers.gibbs_calibration import gibbs_ball
        >>> p = Problem(lambda x, z: jnp.abs(x[0] - z), jnp.zeros(3),
        ...             Ball(2.0, dim=1), lipschitz=1.0)
        >>> gibbs_ball(p.spec).radius
        2.0
    """
    if not isinstance(problem, Problem | ProblemSpec):
        raise TypeError(f"Expected a Problem, got {type(problem).__name__}")
    return problem_ball(problem, "the Gibbs mechanism")


def default_mu(problem: Problem | ProblemSpec, beta: float) -> float:
    """Theorem 5.6's ``mu = d / (D^2 beta)`` (so ``beta mu = d / D^2``)."""
    ball = gibbs_ball(problem)
    return problem.dim / (ball.diameter**2 * beta)


def empirical_risk_bound(
    problem: Problem | ProblemSpec, *, beta: float, mu: float
) -> float | None:
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
        >>> from dpsample.samplers.gibbs_calibration import empirical_risk_bound
        >>> p = Problem(lambda x, z: jnp.abs(x[0] - z), jnp.zeros(10),
        ...             Ball(1.0, dim=1), lipschitz=1.0)
        >>> round(empirical_risk_bound(p, beta=50.0, mu=0.0), 4)
        0.1321
        >>> empirical_risk_bound(p, beta=0.1, mu=0.0) is None
        True
    """
    ball = gibbs_ball(problem)
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
    """The outcome of :func:`calibrate_gibbs` / :func:`theorem_5_6`.

    Attributes:
        beta: inverse temperature.
        mu: regularisation ``d / (D^2 beta)``.
        epsilon: the tightest valid epsilon of the exact target at ``delta``
            (``<= `` the target epsilon for :func:`calibrate_gibbs`).
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


def _report_at(
    problem: Problem | ProblemSpec,
    beta: float,
    convex: bool,
    enforced_oscillation: float | None = None,
) -> GibbsPrivacyReport:
    target = GibbsTarget.create(problem, beta=beta, mu=default_mu(problem, beta))
    return target_privacy(
        target, convex=convex, enforced_oscillation=enforced_oscillation
    )


def _preset_epsilon(
    problem: Problem | ProblemSpec,
    beta: float,
    delta: float,
    convex: bool,
    preset: str,
    enforced_oscillation: float | None = None,
) -> float:
    report = _report_at(problem, beta, convex, enforced_oscillation)
    if preset == "tightest":
        return report.epsilon(delta)
    if preset == "budget":
        if "pure" not in report.bounds:
            raise MissingConstantError("preset 'budget' needs an oscillation bound")
        return report.bounds["pure"].epsilon(0.0)
    return report.minami_epsilon(delta)  # "paper"


def _largest_beta(pred: Any, hi: float, rtol: float = 1e-7) -> float:
    """Largest ``beta`` in ``(0, hi]`` with ``pred(beta)`` (``pred`` monotone).

    This calibrates ``beta`` against the budget, but it is deliberately not routed
    through :func:`~dpsample.privacy.calibration.calibrate` (noise ``= 1/beta``):
    ``calibrate`` searches ``s -> make_guarantee(s).epsilon(delta)`` for one
    :class:`~dpsample.privacy.PrivacyGuarantee`, whereas ``pred`` is preset-specific
    (the ``"paper"`` preset tests the printed Theorem 5.1 number, which is a valid
    guarantee only where Minami's conditions hold; every preset also requires the
    *minimum* over the report's valid bounds, whose arg-min changes with ``beta``),
    and the search starts at the utility cap ``hi`` (``beta G D <= c_gen log n``),
    which must be returned exactly when it passes (``binding="cap"``), not a noise
    within ``rtol`` above a floor. Its caller makes the final no-overshoot check on
    the tightest valid guarantee, as ``calibrate`` would.
    """
    if pred(hi):
        return hi
    return _bisect_down(pred, hi, hi, rtol)


def _bisect_down(pred: Any, lo: float, hi: float, rtol: float) -> float:
    """Largest value within ``rtol`` below a failing ``hi`` with ``pred`` (monotone).

    ``lo`` is divided by 4 until ``pred(lo)`` holds, then ``[lo, hi]`` is bisected
    in log space.
    """
    floor = hi * 1e-30
    while not pred(lo):
        lo /= 4.0
        if lo < floor:
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


def _scale(problem: Problem | ProblemSpec) -> float:
    """``G D`` (or ``osc / 2``) for the beta cap and Theorem 5.6's parametrisation."""
    ball = gibbs_ball(problem)
    if problem.lipschitz is not None:
        return problem.lipschitz * ball.diameter
    return problem.utility_oscillation() / 2.0


def calibrate_gibbs(
    problem: Problem | ProblemSpec,
    *,
    epsilon: float,
    delta: float,
    convex: bool = False,
    preset: str = "tightest",
    c_gen: float | None = C_GEN,
    enforced_oscillation: float | None = None,
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
        problem: the :class:`~dpsample.problem.Problem` or its spec (Ball domain).
        epsilon: target epsilon, > 0.
        delta: target delta, in (0, 1).
        convex: public declaration that the losses are convex.
        preset: ``"tightest"``, ``"budget"`` or ``"paper"``.
        c_gen: the cap constant, > 0, or ``None``.
        enforced_oscillation: the oscillation a clip of the loss values enforces
            (:func:`~dpsample.samplers.gibbs_privacy.target_privacy`): the only
            bound is then the pure one at it, so ``"tightest"`` and ``"budget"``
            agree and ``"paper"`` (Theorem 5.1, which rests on ``G``-Lipschitz
            losses) is refused. ``None``: every declared bound (assumptions).

    Returns:
        A :class:`GibbsCalibration`.

    Raises:
        ValueError: invalid inputs, or a preset that needs a missing constant.

    Examples:
        >>> import jax.numpy as jnp
        >>> import dpsample
        >>> from dpsample import Ball, Problem
        >>> from dpsample.samplers.gibbs_calibration import calibrate_gibbs
        >>> p = Problem(lambda x, z: jnp.abs(x[0] - z), jnp.zeros(1000),
        ...             Ball(1.0, dim=1), lipschitz=1.0)
        >>> cal = calibrate_gibbs(p, epsilon=1.0, delta=1e-6, c_gen=None)
        >>> round(cal.beta, 3), cal.bound, cal.binding  # beta * 2GD / n = epsilon
        (250.0, 'pure', 'privacy')
        >>> calibrate_gibbs(p, epsilon=1.0, delta=1e-6).binding  # beta G D <= log(n)/2
        'cap'
        >>> round(calibrate_gibbs(p, epsilon=1.0, delta=1e-6, c_gen=None,
        ...                       enforced_oscillation=4.0).beta, 3)
        250.0
    """
    target_eps = validation.positive("epsilon", epsilon)
    dlt = validation.delta_in_open_unit(delta)
    if preset not in GIBBS_PRESETS:
        raise ValueError(f"Expected preset in {GIBBS_PRESETS}, got {preset!r}")
    gibbs_ball(problem)
    if enforced_oscillation is not None and preset == "paper":
        raise ValueError(
            "the 'paper' preset (Theorem 5.1) rests on G-Lipschitz losses, which no "
            "clip enforces: use preset='tightest' or 'budget', or pass "
            "enforce_sensitivity=False (the guarantee is then conditional)"
        )
    if preset == "paper" and problem.lipschitz is None:
        validation.require_constant(
            "lipschitz", None, needed_for="the 'paper' preset (Theorem 5.1)"
        )
    scale = _scale(problem)
    beta_cap = None
    if c_gen is not None:
        c_gen = validation.positive("c_gen", c_gen)
        beta_cap = c_gen * math.log(max(problem.n, 2)) / scale

    enf = enforced_oscillation

    def ok_tightest(beta: float) -> bool:
        eps = _preset_epsilon(problem, beta, dlt, convex, "tightest", enf)
        return eps <= target_eps

    def ok(beta: float) -> bool:
        if _preset_epsilon(problem, beta, dlt, convex, preset, enf) > target_eps:
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
    report = _report_at(problem, beta, convex, enf)
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


class LangevinCalibration(NamedTuple):
    """The outcome of :func:`calibrate_langevin`.

    Attributes:
        beta: inverse temperature.
        mu: regularisation ``d / (D^2 beta)``.
        step_size: the step at ``beta`` (the caller's, or
            :func:`dpsample.samplers.langevin.default_step_size`).
        num_steps: the steps the calibration was made for.
        binding: ``"privacy"`` (the trajectory bound at ``num_steps`` limits
            ``beta``), ``"cap"`` (``beta G D <= c_gen log n`` does) or
            ``"step_rule"`` (the default non-smooth step ``0.03/(beta G)^2`` makes
            the trajectory's privacy the same for every large ``beta``, so the budget
            cannot set it: ``beta`` is the cap, by default :data:`C_GEN`'s).
        beta_cap: the cap on ``beta`` (``None`` when none applies).
        noise: the Gaussian noise over sensitivity that meets ``(epsilon, delta)``
            (:func:`gaussian_noise_to_sensitivity`).
        steps_to_spend: ``"step_rule"`` only: the most steps within the budget
            (``floor(n^2 / (2 (G z)^2 beta^2 h))``: they would spend it); else
            ``None``.
    """

    beta: float
    mu: float
    step_size: float
    num_steps: int
    binding: str
    beta_cap: float | None
    noise: float
    steps_to_spend: int | None


def _langevin_step(
    problem: Problem | ProblemSpec, beta: float, step_size: float | None
) -> float:
    if step_size is not None:
        return step_size
    target = GibbsTarget.create(problem, beta=beta, mu=default_mu(problem, beta))
    return langevin.default_step_size(target)


def calibrate_langevin(
    problem: Problem | ProblemSpec,
    *,
    epsilon: float,
    delta: float,
    num_steps: int,
    step_size: float | None = None,
    c_gen: float | None = None,
) -> LangevinCalibration:
    r"""The largest ``beta`` whose projected-Langevin trajectory meets the budget.

    The trajectory of ``T`` steps of size ``h`` is one Gaussian mechanism with noise
    over sensitivity ``n / (beta G sqrt(2 h T))``
    (:func:`dpsample.samplers.langevin.trajectory_guarantee`); it meets ``(epsilon,
    delta)`` iff that is at least ``z = gaussian_noise_to_sensitivity(epsilon,
    delta)`` (checked on the exact guarantee), i.e. ``beta^2 h(beta) <= n^2 / (2 (G
    z)^2 T)``. With the default step ``h(beta)``
    (:func:`~dpsample.samplers.langevin.default_step_size`: ``0.1/(beta (M + mu))``
    with ``mu = d/(D^2 beta)``, or ``0.03/(beta G)^2``, capped at ``0.01 D^2/d``)
    or a fixed ``step_size``, ``beta^2 h(beta)`` is non-decreasing in ``beta``, so
    the largest such ``beta`` is found by bisection (public arithmetic: no
    accountant call inside the search). Every value is a function of declared
    constants, ``n``, ``d``, the budget and the schedule: never of data.

    This guarantee does not rest on the LSI constant of the target (no convexity,
    smoothness, LSI or mixing is used), so no generalisation cap is needed for
    privacy: ``c_gen`` (``beta G D <= c_gen log n``) is off unless given. With the
    default *non-smooth* step, ``beta^2 h = 0.03/G^2`` for every ``beta`` above
    ``sqrt(3 d)/(G D)``: the trajectory's privacy no longer depends on ``beta``, the
    budget cannot set it, and ``beta`` is the cap (``c_gen``, else :data:`C_GEN`;
    ``binding="step_rule"``, with the steps that would spend the budget).

    Args:
        problem: the :class:`~dpsample.problem.Problem` or its spec (Ball domain,
            ``lipschitz`` declared).
        epsilon: target epsilon, > 0.
        delta: target delta, in (0, 1).
        num_steps: the steps ``T`` the chain will run, >= 1.
        step_size: a fixed public step (default: the rule above, at each ``beta``).
        c_gen: the cap constant, > 0, or ``None`` (no cap).

    Returns:
        A :class:`LangevinCalibration`.

    Raises:
        ValueError: invalid inputs.
        dpsample.errors.MissingConstantError: ``lipschitz`` not declared.

    Examples:
        >>> import jax.numpy as jnp
        >>> from dpsample import Ball, Problem
        >>> from dpsample.samplers import langevin
        >>> from dpsample.samplers.gibbs_calibration import calibrate_langevin
        >>> from dpsample.samplers.target import GibbsTarget
        >>> p = Problem(lambda x, z: (x[0] - z) ** 2 / 4, jnp.zeros(1000),
        ...             Ball(1.0, dim=1), lipschitz=1.0, smoothness=0.5)
        >>> cal = calibrate_langevin(p, epsilon=1.0, delta=1e-6, num_steps=1000)
        >>> cal.binding, round(cal.beta, 1)
        ('privacy', 140.6)
        >>> t = GibbsTarget.create(p, beta=cal.beta, mu=cal.mu)
        >>> g = langevin.trajectory_guarantee(t, step_size=cal.step_size,
        ...                                   num_steps=1000)
        >>> 0.9999 <= g.epsilon(1e-6) <= 1.0
        True
    """
    eps = validation.positive("epsilon", epsilon)
    dlt = validation.delta_in_open_unit(delta)
    steps = validation.positive_int("num_steps", num_steps)
    g = validation.require_constant(
        "lipschitz", problem.lipschitz, needed_for="the Langevin trajectory bound"
    )
    gibbs_ball(problem)
    fixed = None if step_size is None else validation.positive("step_size", step_size)
    scale = _scale(problem)
    beta_cap = None
    if c_gen is not None:
        beta_cap = validation.positive("c_gen", c_gen) * math.log(max(problem.n, 2))
        beta_cap /= scale
    z = gaussian_noise_to_sensitivity(epsilon=eps, delta=dlt)
    # beta^2 h <= n^2 / (2 (G z)^2 T), with a relative margin for rounding so the
    # composed Gaussian's noise is never below z.
    limit = problem.n**2 / (2.0 * (g * z) ** 2 * steps) * (1.0 - 1e-12)

    def load(beta: float) -> float:  # beta^2 h(beta), non-decreasing
        return beta * beta * _langevin_step(problem, beta, fixed)

    def fits(beta: float) -> bool:
        return load(beta) <= limit

    start = math.log(max(problem.n, 2)) / scale
    hi, last = start, load(start)
    for _ in range(200):
        if last > limit:
            break
        hi *= 4.0
        now = load(hi)
        if not now > last * (1.0 + 1e-9):  # the step rule's plateau: beta-free
            cap = beta_cap if beta_cap is not None else C_GEN * start
            h = _langevin_step(problem, cap, fixed)
            need = problem.n**2 / (2.0 * (g * z) ** 2 * cap * cap * h)
            return LangevinCalibration(
                beta=cap,
                mu=default_mu(problem, cap),
                step_size=h,
                num_steps=steps,
                binding="step_rule",
                beta_cap=cap,
                noise=z,
                steps_to_spend=max(1, math.floor(need * (1.0 - 1e-12))),
            )
        last = now
    else:  # pragma: no cover - beta^2 h grows at least linearly off the plateau
        raise ValueError("no inverse temperature bounds the trajectory's budget")
    beta, binding = _bisect_down(fits, hi / 4.0, hi, 1e-10), "privacy"
    if beta_cap is not None and beta_cap < beta:
        beta, binding = beta_cap, "cap"
    return LangevinCalibration(
        beta=beta,
        mu=default_mu(problem, beta),
        step_size=_langevin_step(problem, beta, fixed),
        num_steps=steps,
        binding=binding,
        beta_cap=beta_cap,
        noise=z,
        steps_to_spend=None,
    )


def theorem_5_6(
    problem: Problem | ProblemSpec,
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
    ``<= epsilon`` (and ``beta G D <= c_gen log n``): this is
    :func:`calibrate_gibbs` with
    ``preset="paper"``. With an explicit ``c_beta`` the resulting ``beta`` is used as
    is and the returned ``epsilon`` is the tightest *valid* bound at it, which may
    exceed the target (check it). The paper's risk bound is meaningful only for
    ``d < beta G D`` (errata E22/E23); ``risk_bound`` is ``None`` otherwise.

    Examples:
        >>> import jax.numpy as jnp
        >>> import dpsample
        >>> from dpsample import Ball, Problem
        >>> from dpsample.samplers.gibbs_calibration import theorem_5_6
        >>> p = Problem(lambda x, z: jnp.abs(x[0] - z), jnp.zeros(1000),
        ...             Ball(1.0, dim=1), lipschitz=1.0)
        >>> cal = theorem_5_6(p, epsilon=0.5, delta=1e-6, c_beta=1.0)
        >>> round(cal.beta * 2.0, 4)  # beta G D = eps log(n d) / sqrt(log(1/delta))
        0.9292
    """
    if c_beta is None:
        return calibrate_gibbs(
            problem, epsilon=epsilon, delta=delta, preset="paper", c_gen=c_gen
        )
    eps = validation.positive("epsilon", epsilon)
    dlt = validation.delta_in_open_unit(delta)
    c_beta = validation.positive("c_beta", c_beta)
    g = validation.require_constant(
        "lipschitz", problem.lipschitz, needed_for="Theorem 5.6"
    )
    ball = gibbs_ball(problem)
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


def gaussian_noise_to_sensitivity(*, epsilon: float, delta: float) -> float:
    """Smallest Gaussian noise std / L2 sensitivity that is ``(epsilon, delta)``-DP.

    The value is the argument of :meth:`~dpsample.privacy.PrivacyGuarantee.gaussian`
    (noise std over the statistic's full L2 sensitivity under the neighbouring
    relation), not the ecosystem's ``noise_multiplier`` (noise std on a sum over
    the per-example bound ``C``, which is twice this value under replace-one).

    It is calibrated by the library's one calibrator,
    :func:`~dpsample.privacy.calibration.calibrate`: the search runs on the fast
    upper bound :func:`~dpsample.privacy.calibration.coarse_epsilon` of the
    Gaussian event, and the result is checked and refined on the exact guarantee
    (dp_accounting's pessimistic PLD) until it spends at least ``1 - 1e-5`` of
    ``epsilon``; it never overshoots the target.

    Examples:
        >>> from dpsample.privacy import PrivacyGuarantee
        >>> from dpsample.samplers.gibbs_calibration import (
        ...     gaussian_noise_to_sensitivity)
        >>> s = gaussian_noise_to_sensitivity(epsilon=1.0, delta=1e-5)
        >>> round(s, 2), PrivacyGuarantee.gaussian(s).epsilon(1e-5) <= 1.0
        (3.73, True)
    """
    eps = validation.positive("epsilon", epsilon)
    dlt = validation.delta_in_open_unit(delta)
    return _gaussian_noise(eps, dlt)


@functools.lru_cache(maxsize=256)
def _gaussian_noise(eps: float, dlt: float) -> float:
    """:func:`gaussian_noise_to_sensitivity`, memoised on public ``(eps, delta)``.

    A plan's refusal search re-plans at the same budget many times; the exact
    calibration (dp_accounting PLDs) costs 0.1-3 s a call.
    """

    def coarse(s: float) -> float:
        event = dp_accounting.GaussianDpEvent(s)
        return coarse_epsilon([(lambda route: event, 1)], dlt)

    return calibrate(
        PrivacyGuarantee.gaussian,
        epsilon=eps,
        delta=dlt,
        coarse_epsilon=coarse,
        refine_rtol=_GAUSSIAN_REFINE_RTOL,
    ).noise


precision.scope_public(globals())
