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

The privacy bounds of the exact target are :mod:`dpsample.samplers.gibbs_privacy`,
the calibration :mod:`dpsample.samplers.gibbs_calibration`; both are re-exported here.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from dpsample import bounds
from dpsample._src import precision, validation
from dpsample.base import AlgorithmInfo, PrivateAlgorithm, optional
from dpsample.errors import Code, PlanRefusal, Search
from dpsample.plan import Budget, Cost, Param, Plan
from dpsample.privacy.result import PrivateResult
from dpsample.problem import Problem, ProblemSpec
from dpsample.samplers import langevin, proximal
from dpsample.samplers.chains import METHODS, KernelSpec, initial_point, run_chain
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
from dpsample.samplers.gibbs_privacy import (
    GibbsPrivacyReport,
    constant_assumptions,
    gll_gaussian_dp,
    oscillation_bound,
    target_privacy,
)
from dpsample.samplers.proximal import ProximalScheduleError
from dpsample.samplers.target import GibbsTarget
from dpsample.types import PRNGKey

__all__ = [
    "C_GEN",
    "DEFAULT_MALA_STEPS",
    "MAX_LANGEVIN_STEPS",
    "MAX_PROXIMAL_STEPS",
    "METHODS",
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

_PROXIMAL_OPTIONS = ("c_step", "num_trials", "num_levels", "kl_init")


@dataclasses.dataclass(frozen=True)
class GibbsInfo(AlgorithmInfo):
    """Public facts of a :class:`Gibbs` run (``result.info``).

    Every field is a function of the plan (public inputs) only: no acceptance count
    or other data-dependent counter (use :func:`dpsample.samplers.diagnostics.run`
    for those, non-privately).

    Attributes:
        method: ``"proximal"``, ``"langevin"`` or ``"mala"``.
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
        clip_norm: Langevin only: the per-example gradient clip (declared ``G``).
        privacy_rests_on: What the guarantee rests on beyond the declared
            constants, when anything (an unproven schedule, a declared TV bound).
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
    diagnostics: None = None


def _source(given: bool, otherwise: str = "default") -> str:
    return "user" if given else otherwise


class Gibbs(PrivateAlgorithm):
    """One private sample of the regularised Gibbs target: plan, then run.

    See :func:`gibbs` for the routes, their guarantees and every option (the same
    keywords, bound at construction or given to :meth:`plan`; the proximal schedule's
    options ``c_step``, ``num_trials``, ``num_levels`` and ``kl_init`` are named
    options here).

    The plan (public inputs only) holds ``beta`` and ``mu`` with their sources, the
    schedule (``num_steps``, ``step_size`` and, for the proximal sampler, the RGO's
    fixed trial budget ``num_trials``/``num_levels``), the guarantee of what will run
    with its assumptions, the cost (proximal: ``num_steps * 2 pool_size(num_trials,
    num_levels)`` per-example losses; Langevin: ``num_steps * n`` per-example
    gradients; MALA: ``(num_steps + 1) n``) and, where the output's law is within a
    known total variation of the target (proximal, MALA with a declared
    ``tv_bound``), the warm-start bound :func:`dpsample.bounds.gibbs_warm_start_bound`
    at failure probability ``failure_prob`` (default ``sqrt(d)/(eps n)``).

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

    def _plan(  # type: ignore[override]
        self,
        spec: ProblemSpec,
        budget: Budget,
        *,
        method: str = "proximal",
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
    ) -> Plan:
        # ---- public validation, before any private computation -------------------
        target_eps = budget.epsilon
        dlt = validation.delta_in_open_unit(budget.delta)
        if method not in METHODS:
            raise ValueError(f"Expected method in {METHODS}, got {method!r}")
        frac = validation.delta_in_open_unit(tv_fraction, name="tv_fraction")
        ball = gibbs_ball(spec)
        max_steps = validation.positive_int("max_steps", max_steps)
        given = (c_step, num_trials, num_levels, kl_init)
        proximal_options: dict[str, Any] = {
            k: v for k, v in zip(_PROXIMAL_OPTIONS, given, strict=True) if v is not None
        }
        if proximal_options and method != "proximal":
            raise TypeError(
                f"unexpected options {sorted(proximal_options)} for method {method!r}"
            )
        if tv_bound is not None and method != "mala":
            raise ValueError("tv_bound is only for method='mala'")
        if method == "mala" and tv_bound is None:
            raise ValueError(
                "MALA has no privacy bound of its own (its accept/reject step reads "
                "the data; no TV bound to the target is available for this "
                "setting): pass a public tv_bound you vouch for, or use "
                "method='proximal' or 'langevin'"
            )
        gap = validation.nonnegative("minimizer_gap", minimizer_gap)
        zeta = None
        if failure_prob is not None:
            zeta = validation.probability("failure_prob", failure_prob, open_left=True)
            if not zeta < 1.0:
                raise ValueError(f"Expected failure_prob={zeta!r} < 1")
        delta_target = (1.0 - frac) * dlt
        cap_const, cap_param = _route_c_gen(c_gen, method)
        lcal: LangevinCalibration | None = None
        if beta is None and mu is not None:
            raise ValueError("mu without beta: pass both, or neither (calibration)")

        if beta is None and method == "langevin":
            lcal = calibrate_langevin(
                spec,
                epsilon=target_eps,
                delta=dlt,
                num_steps=_langevin_steps(spec, budget, num_steps, max_steps),
                step_size=step_size,
                c_gen=cap_const,
            )
            beta_v, mu_v, binding = lcal.beta, lcal.mu, lcal.binding
            params: dict[str, Param] = {
                "beta": Param(beta_v, "calibrated", _langevin_beta_note(lcal, spec)),
                "mu": Param(mu_v, "theorem", "Thm 5.6: d/(D^2 beta)"),
                "c_gen": cap_param,
            }
        elif beta is None:
            cal = calibrate_gibbs(
                spec,
                epsilon=target_eps,
                delta=delta_target,
                convex=convex,
                preset=preset,
                c_gen=cap_const,
            )
            beta_v, mu_v, binding = cal.beta, cal.mu, cal.binding
            params = {
                "beta": Param(
                    beta_v,
                    "calibrated",
                    f"largest beta meeting (eps, (1 - tv_fraction) delta), preset "
                    f"{preset!r}, cap beta G D <= c_gen log n ({binding} binds)",
                ),
                "mu": Param(mu_v, "theorem", "Thm 5.6: d/(D^2 beta)"),
                "preset": Param(preset, _source(preset != "tightest")),
                "c_gen": cap_param,
            }
        else:
            beta_v = validation.positive("beta", beta)
            mu_v = default_mu(spec, beta_v) if mu is None else mu
            binding = "given"
            params = {
                "beta": Param(beta_v, "user"),
                "mu": Param(
                    mu_v,
                    _source(mu is not None, "theorem"),
                    "" if mu is not None else "Thm 5.6: d/(D^2 beta)",
                ),
            }
        target = GibbsTarget.create(spec, beta=beta_v, mu=mu_v)
        report = target_privacy(target, convex=convex)
        bound_name, exact = report.tightest(delta_target)
        params["method"] = Param(method, _source(method != "proximal"))
        params["convex"] = Param(bool(convex), _source(bool(convex)))
        params["tv_fraction"] = Param(frac, _source(frac != TV_FRACTION))
        notes: list[str] = []
        rests_on: str | None = None

        if method == "proximal":
            tau = frac * dlt / (1.0 + math.exp(target_eps))
            if report.lsi_constant is None:
                raise ValueError(
                    "the proximal schedule needs an LSI constant (mu > 0 and G "
                    "declared)"
                )
            if step_size is not None or num_steps is not None:
                raise ValueError(
                    "the proximal route takes step_size/num_steps from its schedule "
                    "(its TV bound depends on them); tune it through proximal options"
                )
            max_prox = validation.positive_int("max_proximal_steps", max_proximal_steps)
            lower_beta = Search("beta", beta_v / 2.0, direction="down")
            try:
                sched = proximal.schedule(
                    target,
                    tv_target=tau,
                    lsi_constant=report.lsi_constant[1],
                    convex=convex,
                    **proximal_options,
                )
            except ProximalScheduleError as exc:
                raise PlanRefusal(
                    f"the proximal route at beta = {beta_v:.3g} cannot meet its TV "
                    f"target {tau:.3g} (tv_fraction delta/(1 + e^eps)): {exc.fact}",
                    search=lower_beta,
                    alternatives=_proximal_alternatives(convex, None),
                ) from None
            h, steps = sched.step_size, sched.num_steps
            if steps > max_prox:
                raise PlanRefusal(
                    f"the proximal schedule at beta = {beta_v:.3g} needs {steps:,} "
                    f"steps (step size {h:.3g}, LSI constant "
                    f"{report.lsi_constant[1]:.3g}) for TV {tau:.3g}, more than "
                    f"max_proximal_steps={max_prox:,}",
                    search=lower_beta,
                    alternatives=_proximal_alternatives(convex, steps),
                )
            if not sched.proven:
                if not allow_unproven_schedule:
                    raise PlanRefusal(
                        f"the proximal schedule with c_step={sched.c_step:g} exceeds "
                        "GLL's proof constant, so its TV bound is not a theorem",
                        alternatives=(
                            (
                                {"allow_unproven_schedule": True},
                                "to run it anyway: the guarantee is then labelled "
                                "nominal (conditional)",
                            ),
                            (
                                {"c_step": Code("proximal.C_STEP_PAPER")},
                                "the proven constant",
                            ),
                        ),
                    )
                rests_on = (
                    "a nominal TV bound: the step constant exceeds GLL's proof constant"
                )
            privacy = exact.with_tv_slack(sched.tv_total).assuming(
                *constant_assumptions(spec, bound_name, convex=convex, proximal=True)
            )
            if not sched.proven:
                privacy = privacy.assuming(
                    f"the proximal schedule's TV bound {sched.tv_total:.3g} with "
                    f"c_step = {sched.c_step:g} (above GLL's proof constant) holds: "
                    "nominal, not proven"
                )
            tv = float(sched.tv_total)
            kernel = KernelSpec(
                "proximal", num_trials=sched.num_trials, num_levels=sched.num_levels
            )
            theorem_note = (
                "proximal.schedule: CCSW Thm 3 + GLL Lemma 24 for TV "
                "tv_fraction delta/(1 + e^eps)"
            )
            params.update(
                step_size=Param(float(h), "theorem", theorem_note),
                num_steps=Param(int(steps), "theorem", theorem_note),
                num_trials=Param(
                    sched.num_trials,
                    "theorem",
                    "fixed RGO budget: failure <= delta_inner/2",
                ),
                num_levels=Param(
                    sched.num_levels, _source("num_levels" in proximal_options)
                ),
                c_step=Param(
                    sched.c_step,
                    _source("c_step" in proximal_options),
                    "GLL's proof constant 2^-8"
                    if sched.proven
                    else "above GLL's proof constant: nominal",
                ),
                lsi_constant=Param(
                    report.lsi_constant[1], "derived", report.lsi_constant[0]
                ),
                tv_slack=Param(tv, "derived", "mixing + T delta_inner + initial draw"),
                max_proximal_steps=Param(
                    max_prox, _source(max_prox != MAX_PROXIMAL_STEPS)
                ),
            )
            extra: dict[str, Any] = {
                "schedule": sched._asdict(),
                "lsi_constant": report.lsi_constant,
            }
        elif method == "langevin":
            g = validation.require_constant(
                "lipschitz", spec.lipschitz, needed_for="the Langevin route"
            )
            h = (
                langevin.default_step_size(target)
                if step_size is None
                else langevin.check_step_size(target, step_size)
            )
            if lcal is not None:
                steps = lcal.num_steps
                steps_param = Param(
                    steps,
                    _source(num_steps is not None),
                    "max_steps, or floor(max_evaluations / n) when lower; beta is "
                    "calibrated to spend the budget over these steps"
                    if num_steps is None
                    else "",
                )
            elif num_steps is None:
                nm = gaussian_noise_to_sensitivity(epsilon=target_eps, delta=dlt)
                total_time = spec.n**2 / (2.0 * (beta_v * g * nm) ** 2)
                steps = min(max_steps, int(math.floor(total_time / h)))
                if steps < 1:
                    raise PlanRefusal(
                        f"the budget allows a total Langevin time {total_time:.3g} < "
                        f"one step of size {h:.3g} at the given beta = {beta_v:.4g}",
                        search=Search("beta", beta_v / 2.0, direction="down"),
                        why="the default step makes beta^2 h constant; pass step_size",
                        alternatives=_given_beta_alternatives(),
                    )
                steps_param = Param(
                    steps,
                    "calibrated",
                    "largest T with the trajectory bound within budget "
                    f"(capped at max_steps={max_steps})",
                )
            else:
                steps = validation.positive_int("num_steps", num_steps)
                steps_param = Param(steps, "user")
            cap = budget.max_evaluations
            if cap is not None and steps * spec.n > cap:
                if num_steps is not None or cap < spec.n:
                    # the refusal (naming num_steps or max_evaluations) is raised there
                    _langevin_steps(spec, budget, num_steps, max_steps)
                steps = cap // spec.n
                steps_param = Param(
                    steps,
                    "calibrated",
                    f"capped at floor(max_evaluations / n) = {steps} (fewer steps "
                    "spend less of the budget: the trajectory bound grows with T)",
                )
            privacy = langevin.trajectory_guarantee(
                target, step_size=h, num_steps=steps
            )
            bound_name, tv = "langevin_trajectory", 0.0
            kernel = KernelSpec("langevin", clip_norm=g)
            params.update(
                step_size=Param(
                    float(h),
                    _source(step_size is not None),
                    ""
                    if step_size is not None
                    else "0.1/(beta (M + mu)), or 0.03/(beta G)^2, <= 0.01 D^2/d",
                ),
                num_steps=steps_param,
                max_steps=Param(max_steps, _source(max_steps != MAX_LANGEVIN_STEPS)),
                clip_norm=Param(g, "derived", "the declared Lipschitz constant G"),
            )
            extra = {"total_time": float(h * steps), "clip_norm": g}
            notes.append(
                "no warm-start bound: projected Langevin has no total-variation bound "
                "to the Gibbs target (its guarantee is the trajectory's)"
            )
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
                f"MALA is within total variation {tv:g} of the Gibbs target "
                "(tv_bound declared by the caller; MALA has no bound of its own)",
                *constant_assumptions(spec, bound_name, convex=convex, proximal=False),
            )
            rests_on = "the caller's declared tv_bound (MALA has no bound of its own)"
            kernel = KernelSpec("mala")
            params.update(
                step_size=Param(float(h), _source(step_size is not None)),
                num_steps=Param(steps, _source(num_steps is not None)),
                tv_bound=Param(tv, "user", "declared by the caller"),
            )
            extra = {}

        claimed = privacy.epsilon(dlt)
        if not claimed <= target_eps * (1.0 + 1e-9):
            reason = (
                f"the {method} route's guarantee is epsilon={claimed:.6g} at "
                f"delta={dlt:g}, above the target {target_eps:g}"
            )
            if beta is None:  # pragma: no cover - calibrated beta meet the target
                raise ValueError(f"{reason}; adjust the steps or tv_fraction")
            raise PlanRefusal(
                reason,
                search=Search("beta", beta_v / 2.0, direction="down"),
                alternatives=_given_beta_alternatives(),
            )
        params["bound"] = Param(bound_name, "derived", "the bound behind the guarantee")
        if rests_on is not None:
            notes.append(f"the guarantee rests on {rests_on}")
        cost = Cost(
            loss_evaluations=kernel.loss_evaluations(int(steps)),
            gradient_evaluations=kernel.gradient_evaluations(int(steps), spec.n),
            steps=int(steps),
        )
        cap = budget.max_evaluations
        if cap is not None and method != "langevin" and cost.evaluations > cap:
            # The proximal schedule is fixed by its TV target (fewer steps would
            # void the TV slack the guarantee carries) and MALA's declared tv_bound
            # is for the steps asked: neither can be shrunk, so the plan refuses.
            raise PlanRefusal(
                f"the {method} route at beta = {beta_v:.3g} needs "
                f"{cost.evaluations:,} per-example evaluations ({int(steps):,} "
                f"steps), more than max_evaluations={cap:,}; its schedule cannot be "
                "shrunk without changing its TV bound",
                search=(
                    Search("beta", beta_v / 2.0, direction="down")
                    if method == "proximal"
                    else None
                ),
                why="" if method == "proximal" else "lower beta",
                alternatives=(
                    ({}, f"raise max_evaluations to {cost.evaluations:,}"),
                    (
                        {"method": "langevin"},
                        "its steps are capped by the budget; no warm-start bound psi",
                    ),
                ),
            )
        warm = None
        if method != "langevin" and spec.lipschitz is not None:
            if zeta is None:
                zeta = bounds.default_failure_prob(spec.dim, target_eps, spec.n)
                zeta_param = Param(zeta, "default", "sqrt(d)/(eps n)")
            else:
                zeta_param = Param(zeta, "user")
            if zeta is not None and zeta + tv < 1.0:
                params["failure_prob"] = zeta_param
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
        elif method != "langevin":
            notes.append("no warm-start bound: the Lipschitz constant is not declared")
        params["minimizer_gap"] = Param(gap, _source(gap > 0))
        internal = {
            "kernel": kernel,
            "binding": binding,
            "preset": preset if beta is None and lcal is None else None,
            "extra": extra,
            "rests_on": rests_on,
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
        target = GibbsTarget.create(problem, beta=plan["beta"], mu=plan["mu"])
        kernel: KernelSpec = plan.internal["kernel"]
        init_key, run_key = jax.random.split(rng_key)
        x0 = initial_point(init_key, target)
        init_fn, _ = kernel.build()
        state = init_fn(x0, target)
        final = run_chain(
            run_key,
            target,
            state,
            spec=kernel,
            step_size=plan["step_size"],
            num_steps=plan["num_steps"],
        )
        value = jnp.asarray(final.position, jnp.float64)
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
            **plan.internal["extra"],
        )
        return PrivateResult(value, plan.guarantee, info)  # type: ignore[arg-type]


def gibbs(
    rng_key: PRNGKey,
    problem: Problem,
    *,
    epsilon: float,
    delta: float,
    method: str = "proximal",
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
    **proximal_options: Any,
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
        **proximal_options: the proximal schedule's options ``c_step``,
            ``num_trials``, ``num_levels``, ``kl_init`` (``proximal.schedule``), and
            the warm-start bound's ``failure_prob`` and ``minimizer_gap`` (see
            :class:`Gibbs`).

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
        rng_key,
        problem,
        epsilon=epsilon,
        delta=delta,
        method=method,
        convex=convex,
        preset=preset,
        c_gen=c_gen,
        beta=beta,
        mu=mu,
        step_size=step_size,
        num_steps=num_steps,
        tv_fraction=tv_fraction,
        tv_bound=tv_bound,
        max_steps=max_steps,
        allow_unproven_schedule=allow_unproven_schedule,
        max_proximal_steps=max_proximal_steps,
        **proximal_options,
    )


def _route_c_gen(c_gen: float | str | None, method: str) -> tuple[float | None, Param]:
    """``c_gen`` as the route applies it, and its plan entry (value, source, note)."""
    if isinstance(c_gen, str):
        if c_gen != C_GEN_ROUTE_DEFAULT:
            raise ValueError(
                f"Expected c_gen > 0, None or {C_GEN_ROUTE_DEFAULT!r}, got {c_gen!r}"
            )
        if method == "langevin":
            return None, Param(
                None,
                "default",
                "off on the Langevin route: its trajectory bound does not rest on the "
                "target's LSI constant, so beta spends the budget (pass c_gen= to cap "
                "beta G D <= c_gen log n)",
            )
        return C_GEN, Param(
            C_GEN,
            "default",
            f"the {method} route's guarantee rests on the cap beta G D <= c_gen log n "
            + (
                "(its TV slack comes from a schedule of about beta^2 G^2 C_LSI "
                "steps, C_LSI up to e^{beta G D} D^2/d)"
                if method == "proximal"
                else "(the declared tv_bound is for the chain at the capped beta)"
            ),
        )
    if c_gen is None:
        return None, Param(None, "user", "no cap: beta meets the privacy target only")
    value = validation.positive("c_gen", c_gen)
    return value, Param(value, "user", "cap beta G D <= c_gen log n")


def _langevin_steps(
    spec: ProblemSpec, budget: Budget, num_steps: int | None, max_steps: int
) -> int:
    """The Langevin steps ``beta`` is calibrated for: public, before any data."""
    cap = budget.max_evaluations
    if num_steps is not None:
        steps = validation.positive_int("num_steps", num_steps)
        if cap is not None and steps * spec.n > cap:
            raise PlanRefusal(
                f"{steps} Langevin steps need {steps * spec.n:,} per-example "
                f"gradients (n={spec.n} a step), over max_evaluations={cap:,}",
                fix=(
                    ("num_steps", cap // spec.n, f"{cap - cap % spec.n:,} gradients")
                    if cap >= spec.n
                    else None
                ),
                none_works=cap < spec.n,
                search=None if cap >= spec.n else Search("num_steps", 1.0),
                why="" if cap >= spec.n else "one step needs n gradients",
            )
        return steps
    if cap is None:
        return max_steps
    if cap < spec.n:
        raise PlanRefusal(
            f"max_evaluations={cap:,} is below one Langevin step (n={spec.n:,} "
            "per-example gradients)",
            why=f"raise max_evaluations to at least {spec.n:,}",
        )
    return min(max_steps, cap // spec.n)


def _given_beta_alternatives() -> tuple[tuple[dict[str, Any], str], ...]:
    """The remedy beside a lower ``beta`` when the caller gave one."""
    return (({}, "drop beta= (it is then calibrated to the budget)"),)


def _langevin_beta_note(cal: LangevinCalibration, spec: ProblemSpec) -> str:
    """What limits a calibrated Langevin ``beta`` (the plan's note)."""
    if cal.binding == "privacy":
        return (
            f"largest beta whose trajectory bound over T = {cal.num_steps:,} steps "
            "meets (eps, delta) (privacy binds; no cap on this route)"
        )
    if cal.binding == "cap":
        return (
            f"capped at c_gen log n/(G D) = {cal.beta:.4g} (the cap binds; the budget "
            "allows more)"
        )
    return (
        "the non-smooth step rule 0.03/(beta G)^2 makes the trajectory's privacy the "
        f"same for every large beta, so beta is the cap c_gen log n/(G D) (c_gen = "
        f"{C_GEN:g} unless given) and the budget is not spent; about "
        f"num_steps={cal.steps_to_spend:,} (x n = {spec.n:,} gradients each) or a "
        "larger step_size would spend it"
    )


def _proximal_alternatives(
    convex: bool, steps: int | None
) -> tuple[tuple[dict[str, Any], str], ...]:
    """Other remedies of a refused proximal schedule, as the caller names them."""
    out: list[tuple[dict[str, Any], str]] = []
    if steps is not None:
        out.append(({"max_proximal_steps": steps}, ""))
    if not convex:
        out.append(({"convex": True}, "if every loss is convex: a better LSI constant"))
    out.append(
        (
            {
                "c_step": Code("proximal.C_STEP_PRACTICAL"),
                "allow_unproven_schedule": True,
            },
            "the guarantee is then conditional on a nominal TV bound",
        )
    )
    out.append(
        (
            {"method": "langevin"},
            "its guarantee is the trajectory's; no warm-start bound psi",
        )
    )
    return tuple(out)


precision.scope_public(globals())
