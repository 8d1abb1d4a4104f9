"""Finders spend the budget they are given (issue 16 item 1).

The plan's guarantee (what the run will release) must meet the requested epsilon
from below to within 2%: ``0.98 epsilon <= plan.guarantee.epsilon(delta) <=
epsilon``. Plans only (no run), on the contract cases' small problems, with each
finder's defaults. The 2% is the issue's requirement, not a fitted tolerance: the
calibrators stop once 99% is spent (``refine_rtol``), or 0.1% in zCDP.
"""

from __future__ import annotations

import math

import pytest
from contract_cases import cosine_free, quadratic_ball

from dpsample.finders.dp_sgd import DPSGD
from dpsample.finders.dp_spider import DPSpider
from dpsample.finders.spider_sosp import SpiderSOSP
from dpsample.plan import Budget
from dpsample.privacy import PrivacyGuarantee, zcdp_to_epsilon
from dpsample.privacy.calibration import calibrate

DELTA = 1e-5
N = 64

FINDERS = {
    "dp_sgd": (DPSGD, quadratic_ball),
    "dp_spider": (DPSpider, quadratic_ball),
    "spider_sosp": (SpiderSOSP, cosine_free),
}


@pytest.mark.slow
@pytest.mark.parametrize("epsilon", [0.1, 1.0, 10.0])
@pytest.mark.parametrize("name", sorted(FINDERS))
def test_plan_spends_the_requested_epsilon(name, epsilon):
    algo, make_problem = FINDERS[name]
    plan = algo().plan(make_problem(0, N).spec, Budget(epsilon, DELTA))
    spent = plan.guarantee.epsilon(DELTA)
    assert spent <= epsilon
    assert spent >= 0.98 * epsilon, f"{name} spends {spent:.4g} of {epsilon}"


def test_spider_sosp_closed_form_is_lemma_a4():
    # The paper's calibration stays available: it spends less (zCDP conversion).
    spec = cosine_free(0, N).spec
    plan = SpiderSOSP().plan(spec, Budget(1.0, DELTA), calibration="closed_form")
    default = SpiderSOSP().plan(spec, Budget(1.0, DELTA))
    assert plan.guarantee.epsilon(DELTA) < 0.9
    assert default["zcdp"] > plan["zcdp"]
    assert default.source("zcdp") == "calibrated"
    with pytest.raises(ValueError, match="calibration"):
        SpiderSOSP().plan(spec, Budget(1.0, DELTA), calibration="tight")


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 10.0])
def test_coarse_route_refines_down_to_the_exact_guarantee(epsilon):
    # A cheap coarse bound, at least 30% pessimistic (1.3 x the zCDP conversion,
    # itself above the exact epsilon): without the refinement the noise meets the
    # coarse bound, and the exact guarantee spends less than 1/1.3 of epsilon.
    def exact(s):
        return PrivacyGuarantee.gaussian(s).repeat(100)

    def coarse(s):
        return 1.3 * zcdp_to_epsilon(100 / (2 * s**2), DELTA)

    loose = calibrate(exact, epsilon=epsilon, delta=DELTA, coarse_epsilon=coarse,
                      refine=False)  # fmt: skip
    tight = calibrate(exact, epsilon=epsilon, delta=DELTA, coarse_epsilon=coarse)
    assert loose.guarantee.epsilon(DELTA) < 0.8 * epsilon
    spent = tight.guarantee.epsilon(DELTA)
    assert 0.99 * epsilon <= spent <= epsilon
    assert tight.noise < loose.noise
    assert math.isclose(
        tight.guarantee.epsilon(DELTA), exact(tight.noise).epsilon(DELTA)
    )
