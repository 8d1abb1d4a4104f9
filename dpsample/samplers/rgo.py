r"""The Gopi–Lee–Liu rejection sampler for the restricted Gaussian oracle (RGO).

Given ``y`` and a step size ``eta``, the proximal sampler's inner step draws from

.. math::
    \pi^{X|Y=y}(x) \propto \exp\Big(-\beta F_D(x) - \frac{\beta\mu}{2}\|x\|^2
    - \frac{\|x - y\|^2}{2\eta}\Big)\,\mathbf{1}_K(x),
    \qquad F_D = \frac1n \sum_i \ell_i,

using only ``O(1)`` per-example loss **values** (no gradients, so non-smooth
losses work): GLL Algorithm 2 (samplers research note §1.2), with ``f_i = beta ell_i``
and the regulariser folded into the proposal
``Q = N(y/(1 + eta beta mu), eta/(1 + eta beta mu) I) ∩ K`` (seed 000 erratum E26).
One trial:

1. draw ``x, z ~ Q`` independently (``z`` is the reference point of the shift trick);
2. ``rho = 1 + sum_{a=1}^{A} prod_{i=1}^{a} (f_{j_{a,i}}(z) - f_{j_{a,i}}(x))`` with
   fresh uniform indices ``j_{a,i}`` at every level and a random depth ``A``:
   after level ``a`` the series stops with probability ``a/(1+a)``, so level ``a`` is
   reached with probability ``1/a!`` and ``E[rho | x, z] = exp(F(z) - F(x))``;
3. accept ``x`` with probability ``min(max(rho, 0), 2)/2``.

**Fixed budget** (seed 000 erratum E27). The number of trials the sequential algorithm
needs depends on the data, a timing side channel. Here every call runs
``num_trials`` trials with all randomness drawn in one batch (one PRNG call for
every random word of the call, :func:`oracle_words`): the depths ``A_i``
(data-independent) fix how many series terms each trial needs,
``c(A) = A(A+1)/2``; the terms of all trials are laid out back to back in a pool of
:func:`pool_size` slots (static), all ``2 x pool`` per-example losses are evaluated,
and the first accepted trial is returned. The pool is chosen so that the total demand
exceeds it with probability ``<= POOL_TAIL = 1e-15`` (computed exactly by
convolution); trials cut by the pool are treated as rejected. If no trial accepts,
the output is the last trial's proposal draw ``x_N ~ Q`` (it depends on ``y`` and the
key only, never on the data).

**TV accounting** (seed 000 App. D.3, E25, E27). :func:`budget_tv` bounds the TV
distance between one call and GLL's sequential algorithm run with exact uniforms and
exact arithmetic on the same loss values (:func:`budget_tv_terms` lists the terms).
Couple the two on the same randomness; the outputs can differ only if

1. no trial accepts within ``num_trials``: ``(2/3)^N`` when
   ``eta <= 1/(8 beta^2 G^2)`` (GLL: ``E[X] >= 2/3``, so a trial accepts with
   probability ``>= 1/3``);
2. a depth differs from the exact one (``P(A >= a) = 1/a!``, unbounded): the cap at
   ``num_levels`` and the float64 depth draw (thresholds ``fl(1/a!)`` against
   uniforms on the ``2^-52`` grid, which puts mass ``2^-52`` on ``A = L`` even for
   ``L >= 19``): ``N`` times the exact TV of the two depth laws, computed in
   rational arithmetic (``3.4 x 2^-52`` per trial at ``L = 20``, against the
   ``1/(L+1)! + 2^-52`` charged before);
3. the pool overflows, ``P(sum_i A_i(A_i+1)/2 > pool) <= POOL_TAIL``;
4. an acceptance test ``2u < clip(rho, 0, 2)`` resolves differently on the grid:
   ``< 2^-52`` per trial;
5. the float64 ``rho`` accepts differently, with probability
   ``E|rho~ - rho|/2 <= 3 x 2^-53`` per trial: a level-``a`` product carries
   ``3a - 1`` roundings and the sum ``A`` more, so to first order
   ``|rho~ - rho| <= 2^-53 (1 + sum_{a <= A} (3a - 1 + A)|prod_a|)``, whose mean over
   depths and indices is ``<= 2^-53 (1 + 4 D e^D)`` with
   ``D = mean_j beta |l_j(z) - l_j(x)|``; GLL Lemma 23's sub-Gaussian concentration
   gives ``E e^{tD} <= 2 e^{t^2/8}`` at ``eta <= 1/(8 beta^2 G^2)``, hence
   ``E[D e^D] <= min_s 2 e^{(1+s)^2/8}/(s e) = 1.071`` and the constant ``2.65``,
   rounded up to 3 (the losses themselves are taken as computed);
6. a series index is not uniform: a uniform 128-bit integer reduced modulo ``n``
   (exactly, by :meth:`WordStream.index <dpsample._src.random_words.WordStream.index>`,
   ``n <= 2^32``), TV
   ``r (n - r)/(n 2^128) <= 2^-67`` per index with ``r = 2^128 mod n``, ``pool``
   indices;
7. the proposals depart from ``Q``: one restricted-Gaussian call of ``2N`` draws,
   :func:`restricted_gaussian.tv_bound
   <dpsample.samplers.restricted_gaussian.tv_bound>` (its shortfall
   ``FAILURE_TARGET`` plus the resolution of its ``3 num_candidates(2N)``
   comparisons).

Not counted, as everywhere in the library: float64 evaluation of the losses and of
the restricted Gaussian's density, and the float64 representation of continuous
draws. The sequential sampler itself is ``delta_inner``-close in TV to the RGO when
``eta <= c / (beta^2 G^2 log(1/delta_inner))`` with GLL's small constant (Lemma 24);
:func:`dpsample.samplers.proximal.schedule` adds that error per step.

References:
    Gopi, Lee, Liu, `Private Convex Optimization via Exponential Mechanism
    <https://proceedings.mlr.press/v178/gopi22a.html>`_, COLT 2022 (Algorithm 2,
    Lemmas 22–24).

    Awan, Rao, Weller, `Privacy-Aware Rejection Sampling
    <https://jmlr.org/papers/v24/22-0230.html>`_, JMLR 2023 (timing side channels).
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction
from typing import NamedTuple, cast

import jax
import jax.numpy as jnp
import numpy as np

from dpsample._src import precision, validation
from dpsample._src.random_words import (
    INDEX_WORDS,
    MAX_INDEX_RANGE,
    UNIFORM_WORDS,
    WordStream,
)
from dpsample.domains import Ball
from dpsample.samplers import restricted_gaussian
from dpsample.samplers.target import GibbsTarget, check_target, compiled_when_eager
from dpsample.types import Array, ArrayLike, PRNGKey

__all__ = [
    "RGOInfo",
    "sample_oracle",
    "oracle_from_stream",
    "pool_size",
    "oracle_words",
    "budget_tv",
    "budget_tv_terms",
    "proposal",
    "POOL_TAIL",
    "DEFAULT_NUM_TRIALS",
    "DEFAULT_NUM_LEVELS",
]

DEFAULT_NUM_TRIALS = 50
"""Trials per call (seed 000 §6.2 "trial cap")."""

DEFAULT_NUM_LEVELS = 20
"""Series levels per trial (seed 000 §6.2 "series cap")."""

POOL_TAIL = 1e-15
"""Probability that the series terms of all trials overflow the evaluation pool."""

_UNIFORM_GRID = 2**52  # float64 jax.random.uniform: multiples of 2^-52 on [0, 1)
_RHO_ROUNDING = 3.0 * 2.0**-53  # per trial, term 5 of the module docstring
_INDEX_BIAS = 2.0**-67  # per index draw, term 6


class RGOInfo(NamedTuple):
    """Public facts about one RGO call.

    Attributes:
        num_trials: trials the sequential algorithm would have used (index of the
            first accepted trial plus one; ``num_trials`` when none accepted).
        num_loss_evaluations: per-example loss evaluations the sequential algorithm
            needs for those trials (two per series term).
        num_loss_evaluations_budget: per-example loss evaluations actually run by the
            fixed budget (``2 * pool_size``), the same on every call.
        is_accepted: whether a trial accepted (``False``: the fallback was returned).
    """

    num_trials: Array
    num_loss_evaluations: Array
    num_loss_evaluations_budget: Array
    is_accepted: Array


def _depth_law(num_levels: int) -> np.ndarray:
    """``P(A = a)`` for ``a = 1..L`` (depth capped at ``L``)."""
    probs = [a / math.factorial(a + 1) for a in range(1, num_levels)]
    probs.append(1.0 / math.factorial(num_levels))
    return np.asarray(probs)


#: Per series cap ``L``: the last law of ``sum_i A_i (A_i + 1)/2`` computed, as
#: ``(trials, law)``. A plan's schedule search asks for pools at growing trial
#: counts (50, 51, ..., 81 for Gibbs's default plan): each extends the previous
#: law by the same convolutions (bit for bit what it computes from scratch)
#: instead of starting over (issue 27: 2,096 convolutions, most of that plan).
_TRIAL_SUM_LAWS: dict[int, tuple[int, np.ndarray]] = {}
_MAX_TRIAL_SUM_LAWS = 8


def _trial_sum_law(num_trials: int, num_levels: int) -> np.ndarray:
    """The law of ``sum_i A_i (A_i + 1)/2`` over ``num_trials`` trials (exact)."""
    per_trial = np.zeros(num_levels * (num_levels + 1) // 2 + 1)
    for a, p in enumerate(_depth_law(num_levels), start=1):
        per_trial[a * (a + 1) // 2] += p
    done, total = _TRIAL_SUM_LAWS.get(num_levels, (0, np.array([1.0])))
    if done > num_trials:
        done, total = 0, np.array([1.0])
    for _ in range(num_trials - done):
        total = np.convolve(total, per_trial)
    if len(_TRIAL_SUM_LAWS) >= _MAX_TRIAL_SUM_LAWS:
        _TRIAL_SUM_LAWS.clear()
    _TRIAL_SUM_LAWS[num_levels] = (num_trials, total)
    return total


@functools.lru_cache(maxsize=64)
def _pool(num_trials: int, num_levels: int) -> tuple[int, float]:
    total = _trial_sum_law(num_trials, num_levels)
    tail = np.cumsum(total[::-1])[::-1]  # tail[s] = P(S >= s)
    tail = np.append(tail, 0.0)
    size = int(np.argmax(tail <= POOL_TAIL)) - 1
    size = max(size, num_trials)
    return size, float(tail[size + 1])


def pool_size(num_trials: int, num_levels: int) -> int:
    """Static number of series terms evaluated per call (two losses each).

    The smallest ``P`` with ``P(sum_i A_i (A_i + 1)/2 > P) <= POOL_TAIL`` for
    ``num_trials`` independent depths, computed exactly by convolution.

    Args:
        num_trials: Trials per call, ``>= 1``.
        num_levels: Series cap, ``>= 1``.

    Returns:
        The pool size (358 at the defaults, against a mean demand of ``50 e ≈ 136``).

    Examples:
        >>> from dpsample.samplers.rgo import pool_size
        >>> pool_size(50, 20)
        358
    """
    num_trials = validation.positive_int("num_trials", num_trials)
    num_levels = validation.positive_int("num_levels", num_levels)
    return _pool(num_trials, num_levels)[0]


@functools.lru_cache(maxsize=64)
def _depth_tv(num_levels: int) -> float:
    """Exact TV between the implemented depth law and ``P(A >= a) = 1/a!``."""

    def implemented(a: int) -> Fraction:  # P(A >= a) as drawn by :func:`sample_oracle`
        if a == 1:
            return Fraction(1)
        if a > num_levels:
            return Fraction(0)
        threshold = Fraction(1.0 / math.factorial(a))  # the float64 threshold
        return Fraction(math.ceil(threshold * _UNIFORM_GRID), _UNIFORM_GRID)

    def exact(a: int) -> Fraction:
        return Fraction(1, math.factorial(a))

    total = exact(num_levels + 1)  # the exact mass beyond the cap
    for a in range(1, num_levels + 1):
        p_impl = implemented(a) - implemented(a + 1)
        p_exact = exact(a) - exact(a + 1)
        total += abs(p_impl - p_exact)
    return float(total / 2)


def budget_tv_terms(num_trials: int, num_levels: int) -> dict[str, float]:
    r"""The terms of :func:`budget_tv`, one per way a call can depart from GLL.

    With ``N = num_trials``, ``L = num_levels``, ``P = pool_size(N, L)`` (module
    docstring, items 1–7):

    * ``"trials_exhausted"``: :math:`(2/3)^N`;
    * ``"depth"``: :math:`N\,\mathrm{TV}(A_{impl}, A)`, exact (series cap and
      float64 depth draw);
    * ``"pool_overflow"``: ``P(sum_i A_i(A_i+1)/2 > P)`` (exact convolution);
    * ``"acceptance_resolution"``: :math:`N 2^{-52}`;
    * ``"rho_rounding"``: :math:`3 N 2^{-53}`;
    * ``"index_bias"``: :math:`P\,2^{-67}`;
    * ``"proposal"``: ``restricted_gaussian.tv_bound(2N)``.

    Args:
        num_trials: Trials per call.
        num_levels: Series cap.

    Returns:
        A dict from term name to its value.

    Examples:
        >>> from dpsample.samplers.rgo import budget_tv_terms
        >>> terms = budget_tv_terms(50, 20)
        >>> f"{terms['trials_exhausted']:.2e}", f"{terms['depth']:.2e}"
        ('1.57e-09', '3.75e-14')
    """
    num_trials = validation.positive_int("num_trials", num_trials)
    num_levels = validation.positive_int("num_levels", num_levels)
    pool, overflow = _pool(num_trials, num_levels)
    return {
        "trials_exhausted": (2.0 / 3.0) ** num_trials,
        "depth": num_trials * _depth_tv(num_levels),
        "pool_overflow": overflow,
        "acceptance_resolution": num_trials / _UNIFORM_GRID,
        "rho_rounding": num_trials * _RHO_ROUNDING,
        "index_bias": pool * _INDEX_BIAS,
        "proposal": restricted_gaussian.tv_bound(2 * num_trials),
    }


def budget_tv(num_trials: int, num_levels: int) -> float:
    r"""TV cost of one call, against GLL's sequential sampler in exact arithmetic.

    .. math::
        (2/3)^{N} + N\,\mathrm{TV}_{depth}(L) + P(\text{pool overflow})
        + N 2^{-52} + 3N 2^{-53} + P\,2^{-67} + \mathrm{tv}_{RG}(2N),

    with ``N = num_trials``, ``L = num_levels``, ``P`` the pool size; the sum of
    :func:`budget_tv_terms` (module docstring: trials exhausted, depth law, pool
    overflow, acceptance-test resolution, rounding of ``rho``, index bias, proposal
    draws). The first and fifth terms need ``eta <= 1/(8 beta^2 G^2)`` (GLL's
    acceptance ``>= 1/3``), which every step size of :func:`schedule
    <dpsample.samplers.proximal.schedule>` satisfies.

    Args:
        num_trials: Trials per call.
        num_levels: Series cap.

    Returns:
        The bound (a float).

    Examples:
        >>> from dpsample.samplers.rgo import budget_tv
        >>> f"{budget_tv(50, 20):.2e}"
        '1.57e-09'
    """
    return math.fsum(budget_tv_terms(num_trials, num_levels).values())


def proposal(
    target: GibbsTarget, y: ArrayLike, step_size: ArrayLike
) -> tuple[Array, Array]:
    r"""Mean and standard deviation of the proposal ``Q``.

    .. math::
        Q = N\Big(\frac{y}{1 + \eta\beta\mu}, \frac{\eta}{1 + \eta\beta\mu} I\Big)
        \cap K.

    Args:
        target: The Gibbs target.
        y: The proximal point, shape ``(d,)``.
        step_size: ``eta > 0``.

    Returns:
        ``(mean, std)``.

    Examples:
        >>> import jax.numpy as jnp
        >>> import dpsample
        >>> from dpsample import Ball, Problem
        >>> from dpsample.samplers.target import GibbsTarget
        >>> from dpsample.samplers.rgo import proposal
        >>> pb = Problem(lambda x, z: jnp.abs(x[0] - z), jnp.zeros(3), Ball(1.0, dim=1))
        >>> mean, std = proposal(GibbsTarget.create(pb, beta=1.0, mu=1.0),
        ...                      jnp.array([1.0]), 1.0)
        >>> float(mean[0]), round(float(std) ** 2, 3)
        (0.5, 0.5)
    """
    y = jnp.asarray(y, jnp.float64)
    shrink = 1.0 / (1.0 + step_size * target.beta * target.mu)
    return y * shrink, jnp.sqrt(step_size * shrink)


def oracle_words(num_trials: int, num_levels: int, n: int, dim: int) -> int:
    """Random 32-bit words one :func:`sample_oracle` call draws (in one PRNG call).

    The ``2 num_trials`` proposals (:func:`restricted_gaussian.words_needed
    <dpsample.samplers.restricted_gaussian.words_needed>`), one uniform per depth
    and per acceptance test, and four words per series index (a 128-bit integer
    reduced modulo ``n``).

    Args:
        num_trials: Trials per call.
        num_levels: Series cap.
        n: Number of examples.
        dim: The dimension ``d``.

    Returns:
        The number of words.

    Examples:
        >>> from dpsample.samplers.rgo import oracle_words
        >>> oracle_words(50, 20, 1000, 2)
        3372
    """
    pool, _ = _pool(num_trials, num_levels)
    words = restricted_gaussian.words_needed(2 * num_trials, dim)
    return words + 2 * num_trials * UNIFORM_WORDS + pool * INDEX_WORDS


def _check(target: GibbsTarget, y: Array, num_trials: int, num_levels: int):
    check_target(target, sampler="RGO", logdensity=False)  # names from_loss
    validation.positive_int("num_trials", num_trials)
    validation.positive_int("num_levels", num_levels)
    dim = target.problem.dim
    if y.shape != (dim,):
        raise ValueError(f"Expected y of shape ({dim},), got shape {y.shape}")
    if target.problem.n > MAX_INDEX_RANGE:
        raise ValueError(
            f"the oracle draws example indices for n <= 2^32, got n = "
            f"{target.problem.n}"
        )


def sample_oracle(
    rng_key: PRNGKey,
    target: GibbsTarget,
    y: ArrayLike,
    step_size: ArrayLike,
    *,
    num_trials: int = DEFAULT_NUM_TRIALS,
    num_levels: int = DEFAULT_NUM_LEVELS,
) -> tuple[Array, RGOInfo]:
    r"""One fixed-budget GLL rejection draw from ``pi^{X|Y=y}``.

    .. math::
        x \sim \exp\Big(-\beta F_D(x) - \frac{\beta\mu}{2}\|x\|^2
        - \frac{\|x - y\|^2}{2\eta}\Big)\mathbf{1}_K(x)
        \quad\text{(up to the TV error in the module docstring).}

    Jittable and vmappable (``target``, ``num_trials`` and ``num_levels`` static;
    ``y`` and ``step_size`` may be traced); ``jit`` is left to the caller. Each call
    draws ``2 num_trials`` proposals, ``pool_size(num_trials, num_levels)`` uniform
    indices and evaluates ``2 pool_size`` per-example losses, whatever the data.

    Args:
        rng_key: A JAX PRNG key.
        target: The :class:`~dpsample.samplers.target.GibbsTarget` (Ball domain).
        y: The point ``y``, shape ``(d,)``.
        step_size: ``eta > 0`` (the proximal step size).
        num_trials: Trials per call (static). Default 50.
        num_levels: Series cap (static). Default 20.

    Returns:
        ``(x, info)``: the draw, shape ``(d,)``, and an :class:`RGOInfo`.

    Raises:
        TypeError: If ``target`` is not a GibbsTarget.
        ValueError: If ``y`` has the wrong shape, ``step_size <= 0`` (when concrete),
            or ``num_trials``/``num_levels < 1``.

    Privacy:
        The RGO is one step of a sampler whose guarantee is that of the Gibbs target
        plus a TV slack (:mod:`dpsample.samplers.proximal`). This function itself
        releases nothing; its running time does not depend on the data, and its
        fallback is a proposal draw that does not depend on the data given ``y``.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> import dpsample
        >>> from dpsample import Ball, Problem
        >>> from dpsample.samplers.target import GibbsTarget
        >>> from dpsample.samplers import rgo
        >>> data = jnp.linspace(-1.0, 1.0, 8)
        >>> pb = Problem(lambda x, z: jnp.abs(x[0] - z), data, Ball(1.0, dim=1),
        ...              lipschitz=1.0)
        >>> target = GibbsTarget.create(pb, beta=4.0, mu=1.0)
        >>> y = jnp.array([0.3])
        >>> draw = jax.jit(lambda key: rgo.sample_oracle(key, target, y, 0.01))
        >>> x, info = draw(jax.random.key(0))
        >>> x.shape, bool(info.is_accepted), int(info.num_loss_evaluations_budget)
        ((1,), True, 716)

    References:
        Gopi, Lee, Liu (2022), Algorithm 2 and Lemma 24; seed 000 App. D.3 (Lemma
        D.2), errata E26–E27.
    """
    y = jnp.asarray(y, jnp.float64)
    _check(target, y, num_trials, num_levels)
    if not isinstance(step_size, jax.core.Tracer):
        validation.positive("step_size", step_size)
    return _oracle_checked(rng_key, target, y, step_size, num_trials, num_levels)


def _oracle_after_checks(
    rng_key: PRNGKey,
    target: GibbsTarget,
    y: Array,
    step_size: ArrayLike,
    num_trials: int,
    num_levels: int,
) -> tuple[Array, RGOInfo]:
    """:func:`sample_oracle` after its checks."""
    stream = WordStream.draw(
        rng_key, oracle_words(num_trials, num_levels, target.problem.n, y.shape[0])
    )
    out = _oracle_body(stream, target, y, step_size, num_trials, num_levels)
    stream.check_used()
    return out


# An eager call is compiled per (target, num_trials, num_levels); traced calls inline.
_oracle_checked = compiled_when_eager(_oracle_after_checks, static_argnums=(1, 4, 5))


def oracle_from_stream(
    stream: WordStream,
    target: GibbsTarget,
    y: ArrayLike,
    step_size: ArrayLike,
    *,
    num_trials: int = DEFAULT_NUM_TRIALS,
    num_levels: int = DEFAULT_NUM_LEVELS,
) -> tuple[Array, RGOInfo]:
    """:func:`sample_oracle` on the next :func:`oracle_words` words of a stream.

    For a caller that draws every random word of its step at once (the proximal
    kernel draws its Gaussian step and the oracle's words with one PRNG call: on
    XLA:CPU each ``jax.random`` call is a loop of its own, the larger part of a
    step's fixed cost). ``sample_oracle(key, ...)`` is this function on
    ``WordStream.draw(key, oracle_words(...))``.

    Args:
        stream: A :class:`~dpsample._src.random_words.WordStream` with at least
            ``oracle_words(num_trials, num_levels, n, d)`` unused words.
        target: The :class:`~dpsample.samplers.target.GibbsTarget` (Ball domain).
        y: The point ``y``, shape ``(d,)``.
        step_size: ``eta > 0``.
        num_trials: Trials per call (static). Default 50.
        num_levels: Series cap (static). Default 20.

    Returns:
        ``(x, info)`` as :func:`sample_oracle`.

    Raises:
        As :func:`sample_oracle`; also ``ValueError`` if the stream is too short.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> from dpsample import Ball, Problem
        >>> from dpsample._src import precision
        >>> from dpsample._src.random_words import WordStream
        >>> from dpsample.samplers.target import GibbsTarget
        >>> from dpsample.samplers import rgo
        >>> pb = Problem(lambda x, z: jnp.abs(x[0] - z), jnp.linspace(-1.0, 1.0, 8),
        ...              Ball(1.0, dim=1), lipschitz=1.0)
        >>> target = GibbsTarget.create(pb, beta=4.0, mu=1.0)
        >>> @jax.jit
        ... def draw(key):
        ...     stream = WordStream.draw(key, rgo.oracle_words(50, 20, 8, 1))
        ...     return rgo.oracle_from_stream(stream, target, jnp.array([0.3]), 0.01)
        >>> with precision.float64():
        ...     x, info = draw(jax.random.key(0))
        >>> x.shape, int(info.num_loss_evaluations_budget)
        ((1,), 716)
    """
    y = jnp.asarray(y, jnp.float64)
    _check(target, y, num_trials, num_levels)
    if not isinstance(step_size, jax.core.Tracer):
        validation.positive("step_size", step_size)
    return _oracle_body(stream, target, y, step_size, num_trials, num_levels)


def _oracle_body(
    stream: WordStream,
    target: GibbsTarget,
    y: Array,
    step_size: ArrayLike,
    num_trials: int,
    num_levels: int,
) -> tuple[Array, RGOInfo]:
    """:func:`oracle_from_stream` after its checks (``y`` float64)."""
    pool, _ = _pool(num_trials, num_levels)
    problem = target.problem
    n = problem.n
    mean, std = proposal(target, y, step_size)

    ball = cast(Ball, problem.domain)  # a GibbsTarget checks its domain is a Ball
    draws = restricted_gaussian.draws_from_stream(
        stream, mean, std, ball, 2 * num_trials
    )
    xs, zs = draws[:num_trials], draws[num_trials:]

    # Depth A_i with P(A >= a) = 1/a! (the sequential stop-with-prob-a/(1+a) rule),
    # from one uniform per trial: A = max{a : U < 1/a!}.
    levels = jnp.arange(1, num_levels + 1)
    inv_fact = jnp.asarray([1.0 / math.factorial(a) for a in range(2, num_levels + 1)])
    u_depth = stream.uniform((num_trials, 1))
    depth = 1 + jnp.sum(u_depth < inv_fact, axis=1)
    terms = depth * (depth + 1) // 2
    ends = jnp.cumsum(terms)
    starts = ends - terms

    # Lay the terms of all trials out in a static pool of slots.
    slot = jnp.arange(pool)
    # compare_all: one fused comparison, not a loop (the sizes are small and static)
    trial = jnp.minimum(
        jnp.searchsorted(ends, slot, side="right", method="compare_all"),
        num_trials - 1,
    )
    valid = slot < ends[-1]
    offset = slot - starts[trial]
    triangular = jnp.asarray([a * (a + 1) // 2 for a in range(num_levels + 1)])
    level = jnp.searchsorted(  # 1-based
        triangular, offset, side="right", method="compare_all"
    )
    index = stream.index((pool,), n)
    examples = jax.tree.map(lambda leaf: leaf[index], problem.data)
    losses = jax.vmap(problem.loss_fn)
    diff = target.beta * (losses(zs[trial], examples) - losses(xs[trial], examples))

    segment = jnp.where(valid, trial * num_levels + level - 1, num_trials * num_levels)
    prods = jax.ops.segment_prod(
        diff, segment, num_segments=num_trials * num_levels + 1
    )[:-1].reshape(num_trials, num_levels)
    rho = 1.0 + jnp.sum(jnp.where(levels <= depth[:, None], prods, 0.0), axis=1)

    complete = ends <= pool
    u = stream.uniform((num_trials,))
    accepted = complete & (2.0 * u < jnp.clip(rho, 0.0, 2.0))
    any_accepted = jnp.any(accepted)
    first = jnp.argmax(accepted)
    x = jnp.where(any_accepted, xs[first], xs[num_trials - 1])
    used = jnp.where(any_accepted, first + 1, num_trials)
    info = RGOInfo(
        num_trials=used,
        num_loss_evaluations=2 * ends[used - 1],
        num_loss_evaluations_budget=jnp.asarray(2 * pool),
        is_accepted=any_accepted,
    )
    return x, info


precision.scope_public(globals())
