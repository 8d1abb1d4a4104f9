"""Configuration files of ``dpsample run``: schema, registries, problem and execution.

A configuration is a TOML document with the sections below (see ``docs/cli.md`` for
every key). :func:`resolve_config` checks it against the schema and fills in the
defaults, :func:`build_problem` turns it into a :class:`~dpsample.problem.Problem`
with declared constants, and :func:`execute` runs the named sampler, finder or
pipeline under the ``[privacy]`` budget and assembles a JSON-safe report.

.. code-block:: toml

    [job]      # what runs
    kind = "pipeline"          # "pipeline" | "sampler" | "finder"
    name = "warm_start"        # a name of SAMPLERS, FINDERS or PIPELINES
    seed = 0                   # seed of the private run's PRNG key
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
    [options]                  # keyword arguments of the job's function
    [output]
    dir = "runs/quickstart"

Constants: the loss's :meth:`~dpsample.losses.Loss.constants` derive ``lipschitz``,
``smoothness``, ``hessian_lipschitz``, ``loss_range`` and ``oscillation`` from the
public assumptions ``feature_bound`` (default ``1``: rows of unit norm), ``radius``
(default the domain's ``max_norm``) and ``label_bound``; a constant given in
``[loss]`` overrides the derived one (it is the user's public declaration, never
checked against the private data). Every guarantee comes from these constants.
"""

from __future__ import annotations

import datetime
import importlib
import inspect
import json
import math
import platform
import re
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from dpsample._src import precision

__all__ = [
    "ConfigError",
    "Execution",
    "FINDERS",
    "JOB_KINDS",
    "NON_PRIVATE_LABEL",
    "PIPELINES",
    "SAMPLERS",
    "budget_verdict",
    "build_problem",
    "dataset_names",
    "execute",
    "jsonable",
    "load_config",
    "loss_names",
    "non_private_diagnostics",
    "resolve_callable",
    "resolve_config",
    "resolve_reference",
    "to_toml",
]


class ConfigError(ValueError):
    """A configuration is invalid (unknown name, missing key, wrong type, ...)."""


#: Samplers: name -> (module, attribute). Resolved lazily by :func:`resolve_callable`.
SAMPLERS: dict[str, tuple[str, str]] = {
    "net": ("dpsample.nets", "exponential_mechanism"),
    "gibbs": ("dpsample.samplers.gibbs", "gibbs"),
}
#: Stationary-point finders: name -> (module, attribute).
FINDERS: dict[str, tuple[str, str]] = {
    "dp_sgd": ("dpsample.finders.dp_sgd", "dp_sgd"),
    "dp_spider": ("dpsample.finders.dp_spider", "dp_spider"),
    "spider_sosp": ("dpsample.finders", "spider_sosp"),
    "dp_trust_region": ("dpsample.finders.trust_region", "dp_trust_region"),
    "dp_stochastic_trust_region": (
        "dpsample.finders.trust_region",
        "dp_stochastic_trust_region",
    ),
    "goldstein_zero_order": ("dpsample.finders.goldstein", "goldstein_zero_order"),
    "goldstein_first_order": ("dpsample.finders.goldstein", "goldstein_first_order"),
}
#: Pipelines: name -> (module, attribute).
PIPELINES: dict[str, tuple[str, str]] = {
    "warm_start": ("dpsample.pipelines.warm_start", "warm_start"),
}
#: Job kinds and their registries.
JOB_KINDS: dict[str, dict[str, tuple[str, str]]] = {
    "pipeline": PIPELINES,
    "sampler": SAMPLERS,
    "finder": FINDERS,
}
# Pipeline options whose valid values are a tuple attribute of the pipeline's module,
# read at run time (the pipeline grows new samplers/finders).
_PIPELINE_CHOICES = {"warm_start": {"sampler": "SAMPLERS", "finder": "FINDERS"}}
# Arguments set by `dpsample run` itself, never from [options].
_RESERVED = {
    "rng_key": "the key comes from [job] seed",
    "problem": "the problem comes from [data], [loss] and [domain]",
    "epsilon": "set it in [privacy]",
    "delta": "set it in [privacy]",
    "ledger": "dpsample run passes a fresh BudgetLedger with the [privacy] budget",
}
_CONSTANTS = (
    "lipschitz",
    "smoothness",
    "hessian_lipschitz",
    "loss_range",
    "oscillation",
)
_ASSUMPTIONS = ("feature_bound", "radius", "label_bound")
_SECTIONS = ("job", "data", "loss", "domain", "privacy", "options", "output")
# Written by `dpsample run` into the copy of the configuration; ignored on input.
_INFO_SECTION = "resolved"
NON_PRIVATE_LABEL = (
    "NOT PRIVATE: computed on the private training data, not covered by the "
    "guarantee; for checking only, never release"
)


# ---------------------------------------------------------------------------- names
def loss_names() -> tuple[str, ...]:
    """The loss factories of :mod:`dpsample.losses`, by name."""
    from dpsample import losses

    return tuple(n for n in losses.__all__ if n not in ("Loss", "LossConstants"))


def dataset_names() -> tuple[str, ...]:
    """The bundled datasets :func:`dpsample.datasets.load_sklearn` accepts."""
    from dpsample import datasets

    return tuple(datasets.SKLEARN_DATASETS)


def _choices(what: str, value: Any, valid: Any) -> ConfigError:
    valid = ", ".join(repr(v) for v in valid)
    return ConfigError(f"unknown {what} {value!r}; valid choices: {valid}")


def resolve_callable(kind: str, name: str) -> Callable[..., Any]:
    """The function registered as ``name`` under job ``kind``.

    Args:
        kind: ``"pipeline"``, ``"sampler"`` or ``"finder"``.
        name: A key of the kind's registry.

    Returns:
        The function.

    Raises:
        ConfigError: An unknown kind or name (the message lists the valid ones).

    Examples:
        >>> from dpsample.config import resolve_callable
        >>> resolve_callable("finder", "dp_sgd").__name__
        'dp_sgd'
        >>> resolve_callable("sampler", "mcmc")
        Traceback (most recent call last):
        ...
        dpsample.config.ConfigError: unknown sampler 'mcmc'; valid choices: 'net', ...
    """
    if kind not in JOB_KINDS:
        raise _choices("[job] kind", kind, JOB_KINDS)
    registry = JOB_KINDS[kind]
    if name not in registry:
        raise _choices(kind, name, registry)
    module, attr = registry[name]
    return getattr(importlib.import_module(module), attr)


def resolve_reference(ref: str) -> Any:
    """The object a reference ``"package.module:attribute"`` names (imported).

    ``[data] source = "module"`` names its data function this way, and so do the
    measurement hooks of a sweep spec (:mod:`dpsample.validation`). The module is
    imported from ``sys.path`` as it stands.

    Args:
        ref: ``"module:attribute"``; the attribute may be dotted (``"mod:Cls.make"``).

    Returns:
        The object.

    Raises:
        ConfigError: A malformed reference, a module that cannot be imported or a
            missing attribute.

    Examples:
        >>> from dpsample.config import resolve_reference
        >>> resolve_reference("dpsample.bounds:theorem_5_8_radius").__name__
        'theorem_5_8_radius'
        >>> resolve_reference("dpsample.bounds")
        Traceback (most recent call last):
        ...
        dpsample.config.ConfigError: expected a reference 'module:attribute', got ...
    """
    module, sep, attr = ref.partition(":") if isinstance(ref, str) else ("", "", "")
    if not (sep and module and attr):
        raise ConfigError(f"expected a reference 'module:attribute', got {ref!r}")
    try:
        obj = importlib.import_module(module)
    except ImportError as err:
        raise ConfigError(
            f"cannot import {module!r} (named by {ref!r}): {err}; run from the folder "
            "that holds it or add that folder to PYTHONPATH"
        ) from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ConfigError(
                f"{module!r} has no attribute {attr!r} (named by {ref!r})"
            )
        obj = getattr(obj, part)
    return obj


# --------------------------------------------------------------------------- schema
def _type_name(types: tuple[type, ...]) -> str:
    names = {bool: "a boolean", int: "an integer", float: "a number", str: "a string"}
    names |= {list: "a list", dict: "a table"}
    return " or ".join(names.get(t, t.__name__) for t in types)


def _check_type(where: str, value: Any, types: tuple[type, ...]) -> Any:
    if float in types and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, bool) and bool not in types:
        raise ConfigError(f"{where} must be {_type_name(types)}, got {value!r}")
    if not isinstance(value, types):
        raise ConfigError(f"{where} must be {_type_name(types)}, got {value!r}")
    return value


class _Key(NamedTuple):
    types: tuple[type, ...]
    required: bool = False
    default: Any = None


_NUM = (float,)
_SCHEMA: dict[str, dict[str, _Key]] = {
    "job": {
        "kind": _Key((str,), True),
        "name": _Key((str,), True),
        "seed": _Key((int,), False, 0),
    },
    "loss": {
        "name": _Key((str,), True),
        "feature_bound": _Key(_NUM),
        "radius": _Key(_NUM),
        "label_bound": _Key(_NUM),
        **{c: _Key(_NUM) for c in _CONSTANTS},
    },
    "privacy": {"epsilon": _Key(_NUM, True), "delta": _Key(_NUM, True)},
    "output": {
        "dir": _Key((str,)),
        "overwrite": _Key((bool,), False, False),
        "diagnostics": _Key((bool,), False, True),
    },
}
_DATA_SOURCES: dict[str, dict[str, _Key]] = {
    "sklearn": {
        "name": _Key((str,), True),
        "features": _Key((list,)),
        "normalize_rows": _Key((bool,), False, True),
        "add_bias": _Key((bool,), False, False),
        "positive_class": _Key((int, str)),
        "label_scale": _Key(_NUM),
    },
    "synthetic": {
        "kind": _Key((str,), True),
        "n": _Key((int,), True),
        "d": _Key((int,), True),
        "seed": _Key((int,), False, 0),
        "margin": _Key(_NUM),
        "flip_prob": _Key(_NUM),
        "noise": _Key(_NUM),
        "outlier_frac": _Key(_NUM),
        "outlier_scale": _Key(_NUM),
    },
    "module": {
        "function": _Key((str,), True),
        "n": _Key((int,)),
        "d": _Key((int,)),
        "seed": _Key((int,), False, 0),
        "params": _Key((dict,)),
    },
}
_SYNTHETIC_KINDS = {
    "classification": ("margin", "flip_prob"),
    "regression": ("noise", "outlier_frac", "outlier_scale"),
}
_DOMAINS: dict[str, dict[str, _Key]] = {
    "ball": {"radius": _Key(_NUM, True), "center": _Key((list,))},
    "unconstrained": {},
}


def _section(raw: Mapping[str, Any], name: str, required: bool = True) -> dict:
    if name not in raw:
        if required:
            raise ConfigError(f"missing section [{name}]")
        return {}
    value = raw[name]
    if not isinstance(value, dict):
        raise ConfigError(f"[{name}] must be a table (a [{name}] section)")
    return dict(value)


def _apply(section: str, table: Mapping[str, Any], schema: Mapping[str, _Key]) -> dict:
    unknown = [k for k in table if k not in schema]
    if unknown:
        raise ConfigError(
            f"unknown key {unknown[0]!r} in [{section}]; valid keys: "
            + ", ".join(schema)
        )
    out: dict[str, Any] = {}
    for key, spec in schema.items():
        if key in table:
            out[key] = _check_type(f"[{section}] {key}", table[key], spec.types)
        elif spec.required:
            raise ConfigError(f"missing key {key!r} in [{section}]")
        elif spec.default is not None:
            out[key] = spec.default
    return out


def _kind(section: str, table: Mapping[str, Any], key: str) -> str:
    if key not in table:
        raise ConfigError(f"missing key {key!r} in [{section}]")
    return _check_type(f"[{section}] {key}", table[key], (str,))


def _tagged(
    raw: Mapping[str, Any], section: str, key: str, variants: Mapping[str, Any]
) -> dict:
    """A section whose ``key`` picks the schema of its other keys from ``variants``."""
    table = _section(raw, section)
    tag = _kind(section, table, key)
    if tag not in variants:
        raise _choices(f"[{section}] {key}", tag, variants)
    rest = {k: v for k, v in table.items() if k != key}
    return {key: tag} | _apply(section, rest, variants[tag])


def _finite(where: str, value: float, *, positive: bool = False) -> float:
    if not math.isfinite(value) or (positive and not value > 0):
        cond = "a finite number > 0" if positive else "a finite number"
        raise ConfigError(f"{where} must be {cond}, got {value!r}")
    return value


def _number_list(where: str, value: Any) -> list[float]:
    if not isinstance(value, list) or not all(
        isinstance(v, int | float) and not isinstance(v, bool) for v in value
    ):
        raise ConfigError(f"{where} must be a list of numbers, got {value!r}")
    return [float(v) for v in value]


def load_config(path: str) -> dict[str, Any]:
    """Read a TOML configuration file (not yet checked; see :func:`resolve_config`).

    Args:
        path: The file.

    Returns:
        The parsed document.

    Raises:
        ConfigError: The file cannot be read or is not valid TOML.
    """
    import tomllib

    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        raise ConfigError(f"configuration file {path!r} not found") from None
    except IsADirectoryError:
        raise ConfigError(f"{path!r} is a folder, not a configuration file") from None
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"{path}: invalid TOML: {err}") from None


def resolve_config(raw: Mapping[str, Any]) -> dict[str, Any]:
    """Check a configuration against the schema and fill in its defaults.

    Checks names (job, dataset, loss, domain kind), keys and types; the job's
    ``[options]`` are checked against its function's signature, and a pipeline's
    ``sampler``/``finder`` against the names the pipeline accepts at run time. Nothing
    here reads the data.

    Args:
        raw: The parsed TOML document.

    Returns:
        The resolved configuration: one dict per section, defaults filled in.

    Raises:
        ConfigError: The first problem found, naming the key and the valid choices.

    Examples:
        >>> from dpsample.config import resolve_config
        >>> cfg = resolve_config({
        ...     "job": {"kind": "sampler", "name": "net"},
        ...     "data": {"source": "sklearn", "name": "iris", "features": [0, 1]},
        ...     "loss": {"name": "sigmoid"},
        ...     "domain": {"kind": "ball", "radius": 2},
        ...     "privacy": {"epsilon": 1, "delta": 1e-6}})
        >>> cfg["job"]["seed"], cfg["domain"]["radius"], cfg["privacy"]["epsilon"]
        (0, 2.0, 1.0)
        >>> resolve_config({**cfg, "loss": {"name": "hinge"}})
        Traceback (most recent call last):
        ...
        dpsample.config.ConfigError: unknown loss 'hinge'; valid choices: ...
    """
    if not isinstance(raw, Mapping):
        raise ConfigError("the configuration must be a TOML table")
    unknown = [k for k in raw if k not in _SECTIONS and k != _INFO_SECTION]
    if unknown:
        raise ConfigError(
            f"unknown section [{unknown[0]}]; valid sections: "
            + ", ".join(f"[{s}]" for s in _SECTIONS)
        )
    cfg: dict[str, Any] = {}

    job = _apply("job", _section(raw, "job"), _SCHEMA["job"])
    fn = resolve_callable(job["kind"], job["name"])
    cfg["job"] = job

    data = _tagged(raw, "data", "source", _DATA_SOURCES)
    if data["source"] == "sklearn":
        if data["name"] not in dataset_names():
            raise _choices("dataset", data["name"], dataset_names())
        if "features" in data:
            feats = data["features"]
            if not feats or not all(
                isinstance(f, str | int) and not isinstance(f, bool) for f in feats
            ):
                raise ConfigError(
                    "[data] features must be a non-empty list of feature names or "
                    f"column indices, got {feats!r}"
                )
    elif data["source"] == "module":
        if not callable(resolve_reference(data["function"])):
            raise ConfigError(f"[data] function {data['function']!r} is not callable")
        for key in ("n", "d"):
            if key in data and data[key] < 1:
                raise ConfigError(f"[data] {key} must be >= 1, got {data[key]}")
    else:
        if data["kind"] not in _SYNTHETIC_KINDS:
            raise _choices("[data] kind", data["kind"], _SYNTHETIC_KINDS)
        other = [
            k
            for kind, keys in _SYNTHETIC_KINDS.items()
            if kind != data["kind"]
            for k in keys
            if k in data
        ]
        if other:
            raise ConfigError(
                f"[data] {other[0]} does not apply to kind = {data['kind']!r}; valid "
                f"keys: source, kind, n, d, seed, "
                + ", ".join(_SYNTHETIC_KINDS[data["kind"]])
            )
        for key in ("n", "d"):
            if data[key] < 1:
                raise ConfigError(f"[data] {key} must be >= 1, got {data[key]}")
    cfg["data"] = data

    loss_table = _section(raw, "loss")
    name = _kind("loss", loss_table, "name")
    if name not in loss_names():
        raise _choices("loss", name, loss_names())
    factory = _loss_factory(name)
    params = {
        p: _Key(_NUM) for p in inspect.signature(factory).parameters
    }  # e.g. reg, c, scale
    loss = _apply("loss", loss_table, _SCHEMA["loss"] | params)
    for key in (*_ASSUMPTIONS, *_CONSTANTS):
        if key in loss:
            _finite(f"[loss] {key}", loss[key], positive=key != "label_bound")
    if loss.get("label_bound", 0.0) < 0:
        raise ConfigError(f"[loss] label_bound must be >= 0, got {loss['label_bound']}")
    cfg["loss"] = loss

    domain = _tagged(raw, "domain", "kind", _DOMAINS)
    if domain["kind"] == "ball":
        _finite("[domain] radius", domain["radius"], positive=True)
        if "center" in domain:
            domain["center"] = _number_list("[domain] center", domain["center"])
    elif "radius" in loss:
        raise ConfigError(
            "[loss] radius cannot be assumed on an unconstrained domain (nothing "
            "keeps the iterates there); declare the constants themselves in [loss]"
        )
    cfg["domain"] = domain

    privacy = _apply("privacy", _section(raw, "privacy"), _SCHEMA["privacy"])
    if not (math.isfinite(privacy["epsilon"]) and privacy["epsilon"] > 0):
        raise ConfigError(
            f"[privacy] epsilon must be a finite number > 0, got {privacy['epsilon']!r}"
        )
    if not 0 < privacy["delta"] < 1:
        raise ConfigError(f"[privacy] delta must lie in (0, 1), got {privacy['delta']}")
    cfg["privacy"] = privacy

    cfg["options"] = _check_options(job, fn, _section(raw, "options", required=False))
    cfg["output"] = _apply(
        "output", _section(raw, "output", required=False), _SCHEMA["output"]
    )
    return cfg


def _loss_factory(name: str) -> Callable[..., Any]:
    from dpsample import losses

    return getattr(losses, name)


def _check_options(
    job: Mapping[str, Any], fn: Callable[..., Any], options: dict[str, Any]
) -> dict[str, Any]:
    params = inspect.signature(fn).parameters
    var_kw = any(p.kind is p.VAR_KEYWORD for p in params.values())
    valid = [
        n for n, p in params.items() if p.kind is p.KEYWORD_ONLY and n not in _RESERVED
    ]
    for key in options:
        if key in _RESERVED:
            raise ConfigError(f"[options] may not set {key!r}: {_RESERVED[key]}")
        if key not in valid and not var_kw:
            raise ConfigError(
                f"unknown option {key!r} for {job['name']}; valid options: "
                + ", ".join(valid)
            )
    missing = [
        n
        for n in valid
        if params[n].default is inspect.Parameter.empty
        and n not in options
        and not (n == "x0" and job["kind"] == "finder")
    ]
    if missing:
        raise ConfigError(
            f"{job['name']} needs the option {missing[0]!r} (set it in [options])"
        )
    if "x0" in options:
        options["x0"] = _number_list("[options] x0", options["x0"])
    for opt, attr in _PIPELINE_CHOICES.get(job["name"], {}).items():
        if job["kind"] == "pipeline" and opt in options:
            module = importlib.import_module(PIPELINES[job["name"]][0])
            choices = tuple(getattr(module, attr, ()))
            if options[opt] not in choices:
                raise _choices(f"{job['name']} {opt}", options[opt], choices)
    return options


# ------------------------------------------------------------------------- problem
def _load_data(data: Mapping[str, Any]) -> dict[str, Any]:
    import jax

    from dpsample import datasets

    if data["source"] == "sklearn":
        kw = {k: v for k, v in data.items() if k not in ("source", "name")}
        return datasets.load_sklearn(data["name"], **kw)
    if data["source"] == "module":
        return _module_data(data)
    extra = {k: data[k] for k in _SYNTHETIC_KINDS[data["kind"]] if k in data}
    make = getattr(datasets, f"make_{data['kind']}")
    return make(jax.random.key(data["seed"]), data["n"], data["d"], **extra)


def _module_data(data: Mapping[str, Any]) -> dict[str, Any]:
    """``function(jax.random.key(seed), [n=..., d=...,] **params)``, checked."""
    import jax
    import numpy as np

    fn = resolve_reference(data["function"])
    sizes = {k: data[k] for k in ("n", "d") if k in data}
    out = fn(jax.random.key(data["seed"]), **sizes, **data.get("params", {}))
    if not isinstance(out, Mapping) or "x" not in out or np.ndim(out["x"]) != 2:
        raise ConfigError(
            f"[data] function {data['function']!r} must return a mapping with "
            "features 'x' of shape (n, d) (and labels 'y')"
        )
    shape = np.shape(out["x"])
    for key, axis in (("n", 0), ("d", 1)):
        if key in data and shape[axis] != data[key]:
            raise ConfigError(
                f"[data] function {data['function']!r} returned {shape[axis]} "
                f"{'rows' if axis == 0 else 'columns'}, [data] {key} = {data[key]}"
            )
    return dict(out)


def _is_regression(data: Mapping[str, Any]) -> bool:
    from dpsample import datasets

    if data["source"] == "module":  # labels not known to lie in {-1, +1}
        return True
    if data["source"] == "synthetic":
        return data["kind"] == "regression"
    return data["name"] in getattr(datasets, "_REGRESSION", ("diabetes",))


def build_problem(cfg: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
    """The :class:`~dpsample.problem.Problem` of a resolved configuration.

    Args:
        cfg: The output of :func:`resolve_config`.

    Returns:
        ``(problem, facts)`` with ``facts`` the public facts to record: ``n``,
        ``dim``, the assumptions used, ``constants`` and where each came from
        (``"derived"`` from the assumptions, ``"declared"`` in ``[loss]``).

    Raises:
        ConfigError: An assumption the derivation needs was not declared.
        ValueError: Invalid values (from the loaders, the loss or the domain).
    """
    import numpy as np

    from dpsample.domains import Ball, Unconstrained
    from dpsample.problem import Problem

    data_cfg, loss_cfg, dom_cfg = cfg["data"], cfg["loss"], cfg["domain"]
    data = _load_data(data_cfg)
    n, dim = (int(s) for s in np.shape(data["x"]))

    if dom_cfg["kind"] == "ball":
        center = dom_cfg.get("center")
        if center is not None and len(center) != dim:
            raise ConfigError(
                f"[domain] center has {len(center)} coordinates, the data {dim}"
            )
        domain = Ball(
            dom_cfg["radius"],
            None if center is None else np.asarray(center, np.float64),
            dim=dim,
        )
    else:
        domain = Unconstrained(dim)

    factory = _loss_factory(loss_cfg["name"])
    loss = factory(
        **{
            k: loss_cfg[k]
            for k in inspect.signature(factory).parameters
            if k in loss_cfg
        }
    )
    max_norm = float(domain.max_norm)
    radius = loss_cfg.get("radius", max_norm if math.isfinite(max_norm) else None)
    if radius is not None and radius < max_norm * (1 - 1e-12):
        raise ConfigError(
            f"[loss] radius = {radius} is below the domain's largest norm "
            f"{max_norm:.6g}: the derived constants would not hold on the domain"
        )
    if (
        data_cfg["source"] == "sklearn"
        and not data_cfg["normalize_rows"]
        and "feature_bound" not in loss_cfg
    ):
        raise ConfigError(
            "[data] normalize_rows = false: declare a public bound on the feature "
            "norms as [loss] feature_bound (the default 1 holds for normalised rows)"
        )
    assumptions = {
        "feature_bound": loss_cfg.get("feature_bound", 1.0),
        "radius": radius,
        "label_bound": loss_cfg.get("label_bound", 1.0),
        "dim": dim,
    }
    derived = loss.constants(**assumptions)._asdict()
    if "label_bound" not in loss_cfg and _is_regression(data_cfg):
        other = loss.constants(**(assumptions | {"label_bound": 2.0}))._asdict()
        if other != derived:
            raise ConfigError(
                f"the {loss_cfg['name']} loss's constants depend on a bound on |y|: "
                "declare [loss] label_bound (the labels are not known to lie in "
                "{-1, +1})"
            )
    constants, sources = {}, {}
    for c in _CONSTANTS:
        if c in loss_cfg:
            constants[c], sources[c] = loss_cfg[c], "declared"
        elif derived[c] is not None:
            constants[c], sources[c] = float(derived[c]), "derived"
        else:
            constants[c], sources[c] = None, "none"
    problem = Problem(loss.loss_fn, data, domain, **constants)
    facts = {
        "n": n,
        "dim": dim,
        "assumptions": {k: v for k, v in assumptions.items() if v is not None},
        "constants": {k: v for k, v in constants.items() if v is not None},
        "constant_sources": sources,
    }
    return problem, facts


# ------------------------------------------------------------------------- running
class Execution(NamedTuple):
    """What :func:`execute` returns.

    Attributes:
        result: The job's :class:`~dpsample.privacy.PrivateResult`.
        problem: The problem it ran on.
        config: The resolved configuration, with ``resolved`` facts added.
        report: The JSON-safe report (what ``report.json`` holds).
        ledger: The :class:`~dpsample.privacy.BudgetLedger` passed to the job, or
            ``None`` when its function takes none.
    """

    result: Any
    problem: Any
    config: dict[str, Any]
    report: dict[str, Any]
    ledger: Any


def _version() -> str:
    import dpsample

    return str(getattr(dpsample, "__version__", "unknown"))


def execute(cfg: Mapping[str, Any], *, diagnostics: bool | None = None) -> Execution:
    """Run the job of a resolved configuration.

    The problem is built from public declarations, the job's function runs with key
    ``jax.random.key(seed)``, ``epsilon``/``delta`` from ``[privacy]`` and the
    ``[options]`` (finders start at ``[options] x0``, by default the domain's
    centre; a function that takes a ``ledger`` gets a fresh
    :class:`~dpsample.privacy.BudgetLedger` with the budget). The function checks
    its own inputs before any private computation.

    Args:
        cfg: The output of :func:`resolve_config`.
        diagnostics: Compute the non-private diagnostics (default: ``[output]
            diagnostics``). The job's own non-private values (every
            :data:`~dpsample.privacy.NON_PRIVATE_KEY` entry, at any depth of its
            ``info``) are moved into that labelled section (``from_job``), or dropped
            when the diagnostics are off: they never stay among the public facts.

    Returns:
        An :class:`Execution`.

    Raises:
        ConfigError: A bad configuration.
        ValueError: The library's errors (infeasible budget, bad parameters, missing
            constants, :class:`~dpsample.errors.BudgetExceededError`).
    """
    import jax
    import numpy as np

    from dpsample.privacy import NON_PRIVATE_KEY, BudgetLedger

    cfg = json.loads(json.dumps(cfg))  # a deep copy, plain types
    job, privacy = cfg["job"], cfg["privacy"]
    fn = resolve_callable(job["kind"], job["name"])
    problem, facts = build_problem(cfg)
    options = dict(cfg["options"])
    params = inspect.signature(fn).parameters
    if job["kind"] == "finder":
        if "x0" not in options:
            options["x0"] = np.asarray(problem.domain.center_point).tolist()
        cfg["options"]["x0"] = list(options["x0"])
        if len(options["x0"]) != problem.dim:
            raise ConfigError(
                f"[options] x0 has {len(options['x0'])} coordinates, the problem "
                f"{problem.dim}"
            )
    kwargs = {
        k: np.asarray(v, np.float64) if k in ("x0", "net") else v
        for k, v in options.items()
    }
    if "sampler_domain" in kwargs:  # a TOML table {radius = R[, center = [...]]}
        table = kwargs["sampler_domain"]
        if not isinstance(table, Mapping) or set(table) - {"radius", "center"}:
            raise ConfigError(
                "[options] sampler_domain must be a table with radius (and optionally "
                f"center), got {table!r}"
            )
        from dpsample.domains import Ball

        if "radius" not in table:
            raise ConfigError("[options] sampler_domain needs a radius")
        center = table.get("center")
        kwargs["sampler_domain"] = Ball(
            float(table["radius"]),
            None if center is None else np.asarray(center, np.float64),
            dim=problem.dim,
        )
    if "delta" in params:
        kwargs["delta"] = privacy["delta"]
    ledger = None
    if "ledger" in params:
        ledger = BudgetLedger(epsilon=privacy["epsilon"], delta=privacy["delta"])
        kwargs["ledger"] = ledger

    t0 = time.perf_counter()
    result = fn(
        jax.random.key(job["seed"]), problem, epsilon=privacy["epsilon"], **kwargs
    )
    seconds = time.perf_counter() - t0

    cfg[_INFO_SECTION] = {
        "dpsample_version": _version(),
        "jax_version": jax.__version__,
        "python_version": platform.python_version(),
        "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "note": "written by dpsample run; ignored when read back. Options not "
        "listed take the function's defaults.",
        **facts,
    }
    report = _report(cfg, result, ledger, seconds)
    # Values the job computed from the private data leave the public part of the
    # report wherever they sit in ``info`` (a pipeline nests its stages' info).
    from_job = _pop_non_private(report["info"])
    if cfg["output"].get("diagnostics", True) if diagnostics is None else diagnostics:
        points = {"output": result.value}
        if "warm_start" in result.info:
            points["warm_start"] = result.info["warm_start"]
        report[NON_PRIVATE_KEY] = {
            "label": NON_PRIVATE_LABEL,
            **{k: non_private_diagnostics(problem, x) for k, x in points.items()},
        }
        if from_job:
            report[NON_PRIVATE_KEY]["from_job"] = from_job
    return Execution(result, problem, cfg, report, ledger)


def _pop_non_private(info: dict[str, Any]) -> dict[str, Any]:
    """Remove every :data:`~dpsample.privacy.NON_PRIVATE_KEY` entry from ``info``.

    Returns the top-level entry's items and each nested entry under its dotted path
    (``"finder_info"`` for ``info["finder_info"][NON_PRIVATE_KEY]``).
    """
    from dpsample.privacy import NON_PRIVATE_KEY

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


def _report(
    cfg: Mapping[str, Any], result: Any, ledger: Any, seconds: float
) -> dict[str, Any]:
    import numpy as np

    delta = cfg["privacy"]["delta"]
    guarantee = result.privacy
    summary = guarantee.report(delta)
    within = summary["epsilon"] <= cfg["privacy"]["epsilon"] * (1 + 1e-9)
    info = dict(result.info)
    report: dict[str, Any] = {
        "job": dict(cfg["job"]),
        "released": {"point": np.asarray(result.value).tolist()},
        "privacy": {
            "budget": dict(cfg["privacy"]),
            "delta": delta,
            "epsilon": summary["epsilon"],
            "within_budget": within,
            "assumptions": summary["assumptions"],
            "verdict": budget_verdict(within, summary["assumptions"]),
            "pure_epsilon": guarantee.epsilon(0.0),
            "tightest_route": summary["tightest"],
            "routes": summary["routes"],
            "tv_slack": summary["tv_slack"],
            "relation": summary["relation"],
            "components": summary["components"],
        },
        "problem": {
            k: cfg[_INFO_SECTION][k]
            for k in ("n", "dim", "assumptions", "constants", "constant_sources")
        },
        "info": info,
        "seconds": seconds,
        "dpsample_version": cfg[_INFO_SECTION]["dpsample_version"],
    }
    if "warm_start" in info:
        report["released"]["warm_start"] = np.asarray(info["warm_start"]).tolist()
    if ledger is not None:
        report["privacy"]["ledger"] = _ledger_report(ledger)
    return jsonable(report, delta=delta)


def _ledger_report(ledger: Any) -> dict[str, Any]:
    return {
        "epsilon": ledger.epsilon,
        "delta": ledger.delta,
        "stages": [
            {
                "name": name,
                "epsilon": g.epsilon(ledger.delta),
                "assumptions": list(g.assumptions),
            }
            for name, g in ledger.stages
        ],
        "spent_epsilon": ledger.spent_epsilon(),
        "assumptions": list(ledger.assumptions),
    }


def budget_verdict(within_budget: bool, assumptions: Sequence[str]) -> str:
    """The report's one-line budget verdict, conditional where the guarantee is.

    Args:
        within_budget: whether the guarantee's epsilon at the budget's delta is
            within the budget's epsilon.
        assumptions: the guarantee's assumptions
            (:attr:`~dpsample.privacy.PrivacyGuarantee.assumptions`).

    Returns:
        ``"within budget"``, ``"within budget, assuming: a; b"`` or
        ``"over budget"``.

    Examples:
        >>> from dpsample.config import budget_verdict
        >>> budget_verdict(True, [])
        'within budget'
        >>> budget_verdict(True, ["the declared bound holds"])
        'within budget, assuming: the declared bound holds'
    """
    if not within_budget:
        return "over budget"
    if not assumptions:
        return "within budget"
    return "within budget, assuming: " + "; ".join(assumptions)


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
        ``training_rmse`` of ``y - <a, x>``.
    """
    import jax.numpy as jnp
    import numpy as np

    from dpsample.finders import stationarity

    out = {
        "empirical_risk": float(problem.empirical_risk(x)),
        "gradient_norm": float(stationarity.gradient_norm(problem, x)),
        "min_hessian_eigenvalue": float(
            stationarity.min_hessian_eigenvalue(problem, x)
        ),
    }
    data = problem.data
    if isinstance(data, Mapping) and "x" in data and "y" in data:
        a, y = np.asarray(data["x"]), np.asarray(data["y"])
        pred = a @ np.asarray(jnp.asarray(x))
        if np.all(np.isin(y, (-1.0, 1.0))):
            out["training_accuracy"] = float(np.mean(y * pred > 0))
        else:
            out["training_rmse"] = float(np.sqrt(np.mean((y - pred) ** 2)))
    return out


# ------------------------------------------------------------------ serialisation
def jsonable(obj: Any, *, delta: float | None = None) -> Any:
    """A JSON-safe copy of ``obj``.

    Arrays become (nested) lists, NamedTuples dicts, tuples lists, non-finite floats
    the strings ``"inf"``, ``"-inf"``, ``"nan"``, a
    :class:`~dpsample.privacy.PrivacyGuarantee` its ``report(delta)`` (with its
    ``repr`` and ``pure_epsilon``), anything else its ``repr``.

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
    import numpy as np

    from dpsample.privacy import PrivacyGuarantee

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
                {"guarantee": repr(o), "pure_epsilon": o.epsilon(0.0)} | o.report(at)
            )
        if isinstance(o, tuple) and hasattr(o, "_asdict"):
            return go(o._asdict())
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


_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def _toml_key(key: str) -> str:
    return key if _BARE.match(key) else json.dumps(key)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(v) for v in value if v is not None) + "]"
    if isinstance(value, Mapping):
        items = (
            f"{_toml_key(str(k))} = {_toml_value(v)}"
            for k, v in value.items()
            if v is not None
        )
        return "{" + ", ".join(items) + "}"
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


def to_toml(doc: Mapping[str, Mapping[str, Any]]) -> str:
    """Write a configuration (tables of scalars, lists and sub-tables) as TOML.

    ``None`` values are left out (TOML has no null).

    Args:
        doc: ``{section: {key: value}}``.

    Returns:
        The TOML text (``tomllib.loads`` reads it back).

    Examples:
        >>> import tomllib
        >>> from dpsample.config import to_toml
        >>> doc = {"job": {"name": "net", "seed": 0}, "options": {"f": {"k": 1.5}}}
        >>> tomllib.loads(to_toml(doc)) == doc
        True
    """
    lines: list[str] = []

    def table(path: list[str], body: Mapping[str, Any]) -> None:
        lines.append(f"[{'.'.join(_toml_key(p) for p in path)}]")
        subs = []
        for key, value in body.items():
            if value is None:
                continue
            if isinstance(value, Mapping):
                subs.append((key, value))
            else:
                lines.append(f"{_toml_key(str(key))} = {_toml_value(value)}")
        lines.append("")
        for key, value in subs:
            table([*path, str(key)], value)

    for section, body in doc.items():
        table([section], body)
    return "\n".join(lines)


precision.scope_public(globals())
