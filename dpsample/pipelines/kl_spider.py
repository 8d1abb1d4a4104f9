r"""KL-Spider: the KL* warm start (Menart et al. 2023, Algorithm 1; seed 003 §2.5).

For losses whose empirical risk is declared ``(gamma, kappa)``-KL* on the ball ``K``,
``F_D(w) - inf F_D <= gamma^kappa ||grad F_D(w)||^kappa`` with ``kappa in [1, 2]``
(``mu``-PL* is ``kappa = 2``, ``gamma = 1/sqrt(2 mu)``), KL-Spider releases a point
whose excess risk is ``O((gamma L sqrt(d K ln(1/beta')) / (n sqrt(rho)))^kappa)``.
Seed 003 (Lemma 6.2) uses it as the warm start ``A`` of Algorithm 2:
``WarmStart(KLSpider(kl_gamma=..., kl_exponent=...), "dp_spider")`` or
``warm_start(..., sampler="kl_spider", sampler_options={...})``.

The algorithm as it runs (public schedule, :func:`kl_spider_schedule`)::

    Phi_0 = F0;  w = w0
    for k = 1..K:                                   # rounds
        Phi_k = max(Phi_{k-1}/c, floor)
        s_k = Phi_k^(1/kappa) / (4 gamma beta_s)    # normalised step length
        est = clipped_mean_i(grad f(w, x_i), L) + N(0, sigma_hat^2 I)        # anchor
        for t = 0..T_k:                             # T_k + 1 steps, always
            if t > 0: est += clipped_mean_i(grad f(w_t, x_i) - grad f(w_{t-1}, x_i),
                                            beta_s s_k) + N(0, sigma_k^2 I)
            stopped |= ||est|| < 7 Phi_k^(1/kappa) / (8 gamma)
            w_{t+1} = w_t if stopped else Pi_K(w_t - s_k est / ||est||)
    return w                                         # the last iterate

with ``c = 1 + F0^((2-kappa)/kappa) / (64 gamma^2 beta_s)``, ``K``, ``beta'`` and
the floor ``(32 gamma L sqrt(K d ln(1/beta')) / (n sqrt(rho')))^kappa`` as in
Menart's Algorithm 1, ``T_k = ceil((F0/Phi_k)^((2-kappa)/kappa))``,
``sigma_hat = L sqrt(K) / (n sqrt(rho'))`` and
``sigma_k = Phi_k^(1/kappa) sqrt(T_k K) / (gamma n sqrt(rho'))``.

Corrections and choices (each differs from the paper or the spec's reconstruction):

* **Same work whatever the data.** The paper's ``while t <= T_k and ||est|| >= ...``
  stops a round early, which a timing observer sees. Here every round runs its
  ``T_k + 1`` steps: after the condition first holds the iterate is frozen (steps
  masked) but every gradient evaluation and noise draw still happens. The released
  noisy anchors and variations are charged whether used or not; the stop test is a
  function of them (post-processing). The last variation of a round, which the paper
  computes and never uses, is not computed.
* **Accounting (spec A10).** Under replace-one an anchor (mean of gradients clipped
  at ``L``) has sensitivity ``2L/n`` and a variation (mean of differences clipped at
  ``beta_s s_k``) ``2 beta_s s_k / n = Phi_k^(1/kappa) / (2 gamma n)``. With the
  paper's noise at parameter ``rho'`` the ``K`` anchors cost ``2 rho'`` and the
  ``sum T_k`` variations ``rho'/8`` in zCDP: ``17 rho'/8`` in all, not ``rho'`` (the
  extracted noise over-spends by ``2.125x`` under replace-one). So the noise is
  Menart's shape at ``rho' = (8/17) rho_0``, where ``rho_0`` is the total the budget
  allows: every release is a Gaussian mechanism, their adaptive composition is
  exactly the Gaussian mechanism with noise/sensitivity ``(sum_i Delta_i^2 /
  sigma_i^2)^(-1/2)`` (``mu``-GDP composes as ``sqrt(sum mu_i^2)``: Dong, Roth and
  Su 2019, Cor. 3.3), and the one calibrator
  (:func:`dpsample.privacy.calibrate`) finds the smallest such noise that dp_accounting
  (PLD / RDP) certifies for ``(epsilon, delta)``. The guarantee is then rebuilt from
  the schedule's own ``sigma``'s and sensitivities (``rho = sum Delta^2/(2 sigma^2)``),
  so the printed epsilon is that of what runs. The total does not depend on the
  schedule, so the calibration comes first and the schedule uses ``rho'``.
* **Unconditional privacy.** Per-example gradients are clipped at the declared ``L``
  and per-example differences at ``beta_s s_k`` (no-ops when the constants hold on
  ``K``), and the iterates are projected onto ``K`` (so the output is a point of
  ``K``, where the finder's constants hold). Privacy never rests on the declared
  constants, on KL*, or on ``gamma``, ``kappa``, ``F0``: those affect utility only.
* **The floor is certified.** ``psi`` (below) needs every estimate within
  ``Phi_k^(1/kappa)/(8 gamma)`` of the true gradient. The plan checks this for every
  round by a union bound over the ``N = sum (T_k + 1)`` estimates with the Gaussian
  norm tail ``P[||N(0, v I_d)|| > sqrt(v) (sqrt(d) + sqrt(2 ln(N/beta)))] <= beta/N``;
  if Menart's floor (constant 32) fails the check the floor is raised (bisection) to
  the smallest level that passes (``floor_source`` says which).
* ``T_k`` is an integer (``ceil``), ``K`` is ``max(1, ceil(.))`` and ``beta'`` is
  capped at ``1/2``.

``psi`` (the plan's :class:`~dpsample.bounds.WarmStartBound`): the last level
``Phi_K``, with failure probability ``beta`` (``failure_prob``), plus
``minimizer_gap``, capped by the declared ``loss_range``. Derivation (the constants
are this module's, not Menart's unstated ``O``): on the event that every estimate is
within ``e_k = Phi_k^(1/kappa)/(8 gamma)`` of ``grad F_D`` (probability ``>= 1 -
beta`` by the certificate), induction on ``k`` with ``F_D(w_{k,0}) - F* <=
Phi_{k-1} <= c Phi_k``: a step taken while ``||est|| >= 7 Phi_k^(1/kappa)/(8
gamma)`` decreases ``F_D`` by at least ``s_k (||est|| - e_k) - beta_s s_k^2 / 2 >=
(5/32) Phi_k^(2/kappa) / (gamma^2 beta_s)`` (smoothness); once the test fails,
``||grad F_D|| < Phi_k^(1/kappa)/gamma`` so ``F_D - F* < Phi_k`` by KL*, and the
point is frozen; if it never fails, ``T_k + 1`` steps decrease ``F_D`` by at least
``(c - 1) Phi_k`` because ``10 (T_k + 1) >= (F0/Phi_k)^((2-kappa)/kappa)``. Either
way ``F_D(w_{k+1,0}) - F* <= Phi_k``, and ``F* = inf F_D <= min_K F_D``. This
assumes (utility only) that the declared ``L``, ``beta_s``, KL* and ``F0 >= F_D(w0)
- inf F_D`` hold on ``K`` and that the projection onto ``K`` never binds (Menart's
Theorem 1 assumes KL* and the constants on a ball around ``w0`` that contains the
iterates; take ``K`` to contain it). If the certificate fails even at the floor
``F0``, ``psi`` is the declared ``loss_range`` (or absent: pass ``declared_psi`` to
the pipeline).

References:
    M. Menart, E. Ullah, R. Arora, R. Bassily, C. Guzman, `Differentially private
    non-convex optimization under the KL condition with optimal rates
    <https://arxiv.org/abs/2311.13447>`_, ALT 2024 (Algorithm 1, Theorem 1).
    A. Lowy, J. Ullman, S. J. Wright, `How to make the gradients small privately
    <https://arxiv.org/abs/2402.11173>`_, ICML 2024 (Lemma 6.2, Corollary 6.3).
    J. Dong, A. Roth, W. Su, `Gaussian differential privacy
    <https://arxiv.org/abs/1905.02383>`_, 2019 (Corollary 3.3).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any

import jax
import jax.numpy as jnp

from dpsample import progress
from dpsample._src import clipping, precision, validation
from dpsample.base import AlgorithmInfo, NonPrivateDiagnostics, PrivateAlgorithm
from dpsample.bounds import WarmStartBound
from dpsample.domains import Ball, project_with, projection_operands
from dpsample.finders.planning import start_param
from dpsample.options import call_options
from dpsample.pipelines.budget import resolve_failure_prob
from dpsample.pipelines.kl_spider_options import KLSpiderOptions
from dpsample.pipelines.kl_spider_schedule import ZCDP_PER_RHO as ZCDP_PER_RHO
from dpsample.pipelines.kl_spider_schedule import (
    KLSpiderSchedule,
    check_exponent,
    gradient_cost,
    kl_spider_schedule,
)
from dpsample.plan import Budget, Cost, Param, Plan
from dpsample.privacy import PrivacyGuarantee, PrivateResult
from dpsample.problem import Problem, ProblemSpec
from dpsample.samplers.gibbs_calibration import gaussian_noise_to_sensitivity
from dpsample.types import Array, ArrayLike, PRNGKey

__all__ = [
    "KLSpider",
    "KLSpiderDiagnostics",
    "KLSpiderInfo",
    "kl_spider",
]


def _slots(sched: KLSpiderSchedule) -> dict[str, Array]:
    """Per-step public operands of the compiled loop (one row per step)."""
    anchor, step, thr, clip_v, noise = [], [], [], [], []
    for k, t_k in enumerate(sched.steps):
        for t in range(t_k + 1):
            anchor.append(t == 0)
            step.append(sched.step_lengths[k])
            thr.append(sched.thresholds[k])
            clip_v.append(sched.step_lengths[k])
            noise.append(sched.anchor_noise if t == 0 else sched.variation_noise[k])
    return {
        "anchor": jnp.asarray(anchor),
        "step": jnp.asarray(step, jnp.float64),
        "threshold": jnp.asarray(thr, jnp.float64),
        "clip_steps": jnp.asarray(clip_v, jnp.float64),
        "noise": jnp.asarray(noise, jnp.float64),
    }


@functools.partial(jax.jit, static_argnames=("loss_fn", "show_progress"))
def _kl_spider_core(
    rng_key: PRNGKey,
    w0: Array,
    data: Any,
    slots: dict[str, Array],
    consts: dict[str, Array],
    ball: dict[str, Any] | None,
    *,
    loss_fn: Any,
    show_progress: bool = False,
) -> tuple[Array, Array]:
    """The fixed-length loop: returns ``(w_{K+1,0}, number of unfrozen steps)``.

    ``consts = {"lipschitz": L, "smoothness": beta_s}``; the variation clip bound of
    a step is ``beta_s * step``. Every step evaluates its oracle and draws its noise.
    ``show_progress``: a progress bar (:mod:`dpsample.progress`); same result.
    """
    grads = jax.vmap(jax.grad(loss_fn), in_axes=(None, 0))
    big_l, beta_s = consts["lipschitz"], consts["smoothness"]

    def body(carry: Any, inp: Any) -> Any:
        w, w_prev, est, stopped, active = carry
        is_anchor, s, thr, clip_s, sigma, key = inp
        noise = sigma * jax.random.normal(key, w.shape, jnp.float64)
        est = jax.lax.cond(
            is_anchor,
            lambda: clipping.clipped_mean(grads(w, data), big_l),
            lambda: (
                est
                + clipping.clipped_mean(
                    grads(w, data) - grads(w_prev, data), beta_s * clip_s
                )
            ),
        )
        est = est + noise
        norm = jnp.sqrt(jnp.sum(est**2))
        stopped = jnp.where(is_anchor, False, stopped) | (norm < thr)
        direction = est / jnp.where(norm > 0, norm, 1.0)
        moved = project_with(w - s * direction, ball)
        w_new = jnp.where(stopped, w, moved)
        return (w_new, w, est, stopped, active + (~stopped).astype(jnp.int64)), None

    num = slots["anchor"].shape[0]
    keys = jax.random.split(rng_key, num)
    init = (w0, w0, jnp.zeros_like(w0), jnp.bool_(False), jnp.int64(0))
    xs = (
        slots["anchor"],
        slots["step"],
        slots["threshold"],
        slots["clip_steps"],
        slots["noise"],
        keys,
    )
    (w, _, _, _, active), _ = progress.scan(
        body, init, xs, label="kl_spider", show=show_progress
    )
    return w, active


@dataclasses.dataclass(frozen=True)
class KLSpiderDiagnostics(NonPrivateDiagnostics):
    """Non-private facts of a run (``diagnostics=True``): never release them.

    Attributes:
        active_steps: Steps taken before the stop test held (the rest were frozen);
            it depends on the data.
    """

    active_steps: int


@dataclasses.dataclass(frozen=True)
class KLSpiderInfo(AlgorithmInfo):
    """Public facts of a :class:`KLSpider` run (``result.info``).

    Attributes:
        algorithm: A description.
        psi: The public warm-start bound (``plan.warm_start.psi``), or ``None``.
        psi_failure_prob: Its failure probability.
        num_rounds: ``K``.
        num_steps: ``sum (T_k + 1)``, every one run (frozen ones included).
        anchor_releases: ``K``.
        variation_releases: ``sum T_k``.
        gradient_evaluations: ``n (K + 2 sum T_k)``.
        floor: The schedule's floor level.
        final_level: ``Phi_K``.
        certified: Whether the schedule passes the estimate-error certificate.
        rho_menart: Menart's noise parameter ``rho'``.
        zcdp: Total zCDP of the releases, ``17 rho'/8``.
        schedule: The :class:`KLSpiderSchedule`.
        diagnostics: :class:`KLSpiderDiagnostics` when asked for.
    """

    algorithm: str
    psi: float | None
    psi_failure_prob: float | None
    num_rounds: int
    num_steps: int
    anchor_releases: int
    variation_releases: int
    gradient_evaluations: int
    floor: float
    final_level: float
    certified: bool
    rho_menart: float
    zcdp: float
    schedule: KLSpiderSchedule
    diagnostics: KLSpiderDiagnostics | None = None


class KLSpider(PrivateAlgorithm):
    r"""KL-Spider (Menart et al. 2023, Alg. 1) as a warm-start sampler (seed 003 §2.5).

    Registry name ``"kl_spider"``, kind ``"sampler"``: its plan carries the public
    bound ``psi`` (``plan.warm_start``), so it is stage ``A`` of
    :class:`~dpsample.pipelines.WarmStart`. See the module docstring for the
    algorithm, its corrections of the paper, the accounting and ``psi``.

    Options: declared once in
    :class:`~dpsample.pipelines.kl_spider_options.KLSpiderOptions` (``kl_gamma`` and
    ``kl_exponent`` required: the declared KL* constants ``gamma > 0`` and ``kappa``
    in ``[1, 2]``; the default ``initial_gap`` ``(L gamma)^kappa`` is always valid
    when KL* holds at ``x0``, spec A2). Needs a :class:`~dpsample.domains.Ball`
    domain, declared ``lipschitz`` and ``smoothness``, and ``delta > 0``. Compute
    budget: with ``Budget(max_evaluations=E)`` the number of rounds is the largest
    ``K' <= K`` whose schedule (recomputed at ``K'``) costs at most ``E``; ``psi``
    is then its ``Phi_{K'}``. A ``num_rounds`` over the cap is refused.

    Privacy:
        Replace-one, zCDP: ``K`` anchors (sensitivity ``2L/n``) and ``sum T_k``
        variations (``Phi_k^(1/kappa)/(2 gamma n)``), all charged whatever the
        stop test does; noise calibrated so that their exact Gaussian composition
        meets ``(epsilon, delta)`` (dp_accounting). Unconditional (clipping).

    Examples:
        >>> import jax, jax.numpy as jnp, numpy as np, dpsample
        >>> from dpsample.plan import Budget
        >>> from dpsample.pipelines.kl_spider import KLSpider
        >>> z = np.random.default_rng(0).uniform(0.3, 0.7, size=(40_000, 1))
        >>> prob = dpsample.Problem(lambda x, e: 0.5 * jnp.sum((x - e["z"]) ** 2),
        ...     {"z": z}, dpsample.Ball(1.0, dim=1), lipschitz=1.7, smoothness=1.0)
        >>> algo = KLSpider(kl_gamma=0.5 ** 0.5, kl_exponent=2.0)  # 1-PL*: kappa 2
        >>> plan = algo.plan(prob.spec, Budget(2.0, 1e-5))
        >>> plan.spent_epsilon() <= 2.0, plan["num_rounds"], plan.cost.steps
        (True, 607, 1214)
        >>> round(plan.warm_start.psi, 4), plan["psi_source"]
        (0.1679, 'Phi_K (certified)')
        >>> res = algo.run(jax.random.key(0), plan, prob.data)
        >>> res.privacy is plan.guarantee
        True
        >>> gap = prob.empirical_risk(res.value) - prob.empirical_risk(z.mean(0))
        >>> bool(gap <= plan.warm_start.psi)  # non-private check, for the example
        True
    """

    name = "kl_spider"
    kind = "sampler"
    seed = "003"
    theorem = "Sec. 6, Lemma 6.2 (Menart et al. 2023, Alg. 1 and Thm 1; corrected)"
    guarantee_type = (
        "zCDP: K anchor and sum T_k variation Gaussian releases, composed exactly "
        "(GDP) and accounted by dp_accounting"
    )
    summary = "KL-Spider: a warm start for (gamma, kappa)-KL* losses, with a public psi"

    options_type = KLSpiderOptions

    def _plan(self, spec: ProblemSpec, budget: Budget, **options: Any) -> Plan:
        opts = KLSpiderOptions.from_options(options)
        epsilon, delta = validation.check_privacy(budget.epsilon, budget.delta)
        if opts.kl_gamma is None or opts.kl_exponent is None:
            raise ValueError(
                "kl_spider needs the declared KL* constants: pass kl_gamma=gamma > 0 "
                "and kl_exponent=kappa in [1, 2] (F - inf F <= gamma^kappa "
                "||grad F||^kappa on K; mu-PL* is kappa = 2, gamma = 1/sqrt(2 mu))"
            )
        gamma = validation.positive("kl_gamma", opts.kl_gamma)
        kappa = check_exponent(opts.kl_exponent)
        domain = spec.domain
        if not isinstance(domain, Ball):
            raise ValueError(
                "kl_spider needs a Ball domain K (its iterates are projected onto K "
                f"and its output starts the finder), got {type(domain).__name__}"
            )
        big_l = validation.require_constant(
            "lipschitz", spec.lipschitz, needed_for="KL-Spider (anchor sensitivity)"
        )
        beta_s = validation.require_constant(
            "smoothness", spec.smoothness, needed_for="KL-Spider (step and variations)"
        )
        n, d = spec.n, spec.dim
        fail = resolve_failure_prob(
            opts.failure_prob, dim=d, epsilon=epsilon, n=n
        ).value
        if opts.initial_gap is None:
            f0 = (big_l * gamma) ** kappa
        else:
            f0 = validation.positive("initial_gap", opts.initial_gap)
        gap = validation.nonnegative("minimizer_gap", opts.minimizer_gap)
        x0_param = start_param(spec, opts.x0, "the centre of K")
        num_rounds = opts.num_rounds
        if num_rounds is not None:
            num_rounds = validation.positive_int("num_rounds", num_rounds)

        # ---- noise: the one calibrator on the exact Gaussian composition --------
        ratio = gaussian_noise_to_sensitivity(epsilon=epsilon, delta=delta)
        rho0 = 1.0 / (2.0 * ratio**2)  # the total the budget allows
        rho_m = rho0 * (1.0 - 1e-9) / ZCDP_PER_RHO  # a rounding margin

        def schedule(k: int | None) -> KLSpiderSchedule:
            return kl_spider_schedule(
                n=n,
                dim=d,
                lipschitz=big_l,
                smoothness=beta_s,
                kl_gamma=gamma,
                kl_exponent=kappa,
                initial_gap=f0,
                rho=rho_m,
                failure_prob=fail,
                num_rounds=k,
            )

        sched = schedule(num_rounds)
        k_source = Param(sched.num_rounds, "user" if num_rounds else "theorem", "")
        cap = budget.max_evaluations
        if cap is not None and gradient_cost(sched, n) > cap:
            if num_rounds is not None:
                raise ValueError(
                    f"num_rounds={num_rounds} needs {gradient_cost(sched, n):,} "
                    f"per-example gradients, over max_evaluations={cap:,}"
                )
            if gradient_cost(schedule(1), n) > cap:
                raise ValueError(
                    f"max_evaluations={cap:,} is below one KL-Spider round"
                )
            lo, hi = 1, sched.num_rounds  # lo fits, hi does not
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if gradient_cost(schedule(mid), n) <= cap:
                    lo = mid
                else:
                    hi = mid
            sched = schedule(lo)
            k_source = Param(
                lo, "derived", "capped: the most rounds whose schedule fits"
            )
        guarantee = PrivacyGuarantee.gaussian(1.0 / math.sqrt(2.0 * sched.zcdp))
        spent = guarantee.epsilon(delta)
        if not spent <= epsilon:
            raise RuntimeError("internal error: KL-Spider's releases overspend")

        # ---- psi: public, from the schedule --------------------------------------
        notes = [
            "psi assumes (utility only) the declared L, beta_s, KL* (gamma, kappa) "
            "and F0 on K, and that the projection onto K never binds",
        ]
        psi: float | None
        if sched.certified:
            psi, psi_source = sched.levels[-1], "Phi_K (certified)"
        else:
            psi, psi_source = None, "none"
            notes.append(
                "the estimate-error certificate fails even at the floor F0: no "
                "psi from the schedule"
            )
        if spec.loss_range is not None and (psi is None or spec.loss_range < psi):
            psi, psi_source = float(spec.loss_range), "loss_range"
        bound = (
            None
            if psi is None
            else WarmStartBound(
                psi + gap, fail if psi_source != "loss_range" else 0.0, 0.0, psi, gap
            )
        )
        # the options' rows (the declaration's order, sources and rules), with the
        # schedule's derived rows after ``num_rounds``
        rows = list(
            opts.rows(
                resolved={
                    "kl_gamma": gamma,
                    "kl_exponent": kappa,
                    "initial_gap": f0,
                    "failure_prob": fail,
                    "minimizer_gap": gap,
                    "diagnostics": bool(opts.diagnostics),
                },
                notes={}
                if opts.initial_gap is None
                else {"initial_gap": "declared public F0"},
                params={"x0": x0_param, "num_rounds": k_source},
            ).items()
        )
        derived = {
            "contraction": Param(
                sched.contraction, "theorem", "1 + F0^((2-k)/k)/(64 g^2 b)"
            ),
            "floor": Param(
                sched.floor,
                "theorem" if sched.floor_source == "menart" else "derived",
                sched.floor_source,
            ),
            "rho_total": Param(
                rho0, "calibrated", "GDP composition meets (eps, delta)"
            ),
            "rho_menart": Param(rho_m, "derived", "rho_total / (17/8)"),
            "anchor_noise": Param(
                sched.anchor_noise, "derived", "L sqrt(K)/(n sqrt(rho'))"
            ),
            "num_steps": Param(sched.num_steps, "derived", "sum (T_k + 1), all run"),
            "psi_source": Param(psi_source, "derived"),
        }
        cut = [k for k, _ in rows].index("num_rounds") + 1
        params = dict(rows[:cut]) | derived | dict(rows[cut:])
        cost = Cost(gradient_evaluations=gradient_cost(sched, n), steps=sched.num_steps)
        return Plan(
            algorithm=self.name,
            spec=spec,
            budget=budget,
            params=params,
            guarantee=guarantee,
            cost=cost,
            warm_start=bound,
            notes=tuple(notes),
            internal={"schedule": sched, "slots": _slots(sched)},
        )

    def _run(self, rng_key: PRNGKey, plan: Plan, problem: Problem) -> PrivateResult:
        sched: KLSpiderSchedule = plan.internal["schedule"]
        consts = {
            "lipschitz": jnp.float64(problem.lipschitz),
            "smoothness": jnp.float64(problem.smoothness),
        }
        w, active = _kl_spider_core(
            rng_key,
            jnp.asarray(plan["x0"], jnp.float64),
            problem.data,
            plan.internal["slots"],
            consts,
            projection_operands(problem.domain),
            loss_fn=problem.loss_fn,
            show_progress=progress.is_enabled(),
        )
        ws = plan.warm_start
        diag = KLSpiderDiagnostics(int(active)) if plan["diagnostics"] else None
        info = KLSpiderInfo(
            algorithm="kl_spider (Menart et al. 2023 Alg. 1, fixed work per round)",
            psi=None if ws is None else ws.psi,
            psi_failure_prob=None if ws is None else ws.failure_prob,
            num_rounds=sched.num_rounds,
            num_steps=sched.num_steps,
            anchor_releases=sched.num_rounds,
            variation_releases=sched.num_variations,
            gradient_evaluations=plan.cost.gradient_evaluations,
            floor=sched.floor,
            final_level=sched.levels[-1],
            certified=sched.certified,
            rho_menart=sched.rho,
            zcdp=sched.zcdp,
            schedule=sched,
            diagnostics=diag,
        )
        return PrivateResult(w, plan.guarantee, info)  # type: ignore[arg-type]


def kl_spider(
    rng_key: PRNGKey,
    problem: Problem,
    *,
    epsilon: float,
    delta: float,
    kl_gamma: float,
    kl_exponent: float,
    initial_gap: float | None = None,
    x0: ArrayLike | None = None,
    failure_prob: float | None = None,
    num_rounds: int | None = None,
    minimizer_gap: float = 0.0,
    diagnostics: bool = False,
) -> PrivateResult:
    r"""A private approximate minimiser of a ``(gamma, kappa)``-KL* loss, with ``psi``.

    ``KLSpider().solve(...)``: see :class:`KLSpider` and the module docstring.

    Args:
        rng_key: A JAX PRNG key.
        problem: A :class:`~dpsample.problem.Problem` on a
            :class:`~dpsample.domains.Ball` with declared ``lipschitz`` and
            ``smoothness``.
        epsilon: Target epsilon ``> 0``.
        delta: Target delta in ``(0, 1)``.
        kl_gamma: Declared ``gamma > 0``.
        kl_exponent: Declared ``kappa`` in ``[1, 2]``.
        initial_gap: Public ``F0`` (default ``(L gamma)^kappa``).
        x0: Public start in ``K`` (default the centre of ``K``).
        failure_prob: ``psi``'s failure probability (default ``sqrt(d)/(eps n)``).
        num_rounds: Override of ``K``.
        minimizer_gap: Added to ``psi`` (a public bound on ``min_K F_D - inf
            F_D``; default 0).
        diagnostics: Put the non-private count of unfrozen steps in
            ``info["diagnostics"]`` (never release it).

    Returns:
        :class:`~dpsample.privacy.PrivateResult`; ``info`` is a
        :class:`KLSpiderInfo` (``psi``, the schedule, the release counts).

    Raises:
        ValueError: Missing or invalid ``kl_gamma`` / ``kl_exponent`` (``kappa``
            outside ``[1, 2]``), invalid budget, ``x0`` outside ``K``, a non-Ball
            domain; all before any private computation.
        dpsample.errors.MissingConstantError: ``lipschitz`` or ``smoothness`` not
            declared.

    Examples:
        >>> import jax, jax.numpy as jnp, dpsample
        >>> from dpsample.pipelines.kl_spider import kl_spider
        >>> data = {"z": jnp.linspace(-0.4, 0.4, 500)[:, None]}
        >>> prob = dpsample.Problem(lambda x, z: 0.5 * jnp.sum((x - z["z"]) ** 2),
        ...     data, dpsample.Ball(1.0, dim=1), lipschitz=1.4, smoothness=1.0,
        ...     loss_range=1.0)
        >>> res = kl_spider(jax.random.key(1), prob, epsilon=1.0, delta=1e-5,
        ...     kl_gamma=0.5 ** 0.5, kl_exponent=2.0)
        >>> res.privacy.epsilon(1e-5) <= 1.0, res.info["anchor_releases"]
        (True, 276)
        >>> res.info["certified"], res.info["psi"]  # n too small: psi = loss_range
        (False, 1.0)
        >>> kl_spider(jax.random.key(1), prob, epsilon=1.0, delta=1e-5,
        ...     kl_gamma=0.7, kl_exponent=2.5)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: Expected kl_exponent=2.5 in [1, 2] (Menart's KL-Spider needs ...
    """
    return KLSpider().solve(
        rng_key, problem, epsilon=epsilon, delta=delta, **call_options(locals())
    )


precision.scope_public(globals())
