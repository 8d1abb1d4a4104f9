"""Output rules and presets shared by DP-SGD and DP-SPIDER (issue 24, sec. 2).

The rules are one implementation (:mod:`dpsample.finders.outputs`), the presets one
vocabulary (:mod:`dpsample.finders.presets`); both finders are checked against them.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dpsample
from dpsample.finders import dp_sgd, dp_spider, outputs, presets
from dpsample.finders.dp_sgd import DPSGD, OUTPUT_RULES
from dpsample.finders.dp_spider import DPSpider, spider_theorem_parameters
from dpsample.plan import Budget

DELTA = 1e-5

#: Each finder with a short explicit schedule (the same trajectory for one key).
SCHEDULES = {
    "dp_sgd": (dp_sgd, dict(num_steps=9, batch_size=8, clip_norm=1.0)),
    "dp_spider": (
        dp_spider,
        dict(num_steps=9, phase_length=3, variation_batch_size=8),
    ),
}


def _shifted_quadratic() -> dpsample.Problem:
    z = np.linspace(-1.0, 1.0, 40)[:, None]
    return dpsample.Problem(
        lambda x, e: 0.5 * jnp.sum((x - 3.0 * e) ** 2),
        z,
        dpsample.Ball(0.5, dim=1),
        lipschitz=4.0,
        smoothness=1.0,
        loss_range=8.0,
    )


def _cosine(d: int = 3, n: int = 200) -> dpsample.Problem:
    """``experiments/problems/warm_start_003.py``'s cosine (smooth, Thm 3.2's class)."""
    z = 1.0 + 0.5 * jax.random.normal(jax.random.key(7), (n, d), jnp.float64)
    r = math.sqrt(d)
    return dpsample.Problem(
        lambda x, e: -jnp.sum(jnp.cos(x - e["x"])) / r,
        {"x": z},
        dpsample.Ball(2.0 * r, dim=d),
        lipschitz=1.0,
        smoothness=1.0 / r,
        loss_range=2.0 * r,
    )


def test_one_implementation_of_the_rules():
    assert OUTPUT_RULES is outputs.OUTPUT_RULES
    assert outputs.OUTPUT_RULES == ("tail_average", "random", "last")


@pytest.mark.slow
@pytest.mark.parametrize("finder", sorted(SCHEDULES))
@pytest.mark.parametrize("project", [True, False])
def test_output_rules_are_post_processing_of_one_trajectory(finder, project):
    """``"tail_average"``, ``"random"``, ``"last"``: same trajectory and guarantee
    for one key, in both finders; the average is the mean of ``x_{T//2+1}..x_T``
    projected onto the Ball (which an unprojected, clipped run can leave)."""
    fn, schedule = SCHEDULES[finder]
    prob = _shifted_quadratic()
    kw = dict(
        epsilon=1.0,
        delta=DELTA,
        x0=jnp.array([0.4]),
        learning_rate=2.0,
        project=project,
        return_iterates=True,
        **schedule,
    )
    key = jax.random.key(3)
    tail = fn(key, prob, output="tail_average", **kw)
    rand = fn(key, prob, output="random", **kw)
    last = fn(key, prob, output="last", **kw)
    xs = np.asarray(tail.info["iterates"])
    np.testing.assert_array_equal(xs, np.asarray(rand.info["iterates"]))
    np.testing.assert_array_equal(xs, np.asarray(last.info["iterates"]))
    expected = np.clip(xs[4:].mean(axis=0), -0.5, 0.5)
    np.testing.assert_allclose(tail.value, expected, rtol=1e-12, atol=1e-15)
    assert tail.info["output"] == "tail_average"
    assert tail.info["output_index"] == 4
    np.testing.assert_array_equal(last.value, xs[-1])
    assert last.info["output_index"] == 8
    np.testing.assert_array_equal(rand.value, xs[rand.info["output_index"]])
    assert tail.privacy.epsilon(DELTA) == rand.privacy.epsilon(DELTA)
    assert tail.privacy.epsilon(DELTA) == last.privacy.epsilon(DELTA)
    if not project:  # the unprojected trajectory leaves K; the average is put back
        assert np.abs(xs).max() > 0.5


@pytest.mark.parametrize("algo", [DPSGD, DPSpider])
def test_bad_output_and_preset_are_refused_when_planning(algo):
    spec = _shifted_quadratic().spec
    with pytest.raises(ValueError, match=r"Expected output in \('tail_average'"):
        algo().plan(spec, Budget(1.0, DELTA), output="best", num_steps=3)
    with pytest.raises(ValueError, match=r"Expected preset in \('practical'"):
        algo().plan(spec, Budget(1.0, DELTA), preset="paper", num_steps=3)


@pytest.mark.slow
def test_spider_presets():
    """``"theorem"``: Thm B.3's schedule (the former defaults) and its random
    iterate; ``"practical"`` (default): the same schedule, the tail average; a given
    output wins over either preset; every theorem-set note names the preset."""
    prob = _cosine()
    spec, budget = prob.spec, Budget(1.0, 1e-6)
    thm = spider_theorem_parameters(
        n=spec.n,
        dim=spec.dim,
        epsilon=1.0,
        delta=1e-6,
        lipschitz=1.0,
        smoothness=spec.smoothness,
        initial_gap=spec.loss_range,
    )
    theorem = DPSpider().plan(spec, budget, preset="theorem")
    default = DPSpider().plan(spec, budget)
    for name in ("num_steps", "phase_length", "learning_rate", "variation_batch_size"):
        assert theorem[name] == thm[name] == default[name]
        assert theorem.params[name].source == "theorem"
        assert theorem.params[name].note.startswith("preset 'theorem': Arora")
        assert default.params[name].note.startswith("preset 'practical': Arora")
    assert theorem["anchor_batch_size"] == spec.n
    assert (theorem["output"], theorem.source("output")) == ("random", "theorem")
    assert (theorem["preset"], theorem.source("preset")) == ("theorem", "user")
    assert (default["output"], default.source("output")) == ("tail_average", "default")
    assert (default["preset"], default.source("preset")) == ("practical", "default")
    assert "preset 'practical'" in default.params["output"].note
    given = DPSpider().plan(spec, budget, preset="theorem", output="last")
    assert (given["output"], given.source("output")) == ("last", "user")
    assert given.guarantee.epsilon(1e-6) == theorem.guarantee.epsilon(1e-6)


@pytest.mark.slow
def test_sgd_presets():
    """DP-SGD's two presets share Theorem 3.4's steps and step size; ``"theorem"``
    releases its uniform iterate at spec 003 A8's lot, ``"practical"`` (default) the
    tail average at Abadi's lot-size condition for that schedule, never below A8's
    (issue 24: the default lot)."""
    spec, budget = _cosine().spec, Budget(1.0, 1e-6)
    theorem = DPSGD().plan(spec, budget, preset="theorem")
    default = DPSGD().plan(spec, budget)
    for name in ("num_steps", "learning_rate"):
        assert theorem[name] == default[name]
    assert default["batch_size"] >= theorem["batch_size"]
    assert theorem.params["num_steps"].note.startswith("preset 'theorem': seed 002")
    assert (theorem["output"], theorem.source("output")) == ("random", "theorem")
    assert (default["output"], default.source("output")) == ("tail_average", "default")
    assert presets.FINDER_PRESETS == ("practical", "theorem")
