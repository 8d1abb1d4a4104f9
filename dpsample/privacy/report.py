"""`PrivacyReport`: a guarantee laid out for people (text and HTML).

``print(result.privacy)``, ``result.report()`` and the ``PRIVACY`` block of the
``dpsample`` command are one table, made here: the relation, each stage of a
pipeline with its own epsilon, the mechanisms that ran (kind x count), the total
with every valid accounting route, the budget and the verdict with the assumptions
the guarantee rests on, and the ledger of the stages. ``_repr_html_`` gives the same
table to notebooks.

A guarantee knows its budget and stages when a plan made it: ``PrivateAlgorithm.plan``
attaches a :class:`ReportContext` (the plan's budget, each stage's guarantee and
budget), which :meth:`~dpsample.privacy.PrivacyGuarantee.assuming` keeps and the
combinators (``compose``, ``repeat``, ``with_tv_slack``) drop: a composition is a
new guarantee with no budget of its own. Without a context the report is read at
the delta given, or, for ``print``, at :data:`DISPLAY_DELTA` (and says so).

The report is also a read-only mapping of what ``PrivacyGuarantee.report(delta)``
returned before it was an object (``delta``, ``epsilon``, ``tightest``, ``routes``,
``tv_slack``, ``relation``, ``components``, ``assumptions``, ``conditional``);
:meth:`PrivacyReport.as_dict` gives it as a dict.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from dpsample._src import precision, validation

if TYPE_CHECKING:
    from dpsample.privacy.guarantee import PrivacyGuarantee

__all__ = [
    "DISPLAY_DELTA",
    "PrivacyReport",
    "ReportContext",
    "StageRecord",
    "budget_verdict",
    "ledger_name",
    "within_budget",
]

#: The delta ``print`` reads a guarantee at when no plan gave it a budget.
DISPLAY_DELTA = 1e-5


class StageRecord(NamedTuple):
    """One stage of a pipeline as its plan charged it.

    Attributes:
        name: The stage's name in the pipeline (``"sampler"``).
        algorithm: The stage's registry name (``"net"``).
        guarantee: The stage's guarantee.
        epsilon: The stage's budget epsilon.
        delta: The stage's budget delta.
    """

    name: str
    algorithm: str
    guarantee: Any
    epsilon: float
    delta: float


class ReportContext(NamedTuple):
    """What a plan tells a report about its guarantee (all public).

    Attributes:
        algorithm: The registry name of the planned algorithm.
        epsilon: The budget's epsilon.
        delta: The budget's delta (the report reads the guarantee there).
        stages: A pipeline's stages, in the order they run (empty otherwise).
    """

    algorithm: str
    epsilon: float
    delta: float
    stages: tuple[StageRecord, ...] = ()


def within_budget(epsilon: float, budget_epsilon: float) -> bool:
    """Whether ``epsilon`` is within ``budget_epsilon`` (relative slack 1e-9).

    Examples:
        >>> from dpsample.privacy.report import within_budget
        >>> within_budget(1.0 + 1e-12, 1.0), within_budget(1.01, 1.0)
        (True, False)
    """
    return epsilon <= budget_epsilon * (1 + 1e-9)


def budget_verdict(within: bool, assumptions: Sequence[str]) -> str:
    """The report's one-line budget verdict, conditional where the guarantee is.

    Args:
        within: whether the guarantee's epsilon at the budget's delta is within
            the budget's epsilon.
        assumptions: the guarantee's assumptions
            (:attr:`~dpsample.privacy.PrivacyGuarantee.assumptions`).

    Returns:
        ``"within budget"``, ``"within budget, conditional, assuming: a; b"`` (a
        guarantee with assumptions is *conditional*) or ``"over budget"``.

    Examples:
        >>> from dpsample.privacy.report import budget_verdict
        >>> budget_verdict(True, [])
        'within budget'
        >>> budget_verdict(True, ["the declared bound holds"])
        'within budget, conditional, assuming: the declared bound holds'
    """
    if not within:
        return "over budget"
    if not assumptions:
        return "within budget"
    return "within budget, conditional, assuming: " + "; ".join(assumptions)


def ledger_name(pipeline: str, stage: str, algorithm: str) -> str:
    """The name a pipeline's stage is charged under (``warm_start/sampler:net``).

    Examples:
        >>> from dpsample.privacy.report import ledger_name
        >>> ledger_name("warm_start", "sampler", "net")
        'warm_start/sampler:net'
    """
    return f"{pipeline}/{stage}:{algorithm}"


# ------------------------------------------------------------------ mechanisms
def _number(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _short(component: Any) -> tuple[str, str]:
    """``(kind, one-line description)`` of a component."""
    if component.kind != "event":
        text = component.describe()
        return text.split("(")[0], text
    event = component.event
    kind = type(event).__name__.removesuffix("DpEvent")
    fields = getattr(type(event), "__attrs_attrs__", None)
    if fields is None:
        return kind, repr(event)
    parts = []
    for field in fields:
        value = getattr(event, field.name)
        shown = (
            _number(value)
            if isinstance(value, int | float) and not isinstance(value, bool)
            else repr(value)
        )
        parts.append(f"{field.name}={shown}")
    if component.unit_sensitivity:
        parts.append("noise over the full sensitivity")
    return kind, f"{kind}({', '.join(parts)})"


def mechanisms(guarantee: PrivacyGuarantee) -> list[str]:
    """The components as ``kind x count`` lines, one per kind.

    A kind with one setting shows its parameters; several settings of one kind are
    summarised (``TruncatedSubsampledGaussian x1335 (3 settings)``), so a long
    schedule is one line, not one per step.
    """
    groups: dict[str, list[tuple[str, int]]] = {}
    for component, count in guarantee.components:
        kind, text = _short(component)
        groups.setdefault(kind, []).append((text, count))
    out = []
    for kind, items in groups.items():
        total = sum(k for _, k in items)
        if len(items) == 1:
            out.append(f"{items[0][0]} x{total}")
        else:
            out.append(f"{kind} x{total} ({len(items)} settings)")
    return out


# --------------------------------------------------------------------- report
class PrivacyReport(Mapping[str, Any]):
    """A guarantee read at one delta, laid out as the CLI prints it.

    Made by :meth:`PrivacyGuarantee.report
    <dpsample.privacy.PrivacyGuarantee.report>` and
    :meth:`PrivateResult.report <dpsample.privacy.PrivateResult.report>`;
    ``str(report)`` is the table, ``report._repr_html_()`` its HTML, and the
    report is a read-only mapping of :meth:`as_dict`.

    Args:
        guarantee: The guarantee.
        delta: The delta to read it at (default: its plan's budget delta; without
            a plan, :data:`DISPLAY_DELTA`, said in the table).

    Examples:
        >>> from dpsample.privacy import PrivacyGuarantee
        >>> r = PrivacyGuarantee.exponential_mechanism(0.1).repeat(100).report(1e-5)
        >>> r["tightest"], round(r["epsilon"], 2)
        ('rdp', 2.17)
        >>> print(r)  # doctest: +NORMALIZE_WHITESPACE
        PRIVACY (REPLACE_ONE neighbours)
          mechanisms  exponential_mechanism(epsilon=0.1) x100
          TOTAL    epsilon = 2.16572 at delta = 1e-05 (tightest route: rdp;
          routes: pure 10, rdp 2.16572, pld 4.30679, zcdp 2.52426)
    """

    def __init__(self, guarantee: PrivacyGuarantee, delta: float | None = None):
        self.guarantee = guarantee
        self.context: ReportContext | None = getattr(guarantee, "context", None)
        self.assumed_delta = delta is None and self.context is None
        if delta is None:
            delta = DISPLAY_DELTA if self.context is None else self.context.delta
        self.delta = validation.probability("delta", delta)
        g = guarantee
        routes = g._exact_epsilons(self.delta)  # noqa: SLF001 (one module's pair)
        tightest = min(routes, key=lambda r: routes[r]) if routes else None
        self._dict = {
            "delta": self.delta,
            "epsilon": g.epsilon(self.delta),
            "tightest": tightest if g.tv_slack == 0 else "tv_slack",
            "routes": routes,
            "tv_slack": g.tv_slack,
            "relation": g.relation.name,
            "components": [(c.describe(), k) for c, k in g.components],
            "assumptions": list(g.assumptions),
            "conditional": g.conditional,
        }

    # ---------------------------------------------------------------- mapping
    def __getitem__(self, key: str) -> Any:
        return self._dict[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._dict)

    def __len__(self) -> int:
        return len(self._dict)

    def as_dict(self) -> dict[str, Any]:
        """The report as a dict (a copy): every route's epsilon, the tightest, ...

        Keys: ``delta``, ``epsilon``, ``tightest``, ``routes``, ``tv_slack``,
        ``relation``, ``components``, ``assumptions`` (a list, empty for an
        unconditional guarantee) and ``conditional``.
        """
        return dict(self._dict)

    # ------------------------------------------------------------------ parts
    def _stage_line(self, stage: StageRecord) -> str:
        g = stage.guarantee
        pure = g.epsilon(0.0)
        if stage.delta == 0.0 and math.isfinite(pure):
            return f"{pure:.6g}-DP (pure)"
        summary = PrivacyReport(g, stage.delta)
        return (
            f"epsilon = {summary['epsilon']:.6g} at delta = {stage.delta:g} "
            f"(route {summary['tightest']})"
        )

    def _total(self) -> str:
        d = self._dict
        routes = ", ".join(f"{k} {v:.6g}" for k, v in d["routes"].items())
        return (
            f"epsilon = {d['epsilon']:.6g} at delta = {self.delta:g} (tightest "
            f"route: {d['tightest']}; routes: {routes}"
            + ("; conditional)" if d["assumptions"] else ")")
        )

    def _verdict(self) -> list[str]:
        ctx = self.context
        if ctx is None:
            return []
        within = within_budget(self._dict["epsilon"], ctx.epsilon)
        assumptions = self._dict["assumptions"]
        if within and assumptions:
            return ["within budget, conditional, assuming:"] + [
                f"  - {a}" for a in assumptions
            ]
        return [budget_verdict(within, assumptions)]

    def _basic(self) -> tuple[float, float] | None:
        """Basic composition of the stages at their own deltas (sum, sum)."""
        ctx = self.context
        if ctx is None or not ctx.stages:
            return None
        eps = math.fsum(s.guarantee.epsilon(s.delta) for s in ctx.stages)
        return eps, math.fsum(s.delta for s in ctx.stages)

    def _ledger(self) -> list[tuple[str, float]]:
        ctx = self.context
        if ctx is None or not ctx.stages:
            return []
        return [
            (
                ledger_name(ctx.algorithm, s.name, s.algorithm),
                s.guarantee.epsilon(ctx.delta),
            )
            for s in ctx.stages
        ]

    def _spent(self) -> float:
        """The ledger's spent epsilon: the stages composed, at the budget's delta."""
        ctx = self.context
        assert ctx is not None and ctx.stages  # only called with a ledger
        total = ctx.stages[0].guarantee
        for s in ctx.stages[1:]:
            total = total.compose(s.guarantee)
        return total.epsilon(ctx.delta)

    # ------------------------------------------------------------------ text
    def lines(self) -> list[str]:
        """The table's lines (what ``str`` joins)."""
        d, ctx = self._dict, self.context
        out = [f"PRIVACY ({d['relation']} neighbours)"]
        if ctx is not None:
            width = max((len(s.name) for s in ctx.stages), default=0)
            for s in ctx.stages:
                out.append(
                    f"  stage {s.name:<{width}}  {s.algorithm}: {self._stage_line(s)}"
                )
        for i, line in enumerate(mechanisms(self.guarantee)):
            out.append(("  mechanisms  " if i == 0 else "              ") + line)
        if self.guarantee.tv_slack:
            out.append(
                f"  TV slack    tau = {self.guarantee.tv_slack:g} (adds "
                "(1 + e^epsilon) tau to delta)"
            )
        out.append(f"  TOTAL    {self._total()}")
        pad = "           "
        if ctx is None:
            if self.assumed_delta:
                out.append(
                    f"{pad}(no plan gave this guarantee a budget: read at delta "
                    f"= {self.delta:g}; report(delta) reads another)"
                )
            if d["assumptions"]:
                out.append(f"{pad}conditional, assuming:")
                out += [f"{pad}  - {a}" for a in d["assumptions"]]
        else:
            budget = f"{pad}budget ({ctx.epsilon:g}, {ctx.delta:g})"
            basic = self._basic()
            if basic is not None:
                budget += (
                    f"; basic composition of the stages gives epsilon = "
                    f"{basic[0]:.6g} at delta = {basic[1]:g}"
                )
            out.append(budget)
            out += [f"{pad}{v}" for v in self._verdict()]
        ledger = self._ledger()
        if ledger:
            assert ctx is not None  # a ledger needs a plan's context
            out.append(
                f"  ledger   budget epsilon = {ctx.epsilon:g} at delta = "
                f"{ctx.delta:g}; each stage charged before it ran:"
            )
            for name, eps in ledger:
                out.append(f"             {name:<48} epsilon {eps:.6g}")
            out.append(f"             spent (composed) epsilon {self._spent():.6g}")
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())

    def __repr__(self) -> str:
        return (
            f"PrivacyReport(epsilon={self._dict['epsilon']:.6g}, delta="
            f"{self.delta:g}, tightest={self._dict['tightest']!r}, relation="
            f"{self._dict['relation']}"
            + (", conditional" if self._dict["conditional"] else "")
            + ")"
        )

    # ------------------------------------------------------------------ HTML
    def _repr_html_(self) -> str:
        """The table as HTML (notebooks render it)."""
        d, ctx = self._dict, self.context
        e = html.escape
        rows: list[tuple[str, str]] = []
        if ctx is not None:
            for s in ctx.stages:
                rows.append(
                    (f"stage {s.name}", f"{s.algorithm}: {self._stage_line(s)}")
                )
        rows += [("mechanisms", m) for m in mechanisms(self.guarantee)]
        if self.guarantee.tv_slack:
            rows.append(("TV slack", f"tau = {self.guarantee.tv_slack:g}"))
        rows.append(("TOTAL", self._total()))
        if ctx is not None:
            rows.append(("budget", f"({ctx.epsilon:g}, {ctx.delta:g})"))
            basic = self._basic()
            if basic is not None:
                rows.append(
                    (
                        "basic composition",
                        f"epsilon = {basic[0]:.6g} at delta = {basic[1]:g}",
                    )
                )
            within = within_budget(d["epsilon"], ctx.epsilon)
            verdict = budget_verdict(within, [])
            if within and d["assumptions"]:
                verdict += ", conditional (assumptions below)"
            rows.append(("verdict", verdict))
        elif self.assumed_delta:
            rows.append(("delta", f"no plan gave a budget: read at {self.delta:g}"))
        cells = "".join(
            f"<tr><th style='text-align:left'>{e(k)}</th><td>{e(v)}</td></tr>"
            for k, v in rows
        )
        assumed = ""
        if d["assumptions"]:
            items = "".join(f"<li>{e(a)}</li>" for a in d["assumptions"])
            assumed = f"<p>conditional, assuming:</p><ul>{items}</ul>"
        ledger = ""
        if self._ledger():
            assert ctx is not None  # a ledger needs a plan's context
            led = "".join(
                f"<tr><td>{e(n)}</td><td>{eps:.6g}</td></tr>"
                for n, eps in self._ledger()
            )
            ledger = (
                f"<table><caption>ledger: budget epsilon = {ctx.epsilon:g} at "
                f"delta = {ctx.delta:g}</caption><tr><th>stage</th><th>epsilon"
                f"</th></tr>{led}<tr><th>spent (composed)</th><td>"
                f"{self._spent():.6g}</td></tr></table>"
            )
        return (
            f"<div class='dpsample-privacy'><table><caption>PRIVACY "
            f"({e(d['relation'])} neighbours)</caption>{cells}</table>{assumed}"
            f"{ledger}</div>"
        )


precision.scope_public(globals())
