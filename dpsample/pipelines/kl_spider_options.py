"""The options of KL-Spider, declared once (:mod:`dpsample.options`).

:class:`KLSpiderOptions` declares every option of
:class:`~dpsample.pipelines.kl_spider.KLSpider`, in the order the plan's parameter
table lists them: the plan's keywords, the registry's and the TOML schema's
``[options]`` (a warm start's ``sampler_options`` included), the plan's option rows
and the docs' option table (docs/warm_start.md) are read from it;
:func:`~dpsample.pipelines.kl_spider.kl_spider` keeps the same keywords (``kl_gamma``
and ``kl_exponent`` required there), checked against it by ``tests/test_options.py``.
``x0`` is the option the first-order finders share
(:func:`~dpsample.finders.planning.finder_option`); ``initial_gap`` is not theirs
(KL-Spider's ``F0``, default ``(L gamma)^kappa``). The plan makes the rows of ``x0``
(the centre of ``K``) and ``num_rounds`` (Menart's ``K``, or the most rounds whose
schedule fits ``max_evaluations``); the declaration's rule is the usual one.

Examples:
    >>> from dpsample.pipelines.kl_spider_options import KLSpiderOptions
    >>> list(KLSpiderOptions.parameters())[:3]
    ['kl_gamma', 'kl_exponent', 'initial_gap']
    >>> KLSpiderOptions.from_options({"kl_gamma": 0.5, "kl_exponent": 2.0}).given()
    {'kl_gamma': 0.5, 'kl_exponent': 2.0}
"""

from __future__ import annotations

import dataclasses

from dpsample._src import precision
from dpsample.finders.planning import finder_option
from dpsample.options import Options, option
from dpsample.types import ArrayLike

__all__ = ["KLSpiderOptions"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class KLSpiderOptions(Options):
    """Every option of a KL-Spider run (Menart et al. 2023, Algorithm 1; seed 003 §2.5).

    ``kl_gamma`` and ``kl_exponent`` have no default: the plan refuses to run
    without the declared KL* constants. The schedule (``K``, the levels, the noise)
    is :func:`~dpsample.pipelines.kl_spider_schedule.kl_spider_schedule`'s.
    """

    algorithm = "kl_spider"

    kl_gamma: float | None = option(
        None,
        "Declared KL* constant `gamma > 0`.",
        rule="required: the plan refuses to run without it",
        note="declared",
    )
    kl_exponent: float | None = option(
        None,
        "Declared KL* exponent `kappa` in `[1, 2]` (required; `mu`-PL* is "
        "`kappa = 2`, `gamma = 1/sqrt(2 mu)`).",
        rule="required: the plan refuses to run without it",
        note="declared",
    )
    initial_gap: float | None = option(
        None,
        "Public `F0 >= F_D(x0) - inf F_D`.",
        rule="(L gamma)^kappa (KL* at x0, spec A2)",
    )
    x0: ArrayLike | None = finder_option("x0")
    failure_prob: float | None = option(
        None, "`psi`'s failure probability `beta`.", rule="sqrt(d)/(eps n)"
    )
    num_rounds: int | None = option(
        None,
        "Rounds `K`; a value over `max_evaluations` is refused.",
        source="theorem",
        rule="Menart's K (kl_spider_schedule), capped by max_evaluations",
    )
    minimizer_gap: float = option(
        0.0, "Added to `psi`: a public bound on `min_K F_D - inf F_D`."
    )
    diagnostics: bool = option(
        False,
        "Put the non-private count of unfrozen steps in `info['diagnostics']` "
        "(never release it).",
    )


precision.scope_public(globals())
