"""Non-finite values during a private run follow a public rule, never an exception.

The data are checked before any private computation (``Problem``). During a run a
loss may still return NaN or inf at some iterate on one dataset and not on its
neighbour; an exception there would reveal which (a data-dependent error). Each test
runs a finder, pipeline or sampler on such a dataset ``D`` (one example whose loss is
NaN, with a NaN gradient, once ``x_1 > 0.05``) and on its neighbour ``D'`` (that
example made harmless) with the same key, and checks that both runs complete with the
same structure and the same guarantee; where the mechanism clips (so its guarantee
does not rest on the loss behaving), the released value must also be finite.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dpsample
from dpsample.domains import Ball, Unconstrained
from dpsample.finders import dp_sgd, dp_spider
from dpsample.finders.goldstein import goldstein_first_order, goldstein_zero_order
from dpsample.finders.spider_sosp import spider_sosp
from dpsample.finders.trust_region import dp_trust_region
from dpsample.mechanisms import above_threshold, above_threshold_sosp, exponential
from dpsample.nets import exponential_mechanism
from dpsample.pipelines import warm_start
from dpsample.pipelines.quasar import dp_sgd_quasar
from dpsample.samplers import proximal, rgo
from dpsample.samplers.gibbs import gibbs
from dpsample.samplers.target import GibbsTarget

DELTA = 1e-5
KEY = jax.random.key(3)
N = 100


def nan_loss(x, z):
    """``||x - c||^2 / 2``, times NaN for a flagged example once ``x_1 > 0.05``."""
    base = 0.5 * jnp.sum((x - z["c"]) ** 2)
    broken = (z["bad"] > 0) & (x[0] > 0.05)
    return base * jnp.where(broken, jnp.nan, 1.0)


def _pair(domain):
    """``(D, D')``: ``D`` flags example 0, ``D'`` replaces it by a harmless one."""
    c = np.tile(np.array([[1.0, 0.5]]), (N, 1))
    bad = np.zeros(N)
    bad[0] = 1.0
    consts = dict(
        lipschitz=4.0, smoothness=1.0, hessian_lipschitz=1.0, loss_range=8.0
    )  # true on the ball of radius 2 (and for the neighbour on R^2 up to growth)
    d = dpsample.Problem(nan_loss, {"c": c, "bad": bad}, domain, **consts)
    d_prime = dpsample.Problem(nan_loss, {"c": c, "bad": np.zeros(N)}, domain, **consts)
    return d, d_prime


BALL, FREE = Ball(2.0, dim=2), Unconstrained(2)
X0 = np.zeros(2)

E2 = {"epsilon": 2.0, "delta": DELTA, "x0": X0}
SGD = {"num_steps": 10, "learning_rate": 0.5}
SPIDER = {"num_steps": 6, "phase_length": 3, "variation_batch_size": 20}
GOLD = {"alpha": 0.2, "num_directions": 4, "enforce_sensitivity": True}

# name -> (domain, run(problem), whether the mechanism clips every contribution)
CASES = {
    "dp_sgd": (
        BALL,
        lambda p: dp_sgd(KEY, p, sampling="full_batch", **SGD, **E2),
        False,
    ),
    "dp_sgd_clipped": (
        BALL,
        lambda p: dp_sgd(KEY, p, batch_size=20, clip_norm=1.0, **SGD, **E2),
        True,
    ),
    "dp_spider": (BALL, lambda p: dp_spider(KEY, p, **SPIDER, **E2), False),
    "spider_sosp": (
        FREE,
        lambda p: spider_sosp(KEY, p, epsilon=20.0, delta=DELTA, x0=X0, num_iters=20),
        False,
    ),
    "dp_trust_region": (
        FREE,
        lambda p: dp_trust_region(
            KEY, p, epsilon=5.0, delta=DELTA, x0=X0, alpha=0.05, num_iters=8
        ),
        False,
    ),
    "goldstein_zero_order_mode_b": (
        FREE,
        lambda p: goldstein_zero_order(KEY, p, num_iters=40, **GOLD, **E2),
        True,
    ),
    "goldstein_multi_pass_mode_b": (
        FREE,
        lambda p: goldstein_zero_order(
            KEY, p, passes="multi", num_iters=20, **GOLD, **E2
        ),
        True,
    ),
    "goldstein_first_order_mode_b": (
        BALL,
        # the corrected schedule: its difference steps are the path under test
        lambda p: goldstein_first_order(
            KEY, p, num_iters=40, preset="corrected", **GOLD, **E2
        ),
        True,
    ),
    "dp_sgd_quasar": (
        BALL,
        lambda p: dp_sgd_quasar(
            KEY,
            p,
            epsilon=20.0,
            delta=DELTA,
            quasar_convexity=1.0,
            failure_prob=0.1,
            num_steps=10,
        ),
        True,
    ),
    "net_exponential_mechanism": (
        BALL,
        lambda p: exponential_mechanism(KEY, p, epsilon=5.0, spacing=0.25),
        False,
    ),
    "gibbs_langevin": (
        BALL,
        lambda p: gibbs(
            KEY, p, epsilon=1.0, delta=DELTA, method="langevin", max_steps=30
        ),
        True,
    ),
    "warm_start_net_dp_spider": (
        BALL,
        lambda p: warm_start(
            KEY,
            p,
            epsilon=4.0,
            delta=DELTA,
            spacing=0.5,
            finder="dp_spider",
            finder_options=SPIDER,
        ),  # fmt: skip
        False,
    ),
}


def _same_structure(a, b):
    if isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys()
        for k in a:
            _same_structure(a[k], b[k])


# One compilation per run (a jit built per call): the other Goldstein modes are slow,
# and so are the three cases over 5 s in the fast suite (--durations at 118e61a).
_SLOW = (
    "goldstein_multi_pass_mode_b",
    "goldstein_first_order_mode_b",
    "goldstein_zero_order_mode_b",
    "spider_sosp",
    "dp_trust_region",
)


@pytest.mark.parametrize(
    "name",
    [pytest.param(n, marks=pytest.mark.slow) if n in _SLOW else n for n in CASES],
)
def test_a_nan_at_an_iterate_raises_nothing_and_keeps_the_guarantee(name):
    domain, run, clipped = CASES[name]
    d, d_prime = _pair(domain)
    res_d, res_n = run(d), run(d_prime)  # no exception on either
    assert np.shape(res_d.value) == np.shape(res_n.value) == (2,)
    _same_structure(res_d.info, res_n.info)
    assert res_d.privacy.epsilon(DELTA) == res_n.privacy.epsilon(DELTA)
    assert np.all(np.isfinite(np.asarray(res_n.value)))
    if clipped:  # the guarantee does not rest on the loss: no NaN may come out
        assert np.all(np.isfinite(np.asarray(res_d.value))), res_d.value


@pytest.mark.slow
def test_warm_start_spider_sosp_with_a_nan_at_an_iterate():
    d, d_prime = _pair(FREE)

    def run(p):
        return warm_start(
            KEY,
            p,
            epsilon=20.0,
            delta=DELTA,
            finder="spider_sosp",
            sampler_domain=Ball(2.0, dim=2),
            spacing=0.5,
            finder_options={"num_iters": 20},
        )

    res_d, res_n = run(d), run(d_prime)
    _same_structure(res_d.info, res_n.info)
    assert res_d.privacy.epsilon(DELTA) == res_n.privacy.epsilon(DELTA)


@pytest.mark.slow  # 13 s in the fast suite (SpiderSOSP compiles)
def test_spider_sosp_never_selects_a_candidate_with_non_finite_queries():
    """Every iterate past ``x_1 > 0.05`` has a NaN gradient norm on ``D``.

    On the unclipped queries (``enforce_sensitivity=False``): enforced, the default,
    a non-finite per-example row contributes zero to the clipped means (the clipping
    rule), so the queries there are finite by construction."""
    d, _ = _pair(FREE)
    res = spider_sosp(
        KEY,
        d,
        epsilon=20.0,
        delta=DELTA,
        x0=X0,
        num_iters=20,
        enforce_sensitivity=False,
    )
    if res.info["fallback"] is None:  # an iterate or the tail average
        x = np.asarray(res.value)
        assert np.isfinite(np.linalg.norm(np.asarray(d.gradient(x))))


@pytest.mark.slow
def test_rgo_and_the_proximal_kernel_reject_non_finite_series():
    d, _ = _pair(BALL)
    target = GibbsTarget.create(d, beta=1.0, mu=1.0)
    y = jnp.array([1.0, 0.5])  # proposals around y: most have x_1 > 0.05
    draw = jax.jit(lambda key: rgo.sample_oracle(key, target, y, 0.01, num_trials=8))
    x, info = draw(jax.random.key(1))
    assert bool(jnp.all(jnp.isfinite(x))) and x.shape == (2,)
    kernel = proximal.build_kernel(num_trials=8)
    step = jax.jit(lambda key, state: kernel(key, state, target, 0.01)[0])
    state = step(jax.random.key(2), proximal.init(jnp.array([0.5, 0.5]), target))
    assert bool(jnp.all(jnp.isfinite(state.position)))


# ----------------------------------------------------- the mechanisms' public rule
AT = {"threshold": 10.0, "epsilon": 1.0, "sensitivity": 0.1}
SOSP = {
    "alpha": 0.1,
    "hessian_lipschitz": 1.0,
    "epsilon": 1.0,
    "grad_sensitivity": 0.01,
    "eig_sensitivity": 0.01,
}


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_above_threshold_lazy_non_finite_query_fails_the_test(bad):
    values = [bad, 0.0, 100.0, 0.0]
    fails = [-1e300, 0.0, 100.0, 0.0]  # a value that surely fails
    for seed in range(5):
        key = jax.random.key(seed)
        got = above_threshold(key, lambda i: values[i], num_queries=4, **AT)
        ref = above_threshold(key, lambda i: fails[i], num_queries=4, **AT)
        assert int(got.value) == int(ref.value) == 2
        assert got.privacy.epsilon(0.0) == ref.privacy.epsilon(0.0) == 1.0


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_above_threshold_sosp_lazy_non_finite_queries_fail_their_tests(bad):
    g = [bad, 0.0, 0.0, 0.0]
    lam = [0.0, bad, 0.0, 0.0]
    g_ref = [1e300, 0.0, 0.0, 0.0]
    lam_ref = [0.0, -1e300, 0.0, 0.0]
    for seed in range(5):
        key = jax.random.key(seed)
        got = above_threshold_sosp(
            key, lambda i: g[i], lambda i: lam[i], num_candidates=4, **SOSP
        )
        ref = above_threshold_sosp(
            key, lambda i: g_ref[i], lambda i: lam_ref[i], num_candidates=4, **SOSP
        )
        assert int(got.value) == int(ref.value) == 2
        assert got.privacy.epsilon(0.0) == 1.0


def test_quasar_selection_excludes_non_finite_risks_and_matches_the_mechanism():
    from dpsample.pipelines.quasar import _select

    risks = jnp.array([0.3, jnp.nan, 0.1, jnp.inf, -jnp.inf, 0.2])
    picked = {
        _select(jax.random.key(s), risks, epsilon=2.0, sensitivity=0.1)
        for s in range(200)
    }
    assert picked <= {0, 2, 5} and 2 in picked
    finite = jnp.array([0.3, 0.1, 0.2, 5.0])
    for s in range(20):
        key = jax.random.key(s)
        want = exponential(key, -finite, epsilon=2.0, sensitivity=0.1).value
        assert _select(key, finite, epsilon=2.0, sensitivity=0.1) == int(want)
    nothing = jnp.array([jnp.nan, jnp.inf])
    seen = {
        _select(jax.random.key(s), nothing, epsilon=2.0, sensitivity=0.1)
        for s in range(50)
    }
    assert seen == {0, 1}  # uniform over the candidates, no exception
