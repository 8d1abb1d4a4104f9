"""Problems of ``experiments/warm_start_003.toml``: warm against cold start (spec 003).

Four families, each with its data function (``[data] source = "module"``), its loss
(``[loss] name = "experiments.problems.warm_start_003:NAME"``, constants declared in
the spec) and one measurement hook, :func:`measure`, that dispatches on the loss:

* ``cosine``: ``f(x; z) = -(a/sqrt d) sum_j cos(x_j - z_j)``, ``z ~ N(mu 1, tau^2 I)``
  (:func:`make_cosine`), on ``K = Ball(2 sqrt d)``. Smooth and non-convex (concave
  where ``|x_j - z_j| > pi/2``); exact constants on all of ``R^d``: ``G = a`` (each
  coordinate of the gradient is at most ``a/sqrt d``), ``beta = a/sqrt d``, Hessian
  Lipschitz ``a/sqrt d``, range ``2 a sqrt d``. With ``D = diam K = 4 sqrt d`` the
  products ``beta D`` and ``beta F_0`` do not depend on ``d``, so Corollary 4.3's
  ``L^{2/3} (beta D)^{1/3} abar d^{1/6}`` moves with ``d`` like ``abar d^{1/6}``
  (``d^{2/3}``) and the cold rate ``(F_0 L beta)^{1/3} abar^{2/3}`` like ``d^{1/3}``.
  ``F_D`` (sample means ``C_j``, ``S_j`` of ``cos z``, ``sin z``) and
  ``F_P = -(a/sqrt d) e^{-tau^2/2} sum_j cos(x_j - mu)`` are in closed form, with
  ``min F_D = -(a/sqrt d) sum_j sqrt(C_j^2 + S_j^2)`` (the minimiser, near
  ``mu 1``, lies inside ``K``). The cold start's point ``0`` is not stationary
  (``||grad F_P(0)|| = a e^{-tau^2/2} sin(mu)``). Arms (i) (net warm start, ERM) and
  (iii) (Algorithm 4, population, with Stochastic Spider as the finder on
  ``Unconstrained`` and ``K`` as the sampler's ball).
* ``quasar_glm``: the robust realizable GLM of spec 003 section 5.2 (F2),
  ``f(w; (x, y)) = phi_h(sigma(<w, x>) - y)`` with ``sigma(t) = t + b sin t``,
  pseudo-Huber ``phi_h(e) = h^2 (sqrt(1 + (e/h)^2) - 1)``, ``x`` uniform on the unit
  sphere and ``y = sigma(<w*, x>)`` with ``w* = 1/sqrt d`` (``||w*|| = 1``)
  (:func:`make_quasar_glm`). ``F_D(w*) = 0 = min F_D``; ``q = (1 - b)/(1 + b)``
  quasar-convex; ``G = h (1 + b)``, ``beta = (1 + b)^2 + b h``, on ``K = Ball(2)``
  the loss is at most ``h (1 + b) ||w - w*|| <= 3 h (1 + b)``. Arm (ii).
* ``sigmoid`` on scikit-learn's breast-cancer data and ``welsch`` on the planted
  regression of :func:`make_welsch_planted`: the two problems of the former
  ``experiments/warm_vs_cold.py`` (folded into this spec), measured as it measured
  them (gradient norm, gradient mapping, excess risk over a reference minimum).
* ``trig``: the ICML version's synthetic loss (spec 003 section 5.1, F1),
  ``f(w; x) = beta (||w||^2/2 + sin(||w||^2)/2 + <x, w>)`` with ``x`` uniform in the
  unit ball of ``R^d`` (:func:`make_trig`: ``n`` training points; the hook draws the
  25 test points of the same data seed), arm (iv). The cell's job is the **cold**
  DP-SPIDER; the hook runs the **warm** arm on the same data: ``dp_sgd`` (stage A,
  ``eps/4``, ``delta/2``), then ``dp_spider`` from its output (stage B, ``3 eps/4``,
  ``delta/2``), both the library's finders, and composes their guarantees with the
  library's own :meth:`~dpsample.privacy.PrivacyGuarantee.compose` (asserted to be
  at most the cell's ``(eps, delta)``). ``WarmStart`` cannot do this itself: its
  stage A must be a *sampler* with a public bound ``psi`` and ``dp_sgd`` is a
  finder (``ValueError: Expected a sampler``).

Every value :func:`measure` returns is a **non-private diagnostic** of released points.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from dpsample._src import precision

__all__ = [
    "cosine",
    "make_breast_cancer",
    "make_cosine",
    "make_quasar_glm",
    "make_trig",
    "make_welsch_planted",
    "measure",
    "quasar_glm",
    "trig",
]

#: Planted minimiser of the Welsch problem (``experiments/warm_vs_cold.py``).
WSTAR = (2.4, -1.8)
#: The fixed NumPy seed of that problem's data and of the trig arm's start points.
BASE_SEED = 20240217
#: Test points of the trig arm (spec 003 section 5.1: 125 = 100 train + 25 test).
TRIG_TEST = 25
#: The ICML warm arm (spec 003 section 5.1, the authors' script): DP-SGD for 25 steps
#: at learning rate 0.005 with ``eps/4`` (and ``delta/2``), its Poisson batch of
#: expected size ``eps_1 n / (2 sqrt(T_sgd)) = 2.5`` at ``n = 100``, ``eps = 1``
#: (rounded up to 3); DP-SPIDER then runs the rest of the ``T = 100`` steps.
TRIG_WARM = {
    "split": 0.25,
    "sgd_steps": 25,
    "sgd_learning_rate": 0.005,
    "sgd_batch_size": 3,
}
#: The warm arm's key: ``data.seed + TRIG_WARM_KEY_OFFSET`` (never a job's key).
TRIG_WARM_KEY_OFFSET = 7_000_000


# ------------------------------------------------------------------ cosine
def cosine(a: float = 1.0) -> Any:
    """``f(x; z) = -(a/sqrt d) sum_j cos(x_j - z_j)`` (the example's ``"x"`` is z)."""
    a = float(a)

    def loss_fn(x: Any, example: Any) -> Any:
        d = x.shape[-1]
        return -(a / math.sqrt(d)) * jnp.sum(jnp.cos(x - example["x"]))

    return loss_fn


def make_cosine(
    rng_key: Any, n: int, d: int, *, tau: float = 0.5, mu: float = 1.0
) -> dict[str, Any]:
    """``n`` examples ``z ~ N(mu 1, tau^2 I_d)``, unit labels (unused)."""
    z = mu + tau * jax.random.normal(rng_key, (n, d), jnp.float64)
    return {"x": z, "y": jnp.ones(n, jnp.float64)}


def _cosine_measure(execution: Any) -> dict[str, float]:
    cfg, problem = execution.config, execution.problem
    a = float(cfg["loss"].get("params", {}).get("a", 1.0))
    params = cfg["data"].get("params", {})
    tau, mu = float(params.get("tau", 0.5)), float(params.get("mu", 1.0))
    z = np.asarray(problem.data["x"], np.float64)
    d = z.shape[1]
    c, s = np.cos(z).mean(axis=0), np.sin(z).mean(axis=0)
    w = a / math.sqrt(d)
    x = np.asarray(execution.result.value, np.float64)
    grad_d = w * (c * np.sin(x) - s * np.cos(x))
    f_d = -w * np.sum(c * np.cos(x) + s * np.sin(x))
    f_min = -w * np.sum(np.hypot(c, s))
    shrink = math.exp(-(tau**2) / 2.0)
    grad_p = w * shrink * np.sin(x - mu)
    hess_p = w * shrink * np.cos(x - mu)  # diagonal
    rho = float(problem.hessian_lipschitz or w)
    lam = float(hess_p.min())
    return {
        "gradient_norm_train": float(np.linalg.norm(grad_d)),
        "excess_empirical_risk": float(f_d - f_min),
        "gradient_norm_population": float(np.linalg.norm(grad_p)),
        "excess_population_risk": float(w * shrink * np.sum(1.0 - np.cos(x - mu))),
        "alpha_hat_population": max(
            float(np.linalg.norm(grad_p)), max(0.0, -lam) ** 2 / rho
        ),
    }


# ------------------------------------------------------------------ quasar GLM
def quasar_glm(b: float = 0.5, h: float = 1.0) -> Any:
    """``phi_h(sigma(<w, x>) - y)``, ``sigma(t) = t + b sin t``, pseudo-Huber ``h``."""
    b, h = float(b), float(h)

    def loss_fn(w: Any, example: Any) -> Any:
        t = jnp.dot(example["x"], w)
        e = t + b * jnp.sin(t) - example["y"]
        return h**2 * (jnp.sqrt(1.0 + (e / h) ** 2) - 1.0)

    return loss_fn


def make_quasar_glm(rng_key: Any, n: int, d: int, *, b: float = 0.5) -> dict[str, Any]:
    """``x`` uniform on the unit sphere, ``y = sigma(<w*, x>)``, ``w* = 1/sqrt d``."""
    u = jax.random.normal(rng_key, (n, d), jnp.float64)
    x = u / jnp.linalg.norm(u, axis=1, keepdims=True)
    t = x @ jnp.full((d,), 1.0 / math.sqrt(d), jnp.float64)
    return {"x": x, "y": t + b * jnp.sin(t)}


# ------------------------------------------------------------------ warm_vs_cold
def make_breast_cancer(rng_key: Any, n: int = 569, d: int = 2) -> dict[str, Any]:
    """scikit-learn's breast-cancer data on the two features of ``warm_vs_cold.py``.

    "mean concave points" and "mean fractal dimension", rows normalised to unit
    norm, labels in ``{-1, +1}``; the key is not used (the same data at every seed).
    """
    from dpsample import datasets

    del rng_key
    data = datasets.load_sklearn(
        "breast_cancer",
        features=["mean concave points", "mean fractal dimension"],
        normalize_rows=True,
    )
    if (int(data["x"].shape[0]), int(data["x"].shape[1])) != (n, d):
        raise ValueError(f"the breast-cancer data are (569, 2), not ({n}, {d})")
    return data


def make_welsch_planted(rng_key: Any, n: int = 2000, d: int = 2) -> dict[str, Any]:
    """The planted Welsch regression of ``warm_vs_cold.py`` (fixed NumPy seed).

    Rows uniform in the unit disc, ``y = <a, w*>``, ``w* = (2.4, -1.8)``; the key is
    not used (the same data at every seed, as in the script).
    """
    del rng_key
    if d != 2:
        raise ValueError("the planted Welsch problem is two-dimensional")
    rng = np.random.default_rng(BASE_SEED)
    u = rng.standard_normal((n, 2))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    a = u * np.sqrt(rng.uniform(size=(n, 1)))
    return {"x": jnp.asarray(a), "y": jnp.asarray(a @ np.asarray(WSTAR))}


def _projected_gd(problem: Any, x: Any, steps: int) -> Any:
    eta = 1.0 / problem.smoothness

    def body(_: Any, w: Any) -> Any:
        return problem.domain.project(w - eta * problem.gradient(w))

    return jax.jit(lambda w: jax.lax.fori_loop(0, steps, body, w))(x)


def _min_over_k(problem: Any) -> float:
    """``min_K F_D``: a grid of spacing 0.02, then projected GD (breast cancer)."""
    from dpsample import nets

    key = (problem.n, float(problem.domain.radius))
    if key not in _MIN_CACHE:
        x_grid, f_grid = nets.net_minimum(problem, spacing=0.02)
        x_ref = _projected_gd(problem, jnp.asarray(x_grid), steps=5000)
        _MIN_CACHE[key] = min(f_grid, float(problem.empirical_risk(x_ref)))
    return _MIN_CACHE[key]


_MIN_CACHE: dict[tuple[int, float], float] = {}


def _fold_measure(execution: Any, name: str) -> dict[str, float]:
    """``warm_vs_cold.py``'s three measures of the released point (non-private)."""
    problem = execution.problem
    x = jnp.asarray(execution.result.value)
    f_ref = 0.0 if name == "welsch" else _min_over_k(problem)
    eta = 0.5 / problem.smoothness
    step = problem.domain.project(x - eta * problem.gradient(x))
    return {
        "gradient_norm_train": float(jnp.linalg.norm(problem.gradient(x))),
        "gradient_mapping": float(jnp.linalg.norm(x - step) / eta),
        "excess_empirical_risk": float(problem.empirical_risk(x)) - f_ref,
    }


# ------------------------------------------------------------------ trig (ICML)
def trig(beta: float = 1.0) -> Any:
    """``beta (||w||^2/2 + sin(||w||^2)/2 + <x, w>)`` (spec 003 section 5.1)."""
    beta = float(beta)

    def loss_fn(w: Any, example: Any) -> Any:
        s = jnp.sum(w * w)
        return beta * (0.5 * s + 0.5 * jnp.sin(s) + jnp.dot(example["x"], w))

    return loss_fn


def _unit_ball(rng_key: Any, n: int, d: int) -> Any:
    k1, k2 = jax.random.split(rng_key)
    u = jax.random.normal(k1, (n, d), jnp.float64)
    u = u / jnp.linalg.norm(u, axis=1, keepdims=True)
    return u * jax.random.uniform(k2, (n, 1), jnp.float64) ** (1.0 / d)


def make_trig(rng_key: Any, n: int, d: int, *, test: int = TRIG_TEST) -> dict:
    """The first ``n`` of ``n + test`` points uniform in the unit ball of ``R^d``."""
    x = _unit_ball(rng_key, n + test, d)
    return {"x": x[:n], "y": jnp.ones(n, jnp.float64)}


def trig_test_points(seed: int, n: int, d: int, test: int = TRIG_TEST) -> Any:
    """The ``test`` held-out points of data seed ``seed`` (never trained on)."""
    return _unit_ball(jax.random.key(seed), n + test, d)[n:]


def trig_start(d: int, radius: float = 2.0) -> list[float]:
    """The public start point: uniform in the radius-2 ball (fixed NumPy seed)."""
    rng = np.random.default_rng(BASE_SEED)
    u = rng.standard_normal(d)
    u /= np.linalg.norm(u)
    return (u * radius * rng.uniform() ** (1.0 / d)).tolist()


def _trig_grad(w: np.ndarray, xbar: np.ndarray, beta: float) -> float:
    s = float(w @ w)
    return float(np.linalg.norm(beta * ((1.0 + math.cos(s)) * w + xbar)))


def _trig_measure(execution: Any) -> dict[str, float]:
    from dpsample.finders import dp_sgd, dp_spider

    cfg, problem, result = execution.config, execution.problem, execution.result
    beta = float(cfg["loss"].get("params", {}).get("beta", 1.0))
    opts = dict(cfg.get("options", {}))
    eps, delta = float(cfg["privacy"]["epsilon"]), float(cfg["privacy"]["delta"])
    seed = int(cfg["data"]["seed"])
    n, d = problem.n, problem.dim
    xbar = np.asarray(problem.data["x"], np.float64).mean(axis=0)
    xbar_test = np.asarray(trig_test_points(seed, n, d), np.float64).mean(axis=0)
    # ---- warm arm: DP-SGD (stage A), then DP-SPIDER from its output (stage B)
    share = TRIG_WARM["split"]
    key_a, key_b = jax.random.split(jax.random.key(seed + TRIG_WARM_KEY_OFFSET))
    x0 = jnp.asarray(opts["x0"], jnp.float64)
    res_a = dp_sgd(
        key_a,
        problem,
        epsilon=share * eps,
        delta=delta / 2.0,
        x0=x0,
        num_steps=int(TRIG_WARM["sgd_steps"]),
        batch_size=int(TRIG_WARM["sgd_batch_size"]),
        learning_rate=float(TRIG_WARM["sgd_learning_rate"]),
        output="last",
    )
    res_b = dp_spider(
        key_b,
        problem,
        epsilon=(1.0 - share) * eps,
        delta=delta / 2.0,
        x0=res_a.value,
        num_steps=int(opts["num_steps"]) - int(TRIG_WARM["sgd_steps"]),
        phase_length=int(opts["phase_length"]),
        learning_rate=float(opts["learning_rate"]),
        anchor_batch_size=int(opts["anchor_batch_size"]),
        variation_batch_size=int(opts["variation_batch_size"]),
        output="last",
    )
    composed = res_a.privacy.compose(res_b.privacy)  # the library's composition
    eps_warm = float(composed.epsilon(delta))
    assert eps_warm <= eps * (1.0 + 1e-9), f"warm arm spends {eps_warm} > {eps}"
    w_warm = np.asarray(res_b.value, np.float64)
    w_cold = np.asarray(result.value, np.float64)
    out = {
        "cold_train_gradient_norm": _trig_grad(w_cold, xbar, beta),
        "cold_test_gradient_norm": _trig_grad(w_cold, xbar_test, beta),
        "warm_train_gradient_norm": _trig_grad(w_warm, xbar, beta),
        "warm_test_gradient_norm": _trig_grad(w_warm, xbar_test, beta),
        "warm_sgd_train_gradient_norm": _trig_grad(
            np.asarray(res_a.value, np.float64), xbar, beta
        ),
        "warm_epsilon_composed": eps_warm,
        "cold_epsilon": float(result.privacy.epsilon(delta)),
    }
    out["warm_over_cold_train"] = (
        out["warm_train_gradient_norm"] / out["cold_train_gradient_norm"]
    )
    out["warm_over_cold_test"] = (
        out["warm_test_gradient_norm"] / out["cold_test_gradient_norm"]
    )
    return out


# ------------------------------------------------------------------ the hook
def measure(execution: Any) -> dict[str, float]:
    """Non-private diagnostics of the released point, by problem family."""
    name = str(execution.config["loss"]["name"]).rsplit(":", 1)[-1]
    if name == "cosine":
        return _cosine_measure(execution)
    if name in ("sigmoid", "welsch"):
        return _fold_measure(execution, name)
    if name == "trig":
        return _trig_measure(execution)
    if name == "quasar_glm":
        x = jnp.asarray(execution.result.value)
        problem = execution.problem
        return {
            "gradient_norm_train": float(jnp.linalg.norm(problem.gradient(x))),
            "excess_empirical_risk": float(problem.empirical_risk(x)),  # min is 0
        }
    raise ValueError(f"no measurement for the loss {name!r}")


precision.scope_public(globals())
