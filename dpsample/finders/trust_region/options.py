"""The options of DP-TR and DP-STR, declared once (:mod:`dpsample.options`).

:class:`DPTrustRegionOptions` and :class:`DPStochasticTrustRegionOptions` declare every
option of :class:`~dpsample.finders.trust_region.DPTrustRegion` and
:class:`~dpsample.finders.trust_region.DPStochasticTrustRegion`, in the order the
plan's parameter table lists them; the options they share are declared once, in a
:class:`~dpsample.options.SharedOptions` table (:func:`tr_option`). The plans'
keywords, the registry's and the TOML schema's ``[options]``, the plans' option rows
and the docs' option tables (docs/finders.md) are read from them;
:func:`~dpsample.finders.trust_region.dp_trust_region` and
:func:`~dpsample.finders.trust_region.dp_stochastic_trust_region` keep the same
keywords (``x0`` required there), checked against them by ``tests/test_options.py``.
``preset`` is the first-order finders' (:mod:`dpsample.finders.presets`:
``"practical"``, the default, or ``"theorem"``, Theorem 15/18's schedule, stopping
rule and output) and ``output`` the rule of :mod:`dpsample.finders.outputs`. The
schedule's rows (``initial_gap``, ``alpha``, ``num_iters``, ``radius``,
``stop_threshold``: :func:`~dpsample.finders.trust_region.schedule.tr_schedule`, which
names the rule that set each value, the compute cap's included), ``x0``,
``hessian_rank``, ``enforce_sensitivity`` and DP-STR's batch sizes are made by the
plans' helpers; the declaration's rule is the usual one.

Examples:
    >>> from dpsample.finders.trust_region.options import DPTrustRegionOptions
    >>> list(DPTrustRegionOptions.parameters())[:3]
    ['x0', 'preset', 'initial_gap']
    >>> DPTrustRegionOptions.from_options({"calibration": "paper"}).given()
    {'calibration': 'paper'}
"""

from __future__ import annotations

import dataclasses
from typing import Any

from dpsample._src import precision
from dpsample.finders.planning import finder_option
from dpsample.options import Options, SharedOptions, option
from dpsample.types import ArrayLike

__all__ = ["DPStochasticTrustRegionOptions", "DPTrustRegionOptions", "tr_option"]

_THEOREM = "theorem"

#: The options DP-TR and DP-STR share: (default, doc, source, rule).
_TR_OPTIONS = SharedOptions(
    x0=(None, "Public start, shape `(d,)`.", "default", "the origin"),
    output=(
        None,
        "The released point: `'tail_average'` (the mean of the last half of the "
        "iterates that ran), `'last'` (the theorem's: the iterate at which the "
        "stopping rule fired, else `w_T`) or `'random'` (`dpsample.finders.outputs`).",
        "default",
        "the preset's",
    ),
    initial_gap=(
        None,
        "Public bound `Delta >= L(x0) - min L` of the theorem's `T`.",
        "default",
        "the declared loss_range B",
    ),
    alpha=(
        None,
        "SOSP accuracy `alpha`.",
        "default",
        "0.1, the value of every experiment of seed 001",
    ),
    num_iters=(
        None,
        "Iterations `T` (the stopping rule may end the run earlier).",
        _THEOREM,
        "Theorem 15/18: T = ceil(6 sqrt(rho) Delta / alpha^1.5); preset "
        "'practical': at most phi n^2 / (64 d k) (the Hessian noise below M / 2)",
    ),
    radius=(None, "Trust-region radius `r`.", _THEOREM, "sqrt(alpha / rho)"),
    stop_threshold=(
        None,
        "Threshold on the multiplier `lambda_k` of the stopping rule (`None` under "
        "preset 'practical': no early stop, the whole run is averaged).",
        _THEOREM,
        "sqrt(alpha rho) (preset 'theorem')",
    ),
    hessian_rank=(
        None,
        "Public bound `k` on the rank of per-example Hessian differences (the "
        "Hessian noise is `sqrt(k) M` over the batch).",
        "default",
        "p (the paper's sqrt(p) factor)",
    ),
    enforce_sensitivity=(
        True,
        "Clip per-example gradients at `G` and Hessians' upper triangles at "
        "`sqrt(k) M`; `False`: the paper's unclipped algorithm, conditional.",
        "default",
        "clipped at G and sqrt(k) M",
    ),
    return_iterates=(
        False,
        "Put all iterates in `info['iterates']`.",
        "default",
        "",
    ),
)


def tr_option(name: str) -> Any:
    """The declared field of an option DP-TR and DP-STR share.

    One of ``x0``, ``output``, ``initial_gap``, ``alpha``, ``num_iters``, ``radius``,
    ``stop_threshold``, ``hessian_rank``, ``enforce_sensitivity`` and
    ``return_iterates``: the same default, doc, source and rule in both.

    Examples:
        >>> import dataclasses
        >>> from dpsample.finders.trust_region.options import tr_option
        >>> from dpsample.options import Options
        >>> @dataclasses.dataclass(frozen=True, kw_only=True)
        ... class Opts(Options):
        ...     radius: float | None = tr_option("radius")
        >>> Opts().radius is None
        True
    """
    return _TR_OPTIONS.field(name)


@dataclasses.dataclass(frozen=True, kw_only=True)
class DPTrustRegionOptions(Options):
    """Every option of a DP-TR run (seed 001 Algorithm 1, Theorems 14-15).

    The theorem's values (``None`` defaults) are Theorem 15's schedule at the
    accuracy ``alpha``; under ``Budget.max_evaluations`` the plan relaxes ``alpha``
    to the smallest value whose schedule fits, and its rows say so.
    """

    algorithm = "dp_trust_region"

    x0: ArrayLike | None = tr_option("x0")
    preset: str = finder_option("preset")
    initial_gap: float | None = tr_option("initial_gap")
    alpha: float | None = tr_option("alpha")
    num_iters: int | None = tr_option("num_iters")
    radius: float | None = tr_option("radius")
    stop_threshold: float | None = tr_option("stop_threshold")
    hessian_rank: int | None = tr_option("hessian_rank")
    enforce_sensitivity: bool = tr_option("enforce_sensitivity")
    calibration: str = option(
        "tight",
        "`'tight'` (the accountant's smallest noise multiplier) or `'paper'` "
        "(zCDP, Lemma 7).",
    )
    output: str | None = tr_option("output")
    return_iterates: bool = tr_option("return_iterates")


@dataclasses.dataclass(frozen=True, kw_only=True)
class DPStochasticTrustRegionOptions(Options):
    """Every option of a DP-STR run (seed 001 Algorithm 2, Theorems 17-18).

    As :class:`DPTrustRegionOptions` (Theorem 18's schedule), with the two batch
    sizes and the accounting in place of the calibration.
    """

    algorithm = "dp_stochastic_trust_region"

    x0: ArrayLike | None = tr_option("x0")
    preset: str = finder_option("preset")
    grad_batch_size: int | None = option(
        None,
        "Gradient batch `|S|` (uniform without replacement, fresh every iteration).",
        source=_THEOREM,
        rule="ceil(G^2 ln(p/zeta)/alpha^2) (Theorem 18, str_batch_sizes)",
    )
    hessian_batch_size: int | None = option(
        None,
        "Hessian batch `|B_H|`, independent of `S`.",
        source=_THEOREM,
        rule="ceil(M^2 ln(p/zeta)/(alpha rho)) (Theorem 18, str_batch_sizes); "
        "preset 'practical': the gradient batch |S|",
    )
    initial_gap: float | None = tr_option("initial_gap")
    alpha: float | None = tr_option("alpha")
    num_iters: int | None = tr_option("num_iters")
    radius: float | None = tr_option("radius")
    stop_threshold: float | None = tr_option("stop_threshold")
    hessian_rank: int | None = tr_option("hessian_rank")
    enforce_sensitivity: bool = tr_option("enforce_sensitivity")
    accounting: str = option(
        "tight",
        "`'tight'` (the accountant's smallest multiplier on what ran), `'strict'` "
        "(Theorem 17, c = 512, replace-one) or `'paper'` (c = 256).",
    )
    output: str | None = tr_option("output")
    return_iterates: bool = tr_option("return_iterates")


precision.scope_public(globals())
