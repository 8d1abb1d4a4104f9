"""The algorithm contract, checked on every registered algorithm.

For each name of the registry (``tests/contract_cases.py`` holds one small case per
algorithm): the plan is made from the public spec alone, is frozen, printable and
complete (every parameter has a known source, the guarantee is within the budget,
the cost is counted); the run returns the plan's guarantee and a typed info; the
convenience function gives the same result for the same key; data that do not match
the plan, and a plan of another algorithm, are refused before any private work; and a
second run with the same shapes does not recompile.
"""

from __future__ import annotations

import dataclasses
import inspect
import pkgutil

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from contract_cases import CASES

import dpsample
from dpsample import registry
from dpsample.base import AlgorithmInfo, PrivateAlgorithm
from dpsample.plan import SOURCES, Plan
from dpsample.privacy import PrivateResult

NAMES = registry.names()


def test_every_registered_algorithm_has_a_case():
    assert set(NAMES) == set(CASES), "add a case to tests/contract_cases.py"


def test_every_algorithm_class_is_registered_once():
    classes = set()
    for mod in pkgutil.walk_packages(dpsample.__path__, "dpsample."):
        if mod.name.startswith("dpsample.validation"):
            continue
        module = __import__(mod.name, fromlist=["_"])
        for obj in vars(module).values():
            if (
                inspect.isclass(obj)
                and issubclass(obj, PrivateAlgorithm)
                and not inspect.isabstract(obj)
                and obj.name  # a shared base without a name is no algorithm
                and obj.__module__ == module.__name__
            ):
                classes.add(f"{obj.__module__}:{obj.__qualname__}")
    assert classes == set(registry.ALGORITHMS)
    assert len(set(NAMES)) == len(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_registry_entry_describes_the_algorithm(name):
    entry = registry.get(name)
    assert entry.kind in ("sampler", "finder", "pipeline")
    assert entry.seed and entry.theorem and entry.guarantee_type and entry.summary
    options = {o.name: o for o in entry.options()}
    assert set(CASES[name].options) <= set(options)
    with pytest.raises(TypeError, match="no option"):
        entry.create(no_such_option=1)


def _plan(name, seed=0, n=None):
    case = CASES[name]
    problem = case.make_problem(seed, n or case.n)
    algo = registry.create(name)
    return case, problem, algo, algo.plan(problem.spec, case.budget, **case.options)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_plan_is_public_frozen_complete_and_printable(name):
    case, problem, algo, plan = _plan(name)
    assert isinstance(plan, Plan) and plan.algorithm == name
    assert plan.spec is problem.spec  # planned from the public half only
    assert not hasattr(plan.spec, "data")
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.guarantee = None
    with pytest.raises(TypeError):
        plan.params["x"] = 1
    for key, param in plan.params.items():
        assert param.source in SOURCES, key
    assert plan.spent_epsilon() <= case.budget.epsilon
    assert plan.guarantee.relation == problem.relation
    assert plan.cost.evaluations > 0 or plan.stages
    text = str(plan)
    assert name in text and "guarantee" in text and "cost" in text
    d = plan.to_dict()
    assert d["guarantee"]["epsilon"] == plan.spent_epsilon()
    assert d["cost"]["estimated_seconds"] >= 0


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_run_returns_the_plans_guarantee_and_typed_info_as_the_function_does(name):
    """One run checks both: the run's result, and the convenience function as plan
    then run (same key, same result)."""
    case, problem, algo, plan = _plan(name)
    key = jax.random.key(3)
    via_objects = algo.run(key, plan, problem.data)
    res = via_objects
    assert isinstance(res, PrivateResult)
    assert res.privacy is plan.guarantee
    assert isinstance(res.info, AlgorithmInfo)
    assert dataclasses.is_dataclass(res.info)
    assert dict(res.info)  # a mapping of its public fields
    assert "diagnostics" not in dict(res.info)
    via_function = case.convenience(key, problem, case.budget, dict(case.options))
    np.testing.assert_array_equal(
        np.asarray(via_function.value), np.asarray(via_objects.value)
    )
    assert via_function.privacy.epsilon(case.budget.delta) == plan.spent_epsilon()
    assert type(via_function.info) is type(via_objects.info)


@pytest.mark.parametrize("name", NAMES)
def test_mismatched_data_and_foreign_plans_are_refused(name):
    case, problem, algo, plan = _plan(name)
    other = case.make_problem(1, case.n + 1)
    with pytest.raises(ValueError, match="n="):
        algo.run(jax.random.key(0), plan, other.data)
    foreign = plan.replace(algorithm="not_" + name)
    with pytest.raises(ValueError, match="this plan is for"):
        algo.run(jax.random.key(0), foreign, problem.data)
    with pytest.raises(TypeError):
        algo.run(0, plan, problem.data)


def test_run_accepts_the_planned_problem_and_refuses_another():
    case, problem, algo, plan = _plan("dp_sgd")
    key = jax.random.key(4)
    np.testing.assert_array_equal(
        np.asarray(algo.run(key, plan, problem).value),
        np.asarray(algo.run(key, plan, problem.data).value),
    )
    other = dataclasses.replace(problem.spec, lipschitz=problem.lipschitz * 2)
    with pytest.raises(ValueError, match="differs from the spec"):
        algo.run(key, plan, other.with_data(problem.data))


class _CountingLoss:
    """Wraps a loss and counts its traces (calls with a JAX tracer)."""

    def __init__(self, loss):
        self.loss = loss
        self.traces = 0

    def __call__(self, x, example):
        if isinstance(x, jax.core.Tracer):
            self.traces += 1
        return self.loss(x, example)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_a_second_run_with_the_same_shapes_does_not_recompile(name):
    case = CASES[name]
    counters = []

    def wrap(loss):
        counters.append(_CountingLoss(loss))
        return counters[-1]

    def run_once(seed):
        problem = case.make_problem(seed, case.n, wrap)
        algo = registry.create(name)
        plan = algo.plan(problem.spec, case.budget, **case.options)
        jax.block_until_ready(algo.run(jax.random.key(seed), plan, problem.data).value)
        return counters[-1]

    first = run_once(0)
    assert first.traces > 0, "the counter is not wired to the algorithm"
    # Another problem object with the same loss function: share the counter.
    shared = first

    def wrap_shared(loss):
        return shared

    problem = case.make_problem(1, case.n, wrap_shared)
    algo = registry.create(name)
    before = shared.traces
    plan = algo.plan(problem.spec, case.budget, **case.options)
    jax.block_until_ready(algo.run(jax.random.key(1), plan, problem.data).value)
    assert shared.traces == before, f"{name} retraced {shared.traces - before} times"


def test_plan_refuses_bad_budgets_and_types():
    case, problem, algo, plan = _plan("dp_sgd")
    with pytest.raises(TypeError, match="Budget"):
        algo.plan(problem.spec, (1.0, 1e-5))
    with pytest.raises(TypeError, match="ProblemSpec"):
        algo.plan("spec", case.budget)
    with pytest.raises(ValueError):
        dpsample.Budget(1.0, 1.5)
    with pytest.raises(ValueError):
        dpsample.Budget(1.0, 1e-5, max_evaluations=0)


@pytest.mark.slow
def test_compute_budget_caps_the_theorem_schedule_and_refuses_a_fixed_one():
    case = CASES["dp_sgd"]
    problem = case.make_problem(0, 256)
    algo = registry.create("dp_sgd", batch_size=8)
    free = algo.plan(problem.spec, dpsample.Budget(2.0, 1e-5))
    m = free["max_batch_size"]
    cap = 10 * m + 3
    capped = algo.plan(problem.spec, dpsample.Budget(2.0, 1e-5, max_evaluations=cap))
    assert free["num_steps"] > 10
    assert capped["num_steps"] == 10
    assert capped.cost.evaluations <= cap
    assert "capped" in capped.params["num_steps"].note
    # fewer steps, same budget: the noise is calibrated for what runs
    assert capped["noise_multiplier"] < free["noise_multiplier"]
    with pytest.raises(ValueError, match="max_evaluations"):
        algo.plan(
            problem.spec,
            dpsample.Budget(2.0, 1e-5, max_evaluations=cap),
            num_steps=11,
        )


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_every_plan_fits_its_compute_budget_or_refuses(name):
    """Issue 16 item 3: ``max_evaluations`` is never ignored.

    At a tenth of the case's own planned cost, each algorithm either shrinks its
    schedule to fit (the plan's cost is then within the cap) or refuses with a
    ``ValueError`` naming ``max_evaluations``. Fails before the proximal Gibbs
    route refused: it planned its full schedule whatever the cap.
    """
    case = CASES[name]
    problem = case.make_problem(0, case.n, lambda f: f)
    algo = registry.create(name)
    free = algo.plan(problem.spec, case.budget, **case.options)
    cap = max(1, free.cost.evaluations // 10)
    budget = dataclasses.replace(case.budget, max_evaluations=cap)
    try:
        capped = algo.plan(problem.spec, budget, **case.options)
    except ValueError as err:
        assert "max_evaluations" in str(err)
    else:
        assert capped.cost.evaluations <= cap


@pytest.mark.slow
def test_options_bound_at_construction_are_overridden_by_plan():
    case, problem, _, _ = _plan("dp_sgd")
    algo = registry.create("dp_sgd", num_steps=4, batch_size=8)
    assert algo.plan(problem.spec, case.budget)["num_steps"] == 4
    assert algo.plan(problem.spec, case.budget, num_steps=7)["num_steps"] == 7
    assert (
        algo.with_options(num_steps=5).plan(problem.spec, case.budget)["num_steps"] == 5
    )


def test_spec_round_trip_checks_shapes():
    problem = CASES["dp_sgd"].make_problem(0, 10)
    spec = problem.spec
    assert spec.with_data(problem.data).n == 10
    with pytest.raises(ValueError, match="do not match"):
        spec.with_data({"z": jnp.zeros((10, 3))})
