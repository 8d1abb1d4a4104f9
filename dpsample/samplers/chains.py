"""Compiled Markov chains on the Gibbs target, shared by the private and test paths.

:func:`run_chain` (the last state of one chain: what
:class:`~dpsample.samplers.gibbs.Gibbs` releases) and :func:`trace_chains` (every
position of many chains: the non-private :func:`dpsample.samplers.diagnostics.run`)
are module-level ``jax.jit`` cores keyed on structure only: the target's
:class:`~dpsample.samplers.target.TargetStructure` (loss function, ``n``, ``d``, the
ball, the constants), the :class:`KernelSpec` (method and its static options) and the
number of steps. The data, ``beta``, ``mu``, the step size, the keys and the states
are traced operands, so a second chain with the same shapes and options, on other data
or at another temperature, reuses the compilation. Whether a progress bar is drawn
(:mod:`dpsample.progress`, read on the host at each call) is static too; it changes
no result.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from dpsample import progress
from dpsample._src import precision, validation
from dpsample.domains import Ball
from dpsample.samplers import langevin, mala, proximal, restricted_gaussian, rgo
from dpsample.samplers.target import GibbsTarget, TargetStructure
from dpsample.types import Array, PRNGKey

__all__ = [
    "METHODS",
    "KernelSpec",
    "initial_point",
    "run_chain",
    "trace_chains",
]

#: The samplers of the Gibbs target.
METHODS = ("proximal", "langevin", "mala")


@dataclasses.dataclass(frozen=True)
class KernelSpec:
    """A sampler kernel's method and static options (hashable).

    Attributes:
        method: ``"proximal"``, ``"langevin"`` or ``"mala"``.
        num_trials: Proximal only: RGO trials per step.
        num_levels: Proximal only: RGO series cap.
        clip_norm: Langevin only: per-example gradient clipping norm (``None``: no
            clipping).

    Examples:
        >>> from dpsample.samplers.chains import KernelSpec
        >>> KernelSpec("proximal", num_trials=50, num_levels=20).loss_evaluations(3)
        2148
    """

    method: str
    num_trials: int = rgo.DEFAULT_NUM_TRIALS
    num_levels: int = rgo.DEFAULT_NUM_LEVELS
    clip_norm: float | None = None

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"Expected method in {METHODS}, got {self.method!r}")
        validation.positive_int("num_trials", self.num_trials)
        validation.positive_int("num_levels", self.num_levels)

    def build(self) -> tuple[Callable[..., Any], Callable[..., Any]]:
        """``(init(position, target), kernel(key, state, target, step_size))``."""
        if self.method == "proximal":
            return proximal.init, proximal.build_kernel(
                num_trials=self.num_trials, num_levels=self.num_levels
            )
        if self.method == "langevin":
            return langevin.init, langevin.build_kernel(clip_norm=self.clip_norm)
        return mala.init, mala.build_kernel()

    def loss_evaluations(self, num_steps: int) -> int:
        """Per-example loss evaluations of ``num_steps`` proximal steps.

        Each step's RGO evaluates ``2 pool_size(num_trials, num_levels)``
        per-example losses, whatever the data
        (:func:`dpsample.samplers.rgo.sample_oracle`).
        Zero for the gradient-based methods (see :meth:`gradient_evaluations`).
        """
        if self.method != "proximal":
            return 0
        return num_steps * 2 * rgo.pool_size(self.num_trials, self.num_levels)

    def gradient_evaluations(self, num_steps: int, n: int) -> int:
        """Per-example gradient evaluations of ``num_steps`` steps on ``n`` examples.

        Langevin: one clipped per-example gradient of every example a step. MALA: one
        value-and-gradient of the log-density (every example) at ``x_0`` and at each
        proposal. Zero for the proximal sampler (loss values only).
        """
        if self.method == "langevin":
            return num_steps * n
        if self.method == "mala":
            return (num_steps + 1) * n
        return 0


@functools.partial(jax.jit, static_argnames=("structure",))
def _initial_point(
    rng_key: PRNGKey, std: Array, *, structure: TargetStructure
) -> Array:
    ball = structure.template.domain
    assert isinstance(ball, Ball)
    return restricted_gaussian.sample(
        rng_key, jnp.zeros(structure.dim, jnp.float64), std, ball
    )


def initial_point(rng_key: PRNGKey, target: GibbsTarget) -> Array:
    r"""A draw of :math:`\pi_0 \propto e^{-\beta\mu\|x\|^2/2}` on ``K`` (public).

    For ``mu > 0`` this is the exact restricted Gaussian ``N(0, I/(beta mu)) ∩ K``
    (``N(0, (D^2/d) I) ∩ K`` for Theorem 5.6's ``mu``), compiled once per ball and
    dimension; for ``mu = 0`` it is uniform on ``K``. It reads no private data.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> from dpsample import Ball, Problem
        >>> from dpsample.samplers.chains import initial_point
        >>> from dpsample.samplers.target import GibbsTarget
        >>> p = Problem(lambda x, z: jnp.abs(x[0] - z), jnp.zeros(3),
        ...             Ball(1.0, dim=1), lipschitz=1.0)
        >>> x0 = initial_point(jax.random.key(0), GibbsTarget.create(p, beta=2.0,
        ...                    mu=1.0))
        >>> x0.shape, bool(jnp.abs(x0[0]) <= 1.0)
        ((1,), True)
    """
    ball = target.problem.domain
    assert isinstance(ball, Ball)  # checked by GibbsTarget.create
    if target.mu > 0:
        structure, _ = target.functional()
        std = 1.0 / math.sqrt(target.beta * target.mu)
        return _initial_point(rng_key, jnp.float64(std), structure=structure)
    return ball.sample_uniform(rng_key, 1)[0]


@functools.partial(
    jax.jit, static_argnames=("structure", "spec", "num_steps", "show_progress")
)
def _run_chain(
    rng_key: PRNGKey,
    state: Any,
    operands: dict[str, Any],
    step_size: Array,
    *,
    structure: TargetStructure,
    spec: KernelSpec,
    num_steps: int,
    show_progress: bool,
) -> Any:
    target = structure.bind(**operands)
    _, kernel = spec.build()

    def body(s: Any, k: PRNGKey) -> tuple[Any, None]:
        new, _ = kernel(k, s, target, step_size)
        return new, None

    keys = jax.random.split(rng_key, num_steps)
    label = f"gibbs ({spec.method})"
    final, _ = progress.scan(body, state, keys, label=label, show=show_progress)
    return final


def run_chain(
    rng_key: PRNGKey,
    target: GibbsTarget,
    state: Any,
    *,
    spec: KernelSpec,
    step_size: float,
    num_steps: int,
) -> Any:
    """``num_steps`` kernel steps from ``state`` under one compiled ``lax.scan``.

    Step ``t`` uses the ``t``-th key of ``jax.random.split(rng_key, num_steps)``.
    Compiled once per target structure, kernel spec, ``num_steps`` and progress
    setting (:func:`dpsample.progress.is_enabled`).

    Returns:
        The last state.
    """
    structure, operands = target.functional()
    return _run_chain(
        rng_key,
        state,
        operands,
        jnp.float64(step_size),
        structure=structure,
        spec=spec,
        num_steps=validation.positive_int("num_steps", num_steps),
        show_progress=progress.is_enabled(),
    )


@functools.partial(jax.jit, static_argnames=("structure", "spec", "show_progress"))
def _trace_chains(
    keys: Array,
    states: Any,
    operands: dict[str, Any],
    step_size: Array,
    *,
    structure: TargetStructure,
    spec: KernelSpec,
    show_progress: bool,
) -> tuple[Any, tuple[Array, Any]]:
    target = structure.bind(**operands)
    _, kernel = spec.build()
    label = f"gibbs chains ({spec.method})"

    def one_chain(ks: Array, s: Any) -> tuple[Any, tuple[Array, Any]]:
        def body(carry: Any, k: PRNGKey) -> tuple[Any, tuple[Array, Any]]:
            new, info = kernel(k, carry, target, step_size)
            return new, (new.position, info)

        # The step counter is not batched: one bar for all chains.
        return progress.scan(body, s, ks, label=label, show=show_progress)

    return jax.vmap(one_chain)(keys, states)


def trace_chains(
    keys: Array,
    target: GibbsTarget,
    states: Any,
    *,
    spec: KernelSpec,
    step_size: float,
) -> tuple[Any, tuple[Array, Any]]:
    """Independent chains, one per row of ``keys`` ``(chains, steps)``, every step kept.

    Compiled once per target structure, kernel spec, shapes and progress setting.
    **Not private** when its positions or infos are released (the diagnostics
    runner's use).

    Returns:
        ``(last states, (positions (chains, steps, d), per-step infos))``.
    """
    structure, operands = target.functional()
    return _trace_chains(
        keys,
        states,
        operands,
        jnp.float64(step_size),
        structure=structure,
        spec=spec,
        show_progress=progress.is_enabled(),
    )


precision.scope_public(globals())
