r"""DP-SGD as an optax transform: clip per-example gradients, sum, noise, average.

:func:`dp_sgd_transform` privatises per-example gradients for any optax optimiser
(``optax.chain(dp_sgd_transform(...), optax.adam(lr))``: the optimiser is
post-processing). Its hyperparameters may be numbers or arrays, so
``optax.inject_hyperparams(dp_sgd_transform)`` works under ``jit`` and with schedules;
the seed may be a key or an int, as optax's own noisy transforms take. The returned
:class:`DPSGDTransformation` is an ``optax.GradientTransformation`` that also knows
its settings, and :meth:`DPSGDTransformation.guarantee` accounts a run with them (the
same :func:`~dpsample.finders.dp_sgd.dp_sgd_guarantee` as ``finders.dp_sgd``).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from dpsample._src import precision, validation
from dpsample._src.clipping import (
    GRADIENT_DTYPES,
    check_clip_bound,
    clip_coefficients,
    clip_margin,
    usable_clip_bound,
)
from dpsample.finders.dp_sgd import dp_sgd_guarantee
from dpsample.privacy import PrivacyGuarantee
from dpsample.types import Array, ArrayLike, PRNGKey

__all__ = ["DPSGDState", "DPSGDTransformation", "dp_sgd_transform"]


class DPSGDState(NamedTuple):
    """State of :func:`dp_sgd_transform`: the PRNG key, split at every update."""

    rng_key: PRNGKey


class DPSGDTransformation(optax.GradientTransformation):
    """An ``optax.GradientTransformation`` (``init``, ``update``) with its settings.

    It unpacks and chains as any optax transformation; the attributes
    ``l2_clip_norm``, ``noise_multiplier`` and ``expected_batch_size`` hold what
    :func:`dp_sgd_transform` was given (public settings), and :meth:`guarantee`
    accounts a run of it.
    """

    l2_clip_norm: Any
    noise_multiplier: Any
    expected_batch_size: Any

    def guarantee(
        self,
        sampling_rate: float,
        steps: int,
        **options: Any,
    ) -> PrivacyGuarantee:
        """The guarantee of ``steps`` updates at this transform's noise multiplier.

        :func:`~dpsample.finders.dp_sgd.dp_sgd_guarantee` with
        ``noise_multiplier`` read from the transform (replace-one neighbours; the
        sum's sensitivity ``2C`` is the accountant's). ``options`` are that
        function's (``sampling``, ``dataset_size``, ``max_batch_size``,
        ``relation``). The caller states how batches were drawn: Poisson at rate
        ``sampling_rate`` (the default) is what the accountant covers.

        Raises:
            TypeError: If the noise multiplier is not a concrete number (a traced
                or scheduled value: account its steps with ``dp_sgd_guarantee`` per
                distinct value, read from ``optax.inject_hyperparams``'s state,
                composed with ``PrivacyGuarantee.compose``).
        """
        z = self.noise_multiplier
        if isinstance(z, jax.core.Tracer) or np.ndim(z) != 0:
            raise TypeError(
                "guarantee() needs a concrete scalar noise_multiplier, got "
                f"{type(z).__name__}; account a schedule step by step with "
                "dp_sgd_guarantee"
            )
        return dp_sgd_guarantee(float(z), sampling_rate, steps, **options)


def _static(value: Any) -> bool:
    return not isinstance(value, jax.core.Tracer)


def _seed_key(rng_key: Any) -> Any:
    """A PRNG key from a key (checked) or an integer seed (traced or not)."""
    if isinstance(rng_key, bool):
        raise TypeError("Expected rng_key to be a JAX PRNG key or an int seed")
    if isinstance(rng_key, int | np.integer):
        return jax.random.key(int(rng_key))
    if isinstance(rng_key, jax.Array) and jnp.issubdtype(rng_key.dtype, jnp.integer):
        if rng_key.shape == ():
            return jax.random.key(rng_key)
    return validation.check_key(rng_key)


def _divisor(value: Any) -> Any:
    if value is None or not _static(value):
        return value
    arr = np.asarray(value)
    if arr.shape != () or not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"Expected expected_batch_size to be an int, got {value!r}")
    return validation.positive_int("expected_batch_size", int(arr))


def dp_sgd_transform(
    *,
    l2_clip_norm: ArrayLike,
    noise_multiplier: ArrayLike,
    rng_key: PRNGKey | int,
    expected_batch_size: int | ArrayLike | None = None,
) -> DPSGDTransformation:
    r"""Privatising optax transform: clip per-example gradients, sum, noise, average.

    ``update(updates, state, params=None)`` expects **per-example** gradients: a pytree
    whose leaves have a leading batch axis ``B``. Each example's whole gradient (all
    leaves) is clipped to L2 norm ``l2_clip_norm / F``, the clipped gradients are
    summed, ``N(0, (noise_multiplier * l2_clip_norm)^2)`` is added to every coordinate
    (one key per leaf), and the result is divided by ``expected_batch_size`` (Poisson
    sampling: a constant divisor keeps the sensitivity exact) or by ``B``. Chain it
    with any optax optimiser (post-processing), e.g.
    ``optax.chain(dp_sgd_transform(...), optax.sgd(lr))``.

    ``noise_multiplier`` is the ecosystem's (Abadi et al., Opacus, TF Privacy,
    dp-accounting) and dpsample's everywhere: noise std of the *sum* over the clip
    norm. The same value gives the same noise in
    :func:`~dpsample.finders.oracles.first_kind` (``z C / b`` on the mean) and the
    same guarantee in :func:`~dpsample.finders.dp_sgd.dp_sgd_guarantee`, which
    :meth:`DPSGDTransformation.guarantee` calls with the transform's own setting.
    For a padded Poisson batch, zero the padding rows' gradients (they then
    contribute 0).

    Hyperparameters may be Python numbers or arrays, concrete or traced, so
    ``optax.inject_hyperparams(dp_sgd_transform)(l2_clip_norm=..., ...)`` runs under
    ``jit`` and takes schedules. Concrete values are checked here (``C > 0``, ``z >=
    0``, an integer divisor); a traced clip norm is brought into the dtype's
    :data:`~dpsample._src.clipping.CLIP_RANGES` at run time (it only decreases, so the
    sensitivity stated for ``C`` holds), and the noise std is ``|z| C`` (the normal
    is symmetric). ``rng_key`` is a JAX key or an int seed (``jax.random.key(seed)``).

    Clipping goes through :mod:`dpsample._src.clipping` like every clipping path:
    rows are clipped at ``C / F`` with the rounding margin ``F`` of
    :func:`~dpsample.finders.oracles.clip_margin` for the leaves' dtype (float32 if
    any leaf is float32), so the sum keeps its sensitivity ``2C`` as computed, and a
    row with a non-finite norm contributes zero. Leaves must be float32 or float64.

    Args:
        l2_clip_norm: Clip norm ``C > 0`` (``inf`` allowed: no clipping, no guarantee).
        noise_multiplier: ``z >= 0`` (0: no noise, no guarantee).
        rng_key: A PRNG key or an int seed, stored in the state and split at every
            update.
        expected_batch_size: Optional constant divisor.

    Returns:
        A :class:`DPSGDTransformation` (an ``optax.GradientTransformation``).

    Privacy:
        Per-example contribution ``C``; with Poisson sampling at rate ``q`` for ``T``
        steps the run is covered by ``tx.guarantee(q, T)`` (replace-one: the
        sensitivity of the sum is ``2C``, handled by the accountant).

    Examples:
        >>> import jax, jax.numpy as jnp, optax
        >>> from dpsample.finders import dp_sgd_transform
        >>> dp = dp_sgd_transform(l2_clip_norm=1.0, noise_multiplier=0.0, rng_key=0)
        >>> tx = optax.chain(dp, optax.sgd(0.1))
        >>> params = {"w": jnp.zeros(2)}
        >>> state = tx.init(params)
        >>> grads = {"w": jnp.array([[3.0, 4.0], [0.0, 0.5]])}  # 2 examples
        >>> upd, state = tx.update(grads, state, params)
        >>> [round(v, 12) for v in upd["w"].tolist()]  # -0.1 * mean(clipped)
        [-0.03, -0.065]
        >>> noisy = dp_sgd_transform(l2_clip_norm=1.0, noise_multiplier=1.1, rng_key=0)
        >>> round(noisy.guarantee(0.01, 1000).epsilon(1e-5), 2) > 0
        True
    """
    if _static(l2_clip_norm):
        clip: Any = validation.positive("l2_clip_norm", l2_clip_norm, allow_inf=True)
    else:
        clip = l2_clip_norm
    if _static(noise_multiplier):
        z: Any = validation.nonnegative("noise_multiplier", noise_multiplier)
    else:
        z = noise_multiplier
    key = _seed_key(rng_key)
    divisor = _divisor(expected_batch_size)

    def init_fn(params: Any) -> DPSGDState:
        del params
        return DPSGDState(key)

    def update_fn(
        updates: Any, state: DPSGDState, params: Any = None
    ) -> tuple[Any, DPSGDState]:
        del params
        leaves, treedef = jax.tree.flatten(updates)
        batch = leaves[0].shape[0]
        if isinstance(clip, float) and math.isinf(clip):  # no clipping, no guarantee
            scale = jnp.ones(batch)
        else:
            scale = _clip_scale(leaves, batch, clip)
        new_key, sub = jax.random.split(state.rng_key)
        keys = jax.random.split(sub, len(leaves))
        denom = batch if divisor is None else divisor
        if isinstance(z, float):
            std = z * clip if z > 0 else None
        else:  # traced: 0 noise when z = 0, whatever C (even inf)
            std = jnp.where(jnp.asarray(z) == 0, 0.0, jnp.asarray(z) * clip)
        out = []
        for leaf, k in zip(leaves, keys, strict=True):
            s = jnp.sum(leaf * scale.reshape((batch,) + (1,) * (leaf.ndim - 1)), axis=0)
            if std is not None:
                s = s + (std * jax.random.normal(k, s.shape, s.dtype)).astype(s.dtype)
            out.append(s / denom)
        return jax.tree.unflatten(treedef, out), DPSGDState(new_key)

    tx = DPSGDTransformation(init_fn, update_fn)
    tx.l2_clip_norm = l2_clip_norm
    tx.noise_multiplier = noise_multiplier
    tx.expected_batch_size = expected_batch_size
    return tx


def _clip_scale(leaves: list[Any], batch: int, clip: Any) -> Array:
    """Per-example clip coefficients of :func:`dp_sgd_transform` (shared clipping)."""
    dtypes = {jnp.dtype(leaf.dtype).name for leaf in leaves}
    if not dtypes <= set(GRADIENT_DTYPES):
        raise ValueError(
            f"dp_sgd_transform clips float32 or float64 gradients, got {sorted(dtypes)}"
        )
    name = "float32" if "float32" in dtypes else "float64"
    if isinstance(clip, float):
        bound: Any = check_clip_bound(clip, name)
    else:  # an array (a hyperparameter): into the range at run time, never raised
        bound = usable_clip_bound(clip, name)
    dim = max(1, sum(math.prod(leaf.shape[1:]) for leaf in leaves))
    sq = jnp.sum(
        jnp.stack([jnp.sum(leaf.reshape(batch, -1) ** 2, axis=1) for leaf in leaves]),
        axis=0,
    )
    coef, _ = clip_coefficients(
        sq,
        jnp.ones(batch),
        jnp.asarray(bound / clip_margin(name, batch, dim)),
        jnp.dtype(name),
    )
    return coef


precision.scope_public(globals())
