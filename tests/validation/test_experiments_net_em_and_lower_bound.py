"""The smoke sizes of the seed-000 experiments net_em_rates (N1, N2) and lower_bound
(N3, N4): each spec runs with ``smoke=True`` and its tables have rows with finite
measurements (the spec's full size is run with ``dpsample sweep``, results in
``experiments/results/``)."""

import math
from pathlib import Path

import numpy as np
import pytest

from dpsample.validation import sweep

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["net_em_rates", "lower_bound"])
def test_experiment_smoke(name, tmp_path):
    summary = sweep(
        ROOT / "experiments" / f"{name}.toml",
        out=tmp_path,
        smoke=True,
        workers=0,
        progress=False,
    )
    assert not summary.attrs.get("failed")
    assert len(summary) > 0
    assert (summary["seeds"] == 2).all()
    assert np.isfinite(summary["measured_mean"].astype(float)).all()
    bounded = summary[summary["bound"].notna()]
    assert len(bounded) > 0 and bounded["holds"].astype(bool).all()
    assert (tmp_path / "report.md").exists() and (tmp_path / "slopes.csv").exists()
    if name == "net_em_rates":
        assert set(summary["prediction"]) >= {
            "N1_empirical_vs_n",
            "N2_population_vs_n_privacy_regime",
        }
    else:
        ratio = summary[summary["prediction"] == "N3_em_ratio"]
        assert len(ratio) == 2 and all(math.isfinite(v) for v in ratio["measured_mean"])
