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

from dpsample.cli.commands import (
    dry_run_config,
    list_algorithms,
    run_config,
    run_sweep_spec,
)
from dpsample.cli.entry import COMPILE_CACHE_ENV, compile_cache_dir, main
from dpsample.cli.starter import QUICKSTART_FEATURES as QUICKSTART_FEATURES
from dpsample.cli.starter import quickstart, quickstart_config

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
