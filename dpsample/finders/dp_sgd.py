r"""DP-SGD with clipping (Abadi et al.) and without clipping (seed 002, Algorithm 2).

One step of both variants is

.. math::
    x_{t+1} = \Pi_K\Big(x_t - \eta\Big(\frac1b \sum_{i \in S_t} g_i(x_t)
    + \xi_t\Big)\Big), \qquad \xi_t \sim \mathcal N(0, \Delta^2 I_d),

with ``g_i = clip_C(grad f(x_t, z_i))`` (**clipped**, Abadi et al. 2016, seed 002
Algorithm 1; the default, at ``C = min(clip_norm, G)`` with ``clip_norm`` defaulting
to the declared Lipschitz bound ``G``, so the declared constant is *enforced* and
the guarantee holds whatever the data) or ``g_i = grad f(x_t, z_i)`` (**no
clipping**, seed 002 Algorithm 2, an explicit opt-in: ``enforce_sensitivity=False``;
one backward pass of the weighted minibatch loss, no per-example gradients; the
guarantee is then *conditional* on the declared ``G``). ``Pi_K`` is the
projection onto a :class:`~dpsample.domains.Ball` domain (identity when unconstrained;
post-processing, it keeps the iterates where the declared constants hold). The noise
std is ``Delta = z C / b``: ``z`` is the noise multiplier in the ecosystem's
convention (Abadi et al., Opacus, TF Privacy, dp-accounting: std of the noise on the
sum over the per-example bound ``C``; the accountant handles the replace-one
sensitivity ``2C/b`` of the mean, see :mod:`dpsample.finders.oracles`), and it is the
smallest noise multiplier for which
the accountant certifies the target for **exactly the schedule that runs**: ``T``
releases of the first-kind oracle with the chosen sampling scheme (default Poisson with
a fixed padded buffer, accounted by dp_accounting's truncated-Poisson subsampled
Gaussian PLD for ``REPLACE_ONE``).

The gradient-bound event of seed 002 (no clipping). Theorem 3.3 is conditional on the
event ``E`` that every per-example gradient along the trajectory is at most ``C``, for
the data and every neighbour; here ``C`` is the declared Lipschitz bound ``G``, and
``gradient_bound_failure = P[not E]`` (``delta_E``) is a public input: 0 when ``G`` is a
worst-case declaration over the domain (the iterates are projected onto a ball domain),
or a Lemma 3.2-style failure probability. Off ``E`` there is no guarantee, and the
coupling argument of spec 002 §3.4.2 gives ``(epsilon, delta_acc + (1 + e^epsilon)
delta_E)``; this is exactly a TV slack ``delta_E`` on the accounted mechanism
(:meth:`~dpsample.privacy.PrivacyGuarantee.with_tv_slack`). **Correction of the
paper:** seed 002 claims ``(epsilon, 2 delta)`` (Theorem 3.3), which is too small by
the factor ``e^epsilon`` on the event term; the accountant's ``delta_acc`` is set to
``delta - (1 + e^epsilon) delta_E``. Theorem 3.3's ``c_2 C sqrt(T log(1/delta)) / (n
epsilon)`` has unspecified constants and is not used (a numerical accountant replaces
it, spec 002 §3.5); the "guarded" mode of the spec is the default (clipping at
``G``).

The same ``z`` means the same noise in :func:`dp_sgd_transform` (noise std ``z C`` on
the clipped sum) and the same guarantee in :func:`dp_sgd_guarantee`, as in Opacus.

Domain. The declared constants hold on the domain ``K`` only, and without clipping the
sensitivity ``2G/b`` is a statement about gradients at points of ``K``. So ``x0`` must
lie in ``K`` (a ``ValueError`` before any private computation otherwise; within
rounding of the ball it is projected onto it), and ``project=False`` on a ball is
refused in the no-clipping mode: every gradient is then evaluated at ``x0`` or at a
projected iterate, all in ``K``. With clipping (the default) every contribution is
bounded wherever the iterate is, and unprojected runs are allowed.

Non-finite values. The data are checked finite by the ``Problem``; a loss that
returns NaN or inf at an iterate does not raise during the run. In the clipped mode a
per-example gradient whose squared norm is not finite contributes zero (the oracle's
public rule, :func:`~dpsample._src.clipping.clip_coefficients`), so the guarantee
holds as stated. Without clipping such a gradient breaks the declared ``G`` (the
guarantee is conditional on it) and the noisy sum and iterates carry the NaN.

Numerics. In the clipped mode every per-example gradient is clipped at ``C / F``,
``C = min(clip_norm, G)``, where ``F >= 1`` absorbs rounding
(:func:`~dpsample.finders.oracles.clip_margin`): the sensitivity ``2C/b`` then holds
for the computed statistic, not only in exact arithmetic. ``gradient_dtype="float32"``
computes the per-example gradients, norms and clipped sum in float32 (``F - 1`` about
``2 m^2 2^-24`` for ``m`` padded rows: 0.8 % at ``m = 256``); the iterates, noise and
accounting stay in float64 and the guarantee is unchanged. Norms, scale and sum are
fused (no scaled copy of the ``(m, d)`` per-example gradients).

Defaults without a declared smoothness (no theorem schedule applies): the projected
subgradient method on the schedule practitioners run, expected batch ``min(256, n //
20)``, ten epochs, step ``D / (C sqrt T)`` on a ``Ball`` of diameter ``D``
(``docs/utility_benchmark.md``).

Defaults (when an argument is ``None``), from declared public constants and a public
initial-gap bound ``f_max`` (``initial_gap``, default the declared ``loss_range``; never
measured on the data):

* ``learning_rate`` ``eta = 1 / (2 M)`` (Lemma B.2 needs ``eta < 1/M``; Sec. 3.2's
  ``min(1, alpha^2/sigma~^2)/(2L)`` with the first branch);
* ``batch_size`` ``b = max(ceil(sqrt(d log(1/delta) / epsilon)), ceil(n sqrt(epsilon /
  T)))`` clipped to ``[1, n]``: Abadi et al.'s lot-size condition ``epsilon < q^2 T``
  (``q = b / n``, their Theorem 1 with ``c1 = 1``) at the schedule's own ``T``, and
  never below spec 003 A8's lot (the same condition at the quasar schedule's ``T``).
  ``preset="theorem"`` keeps A8's lot alone (the default before issue 24's
  benchmark: ``preset="theorem", output="tail_average"``). Below the condition the
  noise multiplier falls under about 1, where subsampling amplifies little and the
  noise std on the mean gradient, ``z C / b``, grows (``docs/finders.md``);
* ``num_steps`` ``T = ceil(64 f_max / (eta alpha^2))`` (Theorem 3.4) at the
  privacy-limited target ``alpha^2 = 8 C sqrt((2d+1) M f_max log(1/delta)) / (n
  epsilon)`` (spec 002 §4.3 with the unspecified ``c_2 = c_eta = 1``), capped at
  :data:`MAX_DEFAULT_STEPS`.

With these defaults Theorem 3.4 asserts that at least half of the visited iterates are
``alpha``-SOSPs (w.h.p., up to its unspecified constants), so ``output="random"``
returns an ``alpha``-SOSP with probability about 1/2 or more.

Output rule and presets. The iterates are post-processing of the noisy gradients, so
any function of the trajectory has the run's guarantee (the rules are shared with
DP-SPIDER, :mod:`dpsample.finders.outputs`): ``output="tail_average"`` (the default
of ``preset="practical"``, not in the papers) releases the mean of the last
``ceil(T/2)`` iterates, projected onto a ``Ball`` domain; ``"random"`` is Theorem
3.4's uniform iterate (the default of ``preset="theorem"``,
:mod:`dpsample.finders.presets`); ``"last"`` is ``x_T``. The default is the average
because it is the one that ends nearest stationarity in practice: the iterates of
noisy SGD fluctuate around the minimum they settle in by about the step times the
noise, and the average cancels most of that (seed 000's cosine saddle, ``n = 4000``,
``epsilon = 10``, five keys: ``||grad F||`` 0.003-0.007 for the average, 0.07-0.36
for the last iterate, 0.05-0.43 for the random one; ``docs/finders.md``). Theorem 3.4
speaks of the random iterate only, and an average over a tail that visits two basins
lands between them.

References:
    Abadi, Chu, Goodfellow, McMahan, Mironov, Talwar, Zhang, *Deep Learning with
    Differential Privacy*, CCS 2016.
    Avdiukhin, Dinitz, Fan, Yaroslavtsev, *Noise is All You Need: Private
    Second-Order Convergence of Noisy SGD*, 2024 (seed 002).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from dpsample._src import precision, validation
from dpsample.base import PrivateAlgorithm
from dpsample.domains import Ball
from dpsample.errors import MissingConstantError
from dpsample.finders import accounting
from dpsample.finders.accounting import dp_sgd_guarantee
from dpsample.finders.dp_sgd_lot import A8_WHY as _A8_WHY  # noqa: F401  (tests)
from dpsample.finders.dp_sgd_lot import UNDER_CAP, is_rule_lot
from dpsample.finders.dp_sgd_lot import default_lot as _default_lot
from dpsample.finders.dp_sgd_run import (  # noqa: F401  (tests read the loop's names)
    DPSGDInfo,
    _sgd_iterates,
    _sgd_scan,
    run_plan,
)
from dpsample.finders.oracles import (
    ENFORCED_NOTE,
    FirstKindOracle,
    check_enforce,
    first_kind,
)
from dpsample.finders.outputs import OUTPUT_RULES
from dpsample.finders.planning import start_param
from dpsample.finders.presets import label_schedule, output_param
from dpsample.finders.sgd_options import DPSGDOptions
from dpsample.options import call_options
from dpsample.plan import Budget, Cost, Param, Plan
from dpsample.privacy import PrivacyGuarantee, PrivateResult
from dpsample.problem import Problem, ProblemSpec
from dpsample.types import ArrayLike, PRNGKey

__all__ = [
    "DPSGD",
    "DPSGDInfo",
    "MAX_DEFAULT_STEPS",
    "OUTPUT_RULES",
    "dp_sgd",
    "dp_sgd_guarantee",
]

#: Cap on the theorem-mode default number of steps.
MAX_DEFAULT_STEPS = 20_000


def _batch(
    spec: ProblemSpec,
    batch_size: int | None,
    sampling: str,
    default: int,
    note: str,
) -> tuple[int, str]:
    """The batch size and its source (the caller's, checked, or ``default``).

    ``full_batch`` uses all ``n`` examples; a caller's other batch is refused.
    """
    n = spec.n
    if sampling == "full_batch":
        if batch_size is not None and int(batch_size) != n:
            raise ValueError(
                f"full_batch uses all n={n} examples; got batch_size={batch_size}"
            )
        return n, "full batch"
    if batch_size is None:
        return default, note
    return spec.check_batch_size(batch_size), "user"


#: Epochs of the default schedule when no smoothness is declared.
NONSMOOTH_EPOCHS = 10
#: Largest expected batch of the default schedule when no smoothness is declared.
NONSMOOTH_BATCH = 256


def _nonsmooth_defaults(
    spec: ProblemSpec,
    contribution: float,
    num_steps: int | None,
    batch_size: int | None,
    learning_rate: float | None,
    sampling: str,
) -> tuple[int, int | None, float, dict[str, str]]:
    """The defaults without a declared smoothness: the projected subgradient method.

    No theorem schedule of seed 002 applies (its step ``1/(2M)`` and ``T`` need
    ``M``). The schedule is then the one practitioners run (the peer libraries'
    tutorials): expected batch ``min(256, max(1, n // 20))``, ``T = ceil(10 n /
    b)`` (ten epochs), and the projected subgradient method's step ``D / (C
    sqrt(T))`` (``D`` the diameter of the ``Ball`` ``K``, ``C`` the clipping norm),
    which needs a bounded domain. Public inputs only.
    """
    sources: dict[str, str] = {}
    n = spec.n
    if not isinstance(spec.domain, Ball):
        raise MissingConstantError(
            "DP-SGD's default schedule needs a declared smoothness (the theorem's "
            "step 1/(2M)), or, without one, a Ball domain (the projected "
            "subgradient step D/(C sqrt T)); declare smoothness=..., use a Ball, or "
            "pass learning_rate= and num_steps="
        )
    batch_size, sources["batch_size"] = _batch(
        spec,
        batch_size,
        sampling,
        min(NONSMOOTH_BATCH, max(1, n // 20), n),
        "no smoothness declared: the practitioners' batch min(256, n // 20)",
    )
    if num_steps is None:
        t = math.ceil(NONSMOOTH_EPOCHS * n / batch_size)
        num_steps = max(1, min(MAX_DEFAULT_STEPS, t))
        sources["num_steps"] = (
            f"no smoothness declared: {NONSMOOTH_EPOCHS} epochs, ceil(10 n / b)"
            + (f", capped at {MAX_DEFAULT_STEPS}" if t > MAX_DEFAULT_STEPS else "")
        )
    else:
        num_steps = validation.positive_int("num_steps", num_steps)
        sources["num_steps"] = "user"
    if learning_rate is None:
        diameter = 2.0 * float(spec.domain.radius)
        learning_rate = diameter / (contribution * math.sqrt(num_steps))
        sources["learning_rate"] = (
            "no smoothness declared: the projected subgradient step D / (C sqrt T)"
        )
    else:
        learning_rate = validation.positive("learning_rate", learning_rate)
        sources["learning_rate"] = "user"
    return num_steps, batch_size, learning_rate, sources


def _theorem_defaults(
    spec: ProblemSpec,
    epsilon: float,
    delta: float,
    contribution: float,
    num_steps: int | None,
    batch_size: int | None,
    learning_rate: float | None,
    initial_gap: float | None,
    sampling: str,
    preset: str,
) -> tuple[int, int | None, float, dict[str, str]]:
    sources: dict[str, str] = {}
    n, d = spec.n, spec.dim
    if spec.smoothness is None and (learning_rate is None or num_steps is None):
        return _nonsmooth_defaults(
            spec, contribution, num_steps, batch_size, learning_rate, sampling
        )
    if learning_rate is None:
        m = validation.require_constant(
            "smoothness",
            spec.smoothness,
            needed_for="the default DP-SGD learning rate 1/(2M)",
        )
        learning_rate = 0.5 / m
        sources["learning_rate"] = "seed 002 Lemma B.2 / Sec. 3.2: 1/(2M)"
    else:
        learning_rate = validation.positive("learning_rate", learning_rate)
        sources["learning_rate"] = "user"
    if num_steps is None:
        m = validation.require_constant(
            "smoothness",
            spec.smoothness,
            needed_for="the default number of DP-SGD steps (or pass num_steps)",
        )
        f_max, sources["initial_gap"] = spec.initial_gap(
            initial_gap,
            needed_for="the default number of DP-SGD steps (or pass num_steps)",
        )
        alpha_sq = (
            8.0
            * contribution
            * math.sqrt((2 * d + 1) * m * f_max * math.log(1.0 / delta))
            / (n * epsilon)
        )
        t = math.ceil(64.0 * f_max / (learning_rate * alpha_sq))
        num_steps = max(1, min(MAX_DEFAULT_STEPS, t))
        sources["num_steps"] = (
            "seed 002 Thm 3.4 T = 64 f_max/(eta alpha^2), alpha from §4.3 with "
            f"c2 = c_eta = 1 (alpha = {math.sqrt(alpha_sq):.4g})"
            + (f", capped at {MAX_DEFAULT_STEPS}" if t > MAX_DEFAULT_STEPS else "")
        )
    else:
        num_steps = validation.positive_int("num_steps", num_steps)
        sources["num_steps"] = "user"
    lot, why = _default_lot(n, d, epsilon, delta, num_steps, preset)
    batch_size, sources["batch_size"] = _batch(spec, batch_size, sampling, lot, why)
    return num_steps, batch_size, learning_rate, sources


def dp_sgd(
    rng_key: PRNGKey,
    problem: Problem,
    *,
    epsilon: float,
    delta: float,
    x0: ArrayLike | None = None,
    num_steps: int | None = None,
    batch_size: int | None = None,
    max_batch_size: int | None = None,
    learning_rate: float | None = None,
    clip_norm: float | None = None,
    enforce_sensitivity: bool = True,
    sampling: str = "poisson",
    gradient_bound_failure: float = 0.0,
    preset: str = "practical",
    output: str | None = None,
    project: bool = True,
    gradient_dtype: str = "float64",
    return_iterates: bool = False,
    initial_gap: float | None = None,
) -> PrivateResult:
    r"""Differentially private (projected) SGD, noise calibrated to (epsilon, delta).

    See the module docstring for the update, the two modes and the defaults.

    The loop runs in a module-level jitted core keyed on the oracles' static structure
    (:meth:`~dpsample.finders.oracles.FirstKindOracle.functional`) and ``T`` only: a
    second call with another key, other data of the same shapes or another epsilon
    (same ``T``) reuses the compilation.

    Args:
        rng_key: A JAX PRNG key (split internally, never reused).
        problem: The :class:`~dpsample.problem.Problem`.
        epsilon: Target epsilon ``> 0``.
        delta: Target delta in ``(0, 1)`` (the whole release, event term included).
        x0: Public starting point in the domain ``K``, shape ``(d,)``.
        num_steps: ``T`` (default: Theorem 3.4, see the module docstring).
        batch_size: ``b`` (expected size for Poisson; default Abadi's lot-size
            condition at the schedule's ``T``, see the module docstring).
        max_batch_size: Poisson padded size (default: overflow probability
            ``<= 1e-12``; truncation is accounted in every case).
        learning_rate: ``eta`` (default ``1/(2M)``).
        clip_norm: Per-example clipping norm ``c`` (Abadi); ``C = min(c, G)``.
            Default: the declared ``lipschitz`` ``G`` (clipping enforces it, so the
            guarantee holds whatever the data); without a declared ``G`` it must
            be given.
        enforce_sensitivity: Clip per-example gradients at ``C`` (default).
            ``False`` opts into seed 002's unclipped Algorithm 2 (``C = G``
            trusted, no per-example gradients): the guarantee is then
            *conditional* on the declared ``G`` (listed in its ``assumptions``);
            ``clip_norm`` must then be omitted.
        sampling: ``"poisson"`` (default), ``"without_replacement"`` or
            ``"full_batch"``.
        gradient_bound_failure: ``delta_E``, the probability that some per-example
            gradient along the run exceeds ``C`` (``enforce_sensitivity=False``
            only).
        preset: ``"practical"`` (default) or ``"theorem"``
            (:mod:`dpsample.finders.presets`): the rule behind every parameter
            left at ``None``. Both take Theorem 3.4's schedule (``T``, ``b``,
            ``eta`` above); ``"theorem"`` also releases its uniform random
            iterate, ``"practical"`` the tail average.
        output: Which point of the trajectory is released (every rule is
            post-processing of the released noisy iterates, so each has the same
            guarantee). ``"tail_average"`` (default, non-paper): the mean of the
            last ``ceil(T/2)`` iterates ``x_{floor(T/2)+1}..x_T``, projected onto
            ``K`` when ``K`` is a :class:`~dpsample.domains.Ball`; averaging cancels
            most of the injected noise around the minimum the run has settled in
            (on seed 000's cosine saddle at ``n = 4000``, ``epsilon = 10``:
            ``||grad F||`` 0.003-0.007 against 0.05-0.43 for ``"random"``,
            ``docs/finders.md``), but it is no SOSP theorem's output, and a tail
            that straddles two basins averages to a point between them.
            ``"random"``: a uniform iterate of ``x_1..x_T``, Theorem 3.4's output
            (at least half the iterates are alpha-SOSPs w.h.p.). ``"last"``:
            ``x_T``. The rules are :mod:`dpsample.finders.outputs`' (DP-SPIDER
            takes the same). Default: the preset's (``"tail_average"`` for
            ``"practical"``, ``"random"`` for ``"theorem"``).
        project: Project onto a ball domain after each step. ``False`` on a ball
            needs clipping (``enforce_sensitivity=True``, the default: without
            clipping the sensitivity rests on the constants declared on ``K``).
        gradient_dtype: ``"float64"`` (default) or ``"float32"`` (clipped mode
            only): dtype of the per-example gradients, their norms and their
            clipped sum. The iterates, the noise and its addition, and the
            accounting stay in float64; rows are clipped at ``C / F`` with the
            rounding margin ``F`` of :func:`~dpsample.finders.oracles.clip_margin`
            (``F - 1 ~ 2 m^2 2^-24`` in float32, 0.8 % at ``m = 256``; about
            ``1e-11`` in float64), so the sensitivity ``2C/b`` holds for the
            computed statistic and the guarantee is the same in both dtypes.
        return_iterates: Put all iterates in ``info["iterates"]`` (covered by the same
            guarantee: every iterate is post-processing of the noisy gradients).
        initial_gap: Public bound ``f_max >= F(x0) - F*`` (default ``loss_range``).

    Returns:
        :class:`~dpsample.privacy.PrivateResult` with the released point, its
        guarantee and ``info`` (noise multiplier ``z``, std of the noise on the sum
        over ``C``, as :func:`dp_sgd_transform` and :func:`dp_sgd_guarantee` read it,
        and the noise std ``z C / b`` on the mean; schedule, oracle counts, parameter
        sources, and optionally the iterates).

    Raises:
        ValueError: Bad privacy parameters, ``x0`` (wrong shape, not finite, or
            outside ``K``), ``project=False`` on a ball without clipping,
            ``clip_norm`` or ``gradient_bound_failure > 0`` against the mode, batch
            size, ``T < 1``, sampling, output or ``gradient_dtype`` (float32 without
            clipping, or beyond the range of
            :func:`~dpsample.finders.oracles.clip_margin`), before any private
            computation.
        TypeError: ``enforce_sensitivity`` is not a bool.
        MissingConstantError: No ``clip_norm`` and no declared ``lipschitz``; or a
            default needs ``smoothness`` / an initial gap that is not available.

    Privacy:
        Replace-one neighbours. Per-example contribution ``C`` (enforced by
        clipping at ``min(clip_norm, G)``, by default; or the declared ``G``,
        trusted, with ``enforce_sensitivity=False``, conditional on the
        gradient-bound event), sensitivity of each noisy mean ``2C/b``, noise std
        ``z C / b``; ``T`` adaptive releases composed by dp_accounting (PLD for
        Poisson, RDP for sampling without replacement, both for the full batch),
        plus a TV slack ``delta_E`` in the no-clipping mode. The returned guarantee
        meets ``(epsilon, delta)`` and covers every iterate. By default it rests on
        no declaration. With ``enforce_sensitivity=False`` it is *conditional*,
        and says so in ``privacy.assumptions``: on the declared ``G`` bounding every
        per-example gradient along the run and, when ``delta_E > 0``, on the caller's
        ``delta_E``.

    Examples:
        >>> import jax, jax.numpy as jnp, dpsample
        >>> from dpsample.finders import dp_sgd
        >>> data = {"z": jnp.linspace(-1.0, 1.0, 8)[:, None]}
        >>> prob = dpsample.Problem(lambda x, z: 0.5 * jnp.sum((x - z["z"]) ** 2),
        ...     data, dpsample.Ball(2.0, dim=1), lipschitz=3.0, smoothness=1.0,
        ...     loss_range=4.5)
        >>> res = dp_sgd(jax.random.key(0), prob, epsilon=2.0, delta=1e-5,
        ...              x0=jnp.zeros(1), num_steps=5, batch_size=4)
        >>> res.value.shape, res.privacy.epsilon(1e-5) <= 2.0
        ((1,), True)
        >>> res.info["mode"], res.info["sampling"], res.privacy.conditional
        ('clipped', 'poisson', False)
        >>> res.info["contribution_bound"]  # clipped at the declared G
        3.0
        >>> paper = dp_sgd(jax.random.key(0), prob, epsilon=2.0, delta=1e-5,
        ...     x0=jnp.zeros(1), num_steps=5, batch_size=4,
        ...     enforce_sensitivity=False)  # seed 002's unclipped Algorithm 2
        >>> paper.info["mode"], paper.privacy.conditional
        ('no_clipping', True)
        >>> r32 = dp_sgd(jax.random.key(0), prob, epsilon=2.0, delta=1e-5,
        ...              x0=jnp.zeros(1), num_steps=5, batch_size=4, clip_norm=1.0,
        ...              gradient_dtype="float32")
        >>> r32.value.dtype, r32.info["noise_multiplier"] == dp_sgd(
        ...     jax.random.key(0), prob, epsilon=2.0, delta=1e-5, x0=jnp.zeros(1),
        ...     num_steps=5, batch_size=4, clip_norm=1.0).info["noise_multiplier"]
        (dtype('float64'), True)

    References:
        Abadi et al., CCS 2016; Avdiukhin et al. 2024 (seed 002), Theorems 3.3-3.5.
    """
    return DPSGD().solve(
        rng_key, problem, epsilon=epsilon, delta=delta, **call_options(locals())
    )


#: The output rule of each preset (:mod:`dpsample.finders.presets`), and why.
_OUTPUT_RULES = {
    "practical": (
        "tail_average",
        "the mean of the last ceil(T/2) iterates (post-processing: same "
        "guarantee); Theorem 3.4's uniform iterate is output='random'",
    ),
    "theorem": ("random", "Theorem 3.4's uniform iterate of x_1..x_T"),
}

_SOURCE_OF = {
    "user": ("user", ""),
    "full batch": ("derived", "the full batch: b = n"),
    "declared loss_range": ("derived", "the declared loss_range"),
}


_OVERFLOW = "overflow probability <= 1e-12"
_OPTED_OUT = "opted out: the guarantee is conditional on the declared G"


def _param(value: Any, source: str) -> Param:
    """A :class:`~dpsample.plan.Param` from one of the old source strings."""
    if source in _SOURCE_OF:
        kind, note = _SOURCE_OF[source]
        return Param(value, kind, note)
    kind = "theorem" if source.startswith("seed") else "default"
    return Param(value, kind, source)


class DPSGD(PrivateAlgorithm):
    """DP-SGD as a two-phase algorithm: :meth:`plan` in public, :meth:`run` privately.

    See the module docstring for the update, the two modes and the defaults, and
    :func:`dp_sgd` for every option (the same keywords, bound at construction or
    given to :meth:`plan`). ``x0`` defaults to the centre of the domain.

    Compute budget: with ``Budget(max_evaluations=E)``, a theorem-default ``T`` whose
    ``T m`` per-example gradients exceed ``E`` is capped at ``floor(E / m)`` (the
    noise is then calibrated for the capped ``T``) and the default lot stays the
    uncapped schedule's (:mod:`dpsample.finders.dp_sgd_lot`: the plan's note says
    so); a ``num_steps`` given by the caller that exceeds it is refused.

    Examples:
        >>> import jax, jax.numpy as jnp, dpsample
        >>> from dpsample.finders.dp_sgd import DPSGD
        >>> from dpsample.plan import Budget
        >>> data = {"z": jnp.linspace(-1.0, 1.0, 8)[:, None]}
        >>> prob = dpsample.Problem(lambda x, z: 0.5 * jnp.sum((x - z["z"]) ** 2),
        ...     data, dpsample.Ball(2.0, dim=1), lipschitz=3.0, smoothness=1.0,
        ...     loss_range=4.5)
        >>> algo = DPSGD(num_steps=5, batch_size=4)
        >>> plan = algo.plan(prob.spec, Budget(2.0, 1e-5))
        >>> plan["num_steps"], plan.source("noise_multiplier")
        (5, 'calibrated')
        >>> res = algo.run(jax.random.key(0), plan, prob.data)
        >>> res.privacy is plan.guarantee, res.info.num_steps
        (True, 5)
    """

    name = "dp_sgd"
    kind = "finder"
    seed = "002"
    theorem = "Algorithms 1-2, Theorems 3.3-3.5"
    guarantee_type = (
        "(epsilon, delta): T subsampled Gaussian releases, dp_accounting PLD/RDP"
    )
    summary = "DP-SGD with or without per-example clipping"

    options_type = DPSGDOptions

    def _plan(self, spec: ProblemSpec, budget: Budget, **options: Any) -> Plan:
        opts = DPSGDOptions.from_options(options)
        sampling, preset, clip_norm = opts.sampling, opts.preset, opts.clip_norm
        epsilon, delta = validation.check_privacy(budget.epsilon, budget.delta)
        x0_param = start_param(spec, opts.x0, "the centre of the domain")
        enforce = check_enforce(opts.enforce_sensitivity)
        project = spec.check_projection(opts.project, clipped=enforce, name="dp_sgd")
        opts = dataclasses.replace(opts, project=project)  # a [user] row if it differs
        if sampling not in ("poisson", "without_replacement", "full_batch"):
            raise ValueError(
                "Expected sampling in ('poisson', 'without_replacement', "
                f"'full_batch'), got {sampling!r}"
            )
        output_p = output_param(opts.output, preset, **_OUTPUT_RULES)
        delta_e = validation.probability(
            "gradient_bound_failure", opts.gradient_bound_failure
        )
        clip_param = Param(clip_norm, "user")
        if not enforce:
            mode = "no_clipping"
            if clip_norm is not None:
                raise ValueError(
                    "clip_norm clips, enforce_sensitivity=False asks not to: omit "
                    "clip_norm for seed 002's unclipped Algorithm 2"
                )
            contribution = validation.require_constant(
                "lipschitz",
                spec.lipschitz,
                needed_for="DP-SGD without clipping (seed 002 Algorithm 2: C = G)",
            )
            clip_param = Param(
                None, "user", "enforce_sensitivity=False: no clipping, G trusted"
            )
        else:
            mode = "clipped"
            if clip_norm is None:
                if spec.lipschitz is None:
                    raise MissingConstantError(
                        "DP-SGD clips per-example gradients at the declared "
                        "lipschitz G by default, and none was declared; pass "
                        "lipschitz=... (a data-independent bound) to the Problem "
                        "or clip_norm=..."
                    )
                clip_norm = float(spec.lipschitz)
                clip_param = Param(clip_norm, "derived", ENFORCED_NOTE)
            clip_norm = validation.positive("clip_norm", clip_norm)
            if clip_param.source == "user":
                clip_param = Param(clip_norm, "user")
            if delta_e > 0:
                raise ValueError(
                    "gradient_bound_failure applies to the no-clipping mode only "
                    "(enforce_sensitivity=False; clipping bounds every "
                    "contribution surely)"
                )
            contribution = (
                clip_norm if spec.lipschitz is None else min(clip_norm, spec.lipschitz)
            )
        num_steps, batch_size, learning_rate, sources = _theorem_defaults(
            spec,
            epsilon,
            delta,
            contribution,
            opts.num_steps,
            opts.batch_size,
            opts.learning_rate,
            opts.initial_gap,
            sampling,
            preset,
        )
        delta_acc = delta - (1.0 + math.exp(min(epsilon, 700.0))) * delta_e
        if delta_acc <= 0:
            raise ValueError(
                f"gradient_bound_failure={delta_e:g} leaves no delta for the "
                f"accountant: (1 + e^epsilon) delta_E >= delta={delta:g}"
            )

        def make_oracle(z: float) -> FirstKindOracle:
            return first_kind(
                spec,
                noise_multiplier=z,
                sampling=sampling,
                batch_size=None if sampling == "full_batch" else batch_size,
                clip_norm=clip_norm,
                max_batch_size=opts.max_batch_size,
                gradient_dtype=opts.gradient_dtype,
                enforce_sensitivity=enforce,
            )

        probe = make_oracle(1.0)  # validates sampling/batch/constants eagerly
        m = probe.max_batch_size
        cap = budget.max_evaluations
        if cap is not None and num_steps * m > cap:
            if sources["num_steps"] == "user":
                raise ValueError(
                    f"num_steps={num_steps} needs {num_steps * m:,} per-example "
                    f"gradients (m={m} rows a step), over max_evaluations={cap:,}"
                )
            if cap < m:
                raise ValueError(
                    f"max_evaluations={cap:,} is below one DP-SGD step ({m} rows)"
                )
            if is_rule_lot(sources["batch_size"], preset):
                sources["batch_size"] += UNDER_CAP
            sources["num_steps"] += (
                f"; capped at floor(max_evaluations / m) = {cap // m} "
                f"(max_evaluations={cap:,}, m={m})"
            )
            num_steps = cap // m

        def make_guarantee(z: float) -> PrivacyGuarantee:
            g = make_oracle(z).run_guarantee(num_steps)
            if delta_e == 0:
                return g
            return g.with_tv_slack(delta_e).assuming(
                "the gradient-bound event fails with probability <= "
                f"gradient_bound_failure = {delta_e:g} (declared by the caller)"
            )

        def coarse(z: float) -> float:
            part = (
                lambda route: accounting.replace_one_event(
                    sampling, spec.n, probe.batch_size, m, z, route
                ),
                num_steps,
            )
            return accounting.coarse_epsilon([part], delta_acc)

        z, guarantee = accounting.calibrate_multiplier(
            coarse,
            make_guarantee,
            epsilon=epsilon,
            delta=delta,
            guess=accounting.multiplier_estimate(
                epsilon, delta_acc, num_steps, probe.batch_size / spec.n
            ),
        )
        oracle = make_oracle(z)
        # the options' rows (the declaration's order, sources and rules); the plan
        # makes the rows whose source its schedule names, and the noise rows follow
        # ``sampling``
        gap = "initial_gap" in sources
        rows = list(
            opts.rows(
                resolved={
                    "max_batch_size": m,
                    "enforce_sensitivity": enforce,
                    "gradient_bound_failure": delta_e,
                    "project": project,
                    "initial_gap": None,
                },
                notes={"max_batch_size": "" if sampling != "poisson" else _OVERFLOW}
                | ({} if enforce else {"enforce_sensitivity": _OPTED_OUT}),
                params={
                    "x0": x0_param,
                    "num_steps": _param(num_steps, sources["num_steps"]),
                    "batch_size": _param(probe.batch_size, sources["batch_size"]),
                    "learning_rate": _param(learning_rate, sources["learning_rate"]),
                    "clip_norm": clip_param,
                    "output": output_p,
                    "gradient_dtype": Param(oracle.gradient_dtype, "default"),
                    "return_iterates": Param(bool(opts.return_iterates), "default"),
                }
                | (
                    {
                        "initial_gap": _param(
                            spec.initial_gap(opts.initial_gap, needed_for="DP-SGD")[0],
                            sources["initial_gap"],
                        )
                    }
                    if gap
                    else {}
                ),
            ).items()
        )
        noise = {
            "noise_multiplier": Param(
                z, "calibrated", "smallest z the accountant certifies (PLD/RDP)"
            ),
            "noise_std": Param(
                oracle.noise_std,
                "derived",
                "z C / b" if enforce else "z C F / b",
            ),
        }
        cut = [k for k, _ in rows].index("sampling") + 1
        params = dict(rows[:cut]) | noise | dict(rows[cut:])
        internal = {
            "oracle": oracle,
            "mode": mode,
            "contribution": contribution,
            "delta_acc": delta_acc,
            "sources": sources,
        }
        return Plan(
            algorithm=self.name,
            spec=spec,
            budget=budget,
            params=label_schedule(params, preset),
            guarantee=guarantee,
            cost=Cost(gradient_evaluations=num_steps * m, steps=num_steps),
            internal=internal,
        )

    def _run(self, rng_key: PRNGKey, plan: Plan, problem: Problem) -> PrivateResult:
        return run_plan(self.name, rng_key, plan, problem)


precision.scope_public(globals())
