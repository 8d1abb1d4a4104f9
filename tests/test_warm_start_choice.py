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


@pytest.mark.slow
@pytest.mark.parametrize("d", [1, 3, 10])
@pytest.mark.parametrize("epsilon", [0.1, 1.0, 10.0])
def test_default_pipeline_spends_its_budget(d, epsilon):
    """Issue 16 item 1 for the pipeline: within 2% of epsilon, never above.

    Fails before ``spend="all"``: with the fixed split the Langevin stage (its
    ``beta G D <= c log n`` cap binds) spent a few percent of its half, and the
    pipeline about 48% of epsilon at d = 3 and 10.
    """
    problem = sigmoid_problem(d)
    plan = WarmStart().plan(problem.spec, Budget(epsilon, 1e-5))
    spent = plan.spent_epsilon()
    assert 0.98 * epsilon <= spent <= epsilon * (1 + 1e-9), (plan["sampler"], spent)
    # the stages compose to the plan's guarantee, and the finder's target is the
    # one its plan was made for (at least the fixed share)
    sampler, finder = plan.stage("sampler"), plan.stage("finder")
    composed = sampler.guarantee.compose(finder.guarantee)
    assert composed.epsilon(1e-5) == pytest.approx(spent, rel=1e-9)
    assert plan["epsilon_split"] == (epsilon / 2, finder.budget.epsilon)
    assert finder.budget.epsilon >= epsilon / 2
    # the fixed split stays available and never spends more
    fixed = WarmStart().plan(problem.spec, Budget(epsilon, 1e-5), spend="split")
    assert fixed.stage("finder").budget.epsilon == epsilon / 2
    assert fixed.spent_epsilon() <= spent * (1 + 1e-9)


def test_spend_rule_is_checked():
    problem = sigmoid_problem(1, n=100)
    with pytest.raises(ValueError, match="spend"):
        WarmStart().plan(problem.spec, Budget(1.0, 1e-5), spend="most")
