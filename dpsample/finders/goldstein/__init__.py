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

    Noise is calibrated by the one calibrator
    (:func:`dpsample.privacy.calibration.calibrate`) on dp_accounting's RDP
    accountant (fast) and the returned :class:`PrivacyGuarantee` (tightest of its
    RDP/PLD/zCDP routes) is checked against the target.

Parameters (``goldstein_theorem_parameters``, from public constants only: ``L`` =
declared ``lipschitz``, the public initial gap ``Phi`` = ``initial_gap`` or the declared
``loss_range``, ``alpha``, and ``beta`` multi-pass):

* ``preset="practical"`` (the first-order finder's default since issue 24; single
  pass; **not in the paper**): a single pass reads each example once, so a step's
  released estimate carries noise of norm about ``z C_A sqrt(d)/B`` (``z`` the
  calibrated multiplier); with the theorem's ``B2 = 1`` that is 21-34 ``L`` at
  ``n = 1,000``, ``d = 10``, ``epsilon = 1``, ``eta`` times it is 8-12 ``D``, and
  every step moves the iterate by ``D`` in the noise's direction (a random walk:
  ``||x_out|| = 0.83`` measured, ``D sqrt(T) = 0.88``). The preset takes
  ``Sigma = 1`` (no tree), the smallest batch ``B = ceil(z C_A sqrt(d)/L)`` whose
  noise norm is at most ``L``, ``T = n/B``, ``D = c_D Phi/(L T)`` (``T`` steps of
  ``D`` lower ``F`` by at most ``L T D``), ``M = 1``, ``eta = D/(c_G L)``, and
  releases the mean of the last ``ceil(T/2)`` iterates (post-processing). The
  noise is calibrated for that schedule as for any other; the plan labels each
  value it sets ``preset 'practical' (non-paper)``. Multi pass: the corrected
  schedule. Measured in docs/goldstein.md (``bench_goldstein_defaults.py``).
* ``preset="corrected"`` (the zero-order finder's and the schedule's default, the
  first-order finder's before issue 24, kept bit for bit; single pass; spec
  §2.4.5): ``T`` the largest run the
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
  (differences) (spec §3.4): that is ``sizing="theory"``. Every O(.) constant
  (``c_D, c_Sigma, c_m, c_G, c_T``) defaults to 1 and every parameter can be
  overridden; the accounting always uses what runs. Theory-scale ``m`` is large
  (spec §4.3).
* Mode B (``enforce_sensitivity=True``) is the default under either sizing; Mode A
  is the explicit opt-in ``enforce_sensitivity=False``.
* ``sizing="practical"`` (default; spec §3.4-3.5): the smallest ``m`` that keeps the
  clip bounds near the signal bounds. Zero order: the two estimates of a difference
  sample share their directions (a change to the paper's independent draws), which
  bounds ``||a - b|| <= d L ||z_t - z_{t-1}||/alpha`` for every draw, so only the
  anchors need ``e <= L``: ``m = ceil(2 (d+1)^2 log(2/gamma))`` (hundreds, where the
  theory asks ``~1e5``; docs/goldstein.md has both run times). First order: §3.4's
  difference rule ``e <= L sqrt(d) D/alpha``.

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

Two phases (``docs/architecture.md``): :class:`GoldsteinZeroOrder` and
:class:`GoldsteinFirstOrder` plan in public (the schedule
:func:`goldstein_theorem_parameters`,
the noise and guarantee :func:`goldstein_guarantee`, the cost :func:`evaluations`)
and run one module-level jitted ``lax.scan`` (:func:`o2nc_run`), compiled once per
loss, structure (sizes and flags), data shapes and whether a progress bar is drawn
(:mod:`dpsample.progress`, read on the host at each run; the same result either way);
real-valued parameters are traced.
:func:`goldstein_zero_order` and :func:`goldstein_first_order` are their plain
functions.

Modules: ``options`` (the options, declared once: :mod:`dpsample.options`),
``rates`` (the theorems' rates, the default radius), ``schedule`` (parameters and
work), ``o2nc`` (estimators, tree noise, the jitted core), ``guarantee`` (calibration
and guarantee), ``algorithms`` (the algorithm objects, typed info and plain
functions).

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

from dpsample.finders.goldstein.algorithms import (
    GoldsteinDiagnostics,
    GoldsteinFirstOrder,
    GoldsteinInfo,
    GoldsteinZeroOrder,
    goldstein_first_order,
    goldstein_zero_order,
)
from dpsample.finders.goldstein.guarantee import (
    CALIBRATIONS,
    AnchorDifferenceNoise,
    GoldsteinNoise,
    TreeNoise,
    goldstein_guarantee,
)
from dpsample.finders.goldstein.o2nc import (
    O2NCOutput,
    O2NCScalars,
    O2NCStructure,
    fo_estimate,
    make_runner,
    o2nc_run,
    scalars_of,
    structure_of,
    tree_noise,
    zo_estimate,
)
from dpsample.finders.goldstein.options import (
    ESTIMATORS,
    GOLDSTEIN_PRESETS,
    PASSES,
    GoldsteinFirstOrderOptions,
    GoldsteinOptions,
    GoldsteinZeroOrderOptions,
)
from dpsample.finders.goldstein.rates import default_alpha, rate
from dpsample.finders.goldstein.schedule import (
    GoldsteinSchedule,
    evaluations,
    goldstein_theorem_parameters,
    sample_budget_iters,
    tree_height,
    tree_nodes,
)

__all__ = [
    "AnchorDifferenceNoise",
    "CALIBRATIONS",
    "ESTIMATORS",
    "PASSES",
    "GOLDSTEIN_PRESETS",
    "GoldsteinDiagnostics",
    "GoldsteinFirstOrder",
    "GoldsteinFirstOrderOptions",
    "GoldsteinInfo",
    "GoldsteinNoise",
    "GoldsteinOptions",
    "GoldsteinSchedule",
    "GoldsteinZeroOrder",
    "GoldsteinZeroOrderOptions",
    "O2NCOutput",
    "O2NCScalars",
    "O2NCStructure",
    "default_alpha",
    "evaluations",
    "fo_estimate",
    "goldstein_first_order",
    "goldstein_guarantee",
    "goldstein_zero_order",
    "make_runner",
    "o2nc_run",
    "goldstein_theorem_parameters",
    "rate",
    "sample_budget_iters",
    "scalars_of",
    "structure_of",
    "TreeNoise",
    "tree_height",
    "tree_noise",
    "tree_nodes",
    "zo_estimate",
]
