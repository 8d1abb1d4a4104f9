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
# The `dpsample` command turns on JAX's persistent compilation cache in the user's
# cache folder (dpsample.cli.compile_cache_dir); tests that call `cli.main` or run
# the command in a subprocess (which inherits this) must not write there. A test of
# the cache itself sets its own temporary folder.
os.environ["DPSAMPLE_COMPILE_CACHE"] = "0"

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
