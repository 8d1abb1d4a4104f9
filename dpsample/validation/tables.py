"""The sweep's tables, as pure functions of the cells' observations.

An *observation* is one cell seen by the tables (:func:`observation` builds it from a
:class:`~dpsample.validation.spec.Cell` and its record; tests build them directly):

.. code-block:: python

    {"cell": "3f2a...", "seed": 0, "status": "ok",   # "ok" | "failed" | "missing"
     "algorithm": "net", "n": 200, "d": 2, "epsilon": 1.0, "delta": 1e-6,
     "axes": {"data.n": 200, "privacy.epsilon": 1.0},   # the grid point
     "values": {"excess_empirical_risk": 0.01, ...},   # measurements
     "constants": {"lipschitz": 1.0, "radius": 1.0},    # public (optional)
     "guarantee_epsilon": 1.0, "seconds": 0.7}

:func:`summarize` gives ``summary.csv`` (one row per grid point and prediction, with
``informative``: whether the bound could have failed), :func:`fit_slopes` gives
``slopes.csv`` (one row per prediction, slope variable and group of grid points that
differ only in that variable, with a ``verdict``) and :func:`compare` gives
``comparisons.csv`` (paired arms). All measured values are non-private diagnostics of
the released points (see :data:`LABEL`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard

import numpy as np
import pandas as pd

from dpsample._src import precision
from dpsample.validation.spec import (
    SUMMARY_VARIABLES,
    Cell,
    Comparison,
    Prediction,
)

__all__ = [
    "COMPARISON_COLUMNS",
    "EPSILON_TOLERANCE",
    "LABEL",
    "MAX_CI_WIDTH",
    "MIN_POINTS",
    "MIN_SEEDS",
    "SATURATION",
    "SLOPE_COLUMNS",
    "SUMMARY_COLUMNS",
    "VERDICTS",
    "Profile",
    "SlopeFit",
    "ceiling",
    "compare",
    "fit_slopes",
    "observation",
    "profiles",
    "slope_fits",
    "summarize",
]

#: The first columns of ``summary.csv``, in this order.
SUMMARY_COLUMNS = (
    "experiment",
    "prediction",
    "algorithm",
    "n",
    "d",
    "epsilon",
    "delta",
    "seeds",
    "measured_mean",
    "measured_se",
    "bound",
    "ratio",
    "holds",
    "informative",
    "holds_informative",
)
#: The first columns of ``slopes.csv``, in this order.
SLOPE_COLUMNS = (
    "experiment",
    "prediction",
    "variable",
    "fitted_slope",
    "ci_low",
    "ci_high",
    "theory_slope",
    "verdict",
    "consistent",
)
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
#: A slope fit needs this many grid points inside the theory's regime...
MIN_POINTS = 5
#: ... and this many finished seeds at each of them; else "too few points/seeds".
MIN_SEEDS = 8
#: A point whose measured mean exceeds this fraction of the measurement's ceiling is
#: saturated (a power law cannot continue there) and leaves the slope fit.
SATURATION = 0.5
#: A slope interval wider than this is "underpowered": it cannot tell the rates the
#: papers compare apart (-1 from -2/3, -2/3 from -1/2 need a half-width below 1/6
#: to 1/3).
MAX_CI_WIDTH = 0.5
#: Both arms of a comparison must have spent epsilons within this relative distance.
EPSILON_TOLERANCE = 0.02
#: The verdicts of ``slopes.csv``, from the weakest evidence up.
VERDICTS = (
    "no fit",
    "too few points/seeds",
    "underpowered",
    "not consistent",
    "consistent",
)
#: The label of every measured column.
LABEL = "NOT PRIVATE: diagnostic of the released point on private or population data"
_FACTS = ("algorithm", *SUMMARY_VARIABLES)


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
        if _finite(v)
    }
    radius = (problem.get("assumptions") or {}).get("radius")
    if _finite(radius):
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
            float(computed) if _finite(computed) or computed == math.inf else math.nan
        )
    if not isinstance(c, str):
        return float(c)
    constants = obs.get("constants") or {}
    declared = constants.get(c)
    if _finite(declared):
        return float(declared)
    if c == "loss_range":
        lip, radius = constants.get("lipschitz"), constants.get("radius")
        if _finite(lip) and _finite(radius):
            return 2.0 * float(lip) * float(radius)
    return math.nan


# ------------------------------------------------------------------- grid points
@dataclass
class _Point:
    facts: dict[str, Any]  # algorithm, n, d, epsilon, delta
    axes: dict[str, Any]
    obs: list[Mapping[str, Any]]

    def column(self, name: str) -> Any:
        return self.facts[name] if name in _FACTS else self.axes.get(name)


def _hashable(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _points(observations: Iterable[Mapping[str, Any]]) -> list[_Point]:
    """Observations grouped by grid point (algorithm and axes), in first-seen order."""
    points: dict[str, _Point] = {}
    for o in observations:
        key = _hashable([o["algorithm"], o["axes"], o["epsilon"], o["delta"]])
        if key not in points:
            facts = {k: o.get(k) for k in _FACTS}
            points[key] = _Point(facts, dict(o["axes"]), [])
        p = points[key]
        p.obs.append(o)
        for k in ("n", "d"):  # known from a finished seed when the config lacks it
            if p.facts[k] is None and o.get(k) is not None:
                p.facts[k] = o[k]
    return list(points.values())


def _selected(point: _Point, where: Mapping[str, Any]) -> bool:
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


def _finite(value: Any) -> TypeGuard[float]:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
    )


@dataclass
class _Stats:
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
        if not all(_finite(v) for v in starts):
            return None, f"start point not measured ({pred.start})", c
        if any(v <= b for v, (_, b, _) in zip(starts, checked, strict=True)):
            return False, f"the start point meets the bound ({pred.start})", c
    return True, "", c


def _stats(point: _Point, pred: Prediction) -> _Stats:
    ok = [o for o in point.obs if o["status"] == "ok"]
    pairs = [(o["values"].get(pred.measurement), o) for o in ok]
    values = np.array([v for v, _ in pairs if _finite(v)], np.float64)
    k = len(values)
    mean = float(values.mean()) if k else math.nan
    se = float(values.std(ddof=1) / math.sqrt(k)) if k > 1 else math.nan
    bound, holds = math.nan, None
    informative, why = None, ""
    cap = min(
        (ceiling(pred, o) for v, o in pairs if _finite(v)),
        default=math.nan,
    )
    if pred.bound is not None:
        checked = [
            (v, o["values"].get(pred.bound), o)
            for v, o in pairs
            if _finite(v) and _finite(o["values"].get(pred.bound))
        ]
        bounds = [b for _, b, _ in checked]
        if bounds:
            bound = float(np.mean(bounds))
            holds = all(v <= b for v, b, _ in checked)
        informative, why, _ = _informative(pred, checked)
    mc = [o["values"].get(f"{pred.measurement}_se") for o in ok]
    mc = [v for v in mc if _finite(v)]
    eps = [o["guarantee_epsilon"] for o in ok if _finite(o.get("guarantee_epsilon"))]
    return _Stats(
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


def _axes_of(observations: Sequence[Mapping[str, Any]]) -> list[str]:
    return list(dict.fromkeys(a for o in observations for a in o["axes"]))


def summarize(
    observations: Iterable[Mapping[str, Any]],
    predictions: Sequence[Prediction],
    *,
    experiment: str,
) -> pd.DataFrame:
    """``summary.csv``: one row per grid point and prediction.

    Columns :data:`SUMMARY_COLUMNS` first: ``seeds`` counts the finished seeds with
    a finite measurement, ``measured_mean`` and ``measured_se`` (standard error over
    seeds, ``NaN`` for one seed) summarise them, ``bound`` is the mean of the seeds'
    bounds, ``ratio = measured_mean / bound`` and ``holds`` is true when no seed
    exceeded its bound (empty without a bound). ``informative`` says whether the
    check could have failed: true when every seed's bound lies below the
    measurement's trivial ceiling (:func:`ceiling`; the spec's ``[ceilings]``) and,
    where the prediction names the start point's measurement (``start``), the start
    point violates the bound at every seed; false when a bound reaches the ceiling
    or the start point already meets it; empty when it cannot be told (no bound, no
    ceiling declared, start point not measured). ``holds_informative`` is
    ``holds`` on the informative rows, empty elsewhere. Then ``ceiling`` (the
    smallest over the seeds), ``not_informative`` (why not, or why undecided),
    ``measurement``, ``bound_name``, ``measured_max``, ``measured_mc_se`` (mean of
    the ``<measurement>_se`` a Monte Carlo measurement reports), ``failed`` (failed
    or missing seeds), ``guarantee_epsilon`` (largest reported epsilon of the
    released points), ``label`` (:data:`LABEL`) and one column per grid axis.

    Args:
        observations: One per cell (see the module docstring).
        predictions: The spec's predictions.
        experiment: The experiment's name (first column).

    Returns:
        The table.

    Examples:
        >>> from dpsample.validation.spec import Prediction
        >>> from dpsample.validation.tables import summarize
        >>> obs = [
        ...     {"cell": str(s), "seed": s, "status": "ok", "algorithm": "net",
        ...      "n": 100, "d": 2, "epsilon": 1.0, "delta": 1e-6,
        ...      "axes": {"data.n": 100}, "values": {"risk": r, "thm": 0.5},
        ...      "guarantee_epsilon": 1.0}
        ...     for s, r in enumerate([0.1, 0.3])]
        >>> pred = Prediction("p", "risk", "thm", ceiling=1.0)
        >>> row = summarize(obs, [pred], experiment="e")
        >>> row = row.to_dict(orient="records")[0]
        >>> [row[k] for k in ("seeds", "measured_mean", "bound", "ratio", "holds")]
        [2, 0.2, 0.5, 0.4, True]
        >>> row["informative"], row["holds_informative"]
        (True, True)
        >>> vacuous = Prediction("p", "risk", "thm", ceiling=0.5)  # bound = ceiling
        >>> row = summarize(obs, [vacuous], experiment="e").iloc[0]
        >>> bool(row["informative"]), row["not_informative"]
        (False, 'bound >= ceiling (0.5 = 0.5)')
    """
    observations = list(observations)
    axes = _axes_of(observations)
    points = _points(observations)
    rows = []
    for pred in predictions:
        for point in points:
            if not _selected(point, pred.where):
                continue
            st = _stats(point, pred)
            rows.append(
                {
                    "experiment": experiment,
                    "prediction": pred.name,
                    **point.facts,
                    "seeds": len(st.values),
                    "measured_mean": st.mean,
                    "measured_se": st.se,
                    "bound": st.bound,
                    "ratio": st.mean / st.bound
                    if _finite(st.bound) and st.bound != 0
                    else math.nan,
                    "holds": st.holds,
                    "informative": st.informative,
                    "holds_informative": st.holds if st.informative else None,
                    "ceiling": st.ceiling,
                    "not_informative": st.why,
                    "measurement": pred.measurement,
                    "bound_name": pred.bound,
                    "measured_max": float(st.values.max())
                    if len(st.values)
                    else math.nan,
                    "measured_mc_se": st.mc_se,
                    "failed": st.failed,
                    "guarantee_epsilon": st.guarantee_epsilon,
                    "label": LABEL,
                    **{a: point.axes.get(a) for a in axes},
                }
            )
    columns = [
        *SUMMARY_COLUMNS,
        "ceiling",
        "not_informative",
        "measurement",
        "bound_name",
        "measured_max",
        "measured_mc_se",
        "failed",
        "guarantee_epsilon",
        "label",
        *[a for a in axes if a not in SUMMARY_COLUMNS],
    ]
    frame = pd.DataFrame(rows, columns=columns)
    for column in ("holds", "informative", "holds_informative"):
        frame[column] = frame[column].astype("boolean")
    frame["seeds"] = frame["seeds"].astype("int64")
    return frame


# ------------------------------------------------------------------------ slopes
@dataclass(frozen=True)
class SlopeFit:
    """One log-log fit: a prediction, a variable, one group of grid points.

    Attributes:
        prediction: The prediction.
        variable: The slope variable.
        at: The values that fix the group (``"privacy.epsilon = 1.0"``; empty when
            the prediction has one group).
        x: The variable at the group's points (sorted; all of them, dropped ones
            included).
        mean: Mean measurement per point.
        se: Standard error per point (``NaN`` for one seed).
        bound: Mean bound per point (``NaN`` without one).
        seeds: Seeds per point.
        slope: Least-squares slope of ``log mean`` on ``log x`` over the kept
            points (``NaN`` with fewer than two).
        intercept: Its intercept.
        ci_low: Lower end of the 95% interval: the union of the lack-of-fit
            interval (``slope -/+ t(0.975, k - 2) s / sqrt(Sxx)`` from the residuals
            of the ``k`` kept points' log means, which carry both the seeds' noise
            and any misfit of a power law across points) and the seed bootstrap's.
        ci_high: Its upper end.
        theory: The theory slope.
        consistent: ``verdict == "consistent"``.
        used: Kept points.
        verdict: One of :data:`VERDICTS`: ``"no fit"`` (fewer than two kept
            points, or no finite interval), ``"too few points/seeds"`` (fewer
            than :data:`MIN_POINTS` kept points or fewer than :data:`MIN_SEEDS`
            seeds at one of them, whatever the interval says), ``"not
            consistent"`` (the theory slope lies outside the interval),
            ``"underpowered"`` (inside, but the interval is wider than
            :data:`MAX_CI_WIDTH`), ``"consistent"`` (inside a narrower one).
        kept: Per point, whether it entered the fit.
        dropped: Why each left-out point left (``"x = 500: saturated"``, ...).
        seed_ci: The seed bootstrap's interval alone (seeds resampled within each
            point; misfit across points ignored).
        lack_of_fit_ci: The residual interval alone (``NaN`` with two points).
    """

    prediction: Prediction
    variable: str
    at: str
    x: np.ndarray
    mean: np.ndarray
    se: np.ndarray
    bound: np.ndarray
    seeds: np.ndarray
    slope: float
    intercept: float
    ci_low: float
    ci_high: float
    theory: float
    consistent: bool
    used: int
    verdict: str = "no fit"
    kept: np.ndarray | None = None
    dropped: tuple[str, ...] = ()
    seed_ci: tuple[float, float] = (math.nan, math.nan)
    lack_of_fit_ci: tuple[float, float] = (math.nan, math.nan)


def _tied(points: Sequence[_Point], a: str, b: str) -> bool:
    """Whether columns ``a`` and ``b`` determine each other over ``points``."""
    ab: dict[str, str] = {}
    ba: dict[str, str] = {}
    for p in points:
        x, y = _hashable(p.column(a)), _hashable(p.column(b))
        if ab.setdefault(x, y) != y or ba.setdefault(y, x) != x:
            return False
    return True


def _ols(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Slopes and intercepts of ``y[..., j]`` on ``x[j]`` (rows of ``y``)."""
    xc = x - x.mean()
    slope = (y - y.mean(axis=-1, keepdims=True)) @ xc / (xc @ xc)
    return slope, y.mean(axis=-1) - slope * x.mean()


def _bootstrap(
    samples: Sequence[np.ndarray], logx: np.ndarray, n_boot: int, rng: Any
) -> tuple[float, float]:
    """95% percentile interval of the slope, seeds resampled within each point.

    One seed at a point gives it no resampling noise.
    """
    means = np.empty((n_boot, len(samples)))
    for j, s in enumerate(samples):
        means[:, j] = s[rng.integers(0, len(s), (n_boot, len(s)))].mean(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        logy = np.where(means > 0, np.log(np.where(means > 0, means, 1.0)), np.nan)
    slopes, _ = _ols(logx, logy)
    slopes = slopes[np.isfinite(slopes)]
    if len(slopes) < n_boot / 2:  # most resamples left the log domain
        return math.nan, math.nan
    lo, hi = np.percentile(slopes, [2.5, 97.5])
    return float(lo), float(hi)


def slope_fits(
    observations: Iterable[Mapping[str, Any]],
    predictions: Sequence[Prediction],
    *,
    n_boot: int = 2000,
    seed: int = 0,
) -> list[SlopeFit]:
    """The log-log fits behind ``slopes.csv`` and the figures.

    For each prediction and slope variable, the prediction's grid points are grouped
    by every other column (algorithm, ``n``, ``d``, ``epsilon``, ``delta``, axes)
    except those tied one-to-one to the variable (``data.n`` to ``n``, a zipped
    axis); each group with two or more values of the variable gets a least-squares
    fit of ``log(measured_mean)`` on ``log(variable)`` over the points inside the
    regime the rate describes. A point leaves the fit (and :attr:`SlopeFit.dropped`
    says why) when its mean is not positive, when its mean exceeds
    :data:`SATURATION` times the measurement's ceiling (saturated), or when the
    prediction's bound reaches the ceiling there (the theory says nothing). The 95%
    interval is the union of the lack-of-fit t interval (residuals across points)
    and the percentile bootstrap from ``n_boot`` resamples of the seeds within each
    point; :attr:`SlopeFit.verdict` reads it.

    Args:
        observations: One per cell.
        predictions: The spec's predictions (those without slopes are skipped).
        n_boot: Bootstrap resamples.
        seed: Seed of the bootstrap's NumPy generator (fixed: tables are
            reproducible).

    Returns:
        The fits, prediction by prediction.
    """
    observations = list(observations)
    axes = _axes_of(observations)
    all_points = _points(observations)
    fits = []
    for ip, pred in enumerate(predictions):
        points = [p for p in all_points if _selected(p, pred.where)]
        for iv, (var, theory) in enumerate(pred.slopes.items()):
            others = [
                c for c in (*_FACTS, *axes) if c != var and not _tied(points, c, var)
            ]
            groups: dict[str, list[_Point]] = {}
            for p in points:
                key = _hashable([p.column(c) for c in others])
                groups.setdefault(key, []).append(p)
            varying: list[str] = []  # what tells groups apart, one name each
            for c in others:
                if len({_hashable(p.column(c)) for p in points}) > 1 and not any(
                    _tied(points, c, v) for v in varying
                ):
                    varying.append(c)
            for ig, members in enumerate(groups.values()):
                at = ", ".join(
                    f"{c} = {json.dumps(members[0].column(c))}" for c in varying
                )
                fit = _fit(pred, var, theory, at, members, n_boot, (seed, ip, iv, ig))
                if fit is not None:
                    fits.append(fit)
    return fits


def _lack_of_fit(
    logx: np.ndarray, logy: np.ndarray, slope: float
) -> tuple[float, float]:
    """95% t interval of the slope from the residuals across points (k - 2 df)."""
    k = len(logx)
    if k < 3:
        return math.nan, math.nan
    from scipy import stats

    xc = logx - logx.mean()
    resid = logy - logy.mean() - slope * xc
    s2 = float(resid @ resid) / (k - 2)
    half = float(stats.t.ppf(0.975, k - 2)) * math.sqrt(s2 / float(xc @ xc))
    return slope - half, slope + half


def _saturated(stats_: _Stats) -> str:
    """Why a point is outside the regime a rate describes ("" when inside)."""
    c = stats_.ceiling
    if not math.isfinite(stats_.mean) or stats_.mean <= 0:
        return "mean <= 0 (no logarithm)"
    if math.isfinite(c) and stats_.mean > SATURATION * c:
        return f"saturated (mean > {SATURATION:g} x ceiling {c:.4g})"
    if stats_.informative is False and stats_.why.startswith("bound >="):
        return "the bound reaches the ceiling (outside the theory's regime)"
    return ""


def _verdict(used: int, min_seeds: int, lo: float, hi: float, theory: float) -> str:
    if used < 2:
        return "no fit"
    if used < MIN_POINTS or min_seeds < MIN_SEEDS:
        return "too few points/seeds"
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return "no fit"
    if not lo <= theory <= hi:
        return "not consistent"
    if hi - lo > MAX_CI_WIDTH:
        return "underpowered"
    return "consistent"


def _fit(
    pred: Prediction,
    var: str,
    theory: float,
    at: str,
    members: Sequence[_Point],
    n_boot: int,
    seed: tuple[int, ...],
) -> SlopeFit | None:
    rows = []
    for p in members:
        x = p.column(var)
        if not _finite(x) or x <= 0:
            continue
        rows.append((float(x), _stats(p, pred)))
    if len({x for x, _ in rows}) < 2:
        return None
    rows.sort(key=lambda r: r[0])
    x = np.array([r[0] for r in rows])
    mean = np.array([r[1].mean for r in rows])
    se = np.array([r[1].se for r in rows])
    bound = np.array([r[1].bound for r in rows])
    seeds = np.array([len(r[1].values) for r in rows])
    reasons = [_saturated(r[1]) for r in rows]
    use = np.array([not why for why in reasons])
    dropped = tuple(
        f"{var} = {xv:g}: {why}" for xv, why in zip(x, reasons, strict=True) if why
    )
    slope = intercept = lo = hi = math.nan
    seed_ci = lof_ci = (math.nan, math.nan)
    if len(set(x[use])) >= 2:
        logx = np.log(x[use])
        logy = np.log(mean[use])
        s, c = _ols(logx, logy[None, :])
        slope, intercept = float(s[0]), float(c[0])
        samples = [r[1].values for r, u in zip(rows, use, strict=True) if u]
        seed_ci = _bootstrap(samples, logx, n_boot, np.random.default_rng(list(seed)))
        lof_ci = _lack_of_fit(logx, logy, slope)
        ends = [v for v in (*seed_ci, *lof_ci) if math.isfinite(v)]
        if ends:
            lo, hi = min(ends), max(ends)
    used = int(use.sum())
    verdict = _verdict(used, int(seeds[use].min()) if used else 0, lo, hi, theory)
    return SlopeFit(
        pred,
        var,
        at,
        x,
        mean,
        se,
        bound,
        seeds,
        slope,
        intercept,
        lo,
        hi,
        theory,
        verdict == "consistent",
        used,
        verdict,
        use,
        dropped,
        seed_ci,
        lof_ci,
    )


# ---------------------------------------------------------------------- profiles
@dataclass(frozen=True)
class Profile:
    """A prediction without a slope: its measured mean against one grid axis.

    Attributes:
        prediction: The prediction.
        variable: The axis on the x side: of the numeric columns that vary over
            the prediction's grid points (one name per set of columns tied
            one-to-one), the one that leaves the fewest groups, then the one with
            the most values; ``n`` (or ``d``, ``epsilon``) when none varies.
        at: The values that fix the group (the other varying columns; empty when
            the prediction has one group).
        x: The variable at the group's points (sorted).
        mean: Mean measurement per point.
        se: Standard error per point (``NaN`` for one seed).
        bound: Mean bound per point (``NaN`` without one).
        seeds: Seeds per point.
    """

    prediction: Prediction
    variable: str
    at: str
    x: np.ndarray
    mean: np.ndarray
    se: np.ndarray
    bound: np.ndarray
    seeds: np.ndarray


def _numeric(points: Sequence[_Point], column: str) -> bool:
    return bool(points) and all(_finite(p.column(column)) for p in points)


def _crowd(points: Sequence[_Point], varying: Sequence[str], c: str) -> tuple[int, int]:
    """(groups left with ``c`` on the x axis, minus the values of ``c``)."""
    rest = [o for o in varying if o != c and not _tied(points, o, c)]
    keys = {_hashable([p.column(o) for o in rest]) for p in points}
    return len(keys), -len({_hashable(p.column(c)) for p in points})


def profiles(
    observations: Iterable[Mapping[str, Any]], predictions: Sequence[Prediction]
) -> list[Profile]:
    """The series behind the figures of the predictions without slopes.

    For each prediction without ``slopes`` and with at least one grid point, the
    axis is chosen as :attr:`Profile.variable` says, and the points are grouped by
    the other columns that vary (as :func:`slope_fits` groups them); a group may
    have a single point.

    Args:
        observations: One per cell.
        predictions: The spec's predictions (those with slopes are skipped).

    Returns:
        The series, prediction by prediction and group by group.

    Examples:
        >>> from dpsample.validation.spec import Prediction
        >>> from dpsample.validation.tables import profiles
        >>> obs = [
        ...     {"cell": f"{m}-{s}", "seed": s, "status": "ok", "algorithm": "net",
        ...      "n": 100, "d": 2, "epsilon": 1.0, "delta": 1e-6,
        ...      "axes": {"votes": m}, "values": {"success": m / (m + 1)}}
        ...     for m in (1, 3, 9) for s in range(2)]
        >>> [p] = profiles(obs, [Prediction("N4", "success")])
        >>> p.variable, p.x.tolist(), p.mean.tolist()
        ('votes', [1.0, 3.0, 9.0], [0.5, 0.75, 0.9])
    """
    observations = list(observations)
    axes = _axes_of(observations)
    all_points = _points(observations)
    out = []
    for pred in predictions:
        if pred.slopes:
            continue
        points = [p for p in all_points if _selected(p, pred.where)]
        if not points:
            continue
        varying: list[str] = []  # one name per set of tied columns
        for c in (*_FACTS, *axes):
            if len({_hashable(p.column(c)) for p in points}) > 1 and not any(
                _tied(points, c, v) for v in varying
            ):
                varying.append(c)
        numeric = [c for c in varying if _numeric(points, c)]
        if numeric:  # fewest groups, then most values
            var = min(numeric, key=lambda c: _crowd(points, varying, c))
        else:
            fixed = [c for c in ("n", "d", "epsilon") if _numeric(points, c)]
            if not fixed:
                continue
            var = fixed[0]
        others = [c for c in varying if c != var and not _tied(points, c, var)]
        groups: dict[str, list[_Point]] = {}
        for p in points:
            groups.setdefault(_hashable([p.column(c) for c in others]), []).append(p)
        for members in groups.values():
            at = ", ".join(f"{c} = {json.dumps(members[0].column(c))}" for c in others)
            rows = sorted(
                ((float(p.column(var)), _stats(p, pred)) for p in members),
                key=lambda r: r[0],
            )
            out.append(
                Profile(
                    pred,
                    var,
                    at,
                    np.array([r[0] for r in rows]),
                    np.array([r[1].mean for r in rows]),
                    np.array([r[1].se for r in rows]),
                    np.array([r[1].bound for r in rows]),
                    np.array([len(r[1].values) for r in rows]),
                )
            )
    return out


def fit_slopes(
    observations: Iterable[Mapping[str, Any]],
    predictions: Sequence[Prediction],
    *,
    experiment: str,
    n_boot: int = 2000,
    seed: int = 0,
    fits: Sequence[SlopeFit] | None = None,
) -> pd.DataFrame:
    """``slopes.csv``: one row per prediction, slope variable and group of points.

    Columns :data:`SLOPE_COLUMNS` first (see :func:`slope_fits` for the fit and
    :class:`SlopeFit` for ``verdict``; ``consistent`` is ``verdict ==
    "consistent"``), then ``measurement``, ``at`` (what fixes the group),
    ``points`` (grid points in the fit), ``seeds`` (finished seeds in them),
    ``min_seeds`` (the fewest at one of them), ``ci_width``, ``seed_ci_low``,
    ``seed_ci_high`` (the seed bootstrap alone), ``lof_ci_low``, ``lof_ci_high``
    (the lack-of-fit interval alone), ``dropped`` (the points left out and why) and
    ``label``.

    Args:
        observations: One per cell.
        predictions: The spec's predictions.
        experiment: The experiment's name.
        n_boot: Bootstrap resamples.
        seed: The bootstrap's seed.
        fits: Fits already computed by :func:`slope_fits` (then the other
            arguments but ``experiment`` are not used).

    Returns:
        The table.

    Examples:
        >>> import numpy as np
        >>> from dpsample.validation.spec import Prediction
        >>> from dpsample.validation.tables import fit_slopes
        >>> rng = np.random.default_rng(0)
        >>> obs = [
        ...     {"cell": f"{n}-{s}", "seed": s, "status": "ok", "algorithm": "a",
        ...      "n": n, "d": 1, "epsilon": 1.0, "delta": 1e-6,
        ...      "axes": {"data.n": n},
        ...      "values": {"risk": n ** -0.5 * rng.lognormal(0, 0.05)}}
        ...     for n in (100, 200, 400, 800, 1600) for s in range(8)]
        >>> t = fit_slopes(obs, [Prediction("p", "risk", slopes={"n": -0.5})],
        ...                experiment="e")
        >>> row = t.to_dict(orient="records")[0]
        >>> abs(row["fitted_slope"] + 0.5) < 0.05, row["verdict"], row["points"]
        (True, 'consistent', 5)
        >>> few = fit_slopes(obs[:32], [Prediction("p", "risk", slopes={"n": -0.5})],
        ...                  experiment="e")
        >>> few.loc[0, "verdict"], bool(few.loc[0, "consistent"])
        ('too few points/seeds', False)
    """
    if fits is None:
        fits = slope_fits(observations, predictions, n_boot=n_boot, seed=seed)
    rows = [
        {
            "experiment": experiment,
            "prediction": f.prediction.name,
            "variable": f.variable,
            "fitted_slope": f.slope,
            "ci_low": f.ci_low,
            "ci_high": f.ci_high,
            "theory_slope": f.theory,
            "verdict": f.verdict,
            "consistent": f.consistent,
            "measurement": f.prediction.measurement,
            "at": f.at,
            "points": f.used,
            "seeds": int(f.seeds[_kept(f)].sum()),
            "min_seeds": int(f.seeds[_kept(f)].min()) if f.used else 0,
            "ci_width": f.ci_high - f.ci_low,
            "seed_ci_low": f.seed_ci[0],
            "seed_ci_high": f.seed_ci[1],
            "lof_ci_low": f.lack_of_fit_ci[0],
            "lof_ci_high": f.lack_of_fit_ci[1],
            "dropped": "; ".join(f.dropped),
            "label": LABEL,
        }
        for f in fits
    ]
    frame = pd.DataFrame(rows, columns=[*SLOPE_COLUMNS, *_SLOPE_EXTRA])
    frame["consistent"] = frame["consistent"].astype(bool)
    return frame


_SLOPE_EXTRA = (
    "measurement",
    "at",
    "points",
    "seeds",
    "min_seeds",
    "ci_width",
    "seed_ci_low",
    "seed_ci_high",
    "lof_ci_low",
    "lof_ci_high",
    "dropped",
    "label",
)


def _kept(fit: SlopeFit) -> np.ndarray:
    return np.ones(len(fit.x), bool) if fit.kept is None else fit.kept


# ------------------------------------------------------------------- comparisons
def _arm_values(
    point: _Point, measurement: str, epsilon: str | None
) -> dict[int, tuple[float, float]]:
    """``{seed: (measurement, spent epsilon)}`` of a point's finished seeds."""
    out = {}
    for o in point.obs:
        if o["status"] != "ok":
            continue
        v = o["values"].get(measurement)
        e = o.get("guarantee_epsilon") if epsilon is None else o["values"].get(epsilon)
        if _finite(v):
            out[int(o["seed"])] = (float(v), float(e) if _finite(e) else math.nan)
    return out


def _paired_test(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided Wilcoxon signed-rank p-value of ``a - b`` (1 when all equal)."""
    from scipy import stats

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
    points = _points(observations)
    rows = []
    for comp in comparisons:
        arm_a, arm_b = comp.arms
        sides = []
        for arm in comp.arms:
            sides.append(
                [
                    p
                    for p in points
                    if _selected(p, comp.where) and _selected(p, arm.where)
                ]
            )
        for pa in sides[0]:
            key = _hashable([pa.column(c) for c in comp.by])
            match = [
                pb
                for pb in sides[1]
                if _hashable([pb.column(c) for c in comp.by]) == key
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
