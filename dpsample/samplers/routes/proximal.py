r"""The proximal route: the alternating sampler with the Gopi–Lee–Liu rejection RGO.

:class:`ProximalRoute` (``method="proximal"``, the default) schedules
:mod:`dpsample.samplers.proximal` by ``proximal.schedule`` for total variation
``tau = tv_fraction delta / (1 + e^epsilon)`` to the target, with the target's best
LSI constant; the guarantee is the exact target's tightest valid bound with the
schedule's TV slack (spec 000 section 3.7, erratum E25). It works for non-smooth
losses. :class:`ProximalKernel` is its kernel with the RGO's fixed trial budget.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, ClassVar

from dpsample._src import precision, validation
from dpsample.errors import Code, PlanRefusal, Search
from dpsample.plan import Param
from dpsample.samplers import proximal, rgo
from dpsample.samplers.chains import KernelSpec
from dpsample.samplers.gibbs_options import MAX_PROXIMAL_STEPS, SCHEDULE_OPTIONS
from dpsample.samplers.gibbs_privacy import constant_assumptions
from dpsample.samplers.proximal import ProximalScheduleError
from dpsample.samplers.routes.base import (
    Route,
    RouteContext,
    RoutePlan,
    source,
)
from dpsample.samplers.target import GibbsTarget

__all__ = ["MAX_PROXIMAL_STEPS", "ProximalKernel", "ProximalRoute"]


def _num_trials_row(used: int, given: int | None) -> Param:
    """The ``num_trials`` row: whose value ran, and whether the rule raised it.

    The schedule treats ``num_trials`` (given, or the default
    :data:`~dpsample.samplers.rgo.DEFAULT_NUM_TRIALS`) as a minimum and raises it
    until the fixed RGO budget's failure is ``<= delta_inner/2``; the row's source
    says which happened.

    Examples:
        >>> _num_trials_row(50, None).source, _num_trials_row(80, 80).source
        ('default', 'user')
        >>> _num_trials_row(64, 10).note
        'raised from the given 10: fixed RGO budget: failure <= delta_inner/2'
    """
    rule = "fixed RGO budget: failure <= delta_inner/2"
    floor, whose = (
        (rgo.DEFAULT_NUM_TRIALS, "default") if given is None else (given, "user")
    )
    if used == floor:
        return Param(used, whose, f"{rule} needs no more")
    return Param(
        used,
        "theorem",
        f"raised from the {'given' if given else 'default'} {floor}: {rule}",
    )


@dataclasses.dataclass(frozen=True)
class ProximalKernel(KernelSpec):
    """The proximal sampler's kernel with its RGO's fixed budget (hashable).

    Attributes:
        num_trials: RGO trials per step.
        num_levels: RGO series cap.

    Examples:
        >>> from dpsample.samplers.routes.proximal import ProximalKernel
        >>> k = ProximalKernel(num_trials=50, num_levels=20)
        >>> k.loss_evaluations(3), k.gradient_evaluations(3, 10)
        (2148, 0)
    """

    method: ClassVar[str] = "proximal"
    num_trials: int = rgo.DEFAULT_NUM_TRIALS
    num_levels: int = rgo.DEFAULT_NUM_LEVELS

    def __post_init__(self) -> None:
        validation.positive_int("num_trials", self.num_trials)
        validation.positive_int("num_levels", self.num_levels)

    def build(self) -> tuple[Any, Any]:
        """``(proximal.init, proximal.build_kernel(num_trials, num_levels))``."""
        return proximal.init, proximal.build_kernel(
            num_trials=self.num_trials, num_levels=self.num_levels
        )

    def loss_evaluations(self, num_steps: int) -> int:
        """Per-example loss evaluations of ``num_steps`` proximal steps.

        Each step's RGO evaluates ``2 pool_size(num_trials, num_levels)``
        per-example losses, whatever the data
        (:func:`dpsample.samplers.rgo.sample_oracle`).
        """
        return num_steps * 2 * rgo.pool_size(self.num_trials, self.num_levels)

    def gradient_evaluations(self, num_steps: int, n: int) -> int:
        """Zero: the proximal sampler evaluates loss values only."""
        return 0


class ProximalRoute(Route):
    """``method="proximal"``: the alternating sampler scheduled for a TV target.

    Takes the schedule options ``c_step``, ``num_trials``, ``num_levels``,
    ``kl_init`` (``proximal.schedule``), ``allow_unproven_schedule`` and
    ``max_proximal_steps``; refuses ``step_size`` and ``num_steps`` (its TV bound
    depends on them), a schedule longer than ``max_proximal_steps``, an unproven
    schedule unless allowed, and a target without an LSI constant.

    Examples:
        >>> from dpsample.samplers.routes import resolve
        >>> route = resolve("proximal")
        >>> route.cost_grows_with_beta, route.default_c_gen()[0]
        (True, 0.5)
    """

    name = "proximal"
    options = frozenset(SCHEDULE_OPTIONS)
    cost_grows_with_beta = True
    c_gen_why = (
        "(its TV slack comes from a schedule of about beta^2 G^2 C_LSI "
        "steps, C_LSI up to e^{beta G D} D^2/d)"
    )

    def schedule(self, context: RouteContext) -> RoutePlan:
        """The proven (or allowed nominal) schedule for TV ``tau`` and its guarantee."""
        request, report, target = context.request, context.report, context.target
        bound_name, exact = context.bound, context.exact
        beta, opts = context.temperature.beta, request.options
        convex = opts.convex
        tau = opts.tv_fraction * request.delta / (1.0 + math.exp(request.epsilon))
        if report.lsi_constant is None:
            raise ValueError(
                "the proximal schedule needs an LSI constant (mu > 0 and G declared)"
            )
        if opts.step_size is not None or opts.num_steps is not None:
            raise ValueError(
                "the proximal route takes step_size/num_steps from its schedule "
                "(its TV bound depends on them); tune it through proximal options"
            )
        max_prox = validation.positive_int(
            "max_proximal_steps", opts.max_proximal_steps
        )
        lower_beta = Search("beta", beta / 2.0, direction="down")
        options = opts.schedule_options()
        try:
            sched = proximal.schedule(
                target,
                tv_target=tau,
                lsi_constant=report.lsi_constant[1],
                convex=convex,
                **options,
            )
        except ProximalScheduleError as exc:
            raise PlanRefusal(
                f"the proximal route at beta = {beta:.3g} cannot meet its TV "
                f"target {tau:.3g} (tv_fraction delta/(1 + e^eps)): {exc.fact}",
                search=lower_beta,
                alternatives=_alternatives(convex, None),
            ) from None
        h, steps = sched.step_size, sched.num_steps
        if steps > max_prox:
            raise PlanRefusal(
                f"the proximal schedule at beta = {beta:.3g} needs {steps:,} "
                f"steps (step size {h:.3g}, LSI constant "
                f"{report.lsi_constant[1]:.3g}) for TV {tau:.3g}, more than "
                f"max_proximal_steps={max_prox:,}",
                search=lower_beta,
                alternatives=_alternatives(convex, steps),
            )
        rests_on = None
        if not sched.proven:
            if not opts.allow_unproven_schedule:
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
            *constant_assumptions(
                request.spec,
                bound_name,
                convex=convex,
                proximal=True,
                enforced=request.enforced_oscillation is not None,
            )
        )
        if not sched.proven:
            privacy = privacy.assuming(
                f"the proximal schedule's TV bound {sched.tv_total:.3g} with "
                f"c_step = {sched.c_step:g} (above GLL's proof constant) holds: "
                "nominal, not proven"
            )
        tv = float(sched.tv_total)
        theorem_note = (
            "proximal.schedule: CCSW Thm 3 + GLL Lemma 24 for TV "
            "tv_fraction delta/(1 + e^eps)"
        )
        params = {
            "step_size": Param(float(h), "theorem", theorem_note),
            "num_steps": Param(int(steps), "theorem", theorem_note),
            "num_trials": _num_trials_row(sched.num_trials, options.get("num_trials")),
            "num_levels": Param(sched.num_levels, source("num_levels" in options)),
            "c_step": Param(
                sched.c_step,
                source("c_step" in options),
                "GLL's proof constant 2^-8"
                if sched.proven
                else "above GLL's proof constant: nominal",
            ),
            "lsi_constant": Param(
                report.lsi_constant[1], "derived", report.lsi_constant[0]
            ),
            "tv_slack": Param(tv, "derived", "mixing + T delta_inner + initial draw"),
            "max_proximal_steps": opts.row("max_proximal_steps", max_prox),
        }
        return RoutePlan(
            kernel=ProximalKernel(
                num_trials=sched.num_trials, num_levels=sched.num_levels
            ),
            privacy=privacy,
            bound=bound_name,
            tv_slack=tv,
            params=params,
            info={"schedule": sched._asdict(), "lsi_constant": report.lsi_constant},
            rests_on=rests_on,
        )

    def diagnostics_kernel(
        self, target: GibbsTarget, *, clip_norm: float | None = None, **options: Any
    ) -> ProximalKernel:
        """:class:`ProximalKernel` with the RGO options given (``clip_norm`` unused)."""
        return ProximalKernel(**options)


def _alternatives(
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
