r"""DP-SGD's default lot (expected batch size): the public rule, and what a cap does.

:func:`default_lot` is the rule of :mod:`dpsample.finders.dp_sgd`'s smooth schedule
at its ``T``. Under a compute budget ``Budget(max_evaluations=E)`` the schedule's
``T`` is cut to ``floor(E / m)`` and the lot stays the uncapped schedule's
(:data:`UNDER_CAP`): re-imposing Abadi et al.'s condition ``epsilon <= q^2 T`` at the
capped ``T`` (a larger lot, fewer steps) was measured no better anywhere and 2.7-1,100x
worse in excess risk at 4 of 6 points (``experiments/capped_lot.py``,
``docs/finders.md``). Public inputs only.

Examples:
    >>> from dpsample.finders.dp_sgd_lot import default_lot
    >>> default_lot(10_000, 10, 1.0, 1e-6, 20_000, "practical")[0]
    71
"""

from __future__ import annotations

import math

from dpsample._src import precision

__all__ = ["UNDER_CAP", "default_lot", "is_rule_lot"]

A8_WHY = "Abadi lot size sqrt(d log(1/delta)/epsilon) (spec 003 A8)"
_AT_T_WHY = "Abadi et al. 2016 Thm 1's lot-size condition epsilon < q^2 T at the "
#: The note a capped plan adds to a lot from :func:`default_lot`'s practical rule.
UNDER_CAP = (
    "; under max_evaluations the uncapped schedule's lot, T alone capped (the "
    "condition at the capped T, a larger lot for fewer steps, measured worse: "
    "docs/finders.md)"
)


def default_lot(
    n: int, d: int, epsilon: float, delta: float, num_steps: int, preset: str
) -> tuple[int, str]:
    """The default expected batch (lot) of the smooth schedule, and why.

    ``preset="theorem"``: ``ceil(sqrt(d log(1/delta) / epsilon))``, spec 003 A8's
    reading of Abadi et al.'s lot-size condition ``epsilon < c1 q^2 T`` (``q = b /
    n``, ``c1 = 1``), which it derives at the quasar schedule's ``T = epsilon^2 n^2 /
    (d log(1/delta))``. ``preset="practical"`` (the default): the larger of that and
    the same condition at the schedule's own ``T``, ``ceil(n sqrt(epsilon / T))``
    (Abadi et al. 2016, Theorem 1: the regime where the noise multiplier scales as
    ``q sqrt(T log(1/delta)) / epsilon``, i.e. a larger lot costs no extra noise in
    the mean gradient; below it the subsampling amplifies less and the noise per
    step grows). Both are clipped to ``[1, n]``; public inputs only.

    Args:
        n: Dataset size.
        d: Dimension.
        epsilon: The run's epsilon.
        delta: The run's delta.
        num_steps: The schedule's ``T``.
        preset: ``"practical"`` or ``"theorem"``.

    Returns:
        ``(lot, why)``.

    Examples:
        >>> from dpsample.finders.dp_sgd_lot import default_lot
        >>> default_lot(1000, 2, 1.0, 1e-6, 10_000, "theorem")[0]
        6
    """
    a8 = math.ceil(math.sqrt(d * math.log(1.0 / delta) / epsilon))
    if preset == "theorem":
        return max(1, min(n, a8)), A8_WHY
    at_t = math.ceil(n * math.sqrt(epsilon / num_steps))
    if at_t <= a8:
        return max(1, min(n, a8)), A8_WHY + f" >= n sqrt(epsilon/T) = {at_t}"
    return max(1, min(n, at_t)), (
        _AT_T_WHY + f"schedule's T: n sqrt(epsilon/T) (> spec 003 A8's "
        f"sqrt(d log(1/delta)/epsilon) = {a8})"
    )


def is_rule_lot(why: str, preset: str) -> bool:
    """Whether a lot came from :func:`default_lot`'s ``T``-dependent rule.

    Args:
        why: The lot's source note.
        preset: The plan's preset.

    Returns:
        ``True`` for the ``"practical"`` rule (a lot the caller gave, a full batch,
        the non-smooth schedule's batch or A8's lot alone do not depend on ``T``).

    Examples:
        >>> from dpsample.finders.dp_sgd_lot import is_rule_lot
        >>> is_rule_lot("user", "practical")
        False
    """
    return preset == "practical" and why.startswith((A8_WHY, _AT_T_WHY))


precision.scope_public(globals())
