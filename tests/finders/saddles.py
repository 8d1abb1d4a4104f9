"""Shared strict-saddle test problems for the finder tests (parts A and B).

Every problem is an empirical risk ``F(x) = (1/n) sum_i f(x, z_i)`` whose per-example
losses are a common non-convex function plus a linear term ``<z_i, x>`` with shifts
that average out exactly (``z_{2k+1} = -z_{2k}``; a zero shift when ``n`` is odd), so
``F`` is the clean function, the per-example gradients differ (``||z_i|| =
shift_scale``) and the per-example Hessians coincide. All constants are *declared* from
the construction (never measured), valid on the ball ``||x|| <= radius``.

* :func:`quartic_saddle` (spec 002 §5.4 E3): ``f(x) = x^T H x / 2 + sum_j x_j^4 / 4``
  with ``H = diag(1, ..., 1, -gamma)``. Strict saddle at 0 with ``lambda_min =
  -gamma``; minima at ``x = ±sqrt(gamma) e_d`` with value ``-gamma^2 / 4``.
* :func:`planar_saddle`: ``f(x) = x_1^2 - x_2^2 + x_2^4 / 4`` (``d = 2``). Strict saddle
  at 0 with ``lambda_min = -2``; minima at ``(0, ±sqrt(2))`` with value ``-1``.

Constants on ``||x|| <= R`` (``s`` = shift_scale, ``c = max(1, gamma)``):
``G = c R + R^3 + s`` (``||Hx|| + ||x^3|| + ||z||``), ``M = max(gamma, 1 + 3 R^2)``
(Hessian ``H + 3 diag(x^2)``), ``rho = 6 R`` (``|x_j^2 - y_j^2| <= 2R |x_j - y_j|``),
loss range ``2 (c R^2 / 2 + R^4 / 4 + s R)``.
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

import dpsample


class SaddleCase(NamedTuple):
    problem: dpsample.Problem
    saddle: np.ndarray
    minima: tuple[np.ndarray, ...]
    min_value: float
    saddle_eigenvalue: float


def _shifts(n: int, dim: int, shift_scale: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    u = rng.standard_normal((n // 2, dim))
    u = shift_scale * u / np.linalg.norm(u, axis=1, keepdims=True)
    z = np.zeros((n, dim))
    z[0 : 2 * (n // 2) : 2] = u
    z[1 : 2 * (n // 2) : 2] = -u
    return z


def quartic_loss(gamma: float):
    def loss_fn(x, example):
        d = x.shape[0]
        h = jnp.ones(d).at[d - 1].set(-gamma)
        return 0.5 * jnp.sum(h * x**2) + 0.25 * jnp.sum(x**4) + x @ example["z"]

    return loss_fn


def quartic_saddle(
    n: int = 20,
    dim: int = 3,
    *,
    gamma: float = 1.0,
    radius: float = 2.0,
    shift_scale: float = 0.1,
    seed: int = 0,
) -> dpsample.Problem:
    """Spec 002's synthetic strict saddle as a :class:`dpsample.Problem`."""
    return quartic_case(
        n, dim, gamma=gamma, radius=radius, shift_scale=shift_scale, seed=seed
    ).problem


def quartic_case(
    n: int = 20,
    dim: int = 3,
    *,
    gamma: float = 1.0,
    radius: float = 2.0,
    shift_scale: float = 0.1,
    seed: int = 0,
) -> SaddleCase:
    c = max(1.0, gamma)
    r, s = radius, shift_scale
    prob = dpsample.Problem(
        quartic_loss(gamma),
        {"z": _shifts(n, dim, s, seed)},
        dpsample.Ball(r, dim=dim),
        lipschitz=c * r + r**3 + s,
        smoothness=max(gamma, 1.0 + 3.0 * r**2),
        hessian_lipschitz=6.0 * r,
        loss_range=2.0 * (c * r**2 / 2 + r**4 / 4 + s * r),
    )
    e = np.zeros(dim)
    e[-1] = np.sqrt(gamma)
    return SaddleCase(prob, np.zeros(dim), (e, -e), -(gamma**2) / 4, -gamma)


def planar_loss(x, example):
    return x[0] ** 2 - x[1] ** 2 + 0.25 * x[1] ** 4 + x @ example["z"]


def planar_case(
    n: int = 20, *, radius: float = 2.0, shift_scale: float = 0.1, seed: int = 0
) -> SaddleCase:
    """``x_1^2 - x_2^2 + x_2^4/4`` plus cancelling shifts, on ``||x|| <= radius``."""
    r, s = radius, shift_scale
    prob = dpsample.Problem(
        planar_loss,
        {"z": _shifts(n, 2, s, seed)},
        dpsample.Ball(r, dim=2),
        lipschitz=2.0 * r + r**3 + s,
        smoothness=max(2.0, 3.0 * r**2 - 2.0),
        hessian_lipschitz=6.0 * r,
        loss_range=2.0 * (r**2 + r**4 / 4 + s * r),
    )
    m = np.array([0.0, np.sqrt(2.0)])
    return SaddleCase(prob, np.zeros(2), (m, -m), -1.0, -2.0)


def planar_saddle(n: int = 20, **kwargs) -> dpsample.Problem:
    return planar_case(n, **kwargs).problem
