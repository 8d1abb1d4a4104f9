"""A budget ledger that composes the stages of a pipeline and refuses overspending."""

from __future__ import annotations

from typing import Any

from dpsample._src import precision, validation
from dpsample.errors import BudgetExceededError
from dpsample.privacy.calibration import canonical_guarantee
from dpsample.privacy.guarantee import REPLACE_ONE, PrivacyGuarantee

__all__ = ["BudgetLedger"]


class BudgetLedger:
    """Compose the guarantees of a pipeline's stages within a declared budget.

    Call :meth:`charge` with a stage's guarantee *before* the stage runs (guarantees
    come from public constants, so they are known in advance). If the composition of
    all charged stages and the new one would not be (epsilon, delta)-DP, the ledger
    raises :class:`~dpsample.errors.BudgetExceededError` and records nothing, so the
    stage never touches the data.

    The ledger keeps the assumptions of every charged guarantee
    (:attr:`assumptions`): a budget is "within budget" only under them. A stage charged
    through an envelope (its exact guarantee known only after it ran) gets its
    assumptions attached with :meth:`add_assumptions`.

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

    @property
    def assumptions(self) -> tuple[str, ...]:
        """The assumptions of every charged stage (empty: unconditional)."""
        return self._total.assumptions

    def add_assumptions(self, name: str, *assumptions: str) -> PrivacyGuarantee:
        """Attach assumptions to a charged stage (its epsilon does not change).

        For a stage charged before it ran with an envelope guarantee whose exact
        guarantee, known after the run, rests on assumptions.

        Args:
            name: the stage's name as charged (the last stage of that name).
            *assumptions: the assumptions (non-empty text).

        Returns:
            The new total guarantee.

        Raises:
            KeyError: no stage of that name was charged.

        Examples:
            >>> from dpsample.privacy import BudgetLedger, PrivacyGuarantee
            >>> ledger = BudgetLedger(epsilon=1.0, delta=1e-6)
            >>> _ = ledger.charge("sampler", PrivacyGuarantee.approx(0.5, 1e-7))
            >>> ledger.add_assumptions("sampler", "the caller's TV bound").assumptions
            ("the caller's TV bound",)
        """
        for i in range(len(self._stages) - 1, -1, -1):
            stage, guarantee = self._stages[i]
            if stage == name:
                self._stages[i] = (stage, guarantee.assuming(*assumptions))
                self._total = self._total.assuming(*assumptions)
                return self._total
        raise KeyError(f"no stage {name!r} was charged to this ledger")

    def spent_epsilon(self) -> float:
        """Epsilon of the charged stages at the ledger's delta."""
        return self._total.epsilon(self.delta)

    def would_exceed(self, guarantee: PrivacyGuarantee) -> bool:
        """Whether charging ``guarantee`` would exceed the budget."""
        return self._with(guarantee).epsilon(self.delta) > self.epsilon

    def _with(self, guarantee: PrivacyGuarantee) -> PrivacyGuarantee:
        """The total composed with ``guarantee``: the shared instance of that record.

        :func:`~dpsample.privacy.calibration.canonical_guarantee`: a composition
        that was accounted already (a pipeline's planned guarantee, checked here
        before its stages are charged one by one) is not accounted again.
        """
        return canonical_guarantee(self._total.compose(guarantee))

    def charge(self, name: str, guarantee: PrivacyGuarantee) -> PrivacyGuarantee:
        """Record a stage, or raise before it runs if it would exceed the budget.

        Returns:
            The new total guarantee.

        Raises:
            BudgetExceededError: the composed epsilon at ``delta`` would exceed the
                budget; nothing is recorded.
        """
        total = self._with(guarantee)
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
        assumed = f", assumptions={self.assumptions!r}" if self.assumptions else ""
        return (
            f"BudgetLedger(epsilon={self.epsilon:g}, delta={self.delta:g}, "
            f"stages={names}{assumed})"
        )


precision.scope_public(globals())
