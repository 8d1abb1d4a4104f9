"""Shared helpers of the stationary-point finders (validation, sampling sizes).

Everything here is public-side: it validates public inputs eagerly (outside ``jit``,
before any private computation) or computes data-independent quantities.

The domain rule (:func:`check_start`, :func:`check_projection`). A declared constant
(``lipschitz``, ``smoothness``, ...) is a statement about the loss on the problem's
domain ``K`` only; a sensitivity derived from it holds only where the loss is
evaluated inside ``K``. Every finder and pipeline stage therefore refuses, with a
``ValueError`` before any private computation, a start point outside ``K``
(:func:`check_start`; on ``Unconstrained`` every finite point is in ``K``), and a
finder that can run without projection refuses ``project=False`` on a ``Ball``
unless clipping bounds every contribution whatever the loss does outside ``K``
(:func:`check_projection`).
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
from dpsample.domains import Ball, require_member
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
    "check_start",
    "check_projection",
    "check_batch_size",
    "poisson_max_batch",
    "poisson_overflow_probability",
    "sum_sensitivity_factor",
    "gaussian_sum_guarantee",
    "without_replacement_event",
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

# Noise multipliers. Throughout dpsample.finders a ``noise_multiplier`` z is the
# ecosystem's (Abadi et al.; Opacus, TF Privacy, dp-accounting): the std of the noise
# added to a *sum* of per-example terms, divided by the bound C on one term (so z C / b
# on a mean over b). It does not depend on the neighbouring relation; the accounting
# below turns it into noise over sensitivity for the relation (z / 2 for replace-one,
# whose sensitivity is 2C; z for add/remove).

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


def check_start(problem: Problem, x: Any, name: str = "x0") -> Array:
    """A public start point in the domain ``K``: :func:`check_point`, then ``x in K``.

    The declared constants hold on ``K`` only, so a finder that evaluates gradients
    at a start point outside ``K`` (no clipping) has no bound on the sensitivity of
    its first release; a clipped finder would still compute outside the set its
    guarantee and utility are stated for. Every finder refuses such a point before
    any private computation. A point within rounding of ``K`` (distance at most
    ``R (1 + 1e-9) + 1e-12`` from the centre,
    :func:`~dpsample.domains.require_member`) is projected onto ``K``; points of
    ``K`` are returned unchanged (bit for bit). On ``Unconstrained`` this is
    :func:`check_point` (every finite point lies in ``R^d``).

    Args:
        problem: The problem (its domain is public).
        x: The candidate start point.
        name: Its name in error messages.

    Returns:
        The point, float64, shape ``(problem.dim,)``, in ``K``.

    Raises:
        TypeError: If ``x`` is not numeric.
        ValueError: Wrong shape, non-finite values, or a point outside ``K``.

    Examples:
        >>> import jax.numpy as jnp, dpsample
        >>> from dpsample.finders._common import check_start
        >>> prob = dpsample.Problem(lambda x, z: jnp.sum(x * z), jnp.ones((3, 2)),
        ...     dpsample.Ball(1.0, dim=2), lipschitz=1.0)
        >>> check_start(prob, jnp.array([0.6, 0.8])).tolist()
        [0.6, 0.8]
        >>> try:
        ...     check_start(prob, jnp.array([3.0, 0.0]))
        ... except ValueError as err:
        ...     print(str(err)[:33])
        Expected x0 in the domain K = Bal
    """
    return require_member(problem.domain, check_point(problem, x, name), name)


def check_projection(
    problem: Problem, project: Any, *, clipped: bool, name: str
) -> bool:
    """Validate ``project``: unprojected runs on a ``Ball`` need clipping.

    Without clipping a finder's sensitivity comes from constants declared on the
    domain ``K``, so its iterates must stay in ``K``: ``project=False`` on a
    :class:`~dpsample.domains.Ball` is refused (``ValueError``, before any private
    computation). With clipping every contribution is bounded whatever the loss
    does outside ``K``, and unprojected runs stay allowed. On ``Unconstrained`` the
    projection is the identity and ``project`` is irrelevant.

    Returns:
        ``bool(project)``.

    Examples:
        >>> import jax.numpy as jnp, dpsample
        >>> from dpsample.finders._common import check_projection
        >>> prob = dpsample.Problem(lambda x, z: jnp.sum(x * z), jnp.ones((3, 2)),
        ...     dpsample.Ball(1.0, dim=2), lipschitz=1.0)
        >>> check_projection(prob, False, clipped=True, name="dp_sgd")
        False
        >>> try:
        ...     check_projection(prob, False, clipped=False, name="dp_sgd")
        ... except ValueError as err:
        ...     print(str(err)[:51])
        dp_sgd with project=False on a Ball needs clipping:
    """
    project = bool(project)
    if not project and not clipped and isinstance(problem.domain, Ball):
        raise ValueError(
            f"{name} with project=False on a Ball needs clipping: without it the "
            "sensitivity comes from the constants declared on K, which say nothing "
            "about the unprojected iterates outside K; keep project=True, clip "
            "(clip_norm= / clip=True), or declare the problem on Unconstrained(d) "
            "with constants valid on all of R^d"
        )
    return project


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
MIN_NOISE_MULTIPLIER = 0.1
#: First and largest noise multipliers of the search. The search grid (powers of two
#: times ``SEARCH_START``) is the one used before noise multipliers took the
#: ecosystem's unit (then ``1.0``, ``0.05`` and ``1e7`` in noise over replace-one
#: sensitivity), expressed in the new unit, so a calibration returns bit for bit the
#: noise it returned then.
SEARCH_START = 2.0
MAX_NOISE_MULTIPLIER = 2e7


def sum_sensitivity_factor(relation: Any) -> float:
    """L2 sensitivity of a sum of per-example terms of norm ``<= C``, in units of ``C``.

    ``2`` for ``REPLACE_ONE`` (one term replaced: ``||a - a'|| <= 2C``), ``1`` for
    ``ADD_OR_REMOVE_ONE`` (one term added or removed).

    Examples:
        >>> import dp_accounting
        >>> from dpsample.finders._common import sum_sensitivity_factor
        >>> rel = dp_accounting.NeighboringRelation
        >>> sum_sensitivity_factor(rel.REPLACE_ONE), sum_sensitivity_factor(
        ...     rel.ADD_OR_REMOVE_ONE)
        (2.0, 1.0)
    """
    import dp_accounting

    rel = dp_accounting.NeighboringRelation
    if relation == rel.REPLACE_ONE:
        return C_SENS
    if relation == rel.ADD_OR_REMOVE_ONE:
        return 1.0
    raise ValueError(f"Expected REPLACE_ONE or ADD_OR_REMOVE_ONE, got {relation!r}")


def gaussian_sum_guarantee(noise_multiplier: float, relation: Any = None) -> Any:
    """Guarantee of noise ``N(0, (z C)^2 I)`` on a sum of terms bounded by ``C``.

    ``z`` is the ecosystem's noise multiplier (std of the noise on the sum over ``C``);
    the relation decides the sensitivity (:func:`sum_sensitivity_factor`), so this is
    :meth:`PrivacyGuarantee.gaussian
    <dpsample.privacy.PrivacyGuarantee.gaussian>` at noise over sensitivity ``z / 2``
    under replace-one (the default) and ``z`` under add/remove. Its PLD equals
    dp_accounting's for ``GaussianDpEvent(z)`` under the same relation.

    Examples:
        >>> from dpsample.finders._common import gaussian_sum_guarantee
        >>> from dpsample.privacy import PrivacyGuarantee
        >>> gaussian_sum_guarantee(2.0).zcdp_rho() == PrivacyGuarantee.gaussian(
        ...     1.0).zcdp_rho()
        True
    """
    import dp_accounting

    from dpsample.privacy import PrivacyGuarantee

    if relation is None:
        relation = dp_accounting.NeighboringRelation.REPLACE_ONE
    z = validation.positive("noise_multiplier", noise_multiplier)
    return PrivacyGuarantee.gaussian(
        z / sum_sensitivity_factor(relation), relation=relation
    )


def without_replacement_event(n: int, b: int, noise_multiplier: float) -> Any:
    """``SampledWithoutReplacementDpEvent`` of a size-``b`` batch, for ``REPLACE_ONE``.

    dp_accounting's RDP accountant (the only one that analyses this event) reads the
    inner Gaussian's noise multiplier relative to the *replace-one sensitivity* of the
    sum (Wang, Balle, Kasiviswanathan 2019, Thm 27), i.e. ``2C``, not relative to
    ``C``; so the event carries ``z / 2`` for the ecosystem's multiplier ``z``.
    """
    import dp_accounting

    return dp_accounting.SampledWithoutReplacementDpEvent(
        n, b, dp_accounting.GaussianDpEvent(noise_multiplier / C_SENS)
    )


def replace_one_event(sampling: str, n: int, b: int, m: int, z: float, route: str):
    """dp_accounting event of one oracle release, for a ``REPLACE_ONE`` accountant.

    ``z`` is the oracle's noise multiplier (std of the noise on the sum over the
    per-example bound ``C``), read by each route as dp_accounting reads it: the PLD
    accountant doubles the sensitivity of ``GaussianDpEvent(z)`` and of the truncated
    Poisson event for ``REPLACE_ONE`` (so they carry ``z``), the RDP accountant
    analyses the full batch as a sample of all ``n`` without replacement
    (:func:`without_replacement_event`, ``z / 2``). Returns ``None`` where the route
    does not analyse the scheme.
    """
    import dp_accounting

    if sampling in ("full_batch", "fresh"):
        if route == "pld":
            return dp_accounting.GaussianDpEvent(z)
        return without_replacement_event(n, n, z)
    if sampling == "without_replacement":
        if route == "rdp":
            return without_replacement_event(n, b, z)
        return None
    if route == "pld":
        return dp_accounting.TruncatedSubsampledGaussianDpEvent(
            dataset_size=n,
            sampling_probability=b / n,
            truncated_batch_size=m,
            noise_multiplier=z,
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

    hi = SEARCH_START
    while coarse_eps(hi) > epsilon:
        hi *= 2.0
        if hi > MAX_NOISE_MULTIPLIER:
            raise CalibrationError(
                f"no noise multiplier <= {MAX_NOISE_MULTIPLIER:g} reaches "
                f"epsilon={epsilon:g} at delta={delta:g}"
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
