"""How a guarantee is accounted: every route's epsilon and delta, and the split route.

:class:`~dpsample.privacy.guarantee.PrivacyGuarantee` holds what ran and composes
it; this module reads it out (the guarantee's ``epsilon`` and ``delta`` call it):

* :func:`exact_epsilons` / :func:`exact_deltas`: the exact mechanism's (no TV
  slack) epsilon / delta by every route valid for all of its components
  (``"pure"``, ``"basic"``, ``"rdp"``, ``"pld"``, ``"zcdp"``, and ``"split"`` where
  none of these covers every component);
* :func:`split_epsilon` / :func:`split_delta`: the ``"split"`` route, basic
  composition of the zCDP group and the rest over the fixed grid of delta shares
  :data:`_SPLIT_FRACTIONS`;
* :func:`epsilon_with_slack`: the epsilon of a guarantee with a TV slack.

The functions read the guarantee's memoised route methods and cache (one type
written in two modules, hence the private access below).
"""

# ruff: noqa: SLF001  (the guarantee's own routes and cache: one type, two modules)

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
from dp_accounting import rdp as dp_rdp

from dpsample._src import precision
from dpsample.privacy.components import NON_PRIVATE, RDP_ORDERS
from dpsample.privacy.conversions import zcdp_to_delta, zcdp_to_epsilon

if TYPE_CHECKING:
    from dpsample.privacy.guarantee import PrivacyGuarantee

__all__ = [
    "SPLIT_DELTA_RTOL",
    "composed_pld",
    "epsilon_with_slack",
    "exact_deltas",
    "exact_epsilons",
    "rdp_curve",
    "split_delta",
    "split_epsilon",
]

#: The split route's grid of shares ``f`` of delta (epsilon) for the zCDP group.
_SPLIT_FRACTIONS = (0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99)


#: Relative width of the split route's delta bracket: ``delta(epsilon(d)) <= d (1 +
#: SPLIT_DELTA_RTOL)`` on that route (:meth:`PrivacyGuarantee.delta`).
SPLIT_DELTA_RTOL = 1e-6


def _smallest_passing_delta(passes: Any, start: float) -> float:
    """Smallest ``delta`` in ``(0, 1)`` with ``passes(delta)``, to the rtol.

    ``passes`` must be monotone (false below some delta, true above). The bracket
    grows by factors of 2 from ``start`` (halving down, doubling up), then
    bisection in ``log delta``; returns the upper end of the final bracket (a
    passing delta), or 1.0 if no delta below 1 passes.
    """
    top = math.nextafter(1.0, 0.0)
    hi = min(max(start, 1e-300), top)
    if passes(hi):
        lo = hi / 2.0
        while lo > 1e-300 and passes(lo):
            hi, lo = lo, lo / 2.0
        if lo <= 1e-300:
            return hi
    else:
        lo = hi
        while True:
            if lo >= top:
                return 1.0
            hi = min(2.0 * lo, top)
            if passes(hi):
                break
            lo = hi
    while hi / lo - 1.0 > SPLIT_DELTA_RTOL:
        mid = math.sqrt(lo * hi)
        if passes(mid):
            hi = mid
        else:
            lo = mid
    return hi


def _fast_pld_delta(pld: Any) -> Any:
    """``epsilon -> delta`` of a dense dp_accounting PLD in ``O(log size)``, or None.

    For the split route's *search* only (its answer is checked on the exact
    accountant): ``delta(eps) = inf_mass + sum_{l > eps} p_l (1 - e^(eps - l))``
    read from suffix sums of ``p_l`` and ``p_l e^(-l)`` over the positive losses
    (``e^(-l) <= 1`` there), the larger of the remove and add directions.
    ``None`` where the PLD is not two dense pmfs (dp_accounting internals).
    """
    pmfs = [getattr(pld, "_pmf_remove", None), getattr(pld, "_pmf_add", None)]
    tables = []
    for pmf in pmfs:
        if pmf is None:
            return None
        try:
            probs = np.asarray(pmf._probs, dtype=np.float64)
            step, lower = float(pmf._discretization), int(pmf._lower_loss)
            inf_mass = float(pmf._infinity_mass)
        except (AttributeError, TypeError):
            return None
        losses = (np.arange(probs.size) + lower) * step
        keep = losses > 0.0
        losses, probs = losses[keep], probs[keep]
        tail = np.concatenate([np.cumsum(probs[::-1])[::-1], [0.0]])
        tail_e = np.concatenate(
            [np.cumsum((probs * np.exp(-losses))[::-1])[::-1], [0.0]]
        )
        tables.append((losses, tail, tail_e, inf_mass))

    def delta(eps: float) -> float:
        out = 0.0
        for losses, tail, tail_e, inf_mass in tables:
            k = int(np.searchsorted(losses, eps, side="right"))
            out = max(out, inf_mass + max(0.0, tail[k] - math.exp(eps) * tail_e[k]))
        return min(1.0, out)

    return delta


def rdp_curve(g: PrivacyGuarantee) -> np.ndarray | None:
    """The components' Renyi curves added order by order (memoised), or ``None``.

    ``None`` where a component has no Renyi curve (no RDP route).

    Examples:
        >>> from dpsample.privacy import PrivacyGuarantee
        >>> from dpsample.privacy.routes import rdp_curve
        >>> from dpsample.privacy.components import RDP_ORDERS
        >>> curve = rdp_curve(PrivacyGuarantee.zcdp(0.5))  # rho alpha at each order
        >>> bool(abs(curve[0] - 0.5 * RDP_ORDERS[0]) < 1e-12)
        True
    """
    if "rdp" not in g._cache:
        total: np.ndarray | None = np.zeros(len(RDP_ORDERS))
        for c, k in g.components:
            curve = c.rdp(g.relation)
            if curve is None:
                total = None
                break
            total = total + k * curve
        g._cache["rdp"] = total
    return g._cache["rdp"]


def composed_pld(g: PrivacyGuarantee) -> Any | None:
    """The components' PLDs composed (memoised), ``None`` or ``NON_PRIVATE``.

    On the guarantee's grid (:meth:`PrivacyGuarantee.pld_discretization`);
    ``None`` where a component has no PLD route.

    Examples:
        >>> from dpsample.privacy import PrivacyGuarantee
        >>> from dpsample.privacy.routes import composed_pld
        >>> composed_pld(PrivacyGuarantee.zcdp(0.5)) is None
        True
    """
    if "pld" not in g._cache:
        interval = g.pld_discretization()
        composed: Any = None
        for c, k in g.components:
            pld = c.pld(g.relation, interval, k)
            if pld is None or pld is NON_PRIVATE:
                composed = pld
                break
            composed = pld if composed is None else composed.compose(pld)
        g._cache["pld"] = composed
    return g._cache["pld"]


def split_epsilon(g: PrivacyGuarantee, delta: float) -> float | None:
    """Basic composition of the two groups' epsilons, the delta split searched.

    ``None`` where ``g`` is one group (only zCDP parts, or none) or ``delta`` is 0.

    Examples:
        >>> import dp_accounting
        >>> from dpsample.privacy import PrivacyGuarantee
        >>> from dpsample.privacy.routes import split_epsilon
        >>> ev = dp_accounting.TruncatedSubsampledGaussianDpEvent(100, 0.1, 15, 4.0)
        >>> g = PrivacyGuarantee.zcdp(0.01).compose(PrivacyGuarantee.from_event(ev))
        >>> 0 < split_epsilon(g, 1e-5) < 2
        True
        >>> split_epsilon(PrivacyGuarantee.zcdp(0.1), 1e-5) is None  # one group
        True
    """
    groups = g._split()
    if groups is None or not delta > 0:
        return None
    a, b = groups
    return min(
        a.epsilon(f * delta) + b.epsilon((1.0 - f) * delta) for f in _SPLIT_FRACTIONS
    )


def split_delta(g: PrivacyGuarantee, epsilon: float) -> float | None:
    """The split route's delta: the inverse of :func:`split_epsilon`.

    The smallest ``delta`` (to relative :data:`SPLIT_DELTA_RTOL`) whose split
    epsilon is at most ``epsilon``, so that ``epsilon(delta(e)) <= e`` and
    ``delta(epsilon(d)) <= d (1 + SPLIT_DELTA_RTOL)``. Each step of the
    search tests, for each share ``f`` of :data:`_SPLIT_FRACTIONS`, whether the
    non-zCDP group's delta at ``epsilon - epsilon_1(f delta)`` is at most ``(1 -
    f) delta`` (basic composition of ``(epsilon_1(f delta), f delta)`` and
    that: a valid bound, and the same test as ``epsilon_1(f delta) +
    epsilon_2((1 - f) delta) <= epsilon`` read through the group's delta,
    which is cheaper than its epsilon on a PLD). Where the PLD is the group's
    only route the search reads it through suffix sums
    (:func:`_fast_pld_delta`); the answer is then checked on the groups'
    epsilons at the share that passed (so :meth:`_split_epsilon` passes
    there), and searched again on :meth:`_split_epsilon` where the check
    fails (the group's PLD delta and epsilon are not inverses below its
    truncated tail, about ``1e-15``). (Issue 25:
    splitting epsilon on its own grid instead gave ``delta(2.0898) =
    2.4e-4`` where ``epsilon(1e-5) = 2.0898``, so a bisection through
    ``delta()`` over-reported epsilon.)
    """
    groups = g._split()
    if groups is None:
        return None
    key = ("split_delta", epsilon)
    if key in g._cache:
        return g._cache[key]
    a, b = groups
    fast = None
    if b.zcdp_rho() is None and b._rdp_curve() is None and b._basic() is None:
        pld = b._pld()  # then PLD is b's only route: search on its fast form
        if pld is not None and pld is not NON_PRIVATE:
            fast = _fast_pld_delta(pld)

    b_delta = fast or b.delta

    def passing_share(delta: float) -> float | None:
        """A share ``f`` whose basic composition certifies ``epsilon``."""
        for f in _SPLIT_FRACTIONS:
            rest = epsilon - a.epsilon(f * delta)
            if rest >= 0.0 and b_delta(rest) <= (1.0 - f) * delta:
                return f
        return None

    start = min(  # the epsilon-split grid's delta: a start near the answer
        a.delta(f * epsilon) + b_delta((1.0 - f) * epsilon) for f in _SPLIT_FRACTIONS
    )
    found = _smallest_passing_delta(
        lambda d: passing_share(d) is not None, min(start, 1.0)
    )
    if found < 1.0:
        # the final check, on the route epsilon() reads: the share that
        # passed, on the groups' epsilons (then _split_epsilon(found), a
        # minimum over the shares, passes too)
        f = passing_share(found)
        if f is None or (a.epsilon(f * found) + b.epsilon((1.0 - f) * found) > epsilon):
            # the group's delta and epsilon disagree (a PLD below its
            # truncated tail): search again on the split epsilon itself
            def split_passes(d: float) -> bool:
                split = g._split_epsilon(d)
                return split is not None and split <= epsilon

            found = _smallest_passing_delta(split_passes, found)
    g._cache[key] = found
    return found


def exact_epsilons(g: PrivacyGuarantee, delta: float) -> dict[str, float]:
    """Epsilon of the exact mechanism (no TV slack) by every valid route.

    Examples:
        >>> from dpsample.privacy import PrivacyGuarantee
        >>> from dpsample.privacy.routes import exact_epsilons
        >>> sorted(exact_epsilons(PrivacyGuarantee.pure(1.0), 1e-5))
        ['pld', 'pure', 'rdp', 'zcdp']
    """
    if not g.components:
        return {"none": 0.0}
    routes: dict[str, float] = {}
    pure = g.pure_epsilon()
    if math.isfinite(pure):
        routes["pure"] = pure
    basic = g._basic()
    if basic is not None and basic[1] > 0 and basic[1] <= delta:
        routes["basic"] = basic[0]  # Dwork-Roth Thm 3.16 (exact, no grid)
    if delta > 0:
        curve = g._rdp_curve()
        if curve is not None:
            eps, _ = dp_rdp.rdp_privacy_accountant.compute_epsilon(
                RDP_ORDERS, curve, delta
            )
            routes["rdp"] = float(eps)
        pld = g._pld()
        if pld is NON_PRIVATE:
            routes["pld"] = math.inf
        elif pld is not None:
            routes["pld"] = float(pld.get_epsilon_for_delta(delta))
        rho = g.zcdp_rho()
        if rho is not None:
            routes["zcdp"] = zcdp_to_epsilon(rho, delta)
    if not any(math.isfinite(v) for v in routes.values()):
        split = g._split_epsilon(delta)
        if split is not None:
            routes["split"] = split
    return routes


def exact_deltas(g: PrivacyGuarantee, epsilon: float) -> dict[str, float]:
    """Delta of the exact mechanism (no TV slack) at ``epsilon`` by every valid route.

    Examples:
        >>> from dpsample.privacy import PrivacyGuarantee
        >>> from dpsample.privacy.routes import exact_deltas
        >>> exact_deltas(PrivacyGuarantee.pure(1.0), 1.0)["pure"]
        0.0
    """
    if not g.components:
        return {"none": 0.0}
    routes: dict[str, float] = {}
    if g.pure_epsilon() <= epsilon:
        routes["pure"] = 0.0
    basic = g._basic()
    if basic is not None and basic[0] <= epsilon:
        routes["basic"] = basic[1]
    curve = g._rdp_curve()
    if curve is not None:
        d, _ = dp_rdp.rdp_privacy_accountant.compute_delta(RDP_ORDERS, curve, epsilon)
        routes["rdp"] = float(d)
    pld = g._pld()
    if pld is NON_PRIVATE:
        routes["pld"] = 1.0
    elif pld is not None:
        routes["pld"] = float(pld.get_delta_for_epsilon(epsilon))
    rho = g.zcdp_rho()
    if rho is not None:
        routes["zcdp"] = zcdp_to_delta(rho, epsilon)
    if not any(v < 1.0 for v in routes.values()):
        split = g._split_delta(epsilon)
        if split is not None:
            routes["split"] = split
    return routes


def epsilon_with_slack(g: PrivacyGuarantee, delta: float) -> float:
    """Smallest epsilon with ``delta_exact(epsilon) + (1 + e^epsilon) tau <= delta``.

    ``tau`` is ``g``'s TV slack; a candidate from the exact mechanism at a share of
    ``delta``, refined downward by bisection on that validity predicate.

    Examples:
        >>> from dpsample.privacy import PrivacyGuarantee
        >>> from dpsample.privacy.routes import epsilon_with_slack
        >>> g = PrivacyGuarantee.pure(1.0).with_tv_slack(1e-8)
        >>> epsilon_with_slack(g, 1e-6) <= 1.0
        True
    """
    tau = g.tv_slack
    if delta <= 2.0 * tau:  # even epsilon = 0 needs delta >= 2 tau
        return math.inf
    # Largest epsilon the slack allows: (1 + e^eps) tau < delta.
    eps_cap = math.log(delta / tau - 1.0)

    def slack_ok(eps: float) -> bool:
        return g.delta(eps) <= delta

    # Candidate from the exact mechanism at the delta left after a slack budget.
    best = math.inf
    for frac in (0.5, 0.9, 0.99):
        d_exact = delta * frac
        eps0 = min(g._exact_epsilons(d_exact).values(), default=math.inf)
        if eps0 <= eps_cap and (1 + math.exp(eps0)) * tau <= delta - d_exact:
            best = min(best, eps0)
    if math.isinf(best):
        if not slack_ok(eps_cap):
            return math.inf
        best = eps_cap
    # Refine downward by bisection on the validity predicate.
    lo = 0.0
    if slack_ok(lo):
        return 0.0
    hi = best
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if slack_ok(mid):
            hi = mid
        else:
            lo = mid
        if hi - lo < 1e-9 * max(1.0, hi):
            break
    return float(hi)


precision.scope_public(globals())
