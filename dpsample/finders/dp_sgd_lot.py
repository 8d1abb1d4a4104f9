r"""DP-SGD's default lot (expected batch size): the public rule, with and without a cap.

:func:`default_lot` is the rule of :mod:`dpsample.finders.dp_sgd`'s smooth schedule
at its ``T``; :func:`capped_lot` is the same rule under a compute budget
``Budget(max_evaluations=E)``, where ``T`` is cut to ``floor(E / m)`` and ``m`` (the
padded rows of a step) grows with the lot: the lot that meets Abadi et al.'s
lot-size condition ``epsilon <= q^2 T`` (``q = b / n``) at the ``T`` actually run.
Both read public inputs only (``n``, ``d``, ``epsilon``, ``delta``, ``T``, ``E``).

Examples:
    >>> from dpsample.finders.dp_sgd_lot import capped_lot, default_lot
    >>> default_lot(10_000, 10, 1.0, 1e-6, 20_000, "practical")[0]
    71
    >>> b, t, why = capped_lot(10_000, 1.0, 71, 20_000, 100_000, lambda b: b + 10)
    >>> b, t, 1.0 <= (b / 10_000) ** 2 * t
    (1016, 97, True)
"""

from __future__ import annotations

import math
from collections.abc import Callable

from dpsample._src import precision

__all__ = ["capped_lot", "default_lot", "is_rule_lot"]

A8_WHY = "Abadi lot size sqrt(d log(1/delta)/epsilon) (spec 003 A8)"
_AT_T_WHY = "Abadi et al. 2016 Thm 1's lot-size condition epsilon < q^2 T at the "


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


def capped_lot(
    n: int,
    epsilon: float,
    lot: int,
    num_steps: int,
    max_evaluations: int,
    rows: Callable[[int], int],
) -> tuple[int, int, str]:
    """The default lot under ``max_evaluations``: the condition at the ``T`` run.

    Under a cap ``E`` a lot ``b`` runs ``T(b) = min(T_0, floor(E / m(b)))`` steps
    (``T_0`` the uncapped schedule's, ``m(b)`` its padded rows), so the condition
    ``epsilon <= (b / n)^2 T(b)`` and ``T`` depend on each other. The lot is the
    least ``b >= lot`` that meets it, ``b = ceil(n sqrt(epsilon / T(b)))`` at the
    fixed point: about ``n^2 epsilon / E`` (then ``T`` about ``E^2 / (n^2
    epsilon)``), the most steps the cap allows inside the condition. It is found
    by iterating ``b <- ceil(n sqrt(epsilon / T(b)))`` from ``lot``, which increases
    (``T(b)`` falls as ``b`` grows) and so stops, at the least such ``b``; about
    ``log2 n`` iterations, each a public computation. Where no ``b <= n`` meets the
    condition with at least one step (``E`` below about ``n max(epsilon,
    sqrt(epsilon))``: fewer than ``epsilon`` expected uses of an example), the lot
    stays ``lot`` with ``T = floor(E / m(lot))``, and the note says so.

    Args:
        n: Dataset size.
        epsilon: The run's epsilon.
        lot: The uncapped rule's lot (:func:`default_lot` at ``T_0``).
        num_steps: ``T_0``.
        max_evaluations: ``E``, at least ``rows(lot)``.
        rows: ``m(b)``, non-decreasing in ``b``.

    Returns:
        ``(lot, T, why)``.

    Examples:
        >>> from dpsample.finders.dp_sgd_lot import capped_lot
        >>> capped_lot(64_000, 1.0, 453, 20_000, 20_000, lambda b: b + 60)[:2]
        (453, 38)
    """
    b = lot
    while True:
        m = rows(b)
        if m > max_evaluations:
            break
        t = min(num_steps, max_evaluations // m)
        need = math.ceil(n * math.sqrt(epsilon / t))
        if need <= b:
            return (
                b,
                t,
                (
                    _AT_T_WHY + f"T run under max_evaluations={max_evaluations:,}: the "
                    f"least lot b >= {lot} with b >= n sqrt(epsilon / T(b)), T(b) = "
                    "min(T_0, floor(max_evaluations / m(b))) (the fixed point)"
                ),
            )
        if b >= n:
            break
        b = min(n, need)
    return (
        lot,
        min(num_steps, max_evaluations // rows(lot)),
        (
            f"no lot up to n={n} meets Abadi et al.'s condition epsilon <= q^2 T "
            f"within max_evaluations={max_evaluations:,}: kept the uncapped rule's "
            f"lot {lot}"
        ),
    )


precision.scope_public(globals())
