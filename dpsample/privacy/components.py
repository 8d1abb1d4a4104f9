"""What ran: the components of a guarantee and each one's accounting routes.

A :class:`~dpsample.privacy.guarantee.PrivacyGuarantee` is a multiset of
:class:`Component` objects (a ``dp_accounting.DpEvent``, or a pure, exponential-
mechanism, zCDP or ``(epsilon, delta)`` guarantee dp_accounting cannot express).
This module gives each component its pure epsilon, zCDP rho, Renyi curve and privacy
loss distribution under a neighbouring relation (``None``: no valid route); the
guarantee composes them and converts the result (:mod:`dpsample.privacy.guarantee`).
Events are read in dp_accounting's convention and the relation is applied where
dp_accounting does not (see :meth:`PrivacyGuarantee.from_event
<dpsample.privacy.guarantee.PrivacyGuarantee.from_event>`).

:class:`Component`, :data:`NON_PRIVATE` and :func:`leaf_pld` are the guarantee's
building blocks, called inside its float64-scoped methods; they are not part of the
package's API (``__all__`` lists the constants, re-exported by the guarantee module).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any

import dp_accounting
import numpy as np
from dp_accounting import dp_event
from dp_accounting import pld as dp_pld
from dp_accounting import rdp as dp_rdp

from dpsample.privacy import fast_pld, fast_rdp, relations
from dpsample.privacy.conversions import randomized_response_rdp
from dpsample.privacy.relations import (
    ADD_OR_REMOVE_ONE,
    REPLACE_ONE,
    SHIFT_EVENTS,
    NeighboringRelation,
)

__all__ = ["ADD_OR_REMOVE_ONE", "NeighboringRelation", "RDP_ORDERS", "REPLACE_ONE"]

#: Renyi orders used by every RDP computation (dp_accounting's defaults plus a few
#: large orders that matter for pure-DP components at small delta).
RDP_ORDERS: tuple[float, ...] = tuple(
    sorted(
        set(float(a) for a in dp_rdp.rdp_privacy_accountant.DEFAULT_RDP_ORDERS)
        | {1.5, 1.75, 2.5, 3.5, 4.5, 1024.0, 2048.0, 4096.0}
    )
)

#: Above this epsilon a pure/approx component has no PLD route: dp_accounting's
#: ``from_privacy_parameters`` computes ``exp(epsilon)`` (an ``OverflowError``
#: past about 709; issue 25: a plan at epsilon = 1e6). The pure route covers it.
_PLD_MAX_EPSILON = 500.0


class _NonPrivate:
    """Marker of a PLD route that met a non-private event (epsilon ``inf``)."""


NON_PRIVATE = _NonPrivate()


def _rdp_event(event: Any, relation: Any) -> Any | None:
    """An event whose dp_accounting RDP analysis under ``relation`` is ``event``'s.

    dp_accounting's RDP accountant analyses a bare Gaussian or Laplace event with unit
    sensitivity whatever the relation; under REPLACE_ONE the sensitivity of a shift
    mechanism is twice one example's contribution, i.e. the same event with half the
    noise multiplier (:func:`~dpsample.privacy.relations.at_unit_shift`). Events the
    accountant analyses for the relation themselves are kept
    (:data:`~dpsample.privacy.relations.EVENT_KINDS`); unknown event types
    (including dp_accounting's ``ExponentialMechanismDpEvent``, whose repeat count
    some RDP versions ignore) give ``None``: no route rather than a wrong number.
    """
    if relation not in relations.RELATIONS:
        return None
    kind = relations.event_kind(event)
    if kind is not None:
        if kind.rdp == "shift":
            if not event.noise_multiplier > 0:  # no noise: dp_accounting divides by 0
                return dp_accounting.NonPrivateDpEvent()
            return relations.at_unit_shift(event, relation)
        return None if kind.rdp is None else event
    if isinstance(event, (dp_accounting.NoOpDpEvent, dp_accounting.NonPrivateDpEvent)):
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

    ``None`` where no correct analysis is available, :data:`NON_PRIVATE` for a
    non-private event. dp_accounting's PLD accountant handles the relation of the
    events whose :data:`~dpsample.privacy.relations.EVENT_KINDS` row says so (it
    refuses Laplace under REPLACE_ONE, which is then accounted as add/remove Laplace
    at unit shift, i.e. with half the noise multiplier: the doubled shift);
    compositions are composed here.

    Repetitions go to the accountant as its own ``compose(event, count)`` (one
    self-composition of the event's PLD; a repeated composition repeats each of its
    parts), never as a self-composition of an already composed PLD: each
    self-composition moves up to ``1e-15`` of truncated tail to the infinite loss,
    so composing twice turned ``k`` releases into ``k 1e-15`` of infinite loss,
    which is above ``delta = 1e-12`` from ``k = 1000`` on and made every noise
    level fail (issue 15: DP-SGD's default plan at ``epsilon = 0.01, delta =
    1e-12, n = 1e7``).
    """
    if relation not in relations.RELATIONS:
        return None
    if isinstance(event, dp_accounting.NoOpDpEvent):
        return dp_pld.privacy_loss_distribution.identity(interval)
    if isinstance(event, dp_accounting.NonPrivateDpEvent):
        return NON_PRIVATE
    if isinstance(event, dp_accounting.SelfComposedDpEvent):
        return _event_pld(event.event, relation, interval, count * event.count)
    if isinstance(event, dp_accounting.ComposedDpEvent):
        total = dp_pld.privacy_loss_distribution.identity(interval)
        for e in event.events:  # count x (A then B) = (count x A) then (count x B)
            part = _event_pld(e, relation, interval, count)
            if part is None or part is NON_PRIVATE:
                return part
            total = total.compose(part)
        return total
    kind = relations.event_kind(event)
    if kind is None or kind.pld is None:
        return None
    if kind.pld == "shift" and relation != ADD_OR_REMOVE_ONE:
        event, relation = relations.at_unit_shift(event, relation), ADD_OR_REMOVE_ONE
    try:
        hash(event)
    except TypeError:  # an event with list fields (a mixture of Gaussians)
        return _build_leaf_pld(event, relation, interval, count)
    return leaf_pld(event, relation, interval, count)


@functools.lru_cache(maxsize=256)
def leaf_pld(event: Any, relation: Any, interval: float, count: int = 1) -> Any | None:
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
    """The uncached :func:`leaf_pld`.

    Gaussian events (plain, Poisson-subsampled, truncated) get the accountant's PLD
    from :func:`~dpsample.privacy.fast_pld.accountant_pld` (the same, bit for bit,
    without its per-grid-point Python loop; issue 27); others run the accountant.
    """
    fast = fast_pld.accountant_pld([(event, count)], relation, interval)
    if fast is not None:
        return fast
    accountant = dp_pld.PLDAccountant(
        neighboring_relation=relation, value_discretization_interval=interval
    )
    if not accountant.supports(event):
        return None
    if isinstance(event, dp_accounting.RandomizedResponseDpEvent) and count > 1:
        # dp_accounting 0.6's PLD accountant ignores the count of a randomised
        # response event (compose(event, k) composes it once): compose one and
        # self-compose its PLD here
        accountant.compose(event)
        if accountant._contains_non_dp_event:  # noqa: SLF001
            return NON_PRIVATE
        return accountant._pld.self_compose(count)  # noqa: SLF001
    accountant.compose(event, count)
    # dp_accounting keeps the composed PLD in `_pld` and its non-private flag in
    # `_contains_non_dp_event` (zero noise); there are no public getters.
    if accountant._contains_non_dp_event:  # noqa: SLF001
        return NON_PRIVATE
    return accountant._pld  # noqa: SLF001


def _event_pure_epsilon(event: Any, relation: Any) -> float:
    """Pure epsilon of ``event`` under ``relation`` (``inf`` when none is known).

    A Laplace event with noise multiplier ``b`` (scale over one example's L1
    contribution) is ``1/b``-DP under add/remove and ``2/b``-DP under replace-one
    (:func:`~dpsample.privacy.relations.laplace_pure_epsilon`).
    """
    if relation not in relations.RELATIONS:
        return math.inf
    kind = relations.event_kind(event)
    if kind is not None and kind.pure:
        if not event.noise_multiplier > 0:
            return math.inf
        return relations.laplace_pure_epsilon(event.noise_multiplier, relation)
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
class Component:
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
        return relations.event_relation(relation, self.unit_sensitivity)

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
        accountant = fast_rdp.RdpAccountant(
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
        if self.kind == "event" and isinstance(self.event, SHIFT_EVENTS):
            nm = self.event.noise_multiplier
            shift_relation = self.event_relation(relation)
            if shift_relation in relations.RELATIONS:  # noise over the shift
                nm = relations.noise_to_sensitivity(nm, shift_relation)
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
        """PLD of ``count`` runs, ``None`` (no PLD route) or :data:`NON_PRIVATE`."""
        if self.kind in ("pure", "expmech", "approx"):
            if self.epsilon > _PLD_MAX_EPSILON:
                return None  # exp(epsilon) overflows in dp_accounting (issue 25)
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
