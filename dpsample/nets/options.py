"""The net exponential mechanism's options, declared once (:mod:`dpsample.options`).

:class:`NetOptions` declares every option of
:class:`~dpsample.nets.mechanism.NetExponentialMechanism` (registry name ``"net"``), in
the order the plan's parameter table lists them: the plan's keywords, the registry's
and the TOML schema's ``[options]``, the plan's option rows and the docs' option table
(docs/nets.md) are read from it; :func:`~dpsample.nets.mechanism.exponential_mechanism`
keeps the same keywords, checked against it by ``tests/test_options.py``. The rows of
``net`` and ``spacing`` are made by the plan, which names the rule that set the net
(the theorem's radius, the compute cap, the caller's spacing or net); the default
``chunk_size``'s note is the device's rule (:func:`dpsample.nets.stream.chunk_rule`),
stated when the plan is made.

Examples:
    >>> from dpsample.nets.options import NetOptions
    >>> list(NetOptions.parameters())[:3]
    ['net', 'spacing', 'chunk_size']
    >>> NetOptions.from_options({"max_points": 1000}).given()
    {'max_points': 1000}
"""

from __future__ import annotations

import dataclasses

from dpsample._src import precision
from dpsample.nets.grid import GridNet
from dpsample.nets.points import PointNet
from dpsample.options import Options, option
from dpsample.types import ArrayLike

__all__ = ["MAX_POINTS", "NetOptions"]

#: Default cap on the number of net points (``max_points``).
MAX_POINTS = 10**8


@dataclasses.dataclass(frozen=True, kw_only=True)
class NetOptions(Options):
    """Every option of the net exponential mechanism (Theorem 5.8).

    The theorem's net (no ``net`` nor ``spacing`` given) is the grid of covering
    radius ``r = D d/(eps n)``; under ``Budget.max_evaluations`` its spacing grows by
    5% steps until the net fits (the plan's ``net`` row says which rule set it).
    """

    algorithm = "net"

    net: GridNet | PointNet | ArrayLike | None = option(
        None,
        "A data-independent `GridNet` of the same ball, a `PointNet`, or points "
        "`(N, d)` in `K`; exclusive with `spacing`.",
        source="theorem",
        rule="grid net of covering radius r = D d/(eps n) (Thm 5.8)",
    )
    spacing: float | None = option(
        None,
        "Lattice spacing of the default grid net (then `eps n > d` is not required).",
        source="theorem",
        rule="2r/sqrt(d)",
        note="lattice spacing h",
    )
    chunk_size: int | None = option(
        None,
        "Candidates per chunk, a multiple of `NOISE_BLOCK` (speed and memory only, "
        "not the output).",
        rule="the device's (dpsample.nets.stream.chunk_rule)",
    )
    max_points: int = option(MAX_POINTS, "Refuse nets with more than this many points.")
    minimizer_gap: float = option(
        0.0,
        "The declared `g_W >= min_K F_D - inf F_D`, added to the warm-start bound "
        "`psi` (`0`: `K` holds a global minimizer).",
    )
    enforce_sensitivity: bool = option(
        True,
        "Clip every per-example loss at the bound the sensitivity uses; `False`: "
        "the tightest declared bound, unclipped, and the guarantee is conditional.",
    )
    failure_prob: float | None = option(
        None,
        "`zeta` of the warm-start bound (with probability `>= 1 - zeta` the excess "
        "empirical risk is `<= psi`).",
        rule="sqrt(d)/(eps n)",
    )


precision.scope_public(globals())
