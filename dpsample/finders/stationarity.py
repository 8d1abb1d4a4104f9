r"""Stationarity measurements: gradient norm, smallest Hessian eigenvalue, SOSP tests.

**These are non-private diagnostics on the data they are given.** Evaluated on a
:class:`~dpsample.problem.Problem` holding private data, their outputs are *not*
differentially private (use them on public evaluation data, or label them as
non-private, or pay for them, e.g. with AboveThreshold in
:func:`dpsample.mechanisms.above_threshold_sosp`).

Definitions (seed 000 Def. 1.2): ``x`` is an :math:`\alpha`-second-order stationary
point (SOSP) of a :math:`\rho`-Hessian-Lipschitz ``F`` if

.. math::
    \|\nabla F(x)\| \le \alpha \quad\text{and}\quad
    \lambda_{\min}(\nabla^2 F(x)) \ge -\sqrt{\rho\,\alpha}.

Seed 002 (Def. 2.4) uses strict inequalities; ``strict=True`` selects them. The
violation score of spec 000 §1.3,

.. math::
    \hat\alpha(x) = \max\Big\{\|\nabla F(x)\|,\;
    \frac{\max(0, -\lambda_{\min}(\nabla^2 F(x)))^2}{\rho}\Big\},

satisfies: ``x`` is an :math:`\alpha`-SOSP iff :math:`\hat\alpha(x) \le \alpha`.

The smallest eigenvalue uses an exact dense ``eigh`` for small ``d`` and Lanczos on
Hessian-vector products (forward-over-reverse, never forming the Hessian) with full
reorthogonalisation otherwise.

References:
    Nesterov, Polyak, *Cubic regularization of Newton method and its global
    performance*, Math. Program. 2006.
    Lanczos, *An iteration method for the solution of the eigenvalue problem of linear
    differential and integral operators*, 1950; Golub, Van Loan, *Matrix
    Computations*, 4th ed., §10.1.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from dpsample._src import precision, validation
from dpsample._src.risk import risk_hvp
from dpsample.problem import Problem, check_problem
from dpsample.types import Array, ArrayLike, PRNGKey

__all__ = [
    "EIGH_MAX_DIM",
    "StationarityReport",
    "gradient_norm",
    "min_hessian_eigenvalue",
    "is_sosp",
    "sosp_score",
    "stationarity_report",
]

#: ``method="auto"`` uses the dense ``eigh`` up to this dimension, Lanczos above.
EIGH_MAX_DIM = 256


class StationarityReport(NamedTuple):
    """Non-private stationarity measurements at one point.

    Attributes:
        gradient_norm: ``||grad F(x)||``.
        min_eigenvalue: ``lambda_min(hess F(x))``.
        alpha: The tolerance tested.
        eigen_threshold: ``-sqrt(rho alpha)``.
        score: The violation score ``alpha_hat(x)``.
        is_sosp: Whether ``x`` is an ``alpha``-SOSP.
    """

    gradient_norm: float
    min_eigenvalue: float
    alpha: float
    eigen_threshold: float
    score: float
    is_sosp: bool


def gradient_norm(problem: Problem, x: ArrayLike) -> float:
    """``||grad F_D(x)||`` on the problem's data (non-private diagnostic).

    Examples:
        >>> import jax.numpy as jnp, dpsample
        >>> def loss(x, z):  # x1^2 - x2^2 + x2^4/4 + <z, x>
        ...     return x[0] ** 2 - x[1] ** 2 + x[1] ** 4 / 4 + x @ z["z"]
        >>> prob = dpsample.Problem(loss, {"z": jnp.zeros((4, 2))},
        ...     dpsample.Ball(2.0, dim=2), hessian_lipschitz=12.0)
        >>> round(gradient_norm(prob, jnp.zeros(2)), 12)
        0.0
    """
    check_problem(problem)
    x = problem.spec.check_point(x, "x")
    return float(jnp.linalg.norm(problem.gradient(x)))


def _start_vector(d: int, rng_key: PRNGKey | None) -> np.ndarray:
    if rng_key is not None:
        v = np.asarray(jax.random.normal(rng_key, (d,), jnp.float64))
    else:  # deterministic, generic (no coordinate symmetry) start
        i = np.arange(1, d + 1, dtype=np.float64)
        v = np.cos(i * (1.0 + math.sqrt(5.0)) * 1.2345) + 0.5 * np.sin(i * math.e)
    return v / np.linalg.norm(v)


def _lanczos_min(
    hvp, d: int, num_iters: int, tol: float, rng_key: PRNGKey | None
) -> float:
    """Smallest Ritz value of Lanczos with full reorthogonalisation (host loop)."""
    m = min(num_iters, d)
    basis = np.zeros((m, d))
    alphas: list[float] = []
    betas: list[float] = []
    v = _start_vector(d, rng_key)
    rng = np.random.default_rng(12345)
    theta = math.inf
    for j in range(m):
        basis[j] = v
        w = np.asarray(hvp(jnp.asarray(v)))
        a = float(v @ w)
        alphas.append(a)
        w = w - basis[: j + 1].T @ (basis[: j + 1] @ w)  # full reorthogonalisation
        w = w - basis[: j + 1].T @ (basis[: j + 1] @ w)  # twice is enough
        b = float(np.linalg.norm(w))
        tri = np.diag(alphas) + np.diag(betas, 1) + np.diag(betas, -1)
        evals, evecs = np.linalg.eigh(tri)
        theta = float(evals[0])
        residual = abs(b * evecs[-1, 0])
        scale = max(1.0, abs(theta), abs(float(evals[-1])))
        if j + 1 == m or residual <= tol * scale:
            break
        if b <= 1e-12 * scale:
            # Invariant subspace found: restart with a random orthogonal vector (an
            # exact zero off-diagonal keeps the Ritz values of each block exact).
            w = rng.standard_normal(d)
            w = w - basis[: j + 1].T @ (basis[: j + 1] @ w)
            w = w - basis[: j + 1].T @ (basis[: j + 1] @ w)
            betas.append(0.0)
            v = w / np.linalg.norm(w)
        else:
            betas.append(b)
            v = w / b
    return theta


def min_hessian_eigenvalue(
    problem: Problem,
    x: ArrayLike,
    *,
    method: str = "auto",
    num_iters: int | None = None,
    tol: float = 1e-10,
    rng_key: PRNGKey | None = None,
) -> float:
    r"""Smallest eigenvalue of the empirical-risk Hessian at ``x`` (non-private).

    ``"eigh"`` forms the dense Hessian (``d x d``) and calls ``eigvalsh``. ``"lanczos"``
    runs Lanczos on Hessian-vector products :math:`v \mapsto \nabla^2 F_D(x) v` with
    full reorthogonalisation, stopping when the smallest Ritz pair's residual
    :math:`|\beta_j s_j|` is below ``tol`` (relative) or after ``num_iters`` steps
    (default ``min(d, 200)``); with ``num_iters >= d`` the result is exact up to
    round-off. ``"auto"`` picks ``eigh`` for ``d <= EIGH_MAX_DIM``.

    Args:
        problem: The problem (its data are read: not private).
        x: Point, shape ``(d,)``.
        method: ``"auto"``, ``"eigh"`` or ``"lanczos"``.
        num_iters: Lanczos iterations cap.
        tol: Lanczos relative residual tolerance.
        rng_key: Optional key for Lanczos' start vector (default: a fixed generic
            vector; this diagnostic is not a private computation).

    Returns:
        ``lambda_min`` (a Python float).

    Examples:
        >>> import jax.numpy as jnp, dpsample
        >>> def loss(x, z):  # x1^2 - x2^2 + x2^4/4 + <z, x>
        ...     return x[0] ** 2 - x[1] ** 2 + x[1] ** 4 / 4 + x @ z["z"]
        >>> prob = dpsample.Problem(loss, {"z": jnp.zeros((4, 2))},
        ...     dpsample.Ball(2.0, dim=2), hessian_lipschitz=12.0)
        >>> round(min_hessian_eigenvalue(prob, jnp.zeros(2), method="eigh"), 8)
        -2.0
        >>> round(min_hessian_eigenvalue(prob, jnp.zeros(2), method="lanczos"), 8)
        -2.0
    """
    check_problem(problem)
    x = problem.spec.check_point(x, "x")
    if method not in ("auto", "eigh", "lanczos"):
        raise ValueError(
            f"Expected method in ('auto', 'eigh', 'lanczos'), got {method!r}"
        )
    d = problem.dim
    if method == "auto":
        method = "eigh" if d <= EIGH_MAX_DIM else "lanczos"
    if method == "eigh":
        return float(_smallest_eigenvalue(problem.hessian(x)))
    iters = (
        min(d, 200)
        if num_iters is None
        else validation.positive_int("num_iters", num_iters)
    )
    tol = validation.positive("tol", tol)
    loss_fn, data = problem.loss_fn, problem.data
    product: Callable[[Array], Array]
    try:
        hash(loss_fn)
    except TypeError:  # an unhashable loss cannot key the cache: compiled per call
        product = jax.jit(lambda v: problem.hvp(x, v))
    else:  # compiled once per loss function and shape
        product = functools.partial(risk_hvp, loss_fn, x, data=data)
    return _lanczos_min(product, d, iters, tol, rng_key)


@jax.jit
def _smallest_eigenvalue(h: Array) -> Array:
    """``lambda_min`` of the symmetrised ``h`` (jitted: compiled once per shape)."""
    return jnp.linalg.eigvalsh(0.5 * (h + h.T))[0]


def _rho(problem: Problem, rho: float | None) -> float:
    if rho is None:
        return validation.require_constant(
            "hessian_lipschitz", problem.hessian_lipschitz, needed_for="the SOSP test"
        )
    return validation.positive("rho", rho)


def stationarity_report(
    problem: Problem,
    x: ArrayLike,
    *,
    alpha: float,
    rho: float | None = None,
    strict: bool = False,
    method: str = "auto",
) -> StationarityReport:
    """Gradient norm, smallest eigenvalue and the SOSP verdict (non-private).

    Args:
        problem: The problem (its data are read: not private).
        x: Point, shape ``(d,)``.
        alpha: Tolerance ``alpha > 0``.
        rho: Hessian-Lipschitz constant (default: the declared
            ``problem.hessian_lipschitz``).
        strict: Use seed 002's strict inequalities.
        method: Eigenvalue method (see :func:`min_hessian_eigenvalue`).

    Returns:
        A :class:`StationarityReport`.

    Examples:
        >>> import jax.numpy as jnp, dpsample
        >>> def loss(x, z):  # x1^2 - x2^2 + x2^4/4 + <z, x>
        ...     return x[0] ** 2 - x[1] ** 2 + x[1] ** 4 / 4 + x @ z["z"]
        >>> prob = dpsample.Problem(loss, {"z": jnp.zeros((4, 2))},
        ...     dpsample.Ball(2.0, dim=2), hessian_lipschitz=12.0)
        >>> stationarity_report(prob, jnp.zeros(2), alpha=0.1).is_sosp  # a saddle
        False
    """
    alpha = validation.positive("alpha", alpha)
    r = _rho(problem, rho)
    g = gradient_norm(problem, x)
    lam = min_hessian_eigenvalue(problem, x, method=method)
    thr = -math.sqrt(r * alpha)
    score = max(g, max(0.0, -lam) ** 2 / r)
    ok = (g < alpha and lam > thr) if strict else (g <= alpha and lam >= thr)
    return StationarityReport(g, lam, alpha, thr, score, bool(ok))


def is_sosp(
    problem: Problem,
    x: ArrayLike,
    *,
    alpha: float,
    rho: float | None = None,
    strict: bool = False,
    method: str = "auto",
) -> bool:
    """Whether ``x`` is an ``alpha``-SOSP of the empirical risk (non-private).

    ``||grad F(x)|| <= alpha`` and ``lambda_min(hess F(x)) >= -sqrt(rho alpha)`` (strict
    inequalities with ``strict=True``).

    Examples:
        >>> import jax.numpy as jnp, dpsample
        >>> def loss(x, z):  # x1^2 - x2^2 + x2^4/4 + <z, x>
        ...     return x[0] ** 2 - x[1] ** 2 + x[1] ** 4 / 4 + x @ z["z"]
        >>> prob = dpsample.Problem(loss, {"z": jnp.zeros((4, 2))},
        ...     dpsample.Ball(2.0, dim=2), hessian_lipschitz=12.0)
        >>> is_sosp(prob, jnp.array([0.0, 2.0 ** 0.5]), alpha=1e-6)  # a minimum
        True
    """
    return stationarity_report(
        problem, x, alpha=alpha, rho=rho, strict=strict, method=method
    ).is_sosp


def sosp_score(
    problem: Problem, x: ArrayLike, *, rho: float | None = None, method: str = "auto"
) -> float:
    """Violation score ``max(||grad F||, max(0, -lambda_min)^2 / rho)`` (non-private).

    ``x`` is an ``alpha``-SOSP iff ``sosp_score(x) <= alpha`` (spec 000 §1.3).

    Examples:
        >>> import jax.numpy as jnp, dpsample
        >>> def loss(x, z):  # x1^2 - x2^2 + x2^4/4 + <z, x>
        ...     return x[0] ** 2 - x[1] ** 2 + x[1] ** 4 / 4 + x @ z["z"]
        >>> prob = dpsample.Problem(loss, {"z": jnp.zeros((4, 2))},
        ...     dpsample.Ball(2.0, dim=2), hessian_lipschitz=12.0)
        >>> sosp_score(prob, jnp.zeros(2))  # lambda_min = -2, rho = 12
        0.3333333333333333
    """
    r = _rho(problem, rho)
    g = gradient_norm(problem, x)
    lam = min_hessian_eigenvalue(problem, x, method=method)
    return float(max(g, max(0.0, -lam) ** 2 / r))


precision.scope_public(globals())
