"""The warm start's data split is an object (issue 12: variants are not branches).

``WarmStart(variant=...)`` takes a :class:`~dpsample.pipelines.data_split.DataSplit`
or its name; the composition asks the object for the stages' specs, ``psi``'s
widening, the stages' data and the parallel epsilon. These tests pin each of those
against the rule it states (seed 003 Algorithms 2 and 4) and check that the name and
the object give the same run for the same key.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dpsample
from dpsample.bounds import uniform_deviation_bound
from dpsample.finders.dp_sgd import DPSGD
from dpsample.nets import NetExponentialMechanism
from dpsample.pipelines import DataSplit, DisjointHalves, SharedData, WarmStart
from dpsample.pipelines.data_split import VARIANTS
from dpsample.plan import Budget

DELTA = 1e-5


def _problem(n: int = 201) -> dpsample.Problem:
    z = jnp.asarray(0.3 + 0.05 * np.sin(np.arange(n)))[:, None]
    return dpsample.Problem(
        lambda x, e: jnp.sum(jnp.abs(x - e["z"])),
        {"z": z, "i": jnp.arange(n)},
        dpsample.Ball(1.0, dim=1),
        lipschitz=1.0,
        smoothness=1.0,
        loss_range=2.0,
    )


def _algo(variant):
    return WarmStart(
        NetExponentialMechanism(),
        DPSGD(num_steps=5, batch_size=20),
        variant=variant,
        spend="split",  # the finder's spend search is not what these tests are about
    )


def test_the_names_are_the_objects():
    assert isinstance(VARIANTS["erm"], SharedData)
    assert isinstance(VARIANTS["population"], DisjointHalves)
    assert all(isinstance(v, DataSplit) for v in VARIANTS.values())
    assert {v.name for v in VARIANTS.values()} == set(VARIANTS)


def test_specs_sizes_and_domains():
    spec = _problem(201).spec
    ball = dpsample.Ball(0.5, dim=1)
    a, b = SharedData().specs(spec, ball)
    assert (a.n, b.n, a.domain, b.domain) == (201, 201, ball, spec.domain)
    a, b = DisjointHalves().specs(spec, ball)
    assert (a.n, b.n, a.domain, b.domain) == (101, 100, ball, spec.domain)
    with pytest.raises(ValueError, match="n >= 4"):
        DisjointHalves().specs(_problem(3).spec, ball)


def test_widening_is_twice_each_halfs_uniform_deviation():
    spec = _problem(201).spec
    ball = dpsample.Ball(1.0, dim=1)
    same = SharedData().widen(0.5, 0.01, spec=spec, ball=ball, zeta=0.1, lipschitz=1.0)
    assert (same.psi, same.finder_initial_gap, same.failure_prob) == (0.5, 0.5, 0.01)
    wide = DisjointHalves().widen(
        0.5, 0.01, spec=spec, ball=ball, zeta=0.1, lipschitz=1.0
    )
    dev = [
        uniform_deviation_bound(
            lipschitz=1.0, radius=1.0, dim=1, n=m, failure_prob=0.025, loss_range=2.0
        )
        for m in (101, 100)
    ]
    assert wide.psi == 0.5 + 2 * dev[0].bound
    assert wide.finder_initial_gap == wide.psi + 2 * dev[1].bound
    assert wide.failure_prob == 0.01 + dev[0].failure_prob + dev[1].failure_prob
    assert wide.deviation == {"sampler_half": dev[0], "finder_half": dev[1]}


def test_population_data_are_disjoint_halves_from_the_key_alone():
    prob = _problem(201)
    plan = _algo("population").plan(prob.spec, Budget(2.0, DELTA))
    key = jax.random.key(3)
    a, b = DisjointHalves().data(key, plan, prob.data)
    ia, ib = np.asarray(a["i"]), np.asarray(b["i"])
    assert (ia.size, ib.size) == plan["split_sizes"] == (101, 100)
    assert sorted(np.concatenate([ia, ib]).tolist()) == list(range(201))
    # The permutation depends on the key and n only, not on the data's values.
    other = jax.tree.map(lambda leaf: leaf + 1, prob.data)
    a2, _ = DisjointHalves().data(key, plan, other)
    assert np.array_equal(np.asarray(a2["i"]) - 1, ia)
    shared = SharedData().data(key, plan, prob.data)
    assert shared[0] is prob.data and shared[1] is prob.data


def test_parallel_epsilon():
    assert SharedData().parallel_epsilon(1.0, 0.5) is None
    assert DisjointHalves().parallel_epsilon(1.0, 0.5) == 1.0


@pytest.mark.slow
@pytest.mark.parametrize("name", ["erm", "population"])
def test_the_name_and_the_object_give_the_same_run(name):
    prob = _problem(201)
    by_name = _algo(name).solve(jax.random.key(7), prob, epsilon=2.0, delta=DELTA)
    by_object = _algo(VARIANTS[name]).solve(
        jax.random.key(7), prob, epsilon=2.0, delta=DELTA
    )
    assert np.array_equal(by_name.value, by_object.value)
    assert by_name.info.variant == by_object.info.variant == name
    assert by_name.privacy.epsilon(DELTA) == by_object.privacy.epsilon(DELTA)
    population = name == "population"
    assert (by_name.info.split_sizes is not None) == population
    assert (by_name.info.epsilon_total_parallel is not None) == population


def test_a_custom_split_is_used_by_the_composition():
    class Reversed(DisjointHalves):
        """The same halves, with the stages' roles swapped (a user's own split)."""

        name = "reversed"

        def data(self, rng_key, plan, data):
            a, b = super().data(rng_key, plan, data)
            n_a = plan["split_sizes"][0]
            return jax.tree.map(lambda x: x[:n_a], b), a

    prob = _problem(200)
    plan = _algo(Reversed()).plan(prob.spec, Budget(2.0, DELTA))
    assert plan["variant"] == "reversed"
    assert plan.params["variant"].source == "user"


def test_an_unknown_variant_is_refused():
    prob = _problem(50)
    with pytest.raises(ValueError, match="variant"):
        _algo("online").plan(prob.spec, Budget(2.0, DELTA))
