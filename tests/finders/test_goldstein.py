"""Private zero-/first-order Goldstein finders (seed 004, spec 004 §5.3)."""

import math

import dp_accounting
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from dp_accounting import rdp
from scipy import stats

import dpsample
from dpsample.errors import MissingConstantError
from dpsample.finders import goldstein as gs
from dpsample.finders.goldstein import (
    goldstein_first_order,
    goldstein_theorem_parameters,
    goldstein_zero_order,
    sample_budget_iters,
    tree_nodes,
)
from dpsample.privacy import NON_PRIVATE_KEY

SEED = 4004
DELTA = 1e-5


def kink_problem(n, d=2, big_l=1.0, **kw):
    """``f(x; xi) = L |x_1|`` (the data do not matter): Goldstein value closed form."""
    data = {"a": jnp.zeros((n, 1))}
    return dpsample.Problem(
        lambda x, z: big_l * jnp.abs(x[0]) + 0.0 * z["a"][0],
        data,
        dpsample.domains.Unconstrained(d),
        lipschitz=big_l,
        **kw,
    )


def kink_value(x, rho, big_l=1.0):
    return 0.0 if abs(float(x[0])) <= rho else big_l


def ring_problem(n, d=2, r=1.0):
    data = {"a": jnp.zeros((n, 1))}
    return dpsample.Problem(
        lambda x, z: jnp.abs(jnp.linalg.norm(x) - r) + 0.0 * z["a"][0],
        data,
        dpsample.domains.Unconstrained(d),
        lipschitz=1.0,
    )


def ring_value(x, rho, r=1.0):
    nx = float(np.linalg.norm(x))
    if abs(nx - r) <= rho or nx <= rho:
        return 0.0
    return math.sqrt(1.0 - rho**2 / nx**2)


def rdp_epsilon(parts, delta):
    """Independent RDP accounting of Gaussian compositions [(multiplier, count)].

    Noise multipliers are std over the per-sample bound; replace-one doubles the
    sensitivity, and dp_accounting's RDP of a bare Gaussian event ignores the relation,
    so the event carries ``z / 2`` (noise over sensitivity).
    """
    acc = rdp.RdpAccountant()
    for z, k in parts:
        acc.compose(dp_accounting.GaussianDpEvent(z / 2), k)
    return acc.get_epsilon(delta)


def zcdp_epsilon(rho, delta):
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


# ------------------------------------------------------------------ tree mechanism
@pytest.mark.parametrize("period", [1, 2, 3, 5, 8, 16])
def test_tree_nodes_decompose_prefixes(period):
    height = gs.tree_height(period)
    covering = {}
    for t in range(1, period + 1):
        nodes = tree_nodes(t, period)
        covered = [i for a, b in nodes for i in range(a, b + 1)]
        assert sorted(covered) == list(range(1, t + 1))  # exact, disjoint
        assert len(nodes) == bin(t).count("1") <= height + 1
        for a, b in nodes:
            size = b - a + 1
            assert size & (size - 1) == 0 and (a - 1) % size == 0  # dyadic
            covering.setdefault((a, b), set()).update(range(a, b + 1))
    for leaf in range(1, period + 1):
        assert sum(leaf in s for s in covering.values()) <= height + 1


@pytest.mark.slow
def test_tree_noise_distribution_and_freshness():
    d, sigma, height = 3, 0.7, 3
    num = 3000
    keys = jax.random.split(jax.random.key(SEED), num)
    for t in (1, 6, 7, 8):
        draws = jax.vmap(
            lambda k, t=t: gs.tree_noise(k, t, sigma, height=height, dim=d)
        )(keys)
        stat = np.sum(np.asarray(draws) ** 2, axis=1) / sigma**2
        pop = bin(t).count("1")
        # TREE(t) ~ N(0, popcount(t) sigma^2 I): ||TREE||^2 / (pop sigma^2) ~ chi2_d,
        # so E||TREE(t)||^2 = popcount(t) d sigma^2 (spec §2.1).
        assert stats.kstest(stat / pop, "chi2", args=(d,)).pvalue > 1e-3
        # Power: a wrong number of nodes is rejected.
        assert stats.kstest(stat / (pop + 1), "chi2", args=(d,)).pvalue < 1e-3
    # Consistency within a period: node (level l, index j) is drawn once.
    k = jax.random.key(1)

    def node(level, j):
        kk = jax.random.fold_in(jax.random.fold_in(k, level), j)
        return sigma * jax.random.normal(kk, (d,))

    def tree(t):
        return gs.tree_noise(k, t, sigma, height=height, dim=d)

    np.testing.assert_allclose(tree(4), node(2, 0), atol=1e-12)  # [1, 4]
    np.testing.assert_allclose(tree(6) - tree(4), node(1, 2), atol=1e-12)  # [5, 6]
    np.testing.assert_allclose(tree(7) - tree(6), node(0, 6), atol=1e-12)  # [7, 7]
    np.testing.assert_allclose(tree(8), node(3, 0), atol=1e-12)  # root [1, 8]
    # ... and fresh across periods: different period keys give independent noise.
    other = jax.vmap(lambda kk: gs.tree_noise(kk, 4, sigma, height=height, dim=d))(
        jax.random.split(jax.random.key(2), num)
    )
    first = jax.vmap(lambda kk: gs.tree_noise(kk, 4, sigma, height=height, dim=d))(keys)
    corr = np.corrcoef(np.asarray(first)[:, 0], np.asarray(other)[:, 0])[0, 1]
    assert abs(corr) < 4.0 / math.sqrt(num)


def test_sample_budget_matches_brute_force():
    for n in (1, 7, 50, 101):
        for period in (1, 2, 5):
            for b1, b2 in ((period, 1), (3, 2)):
                best = 0
                for t in range(1, 2 * n + 2):
                    na = math.ceil(t / period)
                    if na * b1 + (t - na) * b2 <= n:
                        best = t
                assert sample_budget_iters(n, period, b1, b2) == best


# ------------------------------------------------------------------ parameters
def _plan(scale_x=1.0, scale_f=1.0, **kw):
    c, a = scale_x, scale_f
    base = dict(
        n=5000,
        dim=4,
        epsilon=1.0,
        delta=DELTA,
        lipschitz=a * 1.0 / c,
        initial_gap=a * 2.0,
        alpha=c * 0.05,
    )
    base.update(kw)
    if base.get("beta") is not None:
        base["beta"] = base["beta"] * a / c
    return goldstein_theorem_parameters(**base)


@pytest.mark.parametrize(
    "kw",
    [
        dict(passes="single", preset="corrected"),
        dict(passes="single", preset="paper"),
        dict(passes="single", estimator="first_order"),
        dict(passes="multi", preset="corrected", beta=0.5),
        dict(passes="multi", preset="corrected"),  # default beta from the rate
    ],
)
def test_parameters_are_scale_invariant(kw):
    """Domain x c, values x a: D ~ c; T, Sigma, M, m invariant (spec §5.3)."""
    p0 = _plan(**kw)
    p1 = _plan(scale_x=3.0, scale_f=7.0, **kw)
    assert p1["clip_radius"] == pytest.approx(3.0 * p0["clip_radius"], rel=1e-9)
    for k in ("num_iters", "period", "window", "num_directions"):
        assert p1[k] == p0[k], k


def test_paper_multipass_preset_is_not_scale_invariant():
    # Power check: the printed Theorem 4.1 D = alpha^2 beta^2 / L^2 fails the test.
    kw = dict(passes="multi", preset="paper", beta=0.5)
    p0, p1 = _plan(**kw), _plan(scale_x=3.0, scale_f=7.0, **kw)
    assert p1["clip_radius"] != pytest.approx(3.0 * p0["clip_radius"], rel=1e-3)


def test_plan_invariants():
    p = _plan()
    assert p["window"] * p["clip_radius"] <= p["alpha"] + 1e-15
    assert p["samples_used"] <= p["n"]
    assert p["anchor_batch"] == p["period"] and p["difference_batch"] == 1
    assert p["tree_height"] == math.ceil(math.log2(p["period"])) or p["period"] == 1
    assert p["num_windows"] == p["num_iters"] // p["window"] >= 1
    # Corrected preset: Sigma = alpha / (D sqrt d) (rounded).
    assert p["period"] == max(1, round(p["alpha"] / (p["clip_radius"] * 2.0)))


# ------------------------------------------------------------------ accounting
@pytest.mark.slow
def test_single_pass_accounting_by_hand():
    n, eps = 300, 2.0
    prob = kink_problem(n)
    res = goldstein_zero_order(
        jax.random.key(SEED),
        prob,
        epsilon=eps,
        delta=DELTA,
        x0=jnp.array([1.0, 0.5]),
        alpha=0.1,
        initial_gap=1.0,
        num_directions=8,
        sizing="theory",  # independent directions: C_D from the concentration e
        enforce_sensitivity=True,
    )
    p, noise = res.info["plan"], res.info["noise"]
    d, big_l, alpha, m = 2, 1.0, 0.1, 8
    # Sensitivities by hand (Pinelis radius, replace-one factor 2).
    gamma = p["failure_prob"]
    e = big_l * (d + 1) * math.sqrt(2 * math.log(2 / gamma) / m)
    c_a = big_l + e
    c_d = min(2 * p["clip_radius"] * big_l * math.sqrt(d) / alpha + 2 * e, 2 * c_a)
    s = max(2 * c_a / p["period"], 2 * c_d / 1)
    assert noise["sensitivity"] == pytest.approx(s, rel=1e-12)
    z = noise["tree_noise_multiplier"]  # std over the per-sample bound s / 2
    assert noise["tree_sigma"] == pytest.approx(z * s / 2, rel=1e-12)
    reps = p["tree_height"] + 1
    # zCDP by hand: (H+1) s^2 / (2 sigma^2) = 2 (H+1) / z^2.
    assert res.privacy.zcdp_rho() == pytest.approx(2 * reps / z**2, rel=1e-12)
    eps_rdp = rdp_epsilon([(z, reps)], DELTA)
    got = res.privacy.epsilon(DELTA)
    assert got <= eps + 1e-9
    assert got <= eps_rdp + 1e-6  # the guarantee's routes include RDP
    assert got <= zcdp_epsilon(2 * reps / z**2, DELTA) + 1e-9
    assert eps_rdp > 0.8 * eps  # and the calibration is not wildly loose
    assert res.info["samples_used"] == p["samples_used"] <= n
    assert res.info[NON_PRIVATE_KEY]["estimates_checked"] == p["samples_used"]


@pytest.mark.slow
def test_multi_pass_accounting_by_hand():
    n, eps = 40, 1.0
    prob = kink_problem(n)
    res = goldstein_zero_order(
        jax.random.key(SEED),
        prob,
        epsilon=eps,
        delta=DELTA,
        x0=jnp.array([1.0, 0.5]),
        alpha=0.1,
        initial_gap=1.0,
        passes="multi",
        beta=0.5,
        num_iters=10,
        period=4,
        num_directions=4,
        enforce_sensitivity=True,
    )
    p, noise = res.info["plan"], res.info["noise"]
    n_a, n_d = math.ceil(10 / 4), 10 - math.ceil(10 / 4)
    assert (p["num_anchors"], p["num_differences"]) == (n_a, n_d)
    z1, z2 = noise["anchor_noise_multiplier"], noise["difference_noise_multiplier"]
    # Equal zCDP split: z1 / sqrt(N_A) == z2 / sqrt(N_D).
    assert z1 / math.sqrt(n_a) == pytest.approx(z2 / math.sqrt(n_d), rel=1e-12)
    rho = 2 * n_a / z1**2 + 2 * n_d / z2**2  # noise over sensitivity z / 2
    assert res.privacy.zcdp_rho() == pytest.approx(rho, rel=1e-12)
    assert noise["sigma1"] == pytest.approx(z1 * p["anchor_sensitivity"] / 2)
    assert p["anchor_sensitivity"] == pytest.approx(2 * p["anchor_bound"] / n)
    assert p["difference_sensitivity"] == pytest.approx(
        2 * p["difference_bound_max"] / n
    )
    got = res.privacy.epsilon(DELTA)
    assert got <= eps + 1e-9
    assert got <= rdp_epsilon([(z1, n_a), (z2, n_d)], DELTA) + 1e-6
    assert got <= zcdp_epsilon(rho, DELTA) + 1e-9


def test_mode_a_charges_the_failure_event():
    eps = 1.0
    p = goldstein_theorem_parameters(
        n=300,
        dim=2,
        epsilon=eps,
        delta=DELTA,
        lipschitz=1.0,
        initial_gap=1.0,
        alpha=0.1,
        num_directions=8,
        sizing="theory",
        enforce_sensitivity=False,  # Mode A: the explicit opt-in
    )
    tau = DELTA / (2 * (1 + math.e**eps))
    assert p["tv_slack"] == pytest.approx(tau, rel=1e-12)
    assert p["delta_gaussian"] == DELTA / 2
    assert p["failure_prob"] * p["num_estimates"] == pytest.approx(tau, rel=1e-9)
    noise, g = gs.goldstein_guarantee(p)
    assert g.tv_slack == pytest.approx(tau)
    assert g.epsilon(DELTA) <= eps + 1e-9
    # Without the slack, the Gaussian part alone meets (eps, delta/2).
    base = dpsample.privacy.PrivacyGuarantee.gaussian(
        noise["tree_noise_multiplier"] / 2  # noise over the replace-one sensitivity
    ).repeat(p["tree_height"] + 1)
    assert base.epsilon(DELTA / 2) <= eps + 1e-9
    # Mode A's m defaults to at least the privacy-driven size (e <= L).
    q = goldstein_theorem_parameters(
        n=300,
        dim=2,
        epsilon=eps,
        delta=DELTA,
        lipschitz=1.0,
        initial_gap=1.0,
        alpha=0.1,
        period=1,
    )
    assert q["concentration_radius"] <= 1.0 + 1e-12


# ------------------------------------------------------------------ behaviour
def _nonprivate(res, prob, x0, key):
    """Re-run the plan that ran with zero noise (the non-private method)."""
    plan = res.info["plan"]
    runner = gs.make_runner(prob.loss_fn, plan)
    return runner(key, prob.data, jnp.asarray(x0), 0.0, 0.0, 0.0)


@pytest.mark.slow
@pytest.mark.parametrize("passes", ["single", "multi"])
def test_epsilon_to_infinity_is_the_nonprivate_method(passes):
    n = 200 if passes == "single" else 20
    prob = kink_problem(n)
    x0 = jnp.array([0.6, 0.3])
    key = jax.random.key(SEED)
    common = dict(
        delta=DELTA,
        x0=x0,
        alpha=0.1,
        initial_gap=1.0,
        num_directions=8,
        clip_radius=0.02,
        period=4,
        window=4,
        step_size=0.01,
        enforce_sensitivity=True,
        passes=passes,
        return_iterates=True,
    )
    if passes == "multi":
        common.update(num_iters=40, beta=0.5)
    # (a) The calibrated noise vanishes as epsilon grows (z ~ 1/sqrt(2 eps)).
    zname = "tree_noise_multiplier" if passes == "single" else "anchor_noise_multiplier"
    zs_eps = []
    # (epsilon up to 1e4: calibrate refuses above MAX_EPSILON = 1e4, issue 25;
    # z ~ 1/sqrt(2 eps) still falls by 100 over the range)
    for eps in (1.0, 1e2, 1e4):
        plan = goldstein_theorem_parameters(
            n=n,
            dim=2,
            epsilon=eps,
            lipschitz=1.0,
            estimator="zero_order",
            **{k: v for k, v in common.items() if k not in ("x0", "return_iterates")},
        )
        zs_eps.append(gs.goldstein_guarantee(plan)[0][zname])
    assert zs_eps[2] < zs_eps[1] < zs_eps[0] and zs_eps[2] / zs_eps[0] < 0.02
    # (b) The released value is the runner's output at the calibrated noise ...
    res = goldstein_zero_order(key, prob, epsilon=1e4, **common)
    plan, noise = res.info["plan"], res.info["noise"]
    runner = gs.make_runner(prob.loss_fn, plan)
    sig = (
        (noise["tree_sigma"], 0.0, 0.0)
        if passes == "single"
        else (0.0, noise["sigma1"], noise["sigma2"])
    )
    again = runner(key, prob.data, x0, *sig)
    np.testing.assert_allclose(res.value, again[0], atol=1e-12)
    # ... and at vanishing noise the runner is the non-private method (continuity).
    tiny = tuple(1e-9 * v for v in sig)
    x_tiny = runner(key, prob.data, x0, *tiny)
    x_zero = runner(key, prob.data, x0, 0.0, 0.0, 0.0)
    assert int(x_tiny[1]) == int(x_zero[1])
    np.testing.assert_allclose(x_tiny[0], x_zero[0], atol=1e-6)
    # The non-private method descends from |x_1| = 0.6 towards the kink.
    assert abs(float(x_zero[3][-1][0])) < 0.5


@pytest.mark.slow
def test_o2nc_invariants_and_output():
    prob = ring_problem(400)
    x0 = jnp.array([0.2, 0.1])
    res = goldstein_first_order(
        jax.random.key(1),
        prob,
        epsilon=5.0,
        delta=DELTA,
        x0=x0,
        alpha=0.1,
        initial_gap=1.0,
        num_directions=4,
        sizing="theory",
        enforce_sensitivity=False,  # Mode A: the explicit opt-in
        return_iterates=True,
        preset="corrected",  # the theorem's windows and output (not the default's)
    )
    p = res.info["plan"]
    big_d, big_m, big_t = p["clip_radius"], p["window"], p["num_iters"]
    zs = np.asarray(res.info["iterates"])
    assert zs.shape == (big_t, 2)
    steps = np.linalg.norm(np.diff(zs, axis=0), axis=1)
    assert steps.max() <= 2 * big_d * (1 + 1e-9)
    windows = np.asarray(res.info["window_means"])
    k = p["num_windows"]
    assert windows.shape == (k, 2)
    blocks = zs[: k * big_m].reshape(k, big_m, 2)
    assert np.max(np.linalg.norm(blocks - windows[:, None], axis=2)) <= big_m * big_d
    np.testing.assert_allclose(res.value, windows[res.info["output_window"]])
    assert np.linalg.norm(np.asarray(res.value) - np.asarray(x0)) <= big_t * big_d
    assert res.privacy.epsilon(DELTA) <= 5.0 + 1e-9
    # Mode A (enforce_sensitivity=False): the TV slack of the union bound
    assert p["estimator"] == "first_order" and p["tv_slack"] > 0


@pytest.mark.slow
def test_nonprivate_run_reaches_goldstein_stationarity():
    """With exact-noise-free oracles, O2NC reaches |x_1| <= 2 alpha on the kink."""
    prob = kink_problem(2000)
    x0 = jnp.array([0.5, 0.3])
    res = goldstein_zero_order(
        jax.random.key(7),
        prob,
        epsilon=1.0,
        delta=DELTA,
        x0=x0,
        alpha=0.05,
        initial_gap=0.5,
        num_directions=16,
        enforce_sensitivity=True,
    )
    x_np, *_ = _nonprivate(res, prob, x0, jax.random.key(7))
    assert kink_value(np.asarray(x_np), 2 * 0.05) == 0.0
    # Power: the start is not stationary.
    assert kink_value(np.asarray(x0), 2 * 0.05) == 1.0


# ------------------------------------------------------------------ bad input
def test_bad_input():
    prob = kink_problem(50, loss_range=2.0)
    key = jax.random.key(0)
    ok = dict(epsilon=1.0, delta=DELTA, x0=jnp.zeros(2), alpha=0.1, num_directions=2)

    def call(fn=goldstein_zero_order, k=key, p=prob, **kw):
        args = dict(ok)
        args.update(kw)
        return fn(k, p, **args)

    for bad in (dict(epsilon=0.0), dict(epsilon=-1.0), dict(epsilon=float("nan"))):
        with pytest.raises(ValueError):
            call(**bad)
    for bad in (dict(delta=0.0), dict(delta=1.0)):
        with pytest.raises(ValueError):
            call(**bad)
    with pytest.raises(ValueError):
        call(x0=jnp.zeros(3))
    with pytest.raises(ValueError):
        call(x0=jnp.array([jnp.nan, 0.0]))
    with pytest.raises(ValueError):
        call(alpha=5.0)  # alpha > Phi / L
    with pytest.raises(ValueError):
        call(passes="double")
    with pytest.raises(ValueError):
        call(preset="theory")
    with pytest.raises(ValueError):
        call(num_iters=10_000)  # more than the single-pass sample budget
    with pytest.raises(ValueError):
        call(beta=0.1)  # beta is a multi-pass input
    with pytest.raises(ValueError):
        call(num_directions=0)
    with pytest.raises(ValueError, match="enforce_sensitivity"):
        # Mode A derives e for privacy
        call(concentration_radius=0.5, enforce_sensitivity=False)
    with pytest.raises(ValueError, match="sizing"):
        call(sizing="fast")
    with pytest.raises(TypeError):
        call(k=0)
    with pytest.raises(TypeError):
        call(p="problem")
    with pytest.raises(TypeError):
        call(enforce_sensitivity=1)
    no_l = dpsample.Problem(
        lambda x, z: jnp.abs(x[0]) + 0.0 * z,
        jnp.zeros(5),
        dpsample.domains.Unconstrained(2),
        loss_range=1.0,
    )
    with pytest.raises(MissingConstantError):
        call(p=no_l)
    with pytest.raises(MissingConstantError):
        call(p=kink_problem(50))  # no initial gap, no loss_range
    ball = dpsample.Problem(
        lambda x, z: jnp.abs(x[0]) + 0.0 * z,
        jnp.zeros(5),
        dpsample.domains.Ball(1.0, dim=2),
        lipschitz=1.0,
        loss_range=1.0,
    )
    with pytest.raises(ValueError, match="Unconstrained"):
        call(p=ball, enforce_sensitivity=False)  # Mode B (the default) may clip
    with pytest.raises(ValueError):
        call(fn=goldstein_first_order, preset="bad")


# ------------------------------------------------------------------ slow
@pytest.mark.slow
@pytest.mark.parametrize("finder", ["zero_order", "first_order", "multi"])
def test_private_runs_reach_stationarity_with_a_generous_budget(finder):
    """E ||d_{2 alpha} F(x_out)|| (closed form, ring) is small at large n and eps.

    The start (||x0|| = 2) has value sqrt(1 - (2 alpha)^2/4) ~ 0.99. The expectation
    over the output window is computed exactly (the mean over all window averages,
    each a possible x_out), then averaged over four seeds; it must fall below 0.35.
    Enforced-sensitivity mode with practical ``m``, clip slack ``e = 0.5``, and for
    the single-pass finders ``c_d = 4`` (the O(1) constant of ``D``): with ``c_d = 1``
    about half the windows are still travelling (``Phi/(D T)`` ~ 0.2 at this ``n``).
    """
    alpha, eps = 0.1, 20.0
    x0 = jnp.array([2.0, 0.0])
    common = dict(
        epsilon=eps,
        delta=DELTA,
        x0=x0,
        alpha=alpha,
        initial_gap=1.0,
        enforce_sensitivity=True,
        concentration_radius=0.5,
        return_iterates=True,
    )
    # One problem for the four seeds: the core is jitted per loss function, so a
    # problem built per seed compiled the same program four times.
    prob = ring_problem(100 if finder == "multi" else 4000)
    vals = []
    for seed in range(4):
        key = jax.random.key(100 + seed)
        if finder == "multi":
            res = goldstein_zero_order(
                key, prob, passes="multi", beta=0.3, num_directions=16, **common
            )
        elif finder == "zero_order":
            res = goldstein_zero_order(key, prob, num_directions=32, c_d=4.0, **common)
        else:
            # the theorem's schedule and window output (c_d scales its D)
            res = goldstein_first_order(
                key, prob, num_directions=32, c_d=4.0, preset="corrected", **common
            )
        assert res.privacy.epsilon(DELTA) <= eps + 1e-9
        windows = np.asarray(res.info["window_means"])
        assert any(np.allclose(res.value, w) for w in windows)
        vals.append(np.mean([ring_value(w, 2 * alpha) for w in windows]))
    assert ring_value(np.asarray(x0), 2 * alpha) > 0.99
    assert np.mean(vals) < 0.35, vals


# ------------------------------------------------------------------ estimators
def _kink_smoothed_slope(x1, alpha, d=3):
    """E[sign(x1 + y_1)], y ~ U(B_alpha) in d = 3 (density of y_1/alpha ∝ 1 - u^2)."""
    c = min(1.0, abs(x1) / alpha)
    p_below = 0.75 * (2.0 / 3.0 - c + c**3 / 3.0)  # P(u < -c)
    return math.copysign(1.0 - 2.0 * p_below, x1)


@pytest.mark.parametrize("kind", ["zero_order", "first_order"])
def test_estimators_are_unbiased_for_the_smoothed_gradient(kind):
    """MCSE test against grad f_alpha of L |x_1| (closed form, spec §5.2 item 1)."""
    big_l, alpha, d, num = 2.0, 0.1, 3, 20_000
    x = jnp.array([0.03, 0.01, -0.02])

    def loss(y, example):
        return big_l * jnp.abs(y[0]) + 0.0 * example

    keys = jax.random.split(jax.random.key(SEED), num)
    if kind == "zero_order":
        ests = jax.vmap(lambda k: gs.zo_estimate(loss, x, 0.0, k, 1, alpha=alpha))(keys)
        bound = big_l * d
    else:
        grad_fn = jax.grad(loss)
        ests = jax.vmap(lambda k: gs.fo_estimate(grad_fn, x, 0.0, k, 1, alpha=alpha))(
            keys
        )
        bound = big_l
    ests = np.asarray(ests)
    assert np.max(np.linalg.norm(ests, axis=1)) <= bound * (1 + 1e-12)
    truth = np.array([big_l * _kink_smoothed_slope(0.03, alpha), 0.0, 0.0])
    mcse = ests.std(axis=0, ddof=1) / math.sqrt(num)
    z = stats.norm.ppf(1 - 0.001 / 6)  # Bonferroni over 3 coordinates, 2 cases
    assert np.all(np.abs(ests.mean(axis=0) - truth) <= z * mcse)
    # Power: the smoothed gradient at radius 2 alpha is rejected.
    wrong = big_l * _kink_smoothed_slope(0.03, 2 * alpha)
    assert abs(ests.mean(axis=0)[0] - wrong) > z * mcse[0]


# ------------------------------------------------------------------ compute budget
@pytest.mark.parametrize("passes", ["single", "multi"])
def test_compute_budget_shrinks_t_and_refuses_a_fixed_schedule(passes):
    kw = dict(
        n=2000 if passes == "single" else 100,
        dim=2,
        epsilon=1.0,
        delta=DELTA,
        lipschitz=1.0,
        initial_gap=1.0,
        alpha=0.1,
        num_directions=8,
        enforce_sensitivity=True,
        passes=passes,
    )
    free = goldstein_theorem_parameters(**kw)
    assert "uncapped_evaluations" not in free
    assert (free["loss_evaluations"], 0) == gs.evaluations(free)
    cap = free["loss_evaluations"] // 5
    capped = goldstein_theorem_parameters(max_evaluations=cap, **kw)
    assert capped["loss_evaluations"] <= cap
    assert capped["uncapped_evaluations"] == free["loss_evaluations"]
    assert capped["num_iters"] < free["num_iters"]
    if passes == "single":
        # D re-derived at the capped T: larger steps for a shorter run
        assert capped["clip_radius"] > free["clip_radius"]
    else:
        # the target beta reached in the capped T (Thm 4.1), D from it
        assert capped["beta"] > free["beta"]
        assert capped["clip_radius"] == pytest.approx(
            0.1 * capped["beta"] ** 2, rel=1e-12
        )
    with pytest.raises(ValueError, match="max_evaluations"):
        goldstein_theorem_parameters(
            max_evaluations=cap, num_iters=free["num_iters"], **kw
        )
    with pytest.raises(ValueError, match="below one step"):
        goldstein_theorem_parameters(max_evaluations=1, **kw)
    # through the algorithm object: the plan's cost is what runs, within the cap
    prob = kink_problem(kw["n"], loss_range=1.0)
    algo = gs.GoldsteinZeroOrder(
        alpha=0.1, num_directions=8, enforce_sensitivity=True, passes=passes
    )
    plan = algo.plan(prob.spec, dpsample.Budget(1.0, DELTA, max_evaluations=cap))
    assert plan.cost.evaluations <= cap and plan["num_iters"] == capped["num_iters"]
    assert "capped" in plan.params["num_iters"].note


# ------------------------------------------------------------ budget spent (issue 16)
@pytest.mark.slow  # over 7 s in the fast suite (make test-fast --durations)
@pytest.mark.parametrize(
    "cls, eps",
    [
        (gs.GoldsteinZeroOrder, 0.1),
        (gs.GoldsteinZeroOrder, 1.0),
        pytest.param(gs.GoldsteinZeroOrder, 10.0, marks=pytest.mark.slow),  # ~14 s
        (gs.GoldsteinFirstOrder, 0.1),
        (gs.GoldsteinFirstOrder, 1.0),
        (gs.GoldsteinFirstOrder, 10.0),
    ],
)
def test_defaults_only_plan_spends_the_budget(cls, eps):
    """Defaults only (no alpha): within 2 % of the requested epsilon, never above.

    Fails on the parent commit: alpha was required and the RDP calibration spent
    about 94 % of epsilon = 1.
    """
    prob = kink_problem(2000, loss_range=1.0)
    plan = cls().plan(prob.spec, dpsample.Budget(eps, DELTA))
    assert plan.source("alpha") == "default"
    assert plan["alpha"] == pytest.approx(
        gs.default_alpha(n=2000, dim=2, epsilon=eps, lipschitz=1.0, initial_gap=1.0),
        rel=1e-12,
    )
    spent = plan.spent_epsilon()
    assert 0.98 * eps <= spent <= eps, spent
    if eps == 1.0:  # power: the previous (RDP) calibration leaves more than 2 %
        loose = cls(calibration="rdp").plan(prob.spec, dpsample.Budget(eps, DELTA))
        assert loose.spent_epsilon() < 0.98 * eps


# ------------------------------------------------------------ practical sizing
def test_coupled_difference_is_bounded_for_every_draw():
    """Practical zero order: a difference sample's two estimates share their
    directions, so ``||a - b|| <= d L ||z - z'|| / alpha`` for every draw (each
    clipped two-point difference moves by at most ``2 L ||z - z'||``), with and
    without the Mode B clip; independent directions are not bounded so."""
    from dpsample.finders.goldstein.o2nc import zo_estimate

    d, big_l, alpha, m = 5, 1.0, 0.05, 16
    rng = np.random.default_rng(0)
    w = jnp.asarray(rng.standard_normal((d,)))
    w = w / jnp.linalg.norm(w)

    def loss(x, ex):  # L = 1: |<w, x - z>| + a kink
        return 0.5 * jnp.abs(w @ (x - ex)) + 0.5 * jnp.abs(jnp.linalg.norm(x) - 1.0)

    worst_coupled, worst_independent = 0.0, 0.0
    for i in range(50):
        z = jnp.asarray(rng.standard_normal(d))
        zp = z + 1e-3 * jnp.asarray(rng.standard_normal(d))
        ex = jnp.asarray(rng.standard_normal(d))
        k1, k2 = jax.random.split(jax.random.key(i))
        bound = d * big_l * float(jnp.linalg.norm(z - zp)) / alpha
        for lip in (None, big_l):
            a = zo_estimate(loss, z, ex, k1, m, alpha=alpha, lipschitz=lip)
            b = zo_estimate(loss, zp, ex, k1, m, alpha=alpha, lipschitz=lip)
            c = zo_estimate(loss, zp, ex, k2, m, alpha=alpha, lipschitz=lip)
            worst_coupled = max(worst_coupled, float(jnp.linalg.norm(a - b)) / bound)
            worst_independent = max(
                worst_independent, float(jnp.linalg.norm(a - c)) / bound
            )
    assert worst_coupled <= 1.0 + 1e-9
    assert worst_independent > 10.0  # the bound is the coupling's, not the loss's


def test_practical_sizing_is_the_default_and_hundreds_of_times_cheaper():
    """Default: Mode B, coupled zero-order differences, m = ceil(2 (d+1)^2
    log(2/gamma)); its difference bound is at most 2 D sqrt(d) lip_d. The theory
    sizing keeps the theorem's m and is enforced (Mode B) by default too; Mode A is
    the explicit opt-in enforce_sensitivity=False."""
    kw = dict(
        n=1000, dim=2, epsilon=1.0, delta=DELTA, lipschitz=1.0, initial_gap=2.0,
        alpha=0.45,
    )  # fmt: skip
    p = goldstein_theorem_parameters(**kw)
    t = goldstein_theorem_parameters(**kw, sizing="theory", enforce_sensitivity=False)
    assert p["sizing"] == "practical" and p["enforce_sensitivity"]
    assert p["coupled_directions"] and not t["coupled_directions"]
    assert not t["enforce_sensitivity"] and t["tv_slack"] > 0
    t_b = goldstein_theorem_parameters(**kw, sizing="theory")
    assert t_b["enforce_sensitivity"] and t_b["tv_slack"] == 0
    log_g = math.log(2 / p["failure_prob"])
    assert p["num_directions"] == math.ceil(2 * 3**2 * log_g)
    lip_d = math.sqrt(2) / 0.45
    assert p["difference_bound_max"] <= 2 * p["clip_radius"] * math.sqrt(2) * lip_d
    work = p["loss_evaluations"]
    assert 100 * work < t["loss_evaluations"]
    f = goldstein_theorem_parameters(**kw, estimator="first_order")
    assert f["enforce_sensitivity"] and not f["coupled_directions"]
