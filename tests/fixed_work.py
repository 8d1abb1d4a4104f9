"""Finds LAPACK and iterative solvers reachable from private code (issue 25).

:func:`record_solvers` records, while it is active, every bind of a JAX primitive that
calls LAPACK or loops a data-dependent number of times, and every call of a host
solver (``numpy.linalg``, ``scipy.linalg``, ``scipy.optimize``), each with the
``dpsample`` function that made it. ``jax.clear_caches()`` on entry makes every jitted
function trace again, so a cached compilation cannot hide a primitive. A loop that
``lax.fori_loop`` or ``lax.map`` writes with a static trip count is a ``scan`` (fixed
work) and is not recorded; a ``while`` is, whatever made it (a ``fori_loop`` with a
traced trip count included), and needs an entry in :data:`ALLOWED` with its reason.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path

import jax
import numpy as np
import scipy.linalg
import scipy.optimize
from jax._src import core as jax_core

import dpsample

PACKAGE = Path(dpsample.__file__).resolve().parent
REPO = PACKAGE.parent

#: JAX primitives that call LAPACK (or a device solver) or iterate on their data.
SOLVER_PRIMITIVES = frozenset(
    {
        "eigh",
        "eig",
        "svd",
        "qr",
        "geqrf",
        "geqp3",
        "householder_product",
        "ormqr",
        "lu",
        "cholesky",
        "cholesky_update",
        "triangular_solve",
        "schur",
        "hessenberg",
        "tridiagonal",
        "tridiagonal_solve",
        "custom_linear_solve",
        "while",
    }
)

_NUMPY_LINALG = (
    "cholesky eig eigh eigvals eigvalsh inv lstsq matrix_rank pinv qr slogdet det "
    "solve svd tensorinv tensorsolve matrix_power"
).split()
_SCIPY_LINALG = (
    "cho_factor cho_solve cholesky eig eigh eigh_tridiagonal eigvals eigvalsh "
    "eigvalsh_tridiagonal expm hessenberg inv logm lstsq lu lu_factor lu_solve "
    "null_space orth pinv pinvh qr schur solve solve_triangular sqrtm svd svdvals"
).split()
_SCIPY_OPTIMIZE = (
    "basinhopping bisect brent brenth brentq curve_fit differential_evolution "
    "dual_annealing fixed_point fmin fminbound fsolve least_squares linprog "
    "lsq_linear milp minimize minimize_scalar newton nnls root root_scalar shgo toms748"
).split()
HOST_SOLVERS = (
    (np.linalg, "numpy.linalg", _NUMPY_LINALG),
    (scipy.linalg, "scipy.linalg", _SCIPY_LINALG),
    (scipy.optimize, "scipy.optimize", _SCIPY_OPTIMIZE),
)

#: (file relative to the repository, function, solver) -> why it is allowed on a
#: private path. Every entry must say why the solver's work reveals nothing.
ALLOWED: dict[tuple[str, str, str], str] = {
    ("dpsample/finders/tr_subproblem.py", "solve_tr_unchecked", "eigh"): (
        "post-processing of a DP release: DP-TR / DP-STR call it on the noised "
        "gradient and Hessian (finders/trust_region/step.py: h_noisy = h + "
        "symmetric_noise), whose Gaussian mechanism the guarantee accounts; the "
        "eigensolver's time is a function of that release only"
    ),
    ("dpsample/pipelines/jl.py", "_run", "svd"): (
        "operator norm of the JL projection phi (jnp.linalg.norm(phi, 2)): phi is "
        "drawn from the key alone, independent of the data, and released in info, so "
        "the SVD's time has the same law on every dataset"
    ),
    ("dpsample/finders/batches.py", "_redrawn", "while"): (
        "rejection loop on the keys only: its condition reads the drawn indices, "
        "never the data (symmetric rejection events), so its trip count is public"
    ),
}


def _site() -> tuple[str, str]:
    """``(file relative to the repository, function)`` of the innermost dpsample
    frame on the stack (``("<outside dpsample>", "")`` when there is none)."""
    frame = sys._getframe(2)
    while frame is not None:
        path = Path(frame.f_code.co_filename).resolve()
        if path.is_relative_to(PACKAGE):
            return str(path.relative_to(REPO)), frame.f_code.co_name
        frame = frame.f_back
    return "<outside dpsample>", ""


def _lowering() -> bool:
    """Whether JAX is lowering a traced program to XLA: a ``scan`` (fixed trip
    count) is lowered through a ``while`` with a counter, which is not a use."""
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_filename.endswith(_MLIR):
            return True
        frame = frame.f_back
    return False


_MLIR = str(Path("interpreters") / "mlir.py")


@contextlib.contextmanager
def record_solvers(*, clear: bool = True) -> Iterator[list[tuple[str, str, str]]]:
    """Record ``(file, function, solver)`` for every solver used inside the block.

    ``clear``: clear JAX's caches on entry and exit (needed when the block calls
    jitted functions that may have been traced before; not for ``make_jaxpr``).
    """
    found: list[tuple[str, str, str]] = []
    real_bind = jax_core.Primitive.bind

    def bind(self, *args, **params):
        if self.name in SOLVER_PRIMITIVES and not _lowering():
            found.append((*_site(), self.name))
        return real_bind(self, *args, **params)

    def host(module_name, name, fn):
        def wrapped(*args, **kwargs):
            found.append((*_site(), f"{module_name}.{name}"))
            return fn(*args, **kwargs)

        return wrapped

    saved = [
        (module, module_name, name, getattr(module, name))
        for module, module_name, names in HOST_SOLVERS
        for name in names
        if hasattr(module, name)
    ]
    if clear:
        jax.clear_caches()
    jax_core.Primitive.bind = bind
    try:
        for module, module_name, name, fn in saved:
            setattr(module, name, host(module_name, name, fn))
        yield found
    finally:
        jax_core.Primitive.bind = real_bind
        for module, _, name, fn in saved:
            setattr(module, name, fn)
        if clear:
            jax.clear_caches()


def not_allowed(found: list[tuple[str, str, str]]) -> set[tuple[str, str, str]]:
    """The recorded uses that :data:`ALLOWED` does not list."""
    return {use for use in found if use not in ALLOWED}
