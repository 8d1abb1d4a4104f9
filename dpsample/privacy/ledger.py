"""A budget ledger that composes the stages of a pipeline and refuses overspending."""

from __future__ import annotations

from typing import Any

from dpsample._src import validation
from dpsample.errors import BudgetExceededError
from dpsample.privacy.guarantee import REPLACE_ONE, PrivacyGuarantee

__all__ = ["BudgetLedger"]


class BudgetLedger:
    """Compose the guarantees of a pipeline's stages within a declared budget.

    Call :meth:`charge` with a stage's guarantee *before* the stage runs (guarantees
    come from public constants, so they are known in advance). If the composition of
    all charged stages and the new one would not be (epsilon, delta)-DP, the ledger
    raises :class:`~dpsample.errors.BudgetExceededError` and records nothing, so the
    stage never touches the data.

    Args:
        epsilon: total epsilon budget (> 0).
        delta: total delta budget, in [0, 1). ``0`` demands pure DP.
        relation: neighbouring relation of every stage.

    Examples:
        >>> from dpsample.privacy import BudgetLedger, PrivacyGuarantee
        >>> ledger = BudgetLedger(epsilon=1.0, delta=1e-6)
        >>> _ = ledger.charge("warm start", PrivacyGuarantee.pure(0.5))
        >>> round(ledger.spent_epsilon(), 4)
        0.5
        >>> ledger.charge("finder", PrivacyGuarantee.pure(0.6))
        Traceback (most recent call last):
        ...
        dpsample.errors.BudgetExceededError: stage 'finder' ...
    """

    def __init__(
        self, *, epsilon: float, delta: float, relation: Any = REPLACE_ONE
    ) -> None:
        self.epsilon = validation.positive("epsilon", epsilon)
        self.delta = validation.probability("delta", delta)
        if self.delta >= 1.0:
            raise ValueError(f"Expected delta={self.delta!r} < 1")
        self.relation = relation
        self._stages: list[tuple[str, PrivacyGuarantee]] = []
        self._total = PrivacyGuarantee.none(relation=relation)

    @property
    def stages(self) -> list[tuple[str, PrivacyGuarantee]]:
        """The charged stages, in order (a copy)."""
        return list(self._stages)

    @property
    def total(self) -> PrivacyGuarantee:
        """The composition of every charged stage."""
        return self._total

    def spent_epsilon(self) -> float:
        """Epsilon of the charged stages at the ledger's delta."""
        return self._total.epsilon(self.delta)

    def would_exceed(self, guarantee: PrivacyGuarantee) -> bool:
        """Whether charging ``guarantee`` would exceed the budget."""
        return self._total.compose(guarantee).epsilon(self.delta) > self.epsilon

    def charge(self, name: str, guarantee: PrivacyGuarantee) -> PrivacyGuarantee:
        """Record a stage, or raise before it runs if it would exceed the budget.

        Returns:
            The new total guarantee.

        Raises:
            BudgetExceededError: the composed epsilon at ``delta`` would exceed the
                budget; nothing is recorded.
        """
        total = self._total.compose(guarantee)
        eps = total.epsilon(self.delta)
        if eps > self.epsilon:
            raise BudgetExceededError(
                f"stage {name!r} would bring the total to epsilon={eps:.6g} at "
                f"delta={self.delta:g}, over the budget epsilon={self.epsilon:g} "
                f"(already spent {self.spent_epsilon():.6g})"
            )
        self._stages.append((name, guarantee))
        self._total = total
        return total

    def __repr__(self) -> str:
        names = [n for n, _ in self._stages]
        return (
            f"BudgetLedger(epsilon={self.epsilon:g}, delta={self.delta:g}, "
            f"stages={names})"
        )
