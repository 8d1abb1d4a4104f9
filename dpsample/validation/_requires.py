"""Imported first by :mod:`dpsample.validation`: the ``sweep`` extra must be installed.

Without Dask, pandas or matplotlib, importing the package (``dpsample sweep``,
:func:`dpsample.validation.sweep`) raises
:class:`~dpsample._src.extras.MissingExtraError` saying ``pip install
"dpsample[sweep]"``, before any module of the package half-imports.
"""

from dpsample._src.extras import require

require("sweep", feature="dpsample.validation (sweeps)")
