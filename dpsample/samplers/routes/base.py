r"""What a route of the Gibbs sampler is: the :class:`Route` base and the registry.

A route is one way of drawing the private sample of
:class:`~dpsample.samplers.gibbs.Gibbs`: the proximal sampler, projected Langevin,
MALA (:mod:`dpsample.samplers.routes`). Each is one object that owns everything
that differs between them:

* **plan** (public, host, no data): which options it takes
  (:meth:`Route.check_options`), its default cap on ``beta`` (:meth:`Route.c_gen`),
  how ``beta`` is calibrated (:meth:`Route.temperature`), its schedule, guarantee
  and refusals (:meth:`Route.schedule`, returning a :class:`RoutePlan`), whether a
  compute cap refuses it (:meth:`Route.check_cost`) and whether its output has a
  warm-start bound (:attr:`Route.warm_start`);
* **run** (private, jit): its kernel, a :class:`~dpsample.samplers.chains.KernelSpec`
  made by the schedule, run by :meth:`Route.run`; and the kernel the non-private
  :func:`dpsample.samplers.diagnostics.run` uses (:meth:`Route.diagnostics_kernel`).

:class:`~dpsample.samplers.gibbs.Gibbs`, :mod:`dpsample.samplers.chains` and
:mod:`dpsample.samplers.diagnostics` do what is common and ask the route for the
rest; the string ``method=`` of the public surface is resolved once, by
:func:`resolve`, to the object registered under that name in :data:`ROUTES`. A new
route is one subclass and one :func:`register` call.
"""

from __future__ import annotations

import abc
import dataclasses
from typing import Any, ClassVar

import jax
import jax.numpy as jnp

from dpsample._src import precision, validation
from dpsample.errors import PlanRefusal, Search
from dpsample.plan import Budget, Cost, Param
from dpsample.privacy.guarantee import PrivacyGuarantee
from dpsample.problem import ProblemSpec
from dpsample.samplers.chains import KernelSpec, initial_point, run_chain
from dpsample.samplers.gibbs_calibration import (
    C_GEN,
    C_GEN_ROUTE_DEFAULT,
    calibrate_gibbs,
    default_mu,
)
from dpsample.samplers.gibbs_options import (
    SCHEDULE_OPTIONS,
    TV_FRACTION,
    GibbsOptions,
)
from dpsample.samplers.gibbs_privacy import GibbsPrivacyReport
from dpsample.samplers.target import GibbsTarget
from dpsample.types import Array, PRNGKey

__all__ = [
    "ROUTES",
    "SCHEDULE_OPTIONS",
    "TV_FRACTION",
    "Route",
    "RouteContext",
    "RoutePlan",
    "RouteRequest",
    "Temperature",
    "given_beta_alternatives",
    "given_temperature",
    "register",
    "resolve",
    "source",
]


def source(given: bool, otherwise: str = "default") -> str:
    """A :class:`~dpsample.plan.Param`'s source: ``"user"`` when given.

    Examples:
        >>> from dpsample.samplers.routes.base import source
        >>> source(True), source(False), source(False, "theorem")
        ('user', 'default', 'theorem')
    """
    return "user" if given else otherwise


def given_beta_alternatives() -> tuple[tuple[dict[str, Any], str], ...]:
    """The remedy beside a lower ``beta`` when the caller gave one.

    Examples:
        >>> from dpsample.samplers.routes.base import given_beta_alternatives
        >>> given_beta_alternatives()
        (({}, 'drop beta= (it is then calibrated to the budget)'),)
    """
    return (({}, "drop beta= (it is then calibrated to the budget)"),)


@dataclasses.dataclass(frozen=True)
class RouteRequest:
    """The public inputs a route plans from (no data).

    :class:`~dpsample.samplers.gibbs.Gibbs` checks them before a route sees them.

    Attributes:
        spec: The public problem.
        budget: The budget (``epsilon``, ``delta``, ``max_evaluations``).
        delta: The budget's ``delta``, checked in ``(0, 1)``.
        options: The plan's options, declared once
            (:class:`~dpsample.samplers.gibbs_options.GibbsOptions`): the route reads
            those it uses from here. ``tv_fraction`` is checked in ``(0, 1)`` and
            ``max_steps`` >= 1; the route checks the others it uses.
        enforced_oscillation: On a route whose guarantee goes through the target
            (:attr:`Route.clips_values`), with ``options.enforce_sensitivity``: the
            oscillation its clip of the loss values enforces
            (:func:`dpsample.nets.clipped.sensitivity_route`); else ``None``.
        clip: That clip: ``"cone"``, ``"range"`` or ``"none"``.

    Examples:
        >>> import jax.numpy as jnp
        >>> from dpsample import Ball, Budget, Problem
        >>> from dpsample.samplers.gibbs_options import GibbsOptions
        >>> from dpsample.samplers.routes.base import RouteRequest
        >>> p = Problem(lambda x, z: jnp.abs(x[0] - z), jnp.zeros(50),
        ...             Ball(1.0, dim=1), lipschitz=1.0)
        >>> r = RouteRequest(p.spec, Budget(1.0, 1e-5), 1e-5,
        ...                  GibbsOptions(max_steps=200))
        >>> r.epsilon, r.target_delta, r.options.max_steps
        (1.0, 5e-06, 200)
    """

    spec: ProblemSpec
    budget: Budget
    delta: float
    options: GibbsOptions = dataclasses.field(default_factory=GibbsOptions)
    _: dataclasses.KW_ONLY
    enforced_oscillation: float | None = None
    clip: str = "none"

    @property
    def epsilon(self) -> float:
        """The budget's ``epsilon``."""
        return self.budget.epsilon

    @property
    def target_delta(self) -> float:
        """The exact target's share of ``delta``: ``(1 - tv_fraction) delta``."""
        return (1.0 - self.options.tv_fraction) * self.delta


@dataclasses.dataclass(frozen=True)
class Temperature:
    """The target's ``(beta, mu)`` as a route resolves them, with their plan entries.

    Attributes:
        beta: Inverse temperature.
        mu: Regularisation.
        binding: ``"privacy"``, ``"cap"``, ``"step_rule"`` (calibrated) or
            ``"given"``.
        params: The plan's entries (``beta``, ``mu``, ...), in the order shown.
        preset: The calibration preset used (``None`` when none was).
        num_steps: The steps a calibrated ``beta`` spends the budget over, when the
            calibration fixed them (projected Langevin).

    Examples:
        >>> from dpsample.plan import Param
        >>> from dpsample.samplers.routes.base import Temperature
        >>> Temperature(2.0, 0.5, "given", {"beta": Param(2.0, "user")}).binding
        'given'
    """

    beta: float
    mu: float
    binding: str
    params: dict[str, Param]
    preset: str | None = None
    num_steps: int | None = None


@dataclasses.dataclass(frozen=True)
class RouteContext:
    """What a route's :meth:`~Route.schedule` starts from (public, no data).

    Attributes:
        request: The public inputs.
        temperature: ``(beta, mu)`` from :meth:`Route.temperature`.
        target: The Gibbs target at that ``(beta, mu)`` (its public spec).
        report: Its :func:`~dpsample.samplers.gibbs_privacy.target_privacy`.
        bound: The name of its tightest valid bound at ``(1 - tv_fraction) delta``.
        exact: That bound's guarantee.

    Examples:
        >>> import jax.numpy as jnp
        >>> from dpsample import Ball, Budget, Problem
        >>> from dpsample.samplers.gibbs_options import GibbsOptions
        >>> from dpsample.samplers.gibbs_privacy import target_privacy
        >>> from dpsample.samplers.routes.base import (RouteContext, RouteRequest,
        ...                                           given_temperature)
        >>> from dpsample.samplers.target import GibbsTarget
        >>> p = Problem(lambda x, z: jnp.abs(x[0] - z), jnp.zeros(50),
        ...             Ball(1.0, dim=1), lipschitz=1.0)
        >>> r = RouteRequest(p.spec, Budget(1.0, 1e-5), 1e-5, GibbsOptions(beta=4.0))
        >>> t = given_temperature(r)
        >>> target = GibbsTarget.create(p.spec, beta=t.beta, mu=t.mu)
        >>> report = target_privacy(target)
        >>> c = RouteContext(r, t, target, report, *report.tightest(r.target_delta))
        >>> c.bound == report.tightest(5e-06)[0]
        True
    """

    request: RouteRequest
    temperature: Temperature
    target: GibbsTarget
    report: GibbsPrivacyReport
    bound: str
    exact: PrivacyGuarantee


@dataclasses.dataclass(frozen=True)
class RoutePlan:
    """What a route's schedule resolves: its kernel, guarantee and plan entries.

    Attributes:
        kernel: The kernel the run compiles (static options only).
        privacy: The guarantee of what will run (assumptions included).
        bound: The name of the bound behind it.
        tv_slack: The total-variation slack to the target it carries (``0.0`` when
            the guarantee does not go through the target).
        params: The plan's entries of the route, ``step_size`` and ``num_steps``
            among them (the run reads those two), in the order shown.
        info: The route's extra :class:`~dpsample.samplers.gibbs.GibbsInfo` fields.
        notes: The plan's notes from the route.
        rests_on: What the guarantee rests on beyond the declared constants.

    Examples:
        >>> from dpsample.plan import Param
        >>> from dpsample.privacy.guarantee import PrivacyGuarantee
        >>> from dpsample.samplers.routes.base import RoutePlan
        >>> from dpsample.samplers.routes.mala import MalaKernel
        >>> rp = RoutePlan(MalaKernel(), PrivacyGuarantee.pure(1.0), "oscillation",
        ...                0.0, {"step_size": Param(0.1, "user"),
        ...                      "num_steps": Param(10, "user")})
        >>> rp.num_steps, rp.kernel.gradient_evaluations(rp.num_steps, 5)
        (10, 55)
    """

    kernel: KernelSpec
    privacy: PrivacyGuarantee
    bound: str
    tv_slack: float
    params: dict[str, Param]
    info: dict[str, Any] = dataclasses.field(default_factory=dict)
    notes: tuple[str, ...] = ()
    rests_on: str | None = None

    @property
    def num_steps(self) -> int:
        """The planned number of steps (the ``num_steps`` entry)."""
        return int(self.params["num_steps"].value)


class Route(abc.ABC):
    """One route of the Gibbs sampler: its plan (public) and its kernel (private).

    Subclasses set :attr:`name` and implement :meth:`schedule` and
    :meth:`diagnostics_kernel`; the other methods have the shared behaviour, which
    a route overrides where it differs. Register an instance with :func:`register`
    and ``gibbs(..., method=name)``, ``Gibbs(method=name)``, a TOML config's
    ``method = name`` and ``diagnostics.run(..., method=name)`` reach it.

    Attributes:
        name: The ``method=`` string.
        options: The :data:`SCHEDULE_OPTIONS` (and ``"tv_bound"``) it takes.
        warm_start: Whether its output's law is within a known total variation of
            the target, so that the plan carries the warm-start bound ``psi``.
        cost_grows_with_beta: Whether its schedule lengthens with ``beta`` (a
            refusal for cost then searches a lower ``beta``).
        c_gen_why: Why its guarantee rests on the cap ``beta G D <= c_gen log n``
            (the default ``c_gen``'s note).
        clips_values: Whether its guarantee goes through the exact target's
            bound, whose sensitivity (of ``beta F_D``) a clip of the loss values
            enforces by default (``False``: the route enforces its own constant,
            e.g. projected Langevin's gradient clip).

    Examples:
        >>> from dpsample.samplers.routes import resolve
        >>> route = resolve("mala")
        >>> route.name, route.warm_start, sorted(route.options)
        ('mala', True, ['tv_bound'])
    """

    name: ClassVar[str] = ""
    options: ClassVar[frozenset[str]] = frozenset()
    warm_start: ClassVar[bool] = True
    cost_grows_with_beta: ClassVar[bool] = False
    c_gen_why: ClassVar[str] = ""
    clips_values: ClassVar[bool] = True

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    # ---------------------------------------------------------------- plan
    def check_options(self, request: RouteRequest) -> None:
        """Refuse the options of other routes, before any private computation.

        Raises:
            TypeError: A schedule option this route does not take.
            ValueError: ``tv_bound`` on a route that does not take it.
        """
        given = request.options.schedule_options()
        foreign = sorted(k for k in given if k not in self.options)
        if foreign:
            raise TypeError(f"unexpected options {foreign} for method {self.name!r}")
        if request.options.tv_bound is not None and "tv_bound" not in self.options:
            owners = tuple(r.name for r in ROUTES.values() if "tv_bound" in r.options)
            which = repr(owners[0]) if len(owners) == 1 else f"in {owners}"
            raise ValueError(f"tv_bound is only for method={which}")

    def c_gen(self, c_gen: float | str | None) -> tuple[float | None, Param]:
        """``c_gen`` as this route applies it, and its plan entry.

        Raises:
            ValueError: ``c_gen`` is neither > 0, ``None`` nor ``"route"``.
        """
        if isinstance(c_gen, str):
            if c_gen != C_GEN_ROUTE_DEFAULT:
                raise ValueError(
                    f"Expected c_gen > 0, None or {C_GEN_ROUTE_DEFAULT!r}, got "
                    f"{c_gen!r}"
                )
            return self.default_c_gen()
        if c_gen is None:
            return None, Param(
                None, "user", "no cap: beta meets the privacy target only"
            )
        value = validation.positive("c_gen", c_gen)
        return value, Param(value, "user", "cap beta G D <= c_gen log n")

    def default_c_gen(self) -> tuple[float | None, Param]:
        """The cap ``c_gen="route"`` means: ``C_GEN``, noted with :attr:`c_gen_why`."""
        note = (
            f"the {self.name} route's guarantee rests on the cap beta G D <= c_gen "
            "log n"
        )
        return C_GEN, Param(
            C_GEN, "default", f"{note} {self.c_gen_why}" if self.c_gen_why else note
        )

    def temperature(
        self, request: RouteRequest, cap: tuple[float | None, Param]
    ) -> Temperature:
        """``(beta, mu)``: the public ones given, or calibrated under the cap.

        The calibration is :func:`~dpsample.samplers.gibbs_calibration.calibrate_gibbs`
        at ``(epsilon, (1 - tv_fraction) delta)``.
        """
        opts = request.options
        if opts.beta is not None:
            return given_temperature(request)
        cap_const, cap_param = cap
        preset = opts.preset
        cal = calibrate_gibbs(
            request.spec,
            epsilon=request.epsilon,
            delta=request.target_delta,
            convex=opts.convex,
            preset=preset,
            c_gen=cap_const,
            enforced_oscillation=request.enforced_oscillation,
        )
        params = {
            "beta": Param(
                cal.beta,
                "calibrated",
                f"largest beta meeting (eps, (1 - tv_fraction) delta), preset "
                f"{preset!r}, cap beta G D <= c_gen log n ({cal.binding} binds)",
            ),
            "mu": Param(cal.mu, "theorem", "Thm 5.6: d/(D^2 beta)"),
            "preset": opts.row("preset", preset),
            "c_gen": cap_param,
        }
        return Temperature(cal.beta, cal.mu, cal.binding, params, preset=preset)

    @abc.abstractmethod
    def schedule(self, context: RouteContext) -> RoutePlan:
        """The route's schedule, kernel and guarantee at ``context.temperature``.

        Raises:
            ValueError, PlanRefusal: A schedule the route cannot run or prove.
        """

    def check_cost(
        self, request: RouteRequest, temperature: Temperature, cost: Cost
    ) -> None:
        """Refuse a plan over ``max_evaluations``.

        A schedule tied to a TV bound cannot be shrunk without changing that bound.
        """
        cap = request.budget.max_evaluations
        if cap is None or not cost.evaluations > cap:
            return
        beta = temperature.beta
        raise PlanRefusal(
            f"the {self.name} route at beta = {beta:.3g} needs "
            f"{cost.evaluations:,} per-example evaluations ({cost.steps:,} "
            f"steps), more than max_evaluations={cap:,}; its schedule cannot be "
            "shrunk without changing its TV bound",
            search=(
                Search("beta", beta / 2.0, direction="down")
                if self.cost_grows_with_beta
                else None
            ),
            why="" if self.cost_grows_with_beta else "lower beta",
            alternatives=(
                ({}, f"raise max_evaluations to {cost.evaluations:,}"),
                (
                    {"method": "langevin"},
                    "its steps are capped by the budget; no warm-start bound psi",
                ),
            ),
        )

    # ---------------------------------------------------------------- run
    def run(
        self,
        rng_key: PRNGKey,
        target: GibbsTarget,
        kernel: KernelSpec,
        *,
        step_size: float,
        num_steps: int,
    ) -> Array:
        """The released point: ``num_steps`` kernel steps from a public start.

        The start is a draw of ``pi_0``
        (:func:`~dpsample.samplers.chains.initial_point`), the steps run under one
        compiled scan (:func:`~dpsample.samplers.chains.run_chain`). The same work
        whatever the data; the key is split into the initial point's and the
        chain's.
        """
        init_key, run_key = jax.random.split(rng_key)
        x0 = initial_point(init_key, target)
        init_fn, _ = kernel.build()
        state = init_fn(x0, target)
        final = run_chain(
            run_key,
            target,
            state,
            spec=kernel,
            step_size=step_size,
            num_steps=num_steps,
        )
        return jnp.asarray(final.position, jnp.float64)

    @abc.abstractmethod
    def diagnostics_kernel(
        self, target: GibbsTarget, *, clip_norm: float | None = None, **options: Any
    ) -> KernelSpec:
        """The kernel of the non-private :func:`dpsample.samplers.diagnostics.run`.

        ``clip_norm`` and ``options`` are as given there.
        """


def given_temperature(request: RouteRequest) -> Temperature:
    """The caller's public ``beta`` and ``mu`` (default ``d/(D^2 beta)``).

    Examples:
        >>> import jax.numpy as jnp
        >>> from dpsample import Ball, Budget, Problem
        >>> from dpsample.samplers.gibbs_options import GibbsOptions
        >>> from dpsample.samplers.routes.base import RouteRequest, given_temperature
        >>> p = Problem(lambda x, z: jnp.abs(x[0] - z), jnp.zeros(50),
        ...             Ball(1.0, dim=1), lipschitz=1.0)
        >>> r = RouteRequest(p.spec, Budget(1.0, 1e-5), 1e-5, GibbsOptions(beta=4.0))
        >>> t = given_temperature(r)
        >>> t.beta, t.mu, t.binding
        (4.0, 0.0625, 'given')
    """
    beta = validation.positive("beta", request.options.beta)
    mu = request.options.mu
    mu_v = default_mu(request.spec, beta) if mu is None else mu
    params = {
        "beta": Param(beta, "user"),
        "mu": Param(
            mu_v,
            source(mu is not None, "theorem"),
            "" if mu is not None else "Thm 5.6: d/(D^2 beta)",
        ),
    }
    return Temperature(beta, mu_v, "given", params)


#: The registered routes by ``method=`` name, in registration order.
ROUTES: dict[str, Route] = {}


def register(route: Route, *, replace: bool = False) -> Route:
    """Register ``route`` under ``route.name`` (returns it).

    Raises:
        TypeError: ``route`` is not a :class:`Route` instance.
        ValueError: no name, or the name is taken and ``replace`` is false.

    Examples:
        >>> from dpsample.samplers.routes import ROUTES, register
        >>> register(ROUTES["mala"], replace=True) is ROUTES["mala"]
        True
    """
    if not isinstance(route, Route):
        raise TypeError(f"Expected a Route instance, got {type(route).__name__}")
    if not isinstance(route.name, str) or not route.name:
        raise ValueError(f"{type(route).__name__} has no name")
    if route.name in ROUTES and not replace:
        raise ValueError(f"a route named {route.name!r} is registered already")
    ROUTES[route.name] = route
    return route


def resolve(method: str) -> Route:
    """The route registered as ``method`` (the one place a name becomes a route).

    Raises:
        ValueError: no route has that name.

    Examples:
        >>> from dpsample.samplers.routes import resolve
        >>> resolve("langevin").name
        'langevin'
        >>> resolve("hmc")
        Traceback (most recent call last):
        ...
        ValueError: Expected method in ('proximal', 'langevin', 'mala'), got 'hmc'
    """
    route = ROUTES.get(method) if isinstance(method, str) else None
    if route is None:
        raise ValueError(f"Expected method in {tuple(ROUTES)}, got {method!r}")
    return route


precision.scope_public(globals())
