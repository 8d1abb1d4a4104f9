r"""The noise and guarantee of a Goldstein finder run (spec 004 §3).

:func:`goldstein_guarantee` calibrates the noise of a planned schedule with the one
calibrator, :func:`dpsample.privacy.calibration.calibrate`, and returns the noise
scales with the :class:`~dpsample.privacy.PrivacyGuarantee` of the run:

* single pass: the differing sample enters at most ``H + 1`` tree nodes, each a
  Gaussian mechanism of sensitivity ``s = max(s_A, s_D)`` given the past, so the run
  is ``gaussian_sum(z)`` composed ``H + 1`` times;
* multi pass: ``N_A`` anchor and ``N_D`` difference Gaussians with multipliers
  ``c sqrt(N_A)`` and ``c sqrt(N_D)`` (equal zCDP split), ``c`` calibrated;
* Mode A adds the TV slack ``tau`` of the sensitivity event and the assumption on
  the declared ``L``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import dp_accounting

from dpsample._src import precision
from dpsample.base import PublicRecord
from dpsample.finders.accounting import C_SENS, gaussian_sum_guarantee
from dpsample.privacy import PrivacyGuarantee, relations
from dpsample.privacy.calibration import calibrate, coarse_epsilon

__all__ = [
    "CALIBRATIONS",
    "AnchorDifferenceNoise",
    "GoldsteinNoise",
    "TreeNoise",
    "goldstein_guarantee",
    "release_multiplier",
]

#: Calibration routes. ``"tight"`` (default): the smallest noise the returned
#: guarantee itself certifies (its tightest route, PLD), so the run spends the budget
#: it is given. ``"rdp"``: the smallest noise dp_accounting's RDP accountant (an upper
#: bound) certifies, checked on the guarantee (the default before issue 16; it spends
#: about 94 % of epsilon = 1 and less at larger epsilon).
CALIBRATIONS = ("tight", "rdp")


@dataclasses.dataclass(frozen=True, eq=False)
class TreeNoise(PublicRecord):
    """Single pass: the tree's calibrated noise (``info.noise``).

    Attributes:
        tree_noise_multiplier: ``z``: each node's std over the per-example bound.
        tree_sigma: Each tree node's noise std, ``z s / C_SENS``.
        sensitivity: ``s = max(s_A, s_D)`` of one node release.
    """

    tree_noise_multiplier: float
    tree_sigma: float
    sensitivity: float


@dataclasses.dataclass(frozen=True, eq=False)
class AnchorDifferenceNoise(PublicRecord):
    """Multi pass: the anchors' and differences' calibrated noise (``info.noise``).

    Attributes:
        anchor_noise_multiplier: ``z1 = c sqrt(N_A)``.
        difference_noise_multiplier: ``z2 = c sqrt(N_D)`` (``None``: no difference
            step).
        sigma1: Anchor noise std, ``z1 s_A / C_SENS``.
        sigma2: Difference noise std, ``z2 s_D / C_SENS`` (``0`` without
            differences).
    """

    anchor_noise_multiplier: float
    difference_noise_multiplier: float | None
    sigma1: float
    sigma2: float


#: The calibrated noise of a Goldstein run, by pass.
GoldsteinNoise = TreeNoise | AnchorDifferenceNoise


def goldstein_guarantee(
    schedule: dict[str, Any], *, calibration: str = "tight"
) -> tuple[GoldsteinNoise, PrivacyGuarantee]:
    """Calibrated noise and guarantee of a :func:`goldstein_theorem_parameters` dict.

    The noise multipliers are in the ecosystem's unit (std over the per-example
    bound, half the replace-one sensitivity). ``"rdp"``: the smallest multiplier
    (to ``1e-4``) whose RDP (dp_accounting, Gaussian at noise over sensitivity
    ``z / 2``) meets ``(epsilon, delta_gaussian)``, found by the calibrator's coarse
    route from ``C_SENS`` and checked on the returned guarantee. ``"tight"``
    (default): then the calibrator's exact route from that multiplier down, on the
    Gaussian part of the returned guarantee at ``(epsilon, delta_gaussian)``, to
    ``1e-4``. In Mode A the TV slack ``tau = delta / (2 (1 + e^epsilon))`` adds the
    other half of ``delta``, so the run is ``(epsilon, delta)``-DP and spends
    epsilon to within the tolerance.

    Args:
        schedule: A
            :func:`~dpsample.finders.goldstein.goldstein_theorem_parameters` dict.
        calibration: One of :data:`CALIBRATIONS`.

    Returns:
        ``(noise, guarantee)``: ``noise`` has ``tree_noise_multiplier``,
        ``tree_sigma`` and ``sensitivity`` (single pass) or
        ``anchor_noise_multiplier``, ``difference_noise_multiplier``, ``sigma1``,
        ``sigma2`` (multi pass).

    Examples:
        >>> from dpsample.finders.goldstein import (
        ...     goldstein_guarantee, goldstein_theorem_parameters)
        >>> p = goldstein_theorem_parameters(n=300, dim=2, epsilon=1.0, delta=1e-5,
        ...                    lipschitz=1.0,
        ...                    initial_gap=1.0, alpha=0.1, num_directions=8,
        ...                    enforce_sensitivity=True)
        >>> noise, g = goldstein_guarantee(p)
        >>> g.epsilon(1e-5) <= 1.0
        True
    """
    if calibration not in CALIBRATIONS:
        raise ValueError(f"Expected calibration in {CALIBRATIONS}, got {calibration!r}")
    eps, delta_g, tau = (
        schedule["epsilon"],
        schedule["delta_gaussian"],
        schedule["tv_slack"],
    )
    if schedule["passes"] == "single":
        s = schedule["anchor_sensitivity"]
        if schedule["num_differences"] > 0:
            s = max(s, schedule["difference_sensitivity"])
        reps = schedule["tree_height"] + 1

        def parts(c: float) -> list[tuple[float, int]]:
            return [(c, reps)]

        def exact(c: float) -> PrivacyGuarantee:
            return gaussian_sum_guarantee(c).repeat(reps)

        z = _calibrate(parts, exact, eps, delta_g, calibration)
        g = exact(z)
        noise: GoldsteinNoise = TreeNoise(
            tree_noise_multiplier=z, tree_sigma=z * (s / C_SENS), sensitivity=s
        )
    else:
        n_a, n_d = schedule["num_anchors"], schedule["num_differences"]

        def parts(c: float) -> list[tuple[float, int]]:
            return [(c * math.sqrt(n_a), n_a), (c * math.sqrt(max(n_d, 1)), n_d)]

        def exact(c: float) -> PrivacyGuarantee:
            g = gaussian_sum_guarantee(c * math.sqrt(n_a)).repeat(n_a)
            if n_d:
                g = g.compose(gaussian_sum_guarantee(c * math.sqrt(n_d)).repeat(n_d))
            return g

        c = _calibrate(parts, exact, eps, delta_g, calibration)
        g = exact(c)
        z1, z2 = c * math.sqrt(n_a), c * math.sqrt(max(n_d, 1))
        noise = AnchorDifferenceNoise(
            anchor_noise_multiplier=z1,
            difference_noise_multiplier=z2 if n_d else None,
            sigma1=z1 * (schedule["anchor_sensitivity"] / C_SENS),
            sigma2=z2 * (schedule["difference_sensitivity"] / C_SENS) if n_d else 0.0,
        )
    if tau > 0:
        g = g.with_tv_slack(tau)
    if not schedule["enforce_sensitivity"]:  # Mode A: the bounds rest on L
        g = g.assuming(
            f"the declared lipschitz L = {schedule['lipschitz']:.6g} bounds every "
            "example's loss (not enforced: enforce_sensitivity=False)"
        )
    return noise, g


def release_multiplier(
    epsilon: float, delta: float, releases: int, *, calibration: str = "rdp"
) -> float:
    """The single-pass tree noise multiplier for ``releases`` node releases.

    What :func:`goldstein_guarantee` calibrates for a single-pass schedule with
    tree height ``H = releases - 1`` (each example in ``H + 1`` Gaussian releases):
    it depends on the budget and ``H`` only, not on the sensitivity, so the
    ``"practical"`` preset's batch rule reads it before the batch is known.
    Public inputs only.

    Examples:
        >>> from dpsample.finders.goldstein.guarantee import release_multiplier
        >>> z1 = release_multiplier(1.0, 1e-6, 1)
        >>> 5.0 < z1 < release_multiplier(1.0, 1e-6, 3)
        True
    """
    if calibration not in CALIBRATIONS:
        raise ValueError(f"Expected calibration in {CALIBRATIONS}, got {calibration!r}")

    def parts(c: float) -> list[tuple[float, int]]:
        return [(c, releases)]

    def exact(c: float) -> PrivacyGuarantee:
        return gaussian_sum_guarantee(c).repeat(releases)

    return _calibrate(parts, exact, epsilon, delta, calibration)


def _calibrate(
    parts_of: Callable[[float], list[tuple[float, int]]],
    exact: Callable[[float], PrivacyGuarantee],
    epsilon: float,
    delta: float,
    calibration: str,
) -> float:
    """Noise from the one calibrator: its coarse RDP route, then (``"tight"``) exact.

    The coarse route starts at ``C_SENS``, ``rtol = 1e-4``; ``"tight"`` then runs
    the exact route from that (upper-bound) multiplier down.
    """

    def rdp_epsilon(c: float) -> float:
        def part(z: float) -> Callable[[str], Any]:
            # RDP reads a bare Gaussian at unit shift: noise over the 2C shift
            ev = relations.at_unit_shift(
                dp_accounting.GaussianDpEvent(z), relations.REPLACE_ONE
            )
            return lambda route: ev if route == "rdp" else None

        return coarse_epsilon([(part(z), k) for z, k in parts_of(c)], delta)

    z_rdp = calibrate(
        exact,
        epsilon=epsilon,
        delta=delta,
        coarse_epsilon=rdp_epsilon,
        initial=C_SENS,
        min_lower=C_SENS * 1e-12,
        max_upper=C_SENS * 1e12,
        rtol=1e-4,
        refine=False,  # "rdp" is the RDP answer; "tight" refines below, exactly
    ).noise
    if calibration == "rdp":
        return z_rdp
    return calibrate(
        exact,
        epsilon=epsilon,
        delta=delta,
        initial=z_rdp,
        min_lower=C_SENS * 1e-12,
        max_upper=C_SENS * 1e12,
        rtol=1e-4,
    ).noise


precision.scope_public(globals())
