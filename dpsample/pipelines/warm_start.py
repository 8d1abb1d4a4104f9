r"""Warm-start ERM meta-algorithm (seed 003, Algorithm 2): sampler, then finder.

Lowy, Ullman and Wright generalise Nesterov's "AGD then GD" trick to privacy: a DP
approximate risk minimiser ``A`` releases ``x_0`` whose excess empirical risk is at
most a **public** number ``psi`` with probability ``>= 1 - zeta``; a DP
stationary-point finder ``B`` whose rate grows with the initial gap then starts from
``x_0`` with its initial-gap parameter set to ``psi`` (never to the realised gap,
which depends on the data). Both stages read all ``n`` examples and the budget is
split between them; the two guarantees compose (adaptively: ``B`` sees ``x_0``).

Here ``A`` is the exponential mechanism over a grid net of the ball ``K``
(:func:`dpsample.nets.exponential_mechanism`, seed 003 section 4 / Definition 4.1)
and ``B`` is DP-SPIDER (:func:`dpsample.finders.dp_spider`, Theorem 3.2) or DP-SGD
(:func:`dpsample.finders.dp_sgd`). :func:`should_warm_start` is the public dispatcher
of spec 003 section 2.9.

Corrections of the paper implemented here (spec 003 section 6):

* The net size is ``(2 eps n / d)^d``-like, not ``(2 D eps n / d)^d``, and the tail
  bound is ``(ln N + t) / k``, not ``ln(N + t) / k`` (B5). We do not use the closed
  form at all: ``psi`` is computed from the size, covering radius and inverse
  temperature of the net that actually runs (:func:`net_warm_start_bound`).
* The exponential mechanism's inverse temperature comes from the declared
  oscillation bound ``min(2GD, 2B, osc)/n`` with the stage's own ``eps_A`` (A3), not
  the total ``eps``.
* The finder is configured from ``psi`` only (A1, B4); its guarantee is the one its
  accountant certifies for the schedule that ran.

References:
    A. Lowy, J. Ullman and S. J. Wright, `How to make the gradients small privately:
    improved rates for differentially private non-convex optimization
    <https://arxiv.org/abs/2402.11173>`_, ICML 2024 (Algorithm 2, Lemma 4.2,
    Theorem 3.2, Corollary 4.3).
    R. Arora, R. Bassily, T. Gonzalez, C. Guzman, M. Menart and E. Ullah, `Faster
    rates of convergence to stationary points in differentially private optimization
    <https://arxiv.org/abs/2206.00846>`_, ICML 2023.
"""

from __future__ import annotations

import dataclasses
import inspect
import sys
import types
from collections.abc import Mapping
from typing import Any

import jax

from dpsample import nets
from dpsample._src import precision, validation
from dpsample.base import (
    PrivateAlgorithm,
)
from dpsample.bounds import (
    WarmStartBound,
    net_warm_start_bound,
    theorem_3_2_stationarity_bound,
)
from dpsample.domains import Ball
from dpsample.errors import BudgetExceededError
from dpsample.finders import stationarity
from dpsample.options import call_options
from dpsample.pipelines.budget import (
    DEFAULT_SPLIT,
    SPEND_RULES,
)
from dpsample.pipelines.choice import (
    DEFAULT_MAX_EVALUATIONS,
    DEFAULT_SAMPLERS,
    choose_sampler,
    cold_start_reason,
    should_warm_start,
)
from dpsample.pipelines.data_split import VARIANTS, DataSplit
from dpsample.pipelines.warm_start_info import WarmStartDiagnostics, WarmStartInfo
from dpsample.pipelines.warm_start_options import WarmStartOptions
from dpsample.pipelines.warm_start_plan import (
    check_budget,
    check_public,
    cold_start_plan,
    default_sampler,
    dispatcher_decision,
    internal_record,
    params_table,
    psi_bound,
    stage_a_chosen,
    stage_a_sampler,
    stage_algorithm,
    stage_b_finder,
    stationarity_bounds,
)
from dpsample.plan import Budget, Param, Plan
from dpsample.privacy import BudgetLedger, PrivacyGuarantee, PrivateResult
from dpsample.privacy.report import ledger_name
from dpsample.problem import Problem, ProblemSpec, check_problem
from dpsample.types import PRNGKey

__all__ = [
    "DEFAULT_MAX_EVALUATIONS",
    "DEFAULT_SAMPLERS",
    "DEFAULT_SPLIT",
    "SPEND_RULES",
    "VARIANTS",
    "WarmStart",
    "WarmStartBound",
    "WarmStartDiagnostics",
    "WarmStartInfo",
    "choose_sampler",
    "net_warm_start_bound",
    "should_warm_start",
    "theorem_3_2_stationarity_bound",
    "warm_start",
]


_MAX_POINTS = 10**7  # the convenience's cap on the net (as before the objects)

#: :func:`warm_start`'s keywords that are the net sampler's options, not the
#: pipeline's (folded into ``sampler_options`` by :func:`_net_options`).
_NET_KEYWORDS = ("spacing", "net", "chunk_size", "max_points")


class WarmStart(PrivateAlgorithm):
    r"""Seed 003's warm start (Algorithms 2 and 4) as a composition of two objects.

    .. code-block:: text

        x_0    <- sampler (stage A), budget (eps_A, delta_A)
        psi    <- the sampler plan's public bound: Pr[F(x_0) - min_K F > psi] <= zeta
        x_priv <- finder (stage B) from x_0 with initial_gap = psi, (eps_B, delta_B)

    ``WarmStart(sampler, finder, split=..., variant=...)`` takes two algorithm
    objects (or registry names; ``sampler=None``: chosen by cost,
    :func:`choose_sampler`) and a data split, the ``variant``: a
    :class:`~dpsample.pipelines.data_split.DataSplit` object or its name,
    ``"erm"`` (:class:`~dpsample.pipelines.data_split.SharedData`, Algorithm 2) or
    ``"population"`` (:class:`~dpsample.pipelines.data_split.DisjointHalves`,
    Algorithm 4). The split decides the stages' ``n``, ``psi``'s widening, the
    stages' data and the parallel epsilon; the composition itself has no branch on
    it. Its plan plans both stages from the spec:

    * **Budget** (public rule): ``eps_A = split eps``, ``eps_B = eps - eps_A``;
      ``delta_A = delta_split delta`` (default ``1/2``; ``0`` for a pure sampler,
      whose class says ``pure_dp``), ``delta_B = delta - delta_A``; a compute cap
      ``max_evaluations`` is split like epsilon. With ``spend="all"`` (default)
      the finder's target is then raised above ``eps_B`` to the largest value
      whose composition with the sampler's *planned* guarantee meets
      ``(eps, delta)`` (the one calibrator on the composed guarantee, TV slack
      included; :data:`SPEND_RULES`): a sampler whose plan spends less than its
      share (a Langevin schedule capped by ``beta G D <= c log n`` spends a few
      percent of it) leaves nothing on the table. ``spend="split"`` keeps the
      fixed shares.
    * **psi** comes from the sampler's plan (``plan.warm_start``, at failure
      probability ``zeta_A``: ``zeta = sqrt(d)/(eps n)`` by default, halved in the
      population variant, times the sampler's ``psi_failure_share``), or a
      ``declared_psi``; it is passed to the finder's plan as its ``initial_gap``
      (never the realised gap). Population variant: ``psi`` plus twice the uniform
      deviation of each half (:func:`~dpsample.bounds.uniform_deviation_bound`).
    * **Guarantee**: the composition of the stage plans' guarantees (adaptive,
      tightest of the PLD/RDP/pure/zCDP routes); at most ``(eps, delta)`` by basic
      composition. Population variant: a public random permutation splits the data
      into halves (stage A reads ``D_1``, stage B ``D_2``); the sequential
      composition is returned (valid for any neighbours) and the parallel one,
      ``max(eps_A, eps_B)``, is reported (a replaced example lies in one half).
      A finder with ``pipeline_variant_options`` gets its own variant from it.
    * ``plan.stages`` = ``(("sampler", plan_A), ("finder", plan_B))``; the cost is
      their sum. The run draws ``(key_split, key_A, key_B)``, runs stage A, then
      stage B from ``x_0`` (the finder plan's ``x0`` replaced, source ``pipeline``).

    Options: :class:`~dpsample.pipelines.warm_start_options.WarmStartOptions`
    (declared once; :func:`warm_start` takes the same keywords, plus
    :meth:`solve`'s ``ledger`` and ``max_evaluations`` and the net's own options,
    which it folds into ``sampler_options``).

    Examples:
        >>> import jax, jax.numpy as jnp, dpsample
        >>> from dpsample import Budget
        >>> from dpsample.finders.dp_sgd import DPSGD
        >>> from dpsample.nets import NetExponentialMechanism
        >>> from dpsample.pipelines import WarmStart
        >>> data = {"z": jnp.linspace(0.2, 0.6, 200)[:, None]}
        >>> prob = dpsample.Problem(lambda x, z: 0.5 * jnp.sum((x - z["z"]) ** 2),
        ...     data, dpsample.Ball(1.0, dim=1), lipschitz=2.0, smoothness=1.0,
        ...     loss_range=2.0)
        >>> algo = WarmStart(NetExponentialMechanism(), DPSGD(num_steps=20))
        >>> plan = algo.plan(prob.spec, Budget(2.0, 1e-5))
        >>> [name for name, _ in plan.stages], plan["finder_initial_gap"] < 2.0
        (['sampler', 'finder'], True)
        >>> res = algo.run(jax.random.key(0), plan, prob.data)
        >>> res.privacy is plan.guarantee, res.info.sampler, res.info.epsilon_split[0]
        (True, 'net', 1.0)
        >>> # spend="all": the finder's target takes what the composition leaves
        >>> res.info.epsilon_split[1] >= 1.0, 0.98 * 2.0 <= plan.spent_epsilon() <= 2.0
        (True, True)
    """

    name = "warm_start"
    kind = "pipeline"
    seed = "003"
    theorem = "Algorithm 2 (ERM), Algorithm 4 (population), Lemma 4.2, Theorem 3.2"
    guarantee_type = (
        "(epsilon, delta): the adaptive composition of the two stages' guarantees "
        "(population: sequential, parallel reported)"
    )
    summary = "a private warm start (sampler, psi) feeding a stationary-point finder"
    options_type = WarmStartOptions

    def __init__(self, sampler: Any = None, finder: Any = None, **options: Any):
        if sampler is not None:
            options["sampler"] = sampler
        if finder is not None:
            options["finder"] = finder
        super().__init__(**options)

    def _plan(self, spec: ProblemSpec, budget: Budget, **options: Any) -> Plan:
        opts = WarmStartOptions.from_options(options)
        budget = check_budget(budget)  # once: the steps read its typed values
        if opts.sampler is None:  # the default rule: warm start, or start cold
            if opts.sampler_options:
                raise ValueError(
                    "sampler_options need an explicit sampler (the default one is "
                    "chosen by a public rule)"
                )
            early = cold_start_reason(
                spec,
                budget,
                split=DEFAULT_SPLIT if opts.split is None else opts.split,
                sampler_domain=opts.sampler_domain,
            )
            if early is not None:
                return cold_start_plan(
                    spec, budget, opts, rule=early[0], reason=early[1]
                )
        c = check_public(spec, budget, opts)  # before any private computation
        sampler_given = opts.sampler is not None
        if not sampler_given:
            choice = default_sampler(c, budget, opts)
            if choice.sampler is None:
                return cold_start_plan(
                    spec, budget, opts, rule=choice.rule, reason=choice.reason
                )
            c, a = stage_a_chosen(c, budget, choice)
        else:
            a = stage_a_sampler(c, budget, opts)
        psi = psi_bound(c, spec, a, opts)
        b = stage_b_finder(c, a, psi.finder_gap)
        stationarity = stationarity_bounds(c, spec, a, psi, b.target)
        dispatcher = dispatcher_decision(c, spec)
        params = params_table(c, a, psi, b.target, opts)
        if not sampler_given:
            params["default_rule"] = Param(choice.rule, "default", choice.reason)
        return Plan(
            algorithm=self.name,
            spec=spec,
            budget=budget,
            params=params,
            guarantee=b.guarantee,
            cost=a.plan.cost + b.plan.cost,
            warm_start=None,
            stages=(("sampler", a.plan), ("finder", b.plan)),
            notes=() if sampler_given else (f"default rule: {a.choice}",),
            internal=internal_record(
                c,
                a,
                psi,
                stationarity=stationarity,
                dispatcher=dispatcher,
                diagnostics=opts.diagnostics,
            )
            | {"default_rule": choice.rule if not sampler_given else None},
        )

    def solve(  # type: ignore[override]
        self,
        rng_key: PRNGKey,
        problem: Problem,
        *,
        epsilon: float,
        delta: float,
        max_evaluations: int | None = None,
        ledger: BudgetLedger | None = None,
        **options: Any,
    ) -> PrivateResult:
        """``plan``, charge a ledger with both stages, then ``run`` (one call).

        What :func:`warm_start` does: the budget is validated once (the
        :class:`~dpsample.plan.Budget`), both stages' planned guarantees are
        charged to ``ledger`` (default: a fresh ``BudgetLedger(epsilon, delta)``)
        before either stage reads the data, and ``info.ledger_stages`` lists the
        ledger's stages.

        Args:
            rng_key: A JAX PRNG key.
            problem: A :class:`~dpsample.problem.Problem` (its spec is planned,
                its data run).
            epsilon: Target epsilon.
            delta: Target delta in ``(0, 1)``.
            max_evaluations: Optional compute cap (see
                :class:`~dpsample.plan.Budget`).
            ledger: A :class:`~dpsample.privacy.BudgetLedger` to charge.
            **options: Options of the plan (see :func:`warm_start`).

        Returns:
            The :class:`~dpsample.privacy.PrivateResult`.

        Raises:
            dpsample.errors.BudgetExceededError: The ledger cannot afford the
                stages (nothing was charged or computed).
        """
        if ledger is not None and not isinstance(ledger, BudgetLedger):
            raise TypeError(f"Expected a BudgetLedger, got {type(ledger).__name__}")
        rng_key = validation.check_key(rng_key)
        problem = check_problem(problem)
        plan = self.plan(
            problem.spec, Budget(epsilon, delta, max_evaluations), **options
        )
        if ledger is None:
            ledger = BudgetLedger(
                epsilon=plan.budget.epsilon,
                delta=plan.budget.delta,
                relation=problem.relation,
            )
        _charge(ledger, plan)
        with precision.float64():
            res = self._run(rng_key, plan, problem)
        assert isinstance(res.info, WarmStartInfo)
        info = dataclasses.replace(
            res.info, ledger_stages=[name for name, _ in ledger.stages]
        )
        return PrivateResult(res.value, res.privacy, info)

    def _run(self, rng_key: PRNGKey, plan: Plan, problem: Problem) -> PrivateResult:
        internal = plan.internal
        sampler, finder = internal["sampler"], internal["finder"]
        if sampler is None:
            return _run_cold(rng_key, plan, problem)
        plan_a, plan_b = plan.stage("sampler"), plan.stage("finder")
        data_split: DataSplit = internal["data_split"]
        key_split, key_a, key_b = jax.random.split(rng_key, 3)
        data_a, data_b = data_split.data(key_split, plan, problem.data)
        res_a = sampler.run(key_a, plan_a, data_a)
        x0 = res_a.value
        start = Param(x0, "pipeline", "the warm start's output x_0")
        res_b = finder.run(key_b, plan_b.with_params(x0=start), data_b)
        total = res_a.privacy.compose(res_b.privacy)
        if res_a.privacy is plan_a.guarantee and res_b.privacy is plan_b.guarantee:
            total = plan.guarantee
        delta = plan.budget.delta
        stationarity, cold = internal["stationarity"]
        diag = None
        if plan.internal["diagnostics"]:
            net = (
                plan_a.internal.get("net")
                if isinstance(plan_a.internal, dict)
                else None
            )
            diag = _diagnostics(
                problem,
                x0,
                res_b.value,
                net if data_split.shares_the_net else None,
                plan_a.get("chunk_size"),
                problem.replace(domain=internal["ball"]),
            )
        rests_on = res_a.info.get("privacy_rests_on")
        info = WarmStartInfo(
            algorithm=self.name,
            sampler=sampler.name,
            sampler_choice=plan.params["sampler"].note,
            finder=finder.name,
            variant=plan["variant"],
            warm_start=x0,
            psi=plan["psi"],
            psi_failure_prob=plan["psi_failure_prob"],
            psi_terms=internal["psi_terms"],
            psi_source=internal["psi_source"],
            uniform_deviation=internal["deviation"],
            finder_initial_gap=plan["finder_initial_gap"],
            split=plan["split"],
            epsilon_split=plan["epsilon_split"],
            delta_split=plan["delta_split"],
            privacy_sampler=res_a.privacy,
            privacy_finder=res_b.privacy,
            privacy_total=total,
            epsilon_total=total.epsilon(delta),
            stationarity_bound=stationarity,
            cold_start_bound=cold,
            dispatcher=internal["dispatcher"],
            sampler_info=res_a.info,
            finder_info=res_b.info,
            paper_psi=internal["paper_psi"],
            default_rule=internal["default_rule"],
            privacy_rests_on=None if rests_on is None else f"sampler: {rests_on}",
            split_sizes=plan.get("split_sizes"),
            epsilon_total_parallel=data_split.parallel_epsilon(
                res_a.privacy.epsilon(delta), res_b.privacy.epsilon(delta)
            ),
            diagnostics=diag,
        )
        return PrivateResult(res_b.value, total, info)  # type: ignore[arg-type]


def warm_start(
    rng_key: PRNGKey,
    problem: Problem,
    *,
    epsilon: float,
    delta: float,
    sampler: PrivateAlgorithm | str | None = None,
    finder: PrivateAlgorithm | str | None = None,
    variant: str | DataSplit = "erm",
    split: float | None = None,
    spend: str = "all",
    delta_split: float | None = None,
    failure_prob: float | None = None,
    minimizer_gap: float = 0.0,
    spacing: float | None = None,
    net: Any = None,
    max_points: int = _MAX_POINTS,
    chunk_size: int | None = None,
    sampler_options: Mapping[str, Any] | None = None,
    finder_options: Mapping[str, Any] | None = None,
    sampler_domain: Ball | None = None,
    declared_psi: float | None = None,
    declared_psi_failure_prob: float | None = None,
    diagnostics: bool = False,
    ledger: BudgetLedger | None = None,
    max_evaluations: int | None = None,
) -> PrivateResult:
    r"""Warm-start pipelines (seed 003 Algorithms 2 and 4): sampler, then finder.

    ``WarmStart(sampler, finder).solve(...)`` (see :class:`WarmStart` for the plan:
    the budget split, ``psi`` from the sampler's plan as the finder's initial gap,
    the composed guarantee), with a ledger charged before either stage runs.

    Samplers (registry names or objects): ``"net"`` (the exponential mechanism over
    a grid net of ``K``, pure DP, its ``delta`` share passed on to the finder),
    ``"gibbs"`` (the regularised Gibbs sampler; the proximal route has a ``psi``,
    projected Langevin needs ``declared_psi``), ``"quasar_sgd"`` (seed 003
    Algorithm 3 for losses declared ``q``-quasar-convex:
    ``sampler_options={"quasar_convexity": q}``). Default ``None``: **chosen by
    cost** (:func:`choose_sampler`: the net when its size times ``n`` fits
    ``max_evaluations``, default :data:`DEFAULT_MAX_EVALUATIONS`, else the proximal
    Gibbs sampler, else projected Langevin with the declared ``loss_range`` as the
    finder's initial gap); ``info["sampler_choice"]`` and the plan say which.
    Finders: ``"dp_spider"`` (Theorem 3.2), ``"dp_sgd"``, ``"spider_sosp"`` (the
    second-order variant; it runs on ``Unconstrained``, so pass the warm start's
    ``sampler_domain``), or any finder object with an ``initial_gap`` option.

    Privacy:
        Replace-one neighbours (``problem.relation``); every sensitivity comes from
        declared constants. The stages' guarantees (each calibrated for what runs,
        from public numbers including ``psi``) compose adaptively into
        ``privacy`` (the tightest of the PLD/RDP/pure/zCDP routes), which covers
        the released pair ``(x_0, x_priv)`` and is at most ``(epsilon, delta)``.
        Population variant: the sequential composition is returned and
        ``info["epsilon_total_parallel"]`` reports the parallel one. ``zeta`` and
        ``psi`` affect utility only.

    Args:
        rng_key: A JAX PRNG key (split internally, never reused).
        problem: The :class:`~dpsample.problem.Problem`: on a
            :class:`~dpsample.domains.Ball` ``K``, or on ``Unconstrained`` with a
            ``sampler_domain``; with declared ``lipschitz`` (and what the stages
            need: ``smoothness``, ``hessian_lipschitz``, ``loss_range``).
        epsilon: Total epsilon ``> 0``.
        delta: Total delta in ``(0, 1)``.
        sampler: A sampler name or object, or ``None`` (chosen by cost).
        finder: A finder name or object.
        variant: ``"erm"`` (Algorithm 2) or ``"population"`` (Algorithm 4), or a
            :class:`~dpsample.pipelines.data_split.DataSplit` object.
        split: Fraction of ``epsilon`` for the warm start, in ``(0, 1)``. Default:
            the default rule's least share whose psi qualifies
            (:data:`~dpsample.pipelines.choice.WARM_SPLITS`) when the sampler is
            chosen by it, else 1/2 (Algorithm 2).
        spend: ``"all"`` (default: the finder gets what the sampler's plan leaves
            unspent, calibrated on the composed guarantee) or ``"split"`` (fixed
            shares); see :data:`SPEND_RULES`.
        delta_split: Fraction of ``delta`` for a sampler that needs one (default
            ``1/2``; refused for a pure sampler).
        failure_prob: ``zeta`` of ``psi``; default ``sqrt(d)/(eps n)``.
        minimizer_gap: Declared ``g_W >= min_K F - inf F`` added to ``psi``.
        spacing: Net sampler: grid spacing (default covering radius
            ``D d/(eps_A n)``).
        net: Net sampler: an explicit public net with a covering radius.
        max_points: Net sampler: refuse nets larger than this.
        chunk_size: Net sampler: forwarded to the mechanism.
        sampler_options: Options of the sampler (e.g. Gibbs' ``method``,
            ``beta``; quasar's ``quasar_convexity``, ``num_steps``, ``num_runs``).
        finder_options: Options of the finder (e.g. ``num_steps``).
        sampler_domain: The public ball ``K`` when ``problem`` is on
            ``Unconstrained``.
        declared_psi: A public ``psi`` the caller vouches for (utility only).
        declared_psi_failure_prob: Its failure probability (default ``zeta``).
        diagnostics: Add non-private diagnostics (risks, gradient norms, the
            smallest Hessian eigenvalue for ``d <= 200``, and for a net the
            realised gap over the net), **computed on the private data and not
            covered by the guarantee** (never release them).
        ledger: A ledger to charge; default ``BudgetLedger(epsilon, delta)``. Both
            stages' planned guarantees are charged before either runs.
        max_evaluations: Compute budget (see :class:`~dpsample.plan.Budget`): split
            like epsilon between the stages; it also replaces
            :data:`DEFAULT_MAX_EVALUATIONS` in the default sampler's choice.

    Returns:
        :class:`~dpsample.privacy.PrivateResult` with ``value`` the finder's output,
        ``privacy`` the composed guarantee and ``info`` a :class:`WarmStartInfo`.

    Raises:
        ValueError: Invalid budget, split, sampler, finder, variant, options or net
            (the message lists the valid choices); no compact ``K``; ``eps_A n <=
            d`` for the default net; a sampler without ``psi`` and no
            ``declared_psi``.
        TypeError: A non-key ``rng_key``, a non-Problem ``problem``.
        dpsample.errors.MissingConstantError: A constant a stage needs is missing.
        dpsample.errors.BudgetExceededError: The ledger cannot afford the stages.

    Examples:
        >>> import jax, jax.numpy as jnp, dpsample
        >>> from dpsample.pipelines import warm_start
        >>> data = {"z": jnp.linspace(0.2, 0.6, 200)[:, None]}
        >>> prob = dpsample.Problem(lambda x, z: 0.5 * jnp.sum((x - z["z"]) ** 2),
        ...     data, dpsample.Ball(1.0, dim=1), lipschitz=2.0, smoothness=1.0,
        ...     loss_range=2.0)
        >>> res = warm_start(jax.random.key(0), prob, epsilon=2.0, delta=1e-5,
        ...     finder_options={"num_steps": 20})  # the default rule chooses
        >>> res.value.shape, res.info["sampler"], res.info["default_rule"]
        ((1,), 'net', 'warm')
        >>> from dpsample.pipelines.choice import WARM_SPLITS
        >>> res.info["epsilon_split"][0] / 2.0 in WARM_SPLITS
        True
        >>> res.info["psi"] < prob.loss_range, res.privacy.epsilon(1e-5) <= 2.0
        (True, True)
    """
    options = call_options(locals())
    net_given = {k: options.pop(k) for k in _NET_KEYWORDS}
    options["sampler"], options["sampler_options"] = _net_options(
        options["sampler"], options["sampler_options"], net_given
    )
    return WarmStart().solve(rng_key, problem, epsilon=epsilon, delta=delta, **options)


def _net_options(
    sampler: PrivateAlgorithm | str | None,
    sampler_options: Mapping[str, Any] | None,
    given: dict[str, Any],
) -> tuple[PrivateAlgorithm | str | None, Mapping[str, Any] | None]:
    """The convenience's net options (:data:`_NET_KEYWORDS`) folded into the sampler's.

    Any of them chooses the net when no sampler is given; with the net they join
    its ``sampler_options`` (with the convenience's ``max_points`` cap); with
    another sampler they are refused. Returns ``(sampler, sampler_options)``.
    """
    max_points = given.pop("max_points")
    net_options = {k: v for k, v in given.items() if v is not None}
    if max_points != _MAX_POINTS:
        net_options["max_points"] = validation.positive_int("max_points", max_points)
    if sampler is None and net_options:
        sampler = "net"
    if sampler is not None and stage_algorithm(sampler, "sampler").name == "net":
        net_options.setdefault("max_points", _MAX_POINTS)
        return sampler, {**net_options, **(sampler_options or {})}
    if net_options:
        raise ValueError(
            "spacing, net, max_points and chunk_size are the net's options"
        )
    return sampler, sampler_options


def _charge(ledger: BudgetLedger, plan: Plan) -> None:
    """Charge the plan's stages to ``ledger``, or refuse before charging any.

    The stages' composition is the plan's guarantee (the same components, so the
    same epsilon at any delta).
    """
    both = plan.guarantee
    if ledger.would_exceed(both):
        raise BudgetExceededError(
            f"warm_start ({', '.join(p.algorithm for _, p in plan.stages)}: "
            f"epsilon={both.epsilon(ledger.delta):.6g}) "
            f"would bring the ledger to epsilon="
            f"{ledger.total.compose(both).epsilon(ledger.delta):.6g} at "
            f"delta={ledger.delta:g}, over its budget epsilon={ledger.epsilon:g}; "
            "nothing was charged or computed"
        )
    for name, p in plan.stages:
        ledger.charge(ledger_name("warm_start", name, p.algorithm), p.guarantee)


def _run_cold(rng_key: PRNGKey, plan: Plan, problem: Problem) -> PrivateResult:
    """A cold start: the finder alone, with the pipeline's key and whole budget.

    The key is the pipeline's own, unsplit, so a cold start releases exactly what
    the finder run alone with that key and plan releases.
    """
    internal = plan.internal
    finder = internal["finder"]
    plan_b = plan.stage("finder")
    res = finder.run(rng_key, plan_b, problem)
    delta = plan.budget.delta
    stationarity, cold = internal["stationarity"]
    diag = None
    if internal["diagnostics"]:
        diag = _diagnostics(problem, plan_b["x0"], res.value, None, None, problem)
    info = WarmStartInfo(
        algorithm="warm_start",
        sampler="none",
        sampler_choice=plan.params["sampler"].note,
        finder=finder.name,
        variant="erm",
        psi=plan["psi"],
        psi_failure_prob=0.0,
        psi_terms=None,
        psi_source="cold_start",
        uniform_deviation=None,
        finder_initial_gap=plan["psi"],
        split=0.0,
        epsilon_split=plan["epsilon_split"],
        delta_split=plan["delta_split"],
        privacy_sampler=PrivacyGuarantee.none(relation=plan.spec.relation),
        privacy_finder=res.privacy,
        privacy_total=res.privacy,
        epsilon_total=res.privacy.epsilon(delta),
        stationarity_bound=stationarity,
        cold_start_bound=cold,
        dispatcher=internal["dispatcher"],
        finder_info=res.info,
        default_rule=internal["default_rule"],
        privacy_rests_on=res.info.get("privacy_rests_on"),
        diagnostics=diag,
    )
    return PrivateResult(res.value, res.privacy, info)  # type: ignore[arg-type]


def _diagnostics(
    problem: Problem,
    x0: Any,
    x: Any,
    net: Any,
    chunk_size: int | None,
    problem_on_k: Problem,
) -> WarmStartDiagnostics:
    """NOT PRIVATE: quantities read from the private data, for experiments only."""
    risk0 = float(problem.empirical_risk(x0))
    out: dict[str, Any] = {
        "label": "NOT PRIVATE: computed on the private data; never release",
        "empirical_risk_warm_start": risk0,
        "empirical_risk_output": float(problem.empirical_risk(x)),
        "gradient_norm_warm_start": float(jax.numpy.linalg.norm(problem.gradient(x0))),
        "gradient_norm_output": float(jax.numpy.linalg.norm(problem.gradient(x))),
    }
    if net is not None:
        _, net_min = nets.net_minimum(problem_on_k, net=net, chunk_size=chunk_size)
        out["gap_over_net_minimum"] = risk0 - net_min
    if problem.dim <= 200:
        out["min_hessian_eigenvalue_output"] = float(
            stationarity.min_hessian_eigenvalue(problem, x)
        )
    return WarmStartDiagnostics(**out)


precision.scope_public(globals())


class _CallableModule(types.ModuleType):
    """This module, callable as its function :func:`warm_start` (issue 28).

    The package :mod:`dpsample.pipelines` has both this module and the function
    under the name ``warm_start``. The package's attribute is the module (so
    ``import dpsample.pipelines.warm_start as ws`` gives the module), and calling
    it calls the function, so ``dpsample.pipelines.warm_start(key, problem, ...)``
    and ``from dpsample.pipelines import warm_start; warm_start(...)`` work as
    documented. ``dpsample.warm_start`` is the function itself.
    """

    def __call__(self, *args: Any, **kwargs: Any) -> PrivateResult:
        return warm_start(*args, **kwargs)


__signature__ = inspect.signature(warm_start)  # what inspect and IDEs show for a call
sys.modules[__name__].__class__ = _CallableModule
