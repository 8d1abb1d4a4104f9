r"""DP-TR (seed 001 Algorithm 1): the algorithm object and its convenience.

:class:`DPTrustRegion` / :func:`dp_trust_region` (full data, zCDP or the
accountant) plan the schedule (:mod:`~dpsample.finders.trust_region.schedule`),
calibrate the noise and run the engine (:mod:`~dpsample.finders.trust_region.step`).
The minibatch variant, DP-STR, is :mod:`~dpsample.finders.trust_region.stochastic`.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from dpsample._src import precision, validation
from dpsample.base import AlgorithmInfo, PrivateAlgorithm, optional
from dpsample.finders.accounting import (
    C_SENS,
    gaussian_sum_guarantee,
)
from dpsample.finders.presets import label_schedule, output_param
from dpsample.finders.trust_region.options import DPTrustRegionOptions
from dpsample.finders.trust_region.schedule import (
    TR_FULL_NOTE,
    TR_OUTPUT_RULES,
    TR_STOP_NOTE,
    check_unconstrained,
    tr_constants,
    tr_enforcement,
    tr_hessian_rank,
    tr_params,
    tr_practical_iters,
    tr_schedule,
    tr_start,
    zcdp_budget,
)
from dpsample.finders.trust_region.step import run_tr_plan
from dpsample.options import call_options
from dpsample.plan import Budget, Cost, Param, Plan
from dpsample.privacy import (
    PrivateResult,
    calibrate_noise,
)
from dpsample.problem import Problem, ProblemSpec
from dpsample.types import Array, ArrayLike, PRNGKey

__all__ = [
    "DPTrustRegion",
    "DPTrustRegionInfo",
    "dp_trust_region",
]


# ---------------------------------------------------------------------------- DP-TR
@dataclasses.dataclass(frozen=True)
class DPTrustRegionInfo(AlgorithmInfo):
    r"""Public facts of a :class:`DPTrustRegion` run (``result.info``).

    Attributes:
        algorithm: ``"DP-TR (seed 001 Algorithm 1)"``.
        alpha: SOSP accuracy.
        radius: Trust-region radius.
        num_iters: ``T`` (every iteration is charged).
        stop_threshold: Threshold of the dual stopping rule (``None``: no early
            stop, preset ``"practical"``).
        sigma_grad: Noise std on the mean gradient.
        sigma_hess: Noise std of each Hessian entry.
        noise_multiplier: ``z``: std of the noise on the sum over the per-example
            bound (``sigma_grad n / G``).
        grad_sensitivity: ``2G/n``.
        hess_sensitivity: ``2 sqrt(k) M / n``.
        hessian_rank: ``k``.
        zcdp_rho: zCDP parameter of the run (``phi`` for ``"paper"``).
        calibration: ``"tight"`` or ``"paper"``.
        enforce_sensitivity: Whether per-example gradients and Hessians were
            clipped at the declared ``G`` and ``sqrt(k) M`` (the default; ``False``:
            the guarantee is conditional on the declared constants).
        converged: Whether the stopping rule fired.
        stopped_at: The iteration at which it fired (``None`` otherwise).
        iterations_run: Iterations that ran (public: the stopping time is
            post-processing of released values).
        multipliers: The released multipliers :math:`\lambda_k`.
        output: The output rule that picked the released point.
        output_index: The released iterate's index (0-based; the tail average's
            first averaged index), a function of ``iterations_run`` and the key.
        iterates: The iterates (``return_iterates=True``), covered by the guarantee.
    """

    algorithm: str
    alpha: float
    radius: float
    num_iters: int
    stop_threshold: float | None
    sigma_grad: float
    sigma_hess: float
    noise_multiplier: float
    grad_sensitivity: float
    hess_sensitivity: float
    hessian_rank: int
    zcdp_rho: float
    calibration: str
    enforce_sensitivity: bool
    converged: bool
    stopped_at: int | None
    iterations_run: int
    multipliers: list[float]
    output: str
    output_index: int
    iterates: Array | None = optional()
    diagnostics: None = None


class DPTrustRegion(PrivateAlgorithm):
    r"""DP-TR (seed 001 Algorithm 1) as a two-phase algorithm.

    :meth:`plan` resolves the Theorem 15 schedule and calibrates the noise from the
    public spec; :meth:`run` runs the host loop of jitted iterations. The options
    are the keywords of :func:`dp_trust_region` (``x0`` defaults to the origin,
    ``alpha`` to :data:`DEFAULT_ALPHA`).

    Cost: at most ``T`` iterations, each ``n`` per-example gradients and a dense
    per-example Hessian of the ``n`` examples (``n d`` Hessian-vector products);
    the stopping rule may end the run earlier (public: post-processing).

    Compute budget: see
    :func:`~dpsample.finders.trust_region.schedule.tr_schedule` (a theorem ``T``
    beyond ``max_evaluations`` relaxes ``alpha`` to the smallest value whose
    schedule fits; a ``num_iters`` or ``alpha`` fixed by the caller beyond it is
    refused).

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> from dpsample import Budget, Problem
        >>> from dpsample.domains import Unconstrained
        >>> from dpsample.finders.trust_region import DPTrustRegion
        >>> loss = lambda x, z: jnp.sum(-jnp.cos(x - z))
        >>> prob = Problem(loss, jnp.zeros((500, 2)), Unconstrained(2), lipschitz=1.5,
        ...                smoothness=1.0, hessian_lipschitz=1.0, loss_range=4.0)
        >>> algo = DPTrustRegion(alpha=0.05, x0=[1.0, -0.5], preset="theorem")
        >>> plan = algo.plan(prob.spec, Budget(5.0, 1e-5))
        >>> plan["num_iters"], plan.source("num_iters")
        (2147, 'theorem')
        >>> res = algo.run(jax.random.key(0), plan, prob.data)
        >>> res.privacy is plan.guarantee, res.info.converged
        (True, True)
        >>> dflt = DPTrustRegion().plan(prob.spec, Budget(5.0, 1e-5))  # "practical"
        >>> dflt["preset"], dflt["output"], dflt["stop_threshold"]
        ('practical', 'tail_average', None)
    """

    name = "dp_trust_region"
    kind = "finder"
    seed = "001"
    theorem = "Algorithm 1, Theorems 14-15"
    guarantee_type = "(epsilon, delta): 2T Gaussian mechanisms, zCDP (Lemma 7) / PLD"
    summary = "DP trust region: full-batch noisy gradient and Hessian, exact TR steps"

    options_type = DPTrustRegionOptions

    def _plan(self, spec: ProblemSpec, budget: Budget, **options: Any) -> Plan:
        opts = DPTrustRegionOptions.from_options(options)
        calibration = opts.calibration
        name = "dp_trust_region"
        epsilon, delta = validation.check_privacy(budget.epsilon, budget.delta)
        check_unconstrained(spec, name)
        x0_param = tr_start(spec, opts.x0)
        g_const, m_const = tr_constants(spec, name)
        n, d = spec.n, spec.dim
        output_p = output_param(opts.output, opts.preset, **TR_OUTPUT_RULES)
        rank, rank_param = tr_hessian_rank(spec, opts.hessian_rank)
        sched = tr_schedule(
            spec,
            name=name,
            alpha=opts.alpha,
            radius=opts.radius,
            num_iters=opts.num_iters,
            stop_threshold=opts.stop_threshold,
            initial_gap=opts.initial_gap,
            iteration_cost=lambda _a: n + n * d,
            max_evaluations=budget.max_evaluations,
            practical_iters=tr_practical_iters(
                n=n, dim=d, hessian_rank=rank, epsilon=epsilon, delta=delta
            )
            if opts.preset == "practical"
            else None,
        )
        clips, enforce_param, assumption = tr_enforcement(
            opts.enforce_sensitivity, g_const, m_const, rank, d
        )
        if calibration not in ("paper", "tight"):
            raise ValueError(
                f"Expected calibration 'paper' or 'tight', got {calibration!r}"
            )
        t = sched.num_iters
        phi = zcdp_budget(epsilon, delta)
        # Noise multipliers in the ecosystem's unit (std on the sum over the
        # per-example bound); the replace-one sensitivity is the accounting's.
        z_paper = C_SENS * math.sqrt(t / phi)
        if calibration == "paper":
            z, z_note = z_paper, "zCDP: 2 sqrt(T / phi), Lemma 7"
        else:
            # The zCDP multiplier meets the target (Lemma 7): it brackets from above.
            try:
                z = calibrate_noise(
                    lambda s: gaussian_sum_guarantee(s).repeat(2 * t),
                    epsilon=epsilon,
                    delta=delta,
                    initial=z_paper,
                    min_lower=C_SENS * 1e-6,
                    max_upper=C_SENS * 1e9,
                    rtol=1e-4,
                )
                z_note = "smallest z the accountant certifies for 2T Gaussians"
            except OverflowError:
                # At absurd epsilon (e.g. 1e12) the PLD accountant's grid overflows;
                # the zCDP multiplier is valid (Lemma 7) and the noise negligible.
                z = z_paper
                z_note = (
                    "zCDP: 2 sqrt(T / phi), Lemma 7 (the accountant overflows at "
                    "this epsilon)"
                )
        relation = spec.relation
        guarantee = (
            gaussian_sum_guarantee(z, relation)
            .repeat(t)
            .compose(gaussian_sum_guarantee(z, relation).repeat(t))
        )
        if assumption is not None:
            guarantee = guarantee.assuming(assumption)
        sigma_g = z * (g_const / n)
        sigma_h = z * (math.sqrt(rank) * m_const / n)
        noise = {
            "noise_multiplier": Param(
                z, "calibrated" if calibration == "tight" else "theorem", z_note
            ),
            "sigma_grad": Param(sigma_g, "derived", "z G / n"),
            "sigma_hess": Param(sigma_h, "derived", "z sqrt(k) M / n"),
            "grad_sensitivity": Param(C_SENS * g_const / n, "derived", "2 G / n"),
            "hess_sensitivity": Param(
                C_SENS * math.sqrt(rank) * m_const / n, "derived", "2 sqrt(k) M / n"
            ),
            "zcdp_rho": Param(
                2 * t / (2.0 * (z / C_SENS) ** 2), "derived", "2T Gaussians"
            ),
        }
        params = tr_params(
            opts,
            {
                "x0": x0_param,
                "preset": Param(
                    opts.preset, "default" if opts.preset == "practical" else "user"
                ),
                **sched.sources,
                "hessian_rank": rank_param,
                "enforce_sensitivity": enforce_param,
                "output": output_p,
            },
            noise,
            after="calibration",
        )
        return Plan(
            algorithm=self.name,
            spec=spec,
            budget=budget,
            params=label_schedule(params, opts.preset),
            guarantee=guarantee,
            cost=Cost(
                gradient_evaluations=t * n,
                hessian_vector_products=t * n * d,
                steps=t,
            ),
            notes=(TR_STOP_NOTE if sched.stop_threshold is not None else TR_FULL_NOTE,),
            internal={"batch_sizes": None, "clip_bounds": clips or (None, None)},
        )

    def _run(self, rng_key: PRNGKey, plan: Plan, problem: Problem) -> PrivateResult:
        w, run_info = run_tr_plan(rng_key, plan, problem)
        info = DPTrustRegionInfo(
            algorithm="DP-TR (seed 001 Algorithm 1)",
            alpha=plan["alpha"],
            radius=plan["radius"],
            num_iters=plan["num_iters"],
            stop_threshold=plan["stop_threshold"],
            sigma_grad=plan["sigma_grad"],
            sigma_hess=plan["sigma_hess"],
            noise_multiplier=plan["noise_multiplier"],
            grad_sensitivity=plan["grad_sensitivity"],
            hess_sensitivity=plan["hess_sensitivity"],
            hessian_rank=plan["hessian_rank"],
            zcdp_rho=plan["zcdp_rho"],
            calibration=plan["calibration"],
            enforce_sensitivity=plan["enforce_sensitivity"],
            **run_info,
        )
        return PrivateResult(w, plan.guarantee, info)  # type: ignore[arg-type]


def dp_trust_region(
    rng_key: PRNGKey,
    problem: Problem,
    *,
    epsilon: float,
    delta: float,
    x0: ArrayLike,
    preset: str = "practical",
    initial_gap: float | None = None,
    alpha: float | None = None,
    num_iters: int | None = None,
    radius: float | None = None,
    stop_threshold: float | None = None,
    hessian_rank: int | None = None,
    enforce_sensitivity: bool = True,
    calibration: str = "tight",
    output: str | None = None,
    return_iterates: bool = False,
) -> PrivateResult:
    r"""DP-TR: differentially private trust region (seed 001, Algorithm 1).

    For :math:`k = 0, \dots, T-1`:

    .. math::

        \tilde g_k = \nabla L(w_k, D) + \xi_k, \quad
        \xi_k \sim N(0, \sigma^2 I), \qquad
        \tilde H_k = \nabla^2 L(w_k, D) + E_k, \quad
        E_k \text{ symmetric}, E_{ij} \sim N(0, \sigma_2^2)\ (i \le j),

    :math:`(h_k, \lambda_k)` the exact global minimiser of the noisy model over
    :math:`\|h\| \le r` with its multiplier, :math:`w_{k+1} = w_k + h_k`, and the
    first ``k`` with :math:`\lambda_k \le \sqrt{\alpha\rho}` releases :math:`w_{k+1}`.
    If the rule never fires, :math:`w_T` is released with ``info["converged"] =
    False`` (the paper is silent; spec 001 §3.2). Defaults (Theorem 15):
    :math:`r = \sqrt{\alpha/\rho}`, :math:`T = \lceil 6\sqrt\rho\Delta/\alpha^{3/2}
    \rceil` with :math:`\Delta` = ``initial_gap`` or the declared range ``B`` (a public
    bound on :math:`L(w_0) - \min L`; spec 001 §7 item 8), and the noise

    .. math::

        \sigma^2 = \frac{4G^2T}{n^2\varphi}, \qquad
        \sigma_2^2 = \frac{4kM^2T}{n^2\varphi}, \qquad
        \varphi = \left(\sqrt{\varepsilon + \ln\tfrac1\delta} -
        \sqrt{\ln\tfrac1\delta}\right)^2,

    with :math:`k = p` (the paper) or ``hessian_rank``: ``calibration="paper"``.
    By default (``calibration="tight"``, not in the paper) the common noise
    multiplier is instead the smallest one (to ``1e-4``) whose composed guarantee,
    accounted by :class:`~dpsample.privacy.PrivacyGuarantee` (PLD/RDP/zCDP), meets
    :math:`(\varepsilon, \delta)`: the run spends the budget it is given. The paper's
    zCDP route (Lemma 7) is loose, e.g. the cosine saddle of seed 000 at
    :math:`\varepsilon = 10` spends 8.56 with ``"paper"`` (issue 16).

    The loop is a host loop of jitted iterations (the stopping time is public);
    ``jit`` of the whole finder is not supported.

    Privacy:
        Neighbouring relation: replace-one. Sensitivities, **enforced by
        default** (``enforce_sensitivity=True``): each per-example gradient is
        clipped at the declared ``G`` and each per-example Hessian's upper
        triangle (the vector the mechanism releases) at :math:`\sqrt{k}M`, with
        the library's rounding margin (:mod:`dpsample._src.clipping`), so the
        computed statistics obey gradient :math:`\|\nabla L(w,D) -
        \nabla L(w,D')\| \le 2G/n` and Hessian (upper triangle) :math:`\le
        2\sqrt{k}M/n` for *any* data, without the rank condition. A loss that
        obeys the declared constants is not changed by the clips when ``k = p``
        (the default): the upper triangle of a Hessian of operator norm
        :math:`\le M` has norm :math:`\le \|\cdot\|_F \le \sqrt{p}M`. With
        ``hessian_rank = k < p`` a per-example Hessian whose upper triangle
        exceeds :math:`\sqrt{k}M` (e.g. a large data-independent regulariser) is
        scaled down: a bias, never a privacy loss. With
        ``enforce_sensitivity=False`` (the paper's unclipped algorithm, opt-in)
        the bounds rest on the declared constants and ``k`` bounding the rank of
        :math:`\nabla^2 f(w,z) - \nabla^2 f(w,z')` (``k = p`` always holds;
        ``hessian_rank=2`` is valid e.g. for a GLM data term plus a
        data-independent regulariser, spec 001 §7 item 16), and the guarantee
        says so in its ``assumptions`` (conditional). Each of the :math:`2T`
        Gaussian mechanisms
        has noise over sensitivity :math:`\sqrt{T/\varphi}` (noise multiplier
        ``z`` :math:`= 2\sqrt{T/\varphi}`: std of the noise on the sum over the
        per-example bound :math:`G`, resp. :math:`\sqrt{k}M`), i.e. is
        :math:`\varphi/(2T)`-zCDP; the total is :math:`\varphi`-zCDP, which Lemma 7
        converts to exactly :math:`(\varepsilon, \delta)` (``"paper"``; ``"tight"``
        lowers the multiplier until the accountant's epsilon meets the target).
        The returned guarantee is the composition of the :math:`2T` Gaussian
        mechanisms (charged in full even when the rule stops early: the stop is
        post-processing), so ``privacy.epsilon(delta) <= epsilon``.
        The iterates :math:`w_1, \dots, w_m` (``return_iterates=True``; ``m`` =
        ``iterations_run``, :math:`w_m` the released point) are covered by the
        same guarantee: each :math:`w_{k+1} = w_k + h_k` is a
        deterministic function of the public :math:`w_0` and the noisy releases
        :math:`(\tilde g_j, \tilde H_j)_{j \le k}` that the composition accounts,
        so releasing all of them (and the stopping index) is post-processing.

    Args:
        rng_key: a PRNG key (consumed; split once per iteration).
        problem: a :class:`~dpsample.problem.Problem` on
            :class:`~dpsample.domains.Unconstrained` declaring ``lipschitz`` and
            ``smoothness`` (privacy), ``hessian_lipschitz`` (radius, ``T``,
            threshold) and ``loss_range`` (``T``, unless ``initial_gap`` is given).
        epsilon: target epsilon, ``> 0``.
        delta: target delta in ``(0, 1)``.
        x0: the public initial point, shape ``(d,)``.
        preset: ``"practical"`` (default, not in the paper) or ``"theorem"``
            (:mod:`dpsample.finders.presets`): the rule behind every value left
            at ``None``. ``"theorem"`` is Theorem 15/18's schedule, its stopping
            rule and its output (the defaults before issue 24), bit for bit.
            ``"practical"`` caps ``T`` at
            :func:`~dpsample.finders.trust_region.schedule.tr_practical_iters`
            (the Hessian noise below ``M/2``), runs without the stopping rule and
            releases the tail average; the plan's notes name the preset
            that set each value.
        alpha: SOSP accuracy α (default :data:`DEFAULT_ALPHA`).
        radius: trust-region radius (default :math:`\sqrt{\alpha/\rho}`).
        num_iters: ``T`` (default Theorem 15).
        stop_threshold: threshold on :math:`\lambda_k` (default
            :math:`\sqrt{\alpha\rho}`).
        initial_gap: public bound :math:`\Delta` (default: ``problem.loss_range``).
        hessian_rank: public bound on the rank of per-example Hessian differences
            (default ``p``, the paper's :math:`\sqrt p` factor).
        calibration: ``"tight"`` (default: the accountant's smallest multiplier)
            or ``"paper"`` (zCDP, the formulas above).
        output: the released point: ``"tail_average"``, ``"last"`` or
            ``"random"`` (:mod:`dpsample.finders.outputs`; default: the
            preset's); post-processing of the iterates, the same guarantee.
        return_iterates: put the iterates :math:`w_1, \dots, w_m` (one per
            iteration that ran, the last one the released point) in
            ``info["iterates"]``, shape ``(iterations_run, d)``; covered by the
            same guarantee (post-processing, see Privacy).
        enforce_sensitivity: clip every per-example gradient at ``G`` and every
            per-example Hessian's upper triangle at ``sqrt(k) M`` (the default),
            so the sensitivities hold whatever the data; ``False`` is the paper's
            unclipped algorithm, whose guarantee is conditional on the declared
            constants (stated in ``privacy.assumptions``).

    Returns:
        ``PrivateResult(value, privacy, info)``: ``value`` the released point;
        ``info`` has ``sigma_grad``, ``sigma_hess``, ``noise_multiplier`` (std of
        the noise on the sum over the per-example bound, ``sigma_grad n / G``),
        ``zcdp_rho`` (φ for ``"paper"``), ``radius``, ``num_iters``,
        ``stop_threshold``, ``alpha``, ``hessian_rank``, ``calibration``,
        ``converged``, ``stopped_at``, ``iterations_run`` and ``multipliers`` (the
        released :math:`\lambda_k`, post-processing of noisy quantities), and
        ``iterates`` with ``return_iterates=True``.

    Raises:
        ValueError: invalid privacy parameters or schedule, a non-finite or
            mis-shaped ``x0``, a bounded domain.
        MissingConstantError: a constant the guarantee or the schedule needs is
            not declared.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> from dpsample import Problem
        >>> from dpsample.domains import Unconstrained
        >>> from dpsample.finders.trust_region import dp_trust_region
        >>> loss = lambda x, z: jnp.sum(-jnp.cos(x - z))   # minimum at x = z
        >>> prob = Problem(loss, jnp.zeros((500, 2)), Unconstrained(2), lipschitz=1.5,
        ...                smoothness=1.0, hessian_lipschitz=1.0, loss_range=4.0)
        >>> res = dp_trust_region(jax.random.key(0), prob, epsilon=5.0, delta=1e-5,
        ...                       x0=jnp.array([1.0, -0.5]), alpha=0.05,
        ...                       preset="theorem", return_iterates=True)
        >>> res.info["converged"], bool(jnp.linalg.norm(res.value) < 0.3)
        (True, True)
        >>> xs = res.info["iterates"]  # one per iteration, the last one released
        >>> len(xs) == res.info["iterations_run"], bool(jnp.all(xs[-1] == res.value))
        (True, True)
        >>> res.privacy.epsilon(1e-5) <= 5.0
        True

    References:
        Wang & Xu, `Escaping Saddle Points of Empirical Risk Privately and Scalably
        via DP-Trust Region Method <https://doi.org/10.1007/978-3-030-67664-3_6>`_,
        ECML-PKDD 2020 (seed 001: Algorithm 1, Theorems 14-15). Spec 001 §3.2, §4.1.
        Bun & Steinke, `Concentrated Differential Privacy
        <https://arxiv.org/abs/1605.02065>`_, 2016.
    """
    return DPTrustRegion().solve(
        rng_key, problem, epsilon=epsilon, delta=delta, **call_options(locals())
    )


precision.scope_public(globals())
