"""Tests of dpsample.nets (grid/random nets, streamed exponential mechanism) and the
Theorem 5.8 calculators in dpsample.bounds."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from dpsample import bounds, nets
from dpsample.domains import Ball, Unconstrained
from dpsample.errors import MissingConstantError
from dpsample.problem import Problem

SEED = 20240607


def linear_loss(x, z):
    return -z["y"] * jnp.dot(z["x"], x)


def make_problem(n=20, dim=1, radius=1.0, center=None, seed=0, **consts):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(n, dim))
    a /= np.maximum(1.0, np.linalg.norm(a, axis=1, keepdims=True))
    y = rng.choice([-1.0, 1.0], size=n)
    consts.setdefault("lipschitz", 1.0)
    return Problem(
        linear_loss, {"x": a, "y": y}, Ball(radius, center, dim=dim), **consts
    )


def nearest_distance(queries, points):
    d2 = ((queries[:, None, :] - points[None, :, :]) ** 2).sum(-1)
    return np.sqrt(d2.min(axis=1))


# ----------------------------------------------------------------------- grid nets


@pytest.mark.parametrize(
    "dim,radius,center,spacing",
    [
        (1, 1.0, None, 0.3),
        (2, 1.0, None, 0.25),
        (2, 2.5, [1.0, -3.0], 0.7),
        (3, 1.0, [0.5, 0.0, -0.5], 0.4),
        (3, 0.3, None, 1.0),  # spacing larger than the ball
    ],
)
def test_grid_net_covers_ball(dim, radius, center, spacing):
    ball = Ball(radius, center, dim=dim)
    net = nets.grid_net(ball, spacing=spacing)
    pts = np.asarray(net.points())
    assert pts.shape == (net.size(), dim)
    assert bool(np.all(np.asarray(ball.contains(pts, atol=1e-12))))
    key_in, key_dir = jax.random.split(jax.random.key(SEED))
    inside = np.asarray(ball.sample_uniform(key_in, 3000))
    g = np.asarray(jax.random.normal(key_dir, (1000, dim)))
    boundary = ball.center_point + radius * g / np.linalg.norm(g, axis=1)[:, None]
    queries = np.concatenate([inside, np.asarray(boundary)])
    dist = nearest_distance(queries, pts)
    assert dist.max() <= net.covering_radius * (1 + 1e-12)
    assert net.covering_radius == pytest.approx(spacing * math.sqrt(dim) / 2)


@pytest.mark.parametrize(
    "dim,radius,spacing",
    [(1, 1.0, 0.1), (2, 1.0, 0.1), (2, 1.0, 1 / 3), (3, 1.0, 0.15), (4, 1.0, 0.5)],
)
def test_grid_net_size_exact(dim, radius, spacing):
    net = nets.grid_net(Ball(radius, dim=dim), spacing=spacing)
    m = net.half_width
    grid = np.stack(
        np.meshgrid(*[np.arange(-m - 2, m + 3)] * dim, indexing="ij"), -1
    ).reshape(-1, dim)
    reach = radius + spacing * math.sqrt(dim) / 2
    kept = np.linalg.norm(grid * spacing, axis=1) <= reach * (1 + 1e-12)
    assert net.size() == int(kept.sum())
    assert np.abs(grid[kept]).max() <= m
    # Row-compressed enumeration: every flat index is a net point, and the flat
    # order is the lexicographic order of the lattice coordinates.
    assert net.num_candidates == net.size()
    j, mask = net.lattice_index(jnp.arange(net.num_candidates))
    assert bool(mask.all())
    np.testing.assert_array_equal(np.asarray(j), grid[kept])
    # The row table is O((2m + 1)^(d - 1)), never O(size).
    assert net.num_rows <= (2 * m + 1) ** (dim - 1)
    assert net.prefixes.shape == (net.num_rows, dim - 1)
    assert net.prefixes.dtype == net.offsets.dtype == np.int64
    assert net.offsets[0] == 0 and net.offsets[-1] == net.size()
    assert net.size() <= nets.grid_net_size_bound(dim, radius, spacing)
    # Points are the projected lattice points, brute force.
    lattice = grid[kept] * spacing
    norms = np.linalg.norm(lattice, axis=1, keepdims=True)
    expected = lattice * np.minimum(1.0, radius / np.where(norms > 0, norms, 1.0))
    np.testing.assert_allclose(net.points(), expected, rtol=0, atol=1e-15)


def test_grid_net_one_dimension_is_one_row():
    net = nets.grid_net(Ball(1.0, [0.5], dim=1), spacing=0.25)
    assert net.num_rows == 1 and net.prefixes.shape == (1, 0)
    np.testing.assert_allclose(
        np.asarray(net.points())[:, 0], 0.5 + 0.25 * np.arange(-4, 5)
    )
    pts, mask = jax.jit(lambda n: n.chunk(0, 256))(net)
    assert int(mask.sum()) == 9 and pts.shape == (256, 1)


def test_grid_chunks_partition_the_net():
    net = nets.grid_net(Ball(1.0, [0.2, -0.1], dim=2), spacing=0.05)
    full_pts = net.points()
    chunk = 512
    chunk_fn = jax.jit(lambda i: net.chunk(i, chunk))
    num_chunks = -(-net.num_candidates // chunk)
    parts = [chunk_fn(i) for i in range(num_chunks)]
    pts = jnp.concatenate([p for p, _ in parts])
    mask = np.asarray(jnp.concatenate([m for _, m in parts]))
    assert int(mask.sum()) == net.size()
    assert mask[: net.size()].all() and not mask[net.size() :].any()  # tail padding
    np.testing.assert_allclose(pts[: net.size()], full_pts)


def test_grid_net_is_a_pytree_with_dynamic_table():
    net = nets.grid_net(Ball(1.0, dim=3), spacing=0.2)
    leaves, treedef = jax.tree_util.tree_flatten(net)
    assert [leaf.shape for leaf in leaves] == [(net.num_rows, 2), (net.num_rows + 1,)]
    again = jax.tree_util.tree_unflatten(treedef, leaves)
    assert again == net and hash(again) == hash(net)
    assert again.size() == net.size()
    # The table enters jitted code as an argument, not as a baked-in constant.
    jaxpr = jax.make_jaxpr(lambda n: n.chunk(0, 256))(net)
    assert all(np.size(c) < net.num_rows for c in jaxpr.consts)
    assert len(jaxpr.jaxpr.invars) == 2


def test_grid_net_row_table_cap():
    with pytest.raises(ValueError, match="row table"):
        nets.grid_net(Ball(1.0, dim=20), spacing=0.1)


def test_grid_net_bad_inputs():
    with pytest.raises(ValueError):
        nets.grid_net(Ball(1.0, dim=2), spacing=0.0)
    with pytest.raises(ValueError):
        nets.grid_net(Ball(1.0, dim=2), spacing=-1.0)
    with pytest.raises(ValueError):
        nets.grid_net(Unconstrained(2), spacing=0.1)
    with pytest.raises(ValueError):
        nets.grid_net(Ball(1.0), spacing=0.1)  # no dimension


def test_theorem_size_bound_holds_for_default_grid():
    # spacing = 2r/sqrt(d): the grid is no larger than the packing bound (1+2D/r)^d.
    for dim, ratio in [(1, 10.0), (2, 20.0), (3, 30.0)]:
        ball = Ball(1.0, dim=dim)
        r = ball.diameter / ratio
        net = nets.grid_net(ball, spacing=2 * r / math.sqrt(dim))
        assert net.covering_radius == pytest.approx(r)
        assert net.size() <= bounds.net_size_bound(
            diameter=ball.diameter, dim=dim, radius=r
        )


# ----------------------------------------------------------------------- random nets


def test_random_net_size_gives_a_cover():
    ball = Ball(1.0, dim=2)
    r = 0.5
    num = nets.random_net_size(ball, r, 0.05)
    assert num == math.ceil(8**2 * (2 * math.log(9) + math.log(20)))
    queries = np.asarray(nets.grid_net(ball, spacing=0.03).points())
    for i in range(2):
        net = nets.random_net(jax.random.key(SEED + i), ball, num)
        assert net.covering_radius is None
        assert nearest_distance(queries, np.asarray(net.points)).max() <= r
    assert nets.random_net_size(ball, 2.0, 0.05) == 1
    with pytest.raises(ValueError):
        nets.random_net_size(ball, r, 1.0)


# --------------------------------------------------------- the exponential mechanism


def test_defaults_follow_theorem_5_8():
    problem = make_problem(n=200, dim=2)
    eps = 0.5
    res = nets.exponential_mechanism(jax.random.key(SEED), problem, epsilon=eps)
    info = res.info
    d, n, diam = 2, 200, 2.0
    assert info["theorem_radius"] == pytest.approx(diam * d / (eps * n))
    assert info["covering_radius"] == pytest.approx(info["theorem_radius"])
    assert info["spacing"] == pytest.approx(2 * info["theorem_radius"] / math.sqrt(d))
    # E28: k = eps n / (2 G D), half the paper's eps n / (G D).
    assert info["inverse_temperature"] == pytest.approx(eps * n / (2 * 1.0 * diam))
    assert info["sensitivity_oscillation"] == pytest.approx(2 * 1.0 * diam / n)
    assert res.value.shape == (2,) and res.value.dtype == jnp.float64
    assert bool(problem.domain.contains(res.value))
    assert res.privacy.epsilon(0.0) == pytest.approx(eps)
    assert info["num_chunks"] * info["chunk_size"] >= info["num_candidates"]


def test_range_bound_sets_temperature_only_where_enforced_or_opted_in():
    problem = make_problem(n=50, dim=1, loss_range=0.5)  # 2B = 1 < 2GD = 4
    key = jax.random.key(0)
    # no loss_floor: the range cannot be clipped, so the enforced 2 G D route runs
    res = nets.exponential_mechanism(key, problem, epsilon=1.0)
    assert res.info["inverse_temperature"] == pytest.approx(1.0 * 50 / 4.0)
    assert res.privacy.assumptions == ()
    # the opt-in runs on the tighter declared (unenforced) range, labelled
    opt = nets.exponential_mechanism(
        key, problem, epsilon=1.0, enforce_sensitivity=False
    )
    assert opt.info["inverse_temperature"] == pytest.approx(1.0 * 50 / 1.0)
    assert len(opt.privacy.assumptions) == 1


def test_info_is_public():
    p1 = make_problem(n=60, dim=2, seed=1)
    p2 = make_problem(n=60, dim=2, seed=2)
    key = jax.random.key(SEED)
    i1 = nets.exponential_mechanism(key, p1, epsilon=1.0).info
    i2 = nets.exponential_mechanism(key, p2, epsilon=1.0).info
    assert i1 == i2


def test_risk_matches_problem():
    problem = make_problem(n=30, dim=2, center=[0.3, -0.2])
    net = nets.grid_net(problem.domain, spacing=0.3)
    pts = net.points()
    np.testing.assert_allclose(
        nets.stream.risk_batch(problem.loss_fn, pts, problem.data),
        problem.empirical_risk_batch(pts),
        rtol=1e-12,
        atol=1e-14,
    )


def test_chunk_size_invariance():
    problem = make_problem(n=40, dim=2, seed=3)
    net = nets.grid_net(problem.domain, spacing=0.03)  # ~3.5k points
    outs = []
    for i in range(4):
        key = jax.random.key(SEED + i)
        vals = [
            nets.exponential_mechanism(
                key, problem, epsilon=20.0, net=net, chunk_size=c
            ).value
            for c in (256, 768, 4096, None)
        ]
        for v in vals[1:]:
            np.testing.assert_array_equal(v, vals[0])
        outs.append(vals[0])
    assert len({tuple(np.asarray(o).tolist()) for o in outs}) > 1  # keys matter


def _empirical_vs_softmax(problem, net, inv_temps, num_keys, epsilon):
    pts = np.asarray(net.points()) if isinstance(net, nets.GridNet) else net.points
    pts = np.asarray(pts)
    keys = jax.random.split(jax.random.key(SEED), num_keys)

    def run(k):
        return nets.exponential_mechanism(k, problem, epsilon=epsilon, net=net).value

    out = np.asarray(jax.jit(jax.vmap(run))(keys))
    uniq, inverse = np.unique(pts.round(12), axis=0, return_inverse=True)
    idx = np.argmin(((out[:, None, :] - uniq[None]) ** 2).sum(-1), axis=1)
    assert np.allclose(out, uniq[idx], atol=1e-9)
    counts = np.bincount(idx, minlength=len(uniq))
    risk = np.asarray(problem.empirical_risk_batch(pts))
    pvalues = []
    for k in inv_temps:
        w = np.exp(-k * (risk - risk.min()))
        probs = np.bincount(inverse.ravel(), weights=w, minlength=len(uniq))
        probs /= probs.sum()
        keep = probs * num_keys >= 5  # pool cells with small expected counts
        obs = np.append(counts[keep], counts[~keep].sum())
        exp = np.append(probs[keep], probs[~keep].sum()) * num_keys
        if exp[-1] == 0:
            obs, exp = obs[:-1], exp[:-1]
        pvalues.append(stats.chisquare(obs, exp).pvalue)
    return pvalues


@pytest.mark.parametrize("dim,spacing,center", [(1, 0.25, None), (2, 0.6, [0.1, -0.2])])
def test_distribution_chi_square_with_power(dim, spacing, center):
    problem = make_problem(n=20, dim=dim, center=center, seed=5)
    eps = 1.0
    net = nets.grid_net(problem.domain, spacing=spacing)
    k = eps * problem.n / problem.utility_oscillation()
    p_right, p_double, p_half = _empirical_vs_softmax(
        problem, net, [k, 2 * k, k / 2], num_keys=20000, epsilon=eps
    )
    assert p_right > 1e-3
    assert p_double < 1e-3
    assert p_half < 1e-3


def test_point_net_distribution_with_duplicates():
    problem = make_problem(n=20, dim=1, seed=7)
    pts = jnp.array([[-1.0], [-0.5], [0.0], [0.5], [0.5], [1.0]])  # 0.5 twice
    net = nets.PointNet(pts)
    k = 1.0 * problem.n / problem.utility_oscillation()
    (p_right,) = _empirical_vs_softmax(problem, net, [k], num_keys=20000, epsilon=1.0)
    assert p_right > 1e-3


def test_large_epsilon_selects_net_minimiser():
    problem = make_problem(n=30, dim=2, seed=11)
    net = nets.grid_net(problem.domain, spacing=0.2)
    pts = np.asarray(net.points())
    best = pts[np.argmin(np.asarray(problem.empirical_risk_batch(pts)))]
    for i in range(3):
        res = nets.exponential_mechanism(
            jax.random.key(i), problem, epsilon=1e7, net=net
        )
        np.testing.assert_allclose(res.value, best)


# ------------------------------------------------ net_minimum (non-private diagnostic)


@pytest.mark.parametrize(
    "dim,spacing,center,chunk",
    [
        (1, 0.005, None, 256),
        (2, 0.07, [0.3, -0.2], 256),
        (3, 0.2, None, 512),
        (3, 0.2, None, None),
    ],
)
def test_net_minimum_matches_brute_force(dim, spacing, center, chunk):
    problem = make_problem(n=30, dim=dim, center=center, seed=23)
    net = nets.grid_net(problem.domain, spacing=spacing)
    assert net.size() > 256  # several chunks at the smallest chunk size
    pts = np.asarray(net.points())
    risk = np.asarray(problem.empirical_risk_batch(pts))
    point, value = nets.net_minimum(problem, net, chunk_size=chunk)
    assert isinstance(value, float)
    assert value == pytest.approx(risk.min(), rel=1e-12, abs=1e-14)
    np.testing.assert_allclose(point, pts[np.argmin(risk)])
    by_spacing = nets.net_minimum(problem, spacing=spacing, chunk_size=chunk)
    np.testing.assert_array_equal(by_spacing[0], point)


def test_net_minimum_point_net_and_array():
    problem = make_problem(n=20, dim=2, seed=29)
    pts = np.asarray(nets.random_net(jax.random.key(3), problem.domain, 700).points)
    risk = np.asarray(problem.empirical_risk_batch(pts))
    for net in (nets.PointNet(jnp.asarray(pts)), pts):
        point, value = nets.net_minimum(problem, net, chunk_size=256)
        np.testing.assert_allclose(point, pts[np.argmin(risk)])
        assert value == pytest.approx(risk.min(), rel=1e-12)


def test_net_minimum_is_the_large_epsilon_mechanism():
    problem = make_problem(n=40, dim=3, seed=31)
    net = nets.grid_net(problem.domain, spacing=0.15)
    point, _ = nets.net_minimum(problem, net)
    for i in range(3):
        res = nets.exponential_mechanism(
            jax.random.key(i), problem, epsilon=1e9, net=net, chunk_size=512
        )
        np.testing.assert_array_equal(res.value, point)


def test_net_minimum_default_net_is_the_mechanism_default():
    problem = make_problem(n=200, dim=2, seed=37)
    eps = 0.5
    info = nets.exponential_mechanism(jax.random.key(0), problem, epsilon=eps).info
    net = nets.grid_net(problem.domain, spacing=info["spacing"])
    default = nets.net_minimum(problem, epsilon=eps)
    explicit = nets.net_minimum(problem, net)
    np.testing.assert_array_equal(default[0], explicit[0])
    assert default[1] == explicit[1]
    with pytest.raises(ValueError, match="net=, spacing= or epsilon="):
        nets.net_minimum(problem)
    with pytest.raises(ValueError, match="not both"):
        nets.net_minimum(problem, net, spacing=0.5)
    with pytest.raises(ValueError, match="eps \\* n > d"):
        nets.net_minimum(problem, epsilon=0.001)
    with pytest.raises(ValueError, match="multiple"):
        nets.net_minimum(problem, net, chunk_size=100)
    with pytest.raises(ValueError, match="max_points"):
        nets.net_minimum(problem, spacing=0.01, max_points=1000)


def test_array_net_accepted_and_checked():
    problem = make_problem(n=10, dim=2)
    res = nets.exponential_mechanism(
        jax.random.key(0), problem, epsilon=1.0, net=np.zeros((4, 2))
    )
    assert res.info["net"] == "points" and res.info["net_size"] == 4
    with pytest.raises(ValueError, match="lie in the domain"):
        nets.exponential_mechanism(
            jax.random.key(0), problem, epsilon=1.0, net=np.full((4, 2), 2.0)
        )
    with pytest.raises(ValueError, match="dimension"):
        nets.exponential_mechanism(
            jax.random.key(0), problem, epsilon=1.0, net=np.zeros((4, 3))
        )
    other = nets.grid_net(Ball(2.0, dim=2), spacing=0.5)
    with pytest.raises(ValueError, match="different ball"):
        nets.exponential_mechanism(jax.random.key(0), problem, epsilon=1.0, net=other)


@pytest.mark.parametrize("eps", [0.0, -1.0, math.inf, math.nan])
def test_bad_epsilon(eps):
    with pytest.raises(ValueError):
        nets.exponential_mechanism(jax.random.key(0), make_problem(), epsilon=eps)


def test_bad_inputs():
    key = jax.random.key(0)
    problem = make_problem(n=20, dim=2)
    for spacing in (0.0, -0.1):
        with pytest.raises(ValueError):
            nets.exponential_mechanism(key, problem, epsilon=1.0, spacing=spacing)
    # eps n <= d: the theorem's net is trivial; allowed only with an explicit spacing.
    with pytest.raises(ValueError, match="eps \\* n > d"):
        nets.exponential_mechanism(key, problem, epsilon=0.1)
    res = nets.exponential_mechanism(key, problem, epsilon=0.1, spacing=0.5)
    assert res.info["theorem_radius"] is None
    with pytest.raises(ValueError, match="multiple"):
        nets.exponential_mechanism(key, problem, epsilon=1.0, chunk_size=100)
    with pytest.raises(ValueError, match="not both"):
        net = nets.grid_net(problem.domain, spacing=0.5)
        nets.exponential_mechanism(key, problem, epsilon=1.0, spacing=0.5, net=net)
    with pytest.raises(ValueError, match="max_points"):
        nets.exponential_mechanism(
            key, problem, epsilon=1.0, spacing=0.01, max_points=1000
        )
    no_consts = Problem(linear_loss, problem.data, Ball(1.0, dim=2), lipschitz=None)
    with pytest.raises(MissingConstantError):
        nets.exponential_mechanism(key, no_consts, epsilon=1.0)
    unbounded = Problem(linear_loss, problem.data, Unconstrained(2), loss_range=1.0)
    with pytest.raises(ValueError, match="Ball"):
        nets.exponential_mechanism(key, unbounded, epsilon=1.0, spacing=0.5)


def test_million_point_net_runs():
    problem = make_problem(n=16, dim=3, seed=13)
    res = nets.exponential_mechanism(
        jax.random.key(SEED), problem, epsilon=1.0, spacing=0.0161
    )
    assert 1_000_000 <= res.info["net_size"] <= 1_200_000
    assert res.info["num_chunks"] > 10
    assert bool(problem.domain.contains(res.value))


# ------------------------------------------------------------------- bounds (Thm 5.8)


def test_em_excess_risk_bounds_hold_exactly():
    rng = np.random.default_rng(SEED)
    for _ in range(50):
        size = int(rng.integers(1, 200))
        f = rng.normal(size=size) * rng.uniform(0.01, 10)
        k = float(rng.uniform(0.1, 50))
        w = np.exp(-k * (f - f.min()))
        excess = float(np.dot(w / w.sum(), f) - f.min())
        sharp = bounds.exponential_mechanism_excess_risk(k, math.log(size), sharp=True)
        tail = bounds.exponential_mechanism_excess_risk(k, math.log(size))
        assert excess <= sharp + 1e-12
        assert tail == pytest.approx(sharp + 1 / k)


def test_theorem_5_8_formulas():
    g, diam, d, eps, n = 2.0, 3.0, 2, 0.5, 400
    r = bounds.theorem_5_8_radius(diameter=diam, dim=d, epsilon=eps, n=n)
    assert r == pytest.approx(diam * d / (eps * n))
    log_p = d * math.log(1 + 2 * diam / r)
    assert math.log(
        bounds.net_size_bound(diameter=diam, dim=d, radius=r)
    ) == pytest.approx(log_p)
    b = bounds.theorem_5_8_risk_bound(
        lipschitz=g, diameter=diam, dim=d, epsilon=eps, n=n
    )
    assert b.covering == pytest.approx(g * r)
    assert b.exponential_mechanism == pytest.approx(
        2 * g * diam * (log_p + 1) / (eps * n)
    )
    assert b.generalization == pytest.approx(g * diam / 2 * math.sqrt(2 * log_p / n))
    assert b.total == pytest.approx(
        b.covering + b.exponential_mechanism + b.generalization
    )
    e = bounds.theorem_5_8_empirical_risk_bound(
        lipschitz=g, diameter=diam, dim=d, epsilon=eps, n=n, net_size=1000
    )
    assert e.generalization == 0.0 and e.log_net_size == pytest.approx(math.log(1000))
    e2 = bounds.theorem_5_8_empirical_risk_bound(
        lipschitz=g, diameter=diam, dim=d, epsilon=eps, n=n, inverse_temperature=10.0
    )
    assert e2.exponential_mechanism == pytest.approx((log_p + 1) / 10.0)
    with pytest.raises(ValueError):
        bounds.theorem_5_8_radius(diameter=diam, dim=3, epsilon=0.01, n=100)
    with pytest.raises(ValueError):
        bounds.theorem_5_8_risk_bound(
            lipschitz=g,
            diameter=diam,
            dim=d,
            epsilon=eps,
            n=n,
            net_size=5,
            log_net_size=1.0,
        )


def test_empirical_risk_within_theorem_bound():
    """Mean excess empirical risk of the mechanism is below G r + (log|P| + 1)/k."""
    problem = make_problem(n=100, dim=2, seed=17)
    eps = 1.0
    keys = jax.random.split(jax.random.key(SEED), 200)
    run = jax.vmap(lambda k: nets.exponential_mechanism(k, problem, epsilon=eps).value)
    out = np.asarray(jax.jit(run)(keys))
    info = nets.exponential_mechanism(keys[0], problem, epsilon=eps).info
    risks = np.asarray(problem.empirical_risk_batch(out))
    # F_D is linear: its minimum over the ball is -||mean(y a)|| R.
    w = np.mean(np.asarray(problem.data["y"])[:, None] * problem.data["x"], axis=0)
    excess = risks.mean() + np.linalg.norm(w)
    b = bounds.theorem_5_8_empirical_risk_bound(
        lipschitz=1.0,
        diameter=2.0,
        dim=2,
        epsilon=eps,
        n=100,
        net_size=info["net_size"],
    )
    sem = risks.std() / math.sqrt(len(risks))
    assert excess <= b.total + 3 * sem


def test_compiles_once_per_net_and_chunking():
    problem = make_problem(n=25, dim=2, seed=19)
    net = nets.grid_net(problem.domain, spacing=0.11)
    run = nets.exponential_mechanism
    run(jax.random.key(0), problem, epsilon=1.0, net=net)
    before = nets.stream.stream_argmax._cache_size()
    for i, eps in enumerate([1.0, 2.0, 0.5]):  # new keys and epsilons: no retrace
        run(jax.random.key(i + 1), problem, epsilon=eps, net=net)
    assert nets.stream.stream_argmax._cache_size() == before


def test_compute_budget_coarsens_the_theorem_net_and_refuses_a_fixed_one():
    import jax.numpy as jnp

    from dpsample import Ball, Budget, Problem
    from dpsample.nets import NetExponentialMechanism

    data = {"x": jnp.ones((100, 2)), "y": jnp.ones(100)}
    problem = Problem(
        lambda x, z: -z["y"] * jnp.dot(z["x"], x),
        data,
        Ball(1.0, dim=2),
        lipschitz=1.5,
    )
    algo = NetExponentialMechanism()
    free = algo.plan(problem.spec, Budget(1.0, 0.0))
    cap = free.cost.loss_evaluations // 4
    capped = algo.plan(problem.spec, Budget(1.0, 0.0, cap))
    assert capped.cost.loss_evaluations <= cap
    assert capped["spacing"] > free["spacing"]
    assert capped.params["net"].source == "derived"
    assert "max_evaluations" in capped.params["net"].note
    # the bounds are those of the net that runs (the same as asking for its spacing)
    same = algo.plan(problem.spec, Budget(1.0, 0.0), spacing=capped["spacing"])
    assert capped["net_size"] == same["net_size"] < free["net_size"]
    assert capped["risk_bound"] == same["risk_bound"]
    assert capped.warm_start.psi == same.warm_start.psi
    assert capped.guarantee.epsilon(0.0) == free.guarantee.epsilon(0.0)
    with pytest.raises(ValueError, match="max_evaluations"):
        algo.plan(problem.spec, Budget(1.0, 0.0, cap), spacing=free["spacing"])
    with pytest.raises(ValueError, match="max_evaluations"):
        algo.plan(problem.spec, Budget(1.0, 0.0, 10))
