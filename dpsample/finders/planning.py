"""What the plans of the finders and pipelines share: public parameters with sources.

Functions of public inputs only (the spec and the caller's options), called by the
``_plan`` methods before any private computation; and the options the first-order
finders share (:func:`finder_option`), declared once, in a
:class:`~dpsample.options.SharedOptions` table, for their :mod:`dpsample.options`
declarations.
"""

from __future__ import annotations

from typing import Any

from dpsample._src import precision
from dpsample.options import SharedOptions
from dpsample.plan import Param
from dpsample.problem import ProblemSpec

__all__ = ["finder_option", "start_param"]

#: The options the first-order finders share: ``(default, doc, source, rule)``.
_FINDER_OPTIONS = SharedOptions(
    x0=(
        None,
        "Public start in the domain `K`.",
        "default",
        "the centre of the domain",
    ),
    preset=(
        "practical",
        "`'practical'` or `'theorem'` (`dpsample.finders.presets`): the rule behind "
        "every value left at `None`.",
        "default",
        "",
    ),
    output=(
        None,
        "The released point: `'tail_average'`, `'random'` (the theorem's) or "
        "`'last'` (`dpsample.finders.outputs`).",
        "default",
        "the preset's",
    ),
    project=(
        True,
        "Project onto a ball domain after each step (`False` on a ball needs "
        "clipping).",
        "default",
        "",
    ),
    return_iterates=(
        False,
        "Put all iterates in `info['iterates']`.",
        "default",
        "",
    ),
    initial_gap=(
        None,
        "Public bound on `F(x0) - inf F` for the theorem's defaults.",
        "derived",
        "the declared loss_range",
    ),
)


def finder_option(name: str) -> Any:
    """The declared field of an option the first-order finders share.

    One of ``x0``, ``preset``, ``output``, ``project``, ``return_iterates`` and
    ``initial_gap``: the same default, doc, source and rule in every declaration
    that uses it (DP-SGD's, DP-SPIDER's).

    Examples:
        >>> import dataclasses
        >>> from dpsample.finders.planning import finder_option
        >>> from dpsample.options import Options
        >>> @dataclasses.dataclass(frozen=True, kw_only=True)
        ... class Opts(Options):
        ...     preset: str = finder_option("preset")
        >>> Opts().preset
        'practical'
    """
    return _FINDER_OPTIONS.field(name)


def start_param(spec: ProblemSpec, x0: Any, default_note: str) -> Param:
    """The start ``x0`` as a plan parameter, with its source.

    ``None`` gives the domain's centre (source ``"default"``, noted
    ``default_note``); a caller's point is checked by
    :meth:`~dpsample.problem.ProblemSpec.check_start` (source ``"user"``).

    Examples:
        >>> import jax.numpy as jnp, dpsample
        >>> from dpsample.finders.planning import start_param
        >>> spec = dpsample.Problem(lambda x, z: jnp.sum(x * z["z"]),
        ...     {"z": jnp.zeros((4, 2))}, dpsample.Ball(1.0, dim=2), lipschitz=1.0).spec
        >>> p = start_param(spec, None, "the centre of K")
        >>> p.value.tolist(), p.source, p.note
        ([0.0, 0.0], 'default', 'the centre of K')
        >>> start_param(spec, [0.5, 0.0], "the centre of K").source
        'user'
    """
    if x0 is None:
        return Param(spec.domain.center_point, "default", default_note)
    return Param(spec.check_start(x0), "user")


precision.scope_public(globals())
