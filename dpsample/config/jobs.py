"""The jobs ``dpsample run`` runs: the algorithms of :mod:`dpsample.registry`.

A ``[job]`` names a registered algorithm (``[job] kind`` must be its kind); its
``[options]`` are the algorithm's plan options
(:meth:`dpsample.registry.Entry.options`), checked here by name, required ones
and, where the option is annotated, type. A TOML value becomes what the plan
takes: numbers and lists of numbers for array options (as float64 arrays), a
``{radius = R, center = [...]}`` table for a :class:`~dpsample.domains.Ball`. The
run itself is
``entry.create().plan(spec, Budget(epsilon, delta, max_evaluations), **options)``
then ``.run(rng_key, plan, data)`` (:mod:`dpsample.config.execution`).

**Transitional (issue 12).** Algorithms not yet converted to the plan/run contract
are run through their old functions, listed in :data:`TRANSITIONAL`. A registered
name always takes precedence, so converting a family needs only its line in
``dpsample.registry.ALGORITHMS``; once every name is registered this table, the
``Job.function`` path and :func:`run_transitional` are deleted
(``tests/test_config_jobs.py`` fails then, to say so).
"""

from __future__ import annotations

import collections.abc
import dataclasses
import importlib
import inspect
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, Literal

from dpsample import registry
from dpsample._src import precision
from dpsample.base import KINDS
from dpsample.config.schema import ConfigError, choices, number_list

__all__ = [
    "RESERVED",
    "TRANSITIONAL",
    "Job",
    "check_value",
    "job_names",
    "resolve_job",
    "run_transitional",
    "to_runtime",
]

#: TRANSITIONAL: name -> (kind, "module:function") of the algorithms not yet
#: registered. Delete with the fallback once ``dpsample.registry`` lists them all.
TRANSITIONAL: dict[str, tuple[str, str]] = {
    "dp_trust_region": ("finder", "dpsample.finders.trust_region:dp_trust_region"),
    "dp_stochastic_trust_region": (
        "finder",
        "dpsample.finders.trust_region:dp_stochastic_trust_region",
    ),
    "goldstein_zero_order": (
        "finder",
        "dpsample.finders.goldstein:goldstein_zero_order",
    ),
    "goldstein_first_order": (
        "finder",
        "dpsample.finders.goldstein:goldstein_first_order",
    ),
    "warm_start": ("pipeline", "dpsample.pipelines.warm_start:warm_start"),
}
# TRANSITIONAL: a pipeline's options whose valid values are a tuple of its module.
_PIPELINE_CHOICES = {"warm_start": {"sampler": "SAMPLERS", "finder": "FINDERS"}}

#: Names ``dpsample run`` sets itself, never from ``[options]``.
RESERVED = {
    "rng_key": "the key comes from [job] seed, or fresh OS entropy",
    "problem": "the problem comes from [data], [loss] and [domain]",
    "epsilon": "set it in [privacy]",
    "delta": "set it in [privacy]",
    "max_evaluations": "set it in [privacy]",
    "ledger": "dpsample run passes a fresh BudgetLedger with the [privacy] budget",
}


# ----------------------------------------------------------------- type checks
def _members(hint: Any) -> list[Any]:
    """The alternatives of a union (``int | None`` -> ``[int, NoneType]``)."""
    origin = typing.get_origin(hint)
    if origin is typing.Union or origin is types.UnionType:
        return [m for a in typing.get_args(hint) for m in _members(a)]
    return [hint]


def _is_array_type(t: Any) -> bool:
    """NumPy and JAX array and scalar types (what ``ArrayLike`` unions hold)."""
    root = getattr(t, "__module__", "").split(".")[0]
    return isinstance(t, type) and root in ("numpy", "jax", "jaxlib")


def _is_domain_type(t: Any) -> bool:
    from dpsample.domains import Ball, Unconstrained

    return isinstance(t, type) and issubclass(t, Ball | Unconstrained)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _numbers(value: Any) -> bool:
    if isinstance(value, list):
        return all(_numbers(v) for v in value)
    return _number(value)


_SEQUENCES = (list, tuple, collections.abc.Sequence)
_MAPPINGS = (dict, collections.abc.Mapping)


def _match(value: Any, t: Any) -> tuple[bool, Any]:
    """Whether a TOML ``value`` fits type ``t``; the value as the schema keeps it."""
    if t is Any or t is object or t is inspect.Parameter.empty:
        return True, value
    if t is type(None):
        return False, value
    origin = typing.get_origin(t)
    if origin is Literal:
        return value in typing.get_args(t), value
    if t is bool:
        return isinstance(value, bool), value
    if t is int:
        return isinstance(value, int) and not isinstance(value, bool), value
    if t is float or t is complex:
        return _number(value), float(value) if _number(value) else value
    if t is str:
        return isinstance(value, str), value
    if t in _SEQUENCES or origin in _SEQUENCES:
        if not isinstance(value, list):
            return False, value
        args = typing.get_args(t)
        if origin is tuple and args and not (len(args) == 2 and args[1] is ...):
            if len(args) != len(value):
                return False, value
            pairs = list(zip(value, args, strict=True))
        else:
            item = args[0] if args else Any
            pairs = [(v, item) for v in value]
        out = []
        for v, a in pairs:
            ok, v = _check(v, a)
            if not ok:
                return False, value
            out.append(v)
        return True, out
    if t in _MAPPINGS or origin in _MAPPINGS:
        return isinstance(value, dict), value
    if _is_array_type(t):
        return _numbers(value), value
    if _is_domain_type(t):
        return isinstance(value, dict), value
    if isinstance(t, type):
        return isinstance(value, t), value
    return True, value  # a typing construct this check does not know: the plan checks


def _check(value: Any, hint: Any) -> tuple[bool, Any]:
    members = _members(hint)
    # Exact kinds first, so that 3 stays an int under ``int | float``.
    members.sort(key=lambda m: m is float or m is complex)
    for m in members:
        ok, out = _match(value, m)
        if ok:
            return True, out
    return False, value


def _describe(hint: Any) -> str:
    words = []
    for m in _members(hint):
        origin = typing.get_origin(m)
        if m is type(None):
            continue
        if origin is Literal:
            words.append("one of " + ", ".join(repr(a) for a in typing.get_args(m)))
        elif m in (bool, int, float, str, complex):
            words.append(
                {
                    bool: "a boolean",
                    int: "an integer",
                    float: "a number",
                    complex: "a number",
                    str: "a string",
                }[m]
            )
        elif m in _SEQUENCES or origin in _SEQUENCES:
            words.append("a list")
        elif m in _MAPPINGS or origin in _MAPPINGS:
            words.append("a table")
        elif _is_array_type(m):
            words.append("a number or a list of numbers")
        elif _is_domain_type(m):
            words.append("a table {radius = R, center = [...]}")
        else:
            name = getattr(m, "__name__", repr(m))
            words.append(f"a {name} (which a TOML file cannot give)")
    return " or ".join(dict.fromkeys(words)) or "a value"


def check_value(where: str, value: Any, hint: Any) -> Any:
    """A TOML value checked against an option's type (``int`` -> ``float`` where due).

    Args:
        where: The key, for the message (``"[options] num_steps"``).
        value: The TOML value.
        hint: The option's evaluated annotation (``typing.Any``: unchecked).

    Returns:
        The value, as the resolved configuration keeps it (plain TOML types).

    Raises:
        ConfigError: The value does not fit.
    """
    ok, out = _check(value, hint)
    if not ok:
        raise ConfigError(f"{where} must be {_describe(hint)}, got {value!r}")
    return out


def to_runtime(value: Any, hint: Any, *, dim: int) -> Any:
    """The object a plan takes for a checked TOML value.

    A list of numbers for an array option becomes a float64 array; a table for a
    domain option becomes a :class:`~dpsample.domains.Ball` of dimension ``dim``.
    Anything else is passed as is.
    """
    import numpy as np

    members = _members(hint)
    if isinstance(value, dict) and any(_is_domain_type(m) for m in members):
        return _ball(value, dim=dim, where="[options]")
    takes_list = any(
        m in _SEQUENCES or typing.get_origin(m) in _SEQUENCES for m in members
    )
    if (
        isinstance(value, list)
        and not takes_list
        and any(_is_array_type(m) for m in members)
    ):
        return np.asarray(value, np.float64)
    return value


def _ball(table: Mapping[str, Any], *, dim: int, where: str) -> Any:
    import jax.numpy as jnp

    from dpsample.domains import Ball

    if set(table) - {"radius", "center"}:
        raise ConfigError(
            f"{where} must be a table with radius (and optionally center), got "
            f"{dict(table)!r}"
        )
    if "radius" not in table:
        raise ConfigError(f"{where} needs a radius")
    center = table.get("center")
    return Ball(
        float(table["radius"]),
        None if center is None else jnp.asarray(center, jnp.float64),
        dim=dim,
    )


# ------------------------------------------------------------------------ jobs
@dataclasses.dataclass(frozen=True)
class Job:
    """A ``[job]``: a registered algorithm, or (transitional) an old function.

    Attributes:
        kind: ``"sampler"``, ``"finder"`` or ``"pipeline"``.
        name: The registry name.
        entry: The :class:`~dpsample.registry.Entry` (``None`` for a transitional
            job).
        function: TRANSITIONAL: ``"module:function"`` of an algorithm not yet
            registered (``None`` for a registered one).
    """

    kind: str
    name: str
    entry: registry.Entry | None = None
    function: str | None = None

    @property
    def registered(self) -> bool:
        """Whether the job runs through the registry (plan, then run)."""
        return self.entry is not None

    def options(self) -> dict[str, registry.Option]:
        """The options ``[options]`` may set, by name."""
        if self.entry is not None:
            return {o.name: o for o in self.entry.options() if o.name not in RESERVED}
        params = inspect.signature(self.callable()).parameters
        return {
            n: registry.Option(
                n,
                str(p.annotation),
                None if p.default is inspect.Parameter.empty else p.default,
                p.default is inspect.Parameter.empty,
            )
            for n, p in params.items()
            if p.kind is p.KEYWORD_ONLY and n not in RESERVED
        }

    def callable(self) -> Callable[..., Any]:
        """TRANSITIONAL: the old function of an unregistered algorithm."""
        if self.function is None:
            raise TypeError(f"{self.name} is registered: plan and run it instead")
        module, _, attr = self.function.partition(":")
        return getattr(importlib.import_module(module), attr)

    def check_options(self, options: Mapping[str, Any]) -> dict[str, Any]:
        """``[options]`` checked: names, required options and (where annotated) types.

        Returns:
            The options as the resolved configuration keeps them (TOML types).

        Raises:
            ConfigError: An unknown, reserved, missing or mistyped option.
        """
        valid = self.options()
        var_kw = self.entry is None and any(
            p.kind is p.VAR_KEYWORD
            for p in inspect.signature(self.callable()).parameters.values()
        )
        out = dict(options)
        for key in options:
            if key in RESERVED:
                raise ConfigError(f"[options] may not set {key!r}: {RESERVED[key]}")
            if key not in valid and not var_kw:
                raise ConfigError(
                    f"unknown option {key!r} for {self.name}; valid options: "
                    + ", ".join(valid)
                )
        # A finder's start defaults to the domain's centre (transitional functions
        # get it from dpsample run; registered finders from their plan).
        missing = [
            n
            for n, o in valid.items()
            if o.required and n not in out and not (n == "x0" and self.kind == "finder")
        ]
        if missing:
            raise ConfigError(
                f"{self.name} needs the option {missing[0]!r} (set it in [options])"
            )
        if self.entry is None:
            return _check_transitional(self, out)
        for key, value in out.items():
            out[key] = check_value(f"[options] {key}", value, valid[key].type)
        return out

    def runtime_options(self, options: Mapping[str, Any], *, dim: int) -> dict:
        """The checked ``[options]`` as the plan takes them (arrays, balls)."""
        valid = self.options()
        return {
            k: to_runtime(v, valid[k].type if k in valid else Any, dim=dim)
            for k, v in options.items()
        }

    def create(self) -> Any:
        """A fresh instance of the registered algorithm."""
        if self.entry is None:
            raise TypeError(f"{self.name} is not registered (transitional)")
        return self.entry.create()


def _check_transitional(job: Job, options: dict[str, Any]) -> dict[str, Any]:
    """TRANSITIONAL: the old function table's checks of ``[options]``."""
    if "x0" in options:
        options["x0"] = number_list("[options] x0", options["x0"])
    for opt, attr in _PIPELINE_CHOICES.get(job.name, {}).items():
        if job.kind == "pipeline" and opt in options:
            module = importlib.import_module((job.function or "").partition(":")[0])
            valid = tuple(getattr(module, attr, ()))
            if options[opt] not in valid:
                raise choices(f"{job.name} {opt}", options[opt], valid)
    return options


def resolve_job(kind: str, name: str) -> Job:
    """The job of ``[job] kind`` and ``[job] name``.

    Args:
        kind: ``"sampler"``, ``"finder"`` or ``"pipeline"``.
        name: A registered name of that kind (or, during the transition, a name of
            :data:`TRANSITIONAL`).

    Returns:
        The :class:`Job`.

    Raises:
        ConfigError: An unknown kind or name (the message lists the valid ones), or
            a name of another kind.

    Examples:
        >>> from dpsample.config import resolve_job
        >>> job = resolve_job("finder", "dp_sgd")
        >>> job.registered, job.entry.seed
        (True, '002')
        >>> resolve_job("sampler", "mcmc")
        Traceback (most recent call last):
        ...
        dpsample.config.ConfigError: unknown sampler 'mcmc'; valid choices: 'net', ...
    """
    if kind not in KINDS:
        raise choices("[job] kind", kind, KINDS)
    if name in registry.names():
        entry = registry.get(name)
        if entry.kind == kind:
            return Job(kind, name, entry=entry)
        raise ConfigError(f"{name!r} is a {entry.kind}, not a {kind}")
    if name in TRANSITIONAL:
        legacy_kind, function = TRANSITIONAL[name]
        if legacy_kind == kind:
            return Job(kind, name, function=function)
        raise ConfigError(f"{name!r} is a {legacy_kind}, not a {kind}")
    raise choices(kind, name, job_names(kind))


def job_names(kind: str | None = None) -> tuple[str, ...]:
    """The names ``[job] name`` accepts (of one kind): registered, then transitional."""
    out = list(registry.names(kind))
    out += [
        n
        for n, (k, _) in TRANSITIONAL.items()
        if (kind is None or k == kind) and n not in out
    ]
    return tuple(out)


def run_transitional(
    job: Job,
    rng_key: Any,
    problem: Any,
    privacy: Mapping[str, Any],
    options: Mapping[str, Any],
) -> tuple[Any, Any]:
    """TRANSITIONAL: run an unregistered algorithm's old function.

    Finders start at ``x0`` (by default the domain's centre); ``x0`` and ``net``
    become arrays, a ``sampler_domain`` table a Ball; a function that takes
    ``delta`` gets it, one that takes a ``ledger`` a fresh
    :class:`~dpsample.privacy.BudgetLedger` with the budget.

    Returns:
        ``(result, ledger)`` (``ledger`` ``None`` when the function takes none).
    """
    import numpy as np

    from dpsample.privacy import BudgetLedger

    fn = job.callable()
    params = inspect.signature(fn).parameters
    kwargs = {
        k: np.asarray(v, np.float64) if k in ("x0", "net") else v
        for k, v in options.items()
    }
    if "sampler_domain" in kwargs:
        table = kwargs["sampler_domain"]
        if not isinstance(table, Mapping):
            raise ConfigError(
                "[options] sampler_domain must be a table with radius (and optionally "
                f"center), got {table!r}"
            )
        kwargs["sampler_domain"] = _ball(
            table, dim=problem.dim, where="[options] sampler_domain"
        )
    if "delta" in params:
        kwargs["delta"] = privacy["delta"]
    ledger = None
    if "ledger" in params:
        ledger = BudgetLedger(epsilon=privacy["epsilon"], delta=privacy["delta"])
        kwargs["ledger"] = ledger
    return fn(rng_key, problem, epsilon=privacy["epsilon"], **kwargs), ledger


precision.scope_public(globals())
