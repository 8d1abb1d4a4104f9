"""The O(batch) samplers draw exactly the law the accounting assumes.

Each test compares the sampler's whole law on a small case (every outcome a cell)
with the exact probabilities by a chi-square test at fixed keys, and checks its
power: the same counts reject a nearby wrong law.
"""

import itertools
import math

import jax
import numpy as np
import pytest
from scipy import stats

from dpsample.finders import batches

DRAWS = 40_000


def _code(rows, weights=None):
    """Each row's set of (weighted-in) indices as a bitmask."""
    rows = np.asarray(rows)
    live = np.ones(rows.shape, bool) if weights is None else np.asarray(weights) > 0
    return np.sum(np.where(live, 1 << rows, 0), axis=1)


def _pvalue(codes, probs):
    """Chi-square p-value of the bitmask ``codes`` against ``probs`` (mask -> p)."""
    cells = sorted(probs)
    assert set(np.unique(codes).tolist()) <= set(cells)
    counts = np.array([np.sum(codes == c) for c in cells])
    expected = np.array([probs[c] for c in cells]) * len(codes)
    return stats.chisquare(counts, expected).pvalue


def _poisson_law(n, q, m, keep_first=False):
    """Mask -> probability of a Poisson(q) batch of range(n) truncated to m.

    An overflowing set keeps a uniform m-subset (the truncated event), or its m
    smallest indices when ``keep_first`` (a wrong law, for the power check).
    """
    law = {}
    for mask in range(1 << n):
        j = [i for i in range(n) if mask >> i & 1]
        p = q ** len(j) * (1 - q) ** (n - len(j))
        if len(j) <= m:
            outs = [(mask, 1.0)]
        elif keep_first:
            outs = [(sum(1 << i for i in j[:m]), 1.0)]
        else:
            subs = list(itertools.combinations(j, m))
            outs = [(sum(1 << i for i in s), 1 / len(subs)) for s in subs]
        for out, w in outs:
            law[out] = law.get(out, 0.0) + p * w
    return law


def _poisson_draws(n, b, m, seed):
    keys = jax.random.split(jax.random.key(seed), DRAWS)
    idx, w = jax.jit(
        jax.vmap(
            lambda k: batches.sample_batch(
                k, n, sampling="poisson", batch_size=b, max_batch_size=m
            )
        )
    )(keys)
    assert np.all(np.asarray(w)[:, :-1] >= np.asarray(w)[:, 1:])  # padding last
    return _code(idx, w)


@pytest.mark.slow
def test_poisson_batches_have_the_product_bernoulli_law():
    """All 2^6 subsets at q = 0.3 (no overflow possible: m = n)."""
    n, b = 6, 1.8
    codes = _poisson_draws(n, b, n, 21)
    assert _pvalue(codes, _poisson_law(n, b / n, n)) > 1e-3
    assert _pvalue(codes, _poisson_law(n, 0.33, n)) < 1e-6  # power: q off by 10%


@pytest.mark.slow
def test_poisson_overflow_keeps_a_uniform_subset():
    """q = 1/2, m = 2: overflow (3+ of 6 join, probability 0.66) on most draws."""
    n, b, m = 6, 3, 2
    codes = _poisson_draws(n, b, m, 22)
    assert _pvalue(codes, _poisson_law(n, b / n, m)) > 1e-3
    assert _pvalue(codes, _poisson_law(n, b / n, m, keep_first=True)) < 1e-6


def test_poisson_large_n_is_in_range_and_increasing():
    n, b = 10**6, 50
    idx, w = jax.jit(
        lambda k: batches.sample_batch(k, n, sampling="poisson", batch_size=b)
    )(jax.random.key(3))
    live = np.asarray(idx)[np.asarray(w) > 0]
    assert 0 < live.size < idx.shape[0] and np.all(np.diff(live) > 0)
    assert live.min() >= 0 and live.max() < n


def _subsets_law(n, k):
    p = 1 / math.comb(n, k)
    return {sum(1 << i for i in s): p for s in itertools.combinations(range(n), k)}


@pytest.mark.slow
@pytest.mark.parametrize("extra", [None, 0])
def test_distinct_draws_are_exactly_uniform(monkeypatch, extra):
    """All C(8, 3) subsets equally likely from :func:`batches._distinct_draws`.

    ``extra=0`` makes only ``k`` draws, so a draw with a repeat (probability 0.34)
    is redrawn: the redraws must keep the law uniform. Power: the first ``k``
    draws with repeats resolved by the next unused index (a biased rule) are
    rejected by the same test.
    """
    if extra is not None:
        monkeypatch.setattr(batches, "_distinct_draw_count", lambda n, k: k + extra)
    n, k = 8, 3
    keys = jax.random.split(jax.random.key(12), DRAWS)
    rows = np.asarray(
        jax.jit(jax.vmap(lambda key: batches._distinct_draws(key, n, k)))(keys)
    )
    assert np.all(np.diff(rows, axis=1) > 0)
    assert _pvalue(_code(rows), _subsets_law(n, k)) > 1e-3
    # power: the biased rule's exact law (it differs) is rejected by the same counts
    wrong = {}
    for r in itertools.product(range(n), repeat=k):
        seen = []
        for v in r:
            while v in seen:
                v = (v + 1) % n
            seen.append(v)
        c = sum(1 << i for i in seen)
        wrong[c] = wrong.get(c, 0.0) + n**-k
    assert _pvalue(_code(rows), wrong) < 1e-6


def test_without_replacement_picks_the_method_by_size():
    """Small batches of large n use the O(b log b) draws, others the O(n) keys."""
    assert 4 * batches._distinct_draw_count(10**5, 256) <= 10**5
    idx, w = jax.jit(
        lambda k: batches.sample_batch(
            k, 10**6, sampling="without_replacement", batch_size=300
        )
    )(jax.random.key(4))
    assert idx.shape == (300,) and np.all(np.diff(np.asarray(idx)) > 0)
    assert float(w.sum()) == 300
    small = jax.jit(
        lambda k: batches.sample_batch(
            k, 40, sampling="without_replacement", batch_size=30
        )[0]
    )(jax.random.key(4))
    assert len(set(np.asarray(small).tolist())) == 30
