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
"""

from __future__ import annotations

import collections.abc
import dataclasses
import inspect
import types
import typing
from collections.abc import Mapping
from typing import Any, Literal

import jax.numpy as jnp
import numpy as np

from dpsample import registry
from dpsample._src import precision
from dpsample.base import KINDS
from dpsample.config.errors import ConfigError, choices
from dpsample.domains import Ball, Unconstrained

__all__ = [
    "RESERVED",
    "Job",
    "check_value",
    "job_names",
    "resolve_job",
    "stage_names",
    "to_runtime",
]

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


def to_runtime(value: Any, hint: Any, *, dim: int, where: str = "[options]") -> Any:
    """The object a plan takes for a checked TOML value.

    A list of numbers for an array option becomes a float64 array; a table for a
    domain option becomes a :class:`~dpsample.domains.Ball` of dimension ``dim``.
    Anything else is passed as is.

    Raises:
        ConfigError: A domain table that is not ``{radius = R, center = [...]}``
            (the message names ``where``, the option's key).
    """
    members = _members(hint)
    if isinstance(value, dict) and any(_is_domain_type(m) for m in members):
        return _ball(value, dim=dim, where=where)
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
    """A ``[job]``: a registered algorithm.

    Attributes:
        kind: ``"sampler"``, ``"finder"`` or ``"pipeline"``.
        name: The registry name.
        entry: Its :class:`~dpsample.registry.Entry`.
    """

    kind: str
    name: str
    entry: registry.Entry

    def options(self) -> dict[str, registry.Option]:
        """The options ``[options]`` may set, by name."""
        return {o.name: o for o in self.entry.options() if o.name not in RESERVED}

    def check_options(self, options: Mapping[str, Any]) -> dict[str, Any]:
        """``[options]`` checked: names, required options and (where annotated) types.

        Returns:
            The options as the resolved configuration keeps them (TOML types).

        Raises:
            ConfigError: An unknown, reserved, missing or mistyped option.
        """
        valid = self.options()
        out = dict(options)
        for key in options:
            if key in RESERVED:
                raise ConfigError(f"[options] may not set {key!r}: {RESERVED[key]}")
            if key not in valid:
                raise ConfigError(
                    f"unknown option {key!r} for {self.name}; valid options: "
                    + ", ".join(valid)
                )
        # A finder's start defaults to the domain's centre (its plan sets it).
        missing = [
            n
            for n, o in valid.items()
            if o.required and n not in out and not (n == "x0" and self.kind == "finder")
        ]
        if missing:
            raise ConfigError(
                f"{self.name} needs the option {missing[0]!r} (set it in [options])"
            )
        for key, value in out.items():
            out[key] = check_value(f"[options] {key}", value, valid[key].type)
            if key in KINDS and isinstance(value, str):  # a pipeline's stage by name
                if value not in stage_names(key):
                    raise choices(f"{self.name} {key}", value, stage_names(key))
        return out

    def runtime_options(self, options: Mapping[str, Any], *, dim: int) -> dict:
        """The checked ``[options]`` as the plan takes them (arrays, balls)."""
        valid = self.options()
        return {
            k: to_runtime(
                v, valid[k].type if k in valid else Any, dim=dim, where=f"[options] {k}"
            )
            for k, v in options.items()
        }

    def create(self) -> Any:
        """A fresh instance of the registered algorithm."""
        return self.entry.create()


def stage_names(kind: str) -> tuple[str, ...]:
    """Names a pipeline's stage option of ``kind`` takes: the registered ones."""
    return registry.names(kind)


def resolve_job(kind: str, name: str) -> Job:
    """The job of ``[job] kind`` and ``[job] name``.

    Args:
        kind: ``"sampler"``, ``"finder"`` or ``"pipeline"``.
        name: A registered name of that kind (``dpsample list``).

    Returns:
        The :class:`Job`.

    Raises:
        ConfigError: An unknown kind or name (the message lists the valid ones), or
            a name of another kind.

    Examples:
        >>> from dpsample.config import resolve_job
        >>> job = resolve_job("finder", "dp_sgd")
        >>> job.entry.seed
        '002'
        >>> resolve_job("sampler", "mcmc")
        Traceback (most recent call last):
        ...
        dpsample.config.ConfigError: unknown sampler 'mcmc'; valid choices: 'net', ...
    """
    if kind not in KINDS:
        raise choices("[job] kind", kind, KINDS)
    if name not in registry.names():
        raise choices(kind, name, job_names(kind))
    entry = registry.get(name)
    if entry.kind != kind:
        raise ConfigError(f"{name!r} is a {entry.kind}, not a {kind}")
    return Job(kind, name, entry)


def job_names(kind: str | None = None) -> tuple[str, ...]:
    """The names ``[job] name`` accepts (of one kind): the registered ones."""
    return registry.names(kind)


precision.scope_public(globals())
