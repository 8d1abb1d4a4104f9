"""DP-SGD's private half: the compiled loop, the run of a plan and its info.

:mod:`dpsample.finders.dp_sgd` plans in public (the schedule, the calibrated
noise, the guarantee); this module runs a plan on the private data: noisy SGD
steps in one jitted ``lax.scan`` keyed on the oracle's static structure and ``T``
only (another key, other data of the same shapes or another epsilon with the same
``T`` reuse the compilation), the output rule, and the public facts of the run
(:class:`DPSGDInfo`). Every name is importable from :mod:`dpsample.finders.dp_sgd`
as before the split.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp

from dpsample import progress
from dpsample._src import precision
from dpsample.base import AlgorithmInfo, optional
from dpsample.domains import Ball, project_with, projection_operands
from dpsample.finders.oracles import FirstKindOracle
from dpsample.finders.outputs import release
from dpsample.plan import Plan
from dpsample.privacy import PrivateResult
from dpsample.problem import Problem
from dpsample.types import Array, PRNGKey

__all__ = ["DPSGDInfo", "run_plan"]


def _sgd_scan_body(
    rng_key: PRNGKey,
    x0: Array,
    learning_rate: Array,
    ball: dict[str, Any] | None,
    o_ops: dict[str, Any],
    *,
    o_fn: Any,
    num_steps: int,
    show_progress: bool = False,
) -> Array:
    """Iterates ``x_1..x_T``; ``o_fn, o_ops = oracle.functional()``.

    ``show_progress``: a progress bar (:mod:`dpsample.progress`); same iterates.
    """

    def step(x, key):
        x_new = project_with(x - learning_rate * o_fn(o_ops, key, x), ball)
        return x_new, x_new

    keys = jax.random.split(rng_key, num_steps)
    _, xs = progress.scan(step, x0, keys, label="dp_sgd", show=show_progress)
    return xs


# The compiled core: keyed on the oracle's static structure (loss function, scheme,
# batch sizes, clipping), T and whether a progress bar is drawn only; the data, the
# noise std, the clip norm, the step size and the ball are traced operands, so another
# key, other data of the same shape or another epsilon (same T) reuse the compilation.
_sgd_scan = jax.jit(
    _sgd_scan_body, static_argnames=("o_fn", "num_steps", "show_progress")
)


def _sgd_iterates(
    rng_key: PRNGKey,
    oracle: FirstKindOracle,
    x0: Array,
    *,
    num_steps: int,
    learning_rate: float,
    project: bool = True,
) -> Array:
    """Iterates ``x_1..x_T`` of noisy SGD driven by ``oracle`` (no accounting here).

    Not jitted (callers may ``jit``/``vmap`` it); :func:`dp_sgd` runs the same
    computation through the module-level compiled core.
    """
    o_fn, o_ops = oracle.functional()
    return _sgd_scan_body(
        rng_key,
        x0,
        jnp.asarray(learning_rate, jnp.float64),
        projection_operands(oracle.spec.domain, project),
        o_ops,
        o_fn=o_fn,
        num_steps=num_steps,
    )


@dataclasses.dataclass(frozen=True)
class DPSGDInfo(AlgorithmInfo):
    """Public facts of a :class:`~dpsample.finders.dp_sgd.DPSGD` run (``result.info``).

    Attributes:
        algorithm: ``"dp_sgd"``.
        mode: ``"clipped"`` (default) or ``"no_clipping"``
            (``enforce_sensitivity=False``).
        sampling: The batch-sampling scheme.
        num_steps: ``T``.
        batch_size: ``b`` (expected size for Poisson).
        max_batch_size: Padded batch size ``m`` (``b`` unless Poisson).
        overflow_probability: Probability that a Poisson batch is truncated.
        learning_rate: ``eta``.
        contribution_bound: ``C`` (clip norm or declared ``G``).
        clip_bound: The clip after the rounding margin, or ``None``.
        gradient_dtype: Dtype of the per-example gradients.
        noise_multiplier: ``z``: noise std on the sum over ``C`` (ecosystem unit).
        noise_std: Noise std on the mean, ``z C F / b``.
        gradient_bound_failure: ``delta_E`` (no-clipping mode).
        accountant_delta: The delta left to the accountant.
        oracle_calls: ``{"first_kind": T, "second_kind": 0}``.
        gradient_evaluations: ``T m`` (padded rows included).
        output: ``"random"``, ``"last"`` or ``"tail_average"``.
        output_index: Index of the released iterate (drawn from the key only);
            for ``"tail_average"`` the first averaged index (``floor(T/2)``).
        projected: Whether iterates were projected onto a ball.
        parameter_sources: Where each default came from (text).
        event: The dp_accounting event of one release.
        paper_claim: The paper's claim this implementation corrects, if any.
        iterates: All iterates (``return_iterates=True``), covered by the guarantee.
    """

    algorithm: str
    mode: str
    sampling: str
    num_steps: int
    batch_size: float
    max_batch_size: int
    overflow_probability: float
    learning_rate: float
    contribution_bound: float
    clip_bound: float | None
    gradient_dtype: str
    noise_multiplier: float
    noise_std: float
    gradient_bound_failure: float
    accountant_delta: float
    oracle_calls: dict[str, int]
    gradient_evaluations: int
    output: str
    output_index: int
    projected: bool
    parameter_sources: dict[str, str]
    event: Any
    paper_claim: str | None = optional()
    iterates: Array | None = optional()
    diagnostics: None = None


def run_plan(
    name: str, rng_key: PRNGKey, plan: Plan, problem: Problem
) -> PrivateResult:
    """Run a DP-SGD plan on a problem with the plan's spec (``DPSGD.run``'s work).

    The iterates come from the module-level compiled core (:func:`_sgd_scan`),
    the released point from the plan's output rule
    (:func:`~dpsample.finders.outputs.release`); ``info`` is a :class:`DPSGDInfo`
    of public facts of the plan. The work is the same whatever the data.
    """
    oracle = plan.internal["oracle"].with_data(problem)
    num_steps = plan["num_steps"]
    k_run, k_out = jax.random.split(rng_key)
    o_fn, o_ops = oracle.functional()
    xs = _sgd_scan(
        k_run,
        jnp.asarray(plan["x0"], jnp.float64),
        jnp.float64(plan["learning_rate"]),
        projection_operands(problem.domain, plan["project"]),
        o_ops,
        o_fn=o_fn,
        num_steps=num_steps,
        show_progress=progress.is_enabled(),
    )
    value, index = release(k_out, xs, plan["output"], problem.domain)
    mode = plan.internal["mode"]
    info = DPSGDInfo(
        algorithm=name,
        mode=mode,
        sampling=plan["sampling"],
        num_steps=num_steps,
        batch_size=oracle.batch_size,
        max_batch_size=oracle.max_batch_size,
        overflow_probability=oracle.overflow_probability,
        learning_rate=plan["learning_rate"],
        contribution_bound=plan.internal["contribution"],
        clip_bound=oracle.clip_bound,
        gradient_dtype=oracle.gradient_dtype,
        noise_multiplier=plan["noise_multiplier"],
        noise_std=oracle.noise_std,
        gradient_bound_failure=plan["gradient_bound_failure"],
        accountant_delta=plan.internal["delta_acc"],
        oracle_calls={"first_kind": num_steps, "second_kind": 0},
        gradient_evaluations=plan.cost.gradient_evaluations,
        output=plan["output"],
        output_index=index,
        projected=bool(plan["project"] and isinstance(problem.domain, Ball)),
        parameter_sources=dict(plan.internal["sources"]),
        event=oracle.event,
        paper_claim=(
            "seed 002 Thm 3.3 states (epsilon, 2 delta); the coupling bound used "
            "here is (epsilon, delta_acc + (1 + e^epsilon) delta_E)"
            if mode == "no_clipping"
            else None
        ),
        iterates=xs if plan["return_iterates"] else None,
    )
    return PrivateResult(value, plan.guarantee, info)


precision.scope_public(globals())
