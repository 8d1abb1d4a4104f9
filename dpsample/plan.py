"""The public half of the algorithm contract: budgets, parameters, costs and plans.

Every private algorithm in dpsample runs in two phases (``docs/architecture.md``)::

    plan = algorithm.plan(spec, budget, **options)   # host, public inputs only
    print(plan)                                      # the whole privacy story
    result = algorithm.run(rng_key, plan, data)      # private, jitted

This module holds what the first phase produces. A :class:`Plan` is frozen and
printable: the resolved parameters, each with its :class:`Param` source (the user, a
theorem, a documented default rule, the accountant's calibration, a pipeline), the
:class:`~dpsample.privacy.PrivacyGuarantee` the run will have, the requested
:class:`Budget` beside what the guarantee spends, the :class:`Cost` (per-example
evaluations, and an estimated wall time from a short calibration on this machine),
for samplers the public warm-start bound, and for pipelines the plans of their
stages. Nothing here ever sees private data.
"""

from __future__ import annotations

import dataclasses
import math
import types
from collections.abc import Iterator, Mapping
from typing import Any

from dpsample import cost as cost_model
from dpsample._src import precision, validation
from dpsample.privacy.guarantee import PrivacyGuarantee

__all__ = [
    "SOURCES",
    "Budget",
    "Cost",
    "Param",
    "Plan",
]

#: Where a planned parameter's value comes from.
SOURCES: dict[str, str] = {
    "user": "given by the caller",
    "theorem": "set by the theorem the algorithm implements",
    "default": "a documented default rule (no theorem fixes it)",
    "calibrated": "the smallest value the accountant certifies for the budget",
    "derived": "computed from other planned parameters",
    "pipeline": "set by the pipeline that composes this stage",
}


@dataclasses.dataclass(frozen=True)
class Budget:
    """A privacy budget ``(epsilon, delta)`` and an optional compute budget.

    Args:
        epsilon: Target epsilon, ``> 0`` and finite.
        delta: Target delta in ``[0, 1)`` (``0`` asks for pure DP).
        max_evaluations: Cap on per-example evaluations (losses, gradients and
            Hessian-vector products each count one); ``None`` for no cap. An
            algorithm whose theorem schedule exceeds the cap shrinks it by its
            documented public rule, and its plan reports the bound of what runs.

    Raises:
        ValueError: On an invalid epsilon, delta or cap.

    Examples:
        >>> from dpsample.plan import Budget
        >>> Budget(1.0, 1e-5)
        Budget(epsilon=1.0, delta=1e-05, max_evaluations=None)
        >>> Budget(0.0, 1e-5)
        Traceback (most recent call last):
        ...
        ValueError: Expected epsilon=0.0 > 0
    """

    epsilon: float
    delta: float
    max_evaluations: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "epsilon", validation.positive("epsilon", self.epsilon)
        )
        delta = validation.probability("delta", self.delta)
        if delta >= 1.0:
            raise ValueError(f"Expected delta={delta!r} < 1")
        object.__setattr__(self, "delta", delta)
        if self.max_evaluations is not None:
            cap = validation.positive_int("max_evaluations", self.max_evaluations)
            object.__setattr__(self, "max_evaluations", cap)

    def split(
        self, fraction: float, delta_fraction: float | None = None
    ) -> tuple[Budget, Budget]:
        """Two budgets whose basic composition is this one.

        ``fraction`` of epsilon and ``delta_fraction`` (default ``fraction``) of
        delta go to the first, the rest to the second; the compute cap is split
        like epsilon. A ``delta_fraction`` of ``0`` gives the first a pure budget.
        Pipelines that account their stages more tightly than basic composition
        re-plan the second stage against the composed total.

        Examples:
            >>> from dpsample.plan import Budget
            >>> a, b = Budget(2.0, 1e-5, max_evaluations=10).split(0.25, 0.5)
            >>> a.epsilon, b.epsilon, a.delta, a.max_evaluations, b.max_evaluations
            (0.5, 1.5, 5e-06, 2, 8)
        """
        f = validation.positive("fraction", fraction)
        if not f < 1.0:
            raise ValueError(f"Expected fraction={f!r} < 1")
        fd = (
            f
            if delta_fraction is None
            else validation.probability("delta_fraction", delta_fraction)
        )
        if not fd < 1.0 and self.delta > 0:
            raise ValueError(f"Expected delta_fraction={fd!r} < 1")
        caps: tuple[int | None, int | None] = (None, None)
        if self.max_evaluations is not None:
            first = max(1, int(self.max_evaluations * f))
            caps = (first, max(1, self.max_evaluations - first))
        return (
            Budget(self.epsilon * f, self.delta * fd, caps[0]),
            Budget(self.epsilon * (1.0 - f), self.delta * (1.0 - fd), caps[1]),
        )


@dataclasses.dataclass(frozen=True)
class Param:
    """A planned parameter: its value, where it comes from, and why.

    Attributes:
        value: The resolved value.
        source: A key of :data:`SOURCES` (``"user"``, ``"theorem"``, ``"default"``,
            ``"calibrated"``, ``"derived"`` or ``"pipeline"``).
        note: The rule or theorem, e.g. ``"seed 002 Thm 3.4: T = 64 f/(eta a^2)"``.

    Examples:
        >>> from dpsample.plan import Param
        >>> Param(0.5, "theorem", "1/(2M)")
        Param(value=0.5, source='theorem', note='1/(2M)')
    """

    value: Any
    source: str
    note: str = ""

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise ValueError(
                f"Expected source in {tuple(SOURCES)}, got {self.source!r}"
            )


@dataclasses.dataclass(frozen=True)
class Cost:
    """The work a planned run does (public, fixed by the plan, never by the data).

    The threat model counts work done as observable, so these counts depend on
    public inputs only. :meth:`Plan.estimated_seconds` turns them into a forecast
    of the wall time on this machine (:mod:`dpsample.cost`).

    Attributes:
        gradient_evaluations: Per-example gradient evaluations.
        loss_evaluations: Per-example loss evaluations.
        hessian_vector_products: Per-example Hessian-vector products (a dense
            per-example Hessian counts ``d``).
        steps: Sequential steps (iterations of the run's loop).

    Examples:
        >>> from dpsample.plan import Cost
        >>> c = Cost(gradient_evaluations=10, steps=2) + Cost(loss_evaluations=5)
        >>> c.evaluations, c.steps
        (15, 2)
    """

    gradient_evaluations: int = 0
    loss_evaluations: int = 0
    hessian_vector_products: int = 0
    steps: int = 0

    @property
    def evaluations(self) -> int:
        """Total per-example evaluations (the quantity ``max_evaluations`` caps)."""
        return (
            self.gradient_evaluations
            + self.loss_evaluations
            + self.hessian_vector_products
        )

    def __add__(self, other: Cost) -> Cost:
        if not isinstance(other, Cost):
            return NotImplemented
        return Cost(
            self.gradient_evaluations + other.gradient_evaluations,
            self.loss_evaluations + other.loss_evaluations,
            self.hessian_vector_products + other.hessian_vector_products,
            self.steps + other.steps,
        )

    def describe(self) -> str:
        """One line: the counts."""
        parts = [
            f"{v:,} {name}"
            for v, name in (
                (self.gradient_evaluations, "gradient evaluations"),
                (self.loss_evaluations, "loss evaluations"),
                (self.hessian_vector_products, "Hessian-vector products"),
                (self.steps, "steps"),
            )
            if v
        ]
        return ", ".join(parts) if parts else "no per-example evaluations"


def _seconds(s: float) -> str:
    if s < 1.0:
        return f"{s * 1e3:.0f} ms"
    if s < 120.0:
        return f"{s:.1f} s"
    if s < 7200.0:
        return f"{s / 60:.1f} min"
    return f"{s / 3600:.1f} h"


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    shape = getattr(value, "shape", None)
    if isinstance(shape, tuple) and len(shape) == 1 and hasattr(value, "tolist"):
        value = value.tolist()  # a vector prints as a list of its entries
        if len(value) <= 6:
            return "[" + ", ".join(_fmt(v) for v in value) + "]"
    if isinstance(value, tuple | list) and len(value) > 6:
        return f"<{type(value).__name__} of {len(value)}>"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


@dataclasses.dataclass(frozen=True, eq=False)
class Plan:
    """What a private run will do, decided in public before it touches the data.

    Build one with an algorithm's ``plan(spec, budget, **options)``; read it with
    ``plan["name"]`` (a parameter's value), :attr:`params` (values with sources),
    :attr:`guarantee`, :attr:`cost`, :meth:`spent_epsilon`, ``str(plan)`` or
    :meth:`to_dict`. It is frozen: a pipeline that changes a stage makes a new plan.

    Attributes:
        algorithm: The registry name of the algorithm.
        spec: The public problem description the plan was made for
            (:class:`~dpsample.problem.ProblemSpec`).
        budget: The requested :class:`Budget`.
        params: Name -> :class:`Param`, in a read-only mapping.
        guarantee: The :class:`~dpsample.privacy.PrivacyGuarantee` the run will have.
        cost: The :class:`Cost` of the run.
        warm_start: For samplers, the public bound on the excess risk of the
            released point (:class:`~dpsample.bounds.WarmStartBound` or a sibling),
            else ``None``.
        stages: For pipelines, ``((name, plan), ...)`` of the stages.
        notes: Public caveats a reader should see (e.g. a schedule the theorem
            does not prove), also carried by the guarantee's assumptions.
        internal: Algorithm-private resolved state the run needs (static
            structures, oracle settings); public, but not part of the printout.
    """

    algorithm: str
    spec: Any
    budget: Budget
    params: Mapping[str, Param]
    guarantee: PrivacyGuarantee
    cost: Cost = Cost()
    warm_start: Any = None
    stages: tuple[tuple[str, Plan], ...] = ()
    notes: tuple[str, ...] = ()
    internal: Any = None

    def __post_init__(self) -> None:
        params = dict(self.params)
        for name, p in params.items():
            if not isinstance(p, Param):
                raise TypeError(f"Expected params[{name!r}] to be a Param, got {p!r}")
        object.__setattr__(self, "params", types.MappingProxyType(params))
        object.__setattr__(self, "notes", tuple(self.notes))
        object.__setattr__(self, "stages", tuple(self.stages))

    # ------------------------------------------------------------------ reading
    def __getitem__(self, name: str) -> Any:
        return self.params[name].value

    def __contains__(self, name: object) -> bool:
        return name in self.params

    def __iter__(self) -> Iterator[str]:
        return iter(self.params)

    def get(self, name: str, default: Any = None) -> Any:
        """A parameter's value, or ``default`` when the plan has no such parameter."""
        return self.params[name].value if name in self.params else default

    def source(self, name: str) -> str:
        """Where parameter ``name`` comes from (a key of :data:`SOURCES`)."""
        return self.params[name].source

    def estimated_seconds(self, *, compiled: bool = False) -> float:
        """Forecast wall time of the private run on this machine.

        A short timing of the loss, cached per loss, plus the first run's
        compilation (:mod:`dpsample.cost`); a pipeline adds its stages'.

        Args:
            compiled: Leave compilation out (a repeat run in the same process).
        """
        if self.stages:
            own = cost_model.estimate_seconds(
                self.spec, Cost(), self.algorithm, compiled=compiled
            )
            return own + sum(
                plan.estimated_seconds(compiled=compiled) for _, plan in self.stages
            )
        return cost_model.estimate_seconds(
            self.spec, self.cost, self.algorithm, compiled=compiled
        )

    def spent_epsilon(self) -> float:
        """The guarantee's epsilon at the budget's delta (what the run spends)."""
        return self.guarantee.epsilon(self.budget.delta)

    def stage(self, name: str) -> Plan:
        """The plan of stage ``name`` (pipelines)."""
        for stage_name, plan in self.stages:
            if stage_name == name:
                return plan
        raise KeyError(f"no stage {name!r}; stages: {[s for s, _ in self.stages]}")

    def replace(self, **changes: Any) -> Plan:
        """A copy with some fields replaced (``dataclasses.replace``)."""
        return dataclasses.replace(self, **changes)

    def with_params(self, **values: Param) -> Plan:
        """A copy with some parameters added or replaced."""
        params = dict(self.params)
        params.update(values)
        return dataclasses.replace(self, params=params)

    # ------------------------------------------------------------------ printing
    def to_dict(self, *, estimate: bool = True) -> dict[str, Any]:
        """A JSON-friendly description (values as given; see ``config.jsonable``).

        Args:
            estimate: Include the forecast wall time (``cost.estimated_seconds``,
                a short timing on this machine).
        """
        delta = self.budget.delta
        spent = self.spent_epsilon()
        out: dict[str, Any] = {
            "algorithm": self.algorithm,
            "budget": dataclasses.asdict(self.budget),
            "guarantee": {
                "epsilon": spent,
                "delta": delta,
                "requested_epsilon": self.budget.epsilon,
                "fraction_spent": spent / self.budget.epsilon,
                "assumptions": list(getattr(self.guarantee, "assumptions", ())),
                "conditional": bool(getattr(self.guarantee, "assumptions", ())),
                "relation": self.guarantee.relation.name,
            },
            "params": {
                k: {"value": p.value, "source": p.source, "note": p.note}
                for k, p in self.params.items()
            },
            "cost": {
                **dataclasses.asdict(self.cost),
                "evaluations": self.cost.evaluations,
            },
        }
        if estimate:
            out["cost"]["estimated_seconds"] = self.estimated_seconds()
        if self.warm_start is not None:
            ws = self.warm_start
            out["warm_start"] = ws._asdict() if hasattr(ws, "_asdict") else ws
        if self.notes:
            out["notes"] = list(self.notes)
        if self.stages:
            out["stages"] = {
                name: plan.to_dict(estimate=estimate) for name, plan in self.stages
            }
        return out

    def describe(self, indent: str = "") -> str:
        """The multi-line printout of ``str(plan)``."""
        b, g = self.budget, self.guarantee
        spent = self.spent_epsilon()
        frac = spent / b.epsilon if b.epsilon else math.nan
        lines = [f"{indent}plan: {self.algorithm}"]
        spec_line = getattr(self.spec, "describe", None)
        if callable(spec_line):
            lines.append(f"{indent}  problem: {spec_line()}")
        cap = "" if b.max_evaluations is None else f", max {b.max_evaluations:,} evals"
        lines.append(
            f"{indent}  requested: epsilon={b.epsilon:g}, delta={b.delta:g}{cap}"
        )
        assumptions = getattr(g, "assumptions", ())
        lines.append(
            f"{indent}  guarantee: epsilon={spent:.6g} at delta={b.delta:g} "
            f"({100 * frac:.1f}% of the requested epsilon), {g.relation.name}"
            + (", conditional" if assumptions else "")
        )
        for a in assumptions:
            lines.append(f"{indent}    assuming: {a}")
        if self.params:
            lines.append(f"{indent}  parameters:")
            width = max(len(k) for k in self.params)
            for k, p in self.params.items():
                note = f"  {p.note}" if p.note else ""
                lines.append(
                    f"{indent}    {k:<{width}} = {_fmt(p.value):<14} [{p.source}]{note}"
                )
        lines.append(
            f"{indent}  cost: {self.cost.describe()} (about "
            f"{_seconds(self.estimated_seconds())} on this machine)"
        )
        if self.warm_start is not None:
            ws = self.warm_start
            psi = getattr(ws, "psi", None)
            zeta = getattr(ws, "failure_prob", None)
            if psi is not None:
                lines.append(
                    f"{indent}  warm-start bound: psi={psi:.6g} with failure "
                    f"probability {zeta:.3g}"
                )
        for note in self.notes:
            lines.append(f"{indent}  note: {note}")
        for name, stage in self.stages:
            lines.append(f"{indent}  stage {name!r}:")
            lines.append(stage.describe(indent + "    "))
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.describe()

    def __repr__(self) -> str:
        return (
            f"Plan({self.algorithm}, epsilon={self.spent_epsilon():.4g}/"
            f"{self.budget.epsilon:g}, delta={self.budget.delta:g}, "
            f"evaluations={self.cost.evaluations:,})"
        )


precision.scope_public(globals())
