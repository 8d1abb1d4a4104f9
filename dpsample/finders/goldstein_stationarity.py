r"""Goldstein stationarity of a point, measured by a min-norm QP (non-private).

**A non-private diagnostic.** It reads the exact gradients of the objective it is given
(the empirical risk of ``problem``); evaluated on private data its output is *not*
differentially private. Use it on public evaluation data, on synthetic objectives, or
label it as non-private.

For a Lipschitz objective ``F`` the Goldstein :math:`\rho`-subdifferential is
:math:`\partial_\rho F(x) = \operatorname{conv}\bigcup_{y\in B(x,\rho)}\partial F(y)`
and ``x`` is :math:`(\rho, \beta)`-Goldstein stationary when its min-norm element has
norm at most :math:`\beta` (seed 004 Def. 2.1). Its exact value is intractable in
general; any convex combination of gradients taken in :math:`B(x, \rho)` is an element
of :math:`\partial_\rho F(x)`, so (spec 004 §1.6, M1)

.. math::
    v = \min_{\lambda\in\Delta_k}\Big\|\sum_{i=1}^k \lambda_i \nabla F(y_i)\Big\|
    \;\ge\; \|\bar\partial_\rho F(x)\|,

with :math:`y_1 = x`, uniform points in the ball and points on shells of radii
:math:`\rho\cdot\{0.05, 0.25, 0.5, 0.75, 1\}` and the ``2d`` points
:math:`x\pm\rho e_i` to cross axis-aligned kinks (uniform points in high dimension
pile up near the boundary). ``v`` is an **upper bound** on the Goldstein value; it
decreases as ``num_samples`` grows. The QP
:math:`\min_{\lambda\in\Delta_k}\lambda^\top Q\lambda` (Gram matrix
:math:`Q = G^\top G`) is solved exactly as a non-negative least-squares problem
(Lawson-Hanson) on the cone of the lifted gradients :math:`(g_i, 1)`; the KKT gap
:math:`\|p\|^2 - \min_i\langle g_i, p\rangle` (:math:`p = G\lambda`, zero at the
optimum) is reported.

Note the radius: the seed-004 finders smooth at radius :math:`\alpha` and certify
radius :math:`2\alpha` (Lemma 2.4), so measure their outputs at ``radius = 2 * alpha``.

References:
    Goldstein, *Optimization of Lipschitz continuous functions*, Math. Program. 1977.
    Kornowski, Liu, Talwar, *Improved sample complexity for private nonsmooth
    nonconvex optimization*, ICML 2025 (seed 004), §1.6 of the spec.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from scipy import optimize

from dpsample._src import precision, validation
from dpsample.problem import Problem, check_problem
from dpsample.types import ArrayLike, PRNGKey

__all__ = [
    "SHELL_FRACTIONS",
    "GoldsteinStationarity",
    "goldstein_stationarity",
    "min_norm_convex_combination",
]

#: Shell radii (fractions of the radius) always included among the sample points.
SHELL_FRACTIONS = (0.05, 0.25, 0.5, 0.75, 1.0)


class GoldsteinStationarity(NamedTuple):
    """Result of :func:`goldstein_stationarity` (non-private).

    Attributes:
        value: ``||G lambda*||``, an upper bound on ``||min-norm d_rho F(x)||``.
        weights: The convex weights ``lambda*`` (length ``k``).
        points: The ``k`` points ``y_i`` in ``B(x, radius)``, shape ``(k, d)``.
        gradients: The exact gradients ``grad F(y_i)``, shape ``(k, d)``.
        kkt_gap: ``||p||^2 - min_i <g_i, p>`` (about 0 at the QP optimum).
        num_points: ``k``.
    """

    value: float
    weights: np.ndarray
    points: np.ndarray
    gradients: np.ndarray
    kkt_gap: float
    num_points: int


def min_norm_convex_combination(
    gradients: ArrayLike, *, tol: float = 1e-12, max_iter: int = 500
) -> tuple[float, np.ndarray, float]:
    r"""Min-norm point of the convex hull of the rows of ``gradients``.

    Solves :math:`\min_{\lambda\in\Delta_k}\|G^\top\lambda\|` (rows of ``G`` are the
    points) exactly, as a non-negative least-squares problem (the projection
    of ``(0, 1)`` onto the cone of the ``(g_i, 1)``), polished by Frank-Wolfe steps.

    Args:
        gradients: Array ``(k, d)`` of points (gradients).
        tol: Frank-Wolfe stopping tolerance on the slope.
        max_iter: NNLS iteration cap (times ``max(10, k)``).

    Returns:
        ``(norm, weights, kkt_gap)``.

    Examples:
        >>> import numpy as np
        >>> from dpsample.finders.goldstein_stationarity import (
        ...     min_norm_convex_combination)
        >>> v, w, gap = min_norm_convex_combination(np.array([[1.0, 1.0], [-1.0, 1.0]]))
        >>> round(v, 6), np.round(w, 3).tolist()
        (1.0, [0.5, 0.5])
    """
    g = np.asarray(gradients, dtype=np.float64)
    if g.ndim != 2 or g.shape[0] < 1:
        raise ValueError(f"Expected gradients of shape (k, d), got {g.shape}")
    if not np.all(np.isfinite(g)):
        raise ValueError("Expected finite gradients")
    scale = float(np.max(np.linalg.norm(g, axis=1)))
    if scale == 0.0:
        lam = np.full(g.shape[0], 1.0 / g.shape[0])
        return 0.0, lam, 0.0
    gs = g / scale
    # Projection of (0, 1) onto the cone of the columns (g_i, 1): with s = sum(mu)
    # and p = G^T mu / s the objective is s^2 ||p||^2 + (s - 1)^2, minimised over s
    # at ||p||^2 / (1 + ||p||^2), increasing in ||p||: the NNLS solution gives the
    # exact min-norm point of the hull (Lawson-Hanson active set).
    a_mat = np.vstack([gs.T, np.ones((1, g.shape[0]))])
    b_vec = np.zeros(g.shape[1] + 1)
    b_vec[-1] = 1.0
    mu, _ = optimize.nnls(a_mat, b_vec, maxiter=max_iter * max(10, g.shape[0]))
    lam = mu / mu.sum()
    # Polish with a few Frank-Wolfe steps (never increases the objective).
    qs = gs @ gs.T
    for _ in range(20):
        grad = 2.0 * qs @ lam
        i = int(np.argmin(grad))
        d = -lam.copy()
        d[i] += 1.0
        dqd = float(d @ qs @ d)
        slope = float(grad @ d)
        if dqd <= 0.0 or slope >= -tol:
            break
        lam = lam + min(1.0, -slope / (2.0 * dqd)) * d
    p = g.T @ lam
    norm = float(np.linalg.norm(p))
    gap = float(p @ p - np.min(g @ p))
    return norm, lam, gap


def _sample_points(
    rng_key: PRNGKey, x: jax.Array, radius: float, num_samples: int
) -> jax.Array:
    d = x.shape[0]
    k_dir, k_rad, k_shell = jax.random.split(rng_key, 3)
    gauss = jax.random.normal(k_dir, (num_samples, d))
    dirs = gauss / jnp.linalg.norm(gauss, axis=1, keepdims=True)
    num_shell = num_samples // 2
    u = jax.random.uniform(k_rad, (num_samples - num_shell,))
    radii_ball = radius * u ** (1.0 / d)
    fracs = jnp.asarray(SHELL_FRACTIONS)
    idx = jax.random.randint(k_shell, (num_shell,), 0, len(SHELL_FRACTIONS))
    radii_shell = radius * fracs[idx]
    radii = jnp.concatenate([radii_ball, radii_shell])
    pts = x[None, :] + radii[:, None] * dirs
    axes = jnp.concatenate([jnp.eye(d), -jnp.eye(d)]) * radius + x[None, :]
    return jnp.concatenate([x[None, :], axes, pts], axis=0)


def _risk_fn(problem: Problem):
    loss_fn, data = problem.loss_fn, problem.data

    def risk(y: jax.Array) -> jax.Array:
        return jnp.mean(jax.vmap(loss_fn, in_axes=(None, 0))(y, data))

    return risk


def goldstein_stationarity(
    problem: Problem,
    x: ArrayLike,
    *,
    radius: float,
    num_samples: int,
    rng_key: PRNGKey,
) -> GoldsteinStationarity:
    r"""Upper bound on the Goldstein value :math:`\|\bar\partial_\rho F(x)\|` (M1).

    **Non-private diagnostic**: reads exact gradients of ``problem``'s empirical risk.

    Args:
        problem: The objective ``F`` (its empirical risk is certified).
        x: The point, shape ``(d,)``.
        radius: Goldstein radius :math:`\rho` (for a seed-004 finder run at smoothing
            radius ``alpha``, use ``2 * alpha``).
        num_samples: Number of random points in the ball (``x`` itself and the
            ``2d`` points ``x +- radius e_i`` are added).
        rng_key: PRNG key for the sample points.

    Returns:
        A :class:`GoldsteinStationarity`.

    Raises:
        TypeError: if ``problem`` or ``rng_key`` has the wrong type.
        ValueError: if ``x`` has the wrong shape or is not finite, or ``radius`` /
            ``num_samples`` is not positive.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> import dpsample
        >>> from dpsample.finders.goldstein_stationarity import goldstein_stationarity
        >>> prob = dpsample.Problem(lambda x, z: jnp.abs(x[0]) + 0.0 * z,
        ...                         jnp.zeros(1), dpsample.domains.Unconstrained(2))
        >>> r = goldstein_stationarity(prob, jnp.array([0.05, 0.0]), radius=0.1,
        ...                            num_samples=50, rng_key=jax.random.key(0))
        >>> r.value < 1e-6   # |x_1| <= radius: 0 is in the Goldstein set
        True
    """
    check_problem(problem)
    key = validation.check_key(rng_key)
    xx = problem.spec.check_point(x, name="x")
    rho = validation.positive("radius", radius)
    k = validation.positive_int("num_samples", num_samples)
    pts = _sample_points(key, xx, rho, k)
    grads = jax.vmap(jax.grad(_risk_fn(problem)))(pts)
    grads_np = np.asarray(grads, dtype=np.float64)
    finite = np.all(np.isfinite(grads_np), axis=1)
    if not np.any(finite):
        raise ValueError("no finite gradient in the ball (autodiff returned NaN)")
    # Autodiff can return NaN exactly at a kink (e.g. ||x|| at 0): such points are
    # dropped (any subset of the gradients still gives an upper bound).
    pts_np = np.asarray(pts)[finite]
    grads_np = grads_np[finite]
    value, lam, gap = min_norm_convex_combination(grads_np)
    return GoldsteinStationarity(
        value=value,
        weights=lam,
        points=pts_np,
        gradients=grads_np,
        kkt_gap=gap,
        num_points=int(pts_np.shape[0]),
    )


precision.scope_public(globals())
