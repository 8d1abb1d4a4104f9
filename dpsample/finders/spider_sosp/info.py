r"""Stochastic Spider SOSP: the typed infos of a run (seed 000).

:class:`StochasticSpiderInfo` (Algorithm 1) and :class:`SpiderSOSPInfo` (the full
finder), public records of what ran.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from dpsample._src import precision
from dpsample.base import AlgorithmInfo, optional
from dpsample.privacy import PrivacyGuarantee

__all__ = ["SpiderSOSPInfo", "StochasticSpiderInfo"]


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
        branch_counts: Steps per branch: ``o1_drift``, ``o2``, ``kick``, ``aborted``.
        samples_used: Examples consumed from the permutation (population variant),
            else ``None``.
    """

    algorithm: str
    n_o1_drift: int
    n_o1_kick: int
    n_o2: int
    cap_hit: bool
    branch_counts: dict[str, int]
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
        plan: The schedule: the plan's parameters named in :data:`PLAN_FIELDS`.
        preset_label: ``"paper"`` or ``"non-paper (practical)"``.
        n_o1_drift: O1 calls at drift resets.
        n_o1_kick: O1 calls at kicks.
        n_o2: O2 calls.
        cap_hit: Whether the O1 cap stopped Algorithm 1 (then ``x0`` is released).
        branch_counts: Steps per branch of Algorithm 1.
        samples_used: Examples of :math:`D_1` consumed (population), else ``None``.
        selected: Index of the selected iterate, or ``None`` (fallback to ``x0``).
        fallback: Why ``x0`` was released, or ``None``.
        sequential_guarantee: Population variant: the sequential composition (for
            comparison with the parallel one returned), else ``None``.
        grad_threshold: Algorithm 2's public gradient threshold (when it ran).
        eig_threshold: Its public eigenvalue threshold.
        grad_slack: Lemma 4.1's gradient slack ``32 L Delta_G / eps_AT``.
        eig_slack: Its eigenvalue slack.
    """

    algorithm: str
    plan: dict[str, Any]
    preset_label: str
    n_o1_drift: int
    n_o1_kick: int
    n_o2: int
    cap_hit: bool
    branch_counts: dict[str, int]
    samples_used: int | None
    selected: int | None
    fallback: str | None
    sequential_guarantee: PrivacyGuarantee | None
    grad_threshold: float | None = optional()
    eig_threshold: float | None = optional()
    grad_slack: float | None = optional()
    eig_slack: float | None = optional()
    diagnostics: None = None


precision.scope_public(globals())
