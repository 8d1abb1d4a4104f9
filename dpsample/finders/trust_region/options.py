"""The options of DP-TR, declared once (:mod:`dpsample.options`).

:class:`DPTrustRegionOptions` declares every option of
:class:`~dpsample.finders.trust_region.DPTrustRegion`, in the order the plan's
parameter table lists them: the plan's keywords, the registry's and the TOML schema's
``[options]``, the plan's option rows and the docs' option table (docs/finders.md) are
read from it; :func:`~dpsample.finders.trust_region.dp_trust_region` keeps the same
keywords (``x0`` required there), checked against it by ``tests/test_options.py``.
The schedule's rows (``initial_gap``, ``alpha``, ``num_iters``, ``radius``,
``stop_threshold``: :func:`~dpsample.finders.trust_region.schedule.tr_schedule`, which
names the rule that set each value, the compute cap's included), ``x0``,
``hessian_rank`` and ``enforce_sensitivity`` are made by the plan's helpers; the
declaration's rule is the usual one.

Examples:
    >>> from dpsample.finders.trust_region.options import DPTrustRegionOptions
    >>> list(DPTrustRegionOptions.parameters())[:3]
    ['x0', 'initial_gap', 'alpha']
    >>> DPTrustRegionOptions.from_options({"calibration": "paper"}).given()
    {'calibration': 'paper'}
"""

from __future__ import annotations

import dataclasses

from dpsample._src import precision
from dpsample.options import Options, option
from dpsample.types import ArrayLike

__all__ = ["DPTrustRegionOptions"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class DPTrustRegionOptions(Options):
    """Every option of a DP-TR run (seed 001 Algorithm 1, Theorems 14-15).

    The theorem's values (``None`` defaults) are Theorem 15's schedule at the
    accuracy ``alpha``; under ``Budget.max_evaluations`` the plan relaxes ``alpha``
    to the smallest value whose schedule fits, and its rows say so.
    """

    algorithm = "dp_trust_region"

    x0: ArrayLike | None = option(
        None, "Public start, shape `(d,)`.", rule="the origin"
    )
    initial_gap: float | None = option(
        None,
        "Public bound `Delta >= L(x0) - min L` of the theorem's `T`.",
        rule="the declared loss_range B",
    )
    alpha: float | None = option(
        None,
        "SOSP accuracy `alpha`.",
        rule="0.1, the value of every experiment of seed 001",
    )
    num_iters: int | None = option(
        None,
        "Iterations `T` (the stopping rule may end the run earlier).",
        source="theorem",
        rule="Theorem 15/18: T = ceil(6 sqrt(rho) Delta / alpha^1.5)",
    )
    radius: float | None = option(
        None, "Trust-region radius `r`.", source="theorem", rule="sqrt(alpha / rho)"
    )
    stop_threshold: float | None = option(
        None,
        "Threshold on the multiplier `lambda_k` of the stopping rule.",
        source="theorem",
        rule="sqrt(alpha rho)",
    )
    hessian_rank: int | None = option(
        None,
        "Public bound `k` on the rank of per-example Hessian differences (the "
        "Hessian noise is `sqrt(k) M / n`).",
        rule="p (the paper's sqrt(p) factor)",
    )
    enforce_sensitivity: bool = option(
        True,
        "Clip per-example gradients at `G` and Hessians' upper triangles at "
        "`sqrt(k) M`; `False`: the paper's unclipped algorithm, conditional.",
        rule="clipped at G and sqrt(k) M",
    )
    calibration: str = option(
        "tight",
        "`'tight'` (the accountant's smallest noise multiplier) or `'paper'` "
        "(zCDP, Lemma 7).",
    )
    return_iterates: bool = option(False, "Put all iterates in `info['iterates']`.")


precision.scope_public(globals())
