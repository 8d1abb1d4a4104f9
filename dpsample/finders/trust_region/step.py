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

from dpsample._src import clipping, precision
from dpsample._src.risk import mean_loss
from dpsample.finders.batches import sample_batch
from dpsample.finders.outputs import release
from dpsample.finders.tr_subproblem import solve_tr_unchecked
from dpsample.plan import Plan
from dpsample.problem import Problem
from dpsample.types import Array, PRNGKey

__all__ = ["noisy_model", "run_tr_plan", "symmetric_noise"]


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
#: Per-example values (rows x row width) one chunk of the clipped means holds at most
#: (512 KiB: cache-sized chunks ran 5-30x faster than 2^22-value chunks for the
#: per-example Hessians at n = 1e4, d = 30 on the 2-core CI machine).
_CHUNK_ELEMENTS = 1 << 16


def _hessian_rows(loss_fn: Callable, w: Array, example: Any) -> Array:
    """One example's Hessian at ``w`` as the vector of its upper triangle."""
    d = w.shape[0]
    rows, cols = jnp.triu_indices(d)
    return jax.hessian(loss_fn)(w, example)[rows, cols]


def _from_upper(vec: Array, d: int) -> Array:
    """The symmetric matrix whose upper triangle (row-major) is ``vec``."""
    rows, cols = jnp.triu_indices(d)
    upper = jnp.zeros((d, d), jnp.float64).at[rows, cols].set(vec)
    return upper + jnp.triu(upper, 1).T


def _clipped_example_mean(
    row_fn: Callable[[Array, Any], Array], w: Array, data: Any, bound: Array
) -> Array:
    r"""``(1/m) sum_i min(1, (C/F)/||r_i||) r_i`` of ``r_i = row_fn(w, z_i)``, chunked.

    The clipping path of :func:`dpsample._src.clipping.clipped_mean` (the bound
    brought into range and shrunk by :func:`~dpsample._src.clipping.clip_margin`'s
    ``F`` for the padded row count, rows whose squared norm is not finite zeroed),
    over chunks of at most ``2^16`` values so that the ``m`` per-example rows (a
    Hessian's upper triangle has ``d(d+1)/2`` entries) are never all in memory. The
    chunk sums are added in float64: the margin holds for any summation order, so
    the *computed* mean has norm at most ``C`` and two sets of ``m`` examples that
    differ in one give means at most ``2C/m`` apart. Fixed work whatever the data.
    """
    m = jax.tree.leaves(data)[0].shape[0]
    width = jax.eval_shape(row_fn, w, jax.tree.map(lambda leaf: leaf[0], data)).shape[0]
    chunk = max(1, min(m, _CHUNK_ELEMENTS // max(width, 1)))
    num = -(-m // chunk)
    margin = clipping.clip_margin("float64", num * chunk, width)
    usable = clipping.usable_clip_bound(jnp.asarray(bound, jnp.float64), "float64")
    usable = usable / margin

    def body(total: Array, i: Array) -> tuple[Array, None]:
        idx = i * chunk + jnp.arange(chunk)
        valid = idx < m
        batch = jax.tree.map(lambda leaf: leaf[jnp.minimum(idx, m - 1)], data)
        rows = jax.vmap(row_fn, in_axes=(None, 0))(w, batch)
        part = clipping.clipped_sum(rows, valid.astype(jnp.float64), usable, "float64")
        return total + part, None

    total, _ = jax.lax.scan(body, jnp.zeros((width,), jnp.float64), jnp.arange(num))
    return total / m


def noisy_model(
    loss_fn: Callable,
    w: Array,
    data_g: Any,
    data_h: Any,
    key_g: PRNGKey,
    key_h: PRNGKey,
    sigma_g: Array,
    sigma_h: Array,
    clip_grad: Array | None,
    clip_hess: Array | None,
) -> tuple[Array, Array]:
    r"""The released noisy model ``(g + xi, H + E)`` of one DP-TR / DP-STR iteration.

    Enforced (``clip_grad``, ``clip_hess`` given, the default of the finders): ``g``
    is the mean of the per-example gradients clipped at ``clip_grad`` (= ``G``) and
    ``H`` the symmetric matrix whose upper triangle is the mean of the per-example
    Hessians' upper triangles (as vectors, the quantity the Gaussian mechanism
    releases) clipped at ``clip_hess`` (= ``sqrt(k) M``), both with the library's
    rounding margin (``_clipped_example_mean``): a replaced example moves them by
    at most ``2G/m`` and ``2 sqrt(k) M/m`` whatever the data. An example that obeys
    the declared constants is unchanged by the clips (``||grad f|| <= G``; the upper
    triangle of a Hessian of operator norm ``<= M`` has norm ``<= ||H||_F <= sqrt(p)
    M``, so with the default ``k = p`` nothing is clipped). With ``None`` (the
    opt-in ``enforce_sensitivity=False``) the plain means run and the sensitivities
    rest on the declared constants.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> from dpsample.finders.trust_region.step import noisy_model
        >>> loss = lambda x, z: jnp.dot(z, x) + 0.5 * jnp.dot(z, x) ** 2
        >>> data = jnp.array([[1.0, 0.0], [300.0, 0.0]])  # the second breaks G, M
        >>> k1, k2 = jax.random.split(jax.random.key(0))
        >>> g, h = noisy_model(loss, jnp.zeros(2), data, data, k1, k2, 0.0, 0.0,
        ...                    jnp.float64(1.0), jnp.float64(1.0))
        >>> float(jnp.linalg.norm(g)) <= 1.0, float(jnp.linalg.norm(h)) <= 1.0
        (True, True)
    """
    d = w.shape[0]
    if clip_grad is None:
        g = jax.grad(mean_loss, argnums=1)(loss_fn, w, data_g)
    else:
        g = _clipped_example_mean(jax.grad(loss_fn), w, data_g, clip_grad)
    if clip_hess is None:
        h = jax.hessian(mean_loss, argnums=1)(loss_fn, w, data_h)
    else:
        row_fn = functools.partial(_hessian_rows, loss_fn)
        h = _from_upper(_clipped_example_mean(row_fn, w, data_h, clip_hess), d)
    g_noisy = g + sigma_g * jax.random.normal(key_g, (d,), dtype=jnp.float64)
    return g_noisy, h + symmetric_noise(key_h, d, sigma_h)


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
    clip_grad: Array | None = None,
    clip_hess: Array | None = None,
) -> tuple[Array, Array, Array]:
    """One DP-TR / DP-STR iteration: noisy model, exact subproblem, step.

    ``clip_grad``/``clip_hess``: the enforced bounds (``None``: unclipped, the
    ``enforce_sensitivity=False`` opt-in); see :func:`noisy_model`.
    """
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
    g_noisy, h_noisy = noisy_model(
        loss_fn, w, data_g, data_h, kg, kh, sigma_g, sigma_h, clip_grad, clip_hess
    )
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
    stop_threshold: float | None,
    batch_sizes: tuple[int, int] | None,
    return_iterates: bool = False,
    clip_grad: float | None = None,
    clip_hess: float | None = None,
) -> tuple[Array, dict[str, Any]]:
    """The host loop of jitted iterations (the stopping time is public).

    ``clip_grad``/``clip_hess``: the enforced clip bounds (``None``: unclipped).
    ``stop_threshold=None``: no stopping rule (the run goes to ``num_iters``).
    """
    clips = [None if c is None else jnp.float64(c) for c in (clip_grad, clip_hess)]
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
            *clips,
        )
        lam = float(lam)
        multipliers.append(lam)
        if return_iterates:
            iterates.append(w)
        # A non-finite multiplier compares False: it never stops the run (public rule).
        if stop_threshold is not None and lam <= stop_threshold:
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
    """Run a DP-TR / DP-STR plan's host loop: ``(released point, run info)``.

    The loop is ``_tr_loop``; the plan's ``output`` rule then picks the released
    point from the iterates ``w_1..w_m`` that ran (post-processing,
    :func:`~dpsample.finders.outputs.release`): ``"last"`` is ``w_m`` (the loop's
    own point, the theorem's output), ``"tail_average"`` the mean of the last
    ``ceil(m/2)``, ``"random"`` a uniform one drawn from a key folded out of
    ``rng_key`` (the iterations' keys are unchanged). ``info["output_index"]`` is
    the released index (the first averaged one for the tail average).
    """
    output = plan["output"]
    keep = plan["return_iterates"] or output != "last"
    w, info = _tr_loop(
        rng_key,
        problem,
        jnp.asarray(plan["x0"], jnp.float64),
        sigma_g=plan["sigma_grad"],
        sigma_h=plan["sigma_hess"],
        radius=plan["radius"],
        num_iters=plan["num_iters"],
        stop_threshold=plan["stop_threshold"],
        batch_sizes=plan.internal["batch_sizes"],
        return_iterates=keep,
        clip_grad=plan.internal["clip_bounds"][0],
        clip_hess=plan.internal["clip_bounds"][1],
    )
    info["output"] = output
    if output == "last":
        info["output_index"] = info["iterations_run"] - 1
    else:
        out_key = jax.random.fold_in(rng_key, _OUTPUT_STREAM)
        w, info["output_index"] = release(
            out_key, info["iterates"], output, problem.domain
        )
    if not plan["return_iterates"]:
        info.pop("iterates", None)
    return w, info


#: The ``fold_in`` stream of the ``"random"`` output's key (public constant).
_OUTPUT_STREAM = 0x7472


precision.scope_public(globals())
