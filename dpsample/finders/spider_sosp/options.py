"""The options of Stochastic Spider SOSP, declared once (:mod:`dpsample.options`).

:class:`SpiderSOSPOptions` declares every option of
:class:`~dpsample.finders.spider_sosp.SpiderSOSP`: the plan's keywords, the
registry's and the TOML schema's ``[options]``, the plan's option rows and the docs'
option table (docs/finders.md) are read from it;
:func:`~dpsample.finders.spider_sosp.spider_sosp` keeps the same keywords, checked
against it by ``tests/test_options.py``. ``x0`` and ``initial_gap`` are the options
the first-order finders share (:func:`~dpsample.finders.planning.finder_option`; on
:class:`~dpsample.domains.Unconstrained` the centre of the domain is the origin);
``preset`` is not theirs (``'practical'``, ``'practical_iterate'`` or ``'paper'``,
:data:`SPIDER_PRESETS`).

The rows whose rule the plan names at run time are made there
(:func:`~dpsample.finders.spider_sosp.schedule.option_rows`): ``num_iters`` (the
preset's rule and the compute cap), ``drift_threshold`` (Theorem 4.2 or 4.6),
``selection_share`` (unused by the population variant), ``alpha`` (shown as the
schedule's ``alpha_kick``), ``enforce_sensitivity`` and ``calibration`` (the note of
the value given); the declaration's rule is the usual one.

Examples:
    >>> from dpsample.finders.spider_sosp.options import SpiderSOSPOptions
    >>> list(SpiderSOSPOptions.parameters())[:3]
    ['x0', 'variant', 'preset']
    >>> SpiderSOSPOptions.from_options({"variant": "population"}).given()
    {'variant': 'population'}
"""

from __future__ import annotations

import dataclasses

from dpsample._src import precision
from dpsample.finders.planning import finder_option
from dpsample.options import Options, option
from dpsample.types import ArrayLike

__all__ = ["SpiderSOSPOptions"]

_THEOREM = "theorem"


@dataclasses.dataclass(frozen=True, kw_only=True)
class SpiderSOSPOptions(Options):
    """Every option of a Stochastic Spider SOSP run (seed 000 Algorithms 1-2).

    The theorem's values (``None`` defaults) are Theorem 4.2's (empirical) or
    4.6's (population) at the calibrated zCDP budget, with the preset's constants
    (:class:`~dpsample.finders.spider_sosp.SpiderSOSP` documents the schedule).
    """

    algorithm = "spider_sosp"

    x0: ArrayLike | None = finder_option("x0")
    variant: str = option(
        "empirical",
        "`'empirical'` (Eq. (2), Theorem 4.2: both stages see all of `D`) or "
        "`'population'` (Eq. (3), Theorem 4.6: disjoint halves `D1`, `D2`).",
        rule="empirical risk (Theorem 4.2)",
    )
    preset: str = option(
        "practical",
        "`'practical'` (non-paper: T from one O1 anchor's error, Algorithm 2 "
        "examines the tail average first; `SPIDER_PRESETS`), `'practical_iterate'` "
        "(the default before issue 24: non-paper constants, T from gamma, an iterate "
        "released) or `'paper'` (every O(.) constant 1).",
        rule="non-paper: T from one O1 anchor's error, tail average examined first "
        "(SPIDER_PRESETS)",
    )
    failure_prob: float = option(
        0.05, "The failure probability `omega`.", rule="omega = 0.05"
    )
    drift_threshold: float | None = option(
        None,
        "The drift threshold `kappa` (an `O1` call when the squared movement "
        "reaches it).",
        source=_THEOREM,
        rule="kappa of Thm 4.2 (Thm 4.6 for the population variant)",
    )
    num_iters: int | None = option(
        None,
        "Iterations `T` (exactly `T` run); a value over `max_evaluations` is refused.",
        rule="the preset's: T = c_T B M / zeta1(T)^2 (practical, empirical; else "
        "c_T B M / gamma^2); c_T B M / gamma^2 (practical_iterate); B M L^4 / "
        "gamma^2, Thm 4.2/4.6 (paper, source theorem)",
    )
    max_o1_calls: int | None = option(
        None,
        "The `O1` cap `N1_max` (charged at the cap).",
        source=_THEOREM,
        rule="N1_drift (+ N1_kick when separate), <= T",
    )
    alpha: float | None = option(
        None,
        "SOSP accuracy `alpha_1`: the kick threshold and Algorithm 2's `alpha` "
        "(the plan's `alpha_kick`).",
        rule="c_alpha gamma (practical); gamma log^3(B M d/(rho omega)) (paper, "
        "source theorem)",
    )
    kick_mode: str = option(
        "o1",
        "`'o1'` (the paper's: kicks call `O1`) or `'perturb'` (non-paper: no kick "
        "`O1` calls).",
        rule="kicks call O1 (Algorithm 1)",
    )
    kick_budget: str | None = option(
        None,
        "`'shared'` (kick `O1` calls count toward Lemma 3.7's cap) or `'separate'` "
        "(cap = drift bound + kick bound); `'none'` with `kick_mode='perturb'`.",
        rule="shared for the paper preset, else separate",
    )
    initial_gap: float | None = finder_option("initial_gap")
    calibration: str = option(
        "accountant",
        "`'accountant'` (the largest zCDP `phi` whose exact guarantee meets "
        "`(epsilon, delta)`) or `'closed_form'` (Lemma A.4's `phi`).",
        rule="exact accountant",
    )
    selection_order: str = option(
        "backward",
        "The public order of Algorithm 2's candidates: `'backward'` (`x_T` first, "
        "non-paper) or `'forward'` (the paper's).",
        rule="x_T first (non-paper; AboveThreshold's guarantee does not depend on "
        "the public order)",
    )
    selection_share: float = option(
        0.5,
        "Algorithm 2's share `s` of `phi` in the empirical variant (not used by "
        "the population variant).",
        rule="Algorithm 2's share of phi (the paper's 1/2)",
    )
    enforce_sensitivity: bool = option(
        True,
        "Clip `O1`'s gradients at `G` and `O2`'s differences at `min(M ||x - y||, "
        "2G)`; `False`: the paper's unclipped oracles, conditional.",
        rule="O1/O2 clip at the declared G and M",
    )


precision.scope_public(globals())
