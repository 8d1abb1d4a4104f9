"""No LAPACK or iterative solver on a private path, unless listed with a reason
(issue 25, "fixed work for every data-dependent linear algebra").

Dynamic: every algorithm of :mod:`dpsample.registry` (so a new one is covered
automatically, through its case in ``tests/contract_cases.py``) is planned (public,
not recorded) and run under :func:`fixed_work.record_solvers`, which records every
solver primitive bound while tracing and every host solver called; anything not in
:data:`fixed_work.ALLOWED` fails. Static: every solver call written in the package's
source is listed in :data:`STATIC` with the reason it is not on a private path or is
harmless there, so a solver that the small cases do not reach is still seen.
"""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from contract_cases import CASES
from fixed_work import ALLOWED, PACKAGE, REPO, not_allowed, record_solvers

from dpsample import registry
from dpsample.finders.spider_sosp import selection
from dpsample.mechanisms import select_sosp, select_sosp_iterate

NAMES = registry.names()


@pytest.mark.slow  # each case compiles afresh (clear_caches): 5-30 s
@pytest.mark.parametrize("name", NAMES)
def test_registered_algorithm_runs_without_unlisted_solvers(name):
    case = CASES[name]
    problem = case.make_problem(0, case.n, lambda f: f)
    algo = registry.create(name)
    plan = algo.plan(problem.spec, case.budget, **case.options)  # public: not recorded
    with record_solvers() as found:
        jax.block_until_ready(algo.run(jax.random.key(0), plan, problem.data).value)
    assert not not_allowed(found), sorted(set(found))


def _sosp_problem():
    return CASES["spider_sosp"].make_problem(0, 32, lambda f: f)


def test_select_sosp_scores_trace_has_no_solver():
    """The private part of select_sosp_iterate, traced (fast; the run is below)."""
    problem = _sosp_problem()
    xs = jnp.array([[0.0, 0.0], [0.1, -0.2]])
    with record_solvers(clear=False) as found:
        jax.make_jaxpr(
            lambda data, p: select_sosp._combined_scores(
                problem.loss_fn, data, p, 0.1, -1.0, 1e-3, 2e-3, 1.0, 1.0
            )
        )(problem.data, xs)
    assert not not_allowed(found), sorted(set(found))
    assert found == []


def test_spider_sosp_eigenvalue_query_trace_has_no_solver(monkeypatch):
    problem = _sosp_problem()

    def trace():
        # a jitted callee traced by an earlier test in this process would answer
        # from its cache, and the monkeypatched eigenvalue would not be seen
        jax.clear_caches()
        with record_solvers(clear=False) as found:
            jax.make_jaxpr(
                lambda x, data: selection._min_eig_upper(
                    problem.loss_fn, x, data, 1.0, 1e-12
                )
            )(jnp.zeros(2), problem.data)
        return not_allowed(found)

    assert not trace()
    # power: the same check flags the eigenvalue the module used before issue 25
    monkeypatch.setattr(
        selection, "min_eigenvalue", lambda h, bound: jnp.linalg.eigvalsh(h)[0]
    )
    assert trace() == {
        ("dpsample/finders/spider_sosp/selection.py", "_min_eig_upper", "eigh")
    }


@pytest.mark.slow  # compiles afresh (clear_caches)
def test_select_sosp_iterate_and_spider_queries_run_without_solvers():
    problem = _sosp_problem()
    xs = jnp.array([[0.0, 0.0], [0.1, -0.2]])
    with record_solvers() as found:
        select_sosp_iterate(
            jax.random.key(0), problem, xs, alpha=0.5, epsilon=1.0, num_candidates=2
        )
        grad_norm, min_eig = selection.selection_queries(problem, np.asarray(xs))
        grad_norm(0), min_eig(1)
    assert not not_allowed(found), sorted(set(found))


# ------------------------------------------------------------------------- static
#: Every solver call in the package source: (file, call) -> why it is fine.
STATIC: dict[tuple[str, str], str] = {
    ("dpsample/finders/tr_subproblem.py", "jnp.linalg.eigh"): ALLOWED[
        ("dpsample/finders/tr_subproblem.py", "solve_tr_unchecked", "eigh")
    ],
    ("dpsample/finders/batches.py", "jax.lax.while_loop"): ALLOWED[
        ("dpsample/finders/batches.py", "_redrawn", "while")
    ],
    ("dpsample/pipelines/jl.py", "jnp.linalg.norm(ord=2)"): ALLOWED[
        ("dpsample/pipelines/jl.py", "_run", "svd")
    ],
    ("dpsample/finders/stationarity.py", "np.linalg.eigh"): (
        "non-private diagnostic (the Lanczos tridiagonal of min_hessian_eigenvalue); "
        "called only by NOT PRIVATE diagnostics: the CLI report's stationarity of the "
        "released point and warm_start's opt-in diagnostics, outputs and work that "
        "no guarantee covers (docs/privacy.md)"
    ),
    ("dpsample/finders/stationarity.py", "jnp.linalg.eigvalsh"): (
        "non-private diagnostic (min_hessian_eigenvalue for small d); called only by "
        "NOT PRIVATE diagnostics (the CLI report, warm_start's opt-in diagnostics)"
    ),
    ("dpsample/finders/goldstein_stationarity.py", "optimize.nnls"): (
        "non-private diagnostic (Goldstein stationarity by a min-norm QP); no "
        "private algorithm's run calls it (exported for experiments only)"
    ),
}

_SOLVER_CALL = re.compile(
    r"\b((?:np|jnp|numpy|scipy|jax\.numpy|jax\.scipy)\.linalg\.(?!norm\b)\w+"
    r"|(?:scipy\.)?optimize\.\w+(?=\()"
    r"|(?:jax\.)?lax\.(?:while_loop|linalg\.\w+|custom_linear_solve)"
    r"|jax\.scipy\.(?:optimize|sparse\.linalg)\.\w+)"
)
_SOLVER_IMPORT = re.compile(
    r"^\s*from\s+(?:numpy\.linalg|scipy\.linalg|scipy\.optimize|jax\.scipy\.linalg"
    r"|jax\.scipy\.optimize|jax\.lax\.linalg)\s+import|^\s*from\s+scipy\s+import\s+.*"
    r"\b(?:linalg|optimize)\b",
    re.MULTILINE,
)


#: A matrix norm that needs singular values: ``norm(a, 2)``, ``ord=-2``, ``"nuc"``.
_MATRIX_NORM = re.compile(
    r"\b((?:np|jnp|numpy|scipy|jax\.numpy)\.linalg\.norm)\([^()]*,\s*(?:ord\s*=\s*)?"
    r"(?:-?2|[\"']nuc[\"'])\s*[,)]"
)


def _source_calls() -> dict[tuple[str, str], list[int]]:
    calls: dict[tuple[str, str], list[int]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = str(path.relative_to(REPO))
        for lineno, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            if code.lstrip().startswith((">>>", "...")):
                continue  # doctest examples
            for match in _SOLVER_CALL.finditer(code):
                calls.setdefault((rel, match.group(1)), []).append(lineno)
            for match in _MATRIX_NORM.finditer(code):
                calls.setdefault((rel, f"{match.group(1)}(ord=2)"), []).append(lineno)
    return calls


def test_every_solver_call_in_the_source_is_listed_with_a_reason():
    calls = _source_calls()
    unlisted = {k: v for k, v in calls.items() if k not in STATIC}
    assert not unlisted, f"solver calls without a reason in STATIC: {unlisted}"
    stale = set(STATIC) - set(calls)
    assert not stale, f"STATIC entries that match no call any more: {stale}"


def test_solver_imports_are_module_imports():
    """``from scipy.optimize import f`` would hide ``f`` from the host recorder."""
    hits = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for match in _SOLVER_IMPORT.finditer(path.read_text()):
            hits.append((str(path.relative_to(REPO)), match.group(0).strip()))
    # the one module import is goldstein_stationarity's (a diagnostic, see STATIC)
    assert hits == [
        ("dpsample/finders/goldstein_stationarity.py", "from scipy import optimize")
    ]


def test_static_scan_catches_a_solver_call(tmp_path):
    """Power: the pattern sees the eigensolver the selection used before issue 25."""
    for old in (
        "lam = jnp.linalg.eigvalsh(0.5 * (h + h.T))[0]",
        "return float(np.linalg.eigvalsh(hess)[0])",
        "x = scipy.optimize.brentq(f, 0, 1)",
        "s = jax.lax.while_loop(c, b, s)",
    ):
        assert _SOLVER_CALL.search(old), old
    assert not _SOLVER_CALL.search("g = jnp.linalg.norm(x)")
    for matrix_norm in ("jnp.linalg.norm(phi, 2)", "np.linalg.norm(a, ord='nuc')"):
        assert _MATRIX_NORM.search(matrix_norm), matrix_norm
    for vector_norm in ("jnp.linalg.norm(v, axis=1)", "np.linalg.norm(x - y)"):
        assert not _MATRIX_NORM.search(vector_norm), vector_norm
