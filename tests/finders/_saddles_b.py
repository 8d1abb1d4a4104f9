"""Strict-saddle problems with *global* constants, for the unconstrained finders.

Spider (seed 000 Algorithm 1) and DP-TR/DP-STR (seed 001) take unconstrained steps, so
their privacy needs the declared G, M, rho on all of R^d (spec 000 E20). The shared
``saddles.py`` problems are quartic, hence only Lipschitz on a ball; this module gives a
bounded periodic alternative with the same geometry.

:func:`cosine_case`: per-example loss

    f(x; z) = - sum_{j < d} cos(x_j - z_j) + cos(x_d - z_d)

with shifts in cancelling pairs (``z_{2k+1} = -z_{2k}``), so that
``F(x) = - sum_{j<d} A_j cos(x_j) + A_d cos(x_d)``, ``A_j = mean_i cos(z_ij) > 0``.
Strict saddle at 0 (gradient exactly 0, ``lambda_min = -A_d``); minima at
``(0, ..., 0, ±pi)`` with value ``-sum_j A_j`` and Hessian ``diag(A)``.
Global constants: ``G = sqrt(d)``, ``M = 1`` (diagonal Hessian with entries in [-1, 1]),
``rho = 1`` (``|cos a - cos b| <= |a - b|`` per diagonal entry), range ``B = 2 d``.
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

import dpsample
from dpsample.domains import Unconstrained


class CosineCase(NamedTuple):
    problem: dpsample.Problem
    saddle: np.ndarray
    minima: tuple[np.ndarray, ...]
    min_value: float
    amplitudes: np.ndarray


def cosine_loss(x, example):
    z = example["z"]
    c = jnp.cos(x - z)
    return -jnp.sum(c[:-1]) + c[-1]


def cosine_case(
    n: int = 200, dim: int = 2, *, shift_scale: float = 0.3, seed: int = 0
) -> CosineCase:
    rng = np.random.default_rng(seed)
    u = shift_scale * rng.standard_normal((n // 2, dim))
    z = np.zeros((n, dim))
    z[0 : 2 * (n // 2) : 2] = u
    z[1 : 2 * (n // 2) : 2] = -u
    prob = dpsample.Problem(
        cosine_loss,
        {"z": z},
        Unconstrained(dim),
        lipschitz=float(np.sqrt(dim)),
        smoothness=1.0,
        hessian_lipschitz=1.0,
        loss_range=2.0 * dim,
    )
    amps = np.cos(z).mean(axis=0)
    m = np.zeros(dim)
    m[-1] = np.pi
    return CosineCase(prob, np.zeros(dim), (m, -m), -float(amps.sum()), amps)


def sosp_measures(problem: dpsample.Problem, x) -> tuple[float, float]:
    """Non-private diagnostics: exact ||grad F(x)|| and lambda_min(hess F(x))."""
    x = jnp.asarray(x)
    g = float(jnp.linalg.norm(problem.gradient(x)))
    lam = float(np.linalg.eigvalsh(np.asarray(problem.hessian(x)))[0])
    return g, lam
