"""A guarantee as a dp_accounting event, and back.

:func:`to_dp_event` writes a :class:`~dpsample.privacy.PrivacyGuarantee` as one
``dp_accounting.ComposedDpEvent`` for one of dp_accounting's accountants, built with
the guarantee's own neighbouring relation::

    event = g.to_dp_event("pld")
    accountant = dp_accounting.pld.PLDAccountant(neighboring_relation=g.relation)
    accountant.compose(event)
    accountant.get_epsilon(delta)  # never below g.epsilon(delta)

The accountant is named because dp_accounting's two accountants read the same event
differently under REPLACE_ONE: the PLD accountant doubles the shift of a bare
``GaussianDpEvent`` (one example's change moves a sum of contributions bounded by
``C`` by up to ``2 C``), the RDP accountant analyses it with unit shift whatever the
relation. The exported event means, to the named accountant under ``g.relation``,
the same mechanism dpsample accounted (or one that dominates it); the same event
given to the other accountant means something else.
:meth:`PrivacyGuarantee.from_dp_event` reads an event in either accountant's
convention (:func:`dp_event_parts` gives its components), so
``PrivacyGuarantee.from_dp_event(g.to_dp_event(a), relation=g.relation,
accountant=a)`` accounts as ``g`` or more conservatively.

Each component is written as follows (``R`` the guarantee's relation):

* a ``DpEvent`` component (:meth:`PrivacyGuarantee.from_event`,
  :meth:`PrivacyGuarantee.gaussian`, ...): the event dpsample's own route gives
  that accountant (:mod:`dpsample.privacy.components`): for the RDP accountant
  under REPLACE_ONE a bare Gaussian or Laplace event of ``from_event`` with half its
  noise multiplier; for the PLD accountant under REPLACE_ONE a
  :meth:`PrivacyGuarantee.gaussian` event (noise over the full sensitivity) with
  twice its noise multiplier. A Laplace shift under REPLACE_ONE, which the PLD
  accountant refuses, is written as the generic pure-DP encoding below at its
  pure epsilon (conservative).
* a generic epsilon-DP mechanism (:meth:`PrivacyGuarantee.pure`) and an
  exponential mechanism's pure part: every epsilon-DP pair of output distributions
  is a post-processing of binary randomised response with the same epsilon
  (Kairouz, Oh, Viswanath 2015). Under REPLACE_ONE it is that randomised response,
  ``RandomizedResponseDpEvent(2 / (e**epsilon + 1), 2)`` (exact). Under
  ADD_OR_REMOVE_ONE, where both accountants refuse randomised response, it is the
  Laplace shift of scale ``b = 1 / (2 log((e**epsilon + 1) / 2))``: thresholding
  that Laplace pair at the midpoint gives exactly randomised response with epsilon,
  so it dominates every epsilon-DP mechanism (conservative: ``1/b`` is about
  ``epsilon`` for small epsilon and ``2 epsilon - 2 log 2`` for large).
* an exponential mechanism (:meth:`PrivacyGuarantee.exponential_mechanism`): for
  the PLD accountant, its pure part as above; for the RDP accountant
  ``ZCDpEvent(epsilon**2 / 8)`` (bounded range, Cesar and Rogers 2021), which is at
  least the curve dpsample uses (the smaller of randomised response's and this).
* a zCDP component: ``ZCDpEvent(rho)`` for the RDP accountant (exact). dp_accounting's
  PLD accountant has no zCDP event, and a zCDP bound fixes no privacy loss
  distribution: refused (``ValueError``) for ``"pld"``.
* an ``(epsilon, delta)`` component (:meth:`PrivacyGuarantee.approx`) and a TV slack
  (:meth:`PrivacyGuarantee.with_tv_slack`): dp_accounting 0.6 has no event that
  adds a delta, and no event of its accountants dominates ``delta + (1 + e**eps)
  tau`` at every epsilon without making the whole composition vacuous: refused
  (``ValueError``), never dropped.

How close: a PLD accountant built with the guarantee's own discretisation interval
(:meth:`~PrivacyGuarantee.pld_discretization`) composes the same privacy loss
distributions as dpsample's PLD route, so for exact encodings its epsilon equals
dpsample's up to floating-point rounding, and for a pure part (randomised response
here, dp_accounting's worst-case pure PLD in dpsample) up to one step of the loss
grid (both are pessimistic roundings of the same two-point distribution; 1.2e-9
relative measured on the warm start). At a finer interval than dpsample's (its
default, where the composition is wide) the accountant's pessimistic epsilon can be
smaller by the discretisation error: a tighter valid bound on the same mechanism,
not a weaker mechanism.

Compose an exported event once: dp_accounting 0.6's PLD accountant ignores the
repeat count of a ``RandomizedResponseDpEvent`` (``compose(event, k)`` and a
``SelfComposedDpEvent`` of one compose it once), so here a repeated pure part is
written out copy by copy (up to :data:`MAX_WRITTEN_REPEATS`), and
``accountant.compose(event, k)`` would under-count it: export ``g.repeat(k)``
instead. (dpsample's own PLD route of a randomised response event counts every
run: :mod:`dpsample.privacy.components`.)

A conditional guarantee (one with :attr:`~PrivacyGuarantee.assumptions`) is refused
(``ValueError`` listing them): a ``DpEvent`` cannot carry them. Pass
``accept_assumptions=True`` to export it anyway; the assumptions are then the
caller's to keep (give them back to :meth:`PrivacyGuarantee.from_dp_event`).
Relations other than REPLACE_ONE and ADD_OR_REMOVE_ONE are refused.

This module reads a guarantee's fields and writes events, and reads events into
components; it builds no guarantee, so :mod:`dpsample.privacy.guarantee` imports it
and not the other way round (the guarantee's import here is for type checking only).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import dp_accounting
from dp_accounting import pld as dp_pld
from dp_accounting import rdp as dp_rdp

from dpsample._src import precision
from dpsample.privacy import relations
from dpsample.privacy.components import Component, _rdp_event
from dpsample.privacy.relations import REPLACE_ONE

if TYPE_CHECKING:
    from dpsample.privacy.guarantee import PrivacyGuarantee

__all__ = ["ACCOUNTANTS", "dp_event_parts", "pure_dp_event", "to_dp_event"]

#: The dp_accounting accountants an event can be written for.
ACCOUNTANTS = ("pld", "rdp")
#: The most copies of a randomised-response part written out for the PLD
#: accountant (which ignores its repeat count; see :func:`to_dp_event`).
MAX_WRITTEN_REPEATS = 10_000


def _check_accountant(accountant: str) -> str:
    if accountant not in ACCOUNTANTS:
        raise ValueError(
            f"Expected accountant to be one of {ACCOUNTANTS}, got {accountant!r}"
        )
    return accountant


def _check_relation(relation: Any) -> Any:
    if relation not in relations.RELATIONS:
        raise ValueError(
            f"cannot export a guarantee for {getattr(relation, 'name', relation)}: "
            "only REPLACE_ONE and ADD_OR_REMOVE_ONE are supported"
        )
    return relation


def pure_dp_event(epsilon: float, relation: Any) -> dp_accounting.DpEvent:
    """An event that dominates every epsilon-DP mechanism under ``relation``.

    Randomised response under REPLACE_ONE (exact); under ADD_OR_REMOVE_ONE the
    Laplace shift whose midpoint threshold is that randomised response (see the
    module docstring). ``epsilon`` so large that the encoding underflows gives a
    ``NonPrivateDpEvent`` (epsilon ``inf``: conservative).
    """
    if relation == REPLACE_ONE:
        tail = math.exp(-epsilon)  # p = 2 / (e^eps + 1), stable for large eps
        p = 2.0 * tail / (1.0 + tail)
        if p <= 0.0:
            return dp_accounting.NonPrivateDpEvent()
        return dp_accounting.RandomizedResponseDpEvent(p, 2)
    # 1/b = 2 log((e^eps + 1) / 2) >= eps, computed without cancellation at either
    # end, then nudged up by a few roundings so that rounding never makes it smaller
    if epsilon < 30.0:
        dominating = 2.0 * math.log1p(math.expm1(epsilon) / 2.0)
    else:
        dominating = 2.0 * (epsilon + math.log1p(math.exp(-epsilon)) - math.log(2.0))
    dominating = max(dominating, epsilon) * (1.0 + 1e-15)
    return dp_accounting.LaplaceDpEvent(1.0 / dominating)


def _has_rr(event: Any) -> bool:
    """Whether ``event`` contains a randomised response event (at any depth)."""
    if isinstance(event, dp_accounting.RandomizedResponseDpEvent):
        return True
    if isinstance(event, dp_accounting.SelfComposedDpEvent):
        return _has_rr(event.event)
    if isinstance(event, dp_accounting.ComposedDpEvent):
        return any(_has_rr(e) for e in event.events)
    return False


def _repeated(event: Any, count: int, accountant: str) -> Any:
    """``count`` runs of ``event`` as an event ``accountant`` counts correctly.

    dp_accounting 0.6's PLD accountant ignores the repeat count of a
    ``RandomizedResponseDpEvent`` (a ``SelfComposedDpEvent`` of one, or one inside
    a repeated composition, is composed once), so for that accountant an event
    holding one is written out ``count`` times, up to :data:`MAX_WRITTEN_REPEATS`.
    """
    if count == 1:
        return event
    if accountant == "pld" and _has_rr(event):
        if count > MAX_WRITTEN_REPEATS:
            raise ValueError(
                f"a pure-DP part repeated {count} times: dp_accounting's PLD "
                "accountant ignores the repeat count of randomised response, and "
                f"writing it out is capped at {MAX_WRITTEN_REPEATS} copies; export "
                "for accountant='rdp'"
            )
        return dp_accounting.ComposedDpEvent([event] * count)
    return dp_accounting.SelfComposedDpEvent(event, count)


def _pld_event(event: Any, relation: Any) -> Any:
    """``event`` (read by dpsample under ``relation``) for the PLD accountant."""
    if isinstance(event, dp_accounting.SelfComposedDpEvent):
        return _repeated(_pld_event(event.event, relation), event.count, "pld")
    if isinstance(event, dp_accounting.ComposedDpEvent):
        return dp_accounting.ComposedDpEvent(
            [_pld_event(e, relation) for e in event.events]
        )
    if isinstance(event, dp_accounting.LaplaceDpEvent) and relation == REPLACE_ONE:
        if not event.noise_multiplier > 0:
            return dp_accounting.NonPrivateDpEvent()
        # the PLD accountant refuses Laplace under REPLACE_ONE: the pure encoding
        # at its pure epsilon, 2 C / (b C)
        return pure_dp_event(
            relations.laplace_pure_epsilon(event.noise_multiplier, relation), relation
        )
    return event


def _component_event(c: Component, relation: Any, accountant: str) -> Any:
    """One component as an event for ``accountant`` under ``relation``."""
    if c.kind == "pure":
        return pure_dp_event(c.epsilon, relation)
    if c.kind == "expmech":
        if accountant == "rdp":
            return dp_accounting.ZCDpEvent(c.epsilon**2 / 8.0)
        return pure_dp_event(c.epsilon, relation)
    if c.kind == "zcdp":
        if accountant == "rdp":
            return dp_accounting.ZCDpEvent(c.rho)
        raise ValueError(
            f"a zCDP component (zcdp(rho={c.rho:g})) has no event dp_accounting's "
            "PLD accountant accepts, and a zCDP bound fixes no privacy loss "
            "distribution to encode: export for accountant='rdp' (ZCDpEvent)"
        )
    if c.kind == "approx":
        if c.delta == 0.0:
            return pure_dp_event(c.epsilon, relation)
        raise ValueError(
            f"an (epsilon, delta) component ({c.describe()}) has no dp_accounting "
            "event: dp_accounting 0.6 has no event that adds a delta"
        )
    event_relation = c.event_relation(relation)
    if accountant == "rdp":
        out = _rdp_event(c.event, event_relation)
        # c.rdp is None also where dp_accounting's curve has a negative order (its
        # cancellation at extreme settings, issue 15): not exported either
        if out is None or c.rdp(relation) is None:
            raise ValueError(
                f"dp_accounting's RDP accountant has no analysis of {c.describe()} "
                f"under {event_relation.name} that dpsample trusts: export for "
                "accountant='pld'"
            )
        return out
    if event_relation != relation:  # unit sensitivity: noise over the full shift
        if isinstance(c.event, dp_accounting.GaussianDpEvent):
            # the PLD accountant doubles the shift under REPLACE_ONE: the noise
            # multiplier of noise over the full sensitivity
            return dp_accounting.GaussianDpEvent(
                relations.noise_multiplier(c.event.noise_multiplier, relation)
            )
        if isinstance(c.event, dp_accounting.LaplaceDpEvent):
            if not c.event.noise_multiplier > 0:
                return dp_accounting.NonPrivateDpEvent()
            return pure_dp_event(
                relations.laplace_pure_epsilon(
                    c.event.noise_multiplier, event_relation
                ),
                relation,
            )
        raise ValueError(f"unexpected unit-sensitivity event {c.describe()}")
    return _pld_event(c.event, relation)


def to_dp_event(
    guarantee: PrivacyGuarantee,
    accountant: str = "pld",
    *,
    accept_assumptions: bool = False,
) -> dp_accounting.DpEvent:
    """The guarantee as a composed dp_accounting event (see the module docstring).

    Args:
        guarantee: The guarantee.
        accountant: ``"pld"`` (dp_accounting's ``PLDAccountant``) or ``"rdp"``
            (``RdpAccountant``): the accountant the event is written for, built
            with ``neighboring_relation=guarantee.relation``.
        accept_assumptions: Export a conditional guarantee; its assumptions are
            then the caller's to keep.

    Returns:
        A ``ComposedDpEvent`` with one part per component (a
        ``SelfComposedDpEvent`` for a repeated one), which that accountant accepts
        and accounts at no smaller epsilon than ``guarantee.epsilon`` at every
        delta.

    Raises:
        ValueError: a conditional guarantee (unless ``accept_assumptions``), a TV
            slack, a component with no event for that accountant, a relation other
            than REPLACE_ONE and ADD_OR_REMOVE_ONE, or an unknown accountant.
    """
    _check_accountant(accountant)
    relation = _check_relation(guarantee.relation)
    if guarantee.assumptions and not accept_assumptions:
        listed = "; ".join(guarantee.assumptions)
        raise ValueError(
            "this guarantee is conditional and a dp_accounting event cannot carry "
            f"its assumptions ({listed}); pass accept_assumptions=True to export it "
            "anyway and keep them yourself"
        )
    if guarantee.tv_slack > 0.0:
        raise ValueError(
            f"this guarantee has a TV slack ({guarantee.tv_slack:g}) and "
            "dp_accounting 0.6 has no event that adds a delta: account it with "
            "dpsample (PrivacyGuarantee.epsilon)"
        )
    parts = []
    for c, k in guarantee.components:
        event = _component_event(c, relation, accountant)
        parts.append(_repeated(event, k, accountant))
    composed = dp_accounting.ComposedDpEvent(parts)
    checker = (
        dp_pld.PLDAccountant(neighboring_relation=relation)
        if accountant == "pld"
        else dp_rdp.RdpAccountant(neighboring_relation=relation)
    )
    if not checker.supports(composed):
        raise ValueError(
            f"dp_accounting's {accountant.upper()} accountant under "
            f"{relation.name} refuses the exported event {composed!r}"
        )
    return composed


def _leaves(event: Any, count: int) -> list[tuple[Any, int]]:
    """The leaves of nested Composed/SelfComposed events, with their counts."""
    if isinstance(event, dp_accounting.SelfComposedDpEvent):
        return _leaves(event.event, count * event.count)
    if isinstance(event, dp_accounting.ComposedDpEvent):
        return [leaf for e in event.events for leaf in _leaves(e, count)]
    return [(event, count)]


def dp_event_parts(
    event: dp_accounting.DpEvent, *, accountant: str = "pld"
) -> tuple[tuple[Component, int], ...]:
    """The components a dp_accounting event is read as, by ``accountant``'s convention.

    :meth:`PrivacyGuarantee.from_dp_event` composes them into a guarantee (this
    module builds none: it reads a guarantee's fields and writes events, so the
    import goes one way, guarantee -> interop). ``"pld"`` is one ``"event"``
    component (:meth:`PrivacyGuarantee.from_event`: dp_accounting's documented
    convention, which its PLD accountant follows). ``"rdp"`` reads each leaf of the
    event as the RDP accountant does: a bare ``GaussianDpEvent`` or
    ``LaplaceDpEvent`` (not inside a sampled event) with unit shift whatever the
    relation (noise over the full sensitivity, as :meth:`PrivacyGuarantee.gaussian`),
    everything else as ``from_event``; no-op leaves and leaves repeated zero times are
    left out.

    Args:
        event: The dp_accounting event.
        accountant: ``"pld"`` or ``"rdp"``.

    Returns:
        ``(component, repeats)`` pairs, in the event's order, each repeated at least
        once.

    Raises:
        TypeError: ``event`` is not a ``DpEvent``.
        ValueError: an unknown accountant.

    Examples:
        >>> import dp_accounting
        >>> from dpsample.privacy import interop
        >>> event = dp_accounting.SelfComposedDpEvent(
        ...     dp_accounting.GaussianDpEvent(2.0), 10)
        >>> [(c.unit_sensitivity, k) for c, k in interop.dp_event_parts(
        ...     event, accountant="rdp")]
        [(True, 10)]
    """
    _check_accountant(accountant)
    if not isinstance(event, dp_accounting.DpEvent):
        raise TypeError(f"Expected a dp_accounting.DpEvent, got {event!r}")
    if accountant == "pld":
        return ((Component("event", event=event), 1),)
    return tuple(
        (
            Component(
                "event",
                unit_sensitivity=isinstance(leaf, relations.SHIFT_EVENTS),
                event=leaf,
            ),
            k,
        )
        for leaf, k in _leaves(event, 1)
        if not isinstance(leaf, dp_accounting.NoOpDpEvent) and k != 0
    )


precision.scope_public(globals())
