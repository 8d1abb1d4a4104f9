"""experiments/evidence.py: the "what the evidence says" table (issue 26 item 5)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from scripts import load_script

ROOT = Path(__file__).resolve().parents[2]
evidence = load_script("experiments/evidence.py")


def _write(folder: Path, name: str, rows: list[dict]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(folder / name, index=False)


def test_counts_on_synthetic_tables_with_known_answers(tmp_path):
    exp = tmp_path / "toy"
    # a vacuous bound (not informative) that holds, an informative row that holds,
    # an informative row that fails, and a measurement without a bound
    _write(
        exp,
        "summary.csv",
        [
            {
                "prediction": "P",
                "bound": 9.0,
                "informative": False,
                "holds_informative": "",
            },
            {
                "prediction": "P",
                "bound": 0.1,
                "informative": True,
                "holds_informative": True,
            },
            {
                "prediction": "P",
                "bound": 0.1,
                "informative": True,
                "holds_informative": False,
            },
            {
                "prediction": "Q",
                "bound": None,
                "informative": "",
                "holds_informative": "",
            },
        ],
    )
    _write(
        exp,
        "slopes.csv",
        [
            {"prediction": "P", "verdict": "consistent"},
            {"prediction": "P", "verdict": "underpowered"},
            {"prediction": "Q", "verdict": "too few points/seeds"},
        ],
    )
    # a point whose 2 pairs cannot reach p < 0.05, a significant win for A, a
    # significant loss at unmatched budgets (not counted)
    _write(
        exp,
        "comparisons.csv",
        [
            {
                "comparison": "A_vs_B",
                "median_ratio": 0.5,
                "p_value": 0.5,
                "min_p": 0.5,
                "epsilon_match": True,
            },
            {
                "comparison": "A_vs_B",
                "median_ratio": 0.5,
                "p_value": 0.01,
                "min_p": 0.004,
                "epsilon_match": True,
            },
            {
                "comparison": "A_vs_B",
                "median_ratio": 2.0,
                "p_value": 0.01,
                "min_p": 0.004,
                "epsilon_match": False,
            },
        ],
    )
    claims = evidence.claims(tmp_path).set_index("prediction")
    assert claims.loc["P", ["rows", "informative", "hold", "fail"]].tolist() == [
        3,
        2,
        1,
        1,
    ]
    assert claims.loc["P", "slopes"] == "consistent x1, underpowered x1"
    assert claims.loc["Q", ["rows", "informative"]].tolist() == [0, 0]
    comp = evidence.comparisons(tmp_path).iloc[0]
    assert (comp.points, comp.unmatched, comp.testable) == (3, 1, 2)
    assert (comp.a_better, comp.a_worse) == (1, 0)
    # an accuracy is better when larger: a significant A/B > 1 is a win for A
    _write(
        exp,
        "comparisons.csv",
        [
            {
                "comparison": "acc",
                "measurement_a": "test_accuracy",
                "median_ratio": ratio,
                "p_value": 0.01,
                "min_p": 0.004,
                "epsilon_match": True,
            }
            for ratio in (1.1, 1.2, 0.9)
        ],
    )
    acc = evidence.comparisons(tmp_path).iloc[0]
    assert (acc.a_better, acc.a_worse) == (2, 1)
    text = evidence.render(evidence.claims(tmp_path), evidence.comparisons(tmp_path))
    assert text.startswith("**1 of 2 informative rows hold**")
    assert "**1** predictions" in text  # P has a decisive slope


def test_the_docs_table_is_the_committed_results_table():
    page = (ROOT / "docs" / "validation.md").read_text(encoding="utf-8")
    block = page.split(evidence.START, 1)[1].split(evidence.END, 1)[0]
    expected = evidence.render(evidence.claims(), evidence.comparisons())
    assert block.strip() == expected.strip(), "run: python experiments/evidence.py"
