"""The non-private multi-chain diagnostics runner."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from dpsample.domains import Ball
from dpsample.problem import Problem
from dpsample.samplers import diagnostics
from dpsample.samplers.target import GibbsTarget


def _target():
    p = Problem(
        lambda x, z: jnp.abs(x[0] - z), jnp.zeros(3), Ball(2.0, dim=2), lipschitz=1.0
    )
    return GibbsTarget.create(p, beta=1.0, mu=1.0)


@pytest.mark.slow
@pytest.mark.parametrize("method", ["mala", "langevin", "proximal"])
def test_run_shapes_and_arviz(method):
    res = diagnostics.run(
        jax.random.key(0),
        _target(),
        method=method,
        num_chains=3,
        num_steps=60,
        step_size=0.1,
        num_warmup=10,
        thin=2,
    )
    assert res.positions.shape == (3, 25, 2)
    assert res.inference_data.posterior["x"].shape == (3, 25, 2)
    assert res.ess.shape == (2,) and np.all(res.ess > 0)
    assert res.rhat.shape == (2,) and np.all(np.isfinite(res.rhat))
    assert jax.tree.leaves(res.info)[0].shape[:2] == (3, 60)
    assert np.all(np.linalg.norm(res.positions, axis=-1) <= 2.0 + 1e-12)
    # sample_stats: the kernel's per-step info, cut like the positions (issue 15)
    stats = res.inference_data.sample_stats
    expected = {
        "proximal": {"is_accepted", "num_trials", "num_loss_evaluations"},
        "langevin": {"projected", "drift_norm"},
        "mala": {"is_accepted", "acceptance_rate"},
    }[method] | {"step_size"}
    assert expected <= set(stats.data_vars)
    for name in expected - {"step_size"}:
        assert stats[name].shape == (3, 25)
        np.testing.assert_array_equal(
            stats[name].values, np.asarray(getattr(res.info, name))[:, 10::2]
        )
    assert np.all(stats["step_size"].values == 0.1)


@pytest.mark.slow
def test_progress_is_off_by_default_and_prints_when_on(capsys):
    kw = dict(method="langevin", num_chains=2, num_steps=20, step_size=0.1)
    a = diagnostics.run(jax.random.key(1), _target(), **kw)
    assert capsys.readouterr().err == ""
    b = diagnostics.run(jax.random.key(1), _target(), progress=True, num_chunks=4, **kw)
    err = capsys.readouterr().err
    assert "NOT private" in err and "20/20" in err
    np.testing.assert_allclose(a.positions, b.positions)  # chunking changes nothing


def test_bad_input():
    t = _target()
    with pytest.raises(ValueError):
        diagnostics.run(jax.random.key(0), t, method="nuts", num_chains=2, num_steps=5)
    with pytest.raises(ValueError):
        diagnostics.run(jax.random.key(0), t, method="mala", num_chains=0, num_steps=5)
    with pytest.raises(ValueError):
        diagnostics.run(
            jax.random.key(0), t, method="mala", num_chains=2, num_steps=5, num_warmup=5
        )
    with pytest.raises(ValueError):
        diagnostics.run(
            jax.random.key(0),
            t,
            method="mala",
            num_chains=2,
            num_steps=5,
            init_positions=jnp.full((2, 2), 3.0),
        )
    with pytest.raises(TypeError):
        diagnostics.run(
            jax.random.key(0), "target", method="mala", num_chains=2, num_steps=5
        )


@pytest.mark.slow
def test_proximal_kernel_runs_in_blackjax_inference_loop():
    """The proximal kernel is a BlackJAX ``SamplingAlgorithm``: it runs unchanged in
    ``blackjax.util.run_inference_algorithm`` and gives the chain that the
    library's own scan gives for the same per-step keys (issue 15 item 8)."""
    from blackjax.util import run_inference_algorithm

    from dpsample.samplers import proximal

    target = _target()
    eta, steps = 0.01, 40
    algo = proximal.as_top_level_api(target, eta)
    x0 = jnp.zeros(2)
    key = jax.random.key(3)
    _, (states, info) = run_inference_algorithm(
        key, algo, steps, initial_state=algo.init(x0)
    )
    assert states.position.shape == (steps, 2)
    assert info.is_accepted.shape == (steps,)
    # the same steps by hand, with the keys run_inference_algorithm draws
    state, positions = algo.init(x0), []
    for k in jax.random.split(key, steps):
        state, _ = algo.step(k, state)
        positions.append(state.position)
    # equal to round-off (the loop is jitted as one scan, the steps here are not;
    # XLA may fuse the arithmetic differently): another key's chain differs at O(1)
    np.testing.assert_allclose(states.position, np.stack(positions), atol=1e-12)
    assert np.all(np.linalg.norm(states.position, axis=-1) <= 2.0 + 1e-12)
