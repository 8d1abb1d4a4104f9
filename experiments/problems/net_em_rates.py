"""Problem of ``experiments/net_em_rates.toml`` (seed 000, predictions N1 and N2).

The 1-Lipschitz, non-convex, non-smooth loss of spec 000 section 5.4, made separable
in ``d`` dimensions::

    f(x; z) = (1 / (c sqrt(d))) sum_j |sin(c (x_j - z_j))|,   z ~ N(0, sigma^2 I_d),

on the unit ball ``K = B_d(0, 1)`` (``D = 2``, ``R_c = 1``). Each coordinate term has
derivative of modulus at most ``1 / sqrt(d)``, so ``f(., z)`` is 1-Lipschitz; it has
a kink at ``x_j = z_j + k pi / c`` and, with ``c = 4``, several wells inside ``K``.

**Population risk in closed form.** The Fourier series
``|sin u| = 2/pi - (4/pi) sum_{m>=1} cos(2 m u) / (4 m^2 - 1)`` and
``E cos(2 m c (t - z)) = cos(2 m c t) exp(-2 m^2 c^2 sigma^2)`` give, per coordinate,

    h(t) = E|sin(c (t - z))| = 2/pi - (4/pi) sum_m cos(2 m c t) w_m,
    w_m = exp(-2 m^2 c^2 sigma^2) / (4 m^2 - 1),

and ``F_P(x) = sum_j h(x_j) / (c sqrt(d))``. All ``w_m > 0``, so ``h`` is smallest
where every cosine is 1: ``min_K F_P = sqrt(d) h(0) / c`` at ``x = 0`` (in ``K``).
The series is summed to ``m = 40``: with ``c sigma = 1/2`` the first omitted weight
is below ``e^-800``.

``measure`` returns, as non-private diagnostics of the released point: the excess
population risk (exact, above), the excess empirical risk over the net minimum
(``F_D(x_out) - min_P F_D``, the net streamed by :func:`dpsample.nets.net_minimum`),
and the explicit-constant bounds of spec 000 section 4.2 evaluated at the net, the
inverse temperature and the constants the mechanism used (public): N1's
``(log|P| + 1) / k`` and N2's Theorem 5.8 ``G r + (log|P| + 1)/k + G R_c
sqrt(2 log|P| / n)`` with its privacy and statistical terms.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from dpsample import bounds, nets

NUM_TERMS = 40


def make(rng_key: Any, n: int, d: int, *, sigma: float = 0.125) -> dict[str, Any]:
    """``n`` draws ``z ~ N(0, sigma^2 I_d)`` as features ``x`` (labels ``y = 0``)."""
    if not sigma > 0:
        raise ValueError(f"sigma must be positive, got {sigma}")
    z = sigma * jax.random.normal(rng_key, (n, d), jnp.float64)
    return {"x": z, "y": jnp.zeros(n, jnp.float64)}


def loss(c: float = 4.0) -> Any:
    """The loss ``f(x; z) = sum_j |sin(c (x_j - z_j))| / (c sqrt(d))`` (G = 1)."""
    if not c > 0:
        raise ValueError(f"c must be positive, got {c}")

    def loss_fn(x: Any, example: Any) -> Any:
        d = x.shape[-1]
        return jnp.sum(jnp.abs(jnp.sin(c * (x - example["x"])))) / (c * math.sqrt(d))

    return loss_fn


def loss_range(facts: Any) -> float:
    """The loss's range ``sqrt(d) / c`` from a cell's public facts (a ceiling).

    Each term ``|sin(.)| / (c sqrt(d))`` lies in ``[0, 1 / (c sqrt(d))]``, so
    ``f(x; z)`` and every (excess) risk lie in ``[0, sqrt(d) / c]``: the trivial
    ceiling of the risk measurements ([ceilings] in the spec; issue 26), tighter
    than ``G D = 2``.

    Examples:
        >>> from experiments.problems.net_em_rates import loss_range
        >>> loss_range({"d": 4, "config": {"loss": {"params": {"c": 4.0}}}})
        0.5
    """
    c = float(facts["config"]["loss"].get("params", {}).get("c", 4.0))
    return math.sqrt(float(facts["d"])) / c


def coordinate_risk(t: Any, *, c: float, sigma: float) -> np.ndarray:
    """``h(t) = E|sin(c (t - z))|``, ``z ~ N(0, sigma^2)``, by its Fourier series."""
    m = np.arange(1, NUM_TERMS + 1, dtype=np.float64)
    w = np.exp(-2.0 * m**2 * c**2 * sigma**2) / (4.0 * m**2 - 1.0)
    t = np.asarray(t, np.float64)
    return 2.0 / np.pi - (4.0 / np.pi) * np.cos(2.0 * c * t[..., None] * m) @ w


def population_risk(x: Any, *, c: float, sigma: float) -> float:
    """``F_P(x)`` in closed form."""
    x = np.asarray(x, np.float64)
    return float(coordinate_risk(x, c=c, sigma=sigma).sum() / (c * math.sqrt(x.size)))


def measure(execution: Any) -> dict[str, float]:
    """Excess risks of the released point and the spec's explicit-constant bounds."""
    cfg, report, problem = execution.config, execution.report, execution.problem
    x = np.asarray(execution.result.value, np.float64)
    n, d = np.shape(problem.data["x"])
    c = float(cfg["loss"].get("params", {}).get("c", 4.0))
    sigma = float(cfg["data"].get("params", {}).get("sigma", 0.125))
    info = report["info"]
    min_pop = math.sqrt(d) * float(coordinate_risk(0.0, c=c, sigma=sigma)) / c
    _, net_min = nets.net_minimum(problem, spacing=float(info["spacing"]))
    facts = {
        "lipschitz": float(problem.lipschitz),
        "diameter": 2.0 * float(cfg["domain"]["radius"]),
        "dim": d,
        "epsilon": float(cfg["privacy"]["epsilon"]),
        "n": n,
        "radius": float(info["covering_radius"]),
        "net_size": int(info["net_size"]),
        "inverse_temperature": float(info["inverse_temperature"]),
    }
    n2 = bounds.theorem_5_8_risk_bound(**facts)
    return {
        "excess_population_risk": population_risk(x, c=c, sigma=sigma) - min_pop,
        "excess_empirical_risk_over_net": float(problem.empirical_risk(x)) - net_min,
        "n1_bound": bounds.exponential_mechanism_excess_risk(
            facts["inverse_temperature"], n2.log_net_size
        ),
        "theorem_5_8_bound": n2.total,
        "bound_privacy_term": n2.covering + n2.exponential_mechanism,
        "bound_statistical_term": n2.generalization,
    }
