r"""The routes of the Gibbs sampler, one object each, and their registry.

``gibbs(..., method=name)``, ``Gibbs(method=name)``, a TOML config's ``method`` and
``diagnostics.run(..., method=name)`` resolve ``name`` once, by :func:`resolve`, to
the :class:`~dpsample.samplers.routes.base.Route` registered under it in
:data:`ROUTES`; from there on the route object plans its schedule, guarantee and
refusals and builds its kernel, and nothing switches on the name. The built-in
routes, registered here in this order:

* ``"proximal"``: :class:`~dpsample.samplers.routes.proximal.ProximalRoute`;
* ``"langevin"``: :class:`~dpsample.samplers.routes.langevin.LangevinRoute`;
* ``"mala"``: :class:`~dpsample.samplers.routes.mala.MalaRoute`.

A new route is a :class:`~dpsample.samplers.routes.base.Route` subclass (its
``name``, :meth:`~dpsample.samplers.routes.base.Route.schedule` and
:meth:`~dpsample.samplers.routes.base.Route.diagnostics_kernel`, with a
:class:`~dpsample.samplers.chains.KernelSpec` for its kernel) and one
:func:`register` call; ``gibbs``, the chains and the diagnostics need no change.

Examples:
    >>> from dpsample.samplers import routes
    >>> tuple(routes.ROUTES), routes.resolve("proximal").name
    (('proximal', 'langevin', 'mala'), 'proximal')
"""

from dpsample.samplers.routes.base import (
    ROUTES,
    Route,
    RouteContext,
    RoutePlan,
    RouteRequest,
    Temperature,
    register,
    resolve,
)
from dpsample.samplers.routes.langevin import LangevinKernel, LangevinRoute
from dpsample.samplers.routes.mala import MalaKernel, MalaRoute
from dpsample.samplers.routes.proximal import ProximalKernel, ProximalRoute

__all__ = [
    "ROUTES",
    "LangevinKernel",
    "LangevinRoute",
    "MalaKernel",
    "MalaRoute",
    "ProximalKernel",
    "ProximalRoute",
    "Route",
    "RouteContext",
    "RoutePlan",
    "RouteRequest",
    "Temperature",
    "register",
    "resolve",
]

register(ProximalRoute())
register(LangevinRoute())
register(MalaRoute())
