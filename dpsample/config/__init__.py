"""Configuration files of ``dpsample run``: schema, jobs, problem, execution, report.

A configuration is a TOML document with the sections below (``docs/cli.md`` lists
every key). The package follows the seams of a run:

* :mod:`~dpsample.config.schema`: :func:`load_config` reads a file,
  :func:`resolve_config` checks it and fills in the defaults, :func:`to_toml` writes
  it back;
* :mod:`~dpsample.config.jobs`: ``[job]`` names an algorithm of
  :mod:`dpsample.registry` (:func:`resolve_job`), whose options ``[options]`` sets;
* :mod:`~dpsample.config.problem`: the public
  :class:`~dpsample.problem.ProblemSpec` from ``[data]``, ``[loss]`` and ``[domain]``
  without reading the data (:func:`build_spec`), then the data (:func:`load_data`);
* :mod:`~dpsample.config.execution`: :func:`plan_config` plans in public
  (``dpsample run --dry-run``), :func:`execute` plans, reads the data and runs;
* :mod:`~dpsample.config.report`: the report, made from the plan, the guarantee
  and the typed info (:func:`build_report`).
* :mod:`~dpsample.config.errors` and :mod:`~dpsample.config.references`: the bottom
  of the package, :class:`ConfigError` and :func:`resolve_reference` (the user's own
  code named ``"module:attribute"``).

The imports go one way: ``execution`` uses the others, ``schema`` checks a
configuration against ``jobs`` and ``problem``, and these three raise the errors of
``errors``.

.. code-block:: toml

    [job]      # what runs
    kind = "finder"            # "sampler" | "finder" | "pipeline"
    name = "dp_sgd"            # a name of that kind (`dpsample list`)
    # seed = 0                 # optional: a seed must be kept secret (see below)
    [data]
    source = "sklearn"         # "sklearn" | "synthetic" | "module"
    name = "breast_cancer"
    features = ["mean concave points", "mean fractal dimension"]
    [loss]
    name = "sigmoid"           # derived constants; declared ones override them
    [domain]
    kind = "ball"
    radius = 8.0
    [privacy]
    epsilon = 1.0
    delta = 1e-6
    max_evaluations = 1_000_000  # optional compute budget (Budget.max_evaluations)
    [options]                  # the algorithm's plan options
    [output]
    dir = "runs/quickstart"

Without ``[job] seed`` a run's key comes from OS entropy; with one, the guarantee
holds only if the seed is kept secret, and says so. The seed is never written to an
output folder.
"""

from dpsample.config.errors import ConfigError
from dpsample.config.execution import (
    SEED_ASSUMPTION,
    DryRun,
    Execution,
    PlannedJob,
    dry_run,
    execute,
    fresh_key,
    plan_config,
)
from dpsample.config.jobs import Job, job_names, resolve_job
from dpsample.config.problem import (
    build_problem,
    build_spec,
    data_shape,
    dataset_names,
    has_public_shape,
    load_data,
    loss_names,
)
from dpsample.config.references import resolve_reference
from dpsample.config.report import (
    NON_PRIVATE_LABEL,
    budget_verdict,
    build_report,
    jsonable,
    non_private_diagnostics,
    plan_report,
)
from dpsample.config.schema import (
    CONSTANTS,
    load_config,
    resolve_config,
    to_toml,
)

__all__ = [
    "CONSTANTS",
    "NON_PRIVATE_LABEL",
    "SEED_ASSUMPTION",
    "ConfigError",
    "DryRun",
    "Execution",
    "Job",
    "PlannedJob",
    "budget_verdict",
    "build_problem",
    "build_report",
    "build_spec",
    "data_shape",
    "dataset_names",
    "dry_run",
    "execute",
    "fresh_key",
    "has_public_shape",
    "job_names",
    "jsonable",
    "load_config",
    "load_data",
    "loss_names",
    "non_private_diagnostics",
    "plan_config",
    "plan_report",
    "resolve_config",
    "resolve_job",
    "resolve_reference",
    "to_toml",
]
