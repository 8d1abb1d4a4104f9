r"""Zero- and first-order private Goldstein-stationary finders (seed 004).

Non-smooth non-convex losses have no useful stationary points in the gradient-norm
sense; the target is Goldstein stationarity: ``x`` is :math:`(\rho, \beta)`-stationary
for ``F`` if the min-norm element of :math:`\partial_\rho F(x) = \operatorname{conv}
\bigcup_{y\in B(x,\rho)}\partial F(y)` has norm at most :math:`\beta`. These finders run
O2NC (online-to-nonconvex conversion, seed 004 Algorithm 2) on the ball-smoothed
surrogate :math:`F_\alpha(x) = E_{y\sim U(B_\alpha)}F(x+y)` with a variance-reduced
private gradient oracle, and certify radius :math:`2\alpha` (Lemma 2.4): a run with
smoothing radius ``alpha`` targets :math:`E\|\bar\partial_{2\alpha}F(x_{out})\|\le
\beta`.

**O2NC** (clip radius ``D``, step ``eta``, window ``M``, ``T`` steps):
:math:`\Delta_1 = 0`, :math:`x_t = x_{t-1} + \Delta_t`,
:math:`z_t = x_{t-1} + s_t\Delta_t` (:math:`s_t\sim U[0,1]`),
:math:`\Delta_{t+1} = \mathrm{clip}_D(\Delta_t - \eta\,\tilde g_t)`; the output is a
uniformly random window average :math:`\bar x_k = \frac1M\sum_{j}z_{(k-1)M+j}`,
``k = 1..floor(T/M)`` (the **z** iterates, not ``x_T``).

**Oracles** (period ``Sigma``, ``pos(t) = ((t-1) mod Sigma) + 1``, anchor at
``pos = 1``; ``pos`` and not ``t mod Sigma``, spec §6.6):

* zero-order two-point estimator (directions on the **sphere**; the printed
  ``Unif(B_alpha)`` of Alg. 3/4 is a typo, spec §2.0):
  :math:`\frac1m\sum_j \frac{d}{2\alpha}(f(x+\alpha u_j;\xi)-f(x-\alpha u_j;\xi))u_j`;
* first-order estimator (perturbations in the **ball**; the printed sphere of Eq. (17)
  is a typo): :math:`\frac1m\sum_j\nabla f(x+y_j;\xi)`, one perturbation per anchor
  sample (Alg. 5);
* difference steps use the **same** samples at both points and **independent**
  directions (spec §6.4).

``passes="single"`` (Algorithms 3 and 5): every sample enters one oracle call (``B1 =
Sigma`` samples per anchor, ``B2 = 1`` per difference step, in data order), the
running state is **noise-free** and the released estimate is ``g_t + TREE(pos(t))``
with a **fresh** binary tree per period. The tree is the corrected one of spec §2.1
(root level included, ``NODE(t)`` is the binary decomposition of ``[1, t]``, so
``t = Sigma`` and ``Sigma = 1`` work; the printed version cannot represent ``t =
Sigma``). ``passes="multi"`` (Algorithm 4, ERM): every call reads all ``n`` samples;
the state is the **noisy** previous output and fresh Gaussian noise ``sigma1`` (anchor)
or ``sigma2`` (difference) is added each step.

Privacy:
    Replace-one neighbours. Per-sample estimates are bounded by ``C_A = L + e``
    (anchor; first-order ``C_A = L``) and difference estimates by
    ``C_D(t) = min(L sqrt(d)/alpha * ||z_t - z_{t-1}|| + 2 e, 2 C_A) <= C_D_max``
    (``||z_t - z_{t-1}|| <= 2D``; smoothness ``L sqrt(d)/alpha`` of ``f_alpha``, Fact
    2.3 with the explicit constant of spec §1.5), where ``e`` is Pinelis' concentration
    radius of an ``m``-direction average at failure probability ``gamma``
    (``L (d+1) sqrt(2 log(2/gamma)/m)`` zero-order, ``2 L sqrt(2 log(2/gamma)/m)``
    first-order). Sensitivities are ``2 C / B`` (``B = B1, B2``, or ``n`` multi-pass).

    * Single pass: the replaced sample enters one leaf of one period's tree, i.e. at
      most ``H + 1`` node releases (``H = ceil(log2 Sigma)``), each a Gaussian
      mechanism with sensitivity ``s = max(s_A, s_D)`` given the past (adaptive
      composition). The guarantee is ``gaussian(sigma/s)`` composed ``H + 1`` times
      (spec §3.2, in place of the paper's ``4 s sqrt(log Sigma log(1/delta))/eps``,
      which vanishes at ``Sigma = 1``).
    * Multi pass: ``ceil(T/Sigma)`` anchor Gaussians (sensitivity ``2 C_A/n``) and
      ``T - ceil(T/Sigma)`` difference Gaussians (``2 C_D_max/n``) composed, with
      multipliers ``c sqrt(N_A)`` and ``c sqrt(N_D)`` (equal zCDP split, spec §3.3) and
      ``c`` the smallest the accountant certifies. Noise multipliers (here and
      ``tree_noise_multiplier``) are the ecosystem's: std over the per-example bound
      ``C / B``, i.e. over *half* the replace-one sensitivity ``2C / B``.
    * ``enforce_sensitivity=False`` (Mode A, the paper's): the bounds hold only on a
      high-probability event (and only if the declared ``L`` is a true Lipschitz
      bound). The mechanism equals its clipped version (Mode B) except when one of the
      ``N_est`` per-sample estimates exceeds its bound, probability ``<= N_est gamma =
      tau``; the guarantee is the clipped mechanism's at ``(epsilon, delta/2)`` with TV
      slack ``tau = delta / (2 (1 + e^epsilon))`` (``(epsilon, delta)`` in total). The
      union bound covers every estimate that runs (all ``T`` steps multi-pass, spec
      §3.3), not only one batch. The guarantee lists the declared ``L`` in its
      ``assumptions``.
    * ``enforce_sensitivity=True`` (Mode B, spec §3.5): estimates are clipped to
      ``C_A``/``C_D(t)`` (zero-order function differences to ``[-2 alpha L, 2 alpha
      L]``, first-order gradients to norm ``L``); privacy is unconditional and holds
      whatever ``L`` the data really have; ``m`` and ``e`` (``concentration_radius``)
      only affect utility.

    Noise is calibrated by bisection on dp_accounting's RDP accountant (fast) and the
    returned :class:`PrivacyGuarantee` (tightest of its RDP/PLD/zCDP routes) is
    checked against the target.

Parameters (``plan_goldstein``, from public constants only: ``L`` = declared
``lipschitz``, the public initial gap ``Phi`` = ``initial_gap`` or the declared
``loss_range``, ``alpha``, and ``beta`` multi-pass):

* ``preset="corrected"`` (default, single pass; spec §2.4.5): ``T`` the largest run the
  ``n`` samples allow (about ``n/2``), ``D = c_D min{(Phi^2 alpha/(L^2 sqrt(d)
  T^2))^{1/3}, (Phi alpha eps/(d L T))^{1/2}}``, ``Sigma = alpha/(D sqrt d)``. Theorem
  3.1 as printed uses ``L/B1`` where the anchor variance gives ``L/sqrt(B1)``; its
  dimension-free non-private rate does not follow. The corrected rate is
  ``(Phi L^2 sqrt(d)/(n alpha))^{1/3} + (Phi L d/(n alpha eps))^{1/2}``.
* ``preset="paper"`` (single pass; spec §2.4.4, rebuilt from the truncated text): the
  three-term ``D`` and ``Sigma = (alpha/(eps D))^{2/3}``.
* multi pass (Theorem 4.1, corrected, spec §2.5.3): ``D = c_D alpha beta^2/L^2``,
  ``T = c_T Phi L^2/(alpha beta^3)`` (the printed ``alpha^2 beta^2/L^2`` and
  ``Phi L^2/(alpha^2 beta^3)`` are dimensionally wrong; ``preset="paper"`` selects
  them, labelled), ``Sigma = alpha/(D sqrt d)``, ``beta`` defaults to the rate
  ``(L d^{3/4} sqrt(Phi)/(n eps sqrt(alpha)))^{2/3}``.
* always: ``B1 = Sigma``, ``B2 = 1`` (single pass), ``M = floor(alpha/(4 D))`` (so
  ``M D <= alpha``, capped at ``T``), ``eta = D/(c_G L sqrt(M))`` (``G1 = L``), ``m`` =
  the lemmas' ``c_m (d^2 B1^2 + d alpha^2 B2^2/D^2) log(d max(B1, B2)/delta)``
  (first-order ``c_m B2^2 alpha^2/(D^2 d) log(...)``; multi-pass the variance-driven
  ``L^2 d Sigma/(n sigma1^2) + L^2 d/(n sigma2^2)``), and in Mode A at least the
  privacy-driven ``m`` making ``e <= L`` (anchors) and ``e <= L sqrt(d) D/alpha``
  (differences) (spec §3.4). Every O(.) constant (``c_D, c_Sigma, c_m, c_G, c_T``)
  defaults to 1 and every parameter can be overridden; the accounting always uses
  what runs. Theory-scale ``m`` is large (spec §4.3): for experiments, pass
  ``num_directions`` and ``enforce_sensitivity=True``.

Domain. Without ``enforce_sensitivity`` the steps are unconstrained and the loss is
evaluated around the iterates, so the declared ``L`` must hold on all of ``R^d``: the
problem must be on ``Unconstrained`` (a ``ValueError`` before any private computation
otherwise). With ``enforce_sensitivity=True`` every estimate is clipped, the bounds
hold wherever the iterates are, and a ``Ball`` problem is allowed (the iterates are
not projected). In both cases ``x0`` must lie in the problem's domain (``ValueError``
otherwise; a point within rounding of the ball is projected onto it).

Non-finite values. The data are checked finite by the ``Problem``; nothing raises
during a run. A per-sample estimate (anchor or difference) with a non-finite entry,
i.e. the loss or its gradient returned NaN or inf near the iterate, contributes zero
(public rule, as the clipped oracles' rows,
:func:`~dpsample._src.clipping.clip_coefficients`): so in Mode B each sample still
moves the released estimate by at most its bound, and the guarantee holds as stated.
In Mode A the zeroed sample is one on which the declared ``L`` failed (outside the
conditional guarantee, as before).

Loops are a ``lax.scan`` under a ``jit`` built per call.

References:
    Kornowski, Liu, Talwar, *Improved sample complexity for private nonsmooth
    nonconvex optimization*, ICML 2025 (arXiv:2410.05880), seed 004.
    Cutkosky, Mehta, Orabona, *Optimal stochastic non-smooth non-convex optimization
    through online-to-non-convex conversion*, ICML 2023.
    Dwork, Naor, Pitassi, Rothblum, *Differential privacy under continual
    observation*, STOC 2010 (tree mechanism).
    Pinelis, *Optimum bounds for the distributions of martingales in Banach spaces*,
    Ann. Probab. 1994.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp

from dpsample._src import precision, validation
from dpsample.domains import Unconstrained
from dpsample.finders.accounting import C_SENS, gaussian_sum_guarantee
from dpsample.privacy import (
    NON_PRIVATE_KEY,
    CalibrationError,
    PrivacyGuarantee,
    PrivateResult,
)
from dpsample.problem import Problem, check_problem
from dpsample.types import ArrayLike, PRNGKey

__all__ = [
    "PASSES",
    "PRESETS",
    "ESTIMATORS",
    "goldstein_first_order",
    "goldstein_zero_order",
    "plan_goldstein",
    "sample_budget_iters",
    "tree_nodes",
]

PASSES = ("single", "multi")
PRESETS = ("corrected", "paper")
ESTIMATORS = ("zero_order", "first_order")


# ------------------------------------------------------------------ public helpers
def tree_nodes(t: int, period: int) -> list[tuple[int, int]]:
    """Corrected ``NODE(t)`` of the tree mechanism (spec 004 §2.1).

    The dyadic intervals ``[k+1, k+2^l]`` whose union is ``[1, t]`` (binary
    decomposition, levels ``l = H..0`` with ``H = ceil(log2 period)``).

    Args:
        t: Position, ``1 <= t <= period``.
        period: ``Sigma >= 1``.

    Returns:
        The list of ``(start, end)`` nodes (``popcount(t)`` of them).

    Examples:
        >>> from dpsample.finders.goldstein import tree_nodes
        >>> tree_nodes(8, 8), tree_nodes(6, 8), tree_nodes(1, 1)
        ([(1, 8)], [(1, 4), (5, 6)], [(1, 1)])
    """
    sigma = validation.positive_int("period", period)
    t = validation.positive_int("t", t)
    if t > sigma:
        raise ValueError(f"Expected t={t} <= period={sigma}")
    height = _height(sigma)
    nodes, k = [], 0
    for level in range(height, -1, -1):
        if k + 2**level <= t:
            nodes.append((k + 1, k + 2**level))
            k += 2**level
    return nodes


def sample_budget_iters(n: int, period: int, anchor_batch: int, diff_batch: int) -> int:
    """Largest ``T`` with ``ceil(T/Sigma) B1 + (T - ceil(T/Sigma)) B2 <= n``.

    Examples:
        >>> from dpsample.finders.goldstein import sample_budget_iters
        >>> sample_budget_iters(100, 10, 10, 1), sample_budget_iters(7, 1, 1, 1)
        (50, 7)
    """
    per_period = anchor_batch + (period - 1) * diff_batch
    full = n // per_period
    rem = n - full * per_period
    extra = 0
    if rem >= anchor_batch:
        extra = 1 + min(period - 1, (rem - anchor_batch) // diff_batch)
    return full * period + extra


def _height(period: int) -> int:
    return max(0, math.ceil(math.log2(period))) if period > 1 else 0


def _choice(name: str, value: Any, options: tuple[str, ...]) -> str:
    if value not in options:
        raise ValueError(f"Expected {name} in {options}, got {value!r}")
    return value


def _opt_int(name: str, value: Any) -> int | None:
    return None if value is None else validation.positive_int(name, value)


def _opt_pos(name: str, value: Any) -> float | None:
    return None if value is None else validation.positive(name, value)


def _rho_star(epsilon: float, delta: float) -> float:
    lg = math.log(1.0 / delta)
    return (math.sqrt(lg + epsilon) - math.sqrt(lg)) ** 2


def plan_goldstein(
    *,
    n: int,
    dim: int,
    epsilon: float,
    delta: float,
    lipschitz: float,
    initial_gap: float,
    alpha: float,
    passes: str = "single",
    preset: str = "corrected",
    estimator: str = "zero_order",
    beta: float | None = None,
    enforce_sensitivity: bool = False,
    num_iters: int | None = None,
    clip_radius: float | None = None,
    period: int | None = None,
    window: int | None = None,
    num_directions: int | None = None,
    step_size: float | None = None,
    concentration_radius: float | None = None,
    c_d: float = 1.0,
    c_sigma: float = 1.0,
    c_m: float = 1.0,
    c_g: float = 1.0,
    c_t: float = 1.0,
) -> dict[str, Any]:
    """Public parameters of a Goldstein finder run (module docstring for formulas).

    Args:
        n: Dataset size.
        dim: Dimension ``d``.
        epsilon: Target epsilon.
        delta: Target delta.
        lipschitz: Declared ``L``.
        initial_gap: Public ``Phi >= F(x0) - inf F``.
        alpha: Smoothing radius (certified radius ``2 alpha``), ``alpha <= Phi/L``.
        passes: ``"single"`` (Alg. 3/5) or ``"multi"`` (Alg. 4).
        preset: ``"corrected"`` (default) or ``"paper"`` (as printed).
        estimator: ``"zero_order"`` or ``"first_order"`` (single pass only).
        beta: Multi-pass target norm (default: the Thm 4.1 rate at ``n``).
        enforce_sensitivity: Mode B (clipping) if True, Mode A otherwise.
        num_iters: Override ``T``.
        clip_radius: Override ``D``.
        period: Override ``Sigma``.
        window: Override ``M``.
        num_directions: Override ``m``.
        step_size: Override ``eta``.
        concentration_radius: Mode B only: override ``e`` in the clip bounds
            ``C_A = L + e`` and ``C_D(t) = ... + 2 e`` (a utility knob; privacy
            holds for any value). Mode A derives ``e`` from ``m`` and ``gamma``.
        c_d: Multiplier of ``D``.
        c_sigma: Multiplier of ``Sigma``.
        c_m: Multiplier of ``m``.
        c_g: ``G1 = c_g L`` in ``eta``.
        c_t: Multiplier of ``T`` (multi pass).

    Returns:
        A dict of every parameter and bound (all public).

    Examples:
        >>> from dpsample.finders.goldstein import plan_goldstein
        >>> p = plan_goldstein(n=2000, dim=2, epsilon=1.0, delta=1e-5, lipschitz=1.0,
        ...                    initial_gap=1.0, alpha=0.1, num_directions=16)
        >>> p["samples_used"] <= 2000, p["window"] * p["clip_radius"] <= 0.1
        (True, True)
    """
    n = validation.positive_int("n", n)
    d = validation.positive_int("dim", dim)
    eps, dlt = validation.check_privacy(epsilon, delta)
    big_l = validation.positive("lipschitz", lipschitz)
    phi = validation.positive("initial_gap", initial_gap)
    a = validation.positive("alpha", alpha)
    passes = _choice("passes", passes, PASSES)
    preset = _choice("preset", preset, PRESETS)
    estimator = _choice("estimator", estimator, ESTIMATORS)
    if passes == "multi" and estimator == "first_order":
        raise ValueError("the first-order oracle is single-pass only (Algorithm 5)")
    if not isinstance(enforce_sensitivity, bool):
        raise TypeError("Expected enforce_sensitivity to be a bool")
    if a > phi / big_l * (1 + 1e-12):
        raise ValueError(
            f"Expected alpha={a:g} <= initial_gap/lipschitz={phi / big_l:g} "
            "(the radius condition of Theorems 3.1/4.1)"
        )
    for name, val in (("c_d", c_d), ("c_sigma", c_sigma), ("c_m", c_m)):
        validation.positive(name, val)
    validation.positive("c_g", c_g)
    validation.positive("c_t", c_t)
    num_iters = _opt_int("num_iters", num_iters)
    period = _opt_int("period", period)
    window = _opt_int("window", window)
    num_directions = _opt_int("num_directions", num_directions)
    clip_radius = _opt_pos("clip_radius", clip_radius)
    step_size = _opt_pos("step_size", step_size)
    if concentration_radius is not None:
        if not enforce_sensitivity:
            raise ValueError(
                "concentration_radius can only be set with enforce_sensitivity=True "
                "(Mode A's privacy needs the derived radius)"
            )
        concentration_radius = validation.nonnegative(
            "concentration_radius", concentration_radius
        )
    sd = math.sqrt(d)

    if passes == "single":
        if beta is not None:
            raise ValueError("beta is a multi-pass input; single pass sets it by n")

        def d_of(t_: int) -> float:
            if clip_radius is not None:
                return clip_radius
            if preset == "corrected":
                cand = (
                    (phi**2 * a / (big_l**2 * sd * t_**2)) ** (1 / 3),
                    (phi * a * eps / (d * big_l * t_)) ** 0.5,
                )
            else:
                cand = (
                    (phi**2 * a / (big_l**2 * t_**2)) ** (1 / 3),
                    (phi * a * eps / (d * big_l * t_)) ** 0.5,
                    (phi**3 * a**2 * eps / (d**1.5 * big_l**3 * t_**3)) ** 0.2,
                )
            return c_d * min(cand)

        def sigma_of(dd: float) -> int:
            if period is not None:
                return period
            raw = (
                a / (dd * sd) if preset == "corrected" else (a / (eps * dd)) ** (2 / 3)
            )
            return max(1, min(n, int(round(c_sigma * raw))))

        t_cur = max(1, n // 2)
        for _ in range(4):
            big_d = d_of(t_cur)
            sig = sigma_of(big_d)
            t_new = sample_budget_iters(n, sig, sig, 1)
            if t_new == t_cur:
                break
            t_cur = max(1, t_new)
        big_d = d_of(t_cur)
        sig = sigma_of(big_d)
        b1, b2 = sig, 1
        t_max = sample_budget_iters(n, sig, b1, b2)
        if t_max < 1:
            raise ValueError(
                f"n={n} samples cannot fill one anchor batch of {b1}; lower the period"
            )
        big_t = t_max if num_iters is None else num_iters
        if big_t > t_max:
            raise ValueError(
                f"num_iters={big_t} needs more samples than n={n} (at most {t_max} "
                f"single-pass steps with period {sig})"
            )
        beta_v = None
    else:
        if beta is None:
            beta_v = (big_l * d**0.75 * math.sqrt(phi) / (n * eps * math.sqrt(a))) ** (
                2 / 3
            )
            beta_v = min(beta_v, big_l)
        else:
            beta_v = validation.positive("beta", beta)
        if clip_radius is not None:
            big_d = clip_radius
        elif preset == "corrected":
            big_d = c_d * a * beta_v**2 / big_l**2
        else:
            big_d = c_d * a**2 * beta_v**2 / big_l**2
        if num_iters is not None:
            big_t = num_iters
        elif preset == "corrected":
            big_t = max(1, math.ceil(c_t * phi * big_l**2 / (a * beta_v**3)))
        else:
            big_t = max(1, math.ceil(c_t * phi * big_l**2 / (a**2 * beta_v**3)))
        sig = period or max(1, int(round(c_sigma * a / (big_d * sd))))
        b1 = b2 = n

    h = _height(sig)
    n_a = math.ceil(big_t / sig)
    n_d = big_t - n_a
    if window is not None:
        big_m = min(window, big_t)
    else:
        big_m = max(1, min(big_t, int(math.floor(a / (4.0 * big_d)))))
    eta = step_size or big_d / (c_g * big_l * math.sqrt(big_m))

    # Number of per-sample estimates that can exceed their bound (Mode A union bound).
    if passes == "single":
        anchor_est = 0 if estimator == "first_order" else n_a * b1
        n_est = anchor_est + 2 * n_d * b2
    else:
        n_est = n * (n_a + 2 * n_d)
    # log of the failure budget (log space: e^eps overflows for huge eps).
    log_tau = math.log(dlt / 2.0) - eps - math.log1p(math.exp(-eps))
    if enforce_sensitivity:
        delta_g, tau = dlt, 0.0
        log_budget = math.log(dlt / 2.0)  # only tunes the clip thresholds
    else:
        delta_g, tau = dlt / 2.0, math.exp(log_tau)
        log_budget = log_tau
    log_gamma = log_budget - math.log(max(1, n_est))
    gamma = math.exp(log_gamma)
    log_g = math.log(2.0) - log_gamma
    log_m = max(1.0, math.log(d * max(b1, b2) / dlt))
    # Sensitivities without estimation error (for the variance-driven m).
    lip_d = big_l * sd / a  # smoothness of f_alpha (explicit constant, Fact 2.3)

    if num_directions is not None:
        m = num_directions
    else:
        if passes == "single":
            if estimator == "zero_order":
                m_th = c_m * (d**2 * b1**2 + d * a**2 * b2**2 / big_d**2) * log_m
            else:
                m_th = c_m * (b2**2 * a**2 / (big_d**2 * d)) * log_m
        else:
            rho = _rho_star(eps, delta_g)
            s1 = 2.0 * big_l / n
            s2 = 2.0 * min(2.0 * big_d * lip_d, 2.0 * big_l) / n
            sig1 = s1 * math.sqrt(n_a / (rho / 2.0 if n_d else rho))
            sig2 = s2 * math.sqrt(max(n_d, 1) / (rho / 2.0))
            m_th = c_m * (
                big_l**2 * d * sig / (n * sig1**2)
                + (big_l**2 * d / (n * sig2**2) if n_d else 0.0)
            )
        m_pr = 0.0
        if not enforce_sensitivity:
            if estimator == "zero_order":
                m_pr = 2.0 * (d + 1) ** 2 * log_g
                if n_d:
                    m_pr = max(m_pr, m_pr * a**2 / (d * big_d**2))
            elif n_d:
                m_pr = 8.0 * log_g * a**2 / (d * big_d**2)
        m = max(1, math.ceil(max(m_th, m_pr)))

    if estimator == "zero_order":
        e = big_l * (d + 1) * math.sqrt(2.0 * log_g / m)
        if concentration_radius is not None:
            e = concentration_radius
        c_a = big_l + e
        c_dmax = min(2.0 * big_d * lip_d + 2.0 * e, 2.0 * c_a)
    else:
        e = 2.0 * big_l * math.sqrt(2.0 * log_g / m)
        if concentration_radius is not None:
            e = concentration_radius
        c_a = big_l
        c_dmax = min(2.0 * big_d * lip_d + 2.0 * e, 2.0 * big_l)
    s_a = 2.0 * c_a / b1
    s_d = 2.0 * c_dmax / b2
    samples = n_a * b1 + n_d * b2 if passes == "single" else n
    return {
        "passes": passes,
        "preset": preset,
        "estimator": estimator,
        "enforce_sensitivity": enforce_sensitivity,
        "mode": "B (enforced sensitivity)" if enforce_sensitivity else "A (paper)",
        "n": n,
        "dim": d,
        "epsilon": eps,
        "delta": dlt,
        "lipschitz": big_l,
        "initial_gap": phi,
        "alpha": a,
        "certified_radius": 2.0 * a,
        "beta": beta_v,
        "num_iters": int(big_t),
        "clip_radius": float(big_d),
        "period": int(sig),
        "tree_height": int(h),
        "anchor_batch": int(b1),
        "difference_batch": int(b2),
        "window": int(big_m),
        "num_windows": int(big_t // big_m),
        "step_size": float(eta),
        "num_directions": int(m),
        "num_anchors": int(n_a),
        "num_differences": int(n_d),
        "samples_used": int(samples),
        "num_estimates": int(n_est),
        "failure_prob": float(gamma),
        "tv_slack": float(tau),
        "delta_gaussian": float(delta_g),
        "concentration_radius": float(e),
        "anchor_bound": float(c_a),
        "difference_bound_max": float(c_dmax),
        "anchor_sensitivity": float(s_a),
        "difference_sensitivity": float(s_d),
    }


# ------------------------------------------------------------------ the engine
def _clip(v: jax.Array, bound: jax.Array | float) -> jax.Array:
    nrm = jnp.linalg.norm(v)
    return v * jnp.minimum(1.0, bound / jnp.maximum(nrm, 1e-300))


def _zero_nonfinite(v: jax.Array) -> jax.Array:
    """Rows of ``v`` (per-sample estimates) with a non-finite entry set to zero.

    The public rule for NaN/inf during a run (module docstring): such a sample
    contributes nothing, so the mean moves by at most the other samples' bounds.
    """
    finite = jnp.all(jnp.isfinite(v), axis=-1, keepdims=True)
    return jnp.where(finite, v, 0.0)


def _sphere(key: PRNGKey, num: int, d: int) -> jax.Array:
    g = jax.random.normal(key, (num, d))
    return g / jnp.linalg.norm(g, axis=1, keepdims=True)


def _ball(key: PRNGKey, num: int, d: int, radius: float) -> jax.Array:
    k1, k2 = jax.random.split(key)
    u = jax.random.uniform(k2, (num, 1))
    return radius * u ** (1.0 / d) * _sphere(k1, num, d)


def _zo_estimate(
    loss_fn: Any,
    x: jax.Array,
    example: Any,
    key: PRNGKey,
    num: int,
    *,
    alpha: float,
    lipschitz: float | None = None,
) -> jax.Array:
    """Two-point estimate ``(1/m) sum (d/(2 alpha)) (f(x+alpha u)-f(x-alpha u)) u``.

    Directions on the sphere; with ``lipschitz`` the differences are clipped to
    ``[-2 alpha L, 2 alpha L]`` (Mode B).
    """
    d = x.shape[0]
    u = _sphere(key, num, d)
    fp = jax.vmap(lambda v: loss_fn(x + alpha * v, example))(u)
    fm = jax.vmap(lambda v: loss_fn(x - alpha * v, example))(u)
    diff = fp - fm
    if lipschitz is not None:
        diff = jnp.clip(diff, -2.0 * alpha * lipschitz, 2.0 * alpha * lipschitz)
    return (d / (2.0 * alpha)) * jnp.mean(diff[:, None] * u, axis=0)


def _fo_estimate(
    grad_fn: Any,
    x: jax.Array,
    example: Any,
    key: PRNGKey,
    num: int,
    *,
    alpha: float,
    lipschitz: float | None = None,
) -> jax.Array:
    """``(1/m) sum grad f(x + y_j)``, ``y_j ~ U(B_alpha)`` (clipped to norm ``L``)."""
    d = x.shape[0]
    y = _ball(key, num, d, alpha)
    g = jax.vmap(lambda yy: grad_fn(x + yy, example))(y)
    if lipschitz is not None:
        g = jax.vmap(lambda gg: _clip(gg, lipschitz))(g)
    return jnp.mean(g, axis=0)


def _tree_noise(
    period_key: PRNGKey, pos: jax.Array, sigma: Any, *, height: int, dim: int
) -> jax.Array:
    """``TREE(pos)`` of one period: the sum of the node noises of ``NODE(pos)``.

    Node ``(l, j) = [j 2^l + 1, (j+1) 2^l]`` has noise ``sigma N(0, I)`` drawn from
    ``fold_in(fold_in(period_key, l), j)``: drawn once per period (deterministic in
    the period key), fresh across periods. For ``pos`` with bit ``l`` set, the level-l
    node of ``NODE(pos)`` has index ``j = (pos >> l) - 1``.
    """

    def level(lv):
        bit = (pos >> lv) & 1
        j = jnp.maximum((pos >> lv) - 1, 0)
        k = jax.random.fold_in(jax.random.fold_in(period_key, lv), j)
        return bit * jax.random.normal(k, (dim,))

    return sigma * jnp.sum(jax.vmap(level)(jnp.arange(height + 1)), axis=0)


def _make_runner(loss_fn: Any, plan: dict[str, Any], *, enforce: bool) -> Any:
    """Jitted ``(key, data, x0, sigmas) -> (zs, counts)`` for a fixed plan."""
    d = plan["dim"]
    alpha = plan["alpha"]
    big_l = plan["lipschitz"]
    big_t = plan["num_iters"]
    sig = plan["period"]
    h = plan["tree_height"]
    b1, b2 = plan["anchor_batch"], plan["difference_batch"]
    m = plan["num_directions"]
    big_d, eta = plan["clip_radius"], plan["step_size"]
    e, c_a, c_dmax = (
        plan["concentration_radius"],
        plan["anchor_bound"],
        plan["difference_bound_max"],
    )
    lip_d = big_l * math.sqrt(d) / alpha
    single = plan["passes"] == "single"
    zero_order = plan["estimator"] == "zero_order"
    grad_fn = jax.grad(loss_fn)
    clip_l = big_l if enforce else None

    def zo(x, example, key, num):
        return _zo_estimate(
            loss_fn, x, example, key, num, alpha=alpha, lipschitz=clip_l
        )

    def fo(x, example, key, num):
        return _fo_estimate(
            grad_fn, x, example, key, num, alpha=alpha, lipschitz=clip_l
        )

    est = zo if zero_order else fo
    m_anchor = m if zero_order else 1

    def take(data, cursor, size):
        return jax.tree.map(
            lambda arr: jax.lax.dynamic_slice_in_dim(arr, cursor, size), data
        )

    def tree_noise(period_key, pos, sigma):
        return _tree_noise(period_key, pos, sigma, height=h, dim=d)

    def run(key, data, x0, sig_tree, sig1, sig2):
        loop_key, tree_key, out_key = jax.random.split(key, 3)

        def anchor(ops):
            z_t, _z_prev, _g_prev, cursor, k_est, k_noise, pos, t = ops
            size = b1
            batch = take(data, cursor, size) if single else data
            keys = jax.random.split(k_est, size)
            v = jax.vmap(lambda ex, k: est(z_t, ex, k, m_anchor))(batch, keys)
            v = _zero_nonfinite(v)
            norms = jnp.linalg.norm(v, axis=1)
            exceed = jnp.sum(norms > c_a * (1 + 1e-12)).astype(jnp.int32)
            if enforce:
                v = jax.vmap(lambda vv: _clip(vv, c_a))(v)
            g = jnp.mean(v, axis=0)
            if single:
                pkey = jax.random.fold_in(tree_key, (t - 1) // sig)
                noisy = g + tree_noise(pkey, pos, sig_tree)
                return g, noisy, cursor + size, exceed, jnp.int32(size)
            noisy = g + sig1 * jax.random.normal(k_noise, (d,))
            return noisy, noisy, cursor, exceed, jnp.int32(size)

        def difference(ops):
            z_t, z_prev, g_prev, cursor, k_est, k_noise, pos, t = ops
            size = b2
            batch = take(data, cursor, size) if single else data
            keys = jax.random.split(k_est, (size, 2))
            a = jax.vmap(lambda ex, k: est(z_t, ex, k[0], m))(batch, keys)
            b = jax.vmap(lambda ex, k: est(z_prev, ex, k[1], m))(batch, keys)
            diff = _zero_nonfinite(a - b)
            bound = jnp.minimum(lip_d * jnp.linalg.norm(z_t - z_prev) + 2.0 * e, c_dmax)
            norms = jnp.linalg.norm(diff, axis=1)
            exceed = jnp.sum(norms > bound * (1 + 1e-12)).astype(jnp.int32)
            if enforce:
                diff = jax.vmap(lambda vv: _clip(vv, bound))(diff)
            g = g_prev + jnp.mean(diff, axis=0)
            if single:
                pkey = jax.random.fold_in(tree_key, (t - 1) // sig)
                noisy = g + tree_noise(pkey, pos, sig_tree)
                return g, noisy, cursor + size, exceed, jnp.int32(size)
            noisy = g + sig2 * jax.random.normal(k_noise, (d,))
            return noisy, noisy, cursor, exceed, jnp.int32(size)

        def step(carry, t):
            delta_v, x_prev, z_prev, g_prev, cursor, n_exc, n_chk = carry
            k_s, k_est, k_noise = jax.random.split(jax.random.fold_in(loop_key, t), 3)
            s = jax.random.uniform(k_s)
            x_t = x_prev + delta_v
            z_t = x_prev + s * delta_v
            pos = (t - 1) % sig + 1
            ops = (z_t, z_prev, g_prev, cursor, k_est, k_noise, pos, t)
            g_state, g_noisy, cursor, exc, chk = jax.lax.cond(
                pos == 1, anchor, difference, ops
            )
            new_delta = _clip(delta_v - eta * g_noisy, big_d)
            carry = (
                new_delta,
                x_t,
                z_t,
                g_state,
                cursor,
                n_exc + exc,
                n_chk + chk,
            )
            return carry, z_t

        zeros = jnp.zeros(d, dtype=x0.dtype)
        init = (zeros, x0, x0, zeros, jnp.int32(0), jnp.int32(0), jnp.int32(0))
        final, zs = jax.lax.scan(step, init, jnp.arange(1, big_t + 1))
        big_m = plan["window"]
        k_win = big_t // big_m
        windows = zs[: k_win * big_m].reshape(k_win, big_m, d).mean(axis=1)
        idx = jax.random.randint(out_key, (), 0, k_win)
        return windows[idx], idx, windows, zs, final[5], final[6], final[4]

    return jax.jit(run)


# ------------------------------------------------------------------ accounting
def _calibrate(parts_of: Any, epsilon: float, delta: float) -> float:
    """Smallest noise parameter ``c`` (to 1e-4) certified at ``(epsilon, delta)``.

    ``parts_of(c)`` is ``[(noise_multiplier, count), ...]`` with noise multipliers in
    the ecosystem's unit (std over the per-example bound, half the sensitivity under
    replace-one). The search runs on dp_accounting's RDP accountant (fast, an upper
    bound) with the Gaussian at noise over sensitivity ``z / 2`` (its RDP ``a/(2 (z /
    2)^2)``); the returned value is then certified by the :class:`PrivacyGuarantee`
    itself (its tightest route, never looser than RDP). The search starts at
    ``C_SENS`` (the grid of the search before the unit change, in the new unit).
    """
    import dp_accounting
    from dp_accounting import rdp

    def eps_at(c: float) -> float:
        acc = rdp.RdpAccountant()
        for z, k in parts_of(c):
            if k > 0:
                acc.compose(dp_accounting.GaussianDpEvent(z / C_SENS), k)
        return float(acc.get_epsilon(delta))

    hi = C_SENS
    while eps_at(hi) > epsilon:
        hi *= 2.0
    lo = hi / 2.0
    while eps_at(lo) <= epsilon and lo > C_SENS * 1e-12:
        hi, lo = lo, lo / 2.0
    while hi / lo - 1.0 > 1e-4:
        mid = math.sqrt(lo * hi)
        if eps_at(mid) <= epsilon:
            hi = mid
        else:
            lo = mid
    return hi


def _guarantee(plan: dict[str, Any]) -> tuple[dict[str, Any], PrivacyGuarantee]:
    eps, delta_g, tau = plan["epsilon"], plan["delta_gaussian"], plan["tv_slack"]
    if plan["passes"] == "single":
        s = plan["anchor_sensitivity"]
        if plan["num_differences"] > 0:
            s = max(s, plan["difference_sensitivity"])
        reps = plan["tree_height"] + 1
        z = _calibrate(lambda c: [(c, reps)], eps, delta_g)
        g = gaussian_sum_guarantee(z).repeat(reps)
        noise: dict[str, Any] = {
            "tree_noise_multiplier": z,
            "tree_sigma": z * (s / C_SENS),
            "sensitivity": s,
        }
    else:
        n_a, n_d = plan["num_anchors"], plan["num_differences"]

        def parts(c: float) -> list[tuple[float, int]]:
            return [(c * math.sqrt(n_a), n_a), (c * math.sqrt(max(n_d, 1)), n_d)]

        c = _calibrate(parts, eps, delta_g)
        z1, z2 = c * math.sqrt(n_a), c * math.sqrt(max(n_d, 1))
        g = gaussian_sum_guarantee(z1).repeat(n_a)
        if n_d:
            g = g.compose(gaussian_sum_guarantee(z2).repeat(n_d))
        noise = {
            "anchor_noise_multiplier": z1,
            "difference_noise_multiplier": z2 if n_d else None,
            "sigma1": z1 * (plan["anchor_sensitivity"] / C_SENS),
            "sigma2": z2 * (plan["difference_sensitivity"] / C_SENS) if n_d else 0.0,
        }
    if g.epsilon(delta_g) > eps:  # final check on the guarantee that is returned
        raise CalibrationError("calibration failed its final check")  # pragma: no cover
    if tau > 0:
        g = g.with_tv_slack(tau)
    if not plan["enforce_sensitivity"]:  # Mode A: the bounds rest on the declared L
        g = g.assuming(
            f"the declared lipschitz L = {plan['lipschitz']:.6g} bounds every "
            "example's loss (not enforced: enforce_sensitivity=False)"
        )
    return noise, g


# ------------------------------------------------------------------ finders
def _solve(
    name: str,
    rng_key: Any,
    problem: Any,
    epsilon: Any,
    delta: Any,
    x0: Any,
    initial_gap: Any,
    enforce_sensitivity: Any,
    return_iterates: Any,
    **plan_options: Any,
) -> PrivateResult:
    """Validate, plan (:func:`plan_goldstein` with ``plan_options``) and run."""
    key = validation.check_key(rng_key)
    prob = check_problem(problem)
    eps, dlt = validation.check_privacy(epsilon, delta)
    x = prob.spec.check_start(x0)
    big_l = validation.require_constant(
        "lipschitz", prob.lipschitz, needed_for=f"{name} (sensitivity and step sizes)"
    )
    phi, _ = prob.spec.initial_gap(initial_gap, needed_for=name)
    if not isinstance(enforce_sensitivity, bool):
        raise TypeError("Expected enforce_sensitivity to be a bool")
    if not enforce_sensitivity and not isinstance(prob.domain, Unconstrained):
        raise ValueError(
            f"{name} takes unconstrained steps and evaluates the loss outside the "
            "domain: without enforce_sensitivity=True its privacy needs lipschitz on "
            "all of R^d, so declare the Problem on Unconstrained(d)"
        )
    plan = plan_goldstein(
        n=prob.n,
        dim=prob.dim,
        epsilon=eps,
        delta=dlt,
        lipschitz=big_l,
        initial_gap=phi,
        enforce_sensitivity=enforce_sensitivity,
        **plan_options,
    )
    return _finish(key, prob, x, plan, bool(return_iterates))


def _finish(
    key: jax.Array,
    prob: Problem,
    x: jax.Array,
    plan: dict[str, Any],
    return_iterates: bool,
) -> PrivateResult:
    noise, guarantee = _guarantee(plan)
    runner = _make_runner(prob.loss_fn, plan, enforce=plan["enforce_sensitivity"])
    sig_tree = noise.get("tree_sigma", 0.0)
    out = runner(
        key,
        prob.data,
        x,
        float(sig_tree),
        float(noise.get("sigma1", 0.0)),
        float(noise.get("sigma2", 0.0)),
    )
    x_out, idx, windows, zs, n_exc, n_chk, cursor = out
    info: dict[str, Any] = {
        "plan": plan,
        "noise": noise,
        "output_window": int(idx),
        "privacy_mode": plan["mode"],
        NON_PRIVATE_KEY: {
            "bound_exceeded_count": int(n_exc),
            "estimates_checked": int(n_chk),
        },
    }
    if plan["passes"] == "single":
        info["samples_used"] = int(cursor)
    if return_iterates:
        info["window_means"] = windows
        info["iterates"] = zs
    return PrivateResult(x_out, guarantee, info)


def goldstein_zero_order(
    rng_key: PRNGKey,
    problem: Problem,
    *,
    epsilon: float,
    delta: float,
    x0: ArrayLike,
    alpha: float,
    passes: str = "single",
    preset: str = "corrected",
    enforce_sensitivity: bool = False,
    initial_gap: float | None = None,
    beta: float | None = None,
    num_iters: int | None = None,
    clip_radius: float | None = None,
    period: int | None = None,
    window: int | None = None,
    num_directions: int | None = None,
    step_size: float | None = None,
    concentration_radius: float | None = None,
    c_d: float = 1.0,
    c_sigma: float = 1.0,
    c_m: float = 1.0,
    c_g: float = 1.0,
    c_t: float = 1.0,
    return_iterates: bool = False,
) -> PrivateResult:
    r"""Private zero-order Goldstein-stationary point (seed 004 Alg. 2 + Alg. 3 or 4).

    O2NC with the two-point zero-order oracle: single pass with the tree mechanism
    (Theorem 3.1, corrected preset by default) or multi-pass ERM with composed
    Gaussian mechanisms (Theorem 4.1, corrected). See the module docstring for the
    algorithm, the corrections and the parameters.

    .. math::
        E\,\|\bar\partial_{2\alpha}F(x_{out})\| \le \beta \quad
        \text{(in expectation, theorem parameters)}.

    Args:
        rng_key: PRNG key (directions, step points, noise, output window).
        problem: Declares ``lipschitz`` ``L`` (required) and ``loss_range`` (the
            default initial gap). ``Unconstrained`` domain unless
            ``enforce_sensitivity``.
        epsilon: Target epsilon.
        delta: Target delta in ``(0, 1)``.
        x0: Public starting point in the problem's domain.
        alpha: Smoothing radius; the certified Goldstein radius is ``2 alpha``.
        passes: ``"single"`` (stochastic, tree mechanism) or ``"multi"`` (ERM).
        preset: ``"corrected"`` (default) or ``"paper"`` (printed theorem).
        enforce_sensitivity: Clip to enforce the sensitivity (Mode B, spec §3.5).
        initial_gap: Public ``Phi >= F(x0) - inf F`` (default ``loss_range``).
        beta: Multi-pass target (default: the Theorem 4.1 rate at ``n``).
        num_iters: Override ``T``.
        clip_radius: Override ``D``.
        period: Override ``Sigma``.
        window: Override ``M``.
        num_directions: Override ``m``.
        step_size: Override ``eta``.
        concentration_radius: Mode B only: the ``e`` of the clip bounds.
        c_d: O(.) multiplier of ``D``.
        c_sigma: O(.) multiplier of ``Sigma``.
        c_m: O(.) multiplier of ``m``.
        c_g: ``G1 = c_g L``.
        c_t: O(.) multiplier of ``T`` (multi pass).
        return_iterates: Put the window means and ``z`` iterates in ``info``.

    Returns:
        ``PrivateResult(x_out, guarantee, info)``; ``info["plan"]`` has every public
        parameter, ``info["noise"]`` the calibrated noise, and
        ``info[NON_PRIVATE_KEY]`` (``"non_private_diagnostics"``) counts estimates
        beyond their bound (reads the data: **not private**).

    Raises:
        TypeError: bad key, problem or flag types.
        ValueError: bad privacy target, shapes, parameters, ``alpha > Phi/L``, a
            bounded domain without enforcement, or ``x0`` outside the domain
            (before any private computation; nothing raises during the run).
        MissingConstantError: ``lipschitz`` (or an initial gap) not declared.

    Privacy:
        Replace-one. Sensitivity ``2 C/B`` with the bounds of the module docstring.
        Single pass: ``gaussian(sigma/s)`` composed ``H + 1`` times (tree mechanism);
        multi pass: ``ceil(T/Sigma)`` anchor and ``T - ceil(T/Sigma)`` difference
        Gaussians composed. Mode A adds the TV slack ``tau = delta/(2(1+e^eps))`` of
        the high-probability sensitivity event; in total ``(epsilon, delta)``-DP.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> import dpsample
        >>> from dpsample.finders.goldstein import goldstein_zero_order
        >>> data = {"a": jnp.ones((400, 1))}
        >>> prob = dpsample.Problem(lambda x, z: jnp.abs(x[0] - z["a"][0]) + 0.5
        ...     * jnp.abs(x[1]), data, dpsample.domains.Unconstrained(2),
        ...     lipschitz=1.2, loss_range=4.0)
        >>> res = goldstein_zero_order(jax.random.key(0), prob, epsilon=2.0,
        ...     delta=1e-5, x0=jnp.zeros(2), alpha=0.2, num_directions=8,
        ...     enforce_sensitivity=True)
        >>> res.privacy.epsilon(1e-5) <= 2.0, res.value.shape
        (True, (2,))

    References:
        Kornowski, Liu, Talwar, ICML 2025 (seed 004), Theorems 3.1 and 4.1.
    """
    return _solve(
        "goldstein_zero_order",
        rng_key,
        problem,
        epsilon,
        delta,
        x0,
        initial_gap,
        enforce_sensitivity,
        return_iterates,
        alpha=alpha,
        passes=passes,
        preset=preset,
        estimator="zero_order",
        beta=beta,
        num_iters=num_iters,
        clip_radius=clip_radius,
        period=period,
        window=window,
        num_directions=num_directions,
        step_size=step_size,
        concentration_radius=concentration_radius,
        c_d=c_d,
        c_sigma=c_sigma,
        c_m=c_m,
        c_g=c_g,
        c_t=c_t,
    )


def goldstein_first_order(
    rng_key: PRNGKey,
    problem: Problem,
    *,
    epsilon: float,
    delta: float,
    x0: ArrayLike,
    alpha: float,
    preset: str = "corrected",
    enforce_sensitivity: bool = False,
    initial_gap: float | None = None,
    num_iters: int | None = None,
    clip_radius: float | None = None,
    period: int | None = None,
    window: int | None = None,
    num_directions: int | None = None,
    step_size: float | None = None,
    concentration_radius: float | None = None,
    c_d: float = 1.0,
    c_sigma: float = 1.0,
    c_m: float = 1.0,
    c_g: float = 1.0,
    return_iterates: bool = False,
) -> PrivateResult:
    r"""Private first-order single-pass Goldstein finder (seed 004 Alg. 2 + Alg. 5).

    As :func:`goldstein_zero_order` with ``passes="single"``, with the first-order
    oracle: anchors ``(1/B1) sum_i grad f(z_t + y_i; xi_i)`` with one ball
    perturbation per sample, differences ``a(xi) - b(xi)`` with ``m`` ball
    perturbations at each point (Eq. (17)'s sphere is a typo; ball as in Alg. 5).
    Theorem C.4's parameters with the same correction as Theorem 3.1 and
    ``m = c_m alpha^2/(D^2 d) log(d/delta)`` (at least 1).

    Args:
        rng_key: PRNG key.
        problem: Declares ``lipschitz`` (required); differentiable loss.
        epsilon: Target epsilon.
        delta: Target delta in ``(0, 1)``.
        x0: Public starting point in the problem's domain.
        alpha: Smoothing radius (certified radius ``2 alpha``).
        preset: ``"corrected"`` (default) or ``"paper"``.
        enforce_sensitivity: Clip gradients to ``L`` and differences to ``C_D(t)``.
        initial_gap: Public ``Phi`` (default ``loss_range``).
        num_iters: Override ``T``.
        clip_radius: Override ``D``.
        period: Override ``Sigma``.
        window: Override ``M``.
        num_directions: Override ``m``.
        step_size: Override ``eta``.
        concentration_radius: Mode B only: the ``e`` of the clip bounds.
        c_d: O(.) multiplier of ``D``.
        c_sigma: O(.) multiplier of ``Sigma``.
        c_m: O(.) multiplier of ``m``.
        c_g: ``G1 = c_g L``.
        return_iterates: Put the window means and iterates in ``info``.

    Returns:
        ``PrivateResult(x_out, guarantee, info)`` as :func:`goldstein_zero_order`.

    Raises:
        TypeError: bad key, problem or flag types.
        ValueError: bad privacy target, shapes or parameters, a bounded domain
            without enforcement, or ``x0`` outside the domain (before any private
            computation; nothing raises during the run).
        MissingConstantError: ``lipschitz`` (or an initial gap) not declared.

    Privacy:
        Replace-one; tree mechanism, ``gaussian(sigma/s)`` composed ``H + 1`` times,
        ``s = max(2L/B1, 2 C_D_max/B2)``. Anchors are bounded deterministically (no
        failure event); Mode A adds the TV slack of the difference estimates.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> import dpsample
        >>> from dpsample.finders.goldstein import goldstein_first_order
        >>> data = {"a": jnp.ones((400, 1))}
        >>> prob = dpsample.Problem(lambda x, z: jnp.abs(x[0] - z["a"][0]), data,
        ...     dpsample.domains.Unconstrained(2), lipschitz=1.0, loss_range=4.0)
        >>> res = goldstein_first_order(jax.random.key(1), prob, epsilon=2.0,
        ...     delta=1e-5, x0=jnp.zeros(2), alpha=0.2, num_directions=8)
        >>> res.privacy.epsilon(1e-5) <= 2.0
        True

    References:
        Kornowski, Liu, Talwar, ICML 2025 (seed 004), Appendix C, Theorem C.4.
    """
    return _solve(
        "goldstein_first_order",
        rng_key,
        problem,
        epsilon,
        delta,
        x0,
        initial_gap,
        enforce_sensitivity,
        return_iterates,
        alpha=alpha,
        passes="single",
        preset=preset,
        estimator="first_order",
        num_iters=num_iters,
        clip_radius=clip_radius,
        period=period,
        window=window,
        num_directions=num_directions,
        step_size=step_size,
        concentration_radius=concentration_radius,
        c_d=c_d,
        c_sigma=c_sigma,
        c_m=c_m,
        c_g=c_g,
    )


precision.scope_public(globals())
