"""KL-Spider, the KL* warm start (seed 003 §2.5; ``dpsample.pipelines.kl_spider``).

What is measured:

* the guarantee is recomputed from the schedule, release by release (``K`` anchors of
  sensitivity ``2L/n``, ``sum T_k`` variations of sensitivity ``Phi_k^(1/kappa) /
  (2 gamma n)``, with the noise recomputed from Menart's formulas at ``rho'``): the
  sum of their zCDP costs is the plan's, ``17 rho'/8``, and the plan's epsilon is
  within the budget and equal to the explicit composition of the per-release
  Gaussian guarantees (dp_accounting PLD);
* the private program does the same work whatever the data: one fixed-length scan
  (no while loop), the same jaxpr for two datasets, the same counts, while the
  number of unfrozen steps (a labelled non-private diagnostic) differs;
* bad input is refused before any loss evaluation;
* it composes in ``WarmStart`` with DP-SPIDER within the budget, by object and by
  registry name, and ``psi`` reaches the finder as its initial gap;
* (slow) on a 1-PL* quadratic the excess risk falls with epsilon and with ``n``
  (differences of at least three combined Monte Carlo standard errors over fixed
  keys) and no run exceeds ``psi``.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dpsample
from dpsample import registry
from dpsample.errors import MissingConstantError
from dpsample.pipelines import WarmStart, warm_start
from dpsample.pipelines.kl_spider import (
    KLSpider,
    _kl_spider_core,
    kl_spider,
)
from dpsample.plan import Budget
from dpsample.privacy import PrivacyGuarantee

GAMMA = 0.5**0.5  # 1-PL*: F - F* = ||grad F||^2 / 2, i.e. (1/sqrt(2), 2)-KL*
KL = {"kl_gamma": GAMMA, "kl_exponent": 2.0}
SPIDER = {"num_steps": 20, "phase_length": 5, "variation_batch_size": 64}


class _Counting:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, x, e):
        self.calls += 1
        return 0.5 * jnp.sum((x - e["z"]) ** 2)


def quadratic(n, d=1, *, centre=0.5, seed=0, loss=None, loss_range=None):
    """``|x - z|^2 / 2`` on ``Ball(1)``, ``z`` uniform in ``centre +- 0.2``: 1-PL*."""
    z = np.random.default_rng(seed).uniform(centre - 0.2, centre + 0.2, size=(n, d))
    big_l = 1.0 + (abs(centre) + 0.2) * math.sqrt(d)
    return dpsample.Problem(
        loss if loss is not None else (lambda x, e: 0.5 * jnp.sum((x - e["z"]) ** 2)),
        {"z": z},
        dpsample.Ball(1.0, dim=d),
        lipschitz=big_l,
        smoothness=1.0,
        loss_range=loss_range,
    )


def excess(problem, x):
    with jax.enable_x64(True):
        zbar = jnp.mean(jnp.asarray(problem.data["z"]), axis=0)
        return float(problem.empirical_risk(x) - problem.empirical_risk(zbar))


# ------------------------------------------------------------------ refusals
def test_bad_input_is_refused_before_any_loss_evaluation():
    counter = _Counting()
    prob = quadratic(200, loss=counter)
    spec = prob.spec
    counter.calls = 0  # the Problem checks its loss on one example when built
    algo = KLSpider()
    with pytest.raises(ValueError, match="kl_gamma"):
        algo.plan(spec, Budget(1.0, 1e-5))
    with pytest.raises(ValueError, match="kl_gamma"):
        algo.plan(spec, Budget(1.0, 1e-5), kl_exponent=2.0)
    with pytest.raises(ValueError, match="kl_exponent"):
        algo.plan(spec, Budget(1.0, 1e-5), kl_gamma=1.0)
    for kappa in (0.5, 0.999, 2.01, 3.0):
        with pytest.raises(ValueError, match=r"in \[1, 2\]"):
            algo.plan(spec, Budget(1.0, 1e-5), kl_gamma=1.0, kl_exponent=kappa)
    with pytest.raises(ValueError, match="kl_gamma"):
        algo.plan(spec, Budget(1.0, 1e-5), kl_gamma=-1.0, kl_exponent=2.0)
    for eps in (0.0, -1.0):
        with pytest.raises(ValueError, match="epsilon"):
            kl_spider(jax.random.key(0), prob, epsilon=eps, delta=1e-5, **KL)
    with pytest.raises(ValueError, match="delta"):
        algo.plan(spec, Budget(1.0, 0.0), **KL)
    with pytest.raises(ValueError, match="x0"):
        algo.plan(spec, Budget(1.0, 1e-5), x0=[1.5], **KL)
    with pytest.raises(ValueError, match="initial_gap"):
        algo.plan(spec, Budget(1.0, 1e-5), initial_gap=0.0, **KL)
    with pytest.raises(MissingConstantError, match="smoothness"):
        algo.plan(spec.replace(smoothness=None), Budget(1.0, 1e-5), **KL)
    free = spec.replace(domain=dpsample.Unconstrained(1))
    with pytest.raises(ValueError, match="Ball"):
        algo.plan(free, Budget(1.0, 1e-5), **KL)
    assert counter.calls == 0


# ------------------------------------------------------------------ accounting
def _recomputed_zcdp(plan):
    """``sum Delta^2 / (2 sigma^2)`` from the schedule's levels and step counts only."""
    s = plan.internal["schedule"]
    n, big_l, beta = plan.spec.n, plan.spec.lipschitz, plan.spec.smoothness
    gamma, kappa, rho = plan["kl_gamma"], plan["kl_exponent"], plan["rho_menart"]
    k = s.num_rounds
    sig_a = big_l * math.sqrt(k) / (n * math.sqrt(rho))
    total = k * (2 * big_l / n) ** 2 / (2 * sig_a**2)
    for phi, t in zip(s.levels, s.steps, strict=True):
        root = phi ** (1 / kappa)
        step = root / (4 * gamma * beta)
        delta_v = 2 * beta * step / n  # = root / (2 gamma n)
        assert math.isclose(delta_v, root / (2 * gamma * n), rel_tol=1e-12)
        sig_v = root * math.sqrt(t * k) / (gamma * n * math.sqrt(rho))
        total += t * delta_v**2 / (2 * sig_v**2)
    return total


def test_guarantee_is_the_sum_of_every_releases_zcdp_and_meets_the_budget():
    prob = quadratic(40_000)
    plan = KLSpider(**KL).plan(prob.spec, Budget(2.0, 1e-5))
    s = plan.internal["schedule"]
    rho = _recomputed_zcdp(plan)
    assert math.isclose(rho, plan.guarantee.zcdp_rho(), rel_tol=1e-9)
    assert math.isclose(rho, 17 / 8 * plan["rho_menart"], rel_tol=1e-9)
    assert rho <= plan["rho_total"]
    # Menart's extracted noise at rho' would spend 17/8 rho' (2x on the anchors)
    assert math.isclose(s.zcdp / s.rho, 2.125, rel_tol=1e-12)
    assert 0.99 * 2.0 <= plan.spent_epsilon() <= 2.0
    # the zCDP conversion is looser than the exact (PLD) composition, never tighter
    assert PrivacyGuarantee.zcdp(rho).epsilon(1e-5) >= plan.spent_epsilon()
    # every release is charged: K anchors, sum T_k variations, all T_k + 1 steps run
    assert plan.cost.gradient_evaluations == 40_000 * (s.num_rounds + 2 * sum(s.steps))
    assert plan.cost.steps == sum(t + 1 for t in s.steps)


def test_single_gaussian_equals_the_explicit_composition_of_releases():
    prob = quadratic(40_000)
    plan = KLSpider(kl_gamma=GAMMA, kl_exponent=1.0).plan(
        prob.spec, Budget(2.0, 1e-5), num_rounds=40, failure_prob=0.1
    )
    s = plan.internal["schedule"]
    assert len(set(s.steps)) > 1  # distinct variation noise levels
    g = PrivacyGuarantee.gaussian(s.anchor_noise / s.anchor_sensitivity).repeat(
        s.num_rounds
    )
    for t, sig, sens in zip(
        s.steps, s.variation_noise, s.variation_sensitivities, strict=True
    ):
        g = g.compose(PrivacyGuarantee.gaussian(sig / sens).repeat(t))
    assert math.isclose(g.zcdp_rho(), plan.guarantee.zcdp_rho(), rel_tol=1e-9)
    assert math.isclose(g.epsilon(1e-5), plan.spent_epsilon(), rel_tol=2e-3)
    assert plan.spent_epsilon() <= 2.0


def test_compute_cap_shrinks_the_rounds_and_keeps_a_valid_psi():
    prob = quadratic(40_000)
    free = KLSpider(**KL).plan(prob.spec, Budget(2.0, 1e-5))
    cap = free.cost.evaluations // 3
    capped = KLSpider(**KL).plan(prob.spec, Budget(2.0, 1e-5, max_evaluations=cap))
    assert capped.cost.evaluations <= cap
    assert capped["num_rounds"] < free["num_rounds"]
    assert "capped" in capped.params["num_rounds"].note
    assert capped.spent_epsilon() <= 2.0
    s = capped.internal["schedule"]
    assert capped.warm_start.psi == pytest.approx(min(s.levels[-1], math.inf))
    with pytest.raises(ValueError, match="max_evaluations"):
        KLSpider(**KL).plan(
            prob.spec,
            Budget(2.0, 1e-5, max_evaluations=cap),
            num_rounds=free["num_rounds"],
        )


# ------------------------------------------------------------------ threat model
def test_same_work_whatever_the_data():
    moving = quadratic(40_000, centre=0.5)
    still = quadratic(40_000, centre=0.0, seed=1)
    algo = KLSpider(diagnostics=True, **KL)
    plan = algo.plan(moving.spec, Budget(2.0, 1e-5))
    s = plan.internal["schedule"]
    args = (
        jnp.asarray(plan["x0"]),
        plan.internal["slots"],
        {"lipschitz": jnp.float64(1.7), "smoothness": jnp.float64(1.0)},
        dpsample.domains.projection_operands(moving.domain),
    )

    def jaxpr(data):
        with jax.enable_x64(True):
            return str(
                jax.make_jaxpr(
                    lambda key, dat: _kl_spider_core(
                        key, args[0], dat, *args[1:], loss_fn=moving.loss_fn
                    )
                )(jax.random.key(0), data)
            )

    a, b = jaxpr(moving.data), jaxpr(still.data)
    assert a == b
    assert "while" not in a and f"length={s.num_steps}" in a
    runs = [algo.run(jax.random.key(3), plan, p.data) for p in (moving, still)]
    infos = [r.info for r in runs]
    for field in ("num_steps", "anchor_releases", "variation_releases"):
        assert infos[0][field] == infos[1][field]
    assert infos[0]["gradient_evaluations"] == plan.cost.gradient_evaluations
    active = [r.info.diagnostics.active_steps for r in runs]
    assert active[0] > 0 == active[1]  # frozen early on one dataset, not the other
    assert all(a < s.num_steps for a in active)
    assert "diagnostics" not in dict(infos[0])


# ------------------------------------------------------------------ composition
def test_composes_in_warm_start_with_dp_spider_within_the_budget():
    prob = quadratic(2_000, d=2, loss_range=2.0)
    pipe = WarmStart(KLSpider(**KL), "dp_spider", finder_options=SPIDER, spend="split")
    plan = pipe.plan(prob.spec, Budget(2.0, 1e-5))
    assert plan.stage("sampler").algorithm == "kl_spider"
    assert plan.stage("finder").algorithm == "dp_spider"
    assert plan.spent_epsilon() <= 2.0
    composed = plan.stage("sampler").guarantee.compose(plan.stage("finder").guarantee)
    assert composed.epsilon(1e-5) == pytest.approx(plan.spent_epsilon())
    # n is too small for a certified level here: psi is the declared loss_range
    assert plan["psi"] == 2.0 == plan["finder_initial_gap"]


@pytest.mark.slow
def test_warm_start_runs_by_object_and_by_registry_name():
    prob = quadratic(2_000, d=2, loss_range=2.0)
    pipe = WarmStart(KLSpider(**KL), "dp_spider", finder_options=SPIDER, spend="split")
    plan = pipe.plan(prob.spec, Budget(2.0, 1e-5))
    res = pipe.run(jax.random.key(0), plan, prob.data)
    assert res.privacy is plan.guarantee
    assert res.info.sampler == "kl_spider"
    assert res.info.epsilon_total <= 2.0
    res2 = warm_start(
        jax.random.key(0),
        prob,
        epsilon=2.0,
        delta=1e-5,
        sampler="kl_spider",
        sampler_options=KL,
        finder="dp_spider",  # the default finder is DP-SGD since issue 24
        finder_options=SPIDER,
        spend="split",
    )
    np.testing.assert_array_equal(np.asarray(res2.value), np.asarray(res.value))
    assert res2.privacy.epsilon(1e-5) <= 2.0


def test_certified_psi_reaches_the_finder_as_its_initial_gap():
    prob = quadratic(200_000, d=2)
    pipe = WarmStart(KLSpider(**KL), "dp_spider", finder_options=SPIDER, spend="split")
    plan = pipe.plan(prob.spec, Budget(4.0, 1e-5))
    a = plan.stage("sampler")
    assert a["psi_source"] == "Phi_K (certified)"
    assert a.warm_start.psi == a.internal["schedule"].levels[-1]
    assert plan["finder_initial_gap"] == a.warm_start.psi < prob.lipschitz**2 / 2
    assert plan.spent_epsilon() <= 4.0


def test_registry_lists_it():
    entry = registry.get("kl_spider", "sampler")
    assert entry.cls is KLSpider
    options = {o.name for o in entry.options()}
    assert {"kl_gamma", "kl_exponent", "initial_gap", "x0"} <= options
    from dpsample.cli import list_algorithms

    assert "kl_spider" in {a["name"] for a in list_algorithms()["algorithms"]}


# ------------------------------------------------------------------ utility
def _excesses(prob, eps, seeds):
    algo = KLSpider(**KL)
    plan = algo.plan(prob.spec, Budget(eps, 1e-5))
    out = [
        excess(prob, algo.run(jax.random.key(s), plan, prob.data).value) for s in seeds
    ]
    return np.asarray(out), plan.warm_start.psi


def _separated(hi, lo):
    """``mean(hi) - mean(lo)`` over at least three combined standard errors."""
    se = math.sqrt(hi.var(ddof=1) / hi.size + lo.var(ddof=1) / lo.size)
    return hi.mean() - lo.mean() > 3 * max(se, 1e-12)


@pytest.mark.slow
def test_excess_risk_falls_with_epsilon_and_n_and_stays_below_psi():
    seeds = range(6)
    prob = quadratic(40_000, d=2)
    low, psi_low = _excesses(prob, 2.0, seeds)
    high, psi_high = _excesses(prob, 4.0, seeds)
    assert psi_high < psi_low
    assert _separated(low, high)
    big = quadratic(160_000, d=2)
    more, psi_more = _excesses(big, 2.0, seeds)
    assert psi_more < psi_low
    assert _separated(low, more)
    # psi fails w.p. sqrt(d)/(eps n) < 2e-5 a run: no exceedance among 18 runs
    assert (low <= psi_low).all() and (high <= psi_high).all()
    assert (more <= psi_more).all()
