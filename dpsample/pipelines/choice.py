"""The warm start's public choices: warm start or not, and which sampler.

:func:`should_warm_start` is the dispatcher of spec 003 section 2.9 (Theorem 3.2's
rate shapes, reported in the plan); :func:`choose_sampler` is
:class:`~dpsample.pipelines.WarmStart`'s default rule (issue 24): the first of
:data:`DEFAULT_SAMPLERS`, at the least share of :data:`WARM_SPLITS`, whose psi is at
most :data:`PSI_SHARE` of the loss range within the compute cap, else a cold start
with :data:`DEFAULT_FINDER`. Only public quantities enter, so neither decision is a
release.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from dpsample import registry
from dpsample._src import precision, validation
from dpsample.base import PrivateAlgorithm
from dpsample.bounds import (
    net_warm_start_bound,
    stationarity_abar,
    theorem_3_2_stationarity_bound,
)
from dpsample.domains import Ball
from dpsample.pipelines.budget import DEFAULT_SPLIT, sampler_budget
from dpsample.plan import Budget
from dpsample.problem import ProblemSpec

__all__ = [
    "DEFAULT_FINDER",
    "DEFAULT_MAX_EVALUATIONS",
    "DEFAULT_SAMPLERS",
    "PSI_SHARE",
    "SamplerChoice",
    "WARM_SPLITS",
    "choose",
    "choose_sampler",
    "cold_start_reason",
    "should_warm_start",
]


def should_warm_start(
    *,
    n: int,
    dim: int,
    epsilon: float,
    delta: float | None = None,
    lipschitz: float | None = None,
    smoothness: float | None = None,
    diameter: float | None = None,
    default_gap: float | None = None,
) -> tuple[bool, str]:
    r"""Public dispatcher of spec 003 section 2.9: warm start or plain finder?

    Coarse rule (the remark after Corollary 4.3, B6): the warm start can help only
    when ``d < eps n``. Finer rule, used when every public constant is given:
    warm-start iff Theorem 3.2's rate shape (:func:`theorem_3_2_stationarity_bound`)
    for the default pipeline beats the cold start's,

    .. math::

        (1 - \zeta)\big(L \bar a_B + (L \beta \psi)^{1/3} \bar a_B^{2/3}\big)
        + L\zeta \;<\; L \bar a + (L \beta F_{0,def})^{1/3} \bar a^{2/3},

    with ``psi`` the public bound of the default net at ``eps_A = eps/2``
    (:func:`~dpsample.bounds.net_warm_start_bound` with covering radius
    ``D d/(eps_A n)``, ``|P| <= (1 + 2D/r)^d`` and ``k = eps_A n / min(2 L D,
    2 F_0,def)``), ``zeta = sqrt(d)/(eps n)``, the finder's ``(eps/2, delta)`` in
    ``abar_B`` and the whole ``(eps, delta)`` in ``abar``. This compares the same
    numbers :func:`~dpsample.pipelines.warm_start.warm_start` reports
    (``stationarity_bound`` and ``cold_start_bound``). Spec 003's own finer rule,
    ``L D sqrt(d) abar < F_0,def`` (its Corollary 4.3 shapes without the constants,
    the split or ``zeta``), is quoted in the reason for comparison; it favours the
    warm start at small ``eps n``, where the measured gain vanishes
    (``docs/choosing_a_pipeline.md``).
    Only public quantities enter (``n``, ``d``, the budget and declared constants),
    never the data, so the decision itself is not a release (spec 003 A1).

    Args:
        n: Number of examples.
        dim: Dimension ``d``.
        epsilon: Total epsilon.
        delta: Total delta (finer rule).
        lipschitz: ``L`` (finer rule).
        smoothness: ``beta`` (finer rule).
        diameter: ``D = diam K`` (finer rule).
        default_gap: Public ``F_0,def >= F_D(x_def) - F_D*`` of the cold start (finer
            rule; e.g. the declared ``loss_range``).

    Returns:
        ``(decision, reason)``: ``True`` to warm-start, and a sentence saying which
        rule decided, with its numbers.

    Raises:
        ValueError: On invalid inputs.

    Examples:
        >>> from dpsample.pipelines import should_warm_start
        >>> should_warm_start(n=1000, dim=2, epsilon=1.0)[0]
        True
        >>> should_warm_start(n=100, dim=200, epsilon=1.0)[0]
        False
        >>> should_warm_start(n=1000, dim=2, epsilon=1.0, delta=1e-5, lipschitz=1.0,
        ...     smoothness=1.0, diameter=2.0, default_gap=0.01)[0]
        False
        >>> should_warm_start(n=10_000, dim=2, epsilon=4.0, delta=1e-5,
        ...     lipschitz=1.0, smoothness=1.0, diameter=2.0, default_gap=2.0)[0]
        True
    """
    n = validation.positive_int("n", n)
    dim = validation.positive_int("dim", dim)
    epsilon = validation.positive("epsilon", epsilon)
    if not dim < epsilon * n:
        return False, (
            f"d = {dim} >= eps n = {epsilon * n:.6g}: the warm start cannot help "
            "(spec 003 B6); run the finder alone with the whole budget"
        )
    finer = {
        "delta": delta,
        "lipschitz": lipschitz,
        "smoothness": smoothness,
        "diameter": diameter,
        "default_gap": default_gap,
    }
    missing = [k for k, v in finer.items() if v is None]
    if missing:
        return True, (
            f"d = {dim} < eps n = {epsilon * n:.6g} (coarse rule only; the finer rule "
            f"needs {', '.join(missing)})"
        )
    delta = validation.delta_in_open_unit(delta)
    big_l = validation.positive("lipschitz", lipschitz)
    beta = validation.positive("smoothness", smoothness)
    diam = validation.positive("diameter", diameter)
    f0 = validation.positive("default_gap", default_gap)
    eps_a = 0.5 * epsilon
    zeta = min(math.sqrt(dim) / (epsilon * n), 0.5)
    if not eps_a * n > dim:
        return False, (
            f"d = {dim} < eps n = {epsilon * n:.6g}, but the default net needs "
            f"eps/2 n > d: run the finder alone"
        )
    radius = diam * dim / (eps_a * n)
    psi = net_warm_start_bound(
        lipschitz=big_l,
        covering_radius=radius,
        log_net_size=dim * math.log1p(2.0 * diam / radius),  # bounds.net_size_bound
        inverse_temperature=eps_a * n / min(2.0 * big_l * diam, 2.0 * f0),
        failure_prob=zeta,
    ).psi
    warm = theorem_3_2_stationarity_bound(
        lipschitz=big_l, smoothness=beta, initial_gap=psi, dim=dim, n=n,
        epsilon=epsilon - eps_a, delta=delta, failure_prob=zeta,
    )  # fmt: skip
    cold = theorem_3_2_stationarity_bound(
        lipschitz=big_l, smoothness=beta, initial_gap=f0, dim=dim, n=n,
        epsilon=epsilon, delta=delta,
    )  # fmt: skip
    abar = stationarity_abar(dim, n, epsilon, delta)
    spec_rule = big_l * diam * math.sqrt(dim) * abar < f0
    tail = (
        f" (public psi of the default net {psi:.4g} vs F_0,def {f0:.4g}; spec 003's "
        f"closed-form rule L D sqrt(d) abar < F_0,def says "
        f"{'warm' if spec_rule else 'cold'})"
    )
    if warm < cold:
        return True, (
            f"d = {dim} < eps n = {epsilon * n:.6g} and the warm-start rate shape "
            f"{warm:.4g} < the cold-start rate shape {cold:.4g} (finer rule)" + tail
        )
    return False, (
        f"d = {dim} < eps n = {epsilon * n:.6g}, but the warm-start rate shape "
        f"{warm:.4g} >= the cold-start rate shape {cold:.4g} (finer rule): the "
        "budget split and psi cost more than the smaller gap saves" + tail
    )


#: Compute budget of the default sampler choice when the caller gives none: per-example
#: evaluations of the warm start (stage A). About a minute of the net's streamed
#: evaluations on the development machine (2.2e8 per-example sigmoid losses a second
#: measured on 2 shared cores: ``benchmarks/bench_warm_start_choice.py``).
DEFAULT_MAX_EVALUATIONS = 10**10

#: The default samplers, in order of preference: the first whose plan fits the
#: compute budget and has a public warm-start bound psi below the declared loss
#: range runs; if none does, the pipeline starts cold (the finder alone, with the
#: whole budget). Registry names and options. Projected Langevin is not a candidate:
#: it has no psi of its own (a warm start "bounded" by the loss range is a cold
#: start that has spent half the budget; issue 24).
DEFAULT_SAMPLERS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("net", {}),
    ("gibbs", {}),
)

#: The default finder (stage B, and the whole pipeline on a cold start): DP-SGD.
#: The utility benchmark (``docs/utility_benchmark.md``) measured it the best or
#: within the noise of the best first-order finder at its defaults on the smooth
#: problems, where DP-SPIDER at its theorem schedule ended further from the
#: optimum; see ``docs/choosing_a_pipeline.md``.
DEFAULT_FINDER = "dp_sgd"


#: The sampler's shares of epsilon the default rule tries, smallest first: the first
#: at which a candidate's psi is at most :data:`PSI_SHARE` of the loss range runs.
#: Every share is taken from the finder, which on a one-basin problem loses about a
#: factor ``(1 - s)^-a``, ``a`` in ``[1, 2]`` (its noise variance grows as
#: ``1/eps^2``): 5% costs it at most 11%; half the budget is the most given (seed
#: 003's Algorithm 2 split).
WARM_SPLITS: tuple[float, ...] = (0.05, 0.1, 0.2, 0.3, 0.5)

#: The default rule warm-starts only if psi is at most this share of the declared
#: loss range: the warm start then lies, with probability ``1 - zeta``, in the lower
#: half of the range of ``F`` (a cold start promises only the range itself).
PSI_SHARE = 0.5


@dataclasses.dataclass(frozen=True)
class SamplerChoice:
    """The default rule's choice of stage A (public).

    Attributes:
        sampler: The chosen sampler, or ``None``: a cold start.
        plan: Its plan on the stage budget (``None`` for a cold start).
        split: Its share of epsilon (``None`` for a cold start).
        rule: Which branch of the rule fired: ``"warm"`` (a candidate qualified),
            ``"cold: eps n <= d"``, ``"cold: no sampler qualified"``.
        reason: One sentence with the numbers (printed with the plan).
    """

    sampler: PrivateAlgorithm | None
    plan: Any
    rule: str
    reason: str
    split: float | None = None


def cold_start_reason(
    spec: ProblemSpec,
    budget: Budget,
    *,
    split: float = DEFAULT_SPLIT,
    sampler_domain: Any = None,
) -> tuple[str, str] | None:
    """The default rule's cold starts that need no sampler plan, or ``None``.

    ``(rule, reason)`` when no sampler can run: the problem has no public compact
    ``K`` (a ``Ball`` domain, or a ``sampler_domain``), no declared Lipschitz
    constant (every sampler's ``psi`` needs one), or ``split eps n <= d`` (spec 003
    B6). Public inputs only.

    Examples:
        >>> import jax.numpy as jnp
        >>> from dpsample import Budget, Problem, Unconstrained
        >>> from dpsample.pipelines.choice import cold_start_reason
        >>> p = Problem(lambda x, z: jnp.sum((x - z) ** 2), jnp.zeros((100, 1)),
        ...             Unconstrained(dim=1), lipschitz=4.0, smoothness=2.0)
        >>> cold_start_reason(p.spec, Budget(1.0, 1e-5))[0]
        'cold: no compact K'
    """
    if sampler_domain is None and not isinstance(spec.domain, Ball):
        return "cold: no compact K", (
            "cold start: the problem is on "
            f"{type(spec.domain).__name__}, so no sampler has a compact K to search "
            "(pass sampler_domain=Ball(...) for a warm start)"
        )
    if spec.lipschitz is None:
        return "cold: no lipschitz", (
            "cold start: no declared lipschitz G, which every sampler's warm-start "
            "bound psi needs"
        )
    split = validation.positive("split", split)
    eps_a = split * budget.epsilon  # a Budget: validated when built
    if not eps_a * spec.n > spec.dim:
        return "cold: eps n <= d", (
            f"cold start: eps_A n = {eps_a * spec.n:.6g} <= d = {spec.dim}, no "
            "sampler can help (spec 003 B6)"
        )
    return None


def _label(name: str, options: dict[str, Any]) -> str:
    return " ".join([name, *map(str, options.values())])


def choose(
    spec: ProblemSpec,
    budget: Budget,
    *,
    split: float | None = None,
    delta_split: float = 0.5,
    max_evaluations: int | None = None,
    failure_prob: float | None = None,
    **plan_options: Any,
) -> SamplerChoice:
    """The default warm start, or none: :func:`choose_sampler` with its plan.

    See :func:`choose_sampler` for the rule. ``plan_options`` (e.g. the pipeline's
    ``minimizer_gap``) are passed to every candidate's plan, and ``failure_prob``
    times the candidate's ``psi_failure_share``, so the plan returned is the one
    the pipeline runs.
    """
    splits = WARM_SPLITS if split is None else (split,)
    if spec.loss_range is None and split is None:
        splits = (DEFAULT_SPLIT,)  # no range to weigh psi against
    early = cold_start_reason(spec, budget, split=max(splits))
    if early is not None:
        return SamplerChoice(None, None, *early)
    ceiling = None if spec.loss_range is None else PSI_SHARE * spec.loss_range
    total = (
        None
        if max_evaluations is None
        else validation.positive_int("max_evaluations", max_evaluations)
    )
    skipped: list[str] = []
    for name, options in DEFAULT_SAMPLERS:
        candidate = registry.create(name, "sampler", **options)
        label = _label(name, options)
        delta_a = 0.0 if getattr(candidate, "pure_dp", False) else delta_split
        last = ""
        for s in splits:
            cap = DEFAULT_MAX_EVALUATIONS if total is None else max(1, int(total * s))
            stage_budget = sampler_budget(budget, s, delta_a, max_evaluations=cap)
            quick = getattr(candidate, "evaluations_bound", None)
            if quick is not None and ceiling is not None and spec.lipschitz:
                # the coarsest net worth running has covering radius psi-ceiling /
                # G (psi >= G r): if even that one cannot fit the cap, skip the plan
                coarsest = quick(
                    spec, stage_budget, covering_radius=ceiling / spec.lipschitz
                )
                if coarsest > cap:
                    last = (
                        f"{label}: even its coarsest useful net needs <= "
                        f"{coarsest:.3g} evaluations > max_evaluations {cap:.3g}"
                    )
                    continue
            options_c = dict(plan_options)
            if failure_prob is not None:
                share = getattr(candidate, "psi_failure_share", 1.0)
                options_c["failure_prob"] = failure_prob * share
            try:
                plan = candidate.plan(spec, stage_budget, **options_c)
            except ValueError as err:  # a schedule the sampler refuses (public)
                first = str(err).split("; ")[0].split(". ")[0]
                last = f"{label} refused at split {s:g} ({first[:100]})"
                continue
            bound = plan.warm_start
            if plan.guarantee.assumptions:
                # the default pipeline's guarantee rests on enforced constants only
                last = (
                    f"{label}'s guarantee is conditional on an unenforced constant "
                    f"({plan.guarantee.assumptions[0][:100]})"
                )
                break
            if plan.cost.evaluations > cap:
                last = f"{label} needs {plan.cost.evaluations:.3g} evaluations"
            elif bound is None:
                last = f"{label} has no warm-start bound psi"
                break
            elif ceiling is not None and not bound.psi <= ceiling:
                last = (
                    f"{label}'s psi {bound.psi:.3g} > {PSI_SHARE:g} x loss_range "
                    f"{spec.loss_range:.3g} at split {s:g}"
                )
            else:
                why = "; ".join(skipped) if skipped else "the first candidate"
                return SamplerChoice(
                    candidate,
                    plan,
                    "warm",
                    f"warm start with {label} at split {s:g} (the least share "
                    f"tried, of {', '.join(f'{v:g}' for v in splits)}, whose psi "
                    f"qualifies): psi {bound.psi:.3g}"
                    + (
                        f" <= {PSI_SHARE:g} x loss_range {spec.loss_range:.3g}"
                        if ceiling is not None
                        else ""
                    )
                    + f", {plan.cost.evaluations:.3g} evaluations <= "
                    f"max_evaluations {cap:.3g} ({why})",
                    s,
                )
        skipped.append(last)
    return SamplerChoice(
        None,
        None,
        "cold: no sampler qualified",
        f"cold start: no default sampler has a psi <= {PSI_SHARE:g} x loss_range "
        f"within the compute cap at a share of epsilon up to {max(splits):g} "
        f"({'; '.join(skipped)})",
    )


def choose_sampler(
    spec: ProblemSpec,
    budget: Budget,
    *,
    split: float | None = None,
    delta_split: float = 0.5,
    max_evaluations: int | None = None,
    **plan_options: Any,
) -> tuple[PrivateAlgorithm | None, str]:
    r"""The default warm start, or a cold start (a public rule; issue 24).

    A warm start is worth its share of the budget only if it promises more than a
    cold start does. A stationary-point finder started at the centre of ``K``
    promises nothing about the excess risk beyond the declared ``loss_range``
    (every value of ``F`` lies in an interval of that width). So the candidates
    :data:`DEFAULT_SAMPLERS` are tried in order, each planned at the shares of
    epsilon :data:`WARM_SPLITS`, smallest first (``split``: that share only;
    ``delta_split`` of delta unless the sampler is pure), with the compute cap
    (``max_evaluations`` times the share, else :data:`DEFAULT_MAX_EVALUATIONS`; the
    net coarsens its spacing to fit it): the first (sampler, share) whose plan fits
    the cap **and** whose public warm-start bound ``psi`` is at most
    :data:`PSI_SHARE` of ``loss_range`` runs. The least share is taken because
    every share is the finder's loss. If none qualifies, or ``eps n / 2 <= d``
    (spec 003 B6), the answer is ``None``: a cold start. A net whose coarsest
    useful grid (covering radius ``PSI_SHARE loss_range / G``: ``psi >= G r``)
    cannot fit the cap on its public size bound is skipped before its plan is
    built. A candidate whose guarantee is conditional (it rests on a declared
    constant that nothing enforces) is skipped: the default pipeline's guarantee
    holds whatever the data. Only public inputs enter (``n``, ``d``, ``K``, the
    budget and the declared constants), so the choice is not a release.

    Returns:
        ``(sampler, reason)``: the object (``None``: start cold) and one sentence
        with the numbers.

    Examples:
        >>> import jax.numpy as jnp
        >>> from dpsample import Ball, Budget, Problem
        >>> from dpsample.pipelines import choose_sampler
        >>> p = Problem(lambda x, z: jnp.sum((x - z) ** 2), jnp.zeros((100, 1)),
        ...             Ball(1.0, dim=1), lipschitz=4.0, loss_range=4.0)
        >>> sampler, reason = choose_sampler(p.spec, Budget(2.0, 1e-5))
        >>> sampler.name, reason.startswith("warm start with net")
        ('net', True)
        >>> q = Problem(lambda x, z: jnp.sum((x - z) ** 2), jnp.zeros((100, 50)),
        ...             Ball(1.0, dim=50), lipschitz=4.0, loss_range=4.0)
        >>> sampler, reason = choose_sampler(q.spec, Budget(1.0, 1e-5))
        >>> sampler is None, reason.startswith("cold start")
        (True, True)
    """
    choice = choose(
        spec,
        budget,
        split=split,
        delta_split=delta_split,
        max_evaluations=max_evaluations,
        **plan_options,
    )
    return choice.sampler, choice.reason


precision.scope_public(globals())
