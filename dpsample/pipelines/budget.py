"""The warm start's budget: the stages' shares and the finder's spend search.

:func:`stage_budgets` splits a :class:`~dpsample.plan.Budget` between the sampler
(stage A) and the finder (stage B) of :class:`~dpsample.pipelines.WarmStart`;
:func:`finder_for_the_rest` then raises the finder's target to what the sampler's
*planned* guarantee leaves unspent (``spend="all"``, :data:`SPEND_RULES`). Both are
public rules: they read plans and budgets, never the data.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from dpsample._src import precision, validation
from dpsample.base import PrivateAlgorithm
from dpsample.bounds import default_failure_prob
from dpsample.plan import Budget, Param, Plan
from dpsample.privacy import PrivacyGuarantee
from dpsample.privacy.calibration import canonical_guarantee
from dpsample.problem import ProblemSpec

__all__ = [
    "DEFAULT_SPLIT",
    "SPEND_RTOL",
    "SPEND_RULES",
    "finder_budget",
    "finder_for_the_rest",
    "resolve_failure_prob",
    "sampler_budget",
    "stage_budgets",
]

DEFAULT_SPLIT = 0.5
"""Fraction of ``epsilon`` given to the warm start (Algorithm 2: ``eps/2`` each)."""

SPEND_RULES = ("all", "split")
"""How the pipeline spends its epsilon. ``"all"`` (default): the sampler is planned
for its share ``split eps``; the finder is then planned for the largest target
whose composition with the sampler's *planned* guarantee (every accounting route,
TV slack included) still meets ``(eps, delta)``, so what the sampler's plan leaves
unspent goes to the finder (a public rule: plans only, no data). ``"split"``: each
stage plans for its fixed share (Algorithm 2 as written)."""

SPEND_RTOL = 0.015
"""``spend="all"`` re-plans the finder only when the composition spends less than
``1 - SPEND_RTOL`` of epsilon, and then aims at spending at least that much."""

_SPEND_STEPS = 8  # the most finder plans the search makes


def resolve_failure_prob(
    failure_prob: float | None,
    *,
    dim: int,
    epsilon: float,
    n: int,
    hint: str = "",
) -> Param:
    """A warm start's ``zeta``: the caller's in ``(0, 1)``, else ``sqrt(d)/(eps n)``.

    Args:
        failure_prob: The caller's value, or ``None`` for the default
            (:func:`~dpsample.bounds.default_failure_prob`).
        dim: ``d``.
        epsilon: The epsilon the default is computed at.
        n: Number of examples.
        hint: Added to the refusal when the default is ``>= 1``.

    Returns:
        The :class:`~dpsample.plan.Param` (source ``"default"`` or ``"user"``).

    Raises:
        ValueError: A ``failure_prob`` outside ``(0, 1)``, or a default ``>= 1``.

    Examples:
        >>> from dpsample.pipelines.budget import resolve_failure_prob
        >>> resolve_failure_prob(None, dim=4, epsilon=1.0, n=100).value
        0.02
    """
    if failure_prob is None:
        zeta = default_failure_prob(dim, epsilon, n)
        if zeta is None:
            raise ValueError(
                "The default failure_prob sqrt(d)/(eps n) = "
                f"{math.sqrt(dim) / (epsilon * n):.4g} >= 1; pass failure_prob={hint}"
            )
        return Param(zeta, "default", "sqrt(d)/(eps n)")
    zeta = validation.probability("failure_prob", failure_prob, open_left=True)
    if not zeta < 1.0:
        raise ValueError(f"Expected failure_prob={zeta!r} < 1")
    return Param(zeta, "user")


def stage_budgets(
    budget: Budget, split: float, delta_fraction: float
) -> tuple[Budget, Budget]:
    """``(eps_A, delta_A)``, ``(eps - eps_A, delta - delta_A)``; caps split like eps.

    The fixed shares of the two stages (a public rule): ``eps_A = split eps`` and
    ``delta_A = delta_fraction delta``; a compute cap ``max_evaluations`` is split
    like epsilon (each share at least 1). :func:`sampler_budget` and
    :func:`finder_budget` build one of the two.

    Examples:
        >>> from dpsample import Budget
        >>> from dpsample.pipelines.budget import stage_budgets
        >>> a, b = stage_budgets(Budget(2.0, 1e-5, 100), 0.5, 0.0)
        >>> (a.epsilon, a.delta, a.max_evaluations), (b.epsilon, b.max_evaluations)
        ((1.0, 0.0, 50), (1.0, 50))
    """
    return (
        sampler_budget(budget, split, delta_fraction),
        finder_budget(budget, split, delta_fraction),
    )


def _caps(budget: Budget, split: float) -> tuple[int | None, int | None]:
    """The compute cap split like epsilon (each share at least 1), or no caps."""
    if budget.max_evaluations is None:
        return None, None
    first = max(1, int(budget.max_evaluations * split))
    return first, max(1, budget.max_evaluations - first)


def sampler_budget(
    budget: Budget,
    split: float,
    delta_fraction: float,
    *,
    max_evaluations: int | None = None,
) -> Budget:
    """Stage A's share of :func:`stage_budgets` (or with its own compute cap).

    Examples:
        >>> from dpsample import Budget
        >>> from dpsample.pipelines.budget import sampler_budget
        >>> sampler_budget(Budget(2.0, 1e-5), 0.25, 0.0, max_evaluations=10)
        Budget(epsilon=0.5, delta=0.0, max_evaluations=10)
    """
    cap = _caps(budget, split)[0] if max_evaluations is None else max_evaluations
    return Budget(split * budget.epsilon, delta_fraction * budget.delta, cap)


def finder_budget(budget: Budget, split: float, delta_fraction: float) -> Budget:
    """Stage B's share of :func:`stage_budgets`: what stage A's leaves.

    Examples:
        >>> from dpsample import Budget
        >>> from dpsample.pipelines.budget import finder_budget
        >>> finder_budget(Budget(2.0, 1e-5, 100), 0.25, 0.5)
        Budget(epsilon=1.5, delta=5e-06, max_evaluations=75)
    """
    eps_a, delta_a = split * budget.epsilon, delta_fraction * budget.delta
    return Budget(
        budget.epsilon - eps_a, budget.delta - delta_a, _caps(budget, split)[1]
    )


def finder_for_the_rest(
    finder: PrivateAlgorithm,
    spec: ProblemSpec,
    share: Budget,
    sampler_guarantee: PrivacyGuarantee,
    total: Budget,
    *,
    initial_gap: float,
    options: Mapping[str, Any],
    fallback: Plan,
    fallback_guarantee: PrivacyGuarantee,
) -> tuple[Plan, PrivacyGuarantee]:
    """The finder's plan for the largest target meeting ``total`` after the sampler.

    A search on the finder's own target epsilon ``t`` (at its delta share): each
    candidate is planned (the finder calibrates its noise for ``t`` with the one
    calibrator) and its guarantee composed with the sampler's planned guarantee at
    the total delta, every route and the TV slack included. The first step assumes
    the composed epsilon grows like ``t``; later steps interpolate between the best
    passing and the closest failing candidate (regula falsi, bisection when that
    stalls). It stops when the composition spends at least ``1 - SPEND_RTOL`` of
    the budget, or after :data:`_SPEND_STEPS` plans. Only candidates whose
    composition meets the budget are kept, so the result never overspends; a
    target the finder refuses to plan counts as failing. ``fallback`` (the plan
    at the fixed share, which meets the budget) is returned when nothing better
    is found; ``fallback_guarantee`` is its composition with the sampler's, which
    the caller has already read at the total delta. Everything here is public
    (plans, no data).

    Returns:
        The plan kept and its composition with ``sampler_guarantee`` (the
        pipeline's guarantee, read at the total delta already).
    """
    target, dlt = total.epsilon, total.delta
    best, best_t = fallback, share.epsilon
    best_g = fallback_guarantee
    best_eps = fallback_guarantee.epsilon(dlt)
    fail_t, fail_eps = math.inf, math.inf
    aim = target * (1.0 - SPEND_RTOL / 2.0)
    for _ in range(_SPEND_STEPS):
        if best_eps >= (1.0 - SPEND_RTOL) * target:
            break
        if math.isinf(fail_t):  # composed epsilon assumed to grow like t
            t = best_t + (aim - best_eps)
        else:
            t = best_t + (fail_t - best_t) * (aim - best_eps) / (fail_eps - best_eps)
            lo, hi = best_t, fail_t
            t = min(max(t, lo + 0.05 * (hi - lo)), hi - 0.05 * (hi - lo))
        try:
            plan = finder.plan(
                spec,
                Budget(t, share.delta, share.max_evaluations),
                initial_gap=initial_gap,
                **options,
            )
            composed = canonical_guarantee(sampler_guarantee.compose(plan.guarantee))
            eps = composed.epsilon(dlt)
        except (ValueError, ArithmeticError):  # refused: a failing target
            plan, eps = None, math.inf
        if plan is not None and eps <= target:
            best, best_t, best_eps, best_g = plan, t, eps, composed
        else:
            fail_t, fail_eps = t, min(eps, 2.0 * target)
    return best, best_g


precision.scope_public(globals())
