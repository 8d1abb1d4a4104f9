"""Tests for dpsample.mechanisms: distributions (with power checks), limits, privacy."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from audit_cases import (
    CASES,
    SOSP,
    WORK,
    WORK_T,
    observed_work,
    sosp_output_audit,
    work_neighbours,
)
from scipy import special, stats

from dpsample.mechanisms import (
    above_threshold,
    above_threshold_sosp,
    exponential,
    exponential_logits,
    gaussian,
    gumbel_max,
    laplace,
)
from dpsample.privacy import PrivacyGuarantee
from dpsample.privacy.audit import audit

SEED = 20240601
P_ACCEPT = 1e-3  # a correct sampler is rejected with probability 1e-3
P_REJECT = 1e-6  # a wrong one must be rejected far more decisively
NUM_DRAWS = 20_000


def _keys(n, seed=SEED):
    return jax.random.split(jax.random.key(seed), n)


# ---------------------------------------------------------------- exponential
def _em_counts(utilities, epsilon, sensitivity, n=NUM_DRAWS, seed=SEED):
    u = jnp.asarray(utilities, dtype=jnp.float64)

    def draw(key):
        return exponential(key, u, epsilon=epsilon, sensitivity=sensitivity).value

    idx = np.asarray(jax.vmap(draw)(_keys(n, seed)))
    return np.bincount(idx, minlength=u.shape[0])


def _softmax_probs(utilities, epsilon, sensitivity):
    """Reference probabilities computed independently (scale u by Delta first)."""
    u = np.asarray(utilities, dtype=np.float64)
    return special.softmax(epsilon / 2.0 * (u / sensitivity))


EM_CASES = {
    "small": ([0.0, 1.0, 2.0, 3.0], 2.0, 1.0),
    "1e6": (1e6 * np.array([3.0, 0.0, 1.0, 2.5]), 1.5, 1e6),
    "1e300": (1e300 * np.array([0.0, -1.0, -2.0]), 2.0, 1e300),
    "span_1e308": ([1e308, -1e308, 0.0], 2.0, 1e308),
    "ties": ([1.0, 1.0, 0.0, 0.5, 1.0], 3.0, 1.0),
}


@pytest.mark.parametrize("case", EM_CASES)
def test_exponential_chi_square(case):
    utilities, epsilon, sensitivity = EM_CASES[case]
    probs = _softmax_probs(utilities, epsilon, sensitivity)
    counts = _em_counts(utilities, epsilon, sensitivity)
    assert stats.chisquare(counts, NUM_DRAWS * probs).pvalue > P_ACCEPT
    lp = exponential_logits(
        jnp.asarray(utilities), epsilon=epsilon, sensitivity=sensitivity
    )
    np.testing.assert_allclose(np.exp(lp), probs, rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("wrong_factor", [2.0 / 3.0, 1.5])
def test_exponential_chi_square_rejects_wrong_epsilon(wrong_factor):
    utilities, epsilon, sensitivity = EM_CASES["small"]
    counts = _em_counts(utilities, epsilon, sensitivity)
    wrong = _softmax_probs(utilities, epsilon * wrong_factor, sensitivity)
    assert stats.chisquare(counts, NUM_DRAWS * wrong).pvalue < P_REJECT


@pytest.mark.parametrize("epsilon, sensitivity", [(1e8, 1.0), (1e300, 1e-300)])
def test_exponential_large_epsilon_is_uniform_argmax(epsilon, sensitivity):
    counts = _em_counts([1.0, 3.0, 3.0, 2.0, -5.0], epsilon, sensitivity, n=4000)
    assert counts[[0, 3, 4]].sum() == 0
    assert stats.binomtest(int(counts[1]), 4000, 0.5).pvalue > P_ACCEPT


@pytest.mark.parametrize(
    "utilities, epsilon, sensitivity",
    [
        ([1.7e308, -1.7e308, 0.0], 1.0, 1.0),
        ([1.7e308, -1.7e308, 0.0], 1.0, 1.7e308),
        ([1.7e308, -1.7e308, 0.0], 1e-300, 1e300),
        ([5e-324, 0.0, -5e-324], 1.0, 5e-324),
        ([0.0, 0.0], 1e308, 1e-308),
    ],
)
def test_exponential_logits_never_nan(utilities, epsilon, sensitivity):
    def fn(u):
        return exponential_logits(u, epsilon=epsilon, sensitivity=sensitivity)

    for f in (fn, jax.jit(fn)):
        lp = np.asarray(f(jnp.asarray(utilities)))
        assert not np.any(np.isnan(lp))
        assert math.isclose(special.logsumexp(lp), 0.0, abs_tol=1e-12)


def test_exponential_logits_span_matches_exact_gap():
    # (u_i - max) overflows float64 here, but the scaled gaps are -2 and -1.
    lp = exponential_logits(
        jnp.array([1e308, -1e308, 0.0]), epsilon=2.0, sensitivity=1e308
    )
    np.testing.assert_allclose(lp, special.log_softmax([0.0, -2.0, -1.0]), rtol=1e-12)


@pytest.mark.slow
def test_exponential_audit_below_claim_and_flags_half_noise_twin():
    """Worst-case pair of tests/audit_cases.py (``exponential``): utilities (1, 0, ...)
    vs (0, 1, ...) over 10 candidates; the event "candidate 0" has exact log-ratio
    0.90 at epsilon 1 and 1.78 at epsilon 2 (the twin); 100k runs per dataset."""
    audit = CASES["exponential"].build()
    assert audit.claim == pytest.approx(1.0)
    assert 0.5 < audit.run().epsilon_lower_bound <= 1.0
    assert audit.run(twin=True).epsilon_lower_bound > 1.0


def test_exponential_jit_and_privacy():
    u = jnp.array([0.0, 1.0, 2.0])
    fn = jax.jit(
        lambda key, u: gumbel_max(
            key, exponential_logits(u, epsilon=1.0, sensitivity=1.0)
        )
    )
    key = jax.random.key(SEED)
    eager = exponential(key, u, epsilon=1.0, sensitivity=1.0)
    assert int(fn(key, u)) == int(eager.value)
    assert eager.privacy.epsilon(0.0) == pytest.approx(1.0)
    assert eager.privacy.epsilon(1e-6) <= 1.0 + 1e-9
    assert eager.info == {"epsilon": 1.0, "sensitivity": 1.0, "num_candidates": 3}


# ---------------------------------------------------------- Gaussian / Laplace
def _ks_checks(sample, dist, scale):
    assert stats.kstest(sample, dist, args=(0.0, scale)).pvalue > P_ACCEPT
    for wrong in (2.0 / 3.0, 1.5):
        assert stats.kstest(sample, dist, args=(0.0, wrong * scale)).pvalue < P_REJECT


def test_gaussian_noise_ks():
    res = gaussian(
        jax.random.key(SEED),
        jnp.zeros(NUM_DRAWS),
        l2_sensitivity=0.5,
        noise_to_sensitivity=3.0,
    )
    assert res.info["stddev"] == pytest.approx(1.5)
    assert res.info["noise_to_sensitivity"] == 3.0
    _ks_checks(np.asarray(res.value), "norm", 1.5)
    assert res.privacy.epsilon(1e-5) == pytest.approx(
        PrivacyGuarantee.gaussian(3.0).epsilon(1e-5)
    )


@pytest.mark.slow
def test_gaussian_calibrated_from_epsilon_delta():
    res = gaussian(
        jax.random.key(SEED),
        jnp.zeros(3),
        l2_sensitivity=2.0,
        epsilon=1.0,
        delta=1e-5,
    )
    z = res.info["noise_to_sensitivity"]
    assert res.info["stddev"] == pytest.approx(2.0 * z)
    assert res.privacy.epsilon(1e-5) <= 1.0
    assert PrivacyGuarantee.gaussian(0.99 * z).epsilon(1e-5) > 1.0  # near-tight


def test_gaussian_pytree_one_key_per_leaf():
    value = {"a": jnp.zeros(50), "b": jnp.zeros(50, dtype=jnp.float32), "c": 3}
    res = gaussian(
        jax.random.key(SEED), value, l2_sensitivity=1.0, noise_to_sensitivity=1.0
    )
    assert jax.tree.structure(res.value) == jax.tree.structure(value)
    assert all(leaf.dtype == jnp.float64 for leaf in jax.tree.leaves(res.value))
    assert not np.allclose(res.value["a"], res.value["b"])  # independent leaves
    assert res.value["c"].shape == ()


def test_laplace_noise_ks():
    res = laplace(
        jax.random.key(SEED), jnp.zeros(NUM_DRAWS), l1_sensitivity=2.0, epsilon=0.5
    )
    assert res.info["scale"] == pytest.approx(4.0)
    _ks_checks(np.asarray(res.value), "laplace", 4.0)
    assert res.privacy.epsilon(0.0) == pytest.approx(0.5)


# ------------------------------------------------------------- AboveThreshold
AT = {"threshold": 10.0, "epsilon": 1.0, "sensitivity": 0.1}


def test_above_threshold_clear_cases():
    key = jax.random.key(SEED)
    assert int(above_threshold(key, -100.0 * jnp.ones(20), **AT).value) == -1
    q = jnp.array([-100.0, -100.0, 100.0, 100.0])
    res = above_threshold(key, q, **AT)
    assert int(res.value) == 2 and int(res.info["num_examined"]) == 3
    assert res.info["threshold_noise_scale"] == pytest.approx(0.2)
    assert res.info["query_noise_scale"] == pytest.approx(0.4)
    assert res.privacy.epsilon(0.0) == pytest.approx(1.0)


@pytest.mark.slow
def test_above_threshold_lazy_matches_array_and_stops():
    q = np.linspace(8.0, 12.0, 30)  # noise decides where it stops
    calls = []

    def query(i):
        calls.append(i)
        return q[i]

    for key in _keys(10):
        eager = above_threshold(key, jnp.asarray(q), **AT)
        calls.clear()
        lazy = above_threshold(key, query, num_queries=30, **AT)
        assert int(lazy.value) == int(eager.value)
        assert len(calls) == int(eager.info["num_examined"])


@pytest.mark.slow
def test_above_threshold_audit_below_epsilon():
    q = jnp.zeros(5)

    def mech(key, queries):
        return above_threshold(
            key, queries, threshold=0.5, epsilon=1.0, sensitivity=1.0
        ).value

    for seed in range(2):
        res = audit(jax.random.key(seed), mech, q, q + 1.0, num_samples=100_000)
        assert 0.1 < res.epsilon_lower_bound <= 1.0


def test_above_threshold_audit_flags_half_noise_twin():
    """Worst-case pair of tests/audit_cases.py (``above_threshold_pair``): the event
    "output 4" has exact log-ratio 0.81 at epsilon 1 and 1.60 for the twin at epsilon
    2 (half of both noise scales); 100k runs per dataset."""
    audit = CASES["above_threshold"].build()
    assert audit.claim == pytest.approx(1.0)
    assert 0.5 < audit.run().epsilon_lower_bound <= 1.0
    assert audit.run(twin=True).epsilon_lower_bound > 1.0


def test_above_threshold_sosp_info():
    g = jnp.array([50.0, 0.0, 0.0, 0.0])
    lam = jnp.array([0.0, -50.0, 0.0, 0.0])
    res = above_threshold_sosp(jax.random.key(SEED), g, lam, **SOSP)
    assert int(res.value) == 2
    log_term = math.log(2 * 4 / 0.1)
    info = res.info
    assert info["grad_threshold"] == pytest.approx(0.1 + 16 * log_term * 0.01 / 2.0)
    assert info["eig_threshold"] == pytest.approx(
        -math.sqrt(0.4) - 16 * log_term * 0.02 / 2.0
    )
    assert info["grad_threshold_noise_scale"] == pytest.approx(4 * 0.01 / 2.0)
    assert info["eig_query_noise_scale"] == pytest.approx(8 * 0.02 / 2.0)
    assert info["grad_slack"] == pytest.approx(32 * log_term * 0.01 / 2.0)
    assert info["eig_slack"] == pytest.approx(32 * log_term * 0.02 / 2.0)
    assert info["num_candidates"] == 4 and int(info["num_examined"]) == 3
    assert res.privacy.epsilon(0.0) == pytest.approx(2.0)
    none = above_threshold_sosp(jax.random.key(SEED), g[:2], lam[:2], **SOSP)
    assert int(none.value) == -1


@pytest.mark.slow
@pytest.mark.parametrize("stream", ["grad", "eig"])
def test_above_threshold_sosp_threshold_distribution(stream):
    """Pass rates for one candidate vs an independent numpy reference."""
    n = 20_000
    probe = SOSP | {"failure_prob": 0.5}  # T = 1: log(2T/omega) = log 4
    info = above_threshold_sosp(jax.random.key(0), [0.0], [0.0], **probe).info
    rng = np.random.default_rng(SEED)
    for offset in (-1.0, 0.0, 1.0):
        if stream == "grad":
            d = probe["grad_sensitivity"] / probe["epsilon"]
            g, lam = info["grad_threshold"] + 8 * d * offset, 1e3
            ref = g + rng.laplace(0, 8 * d, n) <= info["grad_threshold"] + rng.laplace(
                0, 4 * d, n
            )
        else:
            d = probe["eig_sensitivity"] / probe["epsilon"]
            g, lam = -1e3, info["eig_threshold"] + 8 * d * offset
            ref = lam + rng.laplace(0, 8 * d, n) >= info["eig_threshold"] + rng.laplace(
                0, 4 * d, n
            )

        def draw(key, g=g, lam=lam):
            return above_threshold_sosp(key, [g], [lam], **probe).value

        passed = np.asarray(jax.vmap(draw)(_keys(n))) == 0
        p_ref = ref.mean()
        z = (passed.mean() - p_ref) / math.sqrt(2 * p_ref * (1 - p_ref) / n)
        assert abs(z) < 3.5


def test_above_threshold_sosp_lazy_evaluates_both_queries():
    g = np.array([5.0, 5.0, 0.0, 0.0])
    lam = np.array([0.0, 0.0, -5.0, 0.0])
    calls = []

    def grad(i):
        calls.append(("g", i))
        return g[i]

    def eig(i):
        calls.append(("m", i))
        return lam[i]

    res = above_threshold_sosp(
        jax.random.key(SEED), grad, eig, num_candidates=4, **SOSP
    )
    assert int(res.value) == 3
    # candidates 0-2 fail (0, 1 the gradient test), yet each costs both queries
    assert calls == [(q, i) for i in range(4) for q in ("g", "m")]
    eager = above_threshold_sosp(jax.random.key(SEED), g, lam, **SOSP)
    assert int(eager.value) == 3


# The worst-case neighbours for the work done (tests/audit_cases.py, WORK): every
# eigenvalue test fails, and the gradient norms sit at the public threshold, moved by
# -+Delta_G/2 on D and +-Delta_G/2 on D' on alternate candidates.
def test_above_threshold_sosp_work_is_the_same_on_neighbours():
    """Constant work per examined candidate: the call sequences on D and D' agree."""
    _, d, d_prime, lam = work_neighbours()
    for key in _keys(5):
        runs = [observed_work(key, g, lam) for g in (d, d_prime)]
        for value, calls, _, examined in runs:
            assert value == -1
            assert calls == [(q, i) for i in range(examined) for q in ("g", "m")]
        # fails before the fix: only the candidates passing the gradient test
        # had their eigenvalue evaluated, and they differ between D and D'
        assert runs[0][1] == runs[1][1]
    assert len(d) == WORK_T


@pytest.mark.slow
def test_above_threshold_sosp_work_audit():
    """Audit of the observable (output, evaluated eigenvalues) on worst-case pairs.

    tests/audit_cases.py (``above_threshold_sosp_work``): the library's lazy path
    evaluates every eigenvalue it examines, so the observable is the same on both
    datasets and the bound is 0 (claim 1); the pre-fix evaluation order
    (re-implemented from the public thresholds and noise scales: eigenvalue only
    after a passed gradient test) is flagged. Statistics: 4000 runs per dataset,
    one-sided Clopper-Pearson bounds at joint confidence 0.95.
    """
    audit = CASES["above_threshold_sosp_work"].build()
    fixed = audit.run()
    assert fixed.epsilon_lower_bound <= WORK["epsilon"]
    leaky = audit.run(twin=True)
    assert leaky.epsilon_lower_bound > 2.0 * WORK["epsilon"]


@pytest.mark.slow
def test_above_threshold_sosp_audit_flags_half_noise_twin():
    """The output audit has power: a twin with half of every noise is flagged.

    The case (tests/audit_cases.py, ``sosp_output_audit``) says why the output audit
    covers the work done after the fix, and how the pair and the twin are built.
    """
    audit = sosp_output_audit()
    audit.check()  # the twin has the claim's public thresholds and half the noise
    real = audit.run()
    assert real.epsilon_lower_bound <= WORK["epsilon"]
    flagged = audit.run(twin=True)
    assert flagged.epsilon_lower_bound > WORK["epsilon"]


@pytest.mark.slow
def test_above_threshold_sosp_audit_below_epsilon():
    # Candidates sit at the public thresholds, where the output is most sensitive.
    info = above_threshold_sosp(jax.random.key(0), [0.0] * 4, [0.0] * 4, **SOSP).info
    data = jnp.stack(
        [jnp.full(4, info["grad_threshold"]), jnp.full(4, info["eig_threshold"])]
    )
    shift = jnp.array([[SOSP["grad_sensitivity"]], [-SOSP["eig_sensitivity"]]])

    def mech(key, data):
        return above_threshold_sosp(key, data[0], data[1], **SOSP).value

    res = audit(jax.random.key(SEED), mech, data, data + shift, num_samples=100_000)
    assert 0.1 < res.epsilon_lower_bound <= SOSP["epsilon"]


# ------------------------------------------------------------------ bad input
def _raises(fn, **kwargs):
    # key=None: if sampling came before validation, jax would raise a TypeError.
    with pytest.raises(ValueError):
        fn(None, **kwargs)


U = jnp.array([0.0, 1.0])


@pytest.mark.parametrize(
    "kwargs",
    [
        {"utilities": U, "epsilon": 0.0, "sensitivity": 1.0},
        {"utilities": U, "epsilon": -1.0, "sensitivity": 1.0},
        {"utilities": U, "epsilon": math.inf, "sensitivity": 1.0},
        {"utilities": U, "epsilon": math.nan, "sensitivity": 1.0},
        {"utilities": U, "epsilon": 1.0, "sensitivity": 0.0},
        {"utilities": U, "epsilon": 1.0, "sensitivity": -2.0},
        {"utilities": jnp.array([0.0, jnp.nan]), "epsilon": 1.0, "sensitivity": 1.0},
        {"utilities": jnp.array([0.0, jnp.inf]), "epsilon": 1.0, "sensitivity": 1.0},
        {"utilities": jnp.zeros((2, 2)), "epsilon": 1.0, "sensitivity": 1.0},
        {"utilities": jnp.zeros(0), "epsilon": 1.0, "sensitivity": 1.0},
    ],
)
def test_exponential_bad_input(kwargs):
    _raises(exponential, **kwargs)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"noise_to_sensitivity": 1.0, "epsilon": 1.0, "delta": 1e-5},
        {},
        {"epsilon": 1.0},
        {"delta": 1e-5},
        {"epsilon": 1.0, "delta": 0.0},
        {"epsilon": 1.0, "delta": 1.0},
        {"epsilon": 1.0, "delta": -0.1},
        {"epsilon": 0.0, "delta": 1e-5},
        {"noise_to_sensitivity": 0.0},
        {"noise_to_sensitivity": 1.0, "l2_sensitivity": 0.0},
    ],
)
def test_gaussian_bad_input(kwargs):
    _raises(gaussian, value=U, **({"l2_sensitivity": 1.0} | kwargs))


@pytest.mark.parametrize("epsilon, l1", [(0.0, 1.0), (-1.0, 1.0), (1.0, 0.0)])
def test_laplace_bad_input(epsilon, l1):
    _raises(laplace, value=U, l1_sensitivity=l1, epsilon=epsilon)


@pytest.mark.parametrize(
    "kwargs",
    [
        AT | {"epsilon": 0.0},
        AT | {"sensitivity": -1.0},
        AT | {"threshold": math.nan},
        AT | {"num_queries": 3},
        AT | {"queries": jnp.array([0.0, jnp.nan])},
        AT | {"queries": lambda i: 0.0},
    ],
)
def test_above_threshold_bad_input(kwargs):
    _raises(above_threshold, **({"queries": U} | kwargs))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"failure_prob": 0.0},
        {"failure_prob": 1.0},
        {"epsilon": -1.0},
        {"grad_sensitivity": 0.0},
        {"eig_sensitivity": 0.0},
        {"alpha": 0.0},
        {"min_eigenvalues": jnp.zeros(3)},
        {"grad_norms": jnp.array([jnp.nan, 0.0])},
    ],
)
def test_above_threshold_sosp_bad_input(kwargs):
    args = {"grad_norms": U, "min_eigenvalues": U} | SOSP | kwargs
    _raises(above_threshold_sosp, **args)
