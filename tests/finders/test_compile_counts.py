"""Compilation reuse of the finders: a second call must not retrace.

The loss function counts the times it is *traced* (called with a JAX tracer; the eager
probe in ``Problem.__init__`` gets concrete arrays and is not counted). Every finder is
called once (which traces), then again with a different key and different data of the
same shape: the count must not move. Power: the first call must register traces (the
counter is wired to the finder); some tests also call with another number of examples,
which must retrace (the counter is live); and :func:`test_the_check_detects_retracing`
runs a finder core re-jitted per call (the pattern DP-SGD and DP-SPIDER used before
their module-level cores) and asserts that the same check fails on it.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _saddles_b import cosine_case, cosine_loss

import dpsample
from dpsample.finders import oracles
from dpsample.finders.dp_sgd import _sgd_iterates, dp_sgd
from dpsample.finders.dp_spider import dp_spider
from dpsample.finders.goldstein import goldstein_first_order, goldstein_zero_order
from dpsample.finders.spider_sosp import spider_sosp
from dpsample.finders.trust_region import dp_stochastic_trust_region, dp_trust_region

DELTA = 1e-5


class CountingLoss:
    """``cosine_loss`` that counts its traces (one per trace of a jitted caller)."""

    def __init__(self) -> None:
        self.traces = 0

    def __call__(self, x, example):
        if isinstance(x, jax.core.Tracer):
            self.traces += 1
        return cosine_loss(x, example)


def counting_problem(loss: CountingLoss, *, n: int, seed: int) -> dpsample.Problem:
    base = cosine_case(n=n, dim=2, seed=seed).problem
    return dpsample.Problem(
        loss,
        base.data,
        base.domain,
        lipschitz=base.lipschitz,
        smoothness=base.smoothness,
        hessian_lipschitz=base.hessian_lipschitz,
        loss_range=base.loss_range,
    )


def assert_no_retrace(run, *, n: int = 400, power_check: bool = False) -> None:
    """``run(key, problem)``: traces on call 1, none on call 2 (other key and data).

    With ``power_check``, a third call on ``n + 2`` examples must retrace.
    """
    loss = CountingLoss()
    run(jax.random.key(0), counting_problem(loss, n=n, seed=0))
    first = loss.traces
    assert first > 0, "the counter saw no trace: it is not wired to the finder"
    run(jax.random.key(1), counting_problem(loss, n=n, seed=1))
    assert loss.traces == first, (
        f"second call retraced the loss {loss.traces - first} time(s) "
        f"(first call: {first})"
    )
    if power_check:  # a new data shape must retrace (the counter is live)
        run(jax.random.key(2), counting_problem(loss, n=n + 2, seed=2))
        assert loss.traces > first


X0 = jnp.zeros(2)  # the strict saddle of the cosine case


# ------------------------------------------------------------------ spider_sosp
@pytest.mark.slow
@pytest.mark.parametrize("variant", ["empirical", "population"])
def test_spider_sosp_compiles_once(variant):
    def run(key, problem):
        res = spider_sosp(
            key,
            problem,
            epsilon=8.0,
            delta=DELTA,
            x0=X0,
            variant=variant,
            num_iters=30,
            alpha=2.0,
        )
        # Algorithm 2 selected a point, so both lazy queries (gradient norm and
        # smallest eigenvalue) were traced on the first call.
        assert res.info["fallback"] is None
        return res

    assert_no_retrace(run, power_check=variant == "empirical")


@pytest.mark.slow  # over 7 s in the fast suite (make test-fast --durations)
def test_spider_sosp_other_epsilon_reuses_the_compilation():
    # With T fixed, epsilon changes only traced values (noise scales, thresholds).
    loss = CountingLoss()
    for i, eps in enumerate((8.0, 2.0)):
        spider_sosp(
            jax.random.key(i),
            counting_problem(loss, n=400, seed=i),
            epsilon=eps,
            delta=DELTA,
            x0=X0,
            num_iters=30,
            alpha=2.0,
        )
        if i == 0:
            first = loss.traces
    assert first > 0
    assert loss.traces == first


# ---------------------------------------------------------------- trust region
def test_dp_trust_region_compiles_once():
    def run(key, problem):
        return dp_trust_region(
            key, problem, epsilon=2.0, delta=DELTA, x0=X0, num_iters=5
        )

    assert_no_retrace(run)


@pytest.mark.slow
def test_dp_stochastic_trust_region_compiles_once():
    def run(key, problem):
        return dp_stochastic_trust_region(
            key,
            problem,
            epsilon=1.0,
            delta=DELTA,
            x0=X0,
            grad_batch_size=100,
            hessian_batch_size=100,
            num_iters=5,
        )

    assert_no_retrace(run)


# ------------------------------------------------------------------- Goldstein
_GOLD = {"alpha": 0.2, "num_directions": 2, "enforce_sensitivity": True}


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["single", "multi", "first_order"])
def test_goldstein_compiles_once(variant):
    # Fails before the module-level O2NC core: goldstein._make_runner built a fresh
    # jax.jit per call, so every call retraced the loss.
    def run(key, problem):
        if variant == "first_order":
            return goldstein_first_order(
                key, problem, epsilon=2.0, delta=DELTA, x0=X0, **_GOLD
            )
        extra = {}
        if variant == "multi":
            extra = {"passes": "multi", "num_iters": 6, "beta": 0.5}
        return goldstein_zero_order(
            key, problem, epsilon=2.0, delta=DELTA, x0=X0, **_GOLD, **extra
        )

    assert_no_retrace(run, n=200, power_check=variant == "single")


@pytest.mark.slow
def test_goldstein_other_noise_level_reuses_the_compilation():
    # Another epsilon with the structure fixed (T, period, m given): only the traced
    # noise scale changes.
    loss = CountingLoss()
    kw = dict(delta=DELTA, x0=X0, num_iters=20, period=4, window=4, **_GOLD)
    for i, eps in enumerate((8.0, 1.0)):
        goldstein_zero_order(
            jax.random.key(i), counting_problem(loss, n=200, seed=i), epsilon=eps, **kw
        )
        if i == 0:
            first = loss.traces
    assert first > 0
    assert loss.traces == first


# ------------------------------------------------------- DP-SGD and DP-SPIDER
def _run_dp_sgd(key, problem, *, epsilon=2.0, sampling="full_batch", **kw):
    return dp_sgd(
        key,
        problem,
        epsilon=epsilon,
        delta=DELTA,
        x0=X0,
        num_steps=10,
        learning_rate=0.1,
        sampling=sampling,
        **kw,
    )


def _run_dp_spider(key, problem, *, epsilon=2.0, **kw):
    return dp_spider(
        key,
        problem,
        epsilon=epsilon,
        delta=DELTA,
        x0=X0,
        num_steps=10,
        phase_length=5,
        learning_rate=0.1,
        anchor_batch_size=400,
        variation_batch_size=100,
        **kw,
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    "kw",
    [
        {"sampling": "full_batch"},
        {"sampling": "poisson", "batch_size": 50, "clip_norm": 0.5},
        {"sampling": "without_replacement", "batch_size": 50},
    ],
    ids=["full_batch", "poisson_clipped", "without_replacement"],
)
def test_dp_sgd_compiles_once(kw):
    assert_no_retrace(
        lambda key, problem: _run_dp_sgd(key, problem, **kw),
        power_check=kw["sampling"] == "full_batch",
    )


@pytest.mark.slow
def test_dp_spider_compiles_once():
    assert_no_retrace(_run_dp_spider, power_check=True)


@pytest.mark.slow
@pytest.mark.parametrize("run", [_run_dp_sgd, _run_dp_spider], ids=["sgd", "spider"])
def test_other_epsilon_reuses_the_compilation(run):
    # With T fixed, epsilon changes only traced values (noise scales).
    loss = CountingLoss()
    stds = []
    for i, eps in enumerate((8.0, 1.0)):
        res = run(jax.random.key(i), counting_problem(loss, n=400, seed=i), epsilon=eps)
        stds.append(res.info.get("noise_std", res.info.get("sigma1")))
        if i == 0:
            first = loss.traces
    assert first > 0
    assert stds[1] > stds[0]  # the noise did change between the calls
    assert loss.traces == first


def test_dp_sgd_reuses_the_compilation_across_balls():
    # The ball enters as traced radius/centre: another radius, same shapes, no retrace.
    loss = CountingLoss()
    for i, radius in enumerate((3.0, 5.0)):
        base = counting_problem(loss, n=400, seed=i)
        problem = dpsample.Problem(
            loss,
            base.data,
            dpsample.Ball(radius, dim=2),
            lipschitz=base.lipschitz,
            smoothness=base.smoothness,
            loss_range=base.loss_range,
        )
        _run_dp_sgd(jax.random.key(i), problem)
        if i == 0:
            first = loss.traces
    assert first > 0
    assert loss.traces == first


def test_the_check_detects_retracing():
    """Power: a core jitted afresh per call (the old DP-SGD pattern) fails the check."""

    def run(key, problem):
        oracle = oracles.first_kind(problem, noise_multiplier=1.0)
        return jax.jit(
            lambda k, x: _sgd_iterates(k, oracle, x, num_steps=3, learning_rate=0.1)
        )(key, X0)

    with pytest.raises(AssertionError, match="second call retraced"):
        assert_no_retrace(run)


# ------------------------------------------------ the oracles' functional form
SCHEMES = [
    ("full_batch", None),
    ("without_replacement", 50),
    ("poisson", 50),
    ("fresh", 50),
]


@pytest.mark.slow
@pytest.mark.parametrize("sampling, batch", SCHEMES)
def test_functional_form_matches_estimate_fn_bit_for_bit(sampling, batch):
    problem = cosine_case(n=400, dim=2, seed=3).problem
    kw = {"sampling": sampling, "batch_size": batch}
    o1 = oracles.first_kind(problem, noise_multiplier=1.5, clip_norm=0.5, **kw)
    o2 = oracles.second_kind(problem, noise_multiplier=2.0, **kw)
    idx = jnp.arange(batch) if sampling == "fresh" else None
    key, x, y = jax.random.key(7), jnp.array([0.3, -0.2]), jnp.array([0.1, 0.4])
    fn1, ops1 = o1.functional()
    fn2, ops2 = o2.functional()
    np.testing.assert_array_equal(fn1(ops1, key, x, idx), o1.estimate_fn(key, x, idx))
    np.testing.assert_array_equal(
        fn2(ops2, key, x, y, idx), o2.estimate_fn(key, x, y, idx)
    )
    # Jitted with the static part static: the same release again.
    jitted = jax.jit(lambda ops, k, p: fn1(ops, k, p, idx))
    np.testing.assert_allclose(jitted(ops1, key, x), o1.estimate_fn(key, x, idx))


def test_functional_static_part_is_shared_across_data_and_noise():
    a = cosine_case(n=400, dim=2, seed=0).problem
    b = counting_data_twin(a, seed=1)
    fa, _ = oracles.first_kind(a, noise_multiplier=1.0).functional()
    fb, ops_b = oracles.first_kind(b, noise_multiplier=3.0).functional()
    assert fa == fb and hash(fa) == hash(fb)
    assert ops_b["noise_std"] == pytest.approx(3.0 * b.lipschitz / b.n)  # z G / n
    # Power: a different structure (another batch scheme) is a different key.
    fc, _ = oracles.first_kind(
        a, noise_multiplier=1.0, sampling="without_replacement", batch_size=50
    ).functional()
    assert fc != fa


def counting_data_twin(problem: dpsample.Problem, *, seed: int) -> dpsample.Problem:
    """Same loss object and shapes as ``problem``, other data."""
    other = cosine_case(n=problem.n, dim=problem.dim, seed=seed).problem
    return dpsample.Problem(
        problem.loss_fn,
        other.data,
        problem.domain,
        lipschitz=problem.lipschitz,
        smoothness=problem.smoothness,
        hessian_lipschitz=problem.hessian_lipschitz,
        loss_range=problem.loss_range,
    )
