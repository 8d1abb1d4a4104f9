"""The sweep's tables, as pure functions of the cells' observations.

An *observation* is one cell seen by the tables (:func:`observation` builds it from a
:class:`~dpsample.validation.spec.Cell` and its record; tests build them directly):

.. code-block:: python

    {"cell": "3f2a...", "seed": 0, "status": "ok",   # "ok" | "failed" | "missing"
     "algorithm": "net", "n": 200, "d": 2, "epsilon": 1.0, "delta": 1e-6,
     "axes": {"data.n": 200, "privacy.epsilon": 1.0},   # the grid point
     "values": {"excess_empirical_risk": 0.01, ...},   # measurements
     "guarantee_epsilon": 1.0, "seconds": 0.7}

:func:`summarize` gives ``summary.csv`` (one row per grid point and prediction) and
:func:`fit_slopes` gives ``slopes.csv`` (one row per prediction, slope variable and
group of grid points that differ only in that variable). All measured values are
non-private diagnostics of the released points (see :data:`LABEL`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dpsample._src import precision
from dpsample.validation.spec import SUMMARY_VARIABLES, Cell, Prediction

__all__ = [
    "LABEL",
    "SLOPE_COLUMNS",
    "SLOPE_TOLERANCE",
    "SUMMARY_COLUMNS",
    "Profile",
    "SlopeFit",
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
    "consistent",
)
#: A fitted slope within this distance of the theory slope is consistent with it
#: even when the bootstrap interval excludes the theory slope.
SLOPE_TOLERANCE = 0.15
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
        "guarantee_epsilon": rec["guarantee"]["epsilon"] if ok else None,
        "seconds": rec.get("seconds"),
    }


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


def _finite(value: Any) -> bool:
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


def _stats(point: _Point, pred: Prediction) -> _Stats:
    ok = [o for o in point.obs if o["status"] == "ok"]
    pairs = [(o["values"].get(pred.measurement), o) for o in ok]
    values = np.array([v for v, _ in pairs if _finite(v)], np.float64)
    k = len(values)
    mean = float(values.mean()) if k else math.nan
    se = float(values.std(ddof=1) / math.sqrt(k)) if k > 1 else math.nan
    bound, holds = math.nan, None
    if pred.bound is not None:
        checked = [
            (v, o["values"].get(pred.bound))
            for v, o in pairs
            if _finite(v) and _finite(o["values"].get(pred.bound))
        ]
        bounds = [b for _, b in checked]
        if bounds:
            bound = float(np.mean(bounds))
            holds = all(v <= b for v, b in checked)
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
    exceeded its bound (empty without a bound). Then ``measurement``,
    ``bound_name``, ``measured_max``, ``measured_mc_se`` (mean of the
    ``<measurement>_se`` a Monte Carlo measurement reports), ``failed`` (failed or
    missing seeds), ``guarantee_epsilon`` (largest reported epsilon of the released
    points), ``label`` (:data:`LABEL`) and one column per grid axis.

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
        >>> row = summarize(obs, [Prediction("p", "risk", "thm")], experiment="e")
        >>> row = row.to_dict(orient="records")[0]
        >>> [row[k] for k in ("seeds", "measured_mean", "bound", "ratio", "holds")]
        [2, 0.2, 0.5, 0.4, True]
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
    frame["holds"] = frame["holds"].astype("boolean")
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
        x: The variable at the group's points (sorted).
        mean: Mean measurement per point.
        se: Standard error per point (``NaN`` for one seed).
        bound: Mean bound per point (``NaN`` without one).
        seeds: Seeds per point.
        slope: Least-squares slope of ``log mean`` on ``log x`` (``NaN`` with fewer
            than two usable points).
        intercept: Its intercept.
        ci_low: 2.5% bootstrap quantile (seeds resampled within each point).
        ci_high: 97.5% quantile.
        theory: The theory slope.
        consistent: ``theory`` lies in ``[ci_low, ci_high]`` or within
            :data:`SLOPE_TOLERANCE` of ``slope``.
        used: Points with a positive mean (the others cannot enter a log-log fit).
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
    """95% percentile interval of the slope, seeds resampled within each point."""
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
    fit of ``log(measured_mean)`` on ``log(variable)``, and a 95% percentile
    bootstrap interval from ``n_boot`` resamples of the seeds within each point.

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
    use = np.isfinite(mean) & (mean > 0)
    slope = intercept = lo = hi = math.nan
    if len(set(x[use])) >= 2:
        logx = np.log(x[use])
        s, c = _ols(logx, np.log(mean[use])[None, :])
        slope, intercept = float(s[0]), float(c[0])
        samples = [r[1].values for r, u in zip(rows, use, strict=True) if u]
        lo, hi = _bootstrap(samples, logx, n_boot, np.random.default_rng(list(seed)))
    consistent = bool(
        (math.isfinite(lo) and lo <= theory <= hi)
        or (math.isfinite(slope) and abs(slope - theory) <= SLOPE_TOLERANCE)
    )
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
        consistent,
        int(use.sum()),
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
    :class:`SlopeFit` for ``consistent``), then ``measurement``, ``at`` (what fixes
    the group), ``points`` (grid points in the fit), ``seeds`` (finished seeds in
    them) and ``label``.

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
        ...     for n in (100, 200, 400, 800) for s in range(5)]
        >>> t = fit_slopes(obs, [Prediction("p", "risk", slopes={"n": -0.5})],
        ...                experiment="e")
        >>> row = t.to_dict(orient="records")[0]
        >>> abs(row["fitted_slope"] + 0.5) < 0.05, row["consistent"]
        (True, True)
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
            "consistent": f.consistent,
            "measurement": f.prediction.measurement,
            "at": f.at,
            "points": f.used,
            "seeds": int(f.seeds.sum()),
            "label": LABEL,
        }
        for f in fits
    ]
    columns = [*SLOPE_COLUMNS, "measurement", "at", "points", "seeds", "label"]
    frame = pd.DataFrame(rows, columns=columns)
    frame["consistent"] = frame["consistent"].astype(bool)
    return frame


precision.scope_public(globals())
