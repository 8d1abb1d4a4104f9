"""The empirical risk's compiled kernels and the constant probe of ``Problem``.

:func:`mean_loss` is the one definition of ``F_D(x) = (1/n) sum_i f(x, z_i)``; the
gradient, Hessian and Hessian-vector product are jitted with ``loss_fn`` static, so
each compiles once per loss function and shape (:func:`compiled` falls back to the
eager function for an unhashable ``loss_fn``). :func:`probe` and
:func:`probe_points` measure what :meth:`dpsample.problem.Problem.check_constants`
compares with the declared constants, and :func:`constant_ratios` makes that
comparison (a non-private diagnostic: it reads the data).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from typing import Any

import jax
import jax.numpy as jnp

from dpsample.domains import Ball, Domain
from dpsample.types import Array, ArrayTree, PRNGKey

__all__ = [
    "VIOLATION_RTOL",
    "compiled",
    "constant_ratios",
    "mean_loss",
    "probe",
    "probe_points",
    "risk_gradient",
    "risk_hessian",
    "risk_hvp",
]

#: Relative slack before a measured ratio counts as a violation (float64 round-off).
VIOLATION_RTOL = 1e-6


def mean_loss(loss_fn: Callable[..., Array], x: Array, data: ArrayTree) -> Array:
    """The empirical risk ``(1/n) sum_i f(x, z_i)`` (the one definition)."""
    return jnp.mean(jax.vmap(loss_fn, in_axes=(None, 0))(x, data))


@functools.partial(jax.jit, static_argnums=0)
def risk_gradient(loss_fn: Callable[..., Array], x: Array, data: ArrayTree) -> Array:
    """``grad F_D(x)``, jitted: compiled once per ``loss_fn`` and shape."""
    return jax.grad(mean_loss, argnums=1)(loss_fn, x, data)


@functools.partial(jax.jit, static_argnums=0)
def risk_hessian(loss_fn: Callable[..., Array], x: Array, data: ArrayTree) -> Array:
    """``hess F_D(x)``, jitted: compiled once per ``loss_fn`` and shape."""
    return jax.hessian(mean_loss, argnums=1)(loss_fn, x, data)


def hvp(loss_fn: Callable[..., Array], x: Array, v: Array, data: ArrayTree) -> Array:
    """``hess F_D(x) v`` (forward-over-reverse, the Hessian never formed)."""
    grad_fn = jax.grad(mean_loss, argnums=1)
    return jax.jvp(lambda p: grad_fn(loss_fn, p, data), (x,), (v,))[1]


#: :func:`hvp` jitted: compiled once per ``loss_fn`` and shape.
risk_hvp = jax.jit(hvp, static_argnums=0)


def compiled(
    jitted: Callable[..., Array], eager: Callable[..., Array]
) -> Callable[..., Array]:
    """``jitted`` (static ``loss_fn``), or ``eager`` for an unhashable ``loss_fn``."""

    def call(loss_fn: Callable[..., Array], *operands: Any) -> Array:
        try:
            hash(loss_fn)
        except TypeError:
            return eager(loss_fn, *operands)
        return jitted(loss_fn, *operands)

    return call


def probe_points(
    domain: Domain, dim: int, rng_key: PRNGKey, num: int
) -> tuple[Array, Array]:
    """``num`` pairs ``(x, x')`` of ``domain``: half nearby pairs, half independent."""
    k1, k2, k3 = jax.random.split(rng_key, 3)
    if isinstance(domain, Ball):
        xs = domain.sample_uniform(k1, num)
        far = domain.sample_uniform(k2, num)
        scale = 1e-2 * domain.radius
    else:
        xs = jax.random.normal(k1, (num, dim), jnp.float64)
        far = jax.random.normal(k2, (num, dim), jnp.float64)
        scale = 1e-2
    near = domain.project(xs + scale * jax.random.normal(k3, (num, dim), jnp.float64))
    half = num // 2
    return xs, jnp.concatenate([near[:half], far[half:]])


@functools.partial(jax.jit, static_argnums=0)
def probe(
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
    out["loss_max"] = jnp.max(per_pair["f_max"])
    out["loss_min"] = jnp.min(per_pair["f_min"])
    out["loss_range"] = out["loss_max"] - out["loss_min"]
    return out


def constant_ratios(
    declared: Mapping[str, float | None], observed: Mapping[str, float]
) -> tuple[dict[str, float], list[str]]:
    """Observed over declared, for each declared constant, and the violations.

    Args:
        declared: ``{constant: declared value or None}``, in the order reported.
        observed: :func:`probe`'s measurements (floats).

    Returns:
        ``({constant: ratio}, [one message per ratio above 1 + VIOLATION_RTOL])``.
    """
    observed = dict(observed)
    floor, width = declared.get("loss_floor"), declared.get("loss_range")
    if floor is not None:
        assert width is not None  # refused at construction
        # the length of the interval anchored at the declared ends that holds
        # every measured value: <= B exactly when none falls outside
        observed["loss_floor"] = max(
            observed["loss_max"] - floor, floor + width - observed["loss_min"]
        )
    report: dict[str, float] = {}
    violations: list[str] = []
    for name, value in declared.items():
        if value is None:
            continue
        seen = observed[name]
        label = name
        shown: tuple[Any, Any] = (value, seen)
        if name == "loss_floor":
            assert width is not None
            ratio = seen / width
            label = "loss interval [loss_floor, loss_floor + B]"
            shown = (
                (value, value + width),
                (observed["loss_min"], observed["loss_max"]),
            )
        elif value > 0:
            ratio = seen / value
        else:
            ratio = math.inf if seen > VIOLATION_RTOL else 0.0
        report[name] = ratio
        if ratio > 1.0 + VIOLATION_RTOL:
            violations.append(
                f"The data violate the declared {label}={shown[0]!r}: observed "
                f"{shown[1]!r} (ratio {ratio:.4g}) at sampled points. Fix the "
                "public constant from its derivation (or the data preprocessing), "
                "never from this measurement."
            )
    return report, violations
