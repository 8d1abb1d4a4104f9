"""Gradient oracles: statistics, sensitivities, sampling schemes and accounting."""

import itertools
from fractions import Fraction

import dp_accounting
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from audit_cases import CASES
from dp_accounting import pld, rdp
from saddles import quartic_case
from scipy import stats

import dpsample
from dpsample._src import clipping
from dpsample.errors import MissingConstantError
from dpsample.finders import batches, oracles

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
    # noise multiplier z = std on the sum over the per-example bound M r
    assert float(o2.noise_std(small, x)) == pytest.approx(
        3.0 * 1e-3 * p.smoothness / p.n
    )
    assert rec.kind == "second" and rec.sampling == "full_batch"


@pytest.mark.slow
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


@pytest.mark.slow
def test_poisson_inclusion_rate_and_truncation():
    n, b = 50, 10
    keys = jax.random.split(jax.random.key(3), 3000)
    idx, w = jax.vmap(
        lambda k: batches.sample_batch(
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
        lambda k: batches.sample_batch(
            k, n, sampling="poisson", batch_size=40, max_batch_size=5
        )
    )(keys)
    assert np.all(np.asarray(w).sum(axis=1) <= 5)
    counts = np.zeros(n)
    np.add.at(counts, np.asarray(idx)[np.asarray(w) > 0], 1)
    assert stats.chisquare(counts).pvalue > 1e-3


@pytest.mark.slow
def test_without_replacement_batches_are_distinct():
    idx, w = batches.sample_batch(
        jax.random.key(4), 30, sampling="without_replacement", batch_size=12
    )
    assert len(set(np.asarray(idx).tolist())) == 12 and float(w.sum()) == 12
    n, k = 1797, 256  # the digits benchmark's shape: sorted, distinct, uniform
    keys = jax.random.split(jax.random.key(5), 2000)
    idx = np.asarray(
        jax.jit(
            jax.vmap(
                lambda key: batches.sample_batch(
                    key, n, sampling="without_replacement", batch_size=k
                )[0]
            )
        )(keys)
    )
    assert np.all(np.diff(idx, axis=1) > 0) and idx.min() >= 0 and idx.max() < n
    counts = np.bincount(idx.ravel(), minlength=n)
    expected = 2000 * k / n
    chi2 = np.sum((counts - expected) ** 2 / (expected * (1 - k / n)))
    assert stats.chi2.sf(chi2, n - 1) > 1e-3


def _subset_chi2_pvalue(rows, n, k):
    """Chi-square p-value of the k-subsets in ``rows`` against the uniform law."""
    subsets = list(itertools.combinations(range(n), k))
    code = {s: i for i, s in enumerate(subsets)}
    counts = np.bincount(
        [code[tuple(sorted(r))] for r in rows.tolist()], minlength=len(subsets)
    )
    return stats.chisquare(counts).pvalue


@pytest.mark.slow
@pytest.mark.parametrize("cap", [None, 1])
def test_without_replacement_subsets_are_exactly_uniform(monkeypatch, cap):
    """All C(7, 3) subsets equally likely (chi-square over the 35 cells).

    ``cap=1`` forces the redraw branch (a boundary bucket with more than one key) on
    most draws: the redraws must keep the law uniform. Power: a sort by 4-bit keys
    with ties broken by index (no redraw) is rejected by the same test.
    """
    if cap is not None:
        monkeypatch.setattr(batches, "_BUCKET_CAP", cap)
    n, k, draws = 7, 3, 35_000
    keys = jax.random.split(jax.random.key(11), draws)
    rows = np.asarray(
        jax.jit(jax.vmap(lambda key: batches._uniform_subset(key, n, k)))(keys)
    )
    assert all(len(set(r)) == k for r in rows[:500].tolist())
    assert _subset_chi2_pvalue(rows, n, k) > 1e-3
    small = (
        np.asarray(
            jax.vmap(lambda key: jax.random.bits(key, (n,), jnp.uint8))(keys)
        ).astype(np.int64)
        % 16
    )
    naive = np.argsort(small, axis=1, kind="stable")[:, :k]
    assert _subset_chi2_pvalue(naive, n, k) < 1e-6


def test_fresh_batches_are_disjoint_and_capped():
    rows = np.asarray(
        batches.fresh_batches(jax.random.key(5), 20, batch_size=4, num_batches=5)
    )
    assert len(set(rows.ravel().tolist())) == 20
    with pytest.raises(ValueError, match="at most once"):
        batches.fresh_batches(jax.random.key(5), 20, batch_size=4, num_batches=6)


def _pld_eps(event, count, delta):
    acc = pld.PLDAccountant(neighboring_relation=REPLACE_ONE)
    acc.compose(event, count)
    return acc.get_epsilon(delta)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["first", "second"])
def test_records_match_hand_built_events(case, kind):
    p = case.problem
    build = oracles.first_kind if kind == "first" else oracles.second_kind
    z, k = 1.3, 7
    full = build(p, noise_multiplier=z)
    # full batch: dp_accounting's reading of z (PLD doubles the sensitivity of
    # GaussianDpEvent(z) for REPLACE_ONE)
    hand = _pld_eps(dp_accounting.GaussianDpEvent(z), k, 1e-6)
    assert full.run_guarantee(k).epsilon(1e-6) == pytest.approx(hand, rel=1e-3)
    pois = build(p, noise_multiplier=z, sampling="poisson", batch_size=8)
    ev = dp_accounting.TruncatedSubsampledGaussianDpEvent(
        p.n, 8 / p.n, pois.max_batch_size, z
    )
    assert pois.record.sampling == "poisson"
    assert pois.run_guarantee(k).epsilon(1e-6) == pytest.approx(
        _pld_eps(ev, k, 1e-6), rel=1e-3
    )
    wor = build(p, noise_multiplier=z, sampling="without_replacement", batch_size=8)
    acc = rdp.RdpAccountant(neighboring_relation=REPLACE_ONE)
    # dp_accounting's RDP reads this event's multiplier relative to the replace-one
    # sensitivity 2C: z / 2
    acc.compose(
        dp_accounting.SampledWithoutReplacementDpEvent(
            p.n, 8, dp_accounting.GaussianDpEvent(z / 2)
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


# ------------------------------------------- clipping in floating point (float32)
def _linear_problem(z, **constants):
    """``f(x, z) = <x, z>``: the per-example gradient is ``z`` itself."""
    z = np.asarray(z)
    return dpsample.Problem(
        lambda x, ex: x @ ex["z"],
        {"z": z},
        dpsample.domains.Unconstrained(z.shape[1]),
        **constants,
    )


def _near_bound_rows(n, d, c, seed=0):
    """Rows of norm within a few float32 ulps of ``c``, plus far larger/smaller ones."""
    rng = np.random.default_rng(seed)
    u = rng.standard_normal((n, d))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    r = c * (1 + rng.uniform(-3e-7, 3e-7, n))
    r[: n // 10] *= 10.0 ** rng.uniform(-3, 6, n // 10)
    return u * r[:, None]


def test_clip_margin_values_and_limits():
    f64 = oracles.clip_margin("float64", 256, 4810)
    f32 = oracles.clip_margin("float32", 256, 4810)
    assert 1.0 < f64 < 1 + 1e-10
    # F - 1 ~ 2 m^2 u + d u / 2 with u = 2^-24
    u = 2.0**-24
    assert f32 - 1 == pytest.approx(2 * 256**2 * u + 4810 * u / 2, rel=0.02)
    assert oracles.clip_margin("float32", 366, 4810) > f32  # grows with m
    with pytest.raises(ValueError, match="float64"):
        oracles.clip_margin("float32", 2**13, 10)  # F > 2: no useful bound
    with pytest.raises(ValueError, match="gradient_dtype"):
        oracles.clip_margin("float16", 10, 10)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_clipped_rows_never_exceed_the_bound(dtype):
    """Every row's computed contribution (fresh batch of one) has norm <= C."""
    c = 1.0
    p = _linear_problem(_near_bound_rows(2000, 64, c))
    o1 = oracles.first_kind(
        p,
        noise_multiplier=1.0,
        sampling="fresh",
        batch_size=1,
        clip_norm=c,
        gradient_dtype=dtype,
    )
    x, key = jnp.zeros(64), jax.random.key(0)
    rows = jax.jit(jax.vmap(lambda i: o1.mean_fn(key, x, i[None])))(jnp.arange(p.n))
    norms = np.linalg.norm(np.asarray(rows, np.float64), axis=1)
    assert norms.max() <= c
    # the clipping binds (rows are at the bound, not zeroed)
    assert np.median(norms) > c / oracles.clip_margin(dtype, 1, 64) * (1 - 1e-6)
    # Power: float32 clipping at exactly C (no margin) overshoots C on these rows.
    g = jnp.asarray(p.data["z"], jnp.float32)
    naive = g * jnp.minimum(1.0, jnp.float32(c) / jnp.linalg.norm(g, axis=1))[:, None]
    assert np.linalg.norm(np.asarray(naive, np.float64), axis=1).max() > c


def test_float32_sum_keeps_the_sensitivity():
    """Two batches differing in one row: computed sums at most 2C apart (m rows)."""
    c, m = 1.0, 256
    z = _near_bound_rows(m + 1, 64, c, seed=1)
    z[0] *= 5.0 / np.linalg.norm(z[0])  # clipped
    z[m] = -z[0] * 1e3  # the replacement row, clipped, points the other way
    p = _linear_problem(z)
    o1 = oracles.first_kind(
        p,
        noise_multiplier=1.0,
        sampling="fresh",
        batch_size=m,
        clip_norm=c,
        gradient_dtype="float32",
    )
    x, key = jnp.zeros(64), jax.random.key(0)
    s = o1.mean_fn(key, x, jnp.arange(m)) * m
    idx = jnp.arange(m).at[0].set(m)
    s_other = o1.mean_fn(key, x, idx) * m
    assert float(jnp.linalg.norm(s - s_other)) <= 2 * c
    assert float(jnp.linalg.norm(s - s_other)) > 1.9 * c  # near the bound: binding


@pytest.mark.slow
def test_float32_agrees_with_float64_and_keeps_the_guarantee():
    rng = np.random.default_rng(2)
    d, n = 20, 300
    p = dpsample.Problem(
        lambda x, ex: jnp.sum(jnp.sin(x * ex["a"])) + 0.5 * jnp.sum((x - ex["a"]) ** 2),
        {"a": rng.uniform(-2, 2, (n, d))},
        dpsample.domains.Unconstrained(d),
    )
    kw = dict(noise_multiplier=1.3, sampling="poisson", batch_size=64)
    o32 = oracles.first_kind(p, clip_norm=3.0, gradient_dtype="float32", **kw)
    # float64 oracle clipped at the same bound C / F_32, to compare like with like
    m, f64 = o32.max_batch_size, oracles.clip_margin("float64", o32.max_batch_size, d)
    o64 = oracles.first_kind(p, clip_norm=o32.clip_bound * f64, **kw)
    assert o64.clip_bound == pytest.approx(o32.clip_bound, rel=1e-14)
    x = jnp.asarray(rng.uniform(-1, 1, d))
    mean32, mean64 = jax.jit(o32.mean_fn), jax.jit(o64.mean_fn)
    for i in range(3):
        key = jax.random.key(i)
        m32, m64 = mean32(key, x), mean64(key, x)
        assert m32.dtype == jnp.float64
        # float32 gradients: relative error a few ulps of the per-row terms
        assert float(jnp.linalg.norm(m32 - m64)) <= 1e-5 * 3.0 * m / kw["batch_size"]
        assert float(jnp.linalg.norm(m64)) > 0.1  # not trivially zero
    # same noise, same accounting as the float64 oracle with the same clip_norm
    o64c = oracles.first_kind(p, clip_norm=3.0, **kw)
    assert o32.noise_std == o64c.noise_std and o32.event == o64c.event
    assert o32.record._replace(guarantee=None) == o64c.record._replace(guarantee=None)
    e32 = jax.jit(o32.estimate_fn)(jax.random.key(9), x)
    e64 = jax.jit(o64c.estimate_fn)(jax.random.key(9), x)
    assert e32.dtype == jnp.float64
    # same key: same batch and noise, so the releases differ by the clipped means only
    np.testing.assert_allclose(e32, e64, atol=3.0 * 2 * 0.02)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_non_finite_rows_contribute_zero(dtype):
    z = np.ones((4, 3))
    z[1] = 1e300  # float64: squared norm overflows; float32: the data cast is inf
    p = _linear_problem(z)
    o1 = oracles.first_kind(
        p, noise_multiplier=1.0, clip_norm=10.0, gradient_dtype=dtype
    )
    mean = o1.mean_fn(jax.random.key(0), jnp.zeros(3))
    np.testing.assert_allclose(mean, np.full(3, 3.0 / 4), rtol=1e-6)


def test_clipping_uses_the_declared_bound_when_smaller():
    """A row that breaks the declared G is clipped at G (up to the margin), not C."""
    z = np.zeros((2, 3))
    z[0, 0] = 5.0  # violates lipschitz=0.5
    p = _linear_problem(z, lipschitz=0.5)
    o1 = oracles.first_kind(p, noise_multiplier=1.0, clip_norm=2.0)
    assert o1.contribution_bound == 0.5
    mean = o1.mean_fn(jax.random.key(0), jnp.zeros(3)) * 2
    assert 0.5 * (1 - 1e-9) < float(jnp.linalg.norm(mean)) <= 0.5


def test_gradient_dtype_bad_inputs(case):
    p = case.problem
    with pytest.raises(ValueError, match="gradient_dtype"):
        oracles.first_kind(p, noise_multiplier=1.0, clip_norm=1.0, gradient_dtype="x")
    with pytest.raises(ValueError, match="gradient_dtype"):
        oracles.first_kind(
            p, noise_multiplier=1.0, clip_norm=1.0, gradient_dtype="float16"
        )
    with pytest.raises(ValueError, match="needs per-example clipping"):
        oracles.first_kind(
            p, noise_multiplier=1.0, gradient_dtype="float32", enforce_sensitivity=False
        )
    with pytest.raises(ValueError, match="clip bound"):
        oracles.first_kind(
            p, noise_multiplier=1.0, clip_norm=1e-13, gradient_dtype="float32"
        )
    o = oracles.first_kind(
        p, noise_multiplier=1.0, clip_norm=1.0, gradient_dtype=jnp.float32
    )
    assert o.gradient_dtype == "float32"
    with pytest.raises(ValueError, match="clip bound"):  # float64 keeps a range too
        oracles.first_kind(p, noise_multiplier=1.0, clip_norm=1e-150)


# ------------------------------------- the second-kind oracle in floating point
def _exact_sq_norms(rows):
    """Exact squared norms of float64 rows (rational arithmetic, no rounding)."""
    return [sum(Fraction(float(v)) ** 2 for v in row) for row in np.asarray(rows)]


def test_unclipped_difference_noise_covers_rounding_near_x_equals_y():
    """Contract: computed statistics of neighbours differ by <= the accounted 2 C_eff/b.

    ``f(x, z) = ||x - z||^2 / 2`` has the per-example difference ``x - y`` for every
    example, so in exact arithmetic the statistic is the same on every dataset. At
    ``y`` one ulp from ``x`` the rounding of the two gradient sums (of size ``n |z|``)
    makes neighbouring batches differ by far more than ``2 M ||x - y|| / n``; the
    noise (z C_eff / b, noise over sensitivity z / 2) must cover what is computed.
    Fails on 5906716, whose noise was proportional to ``||x - y||``.
    """
    n, d, z = 2000, 4, 2.0
    rng = np.random.default_rng(0)
    data = rng.standard_normal((n, d))
    data *= 8 * rng.uniform(0.5, 1, (n, 1)) / np.linalg.norm(data, axis=1)[:, None]
    p = dpsample.Problem(
        lambda x, ex: 0.5 * jnp.sum((x - ex["z"]) ** 2),
        {"z": data},
        dpsample.Ball(2.0, dim=d),
        lipschitz=10.0,  # ||x - z|| <= 2 + 8
        smoothness=1.0,
    )
    o2 = oracles.second_kind(p, noise_multiplier=z, enforce_sensitivity=False)
    x = np.array([0.7, -0.3, 1.1, 0.2])
    y = np.nextafter(x, np.inf)
    fn, ops = o2.functional()
    key = jax.random.key(0)
    stat = jax.jit(
        jax.vmap(lambda zs: fn.mean({**ops, "data": {"z": zs}}, key, x, y, None))
    )
    k = 256  # neighbours: one row replaced by another of norm 8
    rows = rng.integers(0, n, k)
    repl = rng.standard_normal((k, d))
    repl *= 8 / np.linalg.norm(repl, axis=1)[:, None]
    stack = np.repeat(data[None], k + 1, axis=0)
    stack[np.arange(1, k + 1), rows] = repl
    t = np.asarray(stat(jnp.asarray(stack)))
    worst = float(np.max(np.linalg.norm(t[1:] - t[0], axis=1)))
    exact = 2 * p.smoothness * float(np.linalg.norm(x - y)) / n
    assert worst > 100 * exact  # rounding, not the step, drives the difference
    assert worst <= 2 * float(o2.noise_std(x, y)) / z
    # the floor is a floor: the same noise for a smaller step (one coordinate moved)
    y1 = x.copy()
    y1[3] = np.nextafter(x[3], -np.inf)
    assert float(o2.noise_std(x, y1)) >= float(o2.noise_std(x, y)) * (1 - 1e-6)


@pytest.mark.slow
def test_difference_oracle_near_x_equals_y_audit():
    """Audit of O2(x, y) at y one ulp from x (tests/audit_cases.py,
    ``o2_near_x_equals_y``): the neighbour is the replacement whose computed statistic
    differs most from the dataset's (rounding, ~1000x the exact sensitivity). With the
    rounding floor the lower bound stays below the claim; on 5906716, whose noise was
    proportional to ||x - y||, the same audit gives 9.5 against a claim of 0.34. The
    floor is Higham's worst case over all data, ~1e5 x this pair's difference, so a
    twin with half the noise is not flagged either (the suite reports its bound)."""
    audit = CASES["o2_near_x_equals_y"].build()
    assert audit.run().epsilon_lower_bound <= audit.claim


def test_difference_oracle_at_x_equals_y_is_exactly_zero():
    """``x == y``: the statistic is set to zero (not computed) and there is no noise."""
    rng = np.random.default_rng(1)
    p = dpsample.Problem(
        lambda x, ex: jnp.sum(jnp.sin(ex["a"] * x) * ex["b"]),
        {"a": rng.uniform(-3, 3, (50, 3)), "b": rng.uniform(-1, 1, (50, 3))},
        dpsample.Ball(1.0, dim=3),
        lipschitz=10.0,
        smoothness=10.0,
    )
    x = jnp.array([0.1, -0.2, 0.3])
    for clip in (False, True):
        o2 = oracles.second_kind(p, noise_multiplier=1.0, enforce_sensitivity=clip)
        est, _ = o2(jax.random.key(2), x, x)
        assert np.all(np.asarray(est) == 0.0) and float(o2.noise_std(x, x)) == 0.0


def _diagonal_problem(s, smoothness=1.0):
    """``f(x, z) = sum_j s_j x_j^2 / 2``: the difference at ``(x, 0)`` is ``s * x``."""
    s = np.asarray(s)
    return dpsample.Problem(
        lambda x, ex: 0.5 * jnp.sum(ex["s"] * x * x),
        {"s": s},
        dpsample.domains.Unconstrained(s.shape[1]),
        smoothness=smoothness,
    )


@pytest.mark.parametrize("regime", ["near_bound", "subnormal"])
def test_clipped_differences_never_exceed_the_accounted_bound(regime):
    """Contract: every computed clipped row has exact norm <= C(x, y) (fresh, b = 1).

    ``near_bound``: the rows ``s_i * x`` are near ``M ||x||`` (within float32 ulps)
    or far from it, with ``M = 1`` declared and broken by many rows; clipping at the
    exact bound overshoots it by rounding. ``subnormal``: ``x`` has entries whose
    squares are subnormal (flushed or imprecise), so norms near a bound that small
    are not computable and clipping cannot enforce it: the rows must be zero. Both
    fail on 5906716 (clipped at the exact bound, no margin, no range).
    """
    d, n = 16, 2000
    if regime == "near_bound":
        s = _near_bound_rows(n, d, np.sqrt(d))
        x = jnp.full(d, 0.3)
    else:
        rng = np.random.default_rng(3)
        s = np.ones((n, d)) * (1 + rng.uniform(0, 1e-6, (n, 1)))  # rows above M r
        x = jnp.full(d, 1e-156).at[0].set(1e-152)
    p = _diagonal_problem(s)
    o2 = oracles.second_kind(p, noise_multiplier=1.0, sampling="fresh", batch_size=1)
    y, key = jnp.zeros(d), jax.random.key(0)
    rows = jax.jit(jax.vmap(lambda i: o2.mean_fn(key, x, y, i[None])))(jnp.arange(n))
    bound = Fraction(float(o2.difference_bound(x, y)))
    assert max(_exact_sq_norms(rows)) <= bound**2
    if regime == "near_bound":  # the clipping binds: rows sit at the bound
        norms = np.linalg.norm(np.asarray(rows), axis=1)
        assert np.median(norms) > float(bound) * (1 - 1e-9)


def test_unclipped_difference_oracle_needs_the_lipschitz_bound():
    p = _diagonal_problem(np.ones((4, 2)))
    with pytest.raises(MissingConstantError, match="lipschitz"):
        oracles.second_kind(p, noise_multiplier=1.0, enforce_sensitivity=False)
    oracles.second_kind(p, noise_multiplier=1.0)  # clipping (the default) suffices


def test_difference_margin_is_tiny_and_grows_with_the_batch():
    f, a = clipping.difference_margin(10_000, 100)
    u = 2.0**-53
    assert 1 < f < 1 + 3 * 10_000 * u and a == pytest.approx(2 * 10_000**2 * u, 1e-3)
    assert clipping.difference_margin(20_000, 100)[1] > 3.9 * a
