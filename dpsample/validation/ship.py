"""Ship a sweep's own Python sources to Dask workers that do not share its files.

A spec names its hooks and problem code by ``"module:function"`` (measurement hooks,
``[data] function``, a ``[loss] name`` of the form ``"package.module:loss"``) and the
folders they are imported from (``[experiment] pythonpath``, absolute on the client).
On a cluster whose workers do not see the client's filesystem those folders do not
exist, so the client sends the sources instead: :func:`collect_sources` gathers the
``*.py`` files of every top-level module or package the cells reference that is found
in the spec's ``pythonpath`` (not ``dpsample`` itself, which every worker must have
installed, nor anything else installed), and :class:`ShippedSources`, a Dask worker
plugin registered under a name derived from their contents, writes them into each
worker's local directory (workers that join later too) and puts that folder first on
``sys.path``. The cells then import the client's code, not whatever the workers'
filesystems hold at the client's paths.

Only Python sources travel: a hook that reads a data file next to its module must find
it on the worker (generate it, or ship it as a package of its own).
"""

from __future__ import annotations

import hashlib
import importlib
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from distributed.diagnostics.plugin import WorkerPlugin

from dpsample._src import precision

__all__ = ["ShippedSources", "collect_sources", "referenced_modules", "ship_sources"]

#: A ``"module.path:attribute"`` reference (a hook, a data function, a loss).
_REFERENCE = re.compile(r"^([A-Za-z_]\w*)(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*$")

#: Top-level names never shipped: the workers' installed dpsample runs the cells.
_INSTALLED = frozenset({"dpsample"})

#: Refuse to ship more than this (bytes): a pythonpath entry that holds far more than
#: an experiment's code (a home folder, a virtual environment) is a mistake.
MAX_BYTES = 32 * 2**20


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)


def referenced_modules(
    measures: Sequence[str], configs: Iterable[Mapping[str, Any]]
) -> set[str]:
    """The top-level module names that hooks and cell configurations reference.

    Args:
        measures: Measurement hooks ``"module:function"``.
        configs: The cells' configurations; every string value of the form
            ``"module.path:attribute"`` counts.

    Returns:
        The first component of each referenced module path.

    Examples:
        >>> from dpsample.validation.ship import referenced_modules
        >>> cfg = {"data": {"function": "experiments.problems.utility:make_welsch"},
        ...        "loss": {"name": "sigmoid"}}
        >>> sorted(referenced_modules(["hooks:measure"], [cfg]))
        ['experiments', 'hooks']
    """
    names = set()
    for text in [*measures, *(s for c in configs for s in _strings(c))]:
        if _REFERENCE.match(text):
            names.add(text.split(":", 1)[0].split(".", 1)[0])
    return names


def collect_sources(
    names: Iterable[str], pythonpath: Sequence[str]
) -> dict[str, bytes]:
    r"""The ``*.py`` files of the named modules found in ``pythonpath`` folders.

    Each name is looked up as Python would (the first folder holding ``name/`` or
    ``name.py`` wins); names found in no folder are left to the workers' installed
    packages, and ``dpsample`` is never shipped.

    Args:
        names: Top-level module or package names.
        pythonpath: Folders, in search order.

    Returns:
        ``{relative path: contents}``, with ``/`` separators.

    Raises:
        ValueError: If the sources exceed :data:`MAX_BYTES`.

    Examples:
        >>> import pathlib, tempfile
        >>> from dpsample.validation.ship import collect_sources
        >>> root = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (root / "hooks.py").write_text("def measure(ex):\n    return {}")
        >>> sorted(collect_sources(["hooks", "numpy"], [str(root)]))
        ['hooks.py']
    """
    files: dict[str, bytes] = {}
    for name in sorted(set(names) - _INSTALLED):
        for folder in map(Path, pythonpath):
            package, module = folder / name, folder / f"{name}.py"
            if package.is_dir():
                for path in sorted(package.rglob("*.py")):
                    if "__pycache__" not in path.parts:
                        rel = path.relative_to(folder).as_posix()
                        files[rel] = path.read_bytes()
                break
            if module.is_file():
                files[module.name] = module.read_bytes()
                break
    size = sum(map(len, files.values()))
    if size > MAX_BYTES:
        raise ValueError(
            f"the sweep's sources to ship are {size / 2**20:.1f} MiB (> "
            f"{MAX_BYTES / 2**20:.0f} MiB): narrow [experiment] pythonpath to the "
            "experiment's own code"
        )
    return files


class ShippedSources(WorkerPlugin):
    """A worker plugin that installs shipped sources on each worker.

    On ``setup`` (every current worker, and each worker that joins later) the files
    are written under ``<worker local directory>/dpsample-sources/<digest>``, that
    folder is put first on ``sys.path``, and modules of the shipped top-level names
    already imported by an earlier sweep are forgotten, so the cells import these
    sources.

    Args:
        files: ``{relative path: contents}`` (:func:`collect_sources`).
    """

    def __init__(self, files: Mapping[str, bytes]):
        self.files = dict(files)
        digest = hashlib.sha256()
        for rel in sorted(self.files):
            digest.update(rel.encode() + b"\0" + self.files[rel] + b"\0")
        self.digest = digest.hexdigest()[:16]
        self.name = f"dpsample-sources-{self.digest}"

    def setup(self, worker: Any) -> None:
        """Write the files and put their folder first on ``sys.path``."""
        root = Path(worker.local_directory) / "dpsample-sources" / self.digest
        for rel, data in self.files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        tops = {rel.split("/", 1)[0].removesuffix(".py") for rel in self.files}
        for name in [m for m in sys.modules if m.split(".", 1)[0] in tops]:
            del sys.modules[name]
        if str(root) in sys.path:
            sys.path.remove(str(root))
        sys.path.insert(0, str(root))
        importlib.invalidate_caches()


def ship_sources(
    client: Any,
    measures: Sequence[str],
    configs: Iterable[Mapping[str, Any]],
    pythonpath: Sequence[str],
) -> ShippedSources | None:
    """Register the sweep's sources with ``client``'s workers (or ship nothing).

    Args:
        client: A :class:`distributed.Client`.
        measures: The spec's measurement hooks.
        configs: The configurations of the cells to run.
        pythonpath: The spec's ``pythonpath``.

    Returns:
        The registered plugin, or ``None`` when no referenced module is found in
        ``pythonpath``.
    """
    files = collect_sources(referenced_modules(measures, configs), pythonpath)
    if not files:
        return None
    plugin = ShippedSources(files)
    client.register_plugin(plugin, name=plugin.name)
    return plugin


precision.scope_public(globals())
