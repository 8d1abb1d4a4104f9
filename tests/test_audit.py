"""Tests for dpsample.privacy.audit: valid lower bounds, and power against bugs."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from audit_cases import GAUSSIAN_DELTA, GAUSSIAN_NOISE
from audit_cases import gaussian_mechanism as _gaussian_mech
from audit_cases import laplace_mechanism as _laplace_mech
from scipy import stats
from scripts import ROOT, load_script

from dpsample.mechanisms import laplace
from dpsample.privacy import PrivacyGuarantee
from dpsample.privacy.audit import AuditResult, audit, clopper_pearson

SEED = 7
NUM_SAMPLES = 100_000


# ------------------------------------------------------------- clopper_pearson
@pytest.mark.parametrize("k, n", [(0, 10), (3, 10), (10, 10), (57, 1000)])
def test_clopper_pearson_matches_scipy_exact(k, n):
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.9, method="exact")
    lo, hi = clopper_pearson(k, n, 0.9)
    assert lo == pytest.approx(ci.low, abs=1e-12)
    assert hi == pytest.approx(ci.high, abs=1e-12)
    # one-sided at 0.95 is each side of the two-sided 0.9 interval
    assert clopper_pearson(k, n, 0.95, one_sided=True) == pytest.approx((lo, hi))


def test_clopper_pearson_vectorised_and_bad_input():
    lo, hi = clopper_pearson(np.array([0, 5, 10]), 10, 0.95)
    assert lo[0] == 0.0 and hi[-1] == 1.0 and np.all(lo < hi)
    for bad in (0.0, 1.0):
        with pytest.raises(ValueError):
            clopper_pearson(1, 10, bad)
    with pytest.raises(ValueError):
        clopper_pearson(11, 10, 0.9)


# -------------------------------------------------------------------- Laplace
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_audit_laplace_correct_noise_is_below_claim(seed):
    res = audit(
        jax.random.key(seed), _laplace_mech(), 0.0, 1.0, num_samples=NUM_SAMPLES
    )
    assert isinstance(res, AuditResult)
    assert res.epsilon_lower_bound <= 1.0
    assert res.epsilon_lower_bound > 0.8  # the audit is also nearly tight here
    assert res.num_samples == NUM_SAMPLES and res.num_eval == NUM_SAMPLES // 2


def test_audit_laplace_half_noise_is_caught():
    res = audit(
        jax.random.key(SEED),
        _laplace_mech(noise_fraction=0.5),
        0.0,
        1.0,
        num_samples=NUM_SAMPLES,
    )
    assert res.epsilon_lower_bound > 1.5  # true epsilon 2, claimed 1


@pytest.mark.slow
def test_audit_laplace_failure_rate_over_seeds():
    """Over 20 seeds, the bound exceeds the true epsilon at most at the nominal rate."""
    num_seeds, confidence = 20, 0.95
    failures = sum(
        audit(
            jax.random.key(1000 + s),
            _laplace_mech(),
            0.0,
            1.0,
            num_samples=NUM_SAMPLES,
            confidence=confidence,
        ).epsilon_lower_bound
        > 1.0
        for s in range(num_seeds)
    )
    # P(Binomial(20, 0.05) > allowed) < 1e-3 even if the bound were exactly nominal.
    allowed = stats.binom.ppf(0.999, num_seeds, 1 - confidence)
    assert failures <= allowed


# ------------------------------------------------------------------- Gaussian
NOISE, DELTA = GAUSSIAN_NOISE, GAUSSIAN_DELTA


def test_audit_gaussian_with_delta():
    claim = PrivacyGuarantee.gaussian(NOISE).epsilon(DELTA)
    ok = audit(
        jax.random.key(SEED),
        _gaussian_mech(NOISE),
        0.0,
        1.0,
        num_samples=2 * NUM_SAMPLES,
        delta=DELTA,
    )
    assert 0.5 < ok.epsilon_lower_bound <= claim
    bad = audit(
        jax.random.key(SEED),
        _gaussian_mech(NOISE / 2),
        0.0,
        1.0,
        num_samples=2 * NUM_SAMPLES,
        delta=DELTA,
    )
    assert bad.epsilon_lower_bound > claim + 0.5


def test_audit_vector_output_default_projection():
    d = 4
    x, x_prime = jnp.zeros(d), jnp.ones(d) / jnp.sqrt(d)  # L2 distance 1
    claim = PrivacyGuarantee.gaussian(NOISE).epsilon(DELTA)
    ok = audit(
        jax.random.key(SEED),
        _gaussian_mech(NOISE),
        x,
        x_prime,
        num_samples=NUM_SAMPLES,
        delta=DELTA,
    )
    assert ok.epsilon_lower_bound <= claim
    bad = audit(
        jax.random.key(SEED),
        _gaussian_mech(NOISE / 2),
        x,
        x_prime,
        num_samples=NUM_SAMPLES,
        delta=DELTA,
    )
    assert bad.epsilon_lower_bound > claim


# ------------------------------------------------------------------ mechanics
def test_audit_score_fn_and_private_result_output():
    def mech(key, x):  # returns the PrivateResult itself, 2-vector output
        return laplace(key, jnp.array([x, 0.0]), l1_sensitivity=1.0, epsilon=1.0)

    res = audit(
        jax.random.key(SEED),
        mech,
        0.0,
        1.0,
        num_samples=20_000,
        score_fn=lambda y: y[0],
    )
    assert 0.5 < res.epsilon_lower_bound <= 1.0


def test_audit_loop_fallback_matches_vmap():
    mech = _laplace_mech()
    kwargs = {"num_samples": 400}
    fast = audit(jax.random.key(SEED), mech, 0.0, 1.0, **kwargs)
    slow = audit(jax.random.key(SEED), mech, 0.0, 1.0, vmap=False, **kwargs)
    assert fast == slow

    def untraceable(key, x):  # float() of a traced value: vmap fails, loop works
        return float(mech(key, x))

    fallback = audit(jax.random.key(SEED), untraceable, 0.0, 1.0, **kwargs)
    assert fallback == fast


def test_audit_identical_datasets_give_zero_ish():
    res = audit(jax.random.key(SEED), _laplace_mech(), 0.0, 0.0, num_samples=20_000)
    assert res.epsilon_lower_bound < 0.2


@pytest.mark.parametrize(
    "kwargs",
    [
        {"num_samples": 2},
        {"delta": 1.0},
        {"delta": -0.1},
        {"confidence": 1.0},
        {"confidence": 0.0},
    ],
)
def test_audit_bad_input(kwargs):
    with pytest.raises(ValueError):
        audit(jax.random.key(0), _laplace_mech(), 0.0, 1.0, **kwargs)


# ------------------------------------------------------------ the audit suite
@pytest.mark.slow
def test_audit_suite_script_runs_and_tabulates(tmp_path):
    """experiments/audit_suite.py on two cases, with this checkout as "before" too
    (the subprocess path that audits an older checkout)."""
    suite = load_script("experiments/audit_suite.py")
    out = tmp_path / "suite.json"
    names = ["laplace", "from_event_laplace"]
    argv = [
        "--quick",
        "--only",
        *names,
        "--out",
        str(out),
        "--before",
        str(ROOT),
    ]
    assert suite.main(argv) == 0
    result = json.loads(out.read_text())
    assert [r["name"] for r in result["after"]] == names
    assert [r["name"] for r in result["before"]["rows"]] == names
    for after, before in zip(result["after"], result["before"]["rows"], strict=True):
        assert after["lower_bound"] <= after["claim"] and not after["violation"]
        assert before["lower_bound"] == after["lower_bound"]  # same code, same keys
        assert after["num_samples"] == 10_000  # 100k / 10
    assert result["table"].count("\n") == 1 + len(names)
