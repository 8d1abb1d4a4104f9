"""The quasar-convex warm start's options, declared once (:mod:`dpsample.options`).

:class:`QuasarSGDOptions` declares every option of
:class:`~dpsample.pipelines.quasar.QuasarSGD` (registry name ``"quasar_sgd"``), in the
order of :func:`~dpsample.pipelines.quasar.dp_sgd_quasar`'s keywords: the plan's
keywords, the registry's and the TOML schema's ``[options]``, the plan's option rows
and the docs' option table (docs/warm_start.md) are read from it;
:func:`~dpsample.pipelines.quasar.dp_sgd_quasar` keeps the same keywords
(``quasar_convexity`` and ``failure_prob`` required there), checked against it by
``tests/test_options.py``. ``x0`` is the first-order finders' shared declaration
(:func:`~dpsample.finders.planning.finder_option`); it has no row (the start is in
the run's stage plan). ``num_steps``' row is made with the rule that set it (the
proposition, or the compute cap ``max_evaluations``).

Examples:
    >>> from dpsample.pipelines.quasar_options import QuasarSGDOptions
    >>> list(QuasarSGDOptions.parameters())[:3]
    ['quasar_convexity', 'failure_prob', 'x0']
    >>> QuasarSGDOptions.from_options({"num_runs": 3}).given()
    {'num_runs': 3}
"""

from __future__ import annotations

import dataclasses

from dpsample._src import precision
from dpsample.finders.planning import finder_option
from dpsample.options import Options, option
from dpsample.types import ArrayLike

__all__ = ["MAX_STEPS", "QuasarSGDOptions"]

#: The most full-batch steps a run takes by default (``T`` grows like ``(eps n)^2``).
MAX_STEPS = 2_000


@dataclasses.dataclass(frozen=True, kw_only=True)
class QuasarSGDOptions(Options):
    """Every option of seed 003 Algorithm 3 (best of ``k`` DP-SGD runs).

    ``quasar_convexity`` is required (the plan refuses ``None``); it affects ``psi``
    (utility) only, never privacy.
    """

    algorithm = "quasar_sgd"

    quasar_convexity: float | None = option(
        None,
        "The declared `q` in `(0, 1]` of the loss's quasar-convexity (required; "
        "utility only).",
        rule="refused (required)",
        note="declared",
    )
    failure_prob: float | None = option(
        None,
        "`zeta` in `(0, 1)` of the warm-start bound `psi`.",
        rule="sqrt(d)/(eps n)",
    )
    x0: ArrayLike | None = finder_option("x0")
    num_steps: int | None = option(
        None,
        "Each run's full-batch steps `T`.",
        source="theorem",
        rule=f"Prop. D.1: T = eps_r^2 n^2/(d ln(1/delta_r)), at most {MAX_STEPS}",
    )
    num_runs: int | None = option(
        None,
        "The number `k` of runs (given: `psi`'s failure probability is "
        "`2^{-k} + zeta/2`).",
        source="theorem",
        rule="ceil(log2(2/zeta))",
    )
    minimizer_gap: float = option(
        0.0,
        "The declared `g >= min_K F_D - inf F_D`, added to `psi` (`0`: `K` holds a "
        "global minimizer).",
    )


precision.scope_public(globals())
