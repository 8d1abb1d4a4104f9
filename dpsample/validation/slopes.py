"""``slopes.csv`` and the figures' profiles: log-log slope fits of a sweep.

:func:`slope_fits` fits, per prediction and slope variable, one log-log line to each
group of grid points that differ only in that variable (bootstrap and lack-of-fit
intervals, a ``verdict`` from :data:`VERDICTS`); :func:`fit_slopes` is the table
``slopes.csv``; :func:`profiles` are the measurements against a variable where no
slope is claimed. All measured values are non-private diagnostics (see
:data:`~dpsample.validation.points.LABEL`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from dpsample._src import precision
from dpsample.validation.points import (
    FACTS,
    LABEL,
    GridPoint,
    PointStats,
    axes_of,
    grid_points,
    hashable,
    is_finite,
    point_stats,
    selected,
)
from dpsample.validation.spec import (
    Prediction,
)

__all__ = [
    "MAX_CI_WIDTH",
    "MIN_POINTS",
    "MIN_SEEDS",
    "SATURATION",
    "SLOPE_COLUMNS",
    "VERDICTS",
    "Profile",
    "SlopeFit",
    "fit_slopes",
    "profiles",
    "slope_fits",
]

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

#: The verdicts of ``slopes.csv``, from the weakest evidence up.
VERDICTS = (
    "no fit",
    "too few points/seeds",
    "underpowered",
    "not consistent",
    "consistent",
)


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


def _tied(points: Sequence[GridPoint], a: str, b: str) -> bool:
    """Whether columns ``a`` and ``b`` determine each other over ``points``."""
    ab: dict[str, str] = {}
    ba: dict[str, str] = {}
    for p in points:
        x, y = hashable(p.column(a)), hashable(p.column(b))
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
    axes = axes_of(observations)
    all_points = grid_points(observations)
    fits = []
    for ip, pred in enumerate(predictions):
        points = [p for p in all_points if selected(p, pred.where)]
        for iv, (var, theory) in enumerate(pred.slopes.items()):
            others = [
                c for c in (*FACTS, *axes) if c != var and not _tied(points, c, var)
            ]
            groups: dict[str, list[GridPoint]] = {}
            for p in points:
                key = hashable([p.column(c) for c in others])
                groups.setdefault(key, []).append(p)
            varying: list[str] = []  # what tells groups apart, one name each
            for c in others:
                if len({hashable(p.column(c)) for p in points}) > 1 and not any(
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
    xc = logx - logx.mean()
    resid = logy - logy.mean() - slope * xc
    s2 = float(resid @ resid) / (k - 2)
    half = float(stats.t.ppf(0.975, k - 2)) * math.sqrt(s2 / float(xc @ xc))
    return slope - half, slope + half


def _saturated(stats_: PointStats) -> str:
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
    members: Sequence[GridPoint],
    n_boot: int,
    seed: tuple[int, ...],
) -> SlopeFit | None:
    rows = []
    for p in members:
        x = p.column(var)
        if not is_finite(x) or x <= 0:
            continue
        rows.append((float(x), point_stats(p, pred)))
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


def _numeric(points: Sequence[GridPoint], column: str) -> bool:
    return bool(points) and all(is_finite(p.column(column)) for p in points)


def _crowd(
    points: Sequence[GridPoint], varying: Sequence[str], c: str
) -> tuple[int, int]:
    """(groups left with ``c`` on the x axis, minus the values of ``c``)."""
    rest = [o for o in varying if o != c and not _tied(points, o, c)]
    keys = {hashable([p.column(o) for o in rest]) for p in points}
    return len(keys), -len({hashable(p.column(c)) for p in points})


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
    axes = axes_of(observations)
    all_points = grid_points(observations)
    out = []
    for pred in predictions:
        if pred.slopes:
            continue
        points = [p for p in all_points if selected(p, pred.where)]
        if not points:
            continue
        varying: list[str] = []  # one name per set of tied columns
        for c in (*FACTS, *axes):
            if len({hashable(p.column(c)) for p in points}) > 1 and not any(
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
        groups: dict[str, list[GridPoint]] = {}
        for p in points:
            groups.setdefault(hashable([p.column(c) for c in others]), []).append(p)
        for members in groups.values():
            at = ", ".join(f"{c} = {json.dumps(members[0].column(c))}" for c in others)
            rows = sorted(
                ((float(p.column(var)), point_stats(p, pred)) for p in members),
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


precision.scope_public(globals())
