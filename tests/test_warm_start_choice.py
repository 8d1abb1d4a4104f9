"""The default rule of ``warm_start`` (issue 24 section 2).

``warm_start(key, problem, epsilon, delta)`` with no other argument chooses the
sampler (the net, Gibbs, or none: a cold start) and the finder (DP-SGD) from public
inputs only, and says in its plan which branch of the rule fired and why. It warm
starts only with a sampler whose public psi is below the declared loss range (what a
cold start promises), never with a psi equal to it; a cold start releases exactly what
the finder alone releases with the same key. Plans only (no data read), but for two
small runs.
"""

import jax
import jax.numpy as jnp
import pytest

import dpsample
from dpsample import Budget
from dpsample.datasets import make_classification
from dpsample.finders import dp_sgd
from dpsample.losses import sigmoid
from dpsample.pipelines import DEFAULT_MAX_EVALUATIONS, WarmStart, warm_start
from dpsample.pipelines.choice import PSI_SHARE, WARM_SPLITS

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


def two_bumps(d=2, n=N, floor=True):
    """The benchmark's barrier problem: a deep basin behind a barrier from 0.

    The loss lies in ``[-1.5, 0]``; ``floor`` declares where (the net then clips
    into that interval and its ``2 B`` route is enforced).
    """

    def loss(x, z):
        g = lambda v, s: jnp.exp(-0.5 * jnp.sum(((x - v - z) / s) ** 2))  # noqa: E731
        e1 = jnp.zeros(d).at[0].set(1.0)
        return -0.5 * g(0.8 * e1, 0.6) - g(-1.2 * e1, 0.25)

    z = 0.05 * jax.random.normal(jax.random.key(7), (n, d))
    # each bump's exact suprema summed (experiments/problems/utility.py)
    constants = {"lipschitz": 2.93, "smoothness": 17.39, "loss_range": 1.5}
    if floor:
        constants["loss_floor"] = -1.5
    return dpsample.Problem(loss, z, dpsample.Ball(2.0, dim=d), **constants)


@pytest.mark.slow
def test_the_barrier_problem_warm_starts_at_every_epsilon():
    """Where a global sampler wins, the default keeps it at every epsilon.

    Before: at epsilon = 4 the theorem's net exceeded the compute cap and the old
    cost rule fell back to projected Langevin with psi = the loss range. Now the net
    coarsens its spacing to fit the cap, and the rule gives it the least share of
    epsilon at which its psi is at most half the range: less as epsilon grows.
    """
    splits = []
    for epsilon in (0.25, 1.0, 4.0):
        plan = WarmStart().plan(two_bumps().spec, Budget(epsilon, 1e-6))
        assert plan["sampler"] == "net" and plan["default_rule"] == "warm"
        assert plan["finder"] == "dp_sgd" and plan.source("finder") == "default"
        assert plan["psi"] <= PSI_SHARE * 1.5 and plan["split"] in WARM_SPLITS
        assert plan.stage("sampler").cost.evaluations <= DEFAULT_MAX_EVALUATIONS
        assert plan.stage("sampler").budget.epsilon == plan["split"] * epsilon
        assert "psi" in plan.params["default_rule"].note
        assert plan.spent_epsilon() <= epsilon * (1 + 1e-9)
        splits.append(plan["split"])
    assert splits == sorted(splits, reverse=True) and splits[0] > splits[-1]


@pytest.mark.slow
def test_the_default_never_runs_a_conditional_guarantee():
    """Without loss_floor the range 2 B = 3 is not enforceable (2 G D = 23.5 is).

    The net then plans on the enforced cone route, so it needs a larger share of
    epsilon for the same psi (at epsilon 0.25 none qualifies: cold), and no
    candidate whose guarantee rests on an unenforced constant is taken: the
    default's guarantee carries no assumption either way.
    """
    problem = two_bumps(floor=False).spec
    cold = WarmStart().plan(problem, Budget(0.25, 1e-6))
    warm = WarmStart().plan(problem, Budget(1.0, 1e-6))
    located = WarmStart().plan(two_bumps().spec, Budget(1.0, 1e-6))
    assert cold.guarantee.assumptions == () == warm.guarantee.assumptions
    assert cold["default_rule"] == "cold: no sampler qualified"
    assert warm["sampler"] == "net" and warm["split"] > located["split"]


@pytest.mark.slow
@pytest.mark.parametrize("d", [1, 3])
def test_warm_where_a_net_fits_with_psi_below_the_range(d):
    problem = sigmoid_problem(d)
    plan = WarmStart().plan(problem.spec, Budget(2.0, 1e-5))
    assert plan["sampler"] == "net" == plan.stage("sampler").algorithm
    assert plan.source("sampler") == "default"
    assert 0 < plan["psi"] <= PSI_SHARE * problem.loss_range
    assert plan.internal["psi_source"] == "derived"
    text = str(plan)
    assert "default rule: warm start with net" in text and "max_evaluations" in text


@pytest.mark.slow
def test_cold_where_no_net_fits_and_the_same_release_as_dp_sgd():
    problem = sigmoid_problem(20, n=500)
    plan = WarmStart().plan(problem.spec, Budget(1.0, 1e-6))
    assert plan["sampler"] == "none" and plan["finder"] == "dp_sgd"
    assert plan["default_rule"] == "cold: no sampler qualified"
    assert "net: even its coarsest useful net" in plan.params["default_rule"].note
    assert [name for name, _ in plan.stages] == ["finder"]
    alone = dp_sgd(jax.random.key(0), problem, epsilon=1.0, delta=1e-6)
    res = warm_start(jax.random.key(0), problem, epsilon=1.0, delta=1e-6)
    assert bool(jnp.all(res.value == alone.value))
    assert res.privacy.epsilon(1e-6) == alone.privacy.epsilon(1e-6)
    assert res.info["sampler"] == "none" and "warm_start" not in res.info
    assert res.info["psi_source"] == "cold_start"
    assert res.info["privacy_sampler"].epsilon(1e-6) == 0.0


@pytest.mark.slow
def test_cold_without_a_compact_domain_or_a_lipschitz_constant():
    base = sigmoid_problem(2, n=300)
    free = base.replace(domain=dpsample.Unconstrained(2))
    plan = WarmStart().plan(free.spec, Budget(1.0, 1e-6))
    assert plan["default_rule"] == "cold: no compact K"
    no_g = dpsample.Problem(
        base.loss_fn, base.data, base.domain, smoothness=base.smoothness,
        loss_range=base.loss_range,
    )  # fmt: skip
    plan = WarmStart().plan(no_g.spec, Budget(1.0, 1e-6), finder_options={
        "clip_norm": 1.0})  # fmt: skip
    assert plan["default_rule"] == "cold: no lipschitz"
    tiny = sigmoid_problem(5, n=8)
    plan = WarmStart().plan(tiny.spec, Budget(1.0, 1e-6))
    assert plan["default_rule"] == "cold: eps n <= d"


@pytest.mark.slow
def test_a_smaller_compute_budget_starts_cold():
    problem = sigmoid_problem(3)
    plan = WarmStart().plan(problem.spec, Budget(2.0, 1e-5, max_evaluations=10**6))
    assert plan["sampler"] == "none"
    assert "max_evaluations" in plan.params["default_rule"].note


def test_psi_is_never_the_loss_range_under_the_default_rule():
    """Projected Langevin (no psi of its own) is no longer a default candidate."""
    from dpsample.pipelines.choice import DEFAULT_SAMPLERS

    assert all(options.get("method") != "langevin" for _, options in DEFAULT_SAMPLERS)


def test_sampler_options_need_a_sampler_and_the_spend_rule_is_checked():
    problem = sigmoid_problem(1, n=100)
    with pytest.raises(ValueError, match="explicit sampler"):
        WarmStart().plan(problem.spec, Budget(1.0, 1e-5), sampler_options={"a": 1})
    with pytest.raises(ValueError, match="spend"):
        WarmStart(sampler="net").plan(problem.spec, Budget(1.0, 1e-5), spend="most")


@pytest.mark.slow
@pytest.mark.parametrize("d", [1, 10])
@pytest.mark.parametrize("epsilon", [0.1, 1.0, 10.0])
def test_default_pipeline_spends_its_budget(d, epsilon):
    """Within 2% of epsilon, never above, warm or cold."""
    problem = sigmoid_problem(d)
    plan = WarmStart().plan(problem.spec, Budget(epsilon, 1e-5))
    spent = plan.spent_epsilon()
    assert 0.98 * epsilon <= spent <= epsilon * (1 + 1e-9), (plan["sampler"], spent)
    if plan["sampler"] != "none":
        sampler, finder = plan.stage("sampler"), plan.stage("finder")
        composed = sampler.guarantee.compose(finder.guarantee)
        assert composed.epsilon(1e-5) == pytest.approx(spent, rel=1e-9)
        assert finder.budget.epsilon >= (1 - plan["split"]) * epsilon
