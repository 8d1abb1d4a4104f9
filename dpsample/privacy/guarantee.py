"""`PrivacyGuarantee`: the one type every private primitive in dpsample returns.

A guarantee is a multiset of *components* (what ran, each with a repetition count), a
neighbouring relation, an optional total-variation slack and the *assumptions* it rests
on (empty when it is unconditional; see :meth:`PrivacyGuarantee.assuming`). Components
are
accounted by every route that is valid for all of them, and the tightest valid value is
reported:

* ``"pure"``: the sum of pure epsilons (basic composition of pure DP).
* ``"rdp"``: Renyi DP curves added order by order and converted with the improved
  conversion of dp_accounting (Canonne, Kamath, Steinke 2020, Prop. 12).
* ``"pld"``: privacy loss distributions composed by dp_accounting's PLD code
  (pessimistic discretisation, so the reported epsilon is an upper bound).
* ``"zcdp"``: the seed 000 Lemma A.4 conversion ``rho + 2 sqrt(rho log(1/delta))``, a
  cross-check only (it is never tighter than the RDP route on the same rho).
* ``"split"``, only where none of the above covers every component (a zCDP-only
  component, such as a Gibbs sampler's LSI guarantee, composed with a subsampled event
  that has no zCDP or RDP form, such as a truncated Poisson-subsampled Gaussian): the
  zCDP components and the rest are accounted apart and added by basic composition
  (Dwork and Roth 2014, Thm 3.16), ``epsilon_1(f delta) + epsilon_2((1 - f) delta)``
  minimised over a fixed grid of ``f`` (each ``f`` gives a valid bound). Each group is
  an interactive mechanism that is ``(epsilon_g, delta_g)``-DP by its own route; where
  the groups interleave, the concurrent composition of two such mechanisms is still
  ``(epsilon_1 + epsilon_2, delta_1 + delta_2)``-DP (Vadhan and Wang 2021; Lyu 2022),
  and a warm start runs them one after the other anyway.

What ran and how it is accounted stay apart (dp_accounting's design): components built
from ``dp_accounting.DpEvent`` objects use dp_accounting's RDP and PLD accountants; the
mechanisms dp_accounting cannot express are handled here with small, tested formulas:

* a *generic* epsilon-DP mechanism (``pure``): every epsilon-DP pair of output
  distributions is a post-processing of binary randomised response with the same
  epsilon (Kairouz, Oh, Viswanath 2015), so randomised response's Renyi curve and
  dp_accounting's worst-case PLD (``from_privacy_parameters``) bound every such
  mechanism, not only Laplace;
* the exponential mechanism (``exponential_mechanism``): pure epsilon and, by the
  bounded-range analysis (Cesar and Rogers 2021), ``epsilon**2 / 8``-zCDP; the tighter
  of the two is taken order by order;
* ``approx(epsilon, delta)``: dp_accounting's worst-case (epsilon, delta) PLD;
* a TV slack ``tau`` (an approximate sampler within total variation ``tau`` of an exact
  mechanism): ``(epsilon, delta + (1 + e**epsilon) tau)``. Slacks add under composition
  (hybrid argument), so a composition is ``(epsilon, delta_exact(epsilon) + (1 +
  e**epsilon) * sum(tau))``.

dp_accounting's ``ExponentialMechanismDpEvent`` is deliberately not used (the RDP
accountant of some versions ignores its repeat count; see STYLE.md); an event type
dpsample does not know gets no route (epsilon ``inf``), never dp_accounting's
unchecked number. Events are read in dp_accounting's convention and the relation is
applied where dp_accounting does not (see :meth:`PrivacyGuarantee.from_event`).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence
from typing import Any

import dp_accounting
import numpy as np
from dp_accounting import dp_event
from dp_accounting import pld as dp_pld
from dp_accounting import rdp as dp_rdp

from dpsample._src import precision, validation
from dpsample.errors import RelationMismatchError

__all__ = [
    "NeighboringRelation",
    "PrivacyGuarantee",
    "randomized_response_rdp",
    "epsilon_to_zcdp",
    "zcdp_to_epsilon",
    "zcdp_to_delta",
    "RDP_ORDERS",
]

NeighboringRelation = dp_accounting.NeighboringRelation
REPLACE_ONE = NeighboringRelation.REPLACE_ONE

#: Renyi orders used by every RDP computation (dp_accounting's defaults plus a few
#: large orders that matter for pure-DP components at small delta).
RDP_ORDERS: tuple[float, ...] = tuple(
    sorted(
        set(float(a) for a in dp_rdp.rdp_privacy_accountant.DEFAULT_RDP_ORDERS)
        | {1.5, 1.75, 2.5, 3.5, 4.5, 1024.0, 2048.0, 4096.0}
    )
)

#: Finest PLD discretisation interval (dp_accounting's default). A coarser interval is
#: chosen when the composed privacy loss would need more than ``PLD_MAX_POINTS`` points;
#: a coarser pessimistic discretisation is still a valid upper bound.
PLD_DISCRETIZATION = 1e-4
PLD_MAX_POINTS = 2_000_000
#: The split route's grid of shares ``f`` of delta (epsilon) for the zCDP group.
_SPLIT_FRACTIONS = (0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99)


# --------------------------------------------------------------------------------------
# closed forms dp_accounting lacks


def randomized_response_rdp(
    epsilon: float, orders: Sequence[float] | np.ndarray
) -> np.ndarray:
    r"""Renyi divergence of binary randomised response with parameter epsilon.

    .. math::
        D_\alpha = \frac{1}{\alpha - 1}\log\big(p^\alpha q^{1-\alpha}
        + q^\alpha p^{1-\alpha}\big),\qquad p = \frac{e^\epsilon}{1 + e^\epsilon},
        \; q = 1 - p.

    Every epsilon-DP pair of distributions is a post-processing of this pair, so by the
    data-processing inequality this curve bounds the Renyi DP of *any* epsilon-DP
    mechanism. Computed in log space; the limit alpha -> 1 (KL) is handled.

    Args:
        epsilon: the pure-DP parameter (> 0, finite).
        orders: Renyi orders (> 1).

    Returns:
        The Renyi DP curve at ``orders`` (float64 array), each value <= epsilon.

    Examples:
        >>> from dpsample.privacy.guarantee import randomized_response_rdp
        >>> float(randomized_response_rdp(1.0, [2.0])[0]) < 1.0
        True
    """
    eps = float(epsilon)
    log_p = -math.log1p(math.exp(-eps))  # log(e^eps / (1 + e^eps))
    log_q = log_p - eps  # log(1 / (1 + e^eps)), no overflow at large eps
    out = []
    for a in orders:
        a = float(a)
        if abs(a - 1.0) < 1e-9:
            out.append((math.exp(log_p) - math.exp(log_q)) * eps)
            continue
        t1 = a * log_p + (1 - a) * log_q
        t2 = a * log_q + (1 - a) * log_p
        m = max(t1, t2)
        log_sum = m + math.log(math.exp(t1 - m) + math.exp(t2 - m))
        out.append(min(log_sum / (a - 1.0), eps))
    return np.asarray(out, dtype=np.float64)


def zcdp_to_epsilon(rho: float, delta: float) -> float:
    """Seed 000 Lemma A.4: rho-zCDP implies (rho + 2 sqrt(rho log(1/delta)), delta)-DP.

    Examples:
        >>> round(zcdp_to_epsilon(0.5, 1e-5), 4)
        5.2985
    """
    if delta <= 0:
        return math.inf if rho > 0 else 0.0
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


def epsilon_to_zcdp(epsilon: float, delta: float) -> float:
    r"""Inverse of :func:`zcdp_to_epsilon`: the largest rho it maps to ``epsilon``.

    .. math::

        \rho = \big(\sqrt{\varepsilon + \ln(1/\delta)} - \sqrt{\ln(1/\delta)}\big)^2,
        \qquad \rho + 2\sqrt{\rho \ln(1/\delta)} = \varepsilon

    (the exact solution, not the small-epsilon ``eps^2/(4 ln(1/delta))``).

    Examples:
        >>> rho = epsilon_to_zcdp(1.0, 1e-5)
        >>> round(zcdp_to_epsilon(rho, 1e-5), 12)
        1.0
    """
    ell = math.log(1.0 / delta)
    return (math.sqrt(epsilon + ell) - math.sqrt(ell)) ** 2


def zcdp_to_delta(rho: float, epsilon: float) -> float:
    """Inverse of :func:`zcdp_to_epsilon`: delta = exp(-(eps - rho)^2 / (4 rho)).

    Examples:
        >>> abs(zcdp_to_delta(0.5, zcdp_to_epsilon(0.5, 1e-5)) - 1e-5) < 1e-12
        True
    """
    if rho == 0:
        return 0.0
    if epsilon <= rho:
        return 1.0
    return min(1.0, math.exp(-((epsilon - rho) ** 2) / (4.0 * rho)))


# --------------------------------------------------------------------------------------
# components

ADD_OR_REMOVE_ONE = NeighboringRelation.ADD_OR_REMOVE_ONE

#: The relations :meth:`PrivacyGuarantee.from_event` can account; an event under any
#: other relation gets no route (epsilon ``inf``).
_EVENT_RELATIONS = (REPLACE_ONE, ADD_OR_REMOVE_ONE)

#: Additive-noise events whose dp_accounting analysis is for sensitivity 1 (one
#: example's contribution bound ``C``). Under REPLACE_ONE the sensitivity is ``2 C``.
_SHIFT_EVENTS = (dp_accounting.GaussianDpEvent, dp_accounting.LaplaceDpEvent)

#: Events whose dp_accounting RDP analysis states the relation itself (it refuses a
#: relation it does not analyse). ``SampledWithoutReplacementDpEvent`` reads its inner
#: noise multiplier relative to the replace-one sensitivity (Wang, Balle and
#: Kasiviswanathan 2019, as documented by dp_accounting), so it is kept as is.
_RDP_SELF_RELATED = (
    dp_accounting.PoissonSampledDpEvent,
    dp_accounting.SampledWithoutReplacementDpEvent,
    dp_accounting.RandomizedResponseDpEvent,
)

#: Events whose dp_accounting PLD analysis takes the relation into account (it doubles
#: a shift for REPLACE_ONE, or refuses a relation it does not analyse).
_PLD_SELF_RELATED = (
    dp_accounting.GaussianDpEvent,
    dp_accounting.LaplaceDpEvent,
    dp_event.DiscreteLaplaceDpEvent,
    dp_event.MixtureOfGaussiansDpEvent,
    dp_accounting.PoissonSampledDpEvent,
    dp_accounting.TruncatedSubsampledGaussianDpEvent,
    dp_accounting.RandomizedResponseDpEvent,
)


class _NonPrivate:
    """Marker of a PLD route that met a non-private event (epsilon ``inf``)."""


_NON_PRIVATE = _NonPrivate()


def _halved(event: Any) -> Any:
    """The same shift mechanism with half the noise multiplier (twice the shift)."""
    return type(event)(event.noise_multiplier / 2.0)


def _rdp_event(event: Any, relation: Any) -> Any | None:
    """An event whose dp_accounting RDP analysis under ``relation`` is ``event``'s.

    dp_accounting's RDP accountant analyses a bare Gaussian or Laplace event with unit
    sensitivity whatever the relation; under REPLACE_ONE the sensitivity of a shift
    mechanism is twice one example's contribution, i.e. the same event with half the
    noise multiplier. Events the accountant analyses for the relation themselves are
    kept; unknown event types (including dp_accounting's
    ``ExponentialMechanismDpEvent``, whose repeat count some RDP versions ignore) give
    ``None``: no route rather than a wrong number.
    """
    if relation not in _EVENT_RELATIONS:
        return None
    if isinstance(event, _SHIFT_EVENTS):
        if not event.noise_multiplier > 0:  # no noise: dp_accounting would divide by 0
            return dp_accounting.NonPrivateDpEvent()
        return _halved(event) if relation == REPLACE_ONE else event
    if isinstance(
        event,
        (
            dp_accounting.NoOpDpEvent,
            dp_accounting.NonPrivateDpEvent,
            dp_accounting.ZCDpEvent,  # an RDP curve: no sensitivity to convert
            *_RDP_SELF_RELATED,
        ),
    ):
        return event
    if isinstance(event, dp_accounting.SelfComposedDpEvent):
        inner = _rdp_event(event.event, relation)
        return (
            None
            if inner is None
            else dp_accounting.SelfComposedDpEvent(inner, event.count)
        )
    if isinstance(event, dp_accounting.ComposedDpEvent):
        parts = [_rdp_event(e, relation) for e in event.events]
        return (
            None
            if any(p is None for p in parts)
            else (dp_accounting.ComposedDpEvent(parts))
        )
    if isinstance(event, dp_event.RepeatAndSelectDpEvent):
        inner = _rdp_event(event.event, relation)
        return (
            None
            if inner is None
            else dp_event.RepeatAndSelectDpEvent(inner, event.mean, event.shape)
        )
    return None


def _event_pld(
    event: Any, relation: Any, interval: float, count: int = 1
) -> Any | None:
    """dp_accounting's PLD of ``count`` runs of ``event`` under ``relation``.

    ``None`` where no correct analysis is available, :data:`_NON_PRIVATE` for a
    non-private event. dp_accounting's PLD accountant handles the relation of the
    events in :data:`_PLD_SELF_RELATED` (it refuses Laplace under REPLACE_ONE, which
    is then accounted as add/remove Laplace with half the noise multiplier, i.e. the
    doubled shift); compositions are composed here.

    Repetitions go to the accountant as its own ``compose(event, count)`` (one
    self-composition of the event's PLD; a repeated composition repeats each of its
    parts), never as a self-composition of an already composed PLD: each
    self-composition moves up to ``1e-15`` of truncated tail to the infinite loss,
    so composing twice turned ``k`` releases into ``k 1e-15`` of infinite loss,
    which is above ``delta = 1e-12`` from ``k = 1000`` on and made every noise
    level fail (issue 15: DP-SGD's default plan at ``epsilon = 0.01, delta =
    1e-12, n = 1e7``).
    """
    if relation not in _EVENT_RELATIONS:
        return None
    if isinstance(event, dp_accounting.NoOpDpEvent):
        return dp_pld.privacy_loss_distribution.identity(interval)
    if isinstance(event, dp_accounting.NonPrivateDpEvent):
        return _NON_PRIVATE
    if isinstance(event, dp_accounting.SelfComposedDpEvent):
        return _event_pld(event.event, relation, interval, count * event.count)
    if isinstance(event, dp_accounting.ComposedDpEvent):
        total = dp_pld.privacy_loss_distribution.identity(interval)
        for e in event.events:  # count x (A then B) = (count x A) then (count x B)
            part = _event_pld(e, relation, interval, count)
            if part is None or part is _NON_PRIVATE:
                return part
            total = total.compose(part)
        return total
    if isinstance(event, dp_accounting.LaplaceDpEvent) and relation == REPLACE_ONE:
        event, relation = _halved(event), ADD_OR_REMOVE_ONE
    if not isinstance(event, _PLD_SELF_RELATED):
        return None
    try:
        hash(event)
    except TypeError:  # an event with list fields (a mixture of Gaussians)
        return _build_leaf_pld(event, relation, interval, count)
    return _leaf_pld(event, relation, interval, count)


@functools.lru_cache(maxsize=256)
def _leaf_pld(event: Any, relation: Any, interval: float, count: int = 1) -> Any | None:
    """dp_accounting's PLD of ``count`` runs of one leaf event (Gaussian, ...).

    Cached: a pure function of public, hashable arguments (dp_accounting's events
    are frozen attrs classes; the few with list fields are not hashable and go to
    :func:`_build_leaf_pld` directly), and building a Gaussian PLD is the bulk of
    a pipeline's planning time (every plan of a pipeline composes the same few
    events again; the audits call a pipeline thousands of times). The returned
    PLD is shared: dp_accounting's ``compose`` and ``self_compose`` return new
    objects and never change their operands.
    """
    return _build_leaf_pld(event, relation, interval, count)


def _build_leaf_pld(event: Any, relation: Any, interval: float, count: int) -> Any:
    """The uncached :func:`_leaf_pld`."""
    accountant = dp_pld.PLDAccountant(
        neighboring_relation=relation, value_discretization_interval=interval
    )
    if not accountant.supports(event):
        return None
    accountant.compose(event, count)
    # dp_accounting keeps the composed PLD in `_pld` and its non-private flag in
    # `_contains_non_dp_event` (zero noise); there are no public getters.
    if accountant._contains_non_dp_event:  # noqa: SLF001
        return _NON_PRIVATE
    return accountant._pld  # noqa: SLF001


def _event_pure_epsilon(event: Any, relation: Any) -> float:
    """Pure epsilon of ``event`` under ``relation`` (``inf`` when none is known).

    A Laplace event with noise multiplier ``b`` (scale over one example's L1
    contribution) is ``1/b``-DP under add/remove and ``2/b``-DP under replace-one.
    """
    if relation not in _EVENT_RELATIONS:
        return math.inf
    if isinstance(event, dp_accounting.LaplaceDpEvent):
        if not event.noise_multiplier > 0:
            return math.inf
        return (2.0 if relation == REPLACE_ONE else 1.0) / event.noise_multiplier
    if isinstance(event, dp_accounting.NoOpDpEvent):
        return 0.0
    if isinstance(event, dp_accounting.SelfComposedDpEvent):
        return event.count * _event_pure_epsilon(event.event, relation)
    if isinstance(event, dp_accounting.ComposedDpEvent):
        return sum(_event_pure_epsilon(e, relation) for e in event.events)
    return math.inf


def _event_zcdp(event: Any) -> float | None:
    """The zCDP rho of an event *already rewritten by* :func:`_rdp_event`."""
    if isinstance(event, dp_accounting.GaussianDpEvent):
        nm = event.noise_multiplier
        return 0.5 / nm**2 if nm > 0 else math.inf
    if isinstance(event, dp_accounting.ZCDpEvent):
        return float(event.rho) if event.xi == 0 else None
    if isinstance(event, dp_accounting.NoOpDpEvent):
        return 0.0
    if isinstance(event, dp_accounting.NonPrivateDpEvent):
        return math.inf
    if isinstance(event, dp_accounting.SelfComposedDpEvent):
        inner = _event_zcdp(event.event)
        return None if inner is None else event.count * inner
    if isinstance(event, dp_accounting.ComposedDpEvent):
        parts = [_event_zcdp(e) for e in event.events]
        known = [p for p in parts if p is not None]
        return None if len(known) < len(parts) else sum(known)
    return None


@dataclasses.dataclass(frozen=True)
class _Component:
    """One kind of mechanism that ran, with its parameters (hashable)."""

    kind: str  # "event" | "pure" | "expmech" | "zcdp" | "approx"
    # True for gaussian()/laplace(): the noise multiplier is relative to the L2 (L1)
    # sensitivity under the guarantee's own relation, so dp_accounting is queried with
    # its unit-sensitivity convention (ADD_OR_REMOVE_ONE) whatever the relation is.
    unit_sensitivity: bool = False
    epsilon: float = math.inf
    delta: float = 0.0
    rho: float = math.inf
    event: Any = None

    def describe(self) -> str:
        if self.kind == "event":
            return repr(self.event)
        if self.kind == "pure":
            return f"pure(epsilon={self.epsilon:g})"
        if self.kind == "expmech":
            return f"exponential_mechanism(epsilon={self.epsilon:g})"
        if self.kind == "zcdp":
            return f"zcdp(rho={self.rho:g})"
        return f"approx(epsilon={self.epsilon:g}, delta={self.delta:g})"

    def event_relation(self, relation: Any) -> Any:
        """The relation dp_accounting reads the event under (``unit_sensitivity``)."""
        return ADD_OR_REMOVE_ONE if self.unit_sensitivity else relation

    def pure_epsilon(self, relation: Any) -> float:
        if self.kind in ("pure", "expmech"):
            return self.epsilon
        if self.kind == "approx":
            return self.epsilon if self.delta == 0 else math.inf
        if self.kind == "event":
            return _event_pure_epsilon(self.event, self.event_relation(relation))
        return math.inf

    def zcdp(self, relation: Any) -> float | None:
        if self.kind == "pure":
            return self.epsilon**2 / 2.0  # Bun & Steinke 2016, Prop. 3.3
        if self.kind == "expmech":
            return self.epsilon**2 / 8.0  # bounded range (Cesar & Rogers 2021)
        if self.kind == "zcdp":
            return self.rho
        if self.kind == "approx":
            return self.epsilon**2 / 2.0 if self.delta == 0 else None
        event = _rdp_event(self.event, self.event_relation(relation))
        return None if event is None else _event_zcdp(event)

    def rdp(self, relation: Any) -> np.ndarray | None:
        orders = np.asarray(RDP_ORDERS)
        if self.kind == "pure" or (self.kind == "approx" and self.delta == 0):
            return randomized_response_rdp(self.epsilon, orders)
        if self.kind == "expmech":
            return np.minimum(
                randomized_response_rdp(self.epsilon, orders),
                orders * self.epsilon**2 / 8.0,
            )
        if self.kind == "zcdp":
            with np.errstate(
                over="ignore"
            ):  # a vacuous huge rho gives inf, not a warning
                return orders * self.rho
        if self.kind == "approx":
            return None
        relation = self.event_relation(relation)
        event = _rdp_event(self.event, relation)
        if event is None:
            return None
        accountant = dp_rdp.RdpAccountant(
            list(RDP_ORDERS), neighboring_relation=relation
        )
        if not accountant.supports(event):
            return None
        accountant.compose(event)
        curve = np.asarray(accountant.rdp, dtype=np.float64)
        if np.any(curve < 0):
            # A Renyi divergence is >= 0: a negative one is dp_accounting's
            # cancellation at extreme events (tiny sampling rates, huge noise), and
            # its conversion then returns epsilon 0 (issue 15). The curve is not
            # trusted: no RDP route for this component (the PLD route remains).
            return None
        return curve

    def pld_width(self, count: int, relation: Any) -> float:
        """Rough width of the k-fold privacy-loss support (to size the PLD grid)."""
        if self.kind in ("pure", "expmech", "approx"):
            e = self.epsilon
            return 2.0 * (count * e * math.tanh(e / 2) + 10 * math.sqrt(count) * e + e)
        if self.kind == "event" and isinstance(self.event, _SHIFT_EVENTS):
            nm = self.event.noise_multiplier
            if self.event_relation(relation) == REPLACE_ONE:
                nm /= 2.0  # the shift is twice the contribution bound
            if not nm > 0:
                return 0.0
            mean = (
                0.5 / nm**2
                if isinstance(self.event, dp_accounting.GaussianDpEvent)
                else 1 / nm
            )
            std = 2.0 / nm
            return 2.0 * (count * mean + 10 * math.sqrt(count) * std + 10 * std)
        return 0.0  # unknown (subsampled events): dp_accounting's own sizing

    def pld(self, relation: Any, interval: float, count: int = 1) -> Any | None:
        """PLD of ``count`` runs, ``None`` (no PLD route) or :data:`_NON_PRIVATE`."""
        if self.kind in ("pure", "expmech", "approx"):
            params = dp_pld.common.DifferentialPrivacyParameters(
                self.epsilon, self.delta if self.kind == "approx" else 0.0
            )
            pld = dp_pld.privacy_loss_distribution.from_privacy_parameters(
                params, value_discretization_interval=interval
            )
            return pld if count == 1 else pld.self_compose(count)
        if self.kind == "zcdp":
            return None
        return _event_pld(self.event, self.event_relation(relation), interval, count)


# --------------------------------------------------------------------------------------
# the guarantee


@dataclasses.dataclass(frozen=True, eq=False)
class PrivacyGuarantee:
    """A differential-privacy guarantee, composable and convertible to (epsilon, delta).

    Build one with a constructor (:meth:`pure`, :meth:`exponential_mechanism`,
    :meth:`zcdp`, :meth:`gaussian`, :meth:`laplace`, :meth:`approx`,
    :meth:`from_event`, :meth:`none`), combine with :meth:`compose`, :meth:`repeat` and
    :meth:`with_tv_slack`, qualify with :meth:`assuming`, and read it with
    :meth:`epsilon`, :meth:`delta` and :meth:`report`. Every guarantee states its
    neighbouring relation (replace-one by default, as in the seeds); composing
    guarantees of different relations raises. A guarantee that rests on something
    dpsample does not prove or enforce lists it in ``assumptions``; every combinator
    keeps the union, so a composition is as conditional as its most conditional part.

    Examples:
        >>> from dpsample.privacy import PrivacyGuarantee
        >>> g = PrivacyGuarantee.exponential_mechanism(0.1).repeat(100)
        >>> round(g.epsilon(0.0), 6)  # pure epsilon: basic composition
        10.0
        >>> round(g.epsilon(1e-5), 2)  # through zCDP eps^2/8 per mechanism
        2.17
        >>> h = g.compose(PrivacyGuarantee.gaussian(2.0))
        >>> h.epsilon(0.0)
        inf
    """

    components: tuple[tuple[_Component, int], ...] = ()
    relation: Any = REPLACE_ONE
    tv_slack: float = 0.0
    #: Conditions the guarantee rests on that dpsample does not prove or enforce
    #: (an unproven schedule, a bound the caller vouches for, an event the data may
    #: break), sorted and without duplicates. Empty for an unconditional guarantee.
    assumptions: tuple[str, ...] = ()
    _cache: dict = dataclasses.field(
        default_factory=dict, repr=False, compare=False, hash=False
    )

    # ----------------------------------------------------------------- constructors
    @classmethod
    def none(cls, *, relation: Any = REPLACE_ONE) -> PrivacyGuarantee:
        """The guarantee of releasing nothing (identity for :meth:`compose`)."""
        return cls((), relation, 0.0)

    @classmethod
    def pure(cls, epsilon: float, *, relation: Any = REPLACE_ONE) -> PrivacyGuarantee:
        """A generic epsilon-DP mechanism.

        Its compositions are accounted so that they hold for *every* epsilon-DP
        mechanism (randomised response is the worst case), not only for Laplace.

        Args:
            epsilon: pure-DP parameter, > 0.
            relation: the neighbouring relation the guarantee is stated for.

        Returns:
            The guarantee.

        Examples:
            >>> from dpsample.privacy import PrivacyGuarantee
            >>> PrivacyGuarantee.pure(1.0).repeat(3).epsilon(0.0)
            3.0
        """
        eps = validation.positive("epsilon", epsilon)
        return cls(((_Component("pure", epsilon=eps), 1),), relation)

    @classmethod
    def exponential_mechanism(
        cls, epsilon: float, *, relation: Any = REPLACE_ONE
    ) -> PrivacyGuarantee:
        """An exponential mechanism whose privacy-loss range is at most epsilon.

        Accounted as pure epsilon-DP and as ``epsilon**2 / 8``-zCDP (bounded range,
        Cesar and Rogers 2021; Durfee and Rogers 2019); the tighter is taken. Like
        every noise constructor here it accounts the ideal mechanism in real
        arithmetic; a floating-point Gumbel-max sampler departs from it on events of
        tiny probability (see :func:`dpsample.nets.exponential_mechanism` and the
        threat model in ``docs/privacy.md``).

        Examples:
            >>> from dpsample.privacy import PrivacyGuarantee
            >>> PrivacyGuarantee.exponential_mechanism(1.0).zcdp_rho()
            0.125
        """
        eps = validation.positive("epsilon", epsilon)
        return cls(((_Component("expmech", epsilon=eps), 1),), relation)

    @classmethod
    def zcdp(cls, rho: float, *, relation: Any = REPLACE_ONE) -> PrivacyGuarantee:
        """A rho-zCDP mechanism (Renyi DP rho * alpha at every order alpha > 1).

        Examples:
            >>> from dpsample.privacy import PrivacyGuarantee
            >>> round(PrivacyGuarantee.zcdp(0.5).epsilon(1e-5), 3)
            4.729
        """
        r = validation.positive("rho", rho)
        return cls(((_Component("zcdp", rho=r), 1),), relation)

    @classmethod
    def gaussian(
        cls, noise_to_sensitivity: float, *, relation: Any = REPLACE_ONE
    ) -> PrivacyGuarantee:
        """The Gaussian mechanism with noise std / L2 sensitivity as given.

        The sensitivity is the statistic's *full* L2 sensitivity under ``relation``
        (for a sum of per-example terms bounded by ``C``: ``2C`` under replace-one,
        ``C`` under add/remove). This is not the ecosystem's ``noise_multiplier``
        (std of the noise on the sum over ``C``, as in Opacus, TF Privacy,
        dp-accounting and :mod:`dpsample.finders`), which is ``2 *
        noise_to_sensitivity`` under replace-one; see
        :func:`dpsample.finders.accounting.gaussian_sum_guarantee`.

        Args:
            noise_to_sensitivity: noise std over the L2 sensitivity, > 0 (may be
                passed positionally).
            relation: the neighbouring relation the sensitivity is stated for.

        Returns:
            The guarantee.

        Examples:
            >>> from dpsample.privacy import PrivacyGuarantee
            >>> round(PrivacyGuarantee.gaussian(1.0).epsilon(1e-5), 2)
            4.38
        """
        nm = validation.positive("noise_to_sensitivity", noise_to_sensitivity)
        event = dp_accounting.GaussianDpEvent(nm)
        return cls(
            ((_Component("event", unit_sensitivity=True, event=event), 1),), relation
        )

    @classmethod
    def laplace(
        cls, noise_to_sensitivity: float, *, relation: Any = REPLACE_ONE
    ) -> PrivacyGuarantee:
        """The Laplace mechanism with scale / L1 sensitivity = noise_to_sensitivity.

        Pure ``1 / noise_to_sensitivity``-DP; its RDP and PLD are Laplace's own
        (tighter than a generic pure mechanism's). The sensitivity is the full L1
        sensitivity under ``relation``, as for :meth:`gaussian`.

        Args:
            noise_to_sensitivity: Laplace scale over the L1 sensitivity, > 0 (may be
                passed positionally).
            relation: the neighbouring relation the sensitivity is stated for.

        Returns:
            The guarantee.

        Examples:
            >>> from dpsample.privacy import PrivacyGuarantee
            >>> PrivacyGuarantee.laplace(2.0).epsilon(0.0)
            0.5
        """
        nm = validation.positive("noise_to_sensitivity", noise_to_sensitivity)
        event = dp_accounting.LaplaceDpEvent(nm)
        return cls(
            ((_Component("event", unit_sensitivity=True, event=event), 1),), relation
        )

    @classmethod
    def approx(
        cls, epsilon: float, delta: float, *, relation: Any = REPLACE_ONE
    ) -> PrivacyGuarantee:
        """A generic (epsilon, delta)-DP mechanism (worst-case PLD).

        Examples:
            >>> from dpsample.privacy import PrivacyGuarantee
            >>> g = PrivacyGuarantee.approx(1.0, 1e-6)
            >>> round(g.epsilon(1e-6), 3), g.epsilon(0.0)
            (1.0, inf)
        """
        eps = validation.nonnegative("epsilon", epsilon)
        dlt = validation.probability("delta", delta)
        if dlt >= 1.0:
            raise ValueError(f"Expected delta={dlt!r} < 1")
        return cls(((_Component("approx", epsilon=eps, delta=dlt), 1),), relation)

    @classmethod
    def from_event(
        cls, event: dp_accounting.DpEvent, *, relation: Any = REPLACE_ONE
    ) -> PrivacyGuarantee:
        """Wrap a dp_accounting ``DpEvent`` (accounted by dp_accounting's RDP and PLD).

        The event is read in dp_accounting's convention: the noise multiplier of a
        ``GaussianDpEvent`` or ``LaplaceDpEvent`` is relative to one example's
        contribution bound ``C``, so under REPLACE_ONE (where one example's change
        moves the sum by up to ``2 C``) it is accounted as the same mechanism with
        half the noise multiplier; under ADD_OR_REMOVE_ONE as it is. Sampled events
        are analysed by dp_accounting for the relation itself (Poisson sampling for
        both relations by PLD and for add/remove by RDP; truncated Poisson by PLD;
        ``SampledWithoutReplacementDpEvent`` for REPLACE_ONE by RDP, whose inner
        noise multiplier dp_accounting defines relative to the replace-one
        sensitivity).

        dp_accounting's quirks are not passed on: its RDP accountant analyses bare
        Gaussian and Laplace events with unit sensitivity whatever the relation (here
        the halved event is given to it under REPLACE_ONE); its PLD accountant
        refuses Laplace under REPLACE_ONE (here: add/remove PLD of the halved event);
        its PLD of a non-private event (``NonPrivateDpEvent``, zero noise) is
        reported as ``inf``. A route that cannot account an event correctly for the
        relation (an unknown event type, an event dp_accounting refuses, any relation
        other than REPLACE_ONE and ADD_OR_REMOVE_ONE) is left out, and with no route
        the epsilon is ``inf``: never a number below the true privacy loss.

        For a mechanism whose noise multiplier is already relative to its
        sensitivity under the stated relation, use :meth:`gaussian` or
        :meth:`laplace`.

        Args:
            event: the dp_accounting event.
            relation: the neighbouring relation the guarantee is stated for.

        Returns:
            The guarantee.

        Raises:
            TypeError: ``event`` is not a ``DpEvent``.

        Examples:
            >>> import dp_accounting
            >>> from dpsample.privacy import PrivacyGuarantee
            >>> ev = dp_accounting.PoissonSampledDpEvent(
            ...     0.01, dp_accounting.GaussianDpEvent(1.0))
            >>> g = PrivacyGuarantee.from_event(
            ...     ev, relation=dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE)
            >>> 0 < g.repeat(100).epsilon(1e-5) < 1
            True
            >>> lap = dp_accounting.LaplaceDpEvent(1.0)  # scale = contribution bound
            >>> PrivacyGuarantee.from_event(lap).epsilon(0.0)  # replace-one: 2 C / C
            2.0
        """
        if not isinstance(event, dp_accounting.DpEvent):
            raise TypeError(f"Expected a dp_accounting.DpEvent, got {event!r}")
        return cls(((_Component("event", event=event), 1),), relation)

    # ----------------------------------------------------------------- combinators
    def compose(self, other: PrivacyGuarantee) -> PrivacyGuarantee:
        """Adaptive composition with another guarantee of the same relation."""
        if not isinstance(other, PrivacyGuarantee):
            raise TypeError(f"Expected a PrivacyGuarantee, got {other!r}")
        if other.relation != self.relation:
            raise RelationMismatchError(
                f"Cannot compose a guarantee for {self.relation.name} with one for "
                f"{other.relation.name}"
            )
        counts: dict[_Component, int] = {}
        for comp, k in self.components + other.components:
            counts[comp] = counts.get(comp, 0) + k
        return PrivacyGuarantee(
            tuple(counts.items()),
            self.relation,
            self.tv_slack + other.tv_slack,
            _merge(self.assumptions, other.assumptions),
        )

    def repeat(self, k: int) -> PrivacyGuarantee:
        """Adaptive composition of ``k`` runs of this mechanism (k >= 1)."""
        k = validation.positive_int("k", k)
        return PrivacyGuarantee(
            tuple((c, n * k) for c, n in self.components),
            self.relation,
            self.tv_slack * k,
            self.assumptions,
        )

    def with_tv_slack(self, tau: float) -> PrivacyGuarantee:
        """The guarantee of a sampler within total variation ``tau`` of this mechanism.

        An exact (epsilon, delta)-DP mechanism sampled within TV ``tau`` (for every
        dataset) is (epsilon, delta + (1 + e^epsilon) tau)-DP.

        Examples:
            >>> from dpsample.privacy import PrivacyGuarantee
            >>> g = PrivacyGuarantee.pure(1.0).with_tv_slack(1e-8)
            >>> abs(g.delta(1.0) - (1 + math.e) * 1e-8) < 1e-15
            True
        """
        t = validation.nonnegative("tau", tau)
        return PrivacyGuarantee(
            self.components, self.relation, self.tv_slack + t, self.assumptions
        )

    def assuming(self, *assumptions: str) -> PrivacyGuarantee:
        """The same guarantee, stated as holding only under ``assumptions``.

        Use it wherever the numbers rest on something dpsample does not prove or
        enforce: a schedule outside the theorem's constants, a bound the caller
        vouches for, an event that unchecked data may break. Nothing changes in the
        accounting; the assumptions travel with the guarantee through
        :meth:`compose`, :meth:`repeat`, :meth:`with_tv_slack`, the
        :class:`~dpsample.privacy.BudgetLedger`, :meth:`report`, ``repr`` and the
        CLI's report ("within budget, assuming: ...").

        Args:
            *assumptions: one sentence each (non-empty text).

        Returns:
            The guarantee with the assumptions added (sorted, without duplicates).

        Raises:
            TypeError: an assumption is not a string.
            ValueError: an assumption is empty.

        Examples:
            >>> from dpsample.privacy import PrivacyGuarantee
            >>> g = PrivacyGuarantee.pure(1.0).assuming("the declared bound holds")
            >>> g.repeat(2).compose(PrivacyGuarantee.pure(0.5)).assumptions
            ('the declared bound holds',)
            >>> g.epsilon(0.0)
            1.0
        """
        for text in assumptions:
            if not isinstance(text, str):
                raise TypeError(f"Expected an assumption as text, got {text!r}")
            if not text.strip():
                raise ValueError("Expected a non-empty assumption")
        return PrivacyGuarantee(
            self.components,
            self.relation,
            self.tv_slack,
            _merge(self.assumptions, assumptions),
        )

    # ----------------------------------------------------------------- accounting
    def pure_epsilon(self) -> float:
        """Sum of the components' pure epsilons (inf if any lacks one)."""
        return float(sum(c.pure_epsilon(self.relation) * k for c, k in self.components))

    def zcdp_rho(self) -> float | None:
        """Total zCDP parameter rho, or None if some component has no zCDP bound."""
        total = 0.0
        for c, k in self.components:
            r = c.zcdp(self.relation)
            if r is None:
                return None
            total += k * r
        return total

    def _rdp_curve(self) -> np.ndarray | None:
        if "rdp" not in self._cache:
            total: np.ndarray | None = np.zeros(len(RDP_ORDERS))
            for c, k in self.components:
                curve = c.rdp(self.relation)
                if curve is None:
                    total = None
                    break
                total = total + k * curve
            self._cache["rdp"] = total
        return self._cache["rdp"]

    def _pld(self) -> Any | None:
        if "pld" not in self._cache:
            width = sum(c.pld_width(k, self.relation) for c, k in self.components)
            interval = max(PLD_DISCRETIZATION, width / PLD_MAX_POINTS)
            composed: Any = None
            for c, k in self.components:
                pld = c.pld(self.relation, interval, k)
                if pld is None or pld is _NON_PRIVATE:
                    composed = pld
                    break
                composed = pld if composed is None else composed.compose(pld)
            self._cache["pld"] = composed
        return self._cache["pld"]

    def _basic(self) -> tuple[float, float] | None:
        """Basic composition ``(sum eps_i, sum delta_i)`` when every part has one."""
        if not all(c.kind in ("pure", "expmech", "approx") for c, _ in self.components):
            return None
        eps = math.fsum(c.epsilon * k for c, k in self.components)
        dlt = math.fsum(c.delta * k for c, k in self.components)
        return eps, dlt

    def _split(self) -> tuple[PrivacyGuarantee, PrivacyGuarantee] | None:
        """The zCDP components and the rest, as two guarantees (``None``: one group)."""
        if "split" not in self._cache:
            zcdp = tuple((c, k) for c, k in self.components if c.kind == "zcdp")
            rest = tuple((c, k) for c, k in self.components if c.kind != "zcdp")
            self._cache["split"] = (
                (
                    PrivacyGuarantee(zcdp, self.relation),
                    PrivacyGuarantee(rest, self.relation),
                )
                if zcdp and rest
                else None
            )
        return self._cache["split"]

    def _split_epsilon(self, delta: float) -> float | None:
        """Basic composition of the two groups' epsilons, the delta split searched."""
        groups = self._split()
        if groups is None or not delta > 0:
            return None
        a, b = groups
        return min(
            a.epsilon(f * delta) + b.epsilon((1.0 - f) * delta)
            for f in _SPLIT_FRACTIONS
        )

    def _split_delta(self, epsilon: float) -> float | None:
        """Basic composition of the two groups' deltas, the epsilon split searched."""
        groups = self._split()
        if groups is None:
            return None
        a, b = groups
        return min(
            min(1.0, a.delta(f * epsilon) + b.delta((1.0 - f) * epsilon))
            for f in _SPLIT_FRACTIONS
        )

    def _exact_epsilons(self, delta: float) -> dict[str, float]:
        """Epsilon of the exact mechanism (no TV slack) by every valid route."""
        if not self.components:
            return {"none": 0.0}
        routes: dict[str, float] = {}
        pure = self.pure_epsilon()
        if math.isfinite(pure):
            routes["pure"] = pure
        basic = self._basic()
        if basic is not None and basic[1] > 0 and basic[1] <= delta:
            routes["basic"] = basic[0]  # Dwork-Roth Thm 3.16 (exact, no grid)
        if delta > 0:
            curve = self._rdp_curve()
            if curve is not None:
                eps, _ = dp_rdp.rdp_privacy_accountant.compute_epsilon(
                    RDP_ORDERS, curve, delta
                )
                routes["rdp"] = float(eps)
            pld = self._pld()
            if pld is _NON_PRIVATE:
                routes["pld"] = math.inf
            elif pld is not None:
                routes["pld"] = float(pld.get_epsilon_for_delta(delta))
            rho = self.zcdp_rho()
            if rho is not None:
                routes["zcdp"] = zcdp_to_epsilon(rho, delta)
        if not any(math.isfinite(v) for v in routes.values()):
            split = self._split_epsilon(delta)
            if split is not None:
                routes["split"] = split
        return routes

    def _exact_deltas(self, epsilon: float) -> dict[str, float]:
        if not self.components:
            return {"none": 0.0}
        routes: dict[str, float] = {}
        if self.pure_epsilon() <= epsilon:
            routes["pure"] = 0.0
        basic = self._basic()
        if basic is not None and basic[0] <= epsilon:
            routes["basic"] = basic[1]
        curve = self._rdp_curve()
        if curve is not None:
            d, _ = dp_rdp.rdp_privacy_accountant.compute_delta(
                RDP_ORDERS, curve, epsilon
            )
            routes["rdp"] = float(d)
        pld = self._pld()
        if pld is _NON_PRIVATE:
            routes["pld"] = 1.0
        elif pld is not None:
            routes["pld"] = float(pld.get_delta_for_epsilon(epsilon))
        rho = self.zcdp_rho()
        if rho is not None:
            routes["zcdp"] = zcdp_to_delta(rho, epsilon)
        if not any(v < 1.0 for v in routes.values()):
            split = self._split_delta(epsilon)
            if split is not None:
                routes["split"] = split
        return routes

    def delta(self, epsilon: float) -> float:
        """Smallest delta such that the guarantee is (epsilon, delta)-DP (valid routes).

        Includes the TV slack: ``delta_exact(epsilon) + (1 + e^epsilon) tv_slack``.
        """
        eps = validation.nonnegative("epsilon", epsilon, allow_inf=True)
        if math.isinf(eps):
            return 0.0
        routes = self._exact_deltas(eps)
        exact = min(routes.values()) if routes else 1.0
        return float(min(1.0, exact + (1.0 + math.exp(eps)) * self.tv_slack))

    def epsilon(self, delta: float) -> float:
        """Smallest epsilon such that the guarantee is (epsilon, delta)-DP.

        ``epsilon(0.0)`` is the pure epsilon where one holds and ``inf`` otherwise.
        The minimum over the valid accounting routes is returned (see :meth:`report`).
        With a TV slack ``tau`` the result is the smallest epsilon on a fine grid with
        ``delta_exact(epsilon) + (1 + e^epsilon) tau <= delta``.
        """
        dlt = validation.probability("delta", delta)
        if dlt >= 1.0:
            raise ValueError(f"Expected delta={dlt!r} < 1")
        key = ("epsilon", dlt)  # guarantees are immutable: memoise per instance
        if key not in self._cache:
            if self.tv_slack == 0.0:
                routes = self._exact_epsilons(dlt)
                value = float(min(routes.values())) if routes else math.inf
            else:
                value = self._epsilon_with_slack(dlt)
            self._cache[key] = value
        return self._cache[key]

    def _epsilon_with_slack(self, delta: float) -> float:
        tau = self.tv_slack
        if delta <= 2.0 * tau:  # even epsilon = 0 needs delta >= 2 tau
            return math.inf
        # Largest epsilon the slack allows: (1 + e^eps) tau < delta.
        eps_cap = math.log(delta / tau - 1.0)

        def slack_ok(eps: float) -> bool:
            return self.delta(eps) <= delta

        # Candidate from the exact mechanism at the delta left after a slack budget.
        best = math.inf
        for frac in (0.5, 0.9, 0.99):
            d_exact = delta * frac
            eps0 = min(self._exact_epsilons(d_exact).values(), default=math.inf)
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

    def report(self, delta: float) -> dict[str, Any]:
        """Every valid route's epsilon at ``delta``, the tightest, and the components.

        The dict also holds ``tv_slack``, ``relation`` and ``assumptions`` (a list,
        empty for an unconditional guarantee).

        Examples:
            >>> from dpsample.privacy import PrivacyGuarantee
            >>> r = PrivacyGuarantee.exponential_mechanism(0.1).repeat(100).report(1e-5)
            >>> r["tightest"]
            'rdp'
        """
        dlt = validation.probability("delta", delta)
        routes = self._exact_epsilons(dlt)
        best = self.epsilon(dlt)
        tightest = min(routes, key=lambda r: routes[r]) if routes else None
        return {
            "delta": dlt,
            "epsilon": best,
            "tightest": tightest if self.tv_slack == 0 else "tv_slack",
            "routes": routes,
            "tv_slack": self.tv_slack,
            "relation": self.relation.name,
            "components": [(c.describe(), k) for c, k in self.components],
            "assumptions": list(self.assumptions),
        }

    def __repr__(self) -> str:
        parts = ", ".join(
            f"{c.describe()}" + (f" x{k}" if k > 1 else "") for c, k in self.components
        )
        slack = f", tv_slack={self.tv_slack:g}" if self.tv_slack else ""
        assumed = f", assumptions={self.assumptions!r}" if self.assumptions else ""
        return (
            f"PrivacyGuarantee([{parts}], relation={self.relation.name}{slack}"
            f"{assumed})"
        )


def _merge(*groups: Sequence[str]) -> tuple[str, ...]:
    """Assumptions of several guarantees: sorted, without duplicates."""
    return tuple(sorted({a.strip() for group in groups for a in group}))


precision.scope_public(globals())
