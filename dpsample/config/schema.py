"""The TOML schema of ``dpsample run``: reading, checking and writing configurations.

:func:`load_config` reads a file, :func:`resolve_config` checks it against the
schema and fills in the defaults (nothing here reads the data), :func:`to_toml`
writes a configuration back (``config.toml`` of an output folder). The sections and
their keys are documented in ``docs/cli.md``; the job's ``[options]`` are checked
against the algorithm's own options (:mod:`dpsample.config.jobs`).
"""

from __future__ import annotations

import json
import math
import re
import tomllib
from collections.abc import Mapping
from typing import Any, NamedTuple

from dpsample._src import precision
from dpsample.config.errors import ConfigError, choices
from dpsample.config.jobs import resolve_job
from dpsample.config.problem import (
    SYNTHETIC_KINDS,
    dataset_names,
    loss_factory_parameters,
    loss_names,
)
from dpsample.config.references import resolve_reference
from dpsample.datasets import SKLEARN_METADATA, sklearn_shape
from dpsample.models import ACTIVATIONS, HEADS

# Declared constants a ``[loss]`` section may set (they override derived ones).
from dpsample.problem import CONSTANTS

__all__ = [
    "CONSTANTS",
    "ConfigError",
    "INFO_SECTION",
    "SECTIONS",
    "load_config",
    "resolve_config",
    "resolve_reference",
    "to_toml",
]


#: Public assumptions the loss's constants are derived from.
ASSUMPTIONS = ("feature_bound", "radius", "label_bound")
#: The sections of a configuration, in the order they are written.
SECTIONS = ("job", "data", "model", "loss", "domain", "privacy", "options", "output")
#: Written by ``dpsample run`` into the copy of the configuration; ignored on input.
INFO_SECTION = "resolved"


# ------------------------------------------------------------------ value checks
def type_name(types: tuple[type, ...]) -> str:
    """``"an integer or a number"`` for ``(int, float)``."""
    names = {bool: "a boolean", int: "an integer", float: "a number", str: "a string"}
    names |= {list: "a list", dict: "a table"}
    return " or ".join(names.get(t, t.__name__) for t in types)


def check_type(where: str, value: Any, types: tuple[type, ...]) -> Any:
    """``value`` if it has one of ``types`` (an integer is a valid float).

    Raises:
        ConfigError: Naming ``where`` and the expected type.
    """
    if float in types and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, bool) and bool not in types:
        raise ConfigError(f"{where} must be {type_name(types)}, got {value!r}")
    if not isinstance(value, types):
        raise ConfigError(f"{where} must be {type_name(types)}, got {value!r}")
    return value


def finite(where: str, value: float, *, positive: bool = False) -> float:
    """``value`` if finite (and ``> 0`` with ``positive``), else a ConfigError."""
    if not math.isfinite(value) or (positive and not value > 0):
        cond = "a finite number > 0" if positive else "a finite number"
        raise ConfigError(f"{where} must be {cond}, got {value!r}")
    return value


def number_list(where: str, value: Any) -> list[float]:
    """A list of numbers as floats, else a ConfigError."""
    if not isinstance(value, list) or not all(
        isinstance(v, int | float) and not isinstance(v, bool) for v in value
    ):
        raise ConfigError(f"{where} must be a list of numbers, got {value!r}")
    return [float(v) for v in value]


class Key(NamedTuple):
    """One key of a section: its types, whether it is required, its default."""

    types: tuple[type, ...]
    required: bool = False
    default: Any = None


_NUM = (float,)
#: Keys of the sections with a fixed schema.
SCHEMA: dict[str, dict[str, Key]] = {
    "job": {
        "kind": Key((str,), True),
        "name": Key((str,), True),
        # No default: without a seed the run's key comes from OS entropy.
        "seed": Key((int,)),
    },
    "loss": {
        "name": Key((str,), True),
        **{a: Key(_NUM) for a in ASSUMPTIONS},
        **{c: Key(_NUM) for c in CONSTANTS},
    },
    "privacy": {
        "epsilon": Key(_NUM, True),
        "delta": Key(_NUM, True),
        "max_evaluations": Key((int,)),
    },
    "output": {
        "dir": Key((str,)),
        "overwrite": Key((bool,), False, False),
        "diagnostics": Key((bool,), False, True),
    },
}
#: ``[data]`` keys, by ``source``.
DATA_SOURCES: dict[str, dict[str, Key]] = {
    "sklearn": {
        "name": Key((str,), True),
        "features": Key((list,)),
        "normalize_rows": Key((bool,), False, True),
        "add_bias": Key((bool,), False, False),
        "positive_class": Key((int, str)),
        "label_scale": Key(_NUM),
        # Labels as class indices 0..k-1 (set by a [model] with the
        # cross_entropy head); no default, so that a given value can be checked.
        "class_index": Key((bool,)),
        # Train on part of the rows: round(holdout n) rows are held out by the
        # public permutation of datasets.holdout_split (no defaults: a
        # configuration without them resolves as before).
        "holdout": Key(_NUM),
        "holdout_seed": Key((int,)),
    },
    "synthetic": {
        "kind": Key((str,), True),
        "n": Key((int,), True),
        "d": Key((int,), True),
        "seed": Key((int,), False, 0),
        "margin": Key(_NUM),
        "flip_prob": Key(_NUM),
        "noise": Key(_NUM),
        "outlier_frac": Key(_NUM),
        "outlier_scale": Key(_NUM),
    },
    # A data function ``package.module:function(rng_key, [n=, d=,] **params)``;
    # ``n`` and ``d`` (optional) are also what a dry run plans from.
    "module": {
        "function": Key((str,), True),
        "n": Key((int,)),
        "d": Key((int,)),
        "seed": Key((int,), False, 0),
        "params": Key((dict,)),
    },
}
#: ``[model]`` keys, by ``kind`` (:class:`dpsample.models.MLP`).
MODELS: dict[str, dict[str, Key]] = {
    "mlp": {
        "hidden": Key((list,), True),
        "activation": Key((str,), False, "tanh"),
        "head": Key((str,), False, "cross_entropy"),
        # The public key of the start point MLP.init(jax.random.key(init_seed)).
        "init_seed": Key((int,), False, 0),
        # A declared bound G on every per-example gradient norm (public, e.g.
        # from a non-private pilot): dp_sgd without clip_norm then clips at G
        # (enforced); with enforce_sensitivity = false it runs seed 002's
        # Algorithm 2 with C = G, its guarantee conditional on the bound.
        "lipschitz": Key(_NUM),
    },
}
#: Options whose defaults need a declared constant a model does not have.
MODEL_REQUIRED_OPTIONS = ("clip_norm", "learning_rate", "num_steps")
#: ``[domain]`` keys, by ``kind``.
DOMAINS: dict[str, dict[str, Key]] = {
    "ball": {"radius": Key(_NUM, True), "center": Key((list,))},
    "unconstrained": {},
}


def section(raw: Mapping[str, Any], name: str, required: bool = True) -> dict:
    """Section ``name`` of ``raw`` as a dict (``{}`` when optional and absent)."""
    if name not in raw:
        if required:
            raise ConfigError(f"missing section [{name}]")
        return {}
    value = raw[name]
    if not isinstance(value, dict):
        raise ConfigError(f"[{name}] must be a table (a [{name}] section)")
    return dict(value)


def apply(section: str, table: Mapping[str, Any], schema: Mapping[str, Key]) -> dict:
    """``table`` checked against ``schema``, defaults filled in."""
    unknown = [k for k in table if k not in schema]
    if unknown:
        raise ConfigError(
            f"unknown key {unknown[0]!r} in [{section}]; valid keys: "
            + ", ".join(schema)
        )
    out: dict[str, Any] = {}
    for key, spec in schema.items():
        if key in table:
            out[key] = check_type(f"[{section}] {key}", table[key], spec.types)
        elif spec.required:
            raise ConfigError(f"missing key {key!r} in [{section}]")
        elif spec.default is not None:
            out[key] = spec.default
    return out


def _tag(section: str, table: Mapping[str, Any], key: str) -> str:
    if key not in table:
        raise ConfigError(f"missing key {key!r} in [{section}]")
    return check_type(f"[{section}] {key}", table[key], (str,))


def tagged(
    raw: Mapping[str, Any], name: str, key: str, variants: Mapping[str, Any]
) -> dict:
    """A section whose ``key`` picks the schema of its other keys from ``variants``."""
    table = section(raw, name)
    tag = _tag(name, table, key)
    if tag not in variants:
        raise choices(f"[{name}] {key}", tag, variants)
    rest = {k: v for k, v in table.items() if k != key}
    return {key: tag} | apply(name, rest, variants[tag])


# ---------------------------------------------------------------------- reading
def load_config(path: str) -> dict[str, Any]:
    """Read a TOML configuration file (not yet checked; see :func:`resolve_config`).

    Args:
        path: The file.

    Returns:
        The parsed document.

    Raises:
        ConfigError: The file cannot be read or is not valid TOML.
    """
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        raise ConfigError(f"configuration file {path!r} not found") from None
    except IsADirectoryError:
        raise ConfigError(f"{path!r} is a folder, not a configuration file") from None
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"{path}: invalid TOML: {err}") from None


def _resolve_data(raw: Mapping[str, Any]) -> dict[str, Any]:
    data = tagged(raw, "data", "source", DATA_SOURCES)
    if data["source"] == "sklearn":
        if data["name"] not in dataset_names():
            raise choices("dataset", data["name"], dataset_names())
        if "features" in data:
            feats = data["features"]
            if not feats or not all(
                isinstance(f, str | int) and not isinstance(f, bool) for f in feats
            ):
                raise ConfigError(
                    "[data] features must be a non-empty list of feature names or "
                    f"column indices, got {feats!r}"
                )
        if "holdout_seed" in data and "holdout" not in data:
            raise ConfigError("[data] holdout_seed needs holdout (a fraction)")
        if "holdout" in data:
            try:
                sklearn_shape(data["name"], holdout=data["holdout"])
            except ValueError as err:
                raise ConfigError(f"[data] {err}") from None
    elif data["source"] == "module":
        if not callable(resolve_reference(data["function"])):
            raise ConfigError(f"[data] function {data['function']!r} is not callable")
        for key in ("n", "d"):
            if key in data and data[key] < 1:
                raise ConfigError(f"[data] {key} must be >= 1, got {data[key]}")
    else:
        if data["kind"] not in SYNTHETIC_KINDS:
            raise choices("[data] kind", data["kind"], SYNTHETIC_KINDS)
        other = [
            k
            for kind, keys in SYNTHETIC_KINDS.items()
            if kind != data["kind"]
            for k in keys
            if k in data
        ]
        if other:
            raise ConfigError(
                f"[data] {other[0]} does not apply to kind = {data['kind']!r}; valid "
                f"keys: source, kind, n, d, seed, "
                + ", ".join(SYNTHETIC_KINDS[data["kind"]])
            )
        for key in ("n", "d"):
            if data[key] < 1:
                raise ConfigError(f"[data] {key} must be >= 1, got {data[key]}")
    return data


def _resolve_loss(raw: Mapping[str, Any]) -> dict[str, Any]:
    table = section(raw, "loss")
    name = _tag("loss", table, "name")
    if ":" in name:
        # A loss of the user's own: ``package.module:factory`` called with
        # ``[loss] params``; its constants are declared here or derived by it.
        if not callable(resolve_reference(name)):
            raise ConfigError(f"[loss] name {name!r} does not name a callable")
        params = {"params": Key((dict,))}
    elif name not in loss_names():
        raise choices("loss", name, loss_names())
    else:
        params = {p: Key(_NUM) for p in loss_factory_parameters(name)}  # reg, c
    loss = apply("loss", table, SCHEMA["loss"] | params)
    for key in (*ASSUMPTIONS, *CONSTANTS):
        if key in loss:
            finite(
                f"[loss] {key}",
                loss[key],
                positive=key not in ("label_bound", "loss_floor"),
            )
    if loss.get("label_bound", 0.0) < 0:
        raise ConfigError(f"[loss] label_bound must be >= 0, got {loss['label_bound']}")
    return loss


def _resolve_model(raw: Mapping[str, Any], data: dict[str, Any]) -> dict[str, Any]:
    """``[model]``, checked against the data's labels.

    ``data`` gains ``class_index = true`` for the cross_entropy head (its labels).
    """
    if "loss" in raw:
        raise ConfigError(
            "[model] and [loss] cannot both be given: the model's head is its "
            "per-example loss; remove [loss]"
        )
    model = tagged(raw, "model", "kind", MODELS)
    hidden = model["hidden"]
    if not all(isinstance(h, int) and not isinstance(h, bool) for h in hidden) or (
        any(h < 1 for h in hidden)
    ):
        raise ConfigError(
            f"[model] hidden must be a list of layer widths >= 1, got {hidden!r}"
        )
    if model["activation"] not in ACTIVATIONS:
        raise choices("[model] activation", model["activation"], ACTIVATIONS)
    if model["head"] not in HEADS:
        raise choices("[model] head", model["head"], HEADS)
    if model["init_seed"] < 0:
        raise ConfigError(f"[model] init_seed must be >= 0, got {model['init_seed']}")
    if "lipschitz" in model:
        finite("[model] lipschitz", model["lipschitz"], positive=True)
    sklearn = data["source"] == "sklearn"
    regression = (
        SKLEARN_METADATA[data["name"]].regression
        if sklearn
        else data["source"] == "synthetic" and data["kind"] == "regression"
    )
    if model["head"] == "cross_entropy":
        if not sklearn or regression:
            raise ConfigError(
                "[model] head = 'cross_entropy' needs class labels: a bundled "
                "classification dataset ([data] source = 'sklearn'); use head = "
                "'logistic' for labels in {-1, +1} or 'squared' for real targets"
            )
        if data.get("class_index") is False or "positive_class" in data:
            raise ConfigError(
                "[model] head = 'cross_entropy' takes the class indices as labels: "
                "remove [data] positive_class and class_index = false"
            )
        data["class_index"] = True
    elif model["head"] == "logistic" and regression:
        raise ConfigError(
            "[model] head = 'logistic' needs labels in {-1, +1}, and these data "
            "are a regression task; use head = 'squared'"
        )
    return model


def check_model_job(
    cfg: Mapping[str, Any], valid: Mapping[str, Any], given: Mapping[str, Any]
) -> None:
    """Refuse a job that cannot train a ``[model]`` (before anything runs).

    A model declares no smoothness, and no Lipschitz constant unless ``[model]
    lipschitz`` is given: only a finder that clips per-example gradients
    (``clip_norm``) bounds its sensitivity, and the defaults that need a smoothness
    (learning rate, number of steps) must be given. With ``[model] lipschitz`` the
    same finder may run without ``clip_norm``: it then clips at the declared ``G``
    (or, with ``enforce_sensitivity = false``, runs seed 002's Algorithm 2 with ``C
    = G``, its guarantee conditional on that declared bound).
    """
    if "model" not in cfg:
        return
    job = cfg["job"]
    if job["kind"] != "finder" or "clip_norm" not in valid:
        raise ConfigError(
            f"[model] cannot be trained by {job['kind']} {job['name']!r}: a model "
            "declares no Lipschitz or smoothness constant, so it needs a finder "
            "that clips per-example gradients ([job] name = 'dp_sgd' with [options] "
            "clip_norm)"
        )
    declared = "lipschitz" in cfg["model"]
    missing = [
        k
        for k in MODEL_REQUIRED_OPTIONS
        if k in valid and k not in given and not (declared and k == "clip_norm")
    ]
    if missing:
        raise ConfigError(
            f"[model] needs [options] {missing[0]} (its default rests on a "
            "declared constant a model does not have); set "
            + ", ".join(MODEL_REQUIRED_OPTIONS)
            + " (clip_norm may be left out when [model] declares lipschitz)"
        )


def _resolve_privacy(raw: Mapping[str, Any]) -> dict[str, Any]:
    privacy = apply("privacy", section(raw, "privacy"), SCHEMA["privacy"])
    if not (math.isfinite(privacy["epsilon"]) and privacy["epsilon"] > 0):
        raise ConfigError(
            f"[privacy] epsilon must be a finite number > 0, got {privacy['epsilon']!r}"
        )
    if not 0 < privacy["delta"] < 1:
        raise ConfigError(f"[privacy] delta must lie in (0, 1), got {privacy['delta']}")
    cap = privacy.get("max_evaluations")
    if cap is not None and cap < 1:
        raise ConfigError(f"[privacy] max_evaluations must be >= 1, got {cap}")
    return privacy


def resolve_config(raw: Mapping[str, Any]) -> dict[str, Any]:
    """Check a configuration against the schema and fill in its defaults.

    Checks names (job, dataset, loss, domain kind), keys and types; the job's
    ``[options]`` are checked against the algorithm's options (names, required
    ones and, where annotated, types: :mod:`dpsample.config.jobs`). Nothing here
    reads the data.

    Args:
        raw: The parsed TOML document.

    Returns:
        The resolved configuration: one dict per section, defaults filled in.
        ``[job] seed`` stays absent when not given (the run's key then comes from
        OS entropy).

    Raises:
        ConfigError: The first problem found, naming the key and the valid choices.

    Examples:
        >>> from dpsample.config import resolve_config
        >>> cfg = resolve_config({
        ...     "job": {"kind": "finder", "name": "dp_sgd"},
        ...     "data": {"source": "sklearn", "name": "iris", "features": [0, 1]},
        ...     "loss": {"name": "sigmoid"},
        ...     "domain": {"kind": "ball", "radius": 2},
        ...     "privacy": {"epsilon": 1, "delta": 1e-6, "max_evaluations": 10_000},
        ...     "options": {"num_steps": 50}})
        >>> "seed" in cfg["job"], cfg["domain"]["radius"], cfg["privacy"]["epsilon"]
        (False, 2.0, 1.0)
        >>> resolve_config({**cfg, "options": {"num_steps": 2.5}})
        Traceback (most recent call last):
        ...
        dpsample.config.ConfigError: [options] num_steps must be an integer, got 2.5
        >>> resolve_config({**cfg, "loss": {"name": "hinge"}})
        Traceback (most recent call last):
        ...
        dpsample.config.ConfigError: unknown loss 'hinge'; valid choices: ...
    """
    if not isinstance(raw, Mapping):
        raise ConfigError("the configuration must be a TOML table")
    unknown = [k for k in raw if k not in SECTIONS and k != INFO_SECTION]
    if unknown:
        raise ConfigError(
            f"unknown section [{unknown[0]}]; valid sections: "
            + ", ".join(f"[{s}]" for s in SECTIONS)
        )
    cfg: dict[str, Any] = {}
    job_table = apply("job", section(raw, "job"), SCHEMA["job"])
    job = resolve_job(job_table["kind"], job_table["name"])
    cfg["job"] = job_table
    cfg["data"] = _resolve_data(raw)
    if "model" in raw:
        cfg["model"] = _resolve_model(raw, cfg["data"])
    loss = {} if "model" in raw else _resolve_loss(raw)
    if cfg["data"].get("class_index") and "model" not in cfg:
        raise ConfigError(
            "[data] class_index = true gives class indices: the labels of a [model] "
            "with head = 'cross_entropy' only"
        )
    domain = tagged(raw, "domain", "kind", DOMAINS)
    if domain["kind"] == "ball":
        finite("[domain] radius", domain["radius"], positive=True)
        if "center" in domain:
            domain["center"] = number_list("[domain] center", domain["center"])
    elif "radius" in loss:
        raise ConfigError(
            "[loss] radius cannot be assumed on an unconstrained domain (nothing "
            "keeps the iterates there); declare the constants themselves in [loss]"
        )
    if "model" not in cfg:
        cfg["loss"] = loss
    cfg["domain"] = domain
    cfg["privacy"] = _resolve_privacy(raw)
    options = section(raw, "options", required=False)
    check_model_job(cfg, job.options(), options)
    cfg["options"] = job.check_options(options)
    cfg["output"] = apply(
        "output", section(raw, "output", required=False), SCHEMA["output"]
    )
    return cfg


# ---------------------------------------------------------------------- writing
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


def to_toml(
    doc: Mapping[str, Mapping[str, Any]],
    *,
    comments: Mapping[str, str] | None = None,
) -> str:
    """Write a configuration (tables of scalars, lists and sub-tables) as TOML.

    ``None`` values are left out (TOML has no null).

    Args:
        doc: ``{section: {key: value}}``.
        comments: ``{section: text}``: comment lines written under a section's
            header (e.g. that a secret seed was left out).

    Returns:
        The TOML text (``tomllib.loads`` reads it back).

    Examples:
        >>> import tomllib
        >>> from dpsample.config import to_toml
        >>> doc = {"job": {"name": "net"}, "options": {"f": {"k": 1.5}}}
        >>> text = to_toml(doc, comments={"job": "seed omitted"})
        >>> tomllib.loads(text) == doc, text.splitlines()[1]
        (True, '# seed omitted')
    """
    lines: list[str] = []
    notes = dict(comments or {})

    def table(path: list[str], body: Mapping[str, Any]) -> None:
        lines.append(f"[{'.'.join(_toml_key(p) for p in path)}]")
        if len(path) == 1 and path[0] in notes:
            lines.extend(f"# {line}" for line in notes[path[0]].splitlines())
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

    for name, body in doc.items():
        table([name], body)
    return "\n".join(lines)


precision.scope_public(globals())
