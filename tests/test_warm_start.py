"""Tests of the warm-start ERM pipeline (seed 003 Algorithm 2) and its dispatcher."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import special, stats

import dpsample
from dpsample import Budget
from dpsample.errors import BudgetExceededError, MissingConstantError
from dpsample.finders import dp_spider
from dpsample.finders.dp_spider import spider_theorem_parameters
from dpsample.nets import grid_net
from dpsample.pipelines import (
    WarmStart,
    net_warm_start_bound,
    should_warm_start,
    theorem_3_2_stationarity_bound,
    warm_start,
)
from dpsample.privacy import BudgetLedger, PrivacyGuarantee

EPS, DELTA = 2.0, 1e-5
SMALL = {"num_steps": 12, "phase_length": 4, "variation_batch_size": 40}


class _Counter:
    """A loss that counts how often it is traced or called (private computation)."""

    def __init__(self):
        self.calls = 0

    def __call__(self, x, z):
        self.calls += 1
        return 0.5 * jnp.sum((x - z["z"]) ** 2)


def _quadratic(n=200, *, loss=None, dim=1, **constants):
    z = jnp.linspace(0.1, 0.5, n)[:, None] * jnp.ones((1, dim))
    kw = {"lipschitz": 2.0, "smoothness": 1.0, "loss_range": 2.0}
    kw.update(constants)
    return dpsample.Problem(
        loss or (lambda x, e: 0.5 * jnp.sum((x - e["z"]) ** 2)),
        {"z": z},
        dpsample.Ball(1.0, dim=dim),
        **kw,
    )


@pytest.fixture(scope="module")
def small_run():
    prob = _quadratic()
    res = warm_start(  # Algorithm 2's fixed split (the default reallocates)
        jax.random.key(0),
        prob,
        epsilon=EPS,
        delta=DELTA,
        sampler="net",
        finder="dp_spider",
        finder_options=SMALL,
        spend="split",
    )
    return prob, res


# ---- privacy accounting --------------------------------------------------------


@pytest.mark.slow
def test_total_equals_hand_composition(small_run):
    prob, res = small_run
    # Build the two stage guarantees independently of the pipeline.
    g_a = PrivacyGuarantee.exponential_mechanism(EPS / 2)
    g_b = dp_spider(
        jax.random.key(7),
        prob,
        epsilon=EPS / 2,
        delta=DELTA,
        x0=jnp.zeros(1),
        initial_gap=res.info["psi"],
        **SMALL,
    ).privacy
    hand = g_a.compose(g_b)
    for dlt in (1e-7, 1e-5, 1e-3):
        assert res.privacy.epsilon(dlt) == pytest.approx(hand.epsilon(dlt), rel=1e-9)
    # Basic composition (the paper's accounting) bounds it, and the budget holds.
    assert res.privacy.epsilon(DELTA) <= EPS / 2 + g_b.epsilon(DELTA) + 1e-9
    assert res.privacy.epsilon(DELTA) <= EPS
    assert res.info["epsilon_total"] == pytest.approx(res.privacy.epsilon(DELTA))
    assert res.info["privacy_sampler"].epsilon(0.0) == pytest.approx(EPS / 2)
    assert res.info["privacy_finder"].epsilon(DELTA) <= EPS / 2
    assert res.info["epsilon_split"] == (EPS / 2, EPS / 2)
    assert res.info["delta_split"] == (0.0, DELTA)


@pytest.mark.slow
def test_split_moves_the_budget():
    prob = _quadratic()
    res = warm_start(
        jax.random.key(1),
        prob,
        epsilon=EPS,
        delta=DELTA,
        split=0.25,
        sampler="net",
        finder="dp_spider",
        finder_options=SMALL,
        spend="split",
    )
    assert res.info["epsilon_split"] == (0.5, 1.5)
    assert res.info["privacy_sampler"].epsilon(0.0) == pytest.approx(0.5)
    assert res.privacy.epsilon(DELTA) <= EPS


@pytest.mark.slow
def test_finder_configured_from_public_psi_only(small_run):
    prob, res = small_run
    info = res.info
    assert info["finder_info"]["parameter_sources"]["initial_gap"] == "user"
    # Default schedule: Thm B.3 parameters at F0 = psi (never the realised gap).
    other = _quadratic(loss=None)
    other_data = dpsample.Problem(
        other.loss_fn,
        {"z": -other.data["z"]},  # different data, same public constants
        other.domain,
        lipschitz=2.0,
        smoothness=1.0,
        loss_range=2.0,
    )
    stages = {"sampler": "net", "finder": "dp_spider"}  # Algorithm 2's pair
    r1 = warm_start(jax.random.key(2), prob, epsilon=EPS, delta=DELTA, **stages)
    r2 = warm_start(jax.random.key(2), other_data, epsilon=EPS, delta=DELTA, **stages)
    assert r1.info["psi"] == r2.info["psi"]
    expected = spider_theorem_parameters(
        n=prob.n,
        dim=1,
        # the finder's share: EPS / 2 plus what the default spend="all" reallocates,
        # which depends on the finder's schedule (so on psi: 0 extra at the old
        # psi 0.23 of the unenforced 2B route, 0.015 at 0.44 on the enforced 2GD)
        epsilon=r1.info["epsilon_split"][1],
        delta=DELTA,
        lipschitz=2.0,
        smoothness=1.0,
        initial_gap=r1.info["psi"],
    )
    assert r1.info["finder_info"]["theorem_parameters"] == expected
    for key in ("num_steps", "phase_length", "noise_constant"):
        assert r1.info["finder_info"][key] == r2.info["finder_info"][key]


def test_info_contents(small_run):
    prob, res = small_run
    info = res.info
    assert prob.domain.contains(info["warm_start"])
    assert prob.domain.contains(res.value)
    assert info["psi"] == pytest.approx(info["psi_terms"].psi)
    assert info["psi_failure_prob"] == pytest.approx(1.0 / (EPS * prob.n))
    assert info["stationarity_bound"] > 0 and info["cold_start_bound"] > 0
    assert info["dispatcher"][0] in (True, False)
    assert len(info["ledger_stages"]) == 2
    assert "non_private_diagnostics" not in info


@pytest.mark.slow
def test_diagnostics_are_labelled():
    prob = _quadratic()
    res = warm_start(
        jax.random.key(3),
        prob,
        epsilon=EPS,
        delta=DELTA,
        sampler="net",
        finder="dp_spider",
        finder_options=SMALL,
        diagnostics=True,
    )
    diag = res.info["non_private_diagnostics"]
    assert diag["label"].startswith("NOT PRIVATE")
    assert diag["gap_over_net_minimum"] >= 0.0


@pytest.mark.slow
def test_dp_sgd_finder():
    prob = _quadratic()
    res = warm_start(
        jax.random.key(4),
        prob,
        epsilon=EPS,
        delta=DELTA,
        finder="dp_sgd",
        finder_options={"num_steps": 10, "batch_size": 20},
    )
    assert res.info["finder_info"]["algorithm"] == "dp_sgd"
    assert res.privacy.epsilon(DELTA) <= EPS
    assert res.info["stationarity_bound"] is None


# ---- budget refusal and bad input: raised before any private computation -------


def test_budget_refusal_before_private_computation():
    counter = _Counter()
    prob = _quadratic(loss=counter)
    counter.calls = 0  # the Problem constructor probes the loss on public shapes
    ledger = BudgetLedger(epsilon=EPS, delta=DELTA)
    ledger.charge("earlier analysis", PrivacyGuarantee.pure(0.5))
    with pytest.raises(BudgetExceededError):
        warm_start(
            jax.random.key(0),
            prob,
            epsilon=EPS,
            delta=DELTA,
            ledger=ledger,
            sampler="net",
            finder="dp_spider",
            finder_options=SMALL,
        )
    assert counter.calls == 0
    assert [name for name, _ in ledger.stages] == ["earlier analysis"]
    # A ledger that can afford it is charged with both stages.
    roomy = BudgetLedger(epsilon=2 * EPS, delta=2 * DELTA)
    warm_start(
        jax.random.key(0),
        prob,
        epsilon=EPS,
        delta=DELTA,
        ledger=roomy,
        sampler="net",
        finder="dp_spider",
        finder_options=SMALL,
    )
    assert len(roomy.stages) == 2 and counter.calls > 0


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"epsilon": 0.0}, ValueError),
        ({"epsilon": -1.0}, ValueError),
        ({"epsilon": float("nan")}, ValueError),
        ({"delta": 0.0}, ValueError),
        ({"delta": 1.0}, ValueError),
        ({"split": 0.0}, ValueError),
        ({"split": 1.0}, ValueError),
        ({"sampler": "mcmc"}, ValueError),
        ({"variant": "online"}, ValueError),
        ({"sampler_options": {"beta": 1.0}}, ValueError),
        ({"delta_split": 0.5}, ValueError),
        ({"finder": "newton"}, ValueError),
        ({"failure_prob": 0.0}, ValueError),
        ({"failure_prob": 1.0}, ValueError),
        ({"minimizer_gap": -1.0}, ValueError),
        ({"spacing": 0.1, "net": "x"}, ValueError),
        ({"spacing": -0.1}, ValueError),
        ({"max_points": 3}, ValueError),
        ({"finder_options": {"epsilon": 1.0}}, ValueError),
        ({"finder_options": {"initial_gap": 1.0}}, ValueError),
        ({"finder_options": {"no_such_option": 1}}, ValueError),
        ({"finder_options": {"num_steps": 0}}, ValueError),
        ({"finder_options": {"variation_batch_size": 10**6}}, ValueError),
        ({"finder_options": {"output": "best"}}, ValueError),
        ({"ledger": "ledger"}, TypeError),
    ],
)
def test_bad_input_raises_before_private_computation(kwargs, error):
    counter = _Counter()
    prob = _quadratic(loss=counter)
    counter.calls = 0  # the Problem constructor probes the loss on public shapes
    args = {"epsilon": EPS, "delta": DELTA, **kwargs}
    with pytest.raises(error):
        warm_start(jax.random.key(0), prob, **args)
    assert counter.calls == 0


def test_bad_problem_and_key():
    counter = _Counter()
    prob = _quadratic(loss=counter)
    free = dpsample.Problem(
        counter, prob.data, dpsample.Unconstrained(1), lipschitz=2.0, smoothness=1.0
    )
    no_lip = dpsample.Problem(
        counter, prob.data, dpsample.Ball(1.0, dim=1), smoothness=1.0, loss_range=2.0
    )
    no_smooth = dpsample.Problem(
        counter, prob.data, dpsample.Ball(1.0, dim=1), lipschitz=2.0
    )
    tiny = _quadratic(n=3, loss=counter, dim=2)
    counter.calls = 0  # the Problem constructor probes the loss on public shapes
    with pytest.raises(TypeError):
        warm_start(0, prob, epsilon=EPS, delta=DELTA)
    with pytest.raises(TypeError):
        warm_start(jax.random.key(0), "problem", epsilon=EPS, delta=DELTA)
    # an explicit sampler needs a compact K and G
    with pytest.raises(ValueError, match="Ball"):
        warm_start(jax.random.key(0), free, epsilon=EPS, delta=DELTA, sampler="net")
    with pytest.raises(MissingConstantError):
        warm_start(jax.random.key(0), no_lip, epsilon=EPS, delta=DELTA, sampler="net")
    # without a smoothness the default finder runs the projected subgradient method
    plan = WarmStart().plan(no_smooth.spec, Budget(EPS, DELTA))
    assert "subgradient" in plan.stage("finder").params["learning_rate"].note
    # the default rule starts this one cold, and DP-SGD then needs an initial gap
    # (no loss_range), before any private computation
    with pytest.raises(ValueError, match="initial-gap"):
        warm_start(jax.random.key(0), free, epsilon=EPS, delta=DELTA)
    # eps_A n <= d: the default rule starts cold; an explicit net refuses
    plan = WarmStart().plan(tiny.spec, Budget(1.0, DELTA))
    assert plan["sampler"] == "none" and plan["default_rule"] == "cold: eps n <= d"
    with pytest.raises(ValueError, match="eps n"):
        warm_start(jax.random.key(0), tiny, epsilon=1.0, delta=DELTA, sampler="net")
    # A GridNet of a smaller ball does not cover K.
    with pytest.raises(ValueError, match="cover"):
        warm_start(
            jax.random.key(0),
            prob,
            epsilon=EPS,
            delta=DELTA,
            net=grid_net(dpsample.Ball(0.5, dim=1), spacing=0.1),
        )
    assert counter.calls == 0


# ---- psi: exact check of the high-probability bound, with a power check ------


def _exact_failure(prob, net, k, psi, min_k):
    """Exact Pr[F_D(x0) - min_K F_D > psi] under the mechanism's softmax."""
    pts = net.points()
    risks = np.asarray(prob.empirical_risk_batch(pts))
    logp = -k * risks - special.logsumexp(-k * risks)
    return (
        float(np.exp(logp[risks - min_k > psi]).sum())
        if np.any(risks - min_k > psi)
        else 0.0
    )


@pytest.mark.parametrize("epsilon_a", [0.5, 2.0])
def test_psi_holds_exactly_and_a_wrong_psi_fails(epsilon_a):
    # Linear loss f(x; z) = -z x on K = [-1, 1], |z| <= 1: G = 1, min_K F = -|zbar|.
    z = jnp.asarray(np.linspace(-0.2, 1.0, 400))[:, None]
    prob = dpsample.Problem(
        lambda x, e: -jnp.sum(e["z"] * x),
        {"z": z},
        dpsample.Ball(1.0, dim=1),
        lipschitz=1.0,
    )
    n = prob.n
    min_k = -abs(float(z.mean()))
    net = grid_net(prob.domain, spacing=2.0 * 1.0 * 2.0 / (epsilon_a * n))
    k = epsilon_a * n / prob.utility_oscillation()
    zeta = 1e-3
    bound = net_warm_start_bound(
        lipschitz=1.0,
        covering_radius=net.covering_radius,
        log_net_size=math.log(net.size()),
        inverse_temperature=k,
        failure_prob=zeta,
    )
    assert _exact_failure(prob, net, k, bound.psi, min_k) <= zeta
    # Power: the paper's misprinted tail ln(N + t)/k (B5) at a 10x too large
    # temperature is not a valid bound.
    wrong = math.log(net.size() + math.log(1 / zeta)) / (10 * k)
    assert _exact_failure(prob, net, k, wrong, min_k) > zeta


def test_psi_bound_validation():
    ok = {
        "lipschitz": 1.0,
        "covering_radius": 0.1,
        "log_net_size": 1.0,
        "inverse_temperature": 1.0,
        "failure_prob": 0.1,
    }
    assert net_warm_start_bound(**ok).psi == pytest.approx(0.1 + (1 + math.log(10)))
    for key, bad in [
        ("lipschitz", 0.0),
        ("failure_prob", 0.0),
        ("failure_prob", 1.0),
        ("inverse_temperature", -1.0),
        ("log_net_size", -1.0),
    ]:
        with pytest.raises(ValueError):
            net_warm_start_bound(**{**ok, key: bad})


def test_stationarity_bound_monotone_in_gap():
    kw = {
        "lipschitz": 1.0,
        "smoothness": 1.0,
        "dim": 2,
        "n": 1000,
        "epsilon": 1.0,
        "delta": 1e-5,
    }
    small = theorem_3_2_stationarity_bound(initial_gap=0.01, **kw)
    large = theorem_3_2_stationarity_bound(initial_gap=1.0, **kw)
    assert small < large
    assert theorem_3_2_stationarity_bound(
        initial_gap=0.0, failure_prob=1.0, **kw
    ) == pytest.approx(1.0)


# ---- dispatcher -------------------------------------------------------------


def test_dispatcher_rules():
    ok, reason = should_warm_start(n=1000, dim=2, epsilon=1.0)
    assert ok and "coarse rule only" in reason
    ok, reason = should_warm_start(n=100, dim=100, epsilon=1.0)
    assert not ok and "cannot help" in reason
    public = {
        "n": 10_000,
        "dim": 2,
        "epsilon": 1.0,
        "delta": 1e-5,
        "lipschitz": 1.0,
        "smoothness": 1.0,
        "diameter": 2.0,
    }

    # Finer rule: Theorem 3.2's shapes at the default net's public psi, by hand.
    def by_hand(f0):
        n, d, eps, dlt, big_l, beta, diam = 10_000, 2, 1.0, 1e-5, 1.0, 1.0, 2.0
        r = diam * d / (0.5 * eps * n)
        k = 0.5 * eps * n / min(2 * big_l * diam, 2 * f0)
        zeta = math.sqrt(d) / (eps * n)
        psi = big_l * r + (d * math.log(1 + 2 * diam / r) + math.log(1 / zeta)) / k
        abar_b = math.sqrt(d * math.log(1 / dlt)) / (0.5 * eps * n)
        abar = math.sqrt(d * math.log(1 / dlt)) / (eps * n)
        warm = (1 - zeta) * (
            big_l * abar_b + (big_l * beta * psi) ** (1 / 3) * abar_b ** (2 / 3)
        ) + big_l * zeta
        cold = big_l * abar + (big_l * beta * f0) ** (1 / 3) * abar ** (2 / 3)
        return warm < cold

    for f0 in (2.0, 0.1, 0.01, 1e-3):
        ok, reason = should_warm_start(default_gap=f0, **public)
        assert ok == by_hand(f0) and "finer rule" in reason
    assert should_warm_start(default_gap=2.0, **public)[0]
    assert not should_warm_start(default_gap=1e-3, **public)[0]
    # Breast cancer (sigmoid, radius 8): no gain at eps <= 1, a gain at eps >= 2,
    # as measured in docs/choosing_a_pipeline.md.
    bc = {"n": 569, "dim": 2, "delta": 1e-6, "lipschitz": 0.25,
          "smoothness": 0.0962, "diameter": 16.0, "default_gap": 1.0}  # fmt: skip
    assert [should_warm_start(epsilon=e, **bc)[0] for e in (0.5, 1, 2, 4)] == [
        False,
        False,
        True,
        True,
    ]
    with pytest.raises(ValueError):
        should_warm_start(n=0, dim=2, epsilon=1.0)
    with pytest.raises(ValueError):
        should_warm_start(default_gap=-1.0, **public)


# ---- utility: warm start beats the cold start where the gap matters ---------


def _huber_problem(n=1000, dim=2, beta=20.0):
    """Huber distance to data clustered near c = (0.7, 0): minimiser the mean."""
    h = 1.0 / beta

    def loss(w, z):
        r = jnp.sqrt(jnp.sum((w - z["x"]) ** 2) + 1e-30)
        return jnp.where(r <= h, 0.5 * beta * r**2, r - 0.5 * h)

    c = np.zeros(dim)
    c[0] = 0.7
    u = jax.random.uniform(jax.random.key(5), (n, dim), minval=-1.0, maxval=1.0)
    x = jnp.asarray(c) + 0.01 * u
    return dpsample.Problem(
        loss,
        {"x": x},
        dpsample.Ball(1.0, dim=dim),
        lipschitz=1.0,
        smoothness=beta,
        loss_range=2.0,
    )


@pytest.mark.slow
def test_warm_start_is_no_worse_than_the_cold_start_at_the_same_budget():
    """Both runs spend (within 2%) the same budget; the warm start is not worse.

    This test used to assert that the warm start is *better* (one-sided
    Mann-Whitney p < 0.01 over 10 keys). That held only because the cold
    DP-SPIDER run spent 0.60 of its epsilon = 1 (coarse calibration) and stalled at
    ||grad F|| ~ 1; since calibration spends the budget (issue 16) the cold start
    reaches a mean of 0.35 against the warm start's 0.24, p = 0.21 at 10 keys
    (``docs/warm_start.md``, "Warm against cold at the same budget"). What the
    measurements support, and this asserts: the warm start is not stochastically
    *worse* (the opposite one-sided test does not reject at 0.01), and both runs
    spend their budget.
    """
    prob = _huber_problem()
    # Known minimiser: the data lie within h/4 of each other, so argmin = mean.
    xbar = prob.data["x"].mean(axis=0)
    assert float(jnp.linalg.norm(prob.gradient(xbar))) < 1e-6
    warm, cold = [], []
    for seed in range(10):
        rw = warm_start(
            jax.random.key(seed), prob, epsilon=1.0, delta=1e-5, sampler="net",
            finder="dp_spider",
        )  # fmt: skip
        rc = dp_spider(
            jax.random.key(1000 + seed),
            prob,
            epsilon=1.0,
            delta=1e-5,
            x0=jnp.zeros(2),
            initial_gap=prob.loss_range,
        )
        for spent in (rw.privacy.epsilon(1e-5), rc.privacy.epsilon(1e-5)):
            assert 0.98 <= spent <= 1.0
        warm.append(float(jnp.linalg.norm(prob.gradient(rw.value))))
        cold.append(float(jnp.linalg.norm(prob.gradient(rc.value))))
    worse = stats.mannwhitneyu(warm, cold, alternative="greater")
    assert worse.pvalue > 0.01, (warm, cold)
