"""dpsample: differentially private learning with non-convex losses in JAX.

Importing dpsample changes no global setting. Privacy guarantees here depend on
float64 numerics (log-space exponential mechanisms, noise calibration, rounding
margins), so every public entry point that computes runs inside JAX's thread-local
``jax.enable_x64(True)`` context (:mod:`dpsample._src.precision`) and returns float64
arrays, whatever the caller's ``jax_enable_x64``. See ``docs/sharp_edges.md``.
"""

from dpsample import (
    bounds,
    cost,
    datasets,
    errors,
    finders,
    losses,
    mechanisms,
    nets,
    pipelines,
    privacy,
    progress,
    registry,
    samplers,
)
from dpsample.base import PrivateAlgorithm
from dpsample.domains import Ball, Unconstrained
from dpsample.pipelines import should_warm_start, warm_start
from dpsample.plan import Budget, Cost, Param, Plan
from dpsample.privacy import PrivacyGuarantee, PrivateResult
from dpsample.problem import Problem, ProblemSpec

__version__ = "0.1.0"

__all__ = [
    "Ball",
    "Budget",
    "Cost",
    "Param",
    "Plan",
    "PrivacyGuarantee",
    "PrivateAlgorithm",
    "PrivateResult",
    "Problem",
    "ProblemSpec",
    "Unconstrained",
    "bounds",
    "cost",
    "datasets",
    "errors",
    "finders",
    "losses",
    "mechanisms",
    "nets",
    "pipelines",
    "privacy",
    "progress",
    "registry",
    "samplers",
    "should_warm_start",
    "warm_start",
]
