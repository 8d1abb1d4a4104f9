"""Figures of a sweep: one PNG per prediction and variable (slopes or not).

Each slope figure (log-log) shows, for every group of grid points of a
:class:`SlopeFit`, the measured mean with standard-error bars, the theorem's bound
(dashed), the fitted line (solid) and a line of the theory slope through the points'
centre (dotted). Each figure of a prediction without a slope (a :class:`Profile`)
shows the measured mean with standard-error bars against its grid axis (log x where
the axis is positive and spans more than a factor 10) and the bound (dashed). Drawn
with :class:`matplotlib.figure.Figure` and the Agg canvas directly: no pyplot, no
global backend or style change.
"""

from __future__ import annotations

import math
import os
import re
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from dpsample._src import precision
from dpsample.validation.slopes import Profile, SlopeFit

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["figure_name", "plot_fits", "plot_profiles", "write_figures"]


def figure_name(prediction: str, variable: str) -> str:
    """The file name of a figure: ``<prediction>__<variable>.png``, made safe.

    Args:
        prediction: The prediction's name.
        variable: The slope variable.

    Returns:
        The file name.

    Examples:
        >>> from dpsample.validation.figures import figure_name
        >>> figure_name("risk vs n", "data.n")
        'risk_vs_n__data.n.png'
    """
    safe = re.compile(r"[^A-Za-z0-9_.-]+")
    return f"{safe.sub('_', prediction)}__{safe.sub('_', variable)}.png"


def _figure(size: tuple[float, float]) -> Figure:
    """A figure on the Agg canvas (no pyplot, no global backend)."""
    # lazy: matplotlib costs ~0.2 s, paid by every process (each Dask worker) that
    # imports dpsample.validation, though only write_outputs draws
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=size, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def plot_fits(fits: Sequence[SlopeFit], *, experiment: str) -> Figure:
    """One figure for the fits of one prediction and variable (several groups).

    Args:
        fits: Fits that share a prediction and a variable.
        experiment: The experiment's name (title).

    Returns:
        A :class:`matplotlib.figure.Figure`.
    """
    pred, var = fits[0].prediction, fits[0].variable
    fig = _figure((6.0, 4.5))
    ax = fig.add_subplot()
    ax.set_xscale("log")
    ax.set_yscale("log")
    colors = [f"C{i % 10}" for i in range(len(fits))]
    xs_shown: list[float] = []  # what is drawn, to widen a single-valued axis
    ys_shown: list[float] = []
    for fit, color in zip(fits, colors, strict=True):
        label = fit.at or pred.measurement
        ok = np.isfinite(fit.mean) & (fit.mean > 0)
        if ok.any():
            se = np.where(np.isfinite(fit.se), fit.se, 0.0)[ok]
            lower = np.minimum(se, 0.999 * fit.mean[ok])  # stay above 0 on a log axis
            ax.errorbar(
                fit.x[ok],
                fit.mean[ok],
                yerr=np.vstack([lower, se]),
                fmt="o",
                color=color,
                capsize=3,
                label=f"measured: {label}",
            )
            xs_shown += fit.x[ok].tolist()
            ys_shown += fit.mean[ok].tolist()
        bound_ok = np.isfinite(fit.bound) & (fit.bound > 0)
        if bound_ok.any():
            ax.plot(
                fit.x[bound_ok],
                fit.bound[bound_ok],
                "--",
                color=color,
                label=f"bound ({pred.bound})",
            )
            xs_shown += fit.x[bound_ok].tolist()
            ys_shown += fit.bound[bound_ok].tolist()
        if math.isfinite(fit.slope):
            xs = np.geomspace(fit.x.min(), fit.x.max(), 50)
            ax.plot(
                xs,
                np.exp(fit.intercept) * xs**fit.slope,
                "-",
                color=color,
                alpha=0.8,
                label=f"fit: slope {fit.slope:.3g} "
                f"[{fit.ci_low:.3g}, {fit.ci_high:.3g}]",
            )
            lx = np.log(fit.x[ok])
            cx, cy = lx.mean(), np.log(fit.mean[ok]).mean()
            ax.plot(
                xs,
                np.exp(cy + fit.theory * (np.log(xs) - cx)),
                ":",
                color="0.3",
                label=f"theory slope {fit.theory:g}",
            )
    ax.set_xlabel(var)
    ax.set_ylabel(f"{pred.measurement}\n(non-private diagnostic)")
    ax.set_title(f"{experiment}: {pred.name}", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    # one value of the variable (or of the measurement): widen the log axis by a
    # factor 2 each side rather than leave matplotlib a singular range
    with warnings.catch_warnings():  # the pending autoscale of a singular range
        warnings.filterwarnings("ignore", "Attempting to set identical", UserWarning)
        for values, set_lim in ((xs_shown, ax.set_xlim), (ys_shown, ax.set_ylim)):
            if values and min(values) == max(values):
                set_lim(values[0] / 2.0, values[0] * 2.0)
    if xs_shown:
        ax.legend(fontsize=7)
    else:
        ax.text(0.5, 0.5, "no positive measurement to plot", ha="center",
                transform=ax.transAxes)  # fmt: skip
        ax.set_xlim(1.0, 10.0)
        ax.set_ylim(1.0, 10.0)
    return fig


def _spans(values: Sequence[float], factor: float) -> bool:
    """All positive and ``max / min > factor``."""
    return bool(values) and min(values) > 0 and max(values) > factor * min(values)


def plot_profiles(profiles: Sequence[Profile], *, experiment: str) -> Figure:
    """One figure for a prediction without a slope (several groups).

    The measured mean with standard-error bars against the profile's axis, and the
    bound (dashed) where there is one. The x axis is logarithmic when the axis is
    positive and spans more than a factor 10; the y axis when everything drawn is
    positive and spans more than a factor 100.

    Args:
        profiles: Profiles that share a prediction (and so a variable).
        experiment: The experiment's name (title).

    Returns:
        A :class:`matplotlib.figure.Figure`.
    """
    pred, var = profiles[0].prediction, profiles[0].variable
    wide = len(profiles) > 3  # a legend beside the axes
    fig = _figure((8.5 if wide else 6.0, 4.5))
    ax = fig.add_subplot()
    xs_shown: list[float] = []
    ys_shown: list[float] = []
    for prof in profiles:
        ok = np.isfinite(prof.mean)
        xs_shown += prof.x[ok].tolist()
        ys_shown += prof.mean[ok].tolist()
        bound_ok = np.isfinite(prof.bound)
        xs_shown += prof.x[bound_ok].tolist()
        ys_shown += prof.bound[bound_ok].tolist()
    log_x = _spans(xs_shown, 10.0)
    log_y = _spans(ys_shown, 100.0)
    if log_x:
        ax.set_xscale("log")
    if log_y:
        ax.set_yscale("log")
    for i, prof in enumerate(profiles):
        color = f"C{i % 10}"
        label = prof.at or pred.measurement
        ok = np.isfinite(prof.mean)
        if ok.any():
            se = np.where(np.isfinite(prof.se), prof.se, 0.0)[ok]
            lower = np.minimum(se, 0.999 * prof.mean[ok]) if log_y else se
            ax.errorbar(
                prof.x[ok],
                prof.mean[ok],
                yerr=np.vstack([lower, se]),
                fmt="o-",
                color=color,
                capsize=3,
                label=f"measured: {label}",
            )
        bound_ok = np.isfinite(prof.bound)
        if bound_ok.any():
            ax.plot(
                prof.x[bound_ok],
                prof.bound[bound_ok],
                "x--",
                color=color,
                label=f"bound ({pred.bound})" + (f": {prof.at}" if prof.at else ""),
            )
    grid_x = sorted(set(xs_shown))
    if log_x and len(grid_x) <= 12:  # label the grid's values, not the decades
        from matplotlib.ticker import NullFormatter  # lazy: see _figure

        ax.set_xticks(grid_x, [f"{v:g}" for v in grid_x])
        ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel(var)
    ax.set_ylabel(f"{pred.measurement}\n(non-private diagnostic)")
    ax.set_title(f"{experiment}: {pred.name} (no theory slope)", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    with warnings.catch_warnings():  # the pending autoscale of a singular range
        warnings.filterwarnings("ignore", "Attempting to set identical", UserWarning)
        for values, set_lim, log in (
            (xs_shown, ax.set_xlim, log_x),
            (ys_shown, ax.set_ylim, log_y),
        ):
            if values and min(values) == max(values):
                v = values[0]
                if log or v > 0:
                    set_lim(v / 2.0, v * 2.0) if log else set_lim(0.0, 2.0 * v)
                else:
                    half = abs(v) if v != 0 else 1.0
                    set_lim(v - half, v + half)
    if xs_shown:
        if len(ax.get_legend_handles_labels()[1]) > 6:  # beside the axes
            ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.02, 1.0))
        else:
            ax.legend(fontsize=7)
    else:
        ax.text(0.5, 0.5, "no finite measurement to plot", ha="center",
                transform=ax.transAxes)  # fmt: skip
        ax.set_xlim(0.0, 1.0)
        ax.set_ylim(0.0, 1.0)
    return fig


def write_figures(
    fits: Sequence[SlopeFit],
    folder: str | os.PathLike[str],
    *,
    experiment: str,
    profiles: Sequence[Profile] = (),
) -> list[Path]:
    """Write one PNG per prediction and variable into ``folder``.

    Args:
        fits: From :func:`~dpsample.validation.tables.slope_fits`.
        folder: The output folder (created if missing).
        experiment: The experiment's name.
        profiles: From :func:`~dpsample.validation.tables.profiles`: one more PNG
            per prediction without a slope, after the slope figures.

    Returns:
        The files written, in order.
    """
    folder = Path(folder)
    groups: dict[tuple[str, str], list[SlopeFit]] = {}
    for fit in fits:
        groups.setdefault((fit.prediction.name, fit.variable), []).append(fit)
    shown: dict[tuple[str, str], list[Profile]] = {}
    for prof in profiles:
        shown.setdefault((prof.prediction.name, prof.variable), []).append(prof)
    figs = [
        (figure_name(pred, var), plot_fits(members, experiment=experiment))
        for (pred, var), members in groups.items()
    ]
    figs += [
        (figure_name(pred, var), plot_profiles(members, experiment=experiment))
        for (pred, var), members in shown.items()
    ]
    paths = []
    for name, fig in figs:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / name
        tmp = path.with_name(f".{path.name}.tmp")
        fig.savefig(tmp, format="png", dpi=120)
        os.replace(tmp, path)
        paths.append(path)
    return paths


precision.scope_public(globals())
