"""DP-SPIDER's private loop: the iterates ``w_1..w_T`` driven by its two oracles.

The recursion of :mod:`dpsample.finders.dp_spider` (seed 003 Algorithm 1): at an anchor
step (``t % q == 0``) the first-kind oracle's fresh estimate, otherwise the previous
estimate plus the second-kind oracle's difference, then a projected step. The plan,
the accounting and the output rules live in :mod:`dpsample.finders.dp_spider`; this
module holds only the compiled loop, shared by the finder, the audits and the
benchmarks (no accounting here).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from dpsample import progress
from dpsample._src import precision
from dpsample.domains import project_with, projection_operands
from dpsample.finders.oracles import FirstKindOracle, SecondKindOracle
from dpsample.types import Array, PRNGKey

__all__ = ["spider_iterates", "spider_params", "spider_scan", "spider_scan_body"]


def spider_scan_body(
    rng_key: PRNGKey,
    w0: Array,
    params: dict[str, Array],
    ball: dict[str, Any] | None,
    o1_ops: dict[str, Any],
    o2_ops: dict[str, Any],
    *,
    o1_fn: Any,
    o2_fn: Any,
    num_steps: int,
    show_progress: bool = False,
) -> Array:
    """Iterates ``w_1..w_T``; ``o*_fn, o*_ops = oracle.functional()``.

    ``params = {"learning_rate": eta, "phase_length": q}`` (traced).
    ``show_progress``: a progress bar (:mod:`dpsample.progress`); same iterates.
    """
    eta, q = params["learning_rate"], params["phase_length"]

    def step(carry, inp):
        w, w_prev, est = carry
        t, key = inp
        k1, k2 = jax.random.split(key)
        est = jax.lax.cond(
            t % q == 0,
            lambda: o1_fn(o1_ops, k1, w),
            lambda: est + o2_fn(o2_ops, k2, w, w_prev),
        )
        w_new = project_with(w - eta * est, ball)
        return (w_new, w, est), w_new

    keys = jax.random.split(rng_key, num_steps)
    init = (w0, w0, jnp.zeros_like(w0))
    _, ws = progress.scan(
        step,
        init,
        (jnp.arange(num_steps), keys),
        label="dp_spider",
        show=show_progress,
    )
    return ws


# The compiled core: keyed on the two oracles' static structures, T and whether a
# progress bar is drawn only; the data, the noise parameters, eta, q and the ball are
# traced operands, so another key, other data of the same shape or another epsilon
# (same T) reuse the compilation.
spider_scan = jax.jit(
    spider_scan_body,
    static_argnames=("o1_fn", "o2_fn", "num_steps", "show_progress"),
)


def spider_params(learning_rate: float, phase_length: int) -> dict[str, Array]:
    """The traced step parameters ``{"learning_rate": eta, "phase_length": q}``."""
    return {
        "learning_rate": jnp.float64(learning_rate),
        "phase_length": jnp.int64(phase_length),
    }


def spider_iterates(
    rng_key: PRNGKey,
    o1: FirstKindOracle,
    o2: SecondKindOracle,
    w0: Array,
    *,
    num_steps: int,
    phase_length: int,
    learning_rate: float,
    project: bool = True,
) -> Array:
    """Iterates ``w_1..w_T`` of DP-SPIDER driven by the two oracles (no accounting).

    Not jitted (callers may ``jit``/``vmap`` it); the finder
    (:func:`~dpsample.finders.dp_spider.dp_spider`) runs the same computation
    through the compiled core ``spider_scan``.
    """
    o1_fn, o1_ops = o1.functional()
    o2_fn, o2_ops = o2.functional()
    return spider_scan_body(
        rng_key,
        w0,
        spider_params(learning_rate, phase_length),
        projection_operands(o1.spec.domain, project),
        o1_ops,
        o2_ops,
        o1_fn=o1_fn,
        o2_fn=o2_fn,
        num_steps=num_steps,
    )


precision.scope_public(globals())
