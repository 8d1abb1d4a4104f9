r"""MALA on the Gibbs target (BlackJAX's kernel with ``-inf`` outside ``K``).

The Metropolis-adjusted Langevin algorithm targets
:math:`\pi_D \propto \exp(-\beta(F_D + \tfrac{\mu}{2}\|x\|^2))\,\mathbf 1_K` exactly:
the proposal :math:`y = x + h\nabla\log\pi_D(x) + \sqrt{2h}\,\xi` is accepted with the
Metropolis–Hastings probability, and a proposal outside ``K`` has density zero and is
always rejected. The kernel is ``blackjax.mala`` applied to
:meth:`GibbsTarget.logdensity <dpsample.samplers.target.GibbsTarget.logdensity>`; for
non-smooth losses autodiff supplies a subgradient (MALA stays exact, mixing is
slower). ``jit`` is left to the caller.

As BlackJAX's ``blackjax.mala``, every function also takes a plain
``logdensity_fn(position) -> scalar`` in place of the target, with positions any
pytree of arrays: the kernel is then BlackJAX's MALA on that density, computed in
the caller's precision (float32 in JAX's default 32-bit mode). With a
:class:`~dpsample.samplers.target.GibbsTarget` (the route
:func:`dpsample.samplers.gibbs.gibbs` uses) positions are vectors of shape
``(d,)`` in ``K`` and everything runs in float64 whatever the caller's
``jax_enable_x64``: the TV declaration the private route rests on is about the
float64 chain.

Privacy:
    MALA's accept/reject step reads the data through the density ratio
    :math:`\pi_D(y)q(x|y)/(\pi_D(x)q(y|x))`, so its trajectory is **not** covered by
    the projected-Langevin bound of :mod:`dpsample.samplers.langevin` (that bound is
    for the Gaussian mechanism alone). Whether a step rejects is itself data-dependent
    and a rejection probability can be zero for one dataset and positive for its
    neighbour, so no per-step pure or Rényi bound follows from the Gaussian-mechanism
    argument. Nor is a quantitative total-variation bound to :math:`\pi_D`
    available for a constrained, possibly non-smooth, non-convex target. dpsample
    therefore attaches **no guarantee of its own** to MALA:
    :func:`dpsample.samplers.gibbs.gibbs` with ``method="mala"`` refuses to run
    unless the caller declares a public total-variation bound ``tv_bound`` (from
    their own mixing analysis), and then reports the exact target's guarantee with
    that TV slack, labelled as resting on the declaration.

References:
    G. O. Roberts and R. L. Tweedie, `Exponential convergence of Langevin
    distributions and their discrete approximations
    <https://doi.org/10.2307/3318418>`_, Bernoulli, 1996.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import blackjax
from blackjax.base import SamplingAlgorithm
from blackjax.mcmc.mala import MALAInfo, MALAState

from dpsample._src import precision, validation
from dpsample.samplers.target import (
    GibbsTarget,
    Target,
    build_sampling_algorithm,
    check_position,
    check_target,
    scoped_for_target,
)
from dpsample.types import ArrayLikeTree, PRNGKey

__all__ = ["MALAInfo", "MALAState", "as_top_level_api", "build_kernel", "init"]


def _logdensity(target: Target) -> Callable[[Any], Any]:
    target = check_target(target, sampler="mala")
    return target.logdensity if isinstance(target, GibbsTarget) else target


@scoped_for_target
def init(position: ArrayLikeTree, target: Target) -> MALAState:
    """BlackJAX MALA state at ``position`` for a target or a ``logdensity_fn``.

    With a :class:`~dpsample.samplers.target.GibbsTarget` the position must be a
    vector of shape ``(d,)`` in ``K`` (a concrete position that is not finite or
    lies outside ``K`` is refused, ``ValueError``,
    :func:`~dpsample.samplers.target.check_position`) and the state is float64.
    With a ``logdensity_fn`` the position is any pytree, kept in its own dtype.

    Raises:
        TypeError: ``target`` is neither a GibbsTarget nor callable.
        ValueError: A bad position for a GibbsTarget.

    Examples:
        >>> import jax.numpy as jnp
        >>> from dpsample.samplers import mala
        >>> state = mala.init({"a": jnp.zeros(2, jnp.float32)},
        ...                   lambda p: -0.5 * jnp.sum(p["a"] ** 2))
        >>> state.position["a"].dtype, float(state.logdensity)
        (dtype('float32'), -0.0)
    """
    logdensity_fn = _logdensity(target)
    if isinstance(target, GibbsTarget):
        position = check_position(target, position)
    return blackjax.mala.init(position, logdensity_fn)


def build_kernel() -> Callable[..., tuple[MALAState, MALAInfo]]:
    """``kernel(rng_key, state, target, step_size) -> (MALAState, MALAInfo)``.

    ``target`` is a :class:`~dpsample.samplers.target.GibbsTarget` (the kernel
    then computes in float64 whatever the caller's ``jax_enable_x64``,
    :func:`~dpsample.samplers.target.scoped_kernel`) or a ``logdensity_fn``
    (BlackJAX's MALA kernel in the caller's precision, any pytree position).

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> from dpsample.samplers import mala
        >>> logdensity_fn = lambda x: -0.5 * jnp.sum(x**2)
        >>> kernel = mala.build_kernel()
        >>> state, info = kernel(jax.random.key(0), mala.init(jnp.zeros(2),
        ...                      logdensity_fn), logdensity_fn, 0.5)
        >>> state.position.shape
        (2,)
    """
    inner = blackjax.mala.build_kernel()

    def kernel(
        rng_key: PRNGKey, state: MALAState, target: Target, step_size: float
    ) -> tuple[MALAState, MALAInfo]:
        return inner(rng_key, state, _logdensity(target), step_size)

    return scoped_for_target(kernel, argnum=2)


def as_top_level_api(target: Target, step_size: float) -> SamplingAlgorithm:
    """MALA as a BlackJAX ``SamplingAlgorithm(init, step)``.

    Built by :func:`~dpsample.samplers.target.build_sampling_algorithm`:
    ``init(position, rng_key=None)`` and ``step(rng_key, state) -> (state,
    info)`` with the target closed over, so ``jax.jit(algo.step)`` and
    ``blackjax.util.run_inference_algorithm`` work as for ``blackjax.mala``.

    Args:
        target: A :class:`~dpsample.samplers.target.GibbsTarget` (positions of
            shape ``(d,)`` in ``K``, float64 whatever the caller's
            ``jax_enable_x64``; a ``jit`` of ``step`` in 32-bit mode is called
            inside ``with jax.enable_x64(True):``), or a plain
            ``logdensity_fn(position) -> scalar`` as BlackJAX's (any pytree
            position, the caller's precision: float32 positions in 32-bit mode
            stay float32, no ``enable_x64`` needed).
        step_size: ``h > 0``.

    Returns:
        A ``blackjax.base.SamplingAlgorithm``.

    Raises:
        TypeError: ``target`` is neither a GibbsTarget nor callable.
        ValueError: ``step_size <= 0``.

    Privacy:
        None of its own (module docstring): the private route is
        :func:`dpsample.samplers.gibbs.gibbs` with a declared ``tv_bound``. A
        plain ``logdensity_fn`` has no privacy meaning at all.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> import dpsample
        >>> from dpsample import Ball, Problem
        >>> from dpsample.samplers import mala
        >>> from dpsample.samplers.target import GibbsTarget
        >>> p = Problem(lambda x, z: jnp.abs(x[0] - z), jnp.zeros(4),
        ...             Ball(1.0, dim=1), lipschitz=1.0)
        >>> algo = mala.as_top_level_api(GibbsTarget.create(p, beta=2.0, mu=0.5), 0.1)
        >>> state, info = algo.step(jax.random.key(0), algo.init(jnp.zeros(1)))
        >>> bool(jnp.abs(state.position[0]) <= 1.0)
        True

        A BlackJAX-style log-density on a pytree position:

        >>> logdensity_fn = lambda p: -0.5 * (p["mu"] ** 2 + jnp.sum(p["w"] ** 2))
        >>> algo = mala.as_top_level_api(logdensity_fn, 0.5)
        >>> state = algo.init({"mu": jnp.array(1.0), "w": jnp.zeros(3)})
        >>> state, info = jax.jit(algo.step)(jax.random.key(1), state)
        >>> state.position["w"].shape
        (3,)
    """
    check_target(target, sampler="mala")
    step_size = validation.positive("step_size", step_size)
    return build_sampling_algorithm(build_kernel(), init, target, (step_size,))


precision.scope_public(globals())
