"""Gibbs routes are objects: a new one is one class and one registration (issue 29).

The toy route ``"walk"`` below is defined and registered here only: ``gibbs``,
``Gibbs.plan``, the compiled chains and the non-private diagnostics reach it through
the registry without a change to ``gibbs.py``, ``chains.py`` or ``diagnostics.py``.
Its kernel is a Gaussian random walk projected on ``K`` that never reads the data, so
its release does not depend on the data and any guarantee holds for it (the route
claims the exact target's tightest bound, as a route through the target would).
"""

from __future__ import annotations

import dataclasses
import pathlib
import re
from collections.abc import Iterator
from typing import Any, ClassVar, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from dpsample import Ball, Budget, Problem
from dpsample.plan import Param
from dpsample.samplers import diagnostics, routes
from dpsample.samplers.chains import KernelSpec, initial_point
from dpsample.samplers.gibbs import Gibbs, gibbs
from dpsample.samplers.gibbs_options import (
    BUILTIN_ROUTES,
    SCHEDULE_OPTIONS,
    routes_using,
)
from dpsample.samplers.routes.base import Route, RouteContext, RoutePlan
from dpsample.samplers.target import GibbsTarget

SAMPLERS = pathlib.Path(__file__).resolve().parents[2] / "dpsample" / "samplers"


class WalkState(NamedTuple):
    position: jax.Array


class WalkInfo(NamedTuple):
    moved: jax.Array


@dataclasses.dataclass(frozen=True)
class WalkKernel(KernelSpec):
    method: ClassVar[str] = "walk"

    def build(self) -> tuple[Any, Any]:
        def init(position: Any, target: Any) -> WalkState:
            return WalkState(jnp.asarray(position, jnp.float64))

        def kernel(key: Any, state: WalkState, target: Any, step_size: Any) -> Any:
            step = step_size * jax.random.normal(key, state.position.shape)
            new = target.problem.domain.project(state.position + step)
            return WalkState(new), WalkInfo(jnp.any(new != state.position))

        return init, kernel

    def loss_evaluations(self, num_steps: int) -> int:
        return 0

    def gradient_evaluations(self, num_steps: int, n: int) -> int:
        return 0


class WalkRoute(Route):
    name = "walk"
    warm_start = False

    def schedule(self, context: RouteContext) -> RoutePlan:
        request = context.request
        steps = (
            3 if request.options.num_steps is None else int(request.options.num_steps)
        )
        return RoutePlan(
            kernel=WalkKernel(),
            privacy=context.exact,
            bound=context.bound,
            tv_slack=0.0,
            params={
                "step_size": Param(1.0, "default", "the walk's step"),
                "num_steps": Param(
                    steps, "default" if request.options.num_steps is None else "user"
                ),
            },
            notes=("a public random walk: the release reads no data",),
        )

    def diagnostics_kernel(self, target, *, clip_norm=None, **options) -> KernelSpec:
        return WalkKernel()


@pytest.fixture
def walk() -> Iterator[Route]:
    """The toy route, registered for one test (and removed after it)."""
    route = routes.register(WalkRoute())
    try:
        yield route
    finally:
        routes.ROUTES.pop(route.name)


def _problem(n: int = 20, data: Any = None) -> Problem:
    data = jnp.linspace(-0.5, 0.5, n) if data is None else data
    return Problem(
        lambda x, z: jnp.abs(x[0] - z), data, Ball(1.0, dim=1), lipschitz=1.0
    )


def test_a_registered_route_is_planned_and_run_by_gibbs(walk):
    p = _problem()
    plan = Gibbs(method="walk").plan(p.spec, Budget(1.0, 1e-5))
    assert plan["method"] == "walk" and plan["num_steps"] == 3
    assert plan.cost.evaluations == 0 and plan.warm_start is None
    assert "a public random walk: the release reads no data" in plan.notes
    assert plan.internal["route"] is walk
    # run at a public (beta, mu = 0): pi_0 is uniform on K (no Gaussian to compile)
    key, opts = jax.random.key(3), {"method": "walk", "beta": 2.0, "mu": 0.0}
    res = gibbs(key, p, epsilon=1.0, delta=1e-5, **opts)
    assert res.info.method == "walk" and res.info.num_steps == 3
    assert res.privacy.epsilon(1e-5) <= 1.0
    # the walk reads no data: other data, same key, same release (and it moved
    # from Route.run's public initial point)
    other = gibbs(key, _problem(data=jnp.zeros(20)), epsilon=1.0, delta=1e-5, **opts)
    np.testing.assert_array_equal(np.asarray(res.value), np.asarray(other.value))
    x0 = initial_point(
        jax.random.split(key)[0], GibbsTarget.create(p, beta=2.0, mu=0.0)
    )
    assert float(jnp.abs(res.value[0])) <= 1.0 and res.value[0] != x0[0]


def test_a_registered_route_runs_in_the_diagnostics(walk):
    p = _problem(5)
    target = GibbsTarget.create(p, beta=1.0, mu=1.0)
    starts = jnp.asarray([[0.25], [-0.5]])
    res = diagnostics.run(
        jax.random.key(0),
        target,
        method="walk",
        num_chains=2,
        num_steps=4,
        step_size=0.1,
        init_positions=starts,
    )
    assert res.positions.shape == (2, 4, 1)
    assert np.all(np.abs(res.positions) <= 1.0)
    assert res.info.moved.shape == (2, 4) and res.info.moved.all()


def test_a_registered_route_refuses_the_other_routes_options(walk):
    p = _problem()
    budget = Budget(1.0, 1e-5)
    with pytest.raises(
        TypeError,
        match=r"unexpected options \['c_step'\] for method "
        "'walk'",
    ):
        Gibbs(method="walk").plan(p.spec, budget, c_step=0.01)
    with pytest.raises(ValueError, match="tv_bound is only for method='mala'"):
        Gibbs(method="walk").plan(p.spec, budget, tv_bound=1e-3)


def test_the_registry_names_its_routes_and_guards_them(walk):
    assert tuple(routes.ROUTES) == ("proximal", "langevin", "mala", "walk")
    with pytest.raises(ValueError, match="registered already"):
        routes.register(WalkRoute())
    with pytest.raises(TypeError, match="Expected a Route instance"):
        routes.register(WalkKernel())  # type: ignore[arg-type]
    with pytest.raises(
        ValueError,
        match=r"Expected method in \('proximal', "
        r"'langevin', 'mala', 'walk'\), got 'hmc'",
    ):
        Gibbs(method="hmc").plan(_problem().spec, Budget(1.0, 1e-5))


def test_the_toy_route_is_gone_once_unregistered():
    assert "walk" not in routes.ROUTES
    with pytest.raises(ValueError, match="Expected method in"):
        routes.resolve("walk")


def test_no_method_string_switch_is_left_in_the_samplers():
    """The name is resolved once (``routes.resolve``); nothing compares it after."""
    switch = re.compile(
        r"(if|elif|and|or|return|=)\s+[\w.]*method\s*(==|!=|not\s+in\b|in\b)"
    )
    found = [
        f"{path.relative_to(SAMPLERS)}:{i}: {line.strip()}"
        for path in sorted(SAMPLERS.rglob("*.py"))
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if switch.search(line)
    ]
    assert not found, found
    # the pattern does catch a switch, and not the refusal's message
    assert switch.search('if method == "mala":')
    assert switch.search("if self.method not in METHODS:")
    assert not switch.search("ValueError: Expected method in ('proximal', ...)")


def test_the_options_a_route_refuses_are_those_the_declaration_gives_to_others():
    # gibbs_options names the built-in routes using each option; a route refuses
    # (TypeError/ValueError) exactly the schedule options and tv_bound it does not use
    assert tuple(routes.ROUTES)[:3] == BUILTIN_ROUTES
    for name in BUILTIN_ROUTES:
        used = {o for o in (*SCHEDULE_OPTIONS, "tv_bound") if name in routes_using(o)}
        assert routes.resolve(name).options == used, name
