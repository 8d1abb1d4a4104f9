r"""Warm-start ERM meta-algorithm (seed 003, Algorithm 2): sampler, then finder.

Lowy, Ullman and Wright generalise Nesterov's "AGD then GD" trick to privacy: a DP
approximate risk minimiser ``A`` releases ``x_0`` whose excess empirical risk is at
most a **public** number ``psi`` with probability ``>= 1 - zeta``; a DP
stationary-point finder ``B`` whose rate grows with the initial gap then starts from
``x_0`` with its initial-gap parameter set to ``psi`` (never to the realised gap,
which depends on the data). Both stages read all ``n`` examples and the budget is
split between them; the two guarantees compose (adaptively: ``B`` sees ``x_0``).

Here ``A`` is the exponential mechanism over a grid net of the ball ``K``
(:func:`dpsample.nets.exponential_mechanism`, seed 003 section 4 / Definition 4.1)
and ``B`` is DP-SPIDER (:func:`dpsample.finders.dp_spider`, Theorem 3.2) or DP-SGD
(:func:`dpsample.finders.dp_sgd`). :func:`should_warm_start` is the public dispatcher
of spec 003 section 2.9.

Corrections of the paper implemented here (spec 003 section 6):

* The net size is ``(2 eps n / d)^d``-like, not ``(2 D eps n / d)^d``, and the tail
  bound is ``(ln N + t) / k``, not ``ln(N + t) / k`` (B5). We do not use the closed
  form at all: ``psi`` is computed from the size, covering radius and inverse
  temperature of the net that actually runs (:func:`net_warm_start_bound`).
* The exponential mechanism's inverse temperature comes from the declared
  oscillation bound ``min(2GD, 2B, osc)/n`` with the stage's own ``eps_A`` (A3), not
  the total ``eps``.
* The finder is configured from ``psi`` only (A1, B4); its guarantee is the one its
  accountant certifies for the schedule that ran.

References:
    A. Lowy, J. Ullman and S. J. Wright, `How to make the gradients small privately:
    improved rates for differentially private non-convex optimization
    <https://arxiv.org/abs/2402.11173>`_, ICML 2024 (Algorithm 2, Lemma 4.2,
    Theorem 3.2, Corollary 4.3).
    R. Arora, R. Bassily, T. Gonzalez, C. Guzman, M. Menart and E. Ullah, `Faster
    rates of convergence to stationary points in differentially private optimization
    <https://arxiv.org/abs/2206.00846>`_, ICML 2023.
"""

from __future__ import annotations

import importlib
import inspect
import math
from collections.abc import Mapping
from typing import Any, NamedTuple

import jax
import numpy as np

from dpsample import bounds, nets
from dpsample._src import precision, validation
from dpsample.bounds import WarmStartBound, net_warm_start_bound
from dpsample.domains import Ball
from dpsample.errors import BudgetExceededError, MissingConstantError
from dpsample.finders.dp_sgd import dp_sgd
from dpsample.finders.dp_spider import dp_spider
from dpsample.finders.spider_sosp import spider_sosp
from dpsample.pipelines.quasar import dp_sgd_quasar
from dpsample.privacy import (
    NON_PRIVATE_KEY,
    BudgetLedger,
    PrivacyGuarantee,
    PrivateResult,
)
from dpsample.problem import Problem, check_problem
from dpsample.types import PRNGKey

__all__ = [
    "DEFAULT_SPLIT",
    "FINDERS",
    "SAMPLERS",
    "VARIANTS",
    "WarmStartBound",
    "net_warm_start_bound",
    "should_warm_start",
    "theorem_3_2_stationarity_bound",
    "warm_start",
]

DEFAULT_SPLIT = 0.5
"""Fraction of ``epsilon`` given to the warm start (Algorithm 2: ``eps/2`` each)."""

SAMPLERS = ("net", "gibbs", "quasar_sgd")
"""Warm starts available: ``"net"`` (exponential mechanism over a grid net),
``"gibbs"`` (the regularised Gibbs sampler, :func:`dpsample.samplers.gibbs.gibbs`) and
``"quasar_sgd"`` (DP-SGD for quasar-convex losses, :func:`dp_sgd_quasar`)."""

FINDERS = ("dp_spider", "dp_sgd", "spider_sosp")
"""Finders available as stage ``B`` (``"spider_sosp"``: the second-order variant)."""

VARIANTS = ("erm", "population")
"""``"erm"`` (Algorithm 2, both stages on all ``n``) or ``"population"``
(Algorithm 4 with disjoint halves)."""

# The stage-B options fixed by the pipeline (never forwarded from finder_options).
_RESERVED = ("rng_key", "problem", "epsilon", "delta", "x0", "initial_gap")
# Finder options whose default needs the declared smoothness.
_NEEDS_SMOOTHNESS = {
    "dp_spider": ("num_steps", "phase_length", "learning_rate", "variation_batch_size"),
    "dp_sgd": ("num_steps", "learning_rate"),
    "spider_sosp": (None,),  # its plan always needs smoothness
}
_FINDER_FNS = {"dp_spider": dp_spider, "dp_sgd": dp_sgd, "spider_sosp": spider_sosp}
_SAMPLER_RESERVED = ("rng_key", "problem", "epsilon", "delta", "failure_prob")
_INT_OPTIONS = (
    "num_steps",
    "phase_length",
    "anchor_batch_size",
    "variation_batch_size",
    "batch_size",
    "max_batch_size",
)
_FLOAT_OPTIONS = ("learning_rate", "clip_norm")


def _abar(dim: int, n: int, epsilon: float, delta: float) -> float:
    return math.sqrt(dim * math.log(1.0 / delta)) / (epsilon * n)


def theorem_3_2_stationarity_bound(
    *,
    lipschitz: float,
    smoothness: float,
    initial_gap: float,
    dim: int,
    n: int,
    epsilon: float,
    delta: float,
    failure_prob: float = 0.0,
) -> float:
    r"""Theorem 3.2 / Lemma 3.1 rate shape for DP-SPIDER, absolute constant set to 1.

    .. math::

        (1 - \zeta)\Big(L \bar a + (L \beta \psi)^{1/3} \bar a^{2/3}\Big) + L \zeta,
        \qquad \bar a = \frac{\sqrt{d \ln(1/\delta)}}{\varepsilon n},

    with ``(epsilon, delta)`` the **finder's** budget (spec 003 B4) and ``psi`` its
    public initial gap. With ``failure_prob = 0`` it is Lemma 3.1's cold-start shape
    at ``F_0 = psi``. The theorem is stated with ``≲`` (an unspecified absolute
    constant): this is the rate's shape for plots and comparisons, not a certified
    bound.

    Args:
        lipschitz: ``L``.
        smoothness: ``beta``.
        initial_gap: ``psi`` (or the cold start's public ``F_0``).
        dim: ``d``.
        n: Number of examples.
        epsilon: The finder's epsilon.
        delta: The finder's delta.
        failure_prob: ``zeta``, the probability that ``psi`` fails.

    Returns:
        The rate shape (a float).

    Examples:
        >>> from dpsample.pipelines import theorem_3_2_stationarity_bound
        >>> round(theorem_3_2_stationarity_bound(lipschitz=1.0, smoothness=1.0,
        ...     initial_gap=1.0, dim=1, n=1000, epsilon=1.0, delta=1e-5), 5)
        0.02597
    """
    big_l = validation.positive("lipschitz", lipschitz)
    beta = validation.positive("smoothness", smoothness)
    f0 = validation.nonnegative("initial_gap", initial_gap)
    abar = _abar(
        validation.positive_int("dim", dim),
        validation.positive_int("n", n),
        validation.positive("epsilon", epsilon),
        validation.delta_in_open_unit(delta),
    )
    zeta = validation.probability("failure_prob", failure_prob)
    good = big_l * abar + (big_l * beta * f0) ** (1.0 / 3.0) * abar ** (2.0 / 3.0)
    return (1.0 - zeta) * good + big_l * zeta


def should_warm_start(
    *,
    n: int,
    dim: int,
    epsilon: float,
    delta: float | None = None,
    lipschitz: float | None = None,
    smoothness: float | None = None,
    diameter: float | None = None,
    default_gap: float | None = None,
) -> tuple[bool, str]:
    r"""Public dispatcher of spec 003 section 2.9: warm start or plain finder?

    Coarse rule (the remark after Corollary 4.3, B6): the warm start can help only
    when ``d < eps n``. Finer rule, used when every public constant is given:
    warm-start iff Theorem 3.2's rate shape (:func:`theorem_3_2_stationarity_bound`)
    for the default pipeline beats the cold start's,

    .. math::

        (1 - \zeta)\big(L \bar a_B + (L \beta \psi)^{1/3} \bar a_B^{2/3}\big)
        + L\zeta \;<\; L \bar a + (L \beta F_{0,def})^{1/3} \bar a^{2/3},

    with ``psi`` the public bound of the default net at ``eps_A = eps/2``
    (:func:`~dpsample.bounds.net_warm_start_bound` with covering radius
    ``D d/(eps_A n)``, ``|P| <= (1 + 2D/r)^d`` and ``k = eps_A n / min(2 L D,
    2 F_0,def)``), ``zeta = sqrt(d)/(eps n)``, the finder's ``(eps/2, delta)`` in
    ``abar_B`` and the whole ``(eps, delta)`` in ``abar``. This compares the same
    numbers :func:`warm_start` reports (``stationarity_bound`` and
    ``cold_start_bound``). Spec 003's own finer rule, ``L D sqrt(d) abar <
    F_0,def`` (its Corollary 4.3 shapes without the constants, the split or
    ``zeta``), is quoted in the reason for comparison; it favours the warm start at
    small ``eps n``, where the measured gain vanishes (``docs/choosing_a_pipeline.md``).
    Only public quantities enter (``n``, ``d``, the budget and declared constants),
    never the data, so the decision itself is not a release (spec 003 A1).

    Args:
        n: Number of examples.
        dim: Dimension ``d``.
        epsilon: Total epsilon.
        delta: Total delta (finer rule).
        lipschitz: ``L`` (finer rule).
        smoothness: ``beta`` (finer rule).
        diameter: ``D = diam K`` (finer rule).
        default_gap: Public ``F_0,def >= F_D(x_def) - F_D*`` of the cold start (finer
            rule; e.g. the declared ``loss_range``).

    Returns:
        ``(decision, reason)``: ``True`` to warm-start, and a sentence saying which
        rule decided, with its numbers.

    Raises:
        ValueError: On invalid inputs.

    Examples:
        >>> from dpsample.pipelines import should_warm_start
        >>> should_warm_start(n=1000, dim=2, epsilon=1.0)[0]
        True
        >>> should_warm_start(n=100, dim=200, epsilon=1.0)[0]
        False
        >>> should_warm_start(n=1000, dim=2, epsilon=1.0, delta=1e-5, lipschitz=1.0,
        ...     smoothness=1.0, diameter=2.0, default_gap=0.01)[0]
        False
        >>> should_warm_start(n=10_000, dim=2, epsilon=4.0, delta=1e-5,
        ...     lipschitz=1.0, smoothness=1.0, diameter=2.0, default_gap=2.0)[0]
        True
    """
    n = validation.positive_int("n", n)
    dim = validation.positive_int("dim", dim)
    epsilon = validation.positive("epsilon", epsilon)
    if not dim < epsilon * n:
        return False, (
            f"d = {dim} >= eps n = {epsilon * n:.6g}: the warm start cannot help "
            "(spec 003 B6); run the finder alone with the whole budget"
        )
    finer = {
        "delta": delta,
        "lipschitz": lipschitz,
        "smoothness": smoothness,
        "diameter": diameter,
        "default_gap": default_gap,
    }
    missing = [k for k, v in finer.items() if v is None]
    if missing:
        return True, (
            f"d = {dim} < eps n = {epsilon * n:.6g} (coarse rule only; the finer rule "
            f"needs {', '.join(missing)})"
        )
    delta = validation.delta_in_open_unit(delta)
    big_l = validation.positive("lipschitz", lipschitz)
    beta = validation.positive("smoothness", smoothness)
    diam = validation.positive("diameter", diameter)
    f0 = validation.positive("default_gap", default_gap)
    eps_a = 0.5 * epsilon
    zeta = min(math.sqrt(dim) / (epsilon * n), 0.5)
    if not eps_a * n > dim:
        return False, (
            f"d = {dim} < eps n = {epsilon * n:.6g}, but the default net needs "
            f"eps/2 n > d: run the finder alone"
        )
    radius = diam * dim / (eps_a * n)
    psi = net_warm_start_bound(
        lipschitz=big_l,
        covering_radius=radius,
        log_net_size=dim * math.log1p(2.0 * diam / radius),  # bounds.net_size_bound
        inverse_temperature=eps_a * n / min(2.0 * big_l * diam, 2.0 * f0),
        failure_prob=zeta,
    ).psi
    warm = theorem_3_2_stationarity_bound(
        lipschitz=big_l, smoothness=beta, initial_gap=psi, dim=dim, n=n,
        epsilon=epsilon - eps_a, delta=delta, failure_prob=zeta,
    )  # fmt: skip
    cold = theorem_3_2_stationarity_bound(
        lipschitz=big_l, smoothness=beta, initial_gap=f0, dim=dim, n=n,
        epsilon=epsilon, delta=delta,
    )  # fmt: skip
    abar = _abar(dim, n, epsilon, delta)
    spec_rule = big_l * diam * math.sqrt(dim) * abar < f0
    tail = (
        f" (public psi of the default net {psi:.4g} vs F_0,def {f0:.4g}; spec 003's "
        f"closed-form rule L D sqrt(d) abar < F_0,def says "
        f"{'warm' if spec_rule else 'cold'})"
    )
    if warm < cold:
        return True, (
            f"d = {dim} < eps n = {epsilon * n:.6g} and the warm-start rate shape "
            f"{warm:.4g} < the cold-start rate shape {cold:.4g} (finer rule)" + tail
        )
    return False, (
        f"d = {dim} < eps n = {epsilon * n:.6g}, but the warm-start rate shape "
        f"{warm:.4g} >= the cold-start rate shape {cold:.4g} (finer rule): the "
        "budget split and psi cost more than the smaller gap saves" + tail
    )


def _sampler_ball(problem: Problem, sampler_domain: Ball | None) -> Ball:
    """The public compact ``K`` the warm start searches."""
    if sampler_domain is not None:
        if not isinstance(sampler_domain, Ball):
            raise TypeError(
                f"Expected sampler_domain to be a Ball, got {sampler_domain!r}"
            )
        domain = sampler_domain
        if isinstance(problem.domain, Ball):
            raise ValueError(
                "sampler_domain is for problems on Unconstrained (e.g. with "
                "finder='spider_sosp'); a Ball problem's own domain is K"
            )
    else:
        domain = problem.domain
        if not isinstance(domain, Ball):
            raise ValueError(
                "the warm start needs a public compact K: the problem is on "
                f"{type(domain).__name__}, so pass sampler_domain=Ball(...) (the "
                "declared constants must hold on it, and minimizer_gap must bound "
                "min_K F - inf F)"
            )
    if domain.dim is None:
        domain = domain.with_dim(problem.dim)
    if domain.dim != problem.dim:
        raise ValueError(
            f"domain dimension {domain.dim} != problem dimension {problem.dim}"
        )
    return domain


def _resolve_net(
    ball: Ball,
    *,
    epsilon_a: float,
    n: int,
    spacing: float | None,
    net: nets.GridNet | nets.PointNet | None,
) -> nets.GridNet | nets.PointNet:
    """The public net of stage A (data-independent), with a known covering radius."""
    if net is not None and spacing is not None:
        raise ValueError("Pass either net or spacing, not both")
    if net is not None:
        if not isinstance(net, nets.GridNet | nets.PointNet):
            raise TypeError(
                f"Expected net to be a GridNet or PointNet, got {type(net).__name__}"
            )
        if net.covering_radius is None:
            raise ValueError(
                "psi needs a public covering radius: pass a GridNet, or a PointNet "
                "with covering_radius declared"
            )
        nets.check_net_in_ball(net, ball)  # same checks as the mechanism's
        if isinstance(net, nets.GridNet) and net.radius != ball.radius:
            raise ValueError(
                "the GridNet must cover the whole domain K (same radius) for its "
                "covering radius to bound min_P F_D - min_K F_D"
            )
        return net
    if spacing is not None:
        return nets.grid_net(ball, spacing=spacing)
    d = ball.dim
    assert d is not None
    if not epsilon_a * n > d:
        raise ValueError(
            f"The default net (covering radius D d/(eps_A n)) needs eps_A n > d; got "
            f"eps_A n = {epsilon_a * n:.6g} <= d = {d}. Pass spacing= or net=, or run "
            "the finder alone (see should_warm_start)"
        )
    radius = ball.diameter * d / (epsilon_a * n)
    return nets.grid_net(ball, spacing=2.0 * radius / math.sqrt(d))


def _check_options(
    fn: Any, what: str, options: Mapping[str, Any] | None, reserved: tuple[str, ...]
) -> dict[str, Any]:
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise TypeError(f"Expected {what}_options to be a mapping, got {options!r}")
    options = dict(options)
    params = inspect.signature(fn).parameters
    accepts_kwargs = any(p.kind is p.VAR_KEYWORD for p in params.values())
    valid = sorted(k for k in params if k not in reserved and k != "x0")
    for key in options:
        if key in reserved or key == "x0":
            raise ValueError(
                f"{what}_options may not set {key!r}: the pipeline sets it (each "
                "stage's budget, the warm start and initial_gap = psi)"
            )
        if key not in params and not accepts_kwargs:
            raise ValueError(
                f"{what} has no option {key!r}; valid options: {', '.join(valid)}"
            )
    return options


def _check_finder_options(
    finder: str, options: Mapping[str, Any] | None, problem: Problem
) -> dict[str, Any]:
    """Eager checks of the forwarded options (before any private computation).

    Includes the finders' domain rule: ``project=False`` on a ball without clipping
    is refused here, before stage A runs, not only by the finder at stage B.
    """
    n = problem.n
    options = _check_options(_FINDER_FNS[finder], finder, options, _RESERVED)
    if "project" in options:
        clipped = (
            options.get("clip_norm") is not None
            if finder == "dp_sgd"
            else bool(options.get("clip", False))
        )
        options["project"] = problem.spec.check_projection(
            options["project"], clipped=clipped, name=finder
        )
    if finder == "spider_sosp" and "variant" in options:
        raise ValueError(
            "spider_sosp's variant is set by the pipeline's variant ('erm' -> "
            "'empirical', 'population' -> 'population')"
        )
    for key in _INT_OPTIONS:
        if options.get(key) is not None:
            options[key] = validation.positive_int(key, options[key])
            if key.endswith("batch_size") and key != "max_batch_size":
                if options[key] > n:
                    raise ValueError(f"Expected {key}={options[key]} <= n={n}")
    for key in _FLOAT_OPTIONS:
        if options.get(key) is not None:
            options[key] = validation.positive(key, options[key])
    if "output" in options and options["output"] not in ("random", "last"):
        raise ValueError(
            f"Expected output in ('random', 'last'), got {options['output']!r}"
        )
    return options


def _gibbs_module() -> Any:
    return importlib.import_module("dpsample.samplers.gibbs")


def _sampler_fn(sampler: str) -> Any:
    if sampler == "gibbs":
        return _gibbs_module().gibbs
    if sampler == "quasar_sgd":
        return dp_sgd_quasar
    return nets.exponential_mechanism


class _StageA(NamedTuple):
    x0: Any
    privacy: PrivacyGuarantee
    psi: float
    failure_prob: float
    terms: Any
    info: dict[str, Any]


def _run_net(
    key: PRNGKey,
    problem_a: Problem,
    *,
    eps_a: float,
    the_net: Any,
    zeta: float,
    gap_w: float,
    chunk_size: int | None,
    max_points: int,
    inverse_temperature: float,
) -> _StageA:
    big_l = float(problem_a.lipschitz)  # checked by the caller
    bound = net_warm_start_bound(
        lipschitz=big_l,
        covering_radius=float(the_net.covering_radius),
        log_net_size=math.log(the_net.size()),
        inverse_temperature=inverse_temperature,
        failure_prob=zeta,
        minimizer_gap=gap_w,
    )
    res = nets.exponential_mechanism(
        key,
        problem_a,
        epsilon=eps_a,
        net=the_net,
        chunk_size=chunk_size,
        max_points=max_points,
    )
    if not math.isclose(res.info["inverse_temperature"], inverse_temperature):
        raise RuntimeError("internal error: the net ran at another temperature")
    return _StageA(
        res.value, res.privacy, bound.psi, bound.failure_prob, bound, res.info
    )


def _run_gibbs(
    key: PRNGKey,
    problem_a: Problem,
    ball: Ball,
    *,
    eps_a: float,
    delta_a: float,
    zeta: float,
    gap_w: float,
    options: dict[str, Any],
) -> _StageA:
    res = _gibbs_module().gibbs(key, problem_a, epsilon=eps_a, delta=delta_a, **options)
    info = res.info
    max_norm = ball.max_norm
    min_norm = max(
        0.0, float(np.linalg.norm(np.asarray(ball.center_point))) - ball.radius
    )
    bound = bounds.gibbs_warm_start_bound(
        lipschitz=float(problem_a.lipschitz),
        radius=ball.radius,
        dim=problem_a.dim,
        beta=float(info["beta"]),
        mu=float(info["mu"]),
        failure_prob=zeta,
        max_norm=max_norm,
        min_norm=min_norm,
        tv_slack=float(info["tv_slack"]),
        minimizer_gap=gap_w,
        loss_range=problem_a.loss_range,
    )
    return _StageA(res.value, res.privacy, bound.psi, bound.failure_prob, bound, info)


def _run_quasar(
    key: PRNGKey,
    problem_a: Problem,
    *,
    eps_a: float,
    delta_a: float,
    zeta: float,
    gap_w: float,
    options: dict[str, Any],
) -> _StageA:
    res = dp_sgd_quasar(
        key, problem_a, epsilon=eps_a, delta=delta_a, failure_prob=zeta, **options
    )
    info = res.info
    return _StageA(
        res.value,
        res.privacy,
        info["psi"] + gap_w,
        info["psi_failure_prob"],
        info["psi_terms"],
        info,
    )


def _check_share(
    guarantee: PrivacyGuarantee, epsilon: float, delta: float, stage: str
) -> None:
    """Refuse a stage whose guarantee exceeds its planned ``(epsilon, delta)`` share."""
    if guarantee.epsilon(delta) > epsilon * (1.0 + 1e-9):
        raise RuntimeError(f"internal error: the {stage} overspent its share")


def warm_start(
    rng_key: PRNGKey,
    problem: Problem,
    *,
    epsilon: float,
    delta: float,
    sampler: str = "net",
    finder: str = "dp_spider",
    split: float = DEFAULT_SPLIT,
    variant: str = "erm",
    delta_split: float | None = None,
    failure_prob: float | None = None,
    minimizer_gap: float = 0.0,
    spacing: float | None = None,
    net: nets.GridNet | nets.PointNet | None = None,
    max_points: int = 10**7,
    chunk_size: int | None = None,
    sampler_options: Mapping[str, Any] | None = None,
    finder_options: Mapping[str, Any] | None = None,
    sampler_domain: Ball | None = None,
    declared_psi: float | None = None,
    declared_psi_failure_prob: float | None = None,
    ledger: BudgetLedger | None = None,
    diagnostics: bool = False,
) -> PrivateResult:
    r"""Warm-start pipelines (seed 003 Algorithms 2 and 4): sampler, then finder.

    .. code-block:: text

        x_0    <- A (sampler), budget (eps_A, delta_A)
        psi    <- public bound: Pr[F(x_0) - min_K F > psi] <= zeta
        x_priv <- B (finder) from x_0 with F_0 := psi,  budget (eps_B, delta_B)

    with ``eps_A = split * eps`` and ``eps_B = eps - eps_A``. ``psi`` comes from
    declared constants and the public parameters of the stage that ran, never from
    the data; the finder's initial-gap parameter is ``psi`` (spec 003 A1).

    Warm starts (``sampler``; spec 003 section 2.10 contract: a guarantee with its
    TV slack and a public ``psi`` with its failure probability, in
    :mod:`dpsample.bounds`):

    * ``"net"``: the exponential mechanism over a grid net of ``K``
      (:func:`dpsample.nets.exponential_mechanism`, ``k = eps_A n / osc``), pure
      DP; ``psi = G r + (ln N + ln(1/zeta))/k`` from the net that runs
      (:func:`~dpsample.bounds.net_warm_start_bound`). Its ``delta`` share is
      unused and passed on to the finder.
    * ``"gibbs"``: one sample of the regularised Gibbs target
      :math:`\propto e^{-\beta(F_D + \mu\|x\|^2/2)}` on ``K``
      (:func:`dpsample.samplers.gibbs.gibbs`, default the proximal sampler with its
      proven TV schedule); ``psi`` by the volume argument
      (:func:`~dpsample.bounds.gibbs_warm_start_bound`, derived in its docstring and
      in ``docs/warm_start.md``), failing with probability ``zeta/2 + tau`` (``tau``
      the schedule's TV bound). Projected Langevin has no TV bound to the target,
      so it needs a ``declared_psi``.
    * ``"quasar_sgd"``: seed 003 Algorithm 3 (best of ``k`` DP-SGD runs, selected by
      the exponential mechanism) for losses declared ``q``-quasar-convex
      (``sampler_options={"quasar_convexity": q}``); see :func:`dp_sgd_quasar`.

    Finders (``finder``): ``"dp_spider"`` (Theorem 3.2), ``"dp_sgd"``, and
    ``"spider_sosp"`` (the second-order variant, spec 003 section 2.6, with seed
    000's Stochastic Spider + AboveThreshold in the role of DP-SPIDER-SOSP; it runs
    on ``Unconstrained``, so pass the warm start's ``sampler_domain``).

    Variants (``variant``):

    * ``"erm"`` (Algorithm 2): both stages read all ``n`` examples; ``psi`` bounds the
      excess empirical risk.
    * ``"population"`` (Algorithm 4, spec 003 section 2.7's safe mode): a public
      random permutation splits the data into halves ``D_1`` (the sampler) and
      ``D_2`` (the finder; ``spider_sosp`` runs its own population variant on it).
      ``psi`` bounds the population excess risk ``F(x_0) - min_K F`` by the
      sampler's bound on ``D_1`` plus twice the uniform deviation
      (:func:`~dpsample.bounds.uniform_deviation_bound`, Lemma E.3's argument), and
      the finder on ``D_2`` is configured with ``psi + 2 U(|D_2|)``. The budget is
      split as in Algorithm 2.

    Budget: ``split`` of ``epsilon`` to the sampler (default ``1/2``). ``delta``:
    the net sampler's share is ``0``; the others get ``delta_split * delta``
    (default ``1/2``). Both stages are charged to a
    :class:`~dpsample.privacy.BudgetLedger` (``ledger`` or a fresh one) before
    either runs; if it would be exceeded,
    :class:`~dpsample.errors.BudgetExceededError` is raised and nothing runs.

    Privacy:
        Replace-one neighbours (``problem.relation``); every sensitivity comes from
        declared constants. The sampler's guarantee (exact, with its TV slack) and
        the finder's (its accountant, for the schedule that ran; the schedule
        depends only on public numbers including ``psi``) compose adaptively into
        ``privacy`` (``info["privacy_total"]``, the tightest of the PLD/RDP/pure/
        zCDP routes), which covers the released pair ``(x_0, x_priv)`` and is at
        most ``(epsilon, delta)`` by basic composition. In the population variant
        the sequential composition is returned (valid for any neighbours);
        ``info["epsilon_total_parallel"]`` also reports the parallel composition
        ``max(eps_A(delta), eps_B(delta))``, valid because a replaced example lies
        in one half with a fixed, data-independent split. ``zeta`` and ``psi``
        affect utility only.

    Args:
        rng_key: A JAX PRNG key (split internally, never reused).
        problem: The :class:`~dpsample.problem.Problem`: on a
            :class:`~dpsample.domains.Ball` ``K``, or on ``Unconstrained`` with a
            ``sampler_domain``; with declared ``lipschitz`` (and ``smoothness``,
            ``hessian_lipschitz``, ``loss_range`` as the finder needs).
        epsilon: Total epsilon ``> 0``.
        delta: Total delta in ``(0, 1)``.
        sampler: One of :data:`SAMPLERS`.
        finder: One of :data:`FINDERS`.
        split: Fraction of ``epsilon`` for the warm start, in ``(0, 1)``.
        variant: One of :data:`VARIANTS`.
        delta_split: Fraction of ``delta`` for a sampler that needs one (default
            ``1/2``; ignored by the pure ``"net"``).
        failure_prob: ``zeta`` of ``psi``; default ``sqrt(d)/(eps n)`` (Theorem 3.2).
        minimizer_gap: Declared ``g_W >= min_K F - inf F`` added to ``psi`` (``0``
            when ``K`` contains a global minimiser or the finder projects onto
            ``K``).
        spacing: Net sampler: grid spacing (default covering radius
            ``D d/(eps_A n)``).
        net: Net sampler: an explicit public net with a covering radius.
        max_points: Net sampler: refuse nets larger than this.
        chunk_size: Net sampler: forwarded to the mechanism.
        sampler_options: Extra keyword arguments of the sampler (``"gibbs"``: e.g.
            ``method``, ``beta``, ``preset``, ``convex``; ``"quasar_sgd"``:
            ``quasar_convexity`` (required), ``num_steps``, ``num_runs``).
        finder_options: Extra keyword arguments of the finder (e.g. ``num_steps``).
        sampler_domain: The public ball ``K`` of the warm start when ``problem``
            is on ``Unconstrained``.
        declared_psi: A public ``psi`` the caller vouches for, replacing the derived
            one (utility only; required for Gibbs with ``method="langevin"``).
        declared_psi_failure_prob: Its failure probability (default ``zeta``).
        ledger: A ledger to charge; default ``BudgetLedger(epsilon, delta)``. Both
            stages are charged before either runs; a stage whose guarantee rests on
            assumptions adds them to its ledger entry once it has run.
        diagnostics: Add ``info["non_private_diagnostics"]``: risks, gradient
            norms, the smallest Hessian eigenvalue (``d <= 200``) and, for the net,
            the realised gap over the net, **computed on the private data and not
            covered by the guarantee** (never release them).

    Returns:
        :class:`~dpsample.privacy.PrivateResult` with ``value`` the finder's output,
        ``privacy`` the composed guarantee and ``info`` with: ``warm_start``
        (``x_0``), ``psi``, ``psi_failure_prob``, ``psi_terms``, ``paper_psi``
        (seed 003's closed form for the net, or ``None``), ``finder_initial_gap``,
        ``epsilon_split``, ``delta_split``, ``privacy_sampler``,
        ``privacy_finder``, ``privacy_total``, ``epsilon_total`` (at ``delta``),
        ``stationarity_bound`` (DP-SPIDER's Theorem 3.2 shape, else ``None``),
        ``cold_start_bound``, ``dispatcher``, ``variant`` (and the split sizes),
        ``sampler_info``, ``finder_info``, ``ledger_stages``.

    Raises:
        ValueError: Invalid budget, split, sampler, finder, variant, options or net
            (the message lists the valid choices; finder option
            ``project=False`` on a ball without clipping); no compact ``K``;
            ``eps_A n <= d`` for the default net; Gibbs Langevin without
            ``declared_psi``.
        TypeError: A non-key ``rng_key``, a non-Problem ``problem``.
        dpsample.errors.MissingConstantError: A constant a stage needs is missing.
        dpsample.errors.BudgetExceededError: The ledger cannot afford the stages.

    Examples:
        >>> import jax, jax.numpy as jnp, dpsample
        >>> from dpsample.pipelines import warm_start
        >>> data = {"z": jnp.linspace(0.2, 0.6, 200)[:, None]}
        >>> prob = dpsample.Problem(lambda x, z: 0.5 * jnp.sum((x - z["z"]) ** 2),
        ...     data, dpsample.Ball(1.0, dim=1), lipschitz=2.0, smoothness=1.0,
        ...     loss_range=2.0)
        >>> res = warm_start(jax.random.key(0), prob, epsilon=2.0, delta=1e-5,
        ...     finder_options={"num_steps": 20, "phase_length": 5,
        ...                     "variation_batch_size": 50})
        >>> res.value.shape, res.info["epsilon_split"]
        ((1,), (1.0, 1.0))
        >>> res.info["psi"] < prob.loss_range, res.privacy.epsilon(1e-5) <= 2.0
        (True, True)
    """
    # ---- eager validation of public inputs, before any private computation ------
    rng_key = validation.check_key(rng_key)
    problem = check_problem(problem)
    epsilon, delta = validation.check_privacy(epsilon, delta)
    if sampler not in SAMPLERS:
        raise ValueError(f"Expected sampler in {SAMPLERS}, got {sampler!r}")
    if finder not in FINDERS:
        raise ValueError(f"Expected finder in {FINDERS}, got {finder!r}")
    if variant not in VARIANTS:
        raise ValueError(f"Expected variant in {VARIANTS}, got {variant!r}")
    split = validation.positive("split", split)
    if not split < 1.0:
        raise ValueError(f"Expected split={split!r} in (0, 1)")
    if delta_split is None:
        delta_frac = 0.0 if sampler == "net" else 0.5
    else:
        delta_frac = validation.delta_in_open_unit(delta_split, name="delta_split")
        if sampler == "net":
            raise ValueError("delta_split does not apply to the pure net sampler")
    if ledger is not None and not isinstance(ledger, BudgetLedger):
        raise TypeError(f"Expected a BudgetLedger, got {type(ledger).__name__}")
    max_points = validation.positive_int("max_points", max_points)
    gap_w = validation.nonnegative("minimizer_gap", minimizer_gap)
    if sampler != "net" and (spacing is not None or net is not None):
        raise ValueError("spacing and net apply to sampler='net' only")
    s_options = _check_options(
        _sampler_fn(sampler), sampler, sampler_options, _SAMPLER_RESERVED
    )
    options = _check_finder_options(finder, finder_options, problem)
    ball = _sampler_ball(problem, sampler_domain)
    if finder == "spider_sosp" and isinstance(problem.domain, Ball):
        raise ValueError(
            "finder='spider_sosp' takes unconstrained steps (seed 000 E20): declare "
            f"the Problem on Unconstrained({problem.dim}) with constants valid on "
            "R^d, and pass the warm start's ball as sampler_domain"
        )
    n, d = problem.n, problem.dim
    big_l = validation.require_constant(
        "lipschitz", problem.lipschitz, needed_for="the warm start's bound psi"
    )
    if finder == "spider_sosp":
        for name in ("smoothness", "hessian_lipschitz"):
            validation.require_constant(
                name, getattr(problem, name), needed_for="spider_sosp's plan"
            )
    elif any(options.get(k) is None for k in _NEEDS_SMOOTHNESS[finder]):
        validation.require_constant(
            "smoothness", problem.smoothness, needed_for=f"{finder}'s default schedule"
        )
    if sampler == "quasar_sgd" and "quasar_convexity" not in s_options:
        raise MissingConstantError(
            "sampler='quasar_sgd' needs the declared quasar-convexity constant: pass "
            "sampler_options={'quasar_convexity': q} with q in (0, 1]"
        )
    if sampler == "gibbs" and declared_psi is None:
        method = s_options.get("method", "proximal")
        if method == "langevin":
            raise ValueError(
                "Gibbs with method='langevin' has no TV bound to the Gibbs target, "
                "so no psi can be derived for it: pass declared_psi= (a public bound "
                "you vouch for) or use method='proximal'"
            )
    if failure_prob is None:
        zeta = math.sqrt(d) / (epsilon * n)
        if not zeta < 1.0:
            raise ValueError(
                f"The default failure_prob sqrt(d)/(eps n) = {zeta:.4g} >= 1; pass "
                "failure_prob= (or run the finder alone: eps n is too small)"
            )
    else:
        zeta = validation.probability("failure_prob", failure_prob, open_left=True)
        if not zeta < 1.0:
            raise ValueError(f"Expected failure_prob={zeta!r} < 1")
    declared = None
    if declared_psi is not None:
        declared = (
            validation.positive("declared_psi", declared_psi),
            zeta
            if declared_psi_failure_prob is None
            else validation.probability(
                "declared_psi_failure_prob", declared_psi_failure_prob
            ),
        )

    eps_a = split * epsilon
    eps_b = epsilon - eps_a
    delta_a = delta_frac * delta
    delta_b = delta - delta_a

    # ---- data split (population variant): public, data-independent --------------
    key_split, key_a, key_b = jax.random.split(rng_key, 3)
    if variant == "population":
        if n < 4:
            raise ValueError(f"The population variant needs n >= 4, got n={n}")
        order = np.asarray(jax.random.permutation(key_split, n))
        n_a = (n + 1) // 2
        data_a = jax.tree.map(lambda leaf: leaf[order[:n_a]], problem.data)
        data_b = jax.tree.map(lambda leaf: leaf[order[n_a:]], problem.data)
        problem_a = problem.replace(data=data_a, domain=ball)
        problem_b = problem.replace(data=data_b)
        zeta_a = zeta / 2.0
    else:
        n_a = n
        problem_a = problem if problem.domain is ball else problem.replace(domain=ball)
        problem_b = problem
        zeta_a = zeta
    if sampler == "gibbs":
        zeta_a = zeta_a / 2.0  # the rest of zeta covers the sampler's TV error

    # ---- stage A's public plan (the net and its temperature) --------------------
    the_net = None
    inverse_temperature = None
    if sampler == "net":
        the_net = _resolve_net(ball, epsilon_a=eps_a, n=n_a, spacing=spacing, net=net)
        if the_net.size() > max_points:
            raise ValueError(
                f"The net has {the_net.size()} points, more than max_points="
                f"{max_points}: the net exponential mechanism costs N n loss "
                "evaluations (exponential in d, spec 003 B20); increase spacing or "
                "raise max_points"
            )
        osc = problem.utility_oscillation()
        if osc is None:
            raise MissingConstantError(
                "The warm start needs an oscillation bound of f(., z) - f(., z') on "
                "K from declared constants (lipschitz, loss_range or oscillation)"
            )
        inverse_temperature = (
            eps_a * n_a / validation.positive("utility_oscillation", osc)
        )

    # ---- budget: charge both stages before either runs (atomic) ----------------
    relation = problem.relation
    if sampler == "net":
        g_sampler_env = PrivacyGuarantee.exponential_mechanism(eps_a, relation=relation)
    else:
        g_sampler_env = PrivacyGuarantee.approx(eps_a, delta_a, relation=relation)
    g_finder_env = PrivacyGuarantee.approx(eps_b, delta_b, relation=relation)
    if ledger is None:
        ledger = BudgetLedger(epsilon=epsilon, delta=delta, relation=relation)
    both = g_sampler_env.compose(g_finder_env)
    if ledger.would_exceed(both):
        raise BudgetExceededError(
            f"warm_start (sampler (eps={eps_a:.6g}, delta={delta_a:g}), finder "
            f"(eps={eps_b:.6g}, delta={delta_b:g})) would bring the ledger to "
            f"epsilon={ledger.total.compose(both).epsilon(ledger.delta):.6g} at "
            f"delta={ledger.delta:g}, over its budget epsilon={ledger.epsilon:g}; "
            "nothing was charged or computed"
        )
    stage_names = (f"warm_start/sampler:{sampler}", f"warm_start/finder:{finder}")
    ledger.charge(stage_names[0], g_sampler_env)
    ledger.charge(stage_names[1], g_finder_env)

    # ---- stage A: the warm start (private) --------------------------------------
    if sampler == "net":
        stage_a = _run_net(
            key_a,
            problem_a,
            eps_a=eps_a,
            the_net=the_net,
            zeta=zeta_a,
            gap_w=gap_w,
            chunk_size=chunk_size,
            max_points=max_points,
            inverse_temperature=inverse_temperature,
        )
    elif sampler == "gibbs":
        stage_a = _run_gibbs(
            key_a,
            problem_a,
            ball,
            eps_a=eps_a,
            delta_a=delta_a,
            zeta=zeta_a,
            gap_w=gap_w,
            options=s_options,
        )
    else:
        stage_a = _run_quasar(
            key_a,
            problem_a,
            eps_a=eps_a,
            delta_a=delta_a,
            zeta=zeta_a,
            gap_w=gap_w,
            options=s_options,
        )
    _check_share(stage_a.privacy, eps_a, delta_a, "sampler")
    if stage_a.privacy.assumptions:  # the envelope holds only under them
        ledger.add_assumptions(stage_names[0], *stage_a.privacy.assumptions)
    if declared is not None:  # the caller's public psi replaces the derived one
        stage_a = stage_a._replace(
            psi=declared[0], failure_prob=declared[1], terms=None
        )
    x0 = stage_a.x0
    psi, psi_fail = stage_a.psi, stage_a.failure_prob
    finder_gap = psi
    deviation = None
    if variant == "population" and declared is None:
        dev_a, dev_b = (
            bounds.uniform_deviation_bound(
                lipschitz=big_l,
                radius=ball.radius,
                dim=d,
                n=half,
                failure_prob=zeta / 4.0,
                loss_range=problem.loss_range,
            )
            for half in (n_a, n - n_a)
        )
        psi = psi + 2.0 * dev_a.bound
        finder_gap = psi + 2.0 * dev_b.bound
        psi_fail = psi_fail + dev_a.failure_prob + dev_b.failure_prob
        deviation = {"sampler_half": dev_a, "finder_half": dev_b}

    # ---- stage B: the finder from x0, configured from psi only (private) -------
    finder_kwargs = dict(options)
    if finder == "spider_sosp":
        finder_kwargs["variant"] = "empirical" if variant == "erm" else "population"
    res_b = _FINDER_FNS[finder](
        key_b,
        problem_b,
        epsilon=eps_b,
        delta=delta_b,
        x0=x0,
        initial_gap=finder_gap,
        **finder_kwargs,
    )
    _check_share(res_b.privacy, eps_b, delta_b, "finder")
    if res_b.privacy.assumptions:
        ledger.add_assumptions(stage_names[1], *res_b.privacy.assumptions)
    total = stage_a.privacy.compose(res_b.privacy)

    # ---- public reporting -------------------------------------------------------
    beta = problem.smoothness
    stationarity = cold = None
    if beta is not None and finder == "dp_spider":
        stationarity = theorem_3_2_stationarity_bound(
            lipschitz=big_l,
            smoothness=beta,
            initial_gap=finder_gap,
            dim=d,
            n=problem_b.n,
            epsilon=eps_b,
            delta=delta_b,
            failure_prob=min(psi_fail, 1.0),
        )
        if problem.loss_range is not None:
            cold = theorem_3_2_stationarity_bound(
                lipschitz=big_l,
                smoothness=beta,
                initial_gap=problem.loss_range,
                dim=d,
                n=n,
                epsilon=epsilon,
                delta=delta,
            )
    ratio = epsilon * n / math.sqrt(d)
    paper_psi = (
        20.0 * big_l * ball.diameter * d / (epsilon * n) * math.log(ratio)
        if sampler == "net" and ratio >= math.e
        else None
    )
    info: dict[str, Any] = {
        "algorithm": "warm_start",
        "sampler": sampler,
        "finder": finder,
        "variant": variant,
        "warm_start": x0,
        "psi": psi,
        "psi_failure_prob": psi_fail,
        "psi_terms": stage_a.terms,
        "psi_source": "declared" if declared is not None else "derived",
        "uniform_deviation": deviation,
        "finder_initial_gap": finder_gap,
        "paper_psi": paper_psi,
        "split": split,
        "epsilon_split": (eps_a, eps_b),
        "delta_split": (delta_a, delta_b),
        "privacy_sampler": stage_a.privacy,
        "privacy_finder": res_b.privacy,
        "privacy_total": total,
        "epsilon_total": total.epsilon(delta),
        "stationarity_bound": stationarity,
        "cold_start_bound": cold,
        "dispatcher": should_warm_start(
            n=n,
            dim=d,
            epsilon=epsilon,
            delta=delta,
            lipschitz=big_l,
            smoothness=beta,
            diameter=ball.diameter,
            default_gap=problem.loss_range,
        ),
        "sampler_info": stage_a.info,
        "finder_info": res_b.info,
        "ledger_stages": [name for name, _ in ledger.stages],
    }
    if "privacy_rests_on" in stage_a.info:
        info["privacy_rests_on"] = "sampler: " + str(stage_a.info["privacy_rests_on"])
    if variant == "population":
        info["split_sizes"] = (n_a, n - n_a)
        info["epsilon_total_parallel"] = max(
            stage_a.privacy.epsilon(delta), res_b.privacy.epsilon(delta)
        )
    if diagnostics:
        info[NON_PRIVATE_KEY] = _diagnostics(
            problem,
            x0,
            res_b.value,
            the_net if variant == "erm" else None,
            chunk_size,
            problem_a,
        )
    return PrivateResult(res_b.value, total, info)


def _diagnostics(
    problem: Problem,
    x0: Any,
    x: Any,
    net: Any,
    chunk_size: int | None,
    problem_on_k: Problem,
) -> dict[str, Any]:
    """NOT PRIVATE: quantities read from the private data, for experiments only."""
    from dpsample.finders import stationarity

    risk0 = float(problem.empirical_risk(x0))
    out: dict[str, Any] = {
        "label": "NOT PRIVATE: computed on the private data; never release",
        "empirical_risk_warm_start": risk0,
        "empirical_risk_output": float(problem.empirical_risk(x)),
        "gradient_norm_warm_start": float(jax.numpy.linalg.norm(problem.gradient(x0))),
        "gradient_norm_output": float(jax.numpy.linalg.norm(problem.gradient(x))),
    }
    if net is not None:
        _, net_min = nets.net_minimum(problem_on_k, net=net, chunk_size=chunk_size)
        out["gap_over_net_minimum"] = risk0 - net_min
    if problem.dim <= 200:
        out["min_hessian_eigenvalue_output"] = float(
            stationarity.min_hessian_eigenvalue(problem, x)
        )
    return out


precision.scope_public(globals())
