"""The warm-start pipeline's options, declared once (:mod:`dpsample.options`).

:class:`WarmStartOptions` declares every option of
:class:`~dpsample.pipelines.warm_start.WarmStart` (registry name ``"warm_start"``), in
the order the plan's parameter table lists the rows it has: the plan's keywords, the
registry's and the TOML schema's ``[options]``, the plan's option rows and the docs'
option table (docs/warm_start.md) are read from it;
:func:`~dpsample.pipelines.warm_start.warm_start` keeps the same keywords (plus the
net's ``spacing``, ``net``, ``max_points`` and ``chunk_size``, which it folds into
``sampler_options``, and :meth:`~dpsample.pipelines.warm_start.WarmStart.solve`'s
``ledger`` and ``max_evaluations``), checked against it by ``tests/test_options.py``.

The plan's table has a row for each option in :data:`TABLE_OPTIONS` (the stages'
options, the caller's psi and the diagnostics switch are no rows of it: the stage
plans and ``psi``'s row show them); ``delta_split``'s row is the derived pair of the
stages' deltas, and the derived rows follow the option they belong to
(:func:`~dpsample.pipelines.warm_start_plan.params_table`).

Examples:
    >>> from dpsample.pipelines.warm_start_options import WarmStartOptions
    >>> list(WarmStartOptions.parameters())[:4]
    ['sampler', 'finder', 'variant', 'split']
    >>> WarmStartOptions.from_options({"spend": "split"}).given()
    {'spend': 'split'}
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from dpsample._src import precision
from dpsample.base import PrivateAlgorithm
from dpsample.domains import Ball
from dpsample.options import Options, option
from dpsample.pipelines.data_split import DataSplit

__all__ = ["TABLE_OPTIONS", "WarmStartOptions"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class WarmStartOptions(Options):
    """Every option of a warm start (seed 003 Algorithms 2 and 4).

    With no ``sampler`` the default rule (:func:`~dpsample.pipelines.choose_sampler`)
    chooses stage A and its share of epsilon, or starts cold (the finder alone with
    the whole budget); the plan's ``sampler`` and ``default_rule`` rows say which
    rule fired.
    """

    algorithm = "warm_start"

    sampler: PrivateAlgorithm | str | None = option(
        None,
        "Stage A: a sampler object or registry name (`net`, `gibbs`, `quasar_sgd`, "
        "`kl_spider`).",
        rule="the default rule: the first of DEFAULT_SAMPLERS whose psi <= "
        "PSI_SHARE loss_range within the compute cap, else a cold start",
    )
    finder: PrivateAlgorithm | str | None = option(
        None,
        "Stage B: a finder object or registry name with an `initial_gap` option.",
        rule="DEFAULT_FINDER (dp_sgd)",
    )
    variant: str | DataSplit = option(
        "erm",
        "`'erm'` (Algorithm 2, shared data), `'population'` (Algorithm 4, disjoint "
        "halves) or a `DataSplit`.",
    )
    split: float | None = option(
        None,
        "Stage A's share of epsilon, in `(0, 1)`.",
        rule="the default rule's least share whose psi qualifies (WARM_SPLITS); "
        "1/2 with a given sampler",
    )
    spend: str = option(
        "all",
        "`'all'` (the finder takes what the sampler's plan leaves, calibrated on "
        "the composition) or `'split'` (fixed shares).",
    )
    delta_split: float | None = option(
        None,
        "Stage A's share of delta (refused for a pure sampler).",
        source="derived",
        rule="1/2; 0 for a pure sampler",
    )
    failure_prob: float | None = option(
        None,
        "`zeta` of psi (with probability `>= 1 - zeta` the warm start's excess "
        "risk is `<= psi`).",
        rule="sqrt(d)/(eps n) (Theorem 3.2)",
    )
    minimizer_gap: float = option(
        0.0,
        "The declared `g_W >= min_K F - inf F`, added to psi (`0`: `K` holds a "
        "global minimizer).",
    )
    sampler_options: Mapping[str, Any] | None = option(
        None,
        "Options of the sampler (its plan's keywords, but `failure_prob` and "
        "`minimizer_gap`); needs an explicit `sampler`.",
    )
    finder_options: Mapping[str, Any] | None = option(
        None,
        "Options of the finder (its plan's keywords, but `x0` and `initial_gap`, "
        "which the pipeline sets).",
    )
    sampler_domain: Ball | None = option(
        None,
        "The public ball `K` the warm start searches when the problem is on "
        "`Unconstrained`.",
        rule="the problem's Ball",
    )
    declared_psi: float | None = option(
        None,
        "A public psi the caller vouches for (utility only).",
        rule="the sampler plan's bound",
    )
    declared_psi_failure_prob: float | None = option(
        None, "The failure probability of `declared_psi`.", rule="zeta"
    )
    diagnostics: bool = option(
        False,
        "Add NOT PRIVATE diagnostics computed on the data (never release them).",
    )


#: The options with a row of their own in the plan's table, in its order.
TABLE_OPTIONS = (
    "sampler",
    "finder",
    "variant",
    "split",
    "spend",
    "delta_split",
    "failure_prob",
    "minimizer_gap",
)


precision.scope_public(globals())
