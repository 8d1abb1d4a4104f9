"""The exponential mechanism over a finite set of candidates (log space, float64)."""

from __future__ import annotations

import math
import sys

import jax
import jax.numpy as jnp
import numpy as np

from dpsample._src import precision, validation
from dpsample.privacy import NeighboringRelation, PrivacyGuarantee, PrivateResult
from dpsample.types import Array, ArrayLike, PRNGKey

__all__ = ["exponential", "exponential_logits", "gumbel_max"]


def _is_tracer(x: object) -> bool:
    return isinstance(x, jax.core.Tracer)


def _validated_utilities(utilities: ArrayLike) -> Array:
    """Return float64 1-D utilities, checking shape and (when concrete) finiteness."""
    if _is_tracer(utilities):
        u = jnp.asarray(utilities, dtype=jnp.float64)
    else:
        arr = np.asarray(utilities)
        if arr.dtype.kind not in "biuf":
            raise TypeError(f"Expected real utilities, got dtype {arr.dtype}")
        arr = arr.astype(np.float64)
        if not np.all(np.isfinite(arr)):
            raise ValueError("Expected utilities to be finite, found NaN or inf values")
        u = jnp.asarray(arr)
    if u.ndim != 1:
        raise ValueError(f"Expected 1-D utilities, got shape {u.shape}")
    if u.shape[0] == 0:
        raise ValueError("Expected at least one candidate, got empty utilities")
    return u


def _scaled_logits(u: Array, epsilon: float, sensitivity: float) -> Array:
    """``log_softmax(epsilon * u / (2 sensitivity))`` without overflow or NaN.

    Jittable in ``u``; ``epsilon`` and ``sensitivity`` are Python floats. The shift by
    the maximum comes first, on halves: ``h = u/2 - max/2`` cannot overflow (``u - max``
    can), every ``h <= 0`` and the maximum has ``h == 0`` exactly. Then
    ``z = h * (epsilon / sensitivity)``; a product that overflows gives ``-inf``, the
    correct limit (probability zero), and ``where(h == 0, 0, ...)`` keeps ``0 * inf``
    out. XLA flushes subnormal floats to zero, so a subnormal factor
    ``epsilon / sensitivity`` is applied in log space instead.
    """
    m = jnp.max(u)
    h = 0.5 * u - 0.5 * m
    factor = epsilon / sensitivity  # Python float: subnormals are exact here
    if factor == 0.0:  # below 5e-324: every |z| < 1e-15, the uniform limit
        z = jnp.zeros_like(u)
    elif math.isinf(factor):  # the argmax limit
        z = jnp.where(h == 0.0, 0.0, -jnp.inf)
    elif factor >= sys.float_info.min:
        z = jnp.where(h == 0.0, 0.0, h * factor)
    else:  # subnormal factor (XLA would flush it to 0); here |z| < 4
        log_abs = jnp.log(jnp.where(h == 0.0, 1.0, -h)) + math.log(factor)
        z = jnp.where(h == 0.0, 0.0, -jnp.exp(log_abs))
    return jax.nn.log_softmax(z)


def exponential_logits(
    utilities: ArrayLike, *, epsilon: float, sensitivity: float
) -> Array:
    r"""Normalised log-probabilities of the exponential mechanism.

    .. math::

        \log p_i = \frac{\varepsilon u_i}{2\Delta}
            - \log \sum_j \exp\Big(\frac{\varepsilon u_j}{2\Delta}\Big),

    evaluated in float64 as ``log_softmax((u - max u) * epsilon / (2 Delta))``: the
    shift by the maximum happens *before* the scaling, so utilities of any finite
    magnitude (up to ``1.8e308``) are handled; scaled gaps that overflow give
    ``-inf`` (probability exactly zero), never NaN.

    Args:
        utilities: 1-D array of finite utilities ``u_i`` (one per candidate). When
            traced (inside ``jit``), finiteness cannot be checked eagerly.
        epsilon: privacy parameter, ``> 0`` and finite.
        sensitivity: ``Delta``, the sensitivity of every utility, ``> 0`` and finite.

    Returns:
        float64 array of the same shape, ``logsumexp(result) == 0``.

    Raises:
        ValueError: non-finite or non-1-D utilities, or invalid epsilon/sensitivity.

    Examples:
        >>> import jax.numpy as jnp
        >>> from dpsample.mechanisms import exponential_logits
        >>> lp = exponential_logits(jnp.array([0.0, 1.0]), epsilon=2.0, sensitivity=1.0)
        >>> [round(float(p), 4) for p in jnp.exp(lp)]
        [0.2689, 0.7311]
        >>> lp = exponential_logits(
        ...     jnp.array([0.0, -1e300]), epsilon=2.0, sensitivity=1e300)
        >>> [round(float(p), 4) for p in jnp.exp(lp)]
        [0.7311, 0.2689]
    """
    epsilon = validation.positive("epsilon", epsilon)
    sensitivity = validation.positive("sensitivity", sensitivity)
    u = _validated_utilities(utilities)
    return _scaled_logits(u, epsilon, sensitivity)


def gumbel_max(rng_key: PRNGKey, logits: ArrayLike) -> Array:
    """Sample an index ``i`` with probability ``softmax(logits)_i`` (jittable core).

    Gumbel-max trick: ``argmax_i (logits_i + G_i)`` with i.i.d. standard Gumbel
    ``G_i`` (drawn in float64). Entries equal to ``-inf`` are never chosen; ties
    among finite logits are broken uniformly because the Gumbel noise is continuous.
    No validation: pass logits from :func:`exponential_logits`.

    Args:
        rng_key: a PRNG key (consumed).
        logits: 1-D float array with at least one finite entry.

    Returns:
        Scalar integer array, the selected index.

    Examples:
        >>> import jax
        >>> import jax.numpy as jnp
        >>> from dpsample.mechanisms import gumbel_max
        >>> int(gumbel_max(jax.random.key(0), jnp.array([0.0, -jnp.inf])))
        0
    """
    logits = jnp.asarray(logits, dtype=jnp.float64)
    noise = jax.random.gumbel(rng_key, logits.shape, dtype=jnp.float64)
    return jnp.argmax(logits + noise)


def exponential(
    rng_key: PRNGKey,
    utilities: ArrayLike,
    *,
    epsilon: float,
    sensitivity: float,
    relation: NeighboringRelation = NeighboringRelation.REPLACE_ONE,
) -> PrivateResult:
    r"""Exponential mechanism: select a candidate with probability ∝ exp(ε u / 2Δ).

    .. math::

        \Pr[M(D) = i] = \frac{\exp(\varepsilon u_D(i) / (2\Delta))}
            {\sum_j \exp(\varepsilon u_D(j) / (2\Delta))}.

    Sampling uses the Gumbel-max trick on the float64 log-probabilities of
    :func:`exponential_logits` (shift by the maximum before scaling), so utilities
    spanning ``1e300`` are fine and no NaN can arise. Ties get equal probability, and
    for very large ``epsilon`` the output is an argmax, uniform over tied maxima.
    Validation happens eagerly, before any randomness is used; ``jit`` is left to
    the caller (``utilities`` must then be checked for finiteness by the caller).

    Privacy:
        Neighbouring relation: ``relation`` (replace-one by default); ``sensitivity``
        must bound :math:`\Delta = \sup_{D \sim D'} \max_i |u_D(i) - u_{D'}(i)|` for
        that relation. For fixed neighbours the privacy loss
        :math:`\log \Pr[M(D)=i] / \Pr[M(D')=i] = \tfrac{\varepsilon}{2\Delta}
        (u_D(i) - u_{D'}(i)) - \log(Z_D / Z_{D'})` is an affine function of
        :math:`u_D(i) - u_{D'}(i) \in [-\Delta, \Delta]`, so its range over outputs is
        at most ``epsilon`` (the mechanism is ε-*bounded range*, Durfee & Rogers
        2019). Bounded range implies pure ε-DP and (ε²/8)-zCDP (Cesar & Rogers
        2021); the returned ``PrivacyGuarantee.exponential_mechanism(epsilon)`` uses
        the tighter of the two for each query.

        Floating-point caveat: the proof is for exact real arithmetic. As Mironov
        (2012) showed for the textbook Laplace mechanism, finite-precision samplers
        can leak through the support of their outputs; Gumbel-max on float64
        logits is no exception (see Ilvento 2020 for an exact base-2 alternative).
        Concretely, ``jax.random.gumbel`` in float64 takes values in
        ``[-6.56, 36.04]`` only (``-log(-log U)``, ``U`` on a ``2^-52`` grid), so a
        candidate whose logit is more than ``42.6`` below the largest is never
        selected, where the ideal mechanism gives it a tiny positive probability,
        and the far tail is not exactly proportional to ``exp(logit)``: a
        candidate can have probability zero under ``D`` and a positive one under a
        neighbour. The logits are float64 and normalised in log space (no
        overflow, no NaN). JAX's PRNG is not a cryptographic RNG.

    Args:
        rng_key: a PRNG key (consumed).
        utilities: 1-D array of finite utilities, one per candidate.
        epsilon: privacy parameter, ``> 0`` and finite.
        sensitivity: ``Delta`` (see Privacy), ``> 0`` and finite.
        relation: the neighbouring relation under which ``sensitivity`` holds.

    Returns:
        ``PrivateResult(value, privacy, info)``: ``value`` the selected index (scalar
        integer array), ``privacy`` the guarantee, ``info`` a dict with ``epsilon``,
        ``sensitivity`` and ``num_candidates``.

    Raises:
        ValueError: NaN/inf or non-1-D/empty utilities, ``epsilon <= 0`` or not
            finite, ``sensitivity <= 0``.

    Examples:
        >>> import jax
        >>> import jax.numpy as jnp
        >>> from dpsample.mechanisms import exponential
        >>> res = exponential(
        ...     jax.random.key(0), jnp.array([0.0, 5.0, 100.0]),
        ...     epsilon=1.0, sensitivity=1.0)
        >>> int(res.value)
        2
        >>> res.privacy.epsilon(0.0)
        1.0

    References:
        McSherry & Talwar, `Mechanism Design via Differential Privacy
        <https://doi.org/10.1109/FOCS.2007.66>`_, 2007.
        Durfee & Rogers, `Practical Differentially Private Top-k Selection with
        Pay-what-you-get Composition <https://arxiv.org/abs/1905.04273>`_, 2019.
        Cesar & Rogers, `Bounding, Concentrating, and Truncating: Unifying Privacy
        Loss Composition for Data Analytics <https://arxiv.org/abs/2004.07223>`_, 2021.
        Mironov, `On Significance of the Least Significant Bits for Differential
        Privacy <https://doi.org/10.1145/2382196.2382264>`_, 2012.
        Ilvento, `Implementing the Exponential Mechanism with Base-2 Differential
        Privacy <https://arxiv.org/abs/1912.04222>`_, 2020.
    """
    logits = exponential_logits(utilities, epsilon=epsilon, sensitivity=sensitivity)
    epsilon = float(epsilon)
    index = gumbel_max(rng_key, logits)
    info = {
        "epsilon": epsilon,
        "sensitivity": float(sensitivity),
        "num_candidates": int(logits.shape[0]),
    }
    privacy = PrivacyGuarantee.exponential_mechanism(epsilon, relation=relation)
    return PrivateResult(index, privacy, info)


precision.scope_public(globals())
