"""The planted-coin bump instance of the lower bound (seed 000, Theorems 5.9-5.11).

Spec 000-core section 4.3: :func:`sign_codewords` (the codewords),
:func:`planted_coin_bumps` and :class:`PlantedCoinBumps`, a 1-Lipschitz non-convex
non-smooth loss on the unit ball whose population risk is known in closed form. Its
examples are coin flips ``{"coins": (n, k)}``, not feature rows.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from dpsample._src import precision, validation
from dpsample.types import Array, PRNGKey

__all__ = [
    "sign_codewords",
    "PlantedCoinBumps",
    "planted_coin_bumps",
]

# ------------------------------------------------------ the lower-bound instance
_MAX_CODE_DIM = 16


def sign_codewords(
    dim: int, *, min_distance: int | None = None, max_codewords: int | None = None
) -> np.ndarray:
    """Sign vectors in ``{-1, +1}^dim`` with a verified minimum Hamming distance.

    The greedy lexicographic code (lexicode): the vectors of ``{0, 1}^dim`` are read
    in binary counting order and each is kept when it is at Hamming distance at least
    ``min_distance`` from every vector kept so far; bit ``b`` becomes the sign
    ``1 - 2 b``. A lexicode meets the Gilbert-Varshamov bound, so for the default
    ``min_distance = ceil(dim / 4)`` it has at least ``2^dim / V(dim, dim/4 - 1)``
    codewords (``V`` the Hamming-ball volume), ``2^{0.19 dim}`` or more: ``log k``
    grows linearly in ``dim``, as the lower bound of seed 000 (Theorem 5.10) needs.
    The construction is deterministic (public); every pairwise distance is then
    checked.

    Args:
        dim: Dimension, ``1 <= dim <= 16``.
        min_distance: Required minimum pairwise Hamming distance (default
            ``ceil(dim / 4)``), in ``[1, dim]``.
        max_codewords: Keep at most this many (the first ones found).

    Returns:
        An int8 array ``(k, dim)`` of signs, ``k >= 2``.

    Raises:
        ValueError: On invalid arguments, or if fewer than two codewords exist.

    Examples:
        >>> from dpsample.datasets import sign_codewords
        >>> sign_codewords(4).shape  # min distance 1: every sign vector
        (16, 4)
        >>> code = sign_codewords(6)  # min distance 2: the even-weight code
        >>> dist = (code[:, None] != code[None]).sum(-1) + 6 * np.eye(32, dtype=int)
        >>> code.shape, int(dist.min())
        ((32, 6), 2)
    """
    dim = validation.positive_int("dim", dim)
    if dim > _MAX_CODE_DIM:
        raise ValueError(f"sign_codewords supports dim <= {_MAX_CODE_DIM}, got {dim}")
    if min_distance is None:
        min_distance = math.ceil(dim / 4)
    min_distance = validation.positive_int("min_distance", min_distance)
    if min_distance > dim:
        raise ValueError(f"min_distance={min_distance} exceeds dim={dim}")
    if max_codewords is not None:
        max_codewords = validation.positive_int("max_codewords", max_codewords)
    words = ((np.arange(2**dim)[:, None] >> np.arange(dim)[::-1]) & 1).astype(np.int8)
    nearest = np.full(2**dim, dim + 1)  # distance to the nearest kept word
    kept: list[int] = []
    for i in range(2**dim):
        if nearest[i] >= min_distance:
            kept.append(i)
            if max_codewords is not None and len(kept) == max_codewords:
                break
            nearest = np.minimum(nearest, (words != words[i]).sum(axis=1))
    if len(kept) < 2:
        raise ValueError(
            f"fewer than two codewords in dim={dim} at min_distance={min_distance}"
        )
    code = (1 - 2 * words[kept]).astype(np.int8)
    distances = (code[:, None, :] != code[None, :, :]).sum(axis=-1)
    off = distances[~np.eye(len(kept), dtype=bool)]
    if off.min() < min_distance:  # pragma: no cover - the greedy rule guarantees it
        raise RuntimeError("sign_codewords: minimum distance check failed")
    return code


@dataclasses.dataclass(frozen=True, eq=False)
class PlantedCoinBumps:
    r"""The planted-coin bump instance of seed 000's lower bound (spec 000 section 4.3).

    ``k`` coins with biases ``p_i``; one example is ``z in {0, 1}^k``, one flip of
    every coin (``data["coins"][j]``). Coin ``i`` owns the bump
    ``phi_i(x) = max(0, tau - ||x - v_i||)`` around ``v_i = s_i / (2 sqrt(d))``, with
    ``s_i`` the codewords (:func:`sign_codewords`, pairwise Hamming distance
    ``>= h``), so ``||v_i|| = 1/2``, ``||v_i - v_j|| >= sqrt(h/d)`` and, with
    ``tau <= sqrt(h/d)/2``, the bumps have disjoint supports inside the unit ball.
    The loss

    .. math::

        f(x; z) = \sum_i (z_i - 1)\,\phi_i(x),\qquad
        F_{\mathcal P}(x) = \sum_i (p_i - 1)\,\phi_i(x),\qquad
        \min_{B(0,1)} F_{\mathcal P} = -(1 - p_{i^*})\,\tau

    is 1-Lipschitz (at most one bump is non-zero at any point and
    ``|z_i - 1| <= 1``), non-convex and non-smooth, and the excess population risk
    of a point in bump ``i`` is at least ``tau (p_i - p_{i^*})``: optimisation is at
    least as hard as selecting the coin of smallest bias (Theorems 5.9-5.11).

    Attributes:
        codewords: int8 ``(k, d)`` signs.
        biases: ``(k,)`` coin biases ``p_i`` in ``[0, 1]``.
        tau: Bump height and radius.
        min_distance: The verified minimum Hamming distance of the codewords.

    Examples:
        >>> import jax
        >>> from dpsample.datasets import planted_coin_bumps
        >>> inst = planted_coin_bumps(jax.random.key(0), 4, 400)
        >>> inst.k, inst.dim, round(inst.gap, 4)  # gap = 0.5 sqrt(log 16 / 400)
        (16, 4, 0.0416)
        >>> v = inst.centers[inst.planted]
        >>> float(inst.excess_population_risk(v)), inst.bump_index(v) == inst.planted
        (0.0, True)
        >>> data = inst.sample(jax.random.key(1), 400)
        >>> data["coins"].shape
        (400, 16)
    """

    codewords: np.ndarray
    biases: np.ndarray
    tau: float = 0.25
    min_distance: int = 1

    def __post_init__(self) -> None:
        code = np.asarray(self.codewords)
        if code.ndim != 2 or code.shape[0] < 2 or not np.all(np.abs(code) == 1):
            raise ValueError("codewords must be a (k >= 2, d) array of signs")
        biases = np.asarray(self.biases, np.float64)
        if biases.shape != (code.shape[0],) or not np.all(
            (biases >= 0) & (biases <= 1)
        ):
            raise ValueError(f"biases must be {code.shape[0]} values in [0, 1]")
        distances = (code[:, None, :] != code[None, :, :]).sum(axis=-1)
        measured = int(distances[~np.eye(code.shape[0], dtype=bool)].min())
        if measured < self.min_distance:
            raise ValueError(
                f"the codewords' minimum distance is {measured} < {self.min_distance}"
            )
        tau = validation.positive("tau", self.tau)
        if tau > math.sqrt(measured / code.shape[1]) / 2 or tau > 0.5:
            raise ValueError(
                f"tau={tau} makes the bumps overlap or leave the unit ball (at most "
                f"{min(0.5, math.sqrt(measured / code.shape[1]) / 2):.6g})"
            )
        object.__setattr__(self, "codewords", code.astype(np.int8))
        object.__setattr__(self, "biases", biases)
        object.__setattr__(self, "tau", tau)

    @property
    def k(self) -> int:
        """The number of coins (bumps)."""
        return int(self.codewords.shape[0])

    @property
    def dim(self) -> int:
        """The dimension ``d`` of the domain (the unit ball)."""
        return int(self.codewords.shape[1])

    @property
    def log_k(self) -> float:
        """``log k`` (natural)."""
        return math.log(self.k)

    @property
    def centers(self) -> np.ndarray:
        """The bump centres ``v_i = s_i / (2 sqrt(d))``, ``(k, d)``."""
        return self.codewords.astype(np.float64) / (2.0 * math.sqrt(self.dim))

    @property
    def planted(self) -> int:
        """The coin of smallest bias (the first one on ties)."""
        return int(np.argmin(self.biases))

    @property
    def gap(self) -> float:
        """The second-smallest bias minus the smallest (``Delta``)."""
        b = np.sort(self.biases)
        return float(b[1] - b[0])

    def bumps(self, x: Any) -> Array:
        """``phi_i(x)`` for every coin: ``(..., k)`` for points ``(..., d)``.

        The distance has a zero gradient at a centre (a valid subgradient of the
        bump there), so gradients are finite everywhere.
        """
        x = jnp.asarray(x, jnp.float64)
        sq = jnp.sum((x[..., None, :] - jnp.asarray(self.centers)) ** 2, axis=-1)
        safe = jnp.where(sq > 0, sq, 1.0)
        dist = jnp.where(sq > 0, jnp.sqrt(safe), 0.0)
        return jnp.maximum(0.0, self.tau - dist)

    def loss_fn(self, x: Any, example: Mapping[str, Any]) -> Array:
        """``f(x; z) = sum_i (z_i - 1) phi_i(x)`` for one example ``{"coins": z}``."""
        return jnp.sum((jnp.asarray(example["coins"]) - 1.0) * self.bumps(x), axis=-1)

    def population_risk(self, x: Any) -> Array:
        """``F_P(x) = sum_i (p_i - 1) phi_i(x)`` (closed form)."""
        return jnp.sum((jnp.asarray(self.biases) - 1.0) * self.bumps(x), axis=-1)

    @property
    def min_population_risk(self) -> float:
        """``min_{B(0,1)} F_P = -(1 - min_i p_i) tau``, at the planted centre."""
        return -(1.0 - float(self.biases.min())) * self.tau

    def excess_population_risk(self, x: Any) -> Array:
        """``F_P(x) - min F_P`` (closed form, exact)."""
        return self.population_risk(x) - self.min_population_risk

    def empirical_risk(self, x: Any, data: Mapping[str, Any]) -> Array:
        """``F_D(x) = sum_i (zbar_i - 1) phi_i(x)`` with ``zbar`` the coins' means."""
        zbar = jnp.mean(jnp.asarray(data["coins"], jnp.float64), axis=0)
        return jnp.sum((zbar - 1.0) * self.bumps(x), axis=-1)

    def bump_index(self, x: Any) -> int:
        """The coin whose bump's open support contains ``x``, or ``-1`` for none."""
        inside = np.flatnonzero(np.asarray(self.bumps(x)) > 0)
        return int(inside[0]) if inside.size else -1

    def sample(self, rng_key: PRNGKey, n: int) -> dict[str, Array]:
        """``n`` examples: independent flips ``coins[j, i] ~ Bern(p_i)``."""
        n = validation.positive_int("n", n)
        u = jax.random.uniform(rng_key, (n, self.k), jnp.float64)
        return {"coins": (u < jnp.asarray(self.biases)).astype(jnp.float64)}

    def voting_data(self, n: int, votes: int, coin: int) -> dict[str, Array]:
        """The privacy-term dataset: ``votes`` examples vote for ``coin``.

        A voting example has ``z_coin = 0`` and every other flip ``1``; the other
        ``n - votes`` examples are all ones (their loss is identically ``0``). Then
        ``F_D = -(votes / n) phi_coin``: the gap between the right bump and any other
        is ``tau votes / n``, and by group privacy an ``eps``-DP algorithm finds
        ``coin`` with constant probability only when ``votes >~ log(k) / eps``.
        """
        n = validation.positive_int("n", n)
        votes = int(votes)
        if votes > n or not 0 <= coin < self.k:
            raise ValueError(f"need 0 <= votes <= n and 0 <= coin < {self.k}")
        coins = np.ones((n, self.k))
        coins[:votes, coin] = 0.0
        return {"coins": jnp.asarray(coins, jnp.float64)}


def planted_coin_bumps(
    rng_key: PRNGKey,
    dim: int,
    n: int,
    *,
    c_delta: float = 0.5,
    tau: float = 0.25,
    min_distance: int | None = None,
    max_codewords: int | None = None,
) -> PlantedCoinBumps:
    """The hard prior of the statistical lower bound (spec 000 section 4.3).

    Every coin has bias ``1/2`` except one, drawn uniformly from ``rng_key``, with
    bias ``1/2 - Delta`` where ``Delta = c_delta sqrt(log k / n)``. By symmetry the
    Bayes-optimal selector is the empirical argmin, and every algorithm's excess
    population risk stays at least a constant times ``tau sqrt(log k / n)``
    (Theorem 5.9 transferred by Theorem 5.10).

    Args:
        rng_key: Key of the planted coin.
        dim: Dimension ``d`` (codewords: :func:`sign_codewords`).
        n: The sample size ``Delta`` is scaled for.
        c_delta: ``Delta / sqrt(log k / n)``, in ``(0, 1]``.
        tau: Bump height and radius (default ``1/4``).
        min_distance: Codeword distance (default ``ceil(d/4)``).
        max_codewords: Cap on ``k``.

    Returns:
        A :class:`PlantedCoinBumps`.

    Raises:
        ValueError: On invalid arguments, or ``Delta >= 1/2``.

    Examples:
        >>> import jax
        >>> from dpsample.datasets import planted_coin_bumps
        >>> inst = planted_coin_bumps(jax.random.key(3), 2, 100)
        >>> inst.k, sorted(set(inst.biases.round(4).tolist()))
        (4, [0.4411, 0.5])
    """
    n = validation.positive_int("n", n)
    c_delta = validation.positive("c_delta", c_delta)
    if c_delta > 1:
        raise ValueError(f"c_delta must lie in (0, 1], got {c_delta}")
    code = sign_codewords(dim, min_distance=min_distance, max_codewords=max_codewords)
    k = code.shape[0]
    delta_gap = c_delta * math.sqrt(math.log(k) / n)
    if delta_gap >= 0.5:
        raise ValueError(f"Delta = {delta_gap:.4g} >= 1/2: n is too small for k={k}")
    planted = int(jax.random.randint(rng_key, (), 0, k))
    biases = np.full(k, 0.5)
    biases[planted] = 0.5 - delta_gap
    distance = math.ceil(dim / 4) if min_distance is None else min_distance
    return PlantedCoinBumps(code, biases, tau, distance)


precision.scope_public(globals())
