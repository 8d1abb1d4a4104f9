"""Problem of the sweep engine's demo spec ``experiments/sweep_demo.toml``.

The linear loss ``f(x; a, y) = -y <a, x>`` on the ball ``K = {||x|| <= R}`` with
examples ``a = mu + (1 - ||mu||) v`` (``v`` uniform on the unit sphere, so
``||a|| <= 1`` and ``E a = mu``), labels ``y = 1`` and ``mu = mean_norm * e_1``. Then

* ``F_D(x) = -<abar, x>`` with ``abar`` the sample mean, ``min_K F_D = -R ||abar||``;
* ``F_P(x) = -<mu, x>`` in closed form, ``min_K F_P = -R ||mu||``.

``measure`` returns the excess empirical and population risks of the released point
(non-private diagnostics: they read the training data and the population) beside the
explicit-constant Theorem 5.8 bounds of :mod:`dpsample.bounds` evaluated at the net,
inverse temperature and constants the exponential mechanism actually used (public).
The loss is convex: the demo exercises the engine, not the non-convex theory.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from dpsample import bounds


def make(rng_key: Any, n: int, d: int, *, mean_norm: float = 0.5) -> dict[str, Any]:
    """``n`` examples in dimension ``d`` with population mean ``mean_norm * e_1``."""
    if not 0.0 <= mean_norm < 1.0:
        raise ValueError(f"mean_norm must lie in [0, 1), got {mean_norm}")
    v = jax.random.normal(rng_key, (n, d), jnp.float64)
    v = v / jnp.linalg.norm(v, axis=1, keepdims=True)
    mu = jnp.zeros(d, jnp.float64).at[0].set(mean_norm)
    return {"x": mu + (1.0 - mean_norm) * v, "y": jnp.ones(n, jnp.float64)}


def measure(execution: Any) -> dict[str, float]:
    """Excess risks of the released point and the Theorem 5.8 bounds of its run."""
    cfg, report, problem = execution.config, execution.report, execution.problem
    x = np.asarray(execution.result.value, np.float64)
    radius = float(cfg["domain"]["radius"])
    a = np.asarray(problem.data["x"], np.float64)
    n, d = a.shape
    abar = a.mean(axis=0)
    mu = np.zeros(d)
    mu[0] = cfg["data"].get("params", {}).get("mean_norm", 0.5)
    info = report["info"]
    net = {
        "lipschitz": float(problem.lipschitz),
        "diameter": 2.0 * radius,
        "dim": d,
        "epsilon": float(cfg["privacy"]["epsilon"]),
        "n": n,
        "radius": float(info["covering_radius"]),
        "net_size": int(info["net_size"]),
        "inverse_temperature": float(info["inverse_temperature"]),
    }
    return {
        "excess_empirical_risk": float(-abar @ x + radius * np.linalg.norm(abar)),
        "excess_population_risk": float(-mu @ x + radius * np.linalg.norm(mu)),
        "theorem_5_8_empirical": bounds.theorem_5_8_empirical_risk_bound(**net).total,
        "theorem_5_8_population": bounds.theorem_5_8_risk_bound(**net).total,
    }
