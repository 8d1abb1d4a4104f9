"""The error of every configuration check, and the message for an unknown name.

The bottom of :mod:`dpsample.config`: :mod:`~dpsample.config.schema`,
:mod:`~dpsample.config.jobs` and :mod:`~dpsample.config.problem` raise
:class:`ConfigError` (users import it from :mod:`dpsample.config`).
"""

from __future__ import annotations

from typing import Any

from dpsample._src import precision

__all__ = ["ConfigError", "choices"]


class ConfigError(ValueError):
    """A configuration is invalid (unknown name, missing key, wrong type, ...)."""


ConfigError.__module__ = "dpsample.config"  # where users import it from


def choices(what: str, value: Any, valid: Any) -> ConfigError:
    """The error for an unknown name, listing the valid ones."""
    listed = ", ".join(repr(v) for v in valid)
    return ConfigError(f"unknown {what} {value!r}; valid choices: {listed}")


precision.scope_public(globals())
