r"""Seed 002's Procedure 3′: private selection of an α-SOSP among public iterates.

One :func:`~dpsample.mechanisms.above_threshold` run on a combined sensitivity-1
score of the full-data gradient norm and the smallest Hessian eigenvalue (spec 002
§2.4, "Rigorous implementable version (Procedure 3′)"). It is not
:func:`~dpsample.mechanisms.above_threshold_sosp` (seed 000's Algorithm 2, two noisy
thresholds ANDed, with its own offsets ``16 L Δ/ε``): the mechanism below is the
textbook AboveThreshold on the one score

.. math::

    s(x) = \min\Big(\frac{\tau_g - \|\nabla F_D(x)\|}{s_g},\;
                   \frac{\lambda_{\min}(\nabla^2 F_D(x)) - \tau_h}{s_h}\Big),

whose sensitivity is at most 1 (each argument moves by at most 1 between
neighbours, and so does their minimum), with threshold 0. By default the gradient
and Hessian are the means of the per-example ones clipped at the declared bounds
(:mod:`dpsample._src.clipped_derivatives`), so that bound holds whatever the data.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from dpsample._src import precision, validation
from dpsample._src.clipped_derivatives import (
    clipped_gradient_mean,
    clipped_hessian_mean,
)
from dpsample._src.fixed_eig import min_eigenvalue, min_eigenvalue_error
from dpsample.base import AlgorithmInfo
from dpsample.domains import require_member
from dpsample.mechanisms.above_threshold import above_threshold
from dpsample.privacy import PrivateResult
from dpsample.problem import Problem, check_problem
from dpsample.types import ArrayLike, PRNGKey

__all__ = ["SOSPSelectionInfo", "select_sosp_iterate"]

#: Score given to a candidate whose gradient norm or eigenvalue is not finite
#: (public rule, no data-dependent exception): it fails the test.
_FAILING_SCORE = -1e300


@dataclasses.dataclass(frozen=True)
class SOSPSelectionInfo(AlgorithmInfo):
    """Public facts of one :func:`select_sosp_iterate` run.

    Attributes:
        selected: Index into ``iterates`` of the released point, ``-1`` on FAIL.
        failed: Whether the run returned FAIL (⊥, the value ``None``).
        position: Position of the released point among the candidates (``-1``).
        candidates: The ``k`` candidate indices, drawn uniformly with replacement
            from ``0..T-1`` with the key only (independent of the data).
        num_iterates: ``T``.
        num_candidates: ``k``.
        num_gradient_evaluations: Full-data gradient norms computed (always ``k``).
        num_eigenvalue_evaluations: Full-data ``lambda_min`` computed (always ``k``).
        alpha: The target accuracy α.
        rho: The Hessian-Lipschitz constant ρ (declared).
        gradient_bound: ``C``, the declared per-example gradient bound.
        hessian_bound: ``L_c``, the declared per-example Hessian bound.
        grad_sensitivity: ``s_g = 2C/n`` (replace-one).
        eig_error: ``η``, the public a-priori bound on the error of the
            fixed-work eigenvalue (:func:`dpsample._src.fixed_eig.min_eigenvalue_error`
            at ``d`` and ``L_c``).
        eig_sensitivity: ``s_h = 2L_c/n + 2η`` (replace-one, Weyl, plus the
            eigenvalue error on each side).
        accuracy: ``a = 8 (ln k + ln(2/β)) / ε``, in score units.
        grad_threshold: ``τ_g = α − a s_g``.
        eig_threshold: ``τ_h = −sqrt(ρα) + a s_h + η``.
        threshold_noise_scale: ``2/ε`` (score units).
        query_noise_scale: ``4/ε`` (score units).
        failure_prob: β.
        accept_grad_bound: ``α − 2 a s_g``: a candidate with a smaller gradient
            norm and an eigenvalue above ``accept_eig_bound`` has score ``>= a``.
        accept_eig_bound: ``−sqrt(ρα) + 2 a s_h + 2η``.
        enforce_sensitivity: Whether the per-example gradients and Hessians were
            clipped at ``C`` and ``L_c`` (the default); ``False`` is the opt-out,
            whose guarantee is conditional on the declared constants.
    """

    selected: int
    failed: bool
    position: int
    candidates: tuple[int, ...]
    num_iterates: int
    num_candidates: int
    num_gradient_evaluations: int
    num_eigenvalue_evaluations: int
    alpha: float
    rho: float
    gradient_bound: float
    hessian_bound: float
    grad_sensitivity: float
    eig_error: float
    eig_sensitivity: float
    accuracy: float
    grad_threshold: float
    eig_threshold: float
    threshold_noise_scale: float
    query_noise_scale: float
    failure_prob: float
    accept_grad_bound: float
    accept_eig_bound: float
    enforce_sensitivity: bool = True


def _combined_scores(
    loss_fn: Any,
    data: Any,
    xs: jax.Array,
    tau_g: float,
    tau_h: float,
    s_g: float,
    s_h: float,
    eig_bound: float | jax.Array,
    grad_bound: float | jax.Array,
    enforce: bool = True,
) -> jax.Array:
    """Scores of all candidates: both full-data queries at every one (fixed work).

    With ``enforce`` (static, the default) the gradient is the mean of the
    per-example gradients clipped at ``grad_bound = C`` and the Hessian the mean of
    the per-example Hessians clipped to ``ν <= eig_bound = L_c`` (an operator-norm
    bound, :mod:`dpsample._src.clipped_derivatives`, with the rounding margin);
    without it,
    the gradient and Hessian of the empirical risk (the declared bounds assumed).
    The eigenvalue is :func:`~dpsample._src.fixed_eig.min_eigenvalue` (Householder
    tridiagonalisation and a fixed number of Sturm multisection rounds, scaled by the
    public ``eig_bound = L_c``): no LAPACK solver iterating to convergence on the
    private Hessian, so the work depends on ``d`` and ``k`` only.
    """

    def risk(x: jax.Array) -> jax.Array:
        return jnp.mean(jax.vmap(loss_fn, in_axes=(None, 0))(x, data))

    def one(x: jax.Array) -> jax.Array:
        if enforce:
            g = jnp.linalg.norm(clipped_gradient_mean(loss_fn, x, data, grad_bound))
            h = clipped_hessian_mean(loss_fn, x, data, eig_bound)
        else:
            g = jnp.linalg.norm(jax.grad(risk)(x))
            h = jax.hessian(risk)(x)
        lam = min_eigenvalue(h, eig_bound)
        score = jnp.minimum((tau_g - g) / s_g, (lam - tau_h) / s_h)
        return jnp.where(jnp.isfinite(score), score, _FAILING_SCORE)

    return jax.lax.map(one, xs)


def _unenforced_assumptions(c: float, l_c: float) -> tuple[str, str]:
    """The assumptions of the opted-out selection (public text)."""
    return (
        f"every per-example gradient norm is <= C = {c:g} at every iterate (declared "
        "lipschitz), for every record (not enforced: enforce_sensitivity=False, no "
        "clipping)",
        f"every per-example Hessian has operator norm <= L_c = {l_c:g} at every "
        "iterate (declared smoothness), for every record (not enforced: "
        "enforce_sensitivity=False, no clipping)",
    )


_scores_jit = jax.jit(_combined_scores, static_argnums=(0, 9))


def select_sosp_iterate(
    rng_key: PRNGKey,
    problem: Problem,
    iterates: ArrayLike,
    *,
    alpha: float,
    epsilon: float,
    num_candidates: int,
    failure_prob: float = 0.05,
    enforce_sensitivity: bool = True,
) -> PrivateResult:
    r"""Procedure 3′ (spec 002 §2.4): privately select an α-SOSP among iterates.

    With :math:`C` = ``problem.lipschitz`` (per-example gradient bound on the
    domain), :math:`L_c` = ``problem.smoothness`` (per-example Hessian bound,
    :math:`\|\nabla^2 f(x, z)\| \le L_c` on the domain), :math:`\rho` =
    ``problem.hessian_lipschitz`` and :math:`n` examples:

    .. math::

        s_g = 2C/n,\quad s_h = 2L_c/n + 2\eta,\quad
        a = 8(\ln k + \ln(2/\beta))/\varepsilon,\quad
        \tau_g = \alpha - a s_g,\quad \tau_h = -\sqrt{\rho\alpha} + a s_h + \eta,

    where :math:`\eta = 2L_c(130 d^{5/2} + 32)\,2^{-53}` is the public a-priori error
    bound of the fixed-work eigenvalue (below; :math:`\approx 4.5\times 10^{-8} L_c`
    at ``d = 300``),

    draw ``k`` candidates :math:`j_1..j_k` uniformly (with replacement) from the
    ``T`` public iterates, compute the score :math:`s(x_{j})` (module docstring) of
    **every** candidate, then run ``above_threshold`` (threshold 0, sensitivity 1,
    ``epsilon``) on the ``k`` scores; the first passing candidate is released,
    or ``None`` (FAIL, ⊥) when none passes.

    Which corrections of the paper (seed 002, Sec 3.4) are implemented: the paper
    adds ``Lap(C/(nε))`` to the gradient norm and ``Lap(L/(nε))`` to the eigenvalue
    and runs AboveThreshold on each; two separate threshold tests cannot be ANDed
    inside one AboveThreshold run with its privacy proof, so one run on the combined
    score is used; its sensitivities are the replace-one ones, ``2C/n`` and
    ``2L_c/n`` (the paper's ``C/n``, ``L/n`` would be those of add/remove), plus
    ``2η`` for the eigenvalue's computation error (a correction of ours: the paper
    assumes exact eigenvalues); ``L_c`` bounds each component's Hessian (Weyl),
    which the paper's smoothness of ``f`` alone does not give; the declared ``C``
    and ``L_c`` are enforced by clipping the per-example gradients and Hessians
    (ours: the paper assumes them; ``enforce_sensitivity=False`` restores its
    unclipped queries); and the thresholds are shifted *inwards* by the accuracy
    ``a`` so that, with probability ``>= 1 - β``, a released point is a true α-SOSP
    (non-strict: ``||∇F|| <= α``, ``λ_min >= -sqrt(ρα)``), where the paper's
    tolerances ``α/2`` and ``sqrt(ρα)/2`` (i.e. ``a s_g = α/2``, ``a s_h =
    sqrt(ρα)/2``) certify an SOSP only up to constant factors. The number ``k`` of
    candidates (unstated in the paper) is a public input.

    Fixed work: the ``k`` candidates are drawn from the key alone, and both queries
    are evaluated at all ``k`` of them (one compiled ``lax.map``, dense Hessian and
    a fixed-work eigenvalue) whatever the data and whatever the output; there is no
    early exit. The eigenvalue is **not** LAPACK's ``eigvalsh``, which iterates to
    convergence (its time told two replace-one neighbours apart with accuracy
    1.000 at ``d = 300``, issue 25), nor the Lanczos of
    :func:`dpsample.finders.stationarity.min_hessian_eigenvalue` (it stops on a
    data-dependent residual): it is :func:`dpsample._src.fixed_eig.min_eigenvalue`,
    Householder tridiagonalisation (``d - 2`` reflections) and 13 rounds of
    16-way Sturm multisection, the same operations whatever the Hessian, with the
    proven a-priori error ``|λ̂ − λ_min| <= η`` whenever ``||∇²F_D|| <= L_c``.
    ``η`` is public and accounted above: in the sensitivity (``2η``, the error on
    each neighbour) and in the threshold (``η``, so that a released point is a true
    α-SOSP). Cost: ``k`` times (``n`` per-example gradients, ``n`` per-example
    Hessians, i.e. ``n d`` Hessian-vector products, the count of one full-data
    Hessian, and one fixed-work eigenvalue, ``O(d^3)``); with the default
    ``enforce_sensitivity=True`` also ``O(n d^2)`` for the Hessians' norms and
    clipped sum, in chunks of at most ``2^22`` Hessian entries (32 MiB) at a time
    (:func:`dpsample._src.clipped_derivatives.clipped_hessian_mean`), never
    ``n x d x d`` at once. A non-finite score (possible only without enforcement)
    fails its test (public rule).

    Privacy:
        Replace-one, pure ε-DP **whatever the data** (enforced by default, issue
        25): the score reads the mean of the per-example gradients clipped at
        ``C`` and the mean of the per-example Hessians each scaled by
        ``min(1, L_c / ν(∇²f(x, z_i)))`` with
        ``ν(H) = min(||H||_F, max(||H||_1, ||H||_∞)) >= ||H||_2``
        (:func:`dpsample._src.clipped_derivatives.operator_norm_bound`), both
        with the rounding margin of :func:`dpsample._src.clipping.clip_margin`, so
        that the *computed* means ``ĝ``, ``Ĥ`` satisfy ``||ĝ|| <= C``,
        ``||Ĥ||_2 <= L_c`` and move by at most ``2C/n`` and ``2L_c/n`` (operator
        norm) between replace-one neighbours. Then ``||ĝ||`` moves by at most ``2C/n``,
        the exact ``λ_min(Ĥ)`` by at most ``2L_c/n`` (Weyl), the computed
        eigenvalue is within ``η = η(d, L_c)`` of it on each dataset
        (``||Ĥ||_2 <= L_c`` is what :func:`~dpsample._src.fixed_eig.min_eigenvalue`
        needs, so ``B = L_c`` with no further margin), so it moves by at most
        ``2L_c/n + 2η``; the score has sensitivity ``<= 1`` and AboveThreshold
        (Dwork & Roth 2014, Thm 3.23) is pure ε-DP. The iterates are an input
        (the guarantee holds for every fixed ``iterates``; when they come from a
        private optimiser, the selection composes with its guarantee by basic
        composition, spec 002 §3.6). Returned as ``PrivacyGuarantee.pure(epsilon)``
        with no assumption (unconditional).

        ``enforce_sensitivity=False`` (opt-out, the paper's unclipped queries):
        the score reads the exact gradient and Hessian of the empirical risk, and
        the same argument holds only if, for every record ``z`` and every
        iterate ``x``, ``||∇f(x, z)|| <= C`` and ``||∇²f(x, z)||_2 <= L_c``; the
        guarantee carries these two assumptions, each marked "not enforced:
        enforce_sensitivity=False" (conditional, ``docs/privacy.md``).

    Utility (Dwork & Roth 2014, Thm 3.24), where no clip is active (every
    per-example gradient norm ``<= C/F`` and Hessian ``ν <= L_c/F`` at the
    candidates, ``F - 1 ~ 1e-11``; ``ν`` is the operator norm for diagonal and
    rank-one Hessians and at most ``sqrt(rank)`` times it; otherwise the score is that
    of the clipped means, e.g. a shrunk negative eigenvalue, and the
    α-SOSP statements below are about them): with probability ``>= 1 - β`` every
    one of the ``k`` comparisons is correct up to ``a``: a released point has
    score ``>= -a``, i.e. (with ``λ_min >= λ̂ − η``) is an α-SOSP; a candidate
    with score ``>= a`` (gradient norm ``<= α - 2 a s_g`` and
    ``λ_min >= -sqrt(ρα) + 2 a s_h + 2η``) is not passed over. If at least half
    the iterates have score ``>= a``, all ``k`` candidates miss them with
    probability ``2^{-k}``.

    Args:
        rng_key: A PRNG key (consumed).
        problem: The problem (private data; declared ``lipschitz``, ``smoothness``
            and ``hessian_lipschitz`` required).
        iterates: Public points, shape ``(T, d)``, each in the problem's domain
            (e.g. a private optimiser's released iterates).
        alpha: Target accuracy α > 0.
        epsilon: The selection's budget ε_sel > 0.
        num_candidates: ``k >= 1``.
        failure_prob: β in (0, 1).
        enforce_sensitivity: Clip the per-example gradients at ``C`` and the
            per-example Hessians at ``ν <= L_c`` (default ``True``), so
            the guarantee holds whatever the data. ``False`` is the explicit
            opt-out (unclipped queries, guarantee conditional on the declared
            constants).

    Returns:
        ``PrivateResult(value, privacy, info)``: ``value`` the selected iterate
        (``(d,)`` array) or ``None`` on FAIL; ``privacy`` pure ε (conditional on
        the declared constants only with ``enforce_sensitivity=False``); ``info`` a
        :class:`SOSPSelectionInfo`.

    Raises:
        MissingConstantError: A needed constant is not declared.
        TypeError: ``enforce_sensitivity`` is not a bool.
        ValueError: Invalid parameters, iterates of the wrong shape, not finite or
            outside the domain (all before any private computation).

    Examples:
        >>> import jax, jax.numpy as jnp, dpsample
        >>> from dpsample.mechanisms import select_sosp_iterate
        >>> def loss(x, z):  # saddle at 0, minima at (0, +-sqrt 2)
        ...     return x[0] ** 2 - x[1] ** 2 + x[1] ** 4 / 4 + x @ z["z"]
        >>> prob = dpsample.Problem(loss, {"z": jnp.zeros((10000, 2))},
        ...     dpsample.Ball(2.0, dim=2), lipschitz=6.0, smoothness=10.0,
        ...     hessian_lipschitz=12.0)
        >>> xs = jnp.array([[0.0, 0.0], [0.0, 2.0 ** 0.5]])  # saddle, minimum
        >>> res = select_sosp_iterate(jax.random.key(0), prob, xs, alpha=0.2,
        ...                           epsilon=1.0, num_candidates=10)
        >>> res.info.selected, res.privacy.epsilon(0.0), res.privacy.assumptions
        (1, 1.0, ())

    References:
        Spec 002 §2.4 (Procedure 3′) and §3.6; seed 002, Sec 3.4.
        Dwork & Roth, `The Algorithmic Foundations of Differential Privacy
        <https://doi.org/10.1561/0400000042>`_, 2014, Sec 3.6.
    """
    problem = check_problem(problem)
    rng_key = validation.check_key(rng_key)
    needed = "select_sosp_iterate (Procedure 3')"
    c = validation.require_constant("lipschitz", problem.lipschitz, needed_for=needed)
    l_c = validation.require_constant(
        "smoothness", problem.smoothness, needed_for=needed
    )
    rho = validation.require_constant(
        "hessian_lipschitz", problem.hessian_lipschitz, needed_for=needed
    )
    alpha = validation.positive("alpha", alpha)
    epsilon = validation.positive("epsilon", epsilon)
    k = validation.positive_int("num_candidates", num_candidates)
    beta = validation.delta_in_open_unit(failure_prob, name="failure_prob")
    if not isinstance(enforce_sensitivity, bool):
        raise TypeError(
            f"Expected enforce_sensitivity to be a bool, got {enforce_sensitivity!r}"
        )
    enforce = enforce_sensitivity
    xs = np.asarray(iterates, dtype=np.float64)
    if xs.ndim != 2 or xs.shape[0] == 0 or xs.shape[1] != problem.dim:
        raise ValueError(
            f"Expected iterates of shape (T, {problem.dim}) with T >= 1, got {xs.shape}"
        )
    if not np.all(np.isfinite(xs)):
        raise ValueError("Expected iterates to be finite, found NaN or inf values")
    num_iterates, n = int(xs.shape[0]), int(problem.n)

    eta = min_eigenvalue_error(problem.dim, l_c)
    s_g, s_h = 2.0 * c / n, 2.0 * l_c / n + 2.0 * eta
    a = 8.0 * (math.log(k) + math.log(2.0 / beta)) / epsilon
    tau_g = alpha - a * s_g
    tau_h = -math.sqrt(rho * alpha) + a * s_h + eta

    sample_key, at_key = jax.random.split(rng_key)
    candidates = np.asarray(
        jax.random.randint(sample_key, (k,), 0, num_iterates), dtype=int
    )
    points = jnp.stack(
        [require_member(problem.domain, xs[j], f"iterates[{j}]") for j in candidates]
    )
    # ---- private part: both queries at all k candidates, then one AboveThreshold
    scores = _scores_jit(
        problem.loss_fn, problem.data, points, tau_g, tau_h, s_g, s_h, l_c, c, enforce
    )
    at = above_threshold(
        at_key, scores, threshold=0.0, epsilon=epsilon, sensitivity=1.0
    )
    position = int(at.value)
    failed = position < 0
    selected = -1 if failed else int(candidates[position])
    guarantee = at.privacy
    if not enforce:
        guarantee = guarantee.assuming(*_unenforced_assumptions(c, l_c))
    info = SOSPSelectionInfo(
        selected=selected,
        failed=failed,
        position=position,
        candidates=tuple(int(j) for j in candidates),
        num_iterates=num_iterates,
        num_candidates=k,
        num_gradient_evaluations=k,
        num_eigenvalue_evaluations=k,
        alpha=alpha,
        rho=rho,
        gradient_bound=c,
        hessian_bound=l_c,
        grad_sensitivity=s_g,
        eig_error=eta,
        eig_sensitivity=s_h,
        accuracy=a,
        grad_threshold=tau_g,
        eig_threshold=tau_h,
        threshold_noise_scale=float(at.info["threshold_noise_scale"]),
        query_noise_scale=float(at.info["query_noise_scale"]),
        failure_prob=beta,
        accept_grad_bound=alpha - 2.0 * a * s_g,
        accept_eig_bound=-math.sqrt(rho * alpha) + 2.0 * a * s_h + 2.0 * eta,
        enforce_sensitivity=enforce,
    )
    value = None if failed else jnp.asarray(xs[selected])
    return PrivateResult(value, guarantee, info)


precision.scope_public(globals())
