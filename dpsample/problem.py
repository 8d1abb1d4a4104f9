"""The optimisation problem: per-example loss, private data, domain, public constants.

A :class:`Problem` bundles what every private algorithm in dpsample consumes:

* ``loss_fn(x, example) -> scalar``: a JAX function of a flat float64 parameter ``x``
  of dimension ``d`` and one example (one slice of the data pytree along its leading
  axis);
* ``data``: a pytree of arrays sharing a leading axis of length ``n`` (typically
  ``{"x": (n, p) features, "y": (n,) labels}``);
* a public :mod:`domain <dpsample.domains>` ``K``;
* declared **public** constants, never measured from the data: the per-example
  Lipschitz constant ``G``, smoothness ``M``, Hessian-Lipschitz constant ``rho``, range
  ``B`` and optionally a tighter oscillation bound;
* the neighbouring relation (replace-one, as in the seeds).

Methods that take a parameter are jittable (``jit`` is left to the caller); the data
are closed over.
"""

from __future__ import annotations

import dataclasses
import functools
import warnings
from collections.abc import Callable
from typing import Any, ClassVar

import dp_accounting
import jax
import jax.numpy as jnp
import numpy as np

from dpsample._src import precision, validation
from dpsample._src.risk import (
    compiled,
    constant_ratios,
    probe,
    probe_points,
    risk_gradient,
    risk_hessian,
)
from dpsample._src.risk import mean_loss as _mean_loss
from dpsample.domains import Ball, Domain, Unconstrained, require_member
from dpsample.errors import MissingConstantError
from dpsample.types import Array, ArrayLike, ArrayLikeTree, ArrayTree, PRNGKey

__all__ = [
    "CONSTANTS",
    "ConstantViolationWarning",
    "Problem",
    "ProblemSpec",
    "check_problem",
    "data_shapes",
]

#: The declared public constants, in the order they are printed.
CONSTANTS = (
    "lipschitz",
    "smoothness",
    "hessian_lipschitz",
    "loss_range",
    "oscillation",
    "loss_floor",
)
_SYMBOLS = {
    "lipschitz": "G",
    "smoothness": "M",
    "hessian_lipschitz": "rho",
    "loss_range": "B",
    "oscillation": "osc",
    "loss_floor": "floor",
}


class ConstantViolationWarning(UserWarning):
    """The data visibly violate a declared constant (``Problem.check_constants``)."""


def _to_array(leaf: Any) -> Array:
    arr = np.asarray(leaf)
    if arr.dtype.kind == "f":
        return jnp.asarray(arr, jnp.float64)
    return jnp.asarray(arr)


def _loss_name(loss_fn: Callable[..., Any]) -> str:
    return getattr(loss_fn, "__name__", None) or type(loss_fn).__name__


def _example_struct(data: ArrayTree) -> Any:
    """The shapes and dtypes of one example (public): leaves without their axis n."""
    return jax.tree.map(
        lambda leaf: jax.ShapeDtypeStruct(tuple(leaf.shape[1:]), leaf.dtype), data
    )


def _check_constants(constants: dict[str, Any]) -> dict[str, float | None]:
    checks = {
        "lipschitz": validation.positive,
        "smoothness": validation.nonnegative,
        "hessian_lipschitz": validation.nonnegative,
        "loss_range": validation.positive,
        "oscillation": validation.positive,
        "loss_floor": validation.finite_scalar,
    }
    unknown = set(constants) - set(checks)
    if unknown:
        raise TypeError(f"Unknown constant(s) {sorted(unknown)}; valid: {CONSTANTS}")
    checked = {
        name: None if constants.get(name) is None else check(name, constants[name])
        for name, check in checks.items()
    }
    if checked["loss_floor"] is not None and checked["loss_range"] is None:
        raise ValueError(
            f"loss_floor={checked['loss_floor']!r} is declared without loss_range: "
            "the floor locates the loss interval [loss_floor, loss_floor + B] and "
            "means nothing without its length B; declare loss_range=B as well, or "
            "drop loss_floor"
        )
    return checked


@dataclasses.dataclass(frozen=True, eq=False)
class ProblemSpec:
    """The public half of a :class:`Problem`: everything planning may see.

    A spec is a problem without its data: the per-example loss (public code), the
    number of examples ``n`` and the shapes of one example (public), the domain ``K``,
    the declared constants and the neighbouring relation. Algorithms plan from a
    spec (:meth:`dpsample.base.PrivateAlgorithm.plan`) and run on data that match it
    (:meth:`with_data`).

    Attributes:
        loss_fn: ``loss_fn(x, example) -> scalar`` in JAX.
        n: Number of examples (public).
        dim: Parameter dimension ``d``.
        domain: The domain ``K`` (with its dimension set).
        example: Pytree of ``jax.ShapeDtypeStruct``: one example's shapes/dtypes.
        lipschitz: The declared constants (``None`` when not declared), as on
            :class:`Problem`: ``lipschitz``, ``smoothness``, ``hessian_lipschitz``,
            ``loss_range``, ``oscillation`` and ``loss_floor``.

    Examples:
        >>> import jax.numpy as jnp
        >>> from dpsample import Ball, Problem
        >>> p = Problem(lambda x, z: jnp.abs(x[0] - z), jnp.zeros(10),
        ...             Ball(1.0, dim=1), lipschitz=1.0)
        >>> spec = p.spec
        >>> spec.n, spec.dim, spec.lipschitz
        (10, 1, 1.0)
        >>> spec.describe()
        'n=10, d=1, K=Ball(radius=1.0, center=None, dim=1), G=1, replace-one'
        >>> spec.with_data(jnp.ones(10)).n
        10
    """

    loss_fn: Callable[[Array, Any], Array]
    n: int
    dim: int
    domain: Domain
    example: Any
    lipschitz: float | None = None
    smoothness: float | None = None
    hessian_lipschitz: float | None = None
    loss_range: float | None = None
    oscillation: float | None = None
    loss_floor: float | None = None

    relation: ClassVar[Any] = dp_accounting.NeighboringRelation.REPLACE_ONE

    def __post_init__(self) -> None:
        if not callable(self.loss_fn):
            raise TypeError(f"Expected loss_fn to be callable, got {self.loss_fn!r}")
        if not isinstance(self.domain, Ball | Unconstrained):
            raise TypeError(f"Expected a Ball or Unconstrained, got {self.domain!r}")
        object.__setattr__(self, "n", validation.positive_int("n", self.n))
        object.__setattr__(self, "dim", validation.positive_int("dim", self.dim))
        domain = (
            self.domain
            if self.domain.dim is not None
            else self.domain.with_dim(self.dim)
        )
        if domain.dim != self.dim:
            raise ValueError(f"domain dimension {domain.dim} != dim {self.dim}")
        object.__setattr__(self, "domain", domain)
        checked = _check_constants({c: getattr(self, c) for c in CONSTANTS})
        for name, value in checked.items():
            object.__setattr__(self, name, value)

    # ------------------------------------------------------------------ reading
    @property
    def constants(self) -> dict[str, float | None]:
        """The declared constants by name (``None`` when not declared)."""
        return {c: getattr(self, c) for c in CONSTANTS}

    def require(self, name: str, *, needed_for: str) -> float:
        """A declared constant, or :class:`~dpsample.errors.MissingConstantError`."""
        return validation.require_constant(
            name, getattr(self, name), needed_for=needed_for
        )

    def describe(self) -> str:
        """One line: ``n``, ``d``, ``K``, the declared constants and the relation."""
        consts = ", ".join(
            f"{_SYMBOLS[c]}={v:g}" for c, v in self.constants.items() if v is not None
        )
        return (
            f"n={self.n}, d={self.dim}, K={self.domain!r}"
            + (f", {consts}" if consts else "")
            + ", replace-one"
        )

    def __repr__(self) -> str:
        return f"ProblemSpec(loss_fn={_loss_name(self.loss_fn)}, {self.describe()})"

    def utility_oscillation(self) -> float:
        """Bound on ``osc_K(f(., z) - f(., z'))``: ``min(2 G D, 2 B, osc)`` (declared).

        It uses declared constants only, so it is a valid sensitivity for the
        exponential mechanism with utility ``-n F_D`` under replace-one neighbours.

        Raises:
            MissingConstantError: If no bound is available.
        """
        bounds = []
        if self.lipschitz is not None and self.domain.bounded:
            bounds.append(2.0 * self.lipschitz * self.domain.diameter)
        if self.loss_range is not None:
            bounds.append(2.0 * self.loss_range)
        if self.oscillation is not None:
            bounds.append(self.oscillation)
        if not bounds:
            raise MissingConstantError(
                "utility_oscillation needs a declared public bound: loss_range=B "
                "(gives 2B), lipschitz=G with a bounded domain such as Ball (gives "
                "2 G D), or oscillation=...; none is available for this problem "
                f"(domain {self.domain!r})"
            )
        return float(min(bounds))

    # ------------------------------------------------------------------ points
    def check_point(self, x: Any, name: str = "x") -> Array:
        """A finite float64 vector of shape ``(dim,)`` (any point of ``R^d``)."""
        try:
            arr = np.asarray(x, dtype=np.float64)
        except (TypeError, ValueError) as err:
            raise TypeError(
                f"Expected {name} to be a numeric vector, got {x!r}"
            ) from err
        if arr.shape != (self.dim,):
            raise ValueError(
                f"Expected {name} of shape ({self.dim},), got shape {arr.shape}"
            )
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"Expected {name} to be finite, found NaN or inf values")
        return jnp.asarray(arr)

    def check_start(self, x: Any, name: str = "x0") -> Array:
        """A public start point of ``K``: :meth:`check_point`, then membership.

        The declared constants hold on ``K`` only, so every algorithm refuses a start
        outside ``K`` before any private computation; a point within rounding of
        ``K`` is projected onto it (:func:`~dpsample.domains.require_member`).
        """
        return require_member(self.domain, self.check_point(x, name), name)

    def check_projection(self, project: Any, *, clipped: bool, name: str) -> bool:
        """Validate ``project``: unprojected runs on a ``Ball`` need clipping.

        Without clipping a finder's sensitivity comes from constants declared on the
        domain ``K``, so its iterates must stay in ``K``: ``project=False`` on a
        :class:`~dpsample.domains.Ball` is refused (``ValueError``, before any private
        computation). With clipping every contribution is bounded whatever the loss
        does outside ``K``, and unprojected runs stay allowed. On ``Unconstrained``
        the projection is the identity and ``project`` is irrelevant.

        Returns:
            ``bool(project)``.
        """
        project = bool(project)
        if not project and not clipped and isinstance(self.domain, Ball):
            raise ValueError(
                f"{name} with project=False on a Ball needs clipping: without it the "
                "sensitivity comes from the constants declared on K, which say "
                "nothing about the unprojected iterates outside K; keep "
                "project=True, keep enforce_sensitivity=True (clipping), or declare "
                "the problem on Unconstrained(d) with constants valid on all of R^d"
            )
        return project

    def check_batch_size(self, batch_size: Any, name: str = "batch_size") -> int:
        """An integer ``1 <= batch_size <= n``."""
        b = validation.positive_int(name, batch_size)
        if b > self.n:
            raise ValueError(f"Expected {name}={b} <= n={self.n}")
        return b

    def initial_gap(self, initial_gap: Any, *, needed_for: str) -> tuple[float, str]:
        """A public bound on ``F(x0) - inf F``: ``initial_gap`` or the declared range.

        Returns ``(value, source)`` with source ``"user"`` or ``"declared
        loss_range"``; raises :class:`~dpsample.errors.MissingConstantError` when
        neither is available. The gap is never measured on the data.
        """
        if initial_gap is not None:
            return validation.positive("initial_gap", initial_gap), "user"
        if self.loss_range is None:
            raise MissingConstantError(
                f"{needed_for} needs a public initial-gap bound F(x0) - inf F: pass "
                "initial_gap=... or declare loss_range=... on the Problem (never "
                "measure it on the data)"
            )
        return float(self.loss_range), "declared loss_range"

    # ------------------------------------------------------------------ variants
    def replace(self, **changes: Any) -> ProblemSpec:
        """A copy with some fields replaced (e.g. ``n`` for a half of the data)."""
        return dataclasses.replace(self, **changes)

    def with_data(self, data: ArrayLikeTree) -> Problem:
        """The :class:`Problem` of this spec on ``data`` (checked against the spec).

        Raises:
            ValueError: If ``data`` does not have ``n`` examples of the spec's
                shapes (a public mismatch), or as :class:`Problem` does.
        """
        data = Problem._validate_data(data)
        n = int(jax.tree.leaves(data)[0].shape[0])
        if n != self.n:
            raise ValueError(f"the plan is for n={self.n} examples, got {n}")
        got = _example_struct(data)
        tree: Any = jax.tree.structure(got)
        same = tree == jax.tree.structure(self.example) and all(
            a.shape == b.shape and a.dtype == b.dtype
            for a, b in zip(
                jax.tree.leaves(got), jax.tree.leaves(self.example), strict=True
            )
        )
        if not same:
            raise ValueError(
                f"the data's examples {got} do not match the plan's {self.example}"
            )
        problem = Problem(
            self.loss_fn, data, self.domain, **{c: getattr(self, c) for c in CONSTANTS}
        )
        return problem


def data_shapes(data: ArrayLikeTree) -> tuple[int, Any]:
    """``(n, example)`` of ``data``: public facts of the data, not their values.

    The number of examples and the shapes and dtypes of one example, as the
    :class:`ProblemSpec` of a :class:`Problem` on ``data`` holds them (the data are
    checked as :class:`Problem` checks them).

    Examples:
        >>> import numpy as np
        >>> from dpsample.problem import data_shapes
        >>> n, example = data_shapes({"x": np.zeros((5, 3)), "y": np.ones(5)})
        >>> n, example["x"].shape, example["y"].shape, str(example["x"].dtype)
        (5, (3,), (), 'float64')
    """
    data = Problem._validate_data(data)
    return int(jax.tree.leaves(data)[0].shape[0]), _example_struct(data)


def check_problem(problem: Any) -> Problem:
    """Check ``problem`` is a :class:`Problem` (``TypeError`` otherwise)."""
    if not isinstance(problem, Problem):
        raise TypeError(f"Expected a dpsample Problem, got {type(problem).__name__}")
    return problem


class Problem:
    """An empirical risk ``F_D(x) = (1/n) sum_i f(x, z_i)`` over a domain ``K``.

    Neighbouring datasets differ by replacing one example (``relation`` is
    ``dp_accounting.NeighboringRelation.REPLACE_ONE``). The constants are public
    promises about every possible example ``z`` (not only the ones in ``data``):

    * ``lipschitz`` ``G``: ``||grad f(x, z)|| <= G`` on ``K`` (L2);
    * ``smoothness`` ``M``: ``grad f(., z)`` is ``M``-Lipschitz on ``K``;
    * ``hessian_lipschitz`` ``rho``: ``hess f(., z)`` is ``rho``-Lipschitz (operator
      norm) on ``K``;
    * ``loss_range`` ``B``: all ``f(., z)`` take values in one common interval of
      length ``B`` on ``K``;
    * ``loss_floor``: where that interval lies: every ``f(x, z)`` is in
      ``[loss_floor, loss_floor + B]`` on ``K`` (needs ``loss_range``). Located, the
      interval can be enforced by clipping each per-example loss into it (the net
      exponential mechanism does so when the range route ``2 B`` binds), so a
      guarantee that rests on ``B`` then assumes nothing;
    * ``oscillation``: a bound on ``osc_K(f(., z) - f(., z'))`` for any ``z, z'``
      (tighter than ``min(2 G D, 2 B)``, e.g. when a data-independent regulariser
      cancels).

    Args:
        loss_fn: ``loss_fn(x, example) -> scalar`` in JAX.
        data: Pytree of arrays with a common leading axis ``n >= 1``.
        domain: A :class:`~dpsample.domains.Ball` or
            :class:`~dpsample.domains.Unconstrained`.
        lipschitz: Declared ``G > 0``.
        smoothness: Declared ``M >= 0``.
        hessian_lipschitz: Declared ``rho >= 0``.
        loss_range: Declared ``B > 0``.
        oscillation: Declared bound ``> 0`` on ``osc_K(f(., z) - f(., z'))``.
        loss_floor: Declared real number (any sign, finite): the lower end of the
            loss interval ``[loss_floor, loss_floor + B]``; only with ``loss_range``.
        dim: Parameter dimension ``d``; needed when the domain has none.

    Raises:
        ValueError: On non-finite data, inconsistent leading axes, ``n = 0``, invalid
            constants, an unknown domain type, a dimension clash, or a loss that is not
            a finite scalar at the domain centre on the first example.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> import dpsample
        >>> from dpsample.domains import Ball
        >>> from dpsample.losses import logistic_nonconvex
        >>> from dpsample.problem import Problem
        >>> data = {"x": jnp.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]]),
        ...         "y": jnp.array([1.0, -1.0, 1.0])}
        >>> loss = logistic_nonconvex(reg=1e-3)
        >>> prob = Problem(loss.loss_fn, data, Ball(1.0, dim=2),
        ...                **loss.constants(radius=1.0)._asdict())
        >>> prob.n, prob.dim
        (3, 2)
        >>> round(float(prob.empirical_risk(jnp.zeros(2))), 6)
        0.693147
        >>> prob.per_example_gradients(jnp.zeros(2)).shape
        (3, 2)
        >>> prob.utility_oscillation()
        2.0
    """

    relation = dp_accounting.NeighboringRelation.REPLACE_ONE

    def __init__(
        self,
        loss_fn: Callable[[Array, Any], Array],
        data: ArrayLikeTree,
        domain: Domain,
        *,
        lipschitz: float | None = None,
        smoothness: float | None = None,
        hessian_lipschitz: float | None = None,
        loss_range: float | None = None,
        oscillation: float | None = None,
        loss_floor: float | None = None,
        dim: int | None = None,
    ) -> None:
        if not callable(loss_fn):
            raise TypeError(f"Expected loss_fn to be callable, got {loss_fn!r}")
        if not isinstance(domain, Ball | Unconstrained):
            raise TypeError(
                f"Expected domain to be a Ball or Unconstrained, got {type(domain)!r}"
            )
        self.loss_fn = loss_fn
        self.data = self._validate_data(data)
        self.n = int(jax.tree.leaves(self.data)[0].shape[0])

        if dim is not None:
            domain = domain.with_dim(dim)
        if domain.dim is None:
            raise ValueError(
                "The dimension of x is unknown: pass dim=... to Problem or give the "
                "domain a dimension (e.g. Ball(1.0, dim=d))"
            )
        self.domain = domain
        self.dim = int(domain.dim)

        checked = _check_constants(
            {
                "lipschitz": lipschitz,
                "smoothness": smoothness,
                "hessian_lipschitz": hessian_lipschitz,
                "loss_range": loss_range,
                "oscillation": oscillation,
                "loss_floor": loss_floor,
            }
        )
        self.lipschitz = checked["lipschitz"]
        self.smoothness = checked["smoothness"]
        self.hessian_lipschitz = checked["hessian_lipschitz"]
        self.loss_range = checked["loss_range"]
        self.oscillation = checked["oscillation"]
        self.loss_floor = checked["loss_floor"]
        self._check_loss()

    # ------------------------------------------------------------------ validation
    @staticmethod
    def _validate_data(data: ArrayLikeTree) -> ArrayTree:
        data = jax.tree.map(_to_array, data)
        leaves = jax.tree.leaves(data)
        if not leaves:
            raise ValueError("Expected data to hold at least one array, got none")
        validation.finite_tree("data", data)
        shapes = [leaf.shape for leaf in leaves]
        if any(len(s) == 0 for s in shapes):
            raise ValueError(
                f"Expected every data leaf to have a leading example axis, got shapes "
                f"{shapes}"
            )
        lengths = {s[0] for s in shapes}
        if len(lengths) != 1:
            raise ValueError(
                f"Expected all data leaves to share the leading axis n, got shapes "
                f"{shapes}"
            )
        if lengths.pop() < 1:
            raise ValueError("Expected at least one example (n >= 1), got n = 0")
        return data

    def _check_loss(self) -> None:
        x0 = self.domain.center_point
        first = jax.tree.map(lambda leaf: leaf[0], self.data)
        name = _loss_name(self.loss_fn)
        try:
            value = jnp.asarray(self.loss_fn(x0, first))
        except Exception as err:
            raise ValueError(
                f"Problem: loss_fn {name!r} failed on the domain centre with the first "
                f"example: {err}"
            ) from err
        if value.shape != ():
            raise ValueError(
                f"Problem: loss_fn {name!r} must return a scalar, got shape "
                f"{value.shape} at the domain centre on the first example"
            )
        if not bool(jnp.isfinite(value)):
            raise ValueError(
                f"Problem: loss_fn {name!r} returned {float(value)} (not finite) at "
                "the domain centre on the first example"
            )

    def _point(self, x: ArrayLike, name: str = "x") -> Array:
        x = jnp.asarray(x, jnp.float64)
        if x.shape != (self.dim,):
            raise ValueError(
                f"Expected {name} of shape ({self.dim},), got shape {x.shape}"
            )
        return x

    def _points(self, xs: ArrayLike, name: str = "xs") -> Array:
        xs = jnp.asarray(xs, jnp.float64)
        if xs.ndim != 2 or xs.shape[1] != self.dim:
            raise ValueError(
                f"Expected {name} of shape (m, {self.dim}), got shape {xs.shape}"
            )
        return xs

    def replace(
        self, *, data: ArrayLikeTree = None, domain: Domain | None = None
    ) -> Problem:
        """The same declared loss and constants on other data and/or another domain.

        The constants are declarations about the loss, so they carry over; the new
        data are validated as in the constructor (e.g. a half of the data for a
        population split, or a public ball ``K`` for a warm start).

        Examples:
            >>> import jax.numpy as jnp
            >>> from dpsample import Ball, Problem
            >>> p = Problem(lambda x, z: jnp.abs(x[0] - z), jnp.zeros(10),
            ...             Ball(1.0, dim=1), lipschitz=1.0)
            >>> q = p.replace(data=jnp.ones(4))
            >>> q.n, q.lipschitz, q.domain is p.domain
            (4, 1.0, True)
        """
        return Problem(
            self.loss_fn,
            self.data if data is None else data,
            self.domain if domain is None else domain,
            lipschitz=self.lipschitz,
            smoothness=self.smoothness,
            hessian_lipschitz=self.hessian_lipschitz,
            loss_range=self.loss_range,
            oscillation=self.oscillation,
            loss_floor=self.loss_floor,
        )

    def __repr__(self) -> str:
        consts = ", ".join(
            f"{k}={getattr(self, k)!r}"
            for k in CONSTANTS
            if getattr(self, k) is not None
        )
        return (
            f"Problem(loss_fn={_loss_name(self.loss_fn)}, n={self.n}, dim={self.dim}, "
            f"domain={self.domain!r}{', ' + consts if consts else ''})"
        )

    # ------------------------------------------------------------- risk and oracles
    def _per_example_losses(self, x: Array, data: ArrayTree) -> Array:
        return jax.vmap(self.loss_fn, in_axes=(None, 0))(x, data)

    def _risk(self, x: Array, data: ArrayTree) -> Array:
        return _mean_loss(self.loss_fn, x, data)

    def per_example_losses(self, x: ArrayLike) -> Array:
        """Losses ``f(x, z_i)`` for every example, shape ``(n,)``."""
        return self._per_example_losses(self._point(x), self.data)

    def empirical_risk(self, x: ArrayLike) -> Array:
        """Empirical risk ``F_D(x) = (1/n) sum_i f(x, z_i)`` (a scalar)."""
        return self._risk(self._point(x), self.data)

    def gradient(self, x: ArrayLike) -> Array:
        """Gradient of the empirical risk, shape ``(d,)``.

        Compiled once per loss function and shape (called outside a trace, it no
        longer runs ``jax.grad`` eagerly, primitive by primitive).
        """
        return compiled(risk_gradient, jax.grad(_mean_loss, argnums=1))(
            self.loss_fn, self._point(x), self.data
        )

    def per_example_gradients(self, x: ArrayLike) -> Array:
        """Per-example gradients ``grad f(x, z_i)``, shape ``(n, d)``."""
        grad_fn = jax.grad(self.loss_fn)
        return jax.vmap(grad_fn, in_axes=(None, 0))(self._point(x), self.data)

    def hvp(self, x: ArrayLike, v: ArrayLike) -> Array:
        """Hessian-vector product ``hess F_D(x) v`` (forward-over-reverse), ``(d,)``."""
        x, v = self._point(x), self._point(v, "v")
        grad_fn = jax.grad(self._risk)
        return jax.jvp(lambda p: grad_fn(p, self.data), (x,), (v,))[1]

    def hessian(self, x: ArrayLike) -> Array:
        """Full Hessian of the empirical risk, shape ``(d, d)`` (small ``d`` only).

        Compiled once per loss function and shape, like :meth:`gradient`.
        """
        return compiled(risk_hessian, jax.hessian(_mean_loss, argnums=1))(
            self.loss_fn, self._point(x), self.data
        )

    def empirical_risk_batch(
        self, xs: ArrayLike, *, chunk_size: int | None = None
    ) -> Array:
        """Empirical risk at many points, shape ``(m,)``.

        ``vmap`` over points of the mean of the ``vmap`` over data, so XLA turns a
        linear-model loss into one ``(m, d) x (d, n)`` matrix product. Memory grows as
        ``m n``; pass ``chunk_size`` to evaluate ``chunk_size`` points at a time
        (``lax.map`` with ``batch_size``), e.g. for the exponential mechanism over a net
        of millions of points.

        Args:
            xs: Points, shape ``(m, d)``.
            chunk_size: Optional number of points evaluated together.

        Returns:
            ``F_D(xs[j])`` for each ``j``.
        """
        xs = self._points(xs)
        risk = jax.vmap(self._risk, in_axes=(0, None))
        if chunk_size is None:
            return risk(xs, self.data)
        chunk_size = validation.positive_int("chunk_size", chunk_size)
        return jax.lax.map(
            lambda p: self._risk(p, self.data), xs, batch_size=chunk_size
        )

    # ------------------------------------------------------------ public constants
    @functools.cached_property
    def spec(self) -> ProblemSpec:
        """The public half of this problem (everything but the data)."""
        return ProblemSpec(
            self.loss_fn,
            self.n,
            self.dim,
            self.domain,
            _example_struct(self.data),
            **{c: getattr(self, c) for c in CONSTANTS},
        )

    def utility_oscillation(self) -> float:
        """Bound on ``osc_K(f(., z) - f(., z'))`` for any two examples ``z, z'``.

        The minimum of the available declared bounds: ``2 G D`` (needs a bounded
        domain of diameter ``D``), ``2 B`` and the declared ``oscillation``
        (:meth:`ProblemSpec.utility_oscillation`).

        Returns:
            The bound (a Python float).

        Raises:
            MissingConstantError: If no bound is available.
        """
        return self.spec.utility_oscillation()

    # -------------------------------------------------------------------- probing
    def check_constants(
        self, rng_key: PRNGKey, *, num_points: int = 64
    ) -> dict[str, float]:
        """Warn when the data visibly violate a declared constant (non-private).

        **This is a diagnostic that reads the private data: its output is not
        differentially private and must never be used to set or tune the constants**
        (a constant chosen from the data voids every guarantee). It can only find
        violations, never certify a constant.

        It samples ``num_points`` points ``x`` in the domain (uniform for a ball,
        standard normal for :class:`~dpsample.domains.Unconstrained`) and partners
        ``x'`` (half nearby, half independent) and measures, over all examples:

        * ``lipschitz``: ``max ||grad f(x, z)|| / G``;
        * ``smoothness``: ``max ||grad f(x, z) - grad f(x', z)|| / (M ||x - x'||)``;
        * ``hessian_lipschitz``: ``max ||(H(x, z) - H(x', z)) u|| / (rho ||x - x'||)``
          for a random unit ``u``;
        * ``loss_range``: spread ``max f - min f`` over all points and examples,
          divided by ``B``;
        * ``oscillation``: ``max_z Delta(z) - min_z Delta(z)`` with
          ``Delta(z) = f(x, z) - f(x', z)``, divided by the declared oscillation;
        * ``loss_floor``: the measured ``min f`` and ``max f`` against the declared
          interval ``[floor, floor + B]``: ``max(max f - floor, floor + B - min f)
          / B`` (above 1 exactly when a value falls outside the interval).

        A ratio above ``1 + 1e-6`` triggers a :class:`ConstantViolationWarning`.

        Args:
            rng_key: A JAX PRNG key.
            num_points: Number of probe pairs.

        Returns:
            ``{constant name: max observed ratio}`` for each declared constant (a
            ratio ``<= 1`` means no violation was seen). For a declared zero constant
            the ratio is ``inf`` if any nonzero change was seen, else ``0``.
        """
        num_points = validation.positive_int("num_points", num_points)
        xs, partners = probe_points(self.domain, self.dim, rng_key, num_points)
        u = jax.random.normal(jax.random.fold_in(rng_key, 1), (self.dim,))
        u = u / jnp.linalg.norm(u)
        observed = probe(self.loss_fn, xs, partners, u, self.data)
        report, violations = constant_ratios(
            {c: getattr(self, c) for c in CONSTANTS},
            {k: float(v) for k, v in observed.items()},
        )
        for message in violations:
            warnings.warn(message, ConstantViolationWarning, stacklevel=2)
        return report


precision.scope_public(globals())
