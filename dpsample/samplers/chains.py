"""Compiled Markov chains on the Gibbs target, shared by the private and test paths.

:func:`run_chain` (the last state of one chain: what
:class:`~dpsample.samplers.gibbs.Gibbs` releases) and :func:`trace_chains` (every
position of many chains: the non-private :func:`dpsample.samplers.diagnostics.run`)
are module-level ``jax.jit`` cores keyed on structure only: the target's
:class:`~dpsample.samplers.target.TargetStructure` (loss function, ``n``, ``d``, the
ball, the constants), the :class:`KernelSpec` (a route's kernel and its static options,
:mod:`dpsample.samplers.routes`) and the number of steps. The data, ``beta``, ``mu``,
the step size, the keys and the states are traced operands, so a second chain with the
same shapes and options, on other data or at another temperature, reuses the
compilation. Whether a progress bar is drawn (:mod:`dpsample.progress`, read on the
host at each call) is static too; it changes no result.
"""

from __future__ import annotations

import abc
import functools
import math
from collections.abc import Callable
from typing import Any, ClassVar

import jax
import jax.numpy as jnp

from dpsample import progress
from dpsample._src import precision, validation
from dpsample.domains import Ball
from dpsample.samplers import restricted_gaussian
from dpsample.samplers.target import GibbsTarget, TargetStructure
from dpsample.types import Array, PRNGKey

__all__ = [
    "KernelSpec",
    "initial_point",
    "run_chain",
    "trace_chains",
]


class KernelSpec(abc.ABC):
    """A route's sampler kernel with its static options (hashable, the jit key).

    Each route of :mod:`dpsample.samplers.routes` has its own frozen dataclass
    subclass (e.g. :class:`~dpsample.samplers.routes.proximal.ProximalKernel`): it
    builds the kernel and counts the per-example evaluations a number of steps does,
    whatever the data. :func:`run_chain` and :func:`trace_chains` take any of them.

    Attributes:
        method: The route's name (``"proximal"``, ``"langevin"``, ``"mala"``), used
            in progress labels.

    Examples:
        >>> from dpsample.samplers.routes.proximal import ProximalKernel
        >>> ProximalKernel(num_trials=50, num_levels=20).loss_evaluations(3)
        2148
    """

    method: ClassVar[str] = ""

    @abc.abstractmethod
    def build(self) -> tuple[Callable[..., Any], Callable[..., Any]]:
        """``(init(position, target), kernel(key, state, target, step_size))``."""

    @abc.abstractmethod
    def loss_evaluations(self, num_steps: int) -> int:
        """Per-example loss evaluations of ``num_steps`` steps, whatever the data."""

    @abc.abstractmethod
    def gradient_evaluations(self, num_steps: int, n: int) -> int:
        """Per-example gradient evaluations of ``num_steps`` steps on ``n`` examples."""


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
