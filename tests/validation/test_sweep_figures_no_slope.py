"""Predictions without a theory slope get a figure too: the measured mean with SE
bars against the grid axis that varies (log x when it is positive and spans more
than a factor 10), the bound where there is one, linked in ``report.md``."""

import io
import math

import numpy as np
import pandas as pd
import pytest
from sweep_hooks import tiny_spec

from dpsample.validation import run_sweep
from dpsample.validation.figures import plot_profiles, write_figures
from dpsample.validation.spec import Prediction
from dpsample.validation.tables import profiles

SCALES = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)


def _obs(values, *, scale, seed, algorithm="net", n=1000, dim=4):
    return {
        "cell": f"{algorithm}-{scale}-{n}-{dim}-{seed}",
        "seed": seed,
        "status": "ok",
        "algorithm": algorithm,
        "n": n,
        "d": dim,
        "epsilon": 1.0,
        "delta": 1e-6,
        # data.params.dim and the net are tied to d: no group of their own
        "axes": {
            "data.n": n,
            "data.params.dim": dim,
            "options.net": [[0.5] * dim],
            "votes": scale,
        },
        "values": values,
        "guarantee_epsilon": 1.0,
    }


def _voting(seeds=4, algorithms=("net",)):
    """success = s / (1 + s) + seed noise, ceiling min(1, 2 s)."""
    rng = np.random.default_rng(7)
    return [
        _obs(
            {
                "success": s / (1 + s) + 0.01 * rng.standard_normal(),
                "ceiling": min(1.0, 2.0 * s),
                "risk": -0.01 * s,  # nonpositive: a linear axis
            },
            scale=s,
            seed=k,
            algorithm=alg,
        )
        for alg in algorithms
        for s in SCALES
        for k in range(seeds)
    ]


def _png(fig):
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


def test_profile_takes_the_varying_axis_and_the_seed_statistics():
    obs = _voting()
    preds = [
        Prediction("N4", "success", bound="ceiling"),
        Prediction("with_slope", "success", slopes={"votes": 1.0}),  # not a profile
    ]
    [prof] = profiles(obs, preds)
    assert prof.prediction.name == "N4" and prof.variable == "votes"
    assert prof.at == ""  # n, d, the net do not vary
    assert prof.x.tolist() == list(SCALES)
    assert prof.seeds.tolist() == [4] * len(SCALES)
    for x, mean, se in zip(prof.x, prof.mean, prof.se, strict=True):
        vals = [o["values"]["success"] for o in obs if o["axes"]["votes"] == x]
        assert math.isclose(mean, np.mean(vals))
        assert math.isclose(se, np.std(vals, ddof=1) / 2.0)
    assert prof.bound.tolist() == [min(1.0, 2.0 * s) for s in SCALES]


def test_profile_groups_by_the_other_varying_columns():
    obs = _voting(algorithms=("net", "gibbs"))
    obs += [  # n varies for net only: three n values beat two algorithms
        _obs({"success": 0.5}, scale=1.0, seed=0, n=n) for n in (250, 4000)
    ]
    got = profiles(obs, [Prediction("p", "success", where={"votes": [1.0]})])
    assert [p.variable for p in got] == ["n", "n"]
    assert [p.at for p in got] == ['algorithm = "net"', 'algorithm = "gibbs"']
    assert got[0].x.tolist() == [250.0, 1000.0, 4000.0]
    assert got[1].x.tolist() == [1000.0]


def test_profile_figure_axes_and_no_warnings():
    """The suite runs with filterwarnings = error: any matplotlib warning fails."""
    obs = _voting()
    [prof] = profiles(obs, [Prediction("N4", "success", bound="ceiling")])
    fig = plot_profiles([prof], experiment="e")
    assert _png(fig)[:8] == b"\x89PNG\r\n\x1a\n"
    ax = fig.axes[0]
    assert ax.get_xscale() == "log"  # 0.25 .. 8 spans a factor 32
    assert ax.get_yscale() == "linear"
    assert len(ax.get_lines()) >= 2  # measured and bound
    assert "no theory slope" in ax.get_title()

    # nonpositive values: linear axes; a narrow x span: linear x
    [neg] = profiles(
        [o for o in obs if o["axes"]["votes"] in (1.0, 2.0, 4.0)],
        [Prediction("r", "risk")],
    )
    ax = plot_profiles([neg], experiment="e").axes[0]
    assert (ax.get_xscale(), ax.get_yscale()) == ("linear", "linear")

    # one grid point, one seed (SE NaN); a zero measurement; nothing finite at all
    one = [_obs({"success": 0.0, "ceiling": 1.0}, scale=1.0, seed=0)]
    for values in ({"success": 0.0}, {"success": 0.3}, {"success": math.nan}):
        one[0]["values"] = values
        [p] = profiles(one, [Prediction("p", "success", bound="ceiling")])
        assert p.variable == "n"  # nothing varies: n on the x axis
        fig = plot_profiles([p], experiment="e")
        _png(fig)
        low, high = fig.axes[0].get_xlim()
        if math.isnan(values["success"]):
            assert fig.axes[0].texts  # says there is nothing to plot
        else:
            assert low < 1000.0 < high


def test_write_figures_names_profiles_after_the_slope_figures(tmp_path):
    obs = _voting()
    [prof] = profiles(obs, [Prediction("N4 success", "success")])
    paths = write_figures([], tmp_path, experiment="e", profiles=[prof])
    assert [p.name for p in paths] == ["N4_success__votes.png"]
    assert paths[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow  # 12 s in the fast suite (a whole sweep)
def test_a_sweep_draws_and_links_the_figure_of_a_prediction_without_a_slope(
    tmp_path,
):
    spec = tiny_spec(
        predictions=[
            {"name": "grad", "measurement": "gradient_norm", "slopes": {"n": -0.5}},
            {"name": "grad_no_slope", "measurement": "gradient_norm"},
        ]
    )
    out = tmp_path / "sweep"
    run_sweep(spec, out, workers=0)
    for name in ("grad__n.png", "grad_no_slope__n.png"):
        assert (out / "figures" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"figures/{name}" in (out / "report.md").read_text()
    assert pd.read_csv(out / "slopes.csv")["prediction"].tolist() == ["grad"]
