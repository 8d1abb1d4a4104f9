"""Gradient oracles: statistics, sensitivities, sampling schemes and accounting."""

import dp_accounting
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from dp_accounting import pld, rdp
from saddles import quartic_case
from scipy import stats

import dpsample
from dpsample.errors import MissingConstantError
from dpsample.finders import oracles

REPLACE_ONE = dp_accounting.NeighboringRelation.REPLACE_ONE


@pytest.fixture(scope="module")
def case():
    return quartic_case(n=40, dim=3)


def test_full_batch_mean_is_the_gradient(case):
    p = case.problem
    x = jnp.array([0.3, -0.2, 0.5])
    o1 = oracles.first_kind(p, noise_multiplier=1.0)
    np.testing.assert_allclose(o1.mean_fn(jax.random.key(0), x), p.gradient(x), 1e-12)
    o2 = oracles.second_kind(p, noise_multiplier=1.0)
    y = jnp.array([0.1, 0.1, 0.1])
    np.testing.assert_allclose(
        o2.mean_fn(jax.random.key(0), x, y), p.gradient(x) - p.gradient(y), atol=1e-12
    )
    assert o1.sensitivity == pytest.approx(2 * p.lipschitz / p.n)


def test_second_kind_sensitivity_and_zero_step(case):
    p = case.problem
    o2 = oracles.second_kind(p, noise_multiplier=3.0)
    x = jnp.zeros(3)
    est, rec = o2(jax.random.key(1), x, x)
    assert np.all(np.asarray(est) == 0.0)
    small = jnp.array([1e-3, 0.0, 0.0])
    assert float(o2.sensitivity(small, x)) == pytest.approx(
        2 * p.smoothness * 1e-3 / p.n
    )
    far = jnp.array([1.5, 0.0, 0.0])  # M r > 2 G: capped at 2G
    far_cap = min(p.smoothness * 1.5, 2 * p.lipschitz)
    assert float(o2.sensitivity(far, x)) == pytest.approx(2 * far_cap / p.n)
    assert float(o2.noise_std(small, x)) == pytest.approx(
        3.0 * 2e-3 * p.smoothness / p.n
    )
    assert rec.kind == "second" and rec.sampling == "full_batch"


def test_first_kind_noise_is_gaussian_with_the_stated_std(case):
    """KS test of standardised noise; power check rejects a 2/3 or 3/2 scale."""
    p = case.problem
    o1 = oracles.first_kind(p, noise_multiplier=0.7)
    x = jnp.array([0.2, 0.1, -0.3])
    keys = jax.random.split(jax.random.key(2), 4000)
    est = jax.vmap(lambda k: o1.estimate_fn(k, x))(keys)
    z = np.asarray((est - p.gradient(x)) / o1.noise_std).ravel()
    assert stats.kstest(z, "norm").pvalue > 1e-3
    assert stats.kstest(z * 1.5, "norm").pvalue < 1e-6
    assert stats.kstest(z / 1.5, "norm").pvalue < 1e-6


def test_poisson_inclusion_rate_and_truncation():
    n, b = 50, 10
    keys = jax.random.split(jax.random.key(3), 3000)
    idx, w = jax.vmap(
        lambda k: oracles.sample_batch(
            k, n, sampling="poisson", batch_size=b, max_batch_size=40
        )
    )(keys)
    counts = np.zeros(n)
    np.add.at(counts, np.asarray(idx)[np.asarray(w) > 0], 1)
    # every index joins w.p. q = 0.2: chi-square against the uniform expectation
    expected = 3000 * b / n
    chi2 = np.sum((counts - expected) ** 2 / (expected * (1 - b / n)))
    assert stats.chi2.sf(chi2, n) > 1e-3
    sizes = np.asarray(w).sum(axis=1)
    assert abs(sizes.mean() - b) < 5 * np.sqrt(b * (1 - b / n) / 3000)
    # truncation keeps a uniform random subset of size max_batch_size
    idx, w = jax.vmap(
        lambda k: oracles.sample_batch(
            k, n, sampling="poisson", batch_size=40, max_batch_size=5
        )
    )(keys)
    assert np.all(np.asarray(w).sum(axis=1) <= 5)
    counts = np.zeros(n)
    np.add.at(counts, np.asarray(idx)[np.asarray(w) > 0], 1)
    assert stats.chisquare(counts).pvalue > 1e-3


def test_without_replacement_batches_are_distinct():
    idx, w = oracles.sample_batch(
        jax.random.key(4), 30, sampling="without_replacement", batch_size=12
    )
    assert len(set(np.asarray(idx).tolist())) == 12 and float(w.sum()) == 12


def test_fresh_batches_are_disjoint_and_capped():
    rows = np.asarray(
        oracles.fresh_batches(jax.random.key(5), 20, batch_size=4, num_batches=5)
    )
    assert len(set(rows.ravel().tolist())) == 20
    with pytest.raises(ValueError, match="at most once"):
        oracles.fresh_batches(jax.random.key(5), 20, batch_size=4, num_batches=6)


def _pld_eps(event, count, delta):
    acc = pld.PLDAccountant(neighboring_relation=REPLACE_ONE)
    acc.compose(event, count)
    return acc.get_epsilon(delta)


@pytest.mark.parametrize("kind", ["first", "second"])
def test_records_match_hand_built_events(case, kind):
    p = case.problem
    build = oracles.first_kind if kind == "first" else oracles.second_kind
    z, k = 1.3, 7
    full = build(p, noise_multiplier=z)
    # full batch: Gaussian with noise / replace-one sensitivity = z (PLD doubles the
    # unit sensitivity for REPLACE_ONE, so the hand-built event has multiplier 2z)
    hand = _pld_eps(dp_accounting.GaussianDpEvent(2 * z), k, 1e-6)
    assert full.run_guarantee(k).epsilon(1e-6) == pytest.approx(hand, rel=1e-3)
    pois = build(p, noise_multiplier=z, sampling="poisson", batch_size=8)
    ev = dp_accounting.TruncatedSubsampledGaussianDpEvent(
        p.n, 8 / p.n, pois.max_batch_size, 2 * z
    )
    assert pois.record.sampling == "poisson"
    assert pois.run_guarantee(k).epsilon(1e-6) == pytest.approx(
        _pld_eps(ev, k, 1e-6), rel=1e-3
    )
    wor = build(p, noise_multiplier=z, sampling="without_replacement", batch_size=8)
    acc = rdp.RdpAccountant(neighboring_relation=REPLACE_ONE)
    acc.compose(
        dp_accounting.SampledWithoutReplacementDpEvent(
            p.n, 8, dp_accounting.GaussianDpEvent(z)
        ),
        k,
    )
    assert wor.run_guarantee(k).epsilon(1e-6) == pytest.approx(
        acc.get_epsilon(1e-6), rel=1e-6
    )
    fresh = build(p, noise_multiplier=z, sampling="fresh", batch_size=8)
    assert fresh.record.composition == "parallel"
    assert fresh.run_guarantee(k).epsilon(1e-6) == pytest.approx(
        full.guarantee.epsilon(1e-6)
    )


def test_fresh_oracle_needs_indices(case):
    o1 = oracles.first_kind(
        case.problem, noise_multiplier=1.0, sampling="fresh", batch_size=4
    )
    with pytest.raises(ValueError, match="indices"):
        o1(jax.random.key(0), jnp.zeros(3))
    est, _ = o1(jax.random.key(0), jnp.zeros(3), indices=jnp.arange(4))
    assert est.shape == (3,)


def test_bad_inputs(case):
    p = case.problem
    with pytest.raises(ValueError, match="batch_size"):
        oracles.first_kind(p, noise_multiplier=1.0, sampling="poisson", batch_size=41)
    with pytest.raises(ValueError, match="needs a batch_size"):
        oracles.first_kind(p, noise_multiplier=1.0, sampling="poisson")
    with pytest.raises(ValueError, match="noise_multiplier"):
        oracles.first_kind(p, noise_multiplier=0.0)
    with pytest.raises(ValueError, match="sampling"):
        oracles.first_kind(p, noise_multiplier=1.0, sampling="shuffle")
    bare = dpsample.Problem(
        p.loss_fn, p.data, dpsample.Ball(1.0, dim=3)
    )  # no constants declared
    with pytest.raises(MissingConstantError):
        oracles.first_kind(bare, noise_multiplier=1.0)
    with pytest.raises(MissingConstantError):
        oracles.second_kind(bare, noise_multiplier=1.0)
    clipped = oracles.first_kind(bare, noise_multiplier=1.0, clip_norm=2.0)
    assert clipped.contribution_bound == 2.0
    with pytest.raises(ValueError, match="finite"):
        clipped(jax.random.key(0), jnp.array([jnp.nan, 0.0, 0.0]))
