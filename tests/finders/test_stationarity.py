"""Stationarity diagnostics: Lanczos vs eigh, SOSP tests."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from saddles import planar_case, quartic_case

import dpsample
from dpsample.finders import stationarity as st


def _random_quadratic(d=30, n=5, seed=0):
    rng = np.random.default_rng(seed)
    mats = rng.standard_normal((n, d, d))
    mats = (mats + mats.transpose(0, 2, 1)) / 2

    def loss(x, z):
        return 0.5 * x @ z["h"] @ x + 0.1 * jnp.sum(jnp.sin(x)) * z["s"]

    return dpsample.Problem(
        loss, {"h": mats, "s": np.ones(n)}, dpsample.Unconstrained(d)
    )


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
def test_lanczos_agrees_with_eigh(seed):
    p = _random_quadratic(seed=seed)
    x = jnp.asarray(np.random.default_rng(seed + 10).standard_normal(30))
    exact = st.min_hessian_eigenvalue(p, x, method="eigh")
    lanczos = st.min_hessian_eigenvalue(p, x, method="lanczos")
    assert lanczos == pytest.approx(exact, abs=1e-8)
    assert exact == pytest.approx(
        float(np.linalg.eigvalsh(np.asarray(p.hessian(x)))[0])
    )


def test_lanczos_handles_invariant_subspaces():
    """A Hessian with repeated eigenvalues (early breakdown) is still exact."""
    case = quartic_case(n=4, dim=12)
    x = jnp.zeros(12)
    assert st.min_hessian_eigenvalue(
        case.problem, x, method="lanczos"
    ) == pytest.approx(-1.0, abs=1e-10)


@pytest.mark.slow
def test_sosp_verdicts_and_score():
    case = planar_case(n=6)
    p = case.problem
    rep = st.stationarity_report(p, case.saddle, alpha=0.01)
    assert not rep.is_sosp and rep.min_eigenvalue == pytest.approx(-2.0)
    assert rep.score == pytest.approx(4.0 / p.hessian_lipschitz)
    assert st.is_sosp(p, case.minima[0], alpha=1e-8)
    # is_sosp <=> score <= alpha, on both sides of the eigenvalue threshold
    alpha_edge = 4.0 / p.hessian_lipschitz  # -2 == -sqrt(rho alpha)
    assert st.is_sosp(p, case.saddle, alpha=alpha_edge * (1 + 1e-9))
    assert not st.is_sosp(p, case.saddle, alpha=alpha_edge * (1 - 1e-9))
    assert st.sosp_score(p, case.saddle) == pytest.approx(alpha_edge)
    # strict (seed 002) vs non-strict (seed 000) at a point with ||grad|| == alpha
    x = jnp.array([0.05, np.sqrt(2.0)])
    g = st.gradient_norm(p, x)
    assert st.is_sosp(p, x, alpha=g) and not st.is_sosp(p, x, alpha=g, strict=True)


def test_bad_inputs():
    case = planar_case(n=6)
    with pytest.raises(ValueError, match="method"):
        st.min_hessian_eigenvalue(case.problem, jnp.zeros(2), method="power")
    with pytest.raises(ValueError, match="shape"):
        st.gradient_norm(case.problem, jnp.zeros(3))
    with pytest.raises(ValueError, match="alpha"):
        st.is_sosp(case.problem, jnp.zeros(2), alpha=0.0)
    bare = dpsample.Problem(
        case.problem.loss_fn, case.problem.data, dpsample.Ball(1.0, dim=2)
    )
    with pytest.raises(dpsample.errors.MissingConstantError):
        st.is_sosp(bare, jnp.zeros(2), alpha=0.1)
    assert st.is_sosp(bare, jnp.zeros(2), alpha=0.1, rho=1.0) is False


class _CountingQuadratic:
    """``_random_quadratic``'s loss, counting its traces (a tracer ``x``)."""

    def __init__(self) -> None:
        self.traces = 0

    def __call__(self, x, z):
        if isinstance(x, jax.core.Tracer):
            self.traces += 1
        return 0.5 * x @ z["h"] @ x + 0.1 * jnp.sum(jnp.sin(x)) * z["s"]


def test_hessian_and_gradient_compiled_once_per_loss_and_shape():
    """The diagnostics' derivatives are compiled once per loss and shape, and exact.

    A second point and other data of the same shape do not retrace; data of another
    shape do (the counter is live). The values match the closed forms of the
    quadratic-plus-sine loss (``mean(H_i) - 0.1 s diag(sin x)``). (Against the eager
    ``jax.hessian`` the methods replaced they differ by round-off only: a few ulps.)
    """
    base = _random_quadratic(d=6, n=5, seed=3)
    loss = _CountingQuadratic()
    p = dpsample.Problem(loss, base.data, base.domain)
    rng = np.random.default_rng(4)
    xs = [rng.standard_normal(6) for _ in range(2)]
    h, g = np.asarray(p.hessian(xs[0])), np.asarray(p.gradient(xs[0]))
    lam = st.min_hessian_eigenvalue(p, xs[0], method="eigh")
    p.hessian(xs[1]), p.gradient(xs[1]), st.min_hessian_eigenvalue(p, xs[1])
    other = p.replace(data=_random_quadratic(d=6, n=5, seed=5).data)
    other.hessian(xs[0]), other.gradient(xs[0]), st.min_hessian_eigenvalue(other, xs[0])
    assert loss.traces == 2  # one trace each for the gradient and the Hessian
    p.replace(data=_random_quadratic(d=6, n=7, seed=6).data).hessian(xs[0])
    assert loss.traces == 3  # power: another shape retraces
    mean_h = np.mean(base.data["h"], axis=0)
    exact_h = mean_h - 0.1 * np.diag(np.sin(xs[0]))
    np.testing.assert_allclose(h, exact_h, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(g, mean_h @ xs[0] + 0.1 * np.cos(xs[0]), atol=1e-13)
    exact = float(np.linalg.eigvalsh(exact_h)[0])
    assert lam == pytest.approx(exact, rel=1e-12)


def test_lanczos_compiled_once_per_loss_and_shape():
    """The Lanczos path compiles its Hessian-vector product once per loss and shape.

    A second call (another point, other data of the same shape) does not retrace the
    loss; data of another shape do (the counter is live), and so does an unhashable
    loss, which cannot key the cache and is compiled per call as before (issue 27).
    The eigenvalue matches the dense one.
    """
    base = _random_quadratic(d=6, n=5, seed=3)
    loss = _CountingQuadratic()
    p = dpsample.Problem(loss, base.data, base.domain)
    rng = np.random.default_rng(7)
    xs = [rng.standard_normal(6) for _ in range(2)]
    lam = st.min_hessian_eigenvalue(p, xs[0], method="lanczos")
    first = loss.traces
    assert first > 0  # the counter is wired to the Lanczos path
    st.min_hessian_eigenvalue(p, xs[1], method="lanczos")
    other = p.replace(data=_random_quadratic(d=6, n=5, seed=5).data)
    st.min_hessian_eigenvalue(other, xs[0], method="lanczos")
    assert loss.traces == first
    wider = p.replace(data=_random_quadratic(d=6, n=7, seed=6).data)
    st.min_hessian_eigenvalue(wider, xs[0], method="lanczos")
    assert loss.traces > first  # power: another shape retraces
    exact = st.min_hessian_eigenvalue(p, xs[0], method="eigh")
    assert lam == pytest.approx(exact, abs=1e-10)

    class Unhashable(_CountingQuadratic):
        __hash__ = None  # type: ignore[assignment]

    unhashable = Unhashable()
    q = dpsample.Problem(unhashable, base.data, base.domain)
    st.min_hessian_eigenvalue(q, xs[0], method="lanczos")
    once = unhashable.traces
    st.min_hessian_eigenvalue(q, xs[1], method="lanczos")
    assert unhashable.traces == 2 * once > 0
    assert st.min_hessian_eigenvalue(q, xs[0], method="lanczos") == pytest.approx(
        lam, abs=1e-10
    )
