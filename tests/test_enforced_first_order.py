"""Issue 25, defect 3: the first-order finders enforce their declared constants.

Every test declares a constant 100x too small for one record: the data are
``D`` (every record within the declared bounds) and ``D'`` (record 0 replaced by
one whose gradient is ``100 G``). With the **same key** on both, the released
points may differ only by what the guarantee's clipped sensitivity allows, derived
from the plan's public step sizes, batch sizes and clip bound; with the explicit
opt-out (``enforce_sensitivity=False``) the difference exceeds that bound (so each
test has power) and the guarantee says "conditional".

The losses make the bound exact. ``f(x, z) = -<z, x>`` has the per-example
gradient ``-z`` at every ``x``: on an unconstrained domain ``x_T(D) - x_T(D') =
-sum_t eta_t (m_t(D) - m_t(D'))`` for the same noise and batches, and each
clipped mean moves by at most ``2C/b_t``, so ``||x_T(D) - x_T(D')|| <= sum_t eta_t
2C / b_t`` (an average of iterates too). Before this change (cf86678) DP-SGD and
DP-SPIDER did not clip by default and fail these tests.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dpsample
from dpsample.domains import Ball, Unconstrained
from dpsample.finders import dp_sgd, dp_spider
from dpsample.finders.dp_sgd import DPSGD
from dpsample.finders.spider_sosp import plan_spider
from dpsample.plan import Budget

G = 1.0  # the declared Lipschitz bound
N, D = 8, 2
EPS, DELTA = 1.0, 1e-5
U = np.array([1.0, 0.0])


def _linear(domain, **constants):
    """``f(x, z) = -<z, x>``: D has ``z_0 = -G u`` (norm G); D' has ``100 G u``."""
    rng = np.random.default_rng(0)
    z = rng.uniform(-0.5, 0.5, (N, D))
    z[0] = -G * U
    z_far = z.copy()
    z_far[0] = 100.0 * G * U  # 100x the declared G
    make = lambda data: dpsample.Problem(  # noqa: E731
        lambda x, ex: -jnp.dot(ex, x), jnp.asarray(data), domain, **constants
    )
    return make(z), make(z_far)


def _shown_conditional(plan):
    """Whether a plan's printed guarantee lines say "conditional"."""
    return any(
        line.strip().startswith("guarantee:") and line.rstrip().endswith("conditional")
        for line in str(plan).splitlines()
    )


def _gap(a, b):
    return float(jnp.linalg.norm(jnp.asarray(a.value) - jnp.asarray(b.value)))


# ------------------------------------------------------------------------ DP-SGD
@pytest.mark.slow
@pytest.mark.parametrize("sampling", ["full_batch", "poisson"])
def test_dp_sgd_release_moves_by_at_most_the_clipped_sensitivity(sampling):
    p, q = _linear(Unconstrained(D), lipschitz=G)
    kw = dict(epsilon=EPS, delta=DELTA, num_steps=6, learning_rate=0.1)
    if sampling == "poisson":
        kw.update(sampling="poisson", batch_size=4)
    else:
        kw.update(sampling="full_batch")
    key = jax.random.key(3)
    a, b = dp_sgd(key, p, **kw), dp_sgd(key, q, **kw)
    assert a.info["mode"] == "clipped" and not a.privacy.conditional
    assert a.info["contribution_bound"] == G  # clip_norm defaulted to G
    eta, bsz, t = a.info["learning_rate"], a.info["batch_size"], a.info["num_steps"]
    bound = t * eta * 2.0 * G / bsz
    assert _gap(a, b) <= bound * (1 + 1e-9)

    # The opt-out trusts G: the same key moves the release far beyond the bound.
    a0 = dp_sgd(key, p, enforce_sensitivity=False, **kw)
    b0 = dp_sgd(key, q, enforce_sensitivity=False, **kw)
    assert a0.info["mode"] == "no_clipping" and a0.privacy.conditional
    assert any("not enforced" in s for s in a0.privacy.assumptions)
    assert _gap(a0, b0) > 10 * bound


def test_dp_sgd_opt_out_is_explicit_and_refuses_contradictions():
    p, _ = _linear(Ball(1.0, dim=D), lipschitz=G)
    kw = dict(epsilon=EPS, delta=DELTA, num_steps=3, learning_rate=0.1)
    with pytest.raises(ValueError, match="enforce_sensitivity=False"):
        dp_sgd(jax.random.key(0), p, clip_norm=0.5, enforce_sensitivity=False, **kw)
    with pytest.raises(TypeError, match="enforce_sensitivity"):
        dp_sgd(jax.random.key(0), p, enforce_sensitivity="no", **kw)
    with pytest.raises(ValueError, match="project=False"):
        dp_sgd(jax.random.key(0), p, project=False, enforce_sensitivity=False, **kw)
    plan = DPSGD(num_steps=3, learning_rate=0.1).plan(p.spec, Budget(EPS, DELTA))
    assert plan["clip_norm"] == G and plan.source("clip_norm") == "derived"
    assert not _shown_conditional(plan)
    trusted = DPSGD(num_steps=3, learning_rate=0.1, enforce_sensitivity=False).plan(
        p.spec, Budget(EPS, DELTA)
    )
    assert _shown_conditional(trusted) and "assuming:" in str(trusted)
    assert trusted.to_dict(estimate=False)["guarantee"]["conditional"]


@pytest.mark.slow
def test_dp_sgd_without_a_declared_g_needs_clip_norm():
    p, _ = _linear(Ball(1.0, dim=D))
    kw = dict(epsilon=EPS, delta=DELTA, num_steps=2, learning_rate=0.1)
    with pytest.raises(dpsample.errors.MissingConstantError, match="clip_norm"):
        dp_sgd(jax.random.key(0), p, **kw)
    res = dp_sgd(jax.random.key(0), p, clip_norm=G, **kw)
    assert not res.privacy.conditional


# --------------------------------------------------------------------- DP-SPIDER
@pytest.mark.slow
def test_dp_spider_release_moves_by_at_most_the_clipped_sensitivity():
    # smoothness M tiny: O2's noise std z2 M ||dw|| / b2 (it scales with the step,
    # which differs between D and D') is negligible next to the bound; the linear
    # loss's per-example differences are exactly zero on both datasets.
    p, q = _linear(Unconstrained(D), lipschitz=G, smoothness=1e-12)
    kw = dict(
        epsilon=EPS,
        delta=DELTA,
        num_steps=6,
        phase_length=3,
        learning_rate=0.1,
        variation_batch_size=4,
        output="last",
    )
    key = jax.random.key(4)
    a, b = dp_spider(key, p, **kw), dp_spider(key, q, **kw)
    assert a.info["clipped"] and not a.privacy.conditional
    assert a.info["sigma2"] * 1e3 < 1e-6
    # every step's estimate carries its phase's anchor: sum_t eta 2G / b1
    bound = kw["num_steps"] * kw["learning_rate"] * 2.0 * G / a.info.anchor_batch_size
    assert _gap(a, b) <= bound * (1 + 1e-6)

    a0 = dp_spider(key, p, enforce_sensitivity=False, **kw)
    b0 = dp_spider(key, q, enforce_sensitivity=False, **kw)
    assert not a0.info["clipped"] and a0.privacy.conditional
    assert _gap(a0, b0) > 10 * bound


# ------------------------------------------------------------------- SpiderSOSP
def _quadratic(**constants):
    """``f(x, z) = <z, x>^2 / 2``: gradient ``z <z, x>``, difference ``z <z, x - y>``.

    ``||z|| <= 1`` in D (so ``||grad|| <= ||x||`` and the difference ``<= ||x -
    y||``); D' replaces record 0 by ``10 u``: 100x the declared ``G`` at ``||x|| =
    1`` and 100x the declared ``M ||x - y||``.
    """
    rng = np.random.default_rng(1)
    z = rng.uniform(-0.5, 0.5, (N, D))
    z[0] = U
    z_far = z.copy()
    z_far[0] = 10.0 * U
    make = lambda data: dpsample.Problem(  # noqa: E731
        lambda x, ex: 0.5 * jnp.dot(ex, x) ** 2,
        jnp.asarray(data),
        Unconstrained(D),
        **constants,
    )
    return make(z), make(z_far)


@pytest.mark.slow
@pytest.mark.parametrize("enforce", [True, False])
def test_spider_sosp_oracles_move_by_at_most_their_sensitivity(enforce):
    consts = dict(lipschitz=G, smoothness=1.0, hessian_lipschitz=1.0, loss_range=1.0)
    p, q = _quadratic(**consts)
    plan = plan_spider(
        p.spec, epsilon=EPS, delta=DELTA, num_iters=5, enforce_sensitivity=enforce
    )
    assert plan.guarantee.conditional is not enforce
    assert plan["enforce_sensitivity"] is enforce
    o1, o2 = plan.internal["o1"], plan.internal["o2"]
    x, y, key = jnp.array([1.0, 0.0]), jnp.array([0.9, 0.0]), jax.random.key(5)
    gap1 = float(
        jnp.linalg.norm(
            o1.with_data(p).estimate_fn(key, x) - o1.with_data(q).estimate_fn(key, x)
        )
    )
    gap2 = float(
        jnp.linalg.norm(
            o2.with_data(p).estimate_fn(key, x, y)
            - o2.with_data(q).estimate_fn(key, x, y)
        )
    )
    if enforce:
        assert gap1 <= o1.sensitivity * (1 + 1e-9)
        assert gap2 <= float(o2.sensitivity(x, y)) * (1 + 1e-9)
    else:  # the declared constants are trusted and broken: power
        assert gap1 > 10 * o1.sensitivity
        assert gap2 > 10 * float(o2.sensitivity(x, y))


# ------------------------------------------------------- quasar_sgd and KL-Spider
def test_quasar_selection_utilities_keep_their_range_bound():
    from dpsample.pipelines.quasar import _risks

    p, q = _linear(Ball(1.0, dim=D), lipschitz=G, loss_range=2.0)
    osc = p.spec.utility_oscillation()  # min(2 G D, 2 B) = 4
    xs = jnp.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0]])  # candidates in K

    def spread(r_p, r_q):
        diff = np.asarray(r_p) - np.asarray(r_q)
        return float(diff.max() - diff.min())

    half = jnp.float64(0.5 * osc)
    enforced = spread(
        _risks(xs, p.data, half, loss_fn=p.loss_fn),
        _risks(xs, q.data, half, loss_fn=q.loss_fn),
    )
    assert enforced <= osc / N * (1 + 1e-12)
    trusted = spread(  # the plain means (no clip): the range bound breaks
        _risks(xs, p.data, jnp.inf, loss_fn=p.loss_fn),
        _risks(xs, q.data, jnp.inf, loss_fn=q.loss_fn),
    )
    assert trusted > 10 * osc / N


def test_quasar_and_kl_spider_plans_are_unconditional():
    from dpsample.pipelines import KLSpider, QuasarSGD

    p, _ = _linear(Ball(1.0, dim=D), lipschitz=G, smoothness=1.0, loss_range=2.0)
    qplan = QuasarSGD(quasar_convexity=1.0).plan(p.spec, Budget(EPS, DELTA))
    assert not qplan.guarantee.conditional
    assert qplan.stage("run")["clip_norm"] == G
    kplan = KLSpider(kl_gamma=1.0, kl_exponent=2.0).plan(p.spec, Budget(EPS, DELTA))
    assert not kplan.guarantee.conditional


# --------------------------------------------------------------------- warm start
@pytest.mark.slow
@pytest.mark.parametrize("finder", ["dp_sgd", "dp_spider"])
def test_warm_start_finder_stage_is_enforced_unless_opted_out(finder):
    from dpsample.pipelines import WarmStart

    p, _ = _linear(Ball(1.0, dim=D), lipschitz=G, smoothness=1.0, loss_range=2.0)
    opts = {"num_steps": 3, "learning_rate": 0.1}
    if finder == "dp_spider":
        opts.update(phase_length=3, variation_batch_size=4)
    plan = WarmStart(finder=finder, finder_options=opts).plan(
        p.spec, Budget(EPS, DELTA)
    )
    stage = plan.stage("finder")
    assert stage["enforce_sensitivity"] is True
    assert not plan.guarantee.conditional and not _shown_conditional(plan)
    opts["enforce_sensitivity"] = False
    trusted = WarmStart(finder=finder, finder_options=opts).plan(
        p.spec, Budget(EPS, DELTA)
    )
    assert trusted.guarantee.conditional and _shown_conditional(trusted)


# ------------------------------------------------------------------ dpsample run
@pytest.mark.slow
def test_dp_sgd_example_config_clips_at_the_declared_constant(tmp_path):
    from pathlib import Path

    from dpsample import cli

    example = Path(__file__).parents[1] / "examples" / "dp_sgd_synthetic.toml"
    report = cli.dry_run_config(str(example))
    params = report["plan"]["params"]
    g = report["problem"]["constants"]["lipschitz"]
    assert params["clip_norm"]["value"] == g and params["clip_norm"]["source"] == (
        "derived"
    )
    assert params["enforce_sensitivity"]["value"] is True
    assert not report["privacy"]["conditional"]
    assert "conditional" not in report["privacy"]["verdict"]
    assert "conditional" not in report["text"]  # nowhere in the printed plan
    # [options] enforce_sensitivity = false: the CLI path labels it conditional
    text = example.read_text().replace(
        "[options]\n", "[options]\nenforce_sensitivity = false\n", 1
    )
    opted = tmp_path / "opted_out.toml"
    opted.write_text(text)
    trusted = cli.dry_run_config(str(opted))
    assert trusted["plan"]["params"]["clip_norm"]["value"] is None
    assert trusted["privacy"]["conditional"]
    assert trusted["privacy"]["verdict"].startswith("within budget, conditional")
    assert trusted["text"].count(", conditional") == 1  # the plan's guarantee line


@pytest.mark.slow
@pytest.mark.parametrize("enforce", [True, False])
def test_warm_start_with_spider_sosp_finder(enforce):
    from dpsample.pipelines import WarmStart

    consts = dict(lipschitz=G, smoothness=1.0, hessian_lipschitz=1.0, loss_range=2.0)
    p, _ = _quadratic(**consts)
    plan = WarmStart(
        finder="spider_sosp",
        sampler_domain=Ball(1.0, dim=D),
        finder_options={"num_iters": 5, "enforce_sensitivity": enforce},
    ).plan(p.spec, Budget(EPS, DELTA))
    assert plan.stage("finder")["enforce_sensitivity"] is enforce
    assert plan.guarantee.conditional is not enforce
    assert _shown_conditional(plan) is not enforce
