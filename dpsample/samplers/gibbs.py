r"""The private regularised Gibbs sampler: plan in public, sample privately.

The target (seed 000 Sec. 5.1) is

.. math::
    \pi_D(x) \propto \exp\big(-\beta(F_D(x) + \tfrac{\mu}{2}\|x\|^2)\big)\,
    \mathbf 1_K(x),

on a ball ``K``, for a ``G``-Lipschitz, possibly non-convex and non-smooth loss.
:class:`Gibbs` (registry name ``"gibbs"``) plans the whole run from the public
:class:`~dpsample.problem.ProblemSpec`: ``(beta, mu)`` by
:func:`~dpsample.samplers.gibbs_calibration.calibrate_gibbs`, the sampler's schedule
(steps, step size, the RGO's fixed trial budget), the guarantee of what will run
(with its assumptions), the cost in per-example evaluations, and the warm-start bound
:func:`dpsample.bounds.gibbs_warm_start_bound`; its run draws the public initial point
and runs the chain under one compiled ``lax.scan``
(:mod:`dpsample.samplers.chains`). :func:`gibbs` is plan then run in one call.

By default (``enforce_sensitivity=True``) the constant each route's guarantee rests on
is enforced: loss values clipped for the routes through the exact target (which then
targets the clipped ``F_D``), per-example gradients for projected Langevin.

The privacy bounds of the exact target are :mod:`dpsample.samplers.gibbs_privacy`,
the calibration :mod:`dpsample.samplers.gibbs_calibration`; both are re-exported here.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import numpy as np

from dpsample import bounds
from dpsample._src import precision, validation
from dpsample.base import AlgorithmInfo, PrivateAlgorithm, optional
from dpsample.errors import MissingConstantError, PlanRefusal, Search
from dpsample.nets.clipped import (
    CLIP_NOTES,
    SENSITIVITY_ROUTES,
    clipped_loss,
    run_clipped,
    sensitivity_route,
)
from dpsample.options import call_options
from dpsample.plan import Budget, Cost, Param, Plan
from dpsample.privacy.result import PrivateResult
from dpsample.problem import CONSTANTS, Problem, ProblemSpec
from dpsample.samplers.chains import initial_point
from dpsample.samplers.gibbs_calibration import (
    C_GEN,
    C_GEN_ROUTE_DEFAULT,
    GIBBS_PRESETS,
    GibbsCalibration,
    LangevinCalibration,
    calibrate_gibbs,
    calibrate_langevin,
    default_mu,
    empirical_risk_bound,
    gaussian_noise_to_sensitivity,
    gibbs_ball,
    theorem_5_6,
)
from dpsample.samplers.gibbs_options import (
    DEFAULT_METHOD,
    MAX_LANGEVIN_STEPS,
    MAX_PROXIMAL_STEPS,
    TV_FRACTION,
    GibbsOptions,
)
from dpsample.samplers.gibbs_privacy import (
    GibbsPrivacyReport,
    gll_gaussian_dp,
    oscillation_bound,
    target_privacy,
)
from dpsample.samplers.routes import ROUTES, Route, RouteRequest, resolve
from dpsample.samplers.routes.base import RouteContext, given_beta_alternatives
from dpsample.samplers.routes.mala import DEFAULT_MALA_STEPS
from dpsample.samplers.target import GibbsTarget
from dpsample.types import PRNGKey

__all__ = [
    "C_GEN",
    "DEFAULT_MALA_STEPS",
    "DEFAULT_METHOD",
    "MAX_LANGEVIN_STEPS",
    "MAX_PROXIMAL_STEPS",
    "ROUTES",
    "GIBBS_PRESETS",
    "TV_FRACTION",
    "Gibbs",
    "GibbsCalibration",
    "GibbsInfo",
    "GibbsPrivacyReport",
    "LangevinCalibration",
    "calibrate_gibbs",
    "calibrate_langevin",
    "default_mu",
    "empirical_risk_bound",
    "gaussian_noise_to_sensitivity",
    "gibbs",
    "gll_gaussian_dp",
    "initial_point",
    "oscillation_bound",
    "target_privacy",
    "theorem_5_6",
]

#: What the plan's ``enforce_sensitivity`` entry says of each way of enforcing.
_CLIP_NOTES = {
    "cone": CLIP_NOTES["cone"] + "; the sampler targets the clipped F_D",
    "range": CLIP_NOTES["range"] + "; the sampler targets the clipped F_D",
    "gradient": (
        "per-example gradients clipped at G (the library's clipping path and "
        "rounding margin): the trajectory bound holds whatever the data"
    ),
    "none": "the opt-in: nothing is clipped, the guarantee is conditional on the "
    "declared constants",
}


@dataclasses.dataclass(frozen=True)
class GibbsInfo(AlgorithmInfo):
    """Public facts of a :class:`Gibbs` run (``result.info``).

    Every field is a function of the plan (public inputs) only: no acceptance count
    or other data-dependent counter (use :func:`dpsample.samplers.diagnostics.run`
    for those, non-privately).

    Attributes:
        method: The route's name (``"proximal"``, ``"langevin"``, ``"mala"``, or
            another registered route's).
        beta: Inverse temperature of the target.
        mu: Regularisation of the target.
        preset: The calibration preset (``None`` when ``beta`` was given).
        binding: ``"privacy"``, ``"cap"``, ``"step_rule"`` (calibrated; see
            :class:`~dpsample.samplers.gibbs_calibration.LangevinCalibration`) or
            ``"given"``.
        convex: Whether the losses were declared convex.
        n: Number of examples.
        dim: Dimension ``d``.
        bound: The bound behind the guarantee (the exact target's tightest, or
            ``"langevin_trajectory"``).
        step_size: The sampler's step size.
        num_steps: Steps run.
        tv_slack: Total-variation slack in the guarantee.
        epsilon: The guarantee's epsilon at ``delta``.
        delta: The requested delta.
        loss_evaluations: Per-example loss evaluations done (proximal: the RGO's
            fixed budget of every step).
        gradient_evaluations: Per-example gradient evaluations done (Langevin, MALA).
        schedule: Proximal only: the
            :class:`~dpsample.samplers.proximal.ProximalSchedule` as a dict.
        lsi_constant: Proximal only: ``(name, value)`` of the LSI constant used.
        total_time: Langevin only: ``step_size num_steps``.
        clip_norm: Langevin only: the per-example gradient clip (declared ``G``;
            ``None`` with ``enforce_sensitivity=False``).
        privacy_rests_on: What the guarantee rests on beyond the declared
            constants, when anything (an unproven schedule, a declared TV bound).
        clip: What enforces the guarantee's constant: ``"cone"`` or ``"range"``
            (the loss values are clipped, so the target is that of the clipped
            loss), ``"gradient"`` (Langevin's per-example gradient clip) or
            ``"none"`` (``enforce_sensitivity=False``: assumed, conditional).
    """

    method: str
    beta: float
    mu: float
    preset: str | None
    binding: str
    convex: bool
    n: int
    dim: int
    bound: str
    step_size: float
    num_steps: int
    tv_slack: float
    epsilon: float
    delta: float
    loss_evaluations: int
    gradient_evaluations: int
    schedule: dict[str, Any] | None = optional()
    lsi_constant: tuple[str, float] | None = optional()
    total_time: float | None = optional()
    clip_norm: float | None = optional()
    privacy_rests_on: str | None = optional()
    clip: str | None = optional()
    diagnostics: None = None


class Gibbs(PrivateAlgorithm):
    """One private sample of the regularised Gibbs target: plan, then run.

    See :func:`gibbs` for the routes, their guarantees and every option (the same
    keywords, bound at construction or given to :meth:`plan`). The options are
    declared once, :class:`~dpsample.samplers.gibbs_options.GibbsOptions`
    (``options_type``): the plan reads one such object and passes it to the route
    in its :class:`~dpsample.samplers.routes.base.RouteRequest`, so an option only
    one route uses (the proximal schedule's ``c_step``, ``num_trials``,
    ``num_levels``, ``kl_init``; MALA's ``tv_bound``; Langevin's ``max_steps``) is
    read by that route from there.

    The plan (public inputs only) holds ``beta`` and ``mu`` with their sources, the
    schedule (``num_steps``, ``step_size`` and, for the proximal sampler, the RGO's
    fixed trial budget ``num_trials``/``num_levels``), the guarantee of what will run
    with its assumptions, the cost (proximal: ``num_steps * 2 pool_size(num_trials,
    num_levels)`` per-example losses; Langevin: ``num_steps * n`` per-example
    gradients; MALA: ``(num_steps + 1) n``) and, where the output's law is within a
    known total variation of the target (proximal, MALA with a declared
    ``tv_bound``), the warm-start bound :func:`dpsample.bounds.gibbs_warm_start_bound`
    at failure probability ``failure_prob`` (default ``sqrt(d)/(eps n)``).

    Routes: ``method`` names a route registered in
    :data:`dpsample.samplers.routes.ROUTES`, resolved once to its object
    (:class:`~dpsample.samplers.routes.base.Route`); the plan asks it for the
    options it takes, the cap on ``beta``, the calibration, the schedule, the
    guarantee and the refusals, and the run for its kernel. A new route is one
    registered object (:mod:`dpsample.samplers.routes`).

    Enforced constants (``enforce_sensitivity``, default ``True``; see :func:`gibbs`,
    Privacy): the proximal and MALA routes clip every loss value (the net's cone or
    located range, :func:`dpsample.nets.clipped.sensitivity_route`), so they sample
    the target of the *clipped* ``F_D`` and its pure bound holds whatever the data;
    Langevin clips per-example gradients at ``G``. The plan's
    ``enforce_sensitivity`` and ``sensitivity_oscillation`` entries say which
    constant is enforced and how; ``False`` is the conditional opt-in.

    Compute budget: the proximal and MALA routes refuse a plan whose cost exceeds
    ``Budget(max_evaluations=E)`` (their schedules are tied to a TV bound, so none is
    shrunk). Langevin: with ``Budget(max_evaluations=E)``, a calibrated
    number of steps whose ``T n`` gradients exceed ``E`` is capped at ``floor(E /
    n)`` (the trajectory bound is then that of the capped ``T``, below the budget);
    a ``num_steps`` given by the caller that exceeds it is refused.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> from dpsample import Ball, Budget, Problem
        >>> from dpsample.samplers.gibbs import Gibbs
        >>> p = Problem(lambda x, z: jnp.abs(x[0] - z), jnp.zeros(50),
        ...             Ball(1.0, dim=1), lipschitz=1.0)
        >>> algo = Gibbs(method="langevin", max_steps=200)
        >>> plan = algo.plan(p.spec, Budget(1.0, 1e-5))
        >>> plan["num_steps"], plan.cost.gradient_evaluations
        (200, 10000)
        >>> res = algo.run(jax.random.key(0), plan, p.data)
        >>> res.privacy is plan.guarantee, res.info.method
        (True, 'langevin')
    """

    name = "gibbs"
    kind = "sampler"
    seed = "000"
    theorem = (
        "Sec. 5.1, Theorems 5.6-5.7 (regularised Gibbs target; proximal sampler "
        "with GLL's rejection RGO, errata E25-E27)"
    )
    guarantee_type = (
        "(epsilon, delta): the exact target's tightest valid bound plus the "
        "sampler's TV slack, or projected Langevin's trajectory (Gaussian) bound"
    )
    summary = "one sample of the regularised Gibbs target (proximal, Langevin, MALA)"

    #: A pipeline asks for ``psi`` at half its failure probability: the rest covers
    #: the sampler's total-variation error (part of the bound's failure probability).
    psi_failure_share: ClassVar[float] = 0.5

    options_type = GibbsOptions

    def _plan(self, spec: ProblemSpec, budget: Budget, **options: Any) -> Plan:
        opts = GibbsOptions.from_options(options)
        method, convex, beta = opts.method, opts.convex, opts.beta
        enforce_sensitivity = opts.enforce_sensitivity
        # ---- public validation, before any private computation -------------------
        target_eps = budget.epsilon
        dlt = validation.delta_in_open_unit(budget.delta)
        route = resolve(method)
        frac = validation.delta_in_open_unit(opts.tv_fraction, name="tv_fraction")
        ball = gibbs_ball(spec)
        if not isinstance(enforce_sensitivity, bool):
            raise TypeError(
                "Expected enforce_sensitivity to be a bool, got "
                f"{enforce_sensitivity!r}"
            )
        enforced_osc, clip = None, "none"
        if route.clips_values and enforce_sensitivity:
            try:
                enforced_osc, clip, _ = sensitivity_route(spec, True)
            except MissingConstantError:
                raise MissingConstantError(
                    f"the {route.name} route enforces the Gibbs target's sensitivity "
                    "by clipping each loss value, which needs a declared lipschitz "
                    "G (the cone, 2 G D) or loss_range with loss_floor (the range, "
                    "2 B); declare one, or pass enforce_sensitivity=False (the "
                    "guarantee is then conditional on the declared bound)"
                ) from None
        # the routes read the options from the request, these two checked
        max_steps = validation.positive_int("max_steps", opts.max_steps)
        checked = dataclasses.replace(opts, tv_fraction=frac, max_steps=max_steps)
        request = RouteRequest(
            spec, budget, dlt, checked, enforced_oscillation=enforced_osc, clip=clip
        )
        route.check_options(request)
        gap = validation.nonnegative("minimizer_gap", opts.minimizer_gap)
        zeta = None
        if opts.failure_prob is not None:
            zeta = validation.probability(
                "failure_prob", opts.failure_prob, open_left=True
            )
            if not zeta < 1.0:
                raise ValueError(f"Expected failure_prob={zeta!r} < 1")
        cap = route.c_gen(opts.c_gen)
        if beta is None and opts.mu is not None:
            raise ValueError("mu without beta: pass both, or neither (calibration)")

        # ---- the target, then the route's schedule and guarantee ------------------
        temp = route.temperature(request, cap)
        beta_v, mu_v = temp.beta, temp.mu
        target = GibbsTarget.create(spec, beta=beta_v, mu=mu_v)
        report = target_privacy(
            target, convex=convex, enforced_oscillation=enforced_osc
        )
        if not route.clips_values:
            clip = "gradient" if enforce_sensitivity else "none"
        # the options' rows (the declaration's sources and rules); the route makes
        # the rows of beta, mu, preset, c_gen and its schedule
        option_rows = opts.rows(
            resolved={
                "method": route.name,
                "convex": bool(convex),
                "tv_fraction": frac,
                "minimizer_gap": gap,
            },
            notes={"enforce_sensitivity": _CLIP_NOTES[clip]},
        )
        params = dict(temp.params)
        for name in ("method", "convex", "tv_fraction", "enforce_sensitivity"):
            params[name] = option_rows[name]
        if enforced_osc is not None:
            params["sensitivity_oscillation"] = Param(
                enforced_osc / spec.n,
                "derived",
                f"osc/n, osc = {enforced_osc:.6g} ({SENSITIVITY_ROUTES[clip]}, "
                "enforced): the exact target's pure bound beta osc/n",
            )
        context = RouteContext(
            request, temp, target, report, *report.tightest(request.target_delta)
        )
        planned = route.schedule(context)
        params.update(planned.params)
        notes = list(planned.notes)
        if enforced_osc is not None:
            notes.append(
                "the target is that of the clipped loss (values clipped as "
                "enforce_sensitivity says): the same as the loss's wherever the "
                "declared constants hold"
            )
        privacy, tv, steps = planned.privacy, planned.tv_slack, planned.num_steps

        claimed = privacy.epsilon(dlt)
        if not claimed <= target_eps * (1.0 + 1e-9):
            reason = (
                f"the {route.name} route's guarantee is epsilon={claimed:.6g} at "
                f"delta={dlt:g}, above the target {target_eps:g}"
            )
            if beta is None:  # pragma: no cover - calibrated beta meet the target
                raise ValueError(f"{reason}; adjust the steps or tv_fraction")
            raise PlanRefusal(
                reason,
                search=Search("beta", beta_v / 2.0, direction="down"),
                alternatives=given_beta_alternatives(),
            )
        params["bound"] = Param(
            planned.bound, "derived", "the bound behind the guarantee"
        )
        if planned.rests_on is not None:
            notes.append(f"the guarantee rests on {planned.rests_on}")
        kernel = planned.kernel
        cost = Cost(
            loss_evaluations=kernel.loss_evaluations(steps),
            gradient_evaluations=kernel.gradient_evaluations(steps, spec.n),
            steps=steps,
        )
        route.check_cost(request, temp, cost)

        # ---- the warm-start bound, where the output's law is near the target ------
        warm = None
        if route.warm_start and spec.lipschitz is not None:
            if zeta is None:
                zeta = bounds.default_failure_prob(spec.dim, target_eps, spec.n)
            if zeta is not None and zeta + tv < 1.0:
                params["failure_prob"] = opts.row("failure_prob", zeta)
                center = np.asarray(ball.center_point, np.float64)
                warm = bounds.gibbs_warm_start_bound(
                    lipschitz=spec.lipschitz,
                    radius=ball.radius,
                    dim=spec.dim,
                    beta=beta_v,
                    mu=mu_v,
                    failure_prob=zeta,
                    max_norm=ball.max_norm,
                    min_norm=max(0.0, float(np.linalg.norm(center)) - ball.radius),
                    tv_slack=tv,
                    minimizer_gap=gap,
                    loss_range=spec.loss_range,
                )
            else:
                notes.append(
                    "no warm-start bound: the failure probability (default "
                    "sqrt(d)/(eps n)) plus the TV slack is >= 1 (pass failure_prob=)"
                )
        elif route.warm_start:
            notes.append("no warm-start bound: the Lipschitz constant is not declared")
        params["minimizer_gap"] = option_rows["minimizer_gap"]
        internal = {
            "route": route,
            "kernel": kernel,
            "binding": temp.binding,
            "preset": temp.preset,
            "extra": planned.info,
            "rests_on": planned.rests_on,
            "clip": clip,
            "clipped_loss": clipped_loss(spec, clip, ball),
        }
        return Plan(
            algorithm=self.name,
            spec=spec,
            budget=budget,
            params=params,
            guarantee=privacy,
            cost=cost,
            warm_start=warm,
            notes=tuple(notes),
            internal=internal,
        )

    def _run(self, rng_key: PRNGKey, plan: Plan, problem: Problem) -> PrivateResult:
        clipped = plan.internal.get("clipped_loss")
        if clipped is not None:
            # the loss that runs, clipped at the plan's public constants
            loss_fn, data = run_clipped(clipped, problem.loss_fn, problem.data)
            problem = Problem(
                loss_fn,
                data,
                problem.domain,
                **{c: getattr(problem, c) for c in CONSTANTS},
            )
        target = GibbsTarget.create(problem, beta=plan["beta"], mu=plan["mu"])
        route: Route = plan.internal["route"]
        value = route.run(
            rng_key,
            target,
            plan.internal["kernel"],
            step_size=plan["step_size"],
            num_steps=plan["num_steps"],
        )
        info = GibbsInfo(
            method=plan["method"],
            beta=plan["beta"],
            mu=plan["mu"],
            preset=plan.internal["preset"],
            binding=plan.internal["binding"],
            convex=plan["convex"],
            n=problem.n,
            dim=problem.dim,
            bound=plan["bound"],
            step_size=plan["step_size"],
            num_steps=plan["num_steps"],
            tv_slack=plan.guarantee.tv_slack,
            epsilon=plan.spent_epsilon(),
            delta=plan.budget.delta,
            loss_evaluations=plan.cost.loss_evaluations,
            gradient_evaluations=plan.cost.gradient_evaluations,
            privacy_rests_on=plan.internal["rests_on"],
            clip=plan.internal.get("clip"),
            **plan.internal["extra"],
        )
        return PrivateResult(value, plan.guarantee, info)  # type: ignore[arg-type]


def gibbs(
    rng_key: PRNGKey,
    problem: Problem,
    *,
    epsilon: float,
    delta: float,
    method: str = DEFAULT_METHOD,
    convex: bool = False,
    preset: str = "tightest",
    c_gen: float | str | None = C_GEN_ROUTE_DEFAULT,
    beta: float | None = None,
    mu: float | None = None,
    step_size: float | None = None,
    num_steps: int | None = None,
    tv_fraction: float = TV_FRACTION,
    tv_bound: float | None = None,
    max_steps: int = MAX_LANGEVIN_STEPS,
    allow_unproven_schedule: bool = False,
    max_proximal_steps: int = MAX_PROXIMAL_STEPS,
    c_step: float | None = None,
    num_trials: int | None = None,
    num_levels: int | None = None,
    kl_init: float | None = None,
    failure_prob: float | None = None,
    minimizer_gap: float = 0.0,
    enforce_sensitivity: bool = True,
) -> PrivateResult:
    r"""Release one approximate sample of the regularised Gibbs target, privately.

    1. ``(beta, mu)``: :func:`calibrate_gibbs` at ``(epsilon, (1 - tv_fraction) delta)``
       (``mu = d/(D^2 beta)``; proximal, MALA), :func:`calibrate_langevin` (Langevin:
       the largest ``beta`` whose trajectory over the planned steps meets
       ``(epsilon, delta)``, no cap unless ``c_gen`` is given), or the public
       ``beta`` / ``mu`` given.
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
        Replace-one neighbours. What each guarantee rests on, and what enforces it
        by default (``enforce_sensitivity=True``):

        * the exact target's bound (proximal, MALA): the sensitivity of ``beta
          F_D``, i.e. the oscillation of ``f(., z) - f(., z')``. Each loss value is
          clipped as :func:`dpsample.nets.clipped.sensitivity_route` chooses: into
          the cone ``f(c, z) +- G min(||x - c||, R)`` (``2 G D``) or into the
          declared ``[loss_floor, loss_floor + loss_range]`` (``2 B``; a range
          without ``loss_floor`` is not enforceable, so the cone is used). **The
          sampler then targets the clipped** ``F_D`` (the same as ``F_D`` wherever
          the declared constants hold), and the bound is the pure one ``beta
          osc/n`` at that enforced ``osc`` (the LSI, Gaussian-DP and Theorem 5.1
          bounds rest on ``G``-Lipschitz losses and are not used);
        * the proximal sampler's TV slack: its rejection RGO's acceptance bound and
          its schedule need the (clipped) loss ``G``-Lipschitz (and convex, with
          ``convex=True``), which no clip of values enforces, so the proximal
          guarantee stays conditional on that (``privacy.assumptions`` says so);
        * MALA's declared ``tv_bound``: the caller's, conditional;
        * projected Langevin's trajectory bound: the per-example gradient bound
          ``G``, enforced by clipping (unconditional).

        ``enforce_sensitivity=False`` (the opt-in) clips nothing: the target is
        that of the loss itself, every declared bound is used (``min(2 G D, 2 B,
        oscillation)``, LSI, Gaussian DP), and each constant is stated as an
        assumption (conditional), as before this option existed.

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
        method: ``"proximal"``, ``"langevin"``, ``"mala"`` or another route
            registered in :data:`dpsample.samplers.routes.ROUTES`.
        convex: public declaration that the losses are convex.
        preset: calibration preset (:func:`calibrate_gibbs`).
        c_gen: the cap ``beta G D <= c_gen log n`` on a calibrated ``beta``: a
            constant > 0, ``None`` (no cap) or ``"route"`` (default): :data:`C_GEN`
            on the proximal and MALA routes (the proximal guarantee's TV slack
            comes from a schedule that is feasible only while the LSI constant,
            up to ``e^{beta G D}``, stays moderate), no cap on projected Langevin
            (its trajectory bound does not use the target's LSI constant: ``beta``
            spends the budget, :func:`calibrate_langevin`).
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
        c_step: proximal only: the schedule's step constant (default GLL's proof
            constant, ``proximal.schedule``).
        num_trials: proximal only: the least RGO trials per step (default 50;
            raised until the fixed budget's failure is at most ``delta_inner/2``).
        num_levels: proximal only: the RGO's series cap (``proximal.schedule``).
        kl_init: proximal only: a bound on the initial KL divergence to the
            target (``proximal.schedule``).
        failure_prob: ``zeta`` of the warm-start bound (proximal, MALA; default
            ``sqrt(d)/(eps n)``; see :class:`Gibbs`).
        minimizer_gap: the declared ``g_W >= min_K F_D - inf F_D`` added to the
            warm-start bound ``psi`` (``0``: ``K`` holds a global minimizer).
        enforce_sensitivity: clip at the declared constants (default; see
            Privacy), or ``False`` to run on them unenforced (conditional).

    Returns:
        :class:`~dpsample.privacy.PrivateResult` with ``value`` the point (shape
        ``(d,)``), ``privacy`` the guarantee and ``info`` a :class:`GibbsInfo` of
        public values (``method``, ``beta``, ``mu``, ``bound``, ``preset``,
        ``binding``, ``step_size``, ``num_steps``, ``tv_slack``, ``schedule`` ...).

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
    return Gibbs().solve(
        rng_key, problem, epsilon=epsilon, delta=delta, **call_options(locals())
    )


precision.scope_public(globals())
