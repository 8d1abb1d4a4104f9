"""Private stationary-point finders (seeds 000, 001, 002, 003).

Gradient oracles, DP-SGD (with and without clipping, and as an optax transform),
DP-SPIDER, the drift-controlled Stochastic Spider with AboveThreshold SOSP selection,
DP trust region (DP-TR, DP-STR), and stationarity measurement.
"""

from dpsample.finders import (
    goldstein,
    goldstein_stationarity,
    oracles,
    stationarity,
    tr_subproblem,
    trust_region,
)
from dpsample.finders.dp_sgd import dp_sgd, dp_sgd_guarantee
from dpsample.finders.dp_spider import dp_spider
from dpsample.finders.goldstein import goldstein_first_order, goldstein_zero_order
from dpsample.finders.optax_transform import dp_sgd_transform
from dpsample.finders.spider_sosp import spider_sosp, stochastic_spider
from dpsample.finders.tr_subproblem import TRSubproblemSolution, solve_tr_subproblem
from dpsample.finders.trust_region import (
    dp_stochastic_trust_region,
    dp_trust_region,
)

__all__ = [
    "TRSubproblemSolution",
    "dp_sgd",
    "dp_sgd_guarantee",
    "dp_sgd_transform",
    "dp_spider",
    "dp_stochastic_trust_region",
    "dp_trust_region",
    "goldstein",
    "goldstein_first_order",
    "goldstein_stationarity",
    "goldstein_zero_order",
    "oracles",
    "solve_tr_subproblem",
    "spider_sosp",
    "stationarity",
    "stochastic_spider",
    "tr_subproblem",
    "trust_region",
]
