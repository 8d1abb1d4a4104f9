"""Exceptions raised by dpsample before any private computation runs."""

from __future__ import annotations

import dataclasses
from typing import Any

__all__ = [
    "DPSampleError",
    "BudgetExceededError",
    "MissingConstantError",
    "Code",
    "PlanRefusal",
    "RelationMismatchError",
    "Search",
]


class DPSampleError(ValueError):
    """Base class of dpsample's input errors (a ``ValueError``)."""


class BudgetExceededError(DPSampleError):
    """A stage would push the composed guarantee past the declared budget."""


class MissingConstantError(DPSampleError):
    """A guarantee needs a public constant (Lipschitz, range, ...) not declared."""


class RelationMismatchError(DPSampleError):
    """Two guarantees stated for different neighbouring relations were composed."""


class Code(str):
    """An option value shown as code in a refusal (``proximal.C_STEP_PRACTICAL``)."""

    def __repr__(self) -> str:
        return str(self)


@dataclasses.dataclass(frozen=True)
class Search:
    """How to look for a value of one option at which a refused plan succeeds.

    The option's feasibility must be monotone along the search: once a value plans,
    every value further in ``direction`` plans too (a coarser net, a lower beta).

    Attributes:
        option: The option's name as the algorithm's ``plan`` takes it.
        start: The first value tried.
        direction: ``"up"`` (values grow) or ``"down"`` (values shrink).
        factor: Each step multiplies (``"up"``) or divides (``"down"``) by this.
        max_tries: Values tried at most before saying that none works.
        refine: Bisect (in log space, 8 halvings) between the last refused and the
            first working value, so the value offered is close to the boundary.
        integer: Round the values up (``"up"``) or down to integers.
    """

    option: str
    start: float
    direction: str = "up"
    factor: float = 2.0
    max_tries: int = 60
    refine: bool = True
    integer: bool = False


class PlanRefusal(DPSampleError):
    """A plan refused for public reasons, saying which option would fix it.

    Raised by ``plan`` (before any data is read). The message names the option under
    the name the caller uses (inside a pipeline, ``sampler_options={...}`` or
    ``finder_options={...}``) and either a value that was checked to plan, with what
    that plan costs, or that no value of it does.

    Attributes:
        reason: Why the plan is refused (public facts).
        search: How :meth:`dpsample.base.PrivateAlgorithm.plan` looks for a working
            value (``None``: the raiser gives ``fix`` itself or none exists).
        fix: ``(option, value, what the plan with it gives)``, once found.
        none_works: No value of the searched option plans (with ``why``).
        why: Why no value works, or what else could.
        alternatives: Other remedies: ``(options, note)`` pairs, ``options`` a
            mapping of option names to values (named as the caller names them,
            inside ``scope``), or empty for a remedy outside the options (``note``).
        scope: Where the caller passes the option: ``()`` directly, as a keyword;
            ``("sampler_options",)`` inside a pipeline's options (outermost first).

    Examples:
        >>> from dpsample.errors import PlanRefusal
        >>> e = PlanRefusal("too many steps", fix=("beta", 0.5, "1,000 steps"))
        >>> print(e)
        too many steps. It plans with beta=0.5 (1,000 steps)
        >>> print(e.within("sampler_options"))
        too many steps. It plans with sampler_options={'beta': 0.5} (1,000 steps)
    """

    def __init__(
        self,
        reason: str,
        *,
        search: Search | None = None,
        fix: tuple[str, Any, str] | None = None,
        none_works: bool = False,
        why: str = "",
        alternatives: tuple[tuple[dict[str, Any], str], ...] = (),
        scope: tuple[str, ...] = (),
        together_with: str = "",
    ) -> None:
        self.reason = reason
        self.search = search
        self.fix = fix
        self.none_works = none_works
        self.why = why
        self.alternatives = tuple(alternatives)
        self.scope = tuple(scope)
        self.together_with = together_with
        super().__init__(self._render())

    def _name(self, option: str, value: Any) -> str:
        return self._names({option: value})

    def _names(self, options: dict[str, Any]) -> str:
        if not self.scope:
            return ", ".join(f"{k}={v!r}" for k, v in options.items())
        inner: Any = dict(options)
        for name in reversed(self.scope[1:]):
            inner = {name: inner}
        return f"{self.scope[0]}={inner!r}"

    def _render(self) -> str:
        parts = [self.reason.rstrip(".")]
        if self.fix is not None:
            option, value, gives = self.fix
            also = f"{self.together_with}, " if self.together_with else ""
            text = f"It plans with {also}{self._name(option, value)}"
            parts.append(text + (f" ({gives})" if gives else ""))
        elif self.none_works and self.search is not None:
            parts.append(
                f"No value of {self.search.option!r}"
                + (f" (in {' > '.join(self.scope)})" if self.scope else "")
                + " makes it plan"
                + (f": {self.why}" if self.why else "")
            )
        elif self.why:
            parts.append(self.why)
        if self.alternatives:
            shown = [
                (self._names(options) + (f" ({note})" if note else ""))
                if options
                else note
                for options, note in self.alternatives
            ]
            parts.append("Otherwise: " + "; ".join(shown))
        return ". ".join(parts)

    def within(self, scope: str, *, together_with: str = "") -> PlanRefusal:
        """The same refusal, its options named as passed inside ``scope``.

        ``together_with``: another argument the fix needs beside it (e.g.
        ``"sampler='net'"`` where the pipeline chose the sampler itself).
        """
        return PlanRefusal(
            self.reason,
            search=self.search,
            fix=self.fix,
            none_works=self.none_works,
            why=self.why,
            alternatives=self.alternatives,
            scope=(scope, *self.scope),
            together_with=together_with or self.together_with,
        )

    def resolved(
        self, fix: tuple[str, Any, str] | None, *, why: str = ""
    ) -> PlanRefusal:
        """This refusal with the search's outcome (a fix, or none works)."""
        return PlanRefusal(
            self.reason,
            search=self.search,
            fix=fix,
            none_works=fix is None,
            why=why or self.why,
            alternatives=self.alternatives,
            scope=self.scope,
            together_with=self.together_with,
        )
