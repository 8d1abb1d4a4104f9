"""dp_sgd_transform in optax's idioms (issue 28, item 2).

``optax.inject_hyperparams`` under ``jit`` with numbers and schedules, an int seed,
and the transform's own accountant.
"""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from dpsample.finders import dp_sgd_guarantee, dp_sgd_transform

GRADS = {"w": jnp.array([[3.0, 4.0], [0.0, 0.5], [1.0, -1.0]]), "b": jnp.ones((3, 1))}
PARAMS = {"w": jnp.zeros(2), "b": jnp.zeros(1)}


def _updates(tx, steps=3):
    state = tx.init(PARAMS)
    step = jax.jit(lambda g, s: tx.update(g, s, PARAMS))
    out = []
    for _ in range(steps):
        upd, state = step(GRADS, state)
        out.append(upd)
    return out


def test_int_seed_is_the_key_of_that_seed():
    a = _updates(dp_sgd_transform(l2_clip_norm=1.0, noise_multiplier=0.7, rng_key=3))
    b = _updates(
        dp_sgd_transform(
            l2_clip_norm=1.0, noise_multiplier=0.7, rng_key=jax.random.key(3)
        )
    )
    for x, y in zip(a, b, strict=True):
        jax.tree.map(np.testing.assert_array_equal, x, y)


def test_inject_hyperparams_under_jit_is_the_plain_transform():
    plain = dp_sgd_transform(
        l2_clip_norm=1.0, noise_multiplier=0.7, rng_key=5, expected_batch_size=4
    )
    injected = optax.inject_hyperparams(dp_sgd_transform)(
        l2_clip_norm=1.0, noise_multiplier=0.7, rng_key=5, expected_batch_size=4
    )
    for x, y in zip(_updates(plain), _updates(injected), strict=True):
        jax.tree.map(np.testing.assert_allclose, x, y)
    # the hyperparameters are in the state, readable by an accountant
    state = injected.init(PARAMS)
    assert float(state.hyperparams["noise_multiplier"]) == pytest.approx(0.7)


def test_a_noise_schedule_changes_the_noise_and_zero_means_none():
    def sched(count):  # 0 at step 0, then 1
        return jnp.where(count >= 1, 1.0, 0.0)

    tx = optax.inject_hyperparams(dp_sgd_transform)(
        l2_clip_norm=1.0, noise_multiplier=sched, rng_key=0
    )
    first, second = _updates(tx, steps=2)
    clean = _updates(
        dp_sgd_transform(l2_clip_norm=1.0, noise_multiplier=0.0, rng_key=0), 1
    )[0]
    jax.tree.map(np.testing.assert_allclose, first, clean)
    assert not np.allclose(second["w"], clean["w"])


def test_a_traced_clip_norm_clips_as_the_concrete_one():
    concrete = dp_sgd_transform(l2_clip_norm=0.5, noise_multiplier=0.0, rng_key=0)
    injected = optax.inject_hyperparams(dp_sgd_transform)(
        l2_clip_norm=0.5, noise_multiplier=0.0, rng_key=0
    )
    a, b = _updates(concrete, 1)[0], _updates(injected, 1)[0]
    jax.tree.map(np.testing.assert_allclose, a, b)
    norms = jnp.sqrt(jnp.sum(GRADS["w"] ** 2, 1) + jnp.sum(GRADS["b"] ** 2, 1))
    assert float(jnp.linalg.norm(a["w"])) < float(jnp.sum(norms)) / 3  # clipped


def test_the_transform_accounts_with_its_own_noise_multiplier():
    tx = dp_sgd_transform(l2_clip_norm=1.0, noise_multiplier=1.1, rng_key=0)
    ours = tx.guarantee(0.01, 500).epsilon(1e-5)
    assert ours == dp_sgd_guarantee(1.1, 0.01, 500).epsilon(1e-5)
    assert tx.noise_multiplier == 1.1 and tx.l2_clip_norm == 1.0
    init, update = tx  # still an optax GradientTransformation
    assert isinstance(tx, optax.GradientTransformation) and callable(update)
    assert dp_sgd_transform(
        l2_clip_norm=1.0, noise_multiplier=jnp.asarray(1.1), rng_key=0
    ).guarantee(0.01, 500).epsilon(1e-5) == pytest.approx(ours)

    def traced(z):  # a traced setting (a schedule's value) cannot be accounted here
        tx = dp_sgd_transform(l2_clip_norm=1.0, noise_multiplier=z, rng_key=0)
        with pytest.raises(TypeError, match="concrete scalar"):
            tx.guarantee(0.01, 10)
        return z

    jax.jit(traced)(1.0)


@pytest.mark.parametrize(
    "kwargs, err",
    [
        ({"l2_clip_norm": -1.0}, ValueError),
        ({"noise_multiplier": -0.5}, ValueError),
        ({"rng_key": "seed"}, TypeError),
        ({"rng_key": True}, TypeError),
        ({"expected_batch_size": 2.5}, TypeError),
        ({"expected_batch_size": 0}, ValueError),
    ],
)
def test_concrete_bad_settings_are_refused(kwargs, err):
    base = {"l2_clip_norm": 1.0, "noise_multiplier": 1.0, "rng_key": 0}
    with pytest.raises(err):
        dp_sgd_transform(**(base | kwargs))
