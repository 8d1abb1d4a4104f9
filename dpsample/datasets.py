"""Data loaders returning ``{"x": float64 (n, p), "y": float64 (n,)}``.

* :func:`load_sklearn`: scikit-learn's **bundled** datasets (never a download);
  :func:`sklearn_shape` gives their public shapes without loading them.
* :func:`make_classification`, :func:`make_regression`: synthetic data from an explicit
  JAX PRNG key, with every feature row of norm at most 1.
* :func:`make_paper_shaped`, :func:`paper_dataset`: data shaped and preprocessed like
  seed 001's experiments (unit-norm rows, labels ``+-1``): **synthetic** stand-ins of
  the shapes of Covertype (``p = 54``) and IJCNN (``p = 22``) (:data:`PAPER_SHAPES`),
  and scikit-learn's bundled breast cancer data (real, ``569 x 30``).
* :func:`sign_codewords`, :func:`planted_coin_bumps`, :class:`PlantedCoinBumps`: the
  planted-coin bump instance of the lower bound (seed 000, Theorems 5.9-5.11; spec
  000-core section 4.3), a 1-Lipschitz non-convex non-smooth loss on the unit ball
  whose population risk is known in closed form. Its examples are coin flips
  ``{"coins": (n, k)}``, not feature rows.

Preprocessing is per row only (seed 001: "we normalize each row"): each feature vector
is scaled to unit L2 norm, which needs no statistic of the whole dataset. Global
standardisation (per-feature means or variances, min-max scaling) would compute
statistics of the private data; releasing or using them would itself consume privacy
budget, so it is not done here. Choose features, label encodings and scales from public
knowledge only.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from dpsample._src import precision, validation
from dpsample._src.extras import import_optional
from dpsample.types import Array, PRNGKey

__all__ = [
    "SKLEARN_DATASETS",
    "SKLEARN_METADATA",
    "PlantedCoinBumps",
    "SklearnMetadata",
    "PAPER_SHAPES",
    "HOLDOUT_PARTS",
    "PaperShape",
    "load_sklearn",
    "make_classification",
    "make_paper_shaped",
    "holdout_split",
    "make_regression",
    "paper_dataset",
    "planted_coin_bumps",
    "sign_codewords",
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


# ------------------------------------------- the shapes of seed 001's datasets
class PaperShape(NamedTuple):
    """Public shape of one of seed 001's datasets (its Table 1), with our defaults.

    The defaults are those of :func:`make_paper_shaped`, a synthetic stand-in.

    Attributes:
        n: Sample size of the real dataset (LIBSVM ``covtype.binary``, ``ijcnn1``
            training split).
        d: Number of features ``p``.
        positive_fraction: Share of ``+1`` labels of the real dataset (about 0.49 and
            0.10; public facts of the LIBSVM files).
        separation: Default distance between the two class means of the raw
            Gaussian features (before row normalisation), in units of the noise
            standard deviation: our choice, **not** fitted to the real data.
    """

    n: int
    d: int
    positive_fraction: float
    separation: float


PAPER_SHAPES: dict[str, PaperShape] = {
    "covertype": PaperShape(581_012, 54, 0.488, 2.0),
    "ijcnn": PaperShape(35_000, 22, 0.0976, 3.0),
}
"""Seed 001's Table 1 (Covertype ``581,012 x 54``, IJCNN ``35,000 x 22``)."""


def make_paper_shaped(
    rng_key: PRNGKey,
    like: str,
    n: int | None = None,
    *,
    d: int | None = None,
    positive_fraction: float | None = None,
    separation: float | None = None,
    offset: float = 1.0,
) -> dict[str, Array]:
    """Synthetic binary data shaped and preprocessed like one of seed 001's datasets.

    **Synthetic**: these are not the Covertype or IJCNN data (which would need a
    download), only data of their shape (:data:`PAPER_SHAPES`) under the paper's
    preprocessing: every row scaled to unit L2 norm, labels ``+-1``. Labels are
    ``+1`` with probability ``positive_fraction`` (the real set's class balance by
    default); the raw features are Gaussian class-conditional clusters,
    ``a = offset 1 + (separation/2) y u + N(0, I_d)`` with ``u`` a random unit
    direction (drawn from ``rng_key``), so the classes overlap (the linear Bayes error
    before normalisation is ``Phi(-separation/2)`` at equal priors) and the rows are
    not centred (the common ``offset`` plays the part of LIBSVM's non-negative,
    ``[0, 1]``-scaled features, so no intercept column is needed). Each row is then
    divided by its own norm: a per-row step that uses no statistic of the dataset.

    Args:
        rng_key: A JAX PRNG key.
        like: ``"covertype"`` or ``"ijcnn"`` (a key of :data:`PAPER_SHAPES`).
        n: Number of examples (default: the real set's, e.g. 581,012; scale it down
            for a small machine and say so).
        d: Number of features (default: the real set's ``p``).
        positive_fraction: Probability of a ``+1`` label, in ``(0, 1)``.
        separation: Distance between the raw class means, ``>= 0``.
        offset: Common mean of every raw feature.

    Returns:
        ``{"x": (n, d) float64 with unit rows, "y": (n,) float64 in {-1, +1}}``.

    Raises:
        ValueError: For an unknown ``like`` or an invalid parameter.

    Examples:
        >>> import jax
        >>> import numpy as np
        >>> import dpsample
        >>> from dpsample.datasets import make_paper_shaped
        >>> data = make_paper_shaped(jax.random.key(0), "ijcnn", 1000)
        >>> data["x"].shape
        (1000, 22)
        >>> bool(np.allclose(np.linalg.norm(data["x"], axis=1), 1.0))
        True
        >>> sorted(set(np.asarray(data["y"]).tolist()))
        [-1.0, 1.0]
    """
    if like not in PAPER_SHAPES:
        raise ValueError(f"Unknown shape {like!r}; choose one of {tuple(PAPER_SHAPES)}")
    shape = PAPER_SHAPES[like]
    n = shape.n if n is None else validation.positive_int("n", n)
    d = shape.d if d is None else validation.positive_int("d", d)
    pos = shape.positive_fraction if positive_fraction is None else positive_fraction
    pos = validation.probability("positive_fraction", pos)
    if not 0.0 < pos < 1.0:
        raise ValueError(f"Expected 0 < positive_fraction < 1, got {pos!r}")
    sep = shape.separation if separation is None else separation
    sep = validation.nonnegative("separation", sep)
    offset = float(offset)
    if not math.isfinite(offset):
        raise ValueError(f"Expected a finite offset, got {offset!r}")
    ku, ky, kx = jax.random.split(rng_key, 3)
    u = _unit(ku, d)
    y = jnp.where(jax.random.bernoulli(ky, pos, (n,)), 1.0, -1.0)
    raw = (
        offset
        + (0.5 * sep) * y[:, None] * u
        + jax.random.normal(kx, (n, d), jnp.float64)
    )
    x = raw / jnp.linalg.norm(raw, axis=1, keepdims=True)
    return {"x": x, "y": y}


def paper_dataset(
    name: str, rng_key: PRNGKey | None = None, n: int | None = None
) -> dict[str, Array]:
    """One of the three datasets of ``experiments/trust_region_001.toml``.

    * ``"covertype"``, ``"ijcnn"``: :func:`make_paper_shaped` (**synthetic**, the
      shape of seed 001's datasets; needs ``rng_key``; ``n`` default the real size).
    * ``"breast_cancer"``: scikit-learn's bundled Wisconsin breast cancer data
      (**real**, ``569 x 30``, no download), the same preprocessing: raw features,
      each row scaled to unit norm, labels ``+1`` (benign) / ``-1`` (malignant)
      (:func:`load_sklearn`). ``rng_key`` is ignored; ``n``, if given, must be 569.

    Args:
        name: ``"covertype"``, ``"ijcnn"`` or ``"breast_cancer"``.
        rng_key: A JAX PRNG key (synthetic shapes only).
        n: Number of examples.

    Returns:
        ``{"x": (n, p) float64 with unit rows, "y": (n,) float64 in {-1, +1}}``.

    Raises:
        ValueError: For an unknown name, a missing key or a wrong ``n``.

    Examples:
        >>> import numpy as np
        >>> import dpsample
        >>> from dpsample.datasets import paper_dataset
        >>> data = paper_dataset("breast_cancer")
        >>> data["x"].shape
        (569, 30)
        >>> bool(np.allclose(np.linalg.norm(data["x"], axis=1), 1.0))
        True
    """
    if name == "breast_cancer":
        size = SKLEARN_METADATA[name].n
        if n is not None and int(n) != size:
            raise ValueError(f"breast_cancer has n = {size}, got n = {n}")
        return load_sklearn(name, normalize_rows=True)
    if name not in PAPER_SHAPES:
        choices = (*PAPER_SHAPES, "breast_cancer")
        raise ValueError(f"Unknown dataset {name!r}; choose one of {choices}")
    if rng_key is None:
        raise ValueError(f"The synthetic {name!r} data need an rng_key")
    return make_paper_shaped(rng_key, name, n)


# ------------------------------------------------------ the lower-bound instance
_MAX_CODE_DIM = 16


def sign_codewords(
    dim: int, *, min_distance: int | None = None, max_codewords: int | None = None
) -> np.ndarray:
    """Sign vectors in ``{-1, +1}^dim`` with a verified minimum Hamming distance.

    The greedy lexicographic code (lexicode): the vectors of ``{0, 1}^dim`` are read
    in binary counting order and each is kept when it is at Hamming distance at least
    ``min_distance`` from every vector kept so far; bit ``b`` becomes the sign
    ``1 - 2 b``. A lexicode meets the Gilbert-Varshamov bound, so for the default
    ``min_distance = ceil(dim / 4)`` it has at least ``2^dim / V(dim, dim/4 - 1)``
    codewords (``V`` the Hamming-ball volume), ``2^{0.19 dim}`` or more: ``log k``
    grows linearly in ``dim``, as the lower bound of seed 000 (Theorem 5.10) needs.
    The construction is deterministic (public); every pairwise distance is then
    checked.

    Args:
        dim: Dimension, ``1 <= dim <= 16``.
        min_distance: Required minimum pairwise Hamming distance (default
            ``ceil(dim / 4)``), in ``[1, dim]``.
        max_codewords: Keep at most this many (the first ones found).

    Returns:
        An int8 array ``(k, dim)`` of signs, ``k >= 2``.

    Raises:
        ValueError: On invalid arguments, or if fewer than two codewords exist.

    Examples:
        >>> from dpsample.datasets import sign_codewords
        >>> sign_codewords(4).shape  # min distance 1: every sign vector
        (16, 4)
        >>> code = sign_codewords(6)  # min distance 2: the even-weight code
        >>> dist = (code[:, None] != code[None]).sum(-1) + 6 * np.eye(32, dtype=int)
        >>> code.shape, int(dist.min())
        ((32, 6), 2)
    """
    dim = validation.positive_int("dim", dim)
    if dim > _MAX_CODE_DIM:
        raise ValueError(f"sign_codewords supports dim <= {_MAX_CODE_DIM}, got {dim}")
    if min_distance is None:
        min_distance = math.ceil(dim / 4)
    min_distance = validation.positive_int("min_distance", min_distance)
    if min_distance > dim:
        raise ValueError(f"min_distance={min_distance} exceeds dim={dim}")
    if max_codewords is not None:
        max_codewords = validation.positive_int("max_codewords", max_codewords)
    words = ((np.arange(2**dim)[:, None] >> np.arange(dim)[::-1]) & 1).astype(np.int8)
    nearest = np.full(2**dim, dim + 1)  # distance to the nearest kept word
    kept: list[int] = []
    for i in range(2**dim):
        if nearest[i] >= min_distance:
            kept.append(i)
            if max_codewords is not None and len(kept) == max_codewords:
                break
            nearest = np.minimum(nearest, (words != words[i]).sum(axis=1))
    if len(kept) < 2:
        raise ValueError(
            f"fewer than two codewords in dim={dim} at min_distance={min_distance}"
        )
    code = (1 - 2 * words[kept]).astype(np.int8)
    distances = (code[:, None, :] != code[None, :, :]).sum(axis=-1)
    off = distances[~np.eye(len(kept), dtype=bool)]
    if off.min() < min_distance:  # pragma: no cover - the greedy rule guarantees it
        raise RuntimeError("sign_codewords: minimum distance check failed")
    return code


@dataclasses.dataclass(frozen=True, eq=False)
class PlantedCoinBumps:
    r"""The planted-coin bump instance of seed 000's lower bound (spec 000 section 4.3).

    ``k`` coins with biases ``p_i``; one example is ``z in {0, 1}^k``, one flip of
    every coin (``data["coins"][j]``). Coin ``i`` owns the bump
    ``phi_i(x) = max(0, tau - ||x - v_i||)`` around ``v_i = s_i / (2 sqrt(d))``, with
    ``s_i`` the codewords (:func:`sign_codewords`, pairwise Hamming distance
    ``>= h``), so ``||v_i|| = 1/2``, ``||v_i - v_j|| >= sqrt(h/d)`` and, with
    ``tau <= sqrt(h/d)/2``, the bumps have disjoint supports inside the unit ball.
    The loss

    .. math::

        f(x; z) = \sum_i (z_i - 1)\,\phi_i(x),\qquad
        F_{\mathcal P}(x) = \sum_i (p_i - 1)\,\phi_i(x),\qquad
        \min_{B(0,1)} F_{\mathcal P} = -(1 - p_{i^*})\,\tau

    is 1-Lipschitz (at most one bump is non-zero at any point and
    ``|z_i - 1| <= 1``), non-convex and non-smooth, and the excess population risk
    of a point in bump ``i`` is at least ``tau (p_i - p_{i^*})``: optimisation is at
    least as hard as selecting the coin of smallest bias (Theorems 5.9-5.11).

    Attributes:
        codewords: int8 ``(k, d)`` signs.
        biases: ``(k,)`` coin biases ``p_i`` in ``[0, 1]``.
        tau: Bump height and radius.
        min_distance: The verified minimum Hamming distance of the codewords.

    Examples:
        >>> import jax
        >>> from dpsample.datasets import planted_coin_bumps
        >>> inst = planted_coin_bumps(jax.random.key(0), 4, 400)
        >>> inst.k, inst.dim, round(inst.gap, 4)  # gap = 0.5 sqrt(log 16 / 400)
        (16, 4, 0.0416)
        >>> v = inst.centers[inst.planted]
        >>> float(inst.excess_population_risk(v)), inst.bump_index(v) == inst.planted
        (0.0, True)
        >>> data = inst.sample(jax.random.key(1), 400)
        >>> data["coins"].shape
        (400, 16)
    """

    codewords: np.ndarray
    biases: np.ndarray
    tau: float = 0.25
    min_distance: int = 1

    def __post_init__(self) -> None:
        code = np.asarray(self.codewords)
        if code.ndim != 2 or code.shape[0] < 2 or not np.all(np.abs(code) == 1):
            raise ValueError("codewords must be a (k >= 2, d) array of signs")
        biases = np.asarray(self.biases, np.float64)
        if biases.shape != (code.shape[0],) or not np.all(
            (biases >= 0) & (biases <= 1)
        ):
            raise ValueError(f"biases must be {code.shape[0]} values in [0, 1]")
        distances = (code[:, None, :] != code[None, :, :]).sum(axis=-1)
        measured = int(distances[~np.eye(code.shape[0], dtype=bool)].min())
        if measured < self.min_distance:
            raise ValueError(
                f"the codewords' minimum distance is {measured} < {self.min_distance}"
            )
        tau = validation.positive("tau", self.tau)
        if tau > math.sqrt(measured / code.shape[1]) / 2 or tau > 0.5:
            raise ValueError(
                f"tau={tau} makes the bumps overlap or leave the unit ball (at most "
                f"{min(0.5, math.sqrt(measured / code.shape[1]) / 2):.6g})"
            )
        object.__setattr__(self, "codewords", code.astype(np.int8))
        object.__setattr__(self, "biases", biases)
        object.__setattr__(self, "tau", tau)

    @property
    def k(self) -> int:
        """The number of coins (bumps)."""
        return int(self.codewords.shape[0])

    @property
    def dim(self) -> int:
        """The dimension ``d`` of the domain (the unit ball)."""
        return int(self.codewords.shape[1])

    @property
    def log_k(self) -> float:
        """``log k`` (natural)."""
        return math.log(self.k)

    @property
    def centers(self) -> np.ndarray:
        """The bump centres ``v_i = s_i / (2 sqrt(d))``, ``(k, d)``."""
        return self.codewords.astype(np.float64) / (2.0 * math.sqrt(self.dim))

    @property
    def planted(self) -> int:
        """The coin of smallest bias (the first one on ties)."""
        return int(np.argmin(self.biases))

    @property
    def gap(self) -> float:
        """The second-smallest bias minus the smallest (``Delta``)."""
        b = np.sort(self.biases)
        return float(b[1] - b[0])

    def bumps(self, x: Any) -> Array:
        """``phi_i(x)`` for every coin: ``(..., k)`` for points ``(..., d)``.

        The distance has a zero gradient at a centre (a valid subgradient of the
        bump there), so gradients are finite everywhere.
        """
        x = jnp.asarray(x, jnp.float64)
        sq = jnp.sum((x[..., None, :] - jnp.asarray(self.centers)) ** 2, axis=-1)
        safe = jnp.where(sq > 0, sq, 1.0)
        dist = jnp.where(sq > 0, jnp.sqrt(safe), 0.0)
        return jnp.maximum(0.0, self.tau - dist)

    def loss_fn(self, x: Any, example: Mapping[str, Any]) -> Array:
        """``f(x; z) = sum_i (z_i - 1) phi_i(x)`` for one example ``{"coins": z}``."""
        return jnp.sum((jnp.asarray(example["coins"]) - 1.0) * self.bumps(x), axis=-1)

    def population_risk(self, x: Any) -> Array:
        """``F_P(x) = sum_i (p_i - 1) phi_i(x)`` (closed form)."""
        return jnp.sum((jnp.asarray(self.biases) - 1.0) * self.bumps(x), axis=-1)

    @property
    def min_population_risk(self) -> float:
        """``min_{B(0,1)} F_P = -(1 - min_i p_i) tau``, at the planted centre."""
        return -(1.0 - float(self.biases.min())) * self.tau

    def excess_population_risk(self, x: Any) -> Array:
        """``F_P(x) - min F_P`` (closed form, exact)."""
        return self.population_risk(x) - self.min_population_risk

    def empirical_risk(self, x: Any, data: Mapping[str, Any]) -> Array:
        """``F_D(x) = sum_i (zbar_i - 1) phi_i(x)`` with ``zbar`` the coins' means."""
        zbar = jnp.mean(jnp.asarray(data["coins"], jnp.float64), axis=0)
        return jnp.sum((zbar - 1.0) * self.bumps(x), axis=-1)

    def bump_index(self, x: Any) -> int:
        """The coin whose bump's open support contains ``x``, or ``-1`` for none."""
        inside = np.flatnonzero(np.asarray(self.bumps(x)) > 0)
        return int(inside[0]) if inside.size else -1

    def sample(self, rng_key: PRNGKey, n: int) -> dict[str, Array]:
        """``n`` examples: independent flips ``coins[j, i] ~ Bern(p_i)``."""
        n = validation.positive_int("n", n)
        u = jax.random.uniform(rng_key, (n, self.k), jnp.float64)
        return {"coins": (u < jnp.asarray(self.biases)).astype(jnp.float64)}

    def voting_data(self, n: int, votes: int, coin: int) -> dict[str, Array]:
        """The privacy-term dataset: ``votes`` examples vote for ``coin``.

        A voting example has ``z_coin = 0`` and every other flip ``1``; the other
        ``n - votes`` examples are all ones (their loss is identically ``0``). Then
        ``F_D = -(votes / n) phi_coin``: the gap between the right bump and any other
        is ``tau votes / n``, and by group privacy an ``eps``-DP algorithm finds
        ``coin`` with constant probability only when ``votes >~ log(k) / eps``.
        """
        n = validation.positive_int("n", n)
        votes = int(votes)
        if votes > n or not 0 <= coin < self.k:
            raise ValueError(f"need 0 <= votes <= n and 0 <= coin < {self.k}")
        coins = np.ones((n, self.k))
        coins[:votes, coin] = 0.0
        return {"coins": jnp.asarray(coins, jnp.float64)}


def planted_coin_bumps(
    rng_key: PRNGKey,
    dim: int,
    n: int,
    *,
    c_delta: float = 0.5,
    tau: float = 0.25,
    min_distance: int | None = None,
    max_codewords: int | None = None,
) -> PlantedCoinBumps:
    """The hard prior of the statistical lower bound (spec 000 section 4.3).

    Every coin has bias ``1/2`` except one, drawn uniformly from ``rng_key``, with
    bias ``1/2 - Delta`` where ``Delta = c_delta sqrt(log k / n)``. By symmetry the
    Bayes-optimal selector is the empirical argmin, and every algorithm's excess
    population risk stays at least a constant times ``tau sqrt(log k / n)``
    (Theorem 5.9 transferred by Theorem 5.10).

    Args:
        rng_key: Key of the planted coin.
        dim: Dimension ``d`` (codewords: :func:`sign_codewords`).
        n: The sample size ``Delta`` is scaled for.
        c_delta: ``Delta / sqrt(log k / n)``, in ``(0, 1]``.
        tau: Bump height and radius (default ``1/4``).
        min_distance: Codeword distance (default ``ceil(d/4)``).
        max_codewords: Cap on ``k``.

    Returns:
        A :class:`PlantedCoinBumps`.

    Raises:
        ValueError: On invalid arguments, or ``Delta >= 1/2``.

    Examples:
        >>> import jax
        >>> from dpsample.datasets import planted_coin_bumps
        >>> inst = planted_coin_bumps(jax.random.key(3), 2, 100)
        >>> inst.k, sorted(set(inst.biases.round(4).tolist()))
        (4, [0.4411, 0.5])
    """
    n = validation.positive_int("n", n)
    c_delta = validation.positive("c_delta", c_delta)
    if c_delta > 1:
        raise ValueError(f"c_delta must lie in (0, 1], got {c_delta}")
    code = sign_codewords(dim, min_distance=min_distance, max_codewords=max_codewords)
    k = code.shape[0]
    delta_gap = c_delta * math.sqrt(math.log(k) / n)
    if delta_gap >= 0.5:
        raise ValueError(f"Delta = {delta_gap:.4g} >= 1/2: n is too small for k={k}")
    planted = int(jax.random.randint(rng_key, (), 0, k))
    biases = np.full(k, 0.5)
    biases[planted] = 0.5 - delta_gap
    distance = math.ceil(dim / 4) if min_distance is None else min_distance
    return PlantedCoinBumps(code, biases, tau, distance)


precision.scope_public(globals())
