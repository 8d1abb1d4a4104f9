"""The fixed-work smallest eigenvalue (issue 25): accuracy within its public bound,
fixed work (no LAPACK solver, no data-dependent loop), public rules for bad input."""

from __future__ import annotations

import math

import jax
import jax.extend
import jax.numpy as jnp
import numpy as np
import pytest

from dpsample._src import fixed_eig
from dpsample._src.fixed_eig import min_eigenvalue, min_eigenvalue_error

_MIN_EIG = jax.jit(min_eigenvalue)

#: Primitives that iterate to convergence or call LAPACK.
_SOLVERS = ("eigh", "eig", "svd", "qr", "lu", "cholesky", "triangular_solve", "while")


def _hard_spectra(d: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Matrices that stress tridiagonalisation and bisection."""
    q, _ = np.linalg.qr(rng.normal(size=(d, d)))
    g = rng.normal(size=(d, d))
    u = rng.normal(size=d)
    return [
        (g + g.T) / 2,  # GOE
        np.diag(rng.normal(size=d)),  # already diagonal
        np.zeros((d, d)),
        np.eye(d),  # one eigenvalue of multiplicity d
        np.outer(u, u) - np.eye(d),  # rank one on a multiple of I
        q @ np.diag(np.logspace(-12, 0, d)) @ q.T,  # graded, lambda_min ~ 1e-12
        q @ np.diag(np.r_[-1.0, -1.0 + 1e-13, np.ones(d)][:d]) @ q.T,  # cluster
        np.diag(np.ones(d - 1), 1) + np.diag(np.ones(d - 1), -1),  # tridiagonal
        1e-200 * (g + g.T),  # tiny entries (flushed products)
    ]


#: One compilation per dimension: every matrix and bound of a dimension in one call.
_MIN_EIGS = jax.jit(jax.vmap(min_eigenvalue))


def _check_within_bound(d: int) -> None:
    rng = np.random.default_rng(d)
    mats, bounds = [], []
    for h in _hard_spectra(d, rng):
        norm = float(np.linalg.norm(h, 2)) or 1.0
        for bound in (norm, 3.7 * norm, 2.0 ** np.ceil(np.log2(norm))):
            mats.append(h)
            bounds.append(bound)
    with jax.enable_x64(True):
        lams = np.asarray(_MIN_EIGS(jnp.asarray(np.stack(mats)), jnp.asarray(bounds)))
    for i, (h, bound, lam) in enumerate(zip(mats, bounds, lams, strict=True)):
        ref = float(np.linalg.eigvalsh(h)[0])
        eta = min_eigenvalue_error(d, bound)
        assert abs(lam - ref) <= eta, (i, bound, lam, ref, eta)
        # and far inside it: the bound is a worst case; the multisection alone
        # resolves 2^-50 of the scale (the scale is <= 2 * bound)
        assert abs(lam - ref) <= 64 * 2.0**-53 * bound, (i, lam, ref)


def test_within_public_bound_small():
    _check_within_bound(5)


@pytest.mark.slow
@pytest.mark.parametrize("d", [1, 2, 3, 17, 64])
def test_within_public_bound(d):
    _check_within_bound(d)


def test_error_bound_formula_and_checks():
    u = 2.0**-53
    assert min_eigenvalue_error(300, 2.0) == 2 * 2.0 * (130 * 300**2.5 + 32) * u
    assert min_eigenvalue_error(1, 1.0) == 2 * (130 + 32) * u
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="dim"):
            min_eigenvalue_error(bad, 1.0)  # type: ignore[arg-type]
    for bad in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(ValueError, match="bound"):
            min_eigenvalue_error(3, bad)
    with jax.enable_x64(True):
        with pytest.raises(ValueError, match="bound"):
            min_eigenvalue(jnp.eye(2), 0.0)
        with pytest.raises(ValueError, match="square"):
            min_eigenvalue(jnp.ones((2, 3)), 1.0)


def test_non_finite_gives_nan_without_exception():
    with jax.enable_x64(True):
        for bad in (jnp.nan, jnp.inf, 1e300):  # 1e300 overflows inside: nan too
            h = jnp.eye(5).at[1, 2].set(bad).at[2, 1].set(bad)
            assert math.isnan(float(_MIN_EIG(h, 1.0)))


def test_uses_the_symmetric_part():
    with jax.enable_x64(True):
        h = jnp.zeros((5, 5)).at[:2, :2].set(jnp.array([[1.0, 3.0], [-1.0, 1.0]]))
        # symmetric part: [[1, 1], [1, 1]] (eigenvalues 0, 2) and zeros
        # within the multisection's resolution 2^-50 s / 2 (s = 4 here)
        assert float(_MIN_EIG(h, 2.0)) == pytest.approx(0.0, abs=2.0**-49)
        assert float(_MIN_EIG(h - 3.0 * jnp.eye(5), 8.0)) == pytest.approx(-3.0)


def _primitives(jaxpr) -> set[str]:
    names = set()
    for eqn in jaxpr.eqns:
        names.add(eqn.primitive.name)
        for sub in jax.extend.core.jaxprs_in_params(eqn.params):
            names |= _primitives(sub)
    return names


@pytest.mark.parametrize("d", [2, 40])
def test_fixed_work_structure(d):
    """Only fixed-length scans: no LAPACK call, no while loop, no cond."""
    with jax.enable_x64(True):
        closed = jax.make_jaxpr(lambda h: min_eigenvalue(h, 1.0))(jnp.eye(d))
    names = _primitives(closed.jaxpr)
    assert "scan" in names
    assert not names & {*_SOLVERS, "cond", "switch"}, names
    # the multisection runs ROUNDS rounds whatever the data
    scans = [e for e in closed.jaxpr.eqns if e.primitive.name == "scan"]
    assert fixed_eig.ROUNDS in {int(e.params["length"]) for e in scans}
