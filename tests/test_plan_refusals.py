"""Refusals that name the option that fixes them, and a value checked to work.

Issue 24, section 3: a plan refused for public reasons says which option would fix
it, under the name the caller uses (inside a pipeline, ``sampler_options={...}``),
and a value that plans, or that none does. Each test reads the value off the message
and plans with it.
"""

from __future__ import annotations

import ast
import math
import re

import jax
import numpy as np
import pytest

from dpsample import Ball, Problem, registry
from dpsample.errors import Code, PlanRefusal, Search
from dpsample.pipelines.warm_start import WarmStart
from dpsample.plan import Budget

D, N = 5, 2000


def _cosine(x, z):
    return -jax.numpy.sum(jax.numpy.cos(x - z)) / math.sqrt(D)


@pytest.fixture(scope="module")
def spec():
    data = np.random.default_rng(0).normal(1.0, 0.5, size=(N, D))
    radius = 2.0 * math.sqrt(D)
    return Problem(
        _cosine,
        data,
        Ball(radius, dim=D),
        lipschitz=1.0,
        smoothness=1.0 / math.sqrt(D),
        hessian_lipschitz=1.0 / math.sqrt(D),
        loss_range=2.0 * math.sqrt(D),
    ).spec


def _offered(message: str, scope: str | None) -> dict:
    """The options of the message's "It plans with ..." clause."""
    if scope is None:
        found = re.search(r"It plans with (\w+)=([0-9.e+-]+) \(", message)
        assert found, message
        return {found.group(1): float(found.group(2))}
    found = re.search(rf"It plans with {scope}=(\{{[^}}]*\}})", message)
    assert found, message
    return ast.literal_eval(found.group(1))


def test_refusal_renders_scope_and_alternatives():
    e = PlanRefusal(
        "too many steps",
        fix=("beta", 0.5, "1,000 steps"),
        alternatives=(({"c_step": Code("proximal.C_STEP_PRACTICAL")}, "nominal"),),
    )
    assert str(e) == (
        "too many steps. It plans with beta=0.5 (1,000 steps). Otherwise: "
        "c_step=proximal.C_STEP_PRACTICAL (nominal)"
    )
    inner = e.within("sampler_options", together_with="sampler='gibbs'")
    assert "It plans with sampler='gibbs', sampler_options={'beta': 0.5}" in str(inner)
    assert "sampler_options={'c_step': proximal.C_STEP_PRACTICAL}" in str(inner)
    nested = inner.within("stage")
    assert "stage={'sampler_options': {'beta': 0.5}}" in str(nested)
    none = PlanRefusal("no way", search=Search("beta", 1.0)).resolved(None, why="x")
    assert str(none) == "no way. No value of 'beta' makes it plan: x"
    assert isinstance(e, ValueError)


@pytest.mark.slow  # builds a row table of millions of rows (about 5 s)
def test_warm_start_net_too_large_names_a_spacing_that_plans(spec):
    budget = Budget(1.0, 1e-6)
    with pytest.raises(PlanRefusal) as info:
        WarmStart("net").plan(spec, budget)
    message = str(info.value)
    assert "too large" in message and "psi" in message
    offered = _offered(message, "sampler_options")
    assert set(offered) == {"spacing"}
    plan = WarmStart("net", sampler_options=offered).plan(spec, budget)
    assert plan.stages[0][1]["spacing"] == pytest.approx(offered["spacing"])


def test_gibbs_proximal_names_a_beta_that_plans_near_the_boundary(spec):
    budget = Budget(1.0, 1e-6)
    gibbs = registry.create("gibbs")
    with pytest.raises(PlanRefusal) as info:
        gibbs.plan(spec, budget)
    message = str(info.value)
    beta = _offered(message, None)["beta"]
    assert gibbs.plan(spec, budget, beta=beta)["beta"] == beta
    with pytest.raises(PlanRefusal):  # the offered value is near the boundary
        gibbs.plan(spec, budget, beta=1.05 * beta)
    assert "max_proximal_steps" in message or "convex=True" in message
    assert "no better than a cold start" in message  # psi = loss_range here


def test_pipeline_names_the_sampler_it_chose(spec):
    # Inside WarmStart the same refusal names the pipeline's option.
    with pytest.raises(PlanRefusal) as info:
        WarmStart("gibbs").plan(spec, Budget(1.0, 1e-6))
    offered = _offered(str(info.value), "sampler_options")
    assert set(offered) == {"beta"}
    WarmStart("gibbs", sampler_options=offered).plan(spec, Budget(1.0, 1e-6))


def test_refusal_says_when_no_value_works(spec):
    with pytest.raises(PlanRefusal) as info:
        registry.create("gibbs").plan(spec, Budget(1.0, 1e-6, max_evaluations=10))
    message = str(info.value)
    assert "No value of 'beta' makes it plan" in message
    assert "It plans with" not in message


@pytest.mark.slow  # the refusal's beta search and the pipeline's plans: ~6 s CPU
def test_warm_start_gibbs_on_the_readme_problem_says_what_plans():
    # docs/warm_start.md: WarmStart(Gibbs(), ...) on the README's d = 2 problem is
    # refused at plan time; the refusal names a sampler beta that plans, and says
    # that its psi is no better than a cold start's.
    from dpsample import datasets, losses
    from dpsample.finders.dp_sgd import DPSGD
    from dpsample.samplers.gibbs import Gibbs

    data = datasets.load_sklearn(
        "breast_cancer", features=["mean concave points", "mean fractal dimension"]
    )
    loss = losses.sigmoid()
    readme = Problem(
        loss.loss_fn, data, Ball(4.0, dim=2), **loss.constants(radius=4.0)._asdict()
    ).spec
    budget = Budget(2.0, 1e-5)
    with pytest.raises(PlanRefusal) as info:
        WarmStart(Gibbs(), DPSGD(num_steps=200), split=0.5, variant="erm").plan(
            readme, budget
        )
    message = str(info.value)
    offered = _offered(message, "sampler_options")
    assert set(offered) == {"beta"}
    assert "no better than a cold start" in message
    plan = WarmStart(
        Gibbs(),
        DPSGD(num_steps=200),
        split=0.5,
        variant="erm",
        sampler_options=offered,
    ).plan(readme, budget)
    assert plan.stage("sampler")["beta"] == offered["beta"]


def _ball_spec(d: int, n: int):
    data = np.random.default_rng(0).normal(size=(n, d))
    return Problem(
        lambda x, z: jax.numpy.sum((x - z) ** 2) / (8.0 * d),
        data,
        Ball(1.0, dim=d),
        lipschitz=1.0,
        loss_range=1.0,
    ).spec


@pytest.mark.parametrize(
    ("d", "n", "cap", "says", "in_pipeline"),
    [
        # the cap is below the coarsest net's cost (main: a NaN ValueError)
        (8, 200, 50_000, "raise max_evaluations to at least", None),
        # no grid net fits in d = 30 (main: a search that ran for minutes)
        (
            30,
            1000,
            None,
            "No value of 'spacing' makes it plan",
            "No value of 'spacing' (in sampler_options) makes it plan",
        ),
    ],
)
def test_net_refuses_a_net_no_spacing_fits_and_says_so(d, n, cap, says, in_pipeline):
    with pytest.raises(PlanRefusal) as info:
        registry.create("net").plan(_ball_spec(d, n), Budget(1.0, 0.0, cap))
    message = str(info.value)
    assert says in message, message
    assert "It plans with" not in message
    # The same refusal inside the pipeline, named there.
    with pytest.raises(PlanRefusal) as info:
        WarmStart("net").plan(_ball_spec(d, n), Budget(1.0, 1e-6, cap))
    assert (in_pipeline or says) in str(info.value), str(info.value)
