"""One cell of a sweep: its canonical configuration, its name, its run and its file.

A cell is a resolved ``dpsample run`` configuration. :func:`run_cell` runs it with
:func:`dpsample.config.execute` (the same code path as ``dpsample run``), adds the
spec's measurement hooks, and returns a JSON-safe *record*; it never raises for a
failing cell, it records the error and traceback instead. :func:`write_record` writes
a record atomically as ``cells/<key>.json`` (``<key>.failed.json`` for a failure):
a reader sees the whole file or none of it.

The measurements are **non-private diagnostics** of the released point (they read the
private training data, or a population the private run never saw): every record
labels them so (``measurements.label``) and stores the released point's guarantee
(``guarantee``, what ``dpsample run`` reports) beside them.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import json
import os
import platform
import sys
import tempfile
import time
import traceback
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np

import dpsample
from dpsample._src import precision
from dpsample.config import NON_PRIVATE_LABEL, execute, jsonable, resolve_reference
from dpsample.privacy import NON_PRIVATE_KEY

__all__ = [
    "FORMAT",
    "canonical_config",
    "cell_key",
    "load_records",
    "read_record",
    "record_path",
    "run_cell",
    "search_path",
    "versions",
    "write_record",
]

#: Format tag of a cell file.
FORMAT = "dpsample.sweep.cell/1"
_FAILED = ".failed.json"


def canonical_config(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """The part of a resolved configuration that decides the run (plain JSON types).

    Drops ``[output]`` (where files go) and ``[resolved]`` (facts written by
    ``dpsample run``); everything else is kept.

    Args:
        cfg: A configuration resolved by :func:`dpsample.config.resolve_config`.

    Returns:
        A deep copy with plain JSON types.

    Examples:
        >>> from dpsample.validation.cells import canonical_config
        >>> canonical_config({"job": {"seed": 0}, "output": {"dir": "x"}})
        {'job': {'seed': 0}}
    """
    out = json.loads(json.dumps(cfg, allow_nan=False))
    for section in ("output", "resolved"):
        out.pop(section, None)
    return out


def _version() -> str:
    return str(getattr(dpsample, "__version__", "unknown"))


def cell_key(
    cfg: Mapping[str, Any], measures: Sequence[str] = (), *, version: str | None = None
) -> str:
    """The name of a cell: a hash of its canonical configuration and what measures it.

    SHA-256 of the canonical JSON (sorted keys, no whitespace) of the configuration,
    the measurement hooks and the dpsample version, so the name does not depend on
    dict order, the process or the machine. A new dpsample version names every cell
    anew (old files are kept, not reused).

    Args:
        cfg: A resolved configuration (:func:`canonical_config` is applied).
        measures: The measurement hooks (``"module:function"``), in order.
        version: The dpsample version (default the installed one).

    Returns:
        24 hexadecimal digits.

    Examples:
        >>> from dpsample.validation.cells import cell_key
        >>> a = cell_key({"job": {"name": "net", "seed": 0}}, version="0")
        >>> a == cell_key({"job": {"seed": 0, "name": "net"}}, version="0")
        True
        >>> a == cell_key({"job": {"name": "net", "seed": 1}}, version="0")
        False
        >>> a
        '137f894b612359e3fbae4c91'
    """
    payload = {
        "config": canonical_config(cfg),
        "measures": list(measures),
        "dpsample": _version() if version is None else version,
    }
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()[:24]


def versions() -> dict[str, str]:
    """Versions of dpsample, JAX, NumPy and Python in this process."""
    return {
        "dpsample": _version(),
        "jax": jax.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
    }


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds")


def _numbers(table: Any) -> dict[str, float]:
    if not isinstance(table, Mapping):
        return {}
    return {
        str(k): float(v)
        for k, v in table.items()
        if isinstance(v, int | float) and not isinstance(v, bool)
    }


def _diagnostics(report: Mapping[str, Any]) -> dict[str, float]:
    """The numbers of ``non_private_diagnostics``, flat.

    The output's keep their names, the other points' (``warm_start``) are prefixed
    ``point.``, the job's own (``from_job``) keep theirs.
    """
    diag = report.get(NON_PRIVATE_KEY) or {}
    values = _numbers(diag.get("output"))
    for point, table in diag.items():
        if point not in ("label", "output", "from_job"):
            values.update({f"{point}.{k}": v for k, v in _numbers(table).items()})
    for k, v in _numbers(diag.get("from_job")).items():
        values.setdefault(k, v)
    return values


def _hook_values(ref: str, out: Any, have: Mapping[str, float]) -> dict[str, float]:
    if not isinstance(out, Mapping):
        raise TypeError(
            f"measurement hook {ref!r} must return a dict of numbers, got "
            f"{type(out).__name__}"
        )
    values = {}
    for name, value in out.items():
        if not isinstance(name, str):
            raise TypeError(f"measurement hook {ref!r} returned a key {name!r}")
        if name in have:
            raise ValueError(
                f"measurement hook {ref!r} returned {name!r}, which is already measured"
            )
        try:
            values[name] = float(value)
        except (TypeError, ValueError):
            raise TypeError(
                f"measurement hook {ref!r} returned {name!r} = {value!r}, not a number"
            ) from None
    return values


def run_cell(
    cfg: Mapping[str, Any],
    measures: Sequence[str] = (),
    *,
    key: str | None = None,
    paths: Sequence[str] = (),
) -> dict[str, Any]:
    """Run one cell and return its record; a failure is recorded, never raised.

    Runs :func:`dpsample.config.execute` on the configuration (with the non-private
    diagnostics on), then each measurement hook ``f(execution) -> {name: number}``
    (an :class:`~dpsample.config.Execution`: the result, the problem, the report).
    A hook may raise (an assertion about the run) to fail the cell.

    Args:
        cfg: A resolved configuration (``[output]`` is ignored).
        measures: Measurement hooks ``"module:function"``.
        key: The cell's name (default :func:`cell_key`).
        paths: Folders to import the hooks and data functions from.

    Returns:
        The JSON-safe record: ``format``, ``key``, ``status`` (``"ok"`` or
        ``"failed"``), ``config``, ``measures``; for a finished cell ``released``
        (the point), ``guarantee`` (the report's privacy section), ``public`` (the
        problem's facts and the job's public ``info``) and ``measurements``
        (``label``: non-private; ``values``: name -> number); for a failed one
        ``error`` (``type``, ``message``, ``traceback``); always ``seconds`` (wall
        time of the cell), ``started``, ``finished``, ``versions``, ``host`` and
        ``pid``.

    Examples:
        >>> from dpsample.config import resolve_config
        >>> from dpsample.validation import run_cell
        >>> cfg = resolve_config({
        ...     "job": {"kind": "sampler", "name": "net"},
        ...     "data": {"source": "synthetic", "kind": "classification",
        ...              "n": 40, "d": 1},
        ...     "loss": {"name": "sigmoid"},
        ...     "domain": {"kind": "ball", "radius": 1.0},
        ...     "privacy": {"epsilon": 1.0, "delta": 1e-6}})
        >>> rec = run_cell(cfg)
        >>> rec["status"], rec["guarantee"]["pure_epsilon"]
        ('ok', 1.0)
        >>> rec["measurements"]["label"].startswith("NOT PRIVATE")
        True
        >>> bad = run_cell({**cfg, "privacy": {"epsilon": -1.0, "delta": 1e-6}})
        >>> bad["status"], bad["error"]["type"]
        ('failed', 'ValueError')
    """
    started, t0 = _now(), time.perf_counter()
    cfg = canonical_config(cfg)
    record: dict[str, Any] = {
        "format": FORMAT,
        "key": key if key is not None else cell_key(cfg, measures),
        "status": "failed",
        "config": cfg,
        "measures": list(measures),
    }
    try:
        with search_path(paths):
            ex = execute({**cfg, "output": {"diagnostics": True}}, diagnostics=True)
            values = _diagnostics(ex.report)
            for ref in measures:
                values.update(_hook_values(ref, resolve_reference(ref)(ex), values))
        report = ex.report
        record.update(
            status="ok",
            released=report["released"],
            guarantee=report["privacy"],
            public={
                "problem": report["problem"],
                "info": report["info"],
                "job_seconds": report["seconds"],
            },
            measurements={
                "label": NON_PRIVATE_LABEL,
                "values": values,
                "diagnostics": report.get(NON_PRIVATE_KEY),
            },
        )
    except Exception as err:  # a failing cell is recorded, the sweep goes on
        record["error"] = {
            "type": type(err).__name__,
            "message": str(err),
            "traceback": traceback.format_exc(),
        }
    record.update(
        seconds=time.perf_counter() - t0,
        started=started,
        finished=_now(),
        versions=versions(),
        host=platform.node(),
        pid=os.getpid(),
    )
    return jsonable(record)


@contextlib.contextmanager
def search_path(paths: Sequence[str]) -> Iterator[None]:
    """Put ``paths`` in front of ``sys.path`` for the duration (hooks' imports).

    Args:
        paths: Folders; those already on ``sys.path`` are left where they are.

    Yields:
        Nothing.

    Examples:
        >>> import sys
        >>> from dpsample.validation.cells import search_path
        >>> with search_path(["/nonexistent/folder"]):
        ...     "/nonexistent/folder" in sys.path
        True
        >>> "/nonexistent/folder" in sys.path
        False
    """
    added = [p for p in dict.fromkeys(paths) if p not in sys.path]
    sys.path[:0] = added
    try:
        yield
    finally:
        for p in added:
            with contextlib.suppress(ValueError):
                sys.path.remove(p)


def record_path(folder: str | os.PathLike[str], key: str, *, ok: bool = True) -> Path:
    """Where the record of cell ``key`` lives: ``<key>.json`` or ``<key>.failed.json``.

    Args:
        folder: The sweep's ``cells/`` folder.
        key: The cell's name.
        ok: The finished cell's file (else the failure's).

    Returns:
        The path.
    """
    return Path(folder) / (f"{key}.json" if ok else f"{key}{_FAILED}")


def _fsync_folder(folder: Path) -> None:
    with contextlib.suppress(OSError):  # not every file system syncs folders
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_record(folder: str | os.PathLike[str], record: Mapping[str, Any]) -> Path:
    """Write a cell's record atomically; a finished cell's file replaces its failure.

    The JSON goes to a temporary file in the same folder (``.<name>.*.tmp``, which
    readers ignore), is flushed and fsynced, then renamed over the final name with
    :func:`os.replace`: a kill at any moment leaves either the whole file or none.

    Args:
        folder: The ``cells/`` folder (created if missing).
        record: A record from :func:`run_cell` (``key`` and ``status`` are read).

    Returns:
        The file written.

    Examples:
        >>> import tempfile
        >>> from dpsample.validation.cells import read_record, write_record
        >>> folder = tempfile.mkdtemp()
        >>> path = write_record(folder, {"key": "abc", "status": "ok", "x": 1.5})
        >>> path.name, read_record(path)["x"]
        ('abc.json', 1.5)
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    ok = record["status"] == "ok"
    path = record_path(folder, str(record["key"]), ok=ok)
    text = json.dumps(record, indent=1, allow_nan=False) + "\n"
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            os.fchmod(f.fileno(), 0o644)
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_folder(folder)
    if ok:
        with contextlib.suppress(FileNotFoundError):
            record_path(folder, str(record["key"]), ok=False).unlink()
    return path


def read_record(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a cell file (``"nan"``/``"inf"`` measurement strings become floats).

    Args:
        path: The file.

    Returns:
        The record.
    """
    with open(path, encoding="utf-8") as f:
        record = json.load(f)
    values = record.get("measurements", {}).get("values")
    if isinstance(values, dict):
        for k, v in values.items():
            if isinstance(v, str):
                values[k] = float(v)  # jsonable's "nan", "inf", "-inf"
    return record


def load_records(
    folder: str | os.PathLike[str], keys: Sequence[str] | None = None
) -> dict[str, dict[str, Any]]:
    """The records in a ``cells/`` folder: a finished cell's file over its failure.

    Args:
        folder: The folder (missing: no records).
        keys: Only these cells (default all).

    Returns:
        ``{key: record}``.
    """
    folder = Path(folder)
    if not folder.is_dir():
        return {}
    wanted = None if keys is None else set(keys)
    out: dict[str, dict[str, Any]] = {}
    for path in sorted(folder.iterdir()):
        name = path.name
        if name.startswith(".") or not name.endswith(".json"):
            continue
        key = name.split(".", 1)[0]
        if wanted is not None and key not in wanted:
            continue
        if name.endswith(_FAILED) and key in out:
            continue
        out[key] = read_record(path)
    return out


precision.scope_public(globals())
