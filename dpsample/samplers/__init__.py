"""Private samplers of the regularised Gibbs target (seed 000, Sec. 5.1).

* :func:`gibbs` releases one point of ``K`` from
  ``pi(x) ∝ exp(-beta (F_D(x) + mu/2 ||x||^2))`` with its guarantee, by the alternating
  (proximal) sampler with the Gopi–Lee–Liu rejection inner step, projected Langevin or
  MALA.
* :mod:`~dpsample.samplers.proximal`, :mod:`~dpsample.samplers.rgo`,
  :mod:`~dpsample.samplers.restricted_gaussian`, :mod:`~dpsample.samplers.langevin`,
  :mod:`~dpsample.samplers.mala`: BlackJAX-shaped kernels and their parts.
* :class:`~dpsample.samplers.gibbs.Gibbs` (registry name ``"gibbs"``): the same as a
  two-phase algorithm (plan in public, run privately); the target's privacy bounds
  and calibration are :mod:`~dpsample.samplers.gibbs_privacy` and
  :mod:`~dpsample.samplers.gibbs_calibration`, the compiled chains
  :mod:`~dpsample.samplers.chains`.
* :func:`~dpsample.samplers.diagnostics.run`: the non-private multi-chain runner.
"""

from dpsample.samplers import (
    chains,
    diagnostics,
    langevin,
    mala,
    proximal,
    restricted_gaussian,
    rgo,
)
from dpsample.samplers.diagnostics import run
from dpsample.samplers.gibbs import (
    Gibbs,
    calibrate_gibbs,
    gibbs,
    target_privacy,
)
from dpsample.samplers.target import GibbsTarget

__all__ = [
    "Gibbs",
    "GibbsTarget",
    "chains",
    "calibrate_gibbs",
    "diagnostics",
    "gibbs",
    "langevin",
    "mala",
    "proximal",
    "restricted_gaussian",
    "rgo",
    "run",
    "target_privacy",
]
