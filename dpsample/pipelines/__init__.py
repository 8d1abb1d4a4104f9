"""Pipelines: several private stages composed under one budget (seed 003).

:func:`warm_start` is seed 003's Algorithm 2: a private approximate risk minimiser
(the exponential mechanism over a net of the ball) warm-starts a stationary-point
finder (DP-SPIDER or DP-SGD) configured from a *public* bound ``psi`` on the warm
start's excess risk; :func:`should_warm_start` is the public dispatcher of spec 003
section 2.9.
"""

from dpsample.pipelines.warm_start import (
    WarmStartBound,
    net_warm_start_bound,
    should_warm_start,
    theorem_3_2_stationarity_bound,
    warm_start,
)

__all__ = [
    "WarmStartBound",
    "net_warm_start_bound",
    "should_warm_start",
    "theorem_3_2_stationarity_bound",
    "warm_start",
]
