"""Empirical privacy audit of the whole warm-start pipeline's release, and the public
calibration memo it relies on for speed.

The audited release is the pair ``(x_0, x_priv)`` that
:func:`dpsample.pipelines.warm_start` publishes (``info["warm_start"]`` and
``value``), reduced to one scalar by :func:`dpsample.privacy.audit`'s default score
(projection onto the difference of the two datasets' mean outputs, estimated on the
selection half, so the evaluation half stays independent).

Worst-case neighbours. ``f(x; z) = -z x`` on ``K = [-1, 1]``, ``z in {-1, +1}``,
declared ``G = 1``, ``M = 1``, ``B = 2``: ``D = (-1, +1, -1)`` and
``D' = (+1, +1, -1)`` differ in one example, and the change attains every
sensitivity bound the pipeline uses: the utility difference ``F_D - F_D'`` oscillates
by ``osc/n = 2GD/n = 4/3`` over ``K`` (stage A's exponential mechanism), and the
anchor gradient ``-mean(z)`` moves by ``2G/n = 2/3`` (stage B's Gaussian anchors);
``F_D = x/3`` and ``F_D' = -x/3`` mirror each other, so the best event has a
probability near 1/2 under one dataset, which is what the audit measures best. The
net is the public grid ``{-1, 0, 1}`` (``spacing=1``); every other parameter is the
pipeline's default (here DP-SPIDER runs ``T = 1`` full-batch anchor step).

Claim audited: the pipeline's own ``res.privacy.epsilon(DELTA)`` at ``DELTA = 1e-5``
(~0.98 for ``epsilon=1``). Statistics: ``NUM_SAMPLES = 400`` runs per dataset (half
select the event, half evaluate it), one-sided Clopper-Pearson bounds at joint
confidence 0.95, so a correct pipeline yields ``lower bound <= claim`` except with
probability <= 0.05; the keys are fixed, so the outcome is deterministic.

Power: the same audit must flag a deliberately broken pipeline that claims the same
guarantee. The broken variant declares every constant 8x too small (``G = M = 1/8``,
``B = 1/4``; the data violate them): its accounting still reports the original
``(epsilon, delta)``, but the exponential mechanism runs 8x colder (inverse
temperature ``3`` instead of ``0.375``) and the Gaussian anchor noise is 8x too
small for the true sensitivity, i.e. both stages spend about 8x their budget (the
schedule ``T``, ``q`` is unchanged because ``L``, ``beta`` and ``psi`` all shrink by
8). Stage A alone then has ``Pr_D'[x_0 = 1] = 0.665`` vs ``Pr_D[x_0 = 1] = 0.090``
(log-ratio 2.0): with 200 evaluation runs per side the Clopper-Pearson bounds give a
lower bound of about 1.5 from ``x_0`` alone, above the claim, and the finder's
release adds to it. 400 runs per dataset thus suffice, and keep each audit near
30-40 s (one pipeline call costs ~0.05-0.1 s of host-side calibration and
accounting, with the calibration memo below). Not tuned to one key: with audit seeds
11 (the one used), 1, 2 and 3 the broken variant's lower bounds were 2.27, 1.42, 1.93
and 2.49 (claim 0.982) and the correct pipeline's were 0.0 each time.

The literal alternative "run both stages at 8x the budget" (``warm_start(...,
epsilon=8)``) is also flagged (lower bound 1.6 at 400 runs per dataset when tried),
but its per-call accounting of the composed eps-8 guarantee costs ~0.3-0.5 s, too slow
for this suite.
"""

import jax
import jax.numpy as jnp
import pytest
from audit_cases import WS_BREAK, warm_start_audit, warm_start_claim, warm_start_problem

import dpsample
from dpsample.finders import accounting, dp_spider
from dpsample.privacy import calibration as privacy_calibrate

# The pair, the release and the claim are defined once in tests/audit_cases.py
# (warm_start_*), shared with experiments/audit_suite.py.
EPSILON, DELTA = 1.0, 1e-5
NUM_SAMPLES = 400
BREAK_FACTOR = WS_BREAK


@pytest.mark.slow
def test_whole_pipeline_passes_audit_on_worst_case_neighbours():
    audit = warm_start_audit(scale=1.0, num_samples=NUM_SAMPLES)
    res = audit.run()
    assert audit.claim <= EPSILON
    assert res.num_eval == NUM_SAMPLES // 2
    assert res.epsilon_lower_bound <= audit.claim, res


@pytest.mark.slow
def test_audit_flags_a_pipeline_spending_8x_its_claimed_budget():
    audit = warm_start_audit(scale=BREAK_FACTOR, num_samples=NUM_SAMPLES)
    res = audit.run()
    # The broken pipeline reports the same guarantee as the correct one ...
    honest = warm_start_claim(warm_start_problem([-1.0, 1.0, -1.0]))
    assert audit.claim == pytest.approx(honest, rel=1e-9)
    # ... and the audit refutes it.
    assert res.epsilon_lower_bound > audit.claim, res


# ---- the public calibration memo (dpsample.finders.accounting) -----------------


def _quadratic(z):
    return dpsample.Problem(
        lambda x, e: 0.5 * jnp.sum((x - e["z"]) ** 2),
        {"z": jnp.asarray(z)[:, None]},
        dpsample.Ball(1.0, dim=1),
        lipschitz=2.0,
        smoothness=1.0,
        loss_range=2.0,
    )


@pytest.mark.slow
def test_calibration_memo_is_keyed_on_public_inputs_only():
    kw = {
        "epsilon": 1.5,
        "delta": DELTA,
        "x0": jnp.zeros(1),
        "num_steps": 6,
        "phase_length": 3,
        "variation_batch_size": 20,
    }
    a = dp_spider(jax.random.key(1), _quadratic(jnp.linspace(0, 0.5, 40)), **kw)
    # Other data and another key, same public inputs: the same calibration, served
    # from the memo (one shared guarantee instance).
    b = dp_spider(jax.random.key(2), _quadratic(jnp.linspace(-0.5, 0.2, 40)), **kw)
    assert a.info["noise_constant"] == b.info["noise_constant"]
    # one memoised calibration: the same components (each plan attaches its own
    # report context to a copy of the guarantee, so the guarantees are copies)
    assert a.privacy.components is b.privacy.components
    assert a.privacy.epsilon(DELTA) <= 1.5
    # Another public input (epsilon) gives another calibration.
    c = dp_spider(
        jax.random.key(1),
        _quadratic(jnp.linspace(0, 0.5, 40)),
        **{**kw, "epsilon": 3.0},
    )
    assert c.info["noise_constant"] < a.info["noise_constant"]
    assert c.privacy.epsilon(DELTA) <= 3.0


def test_memoised_coarse_epsilon_matches_the_accountant():
    n, b, z = 100, 10, 1.3
    m = accounting.poisson_max_batch(n, b / n)
    parts = [
        (
            lambda route: accounting.replace_one_event("full_batch", n, n, n, z, route),
            3,
        ),
        (lambda route: accounting.replace_one_event("poisson", n, b, m, z, route), 7),
    ]
    key = tuple((fn("rdp"), fn("pld"), k) for fn, k in parts)
    uncached = privacy_calibrate._coarse_epsilon(key, DELTA)
    assert accounting.coarse_epsilon(parts, DELTA) == uncached
    assert accounting.coarse_epsilon(parts, DELTA) == uncached  # a memo hit
    # The memo distinguishes every public input of the key.
    assert accounting.coarse_epsilon(parts, 1e-3) < uncached
    fewer = [(parts[0][0], 3), (parts[1][0], 6)]
    assert accounting.coarse_epsilon(fewer, DELTA) < uncached
