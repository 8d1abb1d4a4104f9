r"""Stochastic Spider SOSP: the public schedule (seed 000 Theorems 4.2 / 4.6).

The presets, the plan's fields, the theorem calculator and the compute-cap rule
that :class:`~dpsample.finders.spider_sosp.SpiderSOSP` plans with (public inputs
only).
"""

from __future__ import annotations

import math
from typing import Any

from dpsample._src import precision, validation
from dpsample.domains import Unconstrained
from dpsample.finders import oracles
from dpsample.finders.accounting import C_SENS
from dpsample.finders.spider_sosp.options import SpiderSOSPOptions
from dpsample.plan import Cost, Param
from dpsample.privacy import PrivacyGuarantee
from dpsample.problem import ProblemSpec

__all__ = [
    "PLAN_FIELDS",
    "SPIDER_PRESETS",
    "TAIL_CANDIDATE",
    "anchor_steps",
]

#: The presets whose Algorithm 2 examines the tail average of the iterates (the mean
#: of the last ``ceil(T/2)``) before the iterates themselves.
TAIL_CANDIDATE = ("practical",)

#: Constants of the presets (spec 000 §6.2). ``"paper"``: the printed forms with
#: every O(.) constant set to 1 (T = BM L^4/gamma^2, N1 from Lemma 3.7 with the
#: (1 + 3 L^4/64) factor, kick threshold gamma L^3). ``"practical_iterate"``
#: (non-paper; the default before issue 24): T = c_T BM/gamma^2, N1_drift = c_N 6 B
#: eta/kappa + 1, kick threshold c_alpha gamma, with c_N >= 1 + 3 c_T/64 so the Lemma
#: 3.7 count stays covered; Algorithm 2 examines the iterates. ``"practical"``
#: (non-paper, the default, issue 24): the same N1_drift and kick threshold; in the
#: empirical variant T = c_T BM/zeta1(T)^2 (:func:`anchor_steps`: the descent count at
#: the error of one O1 anchor instead of Lemma 3.7's bound gamma), at most ``max_T``;
#: and Algorithm 2 examines the tail average of the iterates first
#: (:data:`TAIL_CANDIDATE`).
SPIDER_PRESETS: dict[str, dict[str, float]] = {
    "paper": {"c_gamma": 1.0},
    "practical": {
        "c_gamma": 1.0,
        "c_T": 20.0,
        "c_N": 4.0,
        "c_alpha": 1.0,
        "max_T": 10_000,
    },
    "practical_iterate": {"c_gamma": 1.0, "c_T": 20.0, "c_N": 4.0, "c_alpha": 1.0},
}

#: The schedule's parameters, in order: the keys of ``info["plan"]`` and parameters
#: of the :class:`~dpsample.plan.Plan` (which also holds ``x0`` and ``initial_gap``).
#:
#: * ``variant``: ``"empirical"`` (Eq. (2), Theorem 4.2) or ``"population"`` (Eq. (3)
#:   on the first half of the data, Theorem 4.6); ``preset``: ``"paper"`` or
#:   ``"practical"``; ``kick_mode``: ``"o1"`` (paper) or ``"perturb"`` (variant, spec
#:   000 §2.2); ``kick_budget``: ``"shared"`` (kick O1 calls count toward the Lemma 3.7
#:   cap, option (a)), ``"separate"`` (cap = drift bound + kick bound, option (b)) or
#:   ``"none"`` (``kick_mode="perturb"``);
#: * ``zcdp``: total zCDP budget :math:`\varphi` from the (epsilon, delta) target;
#:   ``step_size``: :math:`\eta = 1/M`; ``drift_threshold``: :math:`\kappa`;
#:   ``gamma``: the error scale :math:`\gamma` of Lemma 3.3; ``alpha_kick``: kick
#:   threshold (the SOSP accuracy :math:`\alpha_1`); ``alpha_select``: the
#:   :math:`\alpha` passed to Algorithm 2;
#: * ``num_iters``: ``T`` (exactly ``T`` iterations, E9); ``freeze_period``:
#:   :math:`\lceil\Gamma\rceil`; ``max_o1_calls``: the O1 cap ``N1_max`` (privacy
#:   depends on it, E7); ``n1_drift``: its drift part (Lemma 3.7 plus the first
#:   call); ``n1_kick``: the kick bound :math:`\lceil T/(\lceil\Gamma\rceil+1)\rceil`;
#: * ``noise_multiplier_o1`` / ``noise_multiplier_o2``: std of the noise on the sum
#:   over the per-example bound ``G`` / ``M ||x - y||`` (the ecosystem's convention;
#:   noise over the replace-one sensitivity is half of it); ``sigma1``: O1 noise std
#:   (``z G / b``); ``sigma2``: O2 noise std per unit of displacement (``z M / b``;
#:   the oracle adds its rounding floor); ``zeta1``, ``zeta2``: nSG parameters (Claim
#:   4.4 for the population variant); ``kick_std``: std of the kick
#:   :math:`\zeta_1/\sqrt d` (line 8);
#: * ``batch_o1``, ``batch_o2``: ``b1``, ``b2`` (``n`` for the empirical variant);
#:   ``n_train``: examples used by Algorithm 1 (``n`` or ``ceil(n/2)``);
#:   ``n_select``: ``|S|``, examples used by Algorithm 2 (``n`` or ``floor(n/2)``);
#:   ``epsilon_select``: the pure epsilon of Algorithm 2; ``selection_order``:
#:   ``"backward"`` (candidates examined from ``x_T`` back to ``x_1``, default,
#:   non-paper) or ``"forward"`` (the paper's order); ``selection_share``: the share
#:   of the zCDP budget :math:`\varphi` spent by Algorithm 2 (empirical variant;
#:   the paper's 1/2); ``failure_prob``: :math:`\omega`.
PLAN_FIELDS: tuple[str, ...] = (
    "variant",
    "preset",
    "kick_mode",
    "kick_budget",
    "zcdp",
    "step_size",
    "drift_threshold",
    "gamma",
    "alpha_kick",
    "alpha_select",
    "num_iters",
    "freeze_period",
    "max_o1_calls",
    "n1_drift",
    "n1_kick",
    "noise_multiplier_o1",
    "noise_multiplier_o2",
    "sigma1",
    "sigma2",
    "zeta1",
    "zeta2",
    "kick_std",
    "batch_o1",
    "batch_o2",
    "n_train",
    "n_select",
    "epsilon_select",
    "selection_order",
    "selection_share",
    "failure_prob",
)

_MAX_PLAN_ROUNDS = 200
NEEDED_FOR = "the Stochastic Spider SOSP finder (seed 000 Thm 4.2/4.6)"


# ------------------------------------------------------------------------ planning
def _log1(x: float) -> float:
    """``max(1, log x)``: logs of dimensioned quantities are floored at 1 (E19)."""
    return max(1.0, math.log(x)) if x > 0 else 1.0


def check_unconstrained_domain(
    domain: Any, dim: int, name: str = "spider_sosp"
) -> None:
    if not isinstance(domain, Unconstrained):
        raise ValueError(
            f"{name} takes unconstrained steps (seed 000 Algorithm 1 has no "
            "projection, E20), so its privacy needs the declared constants on all "
            f"of R^d: declare the Problem on Unconstrained({dim}), got {domain!r}"
        )


def anchor_steps(
    bm: float,
    lipschitz: float,
    dim: int,
    n: int,
    phi: float,
    selection_share: float,
    c_t: float,
    max_t: int,
) -> int:
    r"""The ``"practical"`` preset's ``T`` (empirical variant): public inputs only.

    The theorem's count :math:`T = c_T B M/\gamma^2` is the number of steps that
    descend the initial gap :math:`B` at the progress :math:`\gamma^2/M` per step
    that Lemma 3.3's high-probability error bound :math:`\gamma` leaves (log factors
    included, tens of times the error a run has). This rule counts them at the error
    of one O1 anchor instead, :math:`\zeta_1(T) = \sigma_1\sqrt d`, with every
    step chargeable to O1 (:math:`N_{1,\max} = T`, the cap the plan charges when it
    binds): :math:`\zeta_1(T)^2 = c_{sens}^2 (2T/\varphi) w^2 G^2 d/n^2`
    (:math:`w^2 = 1/(2(1 - s))`), so :math:`T = c_T B M/\zeta_1(T)^2` solves to
    :math:`T = \sqrt{c_T B M n^2 \varphi/(2 c_{sens}^2 w^2 G^2 d)}`, capped at
    ``max_t``. The released tail average cancels the anchors' errors, so the run
    should last until the iterates have settled at that error, not at
    :math:`\gamma`.

    Args:
        bm: ``B M`` (initial gap times smoothness).
        lipschitz: ``G``.
        dim: ``d``.
        n: ``n``.
        phi: The zCDP budget :math:`\varphi` of the whole run.
        selection_share: Algorithm 2's share ``s`` of :math:`\varphi`.
        c_t: The constant ``c_T``.
        max_t: The largest ``T`` returned.

    Returns:
        ``T >= 1``.

    Examples:
        >>> from dpsample.finders.spider_sosp.schedule import anchor_steps
        >>> anchor_steps(20.0, 10**0.5, 10, 10_000, 0.04, 0.5, 20.0, 10_000)
        1415
    """
    widen_sq = 0.5 / (1.0 - selection_share)
    t_sq = c_t * bm * n**2 * phi / (2.0 * C_SENS**2 * widen_sq * lipschitz**2 * dim)
    return max(1, min(max_t, math.ceil(math.sqrt(t_sq))))


def theorem_schedule(
    spec: ProblemSpec,
    phi: float,
    *,
    variant: str,
    preset: str,
    omega: float,
    kick_mode: str,
    kick_budget: str,
    b_c: float,
    drift_threshold: float | None,
    num_iters: int | None,
    max_o1_calls: int | None,
    alpha: float | None,
    selection_share: float = 0.5,
) -> dict[str, Any]:
    """Theorem 4.2 / 4.6 parameters at zCDP budget ``phi`` (see :class:`SpiderSOSP`).

    Returns the values of :data:`PLAN_FIELDS` (those that do not depend on the
    caller's strings) as a dict.
    """
    g_c = validation.require_constant(
        "lipschitz", spec.lipschitz, needed_for=NEEDED_FOR
    )
    m_c = validation.require_constant(
        "smoothness", spec.smoothness, needed_for=NEEDED_FOR
    )
    rho_h = validation.require_constant(
        "hessian_lipschitz", spec.hessian_lipschitz, needed_for=NEEDED_FOR
    )
    d, n = spec.dim, spec.n
    consts = SPIDER_PRESETS[preset]
    eta = 1.0 / m_c
    sqrt_phi = math.sqrt(phi)
    log_d = _log1(d)
    if variant == "empirical":
        n_train, n_select = n, n
        priv = math.sqrt(d) / (n * sqrt_phi)
        kappa = (g_c ** (4 / 3) * b_c ** (1 / 3) / m_c ** (5 / 3)) * priv ** (2 / 3)
    else:
        n_train, n_select = (n + 1) // 2, n // 2
        if n_select < 1:
            raise ValueError(f"The population variant needs n >= 2, got n={n}")
        priv = math.sqrt(d) / (n * sqrt_phi)
        kappa = max(
            g_c ** (4 / 3)
            * b_c ** (1 / 3)
            * log_d ** (1 / 3)
            * m_c ** (-5 / 3)
            * n ** (-1 / 3),
            (g_c * b_c ** (2 / 3) / m_c ** (5 / 3)) ** (6 / 7) * priv ** (4 / 7),
        )
    if drift_threshold is not None:
        kappa = drift_threshold

    def schedule(gamma: float) -> dict[str, Any]:
        big_l = _log1(d * m_c * b_c / (rho_h * gamma * omega))
        if num_iters is not None:
            t = num_iters
        elif preset == "practical" and variant == "empirical":
            t = anchor_steps(
                b_c * m_c, g_c, d, n, phi, selection_share, consts["c_T"],
                int(consts["max_T"]),
            )  # fmt: skip
        elif preset == "paper":
            t = math.ceil(b_c * m_c * big_l**4 / gamma**2)
        else:
            t = math.ceil(consts["c_T"] * b_c * m_c / gamma**2)
        t = max(1, t)
        freeze = max(1, math.ceil(m_c * big_l / math.sqrt(rho_h * gamma)))
        if preset == "paper":
            n1_drift = math.ceil(6 * b_c * eta / kappa * (1 + 3 * big_l**4 / 64)) + 1
        else:
            n1_drift = math.ceil(6 * b_c * eta / kappa * consts["c_N"]) + 1
        n1_kick = math.ceil(t / (freeze + 1)) if kick_mode == "o1" else 0
        if max_o1_calls is not None:
            n1_max = max_o1_calls
        elif kick_budget == "separate":
            n1_max = n1_drift + n1_kick
        else:
            n1_max = n1_drift
        # At most one oracle call per iteration: a cap above T never binds, and
        # calibrating to T instead is the same guarantee with less noise.
        n1_max = min(n1_max, t)
        if variant == "empirical":
            # Algorithm 1 gets (1 - s) phi, half for the O1 and half for the O2
            # releases (one release is 2/z^2-zCDP); s = 1/2 is the paper's split.
            b1 = b2 = n
            widen = math.sqrt(0.5 / (1.0 - selection_share))  # 1 at the paper's 1/2
            z1 = C_SENS * math.sqrt(2.0 * n1_max / phi) * widen
            z2 = C_SENS * math.sqrt(2.0 * t / phi) * widen
            sigma1 = z1 * g_c / n
            sigma2 = z2 * m_c / n
            zeta1, zeta2 = sigma1 * math.sqrt(d), sigma2 * math.sqrt(d)
        else:
            b1 = n_train // (2 * n1_max)
            b2 = n_train // (2 * t)
            z1 = z2 = C_SENS / math.sqrt(2.0 * phi)
            sigma1 = z1 * g_c / max(b1, 1)
            sigma2 = z2 * m_c / max(b2, 1)
            zeta1 = g_c * math.sqrt(log_d / max(b1, 1)) + math.sqrt(d) * sigma1
            zeta2 = m_c * math.sqrt(log_d / max(b2, 1)) + math.sqrt(d) * sigma2
        new_gamma = 4.0 * math.sqrt(
            consts["c_gamma"]
            * (zeta2**2 * kappa + 4.0 * zeta1**2)
            * _log1(t * d / omega)
        )
        return dict(
            t=t, freeze=freeze, n1_drift=n1_drift, n1_kick=n1_kick, n1_max=n1_max,
            b1=b1, b2=b2, z1=z1, z2=z2, sigma1=sigma1, sigma2=sigma2, zeta1=zeta1,
            zeta2=zeta2, gamma=new_gamma,
        )  # fmt: skip

    # Damped fixed point of gamma -> schedule(gamma)["gamma"] (E10).
    gamma = (b_c * g_c * m_c) ** (1 / 3) * priv ** (2 / 3)
    for _ in range(_MAX_PLAN_ROUNDS):
        new = math.sqrt(gamma * schedule(gamma)["gamma"])
        if abs(new - gamma) <= 1e-10 * gamma:
            gamma = new
            break
        gamma = new
    s = schedule(gamma)
    if variant == "population" and (s["b1"] < 1 or s["b2"] < 1):
        raise ValueError(
            f"Population variant infeasible: |D1|={n_train} examples cannot feed "
            f"N1_max={s['n1_max']} O1 and T={s['t']} O2 calls with fresh batches "
            f"(b1={s['b1']}, b2={s['b2']}); increase n or the privacy budget, or "
            "lower num_iters / max_o1_calls"
        )
    if preset == "paper":
        alpha_kick = gamma * _log1(b_c * m_c * d / (rho_h * omega)) ** 3
    else:
        alpha_kick = consts["c_alpha"] * gamma
    if alpha is not None:
        alpha_kick = alpha
    eps_select = (
        math.sqrt(2.0 * selection_share * phi)
        if variant == "empirical"
        else math.sqrt(2.0 * phi)
    )
    return {
        "zcdp": phi,
        "step_size": eta,
        "drift_threshold": kappa,
        "gamma": gamma,
        "alpha_kick": alpha_kick,
        "alpha_select": alpha_kick,
        "num_iters": s["t"],
        "freeze_period": s["freeze"],
        "max_o1_calls": s["n1_max"],
        "n1_drift": s["n1_drift"],
        "n1_kick": s["n1_kick"],
        "noise_multiplier_o1": s["z1"],
        "noise_multiplier_o2": s["z2"],
        "sigma1": s["sigma1"],
        "sigma2": s["sigma2"],
        "zeta1": s["zeta1"],
        "zeta2": s["zeta2"],
        "kick_std": s["zeta1"] / math.sqrt(d),
        "batch_o1": s["b1"],
        "batch_o2": s["b2"],
        "n_train": n_train,
        "n_select": n_select,
        "epsilon_select": eps_select,
        "failure_prob": omega,
        # (not a plan field: the cost's count of selection queries)
        "tail_candidate": preset in TAIL_CANDIDATE,
    }


def schedule_cost(v: dict[str, Any], dim: int) -> Cost:
    """An upper bound on the work of a run with schedule ``v`` (public).

    Algorithm 1: each of the ``T`` steps calls O1 (``b1`` per-example gradients) or
    O2 (``2 b2``, both points on one batch); at most ``N1_max`` steps call O1 and the
    first one does, so the worst case is at an end of ``[1, N1_max]``. Algorithm 2:
    at most ``T`` candidates (``T + 1`` with the tail average, :data:`TAIL_CANDIDATE`),
    each an exact gradient of ``F_S`` (``|S|`` gradients) and Hessian (``|S| d``
    Hessian-vector products). The branch choices and the
    candidate AboveThreshold stops at are post-processing of released values, so
    the work actually done is public too; this bound is what the plan promises.
    """
    t, n1 = v["num_iters"], v["max_o1_calls"]
    b1, b2, s = v["batch_o1"], v["batch_o2"], v["n_select"]
    alg1 = max(b1 + (t - 1) * 2 * b2, n1 * b1 + (t - n1) * 2 * b2)
    queries = t + 1 if v.get("tail_candidate") else t
    return Cost(
        gradient_evaluations=alg1 + queries * s,
        hessian_vector_products=queries * s * dim,
        steps=t + queries,
    )


def empirical_guarantees(
    spec: ProblemSpec, values: dict[str, Any], enforce_sensitivity: bool = True
) -> tuple[Any, Any, PrivacyGuarantee, PrivacyGuarantee]:
    """``(O1, O2, Algorithm 1's guarantee, the whole guarantee)`` of a schedule.

    The empirical variant's ``values``: every release on all ``n`` examples. The
    oracles clip at the declared constants unless ``enforce_sensitivity=False``.
    """
    o1 = oracles.first_kind(
        spec,
        noise_multiplier=values["noise_multiplier_o1"],
        enforce_sensitivity=enforce_sensitivity,
    )
    o2 = oracles.second_kind(
        spec,
        noise_multiplier=values["noise_multiplier_o2"],
        enforce_sensitivity=enforce_sensitivity,
    )
    alg1 = o1.run_guarantee(values["max_o1_calls"]).compose(
        o2.run_guarantee(values["num_iters"])
    )
    alg2 = PrivacyGuarantee.pure(values["epsilon_select"], relation=spec.relation)
    return o1, o2, alg1, alg1.compose(alg2)


def cap_schedule(
    solve: Any, values: dict[str, Any], cap: int, dim: int
) -> tuple[dict[str, Any], int]:
    """The theorem's schedule at the largest ``T' <= T`` whose cost fits ``cap``.

    Bisection on ``T'``, re-solving the whole schedule at each (``solve(T')``); the
    lower end always fits, so the answer does even if rounding makes the cost not
    monotone in ``T'``.
    """
    t = values["num_iters"]
    lo_values = solve(1)
    if schedule_cost(lo_values, dim).evaluations > cap:
        raise ValueError(
            f"max_evaluations={cap:,} is below one iteration of spider_sosp "
            f"({schedule_cost(lo_values, dim).evaluations:,} per-example "
            "evaluations)"
        )
    lo, hi = 1, t
    while hi - lo > 1:
        mid = (lo + hi) // 2
        candidate = solve(mid)
        if schedule_cost(candidate, dim).evaluations <= cap:
            lo, lo_values = mid, candidate
        else:
            hi = mid
    return lo_values, t


def _preset_rule(preset: str) -> str:
    """The plan's name of the rule behind a preset's values."""
    return (
        "seed 000 (paper constants)"
        if preset == "paper"
        else "practical preset (non-paper)"
    )


#: The options whose rows follow :data:`PLAN_FIELDS` in the plan's table.
_TRAILING = ("enforce_sensitivity", "calibration", "initial_gap")
#: A plan row that shows an option under another name.
_ROW_OF = {"alpha_kick": "alpha"}


def option_rows(
    opts: SpiderSOSPOptions,
    v: dict[str, Any],
    x0: Param,
    *,
    enforce: bool,
    initial_gap: float,
    capped_from: int | None,
    cap: int | None,
) -> dict[str, Param]:
    """The plan's rows of the options (:class:`SpiderSOSPOptions`), values resolved.

    The declaration gives each row's source and rule; the plan names at run time
    the rule of a theorem value that depends on the preset or the variant
    (``num_iters``, with the compute cap; ``drift_threshold``; the population
    variant's unused ``selection_share``) and the notes of an opt-out
    (``enforce_sensitivity=False``) or of ``calibration="closed_form"``. ``alpha``'s
    row is the schedule's ``alpha_kick`` (the preset's rule;
    :func:`params_with_sources` shows it under that name).
    """
    given = opts.given()
    paper = opts.preset == "paper"
    empirical = v["variant"] == "empirical"
    sources: dict[str, str] = {}
    notes: dict[str, str] = {}
    if "num_iters" not in given:
        rule = _preset_rule(opts.preset)
        practical_c_t = SPIDER_PRESETS["practical"]["c_T"]
        if paper:
            steps_note = "Thm 4.2/4.6: T = B M L^4 / gamma^2"
        elif opts.preset == "practical" and empirical:
            max_t = int(SPIDER_PRESETS["practical"]["max_T"])
            steps_note = (
                f"{rule}: T = c_T B M / zeta1(T)^2 at N1_max = T, i.e. sqrt(c_T B M "
                f"n^2 phi / (2 c_sens^2 w^2 G^2 d)), c_T = {practical_c_t:g}, at most "
                f"{max_t:,} (the descent count at one O1 anchor's error; the tail "
                "average cancels the anchors' errors)"
            )
        else:
            steps_note = f"{rule}: T = c_T B M / gamma^2, c_T = {practical_c_t:g}"
        if capped_from is not None:
            steps_note += (
                f"; capped at T={v['num_iters']} (max_evaluations={cap:,}: the "
                f"largest T whose cost fits, was {capped_from}); the rest re-derived "
                "at this T"
            )
        sources["num_iters"] = "theorem" if paper else "default"
        notes["num_iters"] = steps_note
    if "alpha" not in given:
        sources["alpha"] = "theorem" if paper else "default"
        notes["alpha"] = "gamma log^3(B M d/(rho omega))" if paper else "c_alpha gamma"
    if "drift_threshold" not in given:
        notes["drift_threshold"] = f"kappa of Thm {'4.2' if empirical else '4.6'}"
    if not empirical:  # (it refuses a selection_share: the default applies)
        sources["selection_share"] = "derived"
        notes["selection_share"] = (
            "unused: Algorithm 2 runs on D2 (parallel composition)"
        )
    if not enforce:
        notes["enforce_sensitivity"] = (
            "opted out: Algorithm 1's guarantee is conditional on the declared G and M"
        )
    if opts.calibration != "accountant":
        notes["calibration"] = "Lemma A.4"
    resolved = {name: v[name] for name in PLAN_FIELDS if hasattr(opts, name)}
    return opts.rows(
        resolved=resolved
        | {
            "alpha": v["alpha_kick"],
            "enforce_sensitivity": enforce,
            "initial_gap": initial_gap,
        },
        sources=sources,
        notes=notes,
        params={"x0": x0},
    )


def params_with_sources(
    v: dict[str, Any], rows: dict[str, Param], *, preset: str
) -> dict[str, Param]:
    """The plan's parameters with their sources (see :data:`PLAN_FIELDS`).

    ``rows``: the options' rows (:func:`option_rows`), placed among the schedule's
    derived rows in the plan's order: ``x0``, :data:`PLAN_FIELDS` (``alpha``'s row
    as ``alpha_kick``), then ``enforce_sensitivity``, ``calibration``,
    ``initial_gap`` (and any other option's row).
    """
    paper, rule = preset == "paper", _preset_rule(preset)
    empirical = v["variant"] == "empirical"
    derived = {
        "zcdp": Param(v["zcdp"], "derived", "Lemma A.4: the zCDP of (eps, delta)"),
        "step_size": Param(v["step_size"], "theorem", "eta = 1/M"),
        "gamma": Param(v["gamma"], "theorem", "Lemma 3.3 (E10), damped fixed point"),
        "alpha_select": Param(v["alpha_select"], "derived", "= alpha_kick"),
        "freeze_period": Param(
            v["freeze_period"], "theorem", "Gamma = M L / sqrt(rho gamma)"
        ),
        "n1_drift": Param(
            v["n1_drift"],
            "theorem" if paper else "default",
            "Lemma 3.7 + 1" if paper else f"{rule}: c_N 6 B eta / kappa + 1",
        ),
        "n1_kick": Param(v["n1_kick"], "theorem", "ceil(T/(Gamma + 1)) (E12)"),
        "noise_multiplier_o1": Param(
            v["noise_multiplier_o1"],
            "theorem",
            "(1 - s) phi / 2 for N1_max O1 calls, s = selection_share"
            if empirical
            else "phi per fresh release",
        ),
        "noise_multiplier_o2": Param(
            v["noise_multiplier_o2"],
            "theorem",
            "(1 - s) phi / 2 for T O2 calls" if empirical else "phi per fresh release",
        ),
        "sigma1": Param(v["sigma1"], "derived", "z1 G / b1"),
        "sigma2": Param(v["sigma2"], "derived", "z2 M / b2 per unit displacement"),
        "zeta1": Param(v["zeta1"], "derived", "nSG parameter of O1"),
        "zeta2": Param(v["zeta2"], "derived", "nSG parameter of O2"),
        "kick_std": Param(v["kick_std"], "derived", "zeta1 / sqrt(d) (line 8)"),
        "batch_o1": Param(
            v["batch_o1"],
            "derived" if empirical else "theorem",
            "n" if empirical else "|D1| / (2 N1_max) (E15)",
        ),
        "batch_o2": Param(
            v["batch_o2"],
            "derived" if empirical else "theorem",
            "n" if empirical else "|D1| / (2 T) (E15)",
        ),
        "n_train": Param(v["n_train"], "derived", "n" if empirical else "ceil(n/2)"),
        "n_select": Param(v["n_select"], "derived", "n" if empirical else "floor(n/2)"),
        "epsilon_select": Param(
            v["epsilon_select"],
            "theorem",
            "sqrt(2 s phi): s phi for AboveThreshold" if empirical else "sqrt(2 phi)",
        ),
    }
    out = {"x0": rows["x0"]}
    for name in PLAN_FIELDS:
        option_ = _ROW_OF.get(name, name)
        out[name] = rows[option_] if option_ in rows else derived[name]
    out |= {name: rows[name] for name in _TRAILING}
    shown = {*out, *_ROW_OF.values()}
    return out | {name: p for name, p in rows.items() if name not in shown}


precision.scope_public(globals())
