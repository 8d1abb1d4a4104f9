"""``dpsample run``, ``list`` and ``sweep``: what each command does and prints.

:func:`run_config` runs a configuration file and writes ``released.json``,
``report.json`` and ``config.toml``; :func:`dry_run_config` plans it without reading
the data; :func:`list_algorithms` lists the registry; :func:`run_sweep_spec` runs a
sweep spec (:mod:`dpsample.validation`). The parser and the exit statuses are
:mod:`dpsample.cli.entry`'s.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from dpsample.cli.printing import print_plan

# dpsample.config, dpsample.privacy, dpsample.registry, dpsample.validation and jax
# are imported inside the functions that use them: each loads JAX (~2 s), and
# `dpsample --help` must not (tests/test_startup.py). Each such import says "lazy".

__all__ = ["dry_run_config", "list_algorithms", "run_config", "run_sweep_spec"]

# ------------------------------------------------------------------------- run
_SEED_OMITTED = (
    "seed omitted: a seed was given for this run ([job] seed or --seed), and whoever\n"
    "knows it can redraw the noise. Keep it secret; give it again to reproduce the run."
)


def _write_outputs(dest: Path, ex: Any, *, overwrite: bool, seeded: bool) -> None:
    """Write the three files to a temporary folder, then move it into place."""
    from dpsample.config import jsonable, to_toml  # lazy: loads JAX (--help must not)

    parent = dest.parent
    parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.tmp-", dir=parent))
    try:
        report = ex.report
        released = {
            "job": f"{ex.config['job']['kind']}:{ex.config['job']['name']}",
            "point": report["released"]["point"],
            **{k: v for k, v in report["released"].items() if k != "point"},
            "epsilon": report["privacy"]["epsilon"],
            "delta": report["privacy"]["delta"],
            "relation": report["privacy"]["relation"],
        }
        (tmp / "released.json").write_text(json.dumps(released, indent=2) + "\n")
        (tmp / "report.json").write_text(
            json.dumps(jsonable(report), indent=2, allow_nan=False) + "\n"
        )
        (tmp / "config.toml").write_text(
            "# Written by `dpsample run`: the resolved configuration of this run.\n"
            + to_toml(ex.config, comments={"job": _SEED_OMITTED} if seeded else None)
        )
        if dest.exists():
            if not overwrite:
                raise _refuse(dest)
            old = parent / f".{dest.name}.old-{os.getpid()}"
            dest.rename(old)
            tmp.rename(dest)
            shutil.rmtree(old, ignore_errors=True)
        else:
            tmp.rename(dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _refuse(dest: Path) -> Exception:
    from dpsample.config import ConfigError  # lazy: loads JAX (--help must not)

    return ConfigError(
        f"output folder {str(dest)!r} already exists; pass --overwrite (or set "
        "[output] overwrite = true) to replace it"
    )


def run_config(
    config_path: str,
    *,
    output: str | None = None,
    overwrite: bool = False,
    seed: int | None = None,
) -> dict[str, Any]:
    """Run a configuration file and write its output folder.

    Args:
        config_path: The TOML configuration (see :mod:`dpsample.config`).
        output: The output folder (default ``[output] dir``).
        overwrite: Replace an existing output folder (also ``[output] overwrite``).
        seed: Override ``[job] seed``. With a seed (here or in the file) the
            guarantee assumes it is kept secret; without one the key comes from OS
            entropy. The seed is written to none of the files.

    Returns:
        The report written to ``report.json``, with ``output_dir`` and
        ``privacy_text`` (the PRIVACY block printed: ``str(result.report())``)
        added.

    Raises:
        dpsample.config.ConfigError: A bad configuration or an existing folder.
        ValueError: The library refused the run (infeasible budget, ...).
    """
    # lazy: loads JAX (--help must not)
    from dpsample.config import ConfigError, execute, load_config, resolve_config

    cfg = resolve_config(load_config(config_path))
    if seed is not None:
        cfg["job"]["seed"] = seed
    out = output if output is not None else cfg["output"].get("dir")
    if not out:
        raise ConfigError("no output folder: set [output] dir or pass --output DIR")
    overwrite = overwrite or cfg["output"]["overwrite"]
    dest = Path(out)
    if dest.exists() and not dest.is_dir():
        raise ConfigError(f"output path {out!r} exists and is not a folder")
    if dest.exists() and not overwrite:
        raise _refuse(dest)
    cfg["output"]["dir"] = str(out)
    seeded = cfg["job"].get("seed") is not None
    ex = execute(cfg)
    _write_outputs(dest, ex, overwrite=overwrite, seeded=seeded)
    return ex.report | {
        "output_dir": str(dest),
        "privacy_text": str(ex.result.report()),
    }


def dry_run_config(config_path: str, *, seed: int | None = None) -> dict[str, Any]:
    """Plan a configuration file without reading its data; the ``run --dry-run``.

    Args:
        config_path: The TOML configuration.
        seed: Override ``[job] seed`` (it only adds the secret-seed assumption).

    Returns:
        The plan's description (:func:`dpsample.config.dry_run`): ``job``,
        ``problem``, ``privacy`` (the guarantee the run will have against the
        budget, per stage) and ``plan`` (parameters with sources, cost with the
        estimated time).

    Raises:
        dpsample.config.ConfigError: A bad configuration, or a job with no plan.
        ValueError: The algorithm refused to plan.
    """
    # lazy: loads JAX (--help must not)
    from dpsample.config import dry_run as plan_only
    from dpsample.config import load_config, resolve_config

    cfg = resolve_config(load_config(config_path))
    if seed is not None:
        cfg["job"]["seed"] = seed
    planned = plan_only(cfg)
    return planned.report | {"text": str(planned.plan)}


# ------------------------------------------------------------------------- list
def list_algorithms() -> dict[str, Any]:
    """Every registered algorithm, as ``dpsample list --json`` prints it.

    Returns:
        ``{"algorithms": [...]}``: each registered algorithm's name, kind, seed,
        theorem, guarantee type, summary and options (name, type, default,
        required).

    Examples:
        >>> from dpsample.cli import list_algorithms
        >>> [a["name"] for a in list_algorithms()["algorithms"]][:1]
        ['dp_sgd']
    """
    from dpsample import registry  # lazy: loads JAX (--help must not)
    from dpsample.config import jsonable  # lazy: loads JAX (--help must not)

    algorithms = [
        {
            "name": e.name,
            "kind": e.kind,
            "seed": e.seed,
            "theorem": e.theorem,
            "guarantee_type": e.guarantee_type,
            "summary": e.summary,
            "options": [
                {
                    "name": o.name,
                    "type": o.annotation,
                    "default": o.default,
                    "required": o.required,
                }
                for o in e.options()
            ],
        }
        for e in registry.entries()
    ]
    return jsonable({"algorithms": algorithms})


# ------------------------------------------------------------------------- sweep


def run_sweep_spec(
    spec: str,
    *,
    out: str | None = None,
    address: str | None = None,
    workers: int | None = None,
    smoke: bool = False,
    dry_run: bool = False,
    retry_failed: bool = True,
) -> int:
    """Run (or with ``dry_run`` list) a validation sweep; the ``sweep`` subcommand.

    Args:
        spec: The spec file (see :mod:`dpsample.validation.spec`).
        out: The sweep's folder (default
            :func:`~dpsample.validation.engine.default_out`).
        address: A Dask scheduler; default an embedded ``LocalCluster``.
        workers: Local worker processes (default one per core; 0: in this process).
        smoke: Run the spec's smoke grid.
        dry_run: Print the cells and the estimated cost; run nothing.
        retry_failed: Rerun cells whose last run failed.

    Returns:
        The exit status: ``0``, ``3`` when cells failed, ``130`` when interrupted.
    """
    # lazy: loads JAX (--help must not)
    from dpsample.validation.engine import (
        default_out,
        failed_summary,
        plan_sweep,
        run_sweep,
    )

    if out is None:
        out = str(default_out(spec, smoke=smoke))
        print(f"dpsample sweep: writing to {out}", file=sys.stderr)
    if dry_run:
        plan = plan_sweep(
            spec,
            out,
            smoke=smoke,
            workers=workers,
            retry_failed=retry_failed,
            forecast=True,
        )
        print_plan(plan, smoke=smoke)
        return 0
    try:
        outcome = run_sweep(
            spec,
            out,
            smoke=smoke,
            address=address,
            workers=workers,
            retry_failed=retry_failed,
        )
    except KeyboardInterrupt:
        print(
            f"dpsample sweep: interrupted; finished cells are in {out}/cells, run the "
            "same command to resume",
            file=sys.stderr,
        )
        return 130
    print(
        f"dpsample sweep: {outcome.cells} cells ({outcome.ran} run now, "
        f"{outcome.skipped} already done), {len(outcome.failed)} failed"
    )
    tables = ["summary.csv", "slopes.csv", "report.md"]
    if (outcome.out / "comparisons.csv").exists():
        tables.insert(2, "comparisons.csv")
    print(
        f"wrote {outcome.out}/{{{', '.join(tables)}}}, "
        f"{len(outcome.figures)} figure(s) in {outcome.out}/figures, one file per "
        f"cell in {outcome.out}/cells"
    )
    if outcome.failed:
        print(f"dpsample sweep: {len(outcome.failed)} cell(s) failed:", file=sys.stderr)
        for line in failed_summary(outcome.failed, outcome.out):
            print(f"  {line}", file=sys.stderr)
        return 3
    return 0
