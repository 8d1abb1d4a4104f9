r"""DP-TR / DP-STR's public schedule: Theorems 15 and 18 and the compute cap.

:func:`tr_theorem_parameters` (radius, iteration count and stopping threshold of
Theorems 15/18), :func:`str_batch_sizes` (Theorem 18's batches),
:func:`zcdp_budget` (Algorithm 1 line 1) and :func:`tr_schedule`, which resolves a
run's :class:`TRSchedule` from public inputs under ``max_evaluations``. Public
inputs only: nothing here reads the data.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from dpsample._src import precision, validation
from dpsample.domains import Unconstrained
from dpsample.finders.planning import start_param
from dpsample.options import Options
from dpsample.plan import Param
from dpsample.privacy import epsilon_to_zcdp
from dpsample.problem import ProblemSpec

__all__ = [
    "DEFAULT_ALPHA",
    "STR_FAILURE_PROB",
    "TR_FULL_NOTE",
    "TR_OUTPUT_RULES",
    "TR_STOP_NOTE",
    "TRSchedule",
    "check_unconstrained",
    "str_batch_sizes",
    "tr_constants",
    "tr_enforcement",
    "tr_hessian_rank",
    "tr_params",
    "tr_practical_iters",
    "tr_schedule",
    "tr_start",
    "tr_theorem_parameters",
    "zcdp_budget",
]

#: Default SOSP accuracy alpha: the value of every experiment in seed 001 (§5, spec
#: 001 §6.4). The theorems (15, 18) hold for any alpha; ``radius`` and ``num_iters``
#: follow from it.
DEFAULT_ALPHA = 0.1

#: The output rule of each preset (:mod:`dpsample.finders.presets`), and why.
TR_OUTPUT_RULES = {
    "practical": (
        "tail_average",
        "the mean of the last ceil(m/2) of the m iterates that ran (not in the "
        "paper; post-processing: same guarantee; benchmarks/bench_tr_defaults.py)",
    ),
    "theorem": (
        "last",
        "Theorem 15/18's point: the iterate at which the stopping rule fired, else w_T",
    ),
}
#: The plan's note when the stopping rule is on, and when it is off.
TR_STOP_NOTE = "the stopping rule may end the run before T iterations"
TR_FULL_NOTE = "no stopping rule: the run goes to T iterations"

#: Failure probability ``zeta`` in Theorem 18's batch-size rule
#: (:func:`str_batch_sizes`), the default rule for DP-STR's batches.
STR_FAILURE_PROB = 0.1


# --------------------------------------------------------------------- public helpers
def zcdp_budget(epsilon: float, delta: float) -> float:
    r"""The zCDP budget whose Lemma-7 conversion is exactly (epsilon, delta).

    .. math::

        \varphi = \left(\sqrt{\varepsilon + \ln(1/\delta)} - \sqrt{\ln(1/\delta)}
        \right)^2, \qquad \varphi + 2\sqrt{\varphi \ln(1/\delta)} = \varepsilon .

    Seed 001 Algorithm 1 line 1 (garbled in the text; spec 001 §7 item 1): the exact
    formula, not the small-epsilon approximation :math:`\varepsilon^2/(4\ln(1/\delta))`.

    Examples:
        >>> from dpsample.finders.trust_region import zcdp_budget
        >>> phi = zcdp_budget(1.0, 1e-5)
        >>> round(phi + 2 * (phi * math.log(1e5)) ** 0.5, 12)
        1.0
    """
    eps, dlt = validation.check_privacy(epsilon, delta)
    return epsilon_to_zcdp(eps, dlt)


def tr_theorem_parameters(
    *, alpha: float, hessian_lipschitz: float, initial_gap: float
) -> tuple[float, int, float]:
    r"""Theorem 15/18 settings: radius, iteration count and stopping threshold.

    .. math::

        r = \sqrt{\alpha/\rho}, \qquad T = \lceil 6\sqrt{\rho}\,\Delta/\alpha^{3/2}
        \rceil, \qquad \lambda_k \le \sqrt{\alpha\rho} \text{ stops.}

    Args:
        alpha: SOSP accuracy :math:`\alpha > 0`.
        hessian_lipschitz: :math:`\rho > 0`.
        initial_gap: a public bound :math:`\Delta \ge L(w_0) - \min L`.

    Returns:
        ``(radius, num_iters, stop_threshold)``.

    Examples:
        >>> from dpsample.finders.trust_region import tr_theorem_parameters
        >>> r, T, thr = tr_theorem_parameters(alpha=0.1, hessian_lipschitz=0.10089,
        ...                           initial_gap=math.log(2))
        >>> round(r, 3), T, round(thr, 4)
        (0.996, 42, 0.1004)
    """
    alpha = validation.positive("alpha", alpha)
    rho = validation.positive("hessian_lipschitz", hessian_lipschitz)
    gap = validation.positive("initial_gap", initial_gap)
    radius = math.sqrt(alpha / rho)
    num_iters = max(1, math.ceil(6.0 * math.sqrt(rho) * gap / alpha**1.5))
    return radius, num_iters, math.sqrt(alpha * rho)


def str_batch_sizes(
    *,
    n: int,
    dim: int,
    alpha: float,
    lipschitz: float,
    smoothness: float,
    hessian_lipschitz: float,
    failure_prob: float = STR_FAILURE_PROB,
) -> tuple[int, int]:
    r"""Theorem 18's batch sizes with the hidden constant 1, capped at ``n``.

    .. math::

        |S| = \left\lceil \frac{G^2 \ln(p/\zeta)}{\alpha^2} \right\rceil, \qquad
        |B_H| = \left\lceil \frac{M^2 \ln(p/\zeta)}{\alpha\rho} \right\rceil,

    (seed 001 Theorem 18: :math:`|S| \ge \Omega(G^2\ln(p/\zeta)/\alpha^2)`, :math:`|B_H|
    \ge \Omega(M^2\ln(p/\zeta)/(\alpha\rho))`; spec 001 §3.3), each at least 1 and at
    most ``n``; ``rho = 0`` gives ``|B_H| = n``. Public inputs only.

    Examples:
        >>> from dpsample.finders.trust_region import str_batch_sizes
        >>> str_batch_sizes(n=4000, dim=2, alpha=0.1, lipschitz=2**0.5,
        ...                 smoothness=1.0, hessian_lipschitz=1.0)
        (600, 30)
    """
    n = validation.positive_int("n", n)
    p = validation.positive_int("dim", dim)
    a = validation.positive("alpha", alpha)
    g2 = validation.positive("lipschitz", lipschitz) ** 2
    m2 = validation.nonnegative("smoothness", smoothness) ** 2
    rho = validation.nonnegative("hessian_lipschitz", hessian_lipschitz)
    zeta = validation.probability("failure_prob", failure_prob, open_left=True)
    if zeta >= 1.0:
        raise ValueError(f"Expected failure_prob={zeta!r} < 1")
    log = math.log(p / zeta)
    b_g = math.ceil(g2 * log / a**2)
    b_h = n if rho == 0.0 else math.ceil(m2 * log / (a * rho))
    return min(n, max(1, b_g)), min(n, max(1, b_h))


def tr_practical_iters(
    *, n: int, dim: int, hessian_rank: int, epsilon: float, delta: float
) -> int:
    r"""Preset ``"practical"``'s cap on ``T``: the Hessian noise stays below ``M/2``.

    .. math::

        T \le \left\lfloor \frac{\varphi\, n^2}{64\, d\, k} \right\rfloor
        \quad (\text{at least } 1),

    with :math:`\varphi` = :func:`zcdp_budget`. Not in the paper. The noise matrix
    ``E`` of an iteration has entries of std :math:`\sigma_2 = z\sqrt{k}M/n` and
    spectral norm about :math:`2\sqrt{d}\,\sigma_2`; with the zCDP multiplier
    :math:`z = 2\sqrt{T/\varphi}` (Lemma 7; the accountant's is smaller) that is at
    most :math:`M/2` exactly when ``T`` obeys the bound, so the noisy model keeps the
    curvature's scale ``M`` and each step uses the Hessian it paid for. Past it,
    the theorem's ``alpha`` is out of reach at this ``n`` (its condition (5)
    fails): :func:`tr_schedule` relaxes ``alpha`` until ``T`` fits. Public inputs
    only.

    Examples:
        >>> from dpsample.finders.trust_region.schedule import tr_practical_iters
        >>> tr_practical_iters(n=10_000, dim=10, hessian_rank=10, epsilon=1.0,
        ...                    delta=1e-6)
        272
    """
    n = validation.positive_int("n", n)
    d = validation.positive_int("dim", dim)
    k = validation.positive_int("hessian_rank", hessian_rank)
    phi = zcdp_budget(epsilon, delta)
    return max(1, math.floor(phi * n * n / (64.0 * d * k)))


# ----------------------------------------------------------------- the schedule
def check_unconstrained(spec: ProblemSpec, name: str) -> None:
    """Refuse a bounded domain: DP-TR/DP-STR take unprojected, unclipped steps.

    Raises:
        ValueError: If ``spec.domain`` is not :class:`~dpsample.domains.Unconstrained`.
    """
    if not isinstance(spec.domain, Unconstrained):
        raise ValueError(
            f"{name} takes unconstrained steps (no projection), so its privacy needs "
            "the declared constants on all of R^d: declare the Problem on "
            f"Unconstrained({spec.dim}), got {spec.domain!r}"
        )


class TRSchedule(NamedTuple):
    """The public schedule of a DP-TR / DP-STR run (Theorem 15/18 by default).

    Attributes:
        alpha: SOSP accuracy.
        radius: Trust-region radius ``r``.
        num_iters: ``T``.
        stop_threshold: Threshold on the released multiplier (``None``: no
            early stop).
        sources: Parameter name -> :class:`~dpsample.plan.Param` (value, source,
            rule) for the four above and, when used, ``initial_gap``.
    """

    alpha: float
    radius: float
    num_iters: int
    stop_threshold: float | None
    sources: dict[str, Param]


def _theorem_iters(alpha: float, rho: float, gap: float) -> int:
    return tr_theorem_parameters(alpha=alpha, hessian_lipschitz=rho, initial_gap=gap)[1]


def _smallest_alpha(fits: Callable[[float], bool], lo: float, hi: float) -> float:
    """Smallest ``alpha`` in ``(lo, hi]`` with ``fits(alpha)`` (monotone), to 1e-12."""
    for _ in range(200):
        if hi / lo - 1.0 <= 1e-12:
            break
        mid = math.sqrt(lo * hi)
        if fits(mid):
            hi = mid
        else:
            lo = mid
    return hi


def tr_schedule(
    spec: ProblemSpec,
    *,
    name: str,
    alpha: float | None,
    radius: float | None,
    num_iters: int | None,
    stop_threshold: float | None,
    initial_gap: float | None,
    iteration_cost: Callable[[float], int],
    max_evaluations: int | None,
    practical_iters: int | None = None,
) -> TRSchedule:
    r"""Resolve DP-TR / DP-STR's schedule from public inputs, with the compute cap.

    Defaults (Theorems 15/18): :math:`\alpha` = :data:`DEFAULT_ALPHA`,
    :math:`r = \sqrt{\alpha/\rho}`, :math:`T = \lceil 6\sqrt\rho\Delta/\alpha^{3/2}
    \rceil`, threshold :math:`\sqrt{\alpha\rho}`, with :math:`\Delta` =
    ``initial_gap`` or the declared ``loss_range``.

    **Compute cap** (public rule). ``iteration_cost(alpha)`` is the number of
    per-example evaluations of one iteration (it may depend on ``alpha`` through
    default batch sizes). When the theorem's ``T`` costs more than
    ``max_evaluations``, the accuracy target is relaxed: ``alpha`` becomes the
    smallest value whose Theorem 15/18 schedule fits (bisection on the public cost,
    which decreases in ``alpha``), and ``T``, ``r`` and the threshold are re-derived
    from it (those not given by the caller). A ``num_iters`` or ``alpha`` given by
    the caller whose schedule exceeds the cap is refused (``ValueError`` naming both
    numbers), as is a cap below one iteration.

    **Preset "practical"** (``practical_iters`` given, :func:`tr_practical_iters`;
    not in the paper): when the theorem's ``T`` exceeds ``practical_iters`` and the
    caller fixed neither ``alpha`` nor ``num_iters``, ``alpha`` is relaxed (after
    the cap, the same way) to the smallest value whose Theorem 15/18 ``T`` is at
    most ``practical_iters``, and ``T``, ``r`` follow from it by the theorem's
    formulas; the stopping rule left to the rule is off (``stop_threshold``
    ``None``: the run goes to ``T`` and its tail is averaged). The rows say so.
    ``practical_iters=None`` is preset ``"theorem"``: the schedule above.

    Returns:
        :class:`TRSchedule`.

    Raises:
        ValueError, MissingConstantError: On invalid or missing inputs.
    """
    user_alpha = alpha is not None
    alpha_v = DEFAULT_ALPHA if alpha is None else validation.positive("alpha", alpha)
    needs_rho = radius is None or num_iters is None or stop_threshold is None
    rho = spec.require("hessian_lipschitz", needed_for=name) if needs_rho else None
    sources: dict[str, Param] = {}
    gap = None
    if num_iters is None:
        gap_in = initial_gap if initial_gap is not None else spec.loss_range
        gap = validation.require_constant(
            "loss_range (or initial_gap)",
            gap_in,
            needed_for=f"{name}'s iteration count",
        )
        t = _theorem_iters(alpha_v, float(rho), gap)  # type: ignore[arg-type]
        sources["initial_gap"] = Param(
            gap,
            "user" if initial_gap is not None else "default",
            "" if initial_gap is not None else "the declared loss_range B",
        )
        t_note = "Theorem 15/18: T = ceil(6 sqrt(rho) Delta / alpha^1.5)"
        t_source = "theorem"
    else:
        t = validation.positive_int("num_iters", num_iters)
        t_note, t_source = "", "user"
    alpha_note = "" if user_alpha else "the value of every experiment of seed 001"
    alpha_source = "user" if user_alpha else "default"
    cap = max_evaluations
    if cap is not None and t * iteration_cost(alpha_v) > cap:
        cost = t * iteration_cost(alpha_v)
        if num_iters is not None or user_alpha:
            what = "num_iters" if num_iters is not None else f"alpha={alpha_v:g}"
            raise ValueError(
                f"{name}: the schedule fixed by the caller ({what}: T={t} iterations, "
                f"{cost:,} per-example evaluations) exceeds max_evaluations={cap:,}"
            )
        assert rho is not None and gap is not None
        top = (6.0 * math.sqrt(rho) * gap) ** (2.0 / 3.0) * (1.0 + 1e-9)  # T = 1

        def fits(a: float) -> bool:
            return _theorem_iters(a, rho, gap) * iteration_cost(a) <= cap

        if not fits(top):
            raise ValueError(
                f"{name}: max_evaluations={cap:,} is below one iteration "
                f"({iteration_cost(top):,} per-example evaluations)"
            )
        alpha_v = _smallest_alpha(fits, alpha_v, top)
        t = _theorem_iters(alpha_v, rho, gap)
        capped = (
            f"; capped by max_evaluations={cap:,}: the smallest alpha whose "
            f"Theorem 15/18 schedule fits (was {cost:,} evaluations)"
        )
        alpha_note, alpha_source = "relaxed" + capped, "derived"
        t_note += capped
    practical = practical_iters is not None
    limit = 0 if practical_iters is None else max(1, int(practical_iters))
    at_alpha = ""
    if practical and num_iters is None and not user_alpha and t > limit:
        assert rho is not None and gap is not None
        top = (6.0 * math.sqrt(rho) * gap) ** (2.0 / 3.0) * (1.0 + 1e-9)  # T = 1
        alpha_v = _smallest_alpha(
            lambda a: _theorem_iters(a, rho, gap) <= limit, alpha_v, top
        )
        t = _theorem_iters(alpha_v, rho, gap)
        alpha_note = (
            f"preset 'practical' (not in the paper): relaxed to the smallest alpha "
            f"whose Theorem 15/18 T fits floor(phi n^2 / (64 d k)) = {limit} "
            "iterations, so the Hessian noise's spectral norm stays below M / 2 "
            "(tr_practical_iters)"
        )
        alpha_source = "default"
        at_alpha = " at the practical alpha (not in the paper)"
        t_note += " at the practical alpha (not in the paper)"
    sources["alpha"] = Param(alpha_v, alpha_source, alpha_note)
    sources["num_iters"] = Param(t, t_source, t_note)
    if radius is None:
        assert rho is not None
        radius_v = math.sqrt(alpha_v / rho)
        sources["radius"] = Param(radius_v, "theorem", "sqrt(alpha / rho)" + at_alpha)
    else:
        radius_v = validation.positive("radius", radius)
        sources["radius"] = Param(radius_v, "user")
    thr: float | None
    if stop_threshold is None and practical:
        thr = None
        sources["stop_threshold"] = Param(
            None,
            "default",
            "preset 'practical' (not in the paper): no early stop; the run goes to T "
            "and the tail of its iterates is averaged",
        )
    elif stop_threshold is None:
        assert rho is not None
        thr = math.sqrt(alpha_v * rho)
        sources["stop_threshold"] = Param(thr, "theorem", "sqrt(alpha rho)")
    else:
        thr = validation.nonnegative("stop_threshold", stop_threshold)
        sources["stop_threshold"] = Param(thr, "user")
    return TRSchedule(alpha_v, radius_v, t, thr, sources)


def tr_hessian_rank(spec: ProblemSpec, hessian_rank: Any) -> tuple[int, Param]:
    """The rank ``k`` in the Hessian noise ``sqrt(k) M / n``: ``p`` or the caller's."""
    if hessian_rank is None:
        return spec.dim, Param(spec.dim, "default", "p (the paper's sqrt(p) factor)")
    rank = min(validation.positive_int("hessian_rank", hessian_rank), spec.dim)
    return rank, Param(rank, "user")


def tr_start(spec: ProblemSpec, x0: Any) -> Param:
    """The start ``x0``: the origin by default, else the caller's (checked)."""
    return start_param(spec, x0, "the origin")


def tr_constants(spec: ProblemSpec, name: str) -> tuple[float, float]:
    """The declared ``(G, M)`` the noise of DP-TR / DP-STR is calibrated to."""
    g_const = spec.require("lipschitz", needed_for=f"{name}'s gradient noise")
    m_const = spec.require("smoothness", needed_for=f"{name}'s Hessian noise")
    return g_const, m_const


def tr_enforcement(
    enforce_sensitivity: Any, g_const: float, m_const: float, rank: int, dim: int
) -> tuple[tuple[float, float] | None, Param, str | None]:
    r"""Clip bounds, plan entry and assumption of DP-TR / DP-STR's enforcement.

    Enforced (``enforce_sensitivity=True``, the default): per-example gradients are
    clipped at ``G`` and per-example Hessians' upper triangles (the vector the
    Gaussian mechanism releases) at ``sqrt(k) M``, with the rounding margin
    (:func:`~dpsample.finders.trust_region.step.noisy_model`), so the sensitivities
    ``2G/m`` and ``2 sqrt(k) M/m`` hold whatever the data: no assumption. With
    ``enforce_sensitivity=False`` (the paper's unclipped Algorithms 1-2) the plain
    means run and the guarantee carries the assumption returned here.

    Returns:
        ``(clip_bounds, param, assumption)``: ``clip_bounds = (G, sqrt(k) M)`` or
        ``None``; ``assumption`` is ``None`` when enforced.

    Raises:
        TypeError: ``enforce_sensitivity`` is not a bool.

    Examples:
        >>> from dpsample.finders.trust_region.schedule import tr_enforcement
        >>> bounds, param, assumption = tr_enforcement(True, 1.0, 2.0, 4, 4)
        >>> bounds, assumption
        ((1.0, 4.0), None)
        >>> tr_enforcement(False, 1.0, 2.0, 4, 4)[2][:39]
        'every per-example gradient has norm <= '
    """
    if not isinstance(enforce_sensitivity, bool):
        raise TypeError(
            f"Expected enforce_sensitivity to be a bool, got {enforce_sensitivity!r}"
        )
    hess_bound = math.sqrt(rank) * m_const
    if enforce_sensitivity:
        return (
            (float(g_const), float(hess_bound)),
            Param(
                True,
                "default",
                f"per-example gradients clipped at G = {g_const:.6g}, per-example "
                f"Hessians' upper triangles at sqrt(k) M = {hess_bound:.6g}",
            ),
            None,
        )
    rank_text = (
        ""
        if rank >= dim
        else f" (hessian_rank k = {rank}: every per-example Hessian difference has "
        f"rank <= {rank})"
    )
    return (
        None,
        Param(False, "user", "unclipped (the paper's algorithm): conditional"),
        (
            f"every per-example gradient has norm <= the declared lipschitz G = "
            f"{g_const:.6g} and every per-example Hessian has operator norm <= the "
            f"declared smoothness M = {m_const:.6g}{rank_text}, everywhere the "
            "iterates go (not enforced: enforce_sensitivity=False, no clipping)"
        ),
    )


def tr_params(
    opts: Options,
    plan_rows: Mapping[str, Param],
    noise: Mapping[str, Param],
    *,
    after: str,
) -> dict[str, Param]:
    """DP-TR / DP-STR's parameter table: the options' rows, then the noise rows.

    The declaration's rows (:meth:`~dpsample.options.Options.rows`, its order,
    sources and rules), where the plan's helpers make the rows whose source they
    name (``plan_rows``: the start, the schedule, the batch sizes, the rank, the
    enforcement) and ``return_iterates`` is ``[default]`` in every case; the
    ``noise`` rows follow the option ``after`` (the calibration, the accounting).
    ``initial_gap`` has a row only when the schedule used it.

    Examples:
        >>> from dpsample.finders.trust_region.options import DPTrustRegionOptions
        >>> from dpsample.finders.trust_region.schedule import tr_params
        >>> from dpsample.plan import Param
        >>> rows = tr_params(DPTrustRegionOptions(), {"x0": Param(0.0, "default")},
        ...                  {"z": Param(1.0, "calibrated")}, after="calibration")
        >>> list(rows)
        ['x0', 'preset', 'enforce_sensitivity', 'calibration', 'z', 'return_iterates']
    """
    rows = opts.rows(
        resolved={"initial_gap": None},
        params={
            **plan_rows,
            "return_iterates": Param(
                bool(opts.return_iterates),  # type: ignore[attr-defined]
                "default",
            ),
        },
    )
    items = list(rows.items())
    cut = [k for k, _ in items].index(after) + 1
    return dict(items[:cut]) | dict(noise) | dict(items[cut:])


precision.scope_public(globals())
