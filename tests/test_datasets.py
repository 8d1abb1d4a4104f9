import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from dpsample import datasets

KEY = jax.random.key(0)

SHAPES = {
    "breast_cancer": (569, 30),
    "iris": (150, 4),
    "wine": (178, 13),
    "diabetes": (442, 10),
    "digits": (1797, 64),
}


@pytest.mark.parametrize("name", datasets.SKLEARN_DATASETS)
def test_load_sklearn_shapes_norms_labels(name):
    data = datasets.load_sklearn(name)
    n, p = SHAPES[name]
    assert data["x"].shape == (n, p) and data["y"].shape == (n,)
    assert data["x"].dtype == jnp.float64 and data["y"].dtype == jnp.float64
    norms = np.linalg.norm(np.asarray(data["x"]), axis=1)
    # Unit rows (digits has no all-zero image).
    np.testing.assert_allclose(norms, 1.0, rtol=1e-12)
    if name == "diabetes":
        y = np.asarray(data["y"])
        assert y.min() >= 25 and y.max() <= 346 and len(np.unique(y)) > 2
    else:
        assert set(np.unique(np.asarray(data["y"]))) == {-1.0, 1.0}


@pytest.mark.parametrize("name", datasets.SKLEARN_DATASETS)
def test_recorded_metadata_match_the_loaders(name):
    """The public facts a dry run plans from are those of the data a run loads."""
    from sklearn import datasets as skd

    meta = datasets.SKLEARN_METADATA[name]
    bunch = getattr(skd, f"load_{name}")()
    assert bunch.data.shape == (meta.n, len(meta.feature_names))
    assert tuple(map(str, bunch.feature_names)) == meta.feature_names
    classes = () if name == "diabetes" else tuple(map(str, bunch.target_names))
    assert classes == meta.class_names
    for kw in ({}, {"features": [1, meta.feature_names[0]]}, {"add_bias": True}):
        loaded = datasets.load_sklearn(name, **kw)["x"].shape
        assert datasets.sklearn_shape(name, **kw) == loaded
    with pytest.raises(ValueError, match="Unknown feature"):
        datasets.sklearn_shape(name, features=["no such column"])


def test_binary_label_mapping():
    from sklearn.datasets import load_breast_cancer, load_iris

    bc = datasets.load_sklearn("breast_cancer")
    np.testing.assert_array_equal(
        np.asarray(bc["y"]), np.where(load_breast_cancer().target == 1, 1.0, -1.0)
    )
    target = load_iris().target
    iris = datasets.load_sklearn("iris", positive_class="virginica")
    np.testing.assert_array_equal(np.asarray(iris["y"]), np.where(target == 2, 1, -1))
    assert int((datasets.load_sklearn("iris")["y"] == 1).sum()) == 50
    with pytest.raises(ValueError, match="Unknown class"):
        datasets.load_sklearn("iris", positive_class="rose")


def test_feature_selection_bias_and_raw():
    from sklearn.datasets import load_iris

    raw = load_iris().data
    data = datasets.load_sklearn(
        "iris", features=[0, "petal width (cm)"], normalize_rows=False, add_bias=True
    )
    expected = np.column_stack([raw[:, 0], raw[:, 3], np.ones(150)])
    np.testing.assert_array_equal(np.asarray(data["x"]), expected)
    normed = datasets.load_sklearn("iris", features=[0, 3], add_bias=True)["x"]
    np.testing.assert_allclose(
        normed, expected / np.linalg.norm(expected, axis=1, keepdims=True)
    )
    with pytest.raises(ValueError, match="Unknown feature"):
        datasets.load_sklearn("iris", features=["nope"])
    with pytest.raises(ValueError, match="out of range"):
        datasets.load_sklearn("iris", features=[7])


def test_diabetes_raw_and_label_scale():
    data = datasets.load_sklearn("diabetes", normalize_rows=False, label_scale=346.0)
    assert float(jnp.abs(data["y"]).max()) <= 1.0
    # Raw (unstandardised) features: age in years.
    assert float(data["x"][:, 0].max()) > 50


def test_unknown_dataset():
    with pytest.raises(ValueError, match="Unknown dataset"):
        datasets.load_sklearn("covtype")


@pytest.mark.slow
@pytest.mark.parametrize("d", [1, 2, 5])
def test_make_classification(d):
    data, w = datasets.make_classification(KEY, 2000, d, margin=0.2, return_truth=True)
    x, y = np.asarray(data["x"]), np.asarray(data["y"])
    assert x.shape == (2000, d) and y.shape == (2000,)
    assert np.linalg.norm(x, axis=1).max() <= 1.0 + 1e-12
    assert set(np.unique(y)) == {-1.0, 1.0}
    np.testing.assert_allclose(np.linalg.norm(w), 1.0)
    margins = y * (x @ np.asarray(w))
    assert margins.min() >= 0.2 - 1e-12
    # Balanced classes: binomial(2000, 1/2) within 4 standard deviations.
    assert abs((y == 1).sum() - 1000) < 4 * np.sqrt(500)


@pytest.mark.slow
def test_make_classification_flips():
    n, p = 4000, 0.2
    clean, w = datasets.make_classification(KEY, n, 3, return_truth=True)
    noisy = datasets.make_classification(KEY, n, 3, flip_prob=p)
    np.testing.assert_array_equal(clean["x"], noisy["x"])
    flipped = float(jnp.mean(clean["y"] != noisy["y"]))
    assert abs(flipped - p) < 4 * np.sqrt(p * (1 - p) / n)


@pytest.mark.slow
def test_make_regression():
    n = 3000
    data, w = datasets.make_regression(
        KEY, n, 4, noise=0.0, outlier_frac=0.1, return_truth=True
    )
    x, y = np.asarray(data["x"]), np.asarray(data["y"])
    assert x.shape == (n, 4) and y.shape == (n,)
    assert np.linalg.norm(x, axis=1).max() <= 1.0
    clean = np.isclose(y, x @ np.asarray(w), atol=1e-12)
    frac_out = 1 - clean.mean()
    assert abs(frac_out - 0.1) < 4 * np.sqrt(0.09 / n)


def test_synthetic_validation():
    with pytest.raises(ValueError):
        datasets.make_classification(KEY, 10, 2, margin=1.0)
    with pytest.raises(ValueError):
        datasets.make_classification(KEY, 10, 2, flip_prob=1.5)
    with pytest.raises(ValueError):
        datasets.make_regression(KEY, 0, 2)


# ----------------------------------------------------- planted-coin bump instance
def _pairwise_hamming(code):
    code = np.asarray(code)
    d = (code[:, None, :] != code[None, :, :]).sum(-1)
    return d[~np.eye(len(code), dtype=bool)]


@pytest.mark.parametrize("dim", [1, 2, 3, 4, 5, 6, 8, 10])
def test_sign_codewords_distance_and_size(dim):
    code = datasets.sign_codewords(dim)
    h = -(-dim // 4)
    assert code.dtype == np.int8 and set(np.unique(code)) <= {-1, 1}
    assert len({tuple(c) for c in code}) == len(code)
    assert _pairwise_hamming(code).min() >= h
    # Gilbert-Varshamov: a maximal code has k * V(dim, h - 1) >= 2^dim
    volume = sum(math.comb(dim, i) for i in range(h))
    assert len(code) * volume >= 2**dim
    # maximal: every sign vector is within h - 1 of some codeword
    words = 1 - 2 * ((np.arange(2**dim)[:, None] >> np.arange(dim)[::-1]) & 1)
    nearest = (words[:, None, :] != code[None]).sum(-1).min(axis=1)
    assert nearest.max() <= h - 1


def test_sign_codewords_options_and_errors():
    assert len(datasets.sign_codewords(6)) == 32  # even-weight code
    code = datasets.sign_codewords(8, min_distance=4)
    assert _pairwise_hamming(code).min() >= 4
    assert len(datasets.sign_codewords(8, max_codewords=5)) == 5
    for bad in (dict(dim=0), dict(dim=17), dict(dim=3, min_distance=4)):
        with pytest.raises(ValueError):
            datasets.sign_codewords(**bad)
    with pytest.raises(ValueError, match="fewer than two"):
        datasets.sign_codewords(2, min_distance=2, max_codewords=1)


@pytest.mark.slow
@pytest.mark.parametrize("dim", [2, 6])
def test_planted_bumps_disjoint_inside_ball_and_lipschitz(dim):
    inst = datasets.planted_coin_bumps(jax.random.key(dim), dim, 500)
    v = inst.centers
    assert np.allclose(np.linalg.norm(v, axis=1), 0.5)
    sep = np.linalg.norm(v[:, None] - v[None], axis=-1)[~np.eye(inst.k, dtype=bool)]
    assert sep.min() >= 2 * inst.tau - 1e-12  # disjoint open supports
    assert 0.5 + inst.tau <= 1.0  # inside the unit ball
    # points near the bumps: at most one bump is positive anywhere
    key = jax.random.key(11)
    idx = jax.random.randint(key, (1000,), 0, inst.k)
    x = v[np.asarray(idx)] + 0.3 * np.asarray(
        jax.random.normal(jax.random.fold_in(key, 1), (1000, dim), jnp.float64)
    ) / np.sqrt(dim)
    phi = np.asarray(inst.bumps(x))
    assert (phi > 0).sum(axis=1).max() <= 1 and (phi > 0).any()
    # 1-Lipschitz: gradients (also exactly at a centre) and finite differences
    coins = np.asarray(inst.sample(jax.random.fold_in(key, 2), 1000)["coins"])
    grads = jax.vmap(jax.grad(inst.loss_fn), in_axes=(0, {"coins": 0}))(
        jnp.asarray(x), {"coins": jnp.asarray(coins)}
    )
    assert np.all(np.isfinite(grads))
    assert np.linalg.norm(grads, axis=1).max() <= 1 + 1e-12
    g0 = jax.grad(inst.loss_fn)(jnp.asarray(v[0]), {"coins": jnp.zeros(inst.k)})
    assert np.all(np.isfinite(g0)) and float(jnp.linalg.norm(g0)) <= 1
    f = jax.vmap(inst.loss_fn, in_axes=(0, {"coins": 0}))
    fx = np.asarray(f(jnp.asarray(x), {"coins": jnp.asarray(coins)}))
    fy = np.asarray(f(jnp.asarray(x[::-1]), {"coins": jnp.asarray(coins)}))
    assert np.all(np.abs(fx - fy) <= np.linalg.norm(x - x[::-1], axis=1) + 1e-12)


@pytest.mark.slow
def test_planted_bumps_population_risk_closed_form():
    inst = datasets.planted_coin_bumps(jax.random.key(5), 4, 200, c_delta=1.0)
    assert np.isclose(inst.gap, np.sqrt(np.log(16) / 200))
    assert inst.biases.min() == inst.biases[inst.planted]
    # exact minimum at the planted centre, value -(1 - p*) tau
    vstar = inst.centers[inst.planted]
    assert np.isclose(float(inst.population_risk(vstar)), inst.min_population_risk)
    assert np.isclose(inst.min_population_risk, -(0.5 + inst.gap) * 0.25)
    # at a centre F_P is the closed form; Monte Carlo of f agrees within 5 SE
    n = 50_000
    data = inst.sample(jax.random.key(6), n)
    for i in (inst.planted, (inst.planted + 1) % inst.k):
        x = inst.centers[i] + 0.05 / np.sqrt(4)
        vals = np.asarray(
            jax.vmap(inst.loss_fn, in_axes=(None, {"coins": 0}))(jnp.asarray(x), data)
        )
        se = vals.std(ddof=1) / np.sqrt(n)
        assert abs(vals.mean() - float(inst.population_risk(x))) < 5 * se
        assert np.isclose(float(inst.empirical_risk(x, data)), vals.mean())
    # the reduction: a point in bump i has excess risk >= tau (p_i - p*)
    key = jax.random.key(7)
    x = np.asarray(jax.random.uniform(key, (5000, 4), jnp.float64, -0.6, 0.6))
    excess = np.asarray(inst.excess_population_risk(x))
    assert excess.min() >= -1e-15
    phi = np.asarray(inst.bumps(x))
    inside, i = phi.max(axis=1) > 0, phi.argmax(axis=1)
    assert inside.any() and not inside.all()
    lower = 0.25 * (inst.biases[i] - inst.biases.min())
    assert np.all(excess[inside] >= lower[inside] - 1e-12)
    assert np.allclose(excess[~inside], -inst.min_population_risk)


def test_planted_bumps_voting_data_and_errors():
    inst = datasets.planted_coin_bumps(jax.random.key(0), 4, 100)
    data = inst.voting_data(50, 7, coin=3)
    x = inst.centers[3] + 0.01
    assert np.isclose(
        float(inst.empirical_risk(x, data)), -(7 / 50) * float(inst.bumps(x)[3])
    )
    assert inst.bump_index(inst.centers[3]) == 3 and inst.bump_index(np.zeros(4)) == -1
    with pytest.raises(ValueError):
        inst.voting_data(5, 6, coin=0)
    with pytest.raises(ValueError, match="c_delta"):
        datasets.planted_coin_bumps(jax.random.key(0), 4, 100, c_delta=2.0)
    with pytest.raises(ValueError, match="too small"):
        datasets.planted_coin_bumps(jax.random.key(0), 8, 2, c_delta=1.0)
    with pytest.raises(ValueError, match="overlap"):
        datasets.PlantedCoinBumps(datasets.sign_codewords(4), np.full(16, 0.5), 0.3)
    with pytest.raises(ValueError, match="minimum distance"):
        datasets.PlantedCoinBumps(
            datasets.sign_codewords(4), np.full(16, 0.5), 0.25, min_distance=2
        )
