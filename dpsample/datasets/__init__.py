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

Every name is importable from here; they live in :mod:`dpsample.datasets.bundled`
(scikit-learn), :mod:`dpsample.datasets.synthetic` and
:mod:`dpsample.datasets.lower_bound`.
"""

from __future__ import annotations

from dpsample.datasets.bundled import (
    HOLDOUT_PARTS,
    SKLEARN_DATASETS,
    SKLEARN_METADATA,
    SklearnMetadata,
    holdout_split,
    load_sklearn,
    sklearn_shape,
)
from dpsample.datasets.lower_bound import (
    PlantedCoinBumps,
    planted_coin_bumps,
    sign_codewords,
)
from dpsample.datasets.synthetic import (
    PAPER_SHAPES,
    PaperShape,
    make_classification,
    make_paper_shaped,
    make_regression,
    paper_dataset,
)

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
