"""Options declared once: one typed declaration per algorithm (issue 29).

An algorithm's options are the fields of a frozen, keyword-only dataclass that
subclasses :class:`Options`; each field is made by :func:`option` with its default,
one line of documentation, and the source its default has in the plan (``"default"``,
``"theorem"`` or ``"derived"``, with the rule that sets it). Everything else is read
from that declaration:

* the plan's keyword options (:meth:`Options.parameters`, which
  :meth:`dpsample.base.PrivateAlgorithm.option_parameters` returns for an algorithm
  with an ``options_type``): the names :meth:`~dpsample.base.PrivateAlgorithm.plan`
  accepts, the registry's option list (:meth:`dpsample.registry.Entry.options`), so
  the TOML ``[options]`` check and ``dpsample list``;
* the option rows of the plan's parameter table (:meth:`Options.rows`), which
  ``dpsample run --dry-run`` prints: a value differing from the declared default is
  ``[user]``, otherwise the field's source and rule;
* the docs' option tables (:func:`option_table`; a docs page asks for one with the
  line ``<!-- options: module:Class -->``, expanded by :func:`expand_option_tables`
  when ``make docs`` builds the site, ``tools/mkdocs_hooks.py``).

The convenience functions (``goldstein_zero_order(...)``) keep their explicit
keyword-only signatures: type checkers, IDEs and the API pages (read statically by
griffe) see the keyword names only there. :func:`signature_mismatches` compares such a
signature with the declaration, and a test runs it for every declared algorithm, so
the two cannot drift.

An option several declarations share (the first-order finders' ``x0``,
``preset``, ...) is written once in a :class:`SharedOptions` table, whose
:meth:`SharedOptions.field` gives each declaration the same field.

A field made by :func:`fixed` is part of the declaration but not an option: the
algorithm runs it at one value (the first-order Goldstein finder's ``estimator``);
it appears in the plan's table, not in the signature, the schema or the docs table.

Examples:
    >>> import dataclasses
    >>> from dpsample.options import Options, option, option_table
    >>> @dataclasses.dataclass(frozen=True, kw_only=True)
    ... class ToyOptions(Options):
    ...     num_steps: int | None = option(None, "Steps ``T``.", source="theorem",
    ...                                    rule="T = n")
    ...     scale: float = option(1.0, "O(1) multiplier of the step.")
    >>> list(ToyOptions.parameters())
    ['num_steps', 'scale']
    >>> opts = ToyOptions.from_options({"scale": 2.0})
    >>> {k: (p.value, p.source, p.note)
    ...  for k, p in opts.rows(resolved={"num_steps": 50}).items()}
    {'num_steps': (50, 'theorem', 'T = n'), 'scale': (2.0, 'user', '')}
    >>> print(option_table(ToyOptions).splitlines()[2])
    | `num_steps` | `int | None` | `None` | theorem: T = n | Steps ``T``. |
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import re
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, TypeVar

from dpsample._src import precision
from dpsample.plan import Param

__all__ = [
    "OPTION_SOURCES",
    "Options",
    "SharedOptions",
    "call_options",
    "expand_option_tables",
    "fixed",
    "option",
    "option_table",
    "signature_mismatches",
]

#: Sources an option's default may have in the plan (:data:`dpsample.plan.SOURCES`).
OPTION_SOURCES = ("default", "theorem", "derived")

_O = TypeVar("_O", bound="Options")


def option(
    default: Any, doc: str, *, source: str = "default", rule: str = "", note: str = ""
) -> Any:
    """One declared option: a dataclass field with its default and documentation.

    Args:
        default: The default (``None``: the plan resolves it by ``rule``).
        doc: One line for the docs' option table.
        source: The plan's source of the value when the default applies, one of
            :data:`OPTION_SOURCES`.
        rule: The plan's note when the default applies (how it is resolved).
        note: The plan's note in every case.

    Returns:
        The :func:`dataclasses.field`.

    Raises:
        ValueError: A source not in :data:`OPTION_SOURCES`.

    Examples:
        >>> import dataclasses
        >>> from dpsample.options import Options, option
        >>> @dataclasses.dataclass(frozen=True, kw_only=True)
        ... class Opts(Options):
        ...     rate: float = option(0.5, "The rate.", note="O(1) constant")
        >>> Opts.signature()
        <Signature (*, rate: 'float' = 0.5)>
    """
    if source not in OPTION_SOURCES:
        raise ValueError(f"Expected source in {OPTION_SOURCES}, got {source!r}")
    meta = {"doc": doc, "source": source, "rule": rule, "note": note, "fixed": False}
    return dataclasses.field(default=default, metadata=meta)


def fixed(value: Any, doc: str, *, shown: bool = True) -> Any:
    """A field the algorithm runs at one value: not an option of it.

    Args:
        value: The value.
        doc: One line.
        shown: Whether the plan's table shows it (as ``[default]``).

    Returns:
        The :func:`dataclasses.field`.

    Examples:
        >>> import dataclasses
        >>> from dpsample.options import Options, fixed, option
        >>> @dataclasses.dataclass(frozen=True, kw_only=True)
        ... class Opts(Options):
        ...     rate: float = option(0.5, "The rate.")
        ...     kind: str = fixed("exact", "Always exact.")
        >>> list(Opts.parameters()), Opts().kind
        (['rate'], 'exact')
    """
    meta = {"doc": doc, "source": "default", "rule": "", "note": ""}
    return dataclasses.field(
        default=value, metadata=meta | {"fixed": True, "shown": shown}
    )


@dataclasses.dataclass(frozen=True, init=False)
class SharedOptions:
    """Options several declarations share, each written once: name -> field.

    A table of ``name=(default, doc, source, rule)``; :meth:`field` makes the
    declared field (:func:`option`) of one of them, so every declaration that uses
    it has the same default, doc, source and rule. The first-order finders' table
    (:func:`dpsample.finders.planning.finder_option`) and DP-TR/DP-STR's
    (:func:`dpsample.finders.trust_region.options.tr_option`) are two.

    Args:
        **entries: ``name=(default, doc, source, rule)``, in the order the table
            lists them; each source one of :data:`OPTION_SOURCES` (checked here, when
            the table is made).

    Raises:
        ValueError: a source not in :data:`OPTION_SOURCES`, or an entry that is not
            four values.

    Examples:
        >>> import dataclasses
        >>> from dpsample.options import Options, SharedOptions
        >>> SHARED = SharedOptions(
        ...     x0=(None, "Public start.", "default", "the origin"),
        ...     scale=(1.0, "O(1) multiplier of the step.", "default", ""),
        ... )
        >>> @dataclasses.dataclass(frozen=True, kw_only=True)
        ... class AOptions(Options):
        ...     x0: object = SHARED.field("x0")
        ...     scale: float = SHARED.field("scale")
        >>> @dataclasses.dataclass(frozen=True, kw_only=True)
        ... class BOptions(Options):
        ...     scale: float = SHARED.field("scale")
        >>> row = AOptions().rows(resolved={"x0": 0.0})["x0"]
        >>> row.source, row.note, BOptions().scale
        ('default', 'the origin', 1.0)
        >>> SHARED.names()
        ('x0', 'scale')
        >>> SHARED.field("rate")
        Traceback (most recent call last):
            ...
        KeyError: "no shared option 'rate'; the table has ['x0', 'scale']"
    """

    entries: Mapping[str, tuple[Any, str, str, str]]

    def __init__(self, **entries: tuple[Any, str, str, str]) -> None:
        for name, entry in entries.items():
            if len(entry) != 4:
                raise ValueError(
                    f"shared option {name!r}: expected (default, doc, source, rule), "
                    f"got {entry!r}"
                )
            if entry[2] not in OPTION_SOURCES:
                raise ValueError(
                    f"shared option {name!r}: expected source in {OPTION_SOURCES}, "
                    f"got {entry[2]!r}"
                )
        object.__setattr__(self, "entries", types.MappingProxyType(entries))

    def names(self) -> tuple[str, ...]:
        """The options in the table, in its order."""
        return tuple(self.entries)

    def field(self, name: str) -> Any:
        """The declared field (:func:`option`) of the shared option ``name``.

        Raises:
            KeyError: ``name`` is not in the table (the message lists those that are).
        """
        if name not in self.entries:
            raise KeyError(
                f"no shared option {name!r}; the table has {list(self.entries)}"
            )
        default, doc, source, rule = self.entries[name]
        return option(default, doc, source=source, rule=rule)


def _differs(value: Any, default: Any) -> bool:
    """Whether a given value is not the declared default (arrays always differ)."""
    if default is None or value is None:
        return value is not default
    try:
        return bool(value != default)
    except (TypeError, ValueError):  # an array: not a default
        return True


@dataclasses.dataclass(frozen=True, kw_only=True)
class Options:
    """Base of an algorithm's option declaration (a frozen keyword-only dataclass).

    Subclasses declare each option once, as a field made by :func:`option`. The
    class methods read the declaration; an instance holds the options of one plan
    (the caller's values, defaults filled in).
    """

    #: The declaration's name for messages (the algorithm's registry name).
    algorithm: ClassVar[str] = ""

    # ------------------------------------------------------------ the declaration
    @classmethod
    def declared(cls) -> tuple[dataclasses.Field[Any], ...]:
        """Every field, fixed ones included, in declaration order."""
        return tuple(dataclasses.fields(cls))

    @classmethod
    def settable(cls) -> tuple[dataclasses.Field[Any], ...]:
        """The options: the fields not :func:`fixed`."""
        return tuple(f for f in cls.declared() if not f.metadata.get("fixed"))

    @classmethod
    def parameters(cls) -> dict[str, inspect.Parameter]:
        """The options as keyword-only parameters (annotations as written)."""
        return {
            f.name: inspect.Parameter(
                f.name,
                inspect.Parameter.KEYWORD_ONLY,
                default=f.default,
                annotation=f.type,
            )
            for f in cls.settable()
        }

    @classmethod
    def signature(cls) -> inspect.Signature:
        """The keyword-only signature the options make."""
        return inspect.Signature(list(cls.parameters().values()))

    @classmethod
    def hints(cls) -> dict[str, Any]:
        """The options' evaluated annotations (what TOML values are checked against)."""
        hints = typing.get_type_hints(cls)
        return {f.name: hints.get(f.name, Any) for f in cls.settable()}

    @classmethod
    def from_options(cls: type[_O], options: Mapping[str, Any]) -> _O:
        """The declaration filled with ``options`` (defaults for the others).

        Raises:
            TypeError: An unknown or fixed name (listing the valid options).
        """
        valid = [f.name for f in cls.settable()]
        unknown = sorted(set(options) - set(valid))
        if unknown:
            raise TypeError(
                f"{cls.algorithm or cls.__name__} has no option(s) {unknown}; valid "
                f"options: {', '.join(sorted(valid))}"
            )
        return cls(**options)

    # ------------------------------------------------------------ one plan's view
    def given(self) -> dict[str, Any]:
        """The options whose value differs from the declared default."""
        return {
            f.name: getattr(self, f.name)
            for f in self.settable()
            if _differs(getattr(self, f.name), f.default)
        }

    def rows(
        self,
        *,
        resolved: Mapping[str, Any] | None = None,
        sources: Mapping[str, str] | None = None,
        notes: Mapping[str, str] | None = None,
        params: Mapping[str, Param] | None = None,
    ) -> dict[str, Param]:
        """The plan's table rows of the declared fields, in declaration order.

        A value that differs from the default is ``[user]``; otherwise the row has
        the field's source and rule (``sources`` overrides the source). A row
        whose value is ``None`` is left out.

        Args:
            resolved: The value the plan resolved (default: the option's value).
            sources: Sources that replace the declared one when the default applies.
            notes: Notes that replace the declared ones in every case.
            params: Whole rows the plan made itself (kept in their place).

        Returns:
            ``{name: Param}``.
        """
        resolved, sources = resolved or {}, sources or {}
        notes, params = notes or {}, params or {}
        given = self.given()
        out: dict[str, Param] = {}
        for f in self.declared():
            meta = f.metadata
            if not meta.get("shown", True):
                continue
            if f.name in params:
                out[f.name] = params[f.name]
                continue
            value = resolved.get(f.name, getattr(self, f.name))
            if value is None:
                continue
            user = f.name in given
            source = "user" if user else sources.get(f.name, meta["source"])
            note = meta["note"] if user else (meta["note"] or meta["rule"])
            out[f.name] = Param(value, source, notes.get(f.name, note))
        return out


# ------------------------------------------------------------------- checks, docs
#: A convenience function's arguments that are not options of its algorithm.
_NOT_OPTIONS = ("rng_key", "problem", "epsilon", "delta")


def call_options(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """A convenience function's options: its ``locals()`` less key, problem, budget.

    What a function with an explicit keyword signature passes on to
    ``Algorithm().solve(rng_key, problem, epsilon=..., delta=..., **options)``, so
    its options are not written a second time in the call.

    Examples:
        >>> from dpsample.options import call_options
        >>> def fn(rng_key, problem, *, epsilon, delta, steps=3):
        ...     return call_options(locals())
        >>> fn(0, None, epsilon=1.0, delta=1e-5)
        {'steps': 3}
    """
    return {k: v for k, v in arguments.items() if k not in _NOT_OPTIONS}


def signature_mismatches(
    fn: Callable[..., Any],
    declaration: type[Options],
    *,
    extra: tuple[str, ...] = (),
    required: tuple[str, ...] = (),
) -> list[str]:
    """How ``fn``'s keyword-only parameters differ from ``declaration``'s options.

    Args:
        fn: A convenience function with an explicit keyword-only signature.
        declaration: Its algorithm's declaration.
        extra: Keyword-only names ``fn`` adds (``epsilon``, ``delta``).
        required: Options ``fn`` requires (no default, ``None`` not allowed)
            although the declaration has a default.

    Returns:
        One line per difference (name, default, annotation, order, an option
        missing from ``fn``'s docstring); empty when they agree.

    Examples:
        >>> from dpsample.finders.goldstein import goldstein_zero_order
        >>> from dpsample.finders.goldstein.options import GoldsteinZeroOrderOptions
        >>> signature_mismatches(goldstein_zero_order, GoldsteinZeroOrderOptions,
        ...     extra=("epsilon", "delta"), required=("x0",))
        []
    """
    have = {
        name: p
        for name, p in inspect.signature(fn).parameters.items()
        if p.kind is inspect.Parameter.KEYWORD_ONLY and name not in extra
    }
    want = declaration.parameters()
    out = [f"{n}: not an option" for n in have if n not in want]
    out += [f"{n}: missing" for n in want if n not in have]
    for name, p in want.items():
        q = have.get(name)
        if q is None:
            continue
        default, annotation = p.default, str(p.annotation)
        if name in required:  # no default, and not None
            default = inspect.Parameter.empty
            annotation = annotation.removesuffix(" | None")
        if q.default is not default and q.default != default:
            out.append(f"{name}: default {q.default!r}, declared {default!r}")
        if str(q.annotation) != annotation:
            out.append(f"{name}: annotation {q.annotation}, declared {annotation}")
        if not re.search(rf"^\s+{name}:", fn.__doc__ or "", re.MULTILINE):
            out.append(f"{name}: not in the docstring's Args")
    if not out and list(have) != list(want):
        out.append(f"order {list(have)}, declared {list(want)}")
    return out


def _cell(value: Any) -> str:
    return f"`{value!r}`"


def option_table(declaration: type[Options]) -> str:
    """The markdown table of a declaration's options (the docs' option table).

    Columns: the option, its type, its default, where the value comes from when
    it is not given (the source and the rule), and its documentation.

    Examples:
        >>> from dpsample.finders.goldstein import GoldsteinFirstOrderOptions
        >>> from dpsample.options import option_table
        >>> row = option_table(GoldsteinFirstOrderOptions).splitlines()[5]
        >>> row.startswith("| `alpha` | `float | None` | `None` | default: ")
        True
    """
    lines = [
        "| option | type | default | if not given | description |",
        "|---|---|---|---|---|",
    ]
    for f in declaration.settable():
        meta = f.metadata
        when = meta["source"] + (f": {meta['rule']}" if meta["rule"] else "")
        lines.append(
            f"| `{f.name}` | `{f.type}` | {_cell(f.default)} | {when} | {meta['doc']} |"
        )
    return "\n".join(lines)


_MARKER = re.compile(r"^<!-- options: ([\w.]+):(\w+) -->$", re.MULTILINE)


def expand_option_tables(markdown: str) -> str:
    """``markdown`` with the declaration's :func:`option_table` after each marker.

    A marker is a line ``<!-- options: module:Class -->``; the docs build
    (``tools/mkdocs_hooks.py``) calls this on every page.

    Raises:
        TypeError: A marker naming something that is not an :class:`Options`.

    Examples:
        >>> from dpsample.options import expand_option_tables
        >>> marker = "dpsample.finders.goldstein:GoldsteinFirstOrderOptions"
        >>> page = expand_option_tables(f"<!-- options: {marker} -->")
        >>> page.splitlines()[2]
        '| option | type | default | if not given | description |'
    """

    def table(match: re.Match[str]) -> str:
        obj = getattr(importlib.import_module(match.group(1)), match.group(2))
        if not (isinstance(obj, type) and issubclass(obj, Options)):
            raise TypeError(f"{match.group(0)} names no Options declaration")
        return f"{match.group(0)}\n\n{option_table(obj)}\n"

    return _MARKER.sub(table, markdown)


precision.scope_public(globals())
