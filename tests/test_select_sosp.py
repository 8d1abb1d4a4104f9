"""Procedure 3′ (spec 002 §2.4): ``dpsample.mechanisms.select_sosp_iterate``."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dpsample
from dpsample._src.validation import MissingConstantError
from dpsample.finders.stationarity import is_sosp
from dpsample.mechanisms import select_sosp as mod
from dpsample.mechanisms import select_sosp_iterate

N = 10_000
K = 10
BETA = 0.05
ALPHA = 0.2
EPS = 1.0
SQRT2 = math.sqrt(2.0)


def loss(x, z):
    """Saddle at 0 (lambda_min = -2), minima at (0, +-sqrt 2) (lambda_min = 2)."""
    return x[0] ** 2 - x[1] ** 2 + x[1] ** 4 / 4 + x @ z["z"]


def make_problem(z=None, **constants):
    consts = {"lipschitz": 6.0, "smoothness": 10.0, "hessian_lipschitz": 12.0}
    consts.update(constants)
    z = jnp.zeros((N, 2)) if z is None else z
    return dpsample.Problem(loss, {"z": z}, dpsample.Ball(2.0, dim=2), **consts)


PROBLEM = make_problem()


def accuracy(k=K, beta=BETA, eps=EPS):
    return 8.0 * (math.log(k) + math.log(2.0 / beta)) / eps


def run(key, xs, problem=PROBLEM, **kw):
    opts = {"alpha": ALPHA, "epsilon": EPS, "num_candidates": K, "failure_prob": BETA}
    opts.update(kw)
    return select_sosp_iterate(key, problem, xs, **opts)


def binomial_se(p, m):
    return math.sqrt(max(p * (1 - p), 1e-4) / m)


# --------------------------------------------------------------------- guarantee
def test_guarantee_and_thresholds_recomputed():
    xs = jnp.array([[0.0, 0.0], [0.0, SQRT2]])
    res = run(jax.random.key(1), xs, epsilon=0.7)
    assert res.privacy.pure_epsilon() == pytest.approx(0.7)
    assert res.privacy.epsilon(0.0) == pytest.approx(0.7)
    # enforced by default (clipped at C and L_c): unconditional
    assert res.privacy.assumptions == ()
    assert res.info.enforce_sensitivity
    opted_out = run(jax.random.key(1), xs, epsilon=0.7, enforce_sensitivity=False)
    assert opted_out.privacy.pure_epsilon() == pytest.approx(0.7)
    assert not opted_out.info.enforce_sensitivity
    assumptions = opted_out.privacy.assumptions
    assert any("<= C = 6" in a for a in assumptions)
    assert any("L_c = 10" in a for a in assumptions)
    assert all("not enforced: enforce_sensitivity=False" in a for a in assumptions)
    info = res.info
    # the fixed-work eigenvalue's public error bound, eta = 2 L_c (130 d^2.5 + 32) u
    eta = 2 * 10.0 * (130 * 2**2.5 + 32) * 2.0**-53
    assert info.eig_error == eta
    # replace-one sensitivities; the eigenvalue's moves by 2 eta more
    s_g, s_h = 2 * 6.0 / N, 2 * 10.0 / N + 2 * eta
    a = 8 * (math.log(K) + math.log(2 / BETA)) / 0.7
    assert info.grad_sensitivity == pytest.approx(s_g, rel=1e-15)
    assert info.eig_sensitivity == pytest.approx(s_h, rel=1e-15)
    assert info.accuracy == pytest.approx(a)
    assert info.grad_threshold == pytest.approx(ALPHA - a * s_g)
    tau_h = -math.sqrt(12 * ALPHA) + a * s_h + eta
    assert info.eig_threshold == pytest.approx(tau_h, rel=1e-15)
    assert info.accept_eig_bound == pytest.approx(
        -math.sqrt(12 * ALPHA) + 2 * a * s_h + 2 * eta, rel=1e-15
    )
    assert info.threshold_noise_scale == pytest.approx(2 / 0.7)
    assert info.query_noise_scale == pytest.approx(4 / 0.7)
    assert info["num_candidates"] == K and len(info.candidates) == K


# --------------------------------------------------------------------- fixed work
def test_same_work_for_two_datasets(monkeypatch):
    rng = np.random.default_rng(0)
    z1 = jnp.zeros((N, 2))
    z2 = jnp.asarray(rng.normal(size=(N, 2)) * 0.1)
    xs = jnp.array([[0.0, 0.0], [0.0, SQRT2], [0.5, 0.5]])
    seen = []
    real = mod._scores_jit

    def spy(loss_fn, data, points, *rest):
        seen.append(points.shape)
        return real(loss_fn, data, points, *rest)

    monkeypatch.setattr(mod, "_scores_jit", spy)
    infos = [run(jax.random.key(3), xs, make_problem(z)).info for z in (z1, z2)]
    # one evaluation of both queries at all k candidates, whatever the data/output
    assert seen == [(K, 2), (K, 2)]
    for info in infos:
        assert info.num_gradient_evaluations == info.num_eigenvalue_evaluations == K
    assert infos[0].candidates == infos[1].candidates  # drawn from the key only
    points = jnp.asarray(xs[np.asarray(infos[0].candidates)])
    jaxprs = [
        str(
            jax.make_jaxpr(
                lambda d, p: mod._combined_scores(
                    loss, d, p, 0.1, -1.0, 1e-3, 2e-3, 10.0, 6.0
                )
            )({"z": z}, points)
        )
        for z in (z1, z2)
    ]
    assert jaxprs[0] == jaxprs[1]
    assert "while" in jaxprs[0] or "scan" in jaxprs[0]  # one fixed-length lax.map


# ------------------------------------------------------------------ FAIL and pick
def _near_boundary(alpha=ALPHA):
    """Non-SOSPs whose score is just below -a: gradient norm just above alpha."""
    x1 = alpha / 2 * (1 + 1e-6)
    return jnp.array([[x1, SQRT2], [-x1, SQRT2]])


@pytest.mark.parametrize(
    "xs",
    [jnp.zeros((4, 2)), _near_boundary()],
    ids=["strict_saddle", "just_outside"],
)
def test_fail_when_no_iterate_qualifies(xs):
    m = 60
    for x in xs:
        assert not is_sosp(PROBLEM, x, alpha=ALPHA)
    fails = [run(jax.random.key(100 + i), xs).info.failed for i in range(m)]
    rate = float(np.mean(fails))
    # AboveThreshold accuracy: a non-SOSP (score <= -a) is released w.p. <= beta
    assert rate >= 1 - BETA - 3 * binomial_se(BETA, m)


@pytest.mark.slow  # 9-20 s: keeps the fast suite under 5 minutes
def test_selects_a_true_sosp_when_half_qualify():
    xs = jnp.array([[0.0, 0.0], [0.0, SQRT2]] * 4)  # half saddles, half minima
    m = 60
    good = 0
    for i in range(m):
        res = run(jax.random.key(200 + i), xs)
        if res.value is not None:
            assert res.info.selected in res.info.candidates
            np.testing.assert_array_equal(res.value, xs[res.info.selected])
            good += int(is_sosp(PROBLEM, res.value, alpha=ALPHA))
        else:
            assert res.info.failed and res.info.selected == -1
    # minima have score >= a: P(no SOSP) <= beta + 2^-k
    p = BETA + 2.0**-K
    assert good / m >= 1 - p - 3 * binomial_se(p, m)


@pytest.mark.slow
def test_accuracy_bound_monte_carlo_heavy():
    m = 600
    fails = [
        run(jax.random.key(1000 + i), _near_boundary()).info.failed for i in range(m)
    ]
    assert np.mean(fails) >= 1 - BETA - 3 * binomial_se(BETA, m)
    xs = jnp.array([[0.0, 0.0], [0.0, SQRT2]] * 4)
    good = 0
    for i in range(m):
        res = run(jax.random.key(5000 + i), xs)
        good += res.value is not None and is_sosp(PROBLEM, res.value, alpha=ALPHA)
    p = BETA + 2.0**-K
    assert good / m >= 1 - p - 3 * binomial_se(p, m)


# ------------------------------------------------------------------- bad input
@pytest.fixture
def no_private_work(monkeypatch):
    def boom(*args, **kwargs):
        raise AssertionError("private computation reached")

    monkeypatch.setattr(mod, "_scores_jit", boom)


@pytest.mark.parametrize("missing", ["lipschitz", "smoothness", "hessian_lipschitz"])
def test_missing_constant_refused(no_private_work, missing):
    with pytest.raises(MissingConstantError):
        run(jax.random.key(0), jnp.zeros((2, 2)), make_problem(**{missing: None}))


@pytest.mark.parametrize(
    "kw",
    [
        {"epsilon": 0.0},
        {"epsilon": -1.0},
        {"epsilon": math.inf},
        {"num_candidates": 0},
        {"alpha": 0.0},
        {"failure_prob": 0.0},
        {"failure_prob": 1.0},
    ],
)
def test_bad_parameters_refused(no_private_work, kw):
    with pytest.raises(ValueError):
        run(jax.random.key(0), jnp.zeros((2, 2)), **kw)


@pytest.mark.parametrize(
    "xs",
    [
        jnp.zeros((0, 2)),
        jnp.zeros((2, 3)),
        jnp.array([[jnp.nan, 0.0]]),
        jnp.array([[3.0, 0.0]]),
    ],
    ids=["empty", "wrong_dim", "nan", "outside_domain"],
)
def test_bad_iterates_refused(no_private_work, xs):
    with pytest.raises(ValueError):
        run(jax.random.key(0), xs)
