"""The domain rule: no finder or pipeline stage computes where the constants fail.

Declared constants hold on the problem's domain ``K`` only. Every finder, pipeline
stage and sampler refuses a start point outside ``K`` with a ``ValueError`` before any
private computation, and ``project=False`` on a ball is refused unless clipping bounds
every contribution. The audit reproduces the review's finding: a loss whose gradient is
bounded by ``G`` on ``K`` but not outside, started far outside ``K`` without clipping,
leaks far more than the claimed epsilon.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from audit_cases import (
    CASES,
    DOMAIN_LR,
    DOMAIN_STEPS,
    OUTSIDE_K,
    cubic_problem,
)

import dpsample
from dpsample.finders import dp_sgd, dp_spider
from dpsample.finders.goldstein import goldstein_first_order, goldstein_zero_order
from dpsample.finders.spider_sosp import plan_spider, stochastic_spider
from dpsample.pipelines import WarmStart, warm_start
from dpsample.pipelines.quasar import dp_sgd_quasar
from dpsample.plan import Budget
from dpsample.privacy import BudgetLedger
from dpsample.samplers import langevin, mala, proximal
from dpsample.samplers.target import GibbsTarget

DELTA = 1e-5
KEY = jax.random.key(0)


class _Armed:
    """A loss that raises once armed: any evaluation after arming is a computation
    on the data, so a refusal that comes first happened before any of it."""

    def __init__(self):
        self.armed = False

    def __call__(self, x, z):
        if self.armed:
            raise RuntimeError("the loss was evaluated: private computation started")
        return 0.5 * jnp.sum((x - z["c"]) ** 2)


def _ball_problem(loss=None, radius=1.0):
    data = {"c": np.linspace(-0.5, 0.5, 8)[:, None] * np.ones((1, 2))}
    return dpsample.Problem(
        _Armed() if loss is None else loss,
        data,
        dpsample.Ball(radius, dim=2),
        lipschitz=2.0,
        smoothness=1.0,
        hessian_lipschitz=1.0,
        loss_range=4.0,
    )


OUTSIDE = np.array([3.0, 0.0])  # ||x0|| = 3 > R = 1

EPS = {"epsilon": 1.0, "delta": DELTA}
SPIDER = {"num_steps": 4, "phase_length": 2, "variation_batch_size": 4}
GOLD = {"alpha": 0.2, "num_directions": 2, "enforce_sensitivity": True}
_STARTS = {
    "dp_sgd": lambda p, x0: dp_sgd(
        KEY, p, x0=x0, num_steps=3, batch_size=4, enforce_sensitivity=False, **EPS
    ),
    "dp_sgd_clipped": lambda p, x0: dp_sgd(
        KEY, p, x0=x0, num_steps=3, clip_norm=1.0, **EPS
    ),
    "dp_spider": lambda p, x0: dp_spider(
        KEY, p, x0=x0, enforce_sensitivity=False, **SPIDER, **EPS
    ),
    "dp_spider_clipped": lambda p, x0: dp_spider(
        KEY, p, x0=x0, project=False, **SPIDER, **EPS
    ),
    "goldstein_zero_order": lambda p, x0: goldstein_zero_order(
        KEY, p, x0=x0, **GOLD, **EPS
    ),
    "goldstein_first_order": lambda p, x0: goldstein_first_order(
        KEY, p, x0=x0, **GOLD, **EPS
    ),
    "dp_sgd_quasar": lambda p, x0: dp_sgd_quasar(
        KEY, p, quasar_convexity=1.0, failure_prob=0.1, x0=x0, num_steps=3, **EPS
    ),
    "langevin.init": lambda p, x0: langevin.init(x0, _target(p)),
    "proximal.init": lambda p, x0: proximal.init(x0, _target(p)),
    "mala.init": lambda p, x0: mala.init(x0, _target(p)),
}


def _target(problem):
    return GibbsTarget.create(problem, beta=1.0, mu=0.0)


@pytest.mark.parametrize("name", list(_STARTS))
def test_a_start_outside_k_is_refused_before_any_private_computation(name):
    p = _ball_problem()
    p.loss_fn.armed = True
    with pytest.raises(ValueError, match="domain K"):
        _STARTS[name](p, OUTSIDE)


def test_stochastic_spider_refuses_a_bounded_domain():
    """Algorithm 1 takes unconstrained, unclipped steps: constants on R^d only."""
    p = _ball_problem()
    p.loss_fn.armed = True
    with pytest.raises(ValueError, match="Unconstrained"):  # refused at plan time
        plan_spider(p, epsilon=1.0, delta=DELTA, num_iters=5)
    # A plan of the unconstrained twin does not make the Ball problem acceptable.
    twin = p.spec.replace(domain=dpsample.domains.Unconstrained(2))
    plan = plan_spider(twin, epsilon=1.0, delta=DELTA, num_iters=5)
    with pytest.raises(ValueError, match="Unconstrained"):
        stochastic_spider(KEY, p, plan, x0=np.zeros(2))


def test_a_start_in_k_is_unchanged_and_one_within_rounding_is_projected():
    p = _ball_problem(loss=lambda x, z: jnp.sum(x * z["c"]))
    inside = np.array([0.6, -0.8 + 1e-9])
    np.testing.assert_array_equal(p.spec.check_start(inside), inside)
    rounding = np.array([0.6, 0.8]) * (1.0 + 1e-12)
    got = np.asarray(p.spec.check_start(rounding))
    assert np.linalg.norm(got) <= 1.0
    np.testing.assert_allclose(got, [0.6, 0.8], rtol=1e-11)
    with pytest.raises(ValueError, match="domain K"):
        p.spec.check_start(np.array([0.6, 0.8]) * (1.0 + 1e-6))
    centred = dpsample.Problem(
        lambda x, z: jnp.sum(x * z),
        np.ones((3, 2)),
        dpsample.Ball(1.0, center=np.array([5.0, 5.0])),
    )
    np.testing.assert_array_equal(centred.spec.check_start([5.5, 5.5]), [5.5, 5.5])
    with pytest.raises(ValueError, match="domain K"):
        centred.spec.check_start(np.zeros(2))
    free = dpsample.Problem(
        lambda x, z: jnp.sum(x * z), np.ones((3, 2)), dpsample.domains.Unconstrained(2)
    )
    np.testing.assert_array_equal(free.spec.check_start([1e6, -1e6]), [1e6, -1e6])


@pytest.mark.parametrize("finder", ["dp_sgd", "dp_spider"])
def test_unprojected_runs_on_a_ball_need_clipping(finder):
    p = _ball_problem()
    p.loss_fn.armed = True
    kw = dict(epsilon=1.0, delta=DELTA, x0=np.zeros(2), project=False)
    if finder == "dp_sgd":
        fn, kw, clip = dp_sgd, kw | dict(num_steps=3, batch_size=4), {"clip_norm": 1.0}
    else:
        fn, clip = dp_spider, {}  # clipping is the default
        kw |= dict(num_steps=4, phase_length=2, variation_batch_size=4)
    with pytest.raises(ValueError, match="needs clipping"):
        fn(KEY, p, **kw, enforce_sensitivity=False)
    p.loss_fn.armed = False
    res = fn(KEY, p, **kw, **clip)  # clipping bounds every contribution: allowed
    assert res.info["projected"] is False
    free = dpsample.Problem(
        p.loss_fn,
        p.data,
        dpsample.domains.Unconstrained(2),
        lipschitz=2.0,
        smoothness=1.0,
        loss_range=4.0,
    )
    unclipped = fn(KEY, free, **kw, enforce_sensitivity=False)
    assert unclipped.value.shape == (2,)  # constants on R^d: allowed


def test_warm_start_refuses_an_unprojected_finder_before_stage_a():
    p = _ball_problem()
    ledger = BudgetLedger(epsilon=4.0, delta=DELTA)
    p.loss_fn.armed = True
    with pytest.raises(ValueError, match="needs clipping"):
        warm_start(
            KEY,
            p,
            epsilon=2.0,
            delta=DELTA,
            spacing=0.5,
            finder="dp_sgd",
            finder_options={
                "num_steps": 3,
                "project": False,
                "enforce_sensitivity": False,
            },
            ledger=ledger,
        )
    assert ledger.stages == []  # refused before anything was charged or computed
    # with clipping bounding every contribution, an unprojected finder stage plans
    for finder, clipping in (
        ("dp_sgd", {"clip_norm": 1.0}),
        ("dp_spider", {}),  # clipping is the default
    ):
        plan = WarmStart("net", finder).plan(
            p.spec,
            Budget(2.0, DELTA),
            sampler_options={"spacing": 0.5},
            finder_options={"num_steps": 3, "project": False, **clipping},
        )
        assert dict(plan.stages)["finder"]["project"] is False


# ------------------------------------------------------------------ the audit
# The pair (f(x, z) = z x^3 / 3 on K = [-1, 1], |f'| <= G = 1 on K only), the claim
# and dp_sgd's loop are defined once in tests/audit_cases.py, shared with the suite.
def test_audit_start_outside_k_leaks_far_beyond_the_claim_and_is_refused():
    """The review's finding: claimed epsilon 1, audited lower bound above 5.

    Without clipping, the sensitivity ``2G/n`` of the first noisy gradient holds at
    points of ``K`` only; at ``x0 = 10`` the per-example gradients are ``+-100``.
    The audited mechanism is dp_sgd's own loop (checked bit for bit against a call
    from a start in ``K``); on the code before the domain rule, dp_sgd ran it from
    ``x0 = 10`` and claimed epsilon 1. Now the same call is refused.
    """
    audit = CASES["dp_sgd_outside_k"].build()
    assert audit.claim <= 1.0
    assert audit.check().startswith("dp_sgd(x0=10) refused")  # and loop == dp_sgd
    assert not audit.released()
    leak = audit.run()
    assert leak.epsilon_lower_bound > 5.0, leak  # claim 1: the guarantee was false
    with pytest.raises(ValueError, match="domain K"):
        dp_sgd(
            jax.random.key(5),
            cubic_problem(1.0),
            epsilon=1.0,
            delta=DELTA,
            x0=jnp.array([OUTSIDE_K]),
            num_steps=DOMAIN_STEPS,
            learning_rate=DOMAIN_LR,
            sampling="full_batch",
            output="last",
        )


@pytest.mark.slow
def test_audit_start_in_k_stays_below_the_claim_and_flags_half_the_noise():
    """From the worst start in K (the boundary) the claim holds; the audit has power."""
    audit = CASES["dp_sgd_boundary_of_k"].build()
    honest = audit.run()
    assert 0.2 < honest.epsilon_lower_bound <= audit.claim <= 1.0, honest
    twin = audit.run(twin=True)  # z / 2
    assert twin.epsilon_lower_bound > 1.0, twin
