"""Issue 25, defect 3: declared constants enforced by default, second-order side.

Every check declares its constants 100x too small and compares two neighbouring
datasets (one record replaced by one 100x beyond the declared bounds) on what the
guarantee's sensitivity bounds, from the public plan: by default it stays within the
sensitivity; with the explicit opt-in ``enforce_sensitivity=False`` it exceeds it
(so each test has power) and the guarantee carries the assumption (conditional).

* DP-TR / DP-STR: the released noisy model (gradient and Hessian) of one iteration
  with the *same* key on both datasets: their difference is the statistics'
  difference, bounded by ``plan["grad_sensitivity"]`` / ``plan["hess_sensitivity"]``
  (the released point is not a Lipschitz function of the model, since the
  trust-region step has a hard case, so the model is the quantity compared).
* Goldstein: Mode B (clipping) is the default under both sizings; Mode A carries
  the declared ``L`` as an assumption.
* The net's exponential mechanism: the clipped score difference between the
  neighbours over the whole net stays within the oscillation the guarantee uses.
* Gibbs: projected Langevin's clipped drift difference stays within ``2 beta G/n``;
  the proximal and MALA routes, whose target no clip can change, state the
  declared constants they rest on.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from net_pairs import net_pair, score_oscillation

from dpsample import Ball, Budget, Problem, Unconstrained
from dpsample.finders.goldstein import GoldsteinZeroOrder, goldstein_theorem_parameters
from dpsample.finders.trust_region import DPStochasticTrustRegion, DPTrustRegion
from dpsample.finders.trust_region.step import noisy_model
from dpsample.nets import NetExponentialMechanism
from dpsample.nets.clipped import ConeClippedLoss, cone_clip_data
from dpsample.nets.stream import net_point, risk_batch
from dpsample.samplers import langevin
from dpsample.samplers.gibbs import Gibbs
from dpsample.samplers.target import GibbsTarget

DECLARED = 0.01  # every declared constant, 100x below the data's
N = 50
_MODEL = jax.jit(noisy_model, static_argnums=0)


# ------------------------------------------------------------------- trust region
def _tr_loss(x, z):
    # per-example gradient z["g"] + z["h"] * x, Hessian diag(z["h"]) (x-free)
    return jnp.dot(z["g"], x) + 0.5 * jnp.dot(z["h"], x * x)


def _tr_pair(n: int = N, declared: float = DECLARED):
    """Two replace-one neighbours on Unconstrained(2), constants 100x too small."""
    g = np.tile([1.0, 0.0], (n, 1))
    h = np.ones((n, 2))
    g2, h2 = g.copy(), h.copy()
    g2[0], h2[0] = [-100.0, 100.0], [100.0, -100.0]  # 100x beyond G_true = M_true = 1
    kw = dict(lipschitz=declared, smoothness=declared, hessian_lipschitz=1.0)
    dom = Unconstrained(2)
    return (
        Problem(_tr_loss, {"g": g, "h": h}, dom, loss_range=1.0, **kw),
        Problem(_tr_loss, {"g": g2, "h": h2}, dom, loss_range=1.0, **kw),
    )


def _model_gap(plan, d_a, d_b, data_slice=slice(None)):
    """|g~_D - g~_D'| and |triu(H~_D - H~_D')| of one iteration, same keys."""
    kg, kh = jax.random.split(jax.random.key(3))
    clips = plan.internal["clip_bounds"]
    clips = [None if c is None else jnp.float64(c) for c in clips]
    out = []
    for prob in (d_a, d_b):
        data = jax.tree.map(lambda leaf: jnp.asarray(leaf)[data_slice], prob.data)
        out.append(
            _MODEL(
                prob.loss_fn,
                jnp.zeros(2),
                data,
                data,
                kg,
                kh,
                jnp.float64(plan["sigma_grad"]),
                jnp.float64(plan["sigma_hess"]),
                *clips,
            )
        )
    (ga, ha), (gb, hb) = out
    rows, cols = np.triu_indices(2)
    dh = np.asarray(ha - hb)[rows, cols]
    return float(jnp.linalg.norm(ga - gb)), float(np.linalg.norm(dh))


@pytest.mark.slow
@pytest.mark.parametrize("algo", [DPTrustRegion(), DPStochasticTrustRegion()])
def test_trust_region_model_moves_within_the_planned_sensitivity(algo):
    d_a, d_b = _tr_pair()
    kw = {"num_iters": 3, "calibration": "paper"}
    batch = slice(None)
    if isinstance(algo, DPStochasticTrustRegion):
        kw = dict(
            num_iters=3, grad_batch_size=20, hessian_batch_size=20, accounting="strict"
        )
        batch = slice(0, 20)  # one batch holding the replaced record
    plan = algo.plan(d_a.spec, Budget(1.0, 1e-5), **kw)
    assert plan["enforce_sensitivity"] is True and plan.guarantee.assumptions == ()
    assert plan.internal["clip_bounds"] == (DECLARED, math.sqrt(2) * DECLARED)
    dg, dh = _model_gap(plan, d_a, d_b, batch)
    assert dg <= plan["grad_sensitivity"] * (1 + 1e-9)
    assert dh <= plan["hess_sensitivity"] * (1 + 1e-9)
    # The opt-in runs the paper's unclipped algorithm: the same comparison exceeds
    # both sensitivities (power) and the guarantee is conditional.
    opt = algo.plan(d_a.spec, Budget(1.0, 1e-5), enforce_sensitivity=False, **kw)
    (text,) = opt.guarantee.assumptions
    assert "not enforced: enforce_sensitivity=False" in text and "G = 0.01" in text
    dg_o, dh_o = _model_gap(opt, d_a, d_b, batch)
    assert dg_o > 100 * opt["grad_sensitivity"]
    assert dh_o > 100 * opt["hess_sensitivity"]


@pytest.mark.slow
def test_trust_region_clip_leaves_a_conforming_loss_alone():
    """k = p: a loss within the declared G and M gives the unclipped model."""
    good, _ = _tr_pair(declared=1.5)  # |grad| = 1, ||H||_op = 1 at x = 0
    kw = {"num_iters": 3, "calibration": "paper"}
    plan = DPTrustRegion().plan(good.spec, Budget(1.0, 1e-5), **kw)
    off = DPTrustRegion().plan(
        good.spec, Budget(1.0, 1e-5), enforce_sensitivity=False, **kw
    )
    a = _model_gap(plan, good, good)
    assert a == (0.0, 0.0)
    kg, kh = jax.random.split(jax.random.key(3))
    args = (good.loss_fn, jnp.zeros(2), good.data, good.data, kg, kh, 0.0, 0.0)
    g1, h1 = _MODEL(*args, *[jnp.float64(c) for c in plan.internal["clip_bounds"]])
    g0, h0 = _MODEL(*args, None, None)
    np.testing.assert_allclose(g1, g0, rtol=1e-12)
    np.testing.assert_allclose(h1, h0, rtol=1e-12)
    assert off.guarantee.assumptions and not plan.guarantee.assumptions


def test_trust_region_refuses_a_non_bool_opt_in():
    d_a, _ = _tr_pair()
    with pytest.raises(TypeError, match="Expected enforce_sensitivity to be a bool"):
        DPTrustRegion().plan(d_a.spec, Budget(1.0, 1e-5), enforce_sensitivity="no")


# ------------------------------------------------------------------------ Goldstein
@pytest.mark.parametrize("sizing", ["practical", "theory"])
def test_goldstein_enforced_by_default_under_both_sizings(sizing):
    kw = dict(
        n=1000, dim=2, epsilon=1.0, delta=1e-5, lipschitz=1.0, initial_gap=2.0,
        alpha=0.45, sizing=sizing,
    )  # fmt: skip
    p = goldstein_theorem_parameters(**kw)
    assert p["enforce_sensitivity"] and p["tv_slack"] == 0
    a = goldstein_theorem_parameters(**kw, enforce_sensitivity=False)
    assert not a["enforce_sensitivity"] and a["tv_slack"] > 0


@pytest.mark.slow
def test_goldstein_plan_mode_b_unconditional_mode_a_conditional():
    prob = Problem(
        lambda x, z: jnp.abs(x[0] - z) + jnp.abs(x[1]),
        jnp.zeros(400),
        Unconstrained(2),
        lipschitz=DECLARED,
        loss_range=1.0,
    )
    algo = GoldsteinZeroOrder()
    plan = algo.plan(prob.spec, Budget(1.0, 1e-5), sizing="theory", alpha=0.5)
    assert plan["enforce_sensitivity"] is True
    assert plan.source("enforce_sensitivity") == "default"
    assert plan.guarantee.assumptions == ()
    opt = algo.plan(
        prob.spec,
        Budget(1.0, 1e-5),
        sizing="theory",
        alpha=0.5,
        enforce_sensitivity=False,
    )
    (text,) = opt.guarantee.assumptions
    assert "lipschitz L = 0.01" in text and "not enforced" in text


# ----------------------------------------------------------------------------- net
@pytest.mark.slow
def test_net_score_difference_within_the_oscillation_the_guarantee_uses():
    d_a, d_b = net_pair(lipschitz=DECLARED)
    algo = NetExponentialMechanism()
    plan = algo.plan(d_a.spec, Budget(1.0, 0.0), spacing=0.25)
    assert plan["enforce_sensitivity"] is True and plan.guarantee.assumptions == ()
    osc = plan["sensitivity_oscillation"] * N  # 2 G D
    assert osc == pytest.approx(2 * DECLARED * 2.0)
    assert score_oscillation(plan, d_a, d_b) <= osc * (1 + 1e-9)
    opt = algo.plan(d_a.spec, Budget(1.0, 0.0), spacing=0.25, enforce_sensitivity=False)
    (text,) = opt.guarantee.assumptions
    assert "G-Lipschitz" in text and "not enforced" in text
    assert score_oscillation(opt, d_a, d_b) > 100 * osc
    # End to end: the default runs the clipped scores.
    res = algo.run(jax.random.key(0), plan, d_b.data)
    assert res.privacy is plan.guarantee and res.value.shape == (2,)


@pytest.mark.slow
def test_net_leaves_a_conforming_loss_alone_and_states_a_loss_range():
    d_a, _ = net_pair(lipschitz=1.0)
    plan = NetExponentialMechanism().plan(d_a.spec, Budget(1.0, 0.0), spacing=0.25)
    clipped = plan.internal["clipped_loss"]
    net = plan.internal["net"]
    pts = jax.vmap(lambda i: net_point(net, i))(jnp.arange(net.num_candidates))
    np.testing.assert_array_equal(
        risk_batch(clipped, pts, cone_clip_data(clipped, d_a.data)),
        risk_batch(d_a.loss_fn, pts, d_a.data),
    )
    # A loss range below G D that no per-example clip enforces (its interval is not
    # located) is not used by default: the enforced 2 G D route runs, unconditional;
    # the opt-in uses the range and states it.
    ranged, _ = net_pair(lipschitz=1.0, loss_range=0.5)
    p = NetExponentialMechanism().plan(ranged.spec, Budget(1.0, 0.0), spacing=0.25)
    assert p.guarantee.assumptions == ()
    assert isinstance(p.internal["clipped_loss"], ConeClippedLoss)
    opt = NetExponentialMechanism().plan(
        ranged.spec, Budget(1.0, 0.0), spacing=0.25, enforce_sensitivity=False
    )
    (text,) = opt.guarantee.assumptions
    assert "loss_range B = 0.5" in text and "not enforced" in text


# ---------------------------------------------------------------------------- Gibbs
def _gibbs_pair():
    z = np.zeros(N)
    z2 = z.copy()
    z2[0] = 1.0
    dom = Ball(1.0, dim=1)
    return (
        Problem(lambda x, s: 100.0 * jnp.abs(x[0] - s), z, dom, lipschitz=DECLARED),
        Problem(lambda x, s: 100.0 * jnp.abs(x[0] - s), z2, dom, lipschitz=DECLARED),
    )


@pytest.mark.slow
def test_langevin_clipped_drift_within_the_trajectory_sensitivity():
    d_a, d_b = _gibbs_pair()
    plan = Gibbs().plan(
        d_a.spec, Budget(1.0, 1e-5), method="langevin", beta=50.0, mu=0.0
    )
    assert plan.guarantee.assumptions == ()
    g = plan["clip_norm"]
    assert g == DECLARED
    x = jnp.array([0.5])
    drifts = [
        langevin.potential_gradient(GibbsTarget.create(p, beta=50.0, mu=0.0), x,
                                    clip_norm=g)
        for p in (d_a, d_b)
    ]  # fmt: skip
    bound = 50.0 * 2 * g / N
    assert float(jnp.linalg.norm(drifts[0] - drifts[1])) <= bound * (1 + 1e-9)
    raw = [
        langevin.potential_gradient(GibbsTarget.create(p, beta=50.0, mu=0.0), x)
        for p in (d_a, d_b)
    ]
    assert float(jnp.linalg.norm(raw[0] - raw[1])) > 100 * bound


def test_gibbs_mala_states_the_unenforceable_constants():
    """By default the target's bound is enforced by clipping the loss values: only
    the declared tv_bound is assumed; the opt-in also states G-Lipschitz."""
    d_a, _ = _gibbs_pair()
    kw = dict(method="mala", beta=50.0, tv_bound=1e-7)
    plan = Gibbs().plan(d_a.spec, Budget(1.0, 1e-5), **kw)
    (text,) = plan.guarantee.assumptions
    assert "MALA is within total variation" in text
    plan = Gibbs().plan(d_a.spec, Budget(1.0, 1e-5), enforce_sensitivity=False, **kw)
    texts = plan.guarantee.assumptions
    assert any("MALA is within total variation" in t for t in texts)
    assert any("G-Lipschitz" in t and "not enforced" in t for t in texts)


def test_gibbs_proximal_states_the_unenforceable_constants():
    """The proximal route's RGO's TV slack rests on G-Lipschitz, which no clip
    enforces: stated. Its target bound ('pure': 2 G D) is enforced by the cone clip
    of the loss values by default, and stated too with enforce_sensitivity=False."""
    d_a, _ = _gibbs_pair()
    plan = Gibbs().plan(d_a.spec, Budget(1.0, 1e-3), beta=20.0)
    assert plan["bound"] == "pure"
    (text,) = plan.guarantee.assumptions
    assert "G = 0.01" in text and "not enforced" in text and "RGO" in text
    plan = Gibbs().plan(
        d_a.spec, Budget(1.0, 1e-3), beta=20.0, enforce_sensitivity=False
    )
    texts = plan.guarantee.assumptions
    assert len(texts) == 2
    assert all("G = 0.01" in t and "not enforced" in t for t in texts)
    assert any("RGO" in t for t in texts)
