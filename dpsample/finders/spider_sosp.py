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
2. **Algorithm 2** (AboveThreshold): selects privately an iterate whose noisy
   gradient norm and smallest Hessian eigenvalue pass noisy thresholds
   (:func:`dpsample.mechanisms.above_threshold_sosp`): by default the candidates are
   examined from the last iterate backwards, so the latest passing one is released
   (``selection_order="backward"``, non-paper; the paper's forward order releases
   the first, typically still escaping the saddle: issue 16).

:class:`SpiderSOSP` is the algorithm object: :meth:`~SpiderSOSP.plan` computes every
parameter from public quantities (declared constants, ``n``, ``d``, the privacy
target) into a :class:`~dpsample.plan.Plan`, and :meth:`~SpiderSOSP.run` runs both
stages and returns the selected point with the composed guarantee.
:func:`spider_sosp` is the one-call convenience, :func:`plan_spider` the plan alone,
and :func:`stochastic_spider` the building block that runs Algorithm 1 of a plan
(its iterates, with their own guarantee). Corrections to the paper follow spec 000
§6.1 (E3–E21, E34–E37) and are named where they apply.

Domain. Algorithm 1 takes unconstrained steps (no projection, E20) and its oracles do
not clip, so the declared constants must hold on all of ``R^d``: the plan refuses a
spec that is not on :class:`~dpsample.domains.Unconstrained` (``ValueError``, before
any private computation), and so does :func:`stochastic_spider` for its problem;
every finite ``x0`` then lies in the domain.

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

import dataclasses
import functools
import math
from typing import Any, ClassVar, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from dpsample._src import precision, validation
from dpsample.base import AlgorithmInfo, PrivateAlgorithm, optional
from dpsample.domains import Unconstrained
from dpsample.finders import oracles
from dpsample.finders.accounting import C_SENS
from dpsample.mechanisms import above_threshold_sosp
from dpsample.plan import Budget, Cost, Param, Plan
from dpsample.privacy import PrivacyGuarantee, PrivateResult, epsilon_to_zcdp
from dpsample.privacy.calibration import calibrate
from dpsample.problem import Problem, ProblemSpec, check_problem
from dpsample.types import Array, ArrayLike, PRNGKey

__all__ = [
    "PLAN_FIELDS",
    "SPIDER_PRESETS",
    "SpiderSOSP",
    "SpiderSOSPInfo",
    "StochasticSpiderInfo",
    "plan_spider",
    "spider_sosp",
    "stochastic_spider",
]

#: Constants of the two presets (spec 000 §6.2). ``"paper"``: the printed forms with
#: every O(.) constant set to 1 (T = BM L^4/gamma^2, N1 from Lemma 3.7 with the
#: (1 + 3 L^4/64) factor, kick threshold gamma L^3). ``"practical"`` (non-paper):
#: T = c_T BM/gamma^2, N1_drift = c_N 6 B eta/kappa + 1, kick threshold c_alpha gamma,
#: with c_N >= 1 + 3 c_T/64 so the Lemma 3.7 count stays covered.
SPIDER_PRESETS: dict[str, dict[str, float]] = {
    "paper": {"c_gamma": 1.0},
    "practical": {"c_gamma": 1.0, "c_T": 20.0, "c_N": 4.0, "c_alpha": 1.0},
}

#: The schedule's parameters, in order: the keys of ``info["plan"]`` and parameters
#: of the :class:`~dpsample.plan.Plan` (which also holds ``x0`` and ``initial_gap``).
#:
#: * ``variant``: ``"empirical"`` (Eq. (2), Theorem 4.2) or ``"population"`` (Eq. (3)
#:   on the first half of the data, Theorem 4.6); ``preset``: ``"paper"`` or
#:   ``"practical"``; ``kick_mode``: ``"o1"`` (paper) or ``"perturb"`` (variant, spec
#:   000 §2.2); ``kick_budget``: ``"shared"`` (kick O1 calls count toward the Lemma 3.7
#:   cap, option (a)), ``"separate"`` (cap = drift bound + kick bound, option (b)) or
#:   ``"none"`` (``kick_mode="perturb"``);
#: * ``zcdp``: total zCDP budget :math:`\varphi` from the (epsilon, delta) target;
#:   ``step_size``: :math:`\eta = 1/M`; ``drift_threshold``: :math:`\kappa`;
#:   ``gamma``: the error scale :math:`\gamma` of Lemma 3.3; ``alpha_kick``: kick
#:   threshold (the SOSP accuracy :math:`\alpha_1`); ``alpha_select``: the
#:   :math:`\alpha` passed to Algorithm 2;
#: * ``num_iters``: ``T`` (exactly ``T`` iterations, E9); ``freeze_period``:
#:   :math:`\lceil\Gamma\rceil`; ``max_o1_calls``: the O1 cap ``N1_max`` (privacy
#:   depends on it, E7); ``n1_drift``: its drift part (Lemma 3.7 plus the first
#:   call); ``n1_kick``: the kick bound :math:`\lceil T/(\lceil\Gamma\rceil+1)\rceil`;
#: * ``noise_multiplier_o1`` / ``noise_multiplier_o2``: std of the noise on the sum
#:   over the per-example bound ``G`` / ``M ||x - y||`` (the ecosystem's convention;
#:   noise over the replace-one sensitivity is half of it); ``sigma1``: O1 noise std
#:   (``z G / b``); ``sigma2``: O2 noise std per unit of displacement (``z M / b``;
#:   the oracle adds its rounding floor); ``zeta1``, ``zeta2``: nSG parameters (Claim
#:   4.4 for the population variant); ``kick_std``: std of the kick
#:   :math:`\zeta_1/\sqrt d` (line 8);
#: * ``batch_o1``, ``batch_o2``: ``b1``, ``b2`` (``n`` for the empirical variant);
#:   ``n_train``: examples used by Algorithm 1 (``n`` or ``ceil(n/2)``);
#:   ``n_select``: ``|S|``, examples used by Algorithm 2 (``n`` or ``floor(n/2)``);
#:   ``epsilon_select``: the pure epsilon of Algorithm 2; ``selection_order``:
#:   ``"backward"`` (candidates examined from ``x_T`` back to ``x_1``, default,
#:   non-paper) or ``"forward"`` (the paper's order); ``selection_share``: the share
#:   of the zCDP budget :math:`\varphi` spent by Algorithm 2 (empirical variant;
#:   the paper's 1/2); ``failure_prob``: :math:`\omega`.
PLAN_FIELDS: tuple[str, ...] = (
    "variant",
    "preset",
    "kick_mode",
    "kick_budget",
    "zcdp",
    "step_size",
    "drift_threshold",
    "gamma",
    "alpha_kick",
    "alpha_select",
    "num_iters",
    "freeze_period",
    "max_o1_calls",
    "n1_drift",
    "n1_kick",
    "noise_multiplier_o1",
    "noise_multiplier_o2",
    "sigma1",
    "sigma2",
    "zeta1",
    "zeta2",
    "kick_std",
    "batch_o1",
    "batch_o2",
    "n_train",
    "n_select",
    "epsilon_select",
    "selection_order",
    "selection_share",
    "failure_prob",
)

_MAX_PLAN_ROUNDS = 200
_NEED = "the Stochastic Spider SOSP finder (seed 000 Thm 4.2/4.6)"


# ------------------------------------------------------------------------ planning
def _log1(x: float) -> float:
    """``max(1, log x)``: logs of dimensioned quantities are floored at 1 (E19)."""
    return max(1.0, math.log(x)) if x > 0 else 1.0


def _check_unconstrained(domain: Any, dim: int, name: str = "spider_sosp") -> None:
    if not isinstance(domain, Unconstrained):
        raise ValueError(
            f"{name} takes unconstrained steps (seed 000 Algorithm 1 has no "
            "projection, E20), so its privacy needs the declared constants on all "
            f"of R^d: declare the Problem on Unconstrained({dim}), got {domain!r}"
        )


def _schedule(
    spec: ProblemSpec,
    phi: float,
    *,
    variant: str,
    preset: str,
    omega: float,
    kick_mode: str,
    kick_budget: str,
    b_c: float,
    drift_threshold: float | None,
    num_iters: int | None,
    max_o1_calls: int | None,
    alpha: float | None,
    selection_share: float = 0.5,
) -> dict[str, Any]:
    """Theorem 4.2 / 4.6 parameters at zCDP budget ``phi`` (see :class:`SpiderSOSP`).

    Returns the values of :data:`PLAN_FIELDS` (those that do not depend on the
    caller's strings) as a dict.
    """
    g_c = validation.require_constant("lipschitz", spec.lipschitz, needed_for=_NEED)
    m_c = validation.require_constant("smoothness", spec.smoothness, needed_for=_NEED)
    rho_h = validation.require_constant(
        "hessian_lipschitz", spec.hessian_lipschitz, needed_for=_NEED
    )
    d, n = spec.dim, spec.n
    consts = SPIDER_PRESETS[preset]
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
        kappa = drift_threshold

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
            # Algorithm 1 gets (1 - s) phi, half for the O1 and half for the O2
            # releases (one release is 2/z^2-zCDP); s = 1/2 is the paper's split.
            b1 = b2 = n
            widen = math.sqrt(0.5 / (1.0 - selection_share))  # 1 at the paper's 1/2
            z1 = C_SENS * math.sqrt(2.0 * n1_max / phi) * widen
            z2 = C_SENS * math.sqrt(2.0 * t / phi) * widen
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
    eps_select = (
        math.sqrt(2.0 * selection_share * phi)
        if variant == "empirical"
        else math.sqrt(2.0 * phi)
    )
    return {
        "zcdp": phi,
        "step_size": eta,
        "drift_threshold": kappa,
        "gamma": gamma,
        "alpha_kick": alpha_kick,
        "alpha_select": alpha_kick,
        "num_iters": s["t"],
        "freeze_period": s["freeze"],
        "max_o1_calls": s["n1_max"],
        "n1_drift": s["n1_drift"],
        "n1_kick": s["n1_kick"],
        "noise_multiplier_o1": s["z1"],
        "noise_multiplier_o2": s["z2"],
        "sigma1": s["sigma1"],
        "sigma2": s["sigma2"],
        "zeta1": s["zeta1"],
        "zeta2": s["zeta2"],
        "kick_std": s["zeta1"] / math.sqrt(d),
        "batch_o1": s["b1"],
        "batch_o2": s["b2"],
        "n_train": n_train,
        "n_select": n_select,
        "epsilon_select": eps_select,
        "failure_prob": omega,
    }


def _schedule_cost(v: dict[str, Any], dim: int) -> Cost:
    """An upper bound on the work of a run with schedule ``v`` (public).

    Algorithm 1: each of the ``T`` steps calls O1 (``b1`` per-example gradients) or
    O2 (``2 b2``, both points on one batch); at most ``N1_max`` steps call O1 and the
    first one does, so the worst case is at an end of ``[1, N1_max]``. Algorithm 2:
    at most ``T`` candidates, each an exact gradient of ``F_S`` (``|S|`` gradients)
    and Hessian (``|S| d`` Hessian-vector products). The branch choices and the
    candidate AboveThreshold stops at are post-processing of released values, so
    the work actually done is public too; this bound is what the plan promises.
    """
    t, n1 = v["num_iters"], v["max_o1_calls"]
    b1, b2, s = v["batch_o1"], v["batch_o2"], v["n_select"]
    alg1 = max(b1 + (t - 1) * 2 * b2, n1 * b1 + (t - n1) * 2 * b2)
    return Cost(
        gradient_evaluations=alg1 + t * s,
        hessian_vector_products=t * s * dim,
        steps=2 * t,
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


@dataclasses.dataclass(frozen=True)
class StochasticSpiderInfo(AlgorithmInfo):
    """Public facts of a :func:`stochastic_spider` run (Algorithm 1 alone).

    Every field is post-processing of the released noisy estimates (the branch
    choices depend on released values and public parameters only).

    Attributes:
        algorithm: ``"stochastic_spider"``.
        n_o1_drift: O1 calls at drift resets (the first step's included).
        n_o1_kick: O1 calls at kicks (``kick_mode="o1"``).
        n_o2: O2 calls.
        cap_hit: Whether the O1 cap stopped the run (E7).
        branch_counts: Steps per branch: ``o1_drift``, ``o2``, ``kick``, ``aborted``.
        samples_used: Examples consumed from the permutation (population variant),
            else ``None``.
    """

    algorithm: str
    n_o1_drift: int
    n_o1_kick: int
    n_o2: int
    cap_hit: bool
    branch_counts: dict[str, int]
    samples_used: int | None
    diagnostics: None = None


def _algorithm_1(
    rng_key: PRNGKey,
    plan: Plan,
    problem: Problem,
    x0: Array,
    permutation: Any,
) -> tuple[Array, StochasticSpiderInfo]:
    """Run Algorithm 1 of ``plan`` on ``problem`` (the data its oracles see)."""
    population = plan["variant"] == "population"
    o1 = plan.internal["o1"].with_data(problem)
    o2 = plan.internal["o2"].with_data(problem)
    if population:
        if permutation is None:
            raise ValueError("The population variant needs a public permutation")
        perm = jnp.asarray(permutation, jnp.int32)
        if perm.shape != (problem.n,):
            raise ValueError(f"Expected a permutation of length {problem.n}")
        b1, b2 = plan["batch_o1"], plan["batch_o2"]
        if b1 * plan["max_o1_calls"] + b2 * plan["num_iters"] > problem.n:
            raise ValueError("The plan would reuse samples of D1")
        batches: tuple[int, int] | None = (b1, b2)
    else:
        perm = jnp.zeros((1,), jnp.int32)
        batches = None
    params = {
        "eta": jnp.float64(plan["step_size"]),
        "kappa": jnp.float64(plan["drift_threshold"]),
        "alpha_kick": jnp.float64(plan["alpha_kick"]),
        "kick_std": jnp.float64(plan["kick_std"]),
        "freeze": jnp.int32(plan["freeze_period"]),
        "n1_max": jnp.int32(plan["max_o1_calls"]),
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
        num_iters=plan["num_iters"],
        kick_mode=plan["kick_mode"],
        batches=batches,
    )
    codes = np.asarray(codes)
    info = StochasticSpiderInfo(
        algorithm="stochastic_spider",
        n_o1_drift=int(final.n_o1_drift),
        n_o1_kick=int(final.n_o1_kick),
        n_o2=int(final.n_o2),
        cap_hit=bool(final.aborted),
        branch_counts={
            name: int(np.sum(codes == c))
            for c, name in enumerate(("o1_drift", "o2", "kick", "aborted"))
        },
        samples_used=int(final.ptr) if population else None,
    )
    return xs, info


def stochastic_spider(
    rng_key: PRNGKey,
    problem: Problem,
    plan: Plan,
    *,
    x0: ArrayLike | None = None,
    permutation: ArrayLike | None = None,
) -> PrivateResult:
    r"""Algorithm 1 of seed 000 with the O1 cap (a building block of SpiderSOSP).

    Runs the Algorithm 1 of a :class:`SpiderSOSP` plan (from :func:`plan_spider` or
    ``SpiderSOSP().plan(...)``) and releases **all** its ``T`` iterates with the
    guarantee of the oracle releases alone (no selection): what :meth:`SpiderSOSP.run`
    feeds to Algorithm 2, for callers that select or plot the iterates themselves.

    The single running-state form of spec 000 §2.2 (E8), exactly ``T`` iterations
    (E9): state ``x = x0``, ``g_prev = 0``, ``drift = kappa``, ``frozen = 1``; per
    step, **kick** if :math:`\|g_{prev}\| \le \alpha_{kick}` and ``frozen <= 0``
    (``g = O1(x) + N(0, \zeta_1^2/d\, I)``, ``frozen = Gamma``, ``drift = 0``), else a
    **drift reset** if ``drift >= kappa`` (``g = O1(x)``), else
    ``g = g_prev + O2(x, x_prev)``; then :math:`x \leftarrow x - \eta g` and ``drift
    += ||x_next - x||^2``. Before any O1 call the counter is checked against
    ``plan["max_o1_calls"]``; if the call would exceed it, the run stops
    (``cap_hit``) and the caller must release data-independent points (E7). Kick O1
    calls are counted (E12). With ``kick_mode="perturb"`` the kick only perturbs the
    move and calls no oracle.

    The oracles are the plan's :func:`~dpsample.finders.oracles.first_kind` /
    :func:`~dpsample.finders.oracles.second_kind`: full batch for the empirical
    variant (Eq. (2)); for the population variant (Eq. (3)) ``problem`` must hold
    :math:`D_1` (``plan["n_train"]`` examples) and ``permutation`` a public
    permutation of its indices, consumed sequentially (``b1`` per O1 call, ``b2`` per
    O2 call, both points of an O2 call on the same batch, E37), so no example is used
    twice. The whole loop is one ``lax.scan`` with ``lax.switch`` branches, jitted on
    the oracles' static structure only: repeated calls with other keys, other data of
    the same shape or another privacy level (same ``T`` and batch sizes) reuse one
    compilation.

    Args:
        rng_key: a PRNG key (consumed).
        problem: the data the oracles see (all of ``D``, or :math:`D_1`), on
            :class:`~dpsample.domains.Unconstrained`.
        plan: a :class:`SpiderSOSP` plan.
        x0: the public initial point (default the plan's ``x0``).
        permutation: public permutation of ``range(problem.n)`` (population only).

    Returns:
        ``PrivateResult(iterates, privacy, info)``: the ``(T, d)`` iterates
        :math:`x_1, \dots, x_T`; the guarantee of the oracle releases (charged for
        the cap ``N1_max`` and ``T``, a privacy filter: valid for zCDP/RDP, Feldman &
        Zrnic 2021, and for Gaussian DP, Smith & Thakurta 2022; one release of each
        kind for fresh batches, by parallel composition); and a
        :class:`StochasticSpiderInfo`.

    Raises:
        TypeError: ``plan`` is not a :class:`SpiderSOSP` plan.
        ValueError: a bounded domain, data that do not match the plan, a bad ``x0``
            or a missing or mis-sized permutation (before any private computation).

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> from dpsample import Problem
        >>> from dpsample.domains import Unconstrained
        >>> from dpsample.finders.spider_sosp import plan_spider, stochastic_spider
        >>> prob = Problem(lambda x, z: jnp.sum(jnp.cos(x - z)), jnp.zeros((1000, 2)),
        ...                Unconstrained(2), lipschitz=1.5, smoothness=1.0,
        ...                hessian_lipschitz=1.0, loss_range=4.0)
        >>> plan = plan_spider(prob, epsilon=1.0, delta=1e-5, num_iters=50)
        >>> res = stochastic_spider(jax.random.key(0), prob, plan, x0=jnp.ones(2))
        >>> n1 = res.info.n_o1_drift + res.info.n_o1_kick
        >>> res.value.shape, n1 <= plan["max_o1_calls"]
        ((50, 2), True)
    """
    rng_key = validation.check_key(rng_key)
    problem = check_problem(problem)
    _check_unconstrained(problem.domain, problem.dim, "stochastic_spider")
    if not isinstance(plan, Plan) or plan.algorithm != SpiderSOSP.name:
        raise TypeError(
            f"Expected a {SpiderSOSP.name} plan (plan_spider), got {plan!r}"
        )
    start = plan["x0"] if x0 is None else problem.spec.check_start(x0)
    xs, info = _algorithm_1(rng_key, plan, problem, start, permutation)
    return PrivateResult(xs, plan.internal["alg1_guarantee"], info)  # type: ignore[arg-type]


# ------------------------------------------------------------------- Algorithm 2
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


# ------------------------------------------------------------------- the full finder
@dataclasses.dataclass(frozen=True)
class SpiderSOSPInfo(AlgorithmInfo):
    """Public facts of a :class:`SpiderSOSP` run (``result.info``).

    The counters and branch counts of Algorithm 1 are post-processing of its
    released estimates; ``selected`` is AboveThreshold's output. All are covered
    by the guarantee.

    Attributes:
        algorithm: ``"Stochastic Spider + AboveThreshold (seed 000 Alg. 1 + 2)"``.
        plan: The schedule: the plan's parameters named in :data:`PLAN_FIELDS`.
        preset_label: ``"paper"`` or ``"non-paper (practical)"``.
        n_o1_drift: O1 calls at drift resets.
        n_o1_kick: O1 calls at kicks.
        n_o2: O2 calls.
        cap_hit: Whether the O1 cap stopped Algorithm 1 (then ``x0`` is released).
        branch_counts: Steps per branch of Algorithm 1.
        samples_used: Examples of :math:`D_1` consumed (population), else ``None``.
        selected: Index of the selected iterate, or ``None`` (fallback to ``x0``).
        fallback: Why ``x0`` was released, or ``None``.
        sequential_guarantee: Population variant: the sequential composition (for
            comparison with the parallel one returned), else ``None``.
        grad_threshold: Algorithm 2's public gradient threshold (when it ran).
        eig_threshold: Its public eigenvalue threshold.
        grad_slack: Lemma 4.1's gradient slack ``32 L Delta_G / eps_AT``.
        eig_slack: Its eigenvalue slack.
    """

    algorithm: str
    plan: dict[str, Any]
    preset_label: str
    n_o1_drift: int
    n_o1_kick: int
    n_o2: int
    cap_hit: bool
    branch_counts: dict[str, int]
    samples_used: int | None
    selected: int | None
    fallback: str | None
    sequential_guarantee: PrivacyGuarantee | None
    grad_threshold: float | None = optional()
    eig_threshold: float | None = optional()
    grad_slack: float | None = optional()
    eig_slack: float | None = optional()
    diagnostics: None = None


class SpiderSOSP(PrivateAlgorithm):
    r"""Stochastic Spider + AboveThreshold (seed 000 Alg. 1 + 2) in two phases.

    :meth:`plan` computes the schedule of Theorem 4.2 / 4.6 with the exact zCDP
    calibration, from public inputs only; :meth:`run` runs Algorithm 1
    (:func:`stochastic_spider`) and Algorithm 2 on its iterates, and releases the
    selected point. :func:`spider_sosp` documents every option.

    Budget split of a zCDP budget :math:`\varphi`: with ``calibration=
    "closed_form"`` the :math:`\varphi` solving :math:`\varphi + 2\sqrt{\varphi
    \log(1/\delta)} = \varepsilon` (Lemma A.4); by default (``"accountant"``,
    empirical variant) the largest :math:`\varphi` whose schedule's exact
    guarantee meets :math:`(\varepsilon, \delta)` (bisection with
    :func:`~dpsample.privacy.calibrate`, every parameter re-derived from the
    theorem at each candidate :math:`\varphi`; Lemma A.4's conversion leaves
    30-45% of epsilon unspent):

    * empirical (with the default ``selection_share`` ``s = 1/2``; in general
      :math:`(1-s)\varphi/2`, :math:`(1-s)\varphi/2` and :math:`s\varphi`, the
      multipliers scaled by :math:`\sqrt{1/(2(1-s))}`):
      :math:`\varphi/4` for all ``O1`` calls (``N1_max`` of them),
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
    ``N1_drift`` and the kick threshold follow the preset (:data:`SPIDER_PRESETS`);
    :math:`\Gamma = \lceil M L/\sqrt{\rho\gamma}\rceil`; the kick bound is
    :math:`\lceil T/(\Gamma+1)\rceil` (E12). Population batches:
    :math:`b_1 = \lfloor |D_1|/(2N_{1,\max})\rfloor`,
    :math:`b_2 = \lfloor |D_1|/(2T)\rfloor` (E15), so :math:`b_1 N_{1,\max} + b_2 T
    \le |D_1|`: samples are never reused. ``x0`` defaults to the origin (the
    centre of ``R^d``).

    Overrides (``drift_threshold``, ``num_iters``, ``max_o1_calls``, ``alpha``)
    replace the theorem's value; the privacy calibration always uses the values that
    will run.

    Cost and compute budget: the plan's :class:`~dpsample.plan.Cost` is the worst
    case over the branch choices (``_schedule_cost``: at most ``N1_max`` O1 calls of
    ``b1`` gradients, the other steps O2 calls of ``2 b2``, and at most ``T``
    selection queries of ``|S|`` gradients and ``|S| d`` Hessian-vector products).
    With ``Budget(max_evaluations=E)`` a theorem-default ``T`` whose cost exceeds
    ``E`` is capped at the largest ``T' <= T`` that fits, and every other parameter
    is re-derived from the theorem at ``T'`` (the same fixed point with ``T`` fixed,
    so ``Gamma``, ``N1_max``, the noise and, for the population variant, the batch
    sizes follow ``T'``). A ``num_iters`` given by the caller whose cost exceeds
    ``E`` is refused.

    Examples:
        >>> import jax.numpy as jnp
        >>> from dpsample import Budget, Problem
        >>> from dpsample.domains import Unconstrained
        >>> from dpsample.finders.spider_sosp import SpiderSOSP
        >>> prob = Problem(lambda x, z: jnp.sum(jnp.cos(x - z)), jnp.zeros((1000, 2)),
        ...                Unconstrained(2), lipschitz=1.5, smoothness=1.0,
        ...                hessian_lipschitz=1.0, loss_range=4.0)
        >>> plan = SpiderSOSP().plan(prob.spec, Budget(1.0, 1e-5))
        >>> plan["max_o1_calls"] == min(plan["n1_drift"] + plan["n1_kick"],
        ...                             plan["num_iters"])
        True
        >>> z1, z2 = plan["noise_multiplier_o1"], plan["noise_multiplier_o2"]
        >>> rho = 2 * plan["max_o1_calls"] / z1**2 + 2 * plan["num_iters"] / z2**2
        >>> abs(rho + plan["epsilon_select"] ** 2 / 2 - plan["zcdp"]) < 1e-12
        True

    References:
        Seed 000, Theorems 4.2 and 4.6, Lemmas 3.3-3.7, App. C.1 and C.4; spec 000
        §2.5-2.8 and §6.2.
    """

    name = "spider_sosp"
    kind = "finder"
    seed = "000"
    theorem = "Algorithms 1-2, Theorems 4.2 (empirical) / 4.6 (population)"
    guarantee_type = (
        "zCDP: N1_max O1 + T O2 Gaussian releases and pure AboveThreshold, "
        "converted to (epsilon, delta)"
    )
    summary = "Stochastic Spider with drift control + AboveThreshold SOSP selection"

    #: Its variant in a warm-start pipeline's ERM (Eq. (2)) and population (Eq. (3),
    #: its own half of the data) variants.
    pipeline_variant_options: ClassVar[dict[str, dict[str, str]]] = {
        "erm": {"variant": "empirical"},
        "population": {"variant": "population"},
    }

    def _plan(  # type: ignore[override]
        self,
        spec: ProblemSpec,
        budget: Budget,
        *,
        x0: ArrayLike | None = None,
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
        calibration: str = "accountant",
        selection_order: str = "backward",
        selection_share: float = 0.5,
    ) -> Plan:
        epsilon, delta = validation.check_privacy(budget.epsilon, budget.delta)
        if calibration not in ("accountant", "closed_form"):
            raise ValueError(
                "Expected calibration 'accountant' or 'closed_form', got "
                f"{calibration!r}"
            )
        if selection_order not in ("backward", "forward"):
            raise ValueError(
                "Expected selection_order 'backward' or 'forward', got "
                f"{selection_order!r}"
            )
        selection_share = validation.finite_scalar("selection_share", selection_share)
        if not 0.0 < selection_share < 1.0:
            raise ValueError(
                f"Expected selection_share in (0, 1), got {selection_share!r}"
            )
        _check_unconstrained(spec.domain, spec.dim)
        if x0 is None:
            x0_param = Param(spec.domain.center_point, "default", "the origin")
        else:
            x0_param = Param(spec.check_start(x0), "user")
        omega = validation.delta_in_open_unit(failure_prob, name="failure_prob")
        if variant not in ("empirical", "population"):
            raise ValueError(
                f"Expected variant 'empirical' or 'population', got {variant!r}"
            )
        if variant == "population" and selection_share != 0.5:
            raise ValueError(
                "selection_share splits the empirical variant's budget; the "
                "population variant's Algorithm 2 has D2 to itself (parallel "
                "composition)"
            )
        if preset not in SPIDER_PRESETS:
            raise ValueError(f"Expected preset 'practical' or 'paper', got {preset!r}")
        if kick_mode not in ("o1", "perturb"):
            raise ValueError(f"Expected kick_mode 'o1' or 'perturb', got {kick_mode!r}")
        user_kick_budget = kick_budget
        if kick_mode == "perturb":
            if kick_budget not in (None, "none"):
                raise ValueError(
                    "kick_mode='perturb' makes no kick O1 calls: no budget"
                )
            kick_budget = "none"
        elif kick_budget is None:
            kick_budget = "shared" if preset == "paper" else "separate"
        elif kick_budget not in ("shared", "separate"):
            raise ValueError(
                f"Expected kick_budget 'shared' or 'separate', got {kick_budget!r}"
            )
        for name in ("lipschitz", "smoothness", "hessian_lipschitz"):
            validation.require_constant(name, getattr(spec, name), needed_for=_NEED)
        if initial_gap is None:
            b_c = validation.require_constant(
                "loss_range", spec.loss_range, needed_for=_NEED + " (or initial_gap=)"
            )
        else:
            b_c = validation.positive("initial_gap", initial_gap)
        if num_iters is not None:
            num_iters = validation.positive_int("num_iters", num_iters)
        if max_o1_calls is not None:
            max_o1_calls = validation.positive_int("max_o1_calls", max_o1_calls)
        if alpha is not None:
            alpha = validation.positive("alpha", alpha)
        if drift_threshold is not None:
            drift_threshold = validation.positive("drift_threshold", drift_threshold)
        phi_closed = epsilon_to_zcdp(epsilon, delta)  # Lemma A.4, exact

        def solve(t: int | None, phi: float) -> dict[str, Any]:
            return _schedule(
                spec,
                phi,
                variant=variant,
                preset=preset,
                omega=omega,
                kick_mode=kick_mode,
                kick_budget=kick_budget,
                b_c=b_c,
                drift_threshold=drift_threshold,
                num_iters=t,
                max_o1_calls=max_o1_calls,
                alpha=alpha,
                selection_share=selection_share,
            )

        phi = phi_closed
        if calibration == "accountant" and variant == "empirical":
            # The zCDP budget phi' whose schedule's exact guarantee (PLD/RDP of the
            # Gaussian releases composed with pure AboveThreshold) meets (eps,
            # delta): Lemma A.4's conversion is loose, so phi' > phi_closed.
            def make_guarantee(scale: float) -> PrivacyGuarantee:
                v = solve(num_iters, phi_closed / scale)
                return _empirical_guarantees(spec, v)[3]

            try:
                cal = calibrate(
                    make_guarantee,
                    epsilon=epsilon,
                    delta=delta,
                    initial=1.0,
                    min_lower=1e-6,
                    max_upper=1.0,
                    rtol=1e-3,
                )
                phi = phi_closed / cal.noise
            except OverflowError:
                # dp-accounting's PLD overflows at absurd budgets (epsilon ~ 1e10):
                # keep Lemma A.4's phi, a valid (if loose) calibration.
                pass
        values = solve(num_iters, phi)
        cost = _schedule_cost(values, spec.dim)
        cap = budget.max_evaluations
        capped_from = None
        if cap is not None and cost.evaluations > cap:
            if num_iters is not None:
                raise ValueError(
                    f"num_iters={num_iters} needs up to {cost.evaluations:,} "
                    f"per-example evaluations, over max_evaluations={cap:,}"
                )
            values, capped_from = _cap_schedule(
                lambda t: solve(t, phi), values, cap, spec.dim
            )
            cost = _schedule_cost(values, spec.dim)
        values.update(
            variant=variant,
            preset=preset,
            kick_mode=kick_mode,
            kick_budget=kick_budget,
            selection_order=selection_order,
            selection_share=selection_share,
        )
        params = _params_with_sources(
            values,
            x0_param,
            preset=preset,
            user=dict(
                variant=variant != "empirical",
                preset=preset != "practical",
                kick_mode=kick_mode != "o1",
                kick_budget=user_kick_budget is not None,
                drift_threshold=drift_threshold is not None,
                num_iters=num_iters is not None,
                max_o1_calls=max_o1_calls is not None,
                alpha=alpha is not None,
                failure_prob=failure_prob != 0.05,
                selection_order=selection_order != "backward",
                selection_share=selection_share != 0.5,
            ),
            capped_from=capped_from,
            cap=cap,
        )
        if phi != phi_closed:
            params["zcdp"] = Param(
                phi,
                "calibrated",
                "largest phi whose exact guarantee meets (eps, delta); Lemma A.4's "
                f"closed form gives {phi_closed:.6g}",
            )
        params["calibration"] = Param(
            calibration,
            "user" if calibration != "accountant" else "default",
            "exact accountant" if calibration == "accountant" else "Lemma A.4",
        )
        params["initial_gap"] = Param(
            b_c,
            "user" if initial_gap is not None else "derived",
            "" if initial_gap is not None else "the declared loss_range",
        )
        # Algorithm 1's oracles, planned on the spec of the data they will see.
        relation = spec.relation
        if variant == "empirical":
            o1, o2, alg1, guarantee = _empirical_guarantees(spec, values)
            sequential = guarantee
        else:
            train_spec = spec.replace(n=values["n_train"])
            o1 = oracles.first_kind(
                train_spec,
                noise_multiplier=values["noise_multiplier_o1"],
                sampling="fresh",
                batch_size=values["batch_o1"],
            )
            o2 = oracles.second_kind(
                train_spec,
                noise_multiplier=values["noise_multiplier_o2"],
                sampling="fresh",
                batch_size=values["batch_o2"],
            )
            # Fresh disjoint batches: each example is in at most one release, so the
            # run costs one release of the most expensive kind (parallel composition).
            alg1 = o1.run_guarantee(values["max_o1_calls"])
            if values["noise_multiplier_o2"] < values["noise_multiplier_o1"]:
                alg1 = o2.run_guarantee(values["num_iters"])
            alg2 = PrivacyGuarantee.pure(values["epsilon_select"], relation=relation)
            sequential = alg1.compose(alg2)
            rho_1 = alg1.zcdp_rho()
            rho_2 = values["epsilon_select"] ** 2 / 2.0
            guarantee = PrivacyGuarantee.zcdp(max(rho_1, rho_2), relation=relation)
        return Plan(
            algorithm=self.name,
            spec=spec,
            budget=budget,
            params=params,
            guarantee=guarantee,
            cost=cost,
            internal={
                "o1": o1,
                "o2": o2,
                "alg1_guarantee": alg1,
                "sequential_guarantee": sequential if variant == "population" else None,
            },
        )

    def _run(self, rng_key: PRNGKey, plan: Plan, problem: Problem) -> PrivateResult:
        x0 = jnp.asarray(plan["x0"], jnp.float64)
        k_split, k_perm, k_alg1, k_alg2 = jax.random.split(rng_key, 4)
        if plan["variant"] == "population":
            # Public, data-independent split and batch order (E36).
            n_train = plan["n_train"]
            order = np.asarray(jax.random.permutation(k_split, problem.n))
            d1 = jax.tree.map(lambda leaf: leaf[order[:n_train]], problem.data)
            d2 = jax.tree.map(lambda leaf: leaf[order[n_train:]], problem.data)
            train, select = problem.replace(data=d1), problem.replace(data=d2)
            perm = jax.random.permutation(k_perm, n_train)
        else:
            train = select = problem
            perm = None
        xs, run = _algorithm_1(k_alg1, plan, train, x0, perm)
        preset = plan["preset"]
        common = dict(
            algorithm="Stochastic Spider + AboveThreshold (seed 000 Alg. 1 + 2)",
            plan={k: plan[k] for k in PLAN_FIELDS},
            preset_label="paper" if preset == "paper" else "non-paper (practical)",
            n_o1_drift=run.n_o1_drift,
            n_o1_kick=run.n_o1_kick,
            n_o2=run.n_o2,
            cap_hit=run.cap_hit,
            branch_counts=run.branch_counts,
            samples_used=run.samples_used,
            sequential_guarantee=plan.internal["sequential_guarantee"],
        )
        if run.cap_hit:
            info = SpiderSOSPInfo(
                **common,
                selected=None,
                fallback="x0 (O1 cap reached: data-independent output, E7)",
            )
            return PrivateResult(x0, plan.guarantee, info)  # type: ignore[arg-type]
        xs_np = np.asarray(xs)
        # The candidates in a public order: x_T, ..., x_1 ("backward", default) or
        # x_1, ..., x_T (the paper's). AboveThreshold's guarantee holds for any
        # order fixed in advance, and the work stays one gradient and one Hessian
        # per examined candidate.
        backward = plan["selection_order"] == "backward"
        candidates = xs_np[::-1] if backward else xs_np
        grad_norm, min_eig = _selection_queries(select, candidates)
        spec = plan.spec
        sel = above_threshold_sosp(
            k_alg2,
            grad_norm,
            min_eig,
            alpha=plan["alpha_select"],
            hessian_lipschitz=spec.hessian_lipschitz,
            epsilon=plan["epsilon_select"],
            grad_sensitivity=C_SENS * spec.lipschitz / plan["n_select"],
            eig_sensitivity=C_SENS * spec.smoothness / plan["n_select"],
            failure_prob=plan["failure_prob"],
            num_candidates=plan["num_iters"],
            relation=spec.relation,
        )
        index = int(sel.value)
        thresholds = {
            k: sel.info[k]
            for k in ("grad_threshold", "eig_threshold", "grad_slack", "eig_slack")
        }
        if index < 0:
            info = SpiderSOSPInfo(
                **common,
                selected=None,
                fallback="x0 (AboveThreshold returned no candidate)",
                **thresholds,
            )
            return PrivateResult(x0, plan.guarantee, info)  # type: ignore[arg-type]
        if backward:
            index = plan["num_iters"] - 1 - index
        info = SpiderSOSPInfo(**common, selected=index, fallback=None, **thresholds)
        value = jnp.asarray(xs_np[index])
        return PrivateResult(value, plan.guarantee, info)  # type: ignore[arg-type]


def _empirical_guarantees(
    spec: ProblemSpec, values: dict[str, Any]
) -> tuple[Any, Any, PrivacyGuarantee, PrivacyGuarantee]:
    """``(O1, O2, Algorithm 1's guarantee, the whole guarantee)`` of a schedule.

    The empirical variant's ``values``: every release on all ``n`` examples.
    """
    o1 = oracles.first_kind(spec, noise_multiplier=values["noise_multiplier_o1"])
    o2 = oracles.second_kind(spec, noise_multiplier=values["noise_multiplier_o2"])
    alg1 = o1.run_guarantee(values["max_o1_calls"]).compose(
        o2.run_guarantee(values["num_iters"])
    )
    alg2 = PrivacyGuarantee.pure(values["epsilon_select"], relation=spec.relation)
    return o1, o2, alg1, alg1.compose(alg2)


def _cap_schedule(
    solve: Any, values: dict[str, Any], cap: int, dim: int
) -> tuple[dict[str, Any], int]:
    """The theorem's schedule at the largest ``T' <= T`` whose cost fits ``cap``.

    Bisection on ``T'``, re-solving the whole schedule at each (``solve(T')``); the
    lower end always fits, so the answer does even if rounding makes the cost not
    monotone in ``T'``.
    """
    t = values["num_iters"]
    lo_values = solve(1)
    if _schedule_cost(lo_values, dim).evaluations > cap:
        raise ValueError(
            f"max_evaluations={cap:,} is below one iteration of spider_sosp "
            f"({_schedule_cost(lo_values, dim).evaluations:,} per-example "
            "evaluations)"
        )
    lo, hi = 1, t
    while hi - lo > 1:
        mid = (lo + hi) // 2
        candidate = solve(mid)
        if _schedule_cost(candidate, dim).evaluations <= cap:
            lo, lo_values = mid, candidate
        else:
            hi = mid
    return lo_values, t


def _params_with_sources(
    v: dict[str, Any],
    x0: Param,
    *,
    preset: str,
    user: dict[str, bool],
    capped_from: int | None,
    cap: int | None,
) -> dict[str, Param]:
    """The plan's parameters with their sources (see :data:`PLAN_FIELDS`)."""
    paper = preset == "paper"
    rule = "seed 000 (paper constants)" if paper else "practical preset (non-paper)"

    def given(name: str, source: str, note: str = "") -> Param:
        if user.get(name):
            return Param(v[name], "user")
        return Param(v[name], source, note)

    practical_c_t = SPIDER_PRESETS["practical"]["c_T"]
    steps_note = (
        "Thm 4.2/4.6: T = B M L^4 / gamma^2"
        if paper
        else f"{rule}: T = c_T B M / gamma^2, c_T = {practical_c_t:g}"
    )
    if capped_from is not None:
        steps_note += (
            f"; capped at T={v['num_iters']} (max_evaluations={cap:,}: the largest "
            f"T whose cost fits, was {capped_from}); the rest re-derived at this T"
        )
    empirical = v["variant"] == "empirical"
    return {
        "x0": x0,
        "variant": given("variant", "default", "empirical risk (Theorem 4.2)"),
        "preset": given("preset", "default", "non-paper constants (SPIDER_PRESETS)"),
        "kick_mode": given("kick_mode", "default", "kicks call O1 (Algorithm 1)"),
        "kick_budget": given(
            "kick_budget", "default", "shared for the paper preset, else separate"
        ),
        "zcdp": Param(v["zcdp"], "derived", "Lemma A.4: the zCDP of (eps, delta)"),
        "step_size": Param(v["step_size"], "theorem", "eta = 1/M"),
        "drift_threshold": given(
            "drift_threshold",
            "theorem",
            "kappa of Thm 4.2" if empirical else "kappa of Thm 4.6",
        ),
        "gamma": Param(v["gamma"], "theorem", "Lemma 3.3 (E10), damped fixed point"),
        "alpha_kick": Param(v["alpha_kick"], "user")
        if user.get("alpha")
        else Param(
            v["alpha_kick"],
            "theorem" if paper else "default",
            "gamma log^3(B M d/(rho omega))" if paper else "c_alpha gamma",
        ),
        "alpha_select": Param(v["alpha_select"], "derived", "= alpha_kick"),
        "num_iters": given("num_iters", "theorem" if paper else "default", steps_note),
        "freeze_period": Param(
            v["freeze_period"], "theorem", "Gamma = M L / sqrt(rho gamma)"
        ),
        "max_o1_calls": given(
            "max_o1_calls", "theorem", "N1_drift (+ N1_kick when separate), <= T"
        ),
        "n1_drift": Param(
            v["n1_drift"],
            "theorem" if paper else "default",
            "Lemma 3.7 + 1" if paper else f"{rule}: c_N 6 B eta / kappa + 1",
        ),
        "n1_kick": Param(v["n1_kick"], "theorem", "ceil(T/(Gamma + 1)) (E12)"),
        "noise_multiplier_o1": Param(
            v["noise_multiplier_o1"],
            "theorem",
            "(1 - s) phi / 2 for N1_max O1 calls, s = selection_share"
            if empirical
            else "phi per fresh release",
        ),
        "noise_multiplier_o2": Param(
            v["noise_multiplier_o2"],
            "theorem",
            "(1 - s) phi / 2 for T O2 calls" if empirical else "phi per fresh release",
        ),
        "sigma1": Param(v["sigma1"], "derived", "z1 G / b1"),
        "sigma2": Param(v["sigma2"], "derived", "z2 M / b2 per unit displacement"),
        "zeta1": Param(v["zeta1"], "derived", "nSG parameter of O1"),
        "zeta2": Param(v["zeta2"], "derived", "nSG parameter of O2"),
        "kick_std": Param(v["kick_std"], "derived", "zeta1 / sqrt(d) (line 8)"),
        "batch_o1": Param(
            v["batch_o1"],
            "derived" if empirical else "theorem",
            "n" if empirical else "|D1| / (2 N1_max) (E15)",
        ),
        "batch_o2": Param(
            v["batch_o2"],
            "derived" if empirical else "theorem",
            "n" if empirical else "|D1| / (2 T) (E15)",
        ),
        "n_train": Param(v["n_train"], "derived", "n" if empirical else "ceil(n/2)"),
        "n_select": Param(v["n_select"], "derived", "n" if empirical else "floor(n/2)"),
        "epsilon_select": Param(
            v["epsilon_select"],
            "theorem",
            "sqrt(2 s phi): s phi for AboveThreshold" if empirical else "sqrt(2 phi)",
        ),
        "selection_order": given(
            "selection_order",
            "default",
            "x_T first (non-paper; AboveThreshold's guarantee does not depend on "
            "the public order)",
        ),
        "selection_share": given(
            "selection_share",
            "default" if empirical else "derived",
            "Algorithm 2's share of phi (the paper's 1/2)"
            if empirical
            else "unused: Algorithm 2 runs on D2 (parallel composition)",
        ),
        "failure_prob": given("failure_prob", "default", "omega = 0.05"),
    }


def plan_spider(
    problem: Problem | ProblemSpec,
    *,
    epsilon: float,
    delta: float,
    **options: Any,
) -> Plan:
    r"""The :class:`SpiderSOSP` plan of a problem (public inputs only).

    ``SpiderSOSP().plan(problem.spec, Budget(epsilon, delta), **options)``: the
    schedule of Theorem 4.2 / 4.6 with the exact zCDP calibration, for
    :func:`stochastic_spider` or to read before running. Only ``n``, ``d``, the
    domain and the declared constants are read.

    Args:
        problem: A :class:`~dpsample.problem.Problem` or its
            :class:`~dpsample.problem.ProblemSpec`.
        epsilon: Target epsilon.
        delta: Target delta.
        **options: Options of :class:`SpiderSOSP` (see :func:`spider_sosp`).

    Returns:
        The frozen :class:`~dpsample.plan.Plan`; ``plan["num_iters"]`` etc. are the
        values of :data:`PLAN_FIELDS`.

    Raises:
        ValueError, MissingConstantError: As :func:`spider_sosp`.

    Examples:
        >>> import jax.numpy as jnp
        >>> from dpsample import Problem
        >>> from dpsample.domains import Unconstrained
        >>> from dpsample.finders.spider_sosp import plan_spider
        >>> prob = Problem(lambda x, z: jnp.sum(jnp.cos(x - z)), jnp.zeros((1000, 2)),
        ...                Unconstrained(2), lipschitz=1.5, smoothness=1.0,
        ...                hessian_lipschitz=1.0, loss_range=4.0)
        >>> plan = plan_spider(prob, epsilon=1.0, delta=1e-5, num_iters=50)
        >>> plan["num_iters"], plan.source("num_iters"), plan.spent_epsilon() <= 1.0
        (50, 'user', True)
    """
    return SpiderSOSP().plan(problem, Budget(epsilon, delta), **options)


def spider_sosp(
    rng_key: PRNGKey,
    problem: Problem,
    *,
    epsilon: float,
    delta: float,
    x0: ArrayLike | None = None,
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
    calibration: str = "accountant",
    selection_order: str = "backward",
    selection_share: float = 0.5,
) -> PrivateResult:
    r"""Private alpha-SOSP by Stochastic Spider + AboveThreshold (seed 000 Alg. 1 + 2).

    ``SpiderSOSP().solve(rng_key, problem, epsilon=..., delta=..., **options)``
    (:class:`SpiderSOSP` documents the plan: budget split, constants, cost and the
    compute-budget rule). Runs Algorithm 1 (:func:`stochastic_spider`) with the
    plan's parameters, then Algorithm 2
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
          \varphi`, with :math:`\varphi` calibrated so that
          ``privacy.epsilon(delta) <= epsilon`` by the exact accountant (see
          ``calibration``).
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
        x0: the public initial point (finite, shape ``(d,)``; default the origin).
        variant: ``"empirical"`` or ``"population"``.
        preset: ``"practical"`` (non-paper constants, see :data:`SPIDER_PRESETS`) or
            ``"paper"``.
        failure_prob: :math:`\omega`, default 0.05.
        drift_threshold: override of :math:`\kappa`.
        num_iters: override of ``T`` (>= 1).
        max_o1_calls: override of the O1 cap ``N1_max``.
        alpha: override of :math:`\alpha_1` (kick threshold and Algorithm 2).
        kick_mode: ``"o1"`` (paper) or ``"perturb"`` (variant, no kick O1 calls).
        kick_budget: ``"shared"`` (kick O1 calls count toward the Lemma 3.7 cap;
            default for ``"paper"``) or ``"separate"`` (cap = drift bound + kick
            bound; default for ``"practical"``).
        initial_gap: a public bound ``B >= F(x0) - inf F`` used in place of the
            declared ``loss_range`` wherever the theorems use ``B`` as the initial
            gap (``kappa``, ``T``, ``N1_drift``, the log factors): e.g. a warm
            start's ``psi`` (seed 003 Theorem 3.4). It changes the schedule only;
            the calibration is always to what runs.
        calibration: ``"accountant"`` (default): the zCDP budget :math:`\varphi`
            of the empirical variant is the largest whose schedule's exact
            guarantee (dp-accounting PLD/RDP of the Gaussian releases composed with
            the pure AboveThreshold) meets ``(epsilon, delta)``, so the run spends
            its budget (within 0.1% in :math:`\varphi`, never above; issue 16);
            every parameter is then the theorem's at that :math:`\varphi`.
            ``"closed_form"``: the paper's :math:`\varphi` of Lemma A.4, whose
            zCDP-to-DP conversion is loose (about 0.55-0.7 of epsilon spent). The
            population variant's guarantee is stated in zCDP, where Lemma A.4 is
            exact, so both options agree there.
        selection_order: the public order in which Algorithm 2 examines the
            candidates. ``"backward"`` (default, non-paper): ``x_T, x_{T-1},
            ..., x_1``, so the released point is the *latest* iterate that
            passes; ``"forward"``: the paper's ``x_1, ..., x_T``, which releases
            the first iterate that passes the (loose) thresholds, typically one
            still escaping the saddle (issue 16: on seed 000's cosine saddle at
            ``n = 4000``, ``epsilon = 10``, ``||grad F||`` 0.07-0.44 forward
            against 0.006-0.034 backward; ``docs/finders.md``). AboveThreshold's
            guarantee and Lemma 4.1 hold for any order fixed before the run, and
            each examined candidate costs one gradient and one Hessian either way.
        selection_share: the share ``s`` of the zCDP budget :math:`\varphi`
            spent by Algorithm 2 in the empirical variant: :math:`\varepsilon_{AT}
            = \sqrt{2 s \varphi}` and each oracle kind gets :math:`(1 - s)
            \varphi / 2`. Default 1/2, the paper's split; a smaller share buys
            little on the cosine saddle (``docs/finders.md``). Not used by the
            population variant (Algorithm 2 runs on :math:`D_2`).

    Returns:
        ``PrivateResult(value, privacy, info)``; ``info`` (a
        :class:`SpiderSOSPInfo`) holds the schedule (``info["plan"]``, the plan's
        parameters named in :data:`PLAN_FIELDS`), the counters of
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
    return SpiderSOSP().solve(
        rng_key,
        problem,
        epsilon=epsilon,
        delta=delta,
        x0=x0,
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
        calibration=calibration,
        selection_order=selection_order,
        selection_share=selection_share,
    )


precision.scope_public(globals())
