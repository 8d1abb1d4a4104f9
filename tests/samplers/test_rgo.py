"""The fixed-budget Gopi–Lee–Liu rejection RGO."""

import math
from fractions import Fraction

import jax
import jax.numpy as jnp
import mpmath
import numpy as np
import pytest
import scipy.stats

from dpsample import Ball, Problem
from dpsample.samplers import proximal, restricted_gaussian, rgo
from dpsample.samplers.target import GibbsTarget

ALPHA = 1e-3
BETA, MU = 8.0, 1.0


def _abs_sin_problem(seed=0, n=30, radius=1.0):
    """Non-convex, non-smooth, 1-Lipschitz per-example losses in 1-D.

    A third of the examples are ``|sin(c (x - a))|/c`` (non-convex), the rest
    ``|x + 1.5|``, so ``F_D`` has slope >= 1/3 on the ball: the tilt ``exp(-beta F)``
    visibly moves the RGO law away from its Gaussian proposal at every ``y``.
    """
    rng = np.random.default_rng(seed)
    data = {
        "c": jnp.asarray(rng.uniform(1, 3, n)),
        "a": jnp.asarray(rng.uniform(-1, 1, n)),
        "wave": jnp.arange(n) < n // 3,
    }

    def loss(x, z):
        wave = jnp.abs(jnp.sin(z["c"] * (x[0] - z["a"]))) / z["c"]
        return jnp.where(z["wave"], wave, jnp.abs(x[0] + 1.5))

    return Problem(loss, data, Ball(radius, dim=1), lipschitz=1.0)


def _rgo_cdf(problem, beta, mu, y, eta):
    """CDF of exp(-beta F - beta mu x^2/2 - (x-y)^2/(2 eta)) on the ball, quadrature."""
    r = problem.domain.radius
    grid = np.linspace(-r, r, 40_001)
    risk = np.asarray(jax.vmap(problem.empirical_risk)(jnp.asarray(grid)[:, None]))
    logp = -beta * risk - 0.5 * beta * mu * grid**2 - (grid - y) ** 2 / (2 * eta)
    cdf = np.cumsum(np.exp(logp - logp.max()))
    return lambda x: np.interp(x, grid, cdf / cdf[-1])


def _draws(target, y, eta, num, seed, **kw):
    keys = jax.random.split(jax.random.key(seed), num)
    fn = jax.jit(
        jax.vmap(lambda k: rgo.sample_oracle(k, target, jnp.array([y]), eta, **kw))
    )
    return fn(keys)


@pytest.mark.slow
@pytest.mark.parametrize("y", [0.1, 0.95])
def test_ks_against_quadrature_with_power(y):
    problem = _abs_sin_problem()
    target = GibbsTarget.create(problem, beta=BETA, mu=MU)
    eta = 0.1 / BETA**2  # c = 0.1: the tilt exp(-beta F) matters across the proposal
    xs, info = _draws(target, y, eta, 20_000, seed=1)
    xs = np.asarray(xs[:, 0])
    assert bool(info.is_accepted.all())
    assert scipy.stats.kstest(xs, _rgo_cdf(problem, BETA, MU, y, eta)).pvalue > ALPHA
    # Power: a wrong beta (1.5x) and the bare proposal (no correction) are rejected.
    wrong = _rgo_cdf(problem, 1.5 * BETA, MU, y, eta)
    assert scipy.stats.kstest(xs, wrong).pvalue < ALPHA
    proposal_only = _rgo_cdf(
        problem, 0.0, 0.0, y / (1 + eta * BETA * MU), eta / (1 + eta * BETA * MU)
    )
    assert scipy.stats.kstest(xs, proposal_only).pvalue < ALPHA


@pytest.mark.slow
def test_acceptance_at_theorem_step_size():
    problem = _abs_sin_problem()
    target = GibbsTarget.create(problem, beta=BETA, mu=MU)
    delta_inner = 1e-6
    eta = 2.0**-8 / (BETA**2 * math.log(1 / delta_inner))  # paper preset
    _, info = _draws(target, 0.5, eta, 4000, seed=2)
    trials = np.asarray(info.num_trials)
    # per-trial acceptance p: calls / total trials (geometric); MCSE by the delta method
    p_hat = len(trials) / trials.sum()
    se = p_hat * np.std(trials) / np.mean(trials) / math.sqrt(len(trials))
    assert p_hat - 3.29 * se >= 1 / 3
    # and at the acceptance ceiling eta = 1/(8 beta^2 G^2) too
    _, info = _draws(target, 0.5, 1 / (8 * BETA**2), 4000, seed=3)
    trials = np.asarray(info.num_trials)
    p_hat = len(trials) / trials.sum()
    se = p_hat * np.std(trials) / np.mean(trials) / math.sqrt(len(trials))
    assert p_hat + 3.29 * se >= 1 / 3


@pytest.mark.slow
def test_counters():
    problem = _abs_sin_problem()
    target = GibbsTarget.create(problem, beta=BETA, mu=MU)
    _, info = _draws(target, 0.3, 0.05 / BETA**2, 4000, seed=4)
    evals = np.asarray(info.num_loss_evaluations)
    trials = np.asarray(info.num_trials)
    # E[evaluations per trial] = sum_a 2a/a! = 2e (two losses per series term)
    per_trial = evals.sum() / trials.sum()
    ratio = evals / trials
    assert abs(per_trial - 2 * math.e) < 4 * ratio.std() / math.sqrt(len(ratio))
    assert 9.0 < evals.mean() < 17.0
    assert np.all(
        np.asarray(info.num_loss_evaluations_budget) == 2 * rgo.pool_size(50, 20)
    )


@pytest.mark.slow
def test_fallback_is_data_independent():
    """With one trial and a huge step, rejections are common; the fallback is the
    proposal draw, identical for two different datasets under the same key."""
    p1 = _abs_sin_problem(seed=0)
    p2 = _abs_sin_problem(seed=7)
    t1 = GibbsTarget.create(p1, beta=BETA, mu=MU)
    t2 = GibbsTarget.create(p2, beta=BETA, mu=MU)
    x1, i1 = _draws(t1, 0.2, 1.0, 500, seed=5, num_trials=1)
    x2, i2 = _draws(t2, 0.2, 1.0, 500, seed=5, num_trials=1)
    both_failed = ~np.asarray(i1.is_accepted) & ~np.asarray(i2.is_accepted)
    assert both_failed.sum() > 20
    np.testing.assert_array_equal(
        np.asarray(x1)[both_failed], np.asarray(x2)[both_failed]
    )
    # and accepted draws do depend on the data (a sanity check of the comparison)
    both_ok = np.asarray(i1.is_accepted) & np.asarray(i2.is_accepted)
    assert both_ok.sum() > 20


def test_pool_and_budget_tv():
    assert rgo.pool_size(50, 20) == 358
    assert rgo.pool_size(10, 20) < rgo.pool_size(50, 20)
    tv = rgo.budget_tv(50, 20)
    assert (2 / 3) ** 50 < tv < 1.1 * (2 / 3) ** 50
    # the pool tail is the exact law of sum_i A_i(A_i+1)/2: check by simulation
    rng = np.random.default_rng(0)
    u = rng.random((200_000, 10))
    depth = 1 + sum((u < 1 / math.factorial(a)).astype(int) for a in range(2, 21))
    demand = (depth * (depth + 1) // 2).sum(axis=1)
    assert abs(demand.mean() - 10 * math.e) < 5 * demand.std() / math.sqrt(len(demand))
    assert np.all(demand <= rgo.pool_size(10, 20))


def test_bad_input():
    problem = _abs_sin_problem()
    target = GibbsTarget.create(problem, beta=BETA, mu=MU)
    key = jax.random.key(0)
    with pytest.raises(ValueError):
        rgo.sample_oracle(key, target, jnp.zeros(2), 0.1)
    with pytest.raises(ValueError):
        rgo.sample_oracle(key, target, jnp.zeros(1), 0.0)
    with pytest.raises(ValueError):
        rgo.sample_oracle(key, target, jnp.zeros(1), 0.1, num_trials=0)
    with pytest.raises(ValueError):
        rgo.sample_oracle(key, target, jnp.zeros(1), 0.1, num_levels=0)
    with pytest.raises(TypeError):
        rgo.sample_oracle(key, problem, jnp.zeros(1), 0.1)


# ------------------------------------------------- TV slack from first principles
# An independent recomputation of every term of rgo.budget_tv (module docstring,
# items 1-7), in exact integer/rational arithmetic or mpmath, sharing no code with
# dpsample.samplers.rgo / restricted_gaussian.
GRID = 2**52  # float64 jax.random.uniform returns multiples of 2^-52 on [0, 1)


def _exact_depth_tv(num_levels):
    """TV(implemented depth, exact unbounded depth): count grid points per depth."""

    def grid_count_below(c):  # #{k in [0, 2^52) : k 2^-52 < c}, c a float64
        num, den = c.as_integer_ratio()
        return min(GRID, -(-num * GRID // den))

    below = [GRID] + [
        grid_count_below(1.0 / math.factorial(a)) for a in range(2, num_levels + 1)
    ]
    below.append(0)
    tv = Fraction(0)
    for a in range(1, num_levels + 1):
        implemented = Fraction(below[a - 1] - below[a], GRID)
        exact = Fraction(1, math.factorial(a)) - Fraction(1, math.factorial(a + 1))
        tv += abs(implemented - exact)
    tv += Fraction(1, math.factorial(num_levels + 1))  # exact mass above the cap
    return tv / 2


def _exact_demand_tail(num_trials, num_levels):
    """``tail[s] = P(sum_i c(A_i) > s)`` for capped depths, as exact Fractions."""
    scale = math.factorial(num_levels)  # P(A = a) * L! is an integer
    weight = {
        a * (a + 1) // 2: a * scale // math.factorial(a + 1)
        for a in range(1, num_levels)
    }
    weight[num_levels * (num_levels + 1) // 2] = 1
    assert sum(weight.values()) == scale
    counts = np.zeros(1, dtype=object)
    counts[0] = 1
    for _ in range(num_trials):
        new = np.zeros(counts.size + max(weight), dtype=object)
        for cost, w in weight.items():
            new[cost : cost + counts.size] += counts * w
        counts = new
    total = scale**num_trials
    above = np.cumsum(counts[::-1])[::-1]  # above[s] = count of demand >= s
    return lambda s: Fraction(int(above[s + 1]) if s + 1 < above.size else 0, total)


def _binomial_cdf_below(num, size, p):
    """``P(Binomial(size, p) < num)`` in 50-digit arithmetic."""
    with mpmath.workdps(50):
        p = mpmath.mpf(p)
        return sum(
            mpmath.binomial(size, k) * p**k * (1 - p) ** (size - k) for k in range(num)
        )


def _restricted_gaussian_tv(num):
    """Shortfall + 3 uniform comparisons for each of the M candidates of one call."""
    p0 = (1 - math.exp(-1)) / (1 + math.exp(-1))
    size = restricted_gaussian.num_candidates(num)
    # the library's candidate count meets its shortfall target, and is the smallest
    assert _binomial_cdf_below(num, size, p0) <= restricted_gaussian.FAILURE_TARGET
    assert _binomial_cdf_below(num, size - 1, p0) > restricted_gaussian.FAILURE_TARGET
    return restricted_gaussian.FAILURE_TARGET + 3 * Fraction(size, GRID)


def _rho_rounding_per_trial(num_levels):
    """(u/2)(1 + 4 min_s E[D e^D]) (1 + gamma): E[D e^D] <= 2 e^{(1+s)^2/8}/(s e)."""
    with mpmath.workdps(30):
        kappa = mpmath.findroot(
            lambda s: mpmath.diff(
                lambda t: 2 * mpmath.exp((1 + t) ** 2 / 8) / (t * mpmath.e), s
            ),
            1.5,
        )
        bound = 2 * mpmath.exp((1 + kappa) ** 2 / 8) / (kappa * mpmath.e)
        u = mpmath.mpf(2) ** -53
        gamma = (4 * num_levels + 1) * u / (1 - (4 * num_levels + 1) * u)
        return float(u / 2 * (1 + 4 * bound) * (1 + gamma))


def _independent_budget(num_trials, num_levels):
    pool = rgo.pool_size(num_trials, num_levels)
    tail = _exact_demand_tail(num_trials, num_levels)
    # the pool is the smallest size >= N whose overflow probability is <= POOL_TAIL
    assert tail(pool) <= rgo.POOL_TAIL
    assert pool == num_trials or tail(pool - 1) > rgo.POOL_TAIL
    terms = {
        "trials_exhausted": Fraction(2, 3) ** num_trials,
        "depth": num_trials * _exact_depth_tv(num_levels),
        "pool_overflow": tail(pool),
        "acceptance_resolution": Fraction(num_trials, GRID),
        "rho_rounding": num_trials * _rho_rounding_per_trial(num_levels),
        # randint: 128 random bits mod n (int64, n < 2^63): TV <= n 2^-130 <= 2^-67
        "index_bias": Fraction(pool, 2**67),
        "proposal": _restricted_gaussian_tv(2 * num_trials),
    }
    return {k: float(v) for k, v in terms.items()}


@pytest.mark.slow
@pytest.mark.parametrize("num_trials, num_levels", [(50, 20), (72, 20), (30, 12)])
def test_budget_tv_recomputed_from_first_principles(num_trials, num_levels):
    ref = _independent_budget(num_trials, num_levels)
    total = math.fsum(ref.values())
    # Fails before the fix: the acceptance resolution, rho rounding, index bias and
    # the restricted Gaussian's uniform resolution were missing, and the depth term
    # was N (1/(L+1)! + 2^-52) instead of N * 3.4 2^-52.
    assert rgo.budget_tv(num_trials, num_levels) >= total * (1 - 1e-12)
    terms = rgo.budget_tv_terms(num_trials, num_levels)
    assert set(terms) == set(ref)
    for name, value in ref.items():
        if name == "rho_rounding":  # a rounded-up constant in the library
            assert value <= terms[name] <= 1.2 * value
        else:
            assert terms[name] == pytest.approx(value, rel=1e-9, abs=0.0), name
    assert rgo.budget_tv(num_trials, num_levels) == math.fsum(terms.values())


def test_budget_tv_model_of_the_random_bits():
    """The resolution model behind the terms: uniforms on the 2^-52 grid, int64 ints."""
    u = np.asarray(jax.random.uniform(jax.random.key(0), (100_000,), jnp.float64))
    assert np.all((u >= 0) & (u < 1)) and np.all(u * GRID == np.floor(u * GRID))
    assert np.unique(u).size > 99_990  # all mantissa bits are random
    # an acceptance test 2u < r on the grid: P - r/2 lies in [0, 2^-52)
    for r in np.random.default_rng(0).uniform(0, 2, 100):
        half = Fraction(float(r)) / 2
        p_grid = Fraction(math.ceil(half * GRID), GRID)
        assert 0 <= p_grid - half < Fraction(1, GRID)
    assert jax.random.randint(jax.random.key(0), (3,), 0, 7).dtype == jnp.int64
    # TV of (uniform 128-bit integer) mod n against uniform on n values <= 2^-67
    for n in [3, 7, 10**6 + 3, 2**62 + 12345, 2**63 - 1]:
        r = 2**128 % n
        assert Fraction(r * (n - r), n * 2**128) <= Fraction(1, 2**67)


def test_schedule_tv_total_recomputed():
    """The proximal schedule's total TV, which enters the guarantee, term by term."""
    target = GibbsTarget.create(_abs_sin_problem(), beta=BETA, mu=MU)
    tau = 1e-4
    s = proximal.schedule(target, tv_target=tau, convex=True)
    kl_t = s.kl_init * math.exp(-2 * s.num_steps * math.log1p(s.step_size * BETA * MU))
    budget = math.fsum(_independent_budget(s.num_trials, s.num_levels).values())
    per_step = s.delta_inner / 2 + budget  # GLL error + fixed-budget departures
    tv_init = float(_restricted_gaussian_tv(1))  # the initial restricted Gaussian
    expected = math.sqrt(kl_t / 2) + s.num_steps * per_step + tv_init
    assert s.tv_total >= expected * (1 - 1e-12)  # fails before the fix
    assert s.tv_total <= tau
    assert budget <= s.delta_inner / 2


def test_pool_extends_the_last_law_bit_for_bit():
    """Pools asked in any order equal the from-scratch convolution power (issue 27:
    a schedule search extends the last law instead of starting over)."""

    def scratch(num_trials, num_levels):
        per_trial = np.zeros(num_levels * (num_levels + 1) // 2 + 1)
        for a, p in enumerate(rgo._depth_law(num_levels), start=1):
            per_trial[a * (a + 1) // 2] += p
        total = np.array([1.0])
        for _ in range(num_trials):
            total = np.convolve(total, per_trial)
        return total

    rgo._pool.cache_clear()
    rgo._TRIAL_SUM_LAWS.clear()
    for n, levels in [(5, 6), (9, 6), (7, 6), (9, 4), (12, 6), (1, 6)]:
        np.testing.assert_array_equal(rgo._trial_sum_law(n, levels), scratch(n, levels))
