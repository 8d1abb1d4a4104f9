"""Lanczos (``min_hessian_eigenvalue(method="lanczos")``) against SciPy's ARPACK.

Issue 15 item 6: the library's own Lanczos is checked against
``scipy.sparse.linalg.eigsh`` on random symmetric operators ``H = Q diag(lam) Q^T``
with chosen spectra, near-degenerate ones included: a random spectrum, a lowest
pair ``1e-9`` apart, a five-fold lowest cluster, a tiny negative ``lambda_min``
next to zero, and a lowest eigenvalue buried under a wide spread. The tolerance is
round-off on the operator's scale (``1e-8 ||H||``), not a fitted number. With fewer
iterations than ``d`` the Rayleigh-Ritz value must stay above ``lambda_min`` (it is
an upper bound whatever the convergence), which is checked too.
"""

import jax.numpy as jnp
import numpy as np
import pytest
from scipy.sparse.linalg import LinearOperator, eigsh

import dpsample
from dpsample.finders import stationarity as st


def _spectrum(kind: str, d: int, rng: np.random.Generator) -> np.ndarray:
    lam = rng.uniform(-1.0, 1.0, d)
    if kind == "random":
        return lam
    lam = np.abs(lam) + 0.1  # all >= 0.1, then plant the low end
    if kind == "pair_1e-9":
        lam[:2] = (-0.5, -0.5 + 1e-9)
    elif kind == "cluster_5":
        lam[:5] = -0.3 + 1e-12 * np.arange(5)
    elif kind == "tiny_negative":
        lam[:2] = (-1e-7, 0.0)
    elif kind == "buried":
        lam[1:] = rng.uniform(-50.0, 50.0, d - 1)
        lam[0] = lam[1:].min() - 1e-3
    return lam


def _problem(lam: np.ndarray, rng: np.random.Generator):
    d = lam.size
    q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    h = (q * lam) @ q.T
    h = 0.5 * (h + h.T)

    def loss(x, z):
        return 0.5 * x @ z["h"] @ x

    problem = dpsample.Problem(loss, {"h": h[None]}, dpsample.Unconstrained(d))
    return problem, h


def _arpack_min(h: np.ndarray) -> float:
    op = LinearOperator(h.shape, matvec=lambda v: h @ v, dtype=np.float64)
    return float(eigsh(op, k=1, which="SA", tol=1e-13, maxiter=100 * h.shape[0])[0][0])


KINDS = ["random", "pair_1e-9", "cluster_5", "tiny_negative", "buried"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("d", [20, pytest.param(150, marks=pytest.mark.slow)])
def test_lanczos_matches_arpack(kind, d):
    rng = np.random.default_rng(1000 * KINDS.index(kind) + d)  # fixed seeds
    lam = _spectrum(kind, d, rng)
    problem, h = _problem(lam, rng)
    scale = float(np.abs(lam).max())
    reference = _arpack_min(h)
    assert reference == pytest.approx(lam.min(), abs=1e-8 * scale)  # ARPACK sane
    x = jnp.zeros(d)
    full = st.min_hessian_eigenvalue(problem, x, method="lanczos", num_iters=d)
    assert full == pytest.approx(reference, abs=1e-8 * scale)
    default = st.min_hessian_eigenvalue(problem, x, method="lanczos")
    assert default == pytest.approx(reference, abs=1e-8 * scale)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["random", "pair_1e-9", "buried"])
def test_lanczos_matches_arpack_above_the_eigh_limit(kind):
    """d = 300 > EIGH_MAX_DIM: ``method="auto"`` takes the Lanczos path."""
    d = 300
    assert d > st.EIGH_MAX_DIM
    rng = np.random.default_rng(7)
    lam = _spectrum(kind, d, rng)
    problem, h = _problem(lam, rng)
    scale = float(np.abs(lam).max())
    auto = st.min_hessian_eigenvalue(problem, jnp.zeros(d))
    assert auto == pytest.approx(_arpack_min(h), abs=1e-8 * scale)


@pytest.mark.parametrize("kind", KINDS)
def test_ritz_value_with_few_iterations_is_an_upper_bound(kind):
    d = 60
    rng = np.random.default_rng(len(kind))
    lam = _spectrum(kind, d, rng)
    problem, _ = _problem(lam, rng)
    scale = float(np.abs(lam).max())
    previous = np.inf
    for iters in (2, 5, 10, 20):
        ritz = st.min_hessian_eigenvalue(
            problem, jnp.zeros(d), method="lanczos", num_iters=iters, tol=1e-14
        )
        assert ritz >= lam.min() - 1e-10 * scale
        # more Krylov directions never raise the smallest Ritz value (interlacing)
        assert ritz <= previous + 1e-10 * scale
        previous = ritz
