"""Test-session configuration for the tests and the doctests of ``dpsample/``.

The session runs JAX on the CPU with 64-bit types enabled globally (STYLE.md S9:
global JAX configuration is set here, never at import time). dpsample itself does
not need it (every entry point computes in float64 in its own scope, see
``dpsample._src.precision``), but the tests and doctests are user code that feed
dpsample's float64 results to ``jnp``. ``tests/test_precision.py`` checks the
library in a fresh 32-bit process.
"""

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
