"""The steps of :class:`~dpsample.pipelines.warm_start.WarmStart`'s public plan.

``WarmStart._plan`` composes them, in this order: the public checks
(:func:`check_public`), stage A (:func:`stage_a_sampler`), the bound psi
(:func:`psi_bound`), stage B (:func:`stage_b_finder`), the rates and the dispatcher
(:func:`stationarity_bounds`, :func:`dispatcher_decision`), the parameter table
(:func:`params_table`) and the plan's internal record (:func:`internal_record`).
Host-side functions of public inputs only (the spec, the budget and the caller's
options): no data is read here.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

from dpsample import registry
from dpsample._src import precision, validation
from dpsample.base import PrivateAlgorithm
from dpsample.domains import Ball
from dpsample.errors import PlanRefusal
from dpsample.pipelines.budget import (
    DEFAULT_SPLIT,
    SPEND_RTOL,
    SPEND_RULES,
    finder_budget,
    finder_for_the_rest,
    resolve_failure_prob,
    stage_budgets,
)
from dpsample.pipelines.choice import (
    DEFAULT_FINDER,
    SamplerChoice,
    choose,
    should_warm_start,
)
from dpsample.pipelines.data_split import VARIANTS, DataSplit, HalfDeviations
from dpsample.pipelines.warm_start_options import TABLE_OPTIONS, WarmStartOptions
from dpsample.plan import Budget, Param, Plan
from dpsample.privacy import PrivacyGuarantee
from dpsample.privacy.calibration import canonical_guarantee
from dpsample.problem import ProblemSpec

__all__ = [
    "CheckedInputs",
    "FinderStage",
    "PsiBound",
    "SamplerStage",
    "check_budget",
    "check_public",
    "cold_start_plan",
    "cold_start_rate",
    "default_sampler",
    "dispatcher_decision",
    "internal_record",
    "params_table",
    "psi_bound",
    "stage_a_chosen",
    "stage_a_sampler",
    "stage_algorithm",
    "stage_b_finder",
    "stationarity_bounds",
]


# ---------------------------------------------------------------- the composition
# Options of the stages that the pipeline sets (never taken from *_options).
_SAMPLER_RESERVED = ("failure_prob", "minimizer_gap")
_FINDER_RESERVED = ("x0", "initial_gap")


def stage_algorithm(algorithm: Any, kind: str) -> PrivateAlgorithm:
    """A stage object from a registry name or an algorithm object."""
    if isinstance(algorithm, PrivateAlgorithm):
        if algorithm.kind != kind:
            raise ValueError(
                f"Expected a {kind}, got the {algorithm.kind} {algorithm!r}"
            )
        return algorithm
    if not isinstance(algorithm, str):
        raise TypeError(f"Expected a {kind} name or object, got {algorithm!r}")
    return registry.create(algorithm, kind)


def _stage_options(
    algorithm: PrivateAlgorithm,
    options: Mapping[str, Any] | None,
    reserved: tuple[str, ...],
    what: str,
) -> dict[str, Any]:
    """Checked options of a stage (``ValueError`` naming the valid ones)."""
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise TypeError(f"Expected {what}_options to be a mapping, got {options!r}")
    valid = sorted(set(algorithm.option_parameters()) - set(reserved))
    for key in options:
        if key in reserved:
            raise ValueError(
                f"{what}_options may not set {key!r}: the pipeline sets it (the "
                "stage budgets, the warm start and initial_gap = psi)"
            )
        if key not in valid:
            raise ValueError(
                f"{algorithm.name} has no option {key!r}; valid options: "
                f"{', '.join(valid)}"
            )
    return dict(options)


def _finder(opts: WarmStartOptions) -> PrivateAlgorithm | str:
    """Stage B as given, or :data:`~dpsample.pipelines.choice.DEFAULT_FINDER`."""
    return DEFAULT_FINDER if opts.finder is None else opts.finder


def _split(opts: WarmStartOptions) -> float:
    """Stage A's share as given, or :data:`~dpsample.pipelines.budget.DEFAULT_SPLIT`.

    The share the checks and the cold-start rule read; the default rule tries its
    own shares when none is given (:func:`default_sampler`).
    """
    return DEFAULT_SPLIT if opts.split is None else opts.split


def _sampler_ball(spec: ProblemSpec, sampler_domain: Ball | None) -> Ball:
    """The public compact ``K`` the warm start searches."""
    if sampler_domain is not None:
        if not isinstance(sampler_domain, Ball):
            raise TypeError(
                f"Expected sampler_domain to be a Ball, got {sampler_domain!r}"
            )
        if isinstance(spec.domain, Ball):
            raise ValueError(
                "sampler_domain is for problems on Unconstrained (e.g. with "
                "finder='spider_sosp'); a Ball problem's own domain is K"
            )
        domain = sampler_domain
    else:
        if not isinstance(spec.domain, Ball):
            raise ValueError(
                "the warm start needs a public compact K: the problem is on "
                f"{type(spec.domain).__name__}, so pass sampler_domain=Ball(...) (the "
                "declared constants must hold on it, and minimizer_gap must bound "
                "min_K F - inf F)"
            )
        domain = spec.domain
    if domain.dim is None:
        domain = domain.with_dim(spec.dim)
    if domain.dim != spec.dim:
        raise ValueError(
            f"domain dimension {domain.dim} != problem dimension {spec.dim}"
        )
    return domain


# ---------------------------------------------------------------- the plan's steps
# ``WarmStart._plan`` composes these, in this order (so that the same check fails
# first for bad input): the public checks, stage A, psi, stage B, the rates and the
# dispatcher, the parameter table.


@dataclasses.dataclass(frozen=True)
class CheckedInputs:
    """What the public checks return: validated public inputs every step reads.

    ``budget`` is the pipeline's (a :class:`~dpsample.plan.Budget`, validated when
    it was built, with ``delta > 0``: :func:`check_budget`); ``epsilon`` and
    ``delta`` are its values.
    """

    budget: Budget
    epsilon: float
    delta: float
    data_split: DataSplit
    variant: str
    spend: str
    split: float
    delta_split: float | None
    minimizer_gap: float
    finder: PrivateAlgorithm
    finder_options: dict[str, Any]
    ball: Ball
    lipschitz: float
    zeta: float
    spec_a: ProblemSpec
    spec_b: ProblemSpec


@dataclasses.dataclass(frozen=True)
class SamplerStage:
    """Stage A's plan, how its sampler was chosen and the two stages' budgets."""

    sampler: PrivateAlgorithm
    choice: str
    pure: bool
    budget_a: Budget
    budget_b: Budget
    plan: Plan


@dataclasses.dataclass(frozen=True)
class PsiBound:
    """The public bound psi (after the data split's widening) and its provenance."""

    value: float
    failure_prob: float
    source: str
    terms: Any
    finder_gap: float
    deviation: HalfDeviations | None


@dataclasses.dataclass(frozen=True)
class FinderStage:
    """Stage B's plan, the composed guarantee and the finder's epsilon target."""

    plan: Plan
    guarantee: PrivacyGuarantee
    target: float


def check_budget(budget: Budget) -> Budget:
    """The pipeline's budget: a :class:`~dpsample.plan.Budget` with ``delta > 0``.

    A ``Budget`` is validated when it is built (epsilon positive and finite, delta
    in ``[0, 1)``, the compute cap a positive integer); the warm start also needs
    ``delta > 0`` (its finders are approximate-DP). The one check of the budget:
    every step after it reads the typed values.

    Examples:
        >>> from dpsample import Budget
        >>> from dpsample.pipelines.warm_start_plan import check_budget
        >>> check_budget(Budget(1.0, 0.0))
        Traceback (most recent call last):
        ...
        ValueError: Expected delta=0.0 in the open interval (0, 1)
    """
    if not isinstance(budget, Budget):
        raise TypeError(f"Expected a Budget, got {type(budget).__name__}")
    if not budget.delta > 0.0:
        raise ValueError(f"Expected delta={budget.delta!r} in the open interval (0, 1)")
    return budget


def _data_split(variant: str | DataSplit) -> tuple[DataSplit, str]:
    """The data split object and its name (``ValueError`` for an unknown name)."""
    if isinstance(variant, DataSplit):
        return variant, variant.name
    if variant in VARIANTS:
        return VARIANTS[variant], variant
    raise ValueError(
        f"Expected variant in {tuple(VARIANTS)} or a DataSplit, got {variant!r}"
    )


def _finder_stage(
    finder: PrivateAlgorithm | str,
    finder_options: Mapping[str, Any] | None,
    variant: str,
) -> tuple[PrivateAlgorithm, dict[str, Any]]:
    """Stage B's object and checked options (with its variant's, if it has any)."""
    finder_obj = stage_algorithm(finder, "finder")
    f_options = _stage_options(finder_obj, finder_options, _FINDER_RESERVED, "finder")
    if "initial_gap" not in finder_obj.option_parameters():
        raise ValueError(f"{finder_obj.name} has no initial_gap: it cannot use psi")
    variant_options = getattr(finder_obj, "pipeline_variant_options", None)
    if variant_options is not None:
        if "variant" in f_options:
            raise ValueError(f"{finder_obj.name}'s variant is the pipeline's")
        f_options.update(variant_options[variant])
    return finder_obj, f_options


def check_public(
    spec: ProblemSpec, budget: Budget, opts: WarmStartOptions
) -> CheckedInputs:
    """The public checks, before any private computation (in the plan's order).

    ``budget`` is typed and checked already (:func:`check_budget`); ``opts`` are
    the plan's options (the default finder and split filled in here).
    """
    epsilon, delta = budget.epsilon, budget.delta
    data_split, variant_name = _data_split(opts.variant)
    spend = opts.spend
    if spend not in SPEND_RULES:
        raise ValueError(f"Expected spend in {SPEND_RULES}, got {spend!r}")
    split = validation.positive("split", _split(opts))
    if not split < 1.0:
        raise ValueError(f"Expected split={split!r} in (0, 1)")
    delta_split = opts.delta_split
    if delta_split is not None:
        delta_split = validation.delta_in_open_unit(delta_split, name="delta_split")
    gap_w = validation.nonnegative("minimizer_gap", opts.minimizer_gap)
    finder_obj, f_options = _finder_stage(
        _finder(opts), opts.finder_options, variant_name
    )
    ball = _sampler_ball(spec, opts.sampler_domain)
    big_l = validation.require_constant(
        "lipschitz", spec.lipschitz, needed_for="the warm start's bound psi"
    )
    zeta = resolve_failure_prob(
        opts.failure_prob,
        dim=spec.dim,
        epsilon=epsilon,
        n=spec.n,
        hint=" (or run the finder alone: eps n is too small)",
    ).value
    spec_a, spec_b = data_split.specs(spec, ball)
    return CheckedInputs(
        budget=budget,
        epsilon=epsilon,
        delta=delta,
        data_split=data_split,
        variant=variant_name,
        spend=spend,
        split=split,
        delta_split=delta_split,
        minimizer_gap=gap_w,
        finder=finder_obj,
        finder_options=f_options,
        ball=ball,
        lipschitz=big_l,
        zeta=zeta,
        spec_a=spec_a,
        spec_b=spec_b,
    )


def default_sampler(
    c: CheckedInputs, budget: Budget, opts: WarmStartOptions
) -> SamplerChoice:
    """The default rule's stage A (:func:`~dpsample.pipelines.choice.choose`)."""
    return choose(
        c.spec_a,
        budget,
        split=c.split if opts.split is not None else None,
        delta_split=0.5 if c.delta_split is None else c.delta_split,
        max_evaluations=budget.max_evaluations,
        failure_prob=c.data_split.sampler_failure_prob(c.zeta),
        minimizer_gap=c.minimizer_gap,
    )


def stage_a_chosen(
    c: CheckedInputs, budget: Budget, choice: SamplerChoice
) -> tuple[CheckedInputs, SamplerStage]:
    """Stage A chosen by the default rule (its plan, at its share of epsilon)."""
    assert choice.sampler is not None and choice.split is not None
    c = dataclasses.replace(c, split=choice.split)
    pure = bool(getattr(choice.sampler, "pure_dp", False))
    if pure and c.delta_split is not None:
        raise ValueError(
            f"delta_split does not apply to the pure {choice.sampler.name}"
        )
    budget_b = finder_budget(budget, c.split, 0.0 if pure else (c.delta_split or 0.5))
    return c, SamplerStage(
        choice.sampler, choice.reason, pure, choice.plan.budget, budget_b, choice.plan
    )


def cold_start_plan(
    spec: ProblemSpec,
    budget: Budget,
    opts: WarmStartOptions,
    *,
    rule: str,
    reason: str,
) -> Plan:
    """The default rule's cold start: the finder alone, planned on the whole budget.

    Planned exactly as the finder alone would be (its own default start and
    initial gap), so the pipeline releases what the finder releases; the plan's
    ``sampler`` is ``"none"`` and its ``default_rule`` says why. ``budget`` is
    typed and checked already (:func:`check_budget`).
    """
    epsilon, delta = budget.epsilon, budget.delta
    finder_obj, f_options = _finder_stage(_finder(opts), opts.finder_options, "erm")
    try:
        plan_b = finder_obj.plan(spec, budget, **f_options)
    except PlanRefusal as refusal:
        raise refusal.within("finder_options") from None
    gap = plan_b.get("initial_gap")
    if gap is None:
        gap = math.inf if spec.loss_range is None else float(spec.loss_range)
    cold = cold_start_rate(finder_obj, spec, epsilon, delta, gap)
    params = {
        "sampler": Param("none", "default", reason),
        "default_rule": Param(rule, "default", reason),
        "finder": Param(
            finder_obj.name, "user" if opts.finder is not None else "default"
        ),
        "epsilon_split": Param(
            (0.0, epsilon), "derived", "cold start: the finder takes the whole budget"
        ),
        "delta_split": Param((0.0, delta), "derived"),
        "psi": Param(
            gap, "derived", "cold start: no warm-start bound (the finder's own gap)"
        ),
    }
    return Plan(
        algorithm="warm_start",
        spec=spec,
        budget=budget,
        params=params,
        guarantee=plan_b.guarantee,
        cost=plan_b.cost,
        warm_start=None,
        stages=(("finder", plan_b),),
        notes=(f"default rule: {reason}",),
        internal={
            "diagnostics": bool(opts.diagnostics),
            "sampler": None,
            "finder": finder_obj,
            "stationarity": (cold, cold),
            "dispatcher": (False, reason),
            "default_rule": rule,
        },
    )


def stage_a_sampler(
    c: CheckedInputs, budget: Budget, opts: WarmStartOptions
) -> SamplerStage:
    """Stage A: the given sampler, planned on its share."""
    zeta_a = c.data_split.sampler_failure_prob(c.zeta)
    sampler_obj, choice = stage_algorithm(opts.sampler, "sampler"), "given"
    s_options = _stage_options(
        sampler_obj, opts.sampler_options, _SAMPLER_RESERVED, "sampler"
    )
    pure = bool(getattr(sampler_obj, "pure_dp", False))
    if pure and c.delta_split is not None:
        raise ValueError(f"delta_split does not apply to the pure {sampler_obj.name}")
    budget_a, budget_b = stage_budgets(
        budget, c.split, 0.0 if pure else (c.delta_split or 0.5)
    )
    zeta_a *= getattr(sampler_obj, "psi_failure_share", 1.0)
    try:
        plan_a = sampler_obj.plan(
            c.spec_a,
            budget_a,
            failure_prob=zeta_a,
            minimizer_gap=c.minimizer_gap,
            **s_options,
        )
    except PlanRefusal as refusal:
        raise refusal.within("sampler_options") from None
    return SamplerStage(sampler_obj, choice, pure, budget_a, budget_b, plan_a)


def psi_bound(
    c: CheckedInputs, spec: ProblemSpec, a: SamplerStage, opts: WarmStartOptions
) -> PsiBound:
    """psi: declared, derived (the sampler's plan) or loss_range; then widened.

    Never above the declared loss range (the trivial bound on any excess risk): a
    larger psi, declared or derived, is replaced by it (source ``"loss_range"``).
    """
    bound = a.plan.warm_start
    declared_psi = opts.declared_psi
    declared_psi_failure_prob = opts.declared_psi_failure_prob
    if declared_psi is not None:
        psi = validation.positive("declared_psi", declared_psi)
        psi_fail = (
            c.zeta
            if declared_psi_failure_prob is None
            else validation.probability(
                "declared_psi_failure_prob", declared_psi_failure_prob
            )
        )
        source, bound = "declared", None
    elif bound is not None:
        psi, psi_fail, source = bound.psi, bound.failure_prob, "derived"
    else:
        raise ValueError(
            f"the {a.sampler.name} plan has no warm-start bound psi "
            f"({'; '.join(a.plan.notes) or 'none derived'}): pass declared_psi= "
            "(a public bound you vouch for) or use another sampler"
        )
    # The excess risk of any point is at most the loss range (every F lies in an
    # interval of that width), so a larger psi says nothing: it is capped, and the
    # cap holds with probability 1.
    rng = spec.loss_range
    if rng is not None and psi >= rng:
        psi, psi_fail, source = float(rng), 0.0, "loss_range"
    if source == "declared":  # a declared psi is the caller's
        return PsiBound(psi, psi_fail, source, bound, psi, None)
    widened = c.data_split.widen(
        psi, psi_fail, spec=spec, ball=c.ball, zeta=c.zeta, lipschitz=c.lipschitz
    )
    cap = math.inf if rng is None else float(rng)
    return PsiBound(
        min(widened.psi, cap),
        widened.failure_prob,
        source,
        bound,
        min(widened.finder_initial_gap, cap),
        widened.deviation,
    )


def _check_spent(spent: float, c: CheckedInputs) -> None:
    """``RuntimeError`` if the stages' composition spends more than the epsilon."""
    if not spent <= c.epsilon * (1.0 + 1e-9):
        raise RuntimeError("internal error: the stages overspend the budget")


def stage_b_finder(c: CheckedInputs, a: SamplerStage, finder_gap: float) -> FinderStage:
    """Stage B from psi only; with ``spend="all"`` its target takes what is left."""
    finder_obj, budget_b = c.finder, a.budget_b
    try:
        plan_b = finder_obj.plan(
            c.spec_b, budget_b, initial_gap=finder_gap, **c.finder_options
        )
    except PlanRefusal as refusal:
        raise refusal.within("finder_options") from None
    guarantee = canonical_guarantee(a.plan.guarantee.compose(plan_b.guarantee))
    spent = guarantee.epsilon(c.delta)
    _check_spent(spent, c)
    if c.spend == "all" and spent < (1.0 - SPEND_RTOL) * c.epsilon:
        plan_b, guarantee = finder_for_the_rest(
            finder_obj,
            c.spec_b,
            budget_b,
            a.plan.guarantee,
            c.budget,
            initial_gap=finder_gap,
            options=c.finder_options,
            fallback=plan_b,
            fallback_guarantee=guarantee,
        )
        _check_spent(guarantee.epsilon(c.delta), c)  # read by the search already
    target = plan_b.budget.epsilon
    if "initial_gap" in plan_b.params:  # set by this pipeline, not by the user
        plan_b = plan_b.with_params(
            initial_gap=Param(finder_gap, "pipeline", "the warm start's psi")
        )
    return FinderStage(plan_b, guarantee, target)


def stationarity_bounds(
    c: CheckedInputs, spec: ProblemSpec, a: SamplerStage, psi: PsiBound, target: float
) -> tuple[float | None, float | None]:
    """The finder's rate at psi (warm) and at ``loss_range`` (cold), if it has one."""
    rate = getattr(c.finder, "stationarity_rate", None)
    if rate is None or spec.smoothness is None:
        return None, None
    stationarity = rate(
        lipschitz=c.lipschitz,
        smoothness=spec.smoothness,
        initial_gap=psi.finder_gap,
        dim=spec.dim,
        n=c.spec_b.n,
        epsilon=target,
        delta=a.budget_b.delta,
        failure_prob=min(psi.failure_prob, 1.0),
    )
    gap = math.inf if spec.loss_range is None else float(spec.loss_range)
    return stationarity, cold_start_rate(c.finder, spec, c.epsilon, c.delta, gap)


def cold_start_rate(
    finder: PrivateAlgorithm,
    spec: ProblemSpec,
    epsilon: float,
    delta: float,
    gap: float,
) -> float | None:
    """The finder's rate alone on the whole budget from the public gap, if it has one.

    ``None`` when the finder has no ``stationarity_rate``, a constant it needs is
    not declared, or the gap is not finite.
    """
    rate = getattr(finder, "stationarity_rate", None)
    if (
        rate is None
        or spec.smoothness is None
        or spec.lipschitz is None
        or not math.isfinite(gap)
    ):
        return None
    return float(
        rate(
            lipschitz=spec.lipschitz,
            smoothness=spec.smoothness,
            initial_gap=gap,
            dim=spec.dim,
            n=spec.n,
            epsilon=epsilon,
            delta=delta,
        )  # fmt: skip
    )


def dispatcher_decision(c: CheckedInputs, spec: ProblemSpec) -> tuple[bool, str]:
    """:func:`should_warm_start` on the public spec and budget."""
    return should_warm_start(
        n=spec.n,
        dim=spec.dim,
        epsilon=c.epsilon,
        delta=c.delta,
        lipschitz=c.lipschitz,
        smoothness=spec.smoothness,
        diameter=c.ball.diameter,
        default_gap=spec.loss_range,
    )


def params_table(
    c: CheckedInputs,
    a: SamplerStage,
    psi: PsiBound,
    target: float,
    opts: WarmStartOptions,
) -> dict[str, Param]:
    """The plan's parameters: each value with its source and note.

    The rows of the options in
    :data:`~dpsample.pipelines.warm_start_options.TABLE_OPTIONS`
    (:meth:`~dpsample.options.Options.rows`: the declaration's order, sources and
    rules, a value the caller gives ``[user]``), the derived rows after the option
    each belongs to (the stages' epsilons after ``split``, psi's after
    ``failure_prob``), then the data split's rows. A variant is given by its name
    (a ``DataSplit`` object named ``"erm"`` is the default) and ``minimizer_gap``
    by its checked value.
    """
    sampler_given = opts.sampler is not None
    checked = dataclasses.replace(
        opts, variant=c.variant, minimizer_gap=c.minimizer_gap
    )
    rows = checked.rows(
        resolved={
            "sampler": a.sampler.name,
            "finder": c.finder.name,
            "split": c.split,
            "failure_prob": c.zeta,
        },
        notes={
            "sampler": a.choice,
            "finder": "",
            "split": ""
            if opts.split is not None or sampler_given
            else "the default rule's share",
        },
        params={
            "delta_split": Param(
                (a.budget_a.delta, a.budget_b.delta),
                "derived",
                "pure sampler: (0, delta)" if a.pure else "delta_split (default 1/2)",
            )
        },
    )
    after = {
        "split": {
            "epsilon_split": Param(
                (a.budget_a.epsilon, target),
                "derived",
                "(split eps, rest)"
                if target == a.budget_b.epsilon
                else "(split eps, the finder's target calibrated so that the "
                "composition with the sampler's planned guarantee meets eps)",
            )
        },
        "failure_prob": {
            "psi": Param(
                psi.value,
                "derived" if psi.source != "declared" else "user",
                f"warm-start bound ({psi.source})",
            ),
            "psi_failure_prob": Param(psi.failure_prob, "derived"),
            "finder_initial_gap": Param(
                psi.finder_gap, "derived", "psi (+ 2 U(|D_2|))"
            ),
        },
    }
    params: dict[str, Param] = {}
    for name in TABLE_OPTIONS:
        params[name] = rows[name]
        params |= after.get(name, {})
    params.update(c.data_split.params(c.spec_a, c.spec_b))
    return params


def internal_record(
    c: CheckedInputs,
    a: SamplerStage,
    psi: PsiBound,
    *,
    stationarity: tuple[float | None, float | None],
    dispatcher: tuple[bool, str],
    diagnostics: bool,
) -> dict[str, Any]:
    """The plan's internal record: what the run and its info read (not printed)."""
    paper = getattr(a.sampler, "paper_psi", None)
    return {
        # whether the run also computes the (labelled) non-private
        # diagnostics: a switch, kept out of the printed parameters
        "diagnostics": bool(diagnostics),
        "sampler": a.sampler,
        "finder": c.finder,
        "data_split": c.data_split,
        "ball": c.ball,
        "psi_terms": psi.terms,
        "psi_source": psi.source,
        "deviation": psi.deviation,
        "stationarity": stationarity,
        "dispatcher": dispatcher,
        "paper_psi": None if paper is None else paper(c.spec_a, a.budget_a.epsilon),
    }


precision.scope_public(globals())
