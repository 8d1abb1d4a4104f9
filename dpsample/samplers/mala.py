r"""MALA on the Gibbs target (BlackJAX's kernel with ``-inf`` outside ``K``).

The Metropolis-adjusted Langevin algorithm targets
:math:`\pi_D \propto \exp(-\beta(F_D + \tfrac{\mu}{2}\|x\|^2))\,\mathbf 1_K` exactly:
the proposal :math:`y = x + h\nabla\log\pi_D(x) + \sqrt{2h}\,\xi` is accepted with the
Metropolis–Hastings probability, and a proposal outside ``K`` has density zero and is
always rejected. The kernel is ``blackjax.mala`` applied to
:meth:`GibbsTarget.logdensity <dpsample.samplers.target.GibbsTarget.logdensity>`; for
non-smooth losses autodiff supplies a subgradient (MALA stays exact, mixing is
slower). ``jit`` is left to the caller.

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

import blackjax
from blackjax.base import SamplingAlgorithm
from blackjax.mcmc.mala import MALAInfo, MALAState

from dpsample._src import precision, validation
from dpsample.samplers.target import GibbsTarget, check_position, scoped_kernel
from dpsample.types import ArrayLike, PRNGKey

__all__ = ["MALAInfo", "MALAState", "as_top_level_api", "build_kernel", "init"]


def init(position: ArrayLike, target: GibbsTarget) -> MALAState:
    """BlackJAX MALA state at ``position`` (must lie in ``K``; shape ``(d,)``).

    A concrete position that is not finite or lies outside ``K`` is refused
    (``ValueError``, :func:`~dpsample.samplers.target.check_position`).
    """
    return blackjax.mala.init(check_position(target, position), target.logdensity)


def build_kernel() -> Callable[..., tuple[MALAState, MALAInfo]]:
    """``kernel(rng_key, state, target, step_size) -> (MALAState, MALAInfo)``.

    The kernel computes in float64 whatever the caller's ``jax_enable_x64``
    (:func:`~dpsample.samplers.target.scoped_kernel`).
    """
    inner = blackjax.mala.build_kernel()

    def kernel(
        rng_key: PRNGKey, state: MALAState, target: GibbsTarget, step_size: float
    ) -> tuple[MALAState, MALAInfo]:
        return inner(rng_key, state, target.logdensity, step_size)

    return scoped_kernel(kernel)


def as_top_level_api(target: GibbsTarget, step_size: float) -> SamplingAlgorithm:
    """MALA on the target as a BlackJAX ``SamplingAlgorithm(init, step)``.

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
    """
    kernel = build_kernel()
    step_size = validation.positive("step_size", step_size)

    @precision.scoped
    def init_fn(position: ArrayLike, rng_key: PRNGKey | None = None) -> MALAState:
        del rng_key
        return init(position, target)

    @scoped_kernel
    def step_fn(rng_key: PRNGKey, state: MALAState) -> tuple[MALAState, MALAInfo]:
        return kernel(rng_key, state, target, step_size)

    return SamplingAlgorithm(init_fn, step_fn)


precision.scope_public(globals())
