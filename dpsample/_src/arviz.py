"""ArviZ, imported in one place: the library's and the tests' only way to get it.

ArviZ 0.23 announces its coming 1.x refactor with a ``FutureWarning`` on its first
import of the day and records the day in a stamp file under the user's cache
directory (``platformdirs.user_cache_dir("arviz")``). Whether the warning fires
therefore depends on the machine's state, not on the code: on a fresh machine (empty
cache, e.g. CI) it does, and under the test suite's ``filterwarnings = error`` every
module importing ArviZ failed to collect. :func:`import_arviz` silences exactly that
announcement (category and message) while importing; every other warning, ArviZ's
included, still surfaces.

The supported range is ``arviz>=0.19,<1`` (the ``diagnostics`` extra in
``pyproject.toml``; 0.19 is the first that installs beside NumPy 2): ArviZ 1.x changes
``from_dict``, which :mod:`dpsample.samplers.diagnostics` calls. Without ArviZ,
:func:`import_arviz` raises :class:`~dpsample._src.extras.MissingExtraError` naming
the extra.
"""

from __future__ import annotations

import warnings
from types import ModuleType

from dpsample._src.extras import import_optional

__all__ = ["REFACTOR_ANNOUNCEMENT", "import_arviz"]

#: Start of ArviZ's once-a-day refactor announcement (a regex for ``re.match``; the
#: message begins with a newline).
REFACTOR_ANNOUNCEMENT = r"\s*ArviZ is undergoing a major refactor"


def import_arviz() -> ModuleType:
    """Import ArviZ without its once-a-day refactor ``FutureWarning``.

    Returns:
        The ``arviz`` module.

    Raises:
        MissingExtraError: ArviZ is not installed (``pip install
            "dpsample[diagnostics]"``).

    Examples:
        >>> from dpsample._src.arviz import import_arviz
        >>> az = import_arviz()
        >>> int(az.__version__.split(".")[0])
        0
    """
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message=REFACTOR_ANNOUNCEMENT, category=FutureWarning
        )
        return import_optional(
            "arviz", "diagnostics", feature="dpsample.samplers.diagnostics"
        )
