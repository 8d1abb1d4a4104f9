r"""Stochastic Spider SOSP: the exact queries of Algorithm 2 (seed 000).

Lazy ``||grad F_S(x_i)||`` and ``lambda_min(hess F_S(x_i))`` queries that
AboveThreshold reads to select the released point.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from dpsample._src import precision
from dpsample.problem import Problem
from dpsample.types import Array

__all__ = []


# ------------------------------------------------------------------- Algorithm 2
def _mean_loss(loss_fn: Any, x: Array, data: Any) -> Array:
    return jnp.mean(jax.vmap(loss_fn, in_axes=(None, 0))(x, data))


# Module-level jits keyed on the loss function only (the data is an argument), so the
# selection queries compile once per loss and shapes, not once per call.
_risk_gradient = jax.jit(jax.grad(_mean_loss, argnums=1), static_argnums=0)
_risk_hessian = jax.jit(jax.hessian(_mean_loss, argnums=1), static_argnums=0)


def selection_queries(problem: Problem, xs: np.ndarray):
    """Lazy exact queries ``||grad F_S(x_i)||`` and ``lambda_min(hess F_S(x_i))``.

    Public rule for non-finite values (no exception mid-run): a gradient norm that
    is not finite is ``+inf`` and the smallest eigenvalue of a Hessian with a
    non-finite entry is ``-inf`` (LAPACK's ``eigvalsh`` would return arbitrary
    values for it), so the candidate fails Algorithm 2's tests.
    """
    loss_fn, data = problem.loss_fn, problem.data

    def grad_norm(i: int) -> float:
        value = float(
            jnp.linalg.norm(_risk_gradient(loss_fn, jnp.asarray(xs[i]), data))
        )
        return value if math.isfinite(value) else math.inf

    def min_eig(i: int) -> float:
        # Exact float64 symmetric eigensolver (E34): deterministic given the data.
        hess = np.asarray(_risk_hessian(loss_fn, jnp.asarray(xs[i]), data), np.float64)
        if not np.all(np.isfinite(hess)):
            return -math.inf
        return float(np.linalg.eigvalsh(hess)[0])

    return grad_norm, min_eig


precision.scope_public(globals())
