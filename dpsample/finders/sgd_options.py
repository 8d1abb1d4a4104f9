"""The options of DP-SGD, declared once (:mod:`dpsample.options`).

:class:`DPSGDOptions` declares every option of :class:`~dpsample.finders.dp_sgd.DPSGD`,
in the order the plan's parameter table lists them: the plan's keywords, the
registry's and the TOML schema's ``[options]``, the plan's option rows and the docs'
option table (docs/finders.md) are read from it;
:func:`~dpsample.finders.dp_sgd.dp_sgd` keeps the same keywords, checked against it
by ``tests/test_options.py``. The schedule's rows (``num_steps``, ``batch_size``,
``learning_rate``, ``initial_gap``) and ``clip_norm`` are made by the plan, which
names the rule that set each value (the theorem's, the non-smooth schedule's, the
full batch); the declaration's rule is the usual one.

Examples:
    >>> from dpsample.finders.sgd_options import DPSGDOptions
    >>> list(DPSGDOptions.parameters())[:3]
    ['x0', 'num_steps', 'batch_size']
    >>> DPSGDOptions.from_options({"sampling": "full_batch"}).given()
    {'sampling': 'full_batch'}
"""

from __future__ import annotations

import dataclasses

from dpsample._src import precision
from dpsample.finders.planning import finder_option
from dpsample.options import Options, option
from dpsample.types import ArrayLike

__all__ = ["DPSGDOptions"]

_THEOREM = "theorem"


@dataclasses.dataclass(frozen=True, kw_only=True)
class DPSGDOptions(Options):
    """Every option of a DP-SGD run (:class:`~dpsample.finders.dp_sgd.DPSGD`).

    The theorem's values (``None`` defaults) are seed 002's Theorem 3.4 schedule, or
    without a declared smoothness the projected subgradient method's (module
    docstring of :mod:`dpsample.finders.dp_sgd`); the plan labels each with the
    preset that set it.
    """

    algorithm = "dp_sgd"

    x0: ArrayLike | None = finder_option("x0")
    num_steps: int | None = option(
        None,
        "Steps `T`.",
        source=_THEOREM,
        rule="seed 002 Thm 3.4 T = 64 f_max/(eta alpha^2) (no smoothness: 10 epochs)",
    )
    batch_size: int | None = option(
        None,
        "Batch `b` (expected size for Poisson).",
        rule="Abadi's lot-size condition (no smoothness: min(256, n // 20))",
    )
    max_batch_size: int | None = option(
        None,
        "Poisson padded size (truncation is accounted in every case).",
        source="derived",
        rule="overflow probability <= 1e-12",
    )
    learning_rate: float | None = option(
        None,
        "Step size `eta`.",
        source=_THEOREM,
        rule="seed 002 Lemma B.2: 1/(2M) (no smoothness: D / (C sqrt T))",
    )
    clip_norm: float | None = option(
        None,
        "Per-example clipping norm `c`; `C = min(c, G)` (clipped mode only).",
        source="derived",
        rule="the declared lipschitz G (clipping enforces it)",
    )
    enforce_sensitivity: bool = option(
        True,
        "Clip per-example gradients at `C`; `False`: seed 002's unclipped "
        "Algorithm 2, conditional on the declared `G`.",
        rule="clipping enforces the sensitivity",
    )
    sampling: str = option(
        "poisson", "`'poisson'`, `'without_replacement'` or `'full_batch'`."
    )
    gradient_bound_failure: float = option(
        0.0,
        "`delta_E`: the probability that a per-example gradient exceeds `C` "
        "(`enforce_sensitivity=False` only).",
    )
    preset: str = finder_option("preset")
    output: str | None = finder_option("output")
    project: bool = finder_option("project")
    gradient_dtype: str = option(
        "float64",
        "`'float64'` or `'float32'` (clipped mode only): dtype of the per-example "
        "gradients and their clipped sum.",
    )
    return_iterates: bool = finder_option("return_iterates")
    initial_gap: float | None = finder_option("initial_gap")


precision.scope_public(globals())
