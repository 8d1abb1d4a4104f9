"""Grid points of a sweep: what the tables read of each cell, grouped by point.

:func:`observation` turns a cell and its record into an *observation* (see
:mod:`dpsample.validation.tables`); :func:`ceiling` is a measurement's trivial
ceiling at a cell. The private helpers group observations by grid point and
summarise one prediction at one point; :mod:`~dpsample.validation.tables`
(``summary.csv``), :mod:`~dpsample.validation.slopes` (``slopes.csv``, profiles)
and :mod:`~dpsample.validation.comparisons` (``comparisons.csv``) share them. All
measured values are non-private diagnostics of the released points (:data:`LABEL`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard

import numpy as np

from dpsample._src import precision
from dpsample.validation.spec import (
    SUMMARY_VARIABLES,
    Cell,
    Prediction,
)

__all__ = ["LABEL", "ceiling", "observation"]
# The other public names (GridPoint, grid_points, point_stats, ...) are shared with
# tables, slopes and comparisons; they are left out of __all__ (and so unscoped, as
# before the split: plain NumPy on host values).

#: The label of every measured column.
LABEL = "NOT PRIVATE: diagnostic of the released point on private or population data"
FACTS = ("algorithm", *SUMMARY_VARIABLES)


def observation(cell: Cell, record: Mapping[str, Any] | None) -> dict[str, Any]:
    """What the tables read of one cell and its record (``None``: not run).

    Args:
        cell: The cell.
        record: Its record from :func:`~dpsample.validation.cells.run_cell`.

    Returns:
        The observation (see the module docstring).
    """
    cfg = cell.config
    status = "missing" if record is None else str(record.get("status"))
    ok = status == "ok" and record is not None
    rec: Mapping[str, Any] = record if record is not None else {}
    problem = rec["public"]["problem"] if ok else {}
    data = cfg.get("data", {})
    return {
        "cell": cell.key,
        "seed": cell.seed,
        "status": status,
        "algorithm": cfg["job"]["name"],
        "n": problem.get("n", data.get("n")),
        "d": problem.get("dim", data.get("d")),
        "epsilon": cfg["privacy"]["epsilon"],
        "delta": cfg["privacy"]["delta"],
        "axes": dict(cell.axes),
        "values": dict(rec["measurements"]["values"]) if ok else {},
        "constants": _constants(problem),
        "config": cfg,
        "guarantee_epsilon": rec["guarantee"]["epsilon"] if ok else None,
        "seconds": rec.get("seconds"),
    }


def _constants(problem: Mapping[str, Any]) -> dict[str, float]:
    """The problem's public constants and domain radius (what a ceiling reads)."""
    out = {
        str(k): float(v)
        for k, v in (problem.get("constants") or {}).items()
        if is_finite(v)
    }
    radius = (problem.get("assumptions") or {}).get("radius")
    if is_finite(radius):
        out["radius"] = float(radius)
    return out


def ceiling(pred: Prediction, obs: Mapping[str, Any] | None) -> float:
    """The trivial ceiling of ``pred``'s measurement at a cell (``NaN``: unknown).

    A number is itself (``inf``: the measurement has no trivial ceiling, so any
    finite bound can fail); a name of
    :data:`~dpsample.validation.spec.CEILING_CONSTANTS` is read from the cell's
    public constants, ``loss_range`` falling back to ``lipschitz * 2 * radius``; a
    function is called with the cell's public facts (``n``, ``d``, ``epsilon``,
    ``delta``, ``constants``, ``axes``, ``config``; never its measurements).

    Args:
        pred: The prediction (its ``ceiling`` comes from the spec's ``[ceilings]``).
        obs: The cell's observation (only its public facts are read), or a mapping
            with its ``constants``.

    Returns:
        The ceiling.

    Examples:
        >>> from dpsample.validation.spec import Prediction
        >>> from dpsample.validation.tables import ceiling
        >>> risk = Prediction("p", "risk", ceiling="loss_range")
        >>> ceiling(risk, {"constants": {"lipschitz": 1.0, "radius": 1.5}})
        3.0
        >>> ceiling(Prediction("p", "ks", ceiling=1.0), {})
        1.0
        >>> ceiling(Prediction("p", "r", ceiling=lambda f: f["d"] ** 0.5 / 4), {"d": 4})
        0.5
        >>> ceiling(Prediction("p", "x"), {"constants": {"lipschitz": 1.0}})
        nan
    """
    c = pred.ceiling
    obs = obs or {}
    if c is None:
        return math.nan
    if callable(c):
        facts = {
            k: obs.get(k) for k in (*SUMMARY_VARIABLES, "constants", "axes", "config")
        }
        computed = c(facts)
        return (
            float(computed) if is_finite(computed) or computed == math.inf else math.nan
        )
    if not isinstance(c, str):
        return float(c)
    constants = obs.get("constants") or {}
    declared = constants.get(c)
    if is_finite(declared):
        return float(declared)
    if c == "loss_range":
        lip, radius = constants.get("lipschitz"), constants.get("radius")
        if is_finite(lip) and is_finite(radius):
            return 2.0 * float(lip) * float(radius)
    return math.nan


# ------------------------------------------------------------------- grid points
@dataclass
class GridPoint:
    """One grid point: its public facts, its axes and its seeds' observations."""

    facts: dict[str, Any]  # algorithm, n, d, epsilon, delta
    axes: dict[str, Any]
    obs: list[Mapping[str, Any]]

    def column(self, name: str) -> Any:
        """A fact (``algorithm``, ``n``, ``d``, ``epsilon``, ``delta``) or an axis."""
        return self.facts[name] if name in FACTS else self.axes.get(name)


def hashable(value: Any) -> str:
    """A key for ``value`` (canonical JSON), to group points by it."""
    return json.dumps(value, sort_keys=True)


def grid_points(observations: Iterable[Mapping[str, Any]]) -> list[GridPoint]:
    """Observations grouped by grid point (algorithm and axes), in first-seen order."""
    points: dict[str, GridPoint] = {}
    for o in observations:
        key = hashable([o["algorithm"], o["axes"], o["epsilon"], o["delta"]])
        if key not in points:
            facts = {k: o.get(k) for k in FACTS}
            points[key] = GridPoint(facts, dict(o["axes"]), [])
        p = points[key]
        p.obs.append(o)
        for k in ("n", "d"):  # known from a finished seed when the config lacks it
            if p.facts[k] is None and o.get(k) is not None:
                p.facts[k] = o[k]
    return list(points.values())


def selected(point: GridPoint, where: Mapping[str, Any]) -> bool:
    """Whether ``point`` meets ``where`` (values listed, or ``min``/``max``)."""
    for name, cond in where.items():
        value = point.column(name)
        if isinstance(cond, Mapping):
            if value is None:
                return False
            if "min" in cond and not value >= cond["min"]:
                return False
            if "max" in cond and not value <= cond["max"]:
                return False
        elif value not in cond:
            return False
    return True


def is_finite(value: Any) -> TypeGuard[float]:
    """A finite int or float (not a bool)."""
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
    )


@dataclass
class PointStats:
    """One prediction at one grid point, over its finished seeds."""

    values: np.ndarray  # finite measurements of the finished seeds
    mean: float
    se: float
    bound: float
    holds: bool | None
    mc_se: float
    failed: int
    guarantee_epsilon: float
    ceiling: float = math.nan  # smallest over the finished seeds
    informative: bool | None = None
    why: str = ""  # why not informative (or why undecided)


def _informative(
    pred: Prediction, checked: Sequence[tuple[float, float, Mapping[str, Any]]]
) -> tuple[bool | None, str, float]:
    """(informative, why not, ceiling) of a bound checked at ``(value, bound, obs)``.

    Informative: every seed's bound lies below the measurement's ceiling (else the
    check could not fail) and, where the prediction names the start point's
    measurement, the start point violates the bound at every seed (else the run
    may have released a point that met the claim before it ran).
    """
    ceilings = [ceiling(pred, o) for _, _, o in checked]
    c = min(ceilings) if ceilings else math.nan
    if not checked:
        return None, "no finished seed with a bound", c
    name = getattr(pred.ceiling, "__name__", pred.ceiling)
    if pred.ceiling is None:
        return None, "no ceiling declared", c
    if any(math.isnan(x) for x in ceilings):
        return None, f"ceiling {name} unknown", c
    if any(b >= x for (_, b, _), x in zip(checked, ceilings, strict=True)):
        return False, f"bound >= ceiling ({name} = {c:.4g})", c
    if pred.start is not None:
        starts = [o["values"].get(pred.start) for _, _, o in checked]
        if not all(is_finite(v) for v in starts):
            return None, f"start point not measured ({pred.start})", c
        if any(v <= b for v, (_, b, _) in zip(starts, checked, strict=True)):
            return False, f"the start point meets the bound ({pred.start})", c
    return True, "", c


def point_stats(point: GridPoint, pred: Prediction) -> PointStats:
    """The statistics of ``pred`` at ``point`` (a row of ``summary.csv``)."""
    ok = [o for o in point.obs if o["status"] == "ok"]
    pairs = [(o["values"].get(pred.measurement), o) for o in ok]
    values = np.array([v for v, _ in pairs if is_finite(v)], np.float64)
    k = len(values)
    mean = float(values.mean()) if k else math.nan
    se = float(values.std(ddof=1) / math.sqrt(k)) if k > 1 else math.nan
    bound, holds = math.nan, None
    informative, why = None, ""
    cap = min(
        (ceiling(pred, o) for v, o in pairs if is_finite(v)),
        default=math.nan,
    )
    if pred.bound is not None:
        checked = [
            (v, o["values"].get(pred.bound), o)
            for v, o in pairs
            if is_finite(v) and is_finite(o["values"].get(pred.bound))
        ]
        bounds = [b for _, b, _ in checked]
        if bounds:
            bound = float(np.mean(bounds))
            holds = all(v <= b for v, b, _ in checked)
        informative, why, _ = _informative(pred, checked)
    mc = [o["values"].get(f"{pred.measurement}_se") for o in ok]
    mc = [v for v in mc if is_finite(v)]
    eps = [o["guarantee_epsilon"] for o in ok if is_finite(o.get("guarantee_epsilon"))]
    return PointStats(
        values,
        mean,
        se,
        bound,
        holds,
        float(np.mean(mc)) if mc else math.nan,
        sum(o["status"] != "ok" for o in point.obs),
        max(eps) if eps else math.nan,
        cap,
        informative,
        why,
    )


def axes_of(observations: Sequence[Mapping[str, Any]]) -> list[str]:
    """The grid axes of the observations, in first-seen order."""
    return list(dict.fromkeys(a for o in observations for a in o["axes"]))


precision.scope_public(globals())
