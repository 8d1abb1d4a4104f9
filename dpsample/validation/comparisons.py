"""``comparisons.csv``: paired arms of a sweep (a spec's ``[[comparison]]``).

:func:`compare` pairs the grid points of two arms and tests their measurements
(median ratio, paired test) and checks that both arms spent the same epsilon
(:data:`EPSILON_TOLERANCE`). All measured values are non-private diagnostics (see
:data:`~dpsample.validation.points.LABEL`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from dpsample._src import precision
from dpsample.validation.points import (
    LABEL,
    GridPoint,
    grid_points,
    hashable,
    is_finite,
    selected,
)
from dpsample.validation.spec import (
    Comparison,
)

__all__ = ["COMPARISON_COLUMNS", "EPSILON_TOLERANCE", "compare"]

#: The first columns of ``comparisons.csv``, in this order.
COMPARISON_COLUMNS = (
    "experiment",
    "comparison",
    "arm_a",
    "arm_b",
    "at",
    "pairs",
    "median_ratio",
    "p_value",
    "epsilon_a",
    "epsilon_b",
    "epsilon_match",
)

#: Both arms of a comparison must have spent epsilons within this relative distance.
EPSILON_TOLERANCE = 0.02


def _arm_values(
    point: GridPoint, measurement: str, epsilon: str | None
) -> dict[int, tuple[float, float]]:
    """``{seed: (measurement, spent epsilon)}`` of a point's finished seeds."""
    out = {}
    for o in point.obs:
        if o["status"] != "ok":
            continue
        v = o["values"].get(measurement)
        e = o.get("guarantee_epsilon") if epsilon is None else o["values"].get(epsilon)
        if is_finite(v):
            out[int(o["seed"])] = (float(v), float(e) if is_finite(e) else math.nan)
    return out


def _paired_test(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided Wilcoxon signed-rank p-value of ``a - b`` (1 when all equal)."""
    diff = a - b
    if len(diff) == 0:
        return math.nan
    if not np.any(diff != 0):
        return 1.0
    return float(stats.wilcoxon(a, b, zero_method="wilcox").pvalue)


def compare(
    observations: Iterable[Mapping[str, Any]],
    comparisons: Sequence[Comparison],
    *,
    experiment: str,
) -> pd.DataFrame:
    """``comparisons.csv``: two arms paired by grid point and seed.

    For each comparison, a grid point of arm ``a`` pairs with the point of arm
    ``b`` that has the same values of the comparison's ``by`` columns, and their
    seeds pair by index (the same seed index sets the same data seed in both).
    One row per pair of points: ``pairs`` (seeds finished in both),
    ``median_ratio`` (median over the pairs of ``a / b``; ``NaN`` if a ``b`` is
    not positive), ``p_value`` (two-sided Wilcoxon signed-rank test of ``a - b``,
    exact for few pairs; 1 when every difference is 0), ``epsilon_a`` and
    ``epsilon_b`` (each arm's largest spent epsilon over the pairs: the released
    point's guarantee, or the measured value the arm names), ``epsilon_match``
    (within :data:`EPSILON_TOLERANCE` of each other, relative to the larger: a
    comparison at unequal budgets is flagged, not hidden), then ``mean_a``,
    ``mean_b``, ``min_p`` (the smallest p-value the test can give with this many
    pairs, ``2^(1 - pairs)``), ``measurement_a``, ``measurement_b``, ``test`` and
    ``label``.

    Args:
        observations: One per cell.
        comparisons: The spec's comparisons.
        experiment: The experiment's name.

    Returns:
        The table.

    Raises:
        ValueError: A point of arm ``a`` matches several points of arm ``b`` (the
            comparison's ``by`` does not name what tells them apart).

    Examples:
        >>> from dpsample.validation.spec import Arm, Comparison
        >>> from dpsample.validation.tables import compare
        >>> obs = [
        ...     {"cell": f"{a}{s}", "seed": s, "status": "ok", "algorithm": a,
        ...      "n": 100, "d": 1, "epsilon": 1.0, "delta": 1e-6, "axes": {},
        ...      "values": {"g": (0.5 if a == "warm" else 1.0) * (1 + s / 10)},
        ...      "guarantee_epsilon": 1.0}
        ...     for a in ("warm", "cold") for s in range(8)]
        >>> arms = (Arm("warm", {"algorithm": ["warm"]}, "g"),
        ...         Arm("cold", {"algorithm": ["cold"]}, "g"))
        >>> row = compare(obs, [Comparison("c", arms, ("n",))], experiment="e")
        >>> row = row.to_dict(orient="records")[0]
        >>> row["pairs"], row["median_ratio"], round(row["p_value"], 4)
        (8, 0.5, 0.0078)
        >>> row["epsilon_match"]
        True
    """
    observations = list(observations)
    points = grid_points(observations)
    rows = []
    for comp in comparisons:
        arm_a, arm_b = comp.arms
        sides = []
        for arm in comp.arms:
            sides.append(
                [
                    p
                    for p in points
                    if selected(p, comp.where) and selected(p, arm.where)
                ]
            )
        for pa in sides[0]:
            key = hashable([pa.column(c) for c in comp.by])
            match = [
                pb
                for pb in sides[1]
                if hashable([pb.column(c) for c in comp.by]) == key
            ]
            if not match:
                continue
            if len(match) > 1:
                raise ValueError(
                    f"comparison {comp.name!r}: a point of arm {arm_a.label!r} pairs "
                    f"with {len(match)} points of arm {arm_b.label!r}; name what "
                    "tells them apart in by"
                )
            va = _arm_values(pa, arm_a.measurement, arm_a.epsilon)
            vb = _arm_values(match[0], arm_b.measurement, arm_b.epsilon)
            seeds = sorted(set(va) & set(vb))
            a = np.array([va[s][0] for s in seeds])
            b = np.array([vb[s][0] for s in seeds])
            ea = max((va[s][1] for s in seeds), default=math.nan)
            eb = max((vb[s][1] for s in seeds), default=math.nan)
            ratio = float(np.median(a / b)) if len(b) and np.all(b > 0) else math.nan
            match_eps = bool(
                math.isfinite(ea)
                and math.isfinite(eb)
                and abs(ea - eb) <= EPSILON_TOLERANCE * max(ea, eb)
            )
            rows.append(
                {
                    "experiment": experiment,
                    "comparison": comp.name,
                    "arm_a": arm_a.label,
                    "arm_b": arm_b.label,
                    "at": ", ".join(
                        f"{c} = {json.dumps(pa.column(c))}" for c in comp.by
                    ),
                    "pairs": len(seeds),
                    "median_ratio": ratio,
                    "p_value": _paired_test(a, b),
                    "epsilon_a": ea,
                    "epsilon_b": eb,
                    "epsilon_match": match_eps,
                    "mean_a": float(a.mean()) if len(a) else math.nan,
                    "mean_b": float(b.mean()) if len(b) else math.nan,
                    "min_p": 2.0 ** (1 - len(seeds)) if seeds else math.nan,
                    "measurement_a": arm_a.measurement,
                    "measurement_b": arm_b.measurement,
                    "test": "Wilcoxon signed-rank, two-sided",
                    "label": LABEL,
                }
            )
    columns = [
        *COMPARISON_COLUMNS,
        "mean_a",
        "mean_b",
        "min_p",
        "measurement_a",
        "measurement_b",
        "test",
        "label",
    ]
    frame = pd.DataFrame(rows, columns=columns)
    frame["epsilon_match"] = frame["epsilon_match"].astype(bool)
    return frame


precision.scope_public(globals())
