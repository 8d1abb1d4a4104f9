"""Audits of the cases added to tests/audit_cases.py for issue 11's re-run.

DP-TR at its default calibration, the Goldstein first-order finder (Mode B),
``dp_sgd_quasar`` and ``spider_sosp`` end to end. Each checks that the audited
function is the library's release (``check``), that the honest lower bound is at
most the claim and, where the case's docstring says the audit has the power, that
the half-noise twin is flagged, and otherwise that the case's power twin (a quarter
of the noise) is. Each test takes well under a minute.
"""

import pytest
from audit_cases import CASES


def _honest_and_twin(name: str, *, twin_flagged: bool) -> None:
    audit = CASES[name].build()
    assert audit.check is not None
    audit.check()
    honest = audit.run()
    assert honest.epsilon_lower_bound <= audit.claim
    if twin_flagged:
        assert audit.run(twin=True).epsilon_lower_bound > audit.claim
    else:  # the release shows part of the claim: a larger defect shows the power
        assert audit.power_twin is not None
        assert audit.run(power=True).epsilon_lower_bound > audit.claim


@pytest.mark.slow
def test_dp_trust_region_default_calibration_audit():
    """Default ("tight") calibration: claim 1.0 at the plan's multiplier; the twin
    (half both noise stds) gave 1.33 at 200k runs per dataset."""
    audit = CASES["dp_trust_region_default"].build()
    assert "calibration tight" in audit.check()
    assert audit.claim <= 1.0
    assert audit.run().epsilon_lower_bound <= audit.claim
    assert audit.run(twin=True).epsilon_lower_bound > audit.claim


@pytest.mark.slow
def test_goldstein_first_order_mode_b_audit():
    """Two steps, one anchor of batch 1 holding the differing example; the twin
    (half the tree noise) gave 1.13 against the claim 1.00."""
    _honest_and_twin("goldstein_first_order", twin_flagged=True)


@pytest.mark.slow
def test_o2_curvature_audit():
    """The second-kind oracle at x != y on per-example curvatures +-1: claim 0.73,
    the half-multiplier twin gave 1.08 at 1M runs per dataset."""
    _honest_and_twin("o2_curvature", twin_flagged=True)


@pytest.mark.slow
def test_quasar_sgd_audit_stays_below_the_claim():
    """End to end (2 runs + selection); the half-noise twin is not flagged (see the
    case), the quarter-noise twin is (1.04 against the claim 0.83)."""
    _honest_and_twin("quasar_sgd", twin_flagged=False)


@pytest.mark.slow
def test_spider_sosp_audit_stays_below_the_claim():
    """End to end (Algorithm 1, T = 2, then AboveThreshold-SOSP); the half-noise twin
    is not flagged (see the case), the quarter-noise twin is (1.45 against 1.00)."""
    _honest_and_twin("spider_sosp", twin_flagged=False)
