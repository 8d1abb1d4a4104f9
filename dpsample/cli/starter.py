"""``dpsample quickstart``: seed 003's warm start on breast cancer, in one command.

The warm-start pipeline (the exponential mechanism over a net of a ball, then
DP-SPIDER from its output) on scikit-learn's bundled breast-cancer data under the
non-convex sigmoid loss: :func:`quickstart_config` is its configuration,
:func:`quickstart` runs it through :func:`dpsample.config.execute` (the same path as
``dpsample run``) and returns the report with the warm start's sections.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

# dpsample.config, dpsample.privacy, dpsample.registry, dpsample.validation and jax
# are imported inside the functions that use them: each loads JAX (~2 s), and
# `dpsample --help` must not (tests/test_startup.py). Each such import says "lazy".

__all__ = ["QUICKSTART_FEATURES", "quickstart", "quickstart_config"]

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
    # lazy: loads JAX (--help must not)
    from dpsample.config import execute, resolve_config
    from dpsample.privacy import NON_PRIVATE_KEY  # lazy: loads JAX (--help must not)

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
    from dpsample.config import jsonable  # lazy: loads JAX (--help must not)

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
