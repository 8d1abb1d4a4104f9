"""The ``dpsample`` command line: its parser, ``main`` and the compilation cache.

:func:`main` parses the arguments and dispatches to :mod:`dpsample.cli.starter`
(``quickstart``) and :mod:`dpsample.cli.commands` (``run``, ``list``, ``sweep``); it
turns on JAX's persistent compilation cache (:func:`compile_cache_dir`) for the
commands that compute, and maps errors to exit statuses (see :mod:`dpsample.cli`).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dpsample._src.extras import MissingExtraError
from dpsample.cli.commands import (
    dry_run_config,
    list_algorithms,
    run_config,
    run_sweep_spec,
)
from dpsample.cli.printing import (
    print_dry_run,
    print_list,
    print_quickstart,
    print_run,
)
from dpsample.cli.starter import quickstart

# dpsample.config, dpsample.privacy, dpsample.registry, dpsample.validation and jax
# are imported inside the functions that use them: each loads JAX (~2 s), and
# `dpsample --help` must not (tests/test_startup.py). Each such import says "lazy".

__all__ = ["COMPILE_CACHE_ENV", "compile_cache_dir", "main"]

#: Environment variable: ``0``/``off``/``false``/``no`` turns the command's persistent
#: compilation cache off; any other non-empty value is the cache folder.
COMPILE_CACHE_ENV = "DPSAMPLE_COMPILE_CACHE"

#: Values of :data:`COMPILE_CACHE_ENV` that turn the cache off.
_OFF = ("0", "off", "false", "no")


# ------------------------------------------------------------- compilation cache
def compile_cache_dir(environ: Mapping[str, str] | None = None) -> Path | None:
    """The folder of the command's persistent compilation cache, or None when off.

    ``$DPSAMPLE_COMPILE_CACHE`` when it names a folder (``0``, ``off``, ``false`` or
    ``no``: off), else ``$XDG_CACHE_HOME/dpsample/jax`` (an absolute
    ``XDG_CACHE_HOME`` only, as the XDG specification says), else
    ``~/.cache/dpsample/jax``. Reads the environment only: it creates nothing and
    sets nothing.

    Args:
        environ: The environment (default ``os.environ``).

    Returns:
        The folder, or ``None`` when the cache is turned off.

    Examples:
        >>> from dpsample.cli import compile_cache_dir
        >>> str(compile_cache_dir({"XDG_CACHE_HOME": "/tmp/c"}))
        '/tmp/c/dpsample/jax'
        >>> compile_cache_dir({"DPSAMPLE_COMPILE_CACHE": "off"}) is None
        True
    """
    env = os.environ if environ is None else environ
    value = env.get(COMPILE_CACHE_ENV, "").strip()
    if value.lower() in _OFF:
        return None
    if value:
        return Path(value).expanduser()
    xdg = env.get("XDG_CACHE_HOME", "")
    base = Path(xdg) if os.path.isabs(xdg) else Path(env.get("HOME", "~")) / ".cache"
    return base.expanduser() / "dpsample" / "jax"


def _use_compile_cache(folder: Path | None) -> None:
    """Point JAX's persistent compilation cache at ``folder`` (this process only).

    Every compiled program is cached (JAX's default keeps only those that took over
    a second to compile; the quickstart's take tens of milliseconds each). A cache
    folder already given to JAX is kept; a folder that cannot be created leaves
    the cache off, with a note on stderr.
    """
    if folder is None:
        return
    import jax  # lazy: loads JAX (--help must not)

    if getattr(jax.config, "jax_compilation_cache_dir", None):
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        print(f"dpsample: note: compilation cache off ({err})", file=sys.stderr)
        return
    jax.config.update("jax_compilation_cache_dir", str(folder))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)


def _nonnegative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"expected a finite number > 0, got {text}")
    return value


def _unit_interval(text: str) -> float:
    value = _positive_float(text)
    if not value < 1:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1), got {text}")
    return value


_NO_CACHE = ("--no-compile-cache",)


def _no_cache_kwargs(default: Any) -> dict[str, Any]:
    # accepted before and after the command; SUPPRESS keeps one from resetting the
    # other (the value is read with getattr(args, "no_compile_cache", False))
    return {
        "action": "store_true",
        "default": default,
        "dest": "no_compile_cache",
        "help": "do not use the persistent compilation cache "
        f"(also: {COMPILE_CACHE_ENV}=0; default folder "
        "$XDG_CACHE_HOME/dpsample/jax or ~/.cache/dpsample/jax)",
    }


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dpsample",
        description="Differentially private learning with non-convex losses.",
        epilog="Exit status: 0 success, 2 usage/configuration/privacy errors, "
        "1 internal errors.",
    )
    parser.add_argument(
        "--traceback",
        action="store_true",
        help="show the traceback of errors instead of a one-line message",
    )
    parser.add_argument(*_NO_CACHE, **_no_cache_kwargs(argparse.SUPPRESS))
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    qs = sub.add_parser(
        "quickstart",
        help="the main job: a warm-start run on the breast-cancer data",
        description="Warm start (net exponential mechanism, then DP-SPIDER) on "
        "scikit-learn's breast-cancer data under the sigmoid loss.",
    )
    qs.add_argument("--epsilon", type=_positive_float, default=2.0)
    qs.add_argument("--delta", type=_unit_interval, default=1e-6)
    qs.add_argument("--radius", type=_positive_float, default=8.0)
    qs.add_argument(
        "--seed",
        type=int,
        help="seed of the run's key (default: fresh OS entropy); the guarantee then "
        "assumes the seed is kept secret",
    )
    qs.add_argument(*_NO_CACHE, **_no_cache_kwargs(argparse.SUPPRESS))
    qs.add_argument("--json", action="store_true", help="print the report as JSON")
    rn = sub.add_parser(
        "run",
        help="run a sampler, finder or pipeline from a TOML configuration",
        description="Run CONFIG.toml and write released.json, report.json and "
        "config.toml to the output folder (see docs/cli.md).",
    )
    rn.add_argument("config", metavar="CONFIG.toml")
    rn.add_argument("--output", "-o", metavar="DIR", help="output folder")
    rn.add_argument(
        "--overwrite", action="store_true", help="replace an existing output folder"
    )
    rn.add_argument(
        "--seed",
        type=int,
        help="override [job] seed (default: fresh OS entropy); the guarantee then "
        "assumes the seed is kept secret, and it is written to no file",
    )
    rn.add_argument(
        "--dry-run",
        action="store_true",
        help="print the plan (parameters and sources, guarantee, cost and estimated "
        "time) without reading the data; run nothing, write nothing",
    )
    rn.add_argument(*_NO_CACHE, **_no_cache_kwargs(argparse.SUPPRESS))
    rn.add_argument("--json", action="store_true", help="print the report as JSON")
    ls = sub.add_parser(
        "list",
        help="list every registered algorithm",
        description="Every registered algorithm, one a line: name, kind, guarantee "
        "and source (seed paper and theorem).",
    )
    ls.add_argument("--json", action="store_true", help="print the list as JSON")
    sw = sub.add_parser(
        "sweep",
        help="run a validation sweep: a grid of dpsample run cells, on Dask",
        description="Run every cell of SPEC.toml (resuming: finished cells are "
        "skipped) and write cells/, summary.csv, slopes.csv, figures and report.md "
        "to DIR (see docs/validation.md).",
    )
    sw.add_argument("spec", metavar="SPEC.toml")
    sw.add_argument(
        "--out",
        "-o",
        metavar="DIR",
        help="sweep folder (default: <spec folder>/results/<name>, or "
        "runs/<name>_smoke with --smoke)",
    )
    sw.add_argument(
        "--address",
        metavar="tcp://HOST:PORT",
        help="run on an existing Dask cluster (default: an embedded LocalCluster)",
    )
    sw.add_argument(
        "--workers",
        type=_nonnegative_int,
        metavar="N",
        help="local worker processes (default: one per core; 0: in this process)",
    )
    sw.add_argument(
        "--dry-run", action="store_true", help="print the cells and the cost; run none"
    )
    sw.add_argument(*_NO_CACHE, **_no_cache_kwargs(argparse.SUPPRESS))
    sw.add_argument("--smoke", action="store_true", help="run the spec's smoke grid")
    sw.add_argument(
        "--skip-failed",
        action="store_true",
        help="do not rerun cells whose last run failed",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dpsample`` command.

    Args:
        argv: Command-line arguments (default ``sys.argv[1:]``).

    Returns:
        The process exit status (``0``, or ``2`` for a reported error).
    """
    args = _build_parser().parse_args(argv)
    if args.command in ("run", "sweep") and os.getcwd() not in sys.path:
        # data functions and hooks ("package.module:function") import from the
        # current folder, as under `python -m`
        sys.path.insert(0, os.getcwd())
    computes = args.command in ("quickstart", "sweep") or (
        args.command == "run" and not args.dry_run
    )
    if computes and not getattr(args, "no_compile_cache", False):
        _use_compile_cache(compile_cache_dir())
    try:
        if args.command == "sweep":
            return run_sweep_spec(
                args.spec,
                out=args.out,
                address=args.address,
                workers=args.workers,
                smoke=args.smoke,
                dry_run=args.dry_run,
                retry_failed=not args.skip_failed,
            )
        if args.command == "quickstart":
            report = quickstart(
                epsilon=args.epsilon,
                delta=args.delta,
                radius=args.radius,
                seed=args.seed,
            )
            if args.json:
                report["privacy"].pop("text")
                print(json.dumps(report, indent=2))
            else:
                print_quickstart(report)
            return 0
        if args.command == "list":
            listing = list_algorithms()
            if args.json:
                print(json.dumps(listing, indent=2))
            else:
                print_list(listing)
            return 0
        if args.dry_run:
            planned = dry_run_config(args.config, seed=args.seed)
            if args.json:
                planned.pop("text")
                print(json.dumps(planned, indent=2, allow_nan=False))
            else:
                print_dry_run(planned)
            return 0
        report = run_config(
            args.config, output=args.output, overwrite=args.overwrite, seed=args.seed
        )
        if args.json:
            report.pop("privacy_text")
            print(json.dumps(report, indent=2))
        else:
            print_run(report)
        return 0
    except (ValueError, TypeError, MissingExtraError) as err:
        if args.traceback:
            raise
        from dpsample.config import ConfigError  # lazy: loads JAX (--help must not)

        text = str(err) if isinstance(err, ConfigError) else _describe(err)
        print(f"dpsample: error: {text}", file=sys.stderr)
        return 2


def _describe(err: Exception) -> str:
    name = type(err).__name__
    return f"{err} ({name})" if name not in ("ValueError", "TypeError") else str(err)
