r"""Stochastic Spider SOSP: the algorithm object and its entry point (seed 000).

:class:`SpiderSOSP` (plan, then Algorithm 1 and Algorithm 2's selection) and
:func:`spider_sosp`; the building blocks ``plan_spider`` and ``stochastic_spider``
are in :mod:`dpsample.finders.spider_sosp.blocks`.
"""

from __future__ import annotations

from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from dpsample._src import precision, validation
from dpsample.base import PrivateAlgorithm
from dpsample.finders import oracles
from dpsample.finders.outputs import release
from dpsample.finders.planning import start_param
from dpsample.finders.spider_sosp.algorithm1 import algorithm_1
from dpsample.finders.spider_sosp.info import SpiderSOSPInfo, SpiderSOSPSchedule
from dpsample.finders.spider_sosp.options import SpiderSOSPOptions
from dpsample.finders.spider_sosp.schedule import (
    NEEDED_FOR,
    PLAN_FIELDS,
    SPIDER_PRESETS,
    cap_schedule,
    check_unconstrained_domain,
    empirical_guarantees,
    option_rows,
    params_with_sources,
    schedule_cost,
    theorem_schedule,
)
from dpsample.finders.spider_sosp.selection import (
    eigenvalue_error,
    selection_queries,
    selection_sensitivities,
)
from dpsample.mechanisms import above_threshold_sosp
from dpsample.options import call_options
from dpsample.plan import Budget, Param, Plan
from dpsample.privacy import PrivacyGuarantee, PrivateResult, epsilon_to_zcdp
from dpsample.privacy.calibration import calibrate
from dpsample.problem import Problem, ProblemSpec
from dpsample.types import ArrayLike, PRNGKey

__all__ = ["SpiderSOSP", "spider_sosp"]


class SpiderSOSP(PrivateAlgorithm):
    r"""Stochastic Spider + AboveThreshold (seed 000 Alg. 1 + 2) in two phases.

    :meth:`plan` computes the schedule of Theorem 4.2 / 4.6 with the exact zCDP
    calibration, from public inputs only; :meth:`run` runs Algorithm 1
    (:func:`stochastic_spider`) and Algorithm 2 on its iterates, and releases the
    selected point. :func:`spider_sosp` documents every option.

    Budget split of a zCDP budget :math:`\varphi`: with ``calibration=
    "closed_form"`` the :math:`\varphi` solving :math:`\varphi + 2\sqrt{\varphi
    \log(1/\delta)} = \varepsilon` (Lemma A.4); by default (``"accountant"``,
    empirical variant) the largest :math:`\varphi` whose schedule's exact
    guarantee meets :math:`(\varepsilon, \delta)` (bisection with
    :func:`~dpsample.privacy.calibrate`, every parameter re-derived from the
    theorem at each candidate :math:`\varphi`; Lemma A.4's conversion leaves
    30-45% of epsilon unspent):

    * empirical (with the default ``selection_share`` ``s = 1/2``; in general
      :math:`(1-s)\varphi/2`, :math:`(1-s)\varphi/2` and :math:`s\varphi`, the
      multipliers scaled by :math:`\sqrt{1/(2(1-s))}`):
      :math:`\varphi/4` for all ``O1`` calls (``N1_max`` of them),
      :math:`\varphi/4` for the ``T`` ``O2`` calls, :math:`\varphi/2` for
      Algorithm 2 (:math:`\varepsilon_{AT} = \sqrt\varphi`); so
      :math:`z_1 = 2\sqrt{2 N_{1,\max}/\varphi}` and :math:`z_2 =
      2\sqrt{2T/\varphi}` (noise multipliers: std of the noise on the sum over the
      per-example bound :math:`G`, resp. :math:`M\|x-y\|`; the replace-one
      sensitivity is twice the bound, so one release is :math:`2/z^2`-zCDP, E3/E4:
      exact :math:`\Delta^2/(2\sigma^2)` with :math:`c_{sens} = 2`).
    * population: every oracle call uses fresh examples of :math:`D_1` and Algorithm
      2 uses the disjoint :math:`D_2`, so by parallel composition each part may use
      the whole budget: every release is :math:`\varphi`-zCDP
      (:math:`z = 2/\sqrt{2\varphi}`) and :math:`\varepsilon_{AT} =
      \sqrt{2\varphi}` (the paper spends :math:`\varphi/2` per part and states
      :math:`\varphi`; spec 000 E15).

    Constants (spec 000 §2.7, §2.8): :math:`\eta = 1/M`; :math:`\kappa` of Theorem
    4.2 (:math:`(G^{4/3}B^{1/3}/M^{5/3})(\sqrt d/(n\sqrt\varphi))^{2/3}`) or 4.6
    (the max of its two branches); :math:`\gamma = 4\sqrt{C(\zeta_2^2\kappa +
    4\zeta_1^2)\log(Td/\omega)}` (Lemma 3.3's form, E10) with ``T``, ``Gamma``,
    ``N1_max`` and the noise depending on :math:`\gamma`: the circularity is solved
    by a damped fixed-point iteration (geometric mean of successive values). ``T``,
    ``N1_drift`` and the kick threshold follow the preset (:data:`SPIDER_PRESETS`);
    :math:`\Gamma = \lceil M L/\sqrt{\rho\gamma}\rceil`; the kick bound is
    :math:`\lceil T/(\Gamma+1)\rceil` (E12). Population batches:
    :math:`b_1 = \lfloor |D_1|/(2N_{1,\max})\rfloor`,
    :math:`b_2 = \lfloor |D_1|/(2T)\rfloor` (E15), so :math:`b_1 N_{1,\max} + b_2 T
    \le |D_1|`: samples are never reused. ``x0`` defaults to the origin (the
    centre of ``R^d``).

    Overrides (``drift_threshold``, ``num_iters``, ``max_o1_calls``, ``alpha``)
    replace the theorem's value; the privacy calibration always uses the values that
    will run.

    Cost and compute budget: the plan's :class:`~dpsample.plan.Cost` is the worst
    case over the branch choices (``schedule_cost``: at most ``N1_max`` O1 calls of
    ``b1`` gradients, the other steps O2 calls of ``2 b2``, and at most ``T``
    selection queries of ``|S|`` gradients and ``|S| d`` Hessian-vector products,
    plus a fixed-work ``O(d^3)`` smallest eigenvalue each).
    With ``Budget(max_evaluations=E)`` a theorem-default ``T`` whose cost exceeds
    ``E`` is capped at the largest ``T' <= T`` that fits, and every other parameter
    is re-derived from the theorem at ``T'`` (the same fixed point with ``T`` fixed,
    so ``Gamma``, ``N1_max``, the noise and, for the population variant, the batch
    sizes follow ``T'``). A ``num_iters`` given by the caller whose cost exceeds
    ``E`` is refused.

    Examples:
        >>> import jax.numpy as jnp
        >>> from dpsample import Budget, Problem
        >>> from dpsample.domains import Unconstrained
        >>> from dpsample.finders.spider_sosp import SpiderSOSP
        >>> prob = Problem(lambda x, z: jnp.sum(jnp.cos(x - z)), jnp.zeros((1000, 2)),
        ...                Unconstrained(2), lipschitz=1.5, smoothness=1.0,
        ...                hessian_lipschitz=1.0, loss_range=4.0)
        >>> plan = SpiderSOSP().plan(prob.spec, Budget(1.0, 1e-5))
        >>> plan["max_o1_calls"] == min(plan["n1_drift"] + plan["n1_kick"],
        ...                             plan["num_iters"])
        True
        >>> z1, z2 = plan["noise_multiplier_o1"], plan["noise_multiplier_o2"]
        >>> rho = 2 * plan["max_o1_calls"] / z1**2 + 2 * plan["num_iters"] / z2**2
        >>> abs(rho + plan["epsilon_select"] ** 2 / 2 - plan["zcdp"]) < 1e-12
        True

    References:
        Seed 000, Theorems 4.2 and 4.6, Lemmas 3.3-3.7, App. C.1 and C.4; spec 000
        §2.5-2.8 and §6.2.
    """

    name = "spider_sosp"
    kind = "finder"
    seed = "000"
    theorem = "Algorithms 1-2, Theorems 4.2 (empirical) / 4.6 (population)"
    guarantee_type = (
        "zCDP: N1_max O1 + T O2 Gaussian releases and pure AboveThreshold, "
        "converted to (epsilon, delta)"
    )
    summary = "Stochastic Spider with drift control + AboveThreshold SOSP selection"
    # its plan accounts every iteration (24 s at 1e5 iterations)
    max_counts = {"num_iters": 10**4}

    #: Its variant in a warm-start pipeline's ERM (Eq. (2)) and population (Eq. (3),
    #: its own half of the data) variants.
    pipeline_variant_options: ClassVar[dict[str, dict[str, str]]] = {
        "erm": {"variant": "empirical"},
        "population": {"variant": "population"},
    }

    options_type = SpiderSOSPOptions

    def _plan(self, spec: ProblemSpec, budget: Budget, **options: Any) -> Plan:
        opts = SpiderSOSPOptions.from_options(options)
        variant, preset, kick_mode = opts.variant, opts.preset, opts.kick_mode
        calibration, selection_order = opts.calibration, opts.selection_order
        epsilon, delta = validation.check_privacy(budget.epsilon, budget.delta)
        enforce = oracles.check_enforce(opts.enforce_sensitivity)
        if calibration not in ("accountant", "closed_form"):
            raise ValueError(
                "Expected calibration 'accountant' or 'closed_form', got "
                f"{calibration!r}"
            )
        if selection_order not in ("backward", "forward"):
            raise ValueError(
                "Expected selection_order 'backward' or 'forward', got "
                f"{selection_order!r}"
            )
        selection_share = validation.finite_scalar(
            "selection_share", opts.selection_share
        )
        if not 0.0 < selection_share < 1.0:
            raise ValueError(
                f"Expected selection_share in (0, 1), got {selection_share!r}"
            )
        check_unconstrained_domain(spec.domain, spec.dim)
        x0_param = start_param(spec, opts.x0, "the origin")
        omega = validation.delta_in_open_unit(opts.failure_prob, name="failure_prob")
        if variant not in ("empirical", "population"):
            raise ValueError(
                f"Expected variant 'empirical' or 'population', got {variant!r}"
            )
        if variant == "population" and selection_share != 0.5:
            raise ValueError(
                "selection_share splits the empirical variant's budget; the "
                "population variant's Algorithm 2 has D2 to itself (parallel "
                "composition)"
            )
        if preset not in SPIDER_PRESETS:
            raise ValueError(
                f"Expected preset in {tuple(SPIDER_PRESETS)}, got {preset!r}"
            )
        if kick_mode not in ("o1", "perturb"):
            raise ValueError(f"Expected kick_mode 'o1' or 'perturb', got {kick_mode!r}")
        kick_budget = opts.kick_budget
        if kick_mode == "perturb":
            if kick_budget not in (None, "none"):
                raise ValueError(
                    "kick_mode='perturb' makes no kick O1 calls: no budget"
                )
            kick_budget = "none"
        elif kick_budget is None:
            kick_budget = "shared" if preset == "paper" else "separate"
        elif kick_budget not in ("shared", "separate"):
            raise ValueError(
                f"Expected kick_budget 'shared' or 'separate', got {kick_budget!r}"
            )
        for name in ("lipschitz", "smoothness", "hessian_lipschitz"):
            validation.require_constant(
                name, getattr(spec, name), needed_for=NEEDED_FOR
            )
        if opts.initial_gap is None:
            b_c = validation.require_constant(
                "loss_range",
                spec.loss_range,
                needed_for=NEEDED_FOR + " (or initial_gap=)",
            )
        else:
            b_c = validation.positive("initial_gap", opts.initial_gap)
        num_iters, max_o1_calls = opts.num_iters, opts.max_o1_calls
        alpha, drift_threshold = opts.alpha, opts.drift_threshold
        if num_iters is not None:
            num_iters = validation.positive_int("num_iters", num_iters)
        if max_o1_calls is not None:
            max_o1_calls = validation.positive_int("max_o1_calls", max_o1_calls)
        if alpha is not None:
            alpha = validation.positive("alpha", alpha)
        if drift_threshold is not None:
            drift_threshold = validation.positive("drift_threshold", drift_threshold)
        phi_closed = epsilon_to_zcdp(epsilon, delta)  # Lemma A.4, exact

        def solve(t: int | None, phi: float) -> dict[str, Any]:
            return theorem_schedule(
                spec,
                phi,
                variant=variant,
                preset=preset,
                omega=omega,
                kick_mode=kick_mode,
                kick_budget=kick_budget,
                b_c=b_c,
                drift_threshold=drift_threshold,
                num_iters=t,
                max_o1_calls=max_o1_calls,
                alpha=alpha,
                selection_share=selection_share,
            )

        phi = phi_closed
        if calibration == "accountant" and variant == "empirical":
            # The zCDP budget phi' whose schedule's exact guarantee (PLD/RDP of the
            # Gaussian releases composed with pure AboveThreshold) meets (eps,
            # delta): Lemma A.4's conversion is loose, so phi' > phi_closed.
            def make_guarantee(scale: float) -> PrivacyGuarantee:
                v = solve(num_iters, phi_closed / scale)
                return empirical_guarantees(spec, v, enforce)[3]

            try:
                cal = calibrate(
                    make_guarantee,
                    epsilon=epsilon,
                    delta=delta,
                    initial=1.0,
                    min_lower=1e-6,
                    max_upper=1.0,
                    rtol=1e-3,
                )
                phi = phi_closed / cal.noise
            except OverflowError:
                # dp-accounting's PLD overflows at absurd budgets (epsilon ~ 1e10):
                # keep Lemma A.4's phi, a valid (if loose) calibration.
                pass
        values = solve(num_iters, phi)
        cost = schedule_cost(values, spec.dim)
        cap = budget.max_evaluations
        capped_from = None
        if cap is not None and cost.evaluations > cap:
            if num_iters is not None:
                raise ValueError(
                    f"num_iters={num_iters} needs up to {cost.evaluations:,} "
                    f"per-example evaluations, over max_evaluations={cap:,}"
                )
            values, capped_from = cap_schedule(
                lambda t: solve(t, phi), values, cap, spec.dim
            )
            cost = schedule_cost(values, spec.dim)
        values.update(
            variant=variant,
            preset=preset,
            kick_mode=kick_mode,
            kick_budget=kick_budget,
            selection_order=selection_order,
            selection_share=selection_share,
        )
        rows = option_rows(
            opts,
            values,
            x0_param,
            enforce=enforce,
            initial_gap=b_c,
            capped_from=capped_from,
            cap=cap,
        )
        params = params_with_sources(values, rows, preset=preset)
        if phi != phi_closed:
            params["zcdp"] = Param(
                phi,
                "calibrated",
                "largest phi whose exact guarantee meets (eps, delta); Lemma A.4's "
                f"closed form gives {phi_closed:.6g}",
            )
        # Algorithm 1's oracles, planned on the spec of the data they will see.
        relation = spec.relation
        if variant == "empirical":
            o1, o2, alg1, guarantee = empirical_guarantees(spec, values, enforce)
            sequential = guarantee
        else:
            train_spec = spec.replace(n=values["n_train"])
            o1 = oracles.first_kind(
                train_spec,
                noise_multiplier=values["noise_multiplier_o1"],
                sampling="fresh",
                batch_size=values["batch_o1"],
                enforce_sensitivity=enforce,
            )
            o2 = oracles.second_kind(
                train_spec,
                noise_multiplier=values["noise_multiplier_o2"],
                sampling="fresh",
                batch_size=values["batch_o2"],
                enforce_sensitivity=enforce,
            )
            # Fresh disjoint batches: each example is in at most one release, so the
            # run costs one release of the most expensive kind (parallel composition).
            alg1 = o1.run_guarantee(values["max_o1_calls"])
            if values["noise_multiplier_o2"] < values["noise_multiplier_o1"]:
                alg1 = o2.run_guarantee(values["num_iters"])
            alg2 = PrivacyGuarantee.pure(values["epsilon_select"], relation=relation)
            sequential = alg1.compose(alg2)
            rho_1 = alg1.zcdp_rho()
            rho_2 = values["epsilon_select"] ** 2 / 2.0
            guarantee = PrivacyGuarantee.zcdp(max(rho_1, rho_2), relation=relation)
        return Plan(
            algorithm=self.name,
            spec=spec,
            budget=budget,
            params=params,
            guarantee=guarantee,
            cost=cost,
            internal={
                "o1": o1,
                "o2": o2,
                "alg1_guarantee": alg1,
                "sequential_guarantee": sequential if variant == "population" else None,
                "tail_candidate": values["tail_candidate"],
            },
        )

    def _run(self, rng_key: PRNGKey, plan: Plan, problem: Problem) -> PrivateResult:
        x0 = jnp.asarray(plan["x0"], jnp.float64)
        k_split, k_perm, k_alg1, k_alg2 = jax.random.split(rng_key, 4)
        if plan["variant"] == "population":
            # Public, data-independent split and batch order (E36).
            n_train = plan["n_train"]
            order = np.asarray(jax.random.permutation(k_split, problem.n))
            d1 = jax.tree.map(lambda leaf: leaf[order[:n_train]], problem.data)
            d2 = jax.tree.map(lambda leaf: leaf[order[n_train:]], problem.data)
            train, select = problem.replace(data=d1), problem.replace(data=d2)
            perm = jax.random.permutation(k_perm, n_train)
        else:
            train = select = problem
            perm = None
        xs, run = algorithm_1(k_alg1, plan, train, x0, perm)
        preset = plan["preset"]
        common = dict(
            algorithm="Stochastic Spider + AboveThreshold (seed 000 Alg. 1 + 2)",
            plan=SpiderSOSPSchedule(**{k: plan[k] for k in PLAN_FIELDS}),
            preset_label="paper" if preset == "paper" else f"non-paper ({preset})",
            n_o1_drift=run.n_o1_drift,
            n_o1_kick=run.n_o1_kick,
            n_o2=run.n_o2,
            cap_hit=run.cap_hit,
            branch_counts=run.branch_counts,
            samples_used=run.samples_used,
            sequential_guarantee=plan.internal["sequential_guarantee"],
        )
        if run.cap_hit:
            info = SpiderSOSPInfo(
                **common,
                selected=None,
                fallback="x0 (O1 cap reached: data-independent output, E7)",
                released="x0",
            )
            return PrivateResult(x0, plan.guarantee, info)  # type: ignore[arg-type]
        xs_np = np.asarray(xs)
        # The candidates in a public order: x_T, ..., x_1 ("backward", default) or
        # x_1, ..., x_T (the paper's). AboveThreshold's guarantee holds for any
        # order fixed in advance, and the work stays one gradient and one Hessian
        # per examined candidate.
        backward = plan["selection_order"] == "backward"
        candidates = xs_np[::-1] if backward else xs_np
        # The "practical" preset examines the tail average (the mean of the last
        # ceil(T/2) iterates, post-processing of Algorithm 1's release) first: the
        # iterates settle at the error of their O1 anchor and the mean cancels most
        # of it (TAIL_CANDIDATE).
        tail = bool(plan.internal.get("tail_candidate", False))
        if tail:
            tail_value, _ = release(k_alg2, xs, "tail_average", plan.spec.domain)
            candidates = np.concatenate([np.asarray(tail_value)[None], candidates])
        # Clipped at the declared G and M unless the plan opts out
        # (enforce_sensitivity=False, the paper's unclipped Algorithm 2).
        grad_norm, min_eig = selection_queries(
            select,
            candidates,
            enforce_sensitivity=bool(plan.get("enforce_sensitivity", True)),
        )
        spec = plan.spec
        # The eigenvalue query is lambda_hat + eta with fixed work; Delta_M carries
        # 2 eta for its error (selection.py).
        grad_sens, eig_sens = selection_sensitivities(
            spec.dim, spec.lipschitz, spec.smoothness, plan["n_select"]
        )
        eta = eigenvalue_error(spec.dim, spec.smoothness)
        sel = above_threshold_sosp(
            k_alg2,
            grad_norm,
            min_eig,
            alpha=plan["alpha_select"],
            hessian_lipschitz=spec.hessian_lipschitz,
            epsilon=plan["epsilon_select"],
            grad_sensitivity=grad_sens,
            eig_sensitivity=eig_sens,
            failure_prob=plan["failure_prob"],
            num_candidates=len(candidates),
            relation=spec.relation,
        )
        index = int(sel.value)
        thresholds = {
            k: sel.info[k]
            for k in ("grad_threshold", "eig_threshold", "grad_slack", "eig_slack")
        }
        # Lemma 4.1 bounds the query lambda_hat + eta <= lambda_min + 2 eta.
        thresholds["eig_slack"] += 2.0 * eta
        thresholds["eig_error"] = eta
        if index < 0:
            info = SpiderSOSPInfo(
                **common,
                selected=None,
                fallback="x0 (AboveThreshold returned no candidate)",
                released="x0",
                **thresholds,
            )
            return PrivateResult(x0, plan.guarantee, info)  # type: ignore[arg-type]
        if tail:
            if index == 0:
                info = SpiderSOSPInfo(
                    **common,
                    selected=None,
                    fallback=None,
                    released="tail_average",
                    **thresholds,
                )
                return PrivateResult(  # type: ignore[arg-type]
                    jnp.asarray(candidates[0]), plan.guarantee, info
                )
            index -= 1
        if backward:
            index = plan["num_iters"] - 1 - index
        info = SpiderSOSPInfo(
            **common, selected=index, fallback=None, released="iterate", **thresholds
        )
        value = jnp.asarray(xs_np[index])
        return PrivateResult(value, plan.guarantee, info)  # type: ignore[arg-type]


def spider_sosp(
    rng_key: PRNGKey,
    problem: Problem,
    *,
    epsilon: float,
    delta: float,
    x0: ArrayLike | None = None,
    variant: str = "empirical",
    preset: str = "practical",
    failure_prob: float = 0.05,
    drift_threshold: float | None = None,
    num_iters: int | None = None,
    max_o1_calls: int | None = None,
    alpha: float | None = None,
    kick_mode: str = "o1",
    kick_budget: str | None = None,
    initial_gap: float | None = None,
    calibration: str = "accountant",
    selection_order: str = "backward",
    selection_share: float = 0.5,
    enforce_sensitivity: bool = True,
) -> PrivateResult:
    r"""Private alpha-SOSP by Stochastic Spider + AboveThreshold (seed 000 Alg. 1 + 2).

    ``SpiderSOSP().solve(rng_key, problem, epsilon=..., delta=..., **options)``
    (:class:`SpiderSOSP` documents the plan: budget split, constants, cost and the
    compute-budget rule). Runs Algorithm 1 (:func:`stochastic_spider`) with the
    plan's parameters, then Algorithm 2
    (:func:`~dpsample.mechanisms.above_threshold_sosp`) on its iterates with the
    exact queries :math:`\|\nabla F_S(x_i)\|` and
    :math:`\lambda_{\min}(\nabla^2 F_S(x_i))` (float64 ``eigvalsh``, E34), both
    computed for every candidate it examines (a gradient, a Hessian and an
    ``eigvalsh`` of fixed shapes each, so the work reveals only the output),
    sensitivities :math:`c_{sens}G/|S|` and :math:`c_{sens}M/|S|` (E5), the plan's
    :math:`\alpha_1` and :math:`\varepsilon_{AT}`.

    * ``variant="empirical"`` (Theorem 4.2): both stages see all of ``D``
      (:math:`S = D`); an :math:`\alpha`-SOSP of :math:`F_D` is sought.
    * ``variant="population"`` (Theorem 4.6): one public random permutation (from
      ``rng_key``) splits ``D`` into :math:`D_1` (:math:`\lceil n/2\rceil`, the
      oracles, fresh batches) and :math:`D_2` (:math:`\lfloor n/2\rfloor`, the
      selection, :math:`S = D_2`); an SOSP of the population risk is sought.

    Released value: the selected candidate: with the default ``preset="practical"``
    Algorithm 2 examines the tail average of the iterates (the mean of the last
    ``ceil(T/2)``, post-processing of Algorithm 1's release) first, then the iterates
    in ``selection_order`` (``info["released"]`` says which was released; ``T + 1``
    candidates in its guarantee and cost); with the other presets only the
    iterates. If AboveThreshold outputs ⊥ (no candidate
    passes; the paper does not say what to do, E6) the public ``x0`` is released and
    ``info["fallback"] = "x0"``; if the O1 cap would have been exceeded (E7) the run
    stops, Algorithm 2 is skipped and ``x0`` is released (``info["cap_hit"]``): the
    paper's "T arbitrary points", data-independent.

    Privacy:
        Neighbouring relation: replace-one (sensitivity multiplier
        :math:`c_{sens} = 2`, E3). Per release: O1 has sensitivity :math:`2G/b_1`,
        O2 :math:`2\min(M\|x - y\|, 2G)/b_2` (``b = n`` for the empirical
        variant; plus O2's rounding floor), with noise multipliers from the plan
        (noise over sensitivity ``z / 2``); Algorithm 2 is
        :math:`\varepsilon_{AT}`-DP (pure). The kick noise, the branch choices, the
        counters and the abort are post-processing of released values.

        * empirical: sequential composition of at most ``N1_max`` O1 releases
          (charged at the cap), ``T`` O2 releases and Algorithm 2, i.e.
          ``gaussian(z1 / 2).repeat(N1_max)``, ``gaussian(z2 / 2).repeat(T)`` and
          ``pure(eps_AT)``; zCDP :math:`\varphi/4 + \varphi/4 + \varphi/2 =
          \varphi`, with :math:`\varphi` calibrated so that
          ``privacy.epsilon(delta) <= epsilon`` by the exact accountant (see
          ``calibration``).
        * population: each example of :math:`D_1` is used by at most one release
          (fresh batches, enforced by the cap and ``b1 N1_max + b2 T <= |D1|``),
          and :math:`D_2` only by Algorithm 2. A replaced example lies in one
          half: in :math:`D_1` the loss is one release's (:math:`\varphi`-zCDP,
          Algorithm 2 is then post-processing given :math:`D_2`), in :math:`D_2`
          it is Algorithm 2's (:math:`\varepsilon_{AT}^2/2 = \varphi`-zCDP). The
          guarantee is the maximum, returned as ``PrivacyGuarantee.zcdp(phi)``
          (parallel composition; the sequential composition is in
          ``info["sequential_guarantee"]`` for comparison).

    Args:
        rng_key: a PRNG key (consumed: split for the split permutation, Algorithm 1
            and Algorithm 2).
        problem: a :class:`~dpsample.problem.Problem` on
            :class:`~dpsample.domains.Unconstrained` declaring ``lipschitz``,
            ``smoothness``, ``hessian_lipschitz`` and ``loss_range`` (the range of
            :math:`F`, E21).
        epsilon: target epsilon ``> 0``.
        delta: target delta in ``(0, 1)``.
        x0: the public initial point (finite, shape ``(d,)``; default the origin).
        variant: ``"empirical"`` or ``"population"``.
        preset: ``"practical"`` (default, non-paper: ``T`` from one O1 anchor's
            error, :func:`~dpsample.finders.spider_sosp.schedule.anchor_steps`, and
            Algorithm 2 examines the tail average first; issue 24),
            ``"practical_iterate"`` (non-paper constants, ``T = c_T B M/\gamma^2``,
            an iterate released: the default before issue 24) or ``"paper"``
            (:data:`SPIDER_PRESETS`).
        failure_prob: :math:`\omega`, default 0.05.
        drift_threshold: override of :math:`\kappa`.
        num_iters: override of ``T`` (>= 1).
        max_o1_calls: override of the O1 cap ``N1_max``.
        alpha: override of :math:`\alpha_1` (kick threshold and Algorithm 2).
        kick_mode: ``"o1"`` (paper) or ``"perturb"`` (variant, no kick O1 calls).
        kick_budget: ``"shared"`` (kick O1 calls count toward the Lemma 3.7 cap;
            default for ``"paper"``) or ``"separate"`` (cap = drift bound + kick
            bound; default for the non-paper presets).
        initial_gap: a public bound ``B >= F(x0) - inf F`` used in place of the
            declared ``loss_range`` wherever the theorems use ``B`` as the initial
            gap (``kappa``, ``T``, ``N1_drift``, the log factors): e.g. a warm
            start's ``psi`` (seed 003 Theorem 3.4). It changes the schedule only;
            the calibration is always to what runs.
        calibration: ``"accountant"`` (default): the zCDP budget :math:`\varphi`
            of the empirical variant is the largest whose schedule's exact
            guarantee (dp-accounting PLD/RDP of the Gaussian releases composed with
            the pure AboveThreshold) meets ``(epsilon, delta)``, so the run spends
            its budget (within 0.1% in :math:`\varphi`, never above; issue 16);
            every parameter is then the theorem's at that :math:`\varphi`.
            ``"closed_form"``: the paper's :math:`\varphi` of Lemma A.4, whose
            zCDP-to-DP conversion is loose (about 0.55-0.7 of epsilon spent). The
            population variant's guarantee is stated in zCDP, where Lemma A.4 is
            exact, so both options agree there.
        selection_order: the public order in which Algorithm 2 examines the
            candidates. ``"backward"`` (default, non-paper): ``x_T, x_{T-1},
            ..., x_1``, so the released point is the *latest* iterate that
            passes; ``"forward"``: the paper's ``x_1, ..., x_T``, which releases
            the first iterate that passes the (loose) thresholds, typically one
            still escaping the saddle (issue 16: on seed 000's cosine saddle at
            ``n = 4000``, ``epsilon = 10``, ``||grad F||`` 0.07-0.44 forward
            against 0.006-0.034 backward; ``docs/finders.md``). AboveThreshold's
            guarantee and Lemma 4.1 hold for any order fixed before the run, and
            each examined candidate costs one gradient and one Hessian either way.
        selection_share: the share ``s`` of the zCDP budget :math:`\varphi`
            spent by Algorithm 2 in the empirical variant: :math:`\varepsilon_{AT}
            = \sqrt{2 s \varphi}` and each oracle kind gets :math:`(1 - s)
            \varphi / 2`. Default 1/2, the paper's split; a smaller share buys
            little on the cosine saddle (``docs/finders.md``). Not used by the
            population variant (Algorithm 2 runs on :math:`D_2`).
        enforce_sensitivity: Algorithm 1's oracles clip per-example gradients at
            the declared ``G`` (O1) and per-example gradient differences at
            ``min(M ||x - y||, 2G)`` (O2), so their sensitivities hold whatever
            the data (default). ``False`` runs the paper's unclipped oracles; the
            guarantee is then *conditional* on the declared constants.

    Returns:
        ``PrivateResult(value, privacy, info)``; ``info`` (a
        :class:`SpiderSOSPInfo`) holds the schedule (``info["plan"]``, the plan's
        parameters named in :data:`PLAN_FIELDS`), the counters of
        Algorithm 1, ``cap_hit``, ``selected`` (index or ``None``), ``fallback``,
        ``released`` (``"tail_average"``, ``"iterate"`` or ``"x0"``), the
        Algorithm 2 thresholds and slacks, and ``preset_label`` (``"paper"`` or
        ``"non-paper (<preset>)"``).

    Raises:
        ValueError: invalid privacy parameters or options, ``num_iters < 1``,
            non-finite or mis-shaped ``x0``, a bounded domain, an infeasible
            population plan (all before any private computation; nothing raises
            during the run, see the module docstring on non-finite values).
        MissingConstantError: a needed constant is not declared.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> from dpsample import Problem
        >>> from dpsample.domains import Unconstrained
        >>> from dpsample.finders.spider_sosp import spider_sosp
        >>> loss = lambda x, z: jnp.sum(-jnp.cos(x - z))   # minimum at x = z = 0
        >>> prob = Problem(loss, jnp.zeros((2000, 2)), Unconstrained(2),
        ...                lipschitz=1.5, smoothness=1.0, hessian_lipschitz=1.0,
        ...                loss_range=4.0)
        >>> res = spider_sosp(jax.random.key(0), prob, epsilon=4.0, delta=1e-5,
        ...                   x0=jnp.array([1.0, -1.0]), num_iters=60)
        >>> res.info["released"], bool(jnp.linalg.norm(res.value) < 0.5)
        ('tail_average', True)
        >>> res.privacy.epsilon(1e-5) <= 4.0
        True

    References:
        Ganesh, Liu, Oh & Thakurta, `Private (Stochastic) Non-Convex Optimization
        Revisited: Second-Order Stationary Points and Excess Risks
        <https://arxiv.org/abs/2302.09699>`_, 2023 (seed 000: Algorithms 1-2,
        Theorems 4.2, 4.6, Lemma 4.1). Spec 000 §2 and §6.1.
        Feldman & Zrnic, `Individual Privacy Accounting via a Rényi Filter
        <https://arxiv.org/abs/2008.11193>`_, 2021.
    """
    return SpiderSOSP().solve(
        rng_key, problem, epsilon=epsilon, delta=delta, **call_options(locals())
    )


precision.scope_public(globals())
