r"""Exact solver of the trust-region subproblem, hard case included.

The trust-region subproblem (TRS) for a gradient ``g`` and a symmetric matrix ``H``
(not necessarily positive semi-definite) is

.. math::

    \min_{\|s\|_2 \le \Delta} \; m(s) = g^\top s + \tfrac12 s^\top H s .

Its *global* minimisers are characterised (Moré & Sorensen 1983; Conn, Gould & Toint
2000, Cor. 7.2.2; seed 001 Lemma 13) by a multiplier :math:`\lambda \ge 0` with

.. math::

    (H + \lambda I) s = -g, \qquad H + \lambda I \succeq 0, \qquad
    \lambda (\|s\| - \Delta) = 0 .

:func:`solve_tr_subproblem` solves it exactly by one symmetric eigendecomposition
(float64), which suits the small dimensions of DP-TR (the Hessian is formed anyway).
DP-TR and DP-STR need the multiplier :math:`\lambda`, because their stopping rule reads
it; Steihaug-CG or a local optimiser would return neither the global minimiser nor
:math:`\lambda` (spec 001 §7 item 18).

Work done: LAPACK's ``eigh`` iterates to convergence, so its time depends on ``H``.
DP-TR and DP-STR call the solver only on the *noised* gradient and Hessian (the
Gaussian release their guarantee accounts), so that time is post-processing of a DP
release; do not call it on an un-noised private Hessian inside a private run (for a
private smallest eigenvalue use :mod:`dpsample._src.fixed_eig`, fixed work).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from dpsample._src import precision, validation
from dpsample.types import Array, ArrayLike

__all__ = ["TRSubproblemSolution", "solve_tr_subproblem", "solve_tr_unchecked"]

#: Newton iterations on the secular equation. Started left of the root, Newton on the
#: concave increasing function ``1/sqrt(psi(t)) - 1/Delta`` increases monotonically to
#: the root (Moré & Sorensen 1983); the loop has a fixed length so the solver is
#: jittable and its running time does not depend on the data.
NEWTON_ITERATIONS = 80


_ZERO_TOL = 8.0 * float(np.finfo(np.float64).eps)


class TRSubproblemSolution(NamedTuple):
    r"""Global minimiser of the trust-region subproblem and its certificate.

    Attributes:
        step: the minimiser :math:`s`, shape ``(d,)``.
        multiplier: the multiplier :math:`\lambda \ge 0` of the KKT conditions.
        hard_case: True when the solution came from the hard case (the gradient has
            no component on the eigenspace of the smallest eigenvalue, and the step
            was completed along that eigenvector to reach the boundary).
        on_boundary: True when :math:`\lambda > 0` or the hard case applied
            (``||s|| = Delta``).
        model_value: :math:`m(s) = g^\top s + s^\top H s / 2`.
        min_eigenvalue: the smallest eigenvalue of ``H``.
        kkt_residual: :math:`\|(H + \lambda I)s + g\|_2` (a post-check).
    """

    step: Array
    multiplier: Array
    hard_case: Array
    on_boundary: Array
    model_value: Array
    min_eigenvalue: Array
    kkt_residual: Array


def _psi_terms(a2: Array, d: Array, t: Array) -> tuple[Array, Array]:
    """``psi(t) = sum a_i^2/(d_i+t)^2`` and ``psi'(t)``, with ``0/0 := 0``."""
    den = d + t
    safe = jnp.where(a2 > 0, den, 1.0)
    psi = jnp.sum(jnp.where(a2 > 0, a2 / safe**2, 0.0))
    dpsi = -2.0 * jnp.sum(jnp.where(a2 > 0, a2 / safe**3, 0.0))
    return psi, dpsi


def solve_tr_unchecked(g: Array, h: Array, radius: Array) -> TRSubproblemSolution:
    """:func:`solve_tr_subproblem` without the host-side input checks (jittable).

    For callers inside ``jit`` (DP-TR's iterations) whose inputs are finite and
    well-shaped by construction; ``h`` is symmetrised, ``radius > 0``. Not jitted
    itself: jit the caller.

    Examples:
        >>> import jax.numpy as jnp
        >>> from dpsample.finders.tr_subproblem import solve_tr_unchecked
        >>> sol = solve_tr_unchecked(jnp.array([1.0, 0.0]), jnp.eye(2), 10.0)
        >>> [float(v) for v in sol.step], float(sol.multiplier)
        ([-1.0, 0.0], 0.0)
    """
    h = 0.5 * (h + h.T)
    mu, q = jnp.linalg.eigh(h)
    a = q.T @ g
    # Components at the rounding level of Q^T g count as zero, so that the hard case
    # is recognised after a rotation (the model value changes by O(eps ||g|| r)).
    a = jnp.where(jnp.abs(a) <= _ZERO_TOL * g.shape[0] * jnp.linalg.norm(g), 0.0, a)
    a2 = a * a
    mu1 = mu[0]
    # Shift so that the eigenvalues of H + lam_low I are d_i >= 0, and parametrise
    # the multiplier as lam = lam_low + t, t >= 0: t resolves values far below the
    # float spacing of lam itself (the "nearly hard" case).
    lam_low = jnp.maximum(0.0, -mu1)
    d = jnp.maximum(mu + lam_low, 0.0)
    # psi(0) with x/0 := inf (a_i != 0 on a zero eigenvalue) and 0/0 := 0.
    singular = (a2 > 0) & (d <= 0)
    psi0 = jnp.where(
        jnp.any(singular),
        jnp.inf,
        jnp.sum(jnp.where(a2 > 0, a2 / jnp.where(d > 0, d, 1.0) ** 2, 0.0)),
    )
    r2 = radius * radius
    fits = psi0 <= r2
    interior = fits & (mu1 > 0)
    hard = fits & (mu1 <= 0)

    # Secular equation psi(t) = r^2 for t > 0 (when psi(0) > r^2). Start left of the
    # root: psi(t) >= a_j^2/(d_j+t)^2 > r^2 for t < |a_j|/r - d_j.
    t_lo = jnp.maximum(0.0, jnp.max(jnp.sqrt(a2) / radius - d))
    t_hi = jnp.maximum(t_lo, jnp.sqrt(jnp.sum(a2)) / radius - d[0])

    def newton(_, t):
        psi, dpsi = _psi_terms(a2, d, t)
        # phi(t) = psi^{-1/2} - 1/r; phi' = -psi'/(2 psi^{3/2}).
        phi = 1.0 / jnp.sqrt(psi) - 1.0 / radius
        dphi = -0.5 * dpsi / psi**1.5
        step = jnp.where(dphi > 0, phi / dphi, 0.0)
        return jnp.clip(t - step, t_lo, t_hi)

    t_root = lax.fori_loop(0, NEWTON_ITERATIONS, newton, t_lo)
    t = jnp.where(fits, 0.0, t_root)

    den = d + t
    coeff = jnp.where(a2 > 0, -a / jnp.where(den > 0, den, 1.0), 0.0)
    step = q @ coeff
    # Hard case: complete along the eigenvector of the smallest eigenvalue.
    tau = jnp.sqrt(jnp.maximum(r2 - jnp.sum(coeff * coeff), 0.0))
    step = jnp.where(hard, step + tau * q[:, 0], step)
    lam = jnp.where(interior, 0.0, lam_low + t)
    model = g @ step + 0.5 * step @ (h @ step)
    resid = jnp.linalg.norm(h @ step + lam * step + g)
    on_boundary = hard | (~fits) | ((~interior) & (lam > 0))
    return TRSubproblemSolution(step, lam, hard, on_boundary, model, mu1, resid)


_solve = jax.jit(solve_tr_unchecked)


def solve_tr_subproblem(
    gradient: ArrayLike, hessian: ArrayLike, radius: float
) -> TRSubproblemSolution:
    r"""Global minimiser of :math:`g^\top s + s^\top H s/2` over the ball of radius Δ.

    Moré–Sorensen by a full eigendecomposition :math:`H = Q\,\mathrm{diag}(\mu) Q^\top`
    (:math:`\mu_1 \le \dots \le \mu_d`), :math:`a = Q^\top g`,
    :math:`s(\lambda) = -Q\,\mathrm{diag}(1/(\mu + \lambda))\,a`:

    1. if :math:`\mu_1 > 0` and :math:`\|s(0)\| \le \Delta`: the interior Newton step,
       :math:`\lambda = 0`;
    2. otherwise, if :math:`a` vanishes on the eigenspace of :math:`\mu_1 \le 0` and
       the pseudo-inverse step :math:`s(-\mu_1)` (other eigen-directions only) has
       norm :math:`\le \Delta` (the **hard case**): :math:`\lambda = -\mu_1` and
       :math:`s = s(-\mu_1) + \tau q_1` with
       :math:`\tau = +\sqrt{\Delta^2 - \|s(-\mu_1)\|^2}` (either sign is a global
       minimiser; ``+`` is returned);
    3. otherwise the unique :math:`\lambda > \max(0, -\mu_1)` with
       :math:`\psi(\lambda) = \sum_i a_i^2/(\mu_i + \lambda)^2 = \Delta^2`, found by
       Newton on :math:`1/\sqrt{\psi} - 1/\Delta` from a point left of the root
       (monotone convergence), in the shifted variable
       :math:`t = \lambda - \max(0, -\mu_1)` so that nearly-hard cases (tiny
       :math:`a_1`) are resolved to full relative precision.

    ``H`` is symmetrised as :math:`(H + H^\top)/2`. The solver is jitted with a fixed
    number of Newton iterations (:data:`NEWTON_ITERATIONS`), so its running time does
    not depend on the data. A zero gradient at a strict saddle is the hard case and
    returns :math:`\Delta q_1`, a step along the most negative curvature.

    Args:
        gradient: :math:`g`, shape ``(d,)``, finite.
        hessian: :math:`H`, shape ``(d, d)``, finite (symmetrised).
        radius: :math:`\Delta > 0`.

    Returns:
        :class:`TRSubproblemSolution` with the step, the multiplier, the hard-case
        and boundary flags, the model value, :math:`\mu_1` and the KKT residual.

    Raises:
        ValueError: on shape mismatches, non-finite inputs or ``radius <= 0``.

    Examples:
        >>> import jax.numpy as jnp
        >>> from dpsample.finders.tr_subproblem import solve_tr_subproblem
        >>> sol = solve_tr_subproblem(jnp.zeros(2), jnp.diag(jnp.array([1.0, -2.0])),
        ...                           0.5)
        >>> [round(abs(float(v)), 6) for v in sol.step], float(sol.multiplier)
        ([0.0, 0.5], 2.0)
        >>> bool(sol.hard_case)
        True
        >>> sol = solve_tr_subproblem(jnp.array([1.0, 0.0]), jnp.eye(2), 10.0)
        >>> [float(v) for v in sol.step], float(sol.multiplier)
        ([-1.0, 0.0], 0.0)

    References:
        Moré & Sorensen, `Computing a Trust Region Step
        <https://doi.org/10.1137/0904038>`_, 1983.
        Conn, Gould & Toint, `Trust Region Methods
        <https://doi.org/10.1137/1.9780898719857>`_, 2000 (Ch. 7).
        Seed 001 Lemma 13; spec 001 §3.1(c).
    """
    radius = validation.positive("radius", radius)
    g = np.asarray(gradient, dtype=np.float64)
    h = np.asarray(hessian, dtype=np.float64)
    if g.ndim != 1 or g.shape[0] == 0:
        raise ValueError(f"Expected gradient of shape (d,), got {g.shape}")
    if h.shape != (g.shape[0], g.shape[0]):
        raise ValueError(
            f"Expected hessian of shape ({g.shape[0]}, {g.shape[0]}), got {h.shape}"
        )
    validation.finite_tree("gradient", g)
    validation.finite_tree("hessian", h)
    return _solve(jnp.asarray(g), jnp.asarray(h), jnp.asarray(radius))


precision.scope_public(globals())
