r"""Drift-controlled Stochastic Spider with private SOSP selection (seed 000).

Seed 000 (Ganesh, Liu, Oh & Thakurta) finds an approximate second-order stationary
point (SOSP) privately in two stages:

1. **Algorithm 1** ("Stochastic Spider"): SpiderBoost whose expensive oracle ``O1`` (a
   noisy gradient) is called only when the squared movement since the last call, the
   *drift*, reaches :math:`\kappa`; otherwise the cheap ``O2`` (a noisy gradient
   difference on the same batch) updates a running estimate. When the estimate is
   small and no kick happened for :math:`\Gamma` steps, a Gaussian *kick* is added to
   escape saddles. Oracles: Eq. (2) (full data, empirical risk) or Eq. (3) (fresh
   batches without replacement from one half of the data, population risk), built
   with :mod:`dpsample.finders.oracles`.
2. **Algorithm 2** (AboveThreshold): selects privately an iterate whose noisy
   gradient norm and smallest Hessian eigenvalue pass noisy thresholds
   (:func:`dpsample.mechanisms.above_threshold_sosp`): by default the candidates are
   examined from the last iterate backwards, so the latest passing one is released
   (``selection_order="backward"``, non-paper; the paper's forward order releases
   the first, typically still escaping the saddle: issue 16).

:class:`SpiderSOSP` is the algorithm object: :meth:`~SpiderSOSP.plan` computes every
parameter from public quantities (declared constants, ``n``, ``d``, the privacy
target) into a :class:`~dpsample.plan.Plan`, and :meth:`~SpiderSOSP.run` runs both
stages and returns the selected point with the composed guarantee.
:func:`spider_sosp` is the one-call convenience, :func:`plan_spider` the plan alone,
and :func:`stochastic_spider` the building block that runs Algorithm 1 of a plan
(its iterates, with their own guarantee). Corrections to the paper follow spec 000
§6.1 (E3–E21, E34–E37) and are named where they apply.

Domain. Algorithm 1 takes unconstrained steps (no projection, E20) and its oracles do
not clip, so the declared constants must hold on all of ``R^d``: the plan refuses a
spec that is not on :class:`~dpsample.domains.Unconstrained` (``ValueError``, before
any private computation), and so does :func:`stochastic_spider` for its problem;
every finite ``x0`` then lies in the domain.

Non-finite values. The data are checked finite by the ``Problem``; nothing raises
during a run. A selection query that is not finite (the loss or its derivatives
returned NaN or inf at a candidate, or its Hessian is not finite) *fails* its test in
Algorithm 2: a non-finite gradient norm is treated as ``+inf``, a non-finite smallest
eigenvalue as ``-inf``, so that candidate is never selected (the public rule of
:func:`~dpsample.mechanisms.above_threshold_sosp` for lazy queries). The guarantee is
unchanged; a loss that is not finite somewhere breaks the declared constants the
oracles' sensitivities rest on, so the iterates may carry the NaN.
"""

from dpsample.finders.spider_sosp.blocks import plan_spider, stochastic_spider
from dpsample.finders.spider_sosp.finder import SpiderSOSP, spider_sosp
from dpsample.finders.spider_sosp.info import (
    BranchCounts,
    SpiderSOSPInfo,
    SpiderSOSPSchedule,
    StochasticSpiderInfo,
)
from dpsample.finders.spider_sosp.schedule import PLAN_FIELDS, SPIDER_PRESETS

__all__ = [
    "BranchCounts",
    "PLAN_FIELDS",
    "SPIDER_PRESETS",
    "SpiderSOSP",
    "SpiderSOSPInfo",
    "SpiderSOSPSchedule",
    "StochasticSpiderInfo",
    "plan_spider",
    "spider_sosp",
    "stochastic_spider",
]
