"""The one-call random words of the fixed-budget samplers (dpsample._src.random_words).

The conversions must keep the laws the TV accounting of ``dpsample.samplers.rgo`` is
written for: float64 uniforms on the ``2^-52`` grid of ``[0, 1)``, standard normals,
and indices that are a uniform 128-bit integer reduced exactly modulo ``n``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats

from dpsample import Ball, Problem
from dpsample._src import precision
from dpsample._src.random_words import (
    INDEX_WORDS,
    MAX_INDEX_RANGE,
    NORMAL_WORDS,
    UNIFORM_WORDS,
    WordStream,
)
from dpsample.samplers import proximal, restricted_gaussian, rgo
from dpsample.samplers.target import GibbsTarget

GRID = 2**52
NUM = 200_000


def _stream(seed: int, words: int) -> WordStream:
    return WordStream.draw(jax.random.key(seed), words)


def test_uniform_on_the_grid_and_uniform():
    with precision.float64():
        u = np.asarray(_stream(0, NUM * UNIFORM_WORDS).uniform((NUM,)))
    assert u.dtype == np.float64
    assert np.all((u >= 0) & (u < 1)) and np.all(u * GRID == np.floor(u * GRID))
    assert np.unique(u).size > NUM - 10  # all 52 mantissa bits are random
    # KS at level 1e-3; power: a 2% shift of the law is caught at this size
    crit = scipy.stats.kstwo.ppf(1 - 1e-3, NUM)
    assert scipy.stats.kstest(u, "uniform").statistic < crit
    assert scipy.stats.kstest(np.minimum(u * 1.02, 1.0), "uniform").statistic > crit


def test_uniform_bits_match_jax_random_conversion():
    """The same 64 bits give the float jax.random.uniform makes of them."""
    words = jax.random.bits(jax.random.key(3), (2 * 1000,), jnp.uint32)
    with precision.float64():
        u = np.asarray(WordStream(words).uniform((1000,)))
    w = np.asarray(words, dtype=np.uint64).reshape(1000, 2)
    bits = (w[:, 0] << np.uint64(32)) | w[:, 1]
    expected = (bits >> np.uint64(12)).astype(np.float64) / GRID
    np.testing.assert_array_equal(u, expected)


def test_uniform_minval_clamp():
    with precision.float64():
        u = np.asarray(_stream(1, 1000 * UNIFORM_WORDS).uniform((1000,), 1e-300))
    assert np.all(u >= 1e-300) and np.all(u < 1)


def test_normal_law():
    with precision.float64():
        g = np.asarray(_stream(2, NUM * NORMAL_WORDS).normal((NUM,)))
    assert np.all(np.isfinite(g))
    crit = scipy.stats.kstwo.ppf(1 - 1e-3, NUM)
    assert scipy.stats.kstest(g, "norm").statistic < crit
    assert scipy.stats.kstest(g * 1.02, "norm").statistic > crit  # power


@pytest.mark.parametrize("n", [1, 2, 7, 1000, 10**6 + 3, 2**31 + 11, MAX_INDEX_RANGE])
def test_index_is_the_128_bit_integer_mod_n(n):
    """Horner's rule in uint64 computes (w0 2^96 + w1 2^64 + w2 2^32 + w3) mod n."""
    words = jax.random.bits(jax.random.key(n % 97), (INDEX_WORDS * 500,), jnp.uint32)
    with precision.float64():
        idx = np.asarray(WordStream(words).index((500,), n))
    assert idx.dtype == np.int64
    w = np.asarray(words).reshape(500, INDEX_WORDS)
    expected = [
        (int(a) << 96 | int(b) << 64 | int(c) << 32 | int(d)) % n for a, b, c, d in w
    ]
    np.testing.assert_array_equal(idx, np.asarray(expected, dtype=np.int64))


def test_index_uniform_chi_square():
    n, num = 10, 100_000
    with precision.float64():
        idx = np.asarray(_stream(4, INDEX_WORDS * num).index((num,), n))
    counts = np.bincount(idx, minlength=n)
    assert scipy.stats.chisquare(counts).pvalue > 1e-3


def test_index_range_refused():
    with precision.float64():
        stream = _stream(5, 8)
        with pytest.raises(ValueError, match="n <= 2"):
            stream.index((1,), MAX_INDEX_RANGE + 1)
        with pytest.raises(ValueError, match="n <= 2"):
            stream.index((1,), 0)


def test_stream_sizes_are_checked():
    with precision.float64():
        stream = _stream(6, 3)
        with pytest.raises(ValueError, match="words left"):
            stream.uniform((2,))
        stream.take(1)
        with pytest.raises(ValueError, match="drew 3 words, used 1"):
            stream.check_used()
    with pytest.raises(ValueError, match="uint32"):
        WordStream(jnp.zeros(3, jnp.float32))


def test_slices_are_independent():
    """Disjoint slices of one batch: no correlation between consecutive uniforms."""
    with precision.float64():
        u = np.asarray(_stream(7, 2 * NUM * UNIFORM_WORDS).uniform((2, NUM)))
    r = np.corrcoef(u[0], u[1])[0, 1]
    assert abs(r) < 4.0 / np.sqrt(NUM)  # 4 standard errors


def _target(n: int = 8) -> GibbsTarget:
    pb = Problem(
        lambda x, z: jnp.abs(x[0] - z),
        jnp.linspace(-1.0, 1.0, n),
        Ball(1.0, dim=1),
        lipschitz=1.0,
    )
    return GibbsTarget.create(pb, beta=4.0, mu=1.0)


def test_word_counts_are_what_the_calls_use():
    """sample_oracle and the proximal kernel check their streams are used up."""
    target = _target()
    key = jax.random.key(8)
    x, info = jax.jit(lambda k: rgo.sample_oracle(k, target, jnp.array([0.3]), 0.01))(
        key
    )
    assert bool(info.is_accepted)
    kernel = proximal.build_kernel()
    state, _ = jax.jit(lambda k, s: kernel(k, s, target, 0.01))(
        key, proximal.init(jnp.zeros(1), target)
    )
    assert state.position.shape == (1,)
    assert rgo.oracle_words(50, 20, 8, 1) == (
        restricted_gaussian.words_needed(100, 1)
        + 100 * UNIFORM_WORDS
        + rgo.pool_size(50, 20) * INDEX_WORDS
    )


def test_oracle_from_stream_is_sample_oracle():
    target = _target()
    key = jax.random.key(9)
    y = jnp.array([0.2])
    words = rgo.oracle_words(50, 20, 8, 1)

    @jax.jit
    def via_stream(k):
        return rgo.oracle_from_stream(WordStream.draw(k, words), target, y, 0.01)

    a, info_a = via_stream(key)
    b, info_b = jax.jit(lambda k: rgo.sample_oracle(k, target, y, 0.01))(key)
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert int(info_a.num_trials) == int(info_b.num_trials)
