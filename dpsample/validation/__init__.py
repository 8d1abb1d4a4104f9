"""Risk-bound validation: sweeps of ``dpsample run`` cells on Dask.

A sweep spec (``experiments/NAME.toml``, :mod:`dpsample.validation.spec`) names a base
``dpsample run`` configuration, grid axes, seeds, measurement hooks and predictions.
:func:`sweep` runs every cell (:func:`run_cell`: :func:`dpsample.config.execute` plus
the measurements), one file per finished cell, resumably, on an embedded Dask
``LocalCluster`` or an existing cluster, and writes ``summary.csv``, ``slopes.csv``,
figures and ``report.md`` (and ``comparisons.csv``, paired arms). The command is
``dpsample sweep SPEC.toml --out DIR`` (``docs/validation.md``).

Measurements are non-private diagnostics of the released points; every output says so.
Importing this package changes no global setting. It needs the ``sweep`` extra (Dask,
pandas, matplotlib): without it the import raises
:class:`~dpsample._src.extras.MissingExtraError` saying ``pip install
"dpsample[sweep]"``.
"""

# First: without the sweep extra, a clear error before any submodule half-imports.
from dpsample.validation import _requires  # noqa: F401
from dpsample.validation.cells import cell_key, load_records, run_cell, write_record
from dpsample.validation.engine import (
    SweepOutcome,
    SweepPlan,
    plan_sweep,
    run_sweep,
    sweep,
    write_outputs,
)
from dpsample.validation.spec import (
    Arm,
    Cell,
    Comparison,
    Prediction,
    Spec,
    SpecError,
    load_spec,
)
from dpsample.validation.tables import (
    compare,
    fit_slopes,
    observation,
    slope_fits,
    summarize,
)

__all__ = [
    "Arm",
    "Cell",
    "Comparison",
    "Prediction",
    "Spec",
    "SpecError",
    "SweepOutcome",
    "SweepPlan",
    "cell_key",
    "compare",
    "fit_slopes",
    "load_records",
    "load_spec",
    "observation",
    "plan_sweep",
    "run_cell",
    "run_sweep",
    "slope_fits",
    "summarize",
    "sweep",
    "write_outputs",
    "write_record",
]
