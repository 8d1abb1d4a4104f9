r"""The JL method for generalised linear models (seed 003 section 8, spec 003 §2.8).

For a GLM loss ``f(w; (x, y)) = phi_y(<w, x>)`` the empirical risk depends on ``w``
only through ``<w, x_i>``, so a private stationary-point method can run in a
low-dimensional random projection of the features and its rate depends on the
projected dimension ``k`` instead of ``d``:

.. code-block:: text

    Phi    <- k x d matrix, i.i.d. N(0, 1/k) entries, from a PUBLIC key (no data)
    v_i    <- Phi x_i clipped to ||v_i|| <= 2 X_max                 (public rule)
    w~     <- inner algorithm M on {(v_i, y_i)} in R^k, budget (eps, delta), with
              the projected GLM's constants (G' = 2 |phi'| X_max, ...)
    return    Phi^T w~ in R^d

``k`` is Lemma 8.1's ``argmin_j [g(j) + L X_max / sqrt(j)]`` (``g`` the inner
method's stationarity rate shape at dimension ``j``), capped by a declared public
rank bound; Corollary 8.2's rate ``L/sqrt(n) + min(sqrt(r) r^{1/6}/(eps n),
(eps n)^{-3/7})`` is reported beside it.

Privacy correction (spec 003 B16): the paper runs ``M`` at ``(eps, delta/2)`` and
spends the other ``delta/2`` on the event that the projection stretches some
feature by more than 2 (then the doubled constants it declares are false). Here the
projected features are **clipped** to ``2 X_max``, so the projected problem's
constants hold for every dataset and every ``Phi``: for each fixed ``Phi`` the map
``D -> {(clip(Phi x_i), y_i)}`` sends replace-one neighbours to replace-one
neighbours, ``M`` is ``(eps, delta)``-DP on its input, ``Phi`` is independent of the
data, and ``Phi^T w~`` is post-processing. The guarantee is exactly the inner
plan's, at the whole ``(eps, delta)``: no data-dependent event is charged or
ignored. Clipping changes the projected features only on the JL event itself, which
affects utility only.

References:
    A. Lowy, J. Ullman and S. J. Wright, `How to make the gradients small privately
    <https://arxiv.org/abs/2402.11173>`_, ICML 2024 (Lemma 8.1, Corollary 8.2).
    R. Arora et al., `Faster rates of convergence to stationary points in
    differentially private optimization <https://arxiv.org/abs/2206.00846>`_, ICML
    2023 (Algorithm 4, Theorem 6.1).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from dpsample import registry
from dpsample._src import clipping, precision, validation
from dpsample.base import AlgorithmInfo, PrivateAlgorithm
from dpsample.bounds import theorem_3_2_stationarity_bound
from dpsample.bounds.jl import corollary_8_2_rate, lemma_8_1_dimension, net_psi_shape
from dpsample.domains import Ball, Unconstrained
from dpsample.losses import GLMLoss
from dpsample.options import call_options
from dpsample.pipelines.jl_options import (
    JLMethodOptions,
    _check_declared_constants,
    _check_family,
    _feature_bound,
    _glm_example,
)
from dpsample.pipelines.warm_start import WarmStart
from dpsample.plan import Budget, Param, Plan
from dpsample.privacy import PrivateResult
from dpsample.problem import Problem, ProblemSpec
from dpsample.types import Array, PRNGKey

__all__ = [
    "JLMethod",
    "JLMethodInfo",
    "corollary_8_2_rate",
    "jl_glm",
    "jl_projection",
    "lemma_8_1_dimension",
    "project_and_clip",
]

#: Factor by which the projected features may exceed ``X_max`` (the paper's 2).
STRETCH = 2.0
# The clip bound is shrunk by this relative margin so that the computed norm of a
# clipped feature is at most 2 X_max in floating point.
_CLIP_RTOL = 1e-12


def jl_projection(rng_key: PRNGKey, projection_dim: int, dim: int) -> Array:
    """The public ``k x d`` JL matrix: i.i.d. ``N(0, 1/k)`` entries from ``rng_key``.

    A function of the key and the public sizes only (never of the data).

    Args:
        rng_key: A JAX PRNG key (the JL method passes a subkey of its run key).
        projection_dim: ``k >= 1``.
        dim: ``d >= 1``.

    Returns:
        The ``(k, d)`` float64 matrix.

    Examples:
        >>> import jax
        >>> from dpsample.pipelines.jl import jl_projection
        >>> jl_projection(jax.random.key(0), 3, 5).shape
        (3, 5)
    """
    rng_key = validation.check_key(rng_key)
    k = validation.positive_int("projection_dim", projection_dim)
    d = validation.positive_int("dim", dim)
    return _projection(rng_key, k, d)


@functools.partial(jax.jit, static_argnums=(1, 2))
def _projection(rng_key: PRNGKey, k: int, d: int) -> Array:
    return jax.random.normal(rng_key, (k, d), jnp.float64) / math.sqrt(k)


@jax.jit
def _project_and_clip(phi: Array, x: Array, bound: Array) -> Array:
    """``clip(Phi x_i)`` for every row: norm at most ``bound`` (non-finite rows: 0)."""
    v = jnp.dot(x, phi.T, precision=jax.lax.Precision.HIGHEST)
    coef, finite = clipping.clip_coefficients(
        jnp.sum(v * v, axis=-1), jnp.ones(v.shape[0]), bound, jnp.float64
    )
    return jnp.where(finite[:, None], v, 0.0) * coef[:, None]


def project_and_clip(projection: Array, features: Array, clip_bound: float) -> Array:
    """``clip(Phi x_i)``: each projected feature with norm at most ``clip_bound``.

    Rows are scaled by ``min(1, C/||Phi x_i||)`` with ``C = clip_bound (1 - 1e-12)``
    (so that the computed norms stay below ``clip_bound`` in floating point); rows
    whose norm is not finite become 0. The JL method calls it with
    ``clip_bound = 2 X_max``.

    Args:
        projection: ``Phi``, shape ``(k, d)``.
        features: ``(n, d)`` rows ``x_i``.
        clip_bound: ``C > 0``.

    Returns:
        The ``(n, k)`` clipped projected features (float64).

    Examples:
        >>> import jax.numpy as jnp
        >>> from dpsample.pipelines.jl import project_and_clip
        >>> v = project_and_clip(jnp.eye(2), jnp.array([[3.0, 4.0], [0.3, 0.4]]), 1.0)
        >>> [round(float(t), 6) for t in jnp.linalg.norm(v, axis=1)]
        [1.0, 0.5]
    """
    bound = validation.positive("clip_bound", clip_bound) * (1.0 - _CLIP_RTOL)
    phi = jnp.asarray(projection, jnp.float64)
    x = jnp.asarray(features, jnp.float64)
    if phi.ndim != 2 or x.ndim != 2 or x.shape[1] != phi.shape[1]:
        raise ValueError(
            f"Expected Phi of shape (k, d) and features of shape (n, d), got "
            f"{phi.shape} and {x.shape}"
        )
    return _project_and_clip(phi, x, jnp.asarray(bound, jnp.float64))


@dataclasses.dataclass(frozen=True)
class JLMethodInfo(AlgorithmInfo):
    """Public facts of a :class:`JLMethod` run (``result.info``).

    Attributes:
        algorithm: ``"jl_glm"``.
        inner: Registry name of the inner algorithm.
        projection_dim: ``k``.
        projection: ``Phi`` (``(k, d)``), drawn from the public projection key
            (independent of the data; covered by the guarantee).
        projected_value: ``w~``, the inner algorithm's output in ``R^k``.
        feature_bound: ``X_max``.
        clip_bound: ``2 X_max``, the bound the projected features are clipped to.
        projected_constants: The declared constants of the projected problem.
        inner_radius: Radius of the inner problem's ball in ``R^k``.
        output_norm_bound: ``||Phi||_op`` times ``inner_radius`` (public).
        rank_bound: The declared rank bound, or ``None``.
        lemma_8_1_objective: ``g(k) + L/sqrt(k)`` at the chosen ``k`` (or ``None``
            when the inner algorithm has no rate shape).
        corollary_8_2_rate: Corollary 8.2's rate shape (:func:`corollary_8_2_rate`).
        inner_info: The inner algorithm's info.
    """

    algorithm: str
    inner: str
    projection_dim: int
    projection: Any
    projected_value: Any
    feature_bound: float
    clip_bound: float
    projected_constants: dict[str, float | None]
    inner_radius: float
    output_norm_bound: float
    rank_bound: int | None
    lemma_8_1_objective: float | None
    corollary_8_2_rate: float
    inner_info: Any


def _inner_object(inner: Any) -> PrivateAlgorithm:
    if inner is None:
        return WarmStart()
    if isinstance(inner, PrivateAlgorithm):
        if inner.kind == "sampler":
            raise ValueError(f"Expected a finder or a pipeline, got {inner!r}")
        return inner
    if isinstance(inner, str):
        return registry.create(inner)
    raise TypeError(f"Expected an algorithm object or name, got {inner!r}")


@jax.jit
def _clip_labels(y: Array, bound: Array) -> Array:
    """Labels clipped to ``[-bound, bound]`` (NaN labels become 0)."""
    yc = jnp.clip(y, -bound, bound)
    return jnp.where(jnp.isnan(yc), 0.0, yc).astype(y.dtype)


class JLMethod(PrivateAlgorithm):
    r"""The JL method for GLMs (seed 003 Lemma 8.1, Corollary 8.2) around ``inner``.

    ``JLMethod(inner, glm=..., projection_dim=...)``: ``inner`` is an algorithm
    object or registry name (default ``WarmStart()``, Algorithm 2) that runs on the
    projected, clipped features ``clip(Phi x_i)`` in ``R^k`` (module docstring);
    the output is ``Phi^T w~``.

    The plan (public numbers only):

    * ``glm`` (required): the :class:`~dpsample.losses.GLMLoss` family of the
      spec's loss, with its feature bound ``X_max`` (refused when missing). The
      projected problem's constants are ``glm.constants(feature_bound=2 X_max,
      radius=inner_radius)``: ``G' = 2 |phi'| X_max``, ``M' = 4 |phi''| X_max^2``,
      ``rho' = 8 |phi'''| X_max^3`` and the link's range (the spec's ``2 beta
      ||X||`` for the smoothness is ``4 beta X_max^2`` here: ``hess = phi'' v v^T``).
      The spec's loss function runs on the projected data, so it must be known to
      be this family's (issue 25: ``glm("sigmoid")`` on a logistic problem planned
      with constants 4 times too small): the plan refuses unless the problem's
      loss is ``glm`` itself, ``glm.loss_fn``, or a
      :class:`~dpsample.losses.GLMLoss` with the same link
      (:meth:`~dpsample.losses.Link.same_as`), and unless every constant the
      problem declares equals ``glm.constants(radius=R, label_bound=...)`` at the
      domain's radius ``R`` (relative ``1e-9``). A user's
      :class:`~dpsample.losses.Link` (not built by name) adds its declared sup
      bounds to ``guarantee.assumptions``.
    * ``label_bound``: labels are **clipped** to ``[-label_bound, label_bound]``
      in the data map (NaN labels to 0), by default at 1; a link whose constants
      hold for ``|y| <= label_max`` (logistic, sigmoid: 1) refuses a larger bound.
    * ``inner_radius``: the inner ball ``B_k(0, R')``; default ``2 R`` for a
      problem on ``Ball(R)`` centred at 0 (``||Phi w*|| <= 2 ||w*||`` off the JL
      event: utility only); required on ``Unconstrained``.
    * ``projection_dim`` ``k``: given, or Lemma 8.1's rule
      (:func:`lemma_8_1_dimension`) over ``1 <= j <= min(d, rank_bound)`` with
      ``g`` the inner method's rate shape: Theorem 3.2 at the net's ``psi`` in
      dimension ``j`` for a :class:`~dpsample.pipelines.WarmStart`, the inner's
      ``stationarity_rate`` at the cold gap ``loss_range'`` for a finder that has
      one; otherwise ``projection_dim`` is required. ``rank_bound`` is a
      **declared** public bound on the rank of the features (never computed from
      the data).
    * **Guarantee**: the inner plan's, at the whole budget ``(eps, delta)``
      (``plan.guarantee is plan.stage("inner").guarantee``); see the module
      docstring for why no ``delta/2`` is spent on the JL event.
    * ``plan.stages = (("inner", inner_plan),)``; the cost is the inner plan's.

    The run draws ``(key_projection, key_inner)`` from its key, builds ``Phi`` from
    ``key_projection`` (:func:`jl_projection`: the same ``Phi`` for any data), runs
    the inner plan with ``key_inner`` and returns ``Phi^T w~``.

    Examples:
        >>> import jax, numpy as np, dpsample
        >>> from dpsample import Budget
        >>> from dpsample.finders.dp_sgd import DPSGD
        >>> from dpsample.nets import NetExponentialMechanism
        >>> from dpsample.pipelines import JLMethod, WarmStart
        >>> rng = np.random.default_rng(0)
        >>> x = rng.normal(size=(300, 6)); x /= np.linalg.norm(x, axis=1)[:, None]
        >>> data = {"x": x, "y": np.sign(x[:, 0])}
        >>> loss = dpsample.losses.glm("sigmoid", feature_bound=1.0)
        >>> prob = dpsample.Problem(loss.loss_fn, data, dpsample.Ball(2.0, dim=6),
        ...     **loss.constants(radius=2.0)._asdict())
        >>> inner = WarmStart(NetExponentialMechanism(),
        ...     DPSGD(num_steps=20, sampling="full_batch"))
        >>> algo = JLMethod(inner, glm=loss, projection_dim=2)
        >>> plan = algo.plan(prob.spec, Budget(2.0, 1e-5))
        >>> plan["projection_dim"], plan.guarantee is plan.stage("inner").guarantee
        (2, True)
        >>> res = algo.run(jax.random.key(0), plan, prob.data)
        >>> res.value.shape, res.info.projection.shape, res.privacy is plan.guarantee
        ((6,), (2, 6), True)
    """

    name = "jl_glm"
    kind = "pipeline"
    seed = "003"
    theorem = "Lemma 8.1, Corollary 8.2 (Arora et al. 2023 Algorithm 4)"
    guarantee_type = (
        "the inner algorithm's (epsilon, delta), whole budget: projected features "
        "clipped to 2 X_max, so no delta is spent on the JL event"
    )
    summary = "a public JL projection of GLM features around an inner algorithm"
    options_type = JLMethodOptions

    def __init__(self, inner: Any = None, **options: Any):
        if inner is not None:
            options["inner"] = inner
        super().__init__(**options)

    def _plan(self, spec: ProblemSpec, budget: Budget, **options: Any) -> Plan:
        opts = JLMethodOptions.from_options(options)
        glm, inner, projection_dim = opts.glm, opts.inner, opts.projection_dim
        rank_bound, inner_options = opts.rank_bound, opts.inner_options
        # ---- public checks, before any private computation -----------------------
        epsilon, delta = validation.check_privacy(budget.epsilon, budget.delta)
        x_max = _feature_bound(glm)
        assert isinstance(glm, GLMLoss)
        example = _glm_example(spec)
        n, d = spec.n, spec.dim
        label_bound = validation.nonnegative("label_bound", opts.label_bound)
        label_max = glm.link.label_max
        if label_max is not None and label_bound > label_max:
            raise ValueError(
                f"Expected label_bound={label_bound!r} <= {label_max!r}: the "
                f"{glm.link.name} link's constants hold for labels |y| <= {label_max!r}"
            )
        if rank_bound is not None:
            rank_bound = validation.positive_int("rank_bound", rank_bound)
        if projection_dim is not None:
            projection_dim = validation.positive_int("projection_dim", projection_dim)
            if projection_dim > d:
                raise ValueError(
                    f"Expected projection_dim={projection_dim} <= d={d} (the JL method "
                    "reduces the dimension)"
                )
        if opts.inner_radius is not None:
            radius_in = validation.positive("inner_radius", opts.inner_radius)
        elif isinstance(spec.domain, Ball):
            center = spec.domain.center
            if center is not None and bool(np.any(np.asarray(center) != 0.0)):
                raise ValueError(
                    "the JL method projects w through 0: pass inner_radius= for a "
                    "ball not centred at 0"
                )
            radius_in = STRETCH * spec.domain.radius
        else:
            assert isinstance(spec.domain, Unconstrained)
            raise ValueError(
                "the JL method needs inner_radius= (the radius of the inner ball in "
                "R^k) for a problem on Unconstrained"
            )
        _check_family(spec, glm)
        _check_declared_constants(spec, glm, label_bound)
        inner_obj = _inner_object(inner)
        if inner_options is not None and not isinstance(inner_options, Mapping):
            raise TypeError(
                f"Expected inner_options to be a mapping, got {inner_options!r}"
            )
        i_options = dict(inner_options or {})
        clip_bound = STRETCH * x_max
        consts = glm.constants(
            feature_bound=clip_bound, radius=radius_in, label_bound=label_bound
        )
        big_l = glm.link.lipschitz * x_max  # the GLM's L ||X|| (Lemma 8.1)

        # ---- k: given, or Lemma 8.1's rule (public numbers only) -----------------
        cap = d if rank_bound is None else min(d, rank_bound)
        rate = self._rate(
            inner_obj, consts, diameter=2.0 * radius_in, n=n, budget=(epsilon, delta)
        )
        objective = None
        if projection_dim is None:
            if rate is None:
                raise ValueError(
                    f"{inner_obj.name} has no rate shape for Lemma 8.1's rule: pass "
                    "projection_dim="
                )
            k, objective = lemma_8_1_dimension(rate, lipschitz=big_l, max_dim=cap)
        else:
            k = projection_dim
            if rate is not None:
                objective = float(rate(k)) + big_l / math.sqrt(k)
        cor = corollary_8_2_rate(lipschitz=big_l, n=n, epsilon=epsilon, rank=cap)

        # ---- the projected problem and the inner plan ---------------------------
        proj_example = {
            "x": jax.ShapeDtypeStruct((k,), example["x"].dtype),
            "y": example["y"],
        }
        proj_spec = ProblemSpec(
            loss_fn=spec.loss_fn,
            n=n,
            dim=k,
            domain=Ball(radius_in, dim=k),
            example=proj_example,
            **consts._asdict(),
        )
        plan_in = inner_obj.plan(proj_spec, budget, **i_options)
        guarantee = plan_in.guarantee
        if glm.link.key is None:  # a user's Link: its sup bounds are declared
            guarantee = guarantee.assuming(
                f"the declared sup bounds of the link {glm.link.name!r} hold "
                f"(first to third derivatives at most {glm.link.lipschitz!r}, "
                f"{glm.link.smoothness!r}, {glm.link.third!r})"
            )
        if not guarantee.epsilon(delta) <= epsilon * (1.0 + 1e-9):
            raise RuntimeError("internal error: the inner plan overspends the budget")
        # the options' rows (sources and rules declared), in the table's order
        rows = opts.rows(
            resolved={
                "inner": inner_obj.name,
                "projection_dim": k,
                "inner_radius": radius_in,
                "label_bound": label_bound,
                "rank_bound": rank_bound,
            },
            params={} if rank_bound else {"rank_bound": Param(None, "default")},
        )
        params = {
            "inner": rows["inner"],
            "projection_dim": rows["projection_dim"],
            "feature_bound": Param(x_max, "user", "X_max of the GLM family"),
            "clip_bound": Param(clip_bound, "derived", "2 X_max"),
            **{o: rows[o] for o in ("label_bound", "inner_radius", "rank_bound")},
            "projected_lipschitz": Param(consts.lipschitz, "derived", "2 |phi'| X_max"),
            "projected_smoothness": Param(
                consts.smoothness, "derived", "4 |phi''| X_max^2"
            ),
            "lemma_8_1_objective": Param(objective, "derived", "g(k) + L/sqrt(k)"),
            "corollary_8_2_rate": Param(
                cor, "derived", "L/sqrt(n) + min(r^{2/3}/(eps n), (eps n)^{-3/7})"
            ),
        }
        return Plan(
            algorithm=self.name,
            spec=spec,
            budget=budget,
            params=params,
            guarantee=guarantee,
            cost=plan_in.cost,
            stages=(("inner", plan_in),),
            internal={
                "inner": inner_obj,
                "projected_constants": consts._asdict(),
            },
        )

    @staticmethod
    def _rate(
        inner: PrivateAlgorithm,
        consts: Any,
        *,
        diameter: float,
        n: int,
        budget: tuple[float, float],
    ) -> Any:
        """``g(j)``, the inner method's rate shape in dimension ``j`` (or ``None``)."""
        epsilon, delta = budget
        if consts.smoothness is None or consts.smoothness <= 0:
            return None
        rate: Any
        gap: Callable[[int], float]
        if isinstance(inner, WarmStart):
            # Algorithm 2: Theorem 3.2 at the finder's (eps/2, delta) from the net's psi
            rate, finder_epsilon = theorem_3_2_stationarity_bound, epsilon / 2.0
            gap = functools.partial(
                net_psi_shape,
                lipschitz=consts.lipschitz,
                loss_range=consts.loss_range,
                diameter=diameter,
                n=n,
                epsilon=epsilon,
            )
        else:  # a finder alone: its rate at the cold gap B'
            rate, finder_epsilon = getattr(inner, "stationarity_rate", None), epsilon
            if rate is None or consts.loss_range is None:
                return None
            cold_gap = consts.loss_range
            gap = lambda j: cold_gap  # noqa: E731

        return lambda j: rate(
            lipschitz=consts.lipschitz,
            smoothness=consts.smoothness,
            initial_gap=gap(j),
            dim=j,
            n=n,
            epsilon=finder_epsilon,
            delta=delta,
        )

    def _run(self, rng_key: PRNGKey, plan: Plan, problem: Problem) -> PrivateResult:
        inner: PrivateAlgorithm = plan.internal["inner"]
        plan_in = plan.stage("inner")
        k, d = plan["projection_dim"], plan.spec.dim
        key_projection, key_inner = jax.random.split(rng_key)
        phi = _projection(key_projection, k, d)
        data = {
            "x": project_and_clip(phi, problem.data["x"], plan["clip_bound"]),
            "y": _clip_labels(
                jnp.asarray(problem.data["y"]),
                jnp.asarray(plan["label_bound"], jnp.float64),
            ),
        }
        res = inner.run(key_inner, plan_in, data)
        w_k = jnp.asarray(res.value, jnp.float64)
        value = jnp.dot(phi.T, w_k, precision=jax.lax.Precision.HIGHEST)
        # ||phi||_2 is an SVD (work depends on its input), but phi is drawn from the
        # key alone and released in info: its time reveals nothing of the data.
        info = JLMethodInfo(
            algorithm=self.name,
            inner=inner.name,
            projection_dim=k,
            projection=phi,
            projected_value=w_k,
            feature_bound=plan["feature_bound"],
            clip_bound=plan["clip_bound"],
            projected_constants=dict(plan.internal["projected_constants"]),
            inner_radius=plan["inner_radius"],
            output_norm_bound=float(jnp.linalg.norm(phi, 2)) * plan["inner_radius"],
            rank_bound=plan["rank_bound"],
            lemma_8_1_objective=plan["lemma_8_1_objective"],
            corollary_8_2_rate=plan["corollary_8_2_rate"],
            inner_info=res.info,
        )
        return PrivateResult(value, plan.guarantee, info)  # type: ignore[arg-type]


def jl_glm(
    rng_key: PRNGKey,
    problem: Problem,
    *,
    epsilon: float,
    delta: float,
    glm: GLMLoss,
    inner: PrivateAlgorithm | str | None = None,
    projection_dim: int | None = None,
    rank_bound: int | None = None,
    inner_radius: float | None = None,
    label_bound: float = 1.0,
    inner_options: Mapping[str, Any] | None = None,
    max_evaluations: int | None = None,
) -> PrivateResult:
    r"""The JL method for GLMs: ``JLMethod(inner).solve(...)`` (see :class:`JLMethod`).

    Privacy:
        Replace-one neighbours. The guarantee is the inner algorithm's on the
        projected problem at the whole ``(epsilon, delta)``: the projection is
        drawn from a public subkey independently of the data, the projected
        features are clipped to ``2 X_max`` so the projected constants (derived
        from ``glm``'s link and ``X_max``) hold for every dataset, and the output
        ``Phi^T w~`` is post-processing. No ``delta`` share is spent on the JL
        event (the paper's ``delta/2``).

    Args:
        rng_key: A JAX PRNG key (split into the projection key and the inner key).
        problem: A GLM :class:`~dpsample.problem.Problem` with data
            ``{"x": (n, d), "y": (n,)}``, loss ``glm`` or ``glm.loss_fn`` (or a
            GLMLoss with ``glm``'s link) and ``glm``'s constants.
        epsilon: Total epsilon ``> 0``.
        delta: Total delta in ``(0, 1)``.
        glm: The :class:`~dpsample.losses.GLMLoss` family, with ``feature_bound``
            (``None`` is refused).
        inner: The inner algorithm (object or name; default ``WarmStart()``).
        projection_dim: ``k`` (default: Lemma 8.1's rule).
        rank_bound: A declared public bound on the features' rank.
        inner_radius: Radius of the inner ball (default ``2 R``).
        label_bound: Labels are clipped to ``[-label_bound, label_bound]``
            (ranges of regression links; at most the link's ``label_max``).
        inner_options: Plan options of the inner algorithm.
        max_evaluations: Compute budget, passed to the inner plan.

    Returns:
        :class:`~dpsample.privacy.PrivateResult`: ``value = Phi^T w~`` in ``R^d``,
        ``privacy`` the inner guarantee, ``info`` a :class:`JLMethodInfo`.

    Raises:
        ValueError, TypeError, dpsample.errors.MissingConstantError: Bad input
            (no ``X_max``, not GLM-shaped data, a loss not known to be ``glm``'s,
            declared constants that are not ``glm``'s, ``k < 1`` or ``k > d``, a
            bad budget), before any private computation.

    Examples:
        >>> import jax, numpy as np, dpsample
        >>> from dpsample.pipelines import WarmStart, jl_glm
        >>> rng = np.random.default_rng(1)
        >>> x = rng.normal(size=(300, 5)); x /= np.linalg.norm(x, axis=1)[:, None]
        >>> loss = dpsample.losses.glm("sigmoid", feature_bound=1.0)
        >>> prob = dpsample.Problem(loss.loss_fn, {"x": x, "y": np.sign(x[:, 1])},
        ...     dpsample.Ball(2.0, dim=5), **loss.constants(radius=2.0)._asdict())
        >>> res = jl_glm(jax.random.key(0), prob, epsilon=2.0, delta=1e-5, glm=loss,
        ...     projection_dim=1, inner=WarmStart("net", "dp_sgd",
        ...     finder_options={"num_steps": 10, "sampling": "full_batch"}))
        >>> res.value.shape, res.privacy.epsilon(1e-5) <= 2.0
        ((5,), True)
    """
    options = call_options(locals())
    cap = options.pop("max_evaluations")
    return JLMethod().solve(
        rng_key,
        problem,
        epsilon=epsilon,
        delta=delta,
        max_evaluations=cap,
        **options,
    )


precision.scope_public(globals())
