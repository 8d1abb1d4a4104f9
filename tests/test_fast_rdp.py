"""fast_rdp computes dp_accounting's sampled-without-replacement RDP, bit for bit.

:mod:`dpsample.privacy.fast_rdp` replaces dp_accounting's per-order ``O(a^2)``
forward differences by one vectorised run per noise level (issue 27: DP-STR's plan
took 17-21 s, all of it there). Every value must be dp_accounting's own: the curves
are compared with ``==`` (not a tolerance), and so are the accountant's epsilons.
"""

from __future__ import annotations

import dp_accounting
import numpy as np
import pytest
from dp_accounting.rdp import rdp_privacy_accountant as slow

from dpsample.privacy import fast_rdp
from dpsample.privacy.components import RDP_ORDERS

REL = dp_accounting.NeighboringRelation
GAUSS = dp_accounting.GaussianDpEvent
WOR = dp_accounting.SampledWithoutReplacementDpEvent

#: Every branch at a fraction of dp_accounting's cost: fractional orders between
#: 1 and 2 (the order-1 term) and above, integer orders up to the exact bound's
#: last (256) and the Stirling form's (512, 4096).
FEW_ORDERS = (1.1, 1.75, 2.0, 3.5, 7.0, 20.0, 63.0, 128.0, 256.0, 512.0, 4096.0)

#: ``(q, sigma)``: the DP-STR default's, tiny and large rates, tiny and huge noise.
CASES = [
    (0.5, 2.1929407179332263),
    (0.01, 1.3),
    (1e-5, 3.0),
    (0.99, 0.7),
    (0.3, 0.05),
    (0.05, 1e4),
]


def _slow(q, sigma, orders):
    return slow._compute_rdp_sample_wor_gaussian(q, sigma, np.array(orders))  # noqa: SLF001


@pytest.mark.parametrize(("q", "sigma"), CASES)
def test_curve_is_dp_accountings_bit_for_bit(q, sigma):
    fast = fast_rdp.wor_gaussian_rdp(q, sigma, FEW_ORDERS)
    np.testing.assert_array_equal(fast, _slow(q, sigma, FEW_ORDERS))


@pytest.mark.slow
def test_curve_on_every_order_over_a_sample():
    """dpsample's 159 orders over a seeded log-uniform sample of ``(q, sigma)``."""
    rng = np.random.default_rng(27)
    for _ in range(8):
        q = float(10 ** rng.uniform(-5, -0.01))
        sigma = float(10 ** rng.uniform(-1.5, 3))
        fast = fast_rdp.wor_gaussian_rdp(q, sigma, RDP_ORDERS)
        np.testing.assert_array_equal(fast, _slow(q, sigma, RDP_ORDERS))


@pytest.mark.parametrize(
    ("q", "sigma", "orders"),
    [
        (0.0, 1.0, FEW_ORDERS),
        (1.0, 1.0, FEW_ORDERS),
        (0.1, 1.0, (2.0, np.inf)),
    ],
)
def test_unusual_arguments_go_to_dp_accounting(q, sigma, orders):
    np.testing.assert_array_equal(
        fast_rdp.wor_gaussian_rdp(q, sigma, orders), _slow(q, sigma, orders)
    )


def test_the_curve_is_memoised_and_read_only():
    a = fast_rdp.wor_gaussian_rdp(0.2, 1.7, FEW_ORDERS)
    assert a is fast_rdp.wor_gaussian_rdp(0.2, 1.7, FEW_ORDERS)
    with pytest.raises(ValueError, match="read-only"):
        a[0] = 0.0


def test_accountant_is_dp_accountings_on_compositions():
    """Composed, self-composed and mixed events: the same curve and epsilons."""
    grad, hess = WOR(4000, 2000, GAUSS(2.19)), WOR(4000, 400, GAUSS(2.19))
    event = dp_accounting.ComposedDpEvent(
        [
            dp_accounting.SelfComposedDpEvent(
                dp_accounting.ComposedDpEvent([grad, hess]), 40
            ),
            GAUSS(5.0),
        ]
    )
    fast = fast_rdp.RdpAccountant(FEW_ORDERS, neighboring_relation=REL.REPLACE_ONE)
    ref = slow.RdpAccountant(FEW_ORDERS, neighboring_relation=REL.REPLACE_ONE)
    fast.compose(event, 3)
    ref.compose(event, 3)
    np.testing.assert_array_equal(fast._rdp, ref._rdp)  # noqa: SLF001
    for delta in (1e-5, 1e-9):
        assert fast.get_epsilon(delta) == ref.get_epsilon(delta)


def test_accountant_refuses_what_dp_accounting_refuses():
    """Add/remove adjacency, or a non-Gaussian inside: unsupported, as there."""
    for relation, event in [
        (REL.ADD_OR_REMOVE_ONE, WOR(100, 10, GAUSS(1.0))),
        (REL.REPLACE_ONE, WOR(100, 10, dp_accounting.LaplaceDpEvent(1.0))),
    ]:
        fast = fast_rdp.RdpAccountant(neighboring_relation=relation)
        ref = slow.RdpAccountant(neighboring_relation=relation)
        assert fast.supports(event) is ref.supports(event) is False
