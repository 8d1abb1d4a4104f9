r"""DP-SGD for quasar-convex losses as a warm start (seed 003 Algorithm 3, App. D).

A loss is ``q``-quasar-convex (``q`` in ``(0, 1]``) with respect to a minimiser
``x*`` when ``F(x*) >= F(x) + <nabla F(x), x* - x> / q`` for all ``x``: star-convex
for ``q = 1``, and much weaker for small ``q`` (it allows non-convex valleys).
For such losses noisy (sub)gradient descent reaches a small excess risk
in expectation; :func:`dp_sgd_quasar` runs the high-probability variant that seed 003
uses as the warm start ``A`` of Algorithm 2: ``k = ceil(log2(2/zeta))`` independent
DP-SGD runs, then the exponential mechanism picks one of the ``k`` outputs.

Implementation choices (spec 003 section 2.4 and its [I] notes):

* Each run is :func:`dpsample.finders.dp_sgd` with **full-batch** gradients
  (``sampling="full_batch"``) clipped at the declared ``G`` (a no-op when ``G``
  holds, and privacy never rests on it), projected onto the ball ``K``, with a
  uniformly random iterate as output, and the schedule of Proposition D.1,
  ``T = eps_run^2 n^2 / (d ln(1/delta_run))``. The paper's minibatches drawn with
  replacement (and its misprinted batch condition ``b >~ sqrt(d eps)``) are not
  used: a full batch is accounted exactly for what runs, needs no amplification
  argument, and gives the same in-expectation bound with ``E||g||^2 <= G^2 +
  d sigma^2``.
* Budget inside the stage's ``(eps_A, delta_A)``: half of ``eps_A`` to the runs
  (``eps_A/(2k)`` and ``delta_A/k`` each, as the paper's ``eps/(4k)`` when
  ``eps_A = eps/2``), half to the selection (pure). The guarantee returned is the
  adaptive composition of what ran (tightest route), at most ``(eps_A, delta_A)``.
* The candidates lie in ``K`` (projection), so the selection's utility
  ``-F_D(x_i)`` has bounded range of differences ``osc/n`` (``osc =
  problem.utility_oscillation()``): the mechanism samples ``Pr[i] ∝
  exp(-k_sel F_D(x_i))`` with ``k_sel = eps_sel n / osc``, exactly as the net
  exponential mechanism (errata E28). The bound is enforced, not assumed: each
  example's losses at the ``k`` candidates are clipped to a range ``osc/2``
  (:func:`_risks`; a no-op when the declared constants hold), so the selection is
  ``eps_sel``-DP whatever the data.
* Public rules (no exception after the eager checks): ``x0`` must lie in ``K``
  (``ValueError`` before any private computation otherwise); a candidate whose
  empirical risk is not finite (the loss returned NaN or inf there, breaking its
  declared constants on ``K``) is never selected, and if no candidate's risk is
  finite the selection is uniform over the ``k`` candidates (:func:`_select`). The
  runs themselves clip, so a non-finite per-example gradient contributes zero there.
* ``psi`` (:func:`dpsample.bounds.quasar_sgd_warm_start_bound`) uses the diameter of
  ``K`` as the distance bound ``D`` (every iterate lies in ``K`` and so does ``x*``)
  and the noise the accountant calibrated; the learning rate is Proposition D.1's
  ``D / sqrt(T (G^2 + d sigma^2))`` evaluated with a public over-estimate of
  ``sigma`` (the zCDP calibration of ``T`` full-batch Gaussian steps), which only
  costs a constant in ``psi``.

References:
    A. Lowy, J. Ullman and S. J. Wright, `How to make the gradients small privately
    <https://arxiv.org/abs/2402.11173>`_, ICML 2024 (Algorithm 3, Proposition D.1,
    Corollary 5.3). R. Bassily, A. Smith and A. Thakurta, `Private empirical risk
    minimization: efficient algorithms and tight error bounds
    <https://arxiv.org/abs/1405.7085>`_, FOCS 2014 (Appendix D).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from dpsample import bounds
from dpsample._src import precision, validation
from dpsample.base import AlgorithmInfo, PrivateAlgorithm, PublicRecord
from dpsample.domains import Ball
from dpsample.errors import MissingConstantError
from dpsample.finders.dp_sgd import DPSGD
from dpsample.mechanisms import exponential_logits, gumbel_max
from dpsample.options import call_options
from dpsample.pipelines.budget import resolve_failure_prob
from dpsample.pipelines.quasar_options import MAX_STEPS, QuasarSGDOptions
from dpsample.plan import Budget, Cost, Param, Plan
from dpsample.privacy import PrivacyGuarantee, PrivateResult, epsilon_to_zcdp
from dpsample.problem import Problem, ProblemSpec
from dpsample.types import ArrayLike, PRNGKey

__all__ = ["QuasarSGD", "QuasarSGDInfo", "QuasarSchedule", "dp_sgd_quasar"]


@dataclasses.dataclass(frozen=True, eq=False)
class QuasarSchedule(PublicRecord):
    """Proposition D.1's public schedule of one run (``info.schedule``).

    Also a read-only mapping (``info["schedule"]["num_steps"]``).

    Attributes:
        num_steps: ``T``.
        learning_rate: ``D / sqrt(T (G^2 + d sigma^2))``.
        noise_std_estimate: The over-estimate ``sigma`` the learning rate uses.
        source: Where ``T`` comes from (the proposition, capped, or the user).
    """

    num_steps: int
    learning_rate: float
    noise_std_estimate: float
    source: str


def _theorem_schedule(
    *,
    n: int,
    dim: int,
    lipschitz: float,
    diameter: float,
    epsilon: float,
    delta: float,
    num_steps: int | None = None,
) -> QuasarSchedule:
    r"""Proposition D.1's public schedule for one run at ``(epsilon, delta)``.

    ``T = eps^2 n^2 / (d ln(1/delta))`` (at least 1, at most :data:`MAX_STEPS`),
    and the learning rate ``D / sqrt(T (G^2 + d sigma^2))`` with ``sigma`` the
    over-estimate ``sqrt(T / (2 rho)) 2 G / n`` (``T`` full-batch Gaussian releases
    of replace-one sensitivity ``2G/n`` at zCDP ``rho``, the largest with
    ``rho + 2 sqrt(rho ln(1/delta)) <= eps``). Public inputs only.

    Args:
        n: Number of examples.
        dim: ``d``.
        lipschitz: ``G``.
        diameter: ``D``.
        epsilon: The run's epsilon.
        delta: The run's delta.
        num_steps: Override of ``T``.

    Returns:
        A :class:`QuasarSchedule` (``num_steps``, ``learning_rate``,
        ``noise_std_estimate``, ``source``).

    Examples:
        >>> from dpsample.pipelines.quasar import _theorem_schedule
        >>> s = _theorem_schedule(n=1000, dim=2, lipschitz=1.0, diameter=2.0,
        ...                     epsilon=0.5, delta=1e-6)
        >>> s["num_steps"]
        2000
        >>> s = _theorem_schedule(n=1000, dim=2, lipschitz=1.0, diameter=2.0,
        ...                     epsilon=0.05, delta=1e-6)
        >>> s["num_steps"], round(s["learning_rate"], 4)
        (91, 0.0697)
    """
    n = validation.positive_int("n", n)
    d = validation.positive_int("dim", dim)
    g = validation.positive("lipschitz", lipschitz)
    diam = validation.positive("diameter", diameter)
    eps = validation.positive("epsilon", epsilon)
    dlt = validation.delta_in_open_unit(delta)
    if num_steps is None:
        t_paper = (eps * n) ** 2 / (d * math.log(1.0 / dlt))
        t = max(1, min(MAX_STEPS, math.ceil(t_paper)))
        source = "seed 003 Prop. D.1: T = eps^2 n^2 / (d ln(1/delta))" + (
            f", capped at {MAX_STEPS}" if t_paper > MAX_STEPS else ""
        )
    else:
        t = validation.positive_int("num_steps", num_steps)
        source = "user"
    rho = epsilon_to_zcdp(eps, dlt)
    sigma = math.sqrt(t / (2.0 * rho)) * 2.0 * g / n
    eta = diam / math.sqrt(t * (g**2 + d * sigma**2))
    return QuasarSchedule(
        num_steps=t, learning_rate=eta, noise_std_estimate=sigma, source=source
    )


@functools.partial(jax.jit, static_argnames=("loss_fn",))
def _risks(xs: Any, data: Any, half_osc: Any, *, loss_fn: Any) -> Any:
    """``F_D`` at each candidate, each example's losses clipped to a range ``osc/2``.

    Enforces the selection's sensitivity: example ``j``'s losses at the ``k``
    candidates are clipped into ``[l_j, l_j + osc/2]``, ``l_j`` their minimum, so
    for any two examples the difference of their (clipped) loss vectors has range
    at most ``osc`` and the utilities ``-F_D`` of replace-one neighbours differ by
    a constant plus at most ``osc/n`` in range: the exponential mechanism's bound.
    When the declared constants hold this is a no-op (``osc = min(2 G D, 2 B,
    oscillation)``: a ``G``-Lipschitz loss on ``K`` of diameter ``D`` or a loss of
    range ``B`` has per-example range ``<= osc/2``; the bundled losses declare
    ``oscillation = 2 x`` their range). A non-finite loss makes the candidate's
    risk non-finite (excluded by :func:`_select`). Compiled once per shape.

    Examples:
        >>> import jax.numpy as jnp
        >>> from dpsample.pipelines.quasar import _risks
        >>> xs = jnp.array([[0.0], [1.0]])
        >>> data = jnp.array([[1.0], [100.0]])  # the second example breaks osc
        >>> loss = lambda x, z: -jnp.sum(x * z)
        >>> _risks(xs, data, 0.5, loss_fn=loss).tolist()  # range 1/2 per example
        [-50.0, -50.5]
    """
    per_example = jax.vmap(lambda x: jax.vmap(loss_fn, in_axes=(None, 0))(x, data))(
        xs
    )  # (k, n)
    low = jnp.min(per_example, axis=0)
    clipped = jnp.clip(per_example, low, low + half_osc)
    return jnp.mean(clipped, axis=1)


def _select(rng_key: PRNGKey, risks: Any, *, epsilon: float, sensitivity: float) -> int:
    """Exponential-mechanism index over ``u = -risks``, non-finite risks excluded.

    The candidates' risks are computed on the private data during the run, so a
    non-finite one must not raise (:func:`~dpsample.mechanisms.exponential` refuses
    non-finite utilities as inputs). Public rule: a candidate whose risk is NaN or
    ``+-inf`` has probability zero; if no risk is finite, every candidate gets the
    same utility (uniform choice). With finite risks this is exactly
    ``exponential(rng_key, -risks, ...)`` (same logits, same key, same index).

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> from dpsample.pipelines.quasar import _select
        >>> risks = jnp.array([jnp.nan, 0.0, jnp.inf, -jnp.inf])
        >>> {_select(jax.random.key(s), risks, epsilon=1.0, sensitivity=1.0)
        ...  for s in range(20)}
        {1}
    """
    u = -np.asarray(risks, np.float64)
    finite = np.isfinite(u)
    if not finite.any():
        finite[:] = True
        u = np.zeros_like(u)
    else:  # excluded entries get a finite placeholder that leaves the maximum alone
        u = np.where(finite, u, np.max(u[finite]))
    logits = exponential_logits(u, epsilon=epsilon, sensitivity=sensitivity)
    logits = jnp.where(jnp.asarray(finite), logits, -jnp.inf)
    return int(gumbel_max(rng_key, logits))


@dataclasses.dataclass(frozen=True)
class QuasarSGDInfo(AlgorithmInfo):
    """Public facts of a :class:`QuasarSGD` run (``result.info``).

    Attributes:
        algorithm: A description of the algorithm.
        psi: The public warm-start bound (``plan.warm_start.psi``).
        psi_failure_prob: Its failure probability.
        psi_terms: The :class:`~dpsample.bounds.QuasarWarmStartBound`.
        num_runs: ``k``.
        epsilon_run: Each run's epsilon ``eps/(2k)``.
        delta_run: Each run's delta ``delta/k``.
        epsilon_select: The selection's epsilon ``eps/2``.
        selection_inverse_temperature: ``k_sel = eps_sel n / osc``.
        schedule: Proposition D.1's schedule (:class:`QuasarSchedule`).
        noise_std: The runs' noise std on the mean gradient (calibrated).
        run_guarantee: One run's guarantee.
        quasar_convexity: The declared ``q``.
    """

    algorithm: str
    psi: float
    psi_failure_prob: float
    psi_terms: Any
    num_runs: int
    epsilon_run: float
    delta_run: float
    epsilon_select: float
    selection_inverse_temperature: float
    schedule: QuasarSchedule
    noise_std: float
    run_guarantee: PrivacyGuarantee
    quasar_convexity: float
    diagnostics: None = None


class QuasarSGD(PrivateAlgorithm):
    r"""Seed 003 Algorithm 3 (best of ``k`` DP-SGD runs) as a warm-start sampler.

    Registry name ``"quasar_sgd"``, kind ``"sampler"``: it releases one approximate
    minimiser with a public warm-start bound ``plan.warm_start`` (a
    :class:`~dpsample.bounds.QuasarWarmStartBound`), so it can be stage ``A`` of
    :class:`~dpsample.pipelines.WarmStart`. The plan (public inputs only) holds
    ``k``, the plan of one DP-SGD run (``plan.stages``; every run has the same
    plan), the selection's temperature, the guarantee (the adaptive composition of
    the ``k`` runs and the selection), the cost (``k`` runs' gradients and the
    ``k n`` losses of the selection) and ``psi``; see :func:`dp_sgd_quasar` and the
    module docstring for the algorithm and its guarantee.

    Options (declared once:
    :class:`~dpsample.pipelines.quasar_options.QuasarSGDOptions`):
    ``quasar_convexity`` (required: the declared ``q`` in ``(0, 1]``),
    ``failure_prob`` (default ``sqrt(d)/(eps n)``), ``x0``, ``num_steps``,
    ``num_runs``, ``minimizer_gap`` (added to ``psi``). Compute budget: with
    ``Budget(max_evaluations=E)`` each run gets ``(E - k n)/k`` evaluations (its
    DP-SGD cap rule); a ``num_steps`` that does not fit is refused.

    Examples:
        >>> import jax, jax.numpy as jnp, dpsample
        >>> from dpsample.plan import Budget
        >>> from dpsample.pipelines.quasar import QuasarSGD
        >>> data = {"z": jnp.linspace(0.2, 0.6, 400)[:, None]}
        >>> prob = dpsample.Problem(lambda x, z: jnp.abs(x[0] - z["z"][0]), data,
        ...     dpsample.Ball(1.0, dim=1), lipschitz=1.0, loss_range=2.0)
        >>> algo = QuasarSGD(quasar_convexity=1.0, num_steps=50)
        >>> plan = algo.plan(prob.spec, Budget(2.0, 1e-5))
        >>> plan["num_runs"], plan.cost.gradient_evaluations
        (11, 220000)
        >>> res = algo.run(jax.random.key(0), plan, prob.data)
        >>> res.privacy is plan.guarantee, bool(res.info.psi < prob.loss_range)
        (True, True)
    """

    name = "quasar_sgd"
    kind = "sampler"
    seed = "003"
    theorem = "Algorithm 3, Proposition D.1 (high-probability variant)"
    guarantee_type = (
        "(epsilon, delta): k full-batch DP-SGD runs (dp_accounting) composed with "
        "a pure exponential-mechanism selection"
    )
    summary = "best of k DP-SGD runs for quasar-convex losses, with a public psi"
    # its plan composes num_runs runs of num_steps steps (39 s at 1e5 steps)
    max_counts = {"num_steps": 10**4}
    options_type = QuasarSGDOptions

    def _plan(self, spec: ProblemSpec, budget: Budget, **options: Any) -> Plan:
        opts = QuasarSGDOptions.from_options(options)
        quasar_convexity, num_steps = opts.quasar_convexity, opts.num_steps
        epsilon, delta = validation.check_privacy(budget.epsilon, budget.delta)
        if quasar_convexity is None:
            raise MissingConstantError(
                "quasar_sgd needs the declared quasar-convexity constant: pass "
                "quasar_convexity=q with q in (0, 1]"
            )
        q = validation.positive("quasar_convexity", quasar_convexity)
        if q > 1.0:
            raise ValueError(f"Expected quasar_convexity={q!r} in (0, 1]")
        n, d = spec.n, spec.dim
        zeta = resolve_failure_prob(
            opts.failure_prob, dim=d, epsilon=epsilon, n=n
        ).value
        gap = validation.nonnegative("minimizer_gap", opts.minimizer_gap)
        domain = spec.domain
        if not isinstance(domain, Ball):
            raise ValueError(
                "dp_sgd_quasar needs a Ball domain K (its psi uses diam K and the "
                f"selection needs bounded candidates), got {type(domain).__name__}"
            )
        g = validation.require_constant(
            "lipschitz", spec.lipschitz, needed_for="DP-SGD for quasar-convex losses"
        )
        osc = spec.utility_oscillation()
        if osc is None:
            raise MissingConstantError("The selection needs an oscillation bound")
        if opts.num_runs is None:
            k = max(1, math.ceil(math.log2(2.0 / zeta)))
        else:
            k = validation.positive_int("num_runs", opts.num_runs)
        x0 = opts.x0
        x_start = domain.center_point if x0 is None else spec.check_start(x0)
        x_start = jnp.broadcast_to(jnp.asarray(x_start, jnp.float64), (d,))
        eps_run, delta_run, eps_sel = epsilon / (2.0 * k), delta / k, epsilon / 2.0
        sched = _theorem_schedule(
            n=n,
            dim=d,
            lipschitz=g,
            diameter=domain.diameter,
            epsilon=eps_run,
            delta=delta_run,
            num_steps=num_steps,
        )
        cap = budget.max_evaluations
        run_cap = None if cap is None else max(1, (cap - k * n) // k)
        capped = False
        if (
            num_steps is None
            and run_cap is not None
            and sched["num_steps"] * n > run_cap
            and run_cap >= n
        ):
            # Compute-budget rule: the theorem's T shrinks to the largest full-batch
            # schedule that fits a run's share, and the step size is re-derived at it.
            sched = _theorem_schedule(
                n=n,
                dim=d,
                lipschitz=g,
                diameter=domain.diameter,
                epsilon=eps_run,
                delta=delta_run,
                num_steps=run_cap // n,
            )
            capped = True
        run_plan = DPSGD().plan(
            spec,
            Budget(eps_run, delta_run, run_cap),
            x0=x_start,
            num_steps=sched["num_steps"],
            learning_rate=sched["learning_rate"],
            clip_norm=g,
            sampling="full_batch",
            output="random",
            project=True,
        )
        guarantee = PrivacyGuarantee.none(relation=spec.relation)
        for _ in range(k):
            guarantee = guarantee.compose(run_plan.guarantee)
        guarantee = guarantee.compose(
            PrivacyGuarantee.exponential_mechanism(eps_sel, relation=spec.relation)
        )
        k_sel = eps_sel * n / osc
        noise_std = float(run_plan["noise_std"])
        m = bounds.quasar_sgd_expected_gap(
            diameter=domain.diameter,
            lipschitz=g,
            dim=d,
            noise_std=noise_std,
            num_steps=sched["num_steps"],
            learning_rate=sched["learning_rate"],
            quasar_convexity=q,
        )
        bound = bounds.quasar_sgd_warm_start_bound(
            expected_gap=m,
            num_runs=k,
            selection_inverse_temperature=k_sel,
            selection_failure_prob=zeta / 2.0,
        )
        # the options' rows (sources and rules declared; x0 has none), in the
        # table's order, with the rows the plan derives between them
        rows = opts.rows(
            resolved={
                "quasar_convexity": q,
                "failure_prob": zeta,
                "num_runs": k,
                "num_steps": sched["num_steps"],
                "minimizer_gap": gap,
            },
            sources={"num_steps": "derived"} if capped else {},
            notes={
                "num_steps": "capped: floor(run's share of max_evaluations / n)"
                if capped
                else ""
            },
        )
        params = {
            **{o: rows[o] for o in ("quasar_convexity", "failure_prob", "num_runs")},
            "epsilon_run": Param(eps_run, "theorem", "eps/(2k)"),
            "delta_run": Param(delta_run, "theorem", "delta/k"),
            "epsilon_select": Param(eps_sel, "theorem", "eps/2"),
            "selection_inverse_temperature": Param(k_sel, "theorem", "eps_sel n/osc"),
            "num_steps": rows["num_steps"],
            "learning_rate": Param(sched["learning_rate"], "theorem", "Prop. D.1"),
            "minimizer_gap": rows["minimizer_gap"],
        }
        cost = Cost(
            gradient_evaluations=k * run_plan.cost.gradient_evaluations,
            loss_evaluations=k * n,
            steps=k * run_plan.cost.steps,
        )
        return Plan(
            algorithm=self.name,
            spec=spec,
            budget=budget,
            params=params,
            guarantee=guarantee,
            cost=cost,
            warm_start=bound._replace(psi=bound.psi + gap),
            stages=(("run", run_plan),),
            internal={"schedule": sched, "bound": bound},
        )

    def _run(self, rng_key: PRNGKey, plan: Plan, problem: Problem) -> PrivateResult:
        k, n = plan["num_runs"], problem.n
        run_plan = plan.stage("run")
        keys = jax.random.split(rng_key, k + 1)
        runner = DPSGD()
        xs = jnp.stack(
            [runner.run(keys[i], run_plan, problem.data).value for i in range(k)]
        )
        osc = problem.spec.utility_oscillation()
        risks = _risks(
            xs, problem.data, jnp.float64(0.5 * osc), loss_fn=problem.loss_fn
        )
        # Pr[i] ∝ exp(eps_sel u_i / (2 Delta)) with Delta = osc/(2n) is exp(-k_sel F_D):
        # valid by the bounded-range argument (utilities may be shifted by a constant),
        # enforced by _risks' per-example clip to a range osc/2.
        index = _select(
            keys[k], risks, epsilon=plan["epsilon_select"], sensitivity=osc / (2.0 * n)
        )
        info = QuasarSGDInfo(
            algorithm="dp_sgd_quasar (seed 003 Algorithm 3, high-probability variant)",
            psi=plan.warm_start.psi,
            psi_failure_prob=plan.warm_start.failure_prob,
            psi_terms=plan.internal["bound"],
            num_runs=k,
            epsilon_run=plan["epsilon_run"],
            delta_run=plan["delta_run"],
            epsilon_select=plan["epsilon_select"],
            selection_inverse_temperature=plan["selection_inverse_temperature"],
            schedule=plan.internal["schedule"],
            noise_std=float(run_plan["noise_std"]),
            run_guarantee=run_plan.guarantee,
            quasar_convexity=plan["quasar_convexity"],
        )
        return PrivateResult(xs[index], plan.guarantee, info)


def dp_sgd_quasar(
    rng_key: PRNGKey,
    problem: Problem,
    *,
    epsilon: float,
    delta: float,
    quasar_convexity: float,
    failure_prob: float,
    x0: ArrayLike | None = None,
    num_steps: int | None = None,
    num_runs: int | None = None,
    minimizer_gap: float = 0.0,
) -> PrivateResult:
    r"""Private approximate minimiser of a quasar-convex loss, with a public ``psi``.

    .. code-block:: text

        k <- ceil(log2(2/zeta))
        for i = 1..k:  x_i <- DP-SGD(full batch, projected, random iterate),
                              budget (eps/(2k), delta/k)
        x_0 <- ExpMech over {x_1..x_k}, Pr[i] ∝ exp(-k_sel F_D(x_i)),
               k_sel = (eps/2) n / osc
        psi <- 2 m + (ln k + ln(2/zeta)) / k_sel    (m: one run's expected gap)

    so that ``Pr[F_D(x_0) - min_K F_D > psi] <= zeta`` whenever ``F_D`` is
    ``q``-quasar-convex with respect to a minimiser in ``K`` (a public declaration:
    ``quasar_convexity``). See the module docstring for the choices and
    :func:`dpsample.bounds.quasar_sgd_warm_start_bound` for the bound.

    Privacy:
        Replace-one neighbours. Each run: ``T`` full-batch Gaussian releases with
        per-example contributions clipped at the declared ``G`` (sensitivity
        ``2G/n`` of the mean), calibrated by :func:`dpsample.finders.dp_sgd` to
        ``(eps/(2k), delta/k)``. Selection: the exponential mechanism with
        ``k_sel = (eps/2) n / osc`` over candidates in ``K`` is ``eps/2``-DP
        (bounded range ``osc/n`` of ``F_D - F_D'`` on ``K``). The returned guarantee is
        the adaptive composition of all ``k + 1`` releases; it is at most
        ``(epsilon, delta)``. ``quasar_convexity`` only affects ``psi`` (utility),
        never privacy.

    Args:
        rng_key: A JAX PRNG key.
        problem: A :class:`~dpsample.problem.Problem` on a
            :class:`~dpsample.domains.Ball` with declared ``lipschitz``.
        epsilon: The stage's epsilon.
        delta: The stage's delta.
        quasar_convexity: Declared ``q`` in ``(0, 1]``.
        failure_prob: ``zeta`` in ``(0, 1)``.
        x0: Public start of every run, in ``K`` (default the centre of ``K``).
        num_steps: Override of each run's ``T``.
        num_runs: Override of ``k`` (then ``psi``'s failure probability is
            ``2^{-k} + zeta/2``).
        minimizer_gap: The declared ``g >= min_K F_D - inf F_D``, added to ``psi``
            (``0``: ``K`` holds a global minimizer).

    Returns:
        :class:`~dpsample.privacy.PrivateResult` with the selected point; ``info``
        holds ``psi``, ``psi_failure_prob``, ``psi_terms``
        (:class:`~dpsample.bounds.QuasarWarmStartBound`), ``num_runs``, the
        schedule, the noise std of the runs and ``run_guarantee``.

    Raises:
        ValueError: Invalid inputs (before any private computation), a non-Ball
            domain, ``x0`` outside ``K``. Nothing raises during the run (see the
            module docstring for the public rule on non-finite risks).
        dpsample.errors.MissingConstantError: ``lipschitz`` not declared.

    Examples:
        >>> import jax, jax.numpy as jnp, dpsample
        >>> from dpsample.pipelines.quasar import dp_sgd_quasar
        >>> data = {"z": jnp.linspace(0.2, 0.6, 400)[:, None]}
        >>> prob = dpsample.Problem(lambda x, z: jnp.abs(x[0] - z["z"][0]), data,
        ...     dpsample.Ball(1.0, dim=1), lipschitz=1.0, loss_range=2.0)
        >>> res = dp_sgd_quasar(jax.random.key(0), prob, epsilon=2.0, delta=1e-5,
        ...     quasar_convexity=1.0, failure_prob=0.05, num_steps=50)
        >>> res.info["num_runs"], res.privacy.epsilon(1e-5) <= 2.0
        (6, True)
        >>> bool(res.info["psi"] < prob.loss_range)
        True
    """
    return QuasarSGD().solve(
        rng_key, problem, epsilon=epsilon, delta=delta, **call_options(locals())
    )


precision.scope_public(globals())
