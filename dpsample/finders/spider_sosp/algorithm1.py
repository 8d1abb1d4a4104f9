r"""Stochastic Spider SOSP: Algorithm 1 (seed 000), one jitted ``lax.scan``.

The drift-controlled Spider loop of a
:class:`~dpsample.finders.spider_sosp.SpiderSOSP` plan, with its typed info. The loop
draws a progress bar (label ``stochastic_spider``) when
:func:`dpsample.progress.is_enabled` (read on the host at each run, passed to the
jitted core as a static argument: each setting compiles once, same iterates).
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from dpsample import progress
from dpsample._src import precision
from dpsample.finders.spider_sosp.info import BranchCounts, StochasticSpiderInfo
from dpsample.plan import Plan
from dpsample.problem import Problem
from dpsample.types import Array, PRNGKey

__all__ = []


# ---------------------------------------------------------------- Algorithm 1 core
class _SpiderState(NamedTuple):
    x: Array
    x_prev: Array
    g_prev: Array
    drift: Array
    frozen: Array
    n_o1_drift: Array
    n_o1_kick: Array
    n_o2: Array
    ptr: Array
    aborted: Array


@functools.partial(
    jax.jit,
    static_argnames=(
        "o1_fn",
        "o2_fn",
        "num_iters",
        "kick_mode",
        "batches",
        "show_progress",
    ),
)
def _spider_scan(
    rng_key: PRNGKey,
    x0: Array,
    perm: Array,
    params: dict[str, Array],
    o1_ops: dict[str, Any],
    o2_ops: dict[str, Any],
    *,
    o1_fn: Any,
    o2_fn: Any,
    num_iters: int,
    kick_mode: str,
    batches: tuple[int, int] | None,
    show_progress: bool = False,
) -> tuple[_SpiderState, Array, Array]:
    # The oracles enter as (static structure, traced operands) pairs
    # (``oracle.functional()``): the data and the noise scales are arguments, so
    # repeated runs with the same shapes and structure reuse one compilation.
    d = x0.shape[0]
    eta, kappa = params["eta"], params["kappa"]

    def indices(ptr: Array, size: int) -> Array | None:
        if batches is None:
            return None
        return lax.dynamic_slice(perm, (ptr,), (size,))

    def step(state: _SpiderState, key: PRNGKey):
        k_oracle, k_kick = jax.random.split(key)
        kick = (jnp.linalg.norm(state.g_prev) <= params["alpha_kick"]) & (
            state.frozen <= 0
        )
        drift_reset = state.drift >= kappa
        use_o1 = (kick | drift_reset) if kick_mode == "o1" else drift_reset
        n1 = state.n_o1_drift + state.n_o1_kick
        # The cap is checked *before* the call (E7): the (N1_max+1)-th O1 call never
        # happens; the run aborts and releases data-independent points.
        aborted = state.aborted | (use_o1 & (n1 >= params["n1_max"]))
        branch = jnp.where(aborted, 2, jnp.where(use_o1, 0, 1))

        def call_o1(_):
            idx = indices(state.ptr, batches[0]) if batches else None
            return o1_fn(o1_ops, k_oracle, state.x, idx)

        def call_o2(_):
            idx = indices(state.ptr, batches[1]) if batches else None
            return state.g_prev + o2_fn(o2_ops, k_oracle, state.x, state.x_prev, idx)

        def no_call(_):
            return state.g_prev

        g = lax.switch(branch, (call_o1, call_o2, no_call), None)
        xi = params["kick_std"] * jax.random.normal(k_kick, (d,), jnp.float64)
        if kick_mode == "o1":
            g = jnp.where(kick, g + xi, g)  # the kick noise stays in the estimator
            move = g
        else:
            move = jnp.where(kick, g + xi, g)  # perturb: the estimator stays g
        x_next = state.x - eta * move
        drift = jnp.where(use_o1, 0.0, state.drift) + jnp.sum((x_next - state.x) ** 2)
        frozen = jnp.where(kick, params["freeze"], state.frozen - 1)
        o1_kick = use_o1 & kick if kick_mode == "o1" else jnp.asarray(False)
        o1_drift = use_o1 & ~o1_kick
        consumed = jnp.where(use_o1, batches[0], batches[1]) if batches else 0
        new = _SpiderState(
            x=x_next,
            x_prev=state.x,
            g_prev=g,
            drift=drift,
            frozen=frozen,
            n_o1_drift=state.n_o1_drift + o1_drift,
            n_o1_kick=state.n_o1_kick + o1_kick,
            n_o2=state.n_o2 + ~use_o1,
            ptr=state.ptr + consumed,
            aborted=aborted,
        )
        # Once aborted, nothing moves and no oracle is called again.
        new = jax.tree.map(lambda a, b: jnp.where(aborted, a, b), state, new)
        new = new._replace(aborted=aborted)
        code = jnp.where(
            aborted, 3, jnp.where(kick, 2, jnp.where(use_o1, 0, 1))
        ).astype(jnp.int32)
        return new, (new.x, code)

    init = _SpiderState(
        x=x0,
        x_prev=x0,
        g_prev=jnp.zeros_like(x0),
        drift=kappa,  # drift_{-1} = kappa: the first step calls O1 (E8)
        frozen=jnp.asarray(1, jnp.int32),
        n_o1_drift=jnp.asarray(0, jnp.int32),
        n_o1_kick=jnp.asarray(0, jnp.int32),
        n_o2=jnp.asarray(0, jnp.int32),
        ptr=jnp.asarray(0, jnp.int32),
        aborted=jnp.asarray(False),
    )
    final, (xs, codes) = progress.scan(
        step,
        init,
        jax.random.split(rng_key, num_iters),
        label="stochastic_spider",
        show=show_progress,
    )
    return final, xs, codes


def algorithm_1(
    rng_key: PRNGKey,
    plan: Plan,
    problem: Problem,
    x0: Array,
    permutation: Any,
) -> tuple[Array, StochasticSpiderInfo]:
    """Run Algorithm 1 of ``plan`` on ``problem`` (the data its oracles see)."""
    population = plan["variant"] == "population"
    o1 = plan.internal["o1"].with_data(problem)
    o2 = plan.internal["o2"].with_data(problem)
    if population:
        if permutation is None:
            raise ValueError("The population variant needs a public permutation")
        perm = jnp.asarray(permutation, jnp.int32)
        if perm.shape != (problem.n,):
            raise ValueError(f"Expected a permutation of length {problem.n}")
        b1, b2 = plan["batch_o1"], plan["batch_o2"]
        if b1 * plan["max_o1_calls"] + b2 * plan["num_iters"] > problem.n:
            raise ValueError("The plan would reuse samples of D1")
        batches: tuple[int, int] | None = (b1, b2)
    else:
        perm = jnp.zeros((1,), jnp.int32)
        batches = None
    params = {
        "eta": jnp.float64(plan["step_size"]),
        "kappa": jnp.float64(plan["drift_threshold"]),
        "alpha_kick": jnp.float64(plan["alpha_kick"]),
        "kick_std": jnp.float64(plan["kick_std"]),
        "freeze": jnp.int32(plan["freeze_period"]),
        "n1_max": jnp.int32(plan["max_o1_calls"]),
    }
    o1_fn, o1_ops = o1.functional()
    o2_fn, o2_ops = o2.functional()
    final, xs, codes = _spider_scan(
        rng_key,
        x0,
        perm,
        params,
        o1_ops,
        o2_ops,
        o1_fn=o1_fn,
        o2_fn=o2_fn,
        num_iters=plan["num_iters"],
        kick_mode=plan["kick_mode"],
        batches=batches,
        show_progress=progress.is_enabled(),
    )
    codes = np.asarray(codes)
    info = StochasticSpiderInfo(
        algorithm="stochastic_spider",
        n_o1_drift=int(final.n_o1_drift),
        n_o1_kick=int(final.n_o1_kick),
        n_o2=int(final.n_o2),
        cap_hit=bool(final.aborted),
        branch_counts=BranchCounts(
            **{
                name: int(np.sum(codes == c))
                for c, name in enumerate(("o1_drift", "o2", "kick", "aborted"))
            }
        ),
        samples_used=int(final.ptr) if population else None,
    )
    return xs, info


precision.scope_public(globals())
