"""Shared helpers of the stationary-point finders (validation, sampling sizes).

Everything here is public-side: it validates public inputs eagerly (outside ``jit``,
before any private computation) or computes data-independent quantities.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from scipy import stats

from dpsample._src import validation
from dpsample.errors import MissingConstantError
from dpsample.problem import Problem
from dpsample.types import Array

__all__ = [
    "SAMPLING_SCHEMES",
    "C_SENS",
    "POISSON_OVERFLOW_TOL",
    "check_key",
    "check_problem",
    "check_privacy",
    "check_point",
    "check_batch_size",
    "poisson_max_batch",
    "poisson_overflow_probability",
    "replace_one_event",
    "coarse_epsilon",
    "calibrate_multiplier",
    "CALIBRATION_CACHE_SIZE",
]

#: Batch-sampling schemes understood by :mod:`dpsample.finders.oracles`.
SAMPLING_SCHEMES = ("full_batch", "poisson", "without_replacement", "fresh")

#: Sensitivity multiplier under replace-one neighbours (spec 000 §1.4): replacing one
#: example moves a sum of per-example terms bounded by ``C`` by at most ``2 C``.
C_SENS = 2.0

#: Default bound on the probability that a Poisson batch overflows its fixed padded
#: size (the overflow is accounted exactly anyway; this only keeps it rare).
POISSON_OVERFLOW_TOL = 1e-12


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


def check_problem(problem: Any) -> Problem:
    """Check ``problem`` is a :class:`~dpsample.problem.Problem`."""
    if not isinstance(problem, Problem):
        raise TypeError(f"Expected a dpsample Problem, got {type(problem).__name__}")
    return problem


def check_privacy(epsilon: Any, delta: Any) -> tuple[float, float]:
    """Validate ``epsilon > 0`` (finite) and ``delta`` in ``(0, 1)``."""
    return validation.positive("epsilon", epsilon), validation.delta_in_open_unit(delta)


def check_point(problem: Problem, x: Any, name: str = "x0") -> Array:
    """A finite float64 vector of shape ``(problem.dim,)``."""
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise TypeError(f"Expected {name} to be a numeric vector, got {x!r}") from err
    if arr.shape != (problem.dim,):
        raise ValueError(
            f"Expected {name} of shape ({problem.dim},), got shape {arr.shape}"
        )
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"Expected {name} to be finite, found NaN or inf values")
    return jnp.asarray(arr)


def check_batch_size(
    problem: Problem, batch_size: Any, name: str = "batch_size"
) -> int:
    """An integer ``1 <= batch_size <= n``."""
    b = validation.positive_int(name, batch_size)
    if b > problem.n:
        raise ValueError(f"Expected {name}={b} <= n={problem.n}")
    return b


def public_initial_gap(
    problem: Problem, initial_gap: Any, *, needed_for: str
) -> tuple[float, str]:
    """A public bound on ``F(x0) - inf F``: ``initial_gap`` or the declared range.

    Returns ``(value, source)`` with source ``"user"`` or ``"declared loss_range"``;
    raises :class:`~dpsample.errors.MissingConstantError` when neither is available.
    The gap is never measured on the data.
    """
    if initial_gap is not None:
        return validation.positive("initial_gap", initial_gap), "user"
    if problem.loss_range is None:
        raise MissingConstantError(
            f"{needed_for} needs a public initial-gap bound F(x0) - inf F: pass "
            "initial_gap=... or declare loss_range=... on the Problem (never "
            "measure it on the data)"
        )
    return float(problem.loss_range), "declared loss_range"


def poisson_overflow_probability(n: int, rate: float, max_batch: int) -> float:
    """``P[Binomial(n, rate) > max_batch]``: a Poisson batch overflows its padding."""
    return float(stats.binom.sf(max_batch, n, rate))


def poisson_max_batch(n: int, rate: float, tol: float = POISSON_OVERFLOW_TOL) -> int:
    """Smallest ``m`` with ``P[Binomial(n, rate) > m] <= tol`` (at most ``n``).

    Args:
        n: Dataset size.
        rate: Poisson sampling rate ``q`` in ``(0, 1]``.
        tol: Overflow probability bound.

    Returns:
        The padded batch size.

    Examples:
        >>> from dpsample.finders._common import poisson_max_batch
        >>> poisson_max_batch(1000, 0.01)
        39
    """
    n = validation.positive_int("n", n)
    rate = validation.probability("rate", rate, open_left=True)
    m = int(stats.binom.isf(tol, n, rate))
    m = max(1, min(n, m))
    while m < n and poisson_overflow_probability(n, rate, m) > tol:
        m += 1
    return m


def ceil_int(x: float) -> int:
    """``ceil`` as a Python int (finite input)."""
    return int(math.ceil(x))


# ------------------------------------------------------------------ calibration
#: Coarse PLD discretisation used only while *searching* for a noise multiplier (a
#: pessimistic PLD, so still an upper bound); the result is then checked with the
#: guarantee's own fine accounting.
COARSE_PLD_INTERVAL = 1e-2

#: Smallest noise multiplier searched (below it PLD grids explode). A target so loose
#: that this noise already meets it gets this noise (valid, slightly over-noised).
MIN_NOISE_MULTIPLIER = 0.05


def replace_one_event(sampling: str, n: int, b: int, m: int, z: float, route: str):
    """dp_accounting event of one oracle release, for a ``REPLACE_ONE`` accountant.

    ``z`` is the oracle's noise multiplier (std / replace-one sensitivity). Returns
    ``None`` where the route does not analyse the scheme.
    """
    import dp_accounting

    gauss = dp_accounting.GaussianDpEvent
    if sampling in ("full_batch", "fresh"):
        if (
            route == "pld"
        ):  # dp_accounting's PLD doubles the sensitivity for REPLACE_ONE
            return gauss(C_SENS * z)
        return dp_accounting.SampledWithoutReplacementDpEvent(n, n, gauss(z))
    if sampling == "without_replacement":
        if route == "rdp":
            return dp_accounting.SampledWithoutReplacementDpEvent(n, b, gauss(z))
        return None
    if route == "pld":
        return dp_accounting.TruncatedSubsampledGaussianDpEvent(
            dataset_size=n,
            sampling_probability=b / n,
            truncated_batch_size=m,
            noise_multiplier=C_SENS * z,
        )
    return None


#: Entries kept by the calibration caches (:func:`coarse_epsilon` and the final check
#: of :func:`calibrate_multiplier`). Both are keyed on public descriptions only (the
#: dp_accounting events and ``delta``, or the guarantee's components), never on data.
CALIBRATION_CACHE_SIZE = 4096


def coarse_epsilon(parts: list[tuple[Any, int]], delta: float) -> float:
    """Fast upper bound on epsilon of ``[(make_event(route), count), ...]``.

    Each part is ``(fn, count)`` with ``fn(route)`` returning the part's event for the
    route (``"rdp"`` or ``"pld"``) or ``None``; the tightest route supporting every
    part is used (RDP, or a pessimistic PLD on a coarse grid).

    The value is memoised (``functools.lru_cache``) on the events themselves (frozen,
    hashable dp_accounting descriptions of what runs: noise multiplier, sampling
    rate, batch sizes), the counts and ``delta``: public inputs only, so repeated
    calibrations of the same public schedule (another key, other data of the same
    size) skip the accountant. Events that do not hash are accounted uncached.
    """
    key = tuple((fn("rdp"), fn("pld"), int(k)) for fn, k in parts)
    try:
        hash(key)
    except TypeError:
        return _coarse_epsilon(key, float(delta))
    return _coarse_epsilon_cached(key, float(delta))


def _coarse_epsilon(key: tuple[tuple[Any, Any, int], ...], delta: float) -> float:
    """:func:`coarse_epsilon` on evaluated ``(rdp_event, pld_event, count)`` triples."""
    import dp_accounting
    from dp_accounting import pld, rdp

    rel = dp_accounting.NeighboringRelation.REPLACE_ONE
    best = math.inf
    for i, route in enumerate(("rdp", "pld")):
        events = [(part[i], part[2]) for part in key]
        if any(ev is None for ev, _ in events):
            continue
        if route == "rdp":
            acc = rdp.RdpAccountant(neighboring_relation=rel)
        else:
            acc = pld.PLDAccountant(
                neighboring_relation=rel,
                value_discretization_interval=COARSE_PLD_INTERVAL,
            )
        for ev, k in events:
            if k > 0:
                acc.compose(ev, k)
        best = min(best, float(acc.get_epsilon(delta)))
    return best


_coarse_epsilon_cached = functools.lru_cache(maxsize=CALIBRATION_CACHE_SIZE)(
    _coarse_epsilon
)


def _canonical_guarantee(guarantee: Any) -> Any:
    """One shared instance per public description of a guarantee (memoised).

    A :class:`~dpsample.privacy.PrivacyGuarantee` is immutable and determined by its
    compared dataclass fields (``components``, ``relation``, ``tv_slack``,
    ``assumptions``): the frozen, hashable record of what ran (no data). Returning
    one shared, equal instance per record lets its own accounting cache (PLD, RDP
    curve) serve every later ``epsilon``/``delta`` query. Every compared field is
    part of the key, so nothing (e.g. an assumption) is lost. A record that does not
    hash is returned unchanged (uncached).
    """
    try:
        fields = tuple(
            (f.name, getattr(guarantee, f.name))
            for f in dataclasses.fields(guarantee)
            if f.compare
        )
        key = (type(guarantee), fields)
        hash(key)
    except (AttributeError, TypeError):
        return guarantee
    return _canonical_guarantee_cached(key)


@functools.lru_cache(maxsize=CALIBRATION_CACHE_SIZE)
def _canonical_guarantee_cached(key: tuple[Any, ...]) -> Any:
    cls, fields = key
    return cls(**dict(fields))


def calibrate_multiplier(
    coarse_eps: Any,
    exact_guarantee: Any,
    *,
    epsilon: float,
    delta: float,
    rtol: float = 2e-3,
) -> tuple[float, Any]:
    """Smallest noise multiplier (to ``rtol``) whose exact guarantee meets the target.

    Bisection in ``log z`` on ``coarse_eps`` (fast upper bound), then a final check on
    ``exact_guarantee(z).epsilon(delta) <= epsilon``; if the check fails, ``z`` grows
    by ``0.5%`` steps until it passes. Never returns an overshoot.

    Both accountant calls are memoised on public descriptions only: the bisection's
    :func:`coarse_epsilon` on its events, and the final check through one shared
    guarantee instance per public record (components, relation, slack and
    assumptions; guarantees are immutable; the instance keeps its own accounting
    cache). Calibrating the same public schedule again (another key, other data of
    the same size) therefore costs no accountant work, and the returned guarantee
    (equal to ``exact_guarantee(z)``) answers later ``epsilon(delta)`` queries from
    its cache.

    Returns:
        ``(z, exact_guarantee(z))``.
    """
    from dpsample.privacy import CalibrationError

    hi = 1.0
    while coarse_eps(hi) > epsilon:
        hi *= 2.0
        if hi > 1e7:
            raise CalibrationError(
                f"no noise multiplier <= 1e7 reaches epsilon={epsilon:g} at "
                f"delta={delta:g}"
            )
    lo = hi / 2.0
    while lo > MIN_NOISE_MULTIPLIER and coarse_eps(lo) <= epsilon:
        hi, lo = lo, lo / 2.0
    if lo <= MIN_NOISE_MULTIPLIER:
        lo = MIN_NOISE_MULTIPLIER
        if coarse_eps(lo) <= epsilon:
            hi = lo
    while hi / lo - 1.0 > rtol:
        mid = math.sqrt(lo * hi)
        if coarse_eps(mid) <= epsilon:
            hi = mid
        else:
            lo = mid
    for _ in range(200):
        g = _canonical_guarantee(exact_guarantee(hi))
        if g.epsilon(delta) <= epsilon:
            return hi, g
        hi *= 1.005
    raise CalibrationError("calibration failed its final check")  # pragma: no cover
