"""Privacy calculators of the Gibbs target: LSI constants, bounds, calibration."""

import importlib
import math

import jax.numpy as jnp
import numpy as np
import pytest
from audit_cases import CASES, LANGEVIN, LANGEVIN_D, langevin_claim, langevin_loss

from dpsample.domains import Ball
from dpsample.errors import MissingConstantError
from dpsample.privacy import PrivacyGuarantee, lsi
from dpsample.problem import Problem
from dpsample.samplers import langevin
from dpsample.samplers.target import GibbsTarget

# ``dpsample.samplers.gibbs`` as an attribute is the top-level function;
# the tests need the module.
G = importlib.import_module("dpsample.samplers.gibbs")


def _abs_loss(x, z):
    return jnp.abs(x[0] - z)


def _problem(n=100, radius=1.0, **consts):
    consts.setdefault("lipschitz", 1.0)
    return Problem(_abs_loss, jnp.zeros(n), Ball(radius, dim=1), **consts)


# ----------------------------------------------------------------- LSI constants
def test_bakry_emery_and_holley_stroock_hand_values():
    assert lsi.bakry_emery(4.0) == 0.25
    assert lsi.holley_stroock(0.5, 2.0) == pytest.approx(0.5 * math.e**2, rel=1e-15)
    assert lsi.holley_stroock(1.0, 1e4) == math.inf
    with pytest.raises(ValueError):
        lsi.bakry_emery(0.0)
    with pytest.raises(ValueError):
        lsi.holley_stroock(1.0, -1.0)


@pytest.mark.parametrize("alpha, lip", [(1.0, 1.0), (2.0, 0.3), (0.5, 3.0)])
def test_lipschitz_perturbation_is_the_infimum(alpha, lip):
    u = np.linspace(1e-6, alpha - 1e-6, 200_001)
    brute = np.exp(np.min(-np.log(u) + lip**2 / (2 * (alpha - u))))
    value = lsi.lipschitz_perturbation(alpha, lip)
    assert value == pytest.approx(brute, rel=1e-6)
    assert value <= 2.0 / alpha * math.exp(lip**2 / alpha) * (1 + 1e-12)  # u=a/2
    assert value >= 1.0 / alpha


def test_lipschitz_perturbation_limits():
    assert lsi.lipschitz_perturbation(2.0, 0.0) == 0.5
    assert lsi.lipschitz_perturbation(1.0, 1.0) == pytest.approx(2 * math.e)
    assert lsi.lipschitz_perturbation(1e-3, 10.0) == math.inf


@pytest.mark.slow
def test_gibbs_lsi_constants_hand_values():
    p = _problem(radius=1.0, loss_range=1.5)  # osc F_D <= min(G D, B) = 1.5
    c = lsi.gibbs_lsi_constants(p, beta=2.0, mu=0.25)
    assert c.bakry_emery is None
    assert c.holley_stroock == pytest.approx(math.exp(2.0 * 1.5) / 0.5)
    assert c.lipschitz_perturbation == pytest.approx(
        lsi.lipschitz_perturbation(0.5, 2.0)
    )
    conv = lsi.gibbs_lsi_constants(p, beta=2.0, mu=0.25, convex=True)
    assert conv.bakry_emery == 2.0
    assert conv.best() == ("bakry_emery", 2.0)
    assert lsi.gibbs_lsi_constants(p, beta=2.0, mu=0.0).best() is None


def test_nonconvex_lsi_constants_are_exponential_in_beta():
    """Honesty check (E23): with mu = d/(D^2 beta), HS = e^{beta G D} D^2 / d."""
    p = _problem(radius=1.0)
    for beta in (1.0, 5.0, 20.0):
        c = lsi.gibbs_lsi_constants(p, beta=beta, mu=G.default_mu(p, beta))
        assert c.holley_stroock == pytest.approx(math.exp(2.0 * beta) * 4.0)


# ---------------------------------------------------------------- LSI privacy
def test_lsi_zcdp_and_minami_hand_values():
    assert lsi.lsi_zcdp(2.0, log_density_lipschitz=0.1).zcdp_rho() == pytest.approx(
        0.01
    )
    assert lsi.lsi_zcdp(math.inf, log_density_lipschitz=0.1) is None
    assert lsi.lsi_zcdp(1e30, log_density_lipschitz=1.0) is None  # vacuous
    dlt = 1e-6
    eps = lsi.minami_epsilon(3.0, lipschitz=2.0, beta=5.0, n=200, delta=dlt)
    assert eps == pytest.approx(
        2 * 2.0 * 5.0 / 200 * math.sqrt(3.0) * math.sqrt(1 + 2 * math.log(1 / dlt))
    )


def test_minami_is_implied_exactly_where_the_tail_bound_covers_it():
    dlt = 1e-6
    big_l = math.log(1 / dlt)
    a_max = 2 * (math.sqrt(1 + 2 * big_l) - math.sqrt(2 * big_l))
    # a = 2 beta G sqrt(C) / n with G = 1, C = 1, n = 100: beta = a n / 2.
    for factor, expected in ((0.99, True), (1.01, False)):
        beta = factor * a_max * 100 / 2
        assert (
            lsi.minami_is_implied(1.0, lipschitz=1.0, beta=beta, n=100, delta=dlt)
            is expected
        )
        a = a_max * factor
        tail = a**2 / 2 + a * math.sqrt(2 * big_l)
        printed = lsi.minami_epsilon(1.0, lipschitz=1.0, beta=beta, n=100, delta=dlt)
        assert (printed >= tail) is expected


# ------------------------------------------------------------ target bounds
def test_oscillation_bound_hand_value_and_range_constant():
    p = _problem(n=50, radius=2.0)  # 2 G D = 8
    t = GibbsTarget.create(p, beta=3.0, mu=0.0)
    assert G.oscillation_bound(t).epsilon(0.0) == pytest.approx(3.0 * 8.0 / 50)
    q = _problem(n=50, radius=2.0, loss_range=1.0)  # 2 B = 2 < 8
    tq = GibbsTarget.create(q, beta=3.0, mu=0.0)
    assert G.oscillation_bound(tq).epsilon(0.0) == pytest.approx(3.0 * 2.0 / 50)
    # Bounded range: zCDP eps^2 / 8.
    assert G.oscillation_bound(tq).zcdp_rho() == pytest.approx((6.0 / 50) ** 2 / 8)


def test_gll_bound_matches_bakry_emery_lsi_rho():
    p = _problem(n=100)
    t = GibbsTarget.create(p, beta=100.0, mu=4.0)
    s = 2.0 / 100 * math.sqrt(100.0 / 4.0)
    assert G.gll_gaussian_dp(t).zcdp_rho() == pytest.approx(s**2 / 2)
    report = G.target_privacy(t, convex=True)
    assert report.bounds["lsi_zcdp"].zcdp_rho() == pytest.approx(s**2 / 2)
    # The Gaussian curve is at least as tight as the zCDP conversion.
    assert (
        report.bounds["gll_gdp"].epsilon(1e-6)
        <= report.bounds["lsi_zcdp"].epsilon(1e-6) + 1e-9
    )


def test_report_nonconvex_has_no_gll_and_pure_wins_at_large_beta():
    p = _problem(n=1000)
    t = GibbsTarget.create(p, beta=20.0, mu=G.default_mu(p, 20.0))
    r = G.target_privacy(t)
    assert "gll_gdp" not in r.bounds
    assert "gll_gdp" in r.notes
    name, guarantee = r.tightest(1e-6)
    assert name == "pure"
    assert guarantee.epsilon(0.0) == pytest.approx(20.0 * 4.0 / 1000)
    assert r.epsilon(1e-6) == min(r.epsilons(1e-6).values())
    assert "tightest: pure" in r.explain(1e-6)


def test_report_convex_small_beta_prefers_gll_in_high_dimension():
    d = 50
    data = {"x": jnp.zeros((100, d)), "y": jnp.zeros(100)}

    def loss(x, z):
        return jnp.sqrt(1e-6 + jnp.sum((x - z["x"]) ** 2))

    p = Problem(loss, data, Ball(1.0, dim=d), lipschitz=1.0)
    beta = 20.0
    t = GibbsTarget.create(p, beta=beta, mu=G.default_mu(p, beta))
    r = G.target_privacy(t, convex=True)
    name, _ = r.tightest(1e-6)
    assert name == "gll_gdp"
    assert r.epsilon(1e-6) < r.bounds["pure"].epsilon(0.0)


def test_report_needs_some_constant():
    p = Problem(_abs_loss, jnp.zeros(5), Ball(1.0, dim=1))
    with pytest.raises(MissingConstantError):
        G.target_privacy(GibbsTarget.create(p, beta=1.0, mu=1.0))


def test_langevin_trajectory_rdp_hand_value():
    p = _problem(n=200)
    t = GibbsTarget.create(p, beta=7.0, mu=0.1)
    g = langevin.trajectory_guarantee(t, step_size=0.01, num_steps=300)
    assert g.zcdp_rho() == pytest.approx(300 * 0.01 * 49.0 / 200**2)
    # Equivalent to composing the per-step Gaussian mechanisms.
    step = langevin.trajectory_guarantee(t, step_size=0.01, num_steps=1).repeat(300)
    assert g.epsilon(1e-5) == pytest.approx(step.epsilon(1e-5), rel=2e-2)
    with pytest.raises(MissingConstantError):
        p2 = Problem(_abs_loss, jnp.zeros(5), Ball(1.0, dim=1), loss_range=1.0)
        langevin.trajectory_guarantee(
            GibbsTarget.create(p2, beta=1.0, mu=0.0), step_size=0.1, num_steps=2
        )


# ------------------------------------------------------------- calibration
def test_calibrate_tightest_is_largest_valid_beta():
    p = _problem(n=1000)
    cal = G.calibrate_gibbs(p, epsilon=1.0, delta=1e-6, c_gen=None)
    assert cal.epsilon <= 1.0
    assert cal.binding == "privacy"
    assert cal.mu == pytest.approx(1.0 / (4.0 * cal.beta))
    bigger = G.target_privacy(
        GibbsTarget.create(
            p, beta=cal.beta * 1.001, mu=G.default_mu(p, cal.beta * 1.001)
        )
    )
    assert bigger.epsilon(1e-6) > 1.0


def test_calibrate_presets_and_cap():
    p = _problem(n=1000)
    budget = G.calibrate_gibbs(p, epsilon=0.5, delta=1e-6, preset="budget", c_gen=None)
    assert budget.beta == pytest.approx(0.5 * 1000 / 4.0, rel=1e-6)
    paper = G.calibrate_gibbs(p, epsilon=0.5, delta=1e-6, preset="paper", c_gen=None)
    assert paper.report.minami_epsilon(1e-6) == pytest.approx(0.5, rel=1e-5)
    assert paper.epsilon <= 0.5
    assert paper.beta < budget.beta  # the printed LSI bound is e^{beta G D} worse
    capped = G.calibrate_gibbs(p, epsilon=0.5, delta=1e-6)
    assert capped.binding == "cap"
    assert capped.beta == pytest.approx(0.5 * math.log(1000) / 2.0)
    t56 = G.theorem_5_6(p, epsilon=0.5, delta=1e-6)
    assert t56.preset == "paper" and t56.epsilon <= 0.5


@pytest.mark.parametrize(
    "kwargs, err",
    [
        ({"epsilon": 0.0, "delta": 1e-6}, ValueError),
        ({"epsilon": -1.0, "delta": 1e-6}, ValueError),
        ({"epsilon": float("nan"), "delta": 1e-6}, ValueError),
        ({"epsilon": 1.0, "delta": 0.0}, ValueError),
        ({"epsilon": 1.0, "delta": 1.0}, ValueError),
        ({"epsilon": 1.0, "delta": 1e-6, "preset": "fast"}, ValueError),
        ({"epsilon": 1.0, "delta": 1e-6, "c_gen": 0.0}, ValueError),
    ],
)
def test_calibrate_rejects_bad_input(kwargs, err):
    with pytest.raises(err):
        G.calibrate_gibbs(_problem(), **kwargs)


def test_target_rejects_bad_beta_mu():
    p = _problem()
    for beta, mu in ((0.0, 1.0), (-1.0, 1.0), (1.0, -0.1), (float("nan"), 1.0)):
        with pytest.raises(ValueError):
            GibbsTarget.create(p, beta=beta, mu=mu)


def test_gaussian_noise_to_sensitivity_is_tight():
    s = G.gaussian_noise_to_sensitivity(epsilon=1.0, delta=1e-5)
    assert PrivacyGuarantee.gaussian(s).epsilon(1e-5) <= 1.0
    assert PrivacyGuarantee.gaussian(s * 0.99).epsilon(1e-5) > 1.0


# ------------------------------------------------------------------ audit
@pytest.mark.slow
def test_audit_langevin_release_stays_below_claim_and_detects_false_claim():
    """Worst case (tests/audit_cases.py, ``langevin``): the drift gap 2 beta G h / n
    is the same at every x, so the last iterate is exactly the composed Gaussian
    mechanism (noise over sensitivity 1 here). The audit lower bound must stay below
    the computed claim (4.38 at 1e-5) and exceed the claim computed with a false G/2
    (1.99)."""
    b, h, k = LANGEVIN["beta"], LANGEVIN["step"], LANGEVIN["steps"]
    p = Problem(langevin_loss, LANGEVIN_D, Ball(50.0, dim=1), lipschitz=1.0)
    t = GibbsTarget.create(p, beta=b, mu=0.0)
    z = langevin.trajectory_noise_to_sensitivity(t, step_size=h, num_steps=k)
    assert z == pytest.approx(1.0)  # z = n / (beta G sqrt(2 h K))
    audit = CASES["langevin"].build()
    assert audit.claim == langevin_claim().epsilon(1e-5)
    res = audit.run()
    assert res.epsilon_lower_bound < audit.claim
    assert res.epsilon_lower_bound > langevin_claim(lipschitz=0.5).epsilon(1e-5)


@pytest.mark.slow
def test_audit_langevin_flags_half_noise_twin():
    """The twin doubles beta (twice the drift gap for the same noise: half the noise
    relative to the sensitivity) and keeps the claim; 200k runs per dataset."""
    audit = CASES["langevin"].build()
    assert audit.run(twin=True).epsilon_lower_bound > audit.claim
