"""A slope variable with a single value in the grid (e.g. a smoke grid with one d)
still gives a figure, without matplotlib's singular-limits warning (an error under
the suite's ``filterwarnings = error``)."""

import io
import math

import numpy as np

from dpsample.validation.figures import plot_fits
from dpsample.validation.spec import Prediction
from dpsample.validation.tables import SlopeFit


def test_plot_fits_with_one_value_of_the_variable():
    pred = Prediction("p", "risk", bound="b", slopes={"d": 0.0})
    fit = SlopeFit(
        pred, "d", "n = 100", np.array([2.0]), np.array([0.5]), np.array([0.1]),
        np.array([1.0]), np.array([2]), math.nan, math.nan, math.nan, math.nan,
        0.0, False, 1,
    )  # fmt: skip
    fig = plot_fits([fit], experiment="e")
    fig.savefig(io.BytesIO(), format="png")
    low, high = fig.axes[0].get_xlim()
    assert low < 2.0 < high


def _fit(x, mean):
    pred = Prediction("p", "risk", slopes={"n": 0.0})
    k = len(x)
    return SlopeFit(
        pred, "n", "", np.array(x), np.array(mean), np.full(k, 0.1),
        np.full(k, math.nan), np.full(k, 2), math.nan, math.nan, math.nan,
        math.nan, 0.0, False, 1,
    )  # fmt: skip


def test_plot_fits_with_one_positive_point_or_none():
    """Fails before the fix: matplotlib's singular-xlim and empty-legend warnings."""
    for mean in ([0.0, 0.3], [0.0, 0.0]):
        fig = plot_fits([_fit([250.0, 1000.0], mean)], experiment="e")
        fig.savefig(io.BytesIO(), format="png")
    assert fig.axes[0].texts  # says there is nothing to plot
