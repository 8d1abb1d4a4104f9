"""The options of DP-SPIDER, declared once (:mod:`dpsample.options`).

:class:`DPSpiderOptions` declares every option of
:class:`~dpsample.finders.dp_spider.DPSpider`, in the order the plan's parameter
table lists them: the plan's keywords, the registry's and the TOML schema's
``[options]``, the plan's option rows and the docs' option table (docs/finders.md)
are read from it; :func:`~dpsample.finders.dp_spider.dp_spider` keeps the same
keywords, checked against it by ``tests/test_options.py``.

Examples:
    >>> from dpsample.finders.spider_options import DPSpiderOptions
    >>> list(DPSpiderOptions.parameters())[:3]
    ['x0', 'num_steps', 'phase_length']
    >>> DPSpiderOptions.from_options({"num_steps": 6}).given()
    {'num_steps': 6}
"""

from __future__ import annotations

import dataclasses

from dpsample._src import precision
from dpsample.finders.planning import finder_option
from dpsample.options import Options, option
from dpsample.types import ArrayLike

__all__ = ["SPIDER_THEOREM", "DPSpiderOptions"]

#: The plan's note on a value set by Arora et al.'s Thm B.3 (proof form).
SPIDER_THEOREM = "Arora et al. Thm B.3 (proof form)"
_THEOREM = "theorem"


@dataclasses.dataclass(frozen=True, kw_only=True)
class DPSpiderOptions(Options):
    """Every option of a DP-SPIDER run (:class:`~dpsample.finders.dp_spider.DPSpider`).

    The theorem's values (``None`` defaults) are Arora et al.'s Thm B.3 with the
    proof's ``q`` (module docstring of :mod:`dpsample.finders.dp_spider`); the plan
    labels each with the preset that set it.
    """

    algorithm = "dp_spider"

    x0: ArrayLike | None = finder_option("x0")
    num_steps: int | None = option(
        None, "Steps `T`.", source=_THEOREM, rule=SPIDER_THEOREM
    )
    phase_length: int | None = option(
        None,
        "Phase length `q`: an anchor at every `t` with `q | t` (the proof's "
        "`floor(1/(T abar^2))`).",
        source=_THEOREM,
        rule=SPIDER_THEOREM,
    )
    learning_rate: float | None = option(
        None, "Step size `eta` (`1/(2 beta)`).", source=_THEOREM, rule=SPIDER_THEOREM
    )
    anchor_batch_size: int | None = option(
        None,
        "Anchor batch `b_1` (full-batch anchors).",
        source=_THEOREM,
        rule="Thm B.3: b1 = n",
    )
    variation_batch_size: int | None = option(
        None, "Variation batch `b_2`.", source=_THEOREM, rule=SPIDER_THEOREM
    )
    sampling: str = option(
        "poisson",
        "Scheme of the sub-`n` batches: `'poisson'` (truncated padded Poisson, "
        "PLD) or `'without_replacement'` (RDP); a batch of `n` is the full batch.",
    )
    enforce_sensitivity: bool = option(
        True,
        "Clip per-example terms at the declared bounds; `False`: Arora et al.'s "
        "unclipped recursion, conditional on the declared constants.",
        rule="clipping enforces the declared G and M",
    )
    preset: str = finder_option("preset")
    output: str | None = finder_option("output")
    project: bool = finder_option("project")
    return_iterates: bool = finder_option("return_iterates")
    initial_gap: float | None = finder_option("initial_gap")


precision.scope_public(globals())
