"""References to the user's own code in a configuration: ``"module:attribute"``.

``[data] source = "module"`` names its data function this way, ``[loss] name`` may
name a loss factory, and the sweep specs name their measurement hooks and ceilings
(:mod:`dpsample.validation`). :func:`resolve_reference` imports the module by name
(``importlib``): its targets are the user's modules, named in the configuration,
so it is no arrow between dpsample's modules; nothing in dpsample resolves a
reference to its own code (the registry's lookup, :mod:`dpsample.registry`, is the
one place dpsample imports one of its own modules by name).
"""

from __future__ import annotations

import importlib
from typing import Any

from dpsample._src import precision
from dpsample.config.errors import ConfigError

__all__ = ["resolve_reference"]


def resolve_reference(ref: str) -> Any:
    """The object a reference ``"package.module:attribute"`` names (imported).

    ``[data] source = "module"`` names its data function this way, and so do the
    measurement hooks of a sweep spec (:mod:`dpsample.validation`). The module is
    imported from ``sys.path`` as it stands.

    Args:
        ref: ``"module:attribute"``; the attribute may be dotted (``"mod:Cls.make"``).

    Returns:
        The object.

    Raises:
        ConfigError: A malformed reference, a module that cannot be imported or a
            missing attribute.

    Examples:
        >>> from dpsample.config import resolve_reference
        >>> resolve_reference("math:sqrt")(4.0)
        2.0
        >>> resolve_reference("math")
        Traceback (most recent call last):
        ...
        dpsample.config.ConfigError: expected a reference 'module:attribute', got ...
    """
    module, sep, attr = ref.partition(":") if isinstance(ref, str) else ("", "", "")
    if not (sep and module and attr):
        raise ConfigError(f"expected a reference 'module:attribute', got {ref!r}")
    try:
        obj = importlib.import_module(module)
    except ImportError as err:
        raise ConfigError(
            f"cannot import {module!r} (named by {ref!r}): {err}; run from the folder "
            "that holds it or add that folder to PYTHONPATH"
        ) from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ConfigError(
                f"{module!r} has no attribute {attr!r} (named by {ref!r})"
            )
        obj = getattr(obj, part)
    return obj


precision.scope_public(globals())
