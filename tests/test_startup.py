"""Start-up: a cheap ``import dpsample``, a cheap ``--help``, the CLI's compile cache.

Issue 27's goals: ``import dpsample`` under 1 s and ``dpsample --help`` under 0.5 s,
where ``import jax`` took 0.50 s (1.56 s was 3.1x ``import jax``). Times are
measured as ratios to ``python -c "import jax"`` in fresh processes, best of a few, so
that load on the machine cancels: limits 2.0 and 1.0. The fast tests check the cause
directly (which modules an import loads).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import dpsample

REPO = Path(__file__).resolve().parents[1]

#: Third-party modules that ``import dpsample`` and ``--help`` must not load.
HEAVY = (
    "jax",
    "dp_accounting",
    "scipy",
    "blackjax",
    "optax",
    "pandas",
    "matplotlib",
    "dask",
    "sklearn",
    "arviz",
)

#: Goals of issue 27 as ratios to ``import jax`` (0.50 s when they were set).
IMPORT_RATIO, HELP_RATIO = 2.0, 1.0


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ, JAX_PLATFORMS="cpu", **extra)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(REPO), env.get("PYTHONPATH")) if p
    )
    return env


def _python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        env=_env(**env),
        cwd=REPO,
    )


HELP = "\n".join(
    [
        "from dpsample.cli import main",
        "try:",
        "    main(['--help'])",
        "except SystemExit:",
        "    pass",
    ]
)


def _loaded_heavy() -> str:
    return f"sorted(m for m in {HEAVY!r} if m in sys.modules)"


def test_import_and_help_load_no_heavy_module():
    code = (
        "import sys, io, contextlib\nimport dpsample\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        + "\n".join("    " + line for line in HELP.splitlines())
        + f"\nprint({_loaded_heavy()})"
    )
    out = _python(code)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
    assert "jax" in eval(_loaded_heavy())  # power: this process has loaded JAX


def test_lazy_names_are_the_eager_ones():
    import dpsample.pipelines as pipelines

    assert dpsample.__all__ == sorted([*dpsample._NAMES, *dpsample._SUBMODULES])
    assert set(dpsample.__all__) <= set(dir(dpsample))
    for name in dpsample.__all__:
        assert getattr(dpsample, name) is not None
    from dpsample import Problem, finders, warm_start

    assert Problem is dpsample.problem.Problem
    # dpsample.warm_start is the function; pipelines.warm_start the module (issue
    # 28), callable as that function
    assert warm_start is pipelines.warm_start.warm_start and callable(warm_start)
    assert callable(pipelines.warm_start)
    assert finders.__name__ == "dpsample.finders"
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        dpsample.nope  # noqa: B018
    with pytest.raises(ImportError):
        from dpsample import nope  # noqa: F401


@pytest.mark.slow
def test_registry_lists_every_algorithm_after_a_bare_import():
    """Registration needs no import side effect: a fresh process lists all."""
    out = _python(
        "import dpsample\nr = dpsample.registry\n"
        "print(len(r.names()), len(r.ALGORITHMS))"
    )
    assert out.returncode == 0, out.stderr
    listed, declared = out.stdout.split()
    assert listed == declared == "13"


def _best_time(code: str, reps: int = 3) -> float:
    best = float("inf")
    for _ in range(reps):
        start = time.perf_counter()
        out = _python(code)
        best = min(best, time.perf_counter() - start)
        assert out.returncode == 0, out.stderr
    return best


@pytest.mark.slow
def test_import_and_help_time_against_import_jax():
    jax_time = _best_time("import jax")
    ratios = {
        "import dpsample": _best_time("import dpsample") / jax_time,
        "dpsample --help": _best_time(HELP) / jax_time,
    }
    assert ratios["import dpsample"] < IMPORT_RATIO, ratios
    assert ratios["dpsample --help"] < HELP_RATIO, ratios
    # power: the eager import of every subpackage (as before) fails the limit
    eager = "import dpsample.finders, dpsample.samplers, dpsample.pipelines"
    assert _best_time(eager, reps=1) / jax_time > IMPORT_RATIO


# ------------------------------------------------------------ compilation cache
def _cli(args: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    environ = _env(JAX_LOG_COMPILES="1", **env)
    environ.pop("DPSAMPLE_COMPILE_CACHE", None)  # conftest turns it off
    environ.update(env)
    return subprocess.run(
        [sys.executable, "-m", "dpsample.cli", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env=environ,
        cwd=REPO,
    )


def _hits(out: subprocess.CompletedProcess[str]) -> int:
    return out.stderr.count("Persistent compilation cache hit")


@pytest.mark.slow
def test_cli_compile_cache_in_the_xdg_folder_and_off_switches(tmp_path):
    """A second ``dpsample run`` loads its programs from the cache folder.

    The folder is a temporary ``XDG_CACHE_HOME`` (never the user's); the option and
    the variable each turn the cache off, and the library import sets nothing.
    """
    config = REPO / "examples" / "net_iris.toml"
    xdg = str(tmp_path / "xdg")
    folder = tmp_path / "xdg" / "dpsample" / "jax"
    first = _cli(
        ["run", str(config), "-o", str(tmp_path / "a")], XDG_CACHE_HOME=str(xdg)
    )
    assert first.returncode == 0, first.stderr
    entries = list(folder.iterdir())
    assert entries and _hits(first) == 0
    second = _cli(
        ["run", str(config), "-o", str(tmp_path / "b")], XDG_CACHE_HOME=str(xdg)
    )
    assert second.returncode == 0, second.stderr
    assert _hits(second) >= len(entries) // 2 > 0
    # the switches, on a run that fails at once (a missing configuration file):
    # the cache is set up before the configuration is read
    missing = str(tmp_path / "missing.toml")
    for args, env, used in (
        ([], {}, True),  # power: the folder is made
        (["--no-compile-cache"], {}, False),
        (["run", missing, "--no-compile-cache"], {}, False),
        ([], {"DPSAMPLE_COMPILE_CACHE": "off"}, False),
    ):
        off = tmp_path / f"xdg{len(args)}{len(env)}"
        argv = args if args[:1] == ["run"] else [*args, "run", missing]
        out = _cli(argv, XDG_CACHE_HOME=str(off), **env)
        assert out.returncode == 2 and "missing.toml" in out.stderr, out.stderr
        assert (off / "dpsample" / "jax").is_dir() == used, (args, env)
    # the library (and calling the CLI's functions from Python) sets no JAX option
    code = (
        f"import jax, dpsample.cli as c\nc.dry_run_config({str(config)!r})\n"
        "print(jax.config.jax_compilation_cache_dir)"
    )
    out = _python(code, XDG_CACHE_HOME=str(off))
    assert out.returncode == 0 and out.stdout.strip() == "None", out.stderr
