r"""The projected-Langevin route: clipped per-example gradients, a trajectory bound.

:class:`LangevinRoute` (``method="langevin"``) runs projected Langevin
(:mod:`dpsample.samplers.langevin`) with per-example gradients clipped to the
declared ``G``. Its guarantee is the trajectory's
(:func:`dpsample.samplers.langevin.trajectory_guarantee`, ``alpha K h beta^2 G^2 /
n^2`` Rényi DP): it needs no convexity and does not use the target (the projected
chain is biased), so it has no warm-start bound. A calibrated ``beta`` spends the
budget over the planned steps (:func:`~dpsample.samplers.gibbs_calibration.
calibrate_langevin`, no cap unless ``c_gen`` is given); its steps are capped by
``max_evaluations``. :class:`LangevinKernel` is its kernel.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, ClassVar

from dpsample._src import precision, validation
from dpsample.errors import PlanRefusal, Search
from dpsample.plan import Budget, Cost, Param
from dpsample.problem import ProblemSpec
from dpsample.samplers import langevin
from dpsample.samplers.chains import KernelSpec
from dpsample.samplers.gibbs_calibration import (
    C_GEN,
    LangevinCalibration,
    calibrate_langevin,
    gaussian_noise_to_sensitivity,
)
from dpsample.samplers.gibbs_options import MAX_LANGEVIN_STEPS
from dpsample.samplers.routes.base import (
    Route,
    RouteContext,
    RoutePlan,
    RouteRequest,
    Temperature,
    given_beta_alternatives,
    given_temperature,
    source,
)
from dpsample.samplers.target import GibbsTarget

__all__ = ["MAX_LANGEVIN_STEPS", "LangevinKernel", "LangevinRoute"]


@dataclasses.dataclass(frozen=True)
class LangevinKernel(KernelSpec):
    """Projected Langevin's kernel with its per-example clip (hashable).

    Attributes:
        clip_norm: Per-example gradient clipping norm (``None``: no clipping).

    Examples:
        >>> from dpsample.samplers.routes.langevin import LangevinKernel
        >>> k = LangevinKernel(clip_norm=1.0)
        >>> k.loss_evaluations(3), k.gradient_evaluations(3, 10)
        (0, 30)
    """

    method: ClassVar[str] = "langevin"
    clip_norm: float | None = None

    def build(self) -> tuple[Any, Any]:
        """``(langevin.init, langevin.build_kernel(clip_norm))``."""
        return langevin.init, langevin.build_kernel(clip_norm=self.clip_norm)

    def loss_evaluations(self, num_steps: int) -> int:
        """Zero: projected Langevin evaluates gradients only."""
        return 0

    def gradient_evaluations(self, num_steps: int, n: int) -> int:
        """One clipped per-example gradient of every example a step."""
        return num_steps * n


class LangevinRoute(Route):
    """``method="langevin"``: projected Langevin under its trajectory bound.

    Takes ``step_size``, ``num_steps`` and ``max_steps``; with ``beta`` calibrated
    the steps are ``max_steps`` or ``floor(max_evaluations / n)`` when lower, with
    ``beta`` given the most the budget allows. A ``num_steps`` over
    ``max_evaluations`` is refused; a calibrated number is capped.

    Examples:
        >>> from dpsample.samplers.routes import resolve
        >>> route = resolve("langevin")
        >>> route.warm_start, route.default_c_gen()[0] is None
        (False, True)
    """

    name = "langevin"
    warm_start = False
    clips_values = False

    def default_c_gen(self) -> tuple[float | None, Param]:
        """No cap: the trajectory bound does not rest on the target's LSI constant."""
        return None, Param(
            None,
            "default",
            "off on the Langevin route: its trajectory bound does not rest on the "
            "target's LSI constant, so beta spends the budget (pass c_gen= to cap "
            "beta G D <= c_gen log n)",
        )

    def temperature(
        self, request: RouteRequest, cap: tuple[float | None, Param]
    ) -> Temperature:
        """The given ``(beta, mu)``, or calibrated to the trajectory bound.

        The calibrated ``beta`` is the largest whose trajectory over the planned
        steps meets ``(epsilon, delta)`` (:func:`calibrate_langevin`).
        """
        opts = request.options
        if opts.beta is not None:
            return given_temperature(request)
        spec, cap_const, cap_param = request.spec, cap[0], cap[1]
        lcal = calibrate_langevin(
            spec,
            epsilon=request.epsilon,
            delta=request.delta,
            num_steps=_steps(spec, request.budget, opts.num_steps, opts.max_steps),
            step_size=opts.step_size,
            c_gen=cap_const,
        )
        params = {
            "beta": Param(lcal.beta, "calibrated", _beta_note(lcal, spec)),
            "mu": Param(lcal.mu, "theorem", "Thm 5.6: d/(D^2 beta)"),
            "c_gen": cap_param,
        }
        return Temperature(
            lcal.beta, lcal.mu, lcal.binding, params, num_steps=lcal.num_steps
        )

    def schedule(self, context: RouteContext) -> RoutePlan:
        """The step size, the steps (capped by the budget) and the trajectory bound."""
        request, temperature, target = (
            context.request,
            context.temperature,
            context.target,
        )
        spec, budget, beta = request.spec, request.budget, temperature.beta
        opts = request.options
        step_size, num_steps, max_steps = opts.step_size, opts.num_steps, opts.max_steps
        g = validation.require_constant(
            "lipschitz", spec.lipschitz, needed_for="the Langevin route"
        )
        h = (
            langevin.default_step_size(target)
            if step_size is None
            else langevin.check_step_size(target, step_size)
        )
        if temperature.num_steps is not None:
            steps = temperature.num_steps
            steps_param = Param(
                steps,
                source(num_steps is not None),
                "max_steps, or floor(max_evaluations / n) when lower; beta is "
                "calibrated to spend the budget over these steps"
                if num_steps is None
                else "",
            )
        elif num_steps is None:
            nm = gaussian_noise_to_sensitivity(
                epsilon=request.epsilon, delta=request.delta
            )
            total_time = spec.n**2 / (2.0 * (beta * g * nm) ** 2)
            steps = min(max_steps, int(math.floor(total_time / h)))
            if steps < 1:
                raise PlanRefusal(
                    f"the budget allows a total Langevin time {total_time:.3g} < "
                    f"one step of size {h:.3g} at the given beta = {beta:.4g}",
                    search=Search("beta", beta / 2.0, direction="down"),
                    why="the default step makes beta^2 h constant; pass step_size",
                    alternatives=given_beta_alternatives(),
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
                _steps(spec, budget, num_steps, max_steps)
            steps = cap // spec.n
            steps_param = Param(
                steps,
                "calibrated",
                f"capped at floor(max_evaluations / n) = {steps} (fewer steps "
                "spend less of the budget: the trajectory bound grows with T)",
            )
        privacy = langevin.trajectory_guarantee(target, step_size=h, num_steps=steps)
        clip = g if opts.enforce_sensitivity else None
        if clip is None:
            privacy = privacy.assuming(
                f"every f(., z) is G-Lipschitz on K with the declared lipschitz G = "
                f"{g:.6g}, so each drift moves by at most 2 beta G h/n (not enforced: "
                "enforce_sensitivity=False, per-example gradients not clipped)"
            )
        params = {
            "step_size": Param(
                float(h),
                source(step_size is not None),
                ""
                if step_size is not None
                else "0.1/(beta (M + mu)), or 0.03/(beta G)^2, <= 0.01 D^2/d",
            ),
            "num_steps": steps_param,
            "max_steps": opts.row("max_steps", max_steps),
            "clip_norm": Param(
                clip,
                "derived" if clip is not None else "user",
                "the declared Lipschitz constant G"
                if clip is not None
                else "none: enforce_sensitivity=False",
            ),
        }
        return RoutePlan(
            kernel=LangevinKernel(clip_norm=clip),
            privacy=privacy,
            bound="langevin_trajectory",
            tv_slack=0.0,
            params=params,
            info={"total_time": float(h * steps), "clip_norm": clip},
            notes=(
                "no warm-start bound: projected Langevin has no total-variation bound "
                "to the Gibbs target (its guarantee is the trajectory's)",
            ),
        )

    def check_cost(
        self, request: RouteRequest, temperature: Temperature, cost: Cost
    ) -> None:
        """Nothing: :meth:`schedule` caps the steps at the budget already."""

    def diagnostics_kernel(
        self, target: GibbsTarget, *, clip_norm: float | None = None, **options: Any
    ) -> LangevinKernel:
        """:class:`LangevinKernel` clipping at ``clip_norm`` (default: ``G``).

        Other options are unused.
        """
        if clip_norm is None:
            clip_norm = target.problem.lipschitz
        return LangevinKernel(clip_norm=clip_norm)


def _steps(
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


def _beta_note(cal: LangevinCalibration, spec: ProblemSpec) -> str:
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


precision.scope_public(globals())
