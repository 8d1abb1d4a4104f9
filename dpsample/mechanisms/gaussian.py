"""The Gaussian mechanism: add Gaussian noise calibrated to an L2 sensitivity."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from dpsample._src import precision, validation
from dpsample.mechanisms._noise import add_tree_noise
from dpsample.privacy import (
    NeighboringRelation,
    PrivacyGuarantee,
    PrivateResult,
    calibrate_noise,
)
from dpsample.types import ArrayLikeTree, PRNGKey

__all__ = ["gaussian"]


def _standard_normal(rng_key: PRNGKey, shape: tuple[int, ...]) -> jax.Array:
    return jax.random.normal(rng_key, shape, dtype=jnp.float64)


def _noise_to_sensitivity(
    noise_to_sensitivity: float | None,
    epsilon: float | None,
    delta: float | None,
    relation: NeighboringRelation,
) -> float:
    """Validate the noise specification and return noise std / L2 sensitivity."""
    if noise_to_sensitivity is not None:
        if epsilon is not None or delta is not None:
            raise ValueError(
                "Pass exactly one of noise_to_sensitivity or (epsilon, delta), got both"
            )
        return validation.positive("noise_to_sensitivity", noise_to_sensitivity)
    if epsilon is None and delta is None:
        raise ValueError(
            "Pass exactly one of noise_to_sensitivity or (epsilon, delta), got neither"
        )
    if epsilon is None or delta is None:
        raise ValueError("epsilon and delta must be passed together")
    epsilon = validation.positive("epsilon", epsilon)
    delta = validation.delta_in_open_unit(delta)
    return calibrate_noise(
        lambda s: PrivacyGuarantee.gaussian(s, relation=relation),
        epsilon=epsilon,
        delta=delta,
    )


def gaussian(
    rng_key: PRNGKey,
    value: ArrayLikeTree,
    *,
    l2_sensitivity: float,
    noise_to_sensitivity: float | None = None,
    epsilon: float | None = None,
    delta: float | None = None,
    relation: NeighboringRelation = NeighboringRelation.REPLACE_ONE,
) -> PrivateResult:
    r"""Gaussian mechanism: release ``value + N(0, stddev^2 I)``.

    .. math::

        M(D) = f(D) + Z, \qquad Z \sim \mathcal N(0, \sigma^2 I), \quad
            \sigma = \text{noise\_to\_sensitivity} \cdot \Delta_2 .

    Give either ``noise_to_sensitivity`` directly, or a target ``(epsilon, delta)``:
    the smallest ratio whose guarantee meets it is then found by
    :func:`dpsample.privacy.calibrate_noise` (tight PLD/RDP accounting and a final
    ``epsilon(delta) <= epsilon`` check). ``value`` may be any pytree of arrays;
    every leaf gets independent noise (one PRNG key per leaf) and comes back in
    float64. Privacy parameters are validated eagerly; ``jit`` is left to the
    caller.

    Privacy:
        Neighbouring relation: ``relation`` (replace-one by default).
        ``l2_sensitivity`` must bound :math:`\Delta_2 = \sup_{D \sim D'}
        \|f(D) - f(D')\|_2` (all leaves together). The mechanism is then the
        Gaussian mechanism with noise over sensitivity :math:`s = \sigma /
        \Delta_2`: :math:`1/(2 s^2)`-zCDP, and exactly the (ε, δ) curve of Balle &
        Wang (2018), both carried by
        ``PrivacyGuarantee.gaussian(noise_to_sensitivity)``. (This ratio is not
        the ecosystem's ``noise_multiplier``, std over one example's contribution
        bound, which :mod:`dpsample.finders` uses; for a sum of terms bounded by
        ``C`` under replace-one, ``Delta_2 = 2C`` and the noise multiplier is
        ``2 s``.) Floating-point sampling caveats as in Mironov (2012) apply.

    Args:
        rng_key: a PRNG key (consumed).
        value: pytree of arrays, the statistic :math:`f(D)`.
        l2_sensitivity: :math:`\Delta_2 > 0`, finite.
        noise_to_sensitivity: :math:`\sigma / \Delta_2 > 0`; exclusive with
            ``(epsilon, delta)``.
        epsilon: target epsilon ``> 0`` (with ``delta``).
        delta: target delta in ``(0, 1)`` (with ``epsilon``).
        relation: the neighbouring relation under which ``l2_sensitivity`` holds.

    Returns:
        ``PrivateResult(value, privacy, info)``; ``info`` has ``stddev`` (σ),
        ``noise_to_sensitivity`` and ``l2_sensitivity``.

    Raises:
        ValueError: both or neither of the noise specifications, ``epsilon``
            without ``delta`` (or vice versa), ``delta`` outside ``(0, 1)``, or any
            parameter not positive and finite.

    Examples:
        >>> import jax
        >>> import jax.numpy as jnp
        >>> from dpsample.mechanisms import gaussian
        >>> res = gaussian(jax.random.key(0), {"w": jnp.zeros(2), "b": 0.0},
        ...                l2_sensitivity=0.5, noise_to_sensitivity=2.0)
        >>> res.info["stddev"], res.value["w"].shape
        (1.0, (2,))
        >>> res = gaussian(jax.random.key(1), jnp.zeros(2), l2_sensitivity=1.0,
        ...                epsilon=1.0, delta=1e-5)
        >>> res.privacy.epsilon(1e-5) <= 1.0
        True

    References:
        Dwork & Roth, `The Algorithmic Foundations of Differential Privacy
        <https://doi.org/10.1561/0400000042>`_, 2014.
        Balle & Wang, `Improving the Gaussian Mechanism for Differential Privacy
        <https://arxiv.org/abs/1805.06530>`_, 2018.
        Bun & Steinke, `Concentrated Differential Privacy
        <https://arxiv.org/abs/1605.02065>`_, 2016.
    """
    l2_sensitivity = validation.positive("l2_sensitivity", l2_sensitivity)
    ratio = _noise_to_sensitivity(noise_to_sensitivity, epsilon, delta, relation)
    stddev = ratio * l2_sensitivity
    noisy = add_tree_noise(rng_key, value, _standard_normal, stddev)
    info = {
        "stddev": stddev,
        "noise_to_sensitivity": ratio,
        "l2_sensitivity": l2_sensitivity,
    }
    privacy = PrivacyGuarantee.gaussian(ratio, relation=relation)
    return PrivateResult(noisy, privacy, info)


precision.scope_public(globals())
