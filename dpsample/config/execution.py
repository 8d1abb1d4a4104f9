"""Running a configuration: plan in public, then run on the private data.

:func:`plan_config` does everything that needs no data: the public spec
(:func:`~dpsample.config.build_spec`), the options as the algorithm takes them,
and ``algorithm.plan(spec, Budget(epsilon, delta, max_evaluations), **options)``:
the parameters with their sources, the guarantee and the cost. ``dpsample run
--dry-run`` prints it (:func:`dry_run`). :func:`execute` makes the same plan, then
reads the data and runs it: the guarantee of the run is the guarantee of the plan.

**The run's key.** Without ``[job] seed`` the key is drawn from the operating
system's entropy (:func:`fresh_key`, :mod:`secrets`) and recorded nowhere. A seed
given in ``[job] seed`` (or ``--seed``) makes the run reproducible, and anyone who
knows it can redraw the noise: the guarantee then holds only if the seed is kept
secret, and says so (:data:`SEED_ASSUMPTION` is added to its assumptions, so the
verdict reads "within budget, assuming: ..."). The seed is never written to the
report or the copy of the configuration.
"""

from __future__ import annotations

import datetime
import json
import platform
import secrets
import time
from collections.abc import Mapping
from typing import Any, NamedTuple

import jax
import numpy as np

import dpsample
from dpsample._src import precision
from dpsample.config import problem as problem_module
from dpsample.config.jobs import Job, resolve_job
from dpsample.config.report import (
    build_report,
    guarantee_report,
    jsonable,
    non_private_diagnostics,
    plan_report,
    stage_reports,
)
from dpsample.config.schema import INFO_SECTION
from dpsample.plan import Budget, Param
from dpsample.privacy import BudgetLedger
from dpsample.privacy.report import ledger_name

__all__ = [
    "SEED_ASSUMPTION",
    "DryRun",
    "Execution",
    "PlannedJob",
    "dry_run",
    "execute",
    "fresh_key",
    "plan_config",
]

#: The assumption a run with a given seed rests on (added to its guarantee).
SEED_ASSUMPTION = (
    "the PRNG seed is kept secret ([job] seed or --seed was given: whoever knows it "
    "can redraw the noise)"
)


def fresh_key() -> Any:
    """A JAX PRNG key drawn from the operating system's entropy (:mod:`secrets`).

    Every word of the key's data is drawn (64 bits for the default threefry
    key), so the key cannot be guessed by trying seeds.

    Examples:
        >>> import jax
        >>> from dpsample.config import fresh_key
        >>> a, b = fresh_key(), fresh_key()
        >>> bool((jax.random.key_data(a) != jax.random.key_data(b)).any())
        True
    """
    shape = jax.random.key_data(jax.random.key(0)).shape
    words = [secrets.randbits(32) for _ in range(int(np.prod(shape)))]
    return jax.random.wrap_key_data(
        jax.numpy.asarray(np.asarray(words, np.uint32).reshape(shape))
    )


def _key_note(seed: int | None) -> str:
    if seed is None:
        return "drawn from OS entropy (secrets) for this run; recorded nowhere"
    return "from a given seed, omitted here: keep it secret"


class PlannedJob(NamedTuple):
    """What :func:`plan_config` returns.

    Attributes:
        job: The :class:`~dpsample.config.jobs.Job`.
        algorithm: The algorithm object (:class:`~dpsample.base.PrivateAlgorithm`).
        spec: The public :class:`~dpsample.problem.ProblemSpec`.
        facts: The public problem facts (:func:`~dpsample.config.build_spec`).
        plan: The :class:`~dpsample.plan.Plan`.
    """

    job: Job
    algorithm: Any
    spec: Any
    facts: dict[str, Any]
    plan: Any


def plan_config(cfg: Mapping[str, Any]) -> PlannedJob:
    """Plan the job of a resolved configuration, reading no data.

    Args:
        cfg: The output of :func:`~dpsample.config.resolve_config`.

    Returns:
        A :class:`PlannedJob`. With ``[job] seed`` the plan's guarantee carries
        :data:`SEED_ASSUMPTION`.

    Raises:
        ConfigError: A bad configuration.
        ValueError: The algorithm refused to plan (infeasible budget, missing
            constants, ...).

    Examples:
        >>> from dpsample.config import plan_config, resolve_config
        >>> cfg = resolve_config({
        ...     "job": {"kind": "finder", "name": "dp_sgd"},
        ...     "data": {"source": "synthetic", "kind": "classification",
        ...              "n": 500, "d": 3},
        ...     "loss": {"name": "sigmoid"},
        ...     "domain": {"kind": "ball", "radius": 2},
        ...     "privacy": {"epsilon": 1, "delta": 1e-5},
        ...     "options": {"num_steps": 20, "batch_size": 50}})
        >>> planned = plan_config(cfg)
        >>> planned.plan["num_steps"], planned.plan.source("noise_multiplier")
        (20, 'calibrated')
        >>> planned.plan.spent_epsilon() <= 1.0
        True
    """
    job = resolve_job(cfg["job"]["kind"], cfg["job"]["name"])
    return _plan(job, cfg, *problem_module.build_spec(cfg))


def _plan(
    job: Job, cfg: Mapping[str, Any], spec: Any, facts: dict[str, Any]
) -> PlannedJob:

    privacy = cfg["privacy"]
    budget = Budget(
        privacy["epsilon"], privacy["delta"], privacy.get("max_evaluations")
    )
    options = job.runtime_options(cfg["options"], dim=spec.dim)
    model_start = "model" in cfg and options.get("x0") is None
    if model_start:  # public: the model's init from the public [model] init_seed
        options["x0"] = problem_module.model_start(cfg, spec)
    algorithm = job.create()
    plan = algorithm.plan(spec, budget, **options)
    if model_start:
        note = f"MLP.init(jax.random.key({cfg['model']['init_seed']})), [model]"
        plan = plan.with_params(x0=Param(plan["x0"], "default", note))
    if cfg["job"].get("seed") is not None:
        plan = plan.replace(guarantee=plan.guarantee.assuming(SEED_ASSUMPTION))
    return PlannedJob(job, algorithm, spec, facts, plan)


class DryRun(NamedTuple):
    """What :func:`dry_run` returns.

    Attributes:
        plan: The :class:`~dpsample.plan.Plan`.
        report: Its JSON-safe description: ``job``, ``problem``, ``privacy`` (the
            guarantee the run will have, against the budget, per stage) and
            ``plan`` (parameters with sources, cost with the estimated time).
    """

    plan: Any
    report: dict[str, Any]


def dry_run(cfg: Mapping[str, Any]) -> DryRun:
    """Plan a configuration and describe the plan; read no data, run nothing.

    Args:
        cfg: The output of :func:`~dpsample.config.resolve_config`.

    Returns:
        A :class:`DryRun`.

    Raises:
        ConfigError, ValueError: As :func:`plan_config`.
    """
    planned = plan_config(cfg)
    plan = planned.plan
    privacy = {k: v for k, v in cfg["privacy"].items()}
    report = {
        "job": {
            "kind": planned.job.kind,
            "name": planned.job.name,
            "rng_key": _key_note(cfg["job"].get("seed")),
        },
        "problem": dict(planned.facts),
        "privacy": guarantee_report(plan.guarantee, privacy)
        | {"stages": stage_reports(plan)},
        "plan": plan_report(plan, estimate=True),
    }

    return DryRun(plan, jsonable(report, delta=privacy["delta"]))


class Execution(NamedTuple):
    """What :func:`execute` returns.

    Attributes:
        result: The job's :class:`~dpsample.privacy.PrivateResult`.
        problem: The problem it ran on.
        config: The resolved configuration as run, with ``resolved`` facts added
            and without the seed.
        report: The JSON-safe report (what ``report.json`` holds).
        ledger: A pipeline's :class:`~dpsample.privacy.BudgetLedger`, charged
            with each stage's planned guarantee before the run; ``None`` for a
            single algorithm.
        plan: The :class:`~dpsample.plan.Plan` that ran.
    """

    result: Any
    problem: Any
    config: dict[str, Any]
    report: dict[str, Any]
    ledger: Any
    plan: Any


def _stage_ledger(name: str, plan: Any) -> Any:
    """A ledger of the plan's budget charged with each stage's planned guarantee."""
    budget = plan.budget
    ledger = BudgetLedger(
        epsilon=budget.epsilon, delta=budget.delta, relation=plan.spec.relation
    )
    for stage, stage_plan in plan.stages:
        ledger.charge(
            ledger_name(name, stage, stage_plan.algorithm), stage_plan.guarantee
        )
    return ledger


def execute(cfg: Mapping[str, Any], *, diagnostics: bool | None = None) -> Execution:
    """Run the job of a resolved configuration.

    The job is planned from public facts (:func:`plan_config`), then the data are
    loaded, checked against the plan's spec, and the plan runs with the key of
    ``[job] seed`` (with :data:`SEED_ASSUMPTION` on the guarantee) or a fresh key
    from OS entropy (:func:`fresh_key`).

    Args:
        cfg: The output of :func:`~dpsample.config.resolve_config`.
        diagnostics: Compute the non-private diagnostics (default: ``[output]
            diagnostics``). The job's own non-private values (its typed info's
            diagnostics, and every :data:`~dpsample.privacy.NON_PRIVATE_KEY` entry
            at any depth of its info) are moved into that labelled section
            (``from_job``), or dropped when the diagnostics are off: they never
            stay among the public facts.

    Returns:
        An :class:`Execution`.

    Raises:
        ConfigError: A bad configuration.
        ValueError: The library's errors (infeasible budget, bad parameters, missing
            constants, :class:`~dpsample.errors.BudgetExceededError`).
    """
    return _execute(json.loads(json.dumps(cfg)), diagnostics)  # a deep copy


def _execute(cfg: dict[str, Any], diagnostics: bool | None) -> Execution:
    job = resolve_job(cfg["job"]["kind"], cfg["job"]["name"])
    seed = cfg["job"].get("seed")
    extra = (SEED_ASSUMPTION,) if seed is not None else ()
    ledger = None
    data = None
    if not problem_module.has_public_shape(cfg["data"]):
        # a source whose n and shapes are known only by reading its data
        data = problem_module.load_data(cfg["data"])
    spec, facts = problem_module.build_spec(cfg, data=data)
    planned = _plan(job, cfg, spec, facts)
    plan = planned.plan
    if "x0" in plan.params and plan["x0"] is not None:
        cfg["options"]["x0"] = np.asarray(plan["x0"], np.float64).tolist()
    if plan.stages:  # a pipeline: its stages charged to a ledger, before the run
        ledger = _stage_ledger(job.name, plan)
    # The private part: from here on the data are read.
    if data is None:
        data = problem_module.load_data(cfg["data"])
    problem = spec.with_data(data)
    if "model" in cfg:
        spec.loss_fn.check_data(problem.data)
    key = fresh_key() if seed is None else jax.random.key(seed)
    t0 = time.perf_counter()
    result = planned.algorithm.run(key, plan, problem.data)
    seconds = time.perf_counter() - t0
    if extra:
        result = result._replace(privacy=result.privacy.assuming(*extra))

    cfg["job"].pop("seed", None)  # never written: whoever knows it can redraw noise
    cfg[INFO_SECTION] = {
        "dpsample_version": _version(),
        "jax_version": jax.__version__,
        "python_version": platform.python_version(),
        "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "note": "written by dpsample run; ignored when read back. Options not "
        "listed take the algorithm's defaults (report.json lists every planned "
        "parameter with its source).",
        **facts,
    }
    want = (
        cfg["output"].get("diagnostics", True) if diagnostics is None else diagnostics
    )
    diag = None
    if want:
        points = {"output": result.value}
        if "warm_start" in result.info:
            points["warm_start"] = result.info["warm_start"]
        diag = {k: non_private_diagnostics(problem, x) for k, x in points.items()}
    report = build_report(
        cfg,
        facts,
        result,
        seconds,
        plan=plan,
        ledger=ledger,
        key_note=_key_note(seed),
        diagnostics=diag,
        extra_assumptions=extra,
    )
    return Execution(result, problem, cfg, report, ledger, plan)


def _version() -> str:
    return str(getattr(dpsample, "__version__", "unknown"))


precision.scope_public(globals())
