r"""Projected Langevin (projected noisy gradient descent) on the Gibbs target.

One step on :math:`\pi_D \propto \exp(-U)` restricted to the ball ``K``, with
:math:`U = \beta(F_D + \tfrac{\mu}{2}\|x\|^2)`:

.. math::
    x_{k+1} = \Pi_K\big(x_k - h\,\widehat{\nabla U}(x_k) + \sqrt{2h}\,\xi_k\big),
    \qquad \xi_k \sim N(0, I_d),

where :math:`\widehat{\nabla U}(x) = \beta\big(\tfrac1n\sum_i
\operatorname{clip}_G(\nabla f(x, z_i)) + \mu x\big)` uses per-example (sub)gradients
clipped to the declared Lipschitz constant ``G`` (a no-op when ``G`` is correct; it
makes the sensitivity bound hold by construction, whatever autodiff returns at kinks).
The Euler step is BlackJAX's ``sgmcmc.diffusions.overdamped_langevin``; the projection
is applied after it. The kernel follows BlackJAX's ``init / build_kernel /
as_top_level_api`` shape and returns ``(state, info)``; ``jit`` is left to the caller
(close over the target: ``jax.jit(lambda k, s: kernel(k, s, target, h))``, or
``jax.jit(algo.step)`` of :func:`as_top_level_api`).

As BlackJAX's kernels, every function also takes a plain
``logdensity_fn(position) -> scalar`` in place of the target, with positions any
pytree of arrays (ravelled with ``jax.flatten_util.ravel_pytree`` inside the step).
The step is then the unadjusted Langevin algorithm (ULA) on that density:
:math:`x_{k+1} = x_k + h\nabla\log p(x_k) + \sqrt{2h}\,\xi_k`, with no domain,
no projection and no clipping (there are no per-example gradients to clip), in
the caller's precision (float32 in JAX's default 32-bit mode). It carries no
privacy guarantee. With a :class:`~dpsample.samplers.target.GibbsTarget` the step is
the projected, clipped one above, on vectors of shape ``(d,)``, in float64
whatever the caller's ``jax_enable_x64`` (the clipping's rounding margin, which
the sensitivity bound rests on, is a float64 margin).

This chain is *biased*: its law does not converge to :math:`\pi_D` (the projection puts
mass on the boundary, and the Euler step has discretisation error; Chewi's book
section 10.3). Its privacy therefore does not come from the target but from the
trajectory (see :func:`trajectory_guarantee`).

Privacy:
    Replace-one neighbours. Given the previous iterate (public in the released
    trajectory), one step is the Gaussian mechanism on the drift, whose L2 sensitivity
    is :math:`h\beta\cdot 2G/n` (clipped per-example gradients; the regulariser is
    data-independent), with noise standard deviation :math:`\sqrt{2h}`; the projection
    is post-processing. ``K`` adaptive steps compose exactly into one Gaussian
    mechanism (Gaussian-DP composition) with noise over sensitivity
    :math:`n/(\beta G\sqrt{2hK})` (:func:`trajectory_noise_to_sensitivity`; half
    the noise multiplier in the Opacus / dp-accounting sense), i.e. Rényi DP
    :math:`\alpha K h \beta^2 G^2/n^2` at every order (GTU Lemma 2.2 with
    ``t = K h``, ``Delta = 2G/n``; samplers.md section 5.2). The clipped mean is
    computed with the library's rounding margin (:func:`potential_gradient`), so
    the sensitivity holds for the floating-point mean, not only in exact
    arithmetic. No convexity, smoothness or LSI is needed, and the whole
    trajectory may be released. The initial point must be data-independent and lie
    in ``K`` (:func:`init` refuses a concrete point outside it). Non-finite values:
    a per-example gradient with a NaN or inf entry contributes zero (public rule,
    :func:`potential_gradient`), so the sensitivity bound holds as stated and
    nothing raises during a run.

References:
    S. Bubeck, R. Eldan and J. Lehec, `Sampling from a log-concave distribution with
    projected Langevin Monte Carlo <https://arxiv.org/abs/1507.02564>`_, 2018.
    A. Ganesh, A. Thakurta and J. Upadhyay, `Universality of Langevin diffusion for
    private optimization, with applications to sampling from Rashomon sets
    <https://proceedings.mlr.press/v195/ganesh23a.html>`_, COLT 2023 (Lemma 2.2).
    J. Dong, A. Roth and W. Su, `Gaussian differential privacy
    <https://arxiv.org/abs/1905.02383>`_, 2019 (composition).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
from blackjax.base import SamplingAlgorithm
from blackjax.sgmcmc import diffusions
from jax.flatten_util import ravel_pytree

from dpsample._src import clipping, precision, validation
from dpsample.privacy.guarantee import PrivacyGuarantee
from dpsample.samplers.target import (
    GibbsTarget,
    StepSizeWarning,
    Target,
    build_sampling_algorithm,
    check_position,
    check_target,
    scoped_for_target,
)
from dpsample.types import Array, ArrayLike, ArrayLikeTree, ArrayTree, PRNGKey

__all__ = [
    "LangevinInfo",
    "LangevinState",
    "as_top_level_api",
    "build_kernel",
    "check_step_size",
    "default_step_size",
    "init",
    "potential_gradient",
    "trajectory_guarantee",
    "trajectory_noise_to_sensitivity",
]

#: Default step for smooth losses: ``SMOOTH_STEP_FACTOR / (beta (M + mu))``.
SMOOTH_STEP_FACTOR = 0.1
#: Default step for non-smooth losses: ``NONSMOOTH_STEP_FACTOR / (beta G)^2`` (the
#: practical proximal step of the defaults table, spec 000 section 6.2).
NONSMOOTH_STEP_FACTOR = 0.03
#: The step never exceeds ``DOMAIN_STEP_FACTOR * D^2 / d`` (noise well inside K).
DOMAIN_STEP_FACTOR = 0.01


class LangevinState(NamedTuple):
    """State of (projected) Langevin: the current position.

    A vector of shape ``(d,)`` for a GibbsTarget, any pytree for a
    ``logdensity_fn``.
    """

    position: ArrayTree


class LangevinInfo(NamedTuple):
    """Per-step information.

    Attributes:
        projected: whether the Euler step left ``K`` and was projected back
            (always ``False`` for a ``logdensity_fn``: no domain).
        drift_norm: norm of the (clipped) drift ``h * grad U`` used in the step.
    """

    projected: Array
    drift_norm: Array


def potential_gradient(
    target: GibbsTarget, x: ArrayLike, *, clip_norm: float | None = None
) -> Array:
    r"""``beta (mean_i clip(grad f(x, z_i)) + mu x)``, shape ``(d,)``.

    With ``clip_norm`` the mean is :func:`dpsample._src.clipping.clipped_mean`, the
    library's one clipping path: rows are clipped at ``clip_norm / F`` with the
    rounding margin ``F`` of :func:`~dpsample._src.clipping.clip_margin` (float64,
    ``n`` rows of dimension ``d``; ``F - 1`` is about ``1e-11``), so the *computed*
    mean moves by at most ``2 clip_norm / n`` when one example is replaced, the
    sensitivity :func:`trajectory_guarantee` uses. ``clip_norm`` must lie in
    ``[1e-140, 1e140]`` (:data:`~dpsample._src.clipping.CLIP_RANGES`, else
    ``ValueError``). A per-example gradient with a non-finite entry (the loss
    returned NaN or inf there) contributes zero (public rule, as the clipped
    oracles' rows), and nothing raises during a run.
    """
    problem = target.problem
    x = jnp.asarray(x, jnp.float64)
    grads = jax.vmap(jax.grad(problem.loss_fn), in_axes=(None, 0))(x, problem.data)
    if clip_norm is None:
        finite = jnp.all(jnp.isfinite(grads), axis=-1, keepdims=True)
        mean = jnp.mean(jnp.where(finite, grads, 0.0), axis=0)
    else:
        bound = clipping.check_clip_bound(clip_norm, "float64")
        mean = clipping.clipped_mean(grads, bound, "float64")
    return target.beta * (mean + target.mu * x)


@scoped_for_target
def init(position: ArrayLikeTree, target: Target) -> LangevinState:
    """Initial state at a data-independent ``position``.

    With a :class:`~dpsample.samplers.target.GibbsTarget` the position has shape
    ``(d,)`` and lies in ``K``: a concrete position that is not finite or lies
    outside ``K`` is refused (``ValueError``,
    :func:`~dpsample.samplers.target.check_position`): the first step's gradient
    is taken there, and the declared ``G`` holds on ``K`` only. With a
    ``logdensity_fn`` it is any pytree of arrays, kept in its own dtype.

    Raises:
        TypeError: ``target`` is neither a GibbsTarget nor callable.
        ValueError: A bad position for a GibbsTarget.

    Examples:
        >>> import jax.numpy as jnp
        >>> from dpsample.samplers import langevin
        >>> state = langevin.init({"w": jnp.zeros(2, jnp.float32)},
        ...                       lambda p: -jnp.sum(p["w"] ** 2))
        >>> state.position["w"].dtype
        dtype('float32')
    """
    target = check_target(target, sampler="langevin")
    if isinstance(target, GibbsTarget):
        return LangevinState(check_position(target, position))
    return LangevinState(jax.tree.map(jnp.asarray, position))


def build_kernel(
    *, clip_norm: float | None = None
) -> Callable[..., tuple[LangevinState, LangevinInfo]]:
    """Build the projected Langevin kernel.

    Args:
        clip_norm: per-example gradient clipping norm (``None``: no clipping). The
            private route :func:`dpsample.samplers.gibbs.gibbs` uses the declared
            Lipschitz constant ``G``. Rows are clipped with the library's rounding
            margin (:func:`potential_gradient`); the norm must lie in
            ``[1e-140, 1e140]`` (``ValueError`` otherwise).

    Returns:
        ``kernel(rng_key, state, target, step_size) -> (state, LangevinInfo)``.
        For a :class:`~dpsample.samplers.target.GibbsTarget` it is the projected
        step, computing in float64 whatever the caller's ``jax_enable_x64``
        (:func:`~dpsample.samplers.target.scoped_kernel`); for a
        ``logdensity_fn`` it is the unadjusted step on any pytree position in
        the caller's precision, and refuses a ``clip_norm`` (``ValueError``:
        there are no per-example gradients to clip).

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> from dpsample.samplers import langevin
        >>> logdensity_fn = lambda x: -0.5 * jnp.sum(x**2)
        >>> kernel = langevin.build_kernel()
        >>> state, info = kernel(jax.random.key(0), langevin.init(jnp.zeros(2),
        ...                      logdensity_fn), logdensity_fn, 0.1)
        >>> state.position.shape, bool(info.projected)
        ((2,), False)
    """
    if clip_norm is not None:
        clip_norm = clipping.check_clip_bound(
            validation.positive("clip_norm", clip_norm), "float64"
        )
    euler = diffusions.overdamped_langevin()

    def unadjusted(
        rng_key: PRNGKey,
        state: LangevinState,
        logdensity_fn: Callable[[ArrayTree], Array],
        step_size: float,
    ) -> tuple[LangevinState, LangevinInfo]:
        if clip_norm is not None:
            raise ValueError(
                "clip_norm clips per-example gradients, which a logdensity_fn "
                "does not have: pass a GibbsTarget (GibbsTarget.from_loss) or "
                "clip_norm=None"
            )
        flat, unravel = ravel_pytree(state.position)
        grad = jax.grad(lambda v: logdensity_fn(unravel(v)))(flat)
        moved = euler(rng_key, flat, grad, step_size)
        info = LangevinInfo(jnp.asarray(False), step_size * jnp.linalg.norm(grad))
        return LangevinState(unravel(moved)), info

    def kernel(
        rng_key: PRNGKey,
        state: LangevinState,
        target: Target,
        step_size: float,
    ) -> tuple[LangevinState, LangevinInfo]:
        target = check_target(target, sampler="langevin")
        if not isinstance(target, GibbsTarget):
            return unadjusted(rng_key, state, target, step_size)
        grad_u = potential_gradient(target, state.position, clip_norm=clip_norm)
        moved = euler(rng_key, state.position, -grad_u, step_size)
        domain = target.problem.domain
        projected = jnp.logical_not(domain.contains(moved, atol=0.0))
        new = domain.project(moved)
        info = LangevinInfo(projected, step_size * jnp.linalg.norm(grad_u))
        return LangevinState(new), info

    return scoped_for_target(kernel, argnum=2)


def as_top_level_api(
    target: Target, step_size: float, *, clip_norm: float | None = None
) -> SamplingAlgorithm:
    """(Projected) Langevin as a BlackJAX ``SamplingAlgorithm(init, step)``.

    Built by :func:`~dpsample.samplers.target.build_sampling_algorithm`:
    ``init(position, rng_key=None)`` and ``step(rng_key, state) -> (state,
    info)`` with the target closed over, so ``jax.jit(algo.step)`` and
    ``blackjax.util.run_inference_algorithm`` work as for BlackJAX's kernels.

    Args:
        target: A :class:`~dpsample.samplers.target.GibbsTarget` (the projected,
            clipped step of the module docstring, positions of shape ``(d,)``,
            float64 whatever the caller's ``jax_enable_x64``; a ``jit`` of
            ``step`` in 32-bit mode is called inside
            ``with jax.enable_x64(True):``), or a plain
            ``logdensity_fn(position) -> scalar`` as BlackJAX's (the unadjusted
            Langevin step on any pytree position, in the caller's precision:
            float32 positions in 32-bit mode stay float32).
        step_size: ``h > 0``.
        clip_norm: Per-example clipping norm (GibbsTarget only).

    Returns:
        A ``blackjax.base.SamplingAlgorithm``.

    Raises:
        TypeError: ``target`` is neither a GibbsTarget nor callable.
        ValueError: ``step_size <= 0``, or ``clip_norm`` with a
            ``logdensity_fn``.

    Privacy:
        With a GibbsTarget, ``clip_norm=G`` and a data-independent start in
        ``K``, :func:`trajectory_guarantee` covers the whole trajectory. A plain
        ``logdensity_fn`` carries no guarantee.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> import dpsample
        >>> from dpsample import Ball, Problem
        >>> from dpsample.samplers import langevin
        >>> from dpsample.samplers.target import GibbsTarget
        >>> p = Problem(lambda x, z: jnp.abs(x[0] - z), jnp.zeros(4),
        ...             Ball(1.0, dim=1), lipschitz=1.0)
        >>> algo = langevin.as_top_level_api(
        ...     GibbsTarget.create(p, beta=2.0, mu=0.5), 0.01, clip_norm=1.0)
        >>> state, info = algo.step(jax.random.key(0), algo.init(jnp.zeros(1)))
        >>> state.position.shape
        (1,)

        A BlackJAX-style log-density on a pytree position:

        >>> algo = langevin.as_top_level_api(lambda p: -jnp.sum(p["w"] ** 2), 0.01)
        >>> state, info = jax.jit(algo.step)(jax.random.key(1),
        ...                                  algo.init({"w": jnp.ones(3)}))
        >>> state.position["w"].shape
        (3,)
    """
    check_target(target, sampler="langevin")
    if clip_norm is not None and not isinstance(target, GibbsTarget):
        raise ValueError(
            "clip_norm clips per-example gradients, which a logdensity_fn does not "
            "have: pass a GibbsTarget (GibbsTarget.from_loss) or clip_norm=None"
        )
    kernel = build_kernel(clip_norm=clip_norm)
    step_size = validation.positive("step_size", step_size)
    return build_sampling_algorithm(kernel, init, target, (step_size,))


def default_step_size(target: GibbsTarget) -> float:
    r"""Default projected-Langevin step size from declared constants.

    ``0.1/(beta (M + mu))`` when ``M`` is declared, else ``0.03/(beta G)^2``; either is
    capped at ``0.01 D^2 / d``. The non-smooth default is the defaults
    table's practical proximal step; Langevin on non-smooth losses has no
    discretisation guarantee (the privacy bound holds for any step).

    Examples:
        >>> import jax.numpy as jnp
        >>> import dpsample
        >>> from dpsample import Ball, Problem
        >>> from dpsample.samplers import langevin
        >>> from dpsample.samplers.target import GibbsTarget
        >>> p = Problem(lambda x, z: jnp.abs(x[0] - z), jnp.zeros(4),
        ...             Ball(10.0, dim=1), lipschitz=1.0)
        >>> langevin.default_step_size(GibbsTarget.create(p, beta=1.0, mu=0.0))
        0.03
    """
    problem = target.problem
    ball = problem.domain
    cap = DOMAIN_STEP_FACTOR * ball.diameter**2 / problem.dim
    if problem.smoothness is not None and problem.smoothness + target.mu > 0:
        step = SMOOTH_STEP_FACTOR / (target.beta * (problem.smoothness + target.mu))
    else:
        g = validation.require_constant(
            "lipschitz", problem.lipschitz, needed_for="the default Langevin step"
        )
        step = NONSMOOTH_STEP_FACTOR / (target.beta * g) ** 2
    return float(min(step, cap))


def check_step_size(target: GibbsTarget, step_size: float) -> float:
    """Validate ``step_size > 0``; warn when it exceeds ``1 / (beta (M + mu))``.

    Raises:
        ValueError: ``step_size <= 0`` or not finite.

    Warns:
        StepSizeWarning: when the smoothness ``M`` is declared and
            ``step_size >= 1/(beta (M + mu))`` (the Euler step is then unstable and
            the discretisation theory does not apply; the privacy bound of
            :func:`trajectory_guarantee` is unaffected).
    """
    h = validation.positive("step_size", step_size)
    m = target.problem.smoothness
    if m is not None and m + target.mu > 0:
        limit = 1.0 / (target.beta * (m + target.mu))
        if h >= limit:
            warnings.warn(
                f"step_size={h:g} >= 1/(beta (M + mu)) = {limit:g}: the Langevin "
                "discretisation is unstable at this step (privacy is unaffected)",
                StepSizeWarning,
                stacklevel=2,
            )
    return h


def trajectory_noise_to_sensitivity(
    target: GibbsTarget, *, step_size: float, num_steps: int
) -> float:
    r"""Noise over sensitivity of the composed trajectory: ``n / (beta G sqrt(2 h K))``.

    The std ``sqrt(2h)`` of each step's noise over the step's replace-one L2
    sensitivity ``h beta 2G / n``, composed over ``K`` steps (divided by
    ``sqrt(K)``): the argument of ``PrivacyGuarantee.gaussian``. This is **not** a
    noise multiplier in the sense of Opacus or dp-accounting (noise std on the sum
    over the per-example bound ``G``, the library's ``noise_multiplier``), which is
    twice this value.

    Raises:
        dpsample.errors.MissingConstantError: if ``G`` is not declared.

    Examples:
        >>> import jax.numpy as jnp
        >>> import dpsample
        >>> from dpsample import Ball, Problem
        >>> from dpsample.samplers import langevin
        >>> from dpsample.samplers.target import GibbsTarget
        >>> p = Problem(lambda x, z: jnp.abs(x[0] - z), jnp.zeros(100),
        ...             Ball(1.0, dim=1), lipschitz=1.0)
        >>> t = GibbsTarget.create(p, beta=10.0, mu=0.0)
        >>> langevin.trajectory_noise_to_sensitivity(t, step_size=0.005, num_steps=100)
        10.0
    """
    g = validation.require_constant(
        "lipschitz",
        target.problem.lipschitz,
        needed_for="the Langevin trajectory privacy bound",
    )
    h = validation.positive("step_size", step_size)
    k = validation.positive_int("num_steps", num_steps)
    return target.problem.n / (target.beta * g * math.sqrt(2.0 * h * k))


def trajectory_guarantee(
    target: GibbsTarget, *, step_size: float, num_steps: int
) -> PrivacyGuarantee:
    r"""Privacy of ``num_steps`` projected Langevin steps (the whole trajectory).

    .. math::
        \varepsilon_{RDP}(\alpha) = \frac{\alpha K h \beta^2 G^2}{n^2},

    returned as the equivalent single Gaussian mechanism
    ``PrivacyGuarantee.gaussian(n / (beta G sqrt(2 h K)))`` (exact Gaussian-DP
    composition of the ``K`` per-step Gaussian mechanisms; its zCDP parameter is
    ``K h beta^2 G^2 / n^2``). Valid for non-convex, non-smooth losses and any step.

    Examples:
        >>> import jax.numpy as jnp
        >>> import dpsample
        >>> from dpsample import Ball, Problem
        >>> from dpsample.samplers import langevin
        >>> from dpsample.samplers.target import GibbsTarget
        >>> p = Problem(lambda x, z: jnp.abs(x[0] - z), jnp.zeros(100),
        ...             Ball(1.0, dim=1), lipschitz=1.0)
        >>> t = GibbsTarget.create(p, beta=10.0, mu=0.0)
        >>> g = langevin.trajectory_guarantee(t, step_size=0.005, num_steps=100)
        >>> round(g.zcdp_rho(), 10)  # K h beta^2 G^2 / n^2
        0.005
    """
    z = trajectory_noise_to_sensitivity(
        target, step_size=step_size, num_steps=num_steps
    )
    return PrivacyGuarantee.gaussian(z, relation=target.problem.relation)


precision.scope_public(globals())
