"""Verdicts that can fail: informative bounds, slope verdicts, paired comparisons.

Synthetic observations with known answers (issue 26): a vacuous bound, a start
point that meets the claim, a saturated plateau, an interval that excludes the
theory, a wide interval, misfit across points, a paired difference, unequal budgets.
"""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sweep_hooks import tiny_spec

from dpsample.validation.report import headline, reading
from dpsample.validation.spec import Arm, Comparison, Prediction, SpecError, load_spec
from dpsample.validation.tables import (
    COMPARISON_COLUMNS,
    MAX_CI_WIDTH,
    SATURATION,
    compare,
    fit_slopes,
    summarize,
)

NS = (100, 200, 400, 800, 1600)


def _obs(values, *, n=100, seed=0, algorithm="alg", constants=None, eps=1.0):
    return {
        "cell": f"{algorithm}-{n}-{seed}",
        "seed": seed,
        "status": "ok",
        "algorithm": algorithm,
        "n": n,
        "d": 2,
        "epsilon": 1.0,
        "delta": 1e-6,
        "axes": {"data.n": n},
        "values": values,
        "constants": {"lipschitz": 1.0, "radius": 1.0}
        if constants is None
        else constants,
        "guarantee_epsilon": eps,
    }


def _row(obs, pred):
    return summarize(obs, [pred], experiment="e").iloc[0]


# --------------------------------------------------------------------- informative
def test_a_bound_above_the_ceiling_is_not_informative():
    # risk <= 2 L R = 2 always: a bound of 3 cannot fail
    obs = [_obs({"risk": 0.5, "thm": 3.0}, seed=s) for s in range(3)]
    row = _row(obs, Prediction("p", "risk", "thm", ceiling="loss_range"))
    assert row["holds"] and row["ceiling"] == 2.0
    assert not row["informative"] and pd.isna(row["holds_informative"])
    assert row["not_informative"].startswith("bound >= ceiling")
    # one seed's bound at the ceiling is enough to make the row vacuous
    obs[0]["values"]["thm"] = 2.0
    for o in obs[1:]:
        o["values"]["thm"] = 1.0
    assert not _row(obs, Prediction("p", "risk", "thm", ceiling="loss_range"))[
        "informative"
    ]
    # below it at every seed: informative, and a violation shows as a failure
    obs[0]["values"]["thm"] = 1.0
    obs[1]["values"]["risk"] = 1.5
    row = _row(obs, Prediction("p", "risk", "thm", ceiling="loss_range"))
    assert row["informative"] and not row["holds_informative"]
    assert pd.notna(row["holds_informative"])


def test_the_declared_constant_wins_over_the_lipschitz_diameter_fallback():
    obs = [_obs({"g": 0.1, "b": 0.9}, constants={"lipschitz": 0.8, "loss_range": 5})]
    assert not _row(obs, Prediction("p", "g", "b", ceiling="lipschitz"))["informative"]
    row = _row(obs, Prediction("p", "g", "b", ceiling="loss_range"))
    assert row["ceiling"] == 5.0 and row["informative"]


def test_no_ceiling_declared_or_an_unknown_constant_leaves_it_undecided():
    obs = [_obs({"g": 0.1, "b": 0.5}, constants={})]
    row = _row(obs, Prediction("p", "g", "b"))
    assert pd.isna(row["informative"]) and row["not_informative"] == (
        "no ceiling declared"
    )
    row = _row(obs, Prediction("p", "g", "b", ceiling="smoothness"))
    assert pd.isna(row["informative"]) and "unknown" in row["not_informative"]
    # inf: the measurement has no trivial ceiling, any finite bound can fail
    assert _row(obs, Prediction("p", "g", "b", ceiling=math.inf))["informative"]


def test_a_start_point_that_meets_the_claim_is_not_evidence():
    pred = Prediction("p", "g", "alpha", ceiling="lipschitz", start="g0")
    far = [_obs({"g": 0.01, "alpha": 0.1, "g0": 0.7}, seed=s) for s in range(3)]
    assert _row(far, pred)["informative"]
    # one seed whose start point already satisfies g <= alpha: not informative
    met = [dict(o, values=dict(o["values"])) for o in far]
    met[2]["values"]["g0"] = 0.05
    row = _row(met, pred)
    assert not row["informative"] and "start point meets" in row["not_informative"]
    # a start point that was not measured: undecided, not counted as evidence
    unmeasured = [dict(o, values={"g": 0.01, "alpha": 0.1}) for o in far]
    row = _row(unmeasured, pred)
    assert pd.isna(row["informative"])
    assert row["not_informative"] == "start point not measured (g0)"


def test_report_leads_with_the_informative_rows_that_hold():
    obs = [
        _obs({"r": 0.1, "b": 3.0}, n=100),  # vacuous, holds
        _obs({"r": 0.1, "b": 0.5}, n=200),  # informative, holds
        _obs({"r": 0.9, "b": 0.5}, n=400),  # informative, fails
    ]
    summary = summarize(obs, [Prediction("p", "r", "b", ceiling=2.0)], experiment="e")
    slopes = fit_slopes(obs, [], experiment="e")
    first = headline(summary, slopes)[0]
    assert first.startswith("**Informative bounds: 1 of 2 hold** (3 rows")
    assert "all 3: 2 hold" in first
    (line,) = reading(summary, slopes, {})
    assert "informative at 2 of them, held at 1" in line
    assert "bound >= ceiling (2.0 = 2) at 1" in line


# -------------------------------------------------------------------------- slopes
def _power(slope, *, seeds=8, sigma=0.1, xs=NS, rng, level=1.0):
    return [
        _obs({"risk": level * n**slope * rng.lognormal(0.0, sigma)}, n=n, seed=s)
        for n in xs
        for s in range(seeds)
    ]


def test_a_saturated_plateau_is_dropped_and_named():
    # risk = min(1.9, 150 n^-1) against a ceiling of 2: the points at n = 25, 50,
    # 100 (1.9, 1.9, 1.5) sit on the plateau (> SATURATION * 2) and must leave the fit
    rng = np.random.default_rng(3)
    xs = (25, 50, 100, *NS[1:], 3200, 6400)
    obs = [
        _obs({"risk": min(1.9, 150.0 / n) * rng.lognormal(0.0, 0.05)}, n=n, seed=s)
        for n in xs
        for s in range(8)
    ]
    pred = Prediction("p", "risk", slopes={"n": -1.0}, ceiling="loss_range")
    row = fit_slopes(obs, [pred], experiment="e").iloc[0]
    assert row.points == len(xs) - 3
    assert row.dropped.count("saturated") == 3 and "n = 100: saturated" in row.dropped
    assert f"{SATURATION:g} x ceiling 2" in row.dropped
    assert row.verdict == "consistent" and row.ci_low <= -1.0 <= row.ci_high
    # kept in, the plateau flattens the fit and the theory is rejected
    kept_in = Prediction("p", "risk", slopes={"n": -1.0})
    assert fit_slopes(obs, [kept_in], experiment="e").iloc[0].verdict == (
        "not consistent"
    )


def test_points_where_the_bound_reaches_the_ceiling_leave_the_fit():
    rng = np.random.default_rng(4)
    obs = _power(-0.5, rng=rng, xs=(50, *NS))
    for o in obs:
        o["values"]["b"] = 15.0 * o["n"] ** -0.5  # >= 2 at n = 50 only
    pred = Prediction("p", "risk", "b", {"n": -0.5}, ceiling="loss_range")
    row = fit_slopes(obs, [pred], experiment="e").iloc[0]
    assert row.points == 5 and row.dropped.startswith("n = 50: the bound reaches")


def test_too_few_points_or_seeds_is_said_whatever_the_interval():
    rng = np.random.default_rng(5)
    pred = Prediction("p", "risk", slopes={"n": -0.5})
    four = fit_slopes(_power(-0.5, rng=rng, xs=NS[:4]), [pred], experiment="e")
    seven = fit_slopes(_power(-0.5, rng=rng, seeds=7), [pred], experiment="e")
    enough = fit_slopes(_power(-0.5, rng=rng), [pred], experiment="e")
    assert four.iloc[0].verdict == "too few points/seeds"
    assert seven.iloc[0].verdict == "too few points/seeds"
    assert seven.iloc[0].min_seeds == 7
    assert enough.iloc[0].verdict == "consistent" and enough.iloc[0].consistent


def test_a_wide_interval_is_underpowered():
    # sigma = 1.5: the slope's SE is about 1.5 / sqrt(8) / sqrt(Sxx) = 0.24, the
    # t(3) interval about 1.5 wide, three times MAX_CI_WIDTH
    rng = np.random.default_rng(6)
    obs = _power(-0.5, sigma=1.5, rng=rng)
    row = fit_slopes(
        obs, [Prediction("p", "risk", slopes={"n": -0.5})], experiment="e"
    ).iloc[0]
    assert row.ci_width > MAX_CI_WIDTH and row.ci_low <= -0.5 <= row.ci_high
    assert row.verdict == "underpowered" and not row.consistent


def test_misfit_across_points_widens_the_interval():
    # no seed noise, but log risk is curved in log n: the seeds' bootstrap sees
    # nothing, the residuals across points see the misfit
    obs = [
        _obs(
            {"risk": math.exp(-0.5 * math.log(n) + 0.3 * math.log(n) ** 2)}, n=n, seed=s
        )
        for n in NS
        for s in range(8)
    ]
    row = fit_slopes(
        obs, [Prediction("p", "risk", slopes={"n": 3.0})], experiment="e"
    ).iloc[0]
    assert row.seed_ci_high - row.seed_ci_low == pytest.approx(0.0, abs=1e-12)
    assert row.lof_ci_high - row.lof_ci_low > 0.1
    assert row.ci_low == row.lof_ci_low and row.ci_high == row.lof_ci_high


# --------------------------------------------------------------------- comparisons
def _arms():
    return (
        Arm("warm", {"algorithm": ["warm"]}, "g"),
        Arm("cold", {"algorithm": ["cold"]}, "g"),
    )


def test_a_paired_difference_is_detected_by_the_paired_test():
    # a seed effect (data difficulty) shared by both arms dwarfs the 10% warm-start
    # gain: unpaired, the arms overlap; paired, every seed's ratio is below 1
    rng = np.random.default_rng(8)
    difficulty = rng.lognormal(0.0, 1.0, size=10)
    gain = 0.9 * rng.lognormal(0.0, 0.02, size=10)
    obs = [
        _obs(
            {"g": difficulty[s] * (gain[s] if a == "warm" else 1.0)},
            seed=s,
            algorithm=a,
        )
        for a in ("warm", "cold")
        for s in range(10)
    ]
    table = compare(obs, [Comparison("wc", _arms(), ("n",))], experiment="e")
    assert tuple(table.columns[: len(COMPARISON_COLUMNS)]) == COMPARISON_COLUMNS
    row = table.iloc[0]
    assert row.pairs == 10 and row.median_ratio == pytest.approx(np.median(gain))
    # all ten differences negative: the exact two-sided p is 2 / 2^10
    assert row.p_value == pytest.approx(2.0**-9) and row.min_p == 2.0**-9
    warm = difficulty * gain
    assert stats.mannwhitneyu(warm, difficulty).pvalue > 0.5  # unpaired: nothing
    assert row.epsilon_match and row.epsilon_a == row.epsilon_b == 1.0
    # no difference at all: p = 1, ratio 1
    same = [dict(o, algorithm="warm") for o in obs if o["algorithm"] == "cold"]
    same += [o for o in obs if o["algorithm"] == "cold"]
    row = compare(same, [Comparison("wc", _arms(), ("n",))], experiment="e").iloc[0]
    assert row.p_value == 1.0 and row.median_ratio == 1.0


def test_unequal_budgets_are_flagged():
    def table(eps_warm):
        obs = [
            _obs(
                {"g": 1.0 + s},
                seed=s,
                algorithm=a,
                eps=eps_warm if a == "warm" else 1.0,
            )
            for a in ("warm", "cold")
            for s in range(8)
        ]
        return compare(obs, [Comparison("wc", _arms(), ("n",))], experiment="e")

    assert table(0.99).iloc[0].epsilon_match  # 1% apart
    row = table(0.84).iloc[0]  # warm_start_003 arm iii: 0.84 against 0.99-1.0
    assert not row.epsilon_match and row.epsilon_a == 0.84


def test_an_arm_may_read_its_own_measurement_and_epsilon_in_one_cell():
    obs = [_obs({"w": 0.5, "c": 1.0, "ew": 0.74, "ec": 0.99}, seed=s) for s in range(6)]
    arms = (Arm("warm", {}, "w", "ew"), Arm("cold", {}, "c", "ec"))
    row = compare(obs, [Comparison("iv", arms, ())], experiment="e").iloc[0]
    assert row.pairs == 6 and row.median_ratio == 0.5
    assert (row.epsilon_a, row.epsilon_b) == (0.74, 0.99) and not row.epsilon_match


def test_an_ambiguous_pairing_is_refused():
    obs = [
        _obs({"g": 1.0}, n=n, algorithm=a) for a in ("warm", "cold") for n in (100, 200)
    ]
    with pytest.raises(ValueError, match="name what tells them apart"):
        compare(obs, [Comparison("wc", _arms(), ("d",))], experiment="e")


# ---------------------------------------------------------------------------- spec
def _spec(**extra):
    return {**tiny_spec(name="v", ns=(40,), seeds=1, predictions=[]), **extra}


def test_spec_declares_ceilings_start_points_and_comparisons():
    spec = load_spec(
        _spec(
            ceilings={"gradient_norm": "lipschitz", "ks": 1.0},
            prediction=[
                {
                    "name": "g",
                    "measurement": "gradient_norm",
                    "bound": "b",
                    "start": "g0",
                },
                {"name": "r", "measurement": "empirical_risk"},
            ],
            comparison=[
                {
                    "name": "c",
                    "measurement": "gradient_norm",
                    "by": ["n"],
                    "arms": [
                        {"label": "a", "where": {"algorithm": ["net"]}},
                        {"label": "b", "epsilon": "eps_b", "measurement": "x"},
                    ],
                }
            ],
        )
    )
    g, r = spec.predictions
    assert (g.ceiling, g.start, r.ceiling) == ("lipschitz", "g0", None)
    (c,) = spec.comparisons
    assert c.by == ("n",) and c.arms[0].measurement == "gradient_norm"
    assert c.arms[1] == Arm("b", {}, "x", "eps_b")
    # a function of the public facts: resolved when the spec is read
    spec = load_spec(
        _spec(
            ceilings={"r": "math:sqrt"},
            prediction=[{"name": "r", "measurement": "r", "bound": "b"}],
        )
    )
    assert spec.predictions[0].ceiling is math.sqrt


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        ({"ceilings": {"g": "diameter"}}, "a ceiling is a number, a 'module:func"),
        ({"ceilings": {"g": "no_such_module_x:f"}}, "no_such_module_x"),
        ({"ceilings": {"g": -1.0}}, "a ceiling is a number > 0"),
        ({"comparison": [{"name": "c", "arms": [{}]}]}, "needs arms: a list of two"),
        (
            {"comparison": [{"name": "c", "arms": [{"label": "a"}, {"label": "b"}]}]},
            "needs measurement",
        ),
        (
            {
                "comparison": [
                    {
                        "name": "c",
                        "measurement": "g",
                        "by": ["nope"],
                        "arms": [{"label": "a"}, {"label": "b"}],
                    }
                ]
            },
            "by names 'nope'",
        ),
    ],
)
def test_bad_verdict_declarations_are_refused_with_the_key(extra, match):
    with pytest.raises(SpecError, match=match):
        load_spec(_spec(**extra))


# ------------------------------------------------------------------ retabulation
def test_retabulation_matches_legacy_cells_by_their_old_default_only(monkeypatch):
    from pathlib import Path
    from types import SimpleNamespace

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2]))
    from experiments.retabulate import matched_records

    now = {"job": {"name": "dp_sgd"}, "options": {"enforce_sensitivity": False}}
    cell = SimpleNamespace(key="new", config=now)
    old = {"config": {"job": {"name": "dp_sgd"}, "options": {}}, "status": "ok"}
    got, legacy = matched_records([cell], {"old": old})
    assert got == {"new": old} and legacy == 1
    # a cell that asks for the new default (clipping) is not the old run
    clipped = SimpleNamespace(
        key="clip", config={**now, "options": {"enforce_sensitivity": True}}
    )
    got, legacy = matched_records([clipped], {"old": old})
    assert got == {} and legacy == 0
    # a key match wins and is not counted as legacy
    got, legacy = matched_records([cell], {"new": old, "old": old})
    assert got == {"new": old} and legacy == 0


def test_legacy_presets_match_by_job(monkeypatch):
    # cells run before `preset` existed ran the former default: Theorem 15/18's
    # schedule for DP-TR ("theorem"), Spider-SOSP's former default
    # ("practical_iterate"); a spec that pins either finds them, and no other preset
    from pathlib import Path
    from types import SimpleNamespace

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2]))
    from experiments.retabulate import matched_records

    for job, former, other in (
        ("dp_trust_region", "theorem", "practical"),
        ("spider_sosp", "practical_iterate", "practical"),
    ):
        old = {"config": {"job": {"name": job}, "options": {}}, "status": "ok"}
        pinned = SimpleNamespace(
            key="pin", config={"job": {"name": job}, "options": {"preset": former}}
        )
        assert matched_records([pinned], {"old": old}) == ({"pin": old}, 1)
        new = SimpleNamespace(
            key="new", config={"job": {"name": job}, "options": {"preset": other}}
        )
        assert matched_records([new], {"old": old}) == ({}, 0)
