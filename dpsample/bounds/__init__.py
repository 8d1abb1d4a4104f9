"""Theorem calculators: parameter settings and risk bounds as plain functions.

Algorithms, pipelines and experiments share these formulas, so that the value an
algorithm uses and the bound an experiment plots come from one place. Every function
takes public constants only (keyword-only, validated eagerly) and returns Python floats.
Every name is importable from here (``from dpsample.bounds import ...``); they live in:

* :mod:`dpsample.bounds.theorem_5_8`: Theorem 5.8 of Ganesh, Liu, Oh and Thakurta
  (the exponential mechanism over a net of ``K``; spec 000-core section 4.2, errata
  E28): the net radius, the net size, the mechanism's excess risk and the explicit
  empirical and population risk bounds;
* :mod:`dpsample.bounds.warm_start`: the warm starts' public bounds ``psi`` (net,
  Gibbs, quasar-convex SGD) and the uniform deviation bound;
* :mod:`dpsample.bounds.stationarity`: Theorem 3.2's stationarity bound (seed 003)
  and the warm start's default failure probability.

All logarithms are natural.
"""

from __future__ import annotations

from dpsample.bounds.stationarity import (
    default_failure_prob,
    stationarity_abar,
    theorem_3_2_stationarity_bound,
)
from dpsample.bounds.theorem_5_8 import (
    Theorem58Bound,
    exponential_mechanism_excess_risk,
    net_size_bound,
    theorem_5_8_empirical_risk_bound,
    theorem_5_8_inverse_temperature,
    theorem_5_8_radius,
    theorem_5_8_risk_bound,
)
from dpsample.bounds.warm_start import (
    GibbsWarmStartBound,
    QuasarWarmStartBound,
    UniformDeviationBound,
    WarmStartBound,
    gibbs_warm_start_bound,
    net_warm_start_bound,
    quasar_sgd_expected_gap,
    quasar_sgd_warm_start_bound,
    uniform_deviation_bound,
)

__all__ = [
    "GibbsWarmStartBound",
    "default_failure_prob",
    "QuasarWarmStartBound",
    "Theorem58Bound",
    "UniformDeviationBound",
    "WarmStartBound",
    "gibbs_warm_start_bound",
    "net_warm_start_bound",
    "quasar_sgd_expected_gap",
    "quasar_sgd_warm_start_bound",
    "uniform_deviation_bound",
    "exponential_mechanism_excess_risk",
    "net_size_bound",
    "theorem_5_8_empirical_risk_bound",
    "theorem_5_8_inverse_temperature",
    "theorem_5_8_radius",
    "theorem_5_8_risk_bound",
    "stationarity_abar",
    "theorem_3_2_stationarity_bound",
]
