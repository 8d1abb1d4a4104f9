"""Every sensitivity convention is defined once, and agrees with dp_accounting.

:mod:`dpsample.privacy.relations` holds the conventions (issue 29 item 3): the
sensitivity factor of each relation, the two units of noise, and for each
dp_accounting event kind what its noise multiplier is relative to and how each
accountant reads the relation. Here:

* each kind's factor, for both relations, against dp_accounting's own accounting of
  the event dpsample builds, and against closed forms (the Renyi divergence of a
  Gaussian shift ``alpha Delta^2 / (2 sigma^2)``, Laplace's pure epsilon and Renyi
  divergence, the exact epsilon of a Gaussian mechanism of ``mu = Delta / sigma``
  (Dong, Roth and Su 2022)), with the shift ``Delta`` of one example ``2 C`` under
  replace-one and ``C`` under add/remove;
* the factor is written once: no module of the package but ``relations.py``
  defines a relation's factor or the old per-module tables (a source scan whose
  power check runs it on the code it replaced).

All analytic and fast: RDP curves at two orders, PLDs on a coarse grid (a
pessimistic PLD overstates one mechanism's epsilon by less than one grid step).
"""

from __future__ import annotations

import ast
import math
import pathlib
import re

import dp_accounting
import pytest
from dp_accounting import pld as dp_pld
from dp_accounting import rdp as dp_rdp
from scipy import optimize, stats

from dpsample.privacy import PrivacyGuarantee, relations
from dpsample.privacy.relations import ADD_OR_REMOVE_ONE, REPLACE_ONE

RELATIONS = {"replace_one": REPLACE_ONE, "add_or_remove": ADD_OR_REMOVE_ONE}
ORDERS = [2.0, 8.0]
Z = 3.0  # the ecosystem's noise multiplier: noise std Z C on a sum bounded by C
INTERVAL = 1e-2  # coarse PLD grid (speed): one mechanism's epsilon is within it
DELTA = 1e-5


def _shift(relation):
    """One example's shift of a sum of terms bounded by ``C = 1``: the truth."""
    return 2.0 if relation == REPLACE_ONE else 1.0


def _gaussian_epsilon(mu, delta):
    """Exact epsilon of the Gaussian mechanism with ``mu = shift / sigma``."""

    def delta_of(eps):
        return stats.norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * stats.norm.cdf(
            -eps / mu - mu / 2
        )

    return optimize.brentq(lambda e: delta_of(e) - delta, 0.0, 100.0, xtol=1e-12)


def _laplace_rdp(alpha, shift_over_scale):
    """Renyi divergence of order ``alpha`` of Laplace shifts (Mironov 2017)."""
    t = shift_over_scale
    return math.log(
        alpha / (2 * alpha - 1) * math.exp((alpha - 1) * t)
        + (alpha - 1) / (2 * alpha - 1) * math.exp(-alpha * t)
    ) / (alpha - 1)


def _rdp(event, relation):
    acc = dp_rdp.RdpAccountant(ORDERS, neighboring_relation=relation)
    if not acc.supports(event):
        return None
    acc.compose(event)
    return list(acc._rdp)  # noqa: SLF001  (dp_accounting has no public getter)


def _pld_epsilon(event, relation):
    acc = dp_pld.PLDAccountant(relation, value_discretization_interval=INTERVAL)
    if not acc.supports(event):
        return None
    return acc.compose(event).get_epsilon(DELTA)


def _read(kind, event, relation, route):
    """The event dp_accounting's ``route`` accountant is given, and its relation.

    The table's reading (:class:`~dpsample.privacy.relations.EventKind`): a
    ``"shift"`` kind goes at unit shift (:func:`relations.at_unit_shift`; for the
    PLD accountant under ADD_OR_REMOVE_ONE), any other as it is.
    """
    how = kind.rdp if route == "rdp" else kind.pld
    if how is None:
        return None, relation
    if how == "shift":
        rel = relation if route == "rdp" else ADD_OR_REMOVE_ONE
        return relations.at_unit_shift(event, relation), rel
    return event, relation


def _kind(event_type):
    (kind,) = [k for k in relations.EVENT_KINDS if k.event_type is event_type]
    return kind


def _event(event_type, z):
    """The event of one release of noise ``z C`` on a sum, as dpsample builds it."""
    nm = relations.event_noise_multiplier(event_type, z)
    if event_type is dp_accounting.PoissonSampledDpEvent:
        return event_type(1.0, dp_accounting.GaussianDpEvent(nm))  # q = 1: no sampling
    if event_type is dp_accounting.SampledWithoutReplacementDpEvent:
        return event_type(50, 50, dp_accounting.GaussianDpEvent(nm))  # b = n
    if event_type is dp_accounting.TruncatedSubsampledGaussianDpEvent:
        return event_type(50, 1.0, 50, nm)  # q = 1, never truncated
    return event_type(nm)


#: Kinds that are a Gaussian of noise ``Z C`` on the sum when sampling is trivial.
GAUSSIAN_KINDS = [
    dp_accounting.GaussianDpEvent,
    dp_accounting.PoissonSampledDpEvent,
    dp_accounting.TruncatedSubsampledGaussianDpEvent,
    dp_accounting.SampledWithoutReplacementDpEvent,
]


def test_the_table_lists_each_kind_once_and_every_reading_is_known():
    types = [k.event_type for k in relations.EVENT_KINDS]
    assert len(types) == len(set(types))
    for kind in relations.EVENT_KINDS:
        assert kind.rdp in (None, "shift", "relation", "none")
        assert kind.pld in (None, "shift", "relation")
        assert relations.event_kind(kind.event_type.__new__(kind.event_type)) is kind
    shift = {k.event_type for k in relations.EVENT_KINDS if k.rdp == "shift"}
    assert (
        set(relations.SHIFT_EVENTS)
        == shift
        == {
            dp_accounting.GaussianDpEvent,
            dp_accounting.LaplaceDpEvent,
        }
    )
    assert relations.event_kind(dp_accounting.NoOpDpEvent()) is None


@pytest.mark.parametrize("relation_name", sorted(RELATIONS))
def test_units_of_noise(relation_name):
    relation = RELATIONS[relation_name]
    factor = relations.sum_sensitivity_factor(relation)
    assert factor == _shift(relation)
    s = relations.noise_to_sensitivity(Z, relation)
    assert s == Z / _shift(relation)
    assert relations.noise_multiplier(s, relation) == Z
    # gaussian(s) is noise over the full sensitivity: rho = 1 / (2 s^2) either way
    rho = PrivacyGuarantee.gaussian(s, relation=relation).zcdp_rho()
    assert rho == pytest.approx(_shift(relation) ** 2 / (2 * Z**2), rel=1e-14)
    with pytest.raises(ValueError, match="REPLACE_ONE"):
        relations.sum_sensitivity_factor(
            dp_accounting.NeighboringRelation.REPLACE_SPECIAL
        )


@pytest.mark.parametrize("relation_name", sorted(RELATIONS))
@pytest.mark.parametrize("event_type", GAUSSIAN_KINDS, ids=lambda t: t.__name__)
def test_each_gaussian_kinds_factor_agrees_with_dp_accounting(
    event_type, relation_name
):
    """Noise ``Z C`` on a sum: Renyi ``alpha shift^2 / (2 Z^2)``, epsilon of mu."""
    relation = RELATIONS[relation_name]
    kind = _kind(event_type)
    shift = _shift(relation)
    event = _event(event_type, Z)
    routes = 0
    read, rel = _read(kind, event, relation, "rdp")
    curve = None if read is None else _rdp(read, rel)
    if curve is not None:
        routes += 1
        truth = [a * shift**2 / (2 * Z**2) for a in ORDERS]
        assert curve == pytest.approx(truth, rel=1e-12)
    read, rel = _read(kind, event, relation, "pld")
    eps = None if read is None else _pld_epsilon(read, rel)
    if eps is not None:
        routes += 1
        truth = _gaussian_epsilon(shift / Z, DELTA)
        assert truth - 1e-9 <= eps <= truth + INTERVAL
    # the table's routes are the ones dp_accounting analyses: none silently empty
    assert routes == (curve is not None) + (kind.pld is not None)
    ours = PrivacyGuarantee.from_event(event, relation=relation).epsilon(DELTA)
    if routes == 0:  # only sampling without replacement, analysed for replace-one
        assert (event_type, relation) == (
            dp_accounting.SampledWithoutReplacementDpEvent,
            ADD_OR_REMOVE_ONE,
        )
        assert ours == math.inf  # no route: no number
    else:  # dpsample's guarantee of the event reads it the same way
        assert ours >= _gaussian_epsilon(shift / Z, DELTA) - 1e-9


@pytest.mark.parametrize("relation_name", sorted(RELATIONS))
def test_laplace_factor_agrees_with_dp_accounting(relation_name):
    relation = RELATIONS[relation_name]
    kind = _kind(dp_accounting.LaplaceDpEvent)
    b, shift = 2.0, _shift(relation)
    laplace = dp_accounting.LaplaceDpEvent
    event = laplace(relations.event_noise_multiplier(laplace, b))
    assert relations.laplace_pure_epsilon(b, relation) == shift / b
    assert PrivacyGuarantee.from_event(event, relation=relation).epsilon(0.0) == (
        shift / b
    )
    read, rel = _read(kind, event, relation, "rdp")
    truth = [_laplace_rdp(a, shift / b) for a in ORDERS]
    assert _rdp(read, rel) == pytest.approx(truth, rel=1e-12)
    read, rel = _read(kind, event, relation, "pld")
    eps = _pld_epsilon(read, rel)
    exact = shift / b + 2.0 * math.log1p(-DELTA)  # delta(eps) = 1 - e^((eps-eps0)/2)
    assert exact - 1e-9 <= eps <= exact + INTERVAL


@pytest.mark.parametrize("relation_name", sorted(RELATIONS))
def test_relation_kinds_are_given_to_dp_accounting_as_they_are(relation_name):
    """Kinds without a multiplier: dpsample's route is dp_accounting's, unchanged."""
    relation = RELATIONS[relation_name]
    for event in (
        dp_accounting.RandomizedResponseDpEvent(0.5, 2),
        dp_accounting.ZCDpEvent(0.1),
    ):
        kind = relations.event_kind(event)
        assert kind.multiplier_unit is None
        read, rel = _read(kind, event, relation, "rdp")
        assert read is event and rel is relation
        theirs = _rdp(event, relation)
        curve = PrivacyGuarantee.from_event(event, relation=relation)._rdp_curve()
        if theirs is None:  # dp_accounting refuses the relation: no route here
            assert curve is None
        else:
            ours = _rdp(read, rel)
            assert ours == theirs


#: Writing a relation's factor anywhere but relations.py (issue 29).
_FACTOR_PATTERNS = (
    r"^\s*C_SENS\s*=",
    r"^\s*_?(SHIFT_EVENTS|RDP_SELF_RELATED|PLD_SELF_RELATED|EVENT_RELATIONS)\s*=",
    r"def _halved\b",
    r"noise_multiplier\s*/\s*2(\.0)?\b",
    r"\b2(\.0)?\s*\*\s*[\w.]*noise_multiplier\b",
    r"\b2(\.0)?\s*/\s*[\w.]*noise_multiplier\b",
    r"\b2(\.0)?\s+if\s+[\w.]*relation\s*==\s*[\w.]*REPLACE_ONE",
    r"GaussianDpEvent\(\s*[\w.]+\s*/\s*(C_SENS|2(\.0)?)\s*\)",
)


def _code(text):
    """The source without its docstrings and comments (they may cite a factor)."""
    tree = ast.parse(text)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(body, list)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            body[0] = ast.Pass()
    return ast.unparse(tree)


def _factors_written(text):
    code = _code(text)
    return [p for p in _FACTOR_PATTERNS if re.search(p, code, re.MULTILINE)]


def test_no_module_but_relations_writes_a_factor():
    package = pathlib.Path(relations.__file__).resolve().parents[1]
    found = {}
    for path in sorted(package.rglob("*.py")):
        if path.name == "relations.py" and path.parent.name == "privacy":
            continue
        hits = _factors_written(path.read_text(encoding="utf-8"))
        if hits:
            found[str(path.relative_to(package))] = hits
    assert not found, found
    # power check: the scan flags each way the factor was written before issue 29,
    # and not the same words in a docstring or a comment
    assert not _factors_written('"""GaussianDpEvent(z / 2)"""\nx = 1  # C_SENS = 2')
    before = {
        "components": "_SHIFT_EVENTS = (dp_accounting.GaussianDpEvent,)",
        "halved": "return type(event)(event.noise_multiplier / 2.0)",
        "pure": "return (2.0 if relation == REPLACE_ONE else 1.0) / b",
        "interop": "return GaussianDpEvent(2.0 * c.event.noise_multiplier)",
        "interop_pure": "return pure_dp_event(2.0 / event.noise_multiplier, relation)",
        "accounting": "C_SENS = 2.0",
        "goldstein": "ev = dp_accounting.GaussianDpEvent(z / C_SENS)",
    }
    for name, text in before.items():
        assert _factors_written(text), name
