"""Problem of ``experiments/lower_bound.toml`` (seed 000, predictions N3 and N4).

The planted-coin bump instance of spec 000 section 4.3
(:class:`dpsample.datasets.PlantedCoinBumps`): ``k`` coins, one bump
``phi_i(x) = max(0, tau - ||x - v_i||)`` per coin around ``v_i = s_i / (2 sqrt(d))``
(``s_i`` the lexicode of :func:`dpsample.datasets.sign_codewords`, minimum Hamming
distance ``ceil(d/4)``), loss ``f(x; z) = sum_i (z_i - 1) phi_i(x)`` on the unit ball,
``tau = 1/4``; 1-Lipschitz, ``|f| <= tau``.

Two datasets (``[data] params.mode``):

* ``"hard"`` (N3): the hard prior. One coin, drawn from the data key, has bias
  ``1/2 - Delta`` with ``Delta = c_delta sqrt(log k / n)``; the others ``1/2``. Each
  seed draws a new planted coin and a new sample.
* ``"voting"`` (N4): ``m = ceil(votes_scale log k)`` examples vote for one coin
  (drawn from the data key): ``z_coin = 0``, every other flip 1; the other
  ``n - m`` examples are all ones. At ``epsilon = 1``, ``votes_scale = eps m / log k``.

The data are ``{"x": zeros (n, d), "coins": (n, k)}``: the loss reads only the coins;
``x`` is a placeholder that fixes the domain's dimension (``dpsample run`` reads
``d`` from the features ``x``).

``measure`` returns non-private diagnostics of the released point: its exact excess
population risk (``F_P`` in closed form) and its ratio to ``tau sqrt(log k / n)``
(N3), the same for non-private ERM (the empirical argmin coin's centre, the exact
minimiser of ``F_D`` over the ball) on the same sample, whether the point lies in the
planted (or voted) bump, and for the EM over the codewords its explicit upper bound.
For the voting data: the exact success probability of the EM over the codewords and
the ceiling ``min(1, e^{eps m} / k)`` that group privacy puts on the success
probability of every ``eps``-DP algorithm (averaged over the uniformly drawn coin).
"""

from __future__ import annotations

import functools
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from dpsample import datasets

TAU = 0.25


@functools.lru_cache(maxsize=16)
def _code(dim: int) -> np.ndarray:
    return datasets.sign_codewords(dim)


def instance(
    rng_key: Any, n: int, *, dim: int, mode: str = "hard", c_delta: float = 0.5
) -> tuple[datasets.PlantedCoinBumps, int]:
    """The instance of a dataset and the coin to find (planted or voted for)."""
    if mode == "hard":
        inst = datasets.planted_coin_bumps(rng_key, dim, n, c_delta=c_delta, tau=TAU)
        return inst, inst.planted
    if mode == "voting":
        code = _code(dim)
        coin = int(jax.random.randint(rng_key, (), 0, code.shape[0]))
        biases = np.ones(code.shape[0])
        inst = datasets.PlantedCoinBumps(code, biases, TAU, math.ceil(dim / 4))
        return inst, coin
    raise ValueError(f"mode must be 'hard' or 'voting', got {mode!r}")


def votes(k: int, votes_scale: float) -> int:
    """``m = ceil(votes_scale log k)``."""
    return math.ceil(votes_scale * math.log(k))


def make(
    rng_key: Any,
    n: int,
    *,
    dim: int,
    mode: str = "hard",
    c_delta: float = 0.5,
    votes_scale: float = 1.0,
) -> dict[str, Any]:
    """The coins of one dataset (and the placeholder features fixing ``d``)."""
    ikey, skey = jax.random.split(rng_key)
    inst, coin = instance(ikey, n, dim=dim, mode=mode, c_delta=c_delta)
    if mode == "hard":
        coins = inst.sample(skey, n)["coins"]
    else:
        coins = inst.voting_data(n, votes(inst.k, votes_scale), coin)["coins"]
    return {"x": jnp.zeros((n, dim), jnp.float64), "coins": coins}


def loss(dim: int) -> Any:
    """``f(x; z) = sum_i (z_i - 1) phi_i(x)`` over the codewords of ``dim``."""
    code = _code(dim)
    return datasets.PlantedCoinBumps(code, np.full(code.shape[0], 0.5), TAU).loss_fn


def centers(dim: int) -> list[list[float]]:
    """The bump centres, the net of the EM over the codewords (for the spec)."""
    return (_code(dim) / (2.0 * math.sqrt(dim))).tolist()


def measure(execution: Any) -> dict[str, float]:
    """Risks, ratios, success and bounds of one cell (non-private diagnostics)."""
    cfg, report, problem = execution.config, execution.report, execution.problem
    params = dict(cfg["data"].get("params", {}))
    dim, mode = int(params["dim"]), params.get("mode", "hard")
    n = int(np.shape(problem.data["coins"])[0])
    ikey, _ = jax.random.split(jax.random.key(cfg["data"]["seed"]))
    inst, coin = instance(
        ikey, n, dim=dim, mode=mode, c_delta=params.get("c_delta", 0.5)
    )
    # the data the run saw are those of this instance
    assert np.shape(problem.data["coins"])[1] == inst.k
    x = np.asarray(execution.result.value, np.float64)
    eps = float(cfg["privacy"]["epsilon"])
    scale = TAU * math.sqrt(inst.log_k / n)
    zbar = np.asarray(problem.data["coins"], np.float64).mean(axis=0)
    erm = inst.centers[int(np.argmin(zbar))]  # exact argmin of F_D over the ball
    out = {
        "k": float(inst.k),
        "lb_scale": scale,
        "success": float(inst.bump_index(x) == coin),
        "excess_empirical_risk": float(inst.empirical_risk(x, problem.data))
        + (1.0 - float(zbar.min())) * TAU,
    }
    if mode == "hard":
        risk = float(inst.excess_population_risk(x))
        erm_risk = float(inst.excess_population_risk(erm))
        out |= {
            "excess_population_risk": risk,
            "lb_ratio": risk / scale,
            "erm_excess_population_risk": erm_risk,
            "erm_lb_ratio": erm_risk / scale,
        }
    info = report["info"]
    if cfg["job"]["name"] == "net":
        k_inv = float(info["inverse_temperature"])
        log_p = math.log(int(info["net_size"]))
        em = (log_p + 1.0) / k_inv
        # the net holds every centre: no covering term; the values at the centres
        # lie in [-tau, 0], so E max_P (F_P - F_D) <= (tau/2) sqrt(2 log|P| / n)
        out["em_empirical_bound"] = em
        out["em_codeword_bound"] = em + 0.5 * TAU * math.sqrt(2.0 * log_p / n)
        if mode == "voting":
            m = votes(inst.k, params.get("votes_scale", 1.0))
            s = k_inv * TAU * m / n
            out["votes"] = float(m)
            out["success_exact"] = 1.0 / (1.0 + (inst.k - 1) * math.exp(-s))
            out["success_dp_ceiling"] = min(1.0, math.exp(eps * m) / inst.k)
    return out
