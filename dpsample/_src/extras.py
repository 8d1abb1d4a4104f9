"""Optional dependencies: found or imported where they are needed, or a clear error.

The core install (``pip install dpsample``) holds what the private algorithms need:
JAX, NumPy, SciPy, BlackJAX, Optax and dp-accounting. The rest are extras, each
needed by one part of the toolkit (``pyproject.toml``, ``docs/install.md``):

* ``sweep``: Dask (``dask[distributed]``), pandas and matplotlib, for
  :mod:`dpsample.validation` (``dpsample sweep``: tables and figures);
* ``diagnostics``: ArviZ, for :func:`dpsample.samplers.diagnostics.run`;
* ``datasets``: scikit-learn, for :func:`dpsample.datasets.load_sklearn` (and the
  quickstart, which trains on one of its bundled datasets);
* ``all``: the three.

Without one, the part that needs it raises :class:`MissingExtraError` (an
``ImportError``) naming the extra to install, e.g. ``pip install "dpsample[sweep]"``;
everything else imports and runs as usual. Nothing here runs inside a private
computation: these are host-side checks made before any private work starts.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Iterable
from types import ModuleType

__all__ = ["EXTRAS", "MissingExtraError", "import_optional", "require"]

#: The extras and the top-level modules each provides (``pyproject.toml``).
EXTRAS: dict[str, tuple[str, ...]] = {
    "sweep": ("dask", "distributed", "pandas", "matplotlib"),
    "diagnostics": ("arviz",),
    "datasets": ("sklearn",),
}

#: The distribution that provides a module, where its name differs.
_DISTRIBUTIONS = {"sklearn": "scikit-learn", "distributed": "dask[distributed]"}


class MissingExtraError(ImportError):
    """An optional dependency is missing; the message names the extra to install."""


def _message(module: str, extra: str, feature: str) -> str:
    dist = _DISTRIBUTIONS.get(module, module)
    return (
        f"{feature} needs {dist}, which is not installed; it comes with the "
        f'"{extra}" extra: pip install "dpsample[{extra}]"'
    )


def _check_extra(extra: str) -> None:
    if extra not in EXTRAS:
        raise ValueError(f"Unknown extra {extra!r}; expected one of {sorted(EXTRAS)}")


def _found(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def require(extra: str, *, feature: str, modules: Iterable[str] | None = None) -> None:
    """Check, without importing them, that an extra's modules are installed.

    Args:
        extra: The extra's name (a key of :data:`EXTRAS`).
        feature: What needs them, for the message (e.g. ``"dpsample sweep"``).
        modules: The modules to look for (default: all of the extra's).

    Raises:
        MissingExtraError: The first module not found, with ``pip install
            "dpsample[EXTRA]"`` in its message.
        ValueError: An unknown extra.

    Examples:
        >>> from dpsample._src.extras import require
        >>> require("datasets", feature="load_sklearn")  # installed: no error
        >>> require("pickles", feature="a jar")
        Traceback (most recent call last):
        ...
        ValueError: Unknown extra 'pickles'; expected one of ['datasets', ...]
    """
    _check_extra(extra)
    for module in EXTRAS[extra] if modules is None else modules:
        if not _found(module):
            raise MissingExtraError(_message(module, extra, feature), name=module)


def import_optional(module: str, extra: str, *, feature: str) -> ModuleType:
    """Import an optional dependency, or say which extra provides it.

    Args:
        module: The module to import (``"sklearn.datasets"``, ``"arviz"``, ...).
        extra: The extra that provides it (a key of :data:`EXTRAS`).
        feature: What needs it, for the message.

    Returns:
        The imported module.

    Raises:
        MissingExtraError: The module (or its top-level package) is not installed.
        ValueError: An unknown extra.

    Examples:
        >>> from dpsample._src.extras import import_optional
        >>> import_optional("sklearn.datasets", "datasets", feature="x").__name__
        'sklearn.datasets'
    """
    _check_extra(extra)
    top = module.partition(".")[0]
    try:
        return importlib.import_module(module)
    except ImportError as err:
        # Only the missing package itself: an ImportError raised inside an installed
        # package (a broken install, a bad version) surfaces unchanged.
        if getattr(err, "name", None) not in {top, module} and _found(top):
            raise
        raise MissingExtraError(_message(top, extra, feature), name=top) from err
