"""What the plans of the finders and pipelines share: public parameters with sources.

Functions of public inputs only (the spec and the caller's options), called by the
``_plan`` methods before any private computation.
"""

from __future__ import annotations

from typing import Any

from dpsample._src import precision
from dpsample.plan import Param
from dpsample.problem import ProblemSpec

__all__ = ["start_param"]


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
