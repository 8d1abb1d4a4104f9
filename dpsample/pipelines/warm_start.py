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

import inspect
import math
from collections.abc import Mapping
from typing import Any, NamedTuple

import jax

from dpsample import nets
from dpsample._src import validation
from dpsample.domains import Ball
from dpsample.errors import BudgetExceededError, MissingConstantError
from dpsample.finders import _common
from dpsample.finders.dp_sgd import dp_sgd
from dpsample.finders.dp_spider import dp_spider
from dpsample.privacy import BudgetLedger, PrivacyGuarantee, PrivateResult
from dpsample.problem import Problem
from dpsample.types import PRNGKey

__all__ = [
    "DEFAULT_SPLIT",
    "FINDERS",
    "SAMPLERS",
    "WarmStartBound",
    "net_warm_start_bound",
    "should_warm_start",
    "theorem_3_2_stationarity_bound",
    "warm_start",
]

DEFAULT_SPLIT = 0.5
"""Fraction of ``epsilon`` given to the warm start (Algorithm 2: ``eps/2`` each)."""

SAMPLERS = ("net",)
"""Warm starts available: ``"net"``, the exponential mechanism over a grid net."""

FINDERS = ("dp_spider", "dp_sgd")
"""Finders available as stage ``B``."""

# The stage-B options fixed by the pipeline (never forwarded from finder_options).
_RESERVED = ("rng_key", "problem", "epsilon", "delta", "x0", "initial_gap")
# Finder options whose default needs the declared smoothness.
_NEEDS_SMOOTHNESS = {
    "dp_spider": ("num_steps", "phase_length", "learning_rate", "variation_batch_size"),
    "dp_sgd": ("num_steps", "learning_rate"),
}
_FINDER_FNS = {"dp_spider": dp_spider, "dp_sgd": dp_sgd}
_INT_OPTIONS = (
    "num_steps",
    "phase_length",
    "anchor_batch_size",
    "variation_batch_size",
    "batch_size",
    "max_batch_size",
)
_FLOAT_OPTIONS = ("learning_rate", "clip_norm")


class WarmStartBound(NamedTuple):
    """Public high-probability bound ``psi`` on the warm start's excess risk.

    ``Pr[F_D(x_0) - min_K F_D > psi - minimizer_gap] <= failure_prob`` over the
    mechanism's randomness, for every dataset (see :func:`net_warm_start_bound`).

    Attributes:
        psi: The bound ``covering + tail + minimizer_gap``.
        failure_prob: ``zeta``.
        covering: ``G r``: the net minimum exceeds ``min_K F_D`` by at most this.
        tail: ``(ln N + ln(1/zeta)) / k``: the exponential mechanism's excess over the
            net minimum, with probability ``>= 1 - zeta``.
        minimizer_gap: The declared ``g_W >= min_K F_D - inf F_D`` (``0``: ``K``
            contains a global minimiser, or the gap is measured against ``min_K``).
    """

    psi: float
    failure_prob: float
    covering: float
    tail: float
    minimizer_gap: float


def net_warm_start_bound(
    *,
    lipschitz: float,
    covering_radius: float,
    log_net_size: float,
    inverse_temperature: float,
    failure_prob: float,
    minimizer_gap: float = 0.0,
) -> WarmStartBound:
    r"""High-probability excess-risk bound ``psi`` of the net exponential mechanism.

    For ``x_0`` drawn with probability ``∝ exp(-k F_D(p))`` over a net (multiset)
    ``P`` of ``N`` points of ``K`` with covering radius ``r``, and ``F_D``
    ``G``-Lipschitz on ``K``:

    .. math::

        \Pr\Big[F_D(x_0) - \min_K F_D > G r + \frac{\ln N + \ln(1/\zeta)}{k}\Big]
        \le \zeta .

    Derivation (the tail form of Lemma 4.2 / Dwork-Roth Thm 3.11 with the spec's B5
    correction ``(ln N + t)/k``): with ``OPT = min_P F_D``, the points with
    ``F_D >= OPT + s`` carry unnormalised mass at most ``N e^{-k(OPT + s)}`` while the
    normaliser is at least ``e^{-k OPT}``, so ``Pr[F_D(x_0) >= OPT + s] <= N e^{-ks}``;
    ``s = (ln N + ln(1/zeta))/k`` makes it ``zeta``. Every point of ``K`` is within
    ``r`` of ``P`` and ``F_D`` is ``G``-Lipschitz, so ``OPT <= min_K F_D + G r``.
    ``minimizer_gap`` adds the declared ``g_W`` of spec 003 section 2.2 when the
    finder's gap is measured against ``inf_{R^d} F_D``.

    All inputs are public (declared constants, the public net, ``eps_A``, ``n``):
    ``psi`` never depends on the data. The seed's closed form
    ``20 G D (d/(eps n)) ln(eps n/sqrt(d))`` at ``zeta = 2 sqrt(d)/(eps n)`` is a
    looser instance of this bound for its own net (valid when ``eps n/sqrt(d) >= e``).

    Args:
        lipschitz: ``G``, the declared Lipschitz constant of each ``f(., z)`` on ``K``.
        covering_radius: ``r``, the net's public covering radius.
        log_net_size: ``ln N`` (counting multiplicity).
        inverse_temperature: ``k`` of the mechanism that runs.
        failure_prob: ``zeta`` in ``(0, 1)``.
        minimizer_gap: Declared ``g_W >= 0``.

    Returns:
        A :class:`WarmStartBound`.

    Raises:
        ValueError: On invalid inputs.

    Examples:
        >>> import math
        >>> from dpsample.pipelines import net_warm_start_bound
        >>> b = net_warm_start_bound(lipschitz=1.0, covering_radius=0.01,
        ...     log_net_size=math.log(100.0), inverse_temperature=50.0,
        ...     failure_prob=0.01)
        >>> round(b.psi, 4), round(b.tail, 4)
        (0.1942, 0.1842)
    """
    g = validation.positive("lipschitz", lipschitz)
    r = validation.nonnegative("covering_radius", covering_radius)
    log_n = validation.nonnegative("log_net_size", log_net_size)
    k = validation.positive("inverse_temperature", inverse_temperature)
    zeta = validation.probability("failure_prob", failure_prob, open_left=True)
    if zeta >= 1.0:
        raise ValueError(f"Expected failure_prob={zeta!r} < 1")
    gap = validation.nonnegative("minimizer_gap", minimizer_gap)
    covering = g * r
    tail = (log_n + math.log(1.0 / zeta)) / k
    return WarmStartBound(covering + tail + gap, zeta, covering, tail, gap)


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
    when ``d < eps n``. Finer rule (spec 003 section 2.9 [I]), used when every public
    constant is given: warm-start iff the warm-start rate beats the cold-start rate,

    .. math::

        L^{2/3} \beta^{1/3} D^{1/3}\, \bar a\, d^{1/6}
        < \big(\sqrt{F_{0,def} L \beta}\; \bar a\big)^{2/3},
        \qquad \bar a = \frac{\sqrt{d \ln(1/\delta)}}{\varepsilon n},

    i.e. ``L D sqrt(d) abar < F_0,def``. Only public quantities enter (``n``, ``d``,
    the budget and declared constants), never the data, so the decision itself is
    not a release (spec 003 A1).

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
    abar = _abar(dim, n, epsilon, delta)
    warm = big_l ** (2 / 3) * beta ** (1 / 3) * diam ** (1 / 3) * abar * dim ** (1 / 6)
    cold = (math.sqrt(f0 * big_l * beta) * abar) ** (2 / 3)
    if warm < cold:
        return True, (
            f"d = {dim} < eps n = {epsilon * n:.6g} and the warm-start rate "
            f"{warm:.4g} < the cold-start rate {cold:.4g} (finer rule)"
        )
    return False, (
        f"d = {dim} < eps n = {epsilon * n:.6g}, but the warm-start rate {warm:.4g} "
        f">= the cold-start rate {cold:.4g} (finer rule): the default start's public "
        "gap is already small"
    )


def _problem_ball(problem: Problem) -> Ball:
    domain = problem.domain
    if not isinstance(domain, Ball):
        raise ValueError(
            "warm_start with sampler='net' needs a Ball domain (a public compact K), "
            f"got {type(domain).__name__}"
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
        nets._check_net_in_ball(net, ball)  # same checks as the mechanism's
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


def _check_finder_options(
    finder: str, options: Mapping[str, Any] | None, n: int
) -> dict[str, Any]:
    """Eager checks of the forwarded options (before any private computation)."""
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise TypeError(f"Expected finder_options to be a mapping, got {options!r}")
    options = dict(options)
    params = inspect.signature(_FINDER_FNS[finder]).parameters
    for key in options:
        if key in _RESERVED:
            raise ValueError(
                f"finder_options may not set {key!r}: the pipeline sets it (the "
                "finder's budget, the warm start and initial_gap = psi)"
            )
        if key not in params:
            raise ValueError(f"{finder} has no option {key!r}")
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


def warm_start(
    rng_key: PRNGKey,
    problem: Problem,
    *,
    epsilon: float,
    delta: float,
    sampler: str = "net",
    finder: str = "dp_spider",
    split: float = DEFAULT_SPLIT,
    failure_prob: float | None = None,
    minimizer_gap: float = 0.0,
    spacing: float | None = None,
    net: nets.GridNet | nets.PointNet | None = None,
    max_points: int = 10**7,
    chunk_size: int | None = None,
    finder_options: Mapping[str, Any] | None = None,
    ledger: BudgetLedger | None = None,
    diagnostics: bool = False,
) -> PrivateResult:
    r"""Warm-start ERM (seed 003 Algorithm 2): net exponential mechanism, then finder.

    .. code-block:: text

        x_0    <- ExpMech over a net P of K, Pr[p] ∝ exp(-k F_D(p)),  budget eps_A
        psi    <- G r + (ln|P| + ln(1/zeta)) / k  [+ g_W]               (public)
        x_priv <- finder(x_0; F_0 := psi),                  budget (eps_B, delta_B)

    with ``eps_A = split * eps``, ``eps_B = eps - eps_A`` and ``k = eps_A n / osc``
    (``osc = problem.utility_oscillation()``, ``= 2 G D`` when the Lipschitz bound
    binds: Definition 4.1's ``exp(-eps_A n F_D / (4 G D))``). Both stages read all
    ``n`` examples. The default net is the grid net with covering radius
    ``r = D d / (eps_A n)`` (seed 003 section 4); ``psi`` is computed from the net
    that actually runs (:func:`net_warm_start_bound`) and satisfies
    ``Pr[F_D(x_0) - min_K F_D > psi] <= zeta`` for every dataset, with the default
    ``zeta = sqrt(d)/(eps n)`` that Theorem 3.2 requires. The finder's initial-gap
    parameter is ``psi``: never the realised gap (spec 003 A1). With DP-SPIDER,
    Theorem 3.2 gives

    .. math::

        \mathbb{E}\|\nabla F_D(x_{priv})\| \lesssim L \bar a
            + (L \beta \psi)^{1/3} \bar a^{2/3},
        \qquad \bar a = \frac{\sqrt{d \ln(1/\delta_B)}}{\varepsilon_B n},

    i.e. ``Õ(abar d^{1/6})`` (Corollary 4.3) instead of the cold start's
    ``(L beta F_0)^{1/3} abar^{2/3}``; ``info["stationarity_bound"]`` reports the rate
    shape with the absolute constant set to 1. Use :func:`should_warm_start` to
    decide (from public quantities) whether to warm-start at all.

    Budget split: Algorithm 2 gives ``(eps/2, delta/2)`` to each stage. The net
    exponential mechanism is pure DP, so its ``delta/2`` share is unused (spec 003
    section 2.2); it is passed on to the finder, which gets ``delta_B = delta``
    (a strict improvement of the theorem's setting: ``ln(1/delta)`` instead of
    ``ln(2/delta)``). ``split`` sets the epsilon fraction of the warm start (default
    ``1/2``, the theorem's).

    Both stages are charged to a :class:`~dpsample.privacy.BudgetLedger` (``ledger``,
    or a fresh one with ``(epsilon, delta)``) before either runs: the warm start with
    its exact guarantee, the finder with the ``(eps_B, delta_B)`` envelope its
    calibration meets. If the ledger would be exceeded,
    :class:`~dpsample.errors.BudgetExceededError` is raised and nothing is charged or
    computed. Loops are left to JAX; ``jit`` of the whole pipeline is not supported
    (calibration runs on the host).

    Privacy:
        Replace-one neighbours (``problem.relation``). Stage A: sensitivity
        ``osc/n`` of ``F_D`` (declared constants only), ``eps_A``-DP (exact
        Gumbel-max sampling in float64, so no TV slack). Stage B: the finder's
        accountant certifies ``(eps_B, delta_B)`` for the schedule that runs, which
        depends only on public numbers (``psi``, ``n``, ``d``, the budget, declared
        constants). The released ``(x_0, x_priv)`` is covered by the adaptive
        composition ``g_A.compose(g_B)`` (``info["privacy_total"]``, the tightest of
        the PLD/RDP/pure routes), which is at most ``(eps, delta)`` by basic
        composition. ``zeta``, the probability that ``psi`` fails, affects utility
        only, never privacy: ``psi`` is a public number whatever the data.

    Args:
        rng_key: A JAX PRNG key (split internally, never reused).
        problem: The :class:`~dpsample.problem.Problem`, on a
            :class:`~dpsample.domains.Ball`, with declared ``lipschitz`` (and
            ``smoothness`` for the finder's defaults).
        epsilon: Total epsilon ``> 0``.
        delta: Total delta in ``(0, 1)``.
        sampler: The warm start; only ``"net"`` (exponential mechanism over a net).
        finder: ``"dp_spider"`` (Theorem 3.2) or ``"dp_sgd"``.
        split: Fraction of ``epsilon`` for the warm start, in ``(0, 1)``.
        failure_prob: ``zeta`` of ``psi``; default ``sqrt(d)/(eps n)`` (Theorem 3.2).
        minimizer_gap: Declared ``g_W >= min_K F_D - inf F_D`` added to ``psi``
            (default ``0``: the gap is relative to ``min_K F_D``, appropriate when the
            finder projects onto ``K``).
        spacing: Grid spacing of the net (default: covering radius
            ``D d / (eps_A n)``).
        net: An explicit public :class:`~dpsample.nets.GridNet`, or a
            :class:`~dpsample.nets.PointNet` with a declared ``covering_radius``.
        max_points: Refuse nets larger than this (the cost is ``N n`` evaluations).
        chunk_size: Forwarded to :func:`dpsample.nets.exponential_mechanism`.
        finder_options: Extra keyword arguments for the finder (e.g. ``num_steps``,
            ``output``); ``epsilon``, ``delta``, ``x0`` and ``initial_gap`` are set by
            the pipeline.
        ledger: A ledger to charge (e.g. a larger analysis budget); default a fresh
            ``BudgetLedger(epsilon=epsilon, delta=delta)``.
        diagnostics: Add ``info["non_private_diagnostics"]``: risks, gradient norms
            and the realised warm-start gap over the net, **computed on the private
            data and not covered by the guarantee** (never release them).

    Returns:
        :class:`~dpsample.privacy.PrivateResult` with ``value`` the finder's output,
        ``privacy`` the composed guarantee and ``info`` with: ``warm_start`` (``x_0``,
        covered by the same guarantee), ``psi``, ``psi_failure_prob``, ``psi_terms``
        (:class:`WarmStartBound`), ``paper_psi`` (the seed's closed form, for
        comparison, or ``None``), ``epsilon_split`` (``eps_A, eps_B``),
        ``delta_split`` (``0, delta_B``), ``privacy_sampler``, ``privacy_finder``,
        ``privacy_total``, ``epsilon_total`` (at ``delta``), ``stationarity_bound``
        (DP-SPIDER; ``None`` without ``smoothness``), ``cold_start_bound`` (the same
        shape for the finder alone with the whole budget from the public default gap
        ``loss_range``, or ``None``), ``dispatcher`` (:func:`should_warm_start`'s
        answer), ``sampler_info``, ``finder_info``, ``ledger_stages``.

    Raises:
        ValueError: Invalid budget, split, sampler, finder, options or net; a
            non-Ball domain; ``eps_A n <= d`` without ``spacing``/``net``.
        TypeError: A non-key ``rng_key``, a non-Problem ``problem``.
        dpsample.errors.MissingConstantError: ``lipschitz`` (or ``smoothness`` for the
            finder's defaults) not declared.
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
    rng_key = _common.check_key(rng_key)
    problem = _common.check_problem(problem)
    epsilon, delta = _common.check_privacy(epsilon, delta)
    if sampler not in SAMPLERS:
        raise ValueError(f"Expected sampler in {SAMPLERS}, got {sampler!r}")
    if finder not in FINDERS:
        raise ValueError(f"Expected finder in {FINDERS}, got {finder!r}")
    split = validation.positive("split", split)
    if not split < 1.0:
        raise ValueError(f"Expected split={split!r} in (0, 1)")
    if ledger is not None and not isinstance(ledger, BudgetLedger):
        raise TypeError(f"Expected a BudgetLedger, got {type(ledger).__name__}")
    max_points = validation.positive_int("max_points", max_points)
    gap_w = validation.nonnegative("minimizer_gap", minimizer_gap)
    options = _check_finder_options(finder, finder_options, problem.n)
    ball = _problem_ball(problem)
    n, d = problem.n, problem.dim
    big_l = validation.require_constant(
        "lipschitz", problem.lipschitz, needed_for="the warm start's bound psi"
    )
    if any(options.get(k) is None for k in _NEEDS_SMOOTHNESS[finder]):
        validation.require_constant(
            "smoothness", problem.smoothness, needed_for=f"{finder}'s default schedule"
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

    eps_a = split * epsilon
    eps_b = epsilon - eps_a
    delta_b = delta  # the pure warm start leaves its delta share to the finder
    the_net = _resolve_net(ball, epsilon_a=eps_a, n=n, spacing=spacing, net=net)
    if the_net.size() > max_points:
        raise ValueError(
            f"The net has {the_net.size()} points, more than max_points={max_points}: "
            "the net exponential mechanism costs N n loss evaluations (exponential "
            "in d, spec 003 B20); increase spacing or raise max_points"
        )
    osc = problem.utility_oscillation()
    if osc is None:
        raise MissingConstantError(
            "The warm start needs an oscillation bound of f(., z) - f(., z') on K "
            "from declared constants (lipschitz, loss_range or oscillation)"
        )
    inverse_temperature = eps_a * n / validation.positive("utility_oscillation", osc)
    bound = net_warm_start_bound(
        lipschitz=big_l,
        covering_radius=float(the_net.covering_radius),
        log_net_size=math.log(the_net.size()),
        inverse_temperature=inverse_temperature,
        failure_prob=zeta,
        minimizer_gap=gap_w,
    )
    psi = bound.psi

    # ---- budget: charge both stages before either runs (atomic) ----------------
    relation = problem.relation
    g_sampler = PrivacyGuarantee.exponential_mechanism(eps_a, relation=relation)
    g_finder_envelope = PrivacyGuarantee.approx(eps_b, delta_b, relation=relation)
    if ledger is None:
        ledger = BudgetLedger(epsilon=epsilon, delta=delta, relation=relation)
    both = g_sampler.compose(g_finder_envelope)
    if ledger.would_exceed(both):
        raise BudgetExceededError(
            f"warm_start (sampler eps={eps_a:.6g}, finder (eps={eps_b:.6g}, "
            f"delta={delta_b:g})) would bring the ledger to epsilon="
            f"{ledger.total.compose(both).epsilon(ledger.delta):.6g} at delta="
            f"{ledger.delta:g}, over its budget epsilon={ledger.epsilon:g}; nothing "
            "was charged or computed"
        )
    ledger.charge("warm_start/sampler:net_exponential_mechanism", g_sampler)
    ledger.charge(f"warm_start/finder:{finder}", g_finder_envelope)

    # ---- stage A: the exponential mechanism over the net (private) -------------
    key_a, key_b = jax.random.split(rng_key)
    res_a = nets.exponential_mechanism(
        key_a,
        problem,
        epsilon=eps_a,
        net=the_net,
        chunk_size=chunk_size,
        max_points=max_points,
    )
    if not math.isclose(res_a.info["inverse_temperature"], inverse_temperature):
        raise RuntimeError("internal error: the net ran at another temperature")
    x0 = res_a.value

    # ---- stage B: the finder from x0, configured from psi only (private) -------
    res_b = _FINDER_FNS[finder](
        key_b,
        problem,
        epsilon=eps_b,
        delta=delta_b,
        x0=x0,
        initial_gap=psi,
        **options,
    )
    if res_b.privacy.epsilon(delta_b) > eps_b * (1.0 + 1e-9):
        raise RuntimeError("internal error: the finder overspent its share")
    total = res_a.privacy.compose(res_b.privacy)

    # ---- public reporting -------------------------------------------------------
    beta = problem.smoothness
    stationarity = cold = None
    if beta is not None and finder == "dp_spider":
        stationarity = theorem_3_2_stationarity_bound(
            lipschitz=big_l,
            smoothness=beta,
            initial_gap=psi,
            dim=d,
            n=n,
            epsilon=eps_b,
            delta=delta_b,
            failure_prob=zeta,
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
        if ratio >= math.e
        else None
    )
    info: dict[str, Any] = {
        "algorithm": "warm_start",
        "sampler": sampler,
        "finder": finder,
        "warm_start": x0,
        "psi": psi,
        "psi_failure_prob": zeta,
        "psi_terms": bound,
        "paper_psi": paper_psi,
        "split": split,
        "epsilon_split": (eps_a, eps_b),
        "delta_split": (0.0, delta_b),
        "privacy_sampler": res_a.privacy,
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
        "sampler_info": res_a.info,
        "finder_info": res_b.info,
        "ledger_stages": [name for name, _ in ledger.stages],
    }
    if diagnostics:
        info["non_private_diagnostics"] = _diagnostics(
            problem, x0, res_b.value, the_net, chunk_size
        )
    return PrivateResult(res_b.value, total, info)


def _diagnostics(
    problem: Problem, x0: Any, x: Any, net: Any, chunk_size: int | None
) -> dict[str, Any]:
    """NOT PRIVATE: quantities read from the private data, for experiments only."""
    _, net_min = nets.net_minimum(problem, net=net, chunk_size=chunk_size)
    risk0 = float(problem.empirical_risk(x0))
    return {
        "label": "NOT PRIVATE: computed on the private data; never release",
        "empirical_risk_warm_start": risk0,
        "empirical_risk_output": float(problem.empirical_risk(x)),
        "gap_over_net_minimum": risk0 - net_min,
        "gradient_norm_warm_start": float(jax.numpy.linalg.norm(problem.gradient(x0))),
        "gradient_norm_output": float(jax.numpy.linalg.norm(problem.gradient(x))),
    }
