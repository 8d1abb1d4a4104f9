"""Float64 for the privacy-critical numerics, without touching global JAX settings.

Privacy guarantees here depend on float64 arithmetic (log-space exponential
mechanisms, noise calibration, the rounding margins of clipped sums, the fixed trial
budgets of the rejection sampler). Importing dpsample does **not** turn on
``jax_enable_x64`` for the process. Instead every public entry point runs inside
:func:`float64`, JAX's own thread-local ``jax.enable_x64(True)`` context, so the
user's other JAX code keeps its configuration:

* each module ends with ``precision.scope_public(globals())``, which wraps every
  name in its ``__all__``: functions, and the public methods, properties,
  constructors and ``__call__`` of classes (an explicit, checked list: a test walks
  every module and fails on a public callable left unscoped);
* callables that the library *returns* for the caller to run later (BlackJAX-style
  kernels, ``init``/``step`` functions, optax transforms) are wrapped where they are
  made, with :func:`scoped`, so they compute in float64 even inside the caller's own
  ``jit`` or ``lax.scan`` in 32-bit mode (the context applies at trace time).

Arrays dpsample returns are float64. A program that runs in 32-bit mode and feeds
them to its own JAX code converts them (``np.asarray``) or enables x64 itself; JAX
would otherwise warn and truncate them to float32 (``docs/sharp_edges.md``).
"""

from __future__ import annotations

import contextlib
import enum
import functools
import inspect
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any, TypeVar

import jax

__all__ = ["MARKER", "float64", "is_scoped", "scope_public", "scoped"]

F = TypeVar("F", bound=Callable[..., Any])

#: Attribute set on every wrapped callable (read by :func:`is_scoped`).
MARKER = "__dpsample_float64__"


@contextlib.contextmanager
def float64() -> Iterator[None]:
    """Run the enclosed code with JAX's 64-bit types enabled (thread-local)."""
    with jax.enable_x64(True):
        yield


def is_scoped(fn: Any) -> bool:
    """Whether ``fn`` was wrapped by :func:`scoped`."""
    return bool(getattr(fn, MARKER, False))


def scoped(fn: F) -> F:
    """Decorate ``fn`` to run inside :func:`float64` (idempotent)."""
    if is_scoped(fn):
        return fn

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with jax.enable_x64(True):
            return fn(*args, **kwargs)

    setattr(wrapper, MARKER, True)
    return wrapper  # type: ignore[return-value]


def _scope_class(cls: type) -> None:
    if issubclass(cls, BaseException | enum.Enum):
        return
    for name, attr in list(vars(cls).items()):
        public = not name.startswith("_") or name in ("__init__", "__call__")
        if not public:
            continue
        if isinstance(attr, staticmethod):
            setattr(cls, name, staticmethod(scoped(attr.__func__)))
        elif isinstance(attr, classmethod):
            setattr(cls, name, classmethod(scoped(attr.__func__)))
        elif isinstance(attr, property):
            setattr(
                cls,
                name,
                property(
                    None if attr.fget is None else scoped(attr.fget),
                    attr.fset,
                    attr.fdel,
                    attr.__doc__,
                ),
            )
        elif isinstance(attr, functools.cached_property):
            wrapped = functools.cached_property(scoped(attr.func))
            wrapped.__set_name__(cls, name)
            setattr(cls, name, wrapped)
        elif inspect.isfunction(attr):
            setattr(cls, name, scoped(attr))


def scope_public(namespace: MutableMapping[str, Any]) -> None:
    """Wrap every public callable named in ``namespace["__all__"]`` (see above).

    Functions are replaced by their :func:`scoped` wrapper; classes defined in the
    module get their public methods, properties, ``__init__`` and ``__call__``
    wrapped in place. Names imported from elsewhere are left to their own module.
    """
    module = namespace.get("__name__")
    for name in namespace.get("__all__", ()):
        obj = namespace.get(name)
        if getattr(obj, "__module__", None) != module:
            continue
        if inspect.isclass(obj):
            _scope_class(obj)
        elif inspect.isfunction(obj):
            namespace[name] = scoped(obj)
