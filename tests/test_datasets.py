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


def test_make_classification_flips():
    n, p = 4000, 0.2
    clean, w = datasets.make_classification(KEY, n, 3, return_truth=True)
    noisy = datasets.make_classification(KEY, n, 3, flip_prob=p)
    np.testing.assert_array_equal(clean["x"], noisy["x"])
    flipped = float(jnp.mean(clean["y"] != noisy["y"]))
    assert abs(flipped - p) < 4 * np.sqrt(p * (1 - p) / n)


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
