"""DP-TR / DP-STR presets (issue 24): the default "practical", the named "theorem".

"theorem" is Theorem 15/18's schedule, stopping rule and output: the defaults before
issue 24, reproduced here against values recorded on main (6effd3f) with the same
keys. "practical" (the default, not in the paper) caps ``T`` so the Hessian noise
stays below ``M/2`` (relaxing ``alpha`` as the compute cap does), runs without the
stopping rule, releases the tail average and, for DP-STR, takes the Hessian batch
equal to the gradient batch; the plan labels each of these values.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dpsample
from dpsample.finders.trust_region import (
    DPStochasticTrustRegion,
    DPTrustRegion,
    dp_stochastic_trust_region,
    dp_trust_region,
    tr_theorem_parameters,
)
from dpsample.finders.trust_region.schedule import tr_practical_iters

DELTA = 1e-6
NON_PAPER = "preset 'practical' (not in the paper)"


def _problem(n: int = 300, dim: int = 2, loss_range: float = 1.0) -> dpsample.Problem:
    loss = lambda x, z: jnp.sum(-jnp.cos(x - z))  # noqa: E731
    data = 0.3 * jax.random.normal(jax.random.key(7), (n, dim))
    return dpsample.Problem(
        loss,
        data,
        dpsample.domains.Unconstrained(dim),
        lipschitz=math.sqrt(dim),
        smoothness=1.0,
        hessian_lipschitz=1.0,
        loss_range=loss_range,
    )


@pytest.mark.parametrize("algo", [DPTrustRegion, DPStochasticTrustRegion])
def test_practical_is_the_default_and_labels_what_it_sets(algo):
    # n = 1000, d = 10, epsilon = 1: floor(phi n^2 / (64 d k)) = 2 < Theorem 15's
    # T = 3795, so alpha is relaxed until T fits.
    spec = _problem(n=1000, dim=10, loss_range=20.0).spec
    plan = algo().plan(spec, dpsample.Budget(1.0, DELTA))
    assert plan["preset"] == "practical" and plan.source("preset") == "default"
    limit = tr_practical_iters(
        n=1000, dim=10, hessian_rank=10, epsilon=1.0, delta=DELTA
    )
    assert plan["num_iters"] <= limit == 2
    radius, t, _ = tr_theorem_parameters(
        alpha=plan["alpha"], hessian_lipschitz=1.0, initial_gap=20.0
    )
    assert (plan["radius"], plan["num_iters"]) == (pytest.approx(radius), t)
    assert plan["stop_threshold"] is None and plan["output"] == "tail_average"
    for name in ("alpha", "num_iters", "radius", "stop_threshold"):
        note = plan.params[name].note
        assert "preset 'practical'" in note and "(not in the paper)" in note, name
    assert "not in the paper" in plan.params["output"].note
    assert "no stopping rule" in " ".join(plan.notes)
    if algo is DPStochasticTrustRegion:
        assert plan["hessian_batch_size"] == plan["grad_batch_size"]
        # the batches of the alpha asked for (0.1), not of the relaxed one
        assert plan["grad_batch_size"] == 1000
        for name in ("grad_batch_size", "hessian_batch_size"):
            assert plan.source(name) == "default"
            assert plan.params[name].note.startswith(NON_PAPER), name
    # the guarantee is calibrated for the T that runs
    assert plan.guarantee.epsilon(DELTA) <= 1.0


@pytest.mark.parametrize("algo", [DPTrustRegion, DPStochasticTrustRegion])
def test_theorem_preset_is_theorem_15_18(algo):
    spec = _problem(n=1000, dim=10, loss_range=20.0).spec
    plan = algo(preset="theorem").plan(spec, dpsample.Budget(1.0, DELTA))
    radius, t, thr = tr_theorem_parameters(
        alpha=0.1, hessian_lipschitz=1.0, initial_gap=20.0
    )
    assert (plan["alpha"], plan["radius"], plan["num_iters"]) == (0.1, radius, t)
    assert plan["stop_threshold"] == thr and plan["output"] == "last"
    assert plan.source("num_iters") == "theorem"
    assert plan.params["num_iters"].note.startswith("preset 'theorem': Theorem 15/18")
    if algo is DPStochasticTrustRegion:
        assert plan.source("hessian_batch_size") == "theorem"
        assert plan["hessian_batch_size"] != plan["grad_batch_size"]


# Releases of dp_trust_region / dp_stochastic_trust_region at their defaults on
# main (6effd3f, before the presets), as float.hex, with their public run facts.
_MAIN = {
    "tr": (["0x1.fa0df09269640p-8", "-0x1.0a1b8176d0e4cp-2"], 1, 37),
    "str": (["0x1.a3f00c362965cp-5", "-0x1.2264c99f6f6b0p-1"], 5, 37),
}


@pytest.mark.slow  # compiles the jitted iteration: 9-12 s on 2 loaded cores
@pytest.mark.parametrize("which", ["tr", "str"])
def test_theorem_preset_reproduces_main_release(which):
    fn = dp_trust_region if which == "tr" else dp_stochastic_trust_region
    res = fn(
        jax.random.key(3),
        _problem(),
        epsilon=2.0,
        delta=DELTA,
        x0=jnp.array([0.5, -0.5]),
        alpha=0.3,
        preset="theorem",
    )
    value, run, t = _MAIN[which]
    np.testing.assert_allclose(
        np.asarray(res.value), [float.fromhex(v) for v in value], rtol=1e-12, atol=0
    )
    assert (res.info["iterations_run"], res.info["num_iters"]) == (run, t)
    assert res.info["output"] == "last"


def _five_steps(**options):
    return dp_trust_region(
        jax.random.key(0),
        _problem(),
        epsilon=2.0,
        delta=DELTA,
        x0=jnp.array([0.5, -0.5]),
        num_iters=5,
        return_iterates=True,
        **options,
    )


@pytest.mark.slow  # compiles the jitted iteration: 15 s on 2 loaded cores
def test_practical_run_releases_the_tail_average_of_the_whole_run():
    res = _five_steps()
    info = res.info
    assert info["iterations_run"] == 5 and not info["converged"]
    assert info["output"] == "tail_average" and info["output_index"] == 2
    np.testing.assert_array_equal(res.value, jnp.mean(info["iterates"][2:], axis=0))
    rand = _five_steps(output="random")
    # the same iterations (the output key is folded out of the run key)
    np.testing.assert_array_equal(rand.info["iterates"], info["iterates"])
    np.testing.assert_array_equal(
        rand.value, info["iterates"][rand.info["output_index"]]
    )


@pytest.mark.parametrize("algo", [DPTrustRegion, DPStochasticTrustRegion])
@pytest.mark.parametrize(
    "options, match",
    [({"preset": "paper"}, "preset"), ({"output": "mean"}, "output")],
)
def test_bad_preset_or_output_refused_before_running(algo, options, match):
    with pytest.raises(ValueError, match=match):
        algo().plan(_problem().spec, dpsample.Budget(1.0, DELTA), **options)
