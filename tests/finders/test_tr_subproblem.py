"""Exact trust-region subproblem: global optimality against brute force, hard case."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
from scipy import optimize

from dpsample.finders.tr_subproblem import solve_tr_subproblem


def model(g, h, s):
    return float(g @ s + 0.5 * s @ h @ s)


def random_problem(rng, d, *, scale=1.0):
    a = rng.standard_normal((d, d))
    return scale * rng.standard_normal(d), a + a.T


def brute_force_2d(g, h, radius, num=200_000):
    """Dense boundary sampling plus the interior stationary point (when a minimum)."""
    theta = np.linspace(0.0, 2 * np.pi, num, endpoint=False)
    pts = radius * np.stack([np.cos(theta), np.sin(theta)], axis=1)
    vals = pts @ g + 0.5 * np.einsum("ij,jk,ik->i", pts, h, pts)
    best = float(vals.min())
    if np.linalg.eigvalsh(h)[0] > 0:
        s = -np.linalg.solve(h, g)
        if np.linalg.norm(s) <= radius:
            best = min(best, model(g, h, s))
    return best


def brute_force_multistart(g, h, radius, rng, starts=30):
    """SLSQP from many random feasible starts; the best local value."""
    d = g.shape[0]
    cons = {"type": "ineq", "fun": lambda s: radius**2 - s @ s, "jac": lambda s: -2 * s}
    best = np.inf
    for _ in range(starts):
        u = rng.standard_normal(d)
        s0 = radius * rng.uniform() ** (1 / d) * u / np.linalg.norm(u)
        res = optimize.minimize(
            lambda s: model(g, h, s),
            s0,
            jac=lambda s: g + h @ s,
            constraints=[cons],
            method="SLSQP",
            options={"ftol": 1e-14, "maxiter": 500},
        )
        if res.success and res.x @ res.x <= radius**2 * (1 + 1e-9):
            best = min(best, res.fun)
    return best


def check_kkt(g, h, radius, sol, tol=1e-8):
    s = np.asarray(sol.step)
    lam = float(sol.multiplier)
    mu1 = np.linalg.eigvalsh(h)[0]
    scale = 1.0 + np.abs(h).max() + np.abs(g).max()
    assert np.linalg.norm((h + lam * np.eye(len(g))) @ s + g) <= tol * scale
    assert lam >= max(0.0, -mu1) - tol * scale
    assert np.linalg.norm(s) <= radius * (1 + 1e-10)
    assert lam * abs(np.linalg.norm(s) - radius) <= tol * scale * radius
    assert float(sol.kkt_residual) <= tol * scale


@pytest.mark.parametrize("seed", range(20))
def test_matches_dense_sampling_in_2d(seed):
    rng = np.random.default_rng(seed)
    g, h = random_problem(rng, 2, scale=rng.choice([0.05, 1.0, 5.0]))
    radius = float(rng.uniform(0.2, 2.0))
    sol = solve_tr_subproblem(g, h, radius)
    ours = model(g, h, np.asarray(sol.step))
    brute = brute_force_2d(g, h, radius)
    # Never worse than any sampled feasible point; the grid error is O(radius^2/N^2).
    assert ours <= brute + 1e-12
    assert brute - ours <= 1e-6 * (1 + abs(brute))
    check_kkt(g, h, radius, sol)


@pytest.mark.parametrize("seed", range(6))
def test_matches_multistart_in_higher_dimension(seed):
    rng = np.random.default_rng(100 + seed)
    d = int(rng.integers(3, 7))
    g, h = random_problem(rng, d)
    radius = float(rng.uniform(0.3, 3.0))
    sol = solve_tr_subproblem(g, h, radius)
    ours = model(g, h, np.asarray(sol.step))
    brute = brute_force_multistart(g, h, radius, rng)
    assert ours <= brute + 1e-9
    check_kkt(g, h, radius, sol)


def test_power_brute_force_detects_a_suboptimal_step():
    # The comparison must be able to fail: a feasible but non-optimal step (the
    # Cauchy-like step along -g on the boundary) is beaten by the brute force.
    rng = np.random.default_rng(7)
    g, h = random_problem(rng, 2)
    radius = 1.5
    cauchy = -radius * g / np.linalg.norm(g)
    assert model(g, h, cauchy) > brute_force_2d(g, h, radius) + 1e-3


def test_interior_newton_step():
    h = np.diag([2.0, 3.0])
    g = np.array([1.0, -1.5])
    sol = solve_tr_subproblem(g, h, 10.0)
    np.testing.assert_allclose(sol.step, [-0.5, 0.5], atol=1e-14)
    assert float(sol.multiplier) == 0.0
    assert not bool(sol.on_boundary) and not bool(sol.hard_case)


def test_zero_gradient_positive_definite_gives_zero_step():
    sol = solve_tr_subproblem(np.zeros(3), np.eye(3), 1.0)
    assert np.all(np.asarray(sol.step) == 0.0) and float(sol.multiplier) == 0.0


def test_hard_case_saddle_steps_along_negative_curvature():
    # g = 0 at a strict saddle: the minimiser is radius * q_1 (either sign).
    rng = np.random.default_rng(3)
    q, _ = np.linalg.qr(rng.standard_normal((4, 4)))
    h = q @ np.diag([-2.0, 0.5, 1.0, 3.0]) @ q.T
    sol = solve_tr_subproblem(np.zeros(4), h, 0.7)
    s = np.asarray(sol.step)
    assert bool(sol.hard_case)
    np.testing.assert_allclose(abs(s @ q[:, 0]), 0.7, rtol=1e-10)
    np.testing.assert_allclose(float(sol.multiplier), 2.0, rtol=1e-10)
    np.testing.assert_allclose(model(np.zeros(4), h, s), -0.5 * 2.0 * 0.49, rtol=1e-10)
    check_kkt(np.zeros(4), h, 0.7, sol)


@pytest.mark.parametrize("seed", range(5))
def test_hard_case_with_gradient_off_the_bottom_eigenspace(seed):
    rng = np.random.default_rng(50 + seed)
    d = 4
    q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    mu = np.array([-1.5, -0.5, 1.0, 2.0])
    h = q @ np.diag(mu) @ q.T
    # Gradient orthogonal to q_1, small enough that the pseudo-inverse step fits.
    coeff = np.concatenate([[0.0], 0.1 * rng.standard_normal(d - 1)])
    g = q @ coeff
    radius = 1.0
    sol = solve_tr_subproblem(g, h, radius)
    s = np.asarray(sol.step)
    assert bool(sol.hard_case), "expected the hard case"
    np.testing.assert_allclose(float(sol.multiplier), 1.5, atol=1e-9)
    np.testing.assert_allclose(np.linalg.norm(s), radius, rtol=1e-10)
    rest = -coeff[1:] / (mu[1:] + 1.5)
    np.testing.assert_allclose(q[:, 1:].T @ s, rest, atol=1e-9)
    np.testing.assert_allclose(
        abs(q[:, 0] @ s), np.sqrt(radius**2 - rest @ rest), atol=1e-9
    )
    check_kkt(g, h, radius, sol)
    brute = brute_force_multistart(g, h, radius, rng)
    assert model(g, h, s) <= brute + 1e-9


def test_nearly_hard_case_is_continuous():
    # A tiny component on q_1 (the generic situation with noise) gives nearly the
    # hard-case solution, without overflow or loss of accuracy.
    h = np.diag([-1.0, 2.0])
    base = solve_tr_subproblem(np.array([0.0, 0.5]), h, 1.0)
    for eps in (1e-6, 1e-10, 1e-14):
        sol = solve_tr_subproblem(np.array([eps, 0.5]), h, 1.0)
        s = np.asarray(sol.step)
        assert not bool(sol.hard_case)
        np.testing.assert_allclose(np.linalg.norm(s), 1.0, rtol=1e-9)
        np.testing.assert_allclose(abs(s[0]), abs(float(base.step[0])), atol=1e-5)
        assert s[0] < 0  # sign of -g_1
        np.testing.assert_allclose(
            float(sol.model_value), float(base.model_value), atol=1e-5
        )
        check_kkt(np.array([eps, 0.5]), h, 1.0, sol)
    # Below the rounding level of Q^T g the component counts as zero: hard case.
    sol = solve_tr_subproblem(np.array([1e-30, 0.5]), h, 1.0)
    assert bool(sol.hard_case)
    np.testing.assert_allclose(float(sol.model_value), float(base.model_value))


def test_degenerate_bottom_eigenvalue_and_singular_psd():
    # Repeated negative eigenvalue, zero gradient.
    h = np.diag([-1.0, -1.0, 2.0])
    sol = solve_tr_subproblem(np.zeros(3), h, 0.5)
    s = np.asarray(sol.step)
    np.testing.assert_allclose(np.linalg.norm(s[:2]), 0.5, rtol=1e-10)
    assert abs(s[2]) < 1e-12
    # Singular PSD with g in the range: lambda = 0 and a minimiser of the model.
    h = np.diag([0.0, 2.0])
    g = np.array([0.0, -1.0])
    sol = solve_tr_subproblem(g, h, 3.0)
    assert float(sol.multiplier) == 0.0
    np.testing.assert_allclose(float(sol.model_value), -0.25, atol=1e-12)
    check_kkt(g, h, 3.0, sol)


def test_symmetrises_the_matrix_and_is_jittable_shape_stable():
    rng = np.random.default_rng(11)
    g, h = random_problem(rng, 3)
    skew = rng.standard_normal((3, 3))
    skew = skew - skew.T
    a = solve_tr_subproblem(g, h, 1.0)
    b = solve_tr_subproblem(g, h + skew, 1.0)
    np.testing.assert_allclose(a.step, b.step, atol=1e-12)


@pytest.mark.parametrize(
    "g, h, r, err",
    [
        (np.zeros(2), np.eye(2), 0.0, ValueError),
        (np.zeros(2), np.eye(2), -1.0, ValueError),
        (np.zeros(2), np.eye(3), 1.0, ValueError),
        (np.zeros((2, 2)), np.eye(2), 1.0, ValueError),
        (np.array([np.nan, 0.0]), np.eye(2), 1.0, ValueError),
        (np.zeros(2), np.array([[np.inf, 0], [0, 1.0]]), 1.0, ValueError),
        (np.zeros(2), np.eye(2), float("nan"), ValueError),
    ],
)
def test_bad_input(g, h, r, err):
    with pytest.raises(err):
        solve_tr_subproblem(jnp.asarray(g), jnp.asarray(h), r)
