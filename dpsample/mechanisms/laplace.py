"""The Laplace mechanism: add Laplace noise calibrated to an L1 sensitivity."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from dpsample._src import precision, validation
from dpsample.mechanisms._noise import add_tree_noise
from dpsample.privacy import NeighboringRelation, PrivacyGuarantee, PrivateResult
from dpsample.types import ArrayLikeTree, PRNGKey

__all__ = ["laplace"]


def _standard_laplace(rng_key: PRNGKey, shape: tuple[int, ...]) -> jax.Array:
    return jax.random.laplace(rng_key, shape, dtype=jnp.float64)


def laplace(
    rng_key: PRNGKey,
    value: ArrayLikeTree,
    *,
    l1_sensitivity: float,
    epsilon: float,
    relation: NeighboringRelation = NeighboringRelation.REPLACE_ONE,
) -> PrivateResult:
    r"""Laplace mechanism: release ``value + Lap(l1_sensitivity / epsilon)`` noise.

    .. math::

        M(D) = f(D) + Z, \qquad Z_j \overset{iid}{\sim}
            \mathrm{Laplace}(0, b), \quad b = \Delta_1 / \varepsilon.

    ``value`` may be any pytree of arrays; every coordinate of every leaf receives
    independent noise (one PRNG key per leaf). Leaves come back in float64. Privacy
    parameters are validated eagerly; ``jit`` is left to the caller.

    Privacy:
        Neighbouring relation: ``relation`` (replace-one by default).
        ``l1_sensitivity`` must bound :math:`\Delta_1 = \sup_{D \sim D'}
        \|f(D) - f(D')\|_1`, summed over all leaves. The privacy loss at any output
        is at most :math:`\|f(D) - f(D')\|_1 / b \le \varepsilon`, so the mechanism
        is pure ε-DP; the returned guarantee is
        ``PrivacyGuarantee.laplace(1 / epsilon)`` (scale over sensitivity
        :math:`b / \Delta_1`), whose PLD composes tighter than ε-DP. Floating-point
        caveat: textbook float Laplace sampling is not exactly ε-DP (Mironov 2012).

    Args:
        rng_key: a PRNG key (consumed).
        value: pytree of arrays, the statistic :math:`f(D)`.
        l1_sensitivity: :math:`\Delta_1 > 0`, finite.
        epsilon: privacy parameter, ``> 0`` and finite.
        relation: the neighbouring relation under which ``l1_sensitivity`` holds.

    Returns:
        ``PrivateResult(value, privacy, info)``; ``info`` has ``scale`` (the Laplace
        scale ``b``), ``noise_to_sensitivity`` (``b / l1_sensitivity = 1 /
        epsilon``), ``l1_sensitivity`` and ``epsilon``.

    Raises:
        ValueError: ``epsilon`` or ``l1_sensitivity`` not positive and finite.

    Examples:
        >>> import jax
        >>> import jax.numpy as jnp
        >>> from dpsample.mechanisms import laplace
        >>> res = laplace(jax.random.key(0), jnp.zeros(3), l1_sensitivity=1.0,
        ...               epsilon=0.5)
        >>> res.value.shape, res.info["scale"], res.privacy.epsilon(0.0)
        ((3,), 2.0, 0.5)

    References:
        Dwork, McSherry, Nissim & Smith, `Calibrating Noise to Sensitivity in Private
        Data Analysis <https://doi.org/10.1007/11681878_14>`_, 2006.
        Mironov, `On Significance of the Least Significant Bits for Differential
        Privacy <https://doi.org/10.1145/2382196.2382264>`_, 2012.
    """
    l1_sensitivity = validation.positive("l1_sensitivity", l1_sensitivity)
    epsilon = validation.positive("epsilon", epsilon)
    ratio = 1.0 / epsilon
    scale = l1_sensitivity * ratio
    noisy = add_tree_noise(rng_key, value, _standard_laplace, scale)
    info = {
        "scale": scale,
        "noise_to_sensitivity": ratio,
        "l1_sensitivity": l1_sensitivity,
        "epsilon": epsilon,
    }
    privacy = PrivacyGuarantee.laplace(ratio, relation=relation)
    return PrivateResult(noisy, privacy, info)


precision.scope_public(globals())
