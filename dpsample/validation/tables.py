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

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from dpsample._src import precision
from dpsample.validation.comparisons import (
    COMPARISON_COLUMNS,
    EPSILON_TOLERANCE,
    compare,
)
from dpsample.validation.points import (
    LABEL,
    axes_of,
    ceiling,
    grid_points,
    is_finite,
    observation,
    point_stats,
    selected,
)
from dpsample.validation.slopes import (
    MAX_CI_WIDTH,
    MIN_POINTS,
    MIN_SEEDS,
    SATURATION,
    SLOPE_COLUMNS,
    VERDICTS,
    Profile,
    SlopeFit,
    fit_slopes,
    profiles,
    slope_fits,
)
from dpsample.validation.spec import (
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
    axes = axes_of(observations)
    points = grid_points(observations)
    rows = []
    for pred in predictions:
        for point in points:
            if not selected(point, pred.where):
                continue
            st = point_stats(point, pred)
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
                    if is_finite(st.bound) and st.bound != 0
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


precision.scope_public(globals())
