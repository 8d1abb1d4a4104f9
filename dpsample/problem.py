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

import functools
import math
import warnings
from collections.abc import Callable
from typing import Any

import dp_accounting
import jax
import jax.numpy as jnp
import numpy as np

from dpsample._src import validation
from dpsample.domains import Ball, Domain, Unconstrained
from dpsample.errors import MissingConstantError
from dpsample.types import Array, ArrayLike, ArrayLikeTree, ArrayTree, PRNGKey

__all__ = ["Problem", "ConstantViolationWarning"]

# Relative slack before a measured ratio counts as a violation (float64 round-off).
_VIOLATION_RTOL = 1e-6


class ConstantViolationWarning(UserWarning):
    """The data visibly violate a declared constant (``Problem.check_constants``)."""


def _to_array(leaf: Any) -> Array:
    arr = np.asarray(leaf)
    if arr.dtype.kind == "f":
        return jnp.asarray(arr, jnp.float64)
    return jnp.asarray(arr)


def _loss_name(loss_fn: Callable[..., Any]) -> str:
    return getattr(loss_fn, "__name__", None) or type(loss_fn).__name__


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

        if dim is None and domain.dim is None:
            raise ValueError(
                "The dimension of x is unknown: pass dim=... to Problem or give the "
                "domain a dimension (e.g. Ball(1.0, dim=d))"
            )
        if dim is not None:
            domain = domain.with_dim(dim)
        self.domain = domain
        self.dim = int(domain.dim)

        def opt(name: str, value: Any, check: Callable[..., float]) -> float | None:
            return None if value is None else check(name, value)

        self.lipschitz = opt("lipschitz", lipschitz, validation.positive)
        self.smoothness = opt("smoothness", smoothness, validation.nonnegative)
        self.hessian_lipschitz = opt(
            "hessian_lipschitz", hessian_lipschitz, validation.nonnegative
        )
        self.loss_range = opt("loss_range", loss_range, validation.positive)
        self.oscillation = opt("oscillation", oscillation, validation.positive)
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

    def replace(self, *, data: ArrayLikeTree = None, domain: Domain = None) -> Problem:
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
        )

    def __repr__(self) -> str:
        consts = ", ".join(
            f"{k}={getattr(self, k)!r}"
            for k in (
                "lipschitz",
                "smoothness",
                "hessian_lipschitz",
                "loss_range",
                "oscillation",
            )
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
        return jnp.mean(self._per_example_losses(x, data))

    def per_example_losses(self, x: ArrayLike) -> Array:
        """Losses ``f(x, z_i)`` for every example, shape ``(n,)``."""
        return self._per_example_losses(self._point(x), self.data)

    def empirical_risk(self, x: ArrayLike) -> Array:
        """Empirical risk ``F_D(x) = (1/n) sum_i f(x, z_i)`` (a scalar)."""
        return self._risk(self._point(x), self.data)

    def gradient(self, x: ArrayLike) -> Array:
        """Gradient of the empirical risk, shape ``(d,)``."""
        return jax.grad(self._risk)(self._point(x), self.data)

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
        """Full Hessian of the empirical risk, shape ``(d, d)`` (small ``d`` only)."""
        return jax.hessian(self._risk)(self._point(x), self.data)

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
    def utility_oscillation(self) -> float:
        """Bound on ``osc_K(f(., z) - f(., z'))`` for any two examples ``z, z'``.

        The minimum of the available declared bounds: ``2 G D`` (needs a bounded
        domain of diameter ``D``), ``2 B`` and the declared ``oscillation``. It uses
        declared constants only, so it is a valid sensitivity for the exponential
        mechanism with utility ``-n F_D`` under replace-one neighbours.

        Returns:
            The bound (a Python float).

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
                "2 G D), or oscillation=...; none is available for this Problem "
                f"(domain {self.domain!r})"
            )
        return float(min(bounds))

    # -------------------------------------------------------------------- probing
    def _probe_points(self, rng_key: PRNGKey, num: int) -> tuple[Array, Array]:
        """``num`` pairs ``(x, x')``: half nearby pairs, half independent pairs."""
        k1, k2, k3 = jax.random.split(rng_key, 3)
        if isinstance(self.domain, Ball):
            xs = self.domain.sample_uniform(k1, num)
            far = self.domain.sample_uniform(k2, num)
            scale = 1e-2 * self.domain.radius
        else:
            xs = jax.random.normal(k1, (num, self.dim), jnp.float64)
            far = jax.random.normal(k2, (num, self.dim), jnp.float64)
            scale = 1e-2
        near = self.domain.project(
            xs + scale * jax.random.normal(k3, (num, self.dim), jnp.float64)
        )
        half = num // 2
        return xs, jnp.concatenate([near[:half], far[half:]])

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
          ``Delta(z) = f(x, z) - f(x', z)``, divided by the declared oscillation.

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
        xs, partners = self._probe_points(rng_key, num_points)
        u = jax.random.normal(jax.random.fold_in(rng_key, 1), (self.dim,))
        u = u / jnp.linalg.norm(u)
        observed = _probe(self.loss_fn, xs, partners, u, self.data)
        observed = {k: float(v) for k, v in observed.items()}

        report: dict[str, float] = {}
        for name in (
            "lipschitz",
            "smoothness",
            "hessian_lipschitz",
            "loss_range",
            "oscillation",
        ):
            declared = getattr(self, name)
            if declared is None:
                continue
            seen = observed[name]
            if declared > 0:
                ratio = seen / declared
            else:
                ratio = math.inf if seen > _VIOLATION_RTOL else 0.0
            report[name] = ratio
            if ratio > 1.0 + _VIOLATION_RTOL:
                warnings.warn(
                    f"The data violate the declared {name}={declared!r}: observed "
                    f"{seen!r} (ratio {ratio:.4g}) at sampled points. Fix the public "
                    "constant from its derivation (or the data preprocessing), never "
                    "from this measurement.",
                    ConstantViolationWarning,
                    stacklevel=2,
                )
        return report


@functools.partial(jax.jit, static_argnums=0)
def _probe(
    loss_fn: Callable[..., Array],
    xs: Array,
    partners: Array,
    u: Array,
    data: ArrayTree,
) -> dict[str, Array]:
    """Max observed G, M, rho, spread and oscillation over probe pairs (jitted)."""
    grad_fn = jax.grad(loss_fn)
    per_ex = jax.vmap(loss_fn, in_axes=(None, 0))
    per_grad = jax.vmap(grad_fn, in_axes=(None, 0))

    def hvp(x, example):
        return jax.jvp(lambda p: grad_fn(p, example), (x,), (u,))[1]

    per_hvp = jax.vmap(hvp, in_axes=(None, 0))

    def one(pair):
        x, xp = pair
        dist = jnp.linalg.norm(x - xp)
        safe = jnp.where(dist > 0, dist, 1.0)
        g, gp = per_grad(x, data), per_grad(xp, data)
        h, hp = per_hvp(x, data), per_hvp(xp, data)
        f, fp = per_ex(x, data), per_ex(xp, data)
        delta = f - fp
        valid = dist > 0
        return {
            "lipschitz": jnp.max(jnp.linalg.norm(g, axis=-1)),
            "smoothness": jnp.where(
                valid, jnp.max(jnp.linalg.norm(g - gp, axis=-1)) / safe, 0.0
            ),
            "hessian_lipschitz": jnp.where(
                valid, jnp.max(jnp.linalg.norm(h - hp, axis=-1)) / safe, 0.0
            ),
            "f_max": jnp.maximum(jnp.max(f), jnp.max(fp)),
            "f_min": jnp.minimum(jnp.min(f), jnp.min(fp)),
            "oscillation": jnp.max(delta) - jnp.min(delta),
        }

    per_pair = jax.lax.map(one, (xs, partners))
    out = {k: jnp.max(v) for k, v in per_pair.items() if not k.startswith("f_")}
    out["loss_range"] = jnp.max(per_pair["f_max"]) - jnp.min(per_pair["f_min"])
    return out
