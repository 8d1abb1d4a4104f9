"""scikit-learn's bundled datasets (never a download), their public shapes and splits.

:func:`load_sklearn` loads one of :data:`SKLEARN_DATASETS` as ``{"x", "y"}`` (per-row
preprocessing only, see :mod:`dpsample.datasets`); :func:`sklearn_shape` gives its
public shape from :data:`SKLEARN_METADATA` without loading it, and
:func:`holdout_split` is the public permutation that holds rows out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from dpsample._src import precision, validation
from dpsample._src.extras import import_optional
from dpsample.types import Array

__all__ = [
    "SKLEARN_DATASETS",
    "SklearnMetadata",
    "SKLEARN_METADATA",
    "sklearn_shape",
    "HOLDOUT_PARTS",
    "holdout_split",
    "load_sklearn",
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
    # lazy: sklearn.datasets costs ~3 s, which --help and jobs on other data skip;
    # it is the optional `datasets` extra
    skd = import_optional("sklearn.datasets", "datasets", feature="load_sklearn")

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
    holdout: float | None = None,
    part: str = "train",
) -> tuple[int, int]:
    """``(n, p)`` of :func:`load_sklearn`'s features, without loading the data.

    The shapes come from :data:`SKLEARN_METADATA` (public facts) and the same feature
    selection rule as :func:`load_sklearn`: the chosen columns (all by default), plus
    one for ``add_bias``. Feature names and indices are checked here. With a
    ``holdout`` fraction, ``n`` is the size of the ``part`` (:func:`holdout_split`).

    Args:
        name: One of :data:`SKLEARN_DATASETS`.
        features: Column indices or feature names (default all).
        add_bias: Whether a constant column is appended.
        holdout: The held-out fraction of rows (default none).
        part: ``"train"`` or ``"test"`` (with ``holdout``).

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
        >>> sklearn_shape("digits", holdout=0.2), sklearn_shape("digits", holdout=0.2,
        ...                                                      part="test")
        ((1438, 64), (359, 64))
    """
    if name not in SKLEARN_METADATA:
        raise ValueError(f"Unknown dataset {name!r}; choose one of {SKLEARN_DATASETS}")
    meta = SKLEARN_METADATA[name]
    p = (
        len(meta.feature_names)
        if features is None
        else len(_feature_indices(meta.feature_names, features))
    )
    n = meta.n
    if holdout is not None:
        n = _holdout_sizes(meta.n, holdout, part)
    return n, p + int(bool(add_bias))


#: The parts of a held-out split: the training rows and the held-out rows.
HOLDOUT_PARTS = ("train", "test")


def _holdout_sizes(n: int, holdout: float, part: str) -> int:
    if part not in HOLDOUT_PARTS:
        raise ValueError(f"Expected part in {HOLDOUT_PARTS}, got {part!r}")
    if not (isinstance(holdout, int | float) and 0.0 < holdout < 1.0):
        raise ValueError(f"holdout must be a fraction in (0, 1), got {holdout!r}")
    n_test = round(holdout * n)
    if not 0 < n_test < n:
        raise ValueError(f"holdout={holdout} leaves an empty part of n={n} rows")
    return n_test if part == "test" else n - n_test


def holdout_split(
    n: int, holdout: float, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """A public train/test split of ``n`` rows: ``round(holdout n)`` rows held out.

    The rows are permuted by ``numpy.random.default_rng(seed)`` (a public seed: the
    split depends on ``n`` and the seed only, never on the data), the first
    ``round(holdout n)`` of the permutation are the held-out part and the rest the
    training part, each in increasing order.

    Args:
        n: Number of rows.
        holdout: The held-out fraction, in ``(0, 1)``; both parts must be non-empty.
        seed: The public seed of the permutation.

    Returns:
        ``(train, test)``: the row indices of each part (NumPy int64 arrays).

    Raises:
        ValueError: A fraction outside ``(0, 1)`` or an empty part.

    Examples:
        >>> from dpsample.datasets import holdout_split
        >>> train, test = holdout_split(10, 0.3, seed=0)
        >>> len(train), len(test), sorted([*train, *test]) == list(range(10))
        (7, 3, True)
    """
    n_test = _holdout_sizes(int(n), holdout, "test")
    perm = np.random.default_rng(seed).permutation(int(n))
    return np.sort(perm[n_test:]), np.sort(perm[:n_test])


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
    class_index: bool = False,
    holdout: float | None = None,
    holdout_seed: int = 0,
    part: str = "train",
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
        class_index: Keep a classification dataset's labels as the class indices
            ``0, ..., k - 1`` (int64, the order of
            ``SKLEARN_METADATA[name].class_names``) instead of one-vs-rest ``+-1``:
            the labels of a multi-class model (:class:`dpsample.models.MLP`'s
            ``cross_entropy`` head). ``positive_class`` does not apply then.
        holdout: Hold out this fraction of the rows (default none): the rows of
            ``part`` of :func:`holdout_split` ``(n, holdout, holdout_seed)`` are
            returned, e.g. train on ``"train"`` and measure on ``"test"``.
        holdout_seed: The public seed of the split.
        part: ``"train"`` (default) or ``"test"``.

    Returns:
        ``{"x": (n, p) float64, "y": (n,) float64}`` (``y`` int64 with
        ``class_index``).

    Raises:
        ValueError: For an unknown dataset, feature or class.
        MissingExtraError: scikit-learn is not installed (``pip install
            "dpsample[datasets]"``).

    Examples:
        >>> import dpsample
        >>> from dpsample.datasets import load_sklearn
        >>> data = load_sklearn("iris", features=[0, "petal length (cm)"])
        >>> data["x"].shape, sorted(set(data["y"].tolist()))
        ((150, 2), [-1.0, 1.0])
        >>> test = load_sklearn("digits", class_index=True, holdout=0.2, part="test")
        >>> test["x"].shape
        (359, 64)
    """
    if name not in SKLEARN_DATASETS:
        raise ValueError(f"Unknown dataset {name!r}; choose one of {SKLEARN_DATASETS}")
    if holdout is not None:
        data = load_sklearn(
            name,
            features=features,
            normalize_rows=normalize_rows,
            add_bias=add_bias,
            positive_class=positive_class,
            label_scale=label_scale,
            class_index=class_index,
        )
        if part not in HOLDOUT_PARTS:
            raise ValueError(f"Expected part in {HOLDOUT_PARTS}, got {part!r}")
        rows = holdout_split(data["x"].shape[0], holdout, holdout_seed)
        pick = rows[HOLDOUT_PARTS.index(part)]
        return {k: v[pick] for k, v in data.items()}
    bunch = _bunch(name)
    x = np.asarray(bunch.data, np.float64)
    x = _select_features(x, bunch.feature_names, features)
    target = np.asarray(bunch.target)
    if SKLEARN_METADATA[name].regression:
        if positive_class is not None:
            raise ValueError(f"positive_class does not apply to regression ({name})")
        if class_index:
            raise ValueError(f"class_index does not apply to regression ({name})")
        y = target.astype(np.float64)
        if label_scale is not None:
            y = y / validation.positive("label_scale", label_scale)
    else:
        if label_scale is not None:
            raise ValueError(f"label_scale does not apply to classification ({name})")
        if class_index:
            if positive_class is not None:
                raise ValueError("positive_class does not apply with class_index")
            x, y = _with_bias(x, add_bias, normalize_rows), target.astype(np.int64)
            return {"x": jnp.asarray(x, jnp.float64), "y": jnp.asarray(y, jnp.int64)}
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
    x = _with_bias(x, add_bias, normalize_rows)
    return {"x": jnp.asarray(x, jnp.float64), "y": jnp.asarray(y, jnp.float64)}


def _with_bias(x: np.ndarray, add_bias: bool, normalize_rows: bool) -> np.ndarray:
    """The constant-1 column (``add_bias``), then per-row normalisation."""
    if add_bias:
        x = np.concatenate([x, np.ones((x.shape[0], 1))], axis=1)
    return _normalize_rows(x) if normalize_rows else x


precision.scope_public(globals())
