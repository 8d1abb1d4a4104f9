"""psi is never above the declared loss range (issue 24, section 2).

The excess risk of any point is at most the loss range, so a derived or declared
psi above it says nothing. Before the cap, the quasar arm of warm_start_003 planned
DP-SPIDER with psi = 87.2 (n = 250) and 15.1 (n = 2,000) against a range of 4.5.
"""

from __future__ import annotations

import jax
import pytest

from dpsample import Ball, Problem
from dpsample.pipelines.warm_start import WarmStart
from dpsample.plan import Budget
from experiments.problems.warm_start_003 import make_quasar_glm, quasar_glm

RANGE = 4.5


def _spec(n: int):
    data = make_quasar_glm(jax.random.key(0), n, 4)
    return Problem(
        quasar_glm(),
        data,
        Ball(2.0, dim=4),
        lipschitz=1.5,
        smoothness=2.75,
        loss_range=RANGE,
    ).spec


@pytest.mark.parametrize("n", [pytest.param(250, marks=pytest.mark.slow), 2000])
def test_derived_psi_is_capped_at_the_loss_range(n):
    plan = WarmStart("quasar_sgd", sampler_options={"quasar_convexity": 1 / 3}).plan(
        _spec(n), Budget(1.0, 1e-6)
    )
    # The sampler's own bound is far above the range here; the pipeline's is not.
    assert plan.stages[0][1].warm_start.psi > RANGE
    assert plan["psi"] == RANGE
    assert plan.internal["psi_source"] == "loss_range"
    assert plan.stages[1][1]["initial_gap"] == RANGE


@pytest.mark.slow  # two quasar plans (about 2 s each on a quiet machine)
def test_declared_psi_is_capped_and_a_small_one_is_kept():
    ws = WarmStart("quasar_sgd", sampler_options={"quasar_convexity": 1 / 3})
    big = ws.plan(_spec(250), Budget(1.0, 1e-6), declared_psi=10.0)
    assert big["psi"] == RANGE and big.internal["psi_source"] == "loss_range"
    small = ws.plan(_spec(250), Budget(1.0, 1e-6), declared_psi=0.5)
    assert small["psi"] == 0.5 and small.internal["psi_source"] == "declared"
