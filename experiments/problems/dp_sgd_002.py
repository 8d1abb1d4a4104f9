"""Problem of ``experiments/dp_sgd_002.toml``: seed 002's experiment E1 (spec 002
section 5.4) scaled to bundled data.

The cells train :class:`dpsample.models.MLP` (``[model]``, 64 -> 32 -> 10, tanh,
softmax cross-entropy) on the training part of scikit-learn's bundled digits
(``[data] holdout``: 20 % of the 1,797 rows held out by the public permutation of
:func:`dpsample.datasets.holdout_split`) with ``dp_sgd``: clipped DP-SGD (Algorithm 1,
``[options] clip_norm = C``) or DP-SGD without clipping (Algorithm 2, ``[model]
lipschitz = C``: the noise is calibrated to the declared bound ``C`` and nothing is
clipped, the guarantee being conditional on every per-example gradient norm staying
below ``C``). Both keep every iterate (``return_iterates``) and release the last one.

:func:`measure` (all **non-private diagnostics**: they read the training data and the
held-out rows) computes, from the private run's iterates ``x_1..x_T`` and its start
``x_0``:

* ``test_acc_epoch_KK`` and ``train_acc_epoch_KK``: the accuracy of the iterate at the
  end of epoch ``k`` (step ``round(k n / b)``, ``b`` the expected Poisson batch),
  ``k = 0..E``, ``E = round(T b / n)``; ``test_accuracy`` at the released point;
* the gradient-bound event of Theorem 3.3: at every point ``x_t`` where a gradient was
  taken (``t = 0..T-1``), the largest per-example gradient norm over **all** ``n``
  training rows (a superset of the step's batch), against ``C``:
  ``grad_norm_max`` (over the steps), ``grad_norm_median_step`` (median over the
  steps of the per-step maximum), ``grad_norm_max_epoch_KK`` (over the steps of epoch
  ``k``), ``event_failure_fraction`` (the fraction of steps whose maximum exceeds
  ``C``: for Algorithm 2 the steps where it is *not* Algorithm 1, for Algorithm 1 the
  steps where clipping acts) and ``clipped_row_fraction`` (the mean over the steps
  of the fraction of rows above ``C``); ``clip_bound`` is ``C``;
* the non-private reference run of the same seed (:func:`nonprivate_iterates`: same
  model, start, learning rate, expected batch, ``T`` and Poisson sampling, no
  clipping, no noise; its sampling key is public, from ``[model] init_seed``), with
  the same measurements under ``nonprivate_*``.

The iterates themselves are dropped from the stored cell (``T x 2,410`` numbers, about
4 MB of JSON a cell); the released last iterate stays.

:func:`pilot_clip_bound` is the spec's non-private pilot for ``C`` (spec 002 section
5.4: "log the max per-example gradient norm over all steps, and set C to that value
rounded up"). Choosing ``C`` on the private training data leaks privacy that no
guarantee here accounts for (spec 002 section 3.4 item 4), as in the paper.

``python experiments/problems/dp_sgd_002.py DIR`` writes, from the cells of the sweep
folder ``DIR``, ``accuracy_vs_epoch.csv`` and ``gradient_bound.csv`` (tables over the
seeds: mean, min, max) and the figures ``figures/accuracy_vs_epoch__*.png`` (the
analogue of the paper's figures 1 and 3a: mean line and min/max band per epsilon,
non-private dashed) and ``figures/grad_norm_vs_epoch.png``; ``python
experiments/problems/dp_sgd_002.py --pilot`` prints the pilot's ``C``.
"""

from __future__ import annotations

import functools
import json
import math
import pathlib
from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from dpsample._src import precision

__all__ = [
    "measure",
    "nonprivate_iterates",
    "pilot_clip_bound",
    "write_tables",
]

#: Public key of the non-private runs: ``fold_in(key(NONPRIVATE_KEY), init_seed)``.
NONPRIVATE_KEY = 20_020


@functools.partial(jax.jit, static_argnames=("model", "num_steps"))
def _nonprivate_scan(
    key: Any,
    x0: Any,
    data: Any,
    rate: Any,
    lr: Any,
    batch: Any,
    *,
    model: Any,
    num_steps: int,
) -> Any:
    n = data["x"].shape[0]

    def step(x: Any, k: Any) -> tuple[Any, Any]:
        mask = jax.random.uniform(k, (n,)) < rate
        grad = jax.grad(lambda th: jnp.sum(mask * model.batch_losses(th, data)))(x)
        x_new = x - lr * grad / batch
        return x_new, x_new

    _, xs = jax.lax.scan(step, x0, jax.random.split(key, num_steps))
    return xs


def nonprivate_iterates(
    model: Any,
    data: Mapping[str, Any],
    x0: Any,
    *,
    num_steps: int,
    batch_size: float,
    learning_rate: float,
    key: Any,
) -> Any:
    """Iterates ``x_1..x_T`` of non-private minibatch SGD (no clipping, no noise).

    Each step samples a Poisson batch (every row with probability ``b / n``) and moves
    by ``-eta`` times the batch's gradient sum over the expected size ``b``: the
    update of :func:`dpsample.finders.dp_sgd` without clipping at ``noise = 0``
    (spec 002 section 5.4's baseline: ``Delta = 0``, same ``eta``, ``B``, ``T``).

    Args:
        model: The per-example loss (a :class:`dpsample.models.MLP`).
        data: ``{"x": (n, p), "y": (n,)}``.
        x0: The start, shape ``(d,)``.
        num_steps: ``T``.
        batch_size: The expected batch ``b``.
        learning_rate: ``eta``.
        key: A JAX PRNG key (the sampling).

    Returns:
        The iterates, shape ``(T, d)``.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> from dpsample.models import MLP
        >>> net = MLP((2, 3, 2))
        >>> data = {"x": jnp.eye(2), "y": jnp.array([0, 1])}
        >>> xs = nonprivate_iterates(net, data, net.init(jax.random.key(0)),
        ...     num_steps=4, batch_size=1.0, learning_rate=0.5, key=jax.random.key(1))
        >>> xs.shape
        (4, 17)
    """
    n = int(data["x"].shape[0])
    return _nonprivate_scan(
        key,
        jnp.asarray(x0, jnp.float64),
        {k: jnp.asarray(v) for k, v in data.items()},
        jnp.float64(batch_size / n),
        jnp.float64(learning_rate),
        jnp.float64(batch_size),
        model=model,
        num_steps=int(num_steps),
    )


@functools.partial(jax.jit, static_argnames=("model",))
def _grad_norms(points: Any, data: Any, *, model: Any) -> Any:
    """``(P, n)``: every per-example gradient norm at every point."""
    one = jax.grad(lambda th, ex: model(th, ex))

    def at(x: Any) -> Any:
        g = jax.vmap(one, in_axes=(None, 0))(x, data)
        return jnp.linalg.norm(g, axis=1)

    return jax.lax.map(at, points)


@functools.partial(jax.jit, static_argnames=("model",))
def _accuracies(points: Any, data: Any, *, model: Any) -> Any:
    def at(x: Any) -> Any:
        return jnp.mean(jnp.argmax(model.apply(x, data["x"]), axis=1) == data["y"])

    return jax.lax.map(at, points)


def _epoch_steps(num_steps: int, n: int, batch: float) -> list[int]:
    """Step index ``round(k n / b)`` ending epoch ``k = 0..E`` (``0``: the start)."""
    per = n / batch
    epochs = max(1, round(num_steps / per))
    return [min(num_steps, round(k * per)) for k in range(epochs + 1)]


def _trajectory_values(
    model: Any,
    train: Mapping[str, Any],
    test: Mapping[str, Any],
    x0: Any,
    xs: Any,
    clip: float,
    batch: float,
    prefix: str = "",
) -> dict[str, float]:
    num_steps = int(xs.shape[0])
    n = int(train["x"].shape[0])
    points = jnp.concatenate([jnp.asarray(x0)[None], xs])  # x_0..x_T
    ends = _epoch_steps(num_steps, n, batch)
    at_ends = points[jnp.asarray(ends)]
    test_acc = np.asarray(_accuracies(at_ends, test, model=model))
    train_acc = np.asarray(_accuracies(at_ends, train, model=model))
    norms = np.asarray(_grad_norms(points[:num_steps], train, model=model))
    step_max = norms.max(axis=1)  # the largest per-example norm at x_t, t < T
    out: dict[str, float] = {}
    for k, (te, tr) in enumerate(zip(test_acc, train_acc, strict=True)):
        out[f"{prefix}test_acc_epoch_{k:02d}"] = float(te)
        out[f"{prefix}train_acc_epoch_{k:02d}"] = float(tr)
    for k in range(1, len(ends)):
        part = step_max[ends[k - 1] : max(ends[k], ends[k - 1] + 1)]
        out[f"{prefix}grad_norm_max_epoch_{k:02d}"] = float(part.max())
    out[f"{prefix}test_accuracy"] = float(test_acc[-1])
    out[f"{prefix}grad_norm_max"] = float(step_max.max())
    out[f"{prefix}grad_norm_median_step"] = float(np.median(step_max))
    out[f"{prefix}event_failure_fraction"] = float(np.mean(step_max > clip))
    out[f"{prefix}clipped_row_fraction"] = float(np.mean(norms > clip))
    return out


def _test_data(cfg: Mapping[str, Any]) -> dict[str, Any]:
    from dpsample.datasets import load_sklearn

    data = cfg["data"]
    kw = {k: v for k, v in data.items() if k not in ("source", "name")}
    return load_sklearn(data["name"], **{**kw, "part": "test"})


def measure(execution: Any) -> dict[str, float]:
    """The cell's accuracies per epoch and its gradient-bound event (module docs).

    Args:
        execution: The cell's :class:`dpsample.config.Execution` (a ``dp_sgd`` run of
            a ``[model]`` with ``return_iterates`` and held-out data).

    Returns:
        ``{name: number}`` (non-private diagnostics).

    Examples:
        >>> from dpsample.config import execute, resolve_config
        >>> cfg = resolve_config({
        ...     "job": {"kind": "finder", "name": "dp_sgd", "seed": 0},
        ...     "data": {"source": "sklearn", "name": "digits", "holdout": 0.2},
        ...     "model": {"kind": "mlp", "hidden": [4]},
        ...     "domain": {"kind": "unconstrained"},
        ...     "privacy": {"epsilon": 1.0, "delta": 1e-5},
        ...     "options": {"clip_norm": 1.0, "learning_rate": 1.0, "num_steps": 12,
        ...                 "batch_size": 128, "return_iterates": True}})
        >>> values = measure(execute({**cfg, "output": {"diagnostics": False}}))
        >>> values["clip_bound"], 0 <= values["test_acc_epoch_01"] <= 1
        (1.0, True)
    """
    cfg = execution.config
    if "model" not in cfg or cfg["data"].get("holdout") is None:
        raise ValueError("dp_sgd_002.measure needs a [model] and [data] holdout")
    info = execution.result.info
    if info.iterates is None:
        raise ValueError("dp_sgd_002.measure needs [options] return_iterates = true")
    model = execution.problem.loss_fn
    train = {k: jnp.asarray(v) for k, v in execution.problem.data.items()}
    test = {k: jnp.asarray(v) for k, v in _test_data(cfg).items()}
    x0 = jnp.asarray(execution.plan["x0"], jnp.float64)
    xs = jnp.asarray(info.iterates, jnp.float64)
    clip = float(info.contribution_bound)
    batch = float(info.batch_size)
    values = _trajectory_values(model, train, test, x0, xs, clip, batch)
    ref = nonprivate_iterates(
        model,
        train,
        x0,
        num_steps=int(info.num_steps),
        batch_size=batch,
        learning_rate=float(info.learning_rate),
        key=jax.random.fold_in(
            jax.random.key(NONPRIVATE_KEY), cfg["model"]["init_seed"]
        ),
    )
    values.update(
        _trajectory_values(model, train, test, x0, ref, clip, batch, "nonprivate_")
    )
    values["clip_bound"] = clip
    values["noise_std"] = float(info.noise_std)
    # The iterates were measured; the stored cell keeps the released point only.
    execution.report["info"].pop("iterates", None)
    return values


def pilot_clip_bound(
    *,
    hidden: tuple[int, ...] = (32,),
    holdout: float = 0.2,
    holdout_seed: int = 0,
    init_seed: int = 0,
    num_steps: int = 225,
    batch_size: float = 128.0,
    learning_rate: float = 1.0,
) -> tuple[float, float]:
    """Spec 002 section 5.4's non-private pilot for ``C``.

    One non-private run (:func:`nonprivate_iterates`, the sampling key of
    ``init_seed``) on the training part of digits; the largest per-example gradient
    norm over all its steps and all training rows, and that value rounded up to two
    significant digits (the ``C`` of the experiment).

    Args:
        hidden: The MLP's hidden widths.
        holdout: The held-out fraction of digits.
        holdout_seed: The split's public seed.
        init_seed: The start ``MLP.init(key(init_seed))`` and the sampling key.
        num_steps: ``T``.
        batch_size: The expected batch ``b``.
        learning_rate: ``eta``.

    Returns:
        ``(max_norm, C)``.

    Examples:
        >>> top, c = pilot_clip_bound(hidden=(4,), num_steps=3)
        >>> 0 < top <= c
        True
    """
    from dpsample.datasets import load_sklearn
    from dpsample.models import MLP

    train = load_sklearn(
        "digits", class_index=True, holdout=holdout, holdout_seed=holdout_seed
    )
    model = MLP((64, *hidden, 10))
    x0 = model.init(jax.random.key(init_seed))
    xs = nonprivate_iterates(
        model,
        train,
        x0,
        num_steps=num_steps,
        batch_size=batch_size,
        learning_rate=learning_rate,
        key=jax.random.fold_in(jax.random.key(NONPRIVATE_KEY), init_seed),
    )
    points = jnp.concatenate([x0[None], xs[:-1]])
    top = float(np.asarray(_grad_norms(points, train, model=model)).max())
    scale = 10.0 ** (math.floor(math.log10(top)) - 1)
    return top, math.ceil(top / scale) * scale


# ---------------------------------------------------------------------- tables
def _cells(folder: str) -> list[tuple[dict[str, Any], dict[str, Any], dict[str, Any]]]:
    """``(config, measured values, base row)`` of every finished cell."""
    out = []
    for path in sorted(pathlib.Path(folder, "cells").glob("*.json")):
        if path.name.endswith(".failed.json"):
            continue
        cell = json.loads(path.read_text())
        if cell.get("status") != "ok":
            continue
        cfg = cell["config"]
        base = {
            "arm": _arm(cfg),
            "epsilon": float(cfg["privacy"]["epsilon"]),
            "seed": cfg["job"]["seed"],
        }
        out.append((cfg, cell["measurements"]["values"], base))
    return out


def _arm(cfg: Mapping[str, Any]) -> str:
    return "clipped" if "clip_norm" in cfg.get("options", {}) else "no_clipping"


def _long_table(folder: str) -> pd.DataFrame:
    rows = []
    for _, values, base in _cells(folder):
        for name, value in values.items():
            for prefix, arm in (("nonprivate_", "non_private"), ("", None)):
                if prefix and not name.startswith(prefix):
                    continue
                key = name[len(prefix) :]
                for kind in ("test_acc", "train_acc", "grad_norm_max"):
                    if key.startswith(f"{kind}_epoch_"):
                        rows.append(
                            {
                                **base,
                                **({"arm": arm, "epsilon": math.inf} if arm else {}),
                                "quantity": kind,
                                "epoch": int(key.rsplit("_", 1)[1]),
                                "value": float(value),
                            }
                        )
                break
    table = pd.DataFrame(rows)
    # the non-private run is the same in every cell of a seed: keep one copy
    return table.drop_duplicates(["arm", "epsilon", "seed", "quantity", "epoch"])


def write_tables(folder: str) -> list[str]:
    """The accuracy-per-epoch and gradient-bound tables and figures of a sweep folder.

    Args:
        folder: The sweep's output folder (its ``cells/``).

    Returns:
        The paths written.

    Examples:
        >>> import tarfile, tempfile
        >>> out = tempfile.mkdtemp()
        >>> with tarfile.open("experiments/results/dp_sgd_002/cells.tar.xz") as tar:
        ...     tar.extractall(out, filter="data")
        >>> [p.rsplit("/", 1)[1] for p in write_tables(out)][:2]
        ['accuracy_vs_epoch.csv', 'gradient_bound.csv']
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    long = _long_table(folder)
    stats = (
        long.groupby(["quantity", "arm", "epsilon", "epoch"])["value"]
        .agg(["mean", "min", "max", "count"])
        .reset_index()
    )
    written = []
    acc = stats[stats["quantity"] != "grad_norm_max"]
    path = pathlib.Path(folder, "accuracy_vs_epoch.csv")
    acc.to_csv(path, index=False, float_format="%.4f")
    written.append(str(path))
    grad = _gradient_table(folder)
    path = pathlib.Path(folder, "gradient_bound.csv")
    grad.to_csv(path, index=False, float_format="%.4g")
    written.append(str(path))
    figs = pathlib.Path(folder, "figures")
    figs.mkdir(parents=True, exist_ok=True)
    eps_values = sorted(e for e in acc["epsilon"].unique() if math.isfinite(e))
    colours = {e: f"C{i}" for i, e in enumerate(eps_values)}
    for quantity in ("test_acc", "train_acc"):
        fig = Figure(figsize=(11.0, 4.5), layout="constrained")
        FigureCanvasAgg(fig)
        axes = fig.subplots(1, 2, sharey=True)
        for ax, arm in zip(axes, ("clipped", "no_clipping"), strict=True):
            part = acc[(acc["quantity"] == quantity) & (acc["arm"] == arm)]
            for eps, curve in part.groupby("epsilon"):
                c = colours[eps]
                ax.plot(curve["epoch"], curve["mean"], color=c, label=f"eps {eps:g}")
                ax.fill_between(
                    curve["epoch"], curve["min"], curve["max"], color=c, alpha=0.15
                )
            ref = acc[(acc["quantity"] == quantity) & (acc["arm"] == "non_private")]
            ax.plot(ref["epoch"], ref["mean"], "k--", label="non-private")
            ax.fill_between(ref["epoch"], ref["min"], ref["max"], color="k", alpha=0.1)
            ax.set_title(f"{arm} (Algorithm {1 if arm == 'clipped' else 2})")
            ax.set_xlabel("epoch")
            ax.grid(True, alpha=0.3)
        axes[0].set_ylabel(
            f"{'test' if quantity == 'test_acc' else 'training'} accuracy\n"
            "(non-private diagnostic; mean, min-max band)"
        )
        axes[1].legend(fontsize=7, loc="lower right")
        path = figs / f"accuracy_vs_epoch__{quantity}.png"
        fig.savefig(path, dpi=90)
        written.append(str(path))
    gn = stats[stats["quantity"] == "grad_norm_max"]
    fig = Figure(figsize=(11.0, 4.5), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, 2, sharey=True)
    clip = float(grad["clip_bound"].iloc[0]) if len(grad) else math.nan
    for ax, arm in zip(axes, ("clipped", "no_clipping"), strict=True):
        part = gn[gn["arm"] == arm]
        for eps, curve in part.groupby("epsilon"):
            ax.plot(
                curve["epoch"], curve["max"], color=colours[eps], label=f"eps {eps:g}"
            )
        ref = gn[gn["arm"] == "non_private"]
        ax.plot(ref["epoch"], ref["max"], "k--", label="non-private")
        ax.axhline(clip, color="r", lw=2, label=f"C = {clip:g}")
        ax.set_title(f"{arm}: largest per-example gradient norm in the epoch")
        ax.set_xlabel("epoch")
        ax.set_yscale("log")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("max over steps and rows, max over seeds\n(non-private)")
    axes[1].legend(fontsize=7)
    path = figs / "grad_norm_vs_epoch.png"
    fig.savefig(path, dpi=90)
    written.append(str(path))
    return written


def _gradient_table(folder: str) -> pd.DataFrame:
    rows = []
    for _, v, base in _cells(folder):
        rows.append(
            {
                **base,
                "clip_bound": v["clip_bound"],
                "noise_std": v["noise_std"],
                "grad_norm_max": v["grad_norm_max"],
                "grad_norm_median_step": v["grad_norm_median_step"],
                "event_failure_fraction": v["event_failure_fraction"],
                "clipped_row_fraction": v["clipped_row_fraction"],
                "test_accuracy": v["test_accuracy"],
                "nonprivate_grad_norm_max": v["nonprivate_grad_norm_max"],
                "nonprivate_event_failure_fraction": v[
                    "nonprivate_event_failure_fraction"
                ],
                "nonprivate_test_accuracy": v["nonprivate_test_accuracy"],
            }
        )
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    return (
        table.groupby(["arm", "epsilon"])
        .agg(
            seeds=("seed", "count"),
            clip_bound=("clip_bound", "first"),
            noise_std=("noise_std", "mean"),
            grad_norm_max=("grad_norm_max", "max"),
            grad_norm_median_step=("grad_norm_median_step", "mean"),
            event_failure_fraction=("event_failure_fraction", "mean"),
            event_failure_fraction_max=("event_failure_fraction", "max"),
            clipped_row_fraction=("clipped_row_fraction", "mean"),
            test_accuracy=("test_accuracy", "mean"),
            test_accuracy_min=("test_accuracy", "min"),
            test_accuracy_max=("test_accuracy", "max"),
            nonprivate_grad_norm_max=("nonprivate_grad_norm_max", "max"),
            nonprivate_event_failure_fraction=(
                "nonprivate_event_failure_fraction",
                "mean",
            ),
            nonprivate_test_accuracy=("nonprivate_test_accuracy", "mean"),
        )
        .reset_index()
    )


precision.scope_public(globals())

if __name__ == "__main__":
    import sys

    if sys.argv[1:] == ["--pilot"]:
        print("pilot (max per-example gradient norm, C) =", pilot_clip_bound())
    else:
        for p in write_tables(sys.argv[1]):
            print(p)
