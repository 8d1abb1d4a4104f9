"""Exceptions raised by dpsample before any private computation runs."""

__all__ = [
    "DPSampleError",
    "BudgetExceededError",
    "MissingConstantError",
    "RelationMismatchError",
]


class DPSampleError(ValueError):
    """Base class of dpsample's input errors (a ``ValueError``)."""


class BudgetExceededError(DPSampleError):
    """A stage would push the composed guarantee past the declared budget."""


class MissingConstantError(DPSampleError):
    """A guarantee needs a public constant (Lipschitz, range, ...) not declared."""


class RelationMismatchError(DPSampleError):
    """Two guarantees stated for different neighbouring relations were composed."""
