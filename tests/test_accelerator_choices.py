"""The choices dpsample makes by device (issue 27, goal 6; docs/gpu.md).

Each reads public values only (the backend, the loss's type, batch and dimension)
and changes speed, never a guarantee: the clipping path of the first-kind oracle and
the net mechanism's default chunk. The net check of a caller's net held on a device
runs there (two scalars come back), with the same verdicts as the host check.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dpsample
from dpsample._src.clipping import GHOST_ABOVE_VALUES, resolve_clipping
from dpsample.domains import Ball, Unconstrained
from dpsample.finders.oracles import first_kind
from dpsample.models import MLP
from dpsample.nets import PointNet, check_net_in_ball, exponential_mechanism
from dpsample.nets.stream import CHUNK_LIMITS, auto_chunk_size, chunk_rule


def _mlp_problem(rows: int = 32):
    net = MLP((4, 8, 3), activation="tanh", head="cross_entropy")
    rng = np.random.default_rng(0)
    data = {
        "x": jnp.asarray(rng.normal(size=(rows, 4))),
        "y": jnp.asarray(rng.integers(0, 3, size=rows)),
    }
    prob = dpsample.Problem(net, data, Unconstrained(net.dim), lipschitz=5.0)
    return net, prob


# ------------------------------------------------------------------ clipping path
def test_the_clipping_rule_by_backend_and_size():
    net = MLP((64, 64, 10))
    assert resolve_clipping(net, "auto", 256, net.dim, "cpu") == "ghost"
    assert resolve_clipping(net, "auto", 256, net.dim, "gpu") == "per_example"
    rows = GHOST_ABOVE_VALUES // net.dim
    assert resolve_clipping(net, "auto", rows, net.dim, "gpu") == "per_example"
    assert resolve_clipping(net, "auto", rows + 1, net.dim, "gpu") == "ghost"
    assert resolve_clipping(net, "auto", 10**6, net.dim, "tpu") == "ghost"
    # a loss without a ghost path is per-example on every backend
    for backend in ("cpu", "gpu"):
        assert resolve_clipping(lambda x, z: x, "auto", 10**6, 10**6, backend) == (
            "per_example"
        )
    # an explicit choice is kept, on any backend
    assert resolve_clipping(net, "per_example", 256, net.dim, "cpu") == "per_example"
    assert resolve_clipping(net, "ghost", 256, net.dim, "gpu") == "ghost"


def test_bad_clipping_choices_are_refused_before_any_computation():
    _, prob = _mlp_problem()
    with pytest.raises(ValueError, match="clipping in"):
        first_kind(prob, noise_multiplier=1.0, clipping="fast")
    quad = dpsample.Problem(
        lambda x, z: jnp.sum((x - z) ** 2),
        jnp.zeros((8, 2)),
        Ball(1.0, dim=2),
        lipschitz=4.0,
    )
    with pytest.raises(ValueError, match="no ghost path|has none"):
        first_kind(quad, noise_multiplier=1.0, clipping="ghost")


def test_both_paths_clip_at_one_bound_with_one_guarantee():
    net, prob = _mlp_problem()
    theta = net.init(jax.random.key(0))
    ghost = first_kind(prob, noise_multiplier=1.0, clip_norm=0.05, clipping="ghost")
    per_example = first_kind(
        prob, noise_multiplier=1.0, clip_norm=0.05, clipping="per_example"
    )
    assert (ghost.clipping, per_example.clipping) == ("ghost", "per_example")
    default = first_kind(prob, noise_multiplier=1.0, clip_norm=0.05)
    assert default.clipping == resolve_clipping(net, "auto", 32, net.dim)
    # the same public record: bound, sensitivity, noise, guarantee
    assert ghost.contribution_bound == per_example.contribution_bound
    assert ghost.sensitivity == per_example.sensitivity
    assert ghost.noise_std == per_example.noise_std
    d = 1e-6
    assert ghost.guarantee.epsilon(d) == per_example.guarantee.epsilon(d)
    # the margins are each path's own, both just below the bound
    for o in (ghost, per_example):
        assert 0.99 < o.clip_bound / o.contribution_bound < 1.0
    # the same clipped mean up to rounding (the clip binds: 0.05 is small here)
    key = jax.random.key(1)
    a = np.asarray(ghost.mean_fn(key, theta))
    b = np.asarray(per_example.mean_fn(key, theta))
    np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
    assert np.linalg.norm(a) <= ghost.contribution_bound + 1e-12


# ------------------------------------------------------------------ net chunks
def test_the_default_chunk_by_backend():
    assert auto_chunk_size(569, 10**7, "cpu") == 4096
    assert auto_chunk_size(569, 10**7, "gpu") == 262144
    assert auto_chunk_size(569, 10**7, "gpu") == auto_chunk_size(569, 10**7, "tpu")
    for backend, (size, values) in (
        ("cpu", CHUNK_LIMITS["cpu"]),
        ("gpu", CHUNK_LIMITS["accelerator"]),
    ):
        for n in (1, 100, 569, 10**4, 10**6):
            c = auto_chunk_size(n, 10**9, backend)
            assert c <= size and (c * n <= values or c == 256)
            assert c == size or 2 * c * n > values  # as large as the rule allows
    assert chunk_rule("cpu") == "<= 65536, chunk x n <= 4M values"


# ------------------------------------------------------------------ net check
def test_a_net_on_a_device_is_checked_there_with_the_host_verdicts():
    ball = Ball(1.0, dim=3)
    rng = np.random.default_rng(0)
    pts = rng.normal(size=(50, 3))
    pts /= np.linalg.norm(pts, axis=1, keepdims=True)  # on the sphere: radius 1
    for points in (pts, jnp.asarray(pts)):
        check_net_in_ball(PointNet(points), ball)  # the boundary is inside
    out = pts * (1.0 + 1e-9)
    bad = pts.copy()
    bad[7, 1] = np.nan
    for points in (out, jnp.asarray(out)):
        with pytest.raises(ValueError, match="lie in the domain"):
            check_net_in_ball(PointNet(points), ball)
    for points in (bad, jnp.asarray(bad)):
        with pytest.raises(ValueError, match="finite"):
            check_net_in_ball(PointNet(points), ball)


def test_a_device_net_releases_what_the_host_net_releases():
    rng = np.random.default_rng(1)
    a = rng.normal(size=(40, 3))
    a /= np.maximum(1.0, np.linalg.norm(a, axis=1, keepdims=True))
    prob = dpsample.Problem(
        lambda x, z: jnp.logaddexp(0.0, -jnp.dot(x, z)),
        jnp.asarray(a),
        Ball(1.0, dim=3),
        lipschitz=1.0,
        loss_floor=0.0,
        loss_range=math.log1p(math.e),
    )
    pts = rng.normal(size=(600, 3)) * 0.5
    pts /= np.maximum(1.0, np.linalg.norm(pts, axis=1, keepdims=True))
    key = jax.random.key(2)
    host = exponential_mechanism(key, prob, epsilon=1.0, net=PointNet(pts))
    device = exponential_mechanism(
        key, prob, epsilon=1.0, net=PointNet(jnp.asarray(pts))
    )
    np.testing.assert_array_equal(np.asarray(host.value), np.asarray(device.value))
    assert host.privacy.epsilon(0.0) == device.privacy.epsilon(0.0)
