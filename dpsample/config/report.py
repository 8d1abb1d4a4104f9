"""The report of a run (``report.json``), made from the typed objects of the run.

:func:`build_report` assembles the report from the :class:`~dpsample.plan.Plan`
(parameters with their sources, the requested budget against what each stage
spends, the cost, the guarantee's assumptions: :func:`plan_report`), the released
:class:`~dpsample.privacy.PrivateResult` (its guarantee, read at the budget's
delta) and its typed info (``info.to_report()``: public fields, with the
algorithm's non-private diagnostics under
:data:`~dpsample.privacy.NON_PRIVATE_KEY`). Every value computed from the private
data that no guarantee covers is moved into one labelled section
(:data:`NON_PRIVATE_LABEL`), wherever it sat in the info.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

import jax.numpy as jnp
import numpy as np

import dpsample
from dpsample._src import precision
from dpsample.models import MLP
from dpsample.privacy import NON_PRIVATE_KEY, PrivacyGuarantee
from dpsample.privacy.report import budget_verdict
from dpsample.privacy.report import within_budget as _within

__all__ = [
    "NON_PRIVATE_LABEL",
    "budget_verdict",
    "build_report",
    "jsonable",
    "non_private_diagnostics",
    "plan_report",
    "pop_non_private",
    "stage_reports",
]

NON_PRIVATE_LABEL = (
    "NOT PRIVATE: computed on the private training data, not covered by the "
    "guarantee; for checking only, never release"
)


# ------------------------------------------------------------------- verdicts
def guarantee_report(guarantee: Any, budget: Mapping[str, Any]) -> dict[str, Any]:
    """The ``privacy`` section for ``guarantee`` under ``budget`` (epsilon, delta)."""
    delta = budget["delta"]
    summary = guarantee.report(delta)
    within = _within(summary["epsilon"], budget["epsilon"])
    return {
        "budget": dict(budget),
        "delta": delta,
        "epsilon": summary["epsilon"],
        "within_budget": within,
        "assumptions": summary["assumptions"],
        "conditional": summary["conditional"],
        "verdict": budget_verdict(within, summary["assumptions"]),
        "pure_epsilon": guarantee.epsilon(0.0),
        "tightest_route": summary["tightest"],
        "routes": summary["routes"],
        "tv_slack": summary["tv_slack"],
        "relation": summary["relation"],
        "components": summary["components"],
    }


# ----------------------------------------------------------------------- plans
def _stage_report(name: str, plan: Any) -> dict[str, Any]:
    budget, g = plan.budget, plan.guarantee
    spent = plan.spent_epsilon()
    return {
        "name": name,
        "algorithm": plan.algorithm,
        "requested": {"epsilon": budget.epsilon, "delta": budget.delta},
        "epsilon": spent,
        "delta": budget.delta,
        "fraction_spent": spent / budget.epsilon,
        "assumptions": list(g.assumptions),
        "conditional": g.conditional,
        "cost": plan.cost.describe(),
    }


def stage_reports(plan: Any) -> list[dict[str, Any]]:
    """Requested against spent, per stage (one stage for a single algorithm).

    Each stage: its name and algorithm, the requested ``(epsilon, delta)``, the
    epsilon its guarantee spends at that delta and the fraction spent, the
    guarantee's assumptions and the cost.
    """
    stages = list(plan.stages) or [(plan.algorithm, plan)]
    return [jsonable(_stage_report(name, stage)) for name, stage in stages]


def plan_report(plan: Any, *, estimate: bool = False) -> dict[str, Any]:
    """The public story of a :class:`~dpsample.plan.Plan`, JSON-safe.

    Every parameter with its value, source and note; the requested budget and
    what the guarantee spends (with its assumptions), and the same for each stage
    of a pipeline; the cost in per-example evaluations and steps; the warm-start
    bound and notes (:meth:`~dpsample.plan.Plan.to_dict`).

    Args:
        plan: The plan.
        estimate: Add the forecast wall time (a short timing on this machine:
            :meth:`~dpsample.plan.Plan.estimated_seconds`). Off in a run's report,
            which has the measured time.

    Returns:
        A dict of JSON types (:func:`jsonable` applied).
    """
    return jsonable(plan.to_dict(estimate=estimate), delta=plan.budget.delta)


# ------------------------------------------------------------------ diagnostics
def non_private_diagnostics(problem: Any, x: Any) -> dict[str, float]:
    """NOT PRIVATE: risk, gradient norm, curvature and accuracy at ``x``.

    These read the private training data and are not covered by any guarantee: use
    them to check a run, never release them.

    Args:
        problem: The problem (its data are read).
        x: A point.

    Returns:
        ``empirical_risk``, ``gradient_norm``, ``min_hessian_eigenvalue`` and, for
        labels in ``{-1, +1}``, ``training_accuracy`` (sign of ``<a, x>``), else
        ``training_rmse`` of ``y - <a, x>``. For a :class:`~dpsample.models.MLP`
        loss the prediction is the network's output: ``training_accuracy`` of the
        arg-max class (``cross_entropy``) or of the sign (``logistic``), else
        ``training_rmse``.
    """
    # deferred: the finders package loads every finder, and only a run that reports
    # its non-private diagnostics needs it (`dpsample run --dry-run` never does)
    from dpsample.finders import stationarity

    out = {
        "empirical_risk": float(problem.empirical_risk(x)),
        "gradient_norm": float(stationarity.gradient_norm(problem, x)),
        "min_hessian_eigenvalue": float(
            stationarity.min_hessian_eigenvalue(problem, x)
        ),
    }
    data = problem.data
    model = problem.loss_fn
    if isinstance(model, MLP):  # its outputs, not <a, x>
        y = np.asarray(data[model.target])
        logits = np.asarray(model.apply(x, data[model.features]))
        if model.head == "cross_entropy":
            out["training_accuracy"] = float(np.mean(logits.argmax(axis=1) == y))
        elif model.head == "logistic":
            out["training_accuracy"] = float(np.mean(y * logits[:, 0] > 0))
        else:
            resid = logits - y.reshape(logits.shape)
            out["training_rmse"] = float(np.sqrt(np.mean(resid**2)))
    elif isinstance(data, Mapping) and "x" in data and "y" in data:
        a, y = np.asarray(data["x"]), np.asarray(data["y"])
        pred = a @ np.asarray(jnp.asarray(x))
        if np.all(np.isin(y, (-1.0, 1.0))):
            out["training_accuracy"] = float(np.mean(y * pred > 0))
        else:
            out["training_rmse"] = float(np.sqrt(np.mean((y - pred) ** 2)))
    return out


def pop_non_private(info: dict[str, Any]) -> dict[str, Any]:
    """Remove every :data:`~dpsample.privacy.NON_PRIVATE_KEY` entry from ``info``.

    Args:
        info: A JSON-safe info dict (changed in place).

    Returns:
        The top-level entry's items, and each nested entry under its dotted path
        (``"finder_info"`` for ``info["finder_info"][NON_PRIVATE_KEY]``).

    Examples:
        >>> from dpsample.config.report import pop_non_private
        >>> info = {"a": 1, "non_private_diagnostics": {"b": 2},
        ...         "stage": {"non_private_diagnostics": {"c": 3}}}
        >>> pop_non_private(info), info
        ({'b': 2, 'stage': {'c': 3}}, {'a': 1, 'stage': {}})
    """
    found: dict[tuple[str, ...], Any] = {}

    def walk(node: Any, path: tuple[str, ...]) -> None:
        if isinstance(node, dict):
            if NON_PRIVATE_KEY in node:
                found[path] = node.pop(NON_PRIVATE_KEY)
            for key, value in node.items():
                walk(value, (*path, str(key)))
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, (*path, str(i)))

    walk(info, ())
    top = found.pop((), {})
    out = dict(top) if isinstance(top, dict) else {"value": top}
    out.update({".".join(path): value for path, value in found.items()})
    return out


def _ledger_report(ledger: Any, extra: Sequence[str]) -> dict[str, Any]:
    return {
        "epsilon": ledger.epsilon,
        "delta": ledger.delta,
        "stages": [
            {
                "name": name,
                "epsilon": g.epsilon(ledger.delta),
                "assumptions": list(g.assumptions),
                "conditional": g.conditional,
            }
            for name, g in ledger.stages
        ],
        "spent_epsilon": ledger.spent_epsilon(),
        # sorted and without duplicates, as a guarantee's
        "assumptions": sorted({a.strip() for a in (*ledger.assumptions, *extra)}),
        "conditional": bool(ledger.assumptions) or bool(extra),
    }


# ---------------------------------------------------------------------- report
def build_report(
    cfg: Mapping[str, Any],
    facts: Mapping[str, Any],
    result: Any,
    seconds: float,
    *,
    plan: Any,
    ledger: Any = None,
    key_note: str,
    diagnostics: Mapping[str, Any] | None = None,
    extra_assumptions: Sequence[str] = (),
) -> dict[str, Any]:
    """The JSON-safe report of a run (what ``report.json`` holds).

    Args:
        cfg: The resolved configuration (``[job]`` without its seed, ``[privacy]``).
        facts: The public problem facts of :func:`~dpsample.config.build_spec`.
        result: The :class:`~dpsample.privacy.PrivateResult` (its ``info`` a
            typed :class:`~dpsample.base.AlgorithmInfo`).
        seconds: The measured wall time of the private run.
        plan: The run's :class:`~dpsample.plan.Plan`.
        ledger: A pipeline's :class:`~dpsample.privacy.BudgetLedger` (its stages
            charged before the run), or ``None``.
        key_note: Where the run's key came from (never the key or the seed).
        diagnostics: The non-private diagnostics at the released points, or
            ``None`` to leave them (and the job's own) out of the report.
        extra_assumptions: Assumptions of the run beyond the algorithm's (the
            secret seed), added to the ledger's as they are to the guarantee's.

    Returns:
        The report: ``job``, ``released``, ``privacy``, ``problem``, ``plan``,
        ``info``, ``seconds``, ``dpsample_version`` and,
        with ``diagnostics``, the labelled non-private section.
    """
    delta = cfg["privacy"]["delta"]
    info = result.info.to_report()
    report: dict[str, Any] = {
        "job": {
            "kind": cfg["job"]["kind"],
            "name": cfg["job"]["name"],
            "rng_key": key_note,
        },
        "released": {"point": np.asarray(result.value).tolist()},
        "privacy": guarantee_report(result.privacy, cfg["privacy"]),
        "problem": {
            k: facts[k]
            for k in (
                "n",
                "dim",
                "model",
                "assumptions",
                "constants",
                "constant_sources",
            )
            if k in facts
        },
        "info": info,
        "seconds": seconds,
        "dpsample_version": str(getattr(dpsample, "__version__", "unknown")),
    }
    report["plan"] = plan_report(plan)
    report["privacy"]["stages"] = stage_reports(plan)
    if "warm_start" in info:
        report["released"]["warm_start"] = np.asarray(info["warm_start"]).tolist()
    if ledger is not None:
        report["privacy"]["ledger"] = _ledger_report(ledger, extra_assumptions)
    report = jsonable(report, delta=delta)
    # Values the job computed from the private data leave the public part of the
    # report wherever they sit in ``info`` (a pipeline nests its stages' info).
    from_job = pop_non_private(report["info"])
    if diagnostics is not None:
        section = {"label": NON_PRIVATE_LABEL, **jsonable(dict(diagnostics))}
        if from_job:
            section["from_job"] = from_job
        report[NON_PRIVATE_KEY] = section
    return report


# ------------------------------------------------------------------ serialisation
def jsonable(obj: Any, *, delta: float | None = None) -> Any:
    """A JSON-safe copy of ``obj``.

    Arrays become (nested) lists, NamedTuples dicts, tuples lists,
    non-finite floats the strings ``"inf"``, ``"-inf"``, ``"nan"``, a
    :class:`~dpsample.privacy.PrivacyGuarantee` its ``report(delta)`` (with its
    ``repr`` and ``pure_epsilon``), an algorithm's typed info its ``to_report()``,
    anything else its ``repr``.

    Args:
        obj: Any value.
        delta: The delta of guarantee reports (default ``0``: pure epsilon).

    Returns:
        A value of JSON types only.

    Examples:
        >>> import math, numpy as np
        >>> from dpsample.config import jsonable
        >>> jsonable({"a": np.arange(2.0), "b": (1, math.inf), 3: None})
        {'a': [0.0, 1.0], 'b': [1, 'inf'], '3': None}
    """

    def go(o: Any) -> Any:
        if o is None or isinstance(o, bool | str):
            return o
        if isinstance(o, int | np.integer) and not isinstance(o, np.bool_):
            return int(o)
        if isinstance(o, np.bool_):
            return bool(o)
        if isinstance(o, float | np.floating):
            f = float(o)
            return f if math.isfinite(f) else str(f)
        if isinstance(o, PrivacyGuarantee):
            at = 0.0 if delta is None else delta
            return go(
                {"guarantee": repr(o), "pure_epsilon": o.epsilon(0.0)}
                | o.report(at).as_dict()
            )
        if isinstance(o, tuple) and hasattr(o, "_asdict"):
            return go(o._asdict())
        to_report = getattr(o, "to_report", None)
        if dataclasses.is_dataclass(o) and callable(to_report):
            return go(to_report())
        if isinstance(o, Mapping):
            return {str(k): go(v) for k, v in o.items()}
        if isinstance(o, list | tuple):
            return [go(v) for v in o]
        if hasattr(o, "shape") and hasattr(o, "dtype"):
            arr = np.asarray(o)
            if arr.dtype.kind in "biuf":
                return go(arr.tolist())
        return repr(o)

    return go(obj)


precision.scope_public(globals())
