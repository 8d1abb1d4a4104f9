r"""DP-SPIDER (Arora et al. 2023, "private SpiderBoost"; seed 003 Algorithm 1).

For ``t = 0, ..., T-1`` (``t = 0`` is always an anchor):

.. math::
    \nabla_t = \begin{cases}
        O_1(w_t) & q \mid t \quad\text{(anchor, batch } b_1\text{)},\\
        \nabla_{t-1} + O_2(w_t, w_{t-1}) & \text{otherwise (batch } b_2\text{)},
    \end{cases}\qquad
    w_{t+1} = \Pi_K(w_t - \eta \nabla_t),

and the output is a point of the trajectory chosen by one of DP-SGD's output rules
(:mod:`dpsample.finders.outputs`; post-processing of the released iterates, so every
rule has the same guarantee): ``output="tail_average"`` (the default of
``preset="practical"``, not in the papers), the mean of the last ``ceil(T/2)`` iterates
projected onto a ball ``K``; ``"random"``, ``w_hat ~ Unif{w_1, ..., w_T}`` (the
theorem's output, the default of ``preset="theorem"``); or ``"last"``, ``w_T`` (what the
authors' script returns; not covered by the rate). The average is the default because it
ends nearest stationarity on the problems Theorem 3.2 covers: on
``experiments/problems/warm_start_003.py``'s cosine and a logistic GLM (``n = 2000``,
``delta = 1e-6``, ``epsilon = 1, 4``, 8 seeds, ``benchmarks/bench_spider_defaults.py``,
``docs/finders.md``) the random iterate ends 3.7-10x further from stationarity than
DP-SGD's default, the tail average of the same run 0.92-1.69x (medians of the per-seed
ratios of ``||grad F_D||``; in excess risk 0.89-2.86x). Like DP-SGD's, an average over a
tail that visits two basins lands between them: ask for ``output="random"`` for the
theorem's guarantee. ``O1``/``O2`` are :mod:`dpsample.finders.oracles` (second kind on
the **same** batch at both points, noise std ``min(sigma_2 ||w_t - w_{t-1}||,
sigma_hat_2)``, spec 003 A4). ``Pi_K`` projects onto a ball domain (spec 003 B19: the
theory is unconstrained; with a ball the constants are those declared on ``K``). The
unconstrained recursion (``project=False``) on a ball needs clipping (the default;
``enforce_sensitivity=False`` turns it off): without clipping both sensitivities
(``2G/b_1`` and ``2 min(M ||dw||, 2G)/b_2``) rest on the constants declared on ``K``, so
every gradient must be taken at a point of ``K``. For the same reason ``x0`` must lie in
``K`` (a ``ValueError`` before any private computation; a point within rounding of the
ball is projected onto it).

Enforced by default: anchors clip per-example gradients at the declared ``G`` and
variations clip per-example differences at ``min(M ||dw||, 2G)`` (spec 003 A6), so the
guarantee holds whatever the data. ``enforce_sensitivity=False`` runs Arora et al.'s
unclipped recursion; the guarantee then rests on the declared constants and is
*conditional* (listed in its ``assumptions``).

Non-finite values: a loss that returns NaN or inf at an iterate raises nothing during
the run. With clipping a per-example anchor gradient with a non-finite norm
contributes zero (the first-kind oracle's public rule; the second-kind oracle's
clipped differences do not yet zero a non-finite row, so a NaN difference still
reaches the iterates); without clipping it breaks the declared constants the
guarantee is conditional on, and the iterates carry the NaN.

Noise scales (Arora Alg. 2 lines 2-4 with the corrections of spec 003 §2.1/B2): with
one universal constant ``c``,

.. math::
    \sigma_1 = \frac{c L \sqrt{\ln(1/\delta)}}{\varepsilon}
        \max\Big\{\frac1{b_1}, \frac{\sqrt{T/q}}{n}\Big\},\quad
    \sigma_2 = \frac{c \beta \sqrt{\ln(1/\delta)}}{\varepsilon}
        \max\Big\{\frac1{b_2}, \frac{\sqrt{T}}{n}\Big\},\quad
    \hat\sigma_2 = \frac{2L}{\beta}\sigma_2,

i.e. noise multipliers (std of the noise on the sum over the per-example bounds ``L``
and ``min(beta ||dw||, 2L)``, the ecosystem's convention; O2 adds its rounding floor,
:mod:`dpsample.finders.oracles`) equal to ``c sqrt(ln(1/delta)) / epsilon`` times
``max{1, b_1 sqrt(T/q)/n}`` and ``max{1, b_2 sqrt(T)/n}``: one constant (reported as
``noise_constant``, the multiplier over these shape factors) for both. The anchor
term is ``sqrt(T/q)/n`` (the proof counts ``T/q`` anchors), **not** the printed
``sqrt(T)/(q n)`` (spec 003 B2). Instead of
Abadi's unspecified ``c``, the smallest ``c`` is found for which the accountant
certifies ``(epsilon, delta)`` for exactly what runs: ``ceil(T/q)`` anchor releases
composed with ``T - ceil(T/q)`` variation releases (spec 003 §3, "recommended
implementation"), under replace-one.

Defaults (Arora Thm B.3 with ``L_0 = G``, ``L_1 = beta = M``, ``F_0`` = the public
``initial_gap`` (default the declared ``loss_range``; never measured), ``abar =
sqrt(d ln(1/delta))/(n epsilon)``): ``eta = 1/(2 beta)``, ``b_1 = n`` (full-batch
anchors), ``T = ceil(max{(F_0 beta)^{1/3} L^{-2/3} abar^{-4/3}, 1/abar})``, ``q =
floor(1/(T abar^2))`` in ``[1, T]`` (the proof's form: Thm B.3's printed ``q`` has a
spurious ``beta^2``, spec 003 B3), ``b_2 = ceil(max{(L/(sqrt(F_0 beta) abar))^{2/3},
L^{1/3} n abar^{2/3} / (beta F_0)^{1/6}})`` in ``[1, n]``; the validity condition on
``n`` is reported in ``info``. Both presets (:mod:`dpsample.finders.presets`) take
this schedule; ``preset="theorem"`` also releases the theorem's random iterate (the
defaults before issue 24), ``preset="practical"`` (the default) the tail average. The
plan's notes name the preset that set each value.

References:
    Arora, Bassily, Gonzalez, Guzman, Menart, Ullah, *Faster Rates of Convergence to
    Stationary Points in Differentially Private Optimization*, ICML 2023.
    Lowy, Ullman, Wright, *How to Make the Gradients Small Privately: Improved Rates
    for Differentially Private Non-Convex Optimization*, ICML 2024 (seed 003).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import jax
import jax.numpy as jnp

from dpsample import bounds, progress
from dpsample._src import precision, validation
from dpsample.base import AlgorithmInfo, PrivateAlgorithm, optional
from dpsample.domains import Ball, projection_operands
from dpsample.finders import accounting
from dpsample.finders.oracles import (
    FirstKindOracle,
    SecondKindOracle,
    check_enforce,
    first_kind,
    second_kind,
)
from dpsample.finders.outputs import release
from dpsample.finders.planning import start_param
from dpsample.finders.presets import label_schedule, output_param
from dpsample.finders.spider_loop import spider_params, spider_scan
from dpsample.finders.spider_options import SPIDER_THEOREM, DPSpiderOptions
from dpsample.options import call_options
from dpsample.plan import Budget, Cost, Param, Plan
from dpsample.privacy import PrivacyGuarantee, PrivateResult
from dpsample.problem import Problem, ProblemSpec
from dpsample.types import Array, ArrayLike, PRNGKey

__all__ = ["DPSpider", "DPSpiderInfo", "dp_spider", "spider_theorem_parameters"]


def spider_theorem_parameters(
    *,
    n: int,
    dim: int,
    epsilon: float,
    delta: float,
    lipschitz: float,
    smoothness: float,
    initial_gap: float,
) -> dict[str, Any]:
    """Arora et al. Thm B.3 parameters (proof form of ``q``), guarded to valid ranges.

    Args:
        n: Dataset size.
        dim: Dimension ``d``.
        epsilon: The finder's epsilon.
        delta: The finder's delta.
        lipschitz: ``L`` (= ``G``).
        smoothness: ``beta`` (= ``M``).
        initial_gap: Public ``F_0 >= F(w_0) - F*``.

    Returns:
        ``{"learning_rate", "num_steps", "phase_length", "anchor_batch_size",
        "variation_batch_size", "abar", "n_condition_holds"}``.

    Examples:
        >>> from dpsample.finders.dp_spider import spider_theorem_parameters
        >>> p = spider_theorem_parameters(n=10_000, dim=10, epsilon=1.0, delta=1e-5,
        ...                       lipschitz=1.0, smoothness=1.0, initial_gap=1.0)
        >>> p["anchor_batch_size"], p["num_steps"] >= p["phase_length"] >= 1
        (10000, True)
    """
    big_l, beta, f0 = lipschitz, smoothness, initial_gap
    abar = math.sqrt(dim * math.log(1.0 / delta)) / (n * epsilon)
    t = max((f0 * beta) ** (1 / 3) * big_l ** (-2 / 3) * abar ** (-4 / 3), 1 / abar)
    t = max(1, math.ceil(t))
    q = max(1, min(t, math.floor(1.0 / (t * abar**2))))
    b2 = max(
        (big_l / (math.sqrt(f0 * beta) * abar)) ** (2 / 3),
        big_l ** (1 / 3) * n * abar ** (2 / 3) / (beta * f0) ** (1 / 6),
    )
    b2 = max(1, min(n, math.ceil(b2)))
    cond = n >= max(
        (big_l * epsilon) ** 2 / (f0 * beta * dim * math.log(1 / delta)),
        math.sqrt(dim) * max(1.0, math.sqrt(beta * f0) / big_l) / epsilon,
    )
    return {
        "learning_rate": 1.0 / (2.0 * beta),
        "num_steps": t,
        "phase_length": q,
        "anchor_batch_size": n,
        "variation_batch_size": b2,
        "abar": abar,
        "n_condition_holds": bool(cond),
    }


def dp_spider(
    rng_key: PRNGKey,
    problem: Problem,
    *,
    epsilon: float,
    delta: float,
    x0: ArrayLike | None = None,
    num_steps: int | None = None,
    phase_length: int | None = None,
    learning_rate: float | None = None,
    anchor_batch_size: int | None = None,
    variation_batch_size: int | None = None,
    sampling: str = "poisson",
    enforce_sensitivity: bool = True,
    preset: str = "practical",
    output: str | None = None,
    project: bool = True,
    return_iterates: bool = False,
    initial_gap: float | None = None,
) -> PrivateResult:
    r"""DP-SPIDER with noise calibrated by an accountant to ``(epsilon, delta)``.

    See the module docstring for the recursion, noise scales and defaults, and
    :class:`DPSpider` for the plan/run form and the compute-budget rule: this is
    ``DPSpider().solve(rng_key, problem, epsilon=..., delta=..., **options)``.

    The loop runs in a module-level jitted core keyed on the oracles' static structure
    (:meth:`~dpsample.finders.oracles.FirstKindOracle.functional`) and ``T`` only: a
    second call with another key, other data of the same shapes or another epsilon
    (same ``T``) reuses the compilation.

    Args:
        rng_key: A JAX PRNG key (split internally, never reused).
        problem: The :class:`~dpsample.problem.Problem`; needs declared ``lipschitz``
            (anchors) and ``smoothness`` (variations; defaults).
        epsilon: Target epsilon ``> 0``.
        delta: Target delta in ``(0, 1)``.
        x0: Public start ``w_0`` in the domain ``K``, shape ``(d,)`` (default the
            centre of the domain).
        num_steps: ``T`` (default Thm B.3).
        phase_length: ``q`` (default the proof's ``floor(1/(T abar^2))``).
        learning_rate: ``eta`` (default ``1/(2 beta)``).
        anchor_batch_size: ``b_1`` (default ``n``: full-batch anchors).
        variation_batch_size: ``b_2`` (default Thm B.3).
        sampling: Scheme of the sub-``n`` batches: ``"poisson"`` (default; truncated
            padded Poisson, PLD) or ``"without_replacement"`` (RDP). A batch of size
            ``n`` is always the full batch.
        enforce_sensitivity: Clip per-example terms at the declared bounds
            (default: unconditional privacy even for examples violating them;
            spec 003 A6). ``False`` opts out (Arora et al.'s unclipped
            recursion): the guarantee is then *conditional* on the declared
            constants.
        preset: ``"practical"`` (default) or ``"theorem"``
            (:mod:`dpsample.finders.presets`): the rule behind every parameter
            left at ``None``. ``"theorem"`` is Thm B.3's schedule and its uniform
            random iterate; ``"practical"`` releases the tail average.
        output: Which point of the trajectory is released, one of DP-SGD's rules
            (:mod:`dpsample.finders.outputs`, post-processing: the same
            guarantee): ``"tail_average"`` (the mean of the last ``ceil(T/2)``
            iterates, projected onto a ball ``K``), ``"random"`` (Unif over
            ``w_1..w_T``, the theorem's output) or ``"last"``. Default: the
            preset's (``"tail_average"`` for ``"practical"``, ``"random"`` for
            ``"theorem"``).
        project: Project onto a ball domain after each step. ``False`` on a ball
            needs clipping (``enforce_sensitivity=True``, the default: without
            clipping the sensitivities rest on the constants declared on ``K``).
        return_iterates: Put all iterates in ``info["iterates"]``.
        initial_gap: Public ``F_0`` (default the declared ``loss_range``).

    Returns:
        :class:`~dpsample.privacy.PrivateResult`; ``info`` has the schedule, both
        noise multipliers (std of the noise on the sum over the per-example bound,
        as :func:`~dpsample.finders.oracles.first_kind` takes them) and scales
        (``sigma1`` on the anchor mean; ``sigma2`` per unit of ``||w_t - w_{t-1}||``
        and its cap ``sigma2_hat``, before O2's rounding floor), oracle counts and
        parameter sources.

    Raises:
        ValueError: Bad privacy parameters, ``x0`` (wrong shape, not finite, or
            outside ``K``), ``project=False`` on a ball without clipping,
            batch sizes, ``T < 1``, ``q`` outside ``[1, T]``, sampling or output.
        TypeError: ``enforce_sensitivity`` is not a bool.
        MissingConstantError: Missing ``lipschitz`` / ``smoothness`` / initial gap.

    Privacy:
        Replace-one. Anchors: sensitivity ``2G/b_1``; variations: ``2 min(M ||w_t -
        w_{t-1}||, 2G)/b_2`` (plus a rounding floor unless clipped) with noise
        proportional to it, enforced by clipping by default (conditional on the
        declared constants with ``enforce_sensitivity=False``). ``ceil(T/q)``
        anchors and ``T - ceil(T/q)`` variations (what runs) are composed by
        dp_accounting (RDP and/or PLD); the result meets ``(epsilon, delta)`` and
        covers every iterate.

    Examples:
        >>> import jax, jax.numpy as jnp, dpsample
        >>> from dpsample.finders import dp_spider
        >>> data = {"z": jnp.linspace(-1.0, 1.0, 8)[:, None]}
        >>> prob = dpsample.Problem(lambda x, z: 0.5 * jnp.sum((x - z["z"]) ** 2),
        ...     data, dpsample.Ball(2.0, dim=1), lipschitz=3.0, smoothness=1.0,
        ...     loss_range=4.5)
        >>> res = dp_spider(jax.random.key(0), prob, epsilon=2.0, delta=1e-5,
        ...     x0=jnp.zeros(1), num_steps=6, phase_length=3, variation_batch_size=4)
        >>> res.info["oracle_calls"]
        {'first_kind': 2, 'second_kind': 4}
        >>> res.privacy.epsilon(1e-5) <= 2.0, res.privacy.conditional
        (True, False)
    """
    return DPSpider().solve(
        rng_key, problem, epsilon=epsilon, delta=delta, **call_options(locals())
    )


#: The output rule of each preset (:mod:`dpsample.finders.presets`), and why.
_OUTPUT_RULES = {
    "practical": (
        "tail_average",
        "the mean of the last ceil(T/2) iterates, as DP-SGD's default "
        "(post-processing: same guarantee; benchmarks/bench_spider_defaults.py)",
    ),
    "theorem": ("random", "Thm B.3's uniform iterate of w_1..w_T"),
}

_OPTED_OUT = "opted out: the guarantee is conditional on the declared constants"


def _notes(sources: dict[str, str], clip: bool) -> dict[str, str]:
    """The plan's notes that replace the declared ones.

    A capped ``T`` (and the ``q`` re-derived there), and the opt-out of clipping.
    """
    notes = {
        k: sources[k]
        for k in ("num_steps", "phase_length")
        if sources[k] not in ("user", SPIDER_THEOREM)
    }
    return notes if clip else notes | {"enforce_sensitivity": _OPTED_OUT}


def _schedule_cost(
    num_steps: int, phase_length: int, anchor_rows: int, variation_rows: int
) -> int:
    """Per-example gradients of a run: ``ceil(T/q) m_1 + 2 (T - ceil(T/q)) m_2``."""
    n_anchor = -(-num_steps // phase_length)
    return n_anchor * anchor_rows + 2 * (num_steps - n_anchor) * variation_rows


def _capped_num_steps(
    cap: int,
    num_steps: int,
    phase_of: Any,
    anchor_rows: int,
    variation_rows: int,
) -> int:
    """Largest ``T' <= T`` whose schedule ``(T', phase_of(T'))`` costs ``<= cap``.

    Bisection on ``T'`` keeping the invariant that the lower end fits (the cost is
    non-decreasing in ``T'`` up to the rounding of ``q``; the invariant makes the
    answer fit regardless). Raises ``ValueError`` when not even one anchor fits.
    """
    if _schedule_cost(1, 1, anchor_rows, variation_rows) > cap:
        raise ValueError(
            f"max_evaluations={cap:,} is below one DP-SPIDER anchor ({anchor_rows:,} "
            "per-example gradients)"
        )
    lo, hi = 1, num_steps
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _schedule_cost(mid, phase_of(mid), anchor_rows, variation_rows) <= cap:
            lo = mid
        else:
            hi = mid
    if _schedule_cost(hi, phase_of(hi), anchor_rows, variation_rows) <= cap:
        return hi
    return lo


@dataclasses.dataclass(frozen=True)
class DPSpiderInfo(AlgorithmInfo):
    """Public facts of a :class:`DPSpider` run (``result.info``).

    Attributes:
        algorithm: ``"dp_spider"``.
        num_steps: ``T``.
        phase_length: ``q`` (an anchor at every ``t`` with ``q | t``).
        learning_rate: ``eta``.
        anchor_batch_size: ``b_1``.
        variation_batch_size: ``b_2``.
        anchor_sampling: Scheme of the anchors (``"full_batch"`` when ``b_1 = n``).
        variation_sampling: Scheme of the variations.
        noise_constant: The calibrated constant ``c`` over Arora's shape factors.
        anchor_noise_multiplier: ``z_1`` (noise std on the sum over ``G``).
        variation_noise_multiplier: ``z_2`` (over ``min(M ||dw||, 2G)``).
        sigma1: Anchor noise std on the mean.
        sigma2: Variation noise std per unit of ``||w_t - w_{t-1}||`` (``None``
            without a declared smoothness).
        sigma2_hat: Its cap ``z_2 2G / b_2``.
        oracle_calls: ``{"first_kind": ceil(T/q), "second_kind": T - ceil(T/q)}``.
        gradient_evaluations: Per-example gradients (padded rows included).
        output: ``"tail_average"``, ``"random"`` or ``"last"``.
        output_index: Index of the released iterate (drawn from the key only); for
            ``"tail_average"`` the first averaged index (``floor(T/2)``).
        clipped: Whether per-example terms are clipped.
        projected: Whether the iterates were projected onto a ball.
        parameter_sources: Where each parameter came from (text).
        theorem_parameters: Thm B.3's parameters, when a default was needed.
        iterates: All iterates (``return_iterates=True``), covered by the guarantee.
    """

    algorithm: str
    num_steps: int
    phase_length: int
    learning_rate: float
    anchor_batch_size: int
    variation_batch_size: int
    anchor_sampling: str
    variation_sampling: str
    noise_constant: float
    anchor_noise_multiplier: float
    variation_noise_multiplier: float
    sigma1: float
    sigma2: float | None
    sigma2_hat: float
    oracle_calls: dict[str, int]
    gradient_evaluations: int
    output: str
    output_index: int
    clipped: bool
    projected: bool
    parameter_sources: dict[str, str]
    theorem_parameters: dict[str, Any] | None = optional()
    iterates: Array | None = optional()
    diagnostics: None = None


class DPSpider(PrivateAlgorithm):
    """DP-SPIDER in two phases: :meth:`plan` in public, :meth:`run` privately.

    See the module docstring for the recursion, the noise scales and the defaults,
    and :func:`dp_spider` for every option (the same keywords, bound at construction
    or given to :meth:`plan`). ``x0`` defaults to the centre of the domain.

    Compute budget: with ``Budget(max_evaluations=E)``, a theorem-default ``T``
    whose schedule needs more than ``E`` per-example gradients
    (``ceil(T/q) m_1 + 2 (T - ceil(T/q)) m_2``, ``m`` the padded rows of a batch) is
    capped at the largest ``T' <= T`` that fits, and the parameters the theorem
    derives from ``T`` are re-derived at ``T'``: the phase length ``q = floor(1/(T'
    abar^2))`` in ``[1, T']`` (unless the caller fixed it); ``b_2``, ``b_1 = n`` and
    ``eta`` do not depend on ``T``. The noise is then calibrated for what runs. A
    ``num_steps`` given by the caller whose schedule exceeds ``E`` is refused.

    Examples:
        >>> import jax, jax.numpy as jnp, dpsample
        >>> from dpsample.finders.dp_spider import DPSpider
        >>> from dpsample.plan import Budget
        >>> data = {"z": jnp.linspace(-1.0, 1.0, 8)[:, None]}
        >>> prob = dpsample.Problem(lambda x, z: 0.5 * jnp.sum((x - z["z"]) ** 2),
        ...     data, dpsample.Ball(2.0, dim=1), lipschitz=3.0, smoothness=1.0,
        ...     loss_range=4.5)
        >>> algo = DPSpider(num_steps=6, phase_length=3, variation_batch_size=4)
        >>> plan = algo.plan(prob.spec, Budget(2.0, 1e-5))
        >>> plan.source("noise_constant"), plan["phase_length"]
        ('calibrated', 3)
        >>> plan.cost.gradient_evaluations  # 2 anchors of 8 + 4 x 2 x 8 padded rows
        80
        >>> res = algo.run(jax.random.key(0), plan, prob.data)
        >>> res.privacy is plan.guarantee, res.info.oracle_calls
        (True, {'first_kind': 2, 'second_kind': 4})
    """

    name = "dp_spider"
    kind = "finder"
    seed = "003"
    theorem = "Algorithm 1 (Arora et al. 2023, Alg. 2), Theorem 3.1 / Arora Thm B.3"
    guarantee_type = (
        "(epsilon, delta): ceil(T/q) anchor and T - ceil(T/q) variation Gaussian "
        "releases, dp_accounting PLD/RDP"
    )
    summary = "DP-SPIDER (private SpiderBoost): anchors plus paired variations"

    #: Theorem 3.2's rate shape at a public initial gap (what a warm-start pipeline
    #: reports as its stationarity bound).
    stationarity_rate = staticmethod(bounds.theorem_3_2_stationarity_bound)

    options_type = DPSpiderOptions

    def _plan(self, spec: ProblemSpec, budget: Budget, **options: Any) -> Plan:
        opts = DPSpiderOptions.from_options(options)
        sampling = opts.sampling
        epsilon, delta = validation.check_privacy(budget.epsilon, budget.delta)
        x0_param = start_param(spec, opts.x0, "the centre of the domain")
        clip = check_enforce(opts.enforce_sensitivity)
        project = spec.check_projection(opts.project, clipped=clip, name="dp_spider")
        opts = dataclasses.replace(opts, project=project)  # a [user] row if it differs
        if sampling not in ("poisson", "without_replacement"):
            raise ValueError(
                "Expected sampling in ('poisson', 'without_replacement'), got "
                f"{sampling!r}"
            )
        output_p = output_param(opts.output, opts.preset, **_OUTPUT_RULES)
        big_l = validation.require_constant(
            "lipschitz", spec.lipschitz, needed_for="DP-SPIDER (anchor sensitivity)"
        )
        n, d = spec.n, spec.dim
        sources: dict[str, str] = {}
        user_steps, user_phase = opts.num_steps, opts.phase_length
        need_defaults = any(
            v is None
            for v in (
                opts.num_steps,
                opts.phase_length,
                opts.learning_rate,
                opts.variation_batch_size,
            )
        )
        theorem: dict[str, Any] = {}
        f0 = None
        if need_defaults:
            beta = validation.require_constant(
                "smoothness",
                spec.smoothness,
                needed_for="DP-SPIDER's default parameters",
            )
            f0, sources["initial_gap"] = spec.initial_gap(
                opts.initial_gap, needed_for="DP-SPIDER's default parameters"
            )
            theorem = spider_theorem_parameters(
                n=n,
                dim=d,
                epsilon=epsilon,
                delta=delta,
                lipschitz=big_l,
                smoothness=beta,
                initial_gap=f0,
            )

        def pick(name: str, value: Any, check: Any) -> Any:
            if value is None:
                sources[name] = SPIDER_THEOREM
                return theorem[name]
            sources[name] = "user"
            return check(name, value)

        num_steps = pick("num_steps", opts.num_steps, validation.positive_int)
        phase_length = pick("phase_length", opts.phase_length, validation.positive_int)
        if phase_length > num_steps:
            raise ValueError(f"Expected phase_length={phase_length} <= T={num_steps}")
        learning_rate = pick("learning_rate", opts.learning_rate, validation.positive)
        b1 = (
            n
            if opts.anchor_batch_size is None
            else spec.check_batch_size(opts.anchor_batch_size, "anchor_batch_size")
        )
        sources["anchor_batch_size"] = (
            "Thm B.3: b1 = n" if opts.anchor_batch_size is None else "user"
        )
        b2 = pick(
            "variation_batch_size",
            opts.variation_batch_size,
            lambda name, v: spec.check_batch_size(v, name),
        )
        samp1 = "full_batch" if b1 == n else sampling
        samp2 = "full_batch" if b2 == n else sampling

        def oracles(
            c: float, shape1: float = 1.0, shape2: float = 1.0
        ) -> tuple[FirstKindOracle, SecondKindOracle]:
            o1 = first_kind(
                spec,
                noise_multiplier=c * shape1,
                sampling=samp1,
                batch_size=None if samp1 == "full_batch" else b1,
                enforce_sensitivity=clip,
            )
            o2 = second_kind(
                spec,
                noise_multiplier=c * shape2,
                sampling=samp2,
                batch_size=None if samp2 == "full_batch" else b2,
                enforce_sensitivity=clip,
            )
            return o1, o2

        # eager validation (constants, batch sizes) and the padded rows of a batch
        probe1, probe2 = oracles(1.0)
        m1, m2 = probe1.max_batch_size, probe2.max_batch_size
        cap = budget.max_evaluations
        if cap is not None and _schedule_cost(num_steps, phase_length, m1, m2) > cap:
            need = _schedule_cost(num_steps, phase_length, m1, m2)
            if user_steps is not None:
                raise ValueError(
                    f"num_steps={num_steps} (q={phase_length}) needs {need:,} "
                    f"per-example gradients, over max_evaluations={cap:,}"
                )
            abar = theorem["abar"]

            def phase_of(t: int) -> int:
                if user_phase is not None:
                    return min(user_phase, t)
                return max(1, min(t, math.floor(1.0 / (t * abar**2))))

            capped = _capped_num_steps(cap, num_steps, phase_of, m1, m2)
            if user_phase is not None and phase_length > capped:
                raise ValueError(
                    f"max_evaluations={cap:,} allows T={capped} steps, fewer than "
                    f"the given phase_length={phase_length}"
                )
            sources["num_steps"] += (
                f"; capped at T={capped} (max_evaluations={cap:,}: the largest T "
                f"whose schedule fits, was {num_steps})"
            )
            num_steps, phase_length = capped, phase_of(capped)
            if user_phase is None:
                sources["phase_length"] += " at the capped T"
        n_anchor = -(-num_steps // phase_length)
        n_var = num_steps - n_anchor
        if n_var > 0 and spec.smoothness is None and not clip:
            sources["variation_bound"] = "2G (no smoothness declared)"

        # Arora's noise shape: multipliers proportional to these factors (one
        # constant c).
        shape1 = max(1.0, b1 * math.sqrt(num_steps / phase_length) / n)
        shape2 = max(1.0, b2 * math.sqrt(num_steps) / n)

        def make_guarantee(c: float) -> PrivacyGuarantee:
            o1, o2 = oracles(c, shape1, shape2)
            g = o1.run_guarantee(n_anchor)
            return g.compose(o2.run_guarantee(n_var)) if n_var > 0 else g

        def coarse(c: float) -> float:
            parts = [
                (
                    lambda route: accounting.replace_one_event(
                        samp1, n, b1, m1, c * shape1, route
                    ),
                    n_anchor,
                ),
                (
                    lambda route: accounting.replace_one_event(
                        samp2, n, b2, m2, c * shape2, route
                    ),
                    n_var,
                ),
            ]
            return accounting.coarse_epsilon(parts, delta)

        c, guarantee = accounting.calibrate_multiplier(
            coarse, make_guarantee, epsilon=epsilon, delta=delta
        )
        o1, o2 = oracles(c, shape1, shape2)
        # the options' rows (the declaration's order, sources and rules), with the
        # oracles' derived rows after ``sampling``
        rows = list(
            opts.rows(
                resolved={
                    "num_steps": num_steps,
                    "phase_length": phase_length,
                    "learning_rate": learning_rate,
                    "anchor_batch_size": b1,
                    "variation_batch_size": b2,
                    "enforce_sensitivity": clip,
                    "project": project,
                    "initial_gap": f0,
                },
                notes=_notes(sources, clip),
                params={
                    "x0": x0_param,
                    "output": output_p,
                    "return_iterates": Param(bool(opts.return_iterates), "default"),
                },
            ).items()
        )
        derived: dict[str, Param] = {
            "anchor_sampling": Param(samp1, "derived", "full batch when b1 = n"),
            "variation_sampling": Param(samp2, "derived", "full batch when b2 = n"),
            "noise_constant": Param(
                c, "calibrated", "smallest c the accountant certifies (PLD/RDP)"
            ),
            "anchor_noise_multiplier": Param(
                o1.noise_multiplier, "derived", "c max{1, b1 sqrt(T/q)/n}"
            ),
            "variation_noise_multiplier": Param(
                o2.noise_multiplier, "derived", "c max{1, b2 sqrt(T)/n}"
            ),
            "sigma1": Param(
                o1.noise_std, "derived", "z1 G / b1" if clip else "z1 G F / b1"
            ),
            "sigma2": Param(
                None
                if spec.smoothness is None
                else o2.noise_multiplier * spec.smoothness / b2,
                "derived",
                "z2 M / b2 per unit of ||w_t - w_{t-1}||",
            ),
            "sigma2_hat": Param(
                o2.noise_multiplier * 2.0 * big_l / b2, "derived", "z2 2G / b2"
            ),
        }
        cut = [k for k, _ in rows].index("sampling") + 1
        params = dict(rows[:cut]) | derived | dict(rows[cut:])
        return Plan(
            algorithm=self.name,
            spec=spec,
            budget=budget,
            params=label_schedule(params, opts.preset),
            guarantee=guarantee,
            cost=Cost(
                gradient_evaluations=_schedule_cost(num_steps, phase_length, m1, m2),
                steps=num_steps,
            ),
            internal={
                "o1": o1,
                "o2": o2,
                "n_anchor": n_anchor,
                "n_var": n_var,
                "sources": sources,
                "theorem_parameters": theorem or None,
            },
        )

    def _run(self, rng_key: PRNGKey, plan: Plan, problem: Problem) -> PrivateResult:
        o1 = plan.internal["o1"].with_data(problem)
        o2 = plan.internal["o2"].with_data(problem)
        num_steps = plan["num_steps"]
        k_run, k_out = jax.random.split(rng_key)
        o1_fn, o1_ops = o1.functional()
        o2_fn, o2_ops = o2.functional()
        ws = spider_scan(
            k_run,
            jnp.asarray(plan["x0"], jnp.float64),
            spider_params(plan["learning_rate"], plan["phase_length"]),
            projection_operands(problem.domain, plan["project"]),
            o1_ops,
            o2_ops,
            o1_fn=o1_fn,
            o2_fn=o2_fn,
            num_steps=num_steps,
            show_progress=progress.is_enabled(),
        )
        value, index = release(k_out, ws, plan["output"], problem.domain)
        n_anchor, n_var = plan.internal["n_anchor"], plan.internal["n_var"]
        info = DPSpiderInfo(
            algorithm=self.name,
            num_steps=num_steps,
            phase_length=plan["phase_length"],
            learning_rate=plan["learning_rate"],
            anchor_batch_size=plan["anchor_batch_size"],
            variation_batch_size=plan["variation_batch_size"],
            anchor_sampling=plan["anchor_sampling"],
            variation_sampling=plan["variation_sampling"],
            noise_constant=plan["noise_constant"],
            anchor_noise_multiplier=o1.noise_multiplier,
            variation_noise_multiplier=o2.noise_multiplier,
            sigma1=o1.noise_std,
            sigma2=plan["sigma2"],
            sigma2_hat=plan["sigma2_hat"],
            oracle_calls={"first_kind": n_anchor, "second_kind": n_var},
            gradient_evaluations=plan.cost.gradient_evaluations,
            output=plan["output"],
            output_index=index,
            clipped=plan["enforce_sensitivity"],
            projected=bool(plan["project"] and isinstance(problem.domain, Ball)),
            parameter_sources=dict(plan.internal["sources"]),
            theorem_parameters=plan.internal["theorem_parameters"],
            iterates=ws if plan["return_iterates"] else None,
        )
        return PrivateResult(value, plan.guarantee, info)  # type: ignore[arg-type]


precision.scope_public(globals())
