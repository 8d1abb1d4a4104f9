"""dpsample: differentially private learning with non-convex losses in JAX.

Importing dpsample changes no global setting. Privacy guarantees here depend on
float64 numerics (log-space exponential mechanisms, noise calibration, rounding
margins), so every public entry point that computes runs inside JAX's thread-local
``jax.enable_x64(True)`` context (:mod:`dpsample._src.precision`) and returns float64
arrays, whatever the caller's ``jax_enable_x64``. See ``docs/sharp_edges.md``.

``import dpsample`` is cheap: the subpackages and the names below are imported on
first use (PEP 562), so ``dpsample.finders``, ``from dpsample import Problem`` and
``dir(dpsample)`` work as if imported eagerly, while the command line's ``--help``
pays for neither JAX nor dp-accounting.

Examples:
    >>> import dpsample
    >>> dpsample.registry.get("dp_sgd").kind
    'finder'
    >>> from dpsample import Ball
    >>> Ball(2.0, dim=3).radius
    2.0
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: Subpackages and modules reachable as ``dpsample.<name>`` (imported on first use).
_SUBMODULES = (
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
)

#: Other modules reachable as ``dpsample.<name>`` (imported on first use), outside
#: ``__all__`` as before.
_MODULES = (
    "base",
    "cli",
    "config",
    "domains",
    "models",
    "plan",
    "problem",
    "types",
    "validation",
)

#: Names re-exported here, and the module each is defined in.
_NAMES = {
    "Ball": "dpsample.domains",
    "Budget": "dpsample.plan",
    "Cost": "dpsample.plan",
    "Param": "dpsample.plan",
    "Plan": "dpsample.plan",
    "PrivacyGuarantee": "dpsample.privacy",
    "PrivateAlgorithm": "dpsample.base",
    "PrivateResult": "dpsample.privacy",
    "Problem": "dpsample.problem",
    "ProblemSpec": "dpsample.problem",
    "Unconstrained": "dpsample.domains",
    "should_warm_start": "dpsample.pipelines",
    "warm_start": "dpsample.pipelines.warm_start",  # the function (issue 28)
}

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


def __getattr__(name: str) -> Any:
    """Import a subpackage or re-exported name on first access (PEP 562)."""
    if name in _SUBMODULES or name in _MODULES:
        return importlib.import_module(f"{__name__}.{name}")
    if name in _NAMES:
        value = getattr(importlib.import_module(_NAMES[name]), name)
        globals()[name] = value  # later lookups skip this function
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if TYPE_CHECKING:  # what static analysers and IDEs see
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
    from dpsample.pipelines import should_warm_start
    from dpsample.pipelines.warm_start import warm_start  # type: ignore[no-redef]
    from dpsample.plan import Budget, Cost, Param, Plan
    from dpsample.privacy import PrivacyGuarantee, PrivateResult
    from dpsample.problem import Problem, ProblemSpec
