r"""Differentially private trust-region methods DP-TR and DP-STR (seed 001).

Both methods take fixed-radius trust-region steps on a *noisy* quadratic model,

.. math::

    h_k = \arg\min_{\|h\| \le r}
        \tilde g_k^\top h + \tfrac12 h^\top \tilde H_k h,
    \qquad w_{k+1} = w_k + h_k,

with :math:`\tilde g_k = \nabla L(w_k) + \xi_k` and
:math:`\tilde H_k = \nabla^2 L(w_k) + E_k` (``E_k`` symmetric: upper triangle with the
diagonal i.i.d. :math:`N(0, \sigma_2^2)`, mirrored), solved exactly
(:mod:`dpsample.finders.tr_subproblem`), and stop at the first ``k`` whose multiplier
satisfies :math:`\lambda_k \le \sqrt{\alpha\rho}` (the dual stopping rule),
releasing :math:`w_{k+1}`. DP-TR (:func:`dp_trust_region`) uses the full data and zCDP;
DP-STR (:func:`dp_stochastic_trust_region`) uses independent minibatches for the
gradient and the Hessian and the paper's advanced-composition calibration, with the
corrections listed in spec 001 §7.

**Presets** (:mod:`dpsample.finders.presets`, issue 24). ``preset="theorem"`` is
the above with Theorem 15/18's schedule, the stopping rule and its point (the
defaults before issue 24). ``preset="practical"`` (the default, not in the paper)
keeps the theorems' formulas but caps ``T`` so that the Hessian noise's spectral norm
stays below ``M/2`` (:func:`~dpsample.finders.trust_region.schedule.tr_practical_iters`;
``alpha`` is relaxed until the theorem's ``T`` fits, as under the compute cap), runs
all ``T`` iterations and releases the mean of the last half of the iterates
(post-processing: the same guarantee, calibrated for the ``T`` that runs); DP-STR's
Hessian batch is then its gradient batch. The plan's rows say which preset set what.

The loop runs on the host (the stopping time is a post-processing of released noisy
quantities); each iteration is one jitted call. **Enforced by default**: per-example
gradients are clipped at the declared ``G`` and per-example Hessians' upper triangles
(the released vector) at :math:`\sqrt{k}M`, with the library's rounding margin, so
the sensitivities hold whatever the data
(:func:`~dpsample.finders.trust_region.step.noisy_model`);
``enforce_sensitivity=False`` runs the paper's unclipped algorithms, whose guarantee
is conditional on the declared constants (``privacy.assumptions``). The steps are not
projected and the theorems need the constants on all of :math:`\mathbb{R}^d`, so the
problem must be declared on :class:`~dpsample.domains.Unconstrained` (a
``ValueError`` before any private computation otherwise); every finite ``x0`` then
lies in the domain.

Non-finite values. The data are checked finite by the ``Problem``; nothing raises
during a run. The stopping rule is a comparison ``lambda_k <= threshold`` of a
released value, and a multiplier that is not finite (the loss or its derivatives
returned NaN or inf at an iterate) never satisfies it (public rule): the run goes on to
``T`` iterations and the guarantee is unchanged. Enforced, a per-example gradient
or Hessian with a non-finite entry contributes zero (the clipping path's public
rule); unclipped, such a loss breaks the declared ``G`` and ``M`` the sensitivities
rest on, and the iterates may carry the NaN.
"""

from dpsample.finders.trust_region.algorithms import (
    DPTrustRegion,
    DPTrustRegionInfo,
    dp_trust_region,
)
from dpsample.finders.trust_region.schedule import (
    DEFAULT_ALPHA,
    STR_FAILURE_PROB,
    TRSchedule,
    check_unconstrained,
    str_batch_sizes,
    tr_theorem_parameters,
    zcdp_budget,
)
from dpsample.finders.trust_region.step import symmetric_noise
from dpsample.finders.trust_region.stochastic import (
    STR_CONSTANTS,
    DPStochasticTrustRegion,
    DPStochasticTrustRegionInfo,
    dp_stochastic_trust_region,
)

__all__ = [
    "DEFAULT_ALPHA",
    "STR_CONSTANTS",
    "STR_FAILURE_PROB",
    "DPStochasticTrustRegion",
    "DPStochasticTrustRegionInfo",
    "DPTrustRegion",
    "DPTrustRegionInfo",
    "TRSchedule",
    "check_unconstrained",
    "dp_stochastic_trust_region",
    "dp_trust_region",
    "str_batch_sizes",
    "symmetric_noise",
    "tr_theorem_parameters",
    "zcdp_budget",
]
