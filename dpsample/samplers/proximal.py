r"""The alternating (proximal) sampler with the Gopi–Lee–Liu rejection inner step.

Samples the regularised Gibbs target
``pi(x) ∝ exp(-beta (F_D(x) + mu/2 ||x||^2))`` on the ball ``K`` (seed 000 §5.1,
App. D.3, Algorithm 3) by alternating

.. math::
    y_t = x_{t-1} + \sqrt{\eta}\,\xi_t,\quad \xi_t \sim N(0, I_d), \qquad
    x_t \sim \pi^{X|Y=y_t} \propto \exp\Big(-\beta F_D(x) - \frac{\beta\mu}{2}\|x\|^2
    - \frac{\|x - y_t\|^2}{2\eta}\Big)\mathbf{1}_K(x),

the second step by the fixed-budget GLL rejection sampler of
:mod:`dpsample.samplers.rgo` (per-example loss values only, no gradients: non-smooth,
non-convex losses are fine). Kernels follow BlackJAX's ``init / build_kernel /
as_top_level_api`` shape, so chains run under ``lax.scan`` and ``jax.vmap``.

Parameters come from the theorems through :func:`schedule` (seed 000 §3.7 and errata
E25–E27): the step size ``eta = c_step / (beta^2 G^2 log(1/delta_gll))`` (GLL Lemma 24),
the number of steps from the LSI rate of the proximal sampler (Chen–Chewi–Salim–
Wibisono Thm 3: ``KL_t <= KL_0 (1 + eta/C_LSI)^(-2t)``), Pinsker, and the hybrid
argument ``TV <= sqrt(KL_T/2) + T delta_inner``.

Start points and non-finite values. :func:`init` refuses a concrete start outside
``K`` (the guarantee is for chains on ``K``; :func:`initial_position` draws the
public start). Nothing raises during a run: a per-example loss that is NaN makes the
RGO's series estimate ``rho`` NaN, and a trial is accepted only when
``2u < clip(rho, 0, 2)``, which is false for NaN (public rule: the trial is rejected;
``+inf`` clips to 2, ``-inf`` to 0); if no trial accepts, the data-independent
fallback proposal is returned. A loss that is not finite on ``K`` breaks the declared
constants the target's guarantee rests on.

References:
    Lee, Shen, Tian, `Structured Logconcave Sampling with a Restricted Gaussian
    Oracle <https://arxiv.org/abs/2010.03106>`_, COLT 2021.

    Chen, Chewi, Salim, Wibisono, `Improved analysis for a proximal algorithm for
    sampling <https://proceedings.mlr.press/v178/chen22c.html>`_, COLT 2022.

    Gopi, Lee, Liu, `Private Convex Optimization via Exponential Mechanism
    <https://proceedings.mlr.press/v178/gopi22a.html>`_, COLT 2022.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import NamedTuple

import jax.numpy as jnp
from blackjax.base import SamplingAlgorithm

from dpsample._src import precision, validation
from dpsample._src.random_words import NORMAL_WORDS, WordStream
from dpsample.domains import Ball
from dpsample.samplers import restricted_gaussian, rgo
from dpsample.samplers.target import (
    GibbsTarget,
    StepSizeWarning,
    build_sampling_algorithm,
    check_position,
    check_target,
    compiled_when_eager,
    scoped_kernel,
)
from dpsample.types import Array, ArrayLike, PRNGKey

__all__ = [
    "ProximalState",
    "ProximalInfo",
    "ProximalSchedule",
    "ProximalScheduleError",
    "init",
    "build_kernel",
    "as_top_level_api",
    "schedule",
    "initial_position",
    "max_step_size",
    "C_STEP_PAPER",
    "C_STEP_PRACTICAL",
]

C_STEP_PAPER = 2.0**-8
"""Step constant of the "paper" preset: GLL's proof constant (seed 000 §6.2)."""

C_STEP_PRACTICAL = 0.5
"""Step constant of the "practical" preset (non-paper), measured in
``docs/samplers_proximal.md``: at ``delta_inner ~ 1e-10`` it gives
``eta ~ 0.02 / (beta G)^2``, where RGO draws pass a KS test against quadrature at
``2e5`` draws; the Lemma-24 TV bound is *not* proven for it."""


class ProximalState(NamedTuple):
    """State of the proximal sampler: the current point ``x_t`` (shape ``(d,)``)."""

    position: Array


class ProximalInfo(NamedTuple):
    """Public facts about one proximal step (see :class:`rgo.RGOInfo`).

    Attributes:
        num_trials: RGO trials the sequential algorithm would have used.
        num_loss_evaluations: per-example loss evaluations it would have needed.
        is_accepted: whether an RGO trial accepted (``False``: fallback draw).
        num_loss_evaluations_budget: per-example loss evaluations actually run (the
            fixed budget, identical on every step).
    """

    num_trials: Array
    num_loss_evaluations: Array
    is_accepted: Array
    num_loss_evaluations_budget: Array


class ProximalSchedule(NamedTuple):
    """Parameters of a proximal-sampler run and its TV bookkeeping.

    Attributes:
        step_size: ``eta``.
        num_steps: ``T``.
        num_trials: RGO trials per step.
        num_levels: RGO series cap.
        delta_inner: per-step TV budget ``tau / (2 T)`` (E25: solved jointly with T).
        tv_mixing: ``sqrt(KL_0 (1 + eta/C_LSI)^(-2T) / 2)`` (CCSW Thm 3 + Pinsker).
        tv_inner: ``T (delta_gll + budget_tv)``: the GLL error at ``delta_gll =
            delta_inner/2`` plus the fixed-budget failures of every step.
        tv_init: the initial draw's departure from ``pi_0``
            (:func:`restricted_gaussian.tv_bound(1)
            <dpsample.samplers.restricted_gaussian.tv_bound>` for ``mu > 0``, ``0``
            for the uniform law when ``mu = 0``).
        tv_total: ``tv_mixing + tv_inner + tv_init`` (``<= tv_target``).
        kl_init: the KL bound of the initial law used.
        lsi_constant: the LSI constant used.
        c_step: the step constant used.
        proven: whether ``c_step <= C_STEP_PAPER`` (GLL's proof constant); otherwise
            ``tv_inner``'s GLL part is nominal, not a theorem.
    """

    step_size: float
    num_steps: int
    num_trials: int
    num_levels: int
    delta_inner: float
    tv_mixing: float
    tv_inner: float
    tv_init: float
    tv_total: float
    kl_init: float
    lsi_constant: float
    c_step: float
    proven: bool


def _check_target(target: GibbsTarget) -> None:
    # A plain logdensity_fn is refused with a pointer to GibbsTarget.from_loss:
    # the RGO's guarantee rests on the per-example losses and the declared G.
    check_target(target, sampler="proximal", logdensity=False)
    validation.positive("beta", target.beta)
    validation.nonnegative("mu", target.mu)


def max_step_size(target: GibbsTarget) -> float:
    r"""Largest step size GLL's acceptance bound allows: ``1/(8 beta^2 G^2)``.

    Above it the RGO's per-trial acceptance ``>= 1/3`` (GLL Lemma 24's proof,
    ``E[X] >= 2/3``) is not guaranteed, so neither is the ``(2/3)^num_trials``
    trial-failure bound nor the Lemma-24 TV bound.

    Args:
        target: The Gibbs target (its problem must declare ``lipschitz``).

    Returns:
        ``1 / (8 beta^2 G^2)``.

    Raises:
        MissingConstantError: If the Lipschitz constant is not declared.

    Examples:
        >>> import jax.numpy as jnp
        >>> import dpsample
        >>> from dpsample import Ball, Problem
        >>> from dpsample.samplers.target import GibbsTarget
        >>> from dpsample.samplers.proximal import max_step_size
        >>> pb = Problem(lambda x, z: jnp.abs(x[0] - z), jnp.zeros(3), Ball(1.0, dim=1),
        ...              lipschitz=1.0)
        >>> max_step_size(GibbsTarget.create(pb, beta=2.0, mu=1.0))
        0.03125
    """
    _check_target(target)
    g = validation.require_constant(
        "lipschitz", target.problem.lipschitz, needed_for="the RGO step-size bound"
    )
    return 1.0 / (8.0 * target.beta**2 * g**2)


def init(position: ArrayLike, target: GibbsTarget) -> ProximalState:
    """Build the initial state from a position.

    Args:
        position: ``x_0``, shape ``(d,)``. Use :func:`initial_position` for the law
            ``pi_0`` whose KL bound :func:`schedule` assumes.
        target: The Gibbs target (for the dimension).

    Returns:
        A :class:`ProximalState`.

    Raises:
        TypeError: If ``target`` is not a GibbsTarget.
        ValueError: If the shape is wrong, or a concrete position is not finite or
            lies outside ``K`` (:func:`~dpsample.samplers.target.check_position`).

    Examples:
        >>> import jax.numpy as jnp
        >>> import dpsample
        >>> from dpsample import Ball, Problem
        >>> from dpsample.samplers.target import GibbsTarget
        >>> from dpsample.samplers import proximal
        >>> pb = Problem(lambda x, z: jnp.abs(x[0] - z), jnp.zeros(3), Ball(1.0, dim=1))
        >>> proximal.init(jnp.zeros(1), GibbsTarget.create(pb, beta=1.0, mu=1.0))
        ProximalState(position=Array([0.], dtype=float64))
    """
    _check_target(target)
    return ProximalState(check_position(target, position))


def initial_position(
    rng_key: PRNGKey, target: GibbsTarget, num: int | None = None
) -> Array:
    r"""Draw from the initial law ``pi_0 ∝ exp(-beta mu ||x||^2 / 2)`` on ``K``.

    ``N(0, I/(beta mu))`` restricted to ``K`` (exactly, by
    :func:`~dpsample.samplers.restricted_gaussian.sample`; naive rejection would fail
    in high ``d``, E26), or the uniform law on ``K`` when ``mu = 0``. It does not read
    the data, and ``KL(pi_0 || pi) <= beta osc_K F_D <= beta G D`` (E25).

    Args:
        rng_key: A JAX PRNG key.
        target: The Gibbs target.
        num: Number of draws (static) or ``None`` for one.

    Returns:
        Shape ``(d,)`` or ``(num, d)``.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> import dpsample
        >>> from dpsample import Ball, Problem
        >>> from dpsample.samplers.target import GibbsTarget
        >>> from dpsample.samplers import proximal
        >>> pb = Problem(lambda x, z: jnp.abs(x[0] - z), jnp.zeros(3), Ball(1.0, dim=1))
        >>> tg = GibbsTarget.create(pb, beta=1.0, mu=1.0)
        >>> proximal.initial_position(jax.random.key(0), tg, 5).shape
        (5, 1)
    """
    _check_target(target)
    ball = target.problem.domain
    assert isinstance(ball, Ball)  # checked by GibbsTarget.create
    dim = target.problem.dim
    if target.mu == 0.0:
        ball = ball.with_dim(dim)
        return ball.sample_uniform(rng_key, 1 if num is None else num)[
            0 if num is None else slice(None)
        ]
    std = 1.0 / math.sqrt(target.beta * target.mu)
    return restricted_gaussian.sample(
        rng_key, jnp.zeros((dim,), jnp.float64), std, ball, num
    )


def build_kernel(
    *,
    num_trials: int = rgo.DEFAULT_NUM_TRIALS,
    num_levels: int = rgo.DEFAULT_NUM_LEVELS,
) -> Callable[[PRNGKey, ProximalState, GibbsTarget, ArrayLike], tuple]:
    r"""Build one step of the proximal sampler.

    The kernel ``kernel(rng_key, state, target, step_size) -> (state, info)`` draws
    ``y = x + sqrt(eta) xi`` and then ``x' ~ pi^{X|Y=y}`` with the fixed-budget GLL
    RGO. Its work does not depend on the data. Jittable (``target`` static) and
    vmappable; ``jit`` is left to the caller. It computes in float64 whatever the
    caller's ``jax_enable_x64`` (:func:`~dpsample.samplers.target.scoped_kernel`):
    a caller in 32-bit mode runs its own ``jit``/``lax.scan`` of the kernel inside
    ``with jax.enable_x64(True):``.

    Args:
        num_trials: RGO trials per step (static), default 50.
        num_levels: RGO series cap (static), default 20.

    Returns:
        The kernel.

    Raises:
        ValueError: If ``num_trials`` or ``num_levels`` is below 1.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> import dpsample
        >>> from dpsample import Ball, Problem
        >>> from dpsample.samplers.target import GibbsTarget
        >>> from dpsample.samplers import proximal
        >>> pb = Problem(lambda x, z: jnp.abs(x[0] - z), jnp.linspace(-1, 1, 5),
        ...              Ball(1.0, dim=1), lipschitz=1.0)
        >>> tg = GibbsTarget.create(pb, beta=2.0, mu=1.0)
        >>> kernel = proximal.build_kernel()
        >>> state, info = kernel(jax.random.key(0), proximal.init(jnp.zeros(1), tg),
        ...                      tg, 0.01)
        >>> state.position.shape, bool(info.is_accepted)
        ((1,), True)
    """
    num_trials = validation.positive_int("num_trials", num_trials)
    num_levels = validation.positive_int("num_levels", num_levels)

    def kernel(
        rng_key: PRNGKey,
        state: ProximalState,
        target: GibbsTarget,
        step_size: ArrayLike,
    ) -> tuple[ProximalState, ProximalInfo]:
        x = state.position
        dim = x.shape[0]
        # One PRNG call for the step's words: the Gaussian step, then the oracle's.
        words = NORMAL_WORDS * dim + rgo.oracle_words(
            num_trials, num_levels, target.problem.n, dim
        )
        stream = WordStream.draw(rng_key, words)
        y = x + jnp.sqrt(step_size) * stream.normal((dim,))
        new_x, info = rgo.oracle_from_stream(
            stream,
            target,
            y,
            step_size,
            num_trials=num_trials,
            num_levels=num_levels,
        )
        stream.check_used()
        return ProximalState(new_x), ProximalInfo(
            num_trials=info.num_trials,
            num_loss_evaluations=info.num_loss_evaluations,
            is_accepted=info.is_accepted,
            num_loss_evaluations_budget=info.num_loss_evaluations_budget,
        )

    # An eager call is compiled per target (fast); traced calls run the kernel itself.
    return scoped_kernel(compiled_when_eager(kernel, static_argnums=(2,)))


def as_top_level_api(
    target: GibbsTarget,
    step_size: float,
    *,
    num_trials: int = rgo.DEFAULT_NUM_TRIALS,
    num_levels: int = rgo.DEFAULT_NUM_LEVELS,
) -> SamplingAlgorithm:
    r"""The proximal sampler as a BlackJAX ``SamplingAlgorithm(init, step)``.

    ``init(position, rng_key=None)`` and ``step(rng_key, state) -> (state, info)``,
    built by :func:`~dpsample.samplers.target.build_sampling_algorithm` (the
    target closed over: ``jax.jit(algo.step)`` needs no ``static_argnums``, and
    ``blackjax.util.run_inference_algorithm`` runs it). Use :func:`schedule` for
    a step size and a number of steps with a TV guarantee.

    Unlike MALA and Langevin, it takes no plain ``logdensity_fn``: its
    guarantee rests on the per-example losses (the RGO's series estimate uses
    them one by one, and its step size on their Lipschitz constant ``G``), which
    a log-density hides. Build the target from a per-example loss with
    :meth:`GibbsTarget.from_loss <dpsample.samplers.target.GibbsTarget.from_loss>`
    (a function is refused with a ``TypeError`` that says so). It always computes
    in float64 (the RGO's fixed trial budgets and TV bookkeeping are float64
    facts): a ``jit`` of ``step`` in 32-bit mode is called inside
    ``with jax.enable_x64(True):``.

    Args:
        target: The :class:`~dpsample.samplers.target.GibbsTarget`.
        step_size: ``eta > 0``.
        num_trials: RGO trials per step, default 50.
        num_levels: RGO series cap, default 20.

    Returns:
        A ``blackjax.base.SamplingAlgorithm``.

    Raises:
        TypeError: If ``target`` is not a GibbsTarget (a function: the message
            names ``GibbsTarget.from_loss``).
        ValueError: If ``step_size <= 0`` or ``num_trials``/``num_levels < 1``.

    Warns:
        StepSizeWarning: If the problem declares ``lipschitz`` and ``step_size``
            exceeds :func:`max_step_size` ``= 1/(8 beta^2 G^2)``: the sampler still
            runs, but the RGO acceptance bound and the TV bookkeeping of
            :func:`schedule` no longer hold. (A warning, not an error, so that
            experiments can explore larger steps; :func:`schedule` never produces
            one.)

    Privacy:
        The sampler's output is ``tv``-close to the Gibbs target for every dataset,
        with ``tv = schedule(...).tv_total`` when run with the schedule's parameters;
        the privacy of the target (part of :mod:`dpsample.samplers.gibbs`) then
        carries over with ``delta + (1 + e^eps) tv`` (seed 000 §3.7). Diagnostics on
        several chains read the data and are not covered.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> import dpsample
        >>> from dpsample import Ball, Problem
        >>> from dpsample.samplers.target import GibbsTarget
        >>> from dpsample.samplers import proximal
        >>> pb = Problem(lambda x, z: jnp.abs(x[0] - z), jnp.linspace(-1, 1, 5),
        ...              Ball(1.0, dim=1), lipschitz=1.0)
        >>> tg = GibbsTarget.create(pb, beta=2.0, mu=1.0)
        >>> algo = proximal.as_top_level_api(tg, 0.01)
        >>> state = algo.init(jnp.zeros(1))
        >>> def one_step(state, key):
        ...     state, info = algo.step(key, state)
        ...     return state, info.num_trials
        >>> keys = jax.random.split(jax.random.key(0), 10)
        >>> state, trials = jax.lax.scan(one_step, state, keys)
        >>> trials.shape
        (10,)

        From a per-example loss, run by BlackJAX's loop:

        >>> from blackjax.util import run_inference_algorithm
        >>> tg = GibbsTarget.from_loss(lambda x, z: jnp.abs(x[0] - z),
        ...                            jnp.linspace(-1, 1, 5), Ball(1.0, dim=1),
        ...                            beta=2.0, mu=1.0, lipschitz=1.0)
        >>> algo = proximal.as_top_level_api(tg, 0.01)
        >>> _, (states, infos) = run_inference_algorithm(
        ...     jax.random.key(1), algo, 5, initial_position=jnp.zeros(1))
        >>> states.position.shape
        (5, 1)

    References:
        Lee, Shen, Tian (2021); Gopi, Lee, Liu (2022), Algorithms 1–2.
    """
    _check_target(target)
    step_size = validation.positive("step_size", step_size)
    kernel = build_kernel(num_trials=num_trials, num_levels=num_levels)
    if target.problem.lipschitz is not None and step_size > max_step_size(target):
        warnings.warn(
            f"step_size={step_size!r} exceeds 1/(8 beta^2 G^2)="
            f"{max_step_size(target)!r}: GLL's acceptance bound (>= 1/3 per trial) "
            "and the TV bookkeeping of proximal.schedule do not hold",
            StepSizeWarning,
            stacklevel=2,
        )

    return build_sampling_algorithm(kernel, init, target, (step_size,))


def _initial_tv(target: GibbsTarget) -> float:
    """TV between :func:`initial_position`'s draw and ``pi_0`` (one draw)."""
    return 0.0 if target.mu == 0.0 else restricted_gaussian.tv_bound(1)


def _default_kl_init(target: GibbsTarget, g: float) -> float:
    problem = target.problem
    osc = g * problem.domain.diameter
    if problem.loss_range is not None:
        osc = min(osc, problem.loss_range)
    return target.beta * osc


class ProximalScheduleError(ValueError):
    """No proven proximal schedule reaches the TV target (public facts only).

    Attributes:
        fact: What fails, without the remedy (for callers that name their own).
    """

    def __init__(self, fact: str, remedy: str) -> None:
        self.fact = fact
        super().__init__(f"{fact}; {remedy}")


def schedule(
    target: GibbsTarget,
    *,
    tv_target: float,
    lsi_constant: float | None = None,
    kl_init: float | None = None,
    c_step: float = C_STEP_PAPER,
    convex: bool = False,
    num_trials: int = rgo.DEFAULT_NUM_TRIALS,
    num_levels: int = rgo.DEFAULT_NUM_LEVELS,
) -> ProximalSchedule:
    r"""Step size, number of steps and RGO budget for a TV target ``tau``.

    .. math::
        \eta = \frac{c}{\beta^2 G^2 \log(1/\delta_{gll})}, \quad
        \delta_{gll} = \frac{\delta_{inner}}{2}, \quad
        \delta_{inner} = \frac{\tau}{2T}, \quad
        T = \Big\lceil \frac{\log(8\,KL_0/\tau^2)}{2\log(1 + \eta/C_{LSI})}
        \Big\rceil,

    solved jointly by fixed-point iteration (E25: ``T`` depends on ``eta`` through
    ``delta_inner``), with

    * ``G`` the declared Lipschitz constant (``beta G`` is the Lipschitz constant of
      ``f_i = beta ell_i``, GLL Lemma 24 / seed 000 Lemma D.2);
    * ``KL_0 = beta min(G D, B)`` by default: for the initial law
      ``pi_0 ∝ exp(-beta mu ||x||^2/2)`` on ``K`` (:func:`initial_position`),
      ``KL(pi_0||pi) <= R_inf(pi_0||pi) <= beta osc_K F_D`` (E25: the paper's
      ``e^{beta G D}`` is a typo);
    * ``C_LSI`` the caller's LSI constant of ``pi`` (CCSW Thm 3:
      ``KL_t <= KL_0 (1 + eta/C_LSI)^{-2t}``; the paper's Thm D.1 with ``q = 1``), or
      ``1/(beta mu)`` when ``convex=True`` (Bakry–Émery: ``F_D`` convex makes ``pi``
      ``beta mu``-strongly log-concave; E26). If both are given the smaller is used;
    * ``num_trials`` raised until the fixed-budget failure :func:`rgo.budget_tv
      <dpsample.samplers.rgo.budget_tv>` is ``<= delta_inner/2``.

    Then ``tv_mixing = sqrt(KL_T/2) <= tau/4`` (Pinsker),
    ``tv_inner = T (delta_gll + budget_tv) <= tau/2`` (hybrid argument, seed 000 §3.7
    step 7), ``tv_init`` the departure of :func:`initial_position`'s draw from
    ``pi_0`` (:func:`restricted_gaussian.tv_bound(1)
    <dpsample.samplers.restricted_gaussian.tv_bound>`, about ``4e-14``; checked
    ``<= tau/4``) and ``tv_total = tv_mixing + tv_inner + tv_init <= tau``.

    A ``tv_target`` too small for the float64 RGO budgets is refused with a
    ``ProximalScheduleError`` that names a larger ``tv_target`` checked to plan at
    this ``beta`` (doubling from ``tau``: public arithmetic), or says that none below
    1 does.

    Args:
        target: The Gibbs target; its problem must declare ``lipschitz``.
        tv_target: ``tau`` in ``(0, 1)``.
        lsi_constant: ``C_LSI`` of ``pi`` (``Ent <= (C/2) Fisher``), e.g. from
            ``dpsample.privacy.lsi``; required unless ``convex=True``.
        kl_init: A public bound on ``KL(pi_0 || pi)``; default ``beta min(G D, B)``.
        c_step: Step constant. :data:`C_STEP_PAPER` ``= 2^-8`` (default; GLL's proof
            constant, ``proven=True``) or :data:`C_STEP_PRACTICAL` (measured, not a
            theorem).
        convex: Whether the per-example losses are convex (then
            ``C_LSI <= 1/(beta mu)``, needs ``mu > 0``).
        num_trials: Minimum RGO trials per step (raised if needed).
        num_levels: RGO series cap.

    Returns:
        A :class:`ProximalSchedule`.

    Raises:
        MissingConstantError: If ``lipschitz`` is not declared.
        ValueError: On a bad ``tv_target``, ``lsi_constant``, ``kl_init``,
            ``c_step``, neither ``lsi_constant`` nor ``convex=True``, ``convex=True``
            with ``mu = 0``, or a ``tv_target`` below what float64 budgets reach.

    Examples:
        >>> import jax.numpy as jnp
        >>> import dpsample
        >>> from dpsample import Ball, Problem
        >>> from dpsample.samplers.target import GibbsTarget
        >>> from dpsample.samplers import proximal
        >>> pb = Problem(lambda x, z: jnp.abs(x[0] - z), jnp.zeros(3), Ball(1.0, dim=1),
        ...              lipschitz=1.0)
        >>> tg = GibbsTarget.create(pb, beta=2.0, mu=1.0)
        >>> s = proximal.schedule(tg, tv_target=1e-3, convex=True)
        >>> s.num_steps, s.tv_total <= 1e-3, s.proven
        (87016, True, True)
        >>> try:
        ...     proximal.schedule(GibbsTarget.create(pb, beta=40.0, mu=0.01),
        ...                       tv_target=1e-9, convex=True)
        ... except proximal.ProximalScheduleError as e:
        ...     print(str(e).split("; ")[-1])
        raise tv_target=0.00105 (checked to plan at this beta), or lower beta

    References:
        Seed 000 App. D.3 (Thm 5.7 bookkeeping, corrected: E25–E27); Chen, Chewi,
        Salim, Wibisono (2022), Thm 3; Gopi, Lee, Liu (2022), Lemma 24.
    """
    _check_target(target)
    g = validation.require_constant(
        "lipschitz", target.problem.lipschitz, needed_for="proximal.schedule"
    )
    tau = validation.delta_in_open_unit(tv_target, "tv_target")
    c_step = validation.positive("c_step", c_step)
    num_trials = validation.positive_int("num_trials", num_trials)
    num_levels = validation.positive_int("num_levels", num_levels)
    beta, mu = target.beta, target.mu
    candidates = []
    if lsi_constant is not None:
        candidates.append(validation.positive("lsi_constant", lsi_constant))
    if convex:
        if mu <= 0:
            raise ValueError("convex=True needs mu > 0 (C_LSI <= 1/(beta mu))")
        candidates.append(1.0 / (beta * mu))
    if not candidates:
        raise ValueError("pass lsi_constant=... (e.g. from privacy.lsi) or convex=True")
    c_lsi = min(candidates)
    if kl_init is None:
        kl0 = _default_kl_init(target, g)
    else:
        kl0 = validation.nonnegative("kl_init", kl_init)

    def build(tv: float) -> ProximalSchedule:
        return _build(target, tv, g, c_lsi, kl0, c_step, num_trials, num_levels)

    try:
        return build(tau)
    except _FloorError as floor:
        fact, larger = floor.fact, floor.tau
    for _ in range(64):
        larger *= 2.0
        if larger >= 1.0:
            break
        try:
            build(larger)
        except _FloorError:
            continue
        shown = _round_up(larger)  # three digits, up: a larger target plans too
        if shown < 1.0:
            build(shown)  # the value offered plans
            raise ProximalScheduleError(
                fact,
                f"raise tv_target={shown:.3g} (checked to plan at this beta), or "
                "lower beta",
            ) from None
    raise ProximalScheduleError(
        fact, "no tv_target below 1 plans at this beta: lower beta or raise c_step"
    ) from None


def _round_up(x: float) -> float:
    """``x`` rounded up to three significant digits."""
    q = 10.0 ** (math.floor(math.log10(x)) - 2)
    return math.ceil(x / q * (1.0 - 1e-12)) * q


class _FloorError(ProximalScheduleError):
    """The per-step budget is below the float64 RGO floor (``tau`` attached)."""

    def __init__(self, fact: str, tau: float) -> None:
        super().__init__(fact, "")
        self.tau = tau


def _build(
    target: GibbsTarget,
    tau: float,
    g: float,
    c_lsi: float,
    kl0: float,
    c_step: float,
    num_trials: int,
    num_levels: int,
) -> ProximalSchedule:
    """The construction of :func:`schedule` on validated values.

    A per-step budget below the float64 RGO floor raises ``_FloorError``.
    """
    beta = target.beta

    def steps_for(eta: float) -> int:
        ratio = 8.0 * kl0 / tau**2
        if ratio <= 1.0:
            return 1
        return max(1, math.ceil(math.log(ratio) / (2.0 * math.log1p(eta / c_lsi))))

    def step_for(num_steps: int) -> tuple[float, float]:
        delta_inner = tau / (2.0 * num_steps)
        eta = c_step / (beta**2 * g**2 * math.log(2.0 / delta_inner))
        return delta_inner, eta

    num_steps = 1
    for _ in range(200):
        delta_inner, eta = step_for(num_steps)
        new_steps = steps_for(eta)
        if new_steps <= num_steps:
            break
        num_steps = new_steps
    else:  # pragma: no cover - T grows like log T, so this converges in a few rounds
        raise RuntimeError("schedule: the T/eta fixed point did not converge")
    delta_inner, eta = step_for(num_steps)
    eta = min(eta, 1.0 / (8.0 * beta**2 * g**2))

    tv_init = _initial_tv(target)
    if tv_init > 0.25 * tau:
        raise ProximalScheduleError(
            f"tv_target={tau!r} is below 4x the initial draw's TV {tv_init:.3g}",
            "raise tv_target",
        )
    trials = num_trials
    while True:
        terms = rgo.budget_tv_terms(trials, num_levels)
        # Every term but these two is nondecreasing in N: once the others alone
        # reach the per-step budget, no number of trials can work.
        floor = math.fsum(terms.values()) - terms["trials_exhausted"]
        floor -= terms["pool_overflow"]
        if floor >= 0.5 * delta_inner or trials > 10_000:
            raise _FloorError(
                f"tv_target={tau!r} is too small for T={num_steps} steps (step size "
                f"{eta:.3g}): the per-step budget delta_inner={delta_inner:.3g} is "
                "below what float64 RGO budgets reach (rgo.budget_tv_terms)",
                tau,
            )
        if rgo.budget_tv(trials, num_levels) <= 0.5 * delta_inner:
            break
        trials += 1
    per_step = 0.5 * delta_inner + rgo.budget_tv(trials, num_levels)
    tv_mixing = math.sqrt(
        0.5 * kl0 * math.exp(-2.0 * num_steps * math.log1p(eta / c_lsi))
    )
    tv_inner = num_steps * per_step
    return ProximalSchedule(
        step_size=eta,
        num_steps=num_steps,
        num_trials=trials,
        num_levels=num_levels,
        delta_inner=delta_inner,
        tv_mixing=tv_mixing,
        tv_inner=tv_inner,
        tv_init=tv_init,
        tv_total=tv_mixing + tv_inner + tv_init,
        kl_init=kl0,
        lsi_constant=c_lsi,
        c_step=c_step,
        proven=c_step <= C_STEP_PAPER,
    )


precision.scope_public(globals())
