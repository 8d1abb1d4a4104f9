"""The problem of a configuration: a public spec from [data], [loss] and [domain].

:func:`build_spec` makes the :class:`~dpsample.problem.ProblemSpec` (the loss, ``n``,
the shapes of one example, the domain, the declared constants) from public facts
only: it never reads the data. For the bundled scikit-learn datasets the number of
examples and the feature names are recorded public facts
(:data:`dpsample.datasets.SKLEARN_METADATA`) and the number of features follows from
``[data] features`` and ``add_bias``; synthetic data declare ``n`` and ``d``. Every
example is ``{"x": float64 (d,), "y": float64 ()}`` (``y`` int64 with ``[data]
class_index``). :func:`load_data` reads the data
(the private part) and :func:`build_problem` joins the two, checking that the data
match the spec.

Constants: the loss's :meth:`~dpsample.losses.Loss.constants` derive ``lipschitz``,
``smoothness``, ``hessian_lipschitz``, ``loss_range``, ``oscillation`` and
``loss_floor`` (where the range's interval lies) from the
public assumptions ``feature_bound`` (default ``1``: rows of unit norm), ``radius``
(default the domain's ``max_norm``) and ``label_bound``; a constant given in
``[loss]`` overrides the derived one (it is the user's public declaration, never
checked against the private data). A derived ``loss_floor`` is used only with
the derived ``loss_range`` (it locates that interval, not a declared one); a
declared ``loss_floor`` needs a ``loss_range`` (derived or declared). Every guarantee
comes from these constants.

A ``[model]`` replaces ``[loss]``: the loss is the :class:`~dpsample.models.MLP` of
:func:`build_model` (input width the data's features, output width the dataset's
classes), the dimension is its parameter count, no constant is declared (only a
clipping finder trains it, :func:`~dpsample.config.schema.check_model_job`) and the
start is :func:`model_start`, the network's ``init`` from the public ``init_seed``.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable, Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from dpsample import datasets, losses
from dpsample._src import precision
from dpsample.config.errors import ConfigError
from dpsample.config.references import resolve_reference
from dpsample.domains import Ball, Unconstrained
from dpsample.losses import Loss, LossConstants
from dpsample.models import MLP
from dpsample.problem import CONSTANTS, ProblemSpec, data_shapes

__all__ = [
    "SYNTHETIC_KINDS",
    "build_model",
    "build_problem",
    "build_spec",
    "data_shape",
    "dataset_names",
    "has_public_shape",
    "load_data",
    "loss_factory_parameters",
    "loss_names",
    "model_start",
]


#: Synthetic data kinds and their own keys.
SYNTHETIC_KINDS = {
    "classification": ("margin", "flip_prob"),
    "regression": ("noise", "outlier_frac", "outlier_scale"),
}


# ---------------------------------------------------------------------- names
def loss_names() -> tuple[str, ...]:
    """The loss factories of :mod:`dpsample.losses`, by name.

    Only the public functions that build a loss: the module's classes (``Loss``,
    ``GLMLoss``, ``Link``, ...) and tables (``GLM_LINKS``) are not losses.

    Example:
        >>> from dpsample.config import loss_names
        >>> "sigmoid" in loss_names(), "GLMLoss" in loss_names()
        (True, False)
    """
    return tuple(n for n in losses.__all__ if inspect.isfunction(getattr(losses, n)))


def _loss_factory(name: str) -> Callable[..., Any]:
    if ":" in name:
        return resolve_reference(name)  # type: ignore[no-any-return]
    return getattr(losses, name)  # type: ignore[no-any-return]


def _no_constants(*_: Any, **__: Any) -> Any:
    return LossConstants(None, None, None, None, None)


def _hashable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return tuple(sorted((k, _hashable(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(_hashable(v) for v in value)
    return value


def _thawed(value: Any) -> Any:
    if isinstance(value, tuple) and all(
        isinstance(v, tuple) and len(v) == 2 and isinstance(v[0], str) for v in value
    ):
        return {k: _thawed(v) for k, v in value}
    return value


@functools.lru_cache(maxsize=64)
def _loss(name: str, params: tuple[tuple[str, Any], ...]) -> Any:
    """The loss ``name(**params)``, made once per name and parameters.

    The same configuration then gives the same ``loss_fn`` object, so a second
    run reuses the compiled cores (keyed on the loss function) and the cost
    model's timing of the loss. A module factory (``"package.module:factory"``)
    may return a :class:`~dpsample.losses.Loss` (its constants derived from the
    assumptions) or a plain ``loss_fn(x, example)`` (every constant then has to be
    declared in ``[loss]``).
    """
    kwargs = {k: _thawed(v) for k, v in params}
    if ":" in name:
        kwargs = kwargs.get("params", {})
    made = _loss_factory(name)(**kwargs)
    if isinstance(made, Loss):
        return made
    if not callable(made):
        raise ConfigError(
            f"[loss] {name} returned {type(made).__name__}: expected a "
            "dpsample.losses.Loss or a callable loss_fn(x, example)"
        )
    return Loss(name.rpartition(":")[2], made, _no_constants)


def loss_factory_parameters(name: str) -> tuple[str, ...]:
    """The parameters of loss ``name``'s factory (``reg``, ``c``, ``scale``, ...).

    A module loss (``"package.module:factory"``) takes its keyword arguments from
    the one table ``[loss] params``.
    """
    if ":" in name:
        return ("params",)
    return tuple(inspect.signature(_loss_factory(name)).parameters)


def dataset_names() -> tuple[str, ...]:
    """The bundled datasets :func:`dpsample.datasets.load_sklearn` accepts."""
    return tuple(datasets.SKLEARN_DATASETS)


# ---------------------------------------------------------------- public facts
def data_shape(data: Mapping[str, Any]) -> tuple[int, int]:
    """``(n, d)`` of the data a resolved ``[data]`` section describes, unread.

    Args:
        data: The ``[data]`` section of :func:`~dpsample.config.resolve_config`.

    Returns:
        ``(n, d)``: recorded public facts for the bundled datasets, the declared
        ``n`` and ``d`` otherwise (synthetic data declare them; a source whose
        shape is only known by reading its data must declare them for a dry run).

    Raises:
        ConfigError: An unknown feature of a bundled dataset, or a source whose
            shape cannot be known without reading the data and that does not
            declare ``[data] n`` and ``d`` (:func:`has_public_shape`).

    Examples:
        >>> from dpsample.config import data_shape
        >>> data_shape({"source": "sklearn", "name": "iris", "add_bias": True})
        (150, 5)
        >>> data_shape({"source": "synthetic", "kind": "regression", "n": 40, "d": 3})
        (40, 3)
    """
    if data["source"] == "sklearn":
        try:
            return datasets.sklearn_shape(
                data["name"],
                features=data.get("features"),
                add_bias=data.get("add_bias", False),
                holdout=data.get("holdout"),
            )
        except ValueError as err:
            raise ConfigError(f"[data] {err}") from None
    if not has_public_shape(data):
        raise ConfigError(
            f"[data] source = {data['source']!r} gives the shape of its data only "
            "by reading them: declare [data] n and d (public) to plan without "
            "reading the data (dpsample run --dry-run)"
        )
    return int(data["n"]), int(data["d"])


def has_public_shape(data: Mapping[str, Any]) -> bool:
    """Whether ``(n, d)`` of a ``[data]`` section is known without reading the data.

    True for the bundled datasets (recorded facts) and for any source that declares
    ``n`` and ``d``.
    """
    return data["source"] == "sklearn" or ("n" in data and "d" in data)


def _is_regression(data: Mapping[str, Any]) -> bool:
    """Whether the labels are not known to lie in ``{-1, +1}``."""
    if data["source"] == "module":  # labels not known to lie in {-1, +1}
        return True
    if data["source"] == "synthetic":
        return data["kind"] == "regression"
    return datasets.SKLEARN_METADATA[data["name"]].regression


def _example(dim: int, class_index: bool = False) -> dict[str, Any]:
    f64 = np.dtype("float64")
    return {
        "x": jax.ShapeDtypeStruct((dim,), f64),
        "y": jax.ShapeDtypeStruct((), np.dtype("int64") if class_index else f64),
    }


def _domain(dom_cfg: Mapping[str, Any], dim: int, what: str) -> Any:
    """The domain of a resolved ``[domain]`` section in dimension ``dim``."""
    if dom_cfg["kind"] != "ball":
        return Unconstrained(dim)
    center = dom_cfg.get("center")
    if center is not None and len(center) != dim:
        raise ConfigError(
            f"[domain] center has {len(center)} coordinates, {what} {dim}"
        )
    return Ball(
        dom_cfg["radius"],
        None if center is None else jnp.asarray(center, jnp.float64),
        dim=dim,
    )


# ----------------------------------------------------------------------- models
@functools.lru_cache(maxsize=64)
def _mlp(sizes: tuple[int, ...], activation: str, head: str) -> Any:
    """The MLP, made once per architecture (compiled cores are reused)."""
    return MLP(sizes, activation=activation, head=head)


def build_model(cfg: Mapping[str, Any], features: int) -> Any:
    """The :class:`~dpsample.models.MLP` of a resolved ``[model]`` section.

    Its input width is the data's number of ``features``; its output width is the
    number of classes of the dataset for the ``cross_entropy`` head (a public fact,
    :data:`~dpsample.datasets.SKLEARN_METADATA`), 1 for ``logistic`` and
    ``squared``.

    Examples:
        >>> from dpsample.config import resolve_config
        >>> from dpsample.config.problem import build_model
        >>> cfg = resolve_config({
        ...     "job": {"kind": "finder", "name": "dp_sgd"},
        ...     "data": {"source": "sklearn", "name": "digits"},
        ...     "model": {"kind": "mlp", "hidden": [32]},
        ...     "domain": {"kind": "unconstrained"},
        ...     "privacy": {"epsilon": 1, "delta": 1e-5},
        ...     "options": {"clip_norm": 1.0, "learning_rate": 0.5,
        ...                 "num_steps": 10, "batch_size": 64}})
        >>> net = build_model(cfg, 64)
        >>> net.layer_sizes, net.dim
        ((64, 32, 10), 2410)
    """
    model = cfg["model"]
    outputs = 1
    if model["head"] == "cross_entropy":
        outputs = len(datasets.SKLEARN_METADATA[cfg["data"]["name"]].class_names)
    sizes = (features, *model["hidden"], outputs)
    return _mlp(sizes, model["activation"], model["head"])


def model_start(cfg: Mapping[str, Any], spec: Any) -> Any:
    """The public start point of a ``[model]``: ``MLP.init(key(init_seed))``.

    Raises:
        ConfigError: The point lies outside a ``[domain]`` ball (enlarge the
            radius, or give ``[options] x0``).
    """
    x0 = spec.loss_fn.init(jax.random.key(cfg["model"]["init_seed"]))
    dom = spec.domain
    gap = float(np.linalg.norm(np.asarray(x0) - np.asarray(dom.center_point)))
    if gap > float(dom.max_norm) and cfg["domain"]["kind"] == "ball":
        raise ConfigError(
            f"the model's initial point MLP.init(key({cfg['model']['init_seed']})) "
            f"lies {gap:.4g} from the [domain] centre, outside the radius "
            f"{cfg['domain']['radius']}: enlarge the radius or give [options] x0"
        )
    return x0


def _model_spec(
    cfg: Mapping[str, Any], n: int, example: Any
) -> tuple[Any, dict[str, Any]]:
    """The spec of a ``[model]``: its loss, its dimension, its declared constants.

    A model declares no constant, except ``[model] lipschitz`` when given (a public
    bound on every per-example gradient norm, never checked against the data).
    """
    model = build_model(cfg, int(example["x"].shape[0]))
    domain = _domain(cfg["domain"], model.dim, "the model's dimension")
    declared = {k: float(cfg["model"][k]) for k in ("lipschitz",) if k in cfg["model"]}
    spec = ProblemSpec(model, n, model.dim, domain, example, **declared)
    facts = {
        "n": n,
        "dim": model.dim,
        "model": {
            "layer_sizes": list(model.layer_sizes),
            "activation": model.activation,
            "head": model.head,
            "default_start": f"MLP.init(jax.random.key({cfg['model']['init_seed']}))",
        },
        "assumptions": {},
        "constants": declared,
        "constant_sources": {
            c: "declared" if c in declared else "none" for c in CONSTANTS
        },
    }
    return spec, facts


def build_spec(
    cfg: Mapping[str, Any], *, data: Any = None
) -> tuple[Any, dict[str, Any]]:
    """The public :class:`~dpsample.problem.ProblemSpec` of a resolved configuration.

    Reads no data (see the module docstring): what ``dpsample run --dry-run``
    plans from, and what a run plans from before it loads the data.

    Args:
        cfg: The output of :func:`~dpsample.config.resolve_config`.
        data: Data already loaded, for a source whose shape is only known by
            reading them (:func:`has_public_shape` false): ``n`` and the shapes of
            one example are then read from the data (public facts); ``None``
            otherwise.

    Returns:
        ``(spec, facts)`` with ``facts`` the public facts to record: ``n``,
        ``dim``, the assumptions used, ``constants`` and where each came from
        (``"derived"`` from the assumptions, ``"declared"`` in ``[loss]``).

    Raises:
        ConfigError: An assumption the derivation needs was not declared, or one
            that does not hold on the domain.

    Examples:
        >>> from dpsample.config import build_spec, resolve_config
        >>> cfg = resolve_config({
        ...     "job": {"kind": "finder", "name": "dp_sgd"},
        ...     "data": {"source": "sklearn", "name": "iris", "features": [0, 2]},
        ...     "loss": {"name": "sigmoid"},
        ...     "domain": {"kind": "ball", "radius": 4},
        ...     "privacy": {"epsilon": 1, "delta": 1e-6}})
        >>> spec, facts = build_spec(cfg)
        >>> spec.n, spec.dim, facts["constant_sources"]["lipschitz"]
        (150, 2, 'derived')
    """
    data_cfg, loss_cfg, dom_cfg = cfg["data"], cfg.get("loss", {}), cfg["domain"]
    if data is None:
        n, dim = data_shape(data_cfg)
        example = _example(dim, data_cfg.get("class_index", False))
    else:
        n, example = data_shapes(data)
        x = example.get("x") if isinstance(example, Mapping) else None
        if x is None or len(x.shape) != 1:
            raise ConfigError(
                "[data]: the data must be a mapping with features 'x' of shape (n, d)"
            )
        dim = int(x.shape[0])

    if "model" in cfg:
        return _model_spec(cfg, n, example)
    domain = _domain(dom_cfg, dim, "the data")

    params = loss_factory_parameters(loss_cfg["name"])
    loss = _loss(
        loss_cfg["name"],
        tuple((k, _hashable(loss_cfg[k])) for k in params if k in loss_cfg),
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
    constants: dict[str, float | None] = {}
    sources: dict[str, str] = {}
    for c in CONSTANTS:
        if c in loss_cfg:
            constants[c], sources[c] = loss_cfg[c], "declared"
        elif c == "loss_floor" and sources["loss_range"] != "derived":
            # a derived floor locates the derived range, not a declared one
            constants[c], sources[c] = None, "none"
        elif derived[c] is not None:
            constants[c], sources[c] = float(derived[c]), "derived"
        else:
            constants[c], sources[c] = None, "none"
    if constants["loss_floor"] is not None and constants["loss_range"] is None:
        raise ConfigError(
            f"[loss] loss_floor = {constants['loss_floor']} locates the interval "
            "[loss_floor, loss_floor + loss_range], but the loss derives no "
            "loss_range here: declare [loss] loss_range with it"
        )
    spec = ProblemSpec(loss.loss_fn, n, dim, domain, example, **constants)
    facts = {
        "n": n,
        "dim": dim,
        "assumptions": {k: v for k, v in assumptions.items() if v is not None},
        "constants": {k: v for k, v in constants.items() if v is not None},
        "constant_sources": sources,
    }
    return spec, facts


# ----------------------------------------------------------------- private data
def load_data(data: Mapping[str, Any]) -> dict[str, Any]:
    """Read the data of a resolved ``[data]`` section (the private part of a run).

    Args:
        data: The ``[data]`` section of :func:`~dpsample.config.resolve_config`.

    Returns:
        ``{"x": (n, d), "y": (n,)}``.
    """
    if data["source"] == "sklearn":
        kw = {k: v for k, v in data.items() if k not in ("source", "name")}
        return datasets.load_sklearn(data["name"], **kw)
    if data["source"] == "module":
        return _module_data(data)
    extra = {k: data[k] for k in SYNTHETIC_KINDS[data["kind"]] if k in data}
    make = getattr(datasets, f"make_{data['kind']}")
    return make(jax.random.key(data["seed"]), data["n"], data["d"], **extra)


def _module_data(data: Mapping[str, Any]) -> dict[str, Any]:
    """``function(jax.random.key(seed), [n=..., d=...,] **params)``, checked."""
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


def build_problem(cfg: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
    """The :class:`~dpsample.problem.Problem` of a resolved configuration.

    :func:`build_spec`, then the data (:func:`load_data`), checked against the spec.

    Args:
        cfg: The output of :func:`~dpsample.config.resolve_config`.

    Returns:
        ``(problem, facts)`` (``facts`` as in :func:`build_spec`).

    Raises:
        ConfigError: As :func:`build_spec`.
        ValueError: Invalid values (from the loaders, the loss or the domain), or
            data that do not match the public spec.
    """
    spec, facts = build_spec(cfg)
    return spec.with_data(load_data(cfg["data"])), facts


precision.scope_public(globals())
