"""Sweep specs: a TOML file that names a grid of ``dpsample run`` cells.

A spec is a base ``dpsample run`` configuration (the schema of
:mod:`dpsample.config`, nothing else), grid axes that are dotted paths into it, a
number of seeds, measurement hooks and predictions:

.. code-block:: toml

    [experiment]
    name = "sweep_demo"
    description = "..."
    seeds = 4                           # seed i sets each seed key to base + i
    seed_keys = ["job.seed", "data.seed"]   # default ["job.seed"]
    measure = ["experiments.problems.sweep_demo:measure"]  # f(Execution) -> dict
    pythonpath = [".."]                 # folders to import from, relative to this file

    [config]                            # the base dpsample run configuration
    job = { kind = "sampler", name = "net" }
    ...

    [[grid]]                            # a product of the listed axes; several [[grid]]
    "data.n" = [100, 200, 400]          # tables are unioned (same cells counted once);
    "privacy.epsilon" = [1.0]           # zip = true pairs the axes instead

    [[prediction]]
    name = "risk_vs_n"
    measurement = "excess_empirical_risk"
    bound = "theorem_5_8_empirical"     # a measured value holding the bound, optional
    slopes = { n = -1.0 }               # theory slope per variable, optional
    where = { "privacy.epsilon" = [1.0] }   # the grid points it is about, optional
    start = "gradient_norm_at_start"    # the measurement at the start point, optional

    [ceilings]                          # each measurement's trivial ceiling, once:
    excess_empirical_risk = "loss_range"    # a public constant (CEILING_CONSTANTS),
    ks_distance = 1.0                   # a number, or inf (no trivial ceiling), or
    excess_population_risk = "mypackage.problem:loss_range"
    # a function of a cell's public facts (n, d, epsilon, delta, constants, axes,
    # config) -> float, for a loss whose range the library does not know

    [[comparison]]                      # paired arms (comparisons.csv), optional
    name = "warm_vs_cold"
    measurement = "gradient_norm"       # both arms' (an arm may name its own)
    by = ["n", "epsilon"]               # what pairs a point of one arm with the other's
    arms = [{ label = "warm", where = { algorithm = ["warm_start"] } },
            { label = "cold", where = { algorithm = ["dp_spider"] } }]

    [smoke]                             # a small version CI runs (--smoke)
    seeds = 2
    [[smoke.grid]]
    "data.n" = [100, 200]

Grid axes are dotted paths into the configuration (``"data.n"``,
``"privacy.epsilon"``, ``"options.num_steps"``, ``"job.name"``, ...); a TOML dotted key
without quotes (``data.n = [...]``) means the same. A slope variable is an axis or one
of ``n``, ``d``, ``epsilon``, ``delta`` (the run's public facts). Each cell is resolved
by :func:`dpsample.config.resolve_config` exactly as ``dpsample run`` would resolve it.
"""

from __future__ import annotations

import copy
import itertools
import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dpsample._src import precision
from dpsample.config import (
    ConfigError,
    load_config,
    resolve_config,
    resolve_reference,
)
from dpsample.validation.cells import canonical_config, cell_key, search_path

__all__ = [
    "Cell",
    "Prediction",
    "Arm",
    "CEILING_CONSTANTS",
    "Comparison",
    "SUMMARY_VARIABLES",
    "Spec",
    "SpecError",
    "describe_point",
    "load_spec",
    "search_path",
]

#: Slope variables that are public facts of every run (columns of ``summary.csv``).
SUMMARY_VARIABLES = ("n", "d", "epsilon", "delta")
_EXPERIMENT_KEYS = (
    "name",
    "description",
    "seeds",
    "seed_keys",
    "measure",
    "pythonpath",
    "config",
)
_SECTIONS = (
    "experiment",
    "config",
    "grid",
    "prediction",
    "ceilings",
    "comparison",
    "smoke",
)
_PREDICTION_KEYS = ("name", "measurement", "bound", "slopes", "where", "start")
_COMPARISON_KEYS = ("name", "measurement", "epsilon", "by", "where", "arms")
_ARM_KEYS = ("label", "where", "measurement", "epsilon")
#: Public constants a ceiling may name (``[ceilings]``): the problem's declared or
#: derived constants. ``loss_range`` falls back to ``lipschitz * 2 * radius`` (an
#: ``L``-Lipschitz loss on a ball of radius ``R`` varies by at most ``2 L R``).
CEILING_CONSTANTS = ("loss_range", "lipschitz", "smoothness", "hessian_lipschitz")


class SpecError(ConfigError):
    """A sweep spec is invalid (the message names the key)."""


@dataclass(frozen=True)
class Prediction:
    """What a theorem predicts about one measurement.

    Attributes:
        name: Short name (a row label of the tables).
        measurement: The measured value it is about (a key of a cell's
            measurements).
        bound: The measured value that holds the theorem's bound for the cell, or
            ``None``.
        slopes: Theory slope of ``log(measurement)`` against ``log(variable)``,
            per variable.
        where: Restriction to grid points: ``{axis: [values]}`` or
            ``{axis: {min = ..., max = ...}}``.
        ceiling: The measurement's trivial ceiling (from the spec's
            ``[ceilings]``): a number (``inf``: none), one of
            :data:`CEILING_CONSTANTS` (read from each cell's public constants), or
            a function of a cell's public facts (``"module:function"`` in the
            spec, for a loss whose range the library does not know); ``None`` when
            not declared.
        start: The measured value of the same quantity at the run's start point
            (where the algorithm has one), or ``None``: a bound the start point
            already meets is not evidence.
    """

    name: str
    measurement: str
    bound: str | None = None
    slopes: Mapping[str, float] = field(default_factory=dict)
    where: Mapping[str, Any] = field(default_factory=dict)
    ceiling: float | str | Callable[[Mapping[str, Any]], float] | None = None
    start: str | None = None


@dataclass(frozen=True)
class Arm:
    """One arm of a :class:`Comparison`.

    Attributes:
        label: Its name in ``comparisons.csv``.
        where: Its grid points (as :attr:`Prediction.where`).
        measurement: Its measured value.
        epsilon: The measured value holding its spent epsilon, or ``None`` for
            the released point's guarantee (``guarantee_epsilon``).
    """

    label: str
    where: Mapping[str, Any] = field(default_factory=dict)
    measurement: str = ""
    epsilon: str | None = None


@dataclass(frozen=True)
class Comparison:
    """Two arms compared seed by seed (``comparisons.csv``).

    Attributes:
        name: Short name (a row label).
        arms: The two arms ``(a, b)``; ``median_ratio`` is of ``a / b``.
        by: The columns whose values pair a grid point of ``a`` with one of ``b``
            (seeds pair by their index, which sets the same data seed in both).
        where: Restriction to grid points, for both arms.
    """

    name: str
    arms: tuple[Arm, Arm]
    by: tuple[str, ...] = ()
    where: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Cell:
    """One cell of a sweep: a resolved ``dpsample run`` configuration.

    Attributes:
        config: The canonical configuration (resolved, no ``[output]`` section).
        axes: The value of every grid axis of the spec at this cell (``None``
            where the configuration leaves it to the function's default).
        seed: The seed index ``i`` (seed keys hold ``base + i``).
        key: The cell's name: a hash of ``config``, the measurement hooks and the
            dpsample version (:func:`dpsample.validation.cells.cell_key`).
    """

    config: Mapping[str, Any]
    axes: Mapping[str, Any]
    seed: int
    key: str


@dataclass(frozen=True)
class Spec:
    """A parsed sweep spec (see the module docstring for the TOML format).

    Attributes:
        name: The experiment's name.
        description: One paragraph for ``report.md``.
        base: The base configuration (unresolved, as written).
        grid: Sub-grids ``({axis: [values]}, zip)``; their union is the grid.
        seeds: Seeds per grid point.
        seed_keys: Configuration keys that take ``base + i`` for seed ``i``.
        measures: Measurement hooks ``"module:function"``.
        predictions: The predictions.
        comparisons: The paired comparisons.
        smoke: ``(grid, seeds)`` of the smoke size, or ``None``.
        pythonpath: Absolute folders the hooks are imported from (the spec's
            ``pythonpath``, then the current folder at load time).
        source: The spec file, if read from one.
    """

    name: str
    base: Mapping[str, Any]
    grid: tuple[tuple[Mapping[str, tuple[Any, ...]], bool], ...]
    seeds: int = 1
    seed_keys: tuple[str, ...] = ("job.seed",)
    measures: tuple[str, ...] = ()
    predictions: tuple[Prediction, ...] = ()
    comparisons: tuple[Comparison, ...] = ()
    description: str = ""
    smoke: tuple[tuple[tuple[Mapping[str, tuple[Any, ...]], bool], ...], int] | None = (
        None
    )
    pythonpath: tuple[str, ...] = ()
    source: str | None = None

    def axes(self, *, smoke: bool = False) -> tuple[str, ...]:
        """The grid axes (dotted paths), in order of first appearance.

        Args:
            smoke: Of the smoke grid.

        Returns:
            The axes.
        """
        grid = self._grid(smoke)[0]
        return tuple(dict.fromkeys(a for sub, _ in grid for a in sub))

    def _grid(self, smoke: bool) -> tuple[Any, int]:
        if not smoke:
            return self.grid, self.seeds
        if self.smoke is None:
            raise SpecError(f"spec {self.name!r} has no [smoke] section")
        return self.smoke

    def points(self, *, smoke: bool = False) -> list[dict[str, Any]]:
        """The grid points ``{axis: value}`` (duplicates kept; see :meth:`cells`).

        Args:
            smoke: Of the smoke grid.

        Returns:
            One dict per point, sub-grid by sub-grid.
        """
        out: list[dict[str, Any]] = []
        for sub, zipped in self._grid(smoke)[0]:
            names = list(sub)
            values = list(sub.values())
            rows = zip(*values, strict=True) if zipped else itertools.product(*values)
            out.extend(dict(zip(names, row, strict=True)) for row in rows)
        return out

    def cells(self, *, smoke: bool = False) -> list[Cell]:
        """Every cell of the grid, each seed of each point, resolved.

        Cells with the same configuration (overlapping sub-grids) are listed once.

        Args:
            smoke: Of the smoke grid.

        Returns:
            The cells, in grid order.

        Raises:
            SpecError: A grid point whose configuration does not resolve (the message
                names the point and the reason).
        """
        seeds = self._grid(smoke)[1]
        axes = self.axes(smoke=smoke)
        out: dict[str, Cell] = {}
        with search_path(self.pythonpath):
            for point in self.points(smoke=smoke):
                for i in range(seeds):
                    raw = copy.deepcopy(dict(self.base))
                    for path, value in point.items():
                        _set(raw, path, copy.deepcopy(value))
                    for path in self.seed_keys:
                        base = _get(raw, path)
                        _set(raw, path, (0 if base is None else base) + i)
                    try:
                        cfg = canonical_config(resolve_config(raw))
                    except ConfigError as err:
                        at = ", ".join(f"{k} = {v!r}" for k, v in point.items())
                        raise SpecError(
                            f"{self._where()}grid point ({at}), seed {i}: {err}"
                        ) from None
                    key = cell_key(cfg, self.measures)
                    if key not in out:
                        values = {a: _get(cfg, a) for a in axes}
                        out[key] = Cell(cfg, values, i, key)
        return list(out.values())

    def _where(self) -> str:
        return f"{self.source}: " if self.source else ""


# ------------------------------------------------------------------------ helpers
def _get(doc: Mapping[str, Any], path: str) -> Any:
    node: Any = doc
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def _set(doc: dict[str, Any], path: str, value: Any) -> None:
    parts = path.split(".")
    node = doc
    for part in parts[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = node[part] = {}
        node = child
    node[parts[-1]] = value


def _flatten(table: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested tables to dotted paths, stopping at anything that is not a table."""
    out: dict[str, Any] = {}
    for key, value in table.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(_flatten(value, path + "."))
        else:
            out[path] = value
    return out


def _table(where: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise SpecError(f"{where} must be a table, got {value!r}")
    return dict(value)


def _keys(where: str, table: Mapping[str, Any], valid: Sequence[str]) -> None:
    unknown = [k for k in table if k not in valid]
    if unknown:
        raise SpecError(
            f"unknown key {unknown[0]!r} in {where}; valid keys: " + ", ".join(valid)
        )


def _str_list(where: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise SpecError(f"{where} must be a string or a list of strings, got {value!r}")
    return tuple(value)


def _seeds(where: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise SpecError(f"{where} must be an integer >= 1, got {value!r}")
    return value


def _parse_grid(where: str, value: Any) -> tuple:
    if isinstance(value, Mapping):
        value = [value]
    if not isinstance(value, list) or not value:
        raise SpecError(f"{where} must be one or more [[{where}]] tables")
    subs = []
    for j, sub in enumerate(value):
        here = f"[[{where}]] #{j + 1}"
        sub = _table(here, sub)
        zipped = sub.pop("zip", False)
        if not isinstance(zipped, bool):
            raise SpecError(f"{here} zip must be true or false, got {zipped!r}")
        axes = _flatten(sub)
        if not axes:
            raise SpecError(f"{here} names no axis")
        for path, values in axes.items():
            if path.split(".")[0] not in _CONFIG_SECTIONS:
                raise SpecError(
                    f"{here}: axis {path!r} is not a path into the configuration "
                    "(it must start with one of "
                    + ", ".join(f"{s}." for s in _CONFIG_SECTIONS)
                    + ")"
                )
            if not isinstance(values, list) or not values:
                raise SpecError(
                    f"{here}: axis {path!r} must be a non-empty list of values, "
                    f"got {values!r}"
                )
        if zipped and len({len(v) for v in axes.values()}) > 1:
            raise SpecError(f"{here}: zip = true needs axes of equal length")
        subs.append(({k: tuple(v) for k, v in axes.items()}, zipped))
    return tuple(subs)


_CONFIG_SECTIONS = ("job", "data", "model", "loss", "domain", "privacy", "options")


def _parse_prediction(
    j: int, table: Any, axes: Sequence[str], ceilings: Mapping[str, Any]
) -> Prediction:
    where = f"[[prediction]] #{j + 1}"
    table = _table(where, table)
    _keys(where, table, _PREDICTION_KEYS)
    for key in ("name", "measurement"):
        if not isinstance(table.get(key), str) or not table[key]:
            raise SpecError(f"{where} needs {key} (a string)")
    bound = table.get("bound")
    if bound is not None and not isinstance(bound, str):
        raise SpecError(f"{where} bound must be a string, got {bound!r}")
    slopes = _flatten(_table(f"{where} slopes", table.get("slopes", {})))
    for var, slope in slopes.items():
        if var not in SUMMARY_VARIABLES and var not in axes:
            raise SpecError(
                f"{where}: slope variable {var!r} is neither a grid axis nor one of "
                + ", ".join(SUMMARY_VARIABLES)
            )
        if isinstance(slope, bool) or not isinstance(slope, int | float):
            raise SpecError(f"{where}: theory slope of {var!r} must be a number")
    start = table.get("start")
    if start is not None and (not isinstance(start, str) or not start):
        raise SpecError(f"{where} start must be a measured value's name")
    ceiling = ceilings.get(table["measurement"])
    return Prediction(
        table["name"],
        table["measurement"],
        bound,
        {k: float(v) for k, v in slopes.items()},
        _where(where, table.get("where", {}), axes),
        ceiling,
        start,
    )


def _where(where: str, value: Any, axes: Sequence[str]) -> dict[str, Any]:
    cond = _flatten(_table(f"{where} where", value))
    # {min = ..., max = ...} was flattened to "path.min", "path.max": fold it back.
    where_: dict[str, Any] = {}
    for path, value in cond.items():
        head, _, last = path.rpartition(".")
        if last in ("min", "max") and head:
            where_.setdefault(head, {})[last] = value
        elif isinstance(value, list):
            where_[path] = list(value)
        else:
            where_[path] = [value]
    for path in where_:
        if path not in axes and path not in (*SUMMARY_VARIABLES, "algorithm"):
            raise SpecError(
                f"{where}: where names {path!r}, neither a grid axis nor one of "
                + ", ".join((*SUMMARY_VARIABLES, "algorithm"))
            )
    return where_


def _parse_ceilings(value: Any, paths: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, c in _table("[ceilings]", value).items():
        if isinstance(c, str) and ":" in c:
            try:
                with search_path(paths):
                    out[name] = resolve_reference(c)
            except Exception as err:  # noqa: BLE001 - any import failure: bad spec
                raise SpecError(f"[ceilings] {name} = {c!r}: {err}") from None
        elif isinstance(c, str):
            if c not in CEILING_CONSTANTS:
                raise SpecError(
                    f"[ceilings] {name} = {c!r}: a ceiling is a number, a "
                    "'module:function' or one of " + ", ".join(CEILING_CONSTANTS)
                )
            out[name] = c
        elif isinstance(c, int | float) and not isinstance(c, bool) and c > 0:
            out[name] = float(c)
        else:
            raise SpecError(
                f"[ceilings] {name} = {c!r}: a ceiling is a number > 0 (inf: none), "
                "a 'module:function' or one of " + ", ".join(CEILING_CONSTANTS)
            )
    return out


def _parse_comparison(j: int, table: Any, axes: Sequence[str]) -> Comparison:
    where = f"[[comparison]] #{j + 1}"
    table = _table(where, table)
    _keys(where, table, _COMPARISON_KEYS)
    if not isinstance(table.get("name"), str) or not table["name"]:
        raise SpecError(f"{where} needs name (a string)")
    arms_in = table.get("arms")
    if not isinstance(arms_in, list) or len(arms_in) != 2:
        raise SpecError(f"{where} needs arms: a list of two tables")
    by = _str_list(f"{where} by", table.get("by", list(SUMMARY_VARIABLES)))
    for column in by:
        if column not in axes and column not in (*SUMMARY_VARIABLES, "algorithm"):
            raise SpecError(
                f"{where}: by names {column!r}, neither a grid axis nor one of "
                + ", ".join((*SUMMARY_VARIABLES, "algorithm"))
            )
    arms = []
    for k, arm in enumerate(arms_in):
        here = f"{where} arm #{k + 1}"
        arm = _table(here, arm)
        _keys(here, arm, _ARM_KEYS)
        measurement = arm.get("measurement", table.get("measurement"))
        epsilon = arm.get("epsilon", table.get("epsilon"))
        label = arm.get("label", f"arm_{k + 1}")
        for key, value in (("measurement", measurement), ("label", label)):
            if not isinstance(value, str) or not value:
                raise SpecError(f"{here} needs {key} (a string)")
        if epsilon is not None and not isinstance(epsilon, str):
            raise SpecError(f"{here} epsilon must be a measured value's name")
        arms.append(
            Arm(label, _where(here, arm.get("where", {}), axes), measurement, epsilon)
        )
    if arms[0].label == arms[1].label:
        raise SpecError(f"{where}: the two arms need different labels")
    return Comparison(
        table["name"],
        (arms[0], arms[1]),
        by,
        _where(where, table.get("where", {}), axes),
    )


def load_spec(spec: str | os.PathLike[str] | Mapping[str, Any]) -> Spec:
    """Read and check a sweep spec (a TOML file or its parsed dict).

    Only the spec's own structure is checked here; each cell's configuration is
    checked when :meth:`Spec.cells` resolves it.

    Args:
        spec: A path to the TOML file, or the parsed document (then relative
            ``pythonpath`` entries are taken from the current folder).

    Returns:
        The :class:`Spec`.

    Raises:
        SpecError: The first problem found, naming the key.

    Examples:
        >>> from dpsample.validation import load_spec
        >>> spec = load_spec({
        ...     "experiment": {"name": "demo", "seeds": 2},
        ...     "config": {
        ...         "job": {"kind": "finder", "name": "dp_sgd"},
        ...         "data": {"source": "synthetic", "kind": "classification",
        ...                  "n": 50, "d": 2},
        ...         "loss": {"name": "sigmoid"},
        ...         "domain": {"kind": "ball", "radius": 1.0},
        ...         "privacy": {"epsilon": 1.0, "delta": 1e-5}},
        ...     "grid": [{"data": {"n": [50, 100]}}]})
        >>> spec.axes(), len(spec.cells())
        (('data.n',), 4)
    """
    source = None
    if isinstance(spec, str | os.PathLike):
        source = str(spec)
        try:
            doc = load_config(source)
        except ConfigError as err:
            raise SpecError(str(err)) from None
        folder = Path(source).resolve().parent
    elif isinstance(spec, Mapping):
        doc = dict(spec)
        folder = Path.cwd()
    else:
        raise SpecError(f"a spec is a path or a table, got {type(spec).__name__}")
    where = f"{source}: " if source else ""
    try:
        return _parse(doc, folder, source)
    except SpecError as err:
        raise SpecError(f"{where}{err}") from None


def _parse(doc: Mapping[str, Any], folder: Path, source: str | None) -> Spec:
    _keys("the spec", doc, _SECTIONS)
    exp = _table("[experiment]", doc.get("experiment", {}))
    _keys("[experiment]", exp, _EXPERIMENT_KEYS)
    name = exp.get("name")
    if not isinstance(name, str) or not name:
        raise SpecError("[experiment] needs name (a string)")
    description = exp.get("description", "")
    if not isinstance(description, str):
        raise SpecError("[experiment] description must be a string")
    paths = tuple(
        dict.fromkeys(
            [
                *(
                    str((folder / p).resolve())
                    for p in _str_list(
                        "[experiment] pythonpath", exp.get("pythonpath", [])
                    )
                ),
                str(Path.cwd()),  # as `python -m` would
            ]
        )
    )
    if "config" in exp and "config" in doc:
        raise SpecError("give the base configuration once: [config] or a config file")
    if "config" in exp:
        ref = exp["config"]
        if not isinstance(ref, str):
            raise SpecError("[experiment] config must be a file name")
        base = load_config(str(folder / ref))
    elif "config" in doc:
        base = _table("[config]", doc["config"])
    else:
        raise SpecError("no base configuration: add [config] (a dpsample run config)")
    base = {k: v for k, v in base.items() if k not in ("output", "resolved")}
    seed_keys = _str_list("[experiment] seed_keys", exp.get("seed_keys", ["job.seed"]))
    if "job.seed" not in seed_keys:
        seed_keys = ("job.seed", *seed_keys)
    grid = _parse_grid("grid", doc.get("grid"))
    axes = tuple(dict.fromkeys(a for sub, _ in grid for a in sub))
    clash = [k for k in seed_keys if k in axes]
    if clash:
        raise SpecError(f"{clash[0]!r} is a seed key and cannot also be a grid axis")
    smoke = None
    if "smoke" in doc:
        table = _table("[smoke]", doc["smoke"])
        _keys("[smoke]", table, ("grid", "seeds"))
        smoke_grid = _parse_grid(
            "smoke.grid", table.get("grid", [_raw(g) for g in grid])
        )
        smoke_axes = {a for sub, _ in smoke_grid for a in sub}
        clash = [k for k in seed_keys if k in smoke_axes]
        if clash:
            raise SpecError(f"{clash[0]!r} is a seed key and cannot be a smoke axis")
        extra = sorted(smoke_axes - set(axes))
        if extra:
            raise SpecError(f"smoke axis {extra[0]!r} is not an axis of [[grid]]")
        smoke = (smoke_grid, _seeds("[smoke] seeds", table.get("seeds", 1)))
    preds = doc.get("prediction", [])
    if isinstance(preds, Mapping):
        preds = [preds]
    if not isinstance(preds, list):
        raise SpecError("prediction must be [[prediction]] tables")
    ceilings = _parse_ceilings(doc.get("ceilings", {}), paths)
    predictions = tuple(
        _parse_prediction(j, p, axes, ceilings) for j, p in enumerate(preds)
    )
    names = [p.name for p in predictions]
    dup = [n for n in names if names.count(n) > 1]
    if dup:
        raise SpecError(f"two predictions are named {dup[0]!r}")
    comps = doc.get("comparison", [])
    if isinstance(comps, Mapping):
        comps = [comps]
    if not isinstance(comps, list):
        raise SpecError("comparison must be [[comparison]] tables")
    comparisons = tuple(_parse_comparison(j, c, axes) for j, c in enumerate(comps))
    names = [c.name for c in comparisons]
    dup = [n for n in names if names.count(n) > 1]
    if dup:
        raise SpecError(f"two comparisons are named {dup[0]!r}")
    return Spec(
        name=name,
        description=description,
        base=base,
        grid=grid,
        seeds=_seeds("[experiment] seeds", exp.get("seeds", 1)),
        seed_keys=seed_keys,
        measures=_str_list("[experiment] measure", exp.get("measure", [])),
        predictions=predictions,
        comparisons=comparisons,
        smoke=smoke,
        pythonpath=paths,
        source=source,
    )


def _raw(sub: tuple[Mapping[str, tuple[Any, ...]], bool]) -> dict[str, Any]:
    axes, zipped = sub
    return {
        **{k: list(v) for k, v in axes.items()},
        **({"zip": True} if zipped else {}),
    }


def describe_point(axes: Mapping[str, Any]) -> str:
    """``"a = 1, b = 2"`` for a grid point (JSON values)."""
    return ", ".join(f"{k} = {json.dumps(v)}" for k, v in axes.items())


precision.scope_public(globals())
