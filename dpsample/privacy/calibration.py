"""Noise calibration: the smallest noise whose guarantee meets a target epsilon.

dpsample has one calibrator, :func:`calibrate`, used by every mechanism, finder and
sampler that sets a noise level from a budget (:func:`calibrate_noise` is its
noise-only form). It searches a noise parameter ``s`` (a noise multiplier, a scale
constant, ...) such that ``make_guarantee(s).epsilon(delta) <= epsilon`` and returns
the smallest one it finds to a relative tolerance, with the guarantee. It never
returns an overshoot: the last step is always a check of the exact guarantee.

Two search routes share that final check:

* **exact** (no ``coarse_epsilon``): a geometric bracket from ``initial`` (halving or
  doubling) and bisection in ``log s`` on the exact guarantee;
* **coarse** (``coarse_epsilon`` given): the bracket and bisection run on a fast
  upper bound (e.g. :func:`coarse_epsilon`, a pessimistic PLD on a coarse grid or an
  RDP curve), then ``s`` grows by ``step`` until the exact guarantee passes, and
  finally (``refine=True``, the default) the noise is lowered **on the exact
  guarantee** (every candidate checked, only passing ones kept) until the released
  guarantee spends at least ``1 - refine_rtol`` (default 99%) of epsilon. This is
  how the finders calibrate long compositions quickly *and* spend the budget they
  are given: the coarse bound's pessimism grows with the number of composed
  releases (a coarse PLD rounds every release's privacy loss up by up to one grid
  step), so without the refinement DP-SGD's default plan at ``epsilon = 0.1``
  (``n = 1000``) was certified for 29% of its budget (issue 16). Where the coarse
  bound never meets the target below ``max_upper`` (a coarse PLD has a floor: one
  grid step of pessimism per release, above a small target such as ``epsilon =
  0.01``), the exact route runs instead, started where the coarse bound comes
  within its floor of the target (issue 15).

Both accountant routes are memoised on public descriptions only (dp_accounting
events, counts, delta; the guarantee's compared fields), never on data, so
calibrating the same public schedule again costs no accountant work.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from dpsample._src import precision, validation
from dpsample.privacy.guarantee import PrivacyGuarantee

__all__ = [
    "CALIBRATION_CACHE_SIZE",
    "MAX_EPSILON",
    "COARSE_PLD_INTERVAL",
    "Calibration",
    "CalibrationError",
    "calibrate",
    "calibrate_noise",
    "canonical_guarantee",
    "coarse_epsilon",
]


class CalibrationError(ValueError):
    """No noise level in the searched range meets the target."""


class Calibration(NamedTuple):
    """The result of :func:`calibrate`.

    Attributes:
        noise: The calibrated noise parameter.
        guarantee: ``make_guarantee(noise)`` (one shared instance per public record,
            see :func:`canonical_guarantee`), which meets the target.
    """

    noise: float
    guarantee: PrivacyGuarantee


#: The largest target epsilon :func:`calibrate` (and every plan,
#: :func:`dpsample.base.check_public_sizes`) accepts (issue 25, docs/privacy.md
#: "Extreme settings"): at epsilon = 1e6 the search walked down to noise levels
#: whose privacy-loss grids do not fit in memory.
MAX_EPSILON = 1e4

#: Coarse PLD discretisation used only while *searching* (a pessimistic PLD, so still
#: an upper bound); the result is then checked with the guarantee's own accounting.
COARSE_PLD_INTERVAL = 1e-2

#: Entries kept by the calibration caches (:func:`coarse_epsilon` and
#: :func:`canonical_guarantee`), both keyed on public descriptions only.
CALIBRATION_CACHE_SIZE = 4096


# ------------------------------------------------------------------ accountant caches
def coarse_epsilon(
    parts: Sequence[tuple[Callable[[str], Any], int]], delta: float
) -> float:
    """Fast upper bound on epsilon of ``[(make_event(route), count), ...]``.

    Each part is ``(fn, count)`` with ``fn(route)`` returning the part's dp_accounting
    event for the route (``"rdp"`` or ``"pld"``) or ``None`` where that route does not
    analyse it; every event is read for ``REPLACE_ONE``. The tightest route supporting
    every part is used (RDP, or a pessimistic PLD on the grid
    :data:`COARSE_PLD_INTERVAL`).

    The value is memoised (``functools.lru_cache``) on the events themselves (frozen,
    hashable descriptions of what runs), the counts and ``delta``: public inputs
    only. Events that do not hash are accounted uncached.

    Examples:
        >>> import dp_accounting
        >>> from dpsample.privacy.calibration import coarse_epsilon
        >>> ev = dp_accounting.GaussianDpEvent(4.0)
        >>> 0 < coarse_epsilon([(lambda route: ev, 10)], 1e-5) < 20
        True
    """
    key = tuple((fn("rdp"), fn("pld"), int(k)) for fn, k in parts)
    try:
        hash(key)
    except TypeError:
        return _coarse_epsilon(key, float(delta))
    return _coarse_epsilon_cached(key, float(delta))


def _coarse_epsilon(key: tuple[tuple[Any, Any, int], ...], delta: float) -> float:
    # Deferred: dp_accounting (0.6 s) and the fast accountants load at the first
    # calibration, not with `import dpsample` (issue 27 goal 2).
    import dp_accounting
    from dp_accounting import pld

    from dpsample.privacy import fast_pld, fast_rdp

    rel = dp_accounting.NeighboringRelation.REPLACE_ONE
    best = math.inf
    for i, route in enumerate(("rdp", "pld")):
        events = [(part[i], part[2]) for part in key]
        if any(ev is None for ev, _ in events):
            continue
        if route == "pld":
            # the accountant's PLD without its per-grid-point loop (issue 27)
            fast = fast_pld.accountant_pld(events, rel, COARSE_PLD_INTERVAL)
            if fast is not None:
                best = min(best, float(fast.get_epsilon_for_delta(delta)))
                continue
        if route == "rdp":
            # sampled-without-replacement Gaussians computed fast (issue 27)
            acc: Any = fast_rdp.RdpAccountant(neighboring_relation=rel)
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


def canonical_guarantee(guarantee: PrivacyGuarantee) -> PrivacyGuarantee:
    """One shared instance per public description of a guarantee (memoised).

    A :class:`~dpsample.privacy.PrivacyGuarantee` is immutable and determined by its
    compared fields (components, relation, slack, assumptions): the frozen record of
    what ran (no data). Returning one shared, equal instance per record lets its own
    accounting cache (PLD, RDP curve) serve every later ``epsilon``/``delta`` query.
    A record that does not hash is returned unchanged.

    Examples:
        >>> from dpsample.privacy import PrivacyGuarantee
        >>> from dpsample.privacy.calibration import canonical_guarantee
        >>> a = canonical_guarantee(PrivacyGuarantee.gaussian(2.0))
        >>> a is canonical_guarantee(PrivacyGuarantee.gaussian(2.0))
        True
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
def _canonical_guarantee_cached(key: tuple[Any, ...]) -> PrivacyGuarantee:
    cls, fields = key
    return cls(**dict(fields))


# ------------------------------------------------------------------ the calibrator
def calibrate(
    make_guarantee: Callable[[float], PrivacyGuarantee],
    *,
    epsilon: float,
    delta: float,
    coarse_epsilon: Callable[[float], float] | None = None,
    initial: float = 1.0,
    min_lower: float = 1e-6,
    max_upper: float = 1e9,
    rtol: float = 1e-6,
    step: float = 1.005,
    refine: bool = True,
    refine_rtol: float = 1e-2,
    guess: float | None = None,
) -> Calibration:
    """The smallest noise meeting ``(epsilon, delta)``, to ``rtol``, and its guarantee.

    It finds ``s`` with ``make_guarantee(s).epsilon(delta) <= epsilon``;
    ``epsilon(delta)`` must be non-increasing in ``s``. The bracket is found
    geometrically from ``initial``, so accountants are only queried near the answer
    (never at extreme noise levels where a PLD grid would be huge), then narrowed by
    bisection in ``log s``; the returned noise is the upper end of the bracket, and a
    final check of the exact guarantee confirms it meets the target (it never
    overshoots, cf. opacus#346). With ``coarse_epsilon`` (a fast upper bound on the
    exact epsilon) the search runs on it and the final check steps ``s`` up by
    ``step`` until the exact guarantee passes; then, with ``refine``, the noise is
    lowered on the exact guarantee until it spends at least ``(1 - refine_rtol)``
    of ``epsilon`` (or the bracket is ``rtol`` wide): every candidate is checked on
    the exact guarantee and only passing ones are kept, so it still never
    overshoots. The first candidate assumes ``epsilon ~ s^(-k)`` with ``k`` the
    coarse bound's local slope, at least 2 (a steeper guess stays on the passing
    side: the exact slope is about 1.2 at ``epsilon = 1`` and 3.7 at 10 for DP-SGD),
    the next ones the slope read on the exact guarantee; it usually takes one or two
    exact evaluations beyond the coarse route's one (each can take seconds for a
    long composition at low noise; ``refine=False`` skips them).

    Args:
        make_guarantee: Noise parameter -> guarantee of the whole computation.
        epsilon: Target epsilon (> 0).
        delta: Target delta, in [0, 1).
        coarse_epsilon: Optional fast upper bound ``s -> epsilon``.
        initial: First noise parameter tried.
        min_lower: Smallest noise searched: if it already meets the target, it is
            returned (valid, possibly over-noised).
        max_upper: Largest noise searched.
        rtol: Relative width of the final bracket.
        step: Growth factor of the final check on the coarse route.
        refine: On the coarse route, refine the noise downward on the exact
            guarantee (default). ``False`` keeps the coarse route's answer (faster,
            over-noised by the coarse bound's pessimism).
        refine_rtol: The refined guarantee spends at least ``(1 - refine_rtol)``
            of ``epsilon`` (unless the noise bracket gets ``rtol`` wide first).
        guess: On the coarse route, an estimate of the answer (a closed form,
            e.g. zCDP): the bracket search reads the coarse bound near it
            instead of walking from ``initial`` (:func:`_grid_oracle`). It
            changes which noise levels are evaluated, never the result (for an
            ``epsilon`` non-increasing in ``s``, as required); a poor guess
            costs a few evaluations more.

    Returns:
        :class:`Calibration` ``(noise, guarantee)``.

    Raises:
        CalibrationError: If even ``max_upper`` does not meet the target, or
            ``epsilon`` is above :data:`MAX_EPSILON`.

    Examples:
        >>> from dpsample.privacy import PrivacyGuarantee
        >>> from dpsample.privacy.calibration import calibrate
        >>> cal = calibrate(lambda s: PrivacyGuarantee.gaussian(s).repeat(10),
        ...                 epsilon=1.0, delta=1e-5)
        >>> cal.guarantee.epsilon(1e-5) <= 1.0 < PrivacyGuarantee.gaussian(
        ...     cal.noise * 0.999).repeat(10).epsilon(1e-5)
        True
    """
    target = validation.positive("epsilon", epsilon)
    if target > MAX_EPSILON:
        raise CalibrationError(
            f"epsilon={target:g} is above the largest the calibrator accepts, "
            f'{MAX_EPSILON:g} (docs/privacy.md "Extreme settings")'
        )
    dlt = validation.probability("delta", delta)
    if dlt >= 1.0:
        raise ValueError(f"Expected delta={dlt!r} < 1")
    s0 = validation.positive("initial", initial)
    floor = validation.positive("min_lower", min_lower)
    ceiling = validation.positive("max_upper", max_upper)

    def exact(s: float) -> PrivacyGuarantee:
        return canonical_guarantee(make_guarantee(s))

    def exact_route(start: float) -> Calibration:
        bracket = _search(
            lambda s: exact(s).epsilon(dlt), target, dlt, start, floor, ceiling
        )
        _, hi = _bisect(lambda s: exact(s).epsilon(dlt), target, bracket, rtol)
        g = exact(hi)
        if g.epsilon(dlt) > target:  # final check, never return an overshoot
            raise CalibrationError("calibration failed its final check")
        return Calibration(hi, g)

    if coarse_epsilon is None:
        return exact_route(s0)
    try:
        bracket = _search_coarse(coarse_epsilon, target, dlt, s0, floor, ceiling, guess)
    except CalibrationError:
        # The coarse bound never meets the target below the ceiling. That says
        # nothing about the exact guarantee: a coarse PLD rounds every release's
        # loss up by up to one grid step, so it has a floor (about 0.02 for 50
        # releases on COARSE_PLD_INTERVAL at delta = 1e-12, however large the
        # noise) that a small target sits below (issue 15: DP-SGD at epsilon 0.01,
        # n = 10 was refused "no noise multiplier <= 2e7" where z ~ 8e3 passes).
        # Search on the exact guarantee instead, from where the coarse bound comes
        # within its floor of the target (a start only: the exact search brackets
        # and checks on its own, and raises if the ceiling does not pass either).
        return exact_route(_exact_start(coarse_epsilon, target, s0, ceiling))
    _, hi = _bisect(coarse_epsilon, target, bracket, rtol)
    for _ in range(200):
        g = exact(hi)
        if g.epsilon(dlt) <= target:
            break
        hi *= step
    else:  # pragma: no cover
        raise CalibrationError("calibration failed its final check")
    if refine:
        tol = validation.positive("refine_rtol", refine_rtol)
        hi = _refine_down(
            lambda s: exact(s).epsilon(dlt),
            target,
            hi,
            floor,
            rtol=rtol,
            refine_rtol=tol,
            slope=max(2.0, _local_slope(coarse_epsilon, hi, g.epsilon(dlt) / target)),
        )
        g = exact(hi)
    if g.epsilon(dlt) > target:  # pragma: no cover - the invariant of _refine_down
        raise CalibrationError("calibration failed its final check")
    return Calibration(hi, g)


def _exact_start(
    eps_at: Callable[[float], float], target: float, s0: float, ceiling: float
) -> float:
    """Start of the exact search when the coarse bound ``eps_at`` never passes.

    The first point of the coarse grid (``s0`` doubled) where the coarse bound is
    within its floor (its value at the grid's top) of ``target``: below it the
    exact guarantee fails too, up to the coarse bound's pessimism, so the exact
    accountant is not queried at low noise (where a PLD grid can be huge).
    """
    grid = [s0]
    while grid[-1] * 2.0 <= ceiling:
        grid.append(grid[-1] * 2.0)
    floor = eps_at(grid[-1])
    for s in grid:
        if eps_at(s) <= target + floor:
            return s
    return grid[-1]  # pragma: no cover - the top point is within its own floor


def _local_slope(eps_at: Callable[[float], float], s: float, ratio: float) -> float:
    """``-d log eps / d log s`` of ``eps_at`` between ``s`` and ``ratio s``.

    Read on the coarse bound (cheap) to aim the refinement's first exact
    evaluation; 1 where it cannot be read, at most 8.
    """
    s1 = s * min(0.97, max(0.5, ratio))
    try:
        k = math.log(eps_at(s1) / eps_at(s)) / math.log(s / s1)
    except (ValueError, ZeroDivisionError, OverflowError):
        return 1.0
    return min(8.0, k) if math.isfinite(k) and k > 0 else 1.0


def _refine_down(
    eps_at: Callable[[float], float],
    target: float,
    hi: float,
    floor: float,
    *,
    rtol: float,
    refine_rtol: float,
    slope: float = 1.0,
) -> float:
    """A smaller noise ``<= hi`` still meeting ``target`` on ``eps_at``.

    ``eps_at(hi) <= target`` on entry, and ``hi`` passes at every step (the result
    never overshoots). It stops as soon as ``eps_at(hi) >= (1 - refine_rtol)
    target`` (the budget is spent to ``refine_rtol``), the noise bracket is
    ``rtol`` wide, or ``floor`` is reached. Candidates aim at ``(1 - refine_rtol /
    2) target`` assuming ``epsilon ~ s^(-slope)`` (the slope re-read from each
    passing pair, each step at most halving ``s``); once a candidate fails, the
    bracket is narrowed by a safeguarded secant on ``log epsilon`` against ``log
    s`` (Illinois).
    """
    goal = target * (1.0 - 0.5 * refine_rtol)
    done = target * (1.0 - refine_rtol)
    e_hi = eps_at(hi)
    lo = e_lo = math.nan
    for _ in range(100):
        if e_hi >= done or hi <= floor:
            return hi
        guess = max(floor, hi * max(0.5, (e_hi / goal) ** (1.0 / slope)))
        e = eps_at(guess)
        if e <= target:
            if 0 < e_hi < e and guess < hi:
                slope = min(4.0, max(0.25, math.log(e / e_hi) / math.log(hi / guess)))
            hi, e_hi = guess, e
            continue
        lo, e_lo = guess, e
        break
    else:  # pragma: no cover - halving reaches the floor first
        return hi
    side = 0
    f_lo_scale = f_hi_scale = 1.0  # Illinois down-weighting of a stale end
    for _ in range(100):
        if hi / lo - 1.0 <= rtol or e_hi >= done:
            break
        u_lo, u_hi = math.log(lo), math.log(hi)
        if math.isfinite(e_lo) and e_lo > 0 and e_hi > 0:
            f_lo = f_lo_scale * math.log(e_lo / goal)
            f_hi = f_hi_scale * math.log(e_hi / goal)
            u = u_hi - f_hi * (u_hi - u_lo) / (f_hi - f_lo)
        else:
            u = 0.5 * (u_lo + u_hi)
        margin = 0.05 * (u_hi - u_lo)  # stay inside the bracket
        s = math.exp(min(max(u, u_lo + margin), u_hi - margin))
        e = eps_at(s)
        if e <= target:
            hi, e_hi = s, e
            f_hi_scale = 1.0
            f_lo_scale = 0.5 * f_lo_scale if side == 1 else 1.0
            side = 1
        else:
            lo, e_lo = s, e
            f_lo_scale = 1.0
            f_hi_scale = 0.5 * f_hi_scale if side == -1 else 1.0
            side = -1
    return hi


def _search(
    eps_at: Callable[[float], float],
    target: float,
    delta: float,
    s0: float,
    floor: float,
    ceiling: float,
) -> tuple[float, float]:
    """A bracket ``(lo, hi)``: ``hi`` meets the target, ``lo`` does not (or floor)."""
    if eps_at(s0) <= target:
        hi, lo = s0, s0 / 2.0
        while eps_at(lo) <= target:
            hi, lo = lo, lo / 2.0
            if lo < floor:
                return (hi, hi)
        return (lo, hi)
    lo, hi = s0, s0 * 2.0
    while eps_at(hi) > target:
        lo, hi = hi, hi * 2.0
        if hi > ceiling:
            raise CalibrationError(
                f"no noise parameter <= {ceiling:g} reaches epsilon={target:g} at "
                f"delta={delta:g}"
            )
    return (lo, hi)


def _grid_oracle(
    eps_at: Callable[[float], float],
    target: float,
    s0: float,
    floor: float,
    ceiling: float,
    guess: float,
) -> Callable[[float], float]:
    """``eps_at`` on the doubling grid ``s0 2^k``, read near ``guess`` only.

    The coarse bracket search (:func:`_search_coarse`) walks the grid ``s0 2^k``
    from ``s0``; far below the answer each point costs a PLD whose grid grows as
    the noise shrinks (issue 27: 25 evaluations, 29 million pure-Python calls for
    full-batch DP-SGD). This evaluates ``eps_at`` from the grid point nearest
    ``guess`` (within ``(floor, ceiling]``) and walks to the two neighbouring grid
    points where it crosses ``target``; the returned function then answers every
    grid point at or above the passing one as passing (``target``) and every one
    at or below the failing one as failing (``inf``), as the calibrator's
    contract (``epsilon`` non-increasing in ``s``) implies, and evaluates
    anything else. The bracket search then takes the same steps, and returns the
    same bracket, as it does on ``eps_at`` itself: ``guess`` only decides which
    points are evaluated, never the result.
    """
    state = {"pass": math.inf, "fail": -math.inf}

    def real(s: float) -> float:
        e = eps_at(s)
        if e <= target:
            state["pass"] = min(state["pass"], s)
        else:
            state["fail"] = max(state["fail"], s)
        return e

    k = round(math.log2(guess / s0)) if guess > 0 and math.isfinite(guess) else 0
    s = s0 * 2.0**k  # exact: the grid's own points (powers of two times s0)
    while s > ceiling and s / 2.0 > floor:
        s /= 2.0
    while s <= floor and s * 2.0 <= ceiling:
        s *= 2.0
    if real(s) <= target:
        while s / 2.0 > floor and real(s / 2.0) <= target:
            s /= 2.0
    else:
        while s * 2.0 <= ceiling and real(s * 2.0) > target:
            s *= 2.0

    def answer(s: float) -> float:
        if s >= state["pass"]:
            return target
        if s <= state["fail"]:
            return math.inf
        return real(s)

    return answer


def _search_coarse(
    eps_at: Callable[[float], float],
    target: float,
    delta: float,
    s0: float,
    floor: float,
    ceiling: float,
    guess: float | None = None,
) -> tuple[float, float]:
    """The coarse route's bracket (doubling up from ``s0``, then halving down).

    With ``guess`` (an estimate of the answer) the grid is read near it only
    (:func:`_grid_oracle`): the same bracket, far fewer evaluations.
    """
    if guess is not None:
        eps_at = _grid_oracle(eps_at, target, s0, floor, ceiling, guess)
    hi = s0
    while eps_at(hi) > target:
        hi *= 2.0
        if hi > ceiling:
            raise CalibrationError(
                f"no noise multiplier <= {ceiling:g} reaches epsilon={target:g} at "
                f"delta={delta:g}"
            )
    lo = hi / 2.0
    while lo > floor and eps_at(lo) <= target:
        hi, lo = lo, lo / 2.0
    if lo <= floor:
        lo = floor
        if eps_at(lo) <= target:
            hi = lo
    return (lo, hi)


def _bisect(
    eps_at: Callable[[float], float],
    target: float,
    bracket: tuple[float, float],
    rtol: float,
) -> tuple[float, float]:
    lo, hi = bracket
    for _ in range(200):
        if hi / lo - 1.0 <= rtol:
            break
        mid = math.sqrt(lo * hi)
        if eps_at(mid) <= target:
            hi = mid
        else:
            lo = mid
    return (lo, hi)


def calibrate_noise(
    make_guarantee: Callable[[float], PrivacyGuarantee],
    *,
    epsilon: float,
    delta: float,
    initial: float = 1.0,
    min_lower: float = 1e-6,
    max_upper: float = 1e9,
    rtol: float = 1e-6,
) -> float:
    """The noise of :func:`calibrate` (exact route), for callers that need only it.

    Examples:
        >>> from dpsample.privacy import PrivacyGuarantee, calibrate_noise
        >>> s = calibrate_noise(lambda s: PrivacyGuarantee.gaussian(s).repeat(10),
        ...                     epsilon=1.0, delta=1e-5)
        >>> PrivacyGuarantee.gaussian(s).repeat(10).epsilon(1e-5) <= 1.0
        True
    """
    return calibrate(
        make_guarantee,
        epsilon=epsilon,
        delta=delta,
        initial=initial,
        min_lower=min_lower,
        max_upper=max_upper,
        rtol=rtol,
    ).noise


precision.scope_public(globals())
