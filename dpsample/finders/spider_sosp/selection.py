r"""Stochastic Spider SOSP: the queries of Algorithm 2 (seed 000), with fixed work.

Lazy ``||grad F_S(x_i)||`` and ``lambda_min(hess F_S(x_i))`` queries that
AboveThreshold reads to select the released point. AboveThreshold examines the
candidates in a public order and stops at the first pass, so the *number* of queries
is a function of its output (post-processing); what must not depend on the data is
the work of one query. The gradient norm is one compiled full-data gradient; the
smallest eigenvalue is one compiled full-data Hessian followed by
:func:`~dpsample._src.fixed_eig.min_eigenvalue` (Householder tridiagonalisation and
a fixed number of Sturm multisection rounds), not LAPACK's ``eigvalsh``, whose time
depends on the matrix (issue 25). Its error is at most the public
:math:`\eta = ` :func:`~dpsample._src.fixed_eig.min_eigenvalue_error` ``(d, M)``
whenever :math:`\|\nabla^2 F_S\| \le M` (the declared per-example bound); the query
returns :math:`\hat\lambda + \eta \ge \lambda_{\min}`, and
:func:`selection_sensitivities` adds :math:`2\eta` to the eigenvalue sensitivity.

Enforced by default (issue 25): both queries read clipped means
(:mod:`dpsample._src.clipped_derivatives`): the per-example gradients clipped at
the declared ``G`` and the per-example Hessians scaled to ``ν <= M`` (``ν`` of
:func:`~dpsample._src.clipped_derivatives.operator_norm_bound`, an upper bound on the
operator norm),
each with the rounding margin of :func:`dpsample._src.clipping.clip_margin`. The
computed means then move by at most ``c_sens G/|S|`` and ``c_sens M/|S|`` (operator
norm) between neighbours and the computed Hessian mean has
``||Ĥ||_2 <= M``, so :func:`selection_sensitivities` and ``eta`` hold whatever the
data. ``enforce_sensitivity=False`` (the finder's opt-out, passed through
:func:`selection_queries`) reads the exact full-data gradient and Hessian instead:
the sensitivities then rest on the declared ``G`` and ``M`` (the paper's Algorithm
2), and the finder's guarantee is conditional on them.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from dpsample._src import precision
from dpsample._src.clipped_derivatives import (
    clipped_gradient_mean,
    clipped_hessian_mean,
)
from dpsample._src.fixed_eig import min_eigenvalue, min_eigenvalue_error
from dpsample.finders.accounting import C_SENS
from dpsample.problem import Problem, _mean_loss
from dpsample.types import Array

__all__ = []


# ------------------------------------------------------------------- Algorithm 2


def _min_eig_upper(
    loss_fn: Any, x: Array, data: Any, bound: Array, eta: Array, enforce: bool = True
) -> Array:
    """``lambda_hat + eta`` of the full-data Hessian at ``x`` (fixed work).

    With ``enforce`` (static, default) the Hessian is the mean of the per-example
    Hessians clipped to ``ν <= bound = M``; else the exact one. ``nan``
    when the Hessian is not finite (a ``select``, not a branch).
    """
    if enforce:
        h = clipped_hessian_mean(loss_fn, x, data, bound)
    else:
        h = jax.hessian(_mean_loss, argnums=1)(loss_fn, x, data)
    return min_eigenvalue(h, bound) + eta


def _gradient_norm(
    loss_fn: Any, x: Array, data: Any, bound: Array, enforce: bool = True
) -> Array:
    """``||grad||`` of the full-data (clipped with ``enforce``) gradient at ``x``."""
    if enforce:
        return jnp.linalg.norm(clipped_gradient_mean(loss_fn, x, data, bound))
    return jnp.linalg.norm(jax.grad(_mean_loss, argnums=1)(loss_fn, x, data))


# Module-level jits keyed on the loss function and the mode only (the data is an
# argument), so the selection queries compile once per loss, mode and shapes, not
# once per call.
_gradient_norm_jit = jax.jit(_gradient_norm, static_argnums=(0, 4))
_min_eig_jit = jax.jit(_min_eig_upper, static_argnums=(0, 5))


def eigenvalue_error(dim: int, smoothness: float) -> float:
    """The public error bound ``eta`` of the eigenvalue query (``d``, ``M`` only)."""
    return min_eigenvalue_error(dim, smoothness)


def selection_sensitivities(
    dim: int, lipschitz: float, smoothness: float, n_select: int
) -> tuple[float, float]:
    """``(Delta_G, Delta_M)`` of Algorithm 2's queries on ``n_select`` examples.

    ``Delta_G = c_sens G/|S|``; ``Delta_M = c_sens M/|S| + 2 eta``: the exact
    ``lambda_min`` moves by at most ``c_sens M/|S|`` (Weyl) and the computed one is
    within ``eta`` of it on each of the two neighbours.
    """
    eta = eigenvalue_error(dim, smoothness)
    return (
        C_SENS * lipschitz / n_select,
        C_SENS * smoothness / n_select + 2.0 * eta,
    )


def selection_queries(
    problem: Problem, xs: np.ndarray, enforce_sensitivity: bool = True
):
    """Lazy queries ``||grad F_S(x_i)||`` and ``lambda_hat(hess F_S(x_i)) + eta``.

    Both do the same work whatever the data (module docstring); the eigenvalue
    query is an upper bound on ``lambda_min`` within ``2 eta`` of it, with
    ``eta = eigenvalue_error(d, M)`` and ``M = problem.smoothness``. With
    ``enforce_sensitivity`` (default) ``F_S`` is read through the means of the
    per-example gradients clipped at ``G = problem.lipschitz`` and Hessians clipped
    at ``ν <= M`` (module docstring); ``False`` reads the exact ones.

    Public rule for non-finite values (no exception mid-run): a gradient norm that
    is not finite is ``+inf`` and the eigenvalue query of a Hessian with a
    non-finite entry is ``-inf``, so the candidate fails Algorithm 2's tests.
    """
    loss_fn, data = problem.loss_fn, problem.data
    if not isinstance(enforce_sensitivity, bool):
        raise TypeError(
            f"Expected enforce_sensitivity to be a bool, got {enforce_sensitivity!r}"
        )
    enforce = enforce_sensitivity
    # both declared: Spider-SOSP's plan requires them before any selection runs
    assert problem.smoothness is not None and problem.lipschitz is not None
    bound = float(problem.smoothness)
    grad_bound = float(problem.lipschitz)
    eta = eigenvalue_error(problem.dim, bound)

    def grad_norm(i: int) -> float:
        x = jnp.asarray(xs[i])
        value = float(_gradient_norm_jit(loss_fn, x, data, grad_bound, enforce))
        return value if math.isfinite(value) else math.inf

    def min_eig(i: int) -> float:
        x = jnp.asarray(xs[i])
        value = float(_min_eig_jit(loss_fn, x, data, bound, eta, enforce))
        return value if math.isfinite(value) else -math.inf

    return grad_norm, min_eig


precision.scope_public(globals())
