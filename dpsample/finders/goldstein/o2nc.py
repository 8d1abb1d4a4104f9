r"""The private work of a Goldstein finder: O2NC with variance-reduced oracles.

One module-level jitted core, :func:`o2nc_run`, runs a whole planned schedule (a
``lax.scan`` over ``T`` steps). Its static arguments are the loss function and the
:class:`O2NCStructure` (sizes and flags); every real-valued parameter (``alpha``,
``L``, ``eta``, ``D``, the bounds, the noise scales) is a traced operand, so a second
run with the same shapes and structure does not recompile. Whether a progress bar is
drawn (:mod:`dpsample.progress`, read on the host at each run) is a static argument
too: each setting compiles once, and the iterates are the same. The estimators
(:func:`zo_estimate`, :func:`fo_estimate`) and the tree noise (:func:`tree_noise`)
are the building blocks, public for tests and benchmarks.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from dpsample import progress
from dpsample._src import clipping, precision
from dpsample.types import Array, PRNGKey

__all__ = [
    "O2NCOutput",
    "O2NCScalars",
    "O2NCStructure",
    "fo_estimate",
    "make_runner",
    "o2nc_run",
    "scalars_of",
    "structure_of",
    "tree_noise",
    "zo_estimate",
]


# ------------------------------------------------------------------ estimators
def _project(v: Array, bound: Array | float) -> Array:
    """``v`` projected onto the ball of radius ``bound`` (the O2NC step's ``D``).

    A projection of the (already private) iterate, not a sensitivity clip: the
    clipping of per-sample estimates goes through
    :func:`dpsample._src.clipping.clipped_mean`, with its rounding margin.
    """
    nrm = jnp.linalg.norm(v)
    return v * jnp.minimum(1.0, bound / jnp.maximum(nrm, 1e-300))


def _zero_nonfinite(v: Array) -> Array:
    """Rows of ``v`` (per-sample estimates) with a non-finite entry set to zero.

    The public rule for NaN/inf during a run (package docstring): such a sample
    contributes nothing, so the mean moves by at most the other samples' bounds.
    """
    finite = jnp.all(jnp.isfinite(v), axis=-1, keepdims=True)
    return jnp.where(finite, v, 0.0)


def _sphere(key: PRNGKey, num: int, d: int) -> Array:
    g = jax.random.normal(key, (num, d))
    return g / jnp.linalg.norm(g, axis=1, keepdims=True)


def _ball(key: PRNGKey, num: int, d: int, radius: Array | float) -> Array:
    k1, k2 = jax.random.split(key)
    u = jax.random.uniform(k2, (num, 1))
    return radius * u ** (1.0 / d) * _sphere(k1, num, d)


def zo_estimate(
    loss_fn: Callable[..., Any],
    x: Array,
    example: Any,
    key: PRNGKey,
    num: int,
    *,
    alpha: Array | float,
    lipschitz: Array | float | None = None,
) -> Array:
    """Two-point estimate ``(1/m) sum (d/(2 alpha)) (f(x+alpha u)-f(x-alpha u)) u``.

    Directions ``u`` uniform on the sphere (the printed ``Unif(B_alpha)`` is a typo,
    spec 004 §2.0); with ``lipschitz`` the differences are clipped to
    ``[-2 alpha L, 2 alpha L]`` and the rows ``diff_j u_j`` to norm ``2 alpha L``
    with the rounding margin of :func:`dpsample._src.clipping.clipped_mean` (Mode
    B). Unbiased for the gradient of the ball-smoothed ``f_alpha``.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> from dpsample.finders.goldstein import zo_estimate
        >>> g = zo_estimate(lambda x, z: jnp.sum(x), jnp.zeros(2), None,
        ...                 jax.random.key(0), 4, alpha=0.1)
        >>> g.shape
        (2,)
    """
    d = x.shape[0]
    u = _sphere(key, num, d)
    fp = jax.vmap(lambda v: loss_fn(x + alpha * v, example))(u)
    fm = jax.vmap(lambda v: loss_fn(x - alpha * v, example))(u)
    diff = fp - fm
    if lipschitz is None:
        return (d / (2.0 * alpha)) * jnp.mean(diff[:, None] * u, axis=0)
    c = 2.0 * alpha * lipschitz
    # The scalar clip is exact (an inf difference becomes +-c, a NaN stays NaN); the
    # rows diff_j u_j (||u_j|| = 1 up to rounding) are then clipped at c with the
    # library's rounding margin, so the computed mean has norm at most c. A NaN
    # makes the whole estimate NaN: the sample is then zeroed (_zero_nonfinite).
    rows = jnp.clip(diff, -c, c)[:, None] * u
    mean = jnp.where(
        jnp.all(jnp.isfinite(rows)), clipping.clipped_mean(rows, c), jnp.nan
    )
    return (d / (2.0 * alpha)) * mean


def fo_estimate(
    grad_fn: Callable[..., Any],
    x: Array,
    example: Any,
    key: PRNGKey,
    num: int,
    *,
    alpha: Array | float,
    lipschitz: Array | float | None = None,
) -> Array:
    """``(1/m) sum grad f(x + y_j)``, ``y_j ~ U(B_alpha)`` (clipped to norm ``L``).

    Perturbations in the ball (Eq. (17)'s sphere is a typo, spec 004 §6.3). With
    ``lipschitz`` the gradients are clipped through
    :func:`dpsample._src.clipping.clipped_mean` (the library's rounding margin).

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> from dpsample.finders.goldstein import fo_estimate
        >>> g = fo_estimate(jax.grad(lambda x, z: jnp.sum(x)), jnp.zeros(2), None,
        ...                 jax.random.key(0), 4, alpha=0.1)
        >>> [float(v) for v in g]
        [1.0, 1.0]
    """
    d = x.shape[0]
    y = _ball(key, num, d, alpha)
    g = jax.vmap(lambda yy: grad_fn(x + yy, example))(y)
    if lipschitz is None:
        return jnp.mean(g, axis=0)
    # Clipped at L with the library's rounding margin (computed mean <= L). A
    # non-finite gradient makes the estimate NaN, so the sample is zeroed.
    return jnp.where(
        jnp.all(jnp.isfinite(g)), clipping.clipped_mean(g, lipschitz), jnp.nan
    )


def tree_noise(
    period_key: PRNGKey, pos: Array | int, sigma: Any, *, height: int, dim: int
) -> Array:
    """``TREE(pos)`` of one period: the sum of the node noises of ``NODE(pos)``.

    Node ``(l, j) = [j 2^l + 1, (j+1) 2^l]`` has noise ``sigma N(0, I)`` drawn from
    ``fold_in(fold_in(period_key, l), j)``: drawn once per period (deterministic in
    the period key), fresh across periods. For ``pos`` with bit ``l`` set, the level-l
    node of ``NODE(pos)`` has index ``j = (pos >> l) - 1``.

    Examples:
        >>> import jax
        >>> from dpsample.finders.goldstein import tree_noise
        >>> tree_noise(jax.random.key(0), 3, 0.5, height=2, dim=4).shape
        (4,)
    """
    pos = jnp.asarray(pos)

    def level(lv: Array) -> Array:
        bit = (pos >> lv) & 1
        j = jnp.maximum((pos >> lv) - 1, 0)
        k = jax.random.fold_in(jax.random.fold_in(period_key, lv), j)
        return bit * jax.random.normal(k, (dim,))

    return sigma * jnp.sum(jax.vmap(level)(jnp.arange(height + 1)), axis=0)


# ------------------------------------------------------------------ the core
class O2NCStructure(NamedTuple):
    """The static part of a run (sizes and flags): a change recompiles.

    Attributes:
        dim: ``d``.
        num_iters: ``T``.
        period: ``Sigma``.
        height: Tree height ``H``.
        anchor_batch: ``B1``.
        difference_batch: ``B2``.
        num_directions: ``m``.
        window: ``M``.
        single: Single pass (tree mechanism) or multi pass.
        zero_order: Zero-order or first-order estimator.
        enforce: Mode B (clipping).
        coupled: Zero order: a difference sample's two estimates share their
            directions, so ``||a - b|| <= d L ||z_t - z_{t-1}|| / alpha`` holds
            for every draw (``sizing="practical"``).
        tail_output: Release the mean of the last ``ceil(T/2)`` iterates
            (``preset="practical"``, single pass) instead of a random window
            average (the key is split the same way either way).
    """

    dim: int
    num_iters: int
    period: int
    height: int
    anchor_batch: int
    difference_batch: int
    num_directions: int
    window: int
    single: bool
    zero_order: bool
    enforce: bool
    coupled: bool = False
    tail_output: bool = False


class O2NCScalars(NamedTuple):
    """The traced real parameters of a run (a change does not recompile).

    Attributes:
        alpha: Smoothing radius.
        lipschitz: ``L``.
        step_size: ``eta``.
        clip_radius: ``D``.
        concentration_radius: ``e``.
        anchor_bound: ``C_A``.
        difference_bound_max: ``C_D`` cap.
        sig_tree: Tree node noise std (single pass).
        sig1: Anchor noise std (multi pass).
        sig2: Difference noise std (multi pass).
    """

    alpha: Array
    lipschitz: Array
    step_size: Array
    clip_radius: Array
    concentration_radius: Array
    anchor_bound: Array
    difference_bound_max: Array
    sig_tree: Array
    sig1: Array
    sig2: Array


class O2NCOutput(NamedTuple):
    """What :func:`o2nc_run` returns.

    Attributes:
        value: The released window average.
        output_window: Its index (drawn from the key only).
        window_means: All window averages.
        iterates: The ``z`` iterates, shape ``(T, d)``.
        bound_exceeded: Per-sample estimates beyond their bound (**non-private**).
        estimates_checked: Per-sample estimates checked (**non-private** count of
            the same computation; equal to the planned count).
        samples_used: Single-pass cursor (the planned number of samples).
    """

    value: Array
    output_window: Array
    window_means: Array
    iterates: Array
    bound_exceeded: Array
    estimates_checked: Array
    samples_used: Array


def structure_of(schedule: dict[str, Any]) -> O2NCStructure:
    """The :class:`O2NCStructure` of a :func:`goldstein_theorem_parameters` schedule."""
    return O2NCStructure(
        dim=int(schedule["dim"]),
        num_iters=int(schedule["num_iters"]),
        period=int(schedule["period"]),
        height=int(schedule["tree_height"]),
        anchor_batch=int(schedule["anchor_batch"]),
        difference_batch=int(schedule["difference_batch"]),
        num_directions=int(schedule["num_directions"]),
        window=int(schedule["window"]),
        single=schedule["passes"] == "single",
        zero_order=schedule["estimator"] == "zero_order",
        enforce=bool(schedule["enforce_sensitivity"]),
        coupled=bool(schedule.get("coupled_directions", False)),
        tail_output=(
            schedule["preset"] == "practical" and schedule["passes"] == "single"
        ),
    )


def scalars_of(
    schedule: dict[str, Any], sig_tree: Any = 0.0, sig1: Any = 0.0, sig2: Any = 0.0
) -> O2NCScalars:
    """The :class:`O2NCScalars` of a schedule and its noise scales (float64)."""

    def f(v: Any) -> Array:
        return jnp.asarray(v, jnp.float64)

    return O2NCScalars(
        alpha=f(schedule["alpha"]),
        lipschitz=f(schedule["lipschitz"]),
        step_size=f(schedule["step_size"]),
        clip_radius=f(schedule["clip_radius"]),
        concentration_radius=f(schedule["concentration_radius"]),
        anchor_bound=f(schedule["anchor_bound"]),
        difference_bound_max=f(schedule["difference_bound_max"]),
        sig_tree=f(sig_tree),
        sig1=f(sig1),
        sig2=f(sig2),
    )


@functools.partial(jax.jit, static_argnames=("loss_fn", "structure", "show_progress"))
def _o2nc(
    loss_fn: Callable[..., Any],
    structure: O2NCStructure,
    key: PRNGKey,
    data: Any,
    x0: Array,
    s: O2NCScalars,
    show_progress: bool = False,
) -> O2NCOutput:
    """The core; ``show_progress``: a progress bar (:mod:`dpsample.progress`)."""
    st = structure
    d, big_t, sig, h = st.dim, st.num_iters, st.period, st.height
    b1, b2, m = st.anchor_batch, st.difference_batch, st.num_directions
    single, enforce = st.single, st.enforce
    alpha, big_l = s.alpha, s.lipschitz
    lip_d = big_l * math.sqrt(d) / alpha
    grad_fn = jax.grad(loss_fn)
    clip_l = big_l if enforce else None

    def est(x: Array, example: Any, k: PRNGKey, num: int) -> Array:
        if st.zero_order:
            return zo_estimate(
                loss_fn, x, example, k, num, alpha=alpha, lipschitz=clip_l
            )
        return fo_estimate(grad_fn, x, example, k, num, alpha=alpha, lipschitz=clip_l)

    m_anchor = m if st.zero_order else 1

    def take(cursor: Array, size: int) -> Any:
        return jax.tree.map(
            lambda arr: jax.lax.dynamic_slice_in_dim(arr, cursor, size), data
        )

    loop_key, tree_key, out_key = jax.random.split(key, 3)

    def anchor(ops: tuple) -> tuple:
        z_t, _z_prev, _g_prev, cursor, k_est, k_noise, pos, t = ops
        size = b1
        batch = take(cursor, size) if single else data
        keys = jax.random.split(k_est, size)
        v = jax.vmap(lambda ex, k: est(z_t, ex, k, m_anchor))(batch, keys)
        v = _zero_nonfinite(v)
        norms = jnp.linalg.norm(v, axis=1)
        exceed = jnp.sum(norms > s.anchor_bound * (1 + 1e-12)).astype(jnp.int32)
        # Mode B: the mean of rows clipped at C_A with the rounding margin, so the
        # computed mean keeps the sensitivity 2 C_A / B1 the noise is calibrated to.
        g = clipping.clipped_mean(v, s.anchor_bound) if enforce else jnp.mean(v, 0)
        if single:
            pkey = jax.random.fold_in(tree_key, (t - 1) // sig)
            noisy = g + tree_noise(pkey, pos, s.sig_tree, height=h, dim=d)
            return g, noisy, cursor + size, exceed, jnp.int32(size)
        noisy = g + s.sig1 * jax.random.normal(k_noise, (d,))
        return noisy, noisy, cursor, exceed, jnp.int32(size)

    def difference(ops: tuple) -> tuple:
        z_t, z_prev, g_prev, cursor, k_est, k_noise, pos, t = ops
        size = b2
        batch = take(cursor, size) if single else data
        keys = jax.random.split(k_est, (size, 2))
        a = jax.vmap(lambda ex, k: est(z_t, ex, k[0], m))(batch, keys)
        # Coupled: the same directions at both points (each row then moves by at
        # most (d/(2 alpha)) 2 L ||z_t - z_prev||, the clip being 1-Lipschitz).
        j = 0 if st.coupled else 1
        b = jax.vmap(lambda ex, k: est(z_prev, ex, k[j], m))(batch, keys)
        diff = _zero_nonfinite(a - b)
        step = jnp.linalg.norm(z_t - z_prev)
        bound = jnp.minimum(
            lip_d * step + 2.0 * s.concentration_radius, s.difference_bound_max
        )
        if st.coupled:
            bound = jnp.minimum(bound, math.sqrt(d) * lip_d * step)
        norms = jnp.linalg.norm(diff, axis=1)
        exceed = jnp.sum(norms > bound * (1 + 1e-12)).astype(jnp.int32)
        # Mode B: clipped at the run-time bound (public: the iterates are) with the
        # rounding margin, as the anchors.
        mean = clipping.clipped_mean(diff, bound) if enforce else jnp.mean(diff, 0)
        g = g_prev + mean
        if single:
            pkey = jax.random.fold_in(tree_key, (t - 1) // sig)
            noisy = g + tree_noise(pkey, pos, s.sig_tree, height=h, dim=d)
            return g, noisy, cursor + size, exceed, jnp.int32(size)
        noisy = g + s.sig2 * jax.random.normal(k_noise, (d,))
        return noisy, noisy, cursor, exceed, jnp.int32(size)

    def step(carry: tuple, t: Array) -> tuple:
        delta_v, x_prev, z_prev, g_prev, cursor, n_exc, n_chk = carry
        k_s, k_est, k_noise = jax.random.split(jax.random.fold_in(loop_key, t), 3)
        u = jax.random.uniform(k_s)
        x_t = x_prev + delta_v
        z_t = x_prev + u * delta_v
        pos = (t - 1) % sig + 1
        ops = (z_t, z_prev, g_prev, cursor, k_est, k_noise, pos, t)
        g_state, g_noisy, cursor, exc, chk = jax.lax.cond(
            pos == 1, anchor, difference, ops
        )
        # A projection of the private direction onto the ball of radius D, not a
        # sensitivity clip (no margin needed).
        new_delta = _project(delta_v - s.step_size * g_noisy, s.clip_radius)
        carry = (new_delta, x_t, z_t, g_state, cursor, n_exc + exc, n_chk + chk)
        return carry, z_t

    zeros = jnp.zeros(d, dtype=x0.dtype)
    init = (zeros, x0, x0, zeros, jnp.int32(0), jnp.int32(0), jnp.int32(0))
    label = "goldstein_zero_order" if st.zero_order else "goldstein_first_order"
    scanned: tuple[Any, Array] = progress.scan(
        step, init, jnp.arange(1, big_t + 1), label=label, show=show_progress
    )
    final, zs = scanned
    big_m = st.window
    k_win = big_t // big_m
    windows = zs[: k_win * big_m].reshape(k_win, big_m, d).mean(axis=1)
    idx = jax.random.randint(out_key, (), 0, k_win)
    value = windows[idx]
    if st.tail_output:  # post-processing of the released iterates; index -1
        value = zs[big_t - (big_t + 1) // 2 :].mean(axis=0)
        idx = jnp.asarray(-1, idx.dtype)
    return O2NCOutput(value, idx, windows, zs, final[5], final[6], final[4])


def o2nc_run(
    loss_fn: Callable[..., Any],
    structure: O2NCStructure,
    rng_key: PRNGKey,
    data: Any,
    x0: Array,
    scalars: O2NCScalars,
) -> O2NCOutput:
    """Run O2NC for a planned structure (jitted once per loss, structure, shapes).

    A progress bar (label ``goldstein_zero_order`` or ``goldstein_first_order``) is
    drawn when :func:`dpsample.progress.is_enabled` (read here, at each call); the
    result is the same either way, and each setting compiles once.

    Keys: ``rng_key`` is split into the loop, tree and output keys (in that order);
    step ``t`` uses ``fold_in(loop_key, t)``, period ``p`` the tree key
    ``fold_in(tree_key, p)``.

    Returns:
        :class:`O2NCOutput`.
    """
    return _o2nc(
        loss_fn,
        structure,
        rng_key,
        data,
        jnp.asarray(x0, jnp.float64),
        scalars,
        show_progress=progress.is_enabled(),
    )


def make_runner(
    loss_fn: Callable[..., Any], schedule: dict[str, Any]
) -> Callable[..., O2NCOutput]:
    """``runner(key, data, x0, sig_tree, sig1, sig2)`` for a fixed schedule.

    A thin closure over :func:`o2nc_run` (compiled once per structure and shapes):
    the noise scales are arguments, so tests and benchmarks can run a plan at any
    noise (zero noise is the non-private method).

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> from dpsample.finders.goldstein import (
        ...     goldstein_theorem_parameters, make_runner)
        >>> p = goldstein_theorem_parameters(n=40, dim=2, epsilon=1.0, delta=1e-5,
        ...                    lipschitz=1.0,
        ...                    initial_gap=1.0, alpha=0.1, num_directions=2,
        ...                    enforce_sensitivity=True)
        >>> run = make_runner(lambda x, z: jnp.abs(x[0] - z), p)
        >>> run(jax.random.key(0), jnp.zeros(40), jnp.ones(2), 0.0, 0.0, 0.0
        ...     ).value.shape
        (2,)
    """
    structure = structure_of(schedule)

    @precision.scoped
    def runner(
        rng_key: PRNGKey, data: Any, x0: Any, sig_tree: Any, sig1: Any, sig2: Any
    ) -> O2NCOutput:
        return o2nc_run(
            loss_fn,
            structure,
            rng_key,
            data,
            jnp.asarray(x0, jnp.float64),
            scalars_of(schedule, sig_tree, sig1, sig2),
        )

    return runner


precision.scope_public(globals())
