r"""The Goldstein finders as two-phase algorithms, and their plain functions.

:class:`GoldsteinZeroOrder` and :class:`GoldsteinFirstOrder` plan in public
(:func:`~dpsample.finders.goldstein.goldstein_theorem_parameters` for the schedule,
:func:`~dpsample.finders.goldstein.goldstein_guarantee` for the noise and the
guarantee) and run the jitted O2NC core
(:func:`~dpsample.finders.goldstein.o2nc_run`). :func:`goldstein_zero_order` and
:func:`goldstein_first_order` are ``Algorithm().solve(...)``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import jax

from dpsample._src import precision, validation
from dpsample.base import (
    AlgorithmInfo,
    NonPrivateDiagnostics,
    PrivateAlgorithm,
    optional,
)
from dpsample.domains import Unconstrained
from dpsample.finders.goldstein.guarantee import GoldsteinNoise, goldstein_guarantee
from dpsample.finders.goldstein.o2nc import o2nc_run, scalars_of, structure_of
from dpsample.finders.goldstein.options import (
    GoldsteinFirstOrderOptions,
    GoldsteinOptions,
    GoldsteinZeroOrderOptions,
)
from dpsample.finders.goldstein.rates import default_alpha
from dpsample.finders.goldstein.schedule import (
    GoldsteinSchedule,
    goldstein_theorem_parameters,
)
from dpsample.finders.planning import start_param
from dpsample.options import call_options
from dpsample.plan import Budget, Cost, Param, Plan
from dpsample.privacy import PrivateResult
from dpsample.problem import Problem, ProblemSpec
from dpsample.types import Array, ArrayLike, PRNGKey

__all__ = [
    "GoldsteinDiagnostics",
    "GoldsteinFirstOrder",
    "GoldsteinInfo",
    "GoldsteinZeroOrder",
    "goldstein_first_order",
    "goldstein_zero_order",
]


@dataclasses.dataclass(frozen=True)
class GoldsteinDiagnostics(NonPrivateDiagnostics):
    """Counts read from the private data (**not private**: for checking only).

    Attributes:
        bound_exceeded_count: Per-sample estimates (anchor or difference) whose
            norm exceeded its sensitivity bound (clipped in Mode B; in Mode A the
            event the TV slack pays for).
        estimates_checked: Per-sample estimates checked (equals the planned
            number of samples used, single pass).
    """

    bound_exceeded_count: int
    estimates_checked: int


@dataclasses.dataclass(frozen=True)
class GoldsteinInfo(AlgorithmInfo):
    """Public facts of a Goldstein finder run (``result.info``).

    Attributes:
        algorithm: ``"goldstein_zero_order"`` or ``"goldstein_first_order"``.
        plan: The public schedule, a :class:`GoldsteinSchedule` (also a mapping):
            every parameter and bound.
        noise: The calibrated noise, a :class:`TreeNoise` (single pass) or
            :class:`AnchorDifferenceNoise` (multi pass); also mappings.
        output_window: Index of the released window average (drawn from the key);
            ``-1``: the mean of the last ``ceil(T/2)`` iterates (``preset=
            "practical"``, single pass).
        privacy_mode: ``"A (paper)"`` or ``"B (enforced sensitivity)"``.
        samples_used: Samples read (single pass; the planned count).
        window_means: All window averages (``return_iterates=True``).
        iterates: The ``z`` iterates (``return_iterates=True``).
        diagnostics: :class:`GoldsteinDiagnostics` (non-private).
    """

    algorithm: str
    plan: GoldsteinSchedule
    noise: GoldsteinNoise
    output_window: int
    privacy_mode: str
    samples_used: int | None = optional()
    window_means: Array | None = optional()
    iterates: Array | None = optional()
    diagnostics: GoldsteinDiagnostics | None = None


# ------------------------------------------------------------------ shared phases
_DERIVED_KEYS = (
    "certified_radius",
    "tree_height",
    "anchor_batch",
    "difference_batch",
    "num_windows",
    "num_anchors",
    "num_differences",
    "samples_used",
    "num_estimates",
    "failure_prob",
    "tv_slack",
    "delta_gaussian",
    "anchor_bound",
    "difference_bound_max",
    "anchor_sensitivity",
    "difference_sensitivity",
)


_PRACTICAL = "preset 'practical' (non-paper)"
#: What the ``"practical"`` preset sets (single pass), and why: the plan's notes.
_PRACTICAL_RULES = {
    "num_iters": "T = n / B, the whole sample in batches of B",
    "clip_radius": "D = c_d Phi / (L T), the least step that closes the gap in T",
    "period": "Sigma = 1: every step an anchor, no tree",
    "window": "M = 1",
    "step_size": "eta = D / (c_g L)",
    "anchor_batch": "B = ceil(z C_A sqrt(d) / L): release noise norm <= L",
    "difference_batch": "B2 = B1, the same noise rule",
    "output": "the mean of the last ceil(T/2) iterates",
}


def _goldstein_plan(
    algorithm: PrivateAlgorithm,
    spec: ProblemSpec,
    budget: Budget,
    opts: GoldsteinOptions,
) -> Plan:
    """Validate, schedule, calibrate and cost a run (public inputs only)."""
    name = algorithm.name
    enforce = True if opts.enforce_sensitivity is None else opts.enforce_sensitivity
    epsilon, delta = validation.check_privacy(budget.epsilon, budget.delta)
    x0_param = start_param(spec, opts.x0, "the centre of K")
    big_l = spec.require("lipschitz", needed_for=f"{name} (sensitivity and step sizes)")
    phi, _ = spec.initial_gap(opts.initial_gap, needed_for=name)
    if not isinstance(enforce, bool):
        raise TypeError("Expected enforce_sensitivity to be a bool")
    if not enforce and not isinstance(spec.domain, Unconstrained):
        raise ValueError(
            f"{name} takes unconstrained steps and evaluates the loss outside the "
            "domain: without enforce_sensitivity=True its privacy needs lipschitz on "
            "all of R^d, so declare the Problem on Unconstrained(d)"
        )
    alpha = opts.alpha
    if alpha is None:
        alpha = default_alpha(
            n=spec.n,
            dim=spec.dim,
            epsilon=epsilon,
            lipschitz=big_l,
            initial_gap=phi,
            passes=opts.passes,
            preset=opts.preset,
        )
    schedule = goldstein_theorem_parameters(
        n=spec.n,
        dim=spec.dim,
        epsilon=epsilon,
        delta=delta,
        lipschitz=big_l,
        initial_gap=phi,
        alpha=alpha,
        max_evaluations=budget.max_evaluations,
        **(opts.schedule_options() | {"enforce_sensitivity": enforce}),
    )
    noise, guarantee = goldstein_guarantee(schedule, calibration=opts.calibration)
    capped = "uncapped_evaluations" in schedule
    cap_note = (
        f"; capped by max_evaluations={budget.max_evaluations:,} (was "
        f"{schedule.get('uncapped_evaluations', 0):,} evaluations, T = "
        f"{schedule.get('uncapped_num_iters')})"
        if capped
        else ""
    )
    declared = {f.name for f in opts.declared()}
    practical = schedule["preset"] == "practical" and schedule["passes"] == "single"
    labels = {k: f"{_PRACTICAL}: {why}" for k, why in _PRACTICAL_RULES.items()}
    labels["num_iters"] += cap_note
    rows = opts.rows(
        resolved={k: v for k, v in schedule.items() if k in declared}
        | {"return_iterates": bool(opts.return_iterates)},
        sources=(dict.fromkeys(_PRACTICAL_RULES, "default") if practical else {})
        | ({"beta": "derived"} if capped else {}),
        notes=(labels if practical else {"num_iters": cap_note}) | {"beta": cap_note},
        params={"x0": x0_param},
    )
    last = rows.pop("return_iterates")
    params: dict[str, Param] = dict(rows)
    for key in _DERIVED_KEYS:
        note = labels.get(key, "") if practical else ""
        params[key] = Param(schedule[key], "derived", note)
    if practical:
        params["output"] = Param("tail_average", "default", labels["output"])
    for key, value in noise.items():
        if value is None:
            continue
        calibrated = key.endswith("noise_multiplier")
        params[key] = Param(value, "calibrated" if calibrated else "derived")
    params["return_iterates"] = last
    cost = Cost(
        gradient_evaluations=schedule["gradient_evaluations"],
        loss_evaluations=schedule["loss_evaluations"],
        steps=schedule["num_iters"],
    )
    return Plan(
        algorithm=name,
        spec=spec,
        budget=budget,
        params=params,
        guarantee=guarantee,
        cost=cost,
        internal={"schedule": schedule, "noise": noise},
    )


def _run_goldstein(
    algorithm: PrivateAlgorithm, rng_key: PRNGKey, plan: Plan, problem: Problem
) -> PrivateResult:
    """Run the planned O2NC core and assemble the typed info."""
    schedule, noise = plan.internal["schedule"], plan.internal["noise"]
    out = o2nc_run(
        problem.loss_fn,
        structure_of(schedule),
        rng_key,
        problem.data,
        plan["x0"],
        scalars_of(
            schedule,
            noise.get("tree_sigma", 0.0),
            noise.get("sigma1", 0.0),
            noise.get("sigma2", 0.0),
        ),
    )
    single = schedule["passes"] == "single"
    keep = plan["return_iterates"]
    x_out = jax.block_until_ready(out.value)
    info = GoldsteinInfo(
        algorithm=algorithm.name,
        plan=GoldsteinSchedule.from_mapping(schedule),
        noise=noise,
        output_window=int(out.output_window),
        privacy_mode=schedule["mode"],
        samples_used=int(out.samples_used) if single else None,
        window_means=out.window_means if keep else None,
        iterates=out.iterates if keep else None,
        diagnostics=GoldsteinDiagnostics(
            bound_exceeded_count=int(out.bound_exceeded),
            estimates_checked=int(out.estimates_checked),
        ),
    )
    return PrivateResult(x_out, plan.guarantee, info)  # type: ignore[arg-type]


# ------------------------------------------------------------------ algorithms
class _GoldsteinFinder(PrivateAlgorithm):
    """The two phases both Goldstein finders share (their options differ)."""

    options_type: ClassVar[type[GoldsteinOptions]] = GoldsteinOptions

    def _plan(self, spec: ProblemSpec, budget: Budget, **options: Any) -> Plan:
        opts = self.options_type.from_options(options)
        return _goldstein_plan(self, spec, budget, opts)

    def _run(self, rng_key: PRNGKey, plan: Plan, problem: Problem) -> PrivateResult:
        return _run_goldstein(self, rng_key, plan, problem)


class GoldsteinZeroOrder(_GoldsteinFinder):
    r"""Private zero-order Goldstein finder (seed 004 Alg. 2 with Alg. 3 or 4).

    The options are declared by :class:`GoldsteinZeroOrderOptions` (the keywords
    of :func:`goldstein_zero_order`; ``x0`` defaults to the centre of the domain).
    Cost: ``2 m`` loss evaluations per anchor sample and ``4 m`` per difference
    sample (multi pass: every step reads all ``n``).
    Compute budget: the rule of
    :func:`~dpsample.finders.goldstein.goldstein_theorem_parameters` (the
    largest ``T`` whose re-derived schedule fits ``max_evaluations``).

    Examples:
        >>> import jax, jax.numpy as jnp, dpsample
        >>> from dpsample.finders.goldstein import GoldsteinZeroOrder
        >>> prob = dpsample.Problem(lambda x, z: jnp.abs(x[0] - z), jnp.ones(400),
        ...     dpsample.domains.Unconstrained(2), lipschitz=1.0, loss_range=4.0)
        >>> algo = GoldsteinZeroOrder(alpha=0.2, num_directions=8,
        ...                           enforce_sensitivity=True)
        >>> plan = algo.plan(prob.spec, dpsample.Budget(2.0, 1e-5))
        >>> plan.cost.loss_evaluations == (16 * plan["anchor_batch"]
        ...     * plan["num_anchors"] + 32 * plan["num_differences"])
        True
        >>> res = algo.run(jax.random.key(0), plan, prob.data)
        >>> res.privacy is plan.guarantee, res.value.shape
        (True, (2,))
    """

    name = "goldstein_zero_order"
    kind = "finder"
    seed = "004"
    theorem = "Algorithms 2-4, Theorems 3.1 (corrected) and 4.1"
    guarantee_type = (
        "(epsilon, delta): tree mechanism (single pass) or composed Gaussians "
        "(multi pass); Mode A adds a TV slack"
    )
    summary = "O2NC with a private two-point zero-order oracle (Goldstein stationarity)"
    options_type = GoldsteinZeroOrderOptions


class GoldsteinFirstOrder(_GoldsteinFinder):
    r"""Private first-order single-pass Goldstein finder (seed 004 Alg. 2 + Alg. 5).

    The options are declared by :class:`GoldsteinFirstOrderOptions` (the keywords
    of :func:`goldstein_first_order`). Cost: one
    gradient per anchor sample and ``2 m`` per difference sample.

    Examples:
        >>> import jax, jax.numpy as jnp, dpsample
        >>> from dpsample.finders.goldstein import GoldsteinFirstOrder
        >>> prob = dpsample.Problem(lambda x, z: jnp.abs(x[0] - z), jnp.ones(400),
        ...     dpsample.domains.Unconstrained(2), lipschitz=1.0, loss_range=4.0)
        >>> plan = GoldsteinFirstOrder(alpha=0.2, num_directions=8).plan(
        ...     prob.spec, dpsample.Budget(2.0, 1e-5))
        >>> plan.cost.gradient_evaluations > 0 == plan.cost.loss_evaluations
        True
    """

    name = "goldstein_first_order"
    kind = "finder"
    seed = "004"
    theorem = "Algorithms 2 and 5, Theorem C.4 (corrected)"
    guarantee_type = "(epsilon, delta): tree mechanism; Mode A adds a TV slack"
    summary = "O2NC with a private first-order oracle (Goldstein stationarity)"
    options_type = GoldsteinFirstOrderOptions


# ------------------------------------------------------------------ functions
def goldstein_zero_order(
    rng_key: PRNGKey,
    problem: Problem,
    *,
    epsilon: float,
    delta: float,
    x0: ArrayLike,
    initial_gap: float | None = None,
    enforce_sensitivity: bool | None = None,
    alpha: float | None = None,
    calibration: str = "tight",
    passes: str = "single",
    preset: str = "corrected",
    sizing: str = "practical",
    beta: float | None = None,
    num_iters: int | None = None,
    clip_radius: float | None = None,
    period: int | None = None,
    window: int | None = None,
    num_directions: int | None = None,
    step_size: float | None = None,
    concentration_radius: float | None = None,
    c_d: float = 1.0,
    c_sigma: float = 1.0,
    c_m: float = 1.0,
    c_g: float = 1.0,
    c_t: float = 1.0,
    return_iterates: bool = False,
) -> PrivateResult:
    r"""Private zero-order Goldstein-stationary point (seed 004 Alg. 2 + Alg. 3 or 4).

    O2NC with the two-point zero-order oracle: single pass with the tree mechanism
    (Theorem 3.1, corrected preset by default; ``preset="practical"``: batches sized
    by the noise, no tree, the tail average, not in the paper) or multi-pass ERM
    with composed
    Gaussian mechanisms (Theorem 4.1, corrected). See the module docstring for the
    algorithm, the corrections and the parameters.

    .. math::
        E\,\|\bar\partial_{2\alpha}F(x_{out})\| \le \beta \quad
        \text{(in expectation, theorem parameters)}.

    Args:
        rng_key: PRNG key (directions, step points, noise, output window).
        problem: Declares ``lipschitz`` ``L`` (required) and ``loss_range`` (the
            default initial gap). ``Unconstrained`` domain unless
            ``enforce_sensitivity``.
        epsilon: Target epsilon.
        delta: Target delta in ``(0, 1)``.
        x0: Public starting point in the problem's domain.
        initial_gap: Public ``Phi >= F(x0) - inf F`` (default ``loss_range``).
        enforce_sensitivity: Clip to enforce the sensitivity (Mode B, spec §3.5;
            the default, whatever the sizing). ``False`` is the paper's Mode A: the
            guarantee is then conditional on the declared ``L`` (in its
            ``assumptions``).
        alpha: Smoothing radius; the certified Goldstein radius is ``2 alpha``
            (default :func:`~dpsample.finders.goldstein.default_alpha`: the radius
            and the norm target balanced, ``2 alpha L / Phi = beta(alpha) / L``).
        calibration: ``"tight"`` (default: the smallest noise the returned
            guarantee certifies, so the run spends its budget) or ``"rdp"`` (the
            smallest dp_accounting's RDP accountant certifies; spends less).
        passes: ``"single"`` (stochastic, tree mechanism) or ``"multi"`` (ERM).
        preset: ``"corrected"`` (default), ``"paper"`` (printed theorem) or
            ``"practical"`` (single pass, not in the paper: ``Sigma = 1``, the
            smallest batch whose release noise norm is at most ``L``, ``T = n/B``,
            ``D = Phi/(L T)``, the tail average; multi pass: the corrected
            schedule; not the default here: measured 0.81x the corrected one's
            excess risk, 6 of 8 seeds, p = 0.15, docs/goldstein.md).
        sizing: ``"practical"`` (default: the smallest ``m`` the sensitivity
            bounds need, spec §3.4-3.5) or ``"theory"`` (the theorem's
            variance-driven ``m``); see docs/goldstein.md for both run times.
        beta: Multi-pass target (default: the Theorem 4.1 rate at ``n``).
        num_iters: Override ``T``.
        clip_radius: Override ``D``.
        period: Override ``Sigma``.
        window: Override ``M``.
        num_directions: Override ``m``.
        step_size: Override ``eta``.
        concentration_radius: Mode B only: the ``e`` of the clip bounds.
        c_d: O(.) multiplier of ``D``.
        c_sigma: O(.) multiplier of ``Sigma``.
        c_m: O(.) multiplier of ``m``.
        c_g: ``G1 = c_g L``.
        c_t: O(.) multiplier of ``T`` (multi pass).
        return_iterates: Put the window means and ``z`` iterates in ``info``.

    Returns:
        ``PrivateResult(x_out, guarantee, info)``; ``info["plan"]`` has every public
        parameter, ``info["noise"]`` the calibrated noise, and
        ``info[NON_PRIVATE_KEY]`` (``"non_private_diagnostics"``) counts estimates
        beyond their bound (reads the data: **not private**).

    Raises:
        TypeError: bad key, problem or flag types.
        ValueError: bad privacy target, shapes, parameters, ``alpha > Phi/L``, a
            bounded domain without enforcement, or ``x0`` outside the domain
            (before any private computation; nothing raises during the run).
        MissingConstantError: ``lipschitz`` (or an initial gap) not declared.

    Privacy:
        Replace-one. Sensitivity ``2 C/B`` with the bounds of the module docstring.
        Single pass: ``gaussian(sigma/s)`` composed ``H + 1`` times (tree mechanism);
        multi pass: ``ceil(T/Sigma)`` anchor and ``T - ceil(T/Sigma)`` difference
        Gaussians composed. Mode A adds the TV slack ``tau = delta/(2(1+e^eps))`` of
        the high-probability sensitivity event; in total ``(epsilon, delta)``-DP.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> import dpsample
        >>> from dpsample.finders.goldstein import goldstein_zero_order
        >>> data = {"a": jnp.ones((400, 1))}
        >>> prob = dpsample.Problem(lambda x, z: jnp.abs(x[0] - z["a"][0]) + 0.5
        ...     * jnp.abs(x[1]), data, dpsample.domains.Unconstrained(2),
        ...     lipschitz=1.2, loss_range=4.0)
        >>> res = goldstein_zero_order(jax.random.key(0), prob, epsilon=2.0,
        ...     delta=1e-5, x0=jnp.zeros(2), alpha=0.2, num_directions=8,
        ...     enforce_sensitivity=True)
        >>> res.privacy.epsilon(1e-5) <= 2.0, res.value.shape
        (True, (2,))

    References:
        Kornowski, Liu, Talwar, ICML 2025 (seed 004), Theorems 3.1 and 4.1.
    """
    return GoldsteinZeroOrder().solve(
        rng_key, problem, epsilon=epsilon, delta=delta, **call_options(locals())
    )


def goldstein_first_order(
    rng_key: PRNGKey,
    problem: Problem,
    *,
    epsilon: float,
    delta: float,
    x0: ArrayLike,
    initial_gap: float | None = None,
    enforce_sensitivity: bool | None = None,
    alpha: float | None = None,
    calibration: str = "tight",
    preset: str = "practical",
    sizing: str = "practical",
    num_iters: int | None = None,
    clip_radius: float | None = None,
    period: int | None = None,
    window: int | None = None,
    num_directions: int | None = None,
    step_size: float | None = None,
    concentration_radius: float | None = None,
    c_d: float = 1.0,
    c_sigma: float = 1.0,
    c_m: float = 1.0,
    c_g: float = 1.0,
    return_iterates: bool = False,
) -> PrivateResult:
    r"""Private first-order single-pass Goldstein finder (seed 004 Alg. 2 + Alg. 5).

    As :func:`goldstein_zero_order` with ``passes="single"``, with the first-order
    oracle: anchors ``(1/B1) sum_i grad f(z_t + y_i; xi_i)`` with one ball
    perturbation per sample, differences ``a(xi) - b(xi)`` with ``m`` ball
    perturbations at each point (Eq. (17)'s sphere is a typo; ball as in Alg. 5).
    Theorem C.4's parameters with the same correction as Theorem 3.1 and
    ``m = c_m alpha^2/(D^2 d) log(d/delta)`` (at least 1).

    Args:
        rng_key: PRNG key.
        problem: Declares ``lipschitz`` (required); differentiable loss.
        epsilon: Target epsilon.
        delta: Target delta in ``(0, 1)``.
        x0: Public starting point in the problem's domain.
        initial_gap: Public ``Phi`` (default ``loss_range``).
        enforce_sensitivity: Clip gradients to ``L`` and differences to ``C_D(t)``
            (the default, whatever the sizing; ``False``: Mode A, conditional on
            the declared ``L``).
        alpha: Smoothing radius (certified radius ``2 alpha``; default
            :func:`~dpsample.finders.goldstein.default_alpha`).
        calibration: ``"tight"`` (default) or ``"rdp"``, as for
            :func:`goldstein_zero_order`.
        preset: ``"practical"`` (default since issue 24; not in the paper),
            ``"corrected"`` (the default before, kept bit for bit) or ``"paper"``,
            as for :func:`goldstein_zero_order`.
        sizing: ``"practical"`` (default) or ``"theory"``, as for
            :func:`goldstein_zero_order`.
        num_iters: Override ``T``.
        clip_radius: Override ``D``.
        period: Override ``Sigma``.
        window: Override ``M``.
        num_directions: Override ``m``.
        step_size: Override ``eta``.
        concentration_radius: Mode B only: the ``e`` of the clip bounds.
        c_d: O(.) multiplier of ``D``.
        c_sigma: O(.) multiplier of ``Sigma``.
        c_m: O(.) multiplier of ``m``.
        c_g: ``G1 = c_g L``.
        return_iterates: Put the window means and iterates in ``info``.

    Returns:
        ``PrivateResult(x_out, guarantee, info)`` as :func:`goldstein_zero_order`.

    Raises:
        TypeError: bad key, problem or flag types.
        ValueError: bad privacy target, shapes or parameters, a bounded domain
            without enforcement, or ``x0`` outside the domain (before any private
            computation; nothing raises during the run).
        MissingConstantError: ``lipschitz`` (or an initial gap) not declared.

    Privacy:
        Replace-one; tree mechanism, ``gaussian(sigma/s)`` composed ``H + 1`` times,
        ``s = max(2L/B1, 2 C_D_max/B2)``. Anchors are bounded deterministically (no
        failure event); Mode A adds the TV slack of the difference estimates.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> import dpsample
        >>> from dpsample.finders.goldstein import goldstein_first_order
        >>> data = {"a": jnp.ones((400, 1))}
        >>> prob = dpsample.Problem(lambda x, z: jnp.abs(x[0] - z["a"][0]), data,
        ...     dpsample.domains.Unconstrained(2), lipschitz=1.0, loss_range=4.0)
        >>> res = goldstein_first_order(jax.random.key(1), prob, epsilon=2.0,
        ...     delta=1e-5, x0=jnp.zeros(2), alpha=0.2, num_directions=8)
        >>> res.privacy.epsilon(1e-5) <= 2.0
        True

    References:
        Kornowski, Liu, Talwar, ICML 2025 (seed 004), Appendix C, Theorem C.4.
    """
    return GoldsteinFirstOrder().solve(
        rng_key, problem, epsilon=epsilon, delta=delta, **call_options(locals())
    )


precision.scope_public(globals())
