r"""The public schedule of a Goldstein finder run (seed 004's parameter settings).

:func:`goldstein_theorem_parameters` turns public inputs (``n``, ``d``, the budget, the
declared ``L``, the public initial gap ``Phi``, ``alpha`` and the options) into every
parameter of the run: ``T``, ``D``, ``Sigma``, the batches, ``M``, ``eta``, ``m``,
the sensitivity bounds, the failure budget of Mode A and the per-example work. The
formulas are in :mod:`dpsample.finders.goldstein`; the tree helpers
(:func:`tree_nodes`, :func:`tree_height`) and the single-pass sample budget
(:func:`sample_budget_iters`) live here too. Nothing here sees data.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any, NamedTuple

from dpsample._src import precision, validation
from dpsample.base import PublicRecord, optional
from dpsample.finders.goldstein.guarantee import release_multiplier
from dpsample.finders.goldstein.options import (
    ESTIMATORS,
    GOLDSTEIN_PRESETS,
    GOLDSTEIN_SIZINGS,
    PASSES,
    PLAN_ONLY,
    GoldsteinOptions,
)
from dpsample.finders.goldstein.rates import _choice, rate

__all__ = [
    "GoldsteinSchedule",
    "evaluations",
    "goldstein_theorem_parameters",
    "sample_budget_iters",
    "tree_height",
    "tree_nodes",
]


# ------------------------------------------------------------------ tree helpers
def tree_height(period: int) -> int:
    """Tree height ``H = ceil(log2 Sigma)`` (``0`` for ``Sigma = 1``): ``H + 1`` levels.

    Examples:
        >>> from dpsample.finders.goldstein import tree_height
        >>> tree_height(1), tree_height(2), tree_height(5), tree_height(8)
        (0, 1, 3, 3)
    """
    return max(0, math.ceil(math.log2(period))) if period > 1 else 0


def tree_nodes(t: int, period: int) -> list[tuple[int, int]]:
    """Corrected ``NODE(t)`` of the tree mechanism (spec 004 §2.1).

    The dyadic intervals ``[k+1, k+2^l]`` whose union is ``[1, t]`` (binary
    decomposition, levels ``l = H..0`` with ``H = ceil(log2 period)``).

    Args:
        t: Position, ``1 <= t <= period``.
        period: ``Sigma >= 1``.

    Returns:
        The list of ``(start, end)`` nodes (``popcount(t)`` of them).

    Examples:
        >>> from dpsample.finders.goldstein import tree_nodes
        >>> tree_nodes(8, 8), tree_nodes(6, 8), tree_nodes(1, 1)
        ([(1, 8)], [(1, 4), (5, 6)], [(1, 1)])
    """
    sigma = validation.positive_int("period", period)
    t = validation.positive_int("t", t)
    if t > sigma:
        raise ValueError(f"Expected t={t} <= period={sigma}")
    height = tree_height(sigma)
    nodes, k = [], 0
    for level in range(height, -1, -1):
        if k + 2**level <= t:
            nodes.append((k + 1, k + 2**level))
            k += 2**level
    return nodes


def sample_budget_iters(n: int, period: int, anchor_batch: int, diff_batch: int) -> int:
    """Largest ``T`` with ``ceil(T/Sigma) B1 + (T - ceil(T/Sigma)) B2 <= n``.

    Examples:
        >>> from dpsample.finders.goldstein import sample_budget_iters
        >>> sample_budget_iters(100, 10, 10, 1), sample_budget_iters(7, 1, 1, 1)
        (50, 7)
    """
    per_period = anchor_batch + (period - 1) * diff_batch
    full = n // per_period
    rem = n - full * per_period
    extra = 0
    if rem >= anchor_batch:
        extra = 1 + min(period - 1, (rem - anchor_batch) // diff_batch)
    return full * period + extra


# ------------------------------------------------------------------ helpers
def _opt_int(name: str, value: Any) -> int | None:
    return None if value is None else validation.positive_int(name, value)


def _opt_pos(name: str, value: Any) -> float | None:
    return None if value is None else validation.positive(name, value)


def _rho_star(epsilon: float, delta: float) -> float:
    lg = math.log(1.0 / delta)
    return (math.sqrt(lg + epsilon) - math.sqrt(lg)) ** 2


def evaluations(schedule: dict[str, Any]) -> tuple[int, int]:
    """Per-example ``(loss, gradient)`` evaluations of a run of ``schedule``.

    Zero-order: ``2 m`` loss evaluations per anchor sample and ``4 m`` per
    difference sample (two points, ``m`` directions, two evaluations each);
    first-order: one gradient per anchor sample and ``2 m`` per difference sample.
    Multi-pass steps read all ``n`` samples. Exact: the run evaluates only the
    branch (anchor or difference) of each step.

    Examples:
        >>> from dpsample.finders.goldstein import (
        ...     evaluations, goldstein_theorem_parameters)
        >>> p = goldstein_theorem_parameters(n=100, dim=2, epsilon=1.0, delta=1e-5,
        ...                    lipschitz=1.0,
        ...                    initial_gap=1.0, alpha=0.1, num_directions=4,
        ...                    period=5, enforce_sensitivity=True)
        >>> evaluations(p) == (8 * 5 * p["num_anchors"] + 16 * p["num_differences"], 0)
        True
    """
    m = schedule["num_directions"]
    n_a, n_d = schedule["num_anchors"], schedule["num_differences"]
    b1, b2 = schedule["anchor_batch"], schedule["difference_batch"]
    if schedule["estimator"] == "zero_order":
        return 2 * m * b1 * n_a + 4 * m * b2 * n_d, 0
    return 0, b1 * n_a + 2 * m * b2 * n_d


# ------------------------------------------------------------------ the schedule
def goldstein_theorem_parameters(
    *,
    n: int,
    dim: int,
    epsilon: float,
    delta: float,
    lipschitz: float,
    initial_gap: float,
    alpha: float,
    max_evaluations: int | None = None,
    **options: Any,
) -> dict[str, Any]:
    """Public parameters of a Goldstein finder run (the package docstring's formulas).

    This is the parameter calculator behind
    :class:`~dpsample.finders.goldstein.GoldsteinZeroOrder` and
    :class:`~dpsample.finders.goldstein.GoldsteinFirstOrder` ``.plan``; it sees public
    inputs only.

    **Compute cap** (``max_evaluations``, public rule). When the schedule needs more
    per-example evaluations (:func:`evaluations`) than the cap, ``T`` is shrunk to
    the largest iteration count whose schedule fits, and the other parameters are
    re-derived from the theorem at that ``T``: single pass, ``D`` (and from it
    ``Sigma``, ``B1``, ``M``, ``eta``, ``m``) at the capped ``T`` (the run then uses
    fewer than ``n`` samples); multi pass, the target ``beta = (c_T Phi L^2/(alpha
    T))^(1/3)`` reached in ``T`` steps, and ``D``, ``Sigma``, ``M``, ``eta``, ``m``
    from it. A ``num_iters`` (or a multi-pass ``beta``) given by the caller whose
    schedule exceeds the cap is refused, as is a cap below one step.

    Args:
        n: Dataset size.
        dim: Dimension ``d``.
        epsilon: Target epsilon.
        delta: Target delta.
        lipschitz: Declared ``L``.
        initial_gap: Public ``Phi >= F(x0) - inf F``.
        alpha: Smoothing radius (certified radius ``2 alpha``), ``alpha <= Phi/L``.
        max_evaluations: Optional cap on per-example evaluations (rule above).
        **options: The schedule's options, declared with their defaults and
            docs by :class:`~dpsample.finders.goldstein.GoldsteinOptions` (all
            but its ``PLAN_ONLY`` ones): ``passes``, ``preset``, ``estimator``
            (``"first_order"``: single pass only), ``sizing``,
            ``enforce_sensitivity`` (Mode B, the default, or ``False``: Mode A),
            the multi-pass ``beta``, the overrides ``num_iters`` (``T``),
            ``clip_radius`` (``D``), ``period`` (``Sigma``), ``window`` (``M``),
            ``num_directions`` (``m``), ``step_size`` (``eta``),
            ``concentration_radius`` (Mode B only: the ``e`` of the clip bounds
            ``C_A = L + e`` and ``C_D(t) = ... + 2 e``; Mode A derives it from
            ``m`` and ``gamma``), and the O(1) multipliers ``c_d``, ``c_sigma``,
            ``c_m``, ``c_g``, ``c_t``.

    Returns:
        A dict of every parameter and bound (all public), with the work
        (``loss_evaluations``, ``gradient_evaluations``) and, when the cap
        shrank the schedule, ``uncapped_evaluations`` and ``uncapped_num_iters``.

    Raises:
        TypeError: An option that is not a schedule option.

    Examples:
        >>> from dpsample.finders.goldstein import goldstein_theorem_parameters
        >>> p = goldstein_theorem_parameters(n=2000, dim=2, epsilon=1.0, delta=1e-5,
        ...                    lipschitz=1.0,
        ...                    initial_gap=1.0, alpha=0.1, num_directions=16)
        >>> p["samples_used"] <= 2000, p["window"] * p["clip_radius"] <= 0.1
        (True, True)
        >>> q = goldstein_theorem_parameters(n=2000, dim=2, epsilon=1.0, delta=1e-5,
        ...                    lipschitz=1.0,
        ...                    initial_gap=1.0, alpha=0.1, num_directions=16,
        ...                    max_evaluations=10_000)
        >>> q["loss_evaluations"] <= 10_000 < p["loss_evaluations"]
        True
    """
    plan_only = sorted(set(options) & set(PLAN_ONLY))
    if plan_only:
        raise TypeError(
            f"{plan_only} are plan options, not schedule options; valid options: "
            + ", ".join(sorted(set(GoldsteinOptions.parameters()) - set(PLAN_ONLY)))
        )
    o = GoldsteinOptions.from_options(options)
    n = validation.positive_int("n", n)
    d = validation.positive_int("dim", dim)
    eps, dlt = validation.check_privacy(epsilon, delta)
    big_l = validation.positive("lipschitz", lipschitz)
    phi = validation.positive("initial_gap", initial_gap)
    a = validation.positive("alpha", alpha)
    passes = _choice("passes", o.passes, PASSES)
    preset = _choice("preset", o.preset, GOLDSTEIN_PRESETS)
    estimator = _choice("estimator", o.estimator, ESTIMATORS)
    sizing = _choice("sizing", o.sizing, GOLDSTEIN_SIZINGS)
    if passes == "multi" and estimator == "first_order":
        raise ValueError("the first-order oracle is single-pass only (Algorithm 5)")
    # enforced by default, whatever the sizing
    enforce = True if o.enforce_sensitivity is None else o.enforce_sensitivity
    if not isinstance(enforce, bool):
        raise TypeError("Expected enforce_sensitivity to be a bool")
    c_d, c_sigma, c_t = o.c_d, o.c_sigma, o.c_t
    if a > phi / big_l * (1 + 1e-12):
        raise ValueError(
            f"Expected alpha={a:g} <= initial_gap/lipschitz={phi / big_l:g} "
            "(the radius condition of Theorems 3.1/4.1)"
        )
    for name in ("c_d", "c_sigma", "c_m", "c_g", "c_t"):
        validation.positive(name, getattr(o, name))
    num_iters = _opt_int("num_iters", o.num_iters)
    period = _opt_int("period", o.period)
    clip_radius = _opt_pos("clip_radius", o.clip_radius)
    cap = _opt_int("max_evaluations", max_evaluations)
    concentration_radius = o.concentration_radius
    if concentration_radius is not None:
        if not enforce:
            raise ValueError(
                "concentration_radius can only be set with enforce_sensitivity=True "
                "(Mode A's privacy needs the derived radius)"
            )
        concentration_radius = validation.nonnegative(
            "concentration_radius", concentration_radius
        )
    if passes == "single" and o.beta is not None:
        raise ValueError("beta is a multi-pass input; single pass sets it by n")
    beta_in = None if o.beta is None else validation.positive("beta", o.beta)
    # the validated options that _derive reads
    checked = dataclasses.replace(
        o,
        passes=passes,
        preset=preset,
        estimator=estimator,
        sizing=sizing,
        enforce_sensitivity=enforce,
        window=_opt_int("window", o.window),
        num_directions=_opt_int("num_directions", o.num_directions),
        step_size=_opt_pos("step_size", o.step_size),
        concentration_radius=concentration_radius,
    )
    sd = math.sqrt(d)

    def build(capped_iters: int | None) -> dict[str, Any]:
        """The schedule; ``capped_iters`` re-derives it at that ``T`` (cap rule)."""
        if passes == "single" and preset == "practical":
            return _practical(
                checked,
                _Inputs(n, d, eps, dlt, big_l, phi, a),
                num_iters=capped_iters or num_iters,
                capped=capped_iters is not None,
                period=period,
                clip_radius=clip_radius,
            )
        if passes == "single":

            def d_of(t_: int) -> float:
                if clip_radius is not None:
                    return clip_radius
                if preset == "corrected":
                    cand: tuple[float, ...] = (
                        (phi**2 * a / (big_l**2 * sd * t_**2)) ** (1 / 3),
                        (phi * a * eps / (d * big_l * t_)) ** 0.5,
                    )
                else:
                    cand = (
                        (phi**2 * a / (big_l**2 * t_**2)) ** (1 / 3),
                        (phi * a * eps / (d * big_l * t_)) ** 0.5,
                        (phi**3 * a**2 * eps / (d**1.5 * big_l**3 * t_**3)) ** 0.2,
                    )
                return c_d * min(cand)

            def sigma_of(dd: float) -> int:
                if period is not None:
                    return period
                raw = (
                    a / (dd * sd)
                    if preset == "corrected"
                    else (a / (eps * dd)) ** (2 / 3)
                )
                return max(1, min(n, int(round(c_sigma * raw))))

            if capped_iters is None:
                t_cur = max(1, n // 2)
                for _ in range(4):
                    big_d = d_of(t_cur)
                    sig = sigma_of(big_d)
                    t_new = sample_budget_iters(n, sig, sig, 1)
                    if t_new == t_cur:
                        break
                    t_cur = max(1, t_new)
            else:
                t_cur = capped_iters
            big_d = d_of(t_cur)
            sig = sigma_of(big_d)
            b1, b2 = sig, 1
            t_max = sample_budget_iters(n, sig, b1, b2)
            if t_max < 1:
                raise ValueError(
                    f"n={n} samples cannot fill one anchor batch of {b1}; lower the "
                    "period"
                )
            if capped_iters is not None:
                big_t = min(capped_iters, t_max)
            else:
                big_t = t_max if num_iters is None else num_iters
            if big_t > t_max:
                raise ValueError(
                    f"num_iters={big_t} needs more samples than n={n} (at most "
                    f"{t_max} single-pass steps with period {sig})"
                )
            beta_v = None
        else:
            if capped_iters is not None:  # the target T steps reach (Thm 4.1)
                a_t = a if preset != "paper" else a**2
                beta_v = (c_t * phi * big_l**2 / (a_t * capped_iters)) ** (1 / 3)
            elif beta_in is None:
                beta_v = rate(
                    n=n,
                    dim=d,
                    epsilon=eps,
                    lipschitz=big_l,
                    initial_gap=phi,
                    alpha=a,
                    passes="multi",
                )
                beta_v = min(beta_v, big_l)
            else:
                beta_v = beta_in
            if clip_radius is not None:
                big_d = clip_radius
            elif preset != "paper":
                big_d = c_d * a * beta_v**2 / big_l**2
            else:
                big_d = c_d * a**2 * beta_v**2 / big_l**2
            if capped_iters is not None:
                big_t = capped_iters
            elif num_iters is not None:
                big_t = num_iters
            elif preset != "paper":
                big_t = max(1, math.ceil(c_t * phi * big_l**2 / (a * beta_v**3)))
            else:
                big_t = max(1, math.ceil(c_t * phi * big_l**2 / (a**2 * beta_v**3)))
            sig = period or max(1, int(round(c_sigma * a / (big_d * sd))))
            b1 = b2 = n
        return _derive(
            checked,
            _Inputs(n, d, eps, dlt, big_l, phi, a),
            beta_v=beta_v,
            big_t=big_t,
            big_d=big_d,
            sig=sig,
            b1=b1,
            b2=b2,
        )

    schedule = build(None)
    if cap is None or _total(schedule) <= cap:
        return schedule
    uncapped = _total(schedule)
    if num_iters is not None or (passes == "multi" and beta_in is not None):
        what = "num_iters" if num_iters is not None else f"beta={beta_in:g}"
        raise ValueError(
            f"the schedule fixed by the caller ({what}: T={schedule['num_iters']}, "
            f"{uncapped:,} per-example evaluations) exceeds max_evaluations={cap:,}"
        )
    # Largest T whose re-derived schedule fits (bisection; the cost grows with T).
    lo, hi = 0, schedule["num_iters"]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _total(build(mid)) <= cap:
            lo = mid
        else:
            hi = mid
    while lo >= 1 and _total(build(lo)) > cap:  # pragma: no cover (rounding)
        lo -= 1
    if lo < 1:
        raise ValueError(
            f"max_evaluations={cap:,} is below one step of this schedule "
            f"({_total(build(1)):,} per-example evaluations)"
        )
    schedule = build(lo)
    schedule["uncapped_evaluations"] = uncapped
    schedule["uncapped_num_iters"] = build(None)["num_iters"]
    return schedule


@dataclasses.dataclass(frozen=True, eq=False)
class GoldsteinSchedule(PublicRecord):
    """The public schedule of a Goldstein run (``info.plan``): every parameter, bound.

    The typed view of :func:`goldstein_theorem_parameters`'s dict; also a read-only
    mapping (``info["plan"]["num_iters"]``). Every field is a function of public
    inputs (``n``, ``d``, the declared constants, the budget, the options).

    Attributes:
        passes: ``"single"`` (Algorithms 3, 5) or ``"multi"`` (Algorithm 4).
        preset: ``"corrected"``, ``"paper"`` or ``"practical"``.
        estimator: ``"zero_order"`` or ``"first_order"``.
        sizing: ``"practical"`` or ``"theory"`` (how ``m`` is chosen).
        coupled_directions: Zero-order difference samples share their directions.
        enforce_sensitivity: Mode B (estimates clipped to their bounds).
        mode: ``"B (enforced sensitivity)"`` or ``"A (paper)"``.
        n: Examples.
        dim: Dimension ``d``.
        epsilon: The budget's epsilon.
        delta: The budget's delta.
        lipschitz: Declared ``L``.
        initial_gap: The public initial gap.
        alpha: Smoothing radius (certified radius ``2 alpha``).
        certified_radius: ``2 alpha``.
        beta: Multi pass: the target stationarity (``None`` single pass).
        num_iters: ``T``.
        clip_radius: ``D``.
        period: ``Sigma``.
        tree_height: ``H = ceil(log2 Sigma)``.
        anchor_batch: ``B1``.
        difference_batch: ``B2``.
        window: ``M``.
        num_windows: ``floor(T/M)``.
        step_size: ``eta``.
        num_directions: ``m``.
        num_anchors: Anchor steps.
        num_differences: Difference steps.
        samples_used: Examples read (single pass: the planned count; multi: ``n``).
        num_estimates: Per-sample estimates in all.
        failure_prob: ``gamma`` per estimate.
        tv_slack: Mode A: the failure event's TV slack (``0`` in Mode B).
        delta_gaussian: The delta of the Gaussian part.
        concentration_radius: ``e``.
        anchor_bound: ``C_A``.
        difference_bound_max: ``C_D_max``.
        anchor_sensitivity: ``2 C_A / B``.
        difference_sensitivity: ``2 C_D_max / B``.
        loss_evaluations: Per-example loss evaluations of the run.
        gradient_evaluations: Per-example gradients of the run.
        uncapped_evaluations: Under a compute cap: the uncapped schedule's count.
        uncapped_num_iters: Under a compute cap: the uncapped ``T``.
    """

    passes: str
    preset: str
    estimator: str
    sizing: str
    coupled_directions: bool
    enforce_sensitivity: bool
    mode: str
    n: int
    dim: int
    epsilon: float
    delta: float
    lipschitz: float
    initial_gap: float
    alpha: float
    certified_radius: float
    beta: float | None
    num_iters: int
    clip_radius: float
    period: int
    tree_height: int
    anchor_batch: int
    difference_batch: int
    window: int
    num_windows: int
    step_size: float
    num_directions: int
    num_anchors: int
    num_differences: int
    samples_used: int
    num_estimates: int
    failure_prob: float
    tv_slack: float
    delta_gaussian: float
    concentration_radius: float
    anchor_bound: float
    difference_bound_max: float
    anchor_sensitivity: float
    difference_sensitivity: float
    loss_evaluations: int
    gradient_evaluations: int
    uncapped_evaluations: int | None = optional()
    uncapped_num_iters: int | None = optional()

    @classmethod
    def from_mapping(cls, schedule: Mapping[str, Any]) -> GoldsteinSchedule:
        """The record of a :func:`goldstein_theorem_parameters` dict (every key).

        Raises:
            TypeError: If a key is not a field (the dict and the record drifted).
        """
        return cls(**schedule)


def _practical(
    o: GoldsteinOptions,
    inputs: _Inputs,
    *,
    num_iters: int | None,
    capped: bool,
    period: int | None,
    clip_radius: float | None,
) -> dict[str, Any]:
    """The single-pass ``"practical"`` schedule (not in the paper; issue 24).

    A single pass reads each example once, so a step's released estimate carries
    noise of norm about ``z C_A sqrt(d) / B`` (``z`` the calibrated multiplier of
    the ``H + 1`` releases, :func:`release_multiplier`); a step whose noise norm is
    above ``L``, the bound on any (sub)gradient, moves the iterate by ``D`` in a
    direction the data barely tilt, and the theorem's ``B2 = 1`` makes every
    difference step such a step. So: ``Sigma = 1`` unless given (no tree, each
    example in one release), the smallest batch ``B = ceil(z C_A sqrt(d) / L)``
    at which the noise norm is at most ``L`` for anchors and differences alike
    (``B1 = B2 = B``), ``T = n / B`` (the whole sample), ``D = c_D Phi / (L T)`` (a
    step lowers ``F`` by at most ``L D``, so ``T`` steps close the public gap
    ``Phi`` only if ``D >= Phi/(L T)``), ``M = 1`` and ``eta = D/(c_G L)``; the
    run releases the mean of the last ``ceil(T/2)`` iterates
    (:func:`~dpsample.finders.goldstein.o2nc_run`). ``C_A`` is read from the
    schedule (a fixed point: two passes at most). The noise is then calibrated,
    as for every schedule, by
    :func:`~dpsample.finders.goldstein.goldstein_guarantee` for what runs.
    """
    n, d, eps, dlt, big_l, phi, _a = inputs
    sig = period or 1
    delta_g = dlt if o.enforce_sensitivity else dlt / 2.0
    z = release_multiplier(eps, delta_g, tree_height(sig) + 1)
    o = dataclasses.replace(o, window=o.window or 1)

    def batch_of(c_a: float) -> int:
        return max(1, min(n, math.ceil(z * c_a * math.sqrt(d) / big_l)))

    def at(batch: int) -> dict[str, Any]:
        t_max = sample_budget_iters(n, sig, batch, batch)
        if t_max < 1:
            raise ValueError(
                f"n={n} samples cannot fill one batch of {batch} (preset "
                "'practical'); lower the period or use preset='corrected'"
            )
        big_t = t_max if num_iters is None else num_iters
        if capped:
            big_t = min(big_t, t_max)
        if big_t > t_max:
            raise ValueError(
                f"num_iters={big_t} needs more samples than n={n} (at most "
                f"{t_max} single-pass steps with batch {batch}, preset 'practical')"
            )
        big_d = clip_radius or o.c_d * phi / (big_l * big_t)
        return _derive(
            o,
            inputs,
            beta_v=None,
            big_t=big_t,
            big_d=big_d,
            sig=sig,
            b1=batch,
            b2=batch,
        )

    first = batch_of(big_l if o.estimator == "first_order" else 2.0 * big_l)
    out = at(first)
    second = batch_of(out["anchor_bound"])
    return out if second == first else at(second)


def _radius_m(estimator: str, d: int, log_g: float) -> float:
    """The ``m`` at which the concentration radius ``e`` equals ``L``.

    Zero order ``e = L (d+1) sqrt(2 log(2/gamma)/m)``, first order
    ``e = 2 L sqrt(2 log(2/gamma)/m)``.
    """
    return (2.0 * (d + 1) ** 2 if estimator == "zero_order" else 8.0) * log_g


def _coupled_m(
    estimator: str, d: int, a: float, big_d: float, n_d: int, log_g: float
) -> float:
    """The ``m`` of spec 004 §3.4 (coupled across neighbours).

    The per-sample concentration radius ``e`` about the per-sample signal bound:
    zero order ``e <= L`` for anchors (and the difference bound's share
    ``L sqrt(d) D/alpha``), first order ``e <= L sqrt(d) D/alpha`` for differences
    (anchors are exact gradients).
    """
    m = _radius_m(estimator, d, log_g)
    difference = m * a**2 / (d * big_d**2) if n_d else 0.0
    return max(m, difference) if estimator == "zero_order" else difference


def _total(schedule: dict[str, Any]) -> int:
    return int(schedule["loss_evaluations"] + schedule["gradient_evaluations"])


class _Inputs(NamedTuple):
    """The validated public inputs of a schedule."""

    n: int
    d: int
    eps: float
    dlt: float
    big_l: float
    phi: float
    a: float


def _derive(
    o: GoldsteinOptions,
    inputs: _Inputs,
    *,
    beta_v: float | None,
    big_t: int,
    big_d: float,
    sig: int,
    b1: int,
    b2: int,
) -> dict[str, Any]:
    """Everything that follows from ``(T, D, Sigma, B1, B2)``: M, eta, m, bounds."""
    n, d, eps, dlt, big_l, phi, a = inputs
    passes, preset, estimator, sizing = o.passes, o.preset, o.estimator, o.sizing
    enforce, window, step_size = o.enforce_sensitivity, o.window, o.step_size
    num_directions, concentration_radius = o.num_directions, o.concentration_radius
    c_m, c_g = o.c_m, o.c_g
    sd = math.sqrt(d)
    h = tree_height(sig)
    n_a = math.ceil(big_t / sig)
    n_d = big_t - n_a
    if window is not None:
        big_m = min(window, big_t)
    else:
        big_m = max(1, min(big_t, int(math.floor(a / (4.0 * big_d)))))
    eta = step_size or big_d / (c_g * big_l * math.sqrt(big_m))

    # Number of per-sample estimates that can exceed their bound (Mode A union bound).
    if passes == "single":
        anchor_est = 0 if estimator == "first_order" else n_a * b1
        n_est = anchor_est + 2 * n_d * b2
    else:
        n_est = n * (n_a + 2 * n_d)
    # log of the failure budget (log space: e^eps overflows for huge eps).
    log_tau = math.log(dlt / 2.0) - eps - math.log1p(math.exp(-eps))
    if enforce:
        delta_g, tau = dlt, 0.0
        log_budget = math.log(dlt / 2.0)  # only tunes the clip thresholds
    else:
        delta_g, tau = dlt / 2.0, math.exp(log_tau)
        log_budget = log_tau
    log_gamma = log_budget - math.log(max(1, n_est))
    gamma = math.exp(log_gamma)
    log_g = math.log(2.0) - log_gamma
    log_m = max(1.0, math.log(d * max(b1, b2) / dlt))
    # Sensitivities without estimation error (for the variance-driven m).
    lip_d = big_l * sd / a  # smoothness of f_alpha (explicit constant, Fact 2.3)

    if num_directions is not None:
        m = num_directions
    elif sizing == "practical":
        # Mode B's m is a utility knob (privacy holds for any m, spec §3.5): the
        # smallest m whose concentration radius keeps the clip bounds near the
        # signal bounds (spec §3.4). Zero order: e <= L for the anchors only,
        # since the coupled differences are bounded for every draw without e
        # (o2nc); first order: §3.4's difference rule e <= L sqrt(d) D/alpha
        # (anchors are exact gradients). Measured in docs/goldstein.md.
        m_pr = _radius_m(estimator, d, log_g)
        if estimator == "first_order":
            m_pr = max(m_pr, _coupled_m(estimator, d, a, big_d, n_d, log_g))
        m = max(1, math.ceil(c_m * m_pr))
    else:
        if passes == "single":
            if estimator == "zero_order":
                m_th = c_m * (d**2 * b1**2 + d * a**2 * b2**2 / big_d**2) * log_m
            else:
                m_th = c_m * (b2**2 * a**2 / (big_d**2 * d)) * log_m
        else:
            rho = _rho_star(eps, delta_g)
            s1 = 2.0 * big_l / n
            s2 = 2.0 * min(2.0 * big_d * lip_d, 2.0 * big_l) / n
            sig1 = s1 * math.sqrt(n_a / (rho / 2.0 if n_d else rho))
            sig2 = s2 * math.sqrt(max(n_d, 1) / (rho / 2.0))
            m_th = c_m * (
                big_l**2 * d * sig / (n * sig1**2)
                + (big_l**2 * d / (n * sig2**2) if n_d else 0.0)
            )
        m_pr = 0.0 if enforce else _coupled_m(estimator, d, a, big_d, n_d, log_g)
        m = max(1, math.ceil(max(m_th, m_pr)))

    if estimator == "zero_order":
        e = big_l * (d + 1) * math.sqrt(2.0 * log_g / m)
        if concentration_radius is not None:
            e = concentration_radius
        c_a = big_l + e
        c_dmax = min(2.0 * big_d * lip_d + 2.0 * e, 2.0 * c_a)
    else:
        e = 2.0 * big_l * math.sqrt(2.0 * log_g / m)
        if concentration_radius is not None:
            e = concentration_radius
        c_a = big_l
        c_dmax = min(2.0 * big_d * lip_d + 2.0 * e, 2.0 * big_l)
    # Practical zero order couples a difference sample's directions (o2nc): every
    # draw then has ||a - b|| <= sqrt(d) lip_d ||z_t - z_{t-1}|| <= 2 D sqrt(d) lip_d.
    coupled = sizing == "practical" and estimator == "zero_order"
    if coupled:
        c_dmax = min(c_dmax, 2.0 * big_d * sd * lip_d)
    s_a = 2.0 * c_a / b1
    s_d = 2.0 * c_dmax / b2
    samples = n_a * b1 + n_d * b2 if passes == "single" else n
    out: dict[str, Any] = {
        "passes": passes,
        "preset": preset,
        "estimator": estimator,
        "sizing": sizing,
        "coupled_directions": coupled,
        "enforce_sensitivity": enforce,
        "mode": "B (enforced sensitivity)" if enforce else "A (paper)",
        "n": n,
        "dim": d,
        "epsilon": eps,
        "delta": dlt,
        "lipschitz": big_l,
        "initial_gap": phi,
        "alpha": a,
        "certified_radius": 2.0 * a,
        "beta": beta_v,
        "num_iters": int(big_t),
        "clip_radius": float(big_d),
        "period": int(sig),
        "tree_height": int(h),
        "anchor_batch": int(b1),
        "difference_batch": int(b2),
        "window": int(big_m),
        "num_windows": int(big_t // big_m),
        "step_size": float(eta),
        "num_directions": int(m),
        "num_anchors": int(n_a),
        "num_differences": int(n_d),
        "samples_used": int(samples),
        "num_estimates": int(n_est),
        "failure_prob": float(gamma),
        "tv_slack": float(tau),
        "delta_gaussian": float(delta_g),
        "concentration_radius": float(e),
        "anchor_bound": float(c_a),
        "difference_bound_max": float(c_dmax),
        "anchor_sensitivity": float(s_a),
        "difference_sensitivity": float(s_d),
    }
    loss_evals, grad_evals = evaluations(out)
    out["loss_evaluations"] = int(loss_evals)
    out["gradient_evaluations"] = int(grad_evals)
    return out


precision.scope_public(globals())
