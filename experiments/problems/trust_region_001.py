"""Problem of ``experiments/trust_region_001.toml``: seed 001's experiments (spec 001
section 6).

Data (:func:`make`, via :func:`dpsample.datasets.paper_dataset`): unit-norm rows,
labels ``+-1``; ``"covertype"`` and ``"ijcnn"`` are **synthetic** data of the shape of
the paper's Covertype (``p = 54``) and IJCNN (``p = 22``), ``"breast_cancer"`` is
scikit-learn's bundled real data (``569 x 30``).

Losses (:func:`loss`, spec 001 §6.3, ``lambda = 1e-3``):

* ``problem = "A"``: logistic loss plus the non-convex regulariser
  ``lambda sum_j w_j^2/(1 + w_j^2)`` (:func:`dpsample.losses.logistic_nonconvex`);
* ``problem = "B"``: sigmoid loss ``1/(1 + exp(y <x, w>))`` plus ``lambda/2 ||w||^2``
  (:func:`dpsample.losses.sigmoid`, the sign typo fixed).

Their declared constants follow spec 001 §6.3's sensitivity convention: the noise is
calibrated on the **data term** ``G`` and ``M`` (the regulariser is data-independent
and cancels in the difference of two examples' gradients and Hessians, so these bound
the sensitivities ``2G/n`` and ``2 sqrt(p) M/n``), ``rho`` is the whole objective's
and ``B`` is the public ``Delta <= L(0) - 0`` at ``w0 = 0`` (A: ``ln 2``, B: ``1/2``).

``measure`` (all **non-private diagnostics**: they read the training data) computes
the reference optimum ``L*`` of spec 001 §3.4 once per data set and problem (cached
in the process and on disk): ``scipy.optimize.minimize(method="trust-exact")``
(exact gradient and Hessian, ``gtol = 1e-9``) from ``w0 = 0`` and 9 starts
``N(0, I)`` (numpy seed 0), the lowest value kept. It returns the optimality gap
``L(w) - L*``, ``||grad L(w)||``, ``lambda_min(grad^2 L(w))``, the training accuracy
and the reference's, the private run's wall time, its iterations and, at
``epsilon = 1``, the gap along the iterates (``gap_trace_01`` .. ``gap_trace_10``:
the gap of the iterate at ``k/10`` of the iterations run; with equal cost per
iteration, at ``k/10`` of the run's time) and ``warm_wall_time``, a second run of
the same plan by a fresh algorithm object (point discarded). Caveat found in the
run: for ``dp_sgd`` that second run compiles again (its jitted core is keyed on the
new object's oracle), so ``warm_wall_time`` is *not* warm there; ``wall_time`` of
the cells, whose median per finder excludes the worker's first compilation, is the
timing to read (``docs/validation.md``).

``python experiments/problems/trust_region_001.py DIR`` draws the gap-against-time
figures (the analogue of panel (iii) of the paper's figures 4, 6, 8, 10) from the
cells of the sweep folder ``DIR`` into ``DIR/figures/gap_vs_time__*.png`` and prints
the table.
"""

from __future__ import annotations

import hashlib
import math
import os
import pathlib
import tempfile
import time
from typing import Any

import jax
import numpy as np
import scipy.optimize

from dpsample import registry
from dpsample._src import precision
from dpsample.datasets import paper_dataset
from dpsample.losses import Loss, LossConstants, logistic_nonconvex, sigmoid

__all__ = ["CONSTANTS", "REG", "loss", "make", "measure", "reference_optimum"]

#: ``lambda`` of both problems (spec 001 §6.3).
REG = 1e-3

#: Declared constants (spec 001 §6.3): data-term ``G``, ``M``; whole-objective ``rho``;
#: ``B`` = the public ``Delta`` bound ``L(0)``.
CONSTANTS: dict[str, LossConstants] = {
    "A": LossConstants(
        lipschitz=1.0,
        smoothness=0.25,
        hessian_lipschitz=1.0 / (6.0 * math.sqrt(3.0)) + 4.6686 * REG,
        loss_range=math.log(2.0),
        oscillation=None,
    ),
    "B": LossConstants(
        lipschitz=0.25,
        smoothness=1.0 / (6.0 * math.sqrt(3.0)),
        hessian_lipschitz=0.125,
        loss_range=0.5,
        oscillation=None,
    ),
}

#: Seed offsets: the spec's data seeds are the run seeds plus this.
DATA_SEED_OFFSET = 1000
_TRACE_POINTS = 10


def loss(problem: str = "A") -> Loss:
    """Problem A (logistic + non-convex regulariser) or B (sigmoid + L2), with the
    declared constants :data:`CONSTANTS` (whatever the assumptions passed)."""
    if problem not in CONSTANTS:
        raise ValueError(f"Unknown problem {problem!r}; choose 'A' or 'B'")
    base = logistic_nonconvex(REG) if problem == "A" else sigmoid(REG)
    consts = CONSTANTS[problem]

    def constants_fn(*_: Any) -> LossConstants:
        return consts

    return Loss(f"seed001_{problem}", base.loss_fn, constants_fn)


def make(rng_key: Any, n: int, d: int, *, dataset: str) -> dict[str, Any]:
    """``paper_dataset(dataset, rng_key, n)``, its dimension checked against ``d``."""
    data = paper_dataset(dataset, rng_key, n)
    if data["x"].shape[1] != d:
        raise ValueError(f"{dataset} has p = {data['x'].shape[1]}, the spec says {d}")
    return data


# ------------------------------------------------------------- closed forms (numpy)
def _sig(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * z))


class _Objective:
    """``L(w, D)``, its gradient and Hessian in closed form (spec 001 §6.3)."""

    def __init__(self, x: np.ndarray, y: np.ndarray, problem: str) -> None:
        self.x, self.y, self.problem = x, y, problem
        self.yx = y[:, None] * x

    def value(self, w: np.ndarray) -> float:
        z = self.yx @ w
        if self.problem == "A":
            return float(
                np.mean(np.logaddexp(0.0, -z)) + REG * np.sum(w**2 / (1 + w**2))
            )
        return float(np.mean(_sig(-z)) + 0.5 * REG * w @ w)

    def grad(self, w: np.ndarray) -> np.ndarray:
        z = self.yx @ w
        s = _sig(z)
        if self.problem == "A":
            return -self.yx.T @ (1.0 - s) / len(z) + 2 * REG * w / (1 + w**2) ** 2
        return -self.yx.T @ (s * (1.0 - s)) / len(z) + REG * w

    def hess(self, w: np.ndarray) -> np.ndarray:
        z = self.yx @ w
        s = _sig(z)
        if self.problem == "A":
            c = s * (1.0 - s)
            reg = np.diag(2 * REG * (1 - 3 * w**2) / (1 + w**2) ** 3)
        else:
            c = -s * (1.0 - s) * (1.0 - 2.0 * s)
            reg = REG * np.eye(len(w))
        return (self.x.T * c) @ self.x / len(z) + reg

    def accuracy(self, w: np.ndarray) -> float:
        return float(np.mean(self.yx @ w > 0))


_REFERENCES: dict[tuple[str, str], tuple[float, np.ndarray]] = {}


def reference_optimum(
    x: np.ndarray, y: np.ndarray, problem: str
) -> tuple[float, np.ndarray]:
    """``(L*, w*)``: the best of 10 non-private trust-region runs (spec 001 §3.4,
    ``scipy`` ``trust-exact`` from ``0`` and 9 starts ``N(0, I)``), cached by the
    data's digest in the process and in the system's temporary folder (shared by
    the sweep's worker processes; the file holds only the non-private reference)."""
    key = (hashlib.sha1(x.tobytes() + y.tobytes()).hexdigest(), problem)
    disk = pathlib.Path(tempfile.gettempdir(), "dpsample_trust_region_001")
    path = disk / f"{key[0]}_{problem}.npz"
    if key not in _REFERENCES and path.exists():  # another worker's (same data)
        saved = np.load(path)
        _REFERENCES[key] = (float(saved["f"]), saved["w"])
    if key not in _REFERENCES:
        obj = _Objective(x, y, problem)
        rng = np.random.default_rng(0)
        starts = [np.zeros(x.shape[1])]
        starts += [rng.standard_normal(x.shape[1]) for _ in range(9)]
        best = (math.inf, starts[0])
        for w0 in starts:
            res = scipy.optimize.minimize(
                obj.value,
                w0,
                jac=obj.grad,
                hess=obj.hess,
                method="trust-exact",
                options={"gtol": 1e-9, "maxiter": 1000},
            )
            if res.fun < best[0]:
                best = (float(res.fun), np.asarray(res.x))
        _REFERENCES[key] = best
        disk.mkdir(exist_ok=True)
        tmp = disk / f"{key[0]}_{problem}.{os.getpid()}.npz"
        np.savez(tmp, f=best[0], w=best[1])
        os.replace(tmp, path)
    return _REFERENCES[key]


def _warm_seconds(execution: Any) -> float:
    """Wall time of a second run of the same plan by a fresh algorithm object
    (timing only, the point is discarded); it may compile again (``dp_sgd`` does)."""
    alg = registry.create(execution.config["job"]["name"])
    t0 = time.perf_counter()
    out = alg.run(jax.random.key(2**31 - 1), execution.plan, execution.problem.data)
    jax.block_until_ready(out.value)
    return time.perf_counter() - t0


def measure(execution: Any) -> dict[str, float]:
    """Gap, gradient norm, curvature and accuracy of the released point against the
    non-private reference; wall time; the gap trace at ``epsilon = 1``."""
    cfg, result = execution.config, execution.result
    problem = cfg["loss"]["params"]["problem"]
    x = np.asarray(execution.problem.data["x"], np.float64)
    y = np.asarray(execution.problem.data["y"], np.float64)
    obj = _Objective(x, y, problem)
    f_star, w_star = reference_optimum(x, y, problem)
    w = np.asarray(result.value, np.float64)
    info = result.info
    rho = CONSTANTS[problem].hessian_lipschitz
    # the finders' default 0.1 (trust_region_001), or the cell's (the rate grids)
    alpha = float(cfg.get("options", {}).get("alpha", 0.1))
    lam = float(np.linalg.eigvalsh(obj.hess(w))[0])
    grad_norm = float(np.linalg.norm(obj.grad(w)))
    out = {
        "optimality_gap": obj.value(w) - f_star,
        "grad_norm": grad_norm,
        "lambda_min": lam,
        "negative_curvature": max(0.0, -lam),
        # the smallest alpha of which w is an alpha-SOSP (as sosp_rates' S6)
        "alpha_hat": max(grad_norm, max(0.0, -lam) ** 2 / rho),
        "accuracy": obj.accuracy(w),
        "reference_accuracy": obj.accuracy(w_star),
        "reference_risk": f_star,
        "reference_grad_norm": float(np.linalg.norm(obj.grad(w_star))),
        "wall_time": float(execution.report["seconds"]),
        "alpha": alpha,
        "alpha_1_5": 1.5 * alpha,
        "sqrt_rho_alpha": math.sqrt(rho * alpha),
        # the claim at the start point w0 = 0: a bound it already meets is no evidence
        "start_grad_norm": float(np.linalg.norm(obj.grad(np.zeros_like(w)))),
        "start_negative_curvature": max(
            0.0, -float(np.linalg.eigvalsh(obj.hess(np.zeros_like(w)))[0])
        ),
    }
    if "iterations_run" in info:  # DP-TR, DP-STR
        out["iterations"] = float(info["iterations_run"])
        out["converged"] = float(bool(info["converged"]))
    else:
        out["iterations"] = float(info.get("num_steps", np.nan))
    if abs(float(cfg["privacy"]["epsilon"]) - 1.0) < 1e-12 and "iterates" in info:
        xs = np.asarray(info["iterates"], np.float64)
        k = len(xs)
        for j in range(1, _TRACE_POINTS + 1):
            i = max(0, math.ceil(j * k / _TRACE_POINTS) - 1)
            out[f"gap_trace_{j:02d}"] = obj.value(xs[i]) - f_star
        out["warm_wall_time"] = _warm_seconds(execution)
    return out


# ------------------------------------------------------ the gap-against-time figure
def _time_table(folder: str) -> Any:
    """Gap along the iterates at ``epsilon = 1`` (the traced ones, averaged over the
    seeds per iteration count) against an estimated time: the iterations done times
    the median ``wall_time / iterations`` of the finder's cells on the same data set
    and problem (every epsilon and seed: the median leaves out the few cells whose
    ``wall_time`` includes compilation)."""
    import json
    import pathlib

    import pandas as pd

    cells = []
    for path in sorted(pathlib.Path(folder, "cells").glob("*.json")):
        rec = json.loads(path.read_text())
        if rec.get("status") == "ok":
            cfg, vals = rec["config"], rec["measurements"]["values"]
            group = (
                cfg["data"]["params"]["dataset"],
                cfg["loss"]["params"]["problem"],
                cfg["job"]["name"],
            )
            cells.append((group, vals))
    per_iter: dict[tuple[str, str, str], list[float]] = {}
    for group, vals in cells:
        per_iter.setdefault(group, []).append(vals["wall_time"] / vals["iterations"])
    rows = []
    for (dataset, problem, alg), vals in cells:
        if "gap_trace_10" not in vals:
            continue
        step = float(np.median(per_iter[(dataset, problem, alg)]))
        k = int(vals["iterations"])
        done = set()
        for j in range(_TRACE_POINTS, 0, -1):  # one row per distinct iterate
            i = max(0, math.ceil(j * k / _TRACE_POINTS) - 1)
            if i in done:
                continue
            done.add(i)
            rows.append(
                {
                    "dataset": dataset,
                    "problem": problem,
                    "algorithm": alg,
                    "iterations": i + 1,
                    "seconds": (i + 1) * step,
                    "gap": vals[f"gap_trace_{j:02d}"],
                }
            )
    keys = ["dataset", "problem", "algorithm", "iterations"]
    return pd.DataFrame(rows).groupby(keys, as_index=False)[["seconds", "gap"]].mean()


def write_time_figures(folder: str) -> list[str]:
    """Gap against time at ``epsilon = 1`` (see ``_time_table``), one PNG per data
    set and problem, from the cells of the sweep folder, and the table as
    ``gap_vs_time.csv``; returns the PNGs' paths."""
    import pathlib

    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    table = _time_table(folder)
    out = []
    for (dataset, problem), part in table.groupby(["dataset", "problem"]):
        fig = Figure(figsize=(6.0, 4.5), layout="constrained")
        FigureCanvasAgg(fig)
        ax = fig.add_subplot()
        for alg, curve in part.groupby("algorithm"):
            ax.plot(curve["seconds"], curve["gap"], "o-", label=alg)
        ax.set_yscale("log")
        ax.set_xlabel("seconds (median time per iteration x iterations)")
        ax.set_ylabel("optimality gap of the current iterate\n(non-private diagnostic)")
        ax.set_title(f"trust_region_001: epsilon = 1, {dataset}, problem {problem}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
        path = pathlib.Path(folder, "figures", f"gap_vs_time__{dataset}_{problem}.png")
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=100)
        out.append(str(path))
    table.to_csv(pathlib.Path(folder, "gap_vs_time.csv"), index=False)
    return out


precision.scope_public(globals())

if __name__ == "__main__":
    import sys

    for p in write_time_figures(sys.argv[1]):
        print(p)
