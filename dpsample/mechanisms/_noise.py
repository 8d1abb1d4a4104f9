"""Private helper: add i.i.d. noise to every leaf of a pytree, one key per leaf."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp

from dpsample._src import precision
from dpsample.types import ArrayLikeTree, ArrayTree, PRNGKey

__all__ = ["add_tree_noise"]

# sampler(rng_key, shape) -> float64 standard-noise array of that shape
NoiseFn = Callable[[PRNGKey, tuple[int, ...]], jax.Array]


def add_tree_noise(
    rng_key: PRNGKey, value: ArrayLikeTree, noise_fn: NoiseFn, scale: float
) -> ArrayTree:
    """Return ``value + scale * noise`` leafwise, with one fresh key per leaf.

    Leaves are promoted to at least float64 (integer and float32 inputs come back as
    float64), so the noise is never rounded to a coarser grid than float64.
    """
    leaves, treedef = jax.tree.flatten(value)
    if not leaves:
        return value
    keys = jax.random.split(rng_key, len(leaves))
    out = []
    for leaf_key, leaf in zip(keys, leaves, strict=True):
        leaf = jnp.asarray(leaf)
        dtype = jnp.promote_types(leaf.dtype, jnp.float64)
        noise = noise_fn(leaf_key, leaf.shape).astype(dtype)
        out.append(leaf.astype(dtype) + scale * noise)
    return jax.tree.unflatten(treedef, out)


precision.scope_public(globals())
