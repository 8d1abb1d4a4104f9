"""Progress bars (``dpsample.progress``): quiet by default, same results, few reports.

* The setting: ``auto`` is off when stderr is not a terminal (as under pytest), on
  when it is; ``DPSAMPLE_PROGRESS`` and ``progress.enabled(...)`` override it, the
  context first; a bad value is refused.
* Off, :func:`progress.scan` / :func:`progress.fori_loop` trace to exactly
  ``lax.scan`` / ``lax.fori_loop`` (no callback in the jaxpr); on, the host is called
  at most ``MAX_REPORTS + 2`` times a loop (the start, every 1% of the steps, the
  end), with the step count only and in step order; the results are the same,
  ``reverse`` and ``vmap`` included.
* The library's runners (DP-SGD, DP-SPIDER, the Gibbs chain, the net exponential
  mechanism) give bit for bit the same result with progress on and off, report with
  it on and never with it off, and each setting compiles once (toggling after a first
  call takes effect, with no retrace when it comes back).
"""

from __future__ import annotations

import functools
import io

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from dpsample import Ball, Budget, Problem, progress, registry
from dpsample.finders.dp_sgd import _sgd_scan

DELTA = 1e-5


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def reports(monkeypatch):
    """Record the host reports ``(label, done, total)`` instead of drawing."""
    seen: list[tuple[str, int, int]] = []

    def record(done, *, label, total):
        seen.append((label, int(done), total))

    monkeypatch.setattr(progress, "_report", record)
    return seen


# ------------------------------------------------------------------- the setting
def test_auto_is_off_without_a_terminal_and_on_with_one(monkeypatch):
    monkeypatch.delenv(progress.ENV_VAR, raising=False)
    monkeypatch.setattr("sys.stderr", io.StringIO())
    assert not progress.is_enabled()
    monkeypatch.setattr("sys.stderr", _Tty())
    assert progress.is_enabled()
    monkeypatch.setattr("sys.stderr", None)
    assert not progress.is_enabled()


def test_environment_and_context_override_auto(monkeypatch):
    monkeypatch.setattr("sys.stderr", io.StringIO())
    monkeypatch.setenv(progress.ENV_VAR, "1")
    assert progress.is_enabled()
    with progress.enabled(False):  # the context wins over the environment
        assert not progress.is_enabled()
        with progress.enabled(None):  # auto: no terminal here
            assert not progress.is_enabled()
    assert progress.is_enabled()  # restored
    monkeypatch.setenv(progress.ENV_VAR, "off")
    assert not progress.is_enabled()
    with progress.enabled(True):
        assert progress.is_enabled()
    monkeypatch.setenv(progress.ENV_VAR, "maybe")
    with pytest.raises(ValueError, match="DPSAMPLE_PROGRESS"):
        progress.is_enabled()
    with pytest.raises(TypeError):
        with progress.enabled(1):  # type: ignore[arg-type]
            pass


# ------------------------------------------------------------------- the loops
def _step(c, x):
    return c + jnp.sin(x), c


def test_off_traces_to_exactly_lax_scan_and_fori_loop():
    xs = jnp.arange(50.0)
    plain = jax.make_jaxpr(lambda: jax.lax.scan(_step, 0.0, xs))()
    off = jax.make_jaxpr(lambda: progress.scan(_step, 0.0, xs, show=False))()
    on = jax.make_jaxpr(lambda: progress.scan(_step, 0.0, xs, show=True))()
    assert str(off) == str(plain)
    assert "io_callback" not in str(off)
    assert "io_callback" in str(on)  # power: the check sees a callback

    def body(i, c):
        return c + i

    plain = jax.make_jaxpr(lambda: jax.lax.fori_loop(0, 50, body, 0))()
    off = jax.make_jaxpr(lambda: progress.fori_loop(0, 50, body, 0, show=False))()
    on = jax.make_jaxpr(lambda: progress.fori_loop(0, 50, body, 0, show=True))()
    assert str(off) == str(plain)
    assert "io_callback" in str(on)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("length", [7, 100, 251, 12_345])
def test_reports_are_few_end_at_the_total_and_results_match(reports, length, reverse):
    xs = jnp.linspace(0.0, 3.0, length)
    run = jax.jit(
        lambda xs, show: progress.scan(
            _step, 0.0, xs, reverse=reverse, label="t", show=show
        ),
        static_argnames="show",
    )
    c_off, ys_off = run(xs, show=False)
    assert reports == []
    c_on, ys_on = run(xs, show=True)
    jax.effects_barrier()
    np.testing.assert_array_equal(np.asarray(c_on), np.asarray(c_off))
    np.testing.assert_array_equal(np.asarray(ys_on), np.asarray(ys_off))
    done = [d for _, d, _ in reports]  # in the order the host heard them
    assert len(done) <= progress.MAX_REPORTS + 2
    stride = -(-length // progress.MAX_REPORTS)  # every 1% of the steps at most
    expected = {0, length} | set(range(stride, length + 1, stride))
    # Each once, in step order: the start first, each chunk, the end last (before
    # the fix XLA ran the constant start and end reports first: 12345, 0, 124, ...).
    assert done == sorted(expected)
    assert {t for _, _, t in reports} == {length}


def test_no_xs_and_fori_loop_index_match_jax(reports):
    def count(c, _):
        return c + 1, c

    on = progress.scan(count, 0, None, length=250, show=True)
    off = jax.lax.scan(count, 0, None, length=250)
    assert int(on[0]) == int(off[0]) == 250
    np.testing.assert_array_equal(np.asarray(on[1]), np.asarray(off[1]))

    dtypes = []

    def body(i, c):  # the index's dtype is lax.fori_loop's
        dtypes.append(i.dtype)
        return c + jnp.asarray(i, jnp.float32) * 0.5

    for x64 in (False, True):
        with jax.enable_x64(x64):
            plain = jax.lax.fori_loop(3, 260, body, 0.0)
            shown = progress.fori_loop(3, 260, body, 0.0, show=True)
            assert float(shown) == float(plain)
            assert len(set(dtypes)) == 1, dtypes
            dtypes.clear()
    jax.effects_barrier()
    assert max(d for _, d, _ in reports) == 257


def test_mismatched_length_is_refused_as_lax_scan_refuses_it():
    for show in (False, True):
        with pytest.raises(ValueError):
            progress.scan(_step, 0.0, jnp.arange(10.0), length=8, show=show)


def test_one_bar_under_vmap_and_fori_loop_reports(reports):
    def chain(k):
        return progress.scan(lambda c, x: (c + k * x, None), 0.0, jnp.arange(1000.0))

    with progress.enabled(True):
        out = jax.jit(jax.vmap(chain))(jnp.arange(4.0))[0]
        total = progress.fori_loop(0, 300, lambda i, c: c + i, 0, label="f")
    jax.effects_barrier()
    assert out.tolist() == [0.0, 499500.0, 999000.0, 1498500.0]
    assert int(total) == 44850
    scans = [d for label, d, _ in reports if label == "scan"]
    loops = [d for label, d, _ in reports if label == "f"]
    assert len(scans) == 101  # once per report, not once per vmapped chain
    assert len(loops) == 101 and max(loops) == 300


def test_the_bar_draws_on_stderr_and_ends_its_line(monkeypatch, capsys):
    tty = _Tty()
    monkeypatch.setattr("sys.stderr", tty)
    progress.scan(_step, 0.0, jnp.arange(500.0), label="demo", show=True)
    jax.effects_barrier()
    err = tty.getvalue()
    assert err.startswith("\rdemo: ") and err.endswith("\n")
    assert "demo: 100% [####################] 500/500 steps" in err
    monkeypatch.undo()
    progress.scan(_step, 0.0, jnp.arange(500.0), label="demo", show=True)
    jax.effects_barrier()
    err = capsys.readouterr().err  # not a terminal: plain lines
    assert err.startswith("demo: 0/500 steps, ") and "\r" not in err
    assert "demo: 500/500 steps, " in err and err.endswith("\n")


# ------------------------------------------------------------------- the runners
def _quadratic():
    z = np.linspace(-0.7, 0.7, 64).reshape(32, 2)
    return Problem(
        lambda x, e: 0.5 * jnp.sum((x - e["z"]) ** 2),
        {"z": z},
        Ball(2.0, dim=2),
        lipschitz=3.0,
        smoothness=1.0,
        loss_range=4.5,
    )


PROBLEM = _quadratic()
X0 = [0.3, -0.1]
#: name -> (registry name, plan options, the bar's label).
RUNNERS = {
    "dp_sgd": ("dp_sgd", {"num_steps": 400, "sampling": "full_batch", "x0": X0}),
    "dp_spider": (
        "dp_spider",
        {
            "num_steps": 300,
            "phase_length": 10,
            "learning_rate": 0.1,
            "anchor_batch_size": 32,
            "variation_batch_size": 8,
            "x0": X0,
        },
    ),
    "gibbs (langevin)": ("gibbs", {"method": "langevin", "max_steps": 300}),
    "net exponential mechanism (chunks)": ("net", {"spacing": 0.02, "chunk_size": 256}),
}


@functools.cache
def _planned(name):
    algo_name, options = RUNNERS[name]
    algo = registry.create(algo_name)
    return algo, algo.plan(PROBLEM.spec, Budget(1.0, DELTA), **options)


def _run(name, seed):
    algo, plan = _planned(name)
    return algo.run(jax.random.key(seed), plan, PROBLEM.data)


# The Gibbs chain and DP-SPIDER compile for several seconds each: in the slow suite.
SLOW = {"gibbs (langevin)", "dp_spider"}


@pytest.mark.parametrize(
    "name",
    [pytest.param(n, marks=[pytest.mark.slow] if n in SLOW else []) for n in RUNNERS],
)
def test_runners_give_the_same_result_with_progress_on_and_off(reports, name):
    with progress.enabled(False):
        off = _run(name, 5)
    assert reports == []
    with progress.enabled(True):
        on = _run(name, 5)
    jax.effects_barrier()
    np.testing.assert_array_equal(np.asarray(on.value), np.asarray(off.value))
    assert {label for label, _, _ in reports} == {name}
    assert 1 <= len(reports) <= progress.MAX_REPORTS + 2
    assert max(d for _, d, _ in reports) == reports[0][2]  # ran to the end


def test_toggling_takes_effect_and_each_setting_compiles_once(reports):
    compiled = _sgd_scan._cache_size
    with progress.enabled(False):
        _run("dp_sgd", 0)
    assert reports == []
    with progress.enabled(True):  # after a first call: takes effect
        _run("dp_sgd", 1)
    jax.effects_barrier()
    assert len(reports) > 0
    before = compiled()
    del reports[:]
    with progress.enabled(False):  # back off: quiet, no new compilation
        _run("dp_sgd", 2)
    jax.effects_barrier()
    assert reports == []
    with progress.enabled(True):  # on again: reports, no new compilation
        _run("dp_sgd", 3)
    jax.effects_barrier()
    assert compiled() == before
    assert 1 <= len(reports) <= progress.MAX_REPORTS + 2


@pytest.mark.slow
def test_diagnostic_chains_share_one_bar_and_keep_their_draws(reports):
    from dpsample.samplers import diagnostics
    from dpsample.samplers.target import GibbsTarget

    p = Problem(
        lambda x, z: jnp.abs(x[0] - z),
        jnp.linspace(-1.0, 1.0, 5),
        Ball(2.0, dim=1),
        lipschitz=1.0,
    )
    target = GibbsTarget.create(p, beta=1.0, mu=1.0)
    kw = {"method": "mala", "num_chains": 3, "num_steps": 450, "step_size": 0.5}
    out = {}
    for show in (False, True):
        with progress.enabled(show):
            out[show] = diagnostics.run(jax.random.key(0), target, **kw).positions
    jax.effects_barrier()
    np.testing.assert_array_equal(out[True], out[False])
    assert {label for label, _, _ in reports} == {"gibbs chains (mala)"}
    assert len(reports) == 91  # 0, every 5 steps of all 3 chains: not 3 bars
    del reports[:]
    with progress.enabled(True):  # its own chunk lines replace the bar
        diagnostics.run(jax.random.key(0), target, progress=True, **kw)
    jax.effects_barrier()
    assert reports == []
