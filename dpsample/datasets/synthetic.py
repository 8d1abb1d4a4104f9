"""Synthetic data from an explicit JAX PRNG key, and seed 001's dataset shapes.

:func:`make_classification` and :func:`make_regression` draw rows of norm at most 1;
:func:`make_paper_shaped` and :func:`paper_dataset` give data shaped and
preprocessed like seed 001's experiments (:data:`PAPER_SHAPES`: **synthetic**
stand-ins of Covertype and IJCNN, and scikit-learn's bundled breast cancer data).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp

from dpsample._src import precision, validation
from dpsample.datasets.bundled import SKLEARN_METADATA, load_sklearn
from dpsample.types import Array, PRNGKey

__all__ = [
    "make_classification",
    "make_regression",
    "PaperShape",
    "PAPER_SHAPES",
    "make_paper_shaped",
    "paper_dataset",
]


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


precision.scope_public(globals())
