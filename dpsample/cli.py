"""The ``dpsample`` command: ``quickstart``, ``list``, ``run``, ``sweep``.

``dpsample quickstart`` is the main job behind ``make demo``: the warm-start pipeline
of seed 003 (the exponential mechanism over a net of a ball, then DP-SPIDER from its
output) on scikit-learn's bundled breast-cancer data under the non-convex sigmoid loss,
with the privacy report (every stage, the composed total and the ledger), the public
warm-start bound ``psi``, the theorem's stationarity bound against the cold start's,
the dispatcher's decision and clearly labelled non-private diagnostics.

``dpsample list`` prints every registered algorithm (:mod:`dpsample.registry`): its
name, kind, guarantee and source (seed paper and theorem).

``dpsample run CONFIG.toml`` runs any registered sampler, finder or pipeline on a
named dataset and loss (:mod:`dpsample.config`) and writes ``released.json``,
``report.json`` and ``config.toml`` to an output folder; ``--dry-run`` prints the
plan (parameters with their sources, the guarantee against the budget, the cost and
an estimated time) without reading the data.

The key of a private run comes from OS entropy unless a seed is given (``[job] seed``
or ``--seed``); a given seed makes the guarantee conditional on keeping it secret
(the verdict says so) and is never written to the output folder.

``dpsample sweep SPEC.toml --out DIR`` runs a grid of such runs on Dask and writes
their tables, figures and report (:mod:`dpsample.validation`, ``docs/validation.md``).

Compilation cache: ``quickstart``, ``run`` (not ``--dry-run``) and ``sweep`` turn on
JAX's persistent compilation cache for their own process (:func:`compile_cache_dir`:
``$XDG_CACHE_HOME/dpsample/jax``, default ``~/.cache/dpsample/jax``), so a second run of
the same job loads its compiled programs instead of compiling them again. Off with
``--no-compile-cache`` or ``DPSAMPLE_COMPILE_CACHE=0``; ``DPSAMPLE_COMPILE_CACHE=DIR``
chooses the folder; a cache folder the caller already gave JAX
(``JAX_COMPILATION_CACHE_DIR``) is left as it is. This is the command's setting only:
importing :mod:`dpsample` (or calling :func:`quickstart` from Python) changes no JAX
setting. The cache holds compiled XLA programs (no data) and is not size-capped:
delete the folder to empty it.

Exit status: ``0`` success; ``2`` a usage, configuration or privacy-parameter error,
an infeasible budget or an existing output folder (``dpsample: error: ...`` on
stderr, no traceback); ``3`` a sweep finished with failed cells (named on stderr);
``130`` a sweep interrupted (rerun the same command to resume); ``1`` an unexpected
internal error (with its traceback).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dpsample._src.extras import MissingExtraError

__all__ = [
    "COMPILE_CACHE_ENV",
    "compile_cache_dir",
    "dry_run_config",
    "list_algorithms",
    "main",
    "quickstart",
    "quickstart_config",
    "run_config",
    "run_sweep_spec",
]

#: Environment variable: ``0``/``off``/``false``/``no`` turns the command's persistent
#: compilation cache off; any other non-empty value is the cache folder.
COMPILE_CACHE_ENV = "DPSAMPLE_COMPILE_CACHE"

#: Values of :data:`COMPILE_CACHE_ENV` that turn the cache off.
_OFF = ("0", "off", "false", "no")

#: Publicly chosen features of the quickstart (no look at the data's statistics).
QUICKSTART_FEATURES = ("mean concave points", "mean fractal dimension")


def quickstart_config(
    *,
    epsilon: float = 2.0,
    delta: float = 1e-6,
    radius: float = 8.0,
    seed: int | None = None,
    features: Sequence[str] = QUICKSTART_FEATURES,
) -> dict[str, Any]:
    """The quickstart job as a ``dpsample run`` configuration (unresolved).

    Args:
        epsilon: Total epsilon of the warm-start pipeline.
        delta: Total delta.
        radius: Radius of the ball ``K`` centred at the origin (public).
        seed: Seed of the private run's PRNG key (default: none, a fresh key from
            OS entropy; a seed must be kept secret).
        features: Breast-cancer feature names (chosen publicly).

    Returns:
        The configuration, one dict per TOML section.

    Examples:
        >>> from dpsample.cli import quickstart_config
        >>> from dpsample.config import resolve_config
        >>> cfg = resolve_config(quickstart_config())
        >>> cfg["job"]["name"], cfg["options"]["sampler"], cfg["options"]["finder"]
        ('warm_start', 'net', 'dp_spider')
    """
    job: dict[str, Any] = {"kind": "pipeline", "name": "warm_start"}
    if seed is not None:
        job["seed"] = seed
    return {
        "job": job,
        "data": {
            "source": "sklearn",
            "name": "breast_cancer",
            "features": list(features),
            "normalize_rows": True,
        },
        "loss": {"name": "sigmoid", "feature_bound": 1.0, "radius": radius},
        "domain": {"kind": "ball", "radius": radius},
        "privacy": {"epsilon": epsilon, "delta": delta},
        "options": {"sampler": "net", "finder": "dp_spider", "diagnostics": True},
    }


def quickstart(
    *,
    epsilon: float = 2.0,
    delta: float = 1e-6,
    radius: float = 8.0,
    seed: int | None = None,
    features: Sequence[str] = QUICKSTART_FEATURES,
) -> dict[str, Any]:
    """Run the quickstart job and return its report (a JSON-serialisable dict).

    The warm-start pipeline :func:`dpsample.pipelines.warm_start` with
    ``sampler="net"`` and ``finder="dp_spider"`` on the breast-cancer data (two
    publicly chosen features, rows scaled to unit norm), the sigmoid loss with
    constants derived for ``||a|| <= 1`` and ``||x|| <= radius``, on the ball of
    that radius.

    Args:
        epsilon: Total epsilon (split evenly between the two stages).
        delta: Total delta (all of it goes to the finder: the warm start is pure).
        radius: Radius of the ball ``K`` centred at the origin (public).
        seed: Seed of the PRNG key of the private run (default: a fresh key from OS
            entropy). A seed makes the run reproducible and its guarantee
            conditional on keeping the seed secret (the verdict says so).
        features: Breast-cancer feature names (chosen publicly).

    Returns:
        The report: ``problem``, ``released``, ``privacy`` (``stages``, ``total``,
        ``ledger``, and ``text``: the PRIVACY block printed, ``str`` of the run's
        :class:`~dpsample.privacy.PrivacyReport`; not in ``--json``),
        ``warm_start_bound``, ``stationarity_bound``, ``dispatcher``,
        ``schedule``, ``non_private_diagnostics`` (labelled) and ``run``.

    Raises:
        ValueError: Invalid or infeasible parameters (e.g. ``eps n / 2 <= d``).

    Examples:
        >>> from dpsample.cli import quickstart
        >>> report = quickstart(epsilon=1.0, radius=2.0)
        >>> report["privacy"]["total"]["epsilon"] <= 1.0
        True
    """
    from dpsample.config import execute, resolve_config
    from dpsample.privacy import NON_PRIVATE_KEY

    cfg = resolve_config(
        quickstart_config(
            epsilon=epsilon, delta=delta, radius=radius, seed=seed, features=features
        )
    )
    ex = execute(cfg)
    rep = ex.report
    total, diag = rep["privacy"], rep[NON_PRIVATE_KEY]
    pipeline = _warm_start_sections(ex.result.info, ex.plan)
    return {
        "problem": {
            "dataset": "breast_cancer (scikit-learn, bundled)",
            "features": list(features),
            "rows": "scaled to unit L2 norm (per row)",
            "n": rep["problem"]["n"],
            "dim": rep["problem"]["dim"],
            "loss": "sigmoid 1/(1+exp(y<a,x>)) (non-convex)",
            "domain": f"ball of radius {radius:g} at the origin",
            "constants": rep["problem"]["constants"],
            "constant_sources": rep["problem"]["constant_sources"],
        },
        "released": rep["released"],
        "privacy": {
            "relation": total["relation"],
            "budget": {"epsilon": epsilon, "delta": delta},
            "stages": pipeline["stages"],
            "total": {
                "epsilon": total["epsilon"],
                "delta": total["delta"],
                "tightest_route": total["tightest_route"],
                "routes": total["routes"],
                "basic_composition_epsilon": epsilon,
                "within_budget": total["within_budget"],
                "assumptions": total["assumptions"],
                "conditional": total["conditional"],
                "verdict": total["verdict"],
            },
            "ledger": total["ledger"],
            # the laid-out block the command prints (print(result.privacy))
            "text": str(ex.result.report()),
        },
        "warm_start_bound": pipeline["warm_start_bound"],
        "stationarity_bound": pipeline["stationarity_bound"],
        "dispatcher": pipeline["dispatcher"],
        "schedule": pipeline["schedule"],
        NON_PRIVATE_KEY: {
            "label": diag["label"],
            "warm_start": diag["warm_start"],
            "output": diag["output"],
            "gap_over_net_minimum": diag.get("from_job", {}).get(
                "gap_over_net_minimum"
            ),
        },
        "run": {
            "seconds": rep["seconds"],
            "dpsample_version": rep["dpsample_version"],
            "rng_key": rep["job"]["rng_key"],
        },
    }


def _warm_start_sections(info: Any, plan: Any) -> dict[str, Any]:
    """The quickstart's pipeline-specific sections, from the run's typed objects.

    Args:
        info: The warm start's :class:`~dpsample.pipelines.WarmStartInfo` (its
            stages' guarantees, the bound psi and its terms, the stationarity
            bounds, the dispatcher's decision).
        plan: The warm start's :class:`~dpsample.plan.Plan` (the schedule of each
            stage, from its stage plans).

    Returns:
        ``stages``, ``warm_start_bound``, ``stationarity_bound``, ``dispatcher``
        and ``schedule``, JSON-safe.
    """
    from dpsample.config import jsonable

    delta = plan.budget.delta
    sampler_plan, finder_plan = plan.stage("sampler"), plan.stage("finder")
    sampler_g, finder_g = info.privacy_sampler, info.privacy_finder
    finder_report = finder_g.report(delta)
    terms = info.psi_terms  # a WarmStartBound: psi derived from the net that ran
    decision, reason = info.dispatcher
    sections = {
        "stages": {
            "sampler": {
                "mechanism": "exponential mechanism over a grid net "
                "(seed 003 Def. 4.1)",
                "epsilon_share": info.epsilon_split[0],
                "pure_epsilon": sampler_g.epsilon(0.0),
                "epsilon_at_delta": sampler_g.epsilon(delta),
            },
            "finder": {
                "mechanism": "DP-SPIDER (seed 003 Thm 3.2)",
                "epsilon_share": info.epsilon_split[1],
                "delta_share": info.delta_split[1],
                "epsilon_at_delta": finder_report["epsilon"],
                "tightest_route": finder_report["tightest"],
                "routes": finder_report["routes"],
            },
        },
        "warm_start_bound": {
            "psi": info.psi,
            "failure_prob": info.psi_failure_prob,
            "covering_term": terms.covering,
            "tail_term": terms.tail,
            "minimizer_gap": terms.minimizer_gap,
            "paper_closed_form": info.paper_psi,
        },
        "stationarity_bound": {
            "warm_start": info.stationarity_bound,
            "cold_start": info.cold_start_bound,
            "note": "Theorem 3.2 / Lemma 3.1 rate shapes with the absolute constant "
            "set to 1 (for comparison, not certified bounds)",
        },
        "dispatcher": {"warm_start": decision, "reason": reason},
        "schedule": {
            **{
                k: sampler_plan.get(k)
                for k in ("net_size", "covering_radius", "inverse_temperature")
            },
            **{
                k: finder_plan.get(k)
                for k in (
                    "num_steps",
                    "phase_length",
                    "anchor_batch_size",
                    "variation_batch_size",
                    "learning_rate",
                    "anchor_noise_multiplier",
                    "variation_noise_multiplier",
                )
            },
        },
    }
    return jsonable(sections, delta=delta)


def _fmt_point(point: Sequence[float], limit: int = 8) -> str:
    shown = ", ".join(f"{v:+.4f}" for v in point[:limit])
    more = f", ... ({len(point)} coordinates)" if len(point) > limit else ""
    return f"[{shown}{more}]"


def _g(value: Any, spec: str = ".4g") -> str:
    return "n/a" if value is None else format(value, spec)


def _print_verdict(indent: str, privacy: dict[str, Any]) -> None:
    """The budget verdict, one assumption a line ("..., conditional, assuming:")."""
    if privacy["within_budget"] and privacy["assumptions"]:
        print(f"{indent}within budget, conditional, assuming:")
        for text in privacy["assumptions"]:
            print(f"{indent}  - {text}")
    else:
        print(f"{indent}{privacy['verdict']}")


def _print_quickstart(r: dict[str, Any]) -> None:
    p, priv = r["problem"], r["privacy"]
    psi, stat, sched = r["warm_start_bound"], r["stationarity_bound"], r["schedule"]
    from dpsample.privacy import NON_PRIVATE_KEY

    diag = r[NON_PRIVATE_KEY]
    print("dpsample quickstart: warm start (seed 003, Algorithm 2)")
    print(
        "  exponential mechanism over a net of the ball, then DP-SPIDER from its output"
    )
    print(f"  data      {p['dataset']}, n={p['n']}, features {p['features']}")
    print(f"            {p['rows']}; loss {p['loss']}")
    print(f"  domain    {p['domain']} (d={p['dim']})")
    consts = ", ".join(f"{k}={v:.4g}" for k, v in p["constants"].items())
    print(f"  constants {consts}  (declared, public; derived from ||a|| <= 1)")
    print(
        f"  schedule  net of {sched['net_size']:,} points (covering radius "
        f"{sched['covering_radius']:.4g}, k = {sched['inverse_temperature']:.4g}); "
        f"DP-SPIDER {sched['num_steps']} steps, phase {sched['phase_length']}, "
        f"batches {sched['anchor_batch_size']}/{sched['variation_batch_size']}"
    )
    print()
    print(f"RELEASED POINT  x_priv = {_fmt_point(r['released']['point'])}")
    print(
        f"  warm start x_0 = {_fmt_point(r['released']['warm_start'])} (also "
        "released, covered by the same guarantee)"
    )
    print()
    print(priv["text"])  # the PrivacyReport's table: print(result.privacy)
    print()
    print("WARM-START BOUND (public: from declared constants and the net that ran)")
    print(
        f"  psi = G r + (ln N + ln(1/zeta))/k = {psi['covering_term']:.4g} + "
        f"{psi['tail_term']:.4g} = {psi['psi']:.4g}, failing with probability "
        f"zeta = {psi['failure_prob']:.3g}"
    )
    print(f"  (the seed's closed form would give {_g(psi['paper_closed_form'])})")
    print()
    print("STATIONARITY BOUND  E||grad F_D(x_priv)|| <~ (public; rate shapes of")
    print("  Thm 3.2 / Lemma 3.1 with the absolute constant set to 1, not certified)")
    print(f"  warm start (Thm 3.2, F_0 = psi)        {_g(stat['warm_start'])}")
    print(f"  cold start (Lemma 3.1, F_0 = range B)  {_g(stat['cold_start'])}")
    verdict = "warm start" if r["dispatcher"]["warm_start"] else "finder alone"
    print(f"  dispatcher: {verdict}: {r['dispatcher']['reason']}")
    print()
    print("NON-PRIVATE DIAGNOSTICS  -- computed on the private training data, not")
    print("  covered by the guarantee; for checking only, never release")
    print(f"  {'':<30}{'warm start x_0':>16}{'output x_priv':>16}")
    w, o = diag["warm_start"], diag["output"]
    rows = (
        ("empirical risk F_D", "empirical_risk", ".5f"),
        ("gradient norm ||grad F_D||", "gradient_norm", ".5f"),
        ("smallest Hessian eigenvalue", "min_hessian_eigenvalue", ".5f"),
        ("training accuracy", "training_accuracy", ".3f"),
    )
    for label, key, spec in rows:
        print(f"  {label:<30}{_g(w.get(key), spec):>16}{_g(o.get(key), spec):>16}")
    print(
        f"  warm start's gap over the net minimum: "
        f"{_g(diag['gap_over_net_minimum'], '.5f')}"
    )
    print()
    print(f"({r['run']['seconds']:.1f} s, dpsample {r['run']['dpsample_version']}; key")
    print(f" {r['run']['rng_key']})")


# ------------------------------------------------------------------------- run
_SEED_OMITTED = (
    "seed omitted: a seed was given for this run ([job] seed or --seed), and whoever\n"
    "knows it can redraw the noise. Keep it secret; give it again to reproduce the run."
)


def _write_outputs(dest: Path, ex: Any, *, overwrite: bool, seeded: bool) -> None:
    """Write the three files to a temporary folder, then move it into place."""
    from dpsample.config import jsonable, to_toml

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
    from dpsample.config import ConfigError

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
    from dpsample.config import dry_run as plan_only
    from dpsample.config import load_config, resolve_config

    cfg = resolve_config(load_config(config_path))
    if seed is not None:
        cfg["job"]["seed"] = seed
    planned = plan_only(cfg)
    return planned.report | {"text": str(planned.plan)}


def _print_dry_run(report: dict[str, Any]) -> None:
    job, priv = report["job"], report["privacy"]
    print(
        f"dpsample run --dry-run: {job['kind']} {job['name']}: the plan, made from "
        "public facts only (no data read, nothing run)"
    )
    print(report["text"])
    print(
        f"VERDICT (epsilon = {priv['epsilon']:.6g} at delta = {priv['delta']:g}; "
        f"budget {priv['budget']['epsilon']:g}, {priv['budget']['delta']:g}"
        + ("; conditional)" if priv["assumptions"] else ")")
    )
    _print_verdict("  ", priv)
    print(f"key: {job['rng_key']}")


def _print_run(report: dict[str, Any]) -> None:
    job, prob = report["job"], report["problem"]
    print(
        f"dpsample run: {job['kind']} {job['name']}, n={prob['n']}, d={prob['dim']} "
        f"(key {job['rng_key']})"
    )
    print(f"RELEASED POINT  x = {_fmt_point(report['released']['point'])}")
    print(report["privacy_text"])  # the PrivacyReport's table
    if "plan" in report:
        cost = report["plan"]["cost"]
        print(
            f"COST            {cost['evaluations']:,} per-example evaluations, "
            f"{cost['steps']:,} steps, {report['seconds']:.2f} s"
        )
    from dpsample.privacy import NON_PRIVATE_KEY

    diag = report.get(NON_PRIVATE_KEY)
    if diag:
        out = diag["output"]
        shown = ", ".join(
            f"{k} {v:.5g}" for k, v in out.items() if isinstance(v, int | float)
        )
        print(f"NON-PRIVATE DIAGNOSTICS (training data, never release): {shown}")
    print(f"wrote {report['output_dir']}/{{released.json, report.json, config.toml}}")


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
    from dpsample import registry
    from dpsample.config import jsonable

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


def _print_list(listing: dict[str, Any]) -> None:
    rows = [
        (a["name"], a["kind"], a["guarantee_type"], f"seed {a['seed']}, {a['theorem']}")
        for a in listing["algorithms"]
    ]
    header = ("NAME", "KIND", "GUARANTEE", "SOURCE")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(3)]
    for row in [header, *rows]:
        cells = [c.ljust(w) for c, w in zip(row[:3], widths, strict=True)]
        print("  ".join([*cells, row[3]]))


# ------------------------------------------------------------------------- sweep
def _print_plan(plan: Any, *, smoke: bool) -> None:
    from dpsample.validation.engine import describe_cell

    spec, cells = plan.spec, plan.cells
    todo = {c.key for c in plan.todo}
    failed = set(plan.failed)
    print(
        f"dpsample sweep {spec.name} ({'smoke' if smoke else 'full'} grid): "
        f"{len(cells)} cells, {len(plan.done)} done, {len(plan.failed)} failed, "
        f"{len(plan.todo)} to run"
    )
    if plan.estimate_seconds is None:
        cost = "unknown: no cell of this sweep has run yet" + (
            "" if smoke else " (a --smoke run times a few)"
        )
    elif plan.estimate_source == "plans":
        left_out = (
            f"; {plan.unplanned} grid point(s) could not be planned without their "
            "data and are not counted"
            if plan.unplanned
            else ""
        )
        cost = (
            f"{len(plan.todo)} cells, {plan.estimate_seconds:.3g} cell-seconds by the "
            "plans' forecasts (the private runs only: compilation and data loading "
            f"not counted{left_out}), about {plan.estimate_wall_seconds:.3g} s "
            f"wall-clock on {plan.workers} worker(s) plus start-up; no cell of this "
            "sweep has run yet"
        )
    else:
        cost = (
            f"{len(plan.todo)} cells x ~{plan.seconds_per_cell:.2f} s (mean of the "
            f"cells already run) = {plan.estimate_seconds:.0f} cell-seconds, about "
            f"{plan.estimate_wall_seconds:.0f} s wall-clock on {plan.workers} "
            "worker(s) plus start-up"
        )
    print(f"cost: {cost}")
    for cell in cells:
        status = (
            "failed" if cell.key in failed else "to run" if cell.key in todo else "done"
        )
        print(f"  {status:<7} {describe_cell(cell)}")


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
        _print_plan(plan, smoke=smoke)
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


# ------------------------------------------------------------------------ parser
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
    import jax

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
                _print_quickstart(report)
            return 0
        if args.command == "list":
            listing = list_algorithms()
            if args.json:
                print(json.dumps(listing, indent=2))
            else:
                _print_list(listing)
            return 0
        if args.dry_run:
            planned = dry_run_config(args.config, seed=args.seed)
            if args.json:
                planned.pop("text")
                print(json.dumps(planned, indent=2, allow_nan=False))
            else:
                _print_dry_run(planned)
            return 0
        report = run_config(
            args.config, output=args.output, overwrite=args.overwrite, seed=args.seed
        )
        if args.json:
            report.pop("privacy_text")
            print(json.dumps(report, indent=2))
        else:
            _print_run(report)
        return 0
    except (ValueError, TypeError, MissingExtraError) as err:
        if args.traceback:
            raise
        from dpsample.config import ConfigError

        text = str(err) if isinstance(err, ConfigError) else _describe(err)
        print(f"dpsample: error: {text}", file=sys.stderr)
        return 2


def _describe(err: Exception) -> str:
    name = type(err).__name__
    return f"{err} ({name})" if name not in ("ValueError", "TypeError") else str(err)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
