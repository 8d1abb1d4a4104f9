r"""DP-TR / DP-STR's engine: the noisy model, the exact subproblem and the loop.

:func:`symmetric_noise` is the Hessian noise of seed 001 (Algorithm 1 line 4); one
jitted iteration builds the noisy quadratic model (full data or two independent
minibatches), solves the trust-region subproblem exactly
(:mod:`dpsample.finders.tr_subproblem`) and steps; :func:`run_tr_plan` runs a plan's
host loop (the stopping time is a post-processing of released values).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from dpsample._src import precision
from dpsample.finders.batches import sample_batch
from dpsample.finders.tr_subproblem import solve_tr_unchecked
from dpsample.plan import Plan
from dpsample.problem import Problem
from dpsample.types import Array, PRNGKey

__all__ = ["run_tr_plan", "symmetric_noise"]


def symmetric_noise(rng_key: PRNGKey, dim: int, scale: float | Array = 1.0) -> Array:
    r"""Symmetric Gaussian noise matrix of seed 001 (Algorithm 1 line 4).

    The upper triangle **including the diagonal** is i.i.d. :math:`N(0, s^2)` and each
    lower entry is copied from its mirror, so diagonal and off-diagonal entries all
    have variance :math:`s^2` (not GOE scaling, not :math:`(A + A^\top)/2`; spec 001
    §3.1(b)). Releasing :math:`H + E` is the Gaussian mechanism on the upper-triangle
    vector of :math:`H`, whose L2 sensitivity is at most
    :math:`\|\Delta H\|_F`.

    Args:
        rng_key: a PRNG key (consumed).
        dim: the dimension ``p``.
        scale: the standard deviation :math:`s`.

    Returns:
        A ``(dim, dim)`` symmetric matrix.

    Examples:
        >>> import jax
        >>> from dpsample.finders.trust_region import symmetric_noise
        >>> e = symmetric_noise(jax.random.key(0), 3)
        >>> bool((e == e.T).all())
        True
    """
    upper = jnp.triu(jax.random.normal(rng_key, (dim, dim), dtype=jnp.float64))
    return scale * (upper + jnp.triu(upper, 1).T)


# ----------------------------------------------------------------------- the engine
def _mean_loss(loss_fn: Callable, x: Array, data: Any) -> Array:
    return jnp.mean(jax.vmap(loss_fn, in_axes=(None, 0))(x, data))


@functools.partial(jax.jit, static_argnames=("loss_fn", "batch_sizes"))
def _noisy_step(
    loss_fn: Callable,
    w: Array,
    data: Any,
    key: PRNGKey,
    sigma_g: Array,
    sigma_h: Array,
    radius: Array,
    batch_sizes: tuple[int, int] | None,
) -> tuple[Array, Array, Array]:
    """One DP-TR / DP-STR iteration: noisy model, exact subproblem, step."""
    kg, kh, kbg, kbh = jax.random.split(key, 4)
    n = jax.tree.leaves(data)[0].shape[0]
    if batch_sizes is None:
        data_g = data_h = data
    else:
        # Two independent uniform fixed-size batches without replacement (fresh each
        # round), drawn exactly in O(n) (the accounted scheme).
        idx_g, _ = sample_batch(
            kbg, n, sampling="without_replacement", batch_size=batch_sizes[0]
        )
        idx_h, _ = sample_batch(
            kbh, n, sampling="without_replacement", batch_size=batch_sizes[1]
        )
        data_g = jax.tree.map(lambda leaf: leaf[idx_g], data)
        data_h = jax.tree.map(lambda leaf: leaf[idx_h], data)
    d = w.shape[0]
    g = jax.grad(_mean_loss, argnums=1)(loss_fn, w, data_g)
    h = jax.hessian(_mean_loss, argnums=1)(loss_fn, w, data_h)
    g_noisy = g + sigma_g * jax.random.normal(kg, (d,), dtype=jnp.float64)
    h_noisy = h + symmetric_noise(kh, d, sigma_h)
    # Fixed work (issue 25): the subproblem's eigh iterates to convergence, but its
    # input is the Gaussian release (g_noisy, h_noisy) the guarantee accounts, so its
    # time is post-processing of a DP release (allow-listed in tests/fixed_work.py).
    sol = solve_tr_unchecked(g_noisy, h_noisy, radius)
    return w + sol.step, sol.multiplier, sol.hard_case


def _tr_loop(
    rng_key: PRNGKey,
    problem: Problem,
    x0: Array,
    *,
    sigma_g: float,
    sigma_h: float,
    radius: float,
    num_iters: int,
    stop_threshold: float,
    batch_sizes: tuple[int, int] | None,
    return_iterates: bool = False,
) -> tuple[Array, dict[str, Any]]:
    """The host loop of jitted iterations (the stopping time is public)."""
    keys = jax.random.split(rng_key, num_iters)
    w = x0
    multipliers: list[float] = []
    iterates: list[Array] = []
    stopped_at = None
    for k in range(num_iters):
        w, lam, _ = _noisy_step(
            problem.loss_fn,
            w,
            problem.data,
            keys[k],
            jnp.float64(sigma_g),
            jnp.float64(sigma_h),
            jnp.float64(radius),
            batch_sizes,
        )
        lam = float(lam)
        multipliers.append(lam)
        if return_iterates:
            iterates.append(w)
        # A non-finite multiplier compares False: it never stops the run (public rule).
        if lam <= stop_threshold:
            stopped_at = k
            break
    info: dict[str, Any] = {
        "converged": stopped_at is not None,
        "stopped_at": stopped_at,
        "iterations_run": len(multipliers),
        "multipliers": multipliers,
    }
    if return_iterates:
        info["iterates"] = jnp.stack(iterates)
    return w, info


def run_tr_plan(rng_key: PRNGKey, plan: Plan, problem: Problem) -> tuple[Array, dict]:
    """Run a DP-TR / DP-STR plan's host loop: ``(w, run info)`` (see ``_tr_loop``)."""
    return _tr_loop(
        rng_key,
        problem,
        jnp.asarray(plan["x0"], jnp.float64),
        sigma_g=plan["sigma_grad"],
        sigma_h=plan["sigma_hess"],
        radius=plan["radius"],
        num_iters=plan["num_iters"],
        stop_threshold=plan["stop_threshold"],
        batch_sizes=plan.internal["batch_sizes"],
        return_iterates=plan["return_iterates"],
    )


precision.scope_public(globals())
