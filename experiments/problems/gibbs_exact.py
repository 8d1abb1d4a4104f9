"""Problem of ``experiments/gibbs_exact.toml``: the regularised Gibbs target, exactly.

Seed 000's predictions G1-G4, G6 and G7 (spec 000 section 5.4) are statements about
the exact target ``pi_D(x) ∝ exp(-beta (F_D(x) + mu/2 ||x||^2))`` on the ball
``K = {||x|| <= R}``. In ``d = 1, 2`` that target is computed here by quadrature, and
every quantity the predictions name is an exact (quadrature) number of the cell's
data set.

The loss is 1-Lipschitz, non-convex and non-smooth, with a closed-form population
risk:

* ``f(x; z) = (1/(c sqrt(d))) sum_j |sin(c (x_j - z_j))|`` (``c = freq``), so
  ``||grad f|| <= 1`` (``G = 1``) and ``0 <= f <= sqrt(d)/c``;
* ``z_j ~ N(m, tau^2)`` independently (``m = center``), so with
  ``|sin u| = 2/pi - (4/pi) sum_k cos(2 k u)/(4 k^2 - 1)``,
  ``F_P(x) = (1/(c sqrt(d))) sum_j [2/pi - (4/pi) sum_k e^{-2 k^2 c^2 tau^2}
  cos(2 k c (x_j - m))/(4 k^2 - 1)]`` (the series is summed to machine precision).

``F_D`` and ``F_P`` are sums of one-dimensional functions of the coordinates, so they
are tabulated on the axis grid and added; the disc constraint makes ``pi_D`` itself
non-separable, and every expectation is a sum over the full quadrature grid.

Measured per cell (all **non-private diagnostics**: they read the training data and
the population; the released point's guarantee is stored beside them by the engine):

* G1 ``gibbs_excess_regularised``: ``E_pi F~ - min_K F~`` (``F~ = F_D + mu/2||x||^2``)
  beside the explicit Lemma 5.3 bound ``(d/beta)(1 + log(beta G~ D/d)) + 1/beta``,
  ``G~ = G + mu R`` (spec 000 section 3.4; valid for ``beta G~ D >= d``).
* G2 ``gibbs_excess_empirical``: ``E_pi F_D - min_K F_D`` beside the same bound plus
  ``mu R^2/2``.
* G3 ``generalization_gap``: ``E_{pi_D}[F_P - F_D]`` minus its control variate
  ``E_{pi_P}[F_P - F_D]`` (``pi_P`` the same target on ``F_P``: data-independent, so
  the control has mean zero over data sets and the estimator is unbiased for Lemma
  5.5's left side, with a far smaller variance than the raw gap, also reported as
  ``generalization_gap_raw``), beside ``2 C_LSI beta G^2/n`` with the LSI constant
  the library uses (:func:`dpsample.samplers.gibbs.target_privacy`) and beside the
  printed ``2 G^2 e^{beta G D}/(n mu)``.
* G4 ``exact_privacy_loss``: ``max_x |log pi_D(x)/pi_D'(x)|`` over the neighbours
  ``D'`` that replace any one example by any ``z'`` (``f`` is ``pi/c``-periodic in
  ``z'``, so ``z'`` ranges over a grid of one period), beside ``2 beta G D/n``;
  ``lsi_epsilon`` and ``minami_epsilon``, the library's LSI-zCDP and printed-Minami
  epsilons at the cell's delta, and ``pure_epsilon`` (its oscillation bound).
* G6/KS ``ks_distance``: ``chains`` proximal-sampler chains (the library's kernel,
  :func:`dpsample.samplers.proximal.build_kernel`, GLL rejection RGO) started from
  exact draws of ``pi_D`` and run ``chain_steps`` steps of size
  ``eta = step_c/(beta G)^2`` (the convention of prediction G6); an exact kernel leaves
  ``pi_D`` invariant, so the Kolmogorov-Smirnov distance of the first coordinate to
  the quadrature marginal measures the kernel's bias (``ks_critical``: the 5%
  asymptotic critical value ``1.358/sqrt(chains)``); ``mean_bias_z``: the chains'
  mean against the exact mean, in standard errors.
* ``ks_released``: the same KS distance for ``chains`` independent runs of the cell's
  *released* sampler, exactly as the job ran it (its kernel, planned step size and
  step count, started from ``pi_0``), so it measures what a user receives:
  discretisation bias and incomplete mixing together; ``released_mean_bias_z``
  likewise.
* G7 ``population_excess_risk``: ``E_pi F_P - min_K F_P``, and
  ``optimal_beta_GD``: the ``beta G D`` minimising it over a fine grid of ``beta``
  (``mu = d/(D^2 beta)`` at each), for this data set, with
  ``optimal_beta_GD_over_log_n``.
"""

from __future__ import annotations

import copy
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from dpsample._src import precision
from dpsample.losses import Loss, LossConstants
from dpsample.samplers import chains as chain_runner
from dpsample.samplers import proximal
from dpsample.samplers.gibbs_privacy import target_privacy
from dpsample.samplers.target import GibbsTarget

__all__ = [
    "Quadrature",
    "loss",
    "make",
    "measure",
    "measure_sampler",
    "population_1d",
]

#: Quadrature points per axis (d = 1: trapezoid nodes; d = 2: cell centres).
QUAD_POINTS = {1: 4001, 2: 241}
#: Coarser grid for the worst-case neighbour search of G4 in d = 2.
G4_POINTS = {1: 2001, 2: 81}
#: Replacement examples z' per axis over one period (G4).
G4_REPLACEMENTS = {1: 64, 2: 8}
#: RGO trials per step of the KS chains (fixed budget; P(no acceptance) ~ 2^-20).
RGO_TRIALS = 20
#: beta G D values of the optimum search (G7), up to where the quadrature still
#: resolves pi_D (width about D/(beta G D) against the grid step).
OPTIMUM_GRID = {1: np.geomspace(0.5, 2048.0, 73), 2: np.geomspace(0.5, 128.0, 49)}


def _psi(u: Any, freq: float) -> Any:
    return jnp.abs(jnp.sin(freq * u)) / freq


def loss(freq: float = 2.0) -> Loss:
    """``f(x; z) = (1/sqrt(d)) sum_j |sin(c (x_j - z_j))|/c``: 1-Lipschitz, non-convex.

    The example's ``"x"`` is ``z``; ``"y"`` is not used. Constants (exact, any
    domain): ``G = 1``, ``loss_range = sqrt(d)/c``.
    """
    freq = float(freq)

    def loss_fn(x: Any, example: Any) -> Any:
        d = x.shape[-1]
        return jnp.sum(_psi(x - example["x"], freq)) / math.sqrt(d)

    def constants(
        feature_bound: float, radius: float | None, label_bound: float, dim: int | None
    ) -> LossConstants:
        if dim is None:
            raise ValueError("the sine loss's range needs the dimension")
        rng = math.sqrt(dim) / freq
        return LossConstants(1.0, None, None, rng, rng)

    return Loss("abs_sine", loss_fn, constants)


def make(
    rng_key: Any,
    n: int,
    d: int,
    *,
    center: float = 0.3,
    tau: float = 0.5,
    freq: float = 2.0,
    step_c: float = 0.03,
    chains: int = 1000,
    chain_steps: int = 20,
) -> dict[str, Any]:
    """``n`` examples ``z ~ N(center 1, tau^2 I_d)`` (``"x"``) and unit labels.

    ``freq`` must match the loss's; ``step_c``, ``chains`` and ``chain_steps`` are read
    by :func:`measure` (the sampler check), not here.
    """
    if d not in QUAD_POINTS:
        raise ValueError(f"quadrature is implemented for d = 1, 2; got d = {d}")
    del freq, step_c, chains, chain_steps
    z = center + tau * jax.random.normal(rng_key, (n, d), jnp.float64)
    return {"x": z, "y": jnp.ones(n, jnp.float64)}


def population_1d(u: np.ndarray, *, center: float, tau: float, freq: float) -> Any:
    """``E_z |sin(c (u - z))|/c`` for ``z ~ N(center, tau^2)``, in closed form."""
    k = np.arange(1, 200)
    w = np.exp(-2.0 * k**2 * freq**2 * tau**2) / (4.0 * k**2 - 1.0)
    keep = w > 1e-18
    k, w = k[keep], w[keep]
    cos = np.cos(2.0 * freq * np.multiply.outer(u - center, k))
    return (2.0 / np.pi - (4.0 / np.pi) * cos @ w) / freq


class Quadrature:
    """Grid nodes and weights on the ball ``||x|| <= radius`` in ``d = 1, 2``."""

    def __init__(self, d: int, radius: float, points: int) -> None:
        self.d, self.radius = d, radius
        if d == 1:
            self.axis = np.linspace(-radius, radius, points)
            w = np.full(points, self.axis[1] - self.axis[0])
            w[[0, -1]] *= 0.5
            self.index = np.arange(points)[:, None]
            self.weights = w
            self.h = self.axis[1] - self.axis[0]
        else:
            h = 2.0 * radius / points
            self.axis = -radius + h * (np.arange(points) + 0.5)
            i, j = np.meshgrid(np.arange(points), np.arange(points), indexing="ij")
            inside = self.axis[i] ** 2 + self.axis[j] ** 2 <= radius**2
            self.index = np.stack([i[inside], j[inside]], axis=1)
            self.weights = np.full(len(self.index), h * h)
            self.h = h
        self.nodes = self.axis[self.index]

    def separable(self, table: np.ndarray) -> np.ndarray:
        """``sum_j table[..., index_j]``: a sum of axis functions on the nodes."""
        return sum(table[..., self.index[:, j]] for j in range(self.d))

    def gibbs(self, potential: np.ndarray) -> np.ndarray:
        """Normalised weights of ``exp(-potential)`` on the nodes."""
        logw = -potential + np.log(self.weights)
        logw = logw - logw.max(axis=-1, keepdims=True)
        p = np.exp(logw)
        return p / p.sum(axis=-1, keepdims=True)


def _axis_table(axis: np.ndarray, z: np.ndarray, freq: float) -> np.ndarray:
    """``(1/n) sum_i |sin(c (axis - z_ij))|/c`` per coordinate ``j``: shape (d, Q)."""
    return np.stack(
        [
            np.abs(np.sin(freq * (axis[:, None] - z[None, :, j]))).mean(axis=1) / freq
            for j in range(z.shape[1])
        ]
    )


def _separable_sum(quad: Quadrature, tables: np.ndarray) -> np.ndarray:
    return sum(tables[j][quad.index[:, j]] for j in range(quad.d))


def _marginal_cdf(quad: Quadrature, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The first coordinate's CDF, piecewise linear through the grid."""
    if quad.d == 1:
        dens = p / quad.weights  # density at the nodes
        edges = quad.axis
        cdf = np.concatenate([[0.0], np.cumsum(0.5 * (dens[1:] + dens[:-1]) * quad.h)])
        return edges, cdf / cdf[-1]
    mass = np.bincount(quad.index[:, 0], weights=p, minlength=len(quad.axis))
    edges = np.concatenate([quad.axis - 0.5 * quad.h, [quad.axis[-1] + 0.5 * quad.h]])
    return edges, np.concatenate([[0.0], np.cumsum(mass)])


def _exact_draws(
    rng: np.random.Generator, quad: Quadrature, p: np.ndarray, m: int
) -> np.ndarray:
    """``m`` draws of the grid law, jittered within a cell (kept inside the ball)."""
    idx = rng.choice(len(p), size=m, p=p)
    x = quad.nodes[idx] + rng.uniform(-0.5, 0.5, size=(m, quad.d)) * quad.h
    norm = np.linalg.norm(x, axis=1, keepdims=True)
    return np.where(norm > quad.radius, x * (quad.radius / norm), x)


def _ks(samples: np.ndarray, edges: np.ndarray, cdf: np.ndarray) -> float:
    s = np.sort(samples)
    f = np.interp(s, edges, cdf)
    m = len(s)
    return float(max(np.max(np.arange(1, m + 1) / m - f), np.max(f - np.arange(m) / m)))


def _worst_case_loss(
    quad: Quadrature, z: np.ndarray, p: np.ndarray, *, beta: float, freq: float
) -> float:
    """``max_{i, z', x} |log pi_D(x)/pi_D'(x)|``, ``D'`` = ``D`` with ``z_i -> z'``."""
    n, d = z.shape
    s = beta / n / math.sqrt(d)
    r = G4_REPLACEMENTS[d]
    period = np.pi / freq
    reps = np.stack(
        np.meshgrid(*[np.arange(r) * period / r] * d, indexing="ij"), -1
    ).reshape(-1, d)
    # a_i(x), b(x): sqrt(d) times the per-example loss, separable tables
    a_tab = np.abs(np.sin(freq * (quad.axis[None, None, :] - z[:, :, None]))) / freq
    b_tab = np.abs(np.sin(freq * (quad.axis[None, None, :] - reps[:, :, None]))) / freq
    a = sum(a_tab[:, j, quad.index[:, j]] for j in range(d))  # (n, N)
    b = sum(b_tab[:, j, quad.index[:, j]] for j in range(d))  # (r^d, N)
    worst = 0.0
    for lo in range(0, n, 16):
        ai = a[lo : lo + 16]
        # h = a_i - b; log ratio = -s h(x) + log E_pi exp(s h)
        ea, eb = np.exp(s * (ai - ai.max())), np.exp(-s * (b - b.max()))
        log_mgf = np.log((ea * p) @ eb.T) + s * ai.max() - s * b.max()  # (chunk, r^d)
        hmax = (ai[:, None, :] - b[None, :, :]).max(axis=2)
        hmin = (ai[:, None, :] - b[None, :, :]).min(axis=2)
        worst = max(
            worst,
            float(np.max(np.abs(log_mgf - s * hmax))),
            float(np.max(np.abs(log_mgf - s * hmin))),
        )
    return worst


_RUNNERS: dict[Any, Any] = {}


def _runner(problem: Any, steps: int, beta_mu: float) -> Any:
    """A jitted batch of proximal chains, compiled once per shape and ``beta mu``.

    ``pi ∝ exp(-beta F_D - (beta mu/2)||x||^2)`` is run as the target with inverse
    temperature 1, per-example loss ``beta f`` (``beta`` carried in the data, so it is
    an argument, not a constant of the compiled code) and regulariser ``beta mu``
    (``= d/D^2`` for every ``beta`` under the default ``mu``). The kernel's work and
    law are those of the library's kernel on the original target.
    """
    cache = (problem.loss_fn, problem.n, problem.dim, repr(problem.domain), steps)
    cache = (*cache, beta_mu)
    if cache not in _RUNNERS:
        kernel = proximal.build_kernel(num_trials=RGO_TRIALS)
        base_loss = problem.loss_fn

        def scaled(x: Any, example: Any) -> Any:
            return example["beta"] * base_loss(x, example)

        @jax.jit
        def run(keys: Any, x: Any, data: Any, step: Any) -> Any:
            shell = copy.copy(problem)  # the same problem with traced data
            shell.data, shell.loss_fn = data, scaled
            target = GibbsTarget(shell, 1.0, beta_mu)

            def one(k: Any, x: Any) -> Any:
                def body(s: Any, kk: Any) -> tuple[Any, None]:
                    return kernel(kk, s, target, step)[0], None

                keys = jax.random.split(k, steps)
                return jax.lax.scan(body, proximal.init(x, target), keys)[0].position

            return jax.vmap(one)(keys, x)

        _RUNNERS[cache] = run
    return _RUNNERS[cache]


def _chains(
    target: GibbsTarget, x0: np.ndarray, *, step: float, steps: int, seed: int
) -> np.ndarray:
    beta_mu = float(np.round(target.beta * target.mu, 12))
    run = _runner(target.problem, steps, beta_mu)
    data = dict(target.problem.data)
    data["beta"] = jnp.full(target.problem.n, target.beta, jnp.float64)
    keys = jax.random.split(jax.random.key(seed), len(x0))
    return np.asarray(run(keys, jnp.asarray(x0), data, jnp.float64(step)))


def _released_draws(execution: Any, problem: Any, num: int, seed: int) -> np.ndarray:
    """``num`` independent runs of the cell's released sampler, exactly as it ran.

    Each run is what ``Gibbs._run`` does with its plan: a public draw of ``pi_0``
    (:func:`~dpsample.samplers.chains.initial_point`), then the planned kernel for
    the planned ``num_steps`` at the planned step size; only the keys differ. The
    chains run as one batch (:func:`~dpsample.samplers.chains.trace_chains`).
    """
    plan = execution.plan
    kernel = plan.internal["kernel"]
    target = GibbsTarget.create(problem, beta=plan["beta"], mu=plan["mu"])
    init_fn, _ = kernel.build()
    keys = jax.random.split(jax.random.key(seed), num)
    x0 = jnp.stack(
        [chain_runner.initial_point(jax.random.split(k)[0], target) for k in keys]
    )
    run_keys = jnp.stack(
        [jax.random.split(jax.random.split(k)[1], plan["num_steps"]) for k in keys]
    )
    states = jax.vmap(lambda x: init_fn(x, target))(x0)
    _, (positions, _) = chain_runner.trace_chains(
        run_keys, target, states, spec=kernel, step_size=plan["step_size"]
    )
    return np.asarray(positions[:, -1])


class _Cell:
    """A cell's parameters and its exact target's tables on the quadrature grid."""

    def __init__(self, execution: Any) -> None:
        cfg, problem = execution.config, execution.problem
        info = execution.report["info"]
        params = cfg["data"].get("params", {})
        self.center = float(params.get("center", 0.3))
        self.tau = float(params.get("tau", 0.5))
        self.freq = float(params.get("freq", 2.0))
        self.step_c = float(params.get("step_c", 0.03))
        self.chains = int(params.get("chains", 1000))
        self.chain_steps = int(params.get("chain_steps", 20))
        if float(cfg["loss"].get("params", {}).get("freq", 2.0)) != self.freq:
            raise ValueError("[data] params.freq must equal [loss] params.freq")
        self.z = np.asarray(problem.data["x"], np.float64)
        d = self.z.shape[1]
        self.radius = float(cfg["domain"]["radius"])
        self.beta, self.mu = float(info["beta"]), float(info["mu"])
        self.seed = int(cfg["job"].get("seed", 0))
        sq = math.sqrt(d)
        quad = Quadrature(d, self.radius, QUAD_POINTS[d])
        self.quad = quad
        self.fd = _separable_sum(quad, _axis_table(quad.axis, self.z, self.freq)) / sq
        fp_axis = population_1d(
            quad.axis, center=self.center, tau=self.tau, freq=self.freq
        )
        self.fp = _separable_sum(quad, np.stack([fp_axis] * d)) / sq
        self.reg = 0.5 * self.mu * np.sum(quad.nodes**2, axis=1)
        self.p = quad.gibbs(self.beta * (self.fd + self.reg))
        self.pp = quad.gibbs(self.beta * (self.fp + self.reg))

    def at(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``F_D``, ``F_P`` and ``F~ = F_D + mu/2 ||x||^2`` at the points ``x``."""
        d = self.z.shape[1]
        fd = sum(
            _axis_table(x[:, j], self.z[:, j : j + 1], self.freq)[0] for j in range(d)
        ) / math.sqrt(d)
        fp = sum(
            population_1d(x[:, j], center=self.center, tau=self.tau, freq=self.freq)
            for j in range(d)
        ) / math.sqrt(d)
        return fd, fp, fd + 0.5 * self.mu * np.sum(x**2, axis=1)

    def released_values(self, released: np.ndarray) -> dict[str, float]:
        """G1, G2, G3 and G7's measurements for the released sampler's draws.

        The exact target's expectations ``E_pi`` are replaced by means over the
        ``released`` draws (independent runs of the cell's job); the minima and G3's
        control variate are the exact target's, so each ``*_released`` value differs
        from its exact counterpart only through the sampler's law (and Monte Carlo
        error, ``*_released_mcse``).
        """
        fd, fp, ftilde = self.at(released)
        m = len(released)
        control = float(self.pp @ (self.fp - self.fd))
        out = {}
        for name, values, shift in (
            ("gibbs_excess_regularised", ftilde, float((self.fd + self.reg).min())),
            ("gibbs_excess_empirical", fd, float(self.fd.min())),
            ("generalization_gap", fp - fd, control),
            ("population_excess_risk", fp, float(self.fp.min())),
        ):
            out[f"{name}_released"] = float(values.mean()) - shift
            out[f"{name}_released_mcse"] = float(values.std(ddof=1) / math.sqrt(m))
        return out

    def exact_values(self, problem: Any) -> dict[str, float]:
        """G1, G2, G3 and G7's exact (quadrature) values and their explicit bounds."""
        n, d = self.z.shape
        diam, g = 2.0 * self.radius, float(problem.lipschitz)
        beta, mu = self.beta, self.mu
        fd, fp, reg, p, pp = self.fd, self.fp, self.reg, self.p, self.pp
        # G1, G2
        ftilde = fd + reg
        g_tilde = g + mu * self.radius
        lemma_5_3 = (d / beta) * (
            1.0 + math.log(beta * g_tilde * diam / d)
        ) + 1.0 / beta
        lemma_5_3 = lemma_5_3 if beta * g_tilde * diam >= d else math.nan
        # G3
        gap_raw = float(p @ (fp - fd))
        privacy = target_privacy(GibbsTarget.create(problem, beta=beta, mu=mu))
        c_lsi = privacy.lsi_constant[1] if privacy.lsi_constant else math.nan
        return {
            "beta_GD": beta * g * diam,
            "gibbs_excess_regularised": float(p @ ftilde - ftilde.min()),
            "lemma_5_3_bound": lemma_5_3,
            "gibbs_excess_empirical": float(p @ fd - fd.min()),
            "lemma_5_3_empirical_bound": lemma_5_3 + 0.5 * mu * self.radius**2,
            "generalization_gap": gap_raw - float(pp @ (fp - fd)),
            "generalization_gap_raw": gap_raw,
            "lemma_5_5_bound": 2.0 * c_lsi * beta * g**2 / n,
            "lemma_5_5_printed_bound": 2.0
            * g**2
            * math.exp(beta * g * diam)
            / (n * mu),
            "population_excess_risk": float(p @ fp - fp.min()),
        }


def _draw_seeds(cell: _Cell) -> tuple[np.ndarray, int, int]:
    """The KS chains' exact starting draws, their seed and the released runs' seed.

    One generator per cell (the job seed + 7919), drawn in this order by
    :func:`measure` and :func:`measure_released` alike.
    """
    rng = np.random.default_rng(cell.seed + 7919)
    x0 = _exact_draws(rng, cell.quad, cell.p, cell.chains)
    return x0, int(rng.integers(2**31)), int(rng.integers(2**31))


def _released_part(execution: Any, cell: _Cell, seed: int) -> dict[str, float]:
    """The released sampler itself (the cell's job: its kernel, step size and step
    count, from ``pi_0``): ``chains`` independent runs against the same quadrature
    (KS, mean bias) and in G1, G2, G3 and G7's measurements."""
    released = _released_draws(execution, execution.problem, cell.chains, seed=seed)
    edges, cdf = _marginal_cdf(cell.quad, cell.p)
    released_z = (
        float(released[:, 0].mean()) - float(cell.p @ cell.quad.nodes[:, 0])
    ) / (float(np.std(released[:, 0])) / math.sqrt(cell.chains))
    return {
        "ks_released": _ks(released[:, 0], edges, cdf),
        "released_mean_bias_z": released_z,
        "released_abs_mean_bias_z": abs(released_z),
        **cell.released_values(released),
    }


def measure_sampler(execution: Any) -> dict[str, float]:
    """G1, G2, G3 and G7 for the exact target and for the released sampler.

    The hook of ``experiments/gibbs_released.toml`` (issue 26 item 4): the exact
    values and bounds of :func:`measure` (quadrature), the same measurements over
    ``chains`` independent runs of the cell's released job (``*_released``), and the
    released draws' KS distance to the quadrature marginal. It leaves out
    :func:`measure`'s G4 neighbour search, G7 optimum search and kernel chains (the
    exact target's own properties, unchanged by the sampler); the released draws use
    the generator and order of :func:`measure`, so both hooks give the same
    ``*_released`` values for the same cell.
    """
    cell = _Cell(execution)
    return {
        **cell.exact_values(execution.problem),
        **_released_part(execution, cell, _draw_seeds(cell)[2]),
        "ks_critical": 1.358 / math.sqrt(cell.chains),
    }


def measure(execution: Any) -> dict[str, float]:
    """The exact-target quantities of G1-G4, G6, G7 and the sampler's KS check."""
    cfg, problem = execution.config, execution.problem
    cell = _Cell(execution)
    freq = cell.freq
    step_c, chains, chain_steps = cell.step_c, cell.chains, cell.chain_steps
    z = cell.z
    n, d = z.shape
    radius = cell.radius
    diam, g = 2.0 * radius, float(problem.lipschitz)
    beta, mu = cell.beta, cell.mu
    delta = float(cfg["privacy"]["delta"])
    sq = math.sqrt(d)
    quad, fd, fp, p = cell.quad, cell.fd, cell.fp, cell.p

    exact = cell.exact_values(problem)
    privacy = target_privacy(GibbsTarget.create(problem, beta=beta, mu=mu))
    eps = privacy.epsilons(delta)
    # G7: the population risk over beta on this data set
    opt = []
    for bgd in OPTIMUM_GRID[d]:
        b = bgd / (g * diam)
        m_b = d / (diam**2 * b)
        q = quad.gibbs(b * (fd + 0.5 * m_b * np.sum(quad.nodes**2, axis=1)))
        opt.append(float(q @ fp))
    best = float(OPTIMUM_GRID[d][int(np.argmin(opt))])
    # G4 on a (possibly) coarser grid
    q4 = Quadrature(d, radius, G4_POINTS[d])
    fd4 = _separable_sum(q4, _axis_table(q4.axis, z, freq)) / sq
    p4 = q4.gibbs(beta * (fd4 + 0.5 * mu * np.sum(q4.nodes**2, axis=1)))
    loss_exact = _worst_case_loss(q4, z, p4, beta=beta, freq=freq)
    # G6 / KS: the library's proximal kernel from exact draws of pi_D
    x0, chain_seed, released_seed = _draw_seeds(cell)
    target = GibbsTarget.create(problem, beta=beta, mu=mu)
    step = step_c / (beta * g) ** 2
    xs = _chains(target, x0, step=step, steps=chain_steps, seed=chain_seed)
    edges, cdf = _marginal_cdf(quad, p)
    bias_z = (float(xs[:, 0].mean()) - float(p @ quad.nodes[:, 0])) / (
        float(np.std(xs[:, 0])) / math.sqrt(chains)
    )
    return {
        **exact,
        "exact_privacy_loss": loss_exact,
        "pure_bound_2bGD_over_n": 2.0 * beta * g * diam / n,
        "pure_epsilon": float(eps.get("pure", math.nan)),
        "lsi_epsilon": float(eps.get("lsi_zcdp", math.nan)),
        "minami_epsilon": float(privacy.minami_epsilon(delta)),
        "optimal_beta_GD": best,
        "optimal_beta_GD_over_log_n": best / math.log(n),
        "optimum_at_grid_edge": float(best == OPTIMUM_GRID[d][-1]),
        "ks_distance": _ks(xs[:, 0], edges, cdf),
        "ks_critical": 1.358 / math.sqrt(chains),
        **_released_part(execution, cell, released_seed),
        "mean_bias_z": bias_z,
        "abs_mean_bias_z": abs(bias_z),
        "z_critical": 1.96,
        "step_c": step_c,
    }


precision.scope_public(globals())
