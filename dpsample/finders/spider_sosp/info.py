r"""Stochastic Spider SOSP: the typed infos of a run (seed 000).

:class:`StochasticSpiderInfo` (Algorithm 1) and :class:`SpiderSOSPInfo` (the full
finder), public records of what ran, with their typed parts: the schedule
(:class:`SpiderSOSPSchedule`, the plan's parameters named in
:data:`~dpsample.finders.spider_sosp.schedule.PLAN_FIELDS`) and the steps per branch
(:class:`BranchCounts`).
"""

from __future__ import annotations

import dataclasses

from dpsample._src import precision
from dpsample.base import AlgorithmInfo, PublicRecord, optional
from dpsample.privacy import PrivacyGuarantee

__all__ = [
    "BranchCounts",
    "SpiderSOSPInfo",
    "SpiderSOSPSchedule",
    "StochasticSpiderInfo",
]


@dataclasses.dataclass(frozen=True, eq=False)
class BranchCounts(PublicRecord):
    """Steps of Algorithm 1 per branch (post-processing of its released estimates).

    Attributes:
        o1_drift: Steps that called O1 at a drift reset (the first step included).
        o2: Steps that called O2.
        kick: Kick steps.
        aborted: Steps after the O1 cap stopped the run.
    """

    o1_drift: int
    o2: int
    kick: int
    aborted: int


@dataclasses.dataclass(frozen=True, eq=False)
class SpiderSOSPSchedule(PublicRecord):
    """The schedule of a Stochastic Spider SOSP run (``info.plan``), all public.

    The plan's parameters named in
    :data:`~dpsample.finders.spider_sosp.schedule.PLAN_FIELDS` (documented there,
    one by one), typed; also a read-only mapping (``info["plan"]["num_iters"]``).

    Attributes:
        variant: ``"empirical"`` or ``"population"``.
        preset: ``"practical"``, ``"practical_iterate"`` or ``"paper"``.
        kick_mode: ``"o1"`` or ``"perturb"``.
        kick_budget: ``"shared"``, ``"separate"`` or ``"none"``.
        zcdp: The total zCDP budget.
        step_size: ``eta = 1/M``.
        drift_threshold: ``kappa``.
        gamma: Lemma 3.3's error scale.
        alpha_kick: The kick threshold.
        alpha_select: The ``alpha`` of Algorithm 2.
        num_iters: ``T``.
        freeze_period: ``ceil(Gamma)``.
        max_o1_calls: The O1 cap ``N1_max``.
        n1_drift: Its drift part.
        n1_kick: The kick bound.
        noise_multiplier_o1: O1 noise over the per-example bound.
        noise_multiplier_o2: O2 noise over the per-example bound.
        sigma1: O1 noise std.
        sigma2: O2 noise std per unit of displacement.
        zeta1: nSG parameter of O1.
        zeta2: nSG parameter of O2.
        kick_std: Std of a kick.
        batch_o1: ``b1``.
        batch_o2: ``b2``.
        n_train: Examples used by Algorithm 1.
        n_select: Examples used by Algorithm 2.
        epsilon_select: Algorithm 2's pure epsilon.
        selection_order: ``"backward"`` or ``"forward"``.
        selection_share: Algorithm 2's share of the zCDP budget.
        failure_prob: ``omega``.
    """

    variant: str
    preset: str
    kick_mode: str
    kick_budget: str
    zcdp: float
    step_size: float
    drift_threshold: float
    gamma: float
    alpha_kick: float
    alpha_select: float
    num_iters: int
    freeze_period: int
    max_o1_calls: int
    n1_drift: int
    n1_kick: int
    noise_multiplier_o1: float
    noise_multiplier_o2: float
    sigma1: float
    sigma2: float
    zeta1: float
    zeta2: float
    kick_std: float
    batch_o1: int
    batch_o2: int
    n_train: int
    n_select: int
    epsilon_select: float
    selection_order: str
    selection_share: float
    failure_prob: float


@dataclasses.dataclass(frozen=True)
class StochasticSpiderInfo(AlgorithmInfo):
    """Public facts of a :func:`stochastic_spider` run (Algorithm 1 alone).

    Every field is post-processing of the released noisy estimates (the branch
    choices depend on released values and public parameters only).

    Attributes:
        algorithm: ``"stochastic_spider"``.
        n_o1_drift: O1 calls at drift resets (the first step's included).
        n_o1_kick: O1 calls at kicks (``kick_mode="o1"``).
        n_o2: O2 calls.
        cap_hit: Whether the O1 cap stopped the run (E7).
        branch_counts: Steps per branch (:class:`BranchCounts`).
        samples_used: Examples consumed from the permutation (population variant),
            else ``None``.
    """

    algorithm: str
    n_o1_drift: int
    n_o1_kick: int
    n_o2: int
    cap_hit: bool
    branch_counts: BranchCounts
    samples_used: int | None
    diagnostics: None = None


@dataclasses.dataclass(frozen=True)
class SpiderSOSPInfo(AlgorithmInfo):
    """Public facts of a :class:`SpiderSOSP` run (``result.info``).

    The counters and branch counts of Algorithm 1 are post-processing of its
    released estimates; ``selected`` is AboveThreshold's output. All are covered
    by the guarantee.

    Attributes:
        algorithm: ``"Stochastic Spider + AboveThreshold (seed 000 Alg. 1 + 2)"``.
        plan: The schedule (:class:`SpiderSOSPSchedule`).
        preset_label: ``"paper"``, or ``"non-paper (<preset>)"`` for a non-paper
            preset (``"practical"``, ``"practical_iterate"``).
        n_o1_drift: O1 calls at drift resets.
        n_o1_kick: O1 calls at kicks.
        n_o2: O2 calls.
        cap_hit: Whether the O1 cap stopped Algorithm 1 (then ``x0`` is released).
        branch_counts: Steps per branch of Algorithm 1 (:class:`BranchCounts`).
        samples_used: Examples of :math:`D_1` consumed (population), else ``None``.
        selected: Index of the selected iterate, or ``None`` (``x0`` or the tail
            average was released: see ``released``).
        fallback: Why ``x0`` was released, or ``None``.
        sequential_guarantee: Population variant: the sequential composition (for
            comparison with the parallel one returned), else ``None``.
        grad_threshold: Algorithm 2's public gradient threshold (when it ran).
        eig_threshold: Its public eigenvalue threshold (on the query
            ``lambda_hat + eta``, an upper bound on ``lambda_min``).
        grad_slack: Lemma 4.1's gradient slack ``32 L Delta_G / eps_AT``.
        eig_slack: Its eigenvalue slack on ``lambda_min``:
            ``32 L Delta_M / eps_AT + 2 eta``, with ``Delta_M = 2M/|S| + 2 eta``.
        eig_error: ``eta``, the public a-priori error bound of the fixed-work
            smallest eigenvalue (``dpsample._src.fixed_eig.min_eigenvalue_error``
            at ``d`` and ``M``).
        released: What was released: ``"tail_average"`` (the mean of the last
            ``ceil(T/2)`` iterates, examined first by the ``"practical"`` preset's
            Algorithm 2; ``selected`` is then ``None``), ``"iterate"`` (the
            ``selected`` one) or ``"x0"`` (``fallback`` says why).
    """

    algorithm: str
    plan: SpiderSOSPSchedule
    preset_label: str
    n_o1_drift: int
    n_o1_kick: int
    n_o2: int
    cap_hit: bool
    branch_counts: BranchCounts
    samples_used: int | None
    selected: int | None
    fallback: str | None
    sequential_guarantee: PrivacyGuarantee | None
    grad_threshold: float | None = optional()
    eig_threshold: float | None = optional()
    grad_slack: float | None = optional()
    eig_slack: float | None = optional()
    eig_error: float | None = optional()
    released: str | None = optional()
    diagnostics: None = None


precision.scope_public(globals())
