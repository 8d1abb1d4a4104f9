"""Problems of ``experiments/utility.toml``: the utility benchmark (issue 24, sec. 1).

Six problems with different landscapes, each a ``[data] source = "module"`` function
(or a bundled dataset), a loss with **true** declared constants (derived by a library
loss, or proved in the docstring below and checked by
:meth:`dpsample.problem.Problem.check_constants` in ``tests/validation``), a held-out
sample the private run never sees, and one measurement hook, :func:`measure`:

* ``logistic`` (smooth, one basin, a GLM): rows uniform on the unit sphere of
  ``R^d``, labels ``+1`` with probability ``sigmoid(<a, w*>)``, ``w* = 2 u``
  (``u = 1/sqrt d``); the library's ``logistic_nonconvex`` with ``reg = 0`` (plain
  logistic loss: ``G = 1``, ``M = 1/4``, ``rho = 1/(6 sqrt 3)``, range ``R``,
  derived by the loss) on ``K = Ball(4)``.
* ``welsch`` (robust regression with planted outliers): rows uniform in the unit
  ball, ``y = <a, w*> + 0.1 N(0, 1)``, ``w* = 1.5 u``, then 10% of the labels
  replaced by ``+-U(2, 3)`` (outliers); the library's ``welsch`` loss with scale 1
  (``G = e^{-1/2}``, ``M = 1``, ``rho = 1.3803``, range ``1/2``, derived) on
  ``K = Ball(3)``.
* ``basins`` (two basins of unequal depth, the deep one behind a barrier from the
  centre of ``K``; any ``d``): ``f(x; z) = -A_s g((x - c_s - z)/s_s) - A_d
  g((x - c_d - z)/s_d)`` with ``g(v) = exp(-||v||^2/2)``, a wide shallow bump
  ``A_s = 0.5``, ``s_s = 0.6`` at ``c_s = 0.8 e_1`` and a narrow deep one
  ``A_d = 1``, ``s_d = 0.25`` at ``c_d = -1.2 e_1``, ``z ~ N(0, 0.05^2 I)``, on
  ``K = Ball(2)``. From the centre the gradient points to the shallow basin
  (value about ``-0.5``); the deep one (about ``-1``) is behind a flat barrier.
  Constants, per bump of height ``A`` and width ``s`` (exact suprema over
  ``R^d``; the sum bounds the sum): ``||grad|| <= A e^{-1/2}/s`` (at ``r = s``);
  Hessian ``A/s^2 e^{-r^2/2s^2}((r/s)^2 uu^T - I)``, operator norm ``<= A/s^2``
  (at ``r = 0``); third derivative ``D^3[h,h,h] = (A/s^3) e^{-t^2/2}(3 w - w^3)``
  with ``w = <v, h>``, ``|3w - w^3| e^{-w^2/2} <= 1.3801`` (its maximum, at
  ``w^2 = 3 - sqrt 6``; the bound 1.3803 of the library's Welsch loss is used),
  so ``rho <= 1.3803 A/s^3`` (the operator norm of a symmetric 3-tensor is its
  largest value on the unit sphere, Banach 1938); range ``A_s + A_d`` (``f`` in
  ``[-(A_s + A_d), 0]``). See :data:`BASINS` and :func:`basins_constants`.
* ``saddle`` (a strict saddle at the centre of ``K``):
  ``experiments/problems/cosine_saddle.py``'s ``f(x; z) = sum_j s_j cos(x_j - z_j)``
  (``s = (+1, -1, ...)``, ``z ~ N(0, 0.1^2 I)``), ``G = sqrt d``, ``M = rho = 1``,
  range ``2 d``, on ``K = Ball(4 sqrt d)`` (the minimisers, with coordinates in
  ``(-pi, pi]``, lie inside).
* ``absolute`` (non-smooth): least absolute deviations ``|y - <a, x>|``, rows
  uniform in the unit ball, ``y = <a, w*> + Laplace(0.1)``, ``w* = 1.5 u``, labels
  clipped to ``[-3, 3]`` by the generator; ``G = 1``, no smoothness, range
  ``3 + R = 6`` on ``K = Ball(3)`` (declared in the spec).
* ``mlp``: the two-layer network of ``examples/mlp_digits.toml`` (64 -> 32 -> 10,
  tanh, cross-entropy, 2,410 parameters) on scikit-learn's digits with 20% held out
  (``[data] holdout = 0.2``, public permutation): only DP-SGD can train it (a model
  declares no constants; the per-example clipping enforces the sensitivity).

**Held-out data.** A generated problem draws ``n + HELDOUT`` examples from the data
key and trains on the first ``n``; the hook draws the same ``n + HELDOUT`` and
evaluates on the last ``HELDOUT`` (never trained on). The MLP's held-out rows are
``load_sklearn("digits", holdout=0.2, part="test")``.

**The reference optimum** (:func:`reference`), computed once per dataset and cached
in the worker's memory and on disk (``runs/utility_reference/``, or
``$DPSAMPLE_UTILITY_CACHE``): the best value of ``F_D`` over ``K`` found by a
**non-private, deterministic multi-start** optimiser: SciPy's L-BFGS-B (exact JAX
gradients, at most :data:`REF_ITERS` iterations, ``gtol = 1e-10``) from
:data:`REF_STARTS` fixed public starts (the centre of ``K``, the problem's landmarks,
the rest uniform in ``K`` from NumPy seed :data:`REF_SEED`), each end point projected
onto ``K`` (the value of a point of ``K`` is an upper bound on ``min_K F_D``), and the
least value kept. ``saddle`` uses the closed form ``min F_D = -sum_j hypot(C_j, S_j)``
(exact); ``absolute`` adds the exact least-absolute-deviations solution of a linear
programme (HiGHS) to the starts; the MLP starts from ``MLP.init(key(s))``,
``s = 0..3``, on its unconstrained domain. Because a multi-start optimum of a non-convex
problem is only an upper bound on the minimum, an excess risk may come out slightly
negative: it is reported as measured, never clipped.

All measurements are **non-private diagnostics**: they read the training data.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from dpsample._src import precision

__all__ = [
    "BASINS",
    "HELDOUT",
    "basins",
    "basins_constants",
    "absolute",
    "make_absolute",
    "make_basins",
    "make_logistic",
    "make_saddle",
    "make_welsch",
    "measure",
    "problem_name",
    "radius",
    "reference",
]

#: Held-out examples of a generated problem (drawn after the ``n`` training ones).
HELDOUT = 2000
#: Starts of the multi-start reference optimiser (landmarks first).
REF_STARTS = 8
#: L-BFGS-B iterations per start.
REF_ITERS = 500
#: NumPy seed of the random starts (public).
REF_SEED = 20261128
#: The MLP's held-out fraction and its permutation seed (``[data] holdout``).
MLP_HOLDOUT = (0.2, 0)

#: The two-bump problem: (height, width, centre along e_1) of the shallow and the
#: deep bump, the data's shift scale ``tau`` and the radius of ``K``.
BASINS = {
    "shallow": (0.5, 0.6, 0.8),
    "deep": (1.0, 0.25, -1.2),
    "tau": 0.05,
    "radius": 2.0,
}
#: The radius of each problem's ``K = Ball(R)`` (``saddle``: ``4 sqrt d``).
RADII = {"logistic": 4.0, "welsch": 3.0, "basins": 2.0, "absolute": 3.0}
_D3_MAX = 1.3803  # >= max_w |3w - w^3| e^{-w^2/2} = 1.38012 (at w^2 = 3 - sqrt 6)


def radius(name: str, d: int) -> float:
    """The radius of the problem's ``K`` (the reference optimum is over this ball).

    Args:
        name: The problem.
        d: Its dimension.

    Returns:
        ``R``.

    Examples:
        >>> from experiments.problems.utility import radius
        >>> radius("saddle", 4), radius("logistic", 4)
        (8.0, 4.0)
    """
    return 4.0 * math.sqrt(d) if name == "saddle" else RADII[name]


# ------------------------------------------------------------------ data
def _unit_ball(key: Any, n: int, d: int) -> Any:
    k1, k2 = jax.random.split(key)
    u = jax.random.normal(k1, (n, d), jnp.float64)
    u = u / jnp.linalg.norm(u, axis=1, keepdims=True)
    return u * jax.random.uniform(k2, (n, 1), jnp.float64) ** (1.0 / d)


def _w_star(d: int, norm: float) -> Any:
    return jnp.full((d,), norm / math.sqrt(d), jnp.float64)


def _logistic_all(key: Any, n: int, d: int) -> dict[str, Any]:
    k1, k2 = jax.random.split(key)
    u = jax.random.normal(k1, (n, d), jnp.float64)
    a = u / jnp.linalg.norm(u, axis=1, keepdims=True)
    p = jax.nn.sigmoid(a @ _w_star(d, 2.0))
    y = jnp.where(jax.random.uniform(k2, (n,), jnp.float64) < p, 1.0, -1.0)
    return {"x": a, "y": y}


def _regression_all(key: Any, n: int, d: int, kind: str) -> dict[str, Any]:
    k1, k2, k3, k4, k5 = jax.random.split(key, 5)
    a = _unit_ball(k1, n, d)
    clean = a @ _w_star(d, 1.5)
    if kind == "welsch":
        y = clean + 0.1 * jax.random.normal(k2, (n,), jnp.float64)
        out = jax.random.uniform(k3, (n,), jnp.float64) < 0.1
        sign = jnp.where(jax.random.uniform(k4, (n,)) < 0.5, -1.0, 1.0)
        wild = sign * jax.random.uniform(k5, (n,), jnp.float64, 2.0, 3.0)
        y = jnp.where(out, wild, y)
    else:
        y = clean + 0.1 * jax.random.laplace(k2, (n,), jnp.float64)
    return {"x": a, "y": jnp.clip(y, -3.0, 3.0)}


def _basins_all(key: Any, n: int, d: int) -> dict[str, Any]:
    z = BASINS["tau"] * jax.random.normal(key, (n, d), jnp.float64)
    return {"x": z, "y": jnp.ones(n, jnp.float64)}


def _saddle_all(key: Any, n: int, d: int) -> dict[str, Any]:
    z = 0.1 * jax.random.normal(key, (n, d), jnp.float64)
    return {"x": z, "y": jnp.ones(n, jnp.float64)}


_ALL = {
    "logistic": _logistic_all,
    "welsch": lambda k, n, d: _regression_all(k, n, d, "welsch"),
    "absolute": lambda k, n, d: _regression_all(k, n, d, "absolute"),
    "basins": _basins_all,
    "saddle": _saddle_all,
}


def _split(name: str, key: Any, n: int, d: int, part: str) -> dict[str, Any]:
    data = _ALL[name](key, n + HELDOUT, d)
    rows = slice(0, n) if part == "train" else slice(n, n + HELDOUT)
    return {k: v[rows] for k, v in data.items()}


def make_logistic(rng_key: Any, n: int, d: int) -> dict[str, Any]:
    """Logistic-model data: rows on the unit sphere, labels in ``{-1, +1}``."""
    return _split("logistic", rng_key, n, d, "train")


def make_welsch(rng_key: Any, n: int, d: int) -> dict[str, Any]:
    """Linear regression with 10% planted outliers, ``|y| <= 3``."""
    return _split("welsch", rng_key, n, d, "train")


def make_absolute(rng_key: Any, n: int, d: int) -> dict[str, Any]:
    """Linear regression with Laplace noise, ``|y| <= 3``."""
    return _split("absolute", rng_key, n, d, "train")


def make_basins(rng_key: Any, n: int, d: int) -> dict[str, Any]:
    """Shifts ``z ~ N(0, tau^2 I_d)`` of the two bumps (``"x"``), unit labels."""
    return _split("basins", rng_key, n, d, "train")


def make_saddle(rng_key: Any, n: int, d: int) -> dict[str, Any]:
    """Phases ``z ~ N(0, 0.1^2 I_d)`` of the cosine saddle (``"x"``), unit labels."""
    return _split("saddle", rng_key, n, d, "train")


# ------------------------------------------------------------------ losses
def basins() -> Any:
    """The two-bump loss ``-A_s g((x - c_s - z)/s_s) - A_d g((x - c_d - z)/s_d)``."""
    (a_s, s_s, c_s), (a_d, s_d, c_d) = BASINS["shallow"], BASINS["deep"]

    def loss_fn(x: Any, example: Any) -> Any:
        e1 = jnp.zeros(x.shape[-1], x.dtype).at[0].set(1.0)
        v = x - example["x"]
        shallow = a_s * jnp.exp(-0.5 * jnp.sum((v - c_s * e1) ** 2) / s_s**2)
        deep = a_d * jnp.exp(-0.5 * jnp.sum((v - c_d * e1) ** 2) / s_d**2)
        return -(shallow + deep)

    return loss_fn


def basins_constants() -> dict[str, float]:
    """The two-bump loss's declared constants (sums of the bumps' exact suprema).

    Returns:
        ``lipschitz``, ``smoothness``, ``hessian_lipschitz``, ``loss_range`` and
        ``loss_floor`` (the loss, minus a sum of bumps of heights ``A``, lies in
        ``[-sum A, 0]``: declaring the floor lets the net clip into that interval,
        so its ``2 B`` route is enforced rather than assumed).

    Examples:
        >>> from experiments.problems.utility import basins_constants
        >>> c = basins_constants()
        >>> [round(c[k], 3) for k in ("lipschitz", "smoothness", "hessian_lipschitz")]
        [2.932, 17.389, 91.534]
        >>> c["loss_range"], c["loss_floor"]
        (1.5, -1.5)
    """
    bumps = (BASINS["shallow"], BASINS["deep"])
    return {
        "lipschitz": sum(a * math.exp(-0.5) / s for a, s, _ in bumps),
        "smoothness": sum(a / s**2 for a, s, _ in bumps),
        "hessian_lipschitz": sum(_D3_MAX * a / s**3 for a, s, _ in bumps),
        "loss_range": sum(a for a, _, _ in bumps),
        "loss_floor": -sum(a for a, _, _ in bumps),
    }


def absolute() -> Any:
    """Least absolute deviations ``|y - <a, x>|`` (non-smooth, ``G = ||a||``)."""

    def loss_fn(x: Any, example: Any) -> Any:
        return jnp.abs(example["y"] - jnp.dot(example["x"], x))

    return loss_fn


# ------------------------------------------------------------------ reference
def problem_name(cfg: Mapping[str, Any]) -> str:
    """The problem a cell configuration runs (``mlp`` or the data function's name)."""
    if cfg["data"].get("source") == "sklearn":
        return "mlp"
    return str(cfg["data"]["function"]).rsplit(":", 1)[-1].removeprefix("make_")


def _cache_dir() -> Path:
    env = os.environ.get("DPSAMPLE_UTILITY_CACHE")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "runs" / "utility_reference"


_REF_CACHE: dict[str, dict[str, Any]] = {}


def _cache_key(cfg: Mapping[str, Any]) -> str:
    # The optimum depends on the loss, not on where its range is declared to lie:
    # loss_floor (declared after the first references were cached) is left out.
    loss = cfg.get("loss")
    if loss is not None:
        loss = {k: v for k, v in loss.items() if k != "loss_floor"}
    what = {
        "data": cfg["data"],
        "loss": loss,
        "model": cfg.get("model"),
        "ref": [REF_STARTS, REF_ITERS, REF_SEED, HELDOUT],
    }
    text = json.dumps(what, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _starts(problem: Any, name: str, domain: Any) -> np.ndarray:
    d = problem.dim
    centre = np.zeros(d)
    marks = [centre]
    if name == "basins":
        for _, _, c in (BASINS["shallow"], BASINS["deep"]):
            marks.append(centre + c * np.eye(d)[0])
    elif name in ("logistic", "welsch", "absolute"):
        marks.append(np.asarray(_w_star(d, 2.0 if name == "logistic" else 1.5)))
    rng = np.random.default_rng(REF_SEED)
    while len(marks) < REF_STARTS:
        u = rng.standard_normal(d)
        u *= domain.radius * rng.uniform() ** (1.0 / d) / np.linalg.norm(u)
        marks.append(centre + u)
    return np.stack(marks)


def _lbfgs(problem: Any, starts: np.ndarray, domain: Any) -> tuple[float, np.ndarray]:
    from scipy.optimize import minimize

    fg = jax.jit(jax.value_and_grad(problem.empirical_risk))

    def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
        v, g = fg(jnp.asarray(x, jnp.float64))
        return float(v), np.asarray(g, np.float64)

    best, best_x = math.inf, starts[0]
    for x0 in starts:
        res = minimize(
            fun,
            x0,
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": REF_ITERS, "gtol": 1e-10, "ftol": 1e-15},
        )
        x = np.asarray(domain.project(jnp.asarray(res.x)), np.float64)
        value = float(problem.empirical_risk(jnp.asarray(x)))
        if value < best:
            best, best_x = value, x
    return best, best_x


def _lad(problem: Any) -> np.ndarray:
    """The exact least-absolute-deviations fit (a linear programme, HiGHS)."""
    from scipy.optimize import linprog
    from scipy.sparse import eye, hstack

    a = np.asarray(problem.data["x"], np.float64)
    y = np.asarray(problem.data["y"], np.float64)
    n, d = a.shape
    # min 1^T (p + q) s.t. a x + p - q = y, p, q >= 0
    c = np.concatenate([np.zeros(d), np.ones(2 * n) / n])
    a_eq = hstack([a, eye(n), -eye(n)], format="csr")
    bounds = [(None, None)] * d + [(0, None)] * (2 * n)
    res = linprog(c, A_eq=a_eq, b_eq=y, bounds=bounds, method="highs")
    if not res.success:
        raise RuntimeError(f"the LAD linear programme failed: {res.message}")
    return np.asarray(res.x[:d], np.float64)


def _saddle_min(problem: Any) -> tuple[float, np.ndarray]:
    z = np.asarray(problem.data["x"], np.float64)
    c, s = np.cos(z).mean(axis=0), np.sin(z).mean(axis=0)
    sign = np.where(np.arange(z.shape[1]) % 2 == 0, 1.0, -1.0)
    # sign_j (C cos x + S sin x) is least at angle(C, S) + pi (sign +1) or angle (-1)
    x = np.arctan2(s, c) + np.where(sign > 0, math.pi, 0.0)
    x = (x + math.pi) % (2.0 * math.pi) - math.pi  # in [-pi, pi)
    return float(-np.sum(np.hypot(c, s))), x


def reference(execution: Any) -> dict[str, Any]:
    """``min_K F_D`` by the non-private multi-start optimiser (cached per dataset).

    ``K`` is the problem's ball (:func:`radius`), also for the cells whose finder
    runs on ``Unconstrained`` (their released point may lie outside ``K``).

    Args:
        execution: A :class:`dpsample.config.Execution` (its problem and config).

    Returns:
        ``{"value": best F_D found, "x": its point (list)}``.
    """
    cfg, problem = execution.config, execution.problem
    key = _cache_key(cfg)
    if key in _REF_CACHE:
        return _REF_CACHE[key]
    path = _cache_dir() / f"{key}.json"
    if path.exists():
        with open(path, encoding="utf-8") as f:
            ref = json.load(f)
    else:
        name = problem_name(cfg)
        if name == "saddle":
            value, x = _saddle_min(problem)
        elif name == "mlp":
            net = problem.loss_fn
            starts = np.stack(
                [np.asarray(net.init(jax.random.key(s))) for s in range(4)]
            )
            value, x = _lbfgs(problem, starts, problem.domain)
        else:
            from dpsample import Ball

            ball = Ball(radius(name, problem.dim))
            starts = _starts(problem, name, ball)
            if name == "absolute":
                lad = np.asarray(ball.project(jnp.asarray(_lad(problem))))
                starts = np.concatenate([lad[None], starts[:-1]])
            value, x = _lbfgs(problem, starts, ball)
        ref = {"value": value, "x": np.asarray(x).tolist()}
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(ref, f)
        os.replace(tmp, path)  # atomic: concurrent workers write the same content
    _REF_CACHE[key] = ref
    return ref


def _heldout(cfg: Mapping[str, Any], problem: Any) -> dict[str, Any]:
    name = problem_name(cfg)
    if name == "mlp":
        from dpsample import datasets

        frac, seed = MLP_HOLDOUT
        return datasets.load_sklearn(
            "digits", class_index=True, holdout=frac, holdout_seed=seed, part="test"
        )
    key = jax.random.key(int(cfg["data"]["seed"]))
    return _split(name, key, problem.n, problem.dim, "test")


def _mean_loss(problem: Any, x: Any, data: Mapping[str, Any]) -> float:
    per = jax.vmap(lambda ex: problem.loss_fn(x, ex))(dict(data))
    return float(jnp.mean(per))


# ------------------------------------------------------------------ the hook
def measure(execution: Any) -> dict[str, float]:
    """Excess empirical risk over the reference optimum and held-out risk.

    Non-private diagnostics of the released point. The cell record already holds
    ``empirical_risk`` and ``gradient_norm`` (``dpsample run``'s diagnostics), the
    spent epsilon (``guarantee.epsilon``) and the wall time (``seconds``).

    Args:
        execution: A :class:`dpsample.config.Execution`.

    Returns:
        ``reference_risk``, ``excess_empirical_risk``, ``heldout_risk``,
        ``heldout_excess`` (held-out risk minus the reference point's) and, for the
        MLP, ``heldout_accuracy``.
    """
    cfg, problem = execution.config, execution.problem
    x = jnp.asarray(execution.result.value, jnp.float64)
    ref = reference(execution)
    x_ref = jnp.asarray(ref["x"], jnp.float64)
    test = _heldout(cfg, problem)
    out = {
        "reference_risk": float(ref["value"]),
        "excess_empirical_risk": float(problem.empirical_risk(x)) - float(ref["value"]),
        "heldout_risk": _mean_loss(problem, x, test),
    }
    out["heldout_excess"] = out["heldout_risk"] - _mean_loss(problem, x_ref, test)
    if problem_name(cfg) == "mlp":
        logits = jax.vmap(lambda a: problem.loss_fn.apply(x, a))(test["x"])
        out["heldout_accuracy"] = float(jnp.mean(jnp.argmax(logits, -1) == test["y"]))
    return out


precision.scope_public(globals())
