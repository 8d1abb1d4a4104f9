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
