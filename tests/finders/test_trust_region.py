"""DP-TR and DP-STR (seed 001): saddle escape, limits, accounting, noise law, inputs."""

from __future__ import annotations

import dataclasses
import functools
import math

import dp_accounting
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _saddles_b import cosine_case, sosp_measures
from audit_cases import CASES
from dp_accounting import pld as dp_pld
from dp_accounting import rdp as dp_rdp
from scipy import stats

import dpsample
from dpsample.errors import MissingConstantError
from dpsample.finders import trust_region as tr
from dpsample.finders.tr_subproblem import solve_tr_subproblem
from dpsample.finders.trust_region import (
    symmetric_noise,
    tr_theorem_parameters,
    zcdp_budget,
)
from dpsample.plan import Param
from dpsample.privacy import PrivacyGuarantee

DELTA = 1e-5

# This file tests the paper's algorithms: Theorem 15/18's schedule, stopping rule and
# output, i.e. preset "theorem" (the defaults before issue 24), so every run here
# takes it. The default preset ("practical") is tested in
# tests/finders/test_trust_region_presets.py.
dp_trust_region = functools.partial(tr.dp_trust_region, preset="theorem")
dp_stochastic_trust_region = functools.partial(
    tr.dp_stochastic_trust_region, preset="theorem"
)


def DPTrustRegion(**options):  # noqa: N802 (stands for the class)
    return tr.DPTrustRegion(preset="theorem", **options)


def DPStochasticTrustRegion(**options):  # noqa: N802 (stands for the class)
    return tr.DPStochasticTrustRegion(preset="theorem", **options)


@pytest.fixture(scope="module")
def case():
    return cosine_case(n=2000, dim=2, seed=1)


def sosp_message(problem, x, alpha, rho=1.0):
    g, lam = sosp_measures(problem, x)
    ok = g <= alpha and lam >= -math.sqrt(rho * alpha)
    return ok, f"x={np.asarray(x)}, ||grad F||={g:.3g}, lambda_min={lam:.3g}"


# ------------------------------------------------------------------------ helpers
@pytest.mark.parametrize("eps, delta", [(0.1, 1e-6), (1.0, 1e-5), (8.0, 1e-3)])
def test_zcdp_budget_converts_exactly(eps, delta):
    phi = zcdp_budget(eps, delta)
    assert math.isclose(
        phi + 2 * math.sqrt(phi * math.log(1 / delta)), eps, rel_tol=1e-12
    )
    assert math.isclose(
        PrivacyGuarantee.zcdp(phi).report(delta)["routes"]["zcdp"], eps, rel_tol=1e-9
    )


def test_tr_parameters_reproduce_spec_values():
    # Spec 001 §6.4: problem A (rho = 0.10089, Delta = ln 2) and B (0.125, 0.5).
    r, t, thr = tr_theorem_parameters(
        alpha=0.1, hessian_lipschitz=0.10089, initial_gap=math.log(2)
    )
    assert (round(r, 3), t, round(thr, 4)) == (0.996, 42, 0.1004)
    r, t, thr = tr_theorem_parameters(
        alpha=0.1, hessian_lipschitz=0.125, initial_gap=0.5
    )
    assert (round(r, 3), t, round(thr, 4)) == (0.894, 34, 0.1118)


def test_symmetric_noise_law_and_power():
    # Diagonal and off-diagonal entries are both N(0, s^2) (not GOE, not (A+A^T)/2).
    s, dim = 0.7, 5
    keys = jax.random.split(jax.random.key(42), 3000)
    mats = np.asarray(jax.vmap(lambda k: symmetric_noise(k, dim, s))(keys))
    assert np.all(mats == np.transpose(mats, (0, 2, 1)))
    iu = np.triu_indices(dim, 1)
    diag = mats[:, np.arange(dim), np.arange(dim)].ravel()
    off = mats[:, iu[0], iu[1]].ravel()
    for sample in (diag, off):
        assert stats.kstest(sample, stats.norm(scale=s).cdf).pvalue > 1e-3
        for wrong in (s / 1.5, s * 1.5):
            assert stats.kstest(sample, stats.norm(scale=wrong).cdf).pvalue < 1e-6
    # Off-diagonal pairs are copies, distinct upper entries independent.
    r = stats.pearsonr(mats[:, 0, 1], mats[:, 0, 2]).statistic
    assert abs(r) < 4 / math.sqrt(len(keys))


# --------------------------------------------------------------------- DP-TR runs
@pytest.mark.slow
def test_dp_tr_escapes_saddle_to_sosp(case):
    prob = case.problem
    res = dp_trust_region(
        jax.random.key(0),
        prob,
        epsilon=10.0,
        delta=DELTA,
        x0=case.saddle,
        alpha=0.1,
        initial_gap=2.0,
    )
    ok, msg = sosp_message(prob, res.value, 0.1)
    assert res.info["converged"], msg
    assert ok, msg
    # It left the saddle for a minimum (x_2 near ±pi), not just a flat region.
    assert abs(abs(float(res.value[1])) - math.pi) < 0.3, msg
    assert res.privacy.epsilon(DELTA) <= 10.0


def _nonprivate_tr(problem, x0, radius, threshold, num_iters):
    w = jnp.asarray(x0)
    for _ in range(num_iters):
        sol = solve_tr_subproblem(problem.gradient(w), problem.hessian(w), radius)
        w = w + sol.step
        if float(sol.multiplier) <= threshold:
            return w, True
    return w, False


def _noise_free_run(algorithm, key, problem, **options):
    """Run ``algorithm`` on its plan at the largest accepted epsilon with the noise set
    to zero: the noiseless path a huge epsilon used to reach (plans refuse epsilon
    above MAX_EPSILON since issue 25). Only ``sigma_grad``/``sigma_hess`` change; the
    schedule (radius, threshold, iterations: set by ``alpha``) is the plan's."""
    plan = algorithm.plan(problem.spec, dpsample.Budget(1e4, DELTA), **options)
    zero = {
        name: Param(0.0, "user", "noise-free test path")
        for name in ("sigma_grad", "sigma_hess")
    }
    assert all(plan[name] > 0 for name in zero)  # the plan had noise to remove
    plan = dataclasses.replace(plan, params={**plan.params, **zero})
    return algorithm.run(key, plan, problem)


@pytest.mark.slow  # 10 s in the fast suite
def test_dp_tr_without_noise_is_nonprivate_tr_and_reaches_minimum(case):
    prob = case.problem
    x0 = np.array([0.3, 0.2])
    res = _noise_free_run(
        DPTrustRegion(), jax.random.key(1), prob, x0=x0, alpha=0.01, initial_gap=2.0
    )
    ref, conv = _nonprivate_tr(
        prob, x0, res.info["radius"], res.info["stop_threshold"], res.info["num_iters"]
    )
    assert conv and res.info["converged"]
    np.testing.assert_allclose(res.value, ref, atol=1e-6)
    dist = min(np.linalg.norm(np.asarray(res.value) - m) for m in case.minima)
    g, lam = sosp_measures(prob, res.value)
    assert dist < 1e-2, f"distance to minimum {dist}, grad {g}, lambda_min {lam}"
    f = float(prob.empirical_risk(res.value))
    assert f - case.min_value < 1e-4


def test_dp_tr_is_deterministic_in_the_key(case):
    kw = dict(epsilon=1.0, delta=DELTA, x0=case.saddle, initial_gap=2.0, num_iters=5)
    a = dp_trust_region(jax.random.key(3), case.problem, **kw)
    b = dp_trust_region(jax.random.key(3), case.problem, **kw)
    c = dp_trust_region(jax.random.key(4), case.problem, **kw)
    np.testing.assert_array_equal(a.value, b.value)
    assert not np.allclose(a.value, c.value)


def test_dp_tr_nonconvergence_releases_last_iterate(case):
    res = dp_trust_region(
        jax.random.key(2),
        case.problem,
        epsilon=1.0,
        delta=DELTA,
        x0=case.saddle,
        num_iters=2,
        stop_threshold=0.0,
    )
    assert not res.info["converged"] and res.info["iterations_run"] == 2
    assert res.info["stopped_at"] is None


def _nonprivate_tr_path(problem, x0, radius, threshold, num_iters):
    w, path = jnp.asarray(x0), []
    for _ in range(num_iters):
        sol = solve_tr_subproblem(problem.gradient(w), problem.hessian(w), radius)
        w = w + sol.step
        path.append(np.asarray(w))
        if float(sol.multiplier) <= threshold:
            break
    return np.stack(path)


@pytest.mark.slow
@pytest.mark.parametrize("finder", ["tr", "str"])
def test_return_iterates_are_the_iterations_that_ran(case, finder):
    kw = dict(epsilon=1.0, delta=DELTA, x0=case.saddle, initial_gap=2.0, num_iters=6)
    if finder == "tr":
        run = dp_trust_region
    else:
        run = dp_stochastic_trust_region
        kw.update(grad_batch_size=500, hessian_batch_size=500, accounting="tight")
    plain = run(jax.random.key(5), case.problem, **kw)
    res = run(jax.random.key(5), case.problem, return_iterates=True, **kw)
    assert "iterates" not in plain.info
    xs = np.asarray(res.info["iterates"])
    assert xs.shape == (res.info["iterations_run"], 2)
    # The flag changes nothing else; the last iterate is the released point.
    np.testing.assert_array_equal(res.value, plain.value)
    np.testing.assert_array_equal(xs[-1], res.value)
    assert res.info["multipliers"] == plain.info["multipliers"]
    assert res.privacy.epsilon(DELTA) == plain.privacy.epsilon(DELTA)
    # Consecutive iterates are trust-region steps (||h_k|| <= r).
    steps = np.diff(np.vstack([np.asarray(case.saddle)[None], xs]), axis=0)
    assert np.all(np.linalg.norm(steps, axis=1) <= res.info["radius"] * (1 + 1e-9))


def test_return_iterates_match_the_nonprivate_path_without_noise(case):
    # Every iterate (not only the last) is the non-private TR iterate when the noise
    # vanishes: the iterates are the path that ran, in order.
    prob, x0 = case.problem, np.array([0.3, 0.2])
    res = _noise_free_run(
        DPTrustRegion(),
        jax.random.key(1),
        prob,
        x0=x0,
        alpha=0.01,
        initial_gap=2.0,
        return_iterates=True,
    )
    ref = _nonprivate_tr_path(
        prob, x0, res.info["radius"], res.info["stop_threshold"], res.info["num_iters"]
    )
    xs = np.asarray(res.info["iterates"])
    assert xs.shape == ref.shape and len(xs) > 1
    np.testing.assert_allclose(xs, ref, atol=1e-6)
    # Power: the path shifted by one iteration does not match.
    assert not np.allclose(xs[1:], ref[:-1], atol=1e-6)


# ---------------------------------------------------------------- DP-TR accounting
@pytest.mark.parametrize("rank", [None, 1])
def test_dp_tr_accounting_matches_independent_computation(case, rank):
    prob = case.problem
    eps = 2.0
    res = dp_trust_region(
        jax.random.key(5),
        prob,
        epsilon=eps,
        delta=DELTA,
        x0=case.saddle,
        initial_gap=2.0,
        hessian_rank=rank,
        calibration="paper",  # the default is "tight" since issue 16
    )
    info = res.info
    t, n, p = info["num_iters"], prob.n, prob.dim
    k = p if rank is None else rank
    g_const, m_const = prob.lipschitz, prob.smoothness
    phi = (math.sqrt(eps + math.log(1 / DELTA)) - math.sqrt(math.log(1 / DELTA))) ** 2
    # Spec 001 §3.2 formulas (with the replace-one sensitivities 2G/n, 2 sqrt(k) M/n).
    assert math.isclose(
        info["sigma_grad"] ** 2, 4 * g_const**2 * t / (n**2 * phi), rel_tol=1e-12
    )
    assert math.isclose(
        info["sigma_hess"] ** 2, 4 * k * m_const**2 * t / (n**2 * phi), rel_tol=1e-12
    )
    # zCDP by hand: 2T Gaussian mechanisms, Delta^2 / (2 sigma^2) each.
    rho = t * (2 * g_const / n) ** 2 / (2 * info["sigma_grad"] ** 2) + t * (
        2 * math.sqrt(k) * m_const / n
    ) ** 2 / (2 * info["sigma_hess"] ** 2)
    assert math.isclose(rho, phi, rel_tol=1e-12)
    assert math.isclose(res.privacy.zcdp_rho(), phi, rel_tol=1e-12)
    report = res.privacy.report(DELTA)
    assert math.isclose(report["routes"]["zcdp"], eps, rel_tol=1e-9)
    # PLD by hand: dp_accounting's reading of the noise multiplier (REPLACE_ONE)
    acc = dp_pld.PLDAccountant(
        neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE
    )
    acc.compose(dp_accounting.GaussianDpEvent(info["noise_multiplier"]), 2 * t)
    assert math.isclose(report["routes"]["pld"], acc.get_epsilon(DELTA), rel_tol=1e-3)
    assert res.privacy.epsilon(DELTA) <= eps


def test_dp_tr_charges_all_iterations_even_when_stopping_early(case):
    kw = dict(epsilon=1.0, delta=DELTA, x0=case.saddle, initial_gap=2.0)
    early = dp_trust_region(jax.random.key(0), case.problem, stop_threshold=1e9, **kw)
    assert early.info["stopped_at"] == 0
    late = dp_trust_region(
        jax.random.key(0),
        case.problem,
        stop_threshold=0.0,
        num_iters=early.info["num_iters"],
        **kw,
    )
    assert early.privacy.zcdp_rho() == late.privacy.zcdp_rho()


def test_dp_tr_tight_calibration_meets_target_with_less_noise(case):
    kw = dict(epsilon=1.0, delta=DELTA, x0=case.saddle, initial_gap=2.0, num_iters=3)
    paper = dp_trust_region(jax.random.key(0), case.problem, calibration="paper", **kw)
    tight = dp_trust_region(jax.random.key(0), case.problem, calibration="tight", **kw)
    assert tight.privacy.epsilon(DELTA) <= 1.0
    assert tight.info["noise_multiplier"] < paper.info["noise_multiplier"]
    # Power: slightly less noise than calibrated would break the target.
    less = PrivacyGuarantee.gaussian(0.97 * tight.info["noise_multiplier"] / 2)
    less = less.repeat(6)
    assert less.epsilon(DELTA) > 1.0


# ------------------------------------------------------------------------- DP-STR
@pytest.mark.slow
def test_dp_str_noise_formula_and_exact_accounting(case):
    prob = case.problem
    eps, bg, bh = 0.5, 1500, 1000
    for mode, c in (("paper", 256.0), ("strict", 512.0)):
        res = dp_stochastic_trust_region(
            jax.random.key(0),
            prob,
            epsilon=eps,
            delta=DELTA,
            x0=case.saddle,
            grad_batch_size=bg,
            hessian_batch_size=bh,
            num_iters=4,
            accounting=mode,
        )
        info = res.info
        t, n, p = 4, prob.n, prob.dim
        factor = c * t * math.log(5 * t / DELTA) * math.log(2 / DELTA) / (n * eps) ** 2
        # Gradient variance includes the factor T (the print omits it; spec 001 §7).
        assert math.isclose(
            info["sigma_grad"] ** 2, factor * prob.lipschitz**2, rel_tol=1e-12
        )
        assert math.isclose(
            info["sigma_hess"] ** 2, factor * p * prob.smoothness**2, rel_tol=1e-12
        )
        assert info["advanced_composition"]["valid_under_replace_one"] == (
            mode == "strict"
        )
        # Independent RDP computation of what ran: T rounds of two sampled-without-
        # replacement Gaussians, noise relative to the replace-one sensitivities.
        z_g = info["sigma_grad"] / (2 * prob.lipschitz / bg)
        z_h = info["sigma_hess"] / (2 * math.sqrt(p) * prob.smoothness / bh)
        # reported in the ecosystem's unit: std over the per-example bound (2x)
        assert info["noise_multipliers"]["grad"] == pytest.approx(2 * z_g)
        assert info["noise_multipliers"]["hess"] == pytest.approx(2 * z_h)
        acc = dp_rdp.RdpAccountant(
            list(dpsample.privacy.guarantee.RDP_ORDERS),
            neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE,
        )
        for b, z in ((bg, z_g), (bh, z_h)):
            acc.compose(
                dp_accounting.SampledWithoutReplacementDpEvent(
                    n, b, dp_accounting.GaussianDpEvent(z)
                ),
                t,
            )
        assert math.isclose(
            res.privacy.epsilon(DELTA), acc.get_epsilon(DELTA), rel_tol=1e-9
        )
        if mode == "strict":
            # The exact accounting is tighter than the advanced-composition claim.
            assert res.privacy.epsilon(DELTA) <= eps


@pytest.mark.slow
def test_dp_str_tight_accounting_meets_target(case):
    res = dp_stochastic_trust_region(
        jax.random.key(0),
        case.problem,
        epsilon=0.5,
        delta=DELTA,
        x0=case.saddle,
        grad_batch_size=500,
        hessian_batch_size=500,
        num_iters=3,
        accounting="tight",
    )
    assert res.privacy.epsilon(DELTA) <= 0.5
    assert res.info["advanced_composition"] is None


@pytest.mark.slow
def test_dp_str_escapes_saddle_to_sosp():
    case = cosine_case(n=20_000, dim=2, seed=2)
    res = dp_stochastic_trust_region(
        jax.random.key(0),
        case.problem,
        epsilon=1.0,
        delta=DELTA,
        x0=case.saddle,
        grad_batch_size=2000,
        hessian_batch_size=2000,
        alpha=0.1,
        initial_gap=2.0,
        accounting="tight",
    )
    ok, msg = sosp_message(case.problem, res.value, 0.1)
    assert res.info["converged"] and ok, msg
    assert abs(abs(float(res.value[1])) - math.pi) < 0.3, msg


def test_dp_str_without_noise_full_batch_equals_dp_tr(case):
    # With batches of size n (a permutation of the data) and negligible noise,
    # DP-STR takes DP-TR's noiseless steps.
    x0 = np.array([0.3, 0.2])
    kw = dict(x0=x0, alpha=0.01, initial_gap=2.0)
    tr = _noise_free_run(DPTrustRegion(), jax.random.key(1), case.problem, **kw)
    st = _noise_free_run(
        DPStochasticTrustRegion(),
        jax.random.key(1),
        case.problem,
        grad_batch_size=case.problem.n,
        hessian_batch_size=case.problem.n,
        accounting="tight",
        **kw,
    )
    np.testing.assert_allclose(st.value, tr.value, atol=1e-6)


def test_dp_str_checks_subsampling_lemma_and_warns_for_large_epsilon(case):
    # the closed-form accountings (the default is "tight" since issue 16)
    kw = dict(delta=DELTA, x0=case.saddle, num_iters=2, accounting="strict")
    with pytest.raises(ValueError, match="Lemma 5"):
        dp_stochastic_trust_region(
            jax.random.key(0),
            case.problem,
            epsilon=0.5,
            grad_batch_size=5,
            hessian_batch_size=5,
            **kw,
        )
    with pytest.warns(UserWarning, match="epsilon <= 1"):
        dp_stochastic_trust_region(
            jax.random.key(0),
            case.problem,
            epsilon=2.0,
            grad_batch_size=2000,
            hessian_batch_size=2000,
            **kw,
        )


# ---------------------------------------------------------------------- bad input
def _problem(**overrides):
    case = cosine_case(n=50, dim=2)
    consts = dict(
        lipschitz=math.sqrt(2), smoothness=1.0, hessian_lipschitz=1.0, loss_range=4.0
    )
    consts.update(overrides)
    domain = consts.pop("domain", dpsample.domains.Unconstrained(2))
    return dpsample.Problem(case.problem.loss_fn, case.problem.data, domain, **consts)


@pytest.mark.parametrize("finder", ["tr", "str"])
@pytest.mark.parametrize(
    "kwargs, problem_kw, err",
    [
        (dict(epsilon=0.0), {}, ValueError),
        (dict(epsilon=-1.0), {}, ValueError),
        (dict(epsilon=float("nan")), {}, ValueError),
        (dict(delta=0.0), {}, ValueError),
        (dict(delta=1.0), {}, ValueError),
        (dict(x0=[np.nan, 0.0]), {}, ValueError),
        (dict(x0=[0.0, 0.0, 0.0]), {}, ValueError),
        (dict(num_iters=0), {}, ValueError),
        (dict(alpha=0.0), {}, ValueError),
        (dict(radius=-1.0), {}, ValueError),
        (dict(hessian_rank=0), {}, ValueError),
        ({}, dict(lipschitz=None), MissingConstantError),
        ({}, dict(smoothness=None), MissingConstantError),
        ({}, dict(hessian_lipschitz=None), MissingConstantError),
        ({}, dict(loss_range=None), MissingConstantError),
        ({}, dict(domain=dpsample.Ball(5.0, dim=2)), ValueError),
    ],
)
def test_bad_input(finder, kwargs, problem_kw, err):
    prob = _problem(**problem_kw)
    args = dict(epsilon=0.5, delta=DELTA, x0=np.zeros(2))
    if finder == "str":
        args.update(grad_batch_size=50, hessian_batch_size=50)
        fn = dp_stochastic_trust_region
    else:
        fn = dp_trust_region
    args.update(kwargs)
    with pytest.raises(err):
        fn(jax.random.key(0), prob, **args)


@pytest.mark.parametrize("bg, bh", [(51, 10), (10, 0), (0, 10), (2.5, 10)])
def test_dp_str_bad_batch_sizes(bg, bh):
    with pytest.raises((ValueError, TypeError)):
        dp_stochastic_trust_region(
            jax.random.key(0),
            _problem(),
            epsilon=0.5,
            delta=DELTA,
            x0=np.zeros(2),
            grad_batch_size=bg,
            hessian_batch_size=bh,
        )


def test_bad_key_and_options():
    prob = _problem()
    with pytest.raises(TypeError):
        dp_trust_region(0, prob, epsilon=1.0, delta=DELTA, x0=np.zeros(2))
    with pytest.raises(ValueError):
        dp_trust_region(
            jax.random.key(0),
            prob,
            epsilon=1.0,
            delta=DELTA,
            x0=np.zeros(2),
            calibration="nope",
        )
    with pytest.raises(ValueError):
        dp_stochastic_trust_region(
            jax.random.key(0),
            prob,
            epsilon=1.0,
            delta=DELTA,
            x0=np.zeros(2),
            grad_batch_size=10,
            hessian_batch_size=10,
            accounting="nope",
        )


# ------------------------------------------------------------------- slow sweep
@pytest.mark.slow
def test_dp_tr_sosp_rate_over_seeds(case):
    # Theorem 15 holds with high probability: the failure rate over 20 independent
    # keys must be small (<= 2 of 20 allowed), not just the one fixed key above.
    fails = []
    for seed in range(20):
        res = dp_trust_region(
            jax.random.key(1000 + seed),
            case.problem,
            epsilon=10.0,
            delta=DELTA,
            x0=case.saddle,
            initial_gap=2.0,
        )
        ok, msg = sosp_message(case.problem, res.value, 0.1)
        if not ok:
            fails.append(msg)
    assert len(fails) <= 2, fails


# ---------------------------------------------------------------- compute budget
@pytest.mark.slow
@pytest.mark.parametrize("algo", ["tr", "str"])
def test_compute_budget_relaxes_alpha_and_refuses_a_fixed_schedule(case, algo):
    spec = case.problem.spec
    if algo == "tr":
        obj = DPTrustRegion(x0=case.saddle, initial_gap=2.0)
        per_iter = spec.n * (1 + spec.dim)
    else:
        obj = DPStochasticTrustRegion(
            x0=case.saddle,
            initial_gap=2.0,
            grad_batch_size=200,
            hessian_batch_size=100,
            accounting="tight",
        )
        per_iter = 200 + 100 * spec.dim
    free = obj.plan(spec, dpsample.Budget(2.0, DELTA))
    assert free.cost.evaluations == free["num_iters"] * per_iter
    cap = free.cost.evaluations // 4
    capped = obj.plan(spec, dpsample.Budget(2.0, DELTA, max_evaluations=cap))
    assert capped.cost.evaluations <= cap
    assert capped["num_iters"] < free["num_iters"]
    assert capped["alpha"] > free["alpha"]
    assert "capped" in capped.params["num_iters"].note
    # alpha is the smallest whose theorem schedule fits: a little less does not fit
    t_less = tr_theorem_parameters(
        alpha=capped["alpha"] * (1 - 1e-6), hessian_lipschitz=1.0, initial_gap=2.0
    )[1]
    assert t_less * per_iter > cap
    # radius and threshold re-derived from the relaxed alpha (Theorem 15/18)
    assert capped["radius"] == pytest.approx(math.sqrt(capped["alpha"]))
    assert capped["stop_threshold"] == pytest.approx(math.sqrt(capped["alpha"]))
    assert capped.spent_epsilon() <= 2.0
    with pytest.raises(ValueError, match="max_evaluations"):
        obj.plan(
            spec,
            dpsample.Budget(2.0, DELTA, max_evaluations=cap),
            num_iters=free["num_iters"],
        )
    with pytest.raises(ValueError, match="max_evaluations"):
        obj.plan(spec, dpsample.Budget(2.0, DELTA, max_evaluations=cap), alpha=0.1)
    with pytest.raises(ValueError, match="below one iteration"):
        obj.plan(spec, dpsample.Budget(2.0, DELTA, max_evaluations=per_iter - 1))


# ------------------------------------------------------------ budget spent (issue 16)
@pytest.mark.slow  # over 7 s in the fast suite (make test-fast --durations)
@pytest.mark.parametrize(
    "algo, eps",
    [
        ("tr", 0.1),
        ("tr", 1.0),
        ("tr", 10.0),
        pytest.param("str", 0.1, marks=pytest.mark.slow),  # ~30 s: two calibrations
        ("str", 1.0),
        pytest.param("str", 10.0, marks=pytest.mark.slow),
    ],
)
def test_default_calibration_spends_the_budget(case, algo, eps):
    """Within 2 % of the requested epsilon, never above (issue 16).

    Fails on the parent commit: DP-TR's default was the paper's zCDP calibration
    (e.g. 0.81 of 1 here) and DP-STR's the advanced-composition closed form (and
    needed batch sizes).
    """
    algo_cls = DPTrustRegion if algo == "tr" else DPStochasticTrustRegion
    plan = algo_cls(x0=case.saddle, initial_gap=2.0).plan(
        case.problem.spec, dpsample.Budget(eps, DELTA)
    )
    spent = plan.spent_epsilon()
    assert 0.98 * eps <= spent <= eps, spent
    # Power: the closed forms leave more than 2 % on the table.
    closed = {"tr": {"calibration": "paper"}, "str": {"accounting": "strict"}}[algo]
    if algo == "str" and eps > 1:
        return  # the advanced-composition form is stated for eps <= 1 only
    loose_algo = algo_cls(x0=case.saddle, initial_gap=2.0, **closed)
    if algo == "str" and eps < 1:
        # Finding: at epsilon = 0.1 the accountant certifies Theorem 17's noise only
        # for 0.104; the closed form is refused instead of over-spending the budget.
        with pytest.raises(ValueError, match="certified by the accountant only"):
            loose_algo.plan(case.problem.spec, dpsample.Budget(eps, DELTA))
        return
    loose = loose_algo.plan(case.problem.spec, dpsample.Budget(eps, DELTA))
    assert loose.spent_epsilon() < 0.98 * eps


@pytest.mark.slow
def test_dp_str_default_batch_sizes_follow_theorem_18(case):
    from dpsample.finders.trust_region import STR_FAILURE_PROB, str_batch_sizes

    spec = case.problem.spec
    plan = DPStochasticTrustRegion(x0=case.saddle, initial_gap=2.0).plan(
        spec, dpsample.Budget(1.0, DELTA)
    )
    log = math.log(spec.dim / STR_FAILURE_PROB)
    g2, m2 = spec.lipschitz**2, spec.smoothness**2
    assert plan["grad_batch_size"] == min(spec.n, math.ceil(g2 * log / 0.1**2))
    assert plan["hessian_batch_size"] == math.ceil(m2 * log / 0.1)
    assert plan.source("grad_batch_size") == "theorem"
    assert (plan["grad_batch_size"], plan["hessian_batch_size"]) == str_batch_sizes(
        n=spec.n,
        dim=spec.dim,
        alpha=0.1,
        lipschitz=spec.lipschitz,
        smoothness=spec.smoothness,
        hessian_lipschitz=1.0,
    )
    # larger alpha, smaller batches; capped at n
    assert str_batch_sizes(
        n=50, dim=2, alpha=0.01, lipschitz=1.0, smoothness=1.0, hessian_lipschitz=1.0
    ) == (50, 50)
    # a run with every default: no batch size needed any more
    res = dp_stochastic_trust_region(
        jax.random.key(0),
        case.problem,
        epsilon=1.0,
        delta=DELTA,
        x0=case.saddle,
        num_iters=2,
    )
    assert res.info["grad_batch_size"] == plan["grad_batch_size"]


@pytest.mark.slow
def test_audit_stays_below_the_claim_and_flags_half_the_noise():
    """One DP-TR iteration on worst-case neighbours (tests/audit_cases.py,
    ``dp_trust_region``): the first example moves both the mean gradient (by 2G/n)
    and the mean Hessian (by 2M/n), and the released step -g~/H~ carries both, to
    first order, as the composition the claim charges. 200k runs per dataset; the
    twin has half of both noise stds."""
    audit = CASES["dp_trust_region"].build()
    audit.check()  # the audited step is dp_trust_region's release
    assert audit.claim <= 1.0
    assert audit.run().epsilon_lower_bound <= audit.claim
    assert audit.run(twin=True).epsilon_lower_bound > audit.claim


@pytest.mark.slow  # ~23 s: three tight DP-STR calibrations
def test_dp_str_compute_budget_rederives_default_batches(case):
    """With default batches the cap relaxes alpha and Theorem 18's batch sizes are
    re-derived at the relaxed alpha (smaller batches, fewer iterations)."""
    from dpsample.finders.trust_region import str_batch_sizes

    spec = case.problem.spec
    obj = DPStochasticTrustRegion(x0=case.saddle, initial_gap=2.0)
    free = obj.plan(spec, dpsample.Budget(2.0, DELTA))
    cap = free.cost.evaluations // 4
    capped = obj.plan(spec, dpsample.Budget(2.0, DELTA, max_evaluations=cap))
    assert capped.cost.evaluations <= cap < free.cost.evaluations
    assert capped["alpha"] > free["alpha"]

    def sizes(alpha):
        return str_batch_sizes(
            n=spec.n,
            dim=spec.dim,
            alpha=alpha,
            lipschitz=spec.lipschitz,
            smoothness=spec.smoothness,
            hessian_lipschitz=1.0,
        )

    b_g, b_h = sizes(capped["alpha"])
    assert (capped["grad_batch_size"], capped["hessian_batch_size"]) == (b_g, b_h)
    assert capped.cost.evaluations == capped["num_iters"] * (b_g + b_h * spec.dim)
    # the smallest alpha that fits: a little less does not
    a_less = capped["alpha"] * (1 - 1e-6)
    t_less = tr_theorem_parameters(
        alpha=a_less, hessian_lipschitz=1.0, initial_gap=2.0
    )[1]
    g_less, h_less = sizes(a_less)
    assert t_less * (g_less + h_less * spec.dim) > cap
    assert 0.98 * 2.0 <= capped.spent_epsilon() <= 2.0
