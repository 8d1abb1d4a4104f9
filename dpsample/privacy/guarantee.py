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

Layout: the closed forms (randomised response's Renyi curve, the zCDP conversions)
are in :mod:`dpsample.privacy.conversions`, the components and their per-event
routes in :mod:`dpsample.privacy.components`, the neighbouring relations and every
sensitivity convention in :mod:`dpsample.privacy.relations`; this module composes
the components, and :mod:`dpsample.privacy.routes` reads the result out (every
route's epsilon and delta, the ``"split"`` route and the TV-slack conversion). The
export to dp_accounting events
and back (:meth:`PrivacyGuarantee.to_dp_event`,
:meth:`PrivacyGuarantee.from_dp_event`) is in :mod:`dpsample.privacy.interop`, the
readable report (``print(g)``, :meth:`PrivacyGuarantee.report`) in
:mod:`dpsample.privacy.report`. Every name is importable from here (and from
:mod:`dpsample.privacy`) as before.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import dp_accounting
import numpy as np

from dpsample._src import precision, validation
from dpsample.errors import RelationMismatchError
from dpsample.privacy import interop
from dpsample.privacy.components import (
    ADD_OR_REMOVE_ONE,  # noqa: F401  (re-exported, as before the split)
    RDP_ORDERS,
    REPLACE_ONE,
    Component,
    NeighboringRelation,
)
from dpsample.privacy.components import (  # noqa: F401  (tests read this name)
    leaf_pld as _leaf_pld,
)
from dpsample.privacy.conversions import (
    epsilon_to_zcdp,
    randomized_response_rdp,
    zcdp_to_delta,
    zcdp_to_epsilon,
)
from dpsample.privacy.report import PrivacyReport, ReportContext
from dpsample.privacy.routes import (  # noqa: F401  (tests read the split's names)
    _SPLIT_FRACTIONS,
    SPLIT_DELTA_RTOL,
    composed_pld,
    epsilon_with_slack,
    exact_deltas,
    exact_epsilons,
    rdp_curve,
    split_delta,
    split_epsilon,
)

__all__ = [
    "NeighboringRelation",
    "PrivacyGuarantee",
    "randomized_response_rdp",
    "epsilon_to_zcdp",
    "zcdp_to_epsilon",
    "zcdp_to_delta",
    "RDP_ORDERS",
]

#: Finest PLD discretisation interval (dp_accounting's default). A coarser interval is
#: chosen when the composed privacy loss would need more than ``PLD_MAX_POINTS`` points;
#: a coarser pessimistic discretisation is still a valid upper bound.
PLD_DISCRETIZATION = 1e-4
PLD_MAX_POINTS = 2_000_000


# --------------------------------------------------------------------------------------
# the guarantee


@dataclasses.dataclass(frozen=True, eq=False)
class PrivacyGuarantee:
    """A differential-privacy guarantee, composable and convertible to (epsilon, delta).

    Build one with a constructor (:meth:`pure`, :meth:`exponential_mechanism`,
    :meth:`zcdp`, :meth:`gaussian`, :meth:`laplace`, :meth:`approx`,
    :meth:`from_event`, :meth:`none`), combine with :meth:`compose`, :meth:`repeat` and
    :meth:`with_tv_slack`, qualify with :meth:`assuming`, read it with
    :meth:`epsilon`, :meth:`delta` and :meth:`report` (``print(g)`` shows the
    report's table), and hand it to dp_accounting with :meth:`to_dp_event`. Every
    guarantee states its neighbouring relation (replace-one by default, as in the
    seeds); composing guarantees of different relations raises. A guarantee that
    rests on something dpsample does not prove or enforce lists it in
    ``assumptions``; every combinator keeps the union, so a composition is as
    conditional as its most conditional part.

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

    components: tuple[tuple[Component, int], ...] = ()
    relation: Any = REPLACE_ONE
    tv_slack: float = 0.0
    #: Conditions the guarantee rests on that dpsample does not prove or enforce
    #: (an unproven schedule, a bound the caller vouches for, an event the data may
    #: break), sorted and without duplicates. Empty for an unconditional guarantee.
    assumptions: tuple[str, ...] = ()
    #: What the plan that made this guarantee tells its report (budget, stages):
    #: a :class:`~dpsample.privacy.report.ReportContext`, or ``None``. Set by
    #: ``PrivateAlgorithm.plan``; kept by :meth:`assuming`, dropped by the
    #: combinators (a composition has no budget of its own). It changes no number.
    context: Any = dataclasses.field(default=None, repr=False, compare=False)
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
        return cls(((Component("pure", epsilon=eps), 1),), relation)

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
        return cls(((Component("expmech", epsilon=eps), 1),), relation)

    @classmethod
    def zcdp(cls, rho: float, *, relation: Any = REPLACE_ONE) -> PrivacyGuarantee:
        """A rho-zCDP mechanism (Renyi DP rho * alpha at every order alpha > 1).

        Examples:
            >>> from dpsample.privacy import PrivacyGuarantee
            >>> round(PrivacyGuarantee.zcdp(0.5).epsilon(1e-5), 3)
            4.729
        """
        r = validation.positive("rho", rho)
        return cls(((Component("zcdp", rho=r), 1),), relation)

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
            ((Component("event", unit_sensitivity=True, event=event), 1),), relation
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
            ((Component("event", unit_sensitivity=True, event=event), 1),), relation
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
        return cls(((Component("approx", epsilon=eps, delta=dlt), 1),), relation)

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
        return cls(((Component("event", event=event), 1),), relation)

    @classmethod
    def from_dp_event(
        cls,
        event: dp_accounting.DpEvent,
        *,
        relation: Any = REPLACE_ONE,
        accountant: str = "pld",
        assumptions: Sequence[str] = (),
    ) -> PrivacyGuarantee:
        """The guarantee of a dp_accounting event, read as ``accountant`` reads it.

        The inverse of :meth:`to_dp_event`: ``accountant="pld"`` is
        :meth:`from_event`; ``"rdp"`` reads a bare Gaussian or Laplace event with
        unit shift whatever the relation, as dp_accounting's RDP accountant does
        (:func:`dpsample.privacy.interop.dp_event_parts`).

        Args:
            event: The dp_accounting event.
            relation: The relation of the accountant the event was written for.
            accountant: ``"pld"`` or ``"rdp"``.
            assumptions: The assumptions the guarantee rests on (those a
                conditional guarantee's export left to the caller).

        Returns:
            The guarantee.

        Raises:
            TypeError: ``event`` is not a ``DpEvent``.
            ValueError: an unknown accountant.

        Examples:
            >>> from dpsample.privacy import PrivacyGuarantee
            >>> g = PrivacyGuarantee.gaussian(1.0).repeat(10)
            >>> back = PrivacyGuarantee.from_dp_event(g.to_dp_event("rdp"),
            ...                                       accountant="rdp")
            >>> round(back.epsilon(1e-5), 4) == round(g.epsilon(1e-5), 4)
            True
        """
        parts = interop.dp_event_parts(event, accountant=accountant)
        if accountant == "pld":
            return cls.from_event(event, relation=relation).assuming(*assumptions)
        guarantee = cls.none(relation=relation)
        for comp, k in parts:
            part = cls(((comp, 1),), relation)
            guarantee = guarantee.compose(part if k == 1 else part.repeat(k))
        return guarantee.assuming(*assumptions)

    def to_dp_event(
        self, accountant: str = "pld", *, accept_assumptions: bool = False
    ) -> dp_accounting.DpEvent:
        """This guarantee as one composed dp_accounting event, for one accountant.

        The event is for dp_accounting's ``accountant`` (``"pld"``:
        ``PLDAccountant``, ``"rdp"``: ``RdpAccountant``) built with
        ``neighboring_relation=self.relation``; that accountant accepts it and
        never gives a smaller epsilon than :meth:`epsilon`. The two accountants
        read a bare Gaussian event differently under REPLACE_ONE, so the event
        means this guarantee only to the accountant named. Pure and
        exponential-mechanism parts are written as randomised response
        (REPLACE_ONE) or a dominating Laplace shift (ADD_OR_REMOVE_ONE), zCDP parts
        as ``ZCDpEvent`` (RDP only); ``(epsilon, delta)`` parts and a TV slack have
        no dp_accounting event and are refused. See
        :mod:`dpsample.privacy.interop` for each encoding and why it is exact or
        conservative.

        Args:
            accountant: ``"pld"`` or ``"rdp"``.
            accept_assumptions: Export a conditional guarantee anyway (an event
                cannot carry :attr:`assumptions`; they are then the caller's to
                keep, e.g. for :meth:`from_dp_event`).

        Returns:
            A ``dp_accounting.ComposedDpEvent``.

        Raises:
            ValueError: a conditional guarantee (unless ``accept_assumptions``), a
                TV slack, a part with no event for that accountant, a relation other
                than REPLACE_ONE and ADD_OR_REMOVE_ONE, or an unknown accountant.

        Examples:
            >>> import dp_accounting
            >>> from dpsample.privacy import PrivacyGuarantee
            >>> g = PrivacyGuarantee.gaussian(2.0).repeat(10).compose(
            ...     PrivacyGuarantee.pure(0.1))
            >>> [type(e).__name__ for e in g.to_dp_event("pld").events]
            ['SelfComposedDpEvent', 'RandomizedResponseDpEvent']
            >>> acc = dp_accounting.pld.PLDAccountant(neighboring_relation=g.relation)
            >>> theirs = acc.compose(g.to_dp_event("pld")).get_epsilon(1e-6)
            >>> round(theirs, 3), round(g.epsilon(1e-6), 3)
            (8.326, 8.325)
        """
        return interop.to_dp_event(
            self, accountant, accept_assumptions=accept_assumptions
        )

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
        counts: dict[Component, int] = {}
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
            self.context,
        )

    def with_context(self, context: Any) -> PrivacyGuarantee:
        """The same guarantee with a plan's report context (budget, stages).

        ``PrivateAlgorithm.plan`` calls it; nothing in the accounting changes, and
        the report (:meth:`report`, ``print``) reads the guarantee at the
        context's budget and lists its stages. The copy shares this guarantee's
        accounting memo (its PLD, RDP curve and every epsilon already read): the
        context enters no number, so a plan's guarantee is not accounted again.

        Args:
            context: A :class:`~dpsample.privacy.report.ReportContext`.

        Returns:
            The guarantee with that context.
        """
        if not isinstance(context, ReportContext):
            raise TypeError(f"Expected a ReportContext, got {context!r}")
        return PrivacyGuarantee(
            self.components,
            self.relation,
            self.tv_slack,
            self.assumptions,
            context,
            self._cache,
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
        return rdp_curve(self)

    def pld_discretization(self) -> float:
        """The value discretisation interval of this guarantee's PLD route.

        dp_accounting's default (:data:`PLD_DISCRETIZATION`), or coarser where the
        composed privacy loss is wide (:data:`PLD_MAX_POINTS`). A dp_accounting
        ``PLDAccountant`` built with this interval composes :meth:`to_dp_event`'s
        event as this guarantee's PLD route does; at a finer interval its
        (pessimistic, still valid) epsilon can be smaller by the discretisation
        error.

        Examples:
            >>> from dpsample.privacy import PrivacyGuarantee
            >>> PrivacyGuarantee.gaussian(2.0).pld_discretization()
            0.0001
        """
        width = sum(c.pld_width(k, self.relation) for c, k in self.components)
        return max(PLD_DISCRETIZATION, width / PLD_MAX_POINTS)

    def _pld(self) -> Any | None:
        return composed_pld(self)

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
        return split_epsilon(self, delta)

    def _split_delta(self, epsilon: float) -> float | None:
        return split_delta(self, epsilon)

    def _exact_epsilons(self, delta: float) -> dict[str, float]:
        return exact_epsilons(self, delta)

    def _exact_deltas(self, epsilon: float) -> dict[str, float]:
        return exact_deltas(self, epsilon)

    def delta(self, epsilon: float) -> float:
        """Smallest delta such that the guarantee is (epsilon, delta)-DP (valid routes).

        Includes the TV slack: ``delta_exact(epsilon) + (1 + e^epsilon) tv_slack``.
        """
        eps = validation.nonnegative("epsilon", epsilon, allow_inf=True)
        if math.isinf(eps):
            return 0.0
        routes = self._exact_deltas(eps)
        exact = min(routes.values()) if routes else 1.0
        if self.tv_slack == 0.0:
            return float(min(1.0, exact))
        if eps > 700.0:  # (1 + e^eps) tau > 1 (and exp overflows): no bound
            return 1.0
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
        return epsilon_with_slack(self, delta)

    @property
    def conditional(self) -> bool:
        """Whether the guarantee rests on :attr:`assumptions` (shown "conditional").

        A guarantee is *conditional* when it holds only if something dpsample does
        not prove or enforce is true (a declared constant no clip enforces, a
        caller's event bound, a secret seed): exactly when :attr:`assumptions` is
        not empty. Plans, reports and the CLI print it as "conditional" beside
        the epsilon.

        Examples:
            >>> from dpsample.privacy import PrivacyGuarantee
            >>> g = PrivacyGuarantee.gaussian(2.0)
            >>> g.conditional, g.assuming("the declared bound holds").conditional
            (False, True)
            >>> g.assuming("the declared bound holds")  # doctest: +ELLIPSIS
            PrivacyGuarantee([...], relation=REPLACE_ONE, conditional, assumptions=...)
        """
        return bool(self.assumptions)

    def report(self, delta: float | None = None) -> PrivacyReport:
        """The guarantee laid out at ``delta``: the table ``print`` shows.

        A :class:`~dpsample.privacy.report.PrivacyReport`: ``str`` of it is the
        table the ``dpsample`` command prints (stages, mechanisms, every route's
        epsilon, budget, verdict, assumptions, ledger), ``_repr_html_`` its HTML;
        it is also a read-only mapping of every valid route's epsilon at
        ``delta``, the tightest and the components (``as_dict()`` gives the dict:
        ``delta``, ``epsilon``, ``tightest``, ``routes``, ``tv_slack``,
        ``relation``, ``components``, ``assumptions``, ``conditional``).

        Args:
            delta: The delta (default: the budget delta of the plan that made
                this guarantee).

        Returns:
            The report.

        Raises:
            ValueError: no delta given and no plan gave this guarantee a budget.

        Examples:
            >>> from dpsample.privacy import PrivacyGuarantee
            >>> r = PrivacyGuarantee.exponential_mechanism(0.1).repeat(100).report(1e-5)
            >>> r["tightest"]
            'rdp'
        """
        if delta is None and self.context is None:
            raise ValueError(
                "give a delta: no plan gave this guarantee a budget (report(delta))"
            )
        return PrivacyReport(self, delta)

    def __str__(self) -> str:
        """The report's table (at the plan's delta, else at ``DISPLAY_DELTA``)."""
        return str(PrivacyReport(self))

    def _repr_html_(self) -> str:
        return PrivacyReport(self)._repr_html_()

    def __repr__(self) -> str:
        parts = ", ".join(
            f"{c.describe()}" + (f" x{k}" if k > 1 else "") for c, k in self.components
        )
        slack = f", tv_slack={self.tv_slack:g}" if self.tv_slack else ""
        assumed = (
            f", conditional, assumptions={self.assumptions!r}"
            if self.assumptions
            else ""
        )
        return (
            f"PrivacyGuarantee([{parts}], relation={self.relation.name}{slack}"
            f"{assumed})"
        )


def _merge(*groups: Sequence[str]) -> tuple[str, ...]:
    """Assumptions of several guarantees: sorted, without duplicates."""
    return tuple(sorted({a.strip() for group in groups for a in group}))


precision.scope_public(globals())
