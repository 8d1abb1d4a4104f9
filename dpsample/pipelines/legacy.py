"""TRANSITIONAL (issue 12): finders not yet converted, as stage objects of a pipeline.

:func:`create` returns the registered algorithm of that name, or, for the finders
whose objects are still being converted on other branches (``dp_spider``,
``spider_sosp``), a :class:`LegacyFinder` that plans in public what it can (the
option checks the old pipeline made before any private computation, the budget
envelope as the stage's guarantee) and runs the old function, whose result carries
the guarantee its accountant certifies (at most the envelope). Delete this module
once both names are registered (``registry.create`` then serves every name).
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Mapping
from typing import Any, ClassVar

from dpsample import registry
from dpsample._src import precision, validation
from dpsample.base import PrivateAlgorithm
from dpsample.bounds import theorem_3_2_stationarity_bound
from dpsample.domains import Ball
from dpsample.plan import Budget, Param, Plan
from dpsample.privacy import PrivacyGuarantee, PrivateResult
from dpsample.problem import Problem, ProblemSpec
from dpsample.types import PRNGKey

__all__ = ["LegacyDPSpider", "LegacyFinder", "LegacySpiderSOSP", "create", "names"]

_RESERVED = ("rng_key", "problem", "epsilon", "delta")
_INTS = ("num_steps", "phase_length", "anchor_batch_size", "variation_batch_size")
_FLOATS = ("learning_rate", "clip_norm")


class LegacyFinder(PrivateAlgorithm):
    """A finder function as a stage object (transitional; see the module docstring).

    The plan's guarantee is the budget's envelope ``(epsilon, delta)``; the run
    returns the function's result, whose guarantee is the accountant's (at most
    the envelope). The options are the function's keywords.
    """

    kind = "finder"
    function: ClassVar[str] = ""
    smoothness_for: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def _function(cls) -> Any:
        module, _, attr = cls.function.partition(":")
        return getattr(importlib.import_module(module), attr)

    @classmethod
    def option_parameters(cls) -> dict[str, inspect.Parameter]:
        """The function's keyword options."""
        params = inspect.signature(cls._function()).parameters
        return {k: p for k, p in params.items() if k not in _RESERVED}

    def _plan(self, spec: ProblemSpec, budget: Budget, **options: Any) -> Plan:
        epsilon, delta = validation.check_privacy(budget.epsilon, budget.delta)
        n = spec.n
        for key in _INTS:
            if options.get(key) is not None:
                options[key] = validation.positive_int(key, options[key])
                if key.endswith("batch_size") and options[key] > n:
                    raise ValueError(f"Expected {key}={options[key]} <= n={n}")
        for key in _FLOATS:
            if options.get(key) is not None:
                options[key] = validation.positive(key, options[key])
        if "output" in options and options["output"] not in ("random", "last"):
            raise ValueError(f"Expected output in ('random', 'last'), got {options}")
        if "project" in options:
            options["project"] = spec.check_projection(
                options["project"], clipped=bool(options.get("clip")), name=self.name
            )
        if any(options.get(k) is None for k in self.smoothness_for):
            validation.require_constant(
                "smoothness", spec.smoothness, needed_for=f"{self.name}'s defaults"
            )
        self._check(spec)
        guarantee = PrivacyGuarantee.approx(epsilon, delta, relation=spec.relation)
        params = {
            "x0": Param(options.pop("x0", None), "default"),
            "initial_gap": Param(options.pop("initial_gap", None), "user"),
            "options": Param(options, "user"),
        }
        return Plan(
            algorithm=self.name,
            spec=spec,
            budget=budget,
            params=params,
            guarantee=guarantee,
            notes=("transitional: the run's guarantee is its accountant's",),
        )

    def _check(self, spec: ProblemSpec) -> None:
        """Algorithm-specific public checks."""

    def _run(self, rng_key: PRNGKey, plan: Plan, problem: Problem) -> PrivateResult:
        result: PrivateResult = self._function()(
            rng_key,
            problem,
            epsilon=plan.budget.epsilon,
            delta=plan.budget.delta,
            x0=plan["x0"],
            initial_gap=plan["initial_gap"],
            **plan["options"],
        )
        return result


class LegacyDPSpider(LegacyFinder):
    """DP-SPIDER (transitional stage object)."""

    name = "dp_spider"
    function = "dpsample.finders.dp_spider:dp_spider"
    smoothness_for = ("num_steps", "phase_length", "learning_rate")
    stationarity_rate = staticmethod(theorem_3_2_stationarity_bound)


class LegacySpiderSOSP(LegacyFinder):
    """Stochastic Spider + AboveThreshold (transitional stage object)."""

    name = "spider_sosp"
    function = "dpsample.finders.spider_sosp:spider_sosp"
    pipeline_variant_options: ClassVar[Mapping[str, dict[str, str]]] = {
        "erm": {"variant": "empirical"},
        "population": {"variant": "population"},
    }

    def _check(self, spec: ProblemSpec) -> None:
        if isinstance(spec.domain, Ball):
            raise ValueError(
                "finder='spider_sosp' takes unconstrained steps (seed 000 E20): "
                f"declare the Problem on Unconstrained({spec.dim}) with constants "
                "valid on R^d, and pass the warm start's ball as sampler_domain"
            )
        for name in ("smoothness", "hessian_lipschitz"):
            validation.require_constant(
                name, getattr(spec, name), needed_for="spider_sosp's plan"
            )


_LEGACY = {"dp_spider": LegacyDPSpider, "spider_sosp": LegacySpiderSOSP}


def names(kind: str) -> tuple[str, ...]:
    """The transitional stage names of ``kind`` not (yet) registered."""
    return tuple(n for n in _LEGACY if kind == "finder" and n not in registry.names())


def create(name: str, kind: str) -> PrivateAlgorithm:
    """The registered algorithm ``name``, or a transitional stage object."""
    if name in _LEGACY and name not in registry.names(kind):
        return _LEGACY[name]()
    return registry.create(name, kind)


precision.scope_public(globals())
