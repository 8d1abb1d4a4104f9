"""Typed records inside the infos (issue 12: no untyped dicts in ``result.info``).

Schedules and calibrated noise that used to be plain dicts inside an info are
:class:`~dpsample.base.PublicRecord` dataclasses: typed, documented fields, and a
read-only mapping view so that ``info["plan"]["num_iters"]`` and reports keep
working. These tests pin each record against the dict it replaces.
"""

from __future__ import annotations

import dataclasses
import itertools

import pytest

from dpsample.base import PublicRecord, optional
from dpsample.config import jsonable
from dpsample.finders.goldstein import (
    AnchorDifferenceNoise,
    GoldsteinSchedule,
    TreeNoise,
    goldstein_guarantee,
    goldstein_theorem_parameters,
)
from dpsample.finders.spider_sosp import PLAN_FIELDS, BranchCounts, SpiderSOSPSchedule
from dpsample.pipelines.data_split import HalfDeviations
from dpsample.pipelines.quasar import QuasarSchedule, _theorem_schedule


@dataclasses.dataclass(frozen=True, eq=False)
class _Record(PublicRecord):
    a: int
    b: float | None = None
    c: str | None = optional()


def test_a_record_is_a_mapping_of_its_fields():
    r = _Record(1)
    assert dict(r) == {"a": 1, "b": None} == r.to_dict()
    assert r["a"] == 1 and len(r) == 2 and "c" not in r
    with pytest.raises(KeyError):
        r["c"]
    assert dict(_Record(1, 2.0, "x")) == {"a": 1, "b": 2.0, "c": "x"}
    assert r == {"a": 1, "b": None} and r != {"a": 1}
    assert jsonable({"r": r}) == {"r": {"a": 1, "b": None}}
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.a = 2  # type: ignore[misc]


# the first-order oracle is single-pass only (Algorithm 5)
_GOLDSTEIN_CASES = [
    (p, e, z)
    for p, e, z in itertools.product(
        ("single", "multi"), ("zero_order", "first_order"), ("practical", "theory")
    )
    if not (p == "multi" and e == "first_order")
]


@pytest.mark.parametrize("passes, estimator, sizing", _GOLDSTEIN_CASES)
def test_goldstein_schedule_holds_every_key_of_the_dict(passes, estimator, sizing):
    kwargs = dict(
        n=400,
        dim=3,
        epsilon=2.0,
        delta=1e-5,
        lipschitz=1.0,
        initial_gap=1.0,
        alpha=0.2,
        passes=passes,
        estimator=estimator,
        sizing=sizing,
    )
    free = goldstein_theorem_parameters(**kwargs)
    # under a compute cap the dict gains the uncapped counts: optional fields
    total = free["loss_evaluations"] + free["gradient_evaluations"]
    capped = goldstein_theorem_parameters(**kwargs, max_evaluations=total // 2)
    assert "uncapped_num_iters" in capped and "uncapped_num_iters" not in free
    for schedule in (free, capped):
        record = GoldsteinSchedule.from_mapping(schedule)
        assert record == schedule  # every key a field, every value the same
        assert record.num_iters == schedule["num_iters"]
        # the noise's type, not its calibration: the cheap RDP route will do
        noise, _ = goldstein_guarantee(schedule, calibration="rdp")
        single = passes == "single"
        assert isinstance(noise, TreeNoise if single else AnchorDifferenceNoise)


def test_a_schedule_key_without_a_field_is_an_error():
    with pytest.raises(TypeError):
        GoldsteinSchedule.from_mapping({"num_iters": 1, "not_a_field": 0})


def test_spider_sosp_records_match_their_names():
    fields = tuple(f.name for f in dataclasses.fields(SpiderSOSPSchedule))
    assert fields == PLAN_FIELDS
    counts = tuple(f.name for f in dataclasses.fields(BranchCounts))
    assert counts == ("o1_drift", "o2", "kick", "aborted")


def test_quasar_schedule():
    s = _theorem_schedule(
        n=1000, dim=2, lipschitz=1.0, diameter=2.0, epsilon=0.5, delta=1e-6
    )
    assert isinstance(s, QuasarSchedule)
    assert s["num_steps"] == s.num_steps == 2000
    assert set(s) == {"num_steps", "learning_rate", "noise_std_estimate", "source"}


def test_half_deviations_is_a_mapping_of_the_two_halves():
    fields = tuple(f.name for f in dataclasses.fields(HalfDeviations))
    assert fields == ("sampler_half", "finder_half")
