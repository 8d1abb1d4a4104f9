r"""The exponential mechanism over a net of ``K`` (seed 000, Theorem 5.8), streamed.

:class:`NetExponentialMechanism` (registry name ``"net"``) plans in public (the net,
the inverse temperature, the guarantee, the cost and the warm-start bound) and runs
privately; :func:`exponential_mechanism` is plan then run in one call.

Outputs a net point ``p`` with probability

.. math::

    \Pr[p] \propto \exp(-k F_D(p)),\qquad
    k = \frac{\varepsilon}{\Delta_{osc}},\qquad
    \Delta_{osc} = \frac{osc}{n},

where ``osc`` bounds ``osc_K(f(., z) - f(., z'))`` per example from declared
constants only: by default the tighter of ``2GD`` and ``2B`` that a clip enforces
(below), with ``enforce_sensitivity=False`` ``utility_oscillation()`` (``min(2GD,
2B, oscillation)``). When the Lipschitz
bound binds, ``k = eps n / (2 G D)``: this is the spec's errata E28 correction of
the paper's ``eps n / (G D)``, which needs ``f(., z) - f(., z')`` to be
``G``-Lipschitz rather than each ``f(., z)``.

Default net: the :class:`~dpsample.nets.GridNet` with covering radius equal to the
theorem's ``r = D d / (eps n)``, i.e. ``spacing = 2 r / sqrt(d)``; it needs
``eps n > d``.
Then (see :func:`dpsample.bounds.theorem_5_8_risk_bound`)
``E[F_D(out)] - min_K F_D <= G r + (log|P| + 1)/k``.

Sampling is Gumbel-max: ``argmax_p (-k F_D(p) + G_p)`` with i.i.d. standard Gumbel
``G_p``, computed chunk by chunk inside one ``lax.fori_loop`` that carries only the
running best (score, index). Each chunk decodes the net points of ``chunk_size``
consecutive flat indices (a :class:`~dpsample.nets.GridNet` enumerates only net points,
row by row; see there), evaluates ``F_D`` (vmapped over points and examples; a
linear-model loss becomes one ``(chunk, d) x (d, n)`` matrix product), and adds Gumbel
noise drawn per block of :data:`~dpsample.nets.stream.NOISE_BLOCK` flat indices from
``fold_in(rng_key, block)``; only the padding past the last net point in the final chunk
is masked (score ``-inf``). Memory is ``O(chunk_size * (n + d))`` plus the grid's row
table (``O((2m + 1)^(d - 1))``), independent of the net size, and the output for a given
key does not depend on ``chunk_size``. Everything runs in float64.
:func:`~dpsample.nets.net_minimum` streams the same net non-privately, for diagnostics.

Privacy.
Replace-one neighbours ``D ~ D'`` (``problem.relation``). With
``g = F_D - F_D'``, the privacy loss at ``p`` is
``-k g(p) + log E_{pi_D}[e^{k g}]``, which lies in
``[-k (g(p) - min g), k (max g - g(p))]``; its range over outputs is at most
``k osc_K(g) <= k Delta_osc = eps``. So the mechanism is ``eps``-DP, and, as a
bounded-range mechanism, ``eps^2/8``-zCDP (Cesar and Rogers 2021); the
returned guarantee is
:meth:`~dpsample.privacy.PrivacyGuarantee.exponential_mechanism`. The
sensitivity uses declared constants only; the net depends only on public
values (the domain and ``spacing``, or a user net that must not depend on the
data), and ``info`` holds only public quantities. The loss must be finite on
``K``: a NaN risk value is treated as never selected. By default the bound used is
enforced by a clip of every per-example loss (``enforce_sensitivity``): into the cone
of slope ``G`` (:class:`ConeClippedLoss`) on the ``2 G D`` route, into the declared
interval ``[loss_floor, loss_floor + B]`` (:class:`RangeClippedLoss`) on the ``2 B``
route, whichever is tighter. A tighter bound that no clip enforces (a range without
``loss_floor``, or a declared ``oscillation``) is used only with
``enforce_sensitivity=False``, and is then stated as an assumption of the guarantee.

Floating-point caveat: the proof (and so the returned guarantee) is for the
ideal mechanism in real arithmetic, like the Gaussian and Laplace mechanisms'
(see :mod:`dpsample.mechanisms.gaussian`, ``docs/sharp_edges.md``). Each
``G_p`` is ``jax.random.gumbel`` in float64, ``-log(-log U)`` with ``U`` on a
grid of step ``2^-52`` in ``[2.2e-308, 1)``: the noise takes values in
``[-6.56, 36.04]`` only and its upper tail is coarsely discretised. So a
point whose score ``-k F_D(p)`` is more than ``42.6`` below the best is
never selected (the ideal mechanism selects it with probability below
``e^-42.6`` relative to the best), and points far below the best are not
selected with probabilities exactly proportional to ``exp(-k F_D(p))``.
The sampler departs from the ideal one only on events of small probability
(extreme Gumbel draws, near-ties at rounding level), but it is not exactly
``eps``-DP: a point can have probability zero under ``D`` and a positive
one under a neighbour. What the code does about numerics: the net points,
the inverse temperature, the scores and the noise are float64; scores are
the unnormalised ``-k F_D(p)``, so nothing is exponentiated and nothing
overflows, and a NaN score is never selected; the noise of each point
comes from ``fold_in(rng_key, block)``, independent of the data and of
``chunk_size``; every net point is evaluated whatever the data. No exact
(base-2) sampler is used (Ilvento 2020).

References:
    F. McSherry and K. Talwar, `Mechanism design via differential privacy
    <https://doi.org/10.1109/FOCS.2007.66>`_, 2007.
    A. Ganesh, D. Liu, S. Oh and A. Thakurta, `Private (stochastic) non-convex
    optimization revisited: second-order stationary points and excess risks
    <https://arxiv.org/abs/2302.09699>`_, 2023 (Theorem 5.8).
    M. Cesar and R. Rogers, `Bounding, concentrating, and truncating: unifying
    privacy loss composition for data analytics
    <https://arxiv.org/abs/2004.07223>`_, 2021.
    C. Ilvento, `Implementing the exponential mechanism with base-2 differential
    privacy <https://arxiv.org/abs/1912.04222>`_, CCS 2020.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, ClassVar

import jax.numpy as jnp

from dpsample import bounds, progress
from dpsample._src import precision, validation
from dpsample.base import AlgorithmInfo, PrivateAlgorithm
from dpsample.errors import PlanRefusal, Search
from dpsample.nets.ball import problem_ball, theorem_radius
from dpsample.nets.clipped import (
    CLIP_NOTES,
    SENSITIVITY_ROUTES,
    clipped_loss,
    run_clipped,
    sensitivity_route,
)
from dpsample.nets.grid import (
    MAX_ROWS,
    GridNet,
    grid_net_rows_bound,
    grid_net_size_bound,
)
from dpsample.nets.options import MAX_POINTS, NetOptions
from dpsample.nets.points import PointNet
from dpsample.nets.resolve import resolve_net
from dpsample.nets.stream import (
    chunk_rule,
    jit_net,
    resolve_chunk_size,
    stream_argmax,
)
from dpsample.options import call_options
from dpsample.plan import Budget, Cost, Param, Plan
from dpsample.privacy import PrivacyGuarantee, PrivateResult
from dpsample.problem import Problem, ProblemSpec
from dpsample.types import ArrayLike, PRNGKey

__all__ = [
    "FLOAT_CAVEAT",
    "NetExponentialMechanism",
    "NetInfo",
    "exponential_mechanism",
]

#: The floating-point caveat every plan of the mechanism carries (``plan.notes``).
FLOAT_CAVEAT = (
    "the guarantee is for the ideal exponential mechanism in real arithmetic; the "
    "float64 Gumbel-max sampler never selects a point scoring more than 42.6 below "
    "the best, so it is not exactly eps-DP (docs/sharp_edges.md)"
)


@dataclasses.dataclass(frozen=True)
class NetInfo(AlgorithmInfo):
    """Public facts of a :class:`NetExponentialMechanism` run (``result.info``).

    Every field is a function of the plan (public inputs) only.

    Attributes:
        net: ``"grid"`` or ``"points"``.
        net_size: Number of net points (with multiplicity).
        num_candidates: Length of the enumeration (equal to ``net_size``).
        covering_radius: The net's public covering radius (``None`` for a point net
            without one).
        spacing: The grid spacing (``None`` for a point net).
        theorem_radius: Theorem 5.8's radius ``D d / (eps n)`` (``None`` if
            ``eps n <= d``).
        inverse_temperature: ``k = eps n / osc``.
        sensitivity_oscillation: ``osc / n``.
        epsilon: The mechanism's epsilon.
        n: Number of examples.
        dim: Dimension ``d``.
        chunk_size: Candidates per chunk.
        num_chunks: Chunks scanned.
        loss_evaluations: Per-example loss evaluations done (``num_chunks
            chunk_size n``: the padding of the last chunk counts).
    """

    net: str
    net_size: int
    num_candidates: int
    covering_radius: float | None
    spacing: float | None
    theorem_radius: float | None
    inverse_temperature: float
    sensitivity_oscillation: float
    epsilon: float
    n: int
    dim: int
    chunk_size: int
    num_chunks: int
    loss_evaluations: int
    diagnostics: None = None


class NetExponentialMechanism(PrivateAlgorithm):
    """The exponential mechanism over a net of ``K`` (Theorem 5.8), plan then run.

    See the module docstring for the mechanism and its guarantee, and
    :func:`exponential_mechanism` for every option (the same keywords, bound at
    construction or given to :meth:`plan`). The budget's ``delta`` is not used (the
    mechanism is pure ``eps``-DP; ``Budget(eps, 0.0)`` asks for exactly that).

    The plan holds the net that runs (``plan.internal["net"]``, public: it depends on
    ``K``, ``eps``, ``n`` and the options only), the inverse temperature, the
    guarantee with its floating-point caveat in ``plan.notes``
    (:data:`FLOAT_CAVEAT`), the cost (``loss_evaluations = num_chunks chunk_size n``:
    every net point, and the padding of the last chunk, is evaluated on every
    example), Theorem 5.8's expected excess-risk bound for that net
    (``plan["risk_bound"]``) and the warm-start bound ``plan.warm_start``
    (:func:`dpsample.bounds.net_warm_start_bound`: with probability at least ``1 -
    zeta`` the output's excess empirical risk is at most ``psi``).

    Compute budget (``Budget.max_evaluations = E``): when the theorem's net would
    need more than ``E`` loss evaluations, its spacing grows by 5% steps until
    ``num_chunks x chunk_size x n <= E``; the risk bound and ``psi`` are those of
    the coarser net that runs (the guarantee does not depend on the net). A net or
    spacing the caller fixed that exceeds ``E`` is refused.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> from dpsample import Ball, Budget, Problem
        >>> from dpsample.nets import NetExponentialMechanism
        >>> data = {"x": jnp.ones((50, 1)), "y": jnp.ones(50)}
        >>> problem = Problem(lambda x, z: -z["y"] * jnp.dot(z["x"], x), data,
        ...                   Ball(1.0, dim=1), lipschitz=1.0)
        >>> algo = NetExponentialMechanism()
        >>> plan = algo.plan(problem.spec, Budget(1.0, 0.0))
        >>> plan["net_size"], plan["inverse_temperature"], plan.cost.loss_evaluations
        (27, 12.5, 12800)
        >>> res = algo.run(jax.random.key(0), plan, problem.data)
        >>> res.privacy is plan.guarantee, res.info.net_size
        (True, 27)
    """

    name = "net"
    kind = "sampler"
    seed = "000"
    theorem = "Theorem 5.8 (exponential mechanism over an r-net; errata E28)"
    guarantee_type = "pure epsilon (bounded range: also eps^2/8-zCDP)"
    summary = "exponential mechanism over a net of the ball K, streamed by Gumbel-max"
    # no calibration: any epsilon plans quickly (the net is capped by max_points)
    max_epsilon = math.inf

    #: Pure DP: a pipeline gives it no share of delta.
    pure_dp: ClassVar[bool] = True

    @staticmethod
    def evaluations_bound(
        spec: ProblemSpec, budget: Budget, *, covering_radius: float | None = None
    ) -> float:
        """A public upper bound on a grid net's evaluations, without the net.

        ``grid_net_size_bound(d, R, h) n`` for the spacing ``h = 2 r / sqrt(d)`` of
        covering radius ``r``: by default the theorem's ``r = D d/(eps n)`` (``inf``
        when ``eps n <= d``). What a pipeline's cost rule reads before building a
        net that may be huge; with ``covering_radius`` the coarsest net it would
        still use (a net whose covering radius is ``r`` has ``psi >= G r``).

        Examples:
            >>> import jax.numpy as jnp
            >>> from dpsample import Ball, Budget, Problem
            >>> from dpsample.nets import NetExponentialMechanism as Net
            >>> p = Problem(lambda x, z: jnp.sum(x * z), jnp.zeros((100, 2)),
            ...             Ball(1.0, dim=2), lipschitz=1.0)
            >>> fine = Net.evaluations_bound(p.spec, Budget(1.0, 0.0))
            >>> coarse = Net.evaluations_bound(p.spec, Budget(1.0, 0.0),
            ...                                covering_radius=0.5)
            >>> coarse < fine
            True
        """
        ball = problem_ball(spec, "exponential_mechanism")
        if covering_radius is None:
            r = theorem_radius(ball, budget.epsilon, spec.n)
        else:
            r = validation.positive("covering_radius", covering_radius)
        if r is None:
            return math.inf
        h = 2.0 * r / math.sqrt(spec.dim)
        return grid_net_size_bound(spec.dim, ball.radius, h) * spec.n

    @staticmethod
    def paper_psi(spec: ProblemSpec, epsilon: float) -> float | None:
        """Seed 003's closed-form psi ``20 G D d/(eps n) ln(eps n/sqrt d)`` (or None).

        Reported beside the derived ``psi`` for comparison (spec 003 B5).
        """
        ratio = epsilon * spec.n / math.sqrt(spec.dim)
        if spec.lipschitz is None or ratio < math.e:
            return None
        diameter = 2.0 * problem_ball(spec, "exponential_mechanism").radius
        return (
            20.0 * spec.lipschitz * diameter * spec.dim / (epsilon * spec.n)
        ) * math.log(ratio)

    options_type = NetOptions

    def _plan(self, spec: ProblemSpec, budget: Budget, **options: Any) -> Plan:
        opts = NetOptions.from_options(options)
        spacing, net, chunk_size = opts.spacing, opts.net, opts.chunk_size
        enforce_sensitivity, failure_prob = opts.enforce_sensitivity, opts.failure_prob
        epsilon = budget.epsilon
        if not isinstance(enforce_sensitivity, bool):
            raise TypeError(
                "Expected enforce_sensitivity to be a bool, got "
                f"{enforce_sensitivity!r}"
            )
        max_points = validation.positive_int("max_points", opts.max_points)
        ball = problem_ball(spec, "exponential_mechanism")
        dim, n = spec.dim, spec.n
        osc, clip, assumption = sensitivity_route(spec, enforce_sensitivity)
        sensitivity = osc / n
        inverse_temperature = epsilon / sensitivity
        r_theorem = theorem_radius(ball, epsilon, n)
        gap = validation.nonnegative("minimizer_gap", opts.minimizer_gap)
        zeta = None
        if failure_prob is not None:
            zeta = validation.probability("failure_prob", failure_prob, open_left=True)
            if not zeta < 1.0:
                raise ValueError(f"Expected failure_prob={zeta!r} < 1")
        net_given, spacing_given = net is not None, spacing is not None
        cap = budget.max_evaluations
        capped = False
        if cap is not None and not (net_given or spacing_given) and r_theorem:
            # Compute-budget rule: grow the theorem's spacing by 5% steps until the
            # net's public size bound times n fits the cap (then the exact count,
            # padding included, below).
            h = 2.0 * r_theorem / math.sqrt(dim)
            while (
                grid_net_size_bound(dim, ball.radius, h) * n > cap
                and h < 4 * ball.radius
            ):
                h *= 1.05
                capped = True
            if capped:
                spacing = h
        while True:
            try:
                the_net = resolve_net(
                    ball,
                    n,
                    net=net,
                    spacing=spacing,
                    epsilon=epsilon,
                    max_points=max_points,
                    what="exponential_mechanism",
                )
            except ValueError:
                if net_given or not r_theorem:
                    raise
                h = spacing or 2.0 * r_theorem / math.sqrt(dim)
                raise _too_large(ball, h, max_points) from None
            chunk = resolve_chunk_size(chunk_size, n, the_net.num_candidates)
            num_chunks = -(-the_net.num_candidates // chunk)
            rows = num_chunks * chunk
            if cap is None or rows * n <= cap:
                break
            coarsest = the_net.size() <= 1 or (
                # a coarser net than this costs the same (_COARSEST_SPACING)
                spacing is not None and spacing > _COARSEST_SPACING * ball.radius
            )
            if net_given or spacing_given or not r_theorem or coarsest:
                reason = (
                    f"the net needs {rows * n:,} loss evaluations ({rows:,} rows x "
                    f"n={n:,}), more than max_evaluations={cap:,}"
                )
                if spacing is not None and spacing_given and the_net.size() > 1:
                    raise PlanRefusal(
                        reason,
                        search=Search(
                            "spacing",
                            spacing * 1.05,
                            factor=1.05,
                            max_tries=400,
                            refine=False,
                        ),
                        alternatives=(({}, "raise max_evaluations"),),
                    )
                raise PlanRefusal(
                    reason,
                    why=(
                        "coarsen the net (spacing=) or raise max_evaluations"
                        if net_given
                        else "The cap is below what the coarsest net needs: raise "
                        f"max_evaluations to at least {rows * n:,}"
                    ),
                )
            spacing = (spacing or 2.0 * r_theorem / math.sqrt(dim)) * 1.05
            capped = True
        net_size = the_net.size()
        guarantee = PrivacyGuarantee.exponential_mechanism(
            epsilon, relation=spec.relation
        )
        if assumption is not None:
            guarantee = guarantee.assuming(assumption)
        clip_fn = clipped_loss(spec, clip, ball)
        grid = isinstance(the_net, GridNet)
        covering = the_net.covering_radius
        if net_given:
            net_source = ("user", "the caller's net (must not depend on the data)")
        elif capped:
            net_source = (
                "derived",
                "max_evaluations: the theorem's spacing grown by 5% steps until "
                "num_chunks x chunk_size x n <= max_evaluations",
            )
        elif spacing_given:
            net_source = ("user", "grid net of the given spacing")
        else:
            net_source = (
                "theorem",
                "grid net of covering radius r = D d/(eps n) (Thm 5.8): "
                "spacing 2r/sqrt(d)",
            )
        # the plan's own rows: the net's (the rule that set it) and what it derives
        net_rows = {
            "net": Param("grid" if grid else "points", *net_source),
            "spacing": Param(
                the_net.spacing if isinstance(the_net, GridNet) else None,
                net_source[0],
                "lattice spacing h",
            ),
        }
        derived = {
            "net_size": Param(net_size, "derived", "exact count (with multiplicity)"),
            "covering_radius": Param(covering, "derived", "h sqrt(d)/2 for a grid"),
            "theorem_radius": Param(r_theorem, "theorem", "Thm 5.8: D d/(eps n)"),
            "inverse_temperature": Param(
                inverse_temperature,
                "theorem",
                "k = eps n/osc; osc the tightest enforced of 2GD, 2B (E28)"
                if enforce_sensitivity
                else "k = eps n/osc, osc = min(2GD, 2B, oscillation) (E28)",
            ),
            "sensitivity_oscillation": Param(
                sensitivity,
                "derived",
                f"osc/n, osc = {osc:.6g} ({SENSITIVITY_ROUTES[clip]})",
            ),
        }
        chunks = {
            "num_chunks": Param(num_chunks, "derived", "ceil(net_size/chunk_size)")
        }
        notes = [FLOAT_CAVEAT]
        warm = None
        risk: dict[str, Param] = {}
        zeta_row = None  # the failure_prob row, when the warm-start bound is made
        g = spec.lipschitz
        # A grid of a smaller ball does not cover K: its radius bounds nothing there.
        covers_k = not (isinstance(the_net, GridNet) and the_net.radius < ball.radius)
        if g is not None and covering is not None and covers_k:
            b = bounds.theorem_5_8_empirical_risk_bound(
                lipschitz=g,
                diameter=ball.diameter,
                dim=dim,
                epsilon=epsilon,
                n=n,
                radius=covering,
                net_size=net_size,
                inverse_temperature=inverse_temperature,
            )
            risk = {
                "risk_bound": Param(
                    b.total, "theorem", "Thm 5.8: E excess <= G r + (log N + 1)/k"
                )
            }
            if zeta is None:
                zeta = bounds.default_failure_prob(dim, epsilon, n)
            if zeta is not None:
                zeta_row = zeta
                warm = bounds.net_warm_start_bound(
                    lipschitz=g,
                    covering_radius=covering,
                    log_net_size=math.log(net_size),
                    inverse_temperature=inverse_temperature,
                    failure_prob=zeta,
                    minimizer_gap=gap,
                )
            else:
                notes.append(
                    "no warm-start bound: the default failure probability "
                    "sqrt(d)/(eps n) is >= 1 (pass failure_prob=)"
                )
        else:
            notes.append(
                "no risk or warm-start bound: "
                + (
                    "the Lipschitz constant is not declared"
                    if g is None
                    else "the net has no public covering radius"
                    if covering is None
                    else "the GridNet does not cover the whole domain K (it has a "
                    "smaller radius)"
                )
            )
        # the options' rows (the declaration's order, sources and rules), with the
        # plan's rows after the option each follows
        option_rows = opts.rows(
            resolved={
                "chunk_size": chunk,
                "max_points": max_points,
                "minimizer_gap": gap,
                "enforce_sensitivity": enforce_sensitivity,
                "failure_prob": zeta_row,
            },
            notes={"enforce_sensitivity": CLIP_NOTES[clip]}
            | ({} if chunk_size is not None else {"chunk_size": chunk_rule()}),
            params=net_rows,
        )
        after = {"spacing": derived, "chunk_size": chunks, "enforce_sensitivity": risk}
        params: dict[str, Param] = {}
        for name, param in option_rows.items():
            params[name] = param
            params |= after.get(name, {})
        return Plan(
            algorithm=self.name,
            spec=spec,
            budget=budget,
            params=params,
            guarantee=guarantee,
            cost=Cost(loss_evaluations=rows * n, steps=num_chunks),
            warm_start=warm,
            notes=tuple(notes),
            internal={"net": the_net, "clipped_loss": clip_fn},
        )

    def _run(self, rng_key: PRNGKey, plan: Plan, problem: Problem) -> PrivateResult:
        net = plan.internal["net"]
        # the loss that runs, clipped at the plan's public constants
        loss_fn, data = run_clipped(
            plan.internal.get("clipped_loss"), problem.loss_fn, problem.data
        )
        point, _ = stream_argmax(
            rng_key,
            data,
            jit_net(net),
            jnp.asarray(plan["inverse_temperature"], jnp.float64),
            loss_fn=loss_fn,
            chunk_size=plan["chunk_size"],
            num_chunks=plan["num_chunks"],
            show_progress=progress.is_enabled(),
        )
        info = NetInfo(
            net=plan["net"],
            net_size=plan["net_size"],
            num_candidates=net.num_candidates,
            covering_radius=plan["covering_radius"],
            spacing=plan["spacing"],
            theorem_radius=plan["theorem_radius"],
            inverse_temperature=plan["inverse_temperature"],
            sensitivity_oscillation=plan["sensitivity_oscillation"],
            epsilon=plan.budget.epsilon,
            n=problem.n,
            dim=problem.dim,
            chunk_size=plan["chunk_size"],
            num_chunks=plan["num_chunks"],
            loss_evaluations=plan.cost.loss_evaluations,
        )
        return PrivateResult(point, plan.guarantee, info)  # type: ignore[arg-type]


def exponential_mechanism(
    rng_key: PRNGKey,
    problem: Problem,
    *,
    epsilon: float,
    net: GridNet | PointNet | ArrayLike | None = None,
    spacing: float | None = None,
    chunk_size: int | None = None,
    max_points: int = MAX_POINTS,
    minimizer_gap: float = 0.0,
    enforce_sensitivity: bool = True,
    failure_prob: float | None = None,
) -> PrivateResult:
    r"""Exponential mechanism over a net of the ball ``K`` (Theorem 5.8), streamed.

    ``NetExponentialMechanism().solve(rng_key, problem, epsilon=epsilon, delta=0,
    ...)``: see :mod:`dpsample.nets.mechanism` for the mechanism, its default net, its
    guarantee and its floating-point caveat, and :class:`NetExponentialMechanism` for
    the plan (net, cost, bounds) it runs.

    Args:
        rng_key: PRNG key (consumed).
        problem: A :class:`dpsample.problem.Problem` whose domain is a
            :class:`~dpsample.domains.Ball`.
        epsilon: ``eps > 0`` (finite).
        net: A :class:`~dpsample.nets.GridNet` of the same ball, a
            :class:`~dpsample.nets.PointNet`, or an array of points ``(N, d)`` in
            ``K``; all must be data-independent. Exclusive with ``spacing``.
        spacing: Lattice spacing of the default grid net; overrides the theorem's
            radius (then ``eps n > d`` is not required).
        chunk_size: Candidates per chunk, a positive multiple of
            :data:`~dpsample.nets.stream.NOISE_BLOCK`; default: at most 65536,
            reduced so a chunk's ``(chunk, n)`` loss matrix stays within 32 MiB
            (on an accelerator: ``2^20`` and 2 GiB,
            :func:`~dpsample.nets.stream.auto_chunk_size`). It
            affects speed and memory only, not the output.
        max_points: Refuse nets with more than this many points.
        minimizer_gap: The declared ``g_W >= min_K F_D - inf F_D`` added to the
            warm-start bound ``psi`` of the plan (``0``: ``K`` holds a global
            minimizer).
        enforce_sensitivity: Clip every per-example loss so that the bound the
            sensitivity uses holds whatever the data (the default): into the cone
            :class:`ConeClippedLoss` when the Lipschitz route ``2 G D`` is used,
            into the declared interval :class:`RangeClippedLoss` when the range
            route ``2 B`` is used and ``loss_floor`` locates it; the tighter of
            the two enforceable routes is used. ``False`` (opt-in) runs the
            unclipped losses on the tightest declared bound, ``min(2 G D, 2 B,
            oscillation)``, including a range without a floor or a declared
            ``oscillation`` (a property of pairs, which no per-example clip
            enforces), and the guarantee is conditional on it
            (``privacy.assumptions``).
        failure_prob: ``zeta`` of the plan's warm-start bound (with probability at
            least ``1 - zeta`` the output's excess empirical risk is at most
            ``psi``); default ``sqrt(d)/(eps n)``.

    Returns:
        :class:`~dpsample.privacy.PrivateResult` with ``value`` the selected point
        (float64, shape ``(d,)``), ``privacy`` the ``eps``-DP exponential-mechanism
        guarantee and ``info`` a :class:`NetInfo` of public quantities: ``net``
        (``"grid"`` or ``"points"``), ``net_size``, ``num_candidates`` (the
        enumeration length, equal to ``net_size``), ``covering_radius``,
        ``spacing``, ``theorem_radius``, ``inverse_temperature``,
        ``sensitivity_oscillation``, ``epsilon``, ``n``, ``dim``, ``chunk_size``,
        ``num_chunks``, ``loss_evaluations``.

    Raises:
        ValueError: On invalid ``epsilon``, ``spacing``, ``chunk_size`` or net; if the
            domain is not a Ball; if ``eps n <= d`` without ``spacing``/``net``; or if
            the net exceeds ``max_points``.
        dpsample.errors.MissingConstantError: If no oscillation bound can be derived
            from the declared constants, or, enforced, if no bound can be enforced
            (neither ``G`` nor ``loss_range`` with ``loss_floor`` declared).

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> import dpsample
        >>> from dpsample.domains import Ball
        >>> from dpsample.problem import Problem
        >>> from dpsample.nets import exponential_mechanism
        >>> data = {"x": jnp.ones((50, 1)), "y": jnp.ones(50)}
        >>> loss = lambda x, z: -z["y"] * jnp.dot(z["x"], x)
        >>> problem = Problem(loss, data, Ball(1.0, dim=1), lipschitz=1.0)
        >>> res = exponential_mechanism(jax.random.key(0), problem, epsilon=1.0)
        >>> res.value.shape, res.info["net_size"], res.info["inverse_temperature"]
        ((1,), 27, 12.5)
        >>> res.privacy.epsilon(0.0)
        1.0
    """
    return NetExponentialMechanism().solve(
        rng_key,
        problem,
        epsilon=epsilon,
        delta=0.0,
        **call_options(locals()),
    )


#: Spacings beyond this many radii give the same grid net: no lattice point leaves it
#: any more (its reach is ``sqrt(d)/2`` lattice units to within ``1e-6``), so the
#: net's searches stop there.
_COARSEST_SPACING = 1e6


def _fitting_spacing(ball, spacing: float, max_points: int) -> float | None:
    """The first spacing ``spacing * 1.05^k`` whose net provably fits, or ``None``.

    Public bounds only: :func:`~dpsample.nets.grid.grid_net_rows_bound` on the row
    table and :func:`~dpsample.nets.grid.grid_net_size_bound` on the points. Both
    fall as the spacing grows, towards the floor of a grid whose reach is
    ``sqrt(d)/2`` lattice units (``3^d`` points): where even a spacing of
    ``10^6 R`` does not fit, none does (``None``).
    """
    d, radius, h = ball.dim, ball.radius, spacing

    def fits(h: float) -> bool:
        return (
            grid_net_rows_bound(d, radius, h) <= MAX_ROWS
            and grid_net_size_bound(d, radius, h) <= max_points
        )

    if not fits(max(h, _COARSEST_SPACING * radius)):
        return None
    while not fits(h):
        h *= 1.05
    return h


def _too_large(ball, spacing: float, max_points: int) -> PlanRefusal:
    """The refusal of a net too large to enumerate, searching a coarser spacing."""
    d, radius = ball.dim, ball.radius
    points = grid_net_size_bound(d, radius, spacing)
    rows = grid_net_rows_bound(d, radius, spacing)
    reason = (
        f"the grid net of spacing {spacing:.3g} (covering radius "
        f"{spacing * math.sqrt(d) / 2:.3g}) on the radius-{radius:.3g} ball in "
        f"dimension {d} is too large: up to {points:.3g} points (max_points="
        f"{max_points:,}) and a row table of up to {rows:.3g} rows (at most "
        f"{MAX_ROWS:,})"
    )
    start = _fitting_spacing(ball, spacing, max_points)
    if start is None:
        coarsest = _COARSEST_SPACING * radius  # the bounds' floor
        floor_points = grid_net_size_bound(d, radius, coarsest)
        floor_rows = grid_net_rows_bound(d, radius, coarsest)
        alternatives: list[tuple[dict[str, Any], str]] = []
        if floor_rows <= MAX_ROWS:
            alternatives.append(
                ({"max_points": math.ceil(floor_points)}, "the coarsest net then fits")
            )
        alternatives.append(({}, "a sampler whose cost does not grow like 3^d (gibbs)"))
        return PlanRefusal(
            reason,
            search=Search("spacing", spacing, factor=1.05, refine=False),
            none_works=True,
            why=(
                f"even the coarsest grid net in dimension {d} may hold up to "
                f"{floor_points:.3g} points (max_points={max_points:,}) and a row "
                f"table of {floor_rows:.3g} rows (at most {MAX_ROWS:,})"
            ),
            alternatives=tuple(alternatives),
        )
    return PlanRefusal(
        reason,
        search=Search(
            "spacing",
            start,
            factor=1.05,
            max_tries=400,
            refine=False,
        ),
        alternatives=(
            (
                {},
                "cap the compute with max_evaluations= (the theorem's net is then "
                "coarsened to fit it)",
            ),
        ),
    )


precision.scope_public(globals())
