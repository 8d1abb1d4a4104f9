"""Privacy core: guarantees, results, reports, the ledger, calibration and audits."""

from dpsample.privacy import lsi
from dpsample.privacy.audit import AuditResult, audit, clopper_pearson
from dpsample.privacy.calibration import (
    Calibration,
    CalibrationError,
    calibrate,
    calibrate_noise,
)
from dpsample.privacy.guarantee import (
    NeighboringRelation,
    PrivacyGuarantee,
    epsilon_to_zcdp,
    randomized_response_rdp,
    zcdp_to_delta,
    zcdp_to_epsilon,
)
from dpsample.privacy.ledger import BudgetLedger
from dpsample.privacy.report import PrivacyReport
from dpsample.privacy.result import NON_PRIVATE_KEY, PrivateResult

# Shortcuts to PrivacyGuarantee constructors. The Gaussian, Laplace and exponential-
# mechanism guarantees have none here (use PrivacyGuarantee.gaussian, ...): those
# bare names are the mechanisms, dpsample.mechanisms.gaussian / .laplace and
# dpsample.nets.exponential_mechanism (issue 12: no name defined twice).
pure = PrivacyGuarantee.pure
zcdp = PrivacyGuarantee.zcdp
approx = PrivacyGuarantee.approx
from_event = PrivacyGuarantee.from_event

__all__ = [
    "AuditResult",
    "audit",
    "clopper_pearson",
    "BudgetLedger",
    "CalibrationError",
    "NON_PRIVATE_KEY",
    "NeighboringRelation",
    "PrivacyGuarantee",
    "PrivacyReport",
    "PrivateResult",
    "approx",
    "Calibration",
    "calibrate",
    "calibrate_noise",
    "from_event",
    "lsi",
    "pure",
    "randomized_response_rdp",
    "zcdp",
    "zcdp_to_delta",
    "epsilon_to_zcdp",
    "zcdp_to_epsilon",
]
