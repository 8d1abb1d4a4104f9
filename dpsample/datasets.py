"""Data loaders returning ``{"x": float64 (n, p), "y": float64 (n,)}``.

* :func:`load_sklearn`: scikit-learn's **bundled** datasets (never a download);
  :func:`sklearn_shape` gives their public shapes without loading them.
* :func:`make_classification`, :func:`make_regression`: synthetic data from an explicit
  JAX PRNG key, with every feature row of norm at most 1.

Preprocessing is per row only (seed 001: "we normalize each row"): each feature vector
is scaled to unit L2 norm, which needs no statistic of the whole dataset. Global
standardisation (per-feature means or variances, min-max scaling) would compute
statistics of the private data; releasing or using them would itself consume privacy
budget, so it is not done here. Choose features, label encodings and scales from public
knowledge only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from dpsample._src import precision, validation
from dpsample.types import Array, PRNGKey

__all__ = [
    "SKLEARN_DATASETS",
    "SKLEARN_METADATA",
    "SklearnMetadata",
    "load_sklearn",
    "make_classification",
    "make_regression",
    "sklearn_shape",
]

SKLEARN_DATASETS = ("breast_cancer", "iris", "wine", "diabetes", "digits")
"""Names accepted by :func:`load_sklearn` (all shipped inside scikit-learn)."""


class SklearnMetadata(NamedTuple):
    """Public facts of a bundled dataset, recorded so that nothing is loaded for them.

    They are what scikit-learn documents for each dataset (its size, its feature
    names, its classes); ``tests/test_datasets.py`` checks them against the loaders.

    Attributes:
        n: Number of examples.
        feature_names: The columns, in order.
        class_names: The classes (``()`` for a regression task).
    """

    n: int
    feature_names: tuple[str, ...]
    class_names: tuple[str, ...]

    @property
    def regression(self) -> bool:
        """Whether the task is regression (no classes)."""
        return not self.class_names


_MEASURES = (
    "radius", "texture", "perimeter", "area", "smoothness", "compactness",
    "concavity", "concave points", "symmetry", "fractal dimension",
)  # fmt: skip
SKLEARN_METADATA: dict[str, SklearnMetadata] = {
    "breast_cancer": SklearnMetadata(
        569,
        tuple(
            [f"mean {m}" for m in _MEASURES]
            + [f"{m} error" for m in _MEASURES]
            + [f"worst {m}" for m in _MEASURES]
        ),
        ("malignant", "benign"),
    ),
    "iris": SklearnMetadata(
        150,
        (
            "sepal length (cm)",
            "sepal width (cm)",
            "petal length (cm)",
            "petal width (cm)",
        ),
        ("setosa", "versicolor", "virginica"),
    ),
    "wine": SklearnMetadata(
        178,
        (
            "alcohol",
            "malic_acid",
            "ash",
            "alcalinity_of_ash",
            "magnesium",
            "total_phenols",
            "flavanoids",
            "nonflavanoid_phenols",
            "proanthocyanins",
            "color_intensity",
            "hue",
            "od280/od315_of_diluted_wines",
            "proline",
        ),  # fmt: skip
        ("class_0", "class_1", "class_2"),
    ),
    "diabetes": SklearnMetadata(
        442, ("age", "sex", "bmi", "bp", "s1", "s2", "s3", "s4", "s5", "s6"), ()
    ),
    "digits": SklearnMetadata(
        1797,
        tuple(f"pixel_{r}_{c}" for r in range(8) for c in range(8)),
        tuple(str(k) for k in range(10)),
    ),
}
"""Public shapes, feature names and classes of :data:`SKLEARN_DATASETS`."""


def _bunch(name: str):
    from sklearn import datasets as skd

    if name == "diabetes":
        # Raw features: the default scaled=True standardises with dataset statistics.
        return skd.load_diabetes(scaled=False)
    return getattr(skd, f"load_{name}")()


def _feature_indices(names: Sequence[str], features: Sequence[int | str]) -> list[int]:
    """Column indices of ``features`` (names or indices), checked against ``names``."""
    names = [str(n) for n in names]
    idx = []
    for f in features:
        if isinstance(f, str):
            if f not in names:
                raise ValueError(f"Unknown feature {f!r}; available: {names}")
            idx.append(names.index(f))
        else:
            i = int(f)
            if not -len(names) <= i < len(names):
                raise ValueError(f"Feature index {i} out of range for {len(names)}")
            idx.append(i)
    if not idx:
        raise ValueError("Expected at least one feature")
    return idx


def _select_features(x: np.ndarray, names: Sequence[str], features) -> np.ndarray:
    if features is None:
        return x
    return x[:, _feature_indices(names, features)]


def sklearn_shape(
    name: str,
    *,
    features: Sequence[int | str] | None = None,
    add_bias: bool = False,
) -> tuple[int, int]:
    """``(n, p)`` of :func:`load_sklearn`'s features, without loading the data.

    The shapes come from :data:`SKLEARN_METADATA` (public facts) and the same feature
    selection rule as :func:`load_sklearn`: the chosen columns (all by default), plus
    one for ``add_bias``. Feature names and indices are checked here.

    Args:
        name: One of :data:`SKLEARN_DATASETS`.
        features: Column indices or feature names (default all).
        add_bias: Whether a constant column is appended.

    Returns:
        ``(n, p)``.

    Raises:
        ValueError: An unknown dataset or feature.

    Examples:
        >>> from dpsample.datasets import sklearn_shape
        >>> sklearn_shape("iris", features=[0, "petal length (cm)"])
        (150, 2)
        >>> sklearn_shape("breast_cancer", add_bias=True)
        (569, 31)
    """
    if name not in SKLEARN_METADATA:
        raise ValueError(f"Unknown dataset {name!r}; choose one of {SKLEARN_DATASETS}")
    meta = SKLEARN_METADATA[name]
    p = (
        len(meta.feature_names)
        if features is None
        else len(_feature_indices(meta.feature_names, features))
    )
    return meta.n, p + int(bool(add_bias))


def _normalize_rows(x: np.ndarray) -> np.ndarray:
    """Scale each row to unit L2 norm (all-zero rows stay zero)."""
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(norms > 0, norms, 1.0)


def load_sklearn(
    name: str,
    *,
    features: Sequence[int | str] | None = None,
    normalize_rows: bool = True,
    add_bias: bool = False,
    positive_class: int | str | None = None,
    label_scale: float | None = None,
) -> dict[str, Array]:
    """Load one of scikit-learn's bundled datasets as a dpsample data dict.

    Classification labels become ``+1`` for the positive class and ``-1`` otherwise:
    ``breast_cancer`` (positive: benign, target 1); ``iris``, ``wine`` and ``digits``
    become one-vs-rest with ``positive_class`` (default: the first class). ``diabetes``
    is a regression task; its raw features are used (scikit-learn's default
    ``scaled=True`` standardises with dataset statistics) and its targets lie in
    ``[25, 346]``, so divide them by a public ``label_scale`` (e.g. 346) for losses
    that assume ``|y| <= 1``.

    Args:
        name: One of :data:`SKLEARN_DATASETS`.
        features: Column indices or feature names, chosen publicly (default all).
        normalize_rows: Scale each row to unit L2 norm (seed 001). Per-row, so it uses
            no statistic of the dataset.
        add_bias: Append a constant-1 column before normalisation.
        positive_class: Class index or name mapped to ``+1`` (multi-class datasets;
            for ``breast_cancer`` default ``1``/``"benign"``).
        label_scale: Divide regression targets by this public constant.

    Returns:
        ``{"x": (n, p) float64, "y": (n,) float64}``.

    Raises:
        ValueError: For an unknown dataset, feature or class.

    Examples:
        >>> import dpsample
        >>> from dpsample.datasets import load_sklearn
        >>> data = load_sklearn("iris", features=[0, "petal length (cm)"])
        >>> data["x"].shape, sorted(set(data["y"].tolist()))
        ((150, 2), [-1.0, 1.0])
    """
    if name not in SKLEARN_DATASETS:
        raise ValueError(f"Unknown dataset {name!r}; choose one of {SKLEARN_DATASETS}")
    bunch = _bunch(name)
    x = np.asarray(bunch.data, np.float64)
    x = _select_features(x, bunch.feature_names, features)
    target = np.asarray(bunch.target)
    if SKLEARN_METADATA[name].regression:
        if positive_class is not None:
            raise ValueError(f"positive_class does not apply to regression ({name})")
        y = target.astype(np.float64)
        if label_scale is not None:
            y = y / validation.positive("label_scale", label_scale)
    else:
        if label_scale is not None:
            raise ValueError(f"label_scale does not apply to classification ({name})")
        class_names = [str(c) for c in bunch.target_names]
        if positive_class is None:
            positive_class = 1 if name == "breast_cancer" else 0
        if isinstance(positive_class, str):
            if positive_class not in class_names:
                raise ValueError(
                    f"Unknown class {positive_class!r}; available: {class_names}"
                )
            positive_class = class_names.index(positive_class)
        if not 0 <= int(positive_class) < len(class_names):
            raise ValueError(f"positive_class={positive_class} out of range")
        y = np.where(target == int(positive_class), 1.0, -1.0)
    if add_bias:
        x = np.concatenate([x, np.ones((x.shape[0], 1))], axis=1)
    if normalize_rows:
        x = _normalize_rows(x)
    return {"x": jnp.asarray(x, jnp.float64), "y": jnp.asarray(y, jnp.float64)}


def _unit(rng_key: PRNGKey, d: int) -> Array:
    g = jax.random.normal(rng_key, (d,), jnp.float64)
    return g / jnp.linalg.norm(g)


def _uniform_ball(rng_key: PRNGKey, n: int, d: int) -> Array:
    dkey, rkey = jax.random.split(rng_key)
    g = jax.random.normal(dkey, (n, d), jnp.float64)
    r = jax.random.uniform(rkey, (n, 1), jnp.float64) ** (1.0 / d)
    return g / jnp.linalg.norm(g, axis=1, keepdims=True) * r


def make_classification(
    rng_key: PRNGKey,
    n: int,
    d: int,
    *,
    margin: float = 0.1,
    flip_prob: float = 0.0,
    return_truth: bool = False,
) -> dict[str, Array] | tuple[dict[str, Array], Array]:
    """Linearly separable (up to label flips) binary data with ``||a|| <= 1``.

    A unit direction ``w*`` is drawn; each row is ``a = t w* + b`` with ``|t|``
    uniform on ``[margin, 1]``, a random sign, and ``b`` uniform in the ball of radius
    ``sqrt(1 - t^2)`` of the orthogonal complement of ``w*``. So ``||a|| <= 1`` and the
    clean label ``sign(t)`` has margin at least ``margin``. Each label is flipped
    independently with probability ``flip_prob``.

    Args:
        rng_key: A JAX PRNG key.
        n: Number of examples.
        d: Dimension.
        margin: Margin in ``[0, 1)``.
        flip_prob: Label-noise probability in ``[0, 1]``.
        return_truth: Also return ``w*``.

    Returns:
        The data dict (and ``w*`` if asked).

    Examples:
        >>> import jax
        >>> import dpsample
        >>> from dpsample.datasets import make_classification
        >>> data = make_classification(jax.random.key(0), 100, 3, margin=0.2)
        >>> data["x"].shape, data["y"].shape
        ((100, 3), (100,))
    """
    n = validation.positive_int("n", n)
    d = validation.positive_int("d", d)
    margin = validation.nonnegative("margin", margin)
    if margin >= 1:
        raise ValueError(f"Expected margin={margin!r} < 1")
    flip_prob = validation.probability("flip_prob", flip_prob)
    kw, kt, ks, kb, kf = jax.random.split(rng_key, 5)
    w_star = _unit(kw, d)
    t = jax.random.uniform(kt, (n,), jnp.float64, minval=margin, maxval=1.0)
    sign = jnp.where(jax.random.bernoulli(ks, 0.5, (n,)), 1.0, -1.0)
    # b: uniform in the unit ball of the (d-1)-dimensional complement of w*.
    g = jax.random.normal(kb, (n, d), jnp.float64)
    g = g - jnp.outer(g @ w_star, w_star)
    gn = jnp.linalg.norm(g, axis=1, keepdims=True)
    u = jax.random.uniform(jax.random.fold_in(kb, 1), (n, 1), jnp.float64)
    b = jnp.where(gn > 1e-12, g / jnp.where(gn > 1e-12, gn, 1.0), 0.0)
    b = b * u ** (1.0 / max(d - 1, 1))
    x = (sign * t)[:, None] * w_star + b * jnp.sqrt(1.0 - t**2)[:, None]
    flip = jax.random.bernoulli(kf, flip_prob, (n,))
    y = jnp.where(flip, -sign, sign)
    data = {"x": x, "y": y}
    return (data, w_star) if return_truth else data


def make_regression(
    rng_key: PRNGKey,
    n: int,
    d: int,
    *,
    noise: float = 0.1,
    outlier_frac: float = 0.0,
    outlier_scale: float = 10.0,
    return_truth: bool = False,
) -> dict[str, Array] | tuple[dict[str, Array], Array]:
    """Linear-regression data with gross outliers; rows uniform in the unit ball.

    ``y = <a, w*> + noise * N(0, 1)`` with ``w*`` a random unit vector (so the clean
    part satisfies ``|<a, w*>| <= 1``); a fraction ``outlier_frac`` of the labels (each
    independently) is replaced by ``outlier_scale * N(0, 1)``.

    Args:
        rng_key: A JAX PRNG key.
        n: Number of examples.
        d: Dimension.
        noise: Noise standard deviation ``>= 0``.
        outlier_frac: Outlier probability in ``[0, 1]``.
        outlier_scale: Standard deviation of the outlying labels.
        return_truth: Also return ``w*``.

    Returns:
        The data dict (and ``w*`` if asked).

    Examples:
        >>> import jax
        >>> import dpsample
        >>> from dpsample.datasets import make_regression
        >>> data = make_regression(jax.random.key(0), 50, 4, outlier_frac=0.1)
        >>> data["x"].shape
        (50, 4)
    """
    n = validation.positive_int("n", n)
    d = validation.positive_int("d", d)
    noise = validation.nonnegative("noise", noise)
    outlier_frac = validation.probability("outlier_frac", outlier_frac)
    outlier_scale = validation.nonnegative("outlier_scale", outlier_scale)
    kw, kx, ke, ko, kv = jax.random.split(rng_key, 5)
    w_star = _unit(kw, d)
    x = _uniform_ball(kx, n, d)
    y = x @ w_star + noise * jax.random.normal(ke, (n,), jnp.float64)
    is_out = jax.random.bernoulli(ko, outlier_frac, (n,))
    y = jnp.where(is_out, outlier_scale * jax.random.normal(kv, (n,), jnp.float64), y)
    data = {"x": x, "y": y}
    return (data, w_star) if return_truth else data


precision.scope_public(globals())
