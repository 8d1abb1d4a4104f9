r"""Drift-controlled Stochastic Spider with private SOSP selection (seed 000).

Seed 000 (Ganesh, Liu, Oh & Thakurta) finds an approximate second-order stationary
point (SOSP) privately in two stages:

1. **Algorithm 1** ("Stochastic Spider"): SpiderBoost whose expensive oracle ``O1`` (a
   noisy gradient) is called only when the squared movement since the last call, the
   *drift*, reaches :math:`\kappa`; otherwise the cheap ``O2`` (a noisy gradient
   difference on the same batch) updates a running estimate. When the estimate is
   small and no kick happened for :math:`\Gamma` steps, a Gaussian *kick* is added to
   escape saddles. Oracles: Eq. (2) (full data, empirical risk) or Eq. (3) (fresh
   batches without replacement from one half of the data, population risk), built
   with :mod:`dpsample.finders.oracles`.
2. **Algorithm 2** (AboveThreshold): selects privately the first iterate whose noisy
   gradient norm and smallest Hessian eigenvalue pass noisy thresholds
   (:func:`dpsample.mechanisms.above_threshold_sosp`).

:func:`plan_spider` computes every parameter from public quantities (declared
constants, ``n``, ``d``, the privacy target); :func:`spider_sosp` runs both stages and
returns the selected point with the composed guarantee. Corrections to the paper
follow spec 000 §6.1 (E3–E21, E34–E37) and are named where they apply.

Domain. Algorithm 1 takes unconstrained steps (no projection, E20) and its oracles do
not clip, so the declared constants must hold on all of ``R^d``: both
:func:`stochastic_spider` and :func:`spider_sosp` refuse a ``Problem`` that is not on
:class:`~dpsample.domains.Unconstrained` (``ValueError``, before any private
computation); every finite ``x0`` then lies in the domain.

Non-finite values. The data are checked finite by the ``Problem``; nothing raises
during a run. A selection query that is not finite (the loss or its derivatives
returned NaN or inf at a candidate, or its Hessian is not finite) *fails* its test in
Algorithm 2: a non-finite gradient norm is treated as ``+inf``, a non-finite smallest
eigenvalue as ``-inf``, so that candidate is never selected (the public rule of
:func:`~dpsample.mechanisms.above_threshold_sosp` for lazy queries). The guarantee is
unchanged; a loss that is not finite somewhere breaks the declared constants the
oracles' sensitivities rest on, so the iterates may carry the NaN.
"""

from __future__ import annotations

import functools
import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from dpsample._src import precision, validation
from dpsample.domains import Unconstrained
from dpsample.finders import oracles
from dpsample.finders.accounting import C_SENS
from dpsample.mechanisms import above_threshold_sosp
from dpsample.privacy import PrivacyGuarantee, PrivateResult, epsilon_to_zcdp
from dpsample.problem import Problem, check_problem
from dpsample.types import Array, ArrayLike, PRNGKey

__all__ = [
    "PRESETS",
    "SpiderPlan",
    "plan_spider",
    "spider_sosp",
    "stochastic_spider",
]

#: Constants of the two presets (spec 000 §6.2). ``"paper"``: the printed forms with
#: every O(.) constant set to 1 (T = BM L^4/gamma^2, N1 from Lemma 3.7 with the
#: (1 + 3 L^4/64) factor, kick threshold gamma L^3). ``"practical"`` (non-paper):
#: T = c_T BM/gamma^2, N1_drift = c_N 6 B eta/kappa + 1, kick threshold c_alpha gamma,
#: with c_N >= 1 + 3 c_T/64 so the Lemma 3.7 count stays covered.
PRESETS: dict[str, dict[str, float]] = {
    "paper": {"c_gamma": 1.0},
    "practical": {"c_gamma": 1.0, "c_T": 20.0, "c_N": 4.0, "c_alpha": 1.0},
}

_MAX_PLAN_ROUNDS = 200


class SpiderPlan(NamedTuple):
    r"""Public parameters of one run of Algorithms 1 and 2 (data-independent).

    Attributes:
        variant: ``"empirical"`` (Eq. (2), Theorem 4.2) or ``"population"`` (Eq. (3)
            on the first half of the data, Theorem 4.6).
        preset: ``"paper"`` or ``"practical"``.
        kick_mode: ``"o1"`` (paper) or ``"perturb"`` (variant, spec 000 §2.2).
        kick_budget: ``"shared"`` (kick O1 calls count toward the Lemma 3.7 cap,
            option (a)) or ``"separate"`` (cap = drift bound + kick bound, option
            (b)); ``"none"`` for ``kick_mode="perturb"``.
        zcdp: total zCDP budget :math:`\varphi` from the (epsilon, delta) target.
        step_size: :math:`\eta = 1/M`.
        drift_threshold: :math:`\kappa`.
        gamma: the error scale :math:`\gamma` of Lemma 3.3.
        alpha_kick: kick threshold (= the SOSP accuracy :math:`\alpha_1`).
        alpha_select: the :math:`\alpha` passed to Algorithm 2.
        num_iters: ``T`` (exactly ``T`` iterations, E9).
        freeze_period: :math:`\lceil\Gamma\rceil`.
        max_o1_calls: the O1 cap ``N1_max`` (privacy depends on it, E7).
        n1_drift: the drift part of the cap (Lemma 3.7 plus the first call).
        n1_kick: the kick bound :math:`\lceil T/(\lceil\Gamma\rceil + 1)\rceil`.
        noise_multiplier_o1: O1 noise multiplier: std of the noise on the sum over
            the per-example bound ``G`` (the ecosystem's convention; noise over the
            replace-one sensitivity is half of it).
        noise_multiplier_o2: O2 noise multiplier: the same over ``M ||x - y||``.
        sigma1: O1 noise std (``z G / b``).
        sigma2: O2 noise std per unit of displacement (``z M / b``; the oracle adds
            its rounding floor).
        zeta1: nSG parameter of O1 (Claim 4.4 for the population variant).
        zeta2: nSG parameter of O2 per unit of displacement.
        kick_std: std of the Gaussian kick :math:`\zeta_1/\sqrt d` (line 8).
        batch_o1: ``b1`` (``n`` for the empirical variant).
        batch_o2: ``b2`` (``n`` for the empirical variant).
        n_train: examples used by Algorithm 1 (``n`` or ``ceil(n/2)``).
        n_select: ``|S|``, examples used by Algorithm 2 (``n`` or ``floor(n/2)``).
        epsilon_select: the pure epsilon of Algorithm 2.
        failure_prob: :math:`\omega`.
    """

    variant: str
    preset: str
    kick_mode: str
    kick_budget: str
    zcdp: float
    step_size: float
    drift_threshold: float
    gamma: float
    alpha_kick: float
    alpha_select: float
    num_iters: int
    freeze_period: int
    max_o1_calls: int
    n1_drift: int
    n1_kick: int
    noise_multiplier_o1: float
    noise_multiplier_o2: float
    sigma1: float
    sigma2: float
    zeta1: float
    zeta2: float
    kick_std: float
    batch_o1: int
    batch_o2: int
    n_train: int
    n_select: int
    epsilon_select: float
    failure_prob: float


# ------------------------------------------------------------------------ planning
def _log1(x: float) -> float:
    """``max(1, log x)``: logs of dimensioned quantities are floored at 1 (E19)."""
    return max(1.0, math.log(x)) if x > 0 else 1.0


def plan_spider(
    problem: Problem,
    *,
    epsilon: float,
    delta: float,
    variant: str = "empirical",
    preset: str = "practical",
    failure_prob: float = 0.05,
    drift_threshold: float | None = None,
    num_iters: int | None = None,
    max_o1_calls: int | None = None,
    alpha: float | None = None,
    kick_mode: str = "o1",
    kick_budget: str | None = None,
    initial_gap: float | None = None,
) -> SpiderPlan:
    r"""Parameters of Theorem 4.2 / 4.6 with the exact zCDP calibration (public).

    Budget split (zCDP :math:`\varphi` solving :math:`\varphi + 2\sqrt{\varphi
    \log(1/\delta)} = \varepsilon`, Lemma A.4):

    * empirical: :math:`\varphi/4` for all ``O1`` calls (``N1_max`` of them),
      :math:`\varphi/4` for the ``T`` ``O2`` calls, :math:`\varphi/2` for
      Algorithm 2 (:math:`\varepsilon_{AT} = \sqrt\varphi`); so
      :math:`z_1 = 2\sqrt{2 N_{1,\max}/\varphi}` and :math:`z_2 =
      2\sqrt{2T/\varphi}` (noise multipliers: std of the noise on the sum over the
      per-example bound :math:`G`, resp. :math:`M\|x-y\|`; the replace-one
      sensitivity is twice the bound, so one release is :math:`2/z^2`-zCDP, E3/E4:
      exact :math:`\Delta^2/(2\sigma^2)` with :math:`c_{sens} = 2`).
    * population: every oracle call uses fresh examples of :math:`D_1` and Algorithm
      2 uses the disjoint :math:`D_2`, so by parallel composition each part may use
      the whole budget: every release is :math:`\varphi`-zCDP
      (:math:`z = 2/\sqrt{2\varphi}`) and :math:`\varepsilon_{AT} =
      \sqrt{2\varphi}` (the paper spends :math:`\varphi/2` per part and states
      :math:`\varphi`; spec 000 E15).

    Constants (spec 000 §2.7, §2.8): :math:`\eta = 1/M`; :math:`\kappa` of Theorem
    4.2 (:math:`(G^{4/3}B^{1/3}/M^{5/3})(\sqrt d/(n\sqrt\varphi))^{2/3}`) or 4.6
    (the max of its two branches); :math:`\gamma = 4\sqrt{C(\zeta_2^2\kappa +
    4\zeta_1^2)\log(Td/\omega)}` (Lemma 3.3's form, E10) with ``T``, ``Gamma``,
    ``N1_max`` and the noise depending on :math:`\gamma`: the circularity is solved
    by a damped fixed-point iteration (geometric mean of successive values). ``T``,
    ``N1_drift`` and the kick threshold follow the preset (:data:`PRESETS`);
    :math:`\Gamma = \lceil M L/\sqrt{\rho\gamma}\rceil`; the kick bound is
    :math:`\lceil T/(\Gamma+1)\rceil` (E12). Population batches:
    :math:`b_1 = \lfloor |D_1|/(2N_{1,\max})\rfloor`,
    :math:`b_2 = \lfloor |D_1|/(2T)\rfloor` (E15), so :math:`b_1 N_{1,\max} + b_2 T
    \le |D_1|`: samples are never reused.

    Overrides (``drift_threshold``, ``num_iters``, ``max_o1_calls``, ``alpha``)
    replace the theorem's value; the privacy calibration always uses the values that
    will run.

    Args:
        problem: the problem (only ``n``, ``d`` and declared constants are read).
        epsilon: target epsilon.
        delta: target delta.
        variant: ``"empirical"`` or ``"population"``.
        preset: ``"practical"`` or ``"paper"``.
        failure_prob: :math:`\omega` in (0, 1).
        drift_threshold: :math:`\kappa` override.
        num_iters: ``T`` override.
        max_o1_calls: ``N1_max`` override (the cap).
        alpha: override of the :math:`\alpha` passed to Algorithm 2 (and of the kick
            threshold).
        kick_mode: ``"o1"`` or ``"perturb"``.
        kick_budget: ``"shared"`` (default for ``"paper"``) or ``"separate"``
            (default for ``"practical"``).
        initial_gap: a public bound ``B >= F(x0) - inf F`` used in place of the
            declared ``loss_range`` wherever the theorems use ``B`` as the initial
            gap (``kappa``, ``T``, ``N1_drift``, the log factors): e.g. a warm
            start's ``psi`` (seed 003 Theorem 3.4). Default: ``loss_range``. It
            changes the schedule only; the calibration is always to what runs.

    Returns:
        A :class:`SpiderPlan`.

    Raises:
        ValueError: invalid parameters, or a population configuration with
            ``b1 < 1`` or ``b2 < 1`` (too few examples for ``T`` and ``N1_max``).
        MissingConstantError: ``lipschitz``, ``smoothness``, ``hessian_lipschitz`` or
            ``loss_range`` is not declared.

    Examples:
        >>> import jax.numpy as jnp
        >>> from dpsample import Problem
        >>> from dpsample.domains import Unconstrained
        >>> from dpsample.finders.spider_sosp import plan_spider
        >>> prob = Problem(lambda x, z: jnp.sum(jnp.cos(x - z)), jnp.zeros((1000, 2)),
        ...                Unconstrained(2), lipschitz=1.5, smoothness=1.0,
        ...                hessian_lipschitz=1.0, loss_range=4.0)
        >>> plan = plan_spider(prob, epsilon=1.0, delta=1e-5)
        >>> plan.max_o1_calls == min(plan.n1_drift + plan.n1_kick, plan.num_iters)
        True
        >>> z1, z2 = plan.noise_multiplier_o1, plan.noise_multiplier_o2
        >>> rho = 2 * plan.max_o1_calls / z1**2 + 2 * plan.num_iters / z2**2
        >>> abs(rho + plan.epsilon_select**2 / 2 - plan.zcdp) < 1e-12
        True

    References:
        Seed 000, Theorems 4.2 and 4.6, Lemmas 3.3-3.7, App. C.1 and C.4; spec 000
        §2.5-2.8 and §6.2.
    """
    epsilon, delta = validation.check_privacy(epsilon, delta)
    omega = validation.delta_in_open_unit(failure_prob, name="failure_prob")
    if variant not in ("empirical", "population"):
        raise ValueError(
            f"Expected variant 'empirical' or 'population', got {variant!r}"
        )
    if preset not in PRESETS:
        raise ValueError(f"Expected preset 'practical' or 'paper', got {preset!r}")
    if kick_mode not in ("o1", "perturb"):
        raise ValueError(f"Expected kick_mode 'o1' or 'perturb', got {kick_mode!r}")
    if kick_mode == "perturb":
        if kick_budget not in (None, "none"):
            raise ValueError("kick_mode='perturb' makes no kick O1 calls: no budget")
        kick_budget = "none"
    elif kick_budget is None:
        kick_budget = "shared" if preset == "paper" else "separate"
    elif kick_budget not in ("shared", "separate"):
        raise ValueError(
            f"Expected kick_budget 'shared' or 'separate', got {kick_budget!r}"
        )
    need = "the Stochastic Spider SOSP finder (seed 000 Thm 4.2/4.6)"
    g_c = validation.require_constant("lipschitz", problem.lipschitz, needed_for=need)
    m_c = validation.require_constant("smoothness", problem.smoothness, needed_for=need)
    rho_h = validation.require_constant(
        "hessian_lipschitz", problem.hessian_lipschitz, needed_for=need
    )
    if initial_gap is None:
        b_c = validation.require_constant(
            "loss_range", problem.loss_range, needed_for=need + " (or initial_gap=)"
        )
    else:
        b_c = validation.positive("initial_gap", initial_gap)
    if num_iters is not None:
        num_iters = validation.positive_int("num_iters", num_iters)
    if max_o1_calls is not None:
        max_o1_calls = validation.positive_int("max_o1_calls", max_o1_calls)
    if alpha is not None:
        alpha = validation.positive("alpha", alpha)

    d, n = problem.dim, problem.n
    consts = PRESETS[preset]
    phi = epsilon_to_zcdp(epsilon, delta)  # Lemma A.4, exact
    eta = 1.0 / m_c
    sqrt_phi = math.sqrt(phi)
    log_d = _log1(d)
    if variant == "empirical":
        n_train, n_select = n, n
        priv = math.sqrt(d) / (n * sqrt_phi)
        kappa = (g_c ** (4 / 3) * b_c ** (1 / 3) / m_c ** (5 / 3)) * priv ** (2 / 3)
    else:
        n_train, n_select = (n + 1) // 2, n // 2
        if n_select < 1:
            raise ValueError(f"The population variant needs n >= 2, got n={n}")
        priv = math.sqrt(d) / (n * sqrt_phi)
        kappa = max(
            g_c ** (4 / 3)
            * b_c ** (1 / 3)
            * log_d ** (1 / 3)
            * m_c ** (-5 / 3)
            * n ** (-1 / 3),
            (g_c * b_c ** (2 / 3) / m_c ** (5 / 3)) ** (6 / 7) * priv ** (4 / 7),
        )
    if drift_threshold is not None:
        kappa = validation.positive("drift_threshold", drift_threshold)

    def schedule(gamma: float) -> dict[str, Any]:
        big_l = _log1(d * m_c * b_c / (rho_h * gamma * omega))
        if num_iters is not None:
            t = num_iters
        elif preset == "paper":
            t = math.ceil(b_c * m_c * big_l**4 / gamma**2)
        else:
            t = math.ceil(consts["c_T"] * b_c * m_c / gamma**2)
        t = max(1, t)
        freeze = max(1, math.ceil(m_c * big_l / math.sqrt(rho_h * gamma)))
        if preset == "paper":
            n1_drift = math.ceil(6 * b_c * eta / kappa * (1 + 3 * big_l**4 / 64)) + 1
        else:
            n1_drift = math.ceil(6 * b_c * eta / kappa * consts["c_N"]) + 1
        n1_kick = math.ceil(t / (freeze + 1)) if kick_mode == "o1" else 0
        if max_o1_calls is not None:
            n1_max = max_o1_calls
        elif kick_budget == "separate":
            n1_max = n1_drift + n1_kick
        else:
            n1_max = n1_drift
        # At most one oracle call per iteration: a cap above T never binds, and
        # calibrating to T instead is the same guarantee with less noise.
        n1_max = min(n1_max, t)
        if variant == "empirical":
            b1 = b2 = n
            z1 = C_SENS * math.sqrt(2.0 * n1_max / phi)
            z2 = C_SENS * math.sqrt(2.0 * t / phi)
            sigma1 = z1 * g_c / n
            sigma2 = z2 * m_c / n
            zeta1, zeta2 = sigma1 * math.sqrt(d), sigma2 * math.sqrt(d)
        else:
            b1 = n_train // (2 * n1_max)
            b2 = n_train // (2 * t)
            z1 = z2 = C_SENS / math.sqrt(2.0 * phi)
            sigma1 = z1 * g_c / max(b1, 1)
            sigma2 = z2 * m_c / max(b2, 1)
            zeta1 = g_c * math.sqrt(log_d / max(b1, 1)) + math.sqrt(d) * sigma1
            zeta2 = m_c * math.sqrt(log_d / max(b2, 1)) + math.sqrt(d) * sigma2
        new_gamma = 4.0 * math.sqrt(
            consts["c_gamma"]
            * (zeta2**2 * kappa + 4.0 * zeta1**2)
            * _log1(t * d / omega)
        )
        return dict(
            t=t, freeze=freeze, n1_drift=n1_drift, n1_kick=n1_kick, n1_max=n1_max,
            b1=b1, b2=b2, z1=z1, z2=z2, sigma1=sigma1, sigma2=sigma2, zeta1=zeta1,
            zeta2=zeta2, gamma=new_gamma,
        )  # fmt: skip

    # Damped fixed point of gamma -> schedule(gamma)["gamma"] (E10).
    gamma = (b_c * g_c * m_c) ** (1 / 3) * priv ** (2 / 3)
    for _ in range(_MAX_PLAN_ROUNDS):
        new = math.sqrt(gamma * schedule(gamma)["gamma"])
        if abs(new - gamma) <= 1e-10 * gamma:
            gamma = new
            break
        gamma = new
    s = schedule(gamma)
    if variant == "population" and (s["b1"] < 1 or s["b2"] < 1):
        raise ValueError(
            f"Population variant infeasible: |D1|={n_train} examples cannot feed "
            f"N1_max={s['n1_max']} O1 and T={s['t']} O2 calls with fresh batches "
            f"(b1={s['b1']}, b2={s['b2']}); increase n or the privacy budget, or "
            "lower num_iters / max_o1_calls"
        )
    if preset == "paper":
        alpha_kick = gamma * _log1(b_c * m_c * d / (rho_h * omega)) ** 3
    else:
        alpha_kick = consts["c_alpha"] * gamma
    if alpha is not None:
        alpha_kick = alpha
    eps_select = sqrt_phi if variant == "empirical" else math.sqrt(2.0 * phi)
    return SpiderPlan(
        variant=variant,
        preset=preset,
        kick_mode=kick_mode,
        kick_budget=kick_budget,
        zcdp=phi,
        step_size=eta,
        drift_threshold=kappa,
        gamma=gamma,
        alpha_kick=alpha_kick,
        alpha_select=alpha_kick,
        num_iters=s["t"],
        freeze_period=s["freeze"],
        max_o1_calls=s["n1_max"],
        n1_drift=s["n1_drift"],
        n1_kick=s["n1_kick"],
        noise_multiplier_o1=s["z1"],
        noise_multiplier_o2=s["z2"],
        sigma1=s["sigma1"],
        sigma2=s["sigma2"],
        zeta1=s["zeta1"],
        zeta2=s["zeta2"],
        kick_std=s["zeta1"] / math.sqrt(d),
        batch_o1=s["b1"],
        batch_o2=s["b2"],
        n_train=n_train,
        n_select=n_select,
        epsilon_select=eps_select,
        failure_prob=omega,
    )


# ---------------------------------------------------------------- Algorithm 1 core
class _SpiderState(NamedTuple):
    x: Array
    x_prev: Array
    g_prev: Array
    drift: Array
    frozen: Array
    n_o1_drift: Array
    n_o1_kick: Array
    n_o2: Array
    ptr: Array
    aborted: Array


@functools.partial(
    jax.jit,
    static_argnames=("o1_fn", "o2_fn", "num_iters", "kick_mode", "batches"),
)
def _spider_scan(
    rng_key: PRNGKey,
    x0: Array,
    perm: Array,
    params: dict[str, Array],
    o1_ops: dict[str, Any],
    o2_ops: dict[str, Any],
    *,
    o1_fn: Any,
    o2_fn: Any,
    num_iters: int,
    kick_mode: str,
    batches: tuple[int, int] | None,
) -> tuple[_SpiderState, Array, Array]:
    # The oracles enter as (static structure, traced operands) pairs
    # (``oracle.functional()``): the data and the noise scales are arguments, so
    # repeated runs with the same shapes and structure reuse one compilation.
    d = x0.shape[0]
    eta, kappa = params["eta"], params["kappa"]

    def indices(ptr: Array, size: int) -> Array | None:
        if batches is None:
            return None
        return lax.dynamic_slice(perm, (ptr,), (size,))

    def step(state: _SpiderState, key: PRNGKey):
        k_oracle, k_kick = jax.random.split(key)
        kick = (jnp.linalg.norm(state.g_prev) <= params["alpha_kick"]) & (
            state.frozen <= 0
        )
        drift_reset = state.drift >= kappa
        use_o1 = (kick | drift_reset) if kick_mode == "o1" else drift_reset
        n1 = state.n_o1_drift + state.n_o1_kick
        # The cap is checked *before* the call (E7): the (N1_max+1)-th O1 call never
        # happens; the run aborts and releases data-independent points.
        aborted = state.aborted | (use_o1 & (n1 >= params["n1_max"]))
        branch = jnp.where(aborted, 2, jnp.where(use_o1, 0, 1))

        def call_o1(_):
            idx = indices(state.ptr, batches[0]) if batches else None
            return o1_fn(o1_ops, k_oracle, state.x, idx)

        def call_o2(_):
            idx = indices(state.ptr, batches[1]) if batches else None
            return state.g_prev + o2_fn(o2_ops, k_oracle, state.x, state.x_prev, idx)

        def no_call(_):
            return state.g_prev

        g = lax.switch(branch, (call_o1, call_o2, no_call), None)
        xi = params["kick_std"] * jax.random.normal(k_kick, (d,), jnp.float64)
        if kick_mode == "o1":
            g = jnp.where(kick, g + xi, g)  # the kick noise stays in the estimator
            move = g
        else:
            move = jnp.where(kick, g + xi, g)  # perturb: the estimator stays g
        x_next = state.x - eta * move
        drift = jnp.where(use_o1, 0.0, state.drift) + jnp.sum((x_next - state.x) ** 2)
        frozen = jnp.where(kick, params["freeze"], state.frozen - 1)
        o1_kick = use_o1 & kick if kick_mode == "o1" else jnp.asarray(False)
        o1_drift = use_o1 & ~o1_kick
        consumed = jnp.where(use_o1, batches[0], batches[1]) if batches else 0
        new = _SpiderState(
            x=x_next,
            x_prev=state.x,
            g_prev=g,
            drift=drift,
            frozen=frozen,
            n_o1_drift=state.n_o1_drift + o1_drift,
            n_o1_kick=state.n_o1_kick + o1_kick,
            n_o2=state.n_o2 + ~use_o1,
            ptr=state.ptr + consumed,
            aborted=aborted,
        )
        # Once aborted, nothing moves and no oracle is called again.
        new = jax.tree.map(lambda a, b: jnp.where(aborted, a, b), state, new)
        new = new._replace(aborted=aborted)
        code = jnp.where(
            aborted, 3, jnp.where(kick, 2, jnp.where(use_o1, 0, 1))
        ).astype(jnp.int32)
        return new, (new.x, code)

    init = _SpiderState(
        x=x0,
        x_prev=x0,
        g_prev=jnp.zeros_like(x0),
        drift=kappa,  # drift_{-1} = kappa: the first step calls O1 (E8)
        frozen=jnp.asarray(1, jnp.int32),
        n_o1_drift=jnp.asarray(0, jnp.int32),
        n_o1_kick=jnp.asarray(0, jnp.int32),
        n_o2=jnp.asarray(0, jnp.int32),
        ptr=jnp.asarray(0, jnp.int32),
        aborted=jnp.asarray(False),
    )
    final, (xs, codes) = lax.scan(step, init, jax.random.split(rng_key, num_iters))
    return final, xs, codes


def stochastic_spider(
    rng_key: PRNGKey,
    problem: Problem,
    plan: SpiderPlan,
    *,
    x0: ArrayLike,
    permutation: ArrayLike | None = None,
) -> tuple[Array, dict[str, Any], PrivacyGuarantee]:
    r"""Algorithm 1 of seed 000 with the O1 cap: the ``T`` iterates and their privacy.

    The single running-state form of spec 000 §2.2 (E8), exactly ``T`` iterations
    (E9): state ``x = x0``, ``g_prev = 0``, ``drift = kappa``, ``frozen = 1``; per
    step, **kick** if :math:`\|g_{prev}\| \le \alpha_{kick}` and ``frozen <= 0``
    (``g = O1(x) + N(0, \zeta_1^2/d\, I)``, ``frozen = Gamma``, ``drift = 0``), else a
    **drift reset** if ``drift >= kappa`` (``g = O1(x)``), else
    ``g = g_prev + O2(x, x_prev)``; then :math:`x \leftarrow x - \eta g` and ``drift
    += ||x_next - x||^2``. Before any O1 call the counter is checked against
    ``plan.max_o1_calls``; if the call would exceed it, the run stops (``aborted``)
    and the caller must release data-independent points (E7). Kick O1 calls are
    counted (E12). With ``kick_mode="perturb"`` the kick only perturbs the move and
    calls no oracle.

    The oracles are :func:`dpsample.finders.oracles.first_kind` /
    :func:`~dpsample.finders.oracles.second_kind`: full batch for the empirical
    variant (Eq. (2)); for the population variant (Eq. (3)) ``problem`` must hold
    :math:`D_1` and ``permutation`` a public permutation of its indices, consumed
    sequentially (``b1`` per O1 call, ``b2`` per O2 call, both points of an O2 call on
    the same batch, E37), so no example is used twice. The whole loop is one
    ``lax.scan`` with ``lax.switch`` branches, jitted on the oracles' static structure
    only (:meth:`~dpsample.finders.oracles.FirstKindOracle.functional`): the data and
    the noise levels are traced arguments, so repeated calls with other keys, other
    data of the same shape or another privacy level (same ``T`` and batch sizes)
    reuse one compilation.

    Args:
        rng_key: a PRNG key (consumed).
        problem: the data the oracles see (all of ``D`` or :math:`D_1`).
        plan: from :func:`plan_spider`.
        x0: the public initial point.
        permutation: public permutation of ``range(problem.n)`` (population only).

    Returns:
        ``(iterates, info, guarantee)``: the ``(T, d)`` iterates
        :math:`x_1, \dots, x_T`; public counters (``n_o1_drift``, ``n_o1_kick``,
        ``n_o2``, ``cap_hit``, ``branch_counts``, ``samples_used``); the guarantee of
        the oracle releases (charged for the cap ``N1_max`` and ``T``, a privacy
        filter: valid for zCDP/RDP, Feldman & Zrnic 2021, and for Gaussian DP, Smith
        & Thakurta 2022).

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> from dpsample import Problem
        >>> from dpsample.domains import Unconstrained
        >>> from dpsample.finders.spider_sosp import plan_spider, stochastic_spider
        >>> prob = Problem(lambda x, z: jnp.sum(jnp.cos(x - z)), jnp.zeros((1000, 2)),
        ...                Unconstrained(2), lipschitz=1.5, smoothness=1.0,
        ...                hessian_lipschitz=1.0, loss_range=4.0)
        >>> plan = plan_spider(prob, epsilon=1.0, delta=1e-5, num_iters=50)
        >>> xs, info, g = stochastic_spider(jax.random.key(0), prob, plan,
        ...                                 x0=jnp.ones(2))
        >>> xs.shape, info["n_o1_drift"] + info["n_o1_kick"] <= plan.max_o1_calls
        ((50, 2), True)
    """
    rng_key = validation.check_key(rng_key)
    problem = check_problem(problem)
    _check_unconstrained(problem, "stochastic_spider")
    x0 = problem.spec.check_start(x0)
    population = plan.variant == "population"
    if population:
        o1 = oracles.first_kind(
            problem,
            noise_multiplier=plan.noise_multiplier_o1,
            sampling="fresh",
            batch_size=plan.batch_o1,
        )
        o2 = oracles.second_kind(
            problem,
            noise_multiplier=plan.noise_multiplier_o2,
            sampling="fresh",
            batch_size=plan.batch_o2,
        )
        if permutation is None:
            raise ValueError("The population variant needs a public permutation")
        perm = jnp.asarray(permutation, jnp.int32)
        if perm.shape != (problem.n,):
            raise ValueError(f"Expected a permutation of length {problem.n}")
        if plan.batch_o1 * plan.max_o1_calls + plan.batch_o2 * plan.num_iters > (
            problem.n
        ):
            raise ValueError("The plan would reuse samples of D1")
        batches = (plan.batch_o1, plan.batch_o2)
    else:
        o1 = oracles.first_kind(problem, noise_multiplier=plan.noise_multiplier_o1)
        o2 = oracles.second_kind(problem, noise_multiplier=plan.noise_multiplier_o2)
        perm = jnp.zeros((1,), jnp.int32)
        batches = None
    params = {
        "eta": jnp.float64(plan.step_size),
        "kappa": jnp.float64(plan.drift_threshold),
        "alpha_kick": jnp.float64(plan.alpha_kick),
        "kick_std": jnp.float64(plan.kick_std),
        "freeze": jnp.int32(plan.freeze_period),
        "n1_max": jnp.int32(plan.max_o1_calls),
    }
    o1_fn, o1_ops = o1.functional()
    o2_fn, o2_ops = o2.functional()
    final, xs, codes = _spider_scan(
        rng_key,
        x0,
        perm,
        params,
        o1_ops,
        o2_ops,
        o1_fn=o1_fn,
        o2_fn=o2_fn,
        num_iters=plan.num_iters,
        kick_mode=plan.kick_mode,
        batches=batches,
    )
    codes = np.asarray(codes)
    info = {
        "n_o1_drift": int(final.n_o1_drift),
        "n_o1_kick": int(final.n_o1_kick),
        "n_o2": int(final.n_o2),
        "cap_hit": bool(final.aborted),
        "branch_counts": {
            name: int(np.sum(codes == c))
            for c, name in enumerate(("o1_drift", "o2", "kick", "aborted"))
        },
        "samples_used": int(final.ptr) if population else None,
    }
    if population:
        # Fresh disjoint batches: each example is in at most one release, so the
        # run costs one release of the most expensive kind (parallel composition).
        guarantee = o1.run_guarantee(plan.max_o1_calls)
        if plan.noise_multiplier_o2 < plan.noise_multiplier_o1:
            guarantee = o2.run_guarantee(plan.num_iters)
    else:
        guarantee = o1.run_guarantee(plan.max_o1_calls).compose(
            o2.run_guarantee(plan.num_iters)
        )
    return xs, info, guarantee


# ------------------------------------------------------------------- the full finder
def _check_unconstrained(problem: Problem, name: str = "spider_sosp") -> None:
    if not isinstance(problem.domain, Unconstrained):
        raise ValueError(
            f"{name} takes unconstrained steps (seed 000 Algorithm 1 has no "
            "projection, E20), so its privacy needs the declared constants on all "
            f"of R^d: declare the Problem on Unconstrained({problem.dim}), got "
            f"{problem.domain!r}"
        )


def _mean_loss(loss_fn: Any, x: Array, data: Any) -> Array:
    return jnp.mean(jax.vmap(loss_fn, in_axes=(None, 0))(x, data))


# Module-level jits keyed on the loss function only (the data is an argument), so the
# selection queries compile once per loss and shapes, not once per call.
_risk_gradient = jax.jit(jax.grad(_mean_loss, argnums=1), static_argnums=0)
_risk_hessian = jax.jit(jax.hessian(_mean_loss, argnums=1), static_argnums=0)


def _selection_queries(problem: Problem, xs: np.ndarray):
    """Lazy exact queries ``||grad F_S(x_i)||`` and ``lambda_min(hess F_S(x_i))``.

    Public rule for non-finite values (no exception mid-run): a gradient norm that
    is not finite is ``+inf`` and the smallest eigenvalue of a Hessian with a
    non-finite entry is ``-inf`` (LAPACK's ``eigvalsh`` would return arbitrary
    values for it), so the candidate fails Algorithm 2's tests.
    """
    loss_fn, data = problem.loss_fn, problem.data

    def grad_norm(i: int) -> float:
        value = float(
            jnp.linalg.norm(_risk_gradient(loss_fn, jnp.asarray(xs[i]), data))
        )
        return value if math.isfinite(value) else math.inf

    def min_eig(i: int) -> float:
        # Exact float64 symmetric eigensolver (E34): deterministic given the data.
        hess = np.asarray(_risk_hessian(loss_fn, jnp.asarray(xs[i]), data), np.float64)
        if not np.all(np.isfinite(hess)):
            return -math.inf
        return float(np.linalg.eigvalsh(hess)[0])

    return grad_norm, min_eig


def spider_sosp(
    rng_key: PRNGKey,
    problem: Problem,
    *,
    epsilon: float,
    delta: float,
    x0: ArrayLike,
    variant: str = "empirical",
    preset: str = "practical",
    failure_prob: float = 0.05,
    drift_threshold: float | None = None,
    num_iters: int | None = None,
    max_o1_calls: int | None = None,
    alpha: float | None = None,
    kick_mode: str = "o1",
    kick_budget: str | None = None,
    initial_gap: float | None = None,
) -> PrivateResult:
    r"""Private alpha-SOSP by Stochastic Spider + AboveThreshold (seed 000 Alg. 1 + 2).

    Runs :func:`stochastic_spider` (Algorithm 1) with the parameters of
    :func:`plan_spider`, then Algorithm 2
    (:func:`~dpsample.mechanisms.above_threshold_sosp`) on its iterates with the
    exact queries :math:`\|\nabla F_S(x_i)\|` and
    :math:`\lambda_{\min}(\nabla^2 F_S(x_i))` (float64 ``eigvalsh``, E34), both
    computed for every candidate it examines (a gradient, a Hessian and an
    ``eigvalsh`` of fixed shapes each, so the work reveals only the output),
    sensitivities :math:`c_{sens}G/|S|` and :math:`c_{sens}M/|S|` (E5), the plan's
    :math:`\alpha_1` and :math:`\varepsilon_{AT}`.

    * ``variant="empirical"`` (Theorem 4.2): both stages see all of ``D``
      (:math:`S = D`); an :math:`\alpha`-SOSP of :math:`F_D` is sought.
    * ``variant="population"`` (Theorem 4.6): one public random permutation (from
      ``rng_key``) splits ``D`` into :math:`D_1` (:math:`\lceil n/2\rceil`, the
      oracles, fresh batches) and :math:`D_2` (:math:`\lfloor n/2\rfloor`, the
      selection, :math:`S = D_2`); an SOSP of the population risk is sought.

    Released value: the selected iterate; if AboveThreshold outputs ⊥ (no candidate
    passes; the paper does not say what to do, E6) the public ``x0`` is released and
    ``info["fallback"] = "x0"``; if the O1 cap would have been exceeded (E7) the run
    stops, Algorithm 2 is skipped and ``x0`` is released (``info["cap_hit"]``): the
    paper's "T arbitrary points", data-independent.

    Privacy:
        Neighbouring relation: replace-one (sensitivity multiplier
        :math:`c_{sens} = 2`, E3). Per release: O1 has sensitivity :math:`2G/b_1`,
        O2 :math:`2\min(M\|x - y\|, 2G)/b_2` (``b = n`` for the empirical
        variant; plus O2's rounding floor), with noise multipliers from the plan
        (noise over sensitivity ``z / 2``); Algorithm 2 is
        :math:`\varepsilon_{AT}`-DP (pure). The kick noise, the branch choices, the
        counters and the abort are post-processing of released values.

        * empirical: sequential composition of at most ``N1_max`` O1 releases
          (charged at the cap), ``T`` O2 releases and Algorithm 2, i.e.
          ``gaussian(z1 / 2).repeat(N1_max)``, ``gaussian(z2 / 2).repeat(T)`` and
          ``pure(eps_AT)``; zCDP :math:`\varphi/4 + \varphi/4 + \varphi/2 =
          \varphi`, so ``privacy.epsilon(delta) <= epsilon`` (PLD/RDP may be
          tighter).
        * population: each example of :math:`D_1` is used by at most one release
          (fresh batches, enforced by the cap and ``b1 N1_max + b2 T <= |D1|``),
          and :math:`D_2` only by Algorithm 2. A replaced example lies in one
          half: in :math:`D_1` the loss is one release's (:math:`\varphi`-zCDP,
          Algorithm 2 is then post-processing given :math:`D_2`), in :math:`D_2`
          it is Algorithm 2's (:math:`\varepsilon_{AT}^2/2 = \varphi`-zCDP). The
          guarantee is the maximum, returned as ``PrivacyGuarantee.zcdp(phi)``
          (parallel composition; the sequential composition is in
          ``info["sequential_guarantee"]`` for comparison).

    Args:
        rng_key: a PRNG key (consumed: split for the split permutation, Algorithm 1
            and Algorithm 2).
        problem: a :class:`~dpsample.problem.Problem` on
            :class:`~dpsample.domains.Unconstrained` declaring ``lipschitz``,
            ``smoothness``, ``hessian_lipschitz`` and ``loss_range`` (the range of
            :math:`F`, E21).
        epsilon: target epsilon ``> 0``.
        delta: target delta in ``(0, 1)``.
        x0: the public initial point (finite, shape ``(d,)``).
        variant: ``"empirical"`` or ``"population"``.
        preset: ``"practical"`` (non-paper constants, see :data:`PRESETS`) or
            ``"paper"``.
        failure_prob: :math:`\omega`, default 0.05.
        drift_threshold: override of :math:`\kappa`.
        num_iters: override of ``T`` (>= 1).
        max_o1_calls: override of the O1 cap ``N1_max``.
        alpha: override of :math:`\alpha_1` (kick threshold and Algorithm 2).
        kick_mode: ``"o1"`` (paper) or ``"perturb"`` (variant, no kick O1 calls).
        kick_budget: ``"shared"`` or ``"separate"`` (see :class:`SpiderPlan`).
        initial_gap: public ``B >= F(x0) - inf F`` replacing ``loss_range`` in the
            schedule (see :func:`plan_spider`); e.g. a warm start's ``psi``.

    Returns:
        ``PrivateResult(value, privacy, info)``; ``info`` holds the plan
        (``info["plan"]``, a :class:`SpiderPlan` as a dict), the counters of
        Algorithm 1, ``cap_hit``, ``selected`` (index or ``None``), ``fallback``,
        the Algorithm 2 thresholds and slacks, and ``preset_label`` (``"paper"`` or
        ``"non-paper (practical)"``).

    Raises:
        ValueError: invalid privacy parameters or options, ``num_iters < 1``,
            non-finite or mis-shaped ``x0``, a bounded domain, an infeasible
            population plan (all before any private computation; nothing raises
            during the run, see the module docstring on non-finite values).
        MissingConstantError: a needed constant is not declared.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> from dpsample import Problem
        >>> from dpsample.domains import Unconstrained
        >>> from dpsample.finders.spider_sosp import spider_sosp
        >>> loss = lambda x, z: jnp.sum(-jnp.cos(x - z))   # minimum at x = z = 0
        >>> prob = Problem(loss, jnp.zeros((2000, 2)), Unconstrained(2),
        ...                lipschitz=1.5, smoothness=1.0, hessian_lipschitz=1.0,
        ...                loss_range=4.0)
        >>> res = spider_sosp(jax.random.key(0), prob, epsilon=4.0, delta=1e-5,
        ...                   x0=jnp.array([1.0, -1.0]), num_iters=60)
        >>> res.info["selected"] is not None, bool(jnp.linalg.norm(res.value) < 0.5)
        (True, True)
        >>> res.privacy.epsilon(1e-5) <= 4.0
        True

    References:
        Ganesh, Liu, Oh & Thakurta, `Private (Stochastic) Non-Convex Optimization
        Revisited: Second-Order Stationary Points and Excess Risks
        <https://arxiv.org/abs/2302.09699>`_, 2023 (seed 000: Algorithms 1-2,
        Theorems 4.2, 4.6, Lemma 4.1). Spec 000 §2 and §6.1.
        Feldman & Zrnic, `Individual Privacy Accounting via a Rényi Filter
        <https://arxiv.org/abs/2008.11193>`_, 2021.
    """
    rng_key = validation.check_key(rng_key)
    problem = check_problem(problem)
    epsilon, delta = validation.check_privacy(epsilon, delta)
    _check_unconstrained(problem)
    x0 = problem.spec.check_start(x0)
    plan = plan_spider(
        problem,
        epsilon=epsilon,
        delta=delta,
        variant=variant,
        preset=preset,
        failure_prob=failure_prob,
        drift_threshold=drift_threshold,
        num_iters=num_iters,
        max_o1_calls=max_o1_calls,
        alpha=alpha,
        kick_mode=kick_mode,
        kick_budget=kick_budget,
        initial_gap=initial_gap,
    )
    k_split, k_perm, k_alg1, k_alg2 = jax.random.split(rng_key, 4)
    relation = problem.relation
    if plan.variant == "population":
        # Public, data-independent split and batch order (E36).
        order = np.asarray(jax.random.permutation(k_split, problem.n))
        d1 = jax.tree.map(lambda leaf: leaf[order[: plan.n_train]], problem.data)
        d2 = jax.tree.map(lambda leaf: leaf[order[plan.n_train :]], problem.data)
        train, select = problem.replace(data=d1), problem.replace(data=d2)
        perm = jax.random.permutation(k_perm, plan.n_train)
    else:
        train = select = problem
        perm = None
    xs, run_info, alg1_guarantee = stochastic_spider(
        k_alg1, train, plan, x0=x0, permutation=perm
    )
    alg2_guarantee = PrivacyGuarantee.pure(plan.epsilon_select, relation=relation)
    sequential = alg1_guarantee.compose(alg2_guarantee)
    if plan.variant == "population":
        rho_1 = alg1_guarantee.zcdp_rho()
        rho_2 = plan.epsilon_select**2 / 2.0
        guarantee = PrivacyGuarantee.zcdp(max(rho_1, rho_2), relation=relation)
    else:
        guarantee = sequential

    info: dict[str, Any] = {
        "algorithm": "Stochastic Spider + AboveThreshold (seed 000 Alg. 1 + 2)",
        "plan": plan._asdict(),
        "preset_label": "paper" if preset == "paper" else "non-paper (practical)",
        **run_info,
        "selected": None,
        "fallback": None,
        "sequential_guarantee": sequential if plan.variant == "population" else None,
    }
    if run_info["cap_hit"]:
        info["fallback"] = "x0 (O1 cap reached: data-independent output, E7)"
        return PrivateResult(x0, guarantee, info)

    xs_np = np.asarray(xs)
    grad_norm, min_eig = _selection_queries(select, xs_np)
    sel = above_threshold_sosp(
        k_alg2,
        grad_norm,
        min_eig,
        alpha=plan.alpha_select,
        hessian_lipschitz=problem.hessian_lipschitz,
        epsilon=plan.epsilon_select,
        grad_sensitivity=C_SENS * problem.lipschitz / plan.n_select,
        eig_sensitivity=C_SENS * problem.smoothness / plan.n_select,
        failure_prob=plan.failure_prob,
        num_candidates=plan.num_iters,
        relation=relation,
    )
    index = int(sel.value)
    info.update(
        {
            k: sel.info[k]
            for k in ("grad_threshold", "eig_threshold", "grad_slack", "eig_slack")
        }
    )
    if index < 0:
        info["fallback"] = "x0 (AboveThreshold returned no candidate)"
        return PrivateResult(x0, guarantee, info)
    info["selected"] = index
    return PrivateResult(jnp.asarray(xs_np[index]), guarantee, info)


precision.scope_public(globals())
