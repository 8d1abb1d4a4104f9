"""Test-session configuration for the tests and the doctests of ``dpsample/``.

The session runs JAX on the CPU with 64-bit types enabled globally (STYLE.md S9:
global JAX configuration is set here, never at import time). dpsample itself does
not need it (every entry point computes in float64 in its own scope, see
``dpsample._src.precision``), but the tests and doctests are user code that feed
dpsample's float64 results to ``jnp``. ``tests/test_precision.py`` checks the
library in a fresh 32-bit process.
"""

import gc
import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")
# The `dpsample` command turns on JAX's persistent compilation cache in the user's
# cache folder (dpsample.cli.compile_cache_dir); tests that call `cli.main` or run
# the command in a subprocess (which inherits this) must not write there. A test of
# the cache itself sets its own temporary folder.
os.environ["DPSAMPLE_COMPILE_CACHE"] = "0"

import jax  # noqa: E402
import pytest  # noqa: E402

jax.config.update("jax_enable_x64", True)


# ------------------------------------------------------------ bounded compiled programs
# The "intermittent XLA:CPU segfault while compiling" of long-lived xdist workers (CI
# runs on 12c6694, 8625baa and later: always in `backend_compile_and_load`, 60-75%
# into `make test`) is the process running out of memory mappings: every compiled
# CPU executable JAX keeps alive holds about 3-40 mappings, JAX's own caches keep up
# to 2,048-8,192 of them (pxla's `_cached_compilation`, the C++ jit caches), and
# Linux refuses an mmap past `vm.max_map_count` (65,530 by default). LLVM's JIT then
# fails ("LLVM compilation error: Cannot allocate memory") and the worker dies of
# SIGSEGV or SIGABRT. Reproduced by filling the map table to 26 below the limit and
# compiling: the same stack, at the third compilation (issue 27, goal 5).
# The bound: after each test module, a worker whose map count has passed half of the
# limit drops JAX's caches (the mappings go with the executables); results do not
# change (a recompiled program is the same program), only compilation is redone.
def _memory_maps() -> int | None:
    try:
        with open("/proc/self/maps", "rb") as f:
            return sum(1 for _ in f)
    except OSError:  # not Linux: no per-process map table to exhaust
        return None


def _max_map_count() -> int:
    try:
        with open("/proc/sys/vm/max_map_count") as f:
            return int(f.read())
    except (OSError, ValueError):
        return 65530


_MAP_BOUND = _max_map_count() // 2


@pytest.fixture(autouse=True, scope="module")
def _bounded_compiled_programs():
    """Drop JAX's compiled programs after a module once half the map table is used."""
    yield
    maps = _memory_maps()
    if maps is not None and maps > _MAP_BOUND:
        jax.clear_caches()
        gc.collect()
