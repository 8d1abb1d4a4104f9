"""The behaviour-snapshot tool (tools/behaviour_snapshot.py) finds what changed."""

from __future__ import annotations

import numpy as np
from scripts import load_script

snap = load_script("tools/behaviour_snapshot.py")


def test_compare_names_each_changed_field_and_missing_entry():
    before = {"a": {"epsilon": 1.0, "report": "r"}, "b": {"x": 1}}
    after = {"a": {"epsilon": 1.0000000001, "report": "r"}, "c": {"x": 1}}
    diffs = snap.compare(before, after)
    assert diffs == [
        "a.epsilon: 1.0 -> 1.0000000001",
        "b: only in before",
        "c: only in after",
    ]
    assert snap.compare(before, before) == []


def test_plain_drops_machine_dependent_fields_and_hashes_arrays():
    x = np.arange(6.0).reshape(2, 3)
    out = snap._plain({"wall_s": 3.2, "value": x, "steps": np.int64(4), "z": [0.5]})
    assert set(out) == {"value", "steps", "z"}
    assert out["value"]["shape"] == [2, 3] and out["value"]["head"] == [0, 1, 2, 3]
    y = x.copy()
    y[1, 2] += 1e-15 * 5
    assert snap._plain({"value": y})["value"]["sha256"] != out["value"]["sha256"]


def test_compare_ignores_the_plan_printouts_time_forecast():
    a = {"x": {"plan": "cost: 10 steps (about 7 ms on this machine)\n"}}
    b = {"x": {"plan": "cost: 10 steps (about 406 ms on this machine)\n"}}
    assert snap.compare(a, b) == []
    c = {"x": {"plan": "cost: 11 steps (about 406 ms on this machine)\n"}}
    assert snap.compare(a, c) != []
