"""Seed 001's dataset shapes: ``make_paper_shaped`` (synthetic Covertype- and
IJCNN-shaped data) and ``paper_dataset`` (those, and scikit-learn's bundled breast
cancer data), all with unit-norm rows and labels ``+-1``."""

import jax
import numpy as np
import pytest

from dpsample import datasets


def _check_preprocessed(data, n, d):
    x, y = np.asarray(data["x"]), np.asarray(data["y"])
    assert x.shape == (n, d) and y.shape == (n,)
    assert x.dtype == np.float64 and y.dtype == np.float64
    np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1.0, rtol=1e-12)
    assert set(np.unique(y).tolist()) == {-1.0, 1.0}


@pytest.mark.parametrize("like", ["covertype", "ijcnn"])
def test_paper_shapes_and_preprocessing(like):
    shape = datasets.PAPER_SHAPES[like]
    data = datasets.make_paper_shaped(jax.random.key(0), like, 4000)
    _check_preprocessed(data, 4000, shape.d)
    # the class balance is the real data set's (binomial, 5 standard errors)
    share = float(np.mean(np.asarray(data["y"]) > 0))
    p = shape.positive_fraction
    assert abs(share - p) < 5 * np.sqrt(p * (1 - p) / 4000)


def test_recorded_paper_shapes():
    assert datasets.PAPER_SHAPES["covertype"][:2] == (581_012, 54)
    assert datasets.PAPER_SHAPES["ijcnn"][:2] == (35_000, 22)


def test_paper_shaped_defaults_and_options():
    data = datasets.make_paper_shaped(
        jax.random.key(1), "covertype", 300, d=5, positive_fraction=0.3
    )
    _check_preprocessed(data, 300, 5)
    # the default size is the real one (checked without building 581,012 rows)
    small = datasets.make_paper_shaped(jax.random.key(1), "ijcnn")
    assert np.asarray(small["x"]).shape == (35_000, 22)


def test_paper_shaped_is_a_function_of_the_key():
    a = datasets.make_paper_shaped(jax.random.key(3), "ijcnn", 200)
    b = datasets.make_paper_shaped(jax.random.key(3), "ijcnn", 200)
    c = datasets.make_paper_shaped(jax.random.key(4), "ijcnn", 200)
    np.testing.assert_array_equal(np.asarray(a["x"]), np.asarray(b["x"]))
    assert not np.array_equal(np.asarray(a["x"]), np.asarray(c["x"]))


def test_separation_controls_overlap():
    """More separated raw classes give a better linear fit (the direction ``u`` is
    recovered by the class-mean difference)."""

    def accuracy(sep):
        data = datasets.make_paper_shaped(
            jax.random.key(5), "ijcnn", 5000, positive_fraction=0.5, separation=sep
        )
        x, y = np.asarray(data["x"]), np.asarray(data["y"])
        w = x[y > 0].mean(0) - x[y < 0].mean(0)
        b = -0.5 * (x[y > 0].mean(0) + x[y < 0].mean(0)) @ w
        return float(np.mean(np.sign(x @ w + b) == y))

    assert accuracy(0.0) < 0.56
    assert accuracy(4.0) > 0.9


def test_paper_shaped_errors():
    key = jax.random.key(0)
    with pytest.raises(ValueError, match="Unknown shape"):
        datasets.make_paper_shaped(key, "mnist", 10)
    with pytest.raises(ValueError, match="positive_fraction"):
        datasets.make_paper_shaped(key, "ijcnn", 10, positive_fraction=1.0)
    with pytest.raises(ValueError, match="separation"):
        datasets.make_paper_shaped(key, "ijcnn", 10, separation=-1.0)
    with pytest.raises(ValueError, match="offset"):
        datasets.make_paper_shaped(key, "ijcnn", 10, offset=float("nan"))
    with pytest.raises(ValueError):
        datasets.make_paper_shaped(key, "ijcnn", 0)


def test_paper_dataset_breast_cancer_is_real_and_preprocessed():
    data = datasets.paper_dataset("breast_cancer")
    _check_preprocessed(data, 569, 30)
    # labels: +1 benign (357 of 569), as load_sklearn maps them
    assert int(np.sum(np.asarray(data["y"]) > 0)) == 357
    raw = datasets.load_sklearn("breast_cancer", normalize_rows=False)
    x_raw = np.asarray(raw["x"])
    np.testing.assert_allclose(
        np.asarray(data["x"]),
        x_raw / np.linalg.norm(x_raw, axis=1, keepdims=True),
        rtol=1e-12,
    )
    # the key is ignored, n may be given if right
    again = datasets.paper_dataset("breast_cancer", jax.random.key(9), 569)
    np.testing.assert_array_equal(np.asarray(again["x"]), np.asarray(data["x"]))


def test_paper_dataset_synthetic_and_errors():
    data = datasets.paper_dataset("covertype", jax.random.key(2), 100)
    _check_preprocessed(data, 100, 54)
    ref = datasets.make_paper_shaped(jax.random.key(2), "covertype", 100)
    np.testing.assert_array_equal(np.asarray(data["x"]), np.asarray(ref["x"]))
    with pytest.raises(ValueError, match="rng_key"):
        datasets.paper_dataset("ijcnn", None, 100)
    with pytest.raises(ValueError, match="n = 569"):
        datasets.paper_dataset("breast_cancer", None, 100)
    with pytest.raises(ValueError, match="Unknown dataset"):
        datasets.paper_dataset("covtype")
