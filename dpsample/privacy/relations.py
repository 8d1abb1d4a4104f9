"""Neighbouring relations and sensitivity conventions: every one, in one place.

dpsample states every guarantee for a neighbouring relation (replace-one by
default, as in the seeds; add/remove one is supported too) and reads
dp_accounting's events in dp_accounting's convention. The conventions that turn
one into the other live here and nowhere else (issue 29): a factor written twice
can disagree, and then an epsilon moves without anyone touching the accounting.

* **Sensitivity factor** (:func:`sum_sensitivity_factor`). A sum of per-example terms
  each of norm at most ``C`` moves by at most ``2 C`` when one example is replaced
  and by ``C`` when one is added or removed: the factor is ``2``
  (:data:`C_SENS`) under REPLACE_ONE and ``1`` under ADD_OR_REMOVE_ONE.
* **Two units of noise.** A *noise multiplier* ``z`` is the ecosystem's (Abadi et
  al.; Opacus, TF Privacy, dp-accounting): the noise std on the sum over ``C``; it
  does not depend on the relation. A *noise over sensitivity* ``s`` (what
  :meth:`PrivacyGuarantee.gaussian <dpsample.privacy.PrivacyGuarantee.gaussian>`
  and ``laplace`` take) is the noise over the full sensitivity under the relation:
  ``s = z / factor`` (:func:`noise_to_sensitivity`, :func:`noise_multiplier`).
* **Each event kind** (:data:`EVENT_KINDS`): what its noise multiplier is relative
  to, and how each of dp_accounting's accountants reads the relation for it:

  ================================  =========================  ============  ==========
  event                             noise multiplier unit      RDP           PLD
  ================================  =========================  ============  ==========
  ``GaussianDpEvent``               ``C`` (contribution)       unit shift    relation
  ``LaplaceDpEvent``                ``C``                      unit shift    unit shift
  ``PoissonSampledDpEvent``         ``C`` (inner event)        relation      relation
  ``TruncatedSubsampledGaussian``   ``C``                      --            relation
  ``SampledWithoutReplacement``     ``2 C`` (inner event)      relation      --
  ``RandomizedResponseDpEvent``     --                         relation      relation
  ``DiscreteLaplaceDpEvent``        --                         --            relation
  ``MixtureOfGaussiansDpEvent``     --                         --            relation
  ``ZCDpEvent``                     --                         no relation   --
  ================================  =========================  ============  ==========

  *unit shift*: dp_accounting analyses the bare mechanism with a shift of one
  noise unit whatever the relation (its RDP accountant), or refuses REPLACE_ONE
  (its PLD accountant for Laplace); dpsample then accounts the same mechanism at
  ``noise / factor`` (:func:`at_unit_shift`), i.e. the shift ``factor C``.
  *relation*: dp_accounting's analysis takes the relation into account itself (it
  doubles the shift for REPLACE_ONE, or refuses a relation it does not analyse).
  ``SampledWithoutReplacementDpEvent``'s inner multiplier is relative to the
  replace-one sensitivity ``2 C`` (Wang, Balle and Kasiviswanathan 2019, Thm 27,
  as dp_accounting documents it), so for the ecosystem's ``z`` it carries ``z /
  2`` (:func:`event_noise_multiplier`). ``--``: no route; an event of a kind not
  listed (``ExponentialMechanismDpEvent``, whose repeat count some RDP versions
  ignore, tree aggregation, sampling with replacement, ...) gets no route
  either: epsilon ``inf``, never dp_accounting's unchecked number.
* **Unit-sensitivity components** (:func:`event_relation`). A guarantee made by
  ``gaussian(s)`` / ``laplace(s)`` carries its noise over the full sensitivity, so
  it is dp_accounting's unit-shift (add/remove) analysis under either relation.

``tests/test_relations.py`` checks each kind's factor against dp_accounting's
own accounting for both relations, analytically; the contract tests
(``tests/test_guarantee_contract.py``, ``tests/test_dp_event_interop.py``) take
their conventions from here.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import dp_accounting
from dp_accounting import dp_event

from dpsample._src import precision

__all__ = [
    "ADD_OR_REMOVE_ONE",
    "C_SENS",
    "EVENT_KINDS",
    "EventKind",
    "NeighboringRelation",
    "REPLACE_ONE",
    "RELATIONS",
    "SHIFT_EVENTS",
    "at_unit_shift",
    "event_kind",
    "event_noise_multiplier",
    "event_relation",
    "laplace_pure_epsilon",
    "noise_multiplier",
    "noise_to_sensitivity",
    "sum_sensitivity_factor",
]

NeighboringRelation = dp_accounting.NeighboringRelation
REPLACE_ONE = NeighboringRelation.REPLACE_ONE
ADD_OR_REMOVE_ONE = NeighboringRelation.ADD_OR_REMOVE_ONE

#: The relations dpsample accounts; an event under any other gets no route.
RELATIONS = (REPLACE_ONE, ADD_OR_REMOVE_ONE)

#: Sensitivity multiplier under replace-one neighbours (spec 000 §1.4): replacing one
#: example moves a sum of per-example terms bounded by ``C`` by at most ``2 C``.
C_SENS = 2.0


def sum_sensitivity_factor(relation: Any) -> float:
    """L2 (L1) sensitivity of a sum of per-example terms of norm ``<= C``, over ``C``.

    ``2`` (:data:`C_SENS`) for ``REPLACE_ONE`` (one term replaced: ``||a - a'|| <=
    2C``), ``1`` for ``ADD_OR_REMOVE_ONE`` (one term added or removed).

    Raises:
        ValueError: Any other relation.

    Examples:
        >>> from dpsample.privacy.relations import (ADD_OR_REMOVE_ONE, REPLACE_ONE,
        ...     sum_sensitivity_factor as factor)
        >>> factor(REPLACE_ONE), factor(ADD_OR_REMOVE_ONE)
        (2.0, 1.0)
    """
    if relation == REPLACE_ONE:
        return C_SENS
    if relation == ADD_OR_REMOVE_ONE:
        return 1.0
    raise ValueError(f"Expected REPLACE_ONE or ADD_OR_REMOVE_ONE, got {relation!r}")


def noise_to_sensitivity(z: float, relation: Any) -> float:
    """The noise over the full sensitivity of noise multiplier ``z``: ``z / factor``.

    Examples:
        >>> from dpsample.privacy.relations import REPLACE_ONE, noise_to_sensitivity
        >>> noise_to_sensitivity(2.0, REPLACE_ONE)
        1.0
    """
    return z / sum_sensitivity_factor(relation)


def noise_multiplier(s: float, relation: Any) -> float:
    """The noise multiplier of noise over sensitivity ``s``: ``s factor``.

    Examples:
        >>> from dpsample.privacy.relations import REPLACE_ONE, noise_multiplier
        >>> noise_multiplier(1.0, REPLACE_ONE)
        2.0
    """
    return s * sum_sensitivity_factor(relation)


@dataclasses.dataclass(frozen=True)
class EventKind:
    """How dpsample reads one kind of dp_accounting event (a row of the table).

    Attributes:
        event_type: The dp_accounting event class.
        multiplier_unit: What its (inner) noise multiplier is relative to, in
            units of one example's contribution bound ``C`` (``1``: ``C``, ``2``:
            the replace-one sensitivity ``2 C``), or ``None`` (no multiplier).
        rdp: How dp_accounting's RDP accountant reads the relation: ``"shift"``
            (unit shift whatever the relation: given :func:`at_unit_shift`'s
            event), ``"relation"`` (its own analysis of the relation; the event
            as is), ``"none"`` (no sensitivity to convert: a zCDP curve) or
            ``None`` (no RDP route).
        pld: The same for dp_accounting's PLD accountant (``"shift"``: it
            refuses REPLACE_ONE, and dpsample gives it the unit-shift event under
            ADD_OR_REMOVE_ONE), or ``None`` (no PLD route).
        pure: Whether the kind has a pure epsilon (Laplace:
            :func:`laplace_pure_epsilon`).
    """

    event_type: type
    multiplier_unit: float | None
    rdp: str | None
    pld: str | None
    pure: bool = False


#: Every event kind dpsample accounts, once (see the module docstring's table).
#: Compositions (``ComposedDpEvent``, ``SelfComposedDpEvent``,
#: ``RepeatAndSelectDpEvent``), ``NoOpDpEvent`` and ``NonPrivateDpEvent`` carry no
#: noise of their own and are walked by the routes themselves.
EVENT_KINDS: tuple[EventKind, ...] = (
    EventKind(dp_accounting.GaussianDpEvent, 1.0, "shift", "relation"),
    EventKind(dp_accounting.LaplaceDpEvent, 1.0, "shift", "shift", pure=True),
    EventKind(dp_accounting.PoissonSampledDpEvent, 1.0, "relation", "relation"),
    EventKind(dp_accounting.TruncatedSubsampledGaussianDpEvent, 1.0, None, "relation"),
    EventKind(dp_accounting.SampledWithoutReplacementDpEvent, C_SENS, "relation", None),
    EventKind(dp_accounting.RandomizedResponseDpEvent, None, "relation", "relation"),
    EventKind(dp_event.DiscreteLaplaceDpEvent, None, None, "relation"),
    EventKind(dp_event.MixtureOfGaussiansDpEvent, None, None, "relation"),
    EventKind(dp_accounting.ZCDpEvent, None, "none", None),
)

#: The additive-noise kinds whose noise multiplier is relative to ``C`` and whose
#: bare analysis is a unit shift: the rows of :data:`EVENT_KINDS` read ``"shift"``
#: by the RDP accountant (``tests/test_relations.py`` checks the two agree).
SHIFT_EVENTS = (dp_accounting.GaussianDpEvent, dp_accounting.LaplaceDpEvent)


def event_kind(event: Any) -> EventKind | None:
    """The row of :data:`EVENT_KINDS` for ``event`` (``None``: not a leaf kind)."""
    for kind in EVENT_KINDS:
        if isinstance(event, kind.event_type):
            return kind
    return None


def event_noise_multiplier(event_type: type, z: float) -> float:
    """The multiplier an event of ``event_type`` carries for the ecosystem's ``z``.

    ``z`` over the kind's :attr:`EventKind.multiplier_unit`: ``z`` for the events
    relative to ``C``, ``z / 2`` for ``SampledWithoutReplacementDpEvent``'s inner
    Gaussian (relative to the replace-one sensitivity ``2 C``).

    Examples:
        >>> import dp_accounting
        >>> from dpsample.privacy.relations import event_noise_multiplier
        >>> event_noise_multiplier(dp_accounting.SampledWithoutReplacementDpEvent, 3.0)
        1.5
    """
    for kind in EVENT_KINDS:
        if kind.event_type is event_type and kind.multiplier_unit is not None:
            return z / kind.multiplier_unit
    raise ValueError(f"{event_type.__name__} carries no noise multiplier")


def at_unit_shift(event: Any, relation: Any) -> Any:
    """A shift event read at unit shift: the same mechanism at ``noise / factor``.

    dp_accounting's unit-shift analysis of the returned event is ``event``'s
    under ``relation`` (the shift of one example is ``factor C``). The event
    itself under ADD_OR_REMOVE_ONE (factor 1).
    """
    factor = sum_sensitivity_factor(relation)
    if factor == 1.0:
        return event
    return type(event)(event.noise_multiplier / factor)


def laplace_pure_epsilon(b: float, relation: Any) -> float:
    """Pure epsilon of Laplace noise ``b C`` on a sum bounded by ``C``: ``factor / b``.

    Examples:
        >>> from dpsample.privacy.relations import REPLACE_ONE, laplace_pure_epsilon
        >>> laplace_pure_epsilon(1.0, REPLACE_ONE)
        2.0
    """
    return sum_sensitivity_factor(relation) / b


def event_relation(relation: Any, unit_sensitivity: bool) -> Any:
    """The relation dp_accounting reads a component's event under.

    A unit-sensitivity component (``gaussian(s)``, ``laplace(s)``: noise over the
    full sensitivity under ``relation``) is dp_accounting's unit-shift analysis,
    which is its ADD_OR_REMOVE_ONE one; any other event is read under
    ``relation``.
    """
    return ADD_OR_REMOVE_ONE if unit_sensitivity else relation


precision.scope_public(globals())
