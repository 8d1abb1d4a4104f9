"""dpsample's MALA and Langevin as BlackJAX kernels (issue 28 item 1).

A plain ``logdensity_fn`` and pytree positions, run by
``blackjax.util.run_inference_algorithm`` next to ``blackjax.mala`` on the same
Gaussian targets; moments are checked against the exact stationary laws with
MCSE tolerances (STYLE.md S9), fixed keys.
"""

import os
import pathlib
import re
import subprocess
import sys
import textwrap

import blackjax
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from blackjax.adaptation.step_size import dual_averaging_adaptation
from blackjax.diagnostics import effective_sample_size
from blackjax.util import run_inference_algorithm
from jax.flatten_util import ravel_pytree
from scipy import stats

from dpsample.domains import Ball
from dpsample.samplers import langevin, mala, proximal
from dpsample.samplers.target import GibbsTarget

SEED = 28
ALPHA = 1e-3
Z = stats.norm.ppf(1 - ALPHA / 2)
NUM_CHAINS, NUM_STEPS, BURN_IN = 16, 3000, 500

# A 2-D Gaussian and a pytree-position Gaussian with known means and sds.
MEAN_2D, SD_2D = jnp.array([1.0, -0.5]), jnp.array([1.0, 0.5])
MEAN_TREE = {"loc": jnp.array(0.5), "w": jnp.array([-1.0, 0.0])}
SD_TREE = {"loc": jnp.array(1.0), "w": jnp.array([0.7, 0.5])}


def _gaussian(mean, sd):
    def logdensity_fn(x):
        z = jax.tree.map(lambda a, m, s: (a - m) / s, x, mean, sd)
        return -0.5 * sum(jnp.sum(v**2) for v in jax.tree.leaves(z))

    return logdensity_fn


TARGETS = {
    "2d": (_gaussian(MEAN_2D, SD_2D), MEAN_2D, SD_2D),
    "pytree": (_gaussian(MEAN_TREE, SD_TREE), MEAN_TREE, SD_TREE),
}


def _algorithm(name, logdensity_fn, step_size):
    if name == "blackjax.mala":
        return blackjax.mala(logdensity_fn, step_size)
    if name == "mala":
        return mala.as_top_level_api(logdensity_fn, step_size)
    return langevin.as_top_level_api(logdensity_fn, step_size)


def _position(state, info):
    return state.position


def _chains(algo, position, key):
    """Flat draws of shape (chains, steps - burn-in, d) via run_inference_algorithm."""

    def one(k):
        _, positions = run_inference_algorithm(
            k, algo, NUM_STEPS, initial_position=position, transform=_position
        )
        return jax.vmap(lambda p: ravel_pytree(p)[0])(positions)

    draws = jax.vmap(one)(jax.random.split(key, NUM_CHAINS))
    return np.asarray(draws[:, BURN_IN:])


def _mcse_z(values, truth):
    """|mean - truth| / (sd / sqrt(ESS)) per coordinate (values: chains, steps, d)."""
    ess = np.asarray(effective_sample_size(values, chain_axis=0, sample_axis=1))
    mean = values.mean(axis=(0, 1))
    sd = values.std(axis=(0, 1))
    return np.abs(mean - truth) / (sd / np.sqrt(ess))


def _exact(name, mean, sd, step_size):
    """Exact stationary mean and variance of the chain, per flat coordinate.

    MALA (BlackJAX's or dpsample's) is exact: N(m, s^2). The unadjusted Langevin
    step on N(m, s^2) is the AR(1) chain x' = x - h (x - m)/s^2 + sqrt(2h) xi,
    whose stationary law is N(m, s^2 / (1 - h / (2 s^2))).
    """
    m, s = np.asarray(ravel_pytree(mean)[0]), np.asarray(ravel_pytree(sd)[0])
    var = s**2
    if name == "langevin":
        var = var / (1.0 - step_size / (2.0 * var))
    return m, var


STEP = {"mala": 0.3, "blackjax.mala": 0.3, "langevin": 0.1}


@pytest.mark.slow  # about 2 s each (compilation of the vmapped loop)
@pytest.mark.parametrize("target", sorted(TARGETS))
@pytest.mark.parametrize("name", ["mala", "blackjax.mala", "langevin"])
def test_run_inference_algorithm_moments_mcse(name, target):
    logdensity_fn, mean, sd = TARGETS[target]
    start = jax.tree.map(jnp.zeros_like, mean)
    draws = _chains(
        _algorithm(name, logdensity_fn, STEP[name]), start, jax.random.key(SEED)
    )
    m, var = _exact(name, mean, sd, STEP[name])
    assert np.all(_mcse_z(draws, m) < Z)
    assert np.all(_mcse_z((draws - m) ** 2, var) < Z)
    if name == "langevin":
        # Power: the same test rejects ULA's variance as the continuous law's
        # (the step's bias is s^2 h / (2 s^2 - h), 25% on the sd-0.5 coordinate).
        s2 = np.asarray(ravel_pytree(sd)[0]) ** 2
        assert np.max(_mcse_z((draws - m) ** 2, s2)) > Z


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_mala_with_logdensity_fn_is_blackjax_mala(target):
    # The plain route is BlackJAX's MALA kernel: the same chain for the same key.
    logdensity_fn, mean, _ = TARGETS[target]
    start = jax.tree.map(jnp.zeros_like, mean)
    key = jax.random.key(SEED + 1)
    ours = run_inference_algorithm(
        key, mala.as_top_level_api(logdensity_fn, 0.3), 50, initial_position=start
    )[1]
    theirs = run_inference_algorithm(
        key, blackjax.mala(logdensity_fn, 0.3), 50, initial_position=start
    )[1]
    for a, b in zip(jax.tree.leaves(ours), jax.tree.leaves(theirs), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_adaptation_loop_with_traced_step_size_matches_blackjax_mala(target):
    # A window-adaptation-style loop: the kernel takes the step size at call time
    # (traced, tuned by BlackJAX's dual averaging); ours follows blackjax.mala's.
    logdensity_fn, mean, _ = TARGETS[target]
    start = jax.tree.map(jnp.zeros_like, mean)
    da_init, da_update, da_final = dual_averaging_adaptation(target=0.57)
    keys = jax.random.split(jax.random.key(SEED + 2), 200)

    def warmup(kernel, init):
        def body(carry, key):
            state, da = carry
            step_size = jnp.exp(da.log_step_size)
            state, info = kernel(key, state, logdensity_fn, step_size)
            return (state, da_update(da, info.acceptance_rate)), None

        carry = (init(start, logdensity_fn), da_init(1.0))
        (state, da), _ = jax.lax.scan(body, carry, keys)
        return state.position, da_final(da)

    ours = jax.jit(lambda: warmup(mala.build_kernel(), mala.init))()
    theirs = jax.jit(lambda: warmup(blackjax.mala.build_kernel(), blackjax.mala.init))()
    for a, b in zip(jax.tree.leaves(ours), jax.tree.leaves(theirs), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert 0.0 < float(ours[1]) < 10.0


@pytest.mark.parametrize("module", [mala, langevin])
def test_jit_step_closes_over_target_and_traces_once(module):
    traces = []
    logdensity = TARGETS["pytree"][0]

    def logdensity_fn(x):
        traces.append(1)
        return logdensity(x)

    algo = module.as_top_level_api(logdensity_fn, 0.1)
    state = algo.init(
        {"loc": jnp.asarray(np.float64(0.1)), "w": jnp.array([0.2, -0.3])}
    )
    traces.clear()
    step = jax.jit(algo.step)  # no static_argnums: the target is closed over
    keys = jax.random.split(jax.random.key(SEED), 3)
    jitted, _ = step(keys[0], state)
    jitted, _ = step(keys[1], jitted)
    jitted, _ = step(keys[2], jitted)
    assert len(traces) == 1
    eager = state
    for k in keys:
        eager, _ = algo.step(k, eager)
    for a, b in zip(jax.tree.leaves(jitted), jax.tree.leaves(eager), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12)


@pytest.mark.slow  # 2-4 s each: the float64 private kernels compile
@pytest.mark.parametrize("module", [mala, langevin, proximal])
def test_jit_step_private_route(module):
    target = GibbsTarget.from_loss(
        lambda x, z: jnp.abs(x[0] - z),
        jnp.linspace(-1.0, 1.0, 5),
        Ball(1.0, dim=1),
        beta=2.0,
        mu=0.5,
        lipschitz=1.0,
    )
    kwargs = {"clip_norm": 1.0} if module is langevin else {}
    algo = module.as_top_level_api(target, 0.02, **kwargs)
    state = algo.init(jnp.zeros(1))
    key = jax.random.key(SEED)
    jitted, _ = jax.jit(algo.step)(key, state)
    eager, _ = algo.step(key, state)
    assert jitted.position.dtype == jnp.float64
    np.testing.assert_allclose(jitted.position, eager.position, rtol=1e-12)
    assert float(jnp.abs(jitted.position[0])) <= 1.0


def test_refusals():
    with pytest.raises(TypeError, match="GibbsTarget or a logdensity_fn"):
        mala.as_top_level_api(3.0, 0.1)
    with pytest.raises(TypeError, match="GibbsTarget or a logdensity_fn"):
        langevin.init(jnp.zeros(1), "target")
    with pytest.raises(ValueError, match="clip_norm"):
        langevin.as_top_level_api(lambda x: -(x @ x), 0.1, clip_norm=1.0)
    with pytest.raises(ValueError, match="clip_norm"):
        langevin.build_kernel(clip_norm=1.0)(
            jax.random.key(0),
            langevin.init(jnp.zeros(2), lambda x: -(x @ x)),
            lambda x: -(x @ x),
            0.1,
        )


_SCRIPT_32 = textwrap.dedent(
    """
    import jax, jax.numpy as jnp
    from blackjax.util import run_inference_algorithm
    from dpsample.samplers import langevin, mala

    logdensity_fn = lambda p: -0.5 * (p["a"] ** 2 + jnp.sum(p["w"] ** 2))
    start = {"a": jnp.float32(0.0), "w": jnp.zeros(2, jnp.float32)}
    out = []
    for module in (mala, langevin):
        algo = module.as_top_level_api(logdensity_fn, 0.1)
        state, _ = jax.jit(algo.step)(jax.random.key(0), algo.init(start))
        _, (states, _) = run_inference_algorithm(
            jax.random.key(1), algo, 20, initial_position=start)
        out += [str(state.position["w"].dtype), str(states.position["a"].dtype)]
    print(*out, bool(jax.config.jax_enable_x64))
    """
)


def _run_32bit(script):
    """stdout of ``script`` in a fresh 32-bit process (conftest.py enables x64)."""
    env = {k: v for k, v in os.environ.items() if k != "JAX_ENABLE_X64"}
    env["JAX_PLATFORMS"] = "cpu"
    out = subprocess.run(
        [sys.executable, "-W", "error", "-c", script],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=300,
    )
    return out.stdout


@pytest.mark.slow
def test_logdensity_route_runs_in_float32_without_enable_x64():
    assert _run_32bit(_SCRIPT_32).split() == ["float32"] * 4 + ["False"]


@pytest.mark.slow
def test_docs_snippet_runs_in_32bit_mode():
    docs = pathlib.Path(__file__).parents[2] / "docs" / "samplers_gibbs.md"
    section = docs.read_text().split("## Using dpsample samplers as BlackJAX kernels")[
        1
    ]
    snippet = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    lines = _run_32bit(snippet).splitlines()
    loc = np.array(lines[0].strip("[]").split(), dtype=float)
    # 1500 MALA draws of sd 1, ESS about 400: MCSE about 0.05; 0.15 is 3 MCSE.
    assert np.all(np.abs(loc - 1.0) < 0.15)
    assert lines[1:] == ["True", "float64 True"]


def test_proximal_refuses_a_function_and_names_the_adapter():
    with pytest.raises(TypeError, match=r"GibbsTarget\.from_loss"):
        proximal.as_top_level_api(lambda x: -(x @ x), 0.01)
