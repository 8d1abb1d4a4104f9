"""The typed info of a warm start (``result.info`` of :class:`WarmStart`).

:class:`WarmStartInfo` holds the public facts of a run of
:class:`~dpsample.pipelines.warm_start.WarmStart` (both stages' guarantees and shares,
the rule that fired, the bounds); :class:`WarmStartDiagnostics` the values computed on
the private data, labelled as not private.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from dpsample._src import precision
from dpsample.base import AlgorithmInfo, NonPrivateDiagnostics, optional
from dpsample.pipelines.data_split import HalfDeviations
from dpsample.privacy import PrivacyGuarantee

__all__ = ["WarmStartDiagnostics", "WarmStartInfo"]


@dataclasses.dataclass(frozen=True)
class WarmStartDiagnostics(NonPrivateDiagnostics):
    """NOT PRIVATE: values computed on the private data (never release them).

    Attributes:
        empirical_risk_warm_start: ``F_D(x_0)``.
        empirical_risk_output: ``F_D`` at the output.
        gradient_norm_warm_start: ``||grad F_D(x_0)||``.
        gradient_norm_output: ``||grad F_D||`` at the output.
        gap_over_net_minimum: A net sampler (ERM): ``F_D(x_0) - min_P F_D``.
        min_hessian_eigenvalue_output: ``d <= 200``: the smallest Hessian eigenvalue.
    """

    label: str
    empirical_risk_warm_start: float
    empirical_risk_output: float
    gradient_norm_warm_start: float
    gradient_norm_output: float
    gap_over_net_minimum: float | None = None
    min_hessian_eigenvalue_output: float | None = None


@dataclasses.dataclass(frozen=True)
class WarmStartInfo(AlgorithmInfo):
    """Public facts of a :class:`WarmStart` run (``result.info``).

    Attributes:
        algorithm: ``"warm_start"``.
        sampler: Registry name of stage A (``"none"``: a cold start, the finder
            alone with the whole budget).
        sampler_choice: How stage A was chosen (the default rule's sentence, or
            ``"given"``).
        finder: Registry name of stage B.
        variant: ``"erm"`` or ``"population"``.
        psi: The public bound on ``x_0``'s excess risk.
        psi_failure_prob: Its failure probability.
        psi_terms: The sampler's bound (its terms), or ``None`` when declared.
        psi_source: ``"derived"`` (the sampler's plan), ``"declared"`` (the
            caller's), ``"loss_range"`` (a sampler without a bound, or a bound
            above the range) or ``"cold_start"`` (no sampler ran: ``psi`` is the
            declared ``loss_range``, or ``inf``).
        uniform_deviation: Population variant: the deviation bounds of the halves.
        finder_initial_gap: The finder's public initial gap.
        split: The fraction of epsilon given to stage A.
        epsilon_split: ``(eps_A, eps_B)``.
        delta_split: ``(delta_A, delta_B)``.
        privacy_sampler: Stage A's guarantee.
        privacy_finder: Stage B's guarantee.
        privacy_total: Their composition (``result.privacy``).
        epsilon_total: ``privacy_total`` at the budget's delta.
        stationarity_bound: The finder's rate shape at ``psi`` (finders with a
            ``stationarity_rate``), else ``None``.
        cold_start_bound: The same rate at the declared ``loss_range`` with the
            whole budget, else ``None``.
        dispatcher: :func:`should_warm_start`'s ``(decision, reason)``.
        finder_info: Stage B's info.
        paper_psi: The sampler's closed-form psi of the paper, where it has one.
        warm_start: ``x_0``, stage A's output (covered by the guarantee); absent
            on a cold start.
        sampler_info: Stage A's info; absent on a cold start.
        default_rule: The default rule's branch when the caller gave no sampler
            (``"warm"``, or ``"cold: ..."``; :func:`choose_sampler`).
        privacy_rests_on: What stage A's guarantee rests on beyond the constants.
        split_sizes: Population variant: ``(|D_1|, |D_2|)``.
        epsilon_total_parallel: Population variant: ``max(eps_A, eps_B)``.
        ledger_stages: The ledger's stage names (when a ledger was charged).
    """

    algorithm: str
    sampler: str
    sampler_choice: str
    finder: str
    variant: str
    psi: float
    psi_failure_prob: float
    psi_terms: Any
    psi_source: str
    uniform_deviation: HalfDeviations | None
    finder_initial_gap: float
    split: float
    epsilon_split: tuple[float, float]
    delta_split: tuple[float, float]
    privacy_sampler: PrivacyGuarantee
    privacy_finder: PrivacyGuarantee
    privacy_total: PrivacyGuarantee
    epsilon_total: float
    stationarity_bound: float | None
    cold_start_bound: float | None
    dispatcher: tuple[bool, str]
    finder_info: Any
    paper_psi: float | None = None
    warm_start: Any = optional()
    sampler_info: Any = optional()
    default_rule: str | None = optional()
    privacy_rests_on: str | None = optional()
    split_sizes: tuple[int, int] | None = optional()
    epsilon_total_parallel: float | None = optional()
    ledger_stages: list[str] | None = optional()
    diagnostics: WarmStartDiagnostics | None = None


precision.scope_public(globals())
