"""Eager validation of public parameters (outside ``jit``, before any private work).

Every check raises :class:`ValueError` (or a subclass from :mod:`dpsample.errors`) with
a message that names the parameter and the value, e.g. ``Expected epsilon=-1.0 > 0``.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from dpsample.errors import MissingConstantError

__all__ = [
    "finite_scalar",
    "positive",
    "nonnegative",
    "delta_in_open_unit",
    "probability",
    "positive_int",
    "finite_tree",
    "require_constant",
    "check_key",
    "check_privacy",
]


def _as_float(name: str, value: Any) -> float:
    if isinstance(value, bool):
        raise TypeError(f"Expected {name} to be a number, got a bool")
    try:
        out = float(value)
    except (TypeError, ValueError) as err:
        raise TypeError(f"Expected {name} to be a number, got {value!r}") from err
    if math.isnan(out):
        raise ValueError(f"Expected {name} to be a number, got NaN")
    return out


def finite_scalar(name: str, value: Any) -> float:
    """Return ``float(value)`` after checking it is a finite number (any sign)."""
    out = _as_float(name, value)
    if not math.isfinite(out):
        raise ValueError(f"Expected {name}={out!r} to be finite")
    return out


def positive(name: str, value: Any, *, allow_inf: bool = False) -> float:
    """Return ``float(value)`` after checking ``value > 0`` (finite unless allowed)."""
    out = _as_float(name, value)
    if not out > 0:
        raise ValueError(f"Expected {name}={out!r} > 0")
    if math.isinf(out) and not allow_inf:
        raise ValueError(f"Expected {name}={out!r} to be finite")
    return out


def nonnegative(name: str, value: Any, *, allow_inf: bool = False) -> float:
    """Return ``float(value)`` after checking ``value >= 0``."""
    out = _as_float(name, value)
    if not out >= 0:
        raise ValueError(f"Expected {name}={out!r} >= 0")
    if math.isinf(out) and not allow_inf:
        raise ValueError(f"Expected {name}={out!r} to be finite")
    return out


def delta_in_open_unit(delta: Any, name: str = "delta") -> float:
    """Return ``float(delta)`` after checking ``0 < delta < 1``."""
    out = _as_float(name, delta)
    if not 0.0 < out < 1.0:
        raise ValueError(f"Expected {name}={out!r} in the open interval (0, 1)")
    return out


def probability(name: str, value: Any, *, open_left: bool = False) -> float:
    """Return ``float(value)`` after checking it is in [0, 1] ((0, 1] if open_left)."""
    out = _as_float(name, value)
    lo_ok = out > 0 if open_left else out >= 0
    if not (lo_ok and out <= 1):
        interval = "(0, 1]" if open_left else "[0, 1]"
        raise ValueError(f"Expected {name}={out!r} in {interval}")
    return out


def positive_int(name: str, value: Any) -> int:
    """Return ``int(value)`` after checking it is an integer >= 1."""
    if isinstance(value, bool) or int(value) != value:
        raise TypeError(f"Expected {name} to be an integer, got {value!r}")
    out = int(value)
    if out < 1:
        raise ValueError(f"Expected {name}={out} >= 1")
    return out


def one_of(name: str, value: Any, options: tuple[str, ...]) -> str:
    """Return ``value`` after checking it is one of ``options``."""
    if not isinstance(value, str) or value not in options:
        raise ValueError(f"Expected {name} in {options}, got {value!r}")
    return value


def finite_tree(name: str, tree: Any) -> None:
    """Raise ``ValueError`` if any leaf of ``tree`` holds NaN or infinity."""
    for leaf in jax.tree.leaves(tree):
        arr = np.asarray(leaf)
        if arr.dtype.kind in "fc" and not np.all(np.isfinite(arr)):
            raise ValueError(f"Expected {name} to be finite, found NaN or inf values")


def require_constant(name: str, value: Any, *, needed_for: str) -> float:
    """Return a declared public constant, or raise :class:`MissingConstantError`."""
    if value is None:
        raise MissingConstantError(
            f"{needed_for} needs the public constant {name}, which was not declared; "
            f"pass {name}=... (a data-independent bound) to the Problem"
        )
    return positive(name, value)


def check_key(rng_key: Any) -> jax.Array:
    """Check ``rng_key`` is a single JAX PRNG key (typed or raw ``uint32[2]``)."""
    if not isinstance(rng_key, jax.Array):
        raise TypeError(
            f"Expected rng_key to be a JAX PRNG key (jax.random.key(seed)), got "
            f"{type(rng_key).__name__}"
        )
    if jnp.issubdtype(rng_key.dtype, jax.dtypes.prng_key):
        if rng_key.shape != ():
            raise ValueError(f"Expected one PRNG key, got shape {rng_key.shape}")
        return rng_key
    if rng_key.dtype == jnp.uint32 and rng_key.shape == (2,):
        return rng_key
    raise TypeError(
        f"Expected rng_key to be a JAX PRNG key, got dtype {rng_key.dtype} and shape "
        f"{rng_key.shape}"
    )


def check_privacy(epsilon: Any, delta: Any) -> tuple[float, float]:
    """Validate ``epsilon > 0`` (finite) and ``delta`` in ``(0, 1)``."""
    return positive("epsilon", epsilon), delta_in_open_unit(delta)
