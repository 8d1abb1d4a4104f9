"""Neighbouring datasets for the net exponential mechanism's enforcement tests.

``f(x, z) = s <w, x>`` on the unit ball of ``R^2`` (``D = 2``), ``w = (1, 0)``: the
records have ``s = scale`` and the neighbour's record 0 has ``s = outlier``.
:func:`score_oscillation` measures, over the whole net of a plan, the oscillation of
``n (F~_D - F~_D')`` with the loss the plan runs (its clip, if any), the quantity
the guarantee's score sensitivity bounds.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from dpsample import Ball, Problem
from dpsample.nets.clipped import ConeClippedLoss, cone_clip_data
from dpsample.nets.stream import net_point, risk_batch

N = 50


def net_loss(x, z):
    return z["s"] * jnp.dot(z["w"], x)


def net_pair(scale: float = 1.0, outlier: float = -1e4, **constants):
    """Two replace-one neighbours of ``N`` records (record 0 replaced)."""
    w = np.tile([1.0, 0.0], (N, 1))
    s = np.full(N, scale)
    s2 = s.copy()
    s2[0] = outlier
    dom = Ball(1.0, dim=2)
    return (
        Problem(net_loss, {"w": w, "s": s}, dom, **constants),
        Problem(net_loss, {"w": w, "s": s2}, dom, **constants),
    )


def score_oscillation(plan, d_a, d_b) -> float:
    """osc over the net of n (F~_D - F~_D') with the loss the plan runs."""
    net = plan.internal["net"]
    pts = jax.vmap(lambda i: net_point(net, i))(jnp.arange(net.num_candidates))
    clipped = plan.internal["clipped_loss"]
    risks = []
    for prob in (d_a, d_b):
        if clipped is None:
            risks.append(risk_batch(prob.loss_fn, pts, prob.data))
        elif isinstance(clipped, ConeClippedLoss):
            risks.append(risk_batch(clipped, pts, cone_clip_data(clipped, prob.data)))
        else:
            risks.append(risk_batch(clipped, pts, prob.data))
    diff = N * (risks[0] - risks[1])
    return float(jnp.max(diff) - jnp.min(diff))
