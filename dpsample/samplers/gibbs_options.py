"""The options of the Gibbs sampler, declared once (:mod:`dpsample.options`).

:class:`GibbsOptions` declares every option of :class:`~dpsample.samplers.gibbs.Gibbs`
(registry name ``"gibbs"``), in the order of its plan keywords: the plan's keywords,
the registry's and the TOML schema's ``[options]``, the plan's option rows and the
docs' option table (docs/samplers_gibbs.md) are read from it;
:func:`~dpsample.samplers.gibbs.gibbs` keeps the same keywords, checked against it by
``tests/test_options.py``.

One declaration serves every route (:mod:`dpsample.samplers.routes`): an option that
only some routes use is declared here once, its doc says which built-in routes use it
(:func:`routes_using`), and the route reads it from the request's options
(:attr:`~dpsample.samplers.routes.base.RouteRequest.options`); the others refuse it or
ignore it as before (:meth:`~dpsample.samplers.routes.base.Route.check_options`).

The rows of ``beta``, ``mu``, ``c_gen`` and the route's schedule (``step_size``,
``num_steps``, ``num_trials``, ``num_levels``, ``c_step``) are made by the route,
which names the rule that set each value at plan time; the declaration's rule is the
usual one. The others come from :meth:`~dpsample.options.Options.rows` (or
:meth:`GibbsOptions.row`).

Examples:
    >>> from dpsample.samplers.gibbs_options import GibbsOptions, routes_using
    >>> list(GibbsOptions.parameters())[:4]
    ['method', 'convex', 'preset', 'c_gen']
    >>> GibbsOptions.from_options({"method": "langevin", "max_steps": 200}).given()
    {'method': 'langevin', 'max_steps': 200}
    >>> routes_using("max_steps"), routes_using("c_step")
    (('langevin',), ('proximal',))
"""

from __future__ import annotations

import dataclasses
from typing import Any

from dpsample._src import precision
from dpsample.options import Options, option
from dpsample.plan import Param
from dpsample.samplers.gibbs_calibration import C_GEN_ROUTE_DEFAULT

__all__ = [
    "BUILTIN_ROUTES",
    "DEFAULT_METHOD",
    "MAX_LANGEVIN_STEPS",
    "MAX_PROXIMAL_STEPS",
    "SCHEDULE_OPTIONS",
    "TV_FRACTION",
    "GibbsOptions",
    "routes_using",
]

#: The route ``gibbs`` runs unless ``method`` is given.
DEFAULT_METHOD = "proximal"
#: Share of ``delta`` given to the sampler's total-variation error (the rest goes to
#: the exact target's delta).
TV_FRACTION = 0.5
#: Most projected-Langevin steps ``gibbs`` runs when the budget allows more.
MAX_LANGEVIN_STEPS = 10_000
MAX_PROXIMAL_STEPS = 1_000_000
"""The most proximal steps :func:`~dpsample.samplers.gibbs.gibbs` runs before refusing
(the proven schedule grows like ``beta^2 G^2 C_LSI``; larger runs take hours)."""
#: The proximal schedule's options (``proximal.schedule``): a route that does not
#: list one in :attr:`~dpsample.samplers.routes.base.Route.options` refuses it with
#: ``TypeError``.
SCHEDULE_OPTIONS = ("c_step", "num_trials", "num_levels", "kl_init")
#: The built-in routes, in their registration order.
BUILTIN_ROUTES = ("proximal", "langevin", "mala")

_ROUTES_KEY = "routes"


def _gibbs_option(
    default: Any,
    doc: str,
    *,
    routes: tuple[str, ...] = BUILTIN_ROUTES,
    source: str = "default",
    rule: str = "",
    note: str = "",
) -> Any:
    """A declared option with the built-in routes that use it, named in its doc."""
    unknown = set(routes) - set(BUILTIN_ROUTES)
    if unknown:  # pragma: no cover - a declaration error
        raise ValueError(f"unknown routes {sorted(unknown)}")
    used = "every route" if routes == BUILTIN_ROUTES else ", ".join(routes)
    doc = f"{doc} Used by: {used}."
    field = option(default, doc, source=source, rule=rule, note=note)
    return dataclasses.field(
        default=default, metadata={**field.metadata, _ROUTES_KEY: routes}
    )


_EXACT = ("proximal", "mala")  # the routes through the exact target


@dataclasses.dataclass(frozen=True, kw_only=True)
class GibbsOptions(Options):
    """Every option of a Gibbs sampler run (seed 000 Sec. 5.1, Theorems 5.6-5.7).

    ``beta`` and ``mu`` are calibrated to the budget unless given; the route's
    schedule sets ``step_size`` and ``num_steps`` unless given (the proximal route
    refuses them: its TV bound depends on them).
    """

    algorithm = "gibbs"

    method: str = _gibbs_option(
        DEFAULT_METHOD,
        "The route: `'proximal'`, `'langevin'`, `'mala'` or another registered in "
        "`dpsample.samplers.routes.ROUTES`.",
    )
    convex: bool = _gibbs_option(
        False, "Public declaration that the losses are convex.", routes=_EXACT
    )
    preset: str = _gibbs_option(
        "tightest", "Calibration preset (`calibrate_gibbs`).", routes=_EXACT
    )
    c_gen: float | str | None = _gibbs_option(
        C_GEN_ROUTE_DEFAULT,
        "The cap `beta G D <= c_gen log n` on a calibrated `beta`: a constant > 0, "
        "`None` (no cap) or `'route'`.",
        rule="C_GEN = 0.5 on the proximal and MALA routes, no cap on Langevin",
    )
    beta: float | None = _gibbs_option(
        None,
        "A public inverse temperature (skips calibration).",
        source="derived",
        rule="calibrated to the budget: calibrate_gibbs (proximal, MALA), "
        "calibrate_langevin (Langevin)",
    )
    mu: float | None = _gibbs_option(
        None,
        "A public regularisation (with `beta` only).",
        source="theorem",
        rule="Thm 5.6: d/(D^2 beta)",
    )
    step_size: float | None = _gibbs_option(
        None,
        "Sampler step (refused by the proximal route: its schedule's).",
        routes=("langevin", "mala"),
        rule="langevin.default_step_size",
    )
    num_steps: int | None = _gibbs_option(
        None,
        "Sampler steps (refused by the proximal route: its schedule's).",
        routes=("langevin", "mala"),
        rule="Langevin: the budget's, at most max_steps; MALA: 1000",
    )
    tv_fraction: float = _gibbs_option(
        TV_FRACTION,
        "Share of `delta` given to the sampler's TV error, in (0, 1).",
        routes=_EXACT,
    )
    tv_bound: float | None = _gibbs_option(
        None,
        "A public TV bound to the target the caller vouches for (required by MALA).",
        routes=("mala",),
        note="declared by the caller",
    )
    max_steps: int = _gibbs_option(
        MAX_LANGEVIN_STEPS,
        "The most Langevin steps run by default.",
        routes=("langevin",),
    )
    allow_unproven_schedule: bool = _gibbs_option(
        False,
        "Accept a schedule whose step constant exceeds GLL's proof constant (the "
        "guarantee is then labelled nominal, conditional).",
        routes=("proximal",),
    )
    max_proximal_steps: int = _gibbs_option(
        MAX_PROXIMAL_STEPS,
        "Refuse a proximal schedule longer than this.",
        routes=("proximal",),
    )
    c_step: float | None = _gibbs_option(
        None,
        "The proximal schedule's step constant (`proximal.schedule`).",
        routes=("proximal",),
        source="theorem",
        rule="GLL's proof constant 2^-8",
    )
    num_trials: int | None = _gibbs_option(
        None,
        "The least RGO trials per step (`proximal.schedule` raises it until the "
        "fixed budget's failure is `<= delta_inner/2`).",
        routes=("proximal",),
        source="theorem",
        rule="50 (rgo.DEFAULT_NUM_TRIALS), raised: failure <= delta_inner/2",
    )
    num_levels: int | None = _gibbs_option(
        None,
        "RGO series cap (`proximal.schedule`).",
        routes=("proximal",),
        rule="rgo.DEFAULT_NUM_LEVELS",
    )
    kl_init: float | None = _gibbs_option(
        None,
        "A public bound on `KL(pi_0 || pi)` (`proximal.schedule`).",
        routes=("proximal",),
        source="theorem",
        rule="beta min(G D, B) (E25)",
    )
    failure_prob: float | None = _gibbs_option(
        None,
        "`zeta` of the warm-start bound (with probability `>= 1 - zeta` the excess "
        "empirical risk is `<= psi`).",
        routes=_EXACT,
        rule="sqrt(d)/(eps n)",
    )
    minimizer_gap: float = _gibbs_option(
        0.0,
        "The declared `g_W >= min_K F_D - inf F_D`, added to the warm-start bound "
        "`psi` (`0`: `K` holds a global minimizer).",
        routes=_EXACT,
    )
    enforce_sensitivity: bool = _gibbs_option(
        True,
        "Clip at the declared constants (loss values on the proximal and MALA "
        "routes, per-example gradients on Langevin); `False`: unenforced, the "
        "guarantee is conditional.",
    )

    def schedule_options(self) -> dict[str, Any]:
        """The :data:`SCHEDULE_OPTIONS` given (not ``None``), for ``proximal.schedule``.

        Examples:
            >>> from dpsample.samplers.gibbs_options import GibbsOptions
            >>> GibbsOptions(c_step=0.5).schedule_options()
            {'c_step': 0.5}
        """
        values = {k: getattr(self, k) for k in SCHEDULE_OPTIONS}
        return {k: v for k, v in values.items() if v is not None}

    def row(self, name: str, value: Any, *, note: str | None = None) -> Param:
        """The plan row of one option at its resolved ``value``.

        ``[user]`` when the option's value differs from the declared default,
        otherwise the declared source and rule (:meth:`~dpsample.options.Options.rows`);
        ``note`` replaces the note.

        Examples:
            >>> from dpsample.samplers.gibbs_options import GibbsOptions
            >>> GibbsOptions(max_steps=5).row("max_steps", 5)
            Param(value=5, source='user', note='')
            >>> GibbsOptions().row("preset", "tightest").source
            'default'
        """
        notes = {} if note is None else {name: note}
        return self.rows(resolved={name: value}, notes=notes)[name]


def routes_using(name: str) -> tuple[str, ...]:
    """The built-in routes that use the option ``name`` (its declaration's).

    Raises:
        KeyError: No such option.

    Examples:
        >>> from dpsample.samplers.gibbs_options import routes_using
        >>> routes_using("tv_bound"), routes_using("method")
        (('mala',), ('proximal', 'langevin', 'mala'))
    """
    fields = {f.name: f for f in GibbsOptions.settable()}
    return tuple(fields[name].metadata[_ROUTES_KEY])


precision.scope_public(globals())
