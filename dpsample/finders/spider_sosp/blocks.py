r"""Stochastic Spider SOSP's building blocks: its plan and its Algorithm 1 alone.

:func:`plan_spider` is :class:`~dpsample.finders.spider_sosp.finder.SpiderSOSP`'s plan
of a problem; :func:`stochastic_spider` runs that plan's Algorithm 1 and releases all
its iterates with the oracle releases' guarantee (no selection). The whole finder,
Algorithm 1 then Algorithm 2's private selection, is
:func:`~dpsample.finders.spider_sosp.finder.spider_sosp`.
"""

from __future__ import annotations

from typing import Any

from dpsample._src import precision, validation
from dpsample.finders.spider_sosp.algorithm1 import algorithm_1
from dpsample.finders.spider_sosp.finder import SpiderSOSP
from dpsample.finders.spider_sosp.schedule import check_unconstrained_domain
from dpsample.plan import Budget, Plan
from dpsample.privacy import PrivateResult
from dpsample.problem import Problem, ProblemSpec, check_problem
from dpsample.types import ArrayLike, PRNGKey

__all__ = ["plan_spider", "stochastic_spider"]


def stochastic_spider(
    rng_key: PRNGKey,
    problem: Problem,
    plan: Plan,
    *,
    x0: ArrayLike | None = None,
    permutation: ArrayLike | None = None,
) -> PrivateResult:
    r"""Algorithm 1 of seed 000 with the O1 cap (a building block of SpiderSOSP).

    Runs the Algorithm 1 of a :class:`SpiderSOSP` plan (from :func:`plan_spider` or
    ``SpiderSOSP().plan(...)``) and releases **all** its ``T`` iterates with the
    guarantee of the oracle releases alone (no selection): what :meth:`SpiderSOSP.run`
    feeds to Algorithm 2, for callers that select or plot the iterates themselves.

    The single running-state form of spec 000 §2.2 (E8), exactly ``T`` iterations
    (E9): state ``x = x0``, ``g_prev = 0``, ``drift = kappa``, ``frozen = 1``; per
    step, **kick** if :math:`\|g_{prev}\| \le \alpha_{kick}` and ``frozen <= 0``
    (``g = O1(x) + N(0, \zeta_1^2/d\, I)``, ``frozen = Gamma``, ``drift = 0``), else a
    **drift reset** if ``drift >= kappa`` (``g = O1(x)``), else
    ``g = g_prev + O2(x, x_prev)``; then :math:`x \leftarrow x - \eta g` and ``drift
    += ||x_next - x||^2``. Before any O1 call the counter is checked against
    ``plan["max_o1_calls"]``; if the call would exceed it, the run stops
    (``cap_hit``) and the caller must release data-independent points (E7). Kick O1
    calls are counted (E12). With ``kick_mode="perturb"`` the kick only perturbs the
    move and calls no oracle.

    The oracles are the plan's :func:`~dpsample.finders.oracles.first_kind` /
    :func:`~dpsample.finders.oracles.second_kind`: full batch for the empirical
    variant (Eq. (2)); for the population variant (Eq. (3)) ``problem`` must hold
    :math:`D_1` (``plan["n_train"]`` examples) and ``permutation`` a public
    permutation of its indices, consumed sequentially (``b1`` per O1 call, ``b2`` per
    O2 call, both points of an O2 call on the same batch, E37), so no example is used
    twice. The whole loop is one ``lax.scan`` with ``lax.switch`` branches, jitted on
    the oracles' static structure only: repeated calls with other keys, other data of
    the same shape or another privacy level (same ``T`` and batch sizes) reuse one
    compilation.

    Args:
        rng_key: a PRNG key (consumed).
        problem: the data the oracles see (all of ``D``, or :math:`D_1`), on
            :class:`~dpsample.domains.Unconstrained`.
        plan: a :class:`SpiderSOSP` plan.
        x0: the public initial point (default the plan's ``x0``).
        permutation: public permutation of ``range(problem.n)`` (population only).

    Returns:
        ``PrivateResult(iterates, privacy, info)``: the ``(T, d)`` iterates
        :math:`x_1, \dots, x_T`; the guarantee of the oracle releases (charged for
        the cap ``N1_max`` and ``T``, a privacy filter: valid for zCDP/RDP, Feldman &
        Zrnic 2021, and for Gaussian DP, Smith & Thakurta 2022; one release of each
        kind for fresh batches, by parallel composition); and a
        :class:`StochasticSpiderInfo`.

    Raises:
        TypeError: ``plan`` is not a :class:`SpiderSOSP` plan.
        ValueError: a bounded domain, data that do not match the plan, a bad ``x0``
            or a missing or mis-sized permutation (before any private computation).

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> from dpsample import Problem
        >>> from dpsample.domains import Unconstrained
        >>> from dpsample.finders.spider_sosp import plan_spider, stochastic_spider
        >>> prob = Problem(lambda x, z: jnp.sum(jnp.cos(x - z)), jnp.zeros((1000, 2)),
        ...                Unconstrained(2), lipschitz=1.5, smoothness=1.0,
        ...                hessian_lipschitz=1.0, loss_range=4.0)
        >>> plan = plan_spider(prob, epsilon=1.0, delta=1e-5, num_iters=50)
        >>> res = stochastic_spider(jax.random.key(0), prob, plan, x0=jnp.ones(2))
        >>> n1 = res.info.n_o1_drift + res.info.n_o1_kick
        >>> res.value.shape, n1 <= plan["max_o1_calls"]
        ((50, 2), True)
    """
    rng_key = validation.check_key(rng_key)
    problem = check_problem(problem)
    check_unconstrained_domain(problem.domain, problem.dim, "stochastic_spider")
    if not isinstance(plan, Plan) or plan.algorithm != SpiderSOSP.name:
        raise TypeError(
            f"Expected a {SpiderSOSP.name} plan (plan_spider), got {plan!r}"
        )
    start = plan["x0"] if x0 is None else problem.spec.check_start(x0)
    xs, info = algorithm_1(rng_key, plan, problem, start, permutation)
    return PrivateResult(xs, plan.internal["alg1_guarantee"], info)  # type: ignore[arg-type]


def plan_spider(
    problem: Problem | ProblemSpec,
    *,
    epsilon: float,
    delta: float,
    **options: Any,
) -> Plan:
    r"""The :class:`SpiderSOSP` plan of a problem (public inputs only).

    ``SpiderSOSP().plan(problem.spec, Budget(epsilon, delta), **options)``: the
    schedule of Theorem 4.2 / 4.6 with the exact zCDP calibration, for
    :func:`stochastic_spider` or to read before running. Only ``n``, ``d``, the
    domain and the declared constants are read.

    Args:
        problem: A :class:`~dpsample.problem.Problem` or its
            :class:`~dpsample.problem.ProblemSpec`.
        epsilon: Target epsilon.
        delta: Target delta.
        **options: Options of :class:`SpiderSOSP` (see :func:`spider_sosp`).

    Returns:
        The frozen :class:`~dpsample.plan.Plan`; ``plan["num_iters"]`` etc. are the
        values of :data:`PLAN_FIELDS`.

    Raises:
        ValueError, MissingConstantError: As :func:`spider_sosp`.

    Examples:
        >>> import jax.numpy as jnp
        >>> from dpsample import Problem
        >>> from dpsample.domains import Unconstrained
        >>> from dpsample.finders.spider_sosp import plan_spider
        >>> prob = Problem(lambda x, z: jnp.sum(jnp.cos(x - z)), jnp.zeros((1000, 2)),
        ...                Unconstrained(2), lipschitz=1.5, smoothness=1.0,
        ...                hessian_lipschitz=1.0, loss_range=4.0)
        >>> plan = plan_spider(prob, epsilon=1.0, delta=1e-5, num_iters=50)
        >>> plan["num_iters"], plan.source("num_iters"), plan.spent_epsilon() <= 1.0
        (50, 'user', True)
    """
    return SpiderSOSP().plan(problem, Budget(epsilon, delta), **options)


precision.scope_public(globals())
