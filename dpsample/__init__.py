"""dpsample: differentially private learning with non-convex losses in JAX.

Importing dpsample turns on ``jax_enable_x64``: privacy guarantees here depend on
float64 numerics (log-space exponential mechanisms, noise calibration), and mixing
float32 into a private computation is a silent correctness hazard. See
``docs/sharp_edges.md``.
"""

import jax

jax.config.update("jax_enable_x64", True)

from dpsample import (  # noqa: E402
    bounds,
    datasets,
    errors,
    finders,
    losses,
    mechanisms,
    nets,
    pipelines,
    privacy,
    samplers,
)
from dpsample.domains import Ball, Unconstrained  # noqa: E402
from dpsample.pipelines import should_warm_start, warm_start  # noqa: E402
from dpsample.privacy import PrivacyGuarantee, PrivateResult  # noqa: E402
from dpsample.problem import Problem  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    "Ball",
    "PrivacyGuarantee",
    "PrivateResult",
    "Problem",
    "Unconstrained",
    "bounds",
    "datasets",
    "errors",
    "finders",
    "losses",
    "mechanisms",
    "nets",
    "pipelines",
    "privacy",
    "samplers",
    "should_warm_start",
    "warm_start",
]
