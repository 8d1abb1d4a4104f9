"""Tests for dpsample.mechanisms: distributions (with power checks), limits, privacy."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
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


def test_above_threshold_audit_below_epsilon():
    q = jnp.zeros(5)

    def mech(key, queries):
        return above_threshold(
            key, queries, threshold=0.5, epsilon=1.0, sensitivity=1.0
        ).value

    for seed in range(2):
        res = audit(jax.random.key(seed), mech, q, q + 1.0, num_samples=100_000)
        assert 0.1 < res.epsilon_lower_bound <= 1.0


SOSP = {
    "alpha": 0.1,
    "hessian_lipschitz": 4.0,
    "epsilon": 2.0,
    "grad_sensitivity": 0.01,
    "eig_sensitivity": 0.02,
    "failure_prob": 0.1,
}


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


# Worst-case neighbours for the work done: every eigenvalue test fails (the output is
# always ⊥), and the gradient norms sit at the public threshold, moved by -+Delta_G/2
# on D and +-Delta_G/2 on D' on alternate candidates (|g_i(D) - g_i(D')| = Delta_G).
# Which candidates pass the gradient test then depends on the data, and so did the
# set of candidates whose eigenvalue the pre-fix lazy path evaluated.
WORK = {**SOSP, "epsilon": 1.0, "eig_sensitivity": 0.01}
WORK_T = 256
WORK_SIGN = np.where(np.arange(WORK_T) % 2 == 0, 1.0, -1.0)


def _work_neighbours():
    info = above_threshold_sosp(
        jax.random.key(0), np.zeros(WORK_T), np.zeros(WORK_T), **WORK
    ).info
    shift = WORK_SIGN * WORK["grad_sensitivity"] / 2
    lam = np.full(WORK_T, info["eig_threshold"] - 1e3)
    return info, info["grad_threshold"] - shift, info["grad_threshold"] + shift, lam


def _observed_work(key, grad_norms, lam):
    """Run the lazy path; observable: (output, which eigenvalues were evaluated)."""
    calls = []

    def grad(i):
        calls.append(("g", i))
        return grad_norms[i]

    def eig(i):
        calls.append(("m", i))
        return lam[i]

    res = above_threshold_sosp(key, grad, eig, num_candidates=WORK_T, **WORK)
    evaluated = np.zeros(WORK_T)
    evaluated[[i for q, i in calls if q == "m"]] = 1.0
    return int(res.value), calls, evaluated, int(res.info["num_examined"])


def test_above_threshold_sosp_work_is_the_same_on_neighbours():
    """Constant work per examined candidate: the call sequences on D and D' agree."""
    _, d, d_prime, lam = _work_neighbours()
    for key in _keys(5):
        runs = [_observed_work(key, g, lam) for g in (d, d_prime)]
        for value, calls, _, examined in runs:
            assert value == -1
            assert calls == [(q, i) for i in range(examined) for q in ("g", "m")]
        # fails before the fix: only the candidates passing the gradient test
        # had their eigenvalue evaluated, and they differ between D and D'
        assert runs[0][1] == runs[1][1]


@pytest.mark.slow
def test_above_threshold_sosp_work_audit():
    """Audit of the observable (output, evaluated eigenvalues) on worst-case pairs.

    Score: evaluated eigenvalues on even candidates minus on odd ones (the pattern
    by which D and D' differ). The library's lazy path evaluates every eigenvalue it
    examines, so the observable is the same on both datasets and the bound is 0
    (claim 1); the pre-fix evaluation order (re-implemented below from the public
    thresholds and noise scales: eigenvalue only after a passed gradient test) is
    flagged. Statistics: 4000 runs per dataset, one-sided Clopper-Pearson bounds at
    joint confidence 0.95.
    """
    info, d, d_prime, lam = _work_neighbours()

    def score(out):
        return float(out[1:] @ WORK_SIGN)

    def library(key, g):
        value, _, evaluated, _ = _observed_work(key, g, lam)
        return np.concatenate([[value], evaluated])

    def lazy_twin(key, g):  # the evaluation order before the fix
        rng = np.random.default_rng(np.asarray(jax.random.key_data(key)))
        t1 = info["grad_threshold"] + rng.laplace(0, info["grad_threshold_noise_scale"])
        t2 = info["eig_threshold"] + rng.laplace(0, info["eig_threshold_noise_scale"])
        g_ok = g + rng.laplace(0, info["grad_query_noise_scale"], WORK_T) <= t1
        m_ok = lam + rng.laplace(0, info["eig_query_noise_scale"], WORK_T) >= t2
        both = np.flatnonzero(g_ok & m_ok)
        examined = both[0] + 1 if both.size else WORK_T
        evaluated = np.where(np.arange(WORK_T) < examined, g_ok, False)
        value = both[0] if both.size else -1
        return np.concatenate([[value], evaluated.astype(float)])

    kw = {"num_samples": 4000, "score_fn": score, "vmap": False}
    fixed = audit(jax.random.key(SEED), library, d, d_prime, **kw)
    assert fixed.epsilon_lower_bound <= WORK["epsilon"]
    leaky = audit(jax.random.key(SEED), lazy_twin, d, d_prime, **kw)
    assert leaky.epsilon_lower_bound > 2.0 * WORK["epsilon"]


@pytest.mark.slow
def test_above_threshold_sosp_audit_flags_half_noise_twin():
    """The output audit has power: a twin with half of every noise is flagged.

    After the fix the work done is a function of the output (2 evaluations per
    examined candidate, examined = output + 1), so auditing the output audits the
    work observable too; the array path (same output as the lazy path per key) keeps
    400k runs per dataset cheap. Neighbours (m = 4): candidates 0-3 can fail only
    the gradient test, 4-7 only the eigenvalue test, 8 must pass both; on D the
    first eight are Delta/2 closer to failing and candidate 8 Delta/2 closer to
    passing, on D' the reverse, all at the public thresholds. The twin runs at
    epsilon 2 (half of every Laplace scale) with alpha and rho moved so that its
    public thresholds equal the claim's; its true epsilon on the event "output 8"
    is 1.62, the claim's 0.81 (numerical integration).
    """
    m, delta = 4, WORK["grad_sensitivity"]
    num = 2 * m + 1
    info = above_threshold_sosp(
        jax.random.key(0), np.zeros(num), np.zeros(num), **WORK
    ).info
    t_grad, t_eig = info["grad_threshold"], info["eig_threshold"]
    offset = 16 * math.log(2 * num / WORK["failure_prob"]) * delta / 2
    alpha = t_grad - offset  # the twin's alpha and rho give the same thresholds
    twin = {
        **WORK,
        "epsilon": 2 * WORK["epsilon"],
        "alpha": alpha,
        "hessian_lipschitz": (t_eig + offset) ** 2 / alpha,
    }
    twin_info = above_threshold_sosp(
        jax.random.key(0), np.zeros(num), np.zeros(num), **twin
    ).info
    assert twin_info["grad_threshold"] == pytest.approx(t_grad)
    assert twin_info["eig_threshold"] == pytest.approx(t_eig)
    assert twin_info["grad_query_noise_scale"] == info["grad_query_noise_scale"] / 2

    def data(sign):
        grad = np.r_[np.full(m, t_grad + sign * delta / 2), np.full(m, -1e3), t_grad]
        eig = np.r_[np.full(m, 1e3), np.full(m, t_eig - sign * delta / 2), t_eig]
        grad[-1] -= sign * delta / 2
        eig[-1] += sign * delta / 2
        return jnp.asarray(np.stack([grad, eig]))

    def mech(kwargs):
        return lambda key, x: above_threshold_sosp(key, x[0], x[1], **kwargs).value

    kw = {"num_samples": 400_000}
    real = audit(jax.random.key(SEED), mech(WORK), data(1), data(-1), **kw)
    assert real.epsilon_lower_bound <= WORK["epsilon"]
    flagged = audit(jax.random.key(SEED), mech(twin), data(1), data(-1), **kw)
    assert flagged.epsilon_lower_bound > WORK["epsilon"]


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
