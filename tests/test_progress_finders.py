"""Progress bars in the Goldstein finders and Stochastic Spider (issue 15 item 7).

Each finder's compiled step loop runs through :func:`dpsample.progress.scan`, with the
setting read on the host at each run and passed to the jitted core as a static
argument. For each: the same key gives bit for bit the same iterates and output with
progress on and off; with it on the host hears the finder's label at most
``MAX_REPORTS + 2`` times, up to the total number of steps, and with it off never;
and a second call with either setting does not compile again.

The DP trust-region finders run a host loop of jitted single steps (their stopping
time is public and checked after each step), and the quasar warm start's runs are
:class:`~dpsample.finders.dp_sgd.DPSGD` runs (DP-SGD's bar, tested in
``test_progress.py``): neither has a loop of its own to wire.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest
import test_progress
from finders._saddles_b import cosine_case

from dpsample import Budget, progress, registry
from dpsample.finders import goldstein as gs
from dpsample.finders.goldstein.o2nc import _o2nc
from dpsample.finders.spider_sosp import plan_spider, spider_sosp, stochastic_spider
from dpsample.finders.spider_sosp.algorithm1 import _spider_scan

DELTA = 1e-5


# The recorder of test_progress.py: ``(label, done, total)`` per host report.
reports = test_progress.reports
PROBLEM = cosine_case(n=200, dim=2).problem
X0 = np.array([0.3, -0.2])


def _check_reports(reports, label: str, total: int) -> None:
    assert {lab for lab, _, _ in reports} == {label}
    assert {tot for _, _, tot in reports} == {total}
    assert 1 <= len(reports) <= progress.MAX_REPORTS + 2
    assert max(d for _, d, _ in reports) == total  # ran to the end


def _on_off(reports, run, cache_size):
    """``run()`` off, on, off, on: the outputs off and on, and the compile checks."""
    out = {}
    for show in (False, True):
        with progress.enabled(show):
            out[show] = run()
        jax.effects_barrier()
        if not show:
            assert reports == []
    seen = list(reports)
    compiled = cache_size()
    del reports[:]
    with progress.enabled(False):  # back off: quiet, no new compilation
        run()
    jax.effects_barrier()
    assert reports == []
    with progress.enabled(True):  # on again: no new compilation
        run()
    jax.effects_barrier()
    assert cache_size() == compiled
    assert len(reports) == len(seen)
    return out[False], out[True], seen


# ------------------------------------------------------------------- Goldstein
_GOLD = {"alpha": 0.2, "num_directions": 2, "enforce_sensitivity": True}


# Each Goldstein core compiles for ~3 s (twice: on and off): the first-order finder
# is in the slow suite (the bare runner reuses the zero-order test's compilations).
@pytest.mark.slow  # over 7 s in the fast suite (make test-fast --durations)
@pytest.mark.parametrize(
    "order", ["zero", pytest.param("first", marks=pytest.mark.slow)]
)
def test_goldstein_same_iterates_with_progress_on_and_off(reports, order):
    finder = gs.goldstein_zero_order if order == "zero" else gs.goldstein_first_order
    kw = dict(epsilon=2.0, delta=DELTA, x0=X0, num_iters=60, return_iterates=True)
    if order == "first":  # the schedule this test was written for (T = 60 fits)
        kw["preset"] = "corrected"

    def run():
        return finder(jax.random.key(3), PROBLEM, **_GOLD, **kw)

    off, on, seen = _on_off(reports, run, _o2nc._cache_size)
    np.testing.assert_array_equal(np.asarray(on.value), np.asarray(off.value))
    np.testing.assert_array_equal(
        np.asarray(on.info["iterates"]), np.asarray(off.info["iterates"])
    )
    assert on.info["output_window"] == off.info["output_window"]
    assert on.info["samples_used"] == off.info["samples_used"]
    assert on.info.diagnostics == off.info.diagnostics
    _check_reports(seen, f"goldstein_{order}_order", off.info["plan"]["num_iters"])


@pytest.mark.slow  # 7 s in the fast suite
def test_goldstein_runner_same_output_with_progress_on_and_off(reports):
    # The zero-order test's plan and loss: the same structure (and compilations).
    algo = registry.create("goldstein_zero_order")
    plan = algo.plan(PROBLEM.spec, Budget(2.0, DELTA), x0=X0, num_iters=60, **_GOLD)
    schedule = plan.internal["schedule"]
    runner = gs.make_runner(PROBLEM.loss_fn, schedule)

    def run():
        return runner(jax.random.key(0), PROBLEM.data, X0, 0.1, 0.1, 0.1)

    off, on, seen = _on_off(reports, run, _o2nc._cache_size)
    for a, b in zip(on, off, strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    _check_reports(seen, "goldstein_zero_order", schedule["num_iters"])


# ------------------------------------------------------------ Stochastic Spider
@pytest.mark.slow  # over 7 s in the fast suite (make test-fast --durations)
def test_stochastic_spider_same_iterates_with_progress_on_and_off(reports):
    plan = plan_spider(
        PROBLEM, epsilon=8.0, delta=DELTA, x0=X0, num_iters=40, alpha=2.0
    )

    def run():
        return stochastic_spider(jax.random.key(4), PROBLEM, plan)

    off, on, seen = _on_off(reports, run, _spider_scan._cache_size)
    np.testing.assert_array_equal(np.asarray(on.value), np.asarray(off.value))
    assert on.info == off.info
    _check_reports(seen, "stochastic_spider", 40)


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["empirical", "population"])
def test_spider_sosp_same_output_with_progress_on_and_off(reports, variant):
    kw = dict(epsilon=8.0, delta=DELTA, x0=X0, num_iters=40, alpha=2.0)
    kw["variant"] = variant
    out = {}
    for show in (False, True):
        with progress.enabled(show):
            out[show] = spider_sosp(jax.random.key(5), PROBLEM, **kw)
    jax.effects_barrier()
    off, on = out[False], out[True]
    assert (on.value is None) == (off.value is None)
    if off.value is not None:
        np.testing.assert_array_equal(np.asarray(on.value), np.asarray(off.value))
    assert on.info["selected"] == off.info["selected"]
    assert on.info["branch_counts"] == off.info["branch_counts"]
    _check_reports(reports, "stochastic_spider", 40)
