"""What the ``dpsample`` command prints: each command's report as text.

The functions of :mod:`dpsample.cli.starter` and :mod:`dpsample.cli.commands` return
JSON-safe reports (what ``--json`` prints); :func:`print_quickstart`,
:func:`print_dry_run`, :func:`print_run`, :func:`print_list` and :func:`print_plan`
print them for a reader.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = [
    "print_dry_run",
    "print_list",
    "print_plan",
    "print_quickstart",
    "print_run",
]


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


def print_quickstart(r: dict[str, Any]) -> None:
    """Print :func:`~dpsample.cli.starter.quickstart`'s report, section by section.

    Args:
        r: The report.
    """
    p, priv = r["problem"], r["privacy"]
    psi, stat, sched = r["warm_start_bound"], r["stationarity_bound"], r["schedule"]
    from dpsample.privacy import NON_PRIVATE_KEY  # lazy: loads JAX (--help must not)

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


def print_dry_run(report: dict[str, Any]) -> None:
    """Print :func:`~dpsample.cli.commands.dry_run_config`'s plan.

    Args:
        report: The plan's report (its ``text`` is the parameter table).
    """
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


def print_run(report: dict[str, Any]) -> None:
    """Print the summary of :func:`~dpsample.cli.commands.run_config`'s report.

    Args:
        report: The run's report.
    """
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
    from dpsample.privacy import NON_PRIVATE_KEY  # lazy: loads JAX (--help must not)

    diag = report.get(NON_PRIVATE_KEY)
    if diag:
        out = diag["output"]
        shown = ", ".join(
            f"{k} {v:.5g}" for k, v in out.items() if isinstance(v, int | float)
        )
        print(f"NON-PRIVATE DIAGNOSTICS (training data, never release): {shown}")
    print(f"wrote {report['output_dir']}/{{released.json, report.json, config.toml}}")


def print_list(listing: dict[str, Any]) -> None:
    """Print :func:`~dpsample.cli.commands.list_algorithms` as aligned columns.

    Args:
        listing: The listing.

    Examples:
        >>> from dpsample.cli.printing import print_list
        >>> print_list({"algorithms": [{"name": "net", "kind": "sampler",
        ...     "guarantee_type": "pure", "seed": "000", "theorem": "Thm 5.8"}]})
        NAME  KIND     GUARANTEE  SOURCE
        net   sampler  pure       seed 000, Thm 5.8
    """
    rows = [
        (a["name"], a["kind"], a["guarantee_type"], f"seed {a['seed']}, {a['theorem']}")
        for a in listing["algorithms"]
    ]
    header = ("NAME", "KIND", "GUARANTEE", "SOURCE")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(3)]
    for row in [header, *rows]:
        cells = [c.ljust(w) for c, w in zip(row[:3], widths, strict=True)]
        print("  ".join([*cells, row[3]]))


def print_plan(plan: Any, *, smoke: bool) -> None:
    """Print a sweep's plan for ``dpsample sweep --dry-run``.

    Args:
        plan: The :class:`~dpsample.validation.engine.SweepPlan`.
        smoke: Of the smoke grid.
    """
    # lazy: loads JAX (--help must not)
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
