"""The default warm start is chosen by cost (issue 16 item 5).

``warm_start(key, problem, epsilon=2, delta=1e-5)`` on a smooth sigmoid problem with
n = 4,000 must plan for every d = 1 ... 10 (it refused at d = 3 when the net was the
only default: 8.1e8 points) and say which sampler it chose, by a public rule that
the plan prints. Plans only (no data read) for d = 1, 3, 10, and one small run.
"""

import jax
import pytest

import dpsample
from dpsample import Budget
from dpsample.datasets import make_classification
from dpsample.losses import sigmoid
from dpsample.pipelines import DEFAULT_MAX_EVALUATIONS, WarmStart, warm_start

N = 4000


def sigmoid_problem(d, n=N):
    """The sigmoid loss on ``Ball(1)`` in ``R^d``, constants derived for ||a|| <= 1."""
    loss = sigmoid()
    c = loss.constants(radius=1.0)
    data = make_classification(jax.random.key(d), n, d)
    return dpsample.Problem(
        loss.loss_fn,
        data,
        dpsample.Ball(1.0, dim=d),
        lipschitz=c.lipschitz,
        smoothness=c.smoothness,
        loss_range=c.loss_range,
        oscillation=c.oscillation,
    )


@pytest.mark.slow
@pytest.mark.parametrize(("d", "expected"), [(1, "net"), (3, "gibbs"), (10, "gibbs")])
def test_default_sampler_fits_the_compute_budget(d, expected):
    problem = sigmoid_problem(d)
    plan = WarmStart(finder="dp_sgd").plan(problem.spec, Budget(2.0, 1e-5))
    sampler = plan.stage("sampler")
    assert plan["sampler"] == expected == sampler.algorithm
    assert plan.source("sampler") == "default"
    assert sampler.cost.evaluations <= DEFAULT_MAX_EVALUATIONS
    # The rule and its numbers are printed with the plan.
    text = str(plan)
    assert "chosen by cost" in text and "max_evaluations" in text
    assert plan["psi"] > 0 and plan.spent_epsilon() <= 2.0 * (1 + 1e-9)
    if d > 1:  # the net was considered and skipped on its public cost bound
        assert "net needs" in plan.params["sampler"].note


@pytest.mark.slow
def test_a_smaller_compute_budget_moves_the_choice():
    problem = sigmoid_problem(1)
    small = WarmStart(finder="dp_sgd").plan(
        problem.spec, Budget(2.0, 1e-5, max_evaluations=10**7)
    )
    # The net's 2001 x 4000 evaluations exceed the sampler's half, 5e6: projected
    # Langevin runs, its steps capped at floor(5e6 / n) by its own rule.
    assert small["sampler"] == "gibbs"
    sampler = small.stage("sampler")
    assert sampler["method"] == "langevin" and sampler["num_steps"] == 5 * 10**6 // N
    assert sampler.cost.evaluations <= 5 * 10**6


@pytest.mark.slow
def test_default_warm_start_runs_and_says_which_sampler():
    problem = sigmoid_problem(3)
    res = warm_start(
        jax.random.key(0),
        problem,
        epsilon=2.0,
        delta=1e-5,
        finder="dp_sgd",
        finder_options={"num_steps": 20},
    )
    assert res.info["sampler"] == "gibbs"
    assert "max_evaluations" in res.info["sampler_choice"]
    assert res.info["psi_source"] == "loss_range"
    assert res.info["finder_initial_gap"] == problem.loss_range
    assert res.privacy.epsilon(1e-5) <= 2.0 * (1 + 1e-9)
    assert problem.domain.contains(res.info["warm_start"])
