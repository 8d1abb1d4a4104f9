"""Empirical privacy audit of the net exponential mechanism (dpsample.nets).

Worst-case pair for the 1-D linear loss f(x; z) = -z x on K = [-1, 1], z in {-1, +1}:
osc_K(f(., 1) - f(., -1)) = osc(-2x) = 4 = 2 G D with G = 1, so the calibrated
inverse temperature is k = eps n / 4. With n = 3, D = (-1, -1, -1) and
D' = (+1, -1, -1), the default net is {-1, 0, 1} and the exact epsilon of the
best tail event is 0.66 (calibrated) and 1.56 when k is doubled (a false, halved
Lipschitz constant), with event probabilities >= 0.039 in both cases.
"""

import jax
import jax.numpy as jnp
import pytest

from dpsample import nets
from dpsample.domains import Ball
from dpsample.problem import Problem

audit_mod = pytest.importorskip("dpsample.privacy.audit")

EPS = 1.0
SEED = 515


def _loss(x, z):
    return -z["z"] * x[0]


def _problem(z, lipschitz):
    return Problem(_loss, {"z": jnp.asarray(z)}, Ball(1.0, dim=1), lipschitz=lipschitz)


def _audit(lipschitz):
    d = _problem([-1.0, -1.0, -1.0], lipschitz)
    d_prime = _problem([1.0, -1.0, -1.0], lipschitz)

    def mech(key, problem):
        return nets.exponential_mechanism(key, problem, epsilon=EPS).value[0]

    return audit_mod.audit(
        jax.random.key(SEED), mech, d, d_prime, num_samples=60_000, confidence=0.95
    )


def test_net_mechanism_passes_audit():
    res = _audit(lipschitz=1.0)
    assert res.epsilon_lower_bound <= EPS
    assert res.epsilon_lower_bound > 0.3  # the audit has teeth on this pair


def test_miscalibrated_net_mechanism_is_flagged():
    # Declaring G = 1/2 halves the sensitivity, i.e. doubles k: true epsilon ~ 1.56.
    res = _audit(lipschitz=0.5)
    assert res.epsilon_lower_bound > EPS
