"""The bound on compiled programs that conftest.py keeps in a long-lived test worker.

An XLA:CPU executable holds memory mappings until it is freed, and a jitted function
with a static function argument (the library's cores: ``_o2nc(loss_fn, ...)`` and the
like) keeps one executable per function it has seen, up to JAX's cache size (2,048 to
8,192 entries). A worker that runs the whole suite reaches Linux's
``vm.max_map_count`` (65,530) long before that, and the next compilation dies in
LLVM ("Cannot allocate memory", SIGSEGV or SIGABRT): the "intermittent compiler
segfault" of CI (issue 27). ``conftest.py`` drops JAX's caches after a module once
half the map table is used; this checks the two facts it rests on.
"""

import functools
import gc
import sys

import jax
import jax.numpy as jnp
import pytest

from conftest import _memory_maps

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="reads /proc/self/maps"
)


@functools.partial(jax.jit, static_argnames="fn")
def _core(fn, x):
    return jax.lax.fori_loop(0, 3, lambda k, y: fn(y) + k, x)


def test_a_static_function_cache_keeps_maps_until_jax_caches_are_cleared():
    x = jnp.ones(3)
    _core(jnp.sin, x).block_until_ready()  # first-compilation allocations
    before = _memory_maps()
    for i in range(10):  # ten programs; each lambda is dropped at once ...
        _core(lambda y, i=i: jnp.sin(y) * i, x).block_until_ready()
    gc.collect()
    kept = _memory_maps() - before
    assert kept >= 10, kept  # ... but its executable (and its mappings) stays
    jax.clear_caches()
    gc.collect()
    assert _memory_maps() - before <= kept // 2, (kept, _memory_maps() - before)
