"""The one table of dpsample's private algorithms.

Every algorithm is registered here once, by the import path of its
:class:`~dpsample.base.PrivateAlgorithm` class; its name, kind, seed, theorem,
guarantee type and options (names, types, defaults: its
:class:`~dpsample.options.Options` declaration) are read from the class itself.
The TOML configuration and ``dpsample run``, ``dpsample list``, the sweep engine and
the docs' tables all read this module; nothing else keeps a list of algorithms.

Examples:
    >>> from dpsample import registry
    >>> registry.get("dp_sgd").kind
    'finder'
    >>> "dp_sgd" in registry.names("finder")
    True
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import inspect
import sys
import typing
from typing import Any

from dpsample._src import precision
from dpsample.base import KINDS, PrivateAlgorithm

__all__ = [
    "ALGORITHMS",
    "Entry",
    "Option",
    "UnknownAlgorithmError",
    "create",
    "entries",
    "get",
    "names",
]

#: Import paths of every registered algorithm class, in the order they are listed.
ALGORITHMS: tuple[str, ...] = (
    "dpsample.finders.dp_sgd:DPSGD",
    "dpsample.nets.mechanism:NetExponentialMechanism",
    "dpsample.samplers.gibbs:Gibbs",
    "dpsample.finders.dp_spider:DPSpider",
    "dpsample.finders.spider_sosp.finder:SpiderSOSP",
    "dpsample.finders.trust_region.algorithms:DPTrustRegion",
    "dpsample.finders.trust_region.stochastic:DPStochasticTrustRegion",
    "dpsample.finders.goldstein.algorithms:GoldsteinZeroOrder",
    "dpsample.finders.goldstein.algorithms:GoldsteinFirstOrder",
    "dpsample.pipelines.quasar:QuasarSGD",
    "dpsample.pipelines.kl_spider:KLSpider",
    "dpsample.pipelines.warm_start:WarmStart",
    "dpsample.pipelines.jl:JLMethod",
)


class UnknownAlgorithmError(ValueError):
    """No algorithm of that name (and kind) is registered."""


@dataclasses.dataclass(frozen=True)
class Option:
    """One plan option of an algorithm.

    Attributes:
        name: The keyword.
        annotation: Its type, as written in the signature.
        default: Its default (``None``: resolved by the plan's rule).
        required: Whether the plan needs it.
        type: The annotation evaluated (``typing.Any`` where there is none or it
            cannot be evaluated): what the TOML ``[options]`` are checked against.
    """

    name: str
    annotation: str
    default: Any
    required: bool
    type: Any = Any


@dataclasses.dataclass(frozen=True)
class Entry:
    """A registered algorithm.

    Attributes:
        name: Registry name.
        kind: ``"sampler"``, ``"finder"`` or ``"pipeline"``.
        seed: The seed paper.
        theorem: The theorem(s) behind its schedule and guarantee.
        guarantee_type: What kind of guarantee it returns and how it is accounted.
        summary: One line.
        path: ``"module:Class"``.
    """

    name: str
    kind: str
    seed: str
    theorem: str
    guarantee_type: str
    summary: str
    path: str

    @property
    def cls(self) -> type[PrivateAlgorithm]:
        """The algorithm class (imported on first use)."""
        return _load(self.path)

    def options(self) -> tuple[Option, ...]:
        """The plan options (:meth:`PrivateAlgorithm.option_parameters`)."""
        hints = _hints(self.cls)
        out = []
        for name, p in self.cls.option_parameters().items():
            ann = p.annotation
            if ann is inspect.Parameter.empty:
                ann = ""
            ann = ann if isinstance(ann, str) else getattr(ann, "__name__", repr(ann))
            required = p.default is inspect.Parameter.empty
            out.append(
                Option(
                    name,
                    ann,
                    None if required else p.default,
                    required,
                    hints.get(name, Any),
                )
            )
        return tuple(out)

    def create(self, **options: Any) -> PrivateAlgorithm:
        """An instance with ``options`` bound."""
        return self.cls(**options)


def _hints(cls: type[PrivateAlgorithm]) -> dict[str, Any]:
    """The options' evaluated annotations: the declaration's or ``cls._plan``'s."""
    if cls.options_type is not None:
        return cls.options_type.hints()
    fn = cls._plan
    try:
        return typing.get_type_hints(fn)
    except Exception:  # an annotation the module cannot evaluate
        pass
    namespace = vars(sys.modules[fn.__module__])
    out: dict[str, Any] = {}
    for name, ann in getattr(fn, "__annotations__", {}).items():
        try:
            out[name] = eval(ann, namespace) if isinstance(ann, str) else ann
        except Exception:
            out[name] = Any
    return out


@functools.cache
def _load(path: str) -> type[PrivateAlgorithm]:
    """The class ``path`` names, imported on first use.

    The one import by name of a dpsample module in the package (the one arrow an
    import graph of the source does not show): the table lists the algorithms as
    text so that reading it loads none of them. Every other import of a dpsample
    module is an ``import`` statement naming it
    (:func:`dpsample.config.references.resolve_reference` imports only the user's
    own modules, named in a configuration).
    """
    module, _, attr = path.partition(":")
    cls = getattr(importlib.import_module(module), attr)
    if not (isinstance(cls, type) and issubclass(cls, PrivateAlgorithm)):
        raise TypeError(f"{path} is not a PrivateAlgorithm")
    if cls.kind not in KINDS or not cls.name:
        raise TypeError(f"{path} lacks a valid name/kind")
    return cls


@functools.cache
def _entries() -> tuple[Entry, ...]:
    out = []
    seen: set[str] = set()
    for path in ALGORITHMS:
        cls = _load(path)
        if cls.name in seen:
            raise RuntimeError(f"algorithm name {cls.name!r} registered twice")
        seen.add(cls.name)
        out.append(
            Entry(
                cls.name,
                cls.kind,
                cls.seed,
                cls.theorem,
                cls.guarantee_type,
                cls.summary,
                path,
            )
        )
    return tuple(out)


def entries(kind: str | None = None) -> tuple[Entry, ...]:
    """Every registered algorithm, or those of one kind."""
    if kind is not None and kind not in KINDS:
        raise UnknownAlgorithmError(f"unknown kind {kind!r}; valid kinds: {KINDS}")
    return tuple(e for e in _entries() if kind is None or e.kind == kind)


def names(kind: str | None = None) -> tuple[str, ...]:
    """Registered names, or those of one kind."""
    return tuple(e.name for e in entries(kind))


def get(name: str, kind: str | None = None) -> Entry:
    """The entry named ``name`` (optionally checking its kind).

    Raises:
        UnknownAlgorithmError: With the valid names in the message.
    """
    for e in entries(kind):
        if e.name == name:
            return e
    what = "algorithm" if kind is None else kind
    valid = ", ".join(repr(n) for n in names(kind))
    raise UnknownAlgorithmError(f"unknown {what} {name!r}; valid choices: {valid}")


def create(name: str, kind: str | None = None, **options: Any) -> PrivateAlgorithm:
    """An instance of the algorithm ``name`` with ``options`` bound."""
    return get(name, kind).create(**options)


precision.scope_public(globals())
