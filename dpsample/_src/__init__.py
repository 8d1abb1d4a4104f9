"""Private helpers shared across dpsample (not public API)."""
