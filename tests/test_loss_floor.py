"""Issue 25: the loss range made enforceable by a declared, located interval.

``loss_floor`` locates the declared ``loss_range`` ``B``: every per-example loss lies
in ``[loss_floor, loss_floor + B]`` on ``K``. Checked here:

* the floor is validated (finite, any sign; refused without ``loss_range``) on the
  Problem, the spec and a TOML ``[loss]``;
* every bundled loss that derives a floor has its declared interval hold on random
  points and data (``check_constants`` finds no violation), the interval is tight
  where the derivation says so, and ``check_constants`` flags a floor set too high
  (so the check has power);
* the net exponential mechanism with the range route ``2 B`` binding clips every
  per-example loss into the interval by default: the guarantee has no assumption and
  the score difference between two neighbours (one record 100x outside the interval)
  stays within ``2 B``; with ``enforce_sensitivity=False`` it does not;
* the quickstart's sampler stage (sigmoid loss, ``2 B = 2 < 2 G D = 8``) carries no
  assumption.
"""

from __future__ import annotations

import math
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from net_pairs import N, net_pair, score_oscillation

from dpsample import Ball, Budget, Problem, losses
from dpsample.config import ConfigError, build_spec, resolve_config
from dpsample.errors import MissingConstantError
from dpsample.nets import NetExponentialMechanism
from dpsample.nets.clipped import ConeClippedLoss, RangeClippedLoss
from dpsample.nets.stream import net_point, risk_batch
from dpsample.problem import ConstantViolationWarning, ProblemSpec

RADIUS = 2.0


# ----------------------------------------------------------------------- validation
def _scalar_problem(**constants):
    return Problem(lambda x, z: z * x[0], jnp.zeros(4), Ball(1.0, dim=1), **constants)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_floor_is_refused(bad):
    with pytest.raises(ValueError, match="loss_floor"):
        _scalar_problem(loss_range=1.0, loss_floor=bad)


def test_floor_without_range_is_refused_on_problem_and_spec():
    with pytest.raises(ValueError, match="without loss_range"):
        _scalar_problem(loss_floor=0.0)
    spec = _scalar_problem(loss_range=1.0, loss_floor=-0.5).spec
    with pytest.raises(ValueError, match="without loss_range"):
        spec.replace(loss_range=None)


def test_floor_of_any_sign_is_carried_and_printed():
    p = _scalar_problem(loss_range=2.0, loss_floor=-1.0)
    assert p.loss_floor == -1.0 and p.spec.loss_floor == -1.0
    assert p.replace(data=jnp.ones(3)).loss_floor == -1.0
    assert p.spec.with_data(jnp.ones(4)).loss_floor == -1.0
    assert "B=2, floor=-1" in p.spec.describe() and "loss_floor=-1.0" in repr(p)
    assert isinstance(p.spec, ProblemSpec)


def _config(**loss):
    return {
        "job": {"kind": "sampler", "name": "net"},
        "data": {"source": "synthetic", "kind": "classification", "n": 20, "d": 2},
        "loss": {"name": "sigmoid", **loss},
        "domain": {"kind": "ball", "radius": 1.0},
        "privacy": {"epsilon": 1.0, "delta": 1e-6},
    }


def test_config_derives_declares_and_refuses_the_floor():
    spec, facts = build_spec(resolve_config(_config()))
    assert spec.loss_floor == pytest.approx(1.0 / (1.0 + math.e))  # s(-F R)
    assert facts["constant_sources"]["loss_floor"] == "derived"
    spec, facts = build_spec(resolve_config(_config(loss_floor=-0.25)))
    assert spec.loss_floor == -0.25
    assert facts["constant_sources"]["loss_floor"] == "declared"
    # a declared range is not located by the derived floor
    spec, facts = build_spec(resolve_config(_config(loss_range=0.9)))
    assert spec.loss_floor is None and facts["constant_sources"]["loss_floor"] == "none"
    with pytest.raises(ConfigError, match="loss_floor"):
        resolve_config(_config(loss_floor=math.inf))
    # linear on R^d derives no range: a floor alone is refused
    bare = _config(loss_floor=0.0)
    bare["job"] = {"kind": "finder", "name": "dp_sgd"}
    bare["loss"]["name"], bare["domain"] = "linear", {"kind": "unconstrained"}
    with pytest.raises(ConfigError, match="declare \\[loss\\] loss_range"):
        build_spec(resolve_config(bare))


# --------------------------------------------------------------- the losses' floors
_LOSSES = {
    "logistic_nonconvex(0)": losses.logistic_nonconvex(reg=0.0),
    "logistic_nonconvex(1e-2)": losses.logistic_nonconvex(reg=1e-2),
    "sigmoid(0)": losses.sigmoid(),
    "sigmoid(1e-2)": losses.sigmoid(reg=1e-2),
    "tukey_biweight": losses.tukey_biweight(c=1.0),
    "welsch": losses.welsch(scale=1.0),
    "linear": losses.linear(),
    "squared": losses.squared(),
    "glm_logistic": losses.glm("logistic", feature_bound=1.0),
    "glm_sigmoid": losses.glm("sigmoid", feature_bound=1.0),
    "glm_robust_sin": losses.glm("robust_sin", a=0.5, h=1.0, feature_bound=1.0),
}
# losses whose interval is attained at both ends on the ball (the derivation's
# bounds are exact): (x = R a, y = +1) and (x = -R a, y = +1) for a unit a
_TIGHT = {
    "logistic_nonconvex(0)",
    "sigmoid(0)",
    "linear",
    "glm_logistic",
    "glm_sigmoid",
}


def _data(key, n=N, d=2):
    k1, k2 = jax.random.split(key)
    a = jax.random.normal(k1, (n, d))
    a = a / jnp.linalg.norm(a, axis=1, keepdims=True)
    y = jnp.where(jax.random.bernoulli(k2, 0.5, (n,)), 1.0, -1.0)
    return {"x": a, "y": y}


def _problem(name):
    loss = _LOSSES[name]
    consts = loss.constants(radius=RADIUS, dim=2)
    assert consts.loss_floor is not None and consts.loss_range is not None
    data = _data(jax.random.key(7))
    return Problem(loss.loss_fn, data, Ball(RADIUS, dim=2), **consts._asdict())


@pytest.mark.parametrize("name", list(_LOSSES))
def test_declared_interval_holds_on_random_points_and_data(name):
    prob = _problem(name)
    lo, hi = prob.loss_floor, prob.loss_floor + prob.loss_range
    # uniform points of the ball, and the extreme points aligned with each example
    a = prob.data["x"]
    points = jnp.concatenate(
        [
            Ball(RADIUS, dim=2).sample_uniform(jax.random.key(3), 64),
            RADIUS * a,
            -RADIUS * a,
        ]
    )
    values = jax.vmap(prob._per_example_losses, in_axes=(0, None))(points, prob.data)
    assert float(jnp.min(values)) >= lo - 1e-12 and float(jnp.max(values)) <= hi + 1e-12
    if name in _TIGHT:  # (x = +-R a, y = +1) attain both ends
        ex = {"x": a[0], "y": jnp.array(1.0)}
        ends = sorted(float(prob.loss_fn(s * RADIUS * a[0], ex)) for s in (1.0, -1.0))
        np.testing.assert_allclose(ends, [lo, hi], rtol=1e-12, atol=1e-15)


@pytest.mark.slow
def test_check_constants_finds_no_violation_of_any_declared_interval():
    for name in _LOSSES:
        prob = _problem(name)
        with warnings.catch_warnings():
            warnings.simplefilter("error", ConstantViolationWarning)
            report = prob.check_constants(jax.random.key(1), num_points=16)
        assert report["loss_floor"] <= 1.0 + 1e-6, name


@pytest.mark.parametrize("name", ["tukey_biweight", "welsch", "squared"])
def test_robust_floor_zero_is_attained(name):
    loss = _LOSSES[name]
    a = jnp.array([1.0, 0.0])
    # residual y - <a, x> = 0 at x = (y, 0)
    value = float(loss.loss_fn(jnp.array([0.5, 0.0]), {"x": a, "y": jnp.array(0.5)}))
    assert value == 0.0 == loss.constants(radius=RADIUS).loss_floor


def test_floors_need_their_range():
    # without a radius the ranges that grow with it are absent, and so the floors
    for loss in (losses.logistic_nonconvex(0.0), losses.linear(), losses.squared()):
        c = loss.constants()
        assert c.loss_range is None and c.loss_floor is None
    c = losses.sigmoid().constants()  # values in (0, 1) on all of R^d
    assert (c.loss_floor, c.loss_range) == (0.0, 1.0)
    custom = losses.Link("custom", lambda z, y: z, 1.0, 0.0, 0.0, lambda s, y: 1.0)
    assert losses.glm(custom, feature_bound=1.0).constants().loss_floor is None


@pytest.mark.slow
def test_check_constants_flags_a_floor_set_too_high():
    loss = losses.sigmoid()
    consts = loss.constants(radius=RADIUS)._asdict()
    consts["loss_floor"] += 0.05  # the low end of the values now falls below it
    prob = Problem(
        loss.loss_fn, _data(jax.random.key(7)), Ball(RADIUS, dim=2), **consts
    )
    with pytest.warns(ConstantViolationWarning, match="loss interval"):
        report = prob.check_constants(jax.random.key(1), num_points=16)
    assert report["loss_floor"] > 1.0 + 1e-6


# ------------------------------------------------------------------------------ net
# f(x, z) = s <w, x> on the unit ball of R^2, D = 2. Declared G = 1 (2 G D = 4), B =
# 0.5 located at [-0.25, 0.25] (2 B = 1 binds). Conforming records have s = 0.25; the
# neighbour's record 0 has s = -25, values up to 25: 100x outside the interval.
FLOOR, RANGE = -0.25, 0.5


def _pair(**constants):
    return net_pair(0.25, -25.0, **constants)


@pytest.mark.slow
def test_net_range_route_is_enforced_by_the_declared_interval():
    kw = dict(lipschitz=1.0, loss_range=RANGE, loss_floor=FLOOR)
    d_a, d_b = _pair(**kw)
    algo = NetExponentialMechanism()
    plan = algo.plan(d_a.spec, Budget(1.0, 0.0), spacing=0.25)
    osc = plan["sensitivity_oscillation"] * N
    assert osc == pytest.approx(2 * RANGE)  # the range route binds
    assert plan.guarantee.assumptions == ()
    assert "declared interval" in plan.params["enforce_sensitivity"].note
    clipped = plan.internal["clipped_loss"]
    assert clipped == RangeClippedLoss(d_a.loss_fn, FLOOR, RANGE)
    assert score_oscillation(plan, d_a, d_b) <= osc * (1 + 1e-9)
    # a conforming loss is unchanged by the clip
    net = plan.internal["net"]
    pts = jax.vmap(lambda i: net_point(net, i))(jnp.arange(net.num_candidates))
    np.testing.assert_array_equal(
        risk_batch(clipped, pts, d_a.data), risk_batch(d_a.loss_fn, pts, d_a.data)
    )
    # the opt-out runs the raw losses, states the located interval, and has power
    opt = algo.plan(d_a.spec, Budget(1.0, 0.0), spacing=0.25, enforce_sensitivity=False)
    (text,) = opt.guarantee.assumptions
    assert "[-0.25, 0.25]" in text and "enforce_sensitivity=False" in text
    assert opt.internal["clipped_loss"] is None
    assert score_oscillation(opt, d_a, d_b) > 10 * osc
    # end to end: the default runs the clipped scores
    res = algo.run(jax.random.key(0), plan, d_b.data)
    assert res.privacy is plan.guarantee and res.value.shape == (2,)


def test_net_without_floor_uses_an_enforced_route_or_the_labelled_opt_in():
    d_a, _ = _pair(lipschitz=1.0, loss_range=RANGE)
    algo = NetExponentialMechanism()
    plan = algo.plan(d_a.spec, Budget(1.0, 0.0), spacing=0.25)
    # the unlocated range (2 B = 1) is tighter than 2 G D but nothing enforces it:
    # the default runs the enforced cone route, unconditionally
    assert plan.guarantee.assumptions == ()
    assert isinstance(plan.internal["clipped_loss"], ConeClippedLoss)
    diameter = d_a.spec.domain.diameter
    assert plan["sensitivity_oscillation"] == pytest.approx(2 * diameter / d_a.n)
    # the opt-in uses the range and states it
    opt = algo.plan(d_a.spec, Budget(1.0, 0.0), spacing=0.25, enforce_sensitivity=False)
    (text,) = opt.guarantee.assumptions
    assert "loss_range B = 0.5" in text and "enforce_sensitivity=False" in text
    assert opt["sensitivity_oscillation"] == pytest.approx(2 * RANGE / d_a.n)
    # with nothing enforceable (no G, no floor) the default refuses, naming the fixes
    d_r, _ = _pair(lipschitz=None, loss_range=RANGE)
    with pytest.raises(MissingConstantError, match="enforce_sensitivity=False"):
        algo.plan(d_r.spec, Budget(1.0, 0.0), spacing=0.25)
    assert algo.plan(
        d_r.spec, Budget(1.0, 0.0), spacing=0.25, enforce_sensitivity=False
    ).guarantee.assumptions
    # when 2 G D is the tighter bound the cone clip runs, floor or not
    d_g, _ = _pair(lipschitz=0.1, loss_range=RANGE, loss_floor=FLOOR)
    plan = NetExponentialMechanism().plan(d_g.spec, Budget(1.0, 0.0), spacing=0.25)
    assert plan.guarantee.assumptions == ()
    assert isinstance(plan.internal["clipped_loss"], ConeClippedLoss)


def test_quickstart_sampler_stage_plans_without_an_assumption():
    from dpsample.cli import quickstart_config

    spec, _ = build_spec(resolve_config(quickstart_config()))
    assert 2 * spec.loss_range < 2 * spec.lipschitz * spec.domain.diameter
    plan = NetExponentialMechanism().plan(spec, Budget(1.0, 0.0))
    assert plan.guarantee.assumptions == ()
    assert isinstance(plan.internal["clipped_loss"], RangeClippedLoss)


@pytest.mark.slow
def test_quickstart_verdict_has_no_loss_range_assumption():
    from dpsample.cli import quickstart_config
    from dpsample.config import dry_run

    _, report = dry_run(resolve_config(quickstart_config()))
    privacy = report["privacy"]
    assert privacy["within_budget"] and privacy["verdict"].startswith("within budget")
    sampler = next(s for s in privacy["stages"] if s["name"] == "sampler")
    assert sampler["assumptions"] == []
    assert not any("loss_range" in a or "interval" in a for a in privacy["assumptions"])
