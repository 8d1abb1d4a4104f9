r"""The MALA route: refused unless the caller declares a public TV bound.

:class:`MalaRoute` (``method="mala"``) runs MALA (:mod:`dpsample.samplers.mala`). MALA
has no privacy bound of its own (its accept/reject step reads the data and no TV bound
to the target is available for this setting), so the route is refused unless the
caller vouches for a public ``tv_bound``; the guarantee is then the exact target's
tightest bound with that TV slack, and it says it rests on the caller's declaration.
:class:`MalaKernel` is its kernel.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from dpsample._src import precision, validation
from dpsample.plan import Param
from dpsample.samplers import langevin, mala
from dpsample.samplers.chains import KernelSpec
from dpsample.samplers.gibbs_privacy import constant_assumptions
from dpsample.samplers.routes.base import (
    Route,
    RouteContext,
    RoutePlan,
    RouteRequest,
    source,
)
from dpsample.samplers.target import GibbsTarget

__all__ = ["DEFAULT_MALA_STEPS", "MalaKernel", "MalaRoute"]

#: MALA steps run by ``gibbs`` unless ``num_steps`` is given.
DEFAULT_MALA_STEPS = 1_000


@dataclasses.dataclass(frozen=True)
class MalaKernel(KernelSpec):
    """MALA's kernel (no static options).

    Examples:
        >>> from dpsample.samplers.routes.mala import MalaKernel
        >>> MalaKernel().gradient_evaluations(3, 10), MalaKernel().loss_evaluations(3)
        (40, 0)
    """

    method: ClassVar[str] = "mala"

    def build(self) -> tuple[Any, Any]:
        """``(mala.init, mala.build_kernel())``."""
        return mala.init, mala.build_kernel()

    def loss_evaluations(self, num_steps: int) -> int:
        """Zero: counted as gradient evaluations (see :meth:`gradient_evaluations`)."""
        return 0

    def gradient_evaluations(self, num_steps: int, n: int) -> int:
        """One value-and-gradient of every example at ``x_0`` and each proposal."""
        return (num_steps + 1) * n


class MalaRoute(Route):
    """``method="mala"``: MALA, with the caller's declared ``tv_bound``.

    Takes ``tv_bound`` (required), ``step_size`` and ``num_steps`` (default
    :data:`DEFAULT_MALA_STEPS`).

    Examples:
        >>> import jax.numpy as jnp
        >>> from dpsample import Ball, Budget, Problem
        >>> from dpsample.samplers.routes import resolve
        >>> from dpsample.samplers.routes.base import RouteRequest
        >>> p = Problem(lambda x, z: jnp.abs(x[0] - z), jnp.zeros(50),
        ...             Ball(1.0, dim=1), lipschitz=1.0)
        >>> r = RouteRequest(p.spec, Budget(1.0, 1e-5), 1e-5)
        >>> resolve("mala").check_options(r)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: MALA has no privacy bound of its own ...
    """

    name = "mala"
    options = frozenset({"tv_bound"})
    c_gen_why = "(the declared tv_bound is for the chain at the capped beta)"

    def check_options(self, request: RouteRequest) -> None:
        """The shared refusals, and MALA without a declared ``tv_bound``."""
        super().check_options(request)
        if request.options.tv_bound is None:
            raise ValueError(
                "MALA has no privacy bound of its own (its accept/reject step reads "
                "the data; no TV bound to the target is available for this "
                "setting): pass a public tv_bound you vouch for, or use "
                "method='proximal' or 'langevin'"
            )

    def schedule(self, context: RouteContext) -> RoutePlan:
        """The steps asked (or the default) and the target's bound with ``tv_bound``."""
        request, target = context.request, context.target
        bound_name, exact = context.bound, context.exact
        opts = request.options
        step_size, num_steps = opts.step_size, opts.num_steps
        tv = validation.probability("tv_bound", opts.tv_bound)
        h = (
            langevin.default_step_size(target)
            if step_size is None
            else langevin.check_step_size(target, step_size)
        )
        steps = (
            DEFAULT_MALA_STEPS
            if num_steps is None
            else validation.positive_int("num_steps", num_steps)
        )
        privacy = exact.with_tv_slack(tv).assuming(
            f"MALA is within total variation {tv:g} of the Gibbs target "
            "(tv_bound declared by the caller; MALA has no bound of its own)",
            *constant_assumptions(
                request.spec,
                bound_name,
                convex=opts.convex,
                proximal=False,
                enforced=request.enforced_oscillation is not None,
            ),
        )
        params = {
            "step_size": Param(float(h), source(step_size is not None)),
            "num_steps": Param(steps, source(num_steps is not None)),
            "tv_bound": opts.row("tv_bound", tv),
        }
        return RoutePlan(
            kernel=MalaKernel(),
            privacy=privacy,
            bound=bound_name,
            tv_slack=tv,
            params=params,
            rests_on="the caller's declared tv_bound (MALA has no bound of its own)",
        )

    def diagnostics_kernel(
        self, target: GibbsTarget, *, clip_norm: float | None = None, **options: Any
    ) -> MalaKernel:
        """:class:`MalaKernel` (``clip_norm`` and options unused)."""
        return MalaKernel()


precision.scope_public(globals())
