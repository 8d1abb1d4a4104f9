"""The Gibbs Langevin route's Gaussian calibration goes through the one calibrator
(issue 12 'one noise calibrator'): it meets the target, never overshoots, and is
tight to the calibrator's tolerance."""

import pytest

from dpsample.privacy import PrivacyGuarantee
from dpsample.privacy import calibration as cal_mod
from dpsample.samplers import gibbs_calibration as GC


@pytest.mark.parametrize(
    ("epsilon", "delta"), [(1.0, 1e-5), (0.1, 1e-6), (0.5, 1e-3), (3.0, 1e-8)]
)
def test_gaussian_noise_to_sensitivity_meets_target_tightly(epsilon, delta):
    s = GC.gaussian_noise_to_sensitivity(epsilon=epsilon, delta=delta)
    spent = PrivacyGuarantee.gaussian(s).epsilon(delta)
    assert spent <= epsilon  # never overshoots
    assert spent >= (1.0 - 1e-5) * epsilon  # spends the budget
    assert PrivacyGuarantee.gaussian(s * (1.0 - 1e-4)).epsilon(delta) > epsilon


def test_gaussian_noise_to_sensitivity_uses_the_one_calibrator(monkeypatch):
    calls = []
    real = cal_mod.calibrate

    def spy(*args, **kwargs):
        calls.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(GC, "calibrate", spy)
    GC._gaussian_noise.cache_clear()  # memoised: an earlier call would answer
    GC.gaussian_noise_to_sensitivity(epsilon=1.0, delta=1e-5)
    assert len(calls) == 1


def test_gaussian_noise_to_sensitivity_is_not_the_sum_noise_multiplier():
    """The value is noise std / full sensitivity: the ecosystem's noise multiplier
    (std on the sum / C) of the same mechanism under replace-one is twice it."""
    assert not hasattr(GC, "gaussian_noise_multiplier")
    s = GC.gaussian_noise_to_sensitivity(epsilon=1.0, delta=1e-5)
    assert PrivacyGuarantee.gaussian(s).epsilon(1e-5) <= 1.0
    assert s == pytest.approx(3.7306, rel=1e-4)
