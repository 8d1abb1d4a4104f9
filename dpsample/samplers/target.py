"""The regularised Gibbs target shared by every sampler (seed 000, Sec. 5.1).

Also what the samplers' modules share: :class:`StepSizeWarning`, the start-point
check :func:`check_position`, the static/traced split of a target for compiled cores
(:meth:`GibbsTarget.functional`, :class:`TargetStructure`), the float64 scope of
the kernels the library returns (:func:`scoped_kernel`, :func:`scoped_for_target`)
and the one ``init``/``step`` helper of every ``as_top_level_api``
(:func:`build_sampling_algorithm`).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
from collections.abc import Callable
from typing import Any, NamedTuple, TypeAlias, TypeVar, cast

import jax
import jax.numpy as jnp
import numpy as np
from blackjax.base import SamplingAlgorithm
from jax.interpreters import partial_eval

from dpsample._src import precision, validation
from dpsample.domains import Ball, require_member
from dpsample.problem import CONSTANTS, Problem, ProblemSpec
from dpsample.types import Array, ArrayLike, ArrayLikeTree, PRNGKey

__all__ = [
    "X64_TRACE_MESSAGE",
    "GibbsTarget",
    "StepSizeWarning",
    "Target",
    "TargetStructure",
    "build_sampling_algorithm",
    "check_position",
    "check_target",
    "compiled_when_eager",
    "scoped_for_target",
    "scoped_kernel",
]

F = TypeVar("F", bound=Callable[..., Any])

#: Why a sampler kernel refuses to be traced by a ``jit``/``scan`` in 32-bit mode.
X64_TRACE_MESSAGE = (
    "dpsample's sampler kernels compute in float64 and draw float64 random numbers; "
    "JAX lowers a jit (or lax.scan) under the caller's configuration, and in 32-bit "
    "mode it cannot lower float64 random draws. Run your jitted function inside "
    "`with jax.enable_x64(True):` (its trace and lowering then happen in 64-bit "
    "mode), or enable x64 for the program (jax.config.update('jax_enable_x64', True))"
)


class StepSizeWarning(UserWarning):
    """A sampler step size beyond what its theory covers.

    The proximal sampler warns above ``1/(8 beta^2 G^2)`` (GLL's acceptance bound
    and the TV bookkeeping of :func:`~dpsample.samplers.proximal.schedule` are lost);
    projected Langevin warns at ``h >= 1/(beta (M + mu))`` (the Euler step is
    unstable; its trajectory privacy bound is unaffected).
    """


class GibbsTarget(NamedTuple):
    r"""The target ``pi(x) ∝ exp(-beta (F_D(x) + mu/2 ||x||^2))`` on the ball ``K``.

    .. math::
        \pi(x) \propto \exp\big(-\beta (F_D(x) + \tfrac{\mu}{2}\|x\|^2)\big)
        \,\mathbf{1}_K(x).

    The potential ``beta (F_D + mu/2 ||x||^2)`` is ``beta mu``-strongly convex in its
    regulariser part (not ``mu``: spec 000 erratum E26).

    Attributes:
        problem: the :class:`~dpsample.problem.Problem` (its domain must be a Ball).
        beta: inverse temperature, > 0.
        mu: regularisation strength, >= 0.

    Examples:
        >>> import jax.numpy as jnp
        >>> import dpsample
        >>> from dpsample import Ball, Problem
        >>> from dpsample.samplers.target import GibbsTarget
        >>> data = {"x": jnp.ones((4, 1)), "y": jnp.ones(4)}
        >>> problem = Problem(lambda x, z: jnp.abs(x[0] - z["y"]), data,
        ...                   Ball(2.0, dim=1), lipschitz=1.0)
        >>> target = GibbsTarget.create(problem, beta=3.0, mu=0.5)
        >>> float(target.potential(jnp.array([1.0])))
        0.75
        >>> float(target.logdensity(jnp.array([5.0])))
        -inf
    """

    problem: Problem
    beta: float
    mu: float

    @classmethod
    def create(
        cls, problem: Problem | ProblemSpec, *, beta: float, mu: float
    ) -> GibbsTarget:
        """Validate ``beta > 0``, ``mu >= 0`` and a Ball domain, then build.

        ``problem`` may also be a :class:`~dpsample.problem.ProblemSpec`: a
        *planned* target, enough for its privacy bounds and schedules (which read
        public values only) but not for the kernels or the density (no data).
        """
        if not isinstance(problem, Problem | ProblemSpec):
            raise TypeError(f"Expected a Problem, got {type(problem).__name__}")
        if not isinstance(problem.domain, Ball):
            raise ValueError("the Gibbs target needs a Ball domain K")
        return cls(
            cast(Problem, problem),  # a spec: a planned target (no kernels)
            validation.positive("beta", beta),
            validation.nonnegative("mu", mu),
        )

    @classmethod
    def from_loss(
        cls,
        loss_fn: Callable[[Array, Any], Array],
        data: ArrayLikeTree,
        domain: Ball,
        *,
        beta: float,
        mu: float = 0.0,
        **constants: float | None,
    ) -> GibbsTarget:
        r"""The Gibbs target of a per-example loss: the private samplers' adapter.

        Where BlackJAX takes a ``logdensity_fn``, a private sampler needs the
        per-example structure its guarantee is stated for: the loss
        ``loss_fn(x, z)`` of one example ``z``, the data (one example per leading
        row), the ball ``K`` and the declared constants (``lipschitz=G`` above
        all). This builds ``Problem(loss_fn, data, domain, **constants)`` and then
        :meth:`create`; the target's log-density is
        ``-beta (mean_i loss_fn(x, z_i) + mu/2 ||x||^2)`` on ``K``.

        Args:
            loss_fn: Per-example loss ``loss_fn(x, z) -> scalar``, ``x`` of shape
                ``(d,)``.
            data: The examples (an array or a pytree of arrays, ``n`` rows).
            domain: The ball ``K``.
            beta: Inverse temperature, > 0.
            mu: Regularisation strength, >= 0 (default 0).
            **constants: The declared constants of
                :class:`~dpsample.problem.Problem` (``lipschitz``,
                ``smoothness``, ``loss_range``, ...) and ``dim``.

        Returns:
            The :class:`GibbsTarget`.

        Raises:
            TypeError: ``loss_fn`` not callable, or an unknown constant.
            ValueError: A bad ``beta``/``mu`` or a domain that is not a Ball.

        Examples:
            >>> import jax.numpy as jnp
            >>> from dpsample import Ball
            >>> from dpsample.samplers.target import GibbsTarget
            >>> t = GibbsTarget.from_loss(lambda x, z: jnp.abs(x[0] - z),
            ...                           jnp.zeros(4), Ball(1.0, dim=1),
            ...                           beta=2.0, mu=1.0, lipschitz=1.0)
            >>> t.problem.n, t.problem.lipschitz, float(t.potential(jnp.ones(1)))
            (4, 1.0, 3.0)
        """
        problem = Problem(loss_fn, data, domain, **constants)  # type: ignore[arg-type]
        return cls.create(problem, beta=beta, mu=mu)

    def potential(self, x: ArrayLike) -> Array:
        """``beta (F_D(x) + mu/2 ||x||^2)`` (finite everywhere; K is not applied)."""
        x = jnp.asarray(x, jnp.float64)
        return self.beta * (
            self.problem.empirical_risk(x) + 0.5 * self.mu * jnp.sum(x**2)
        )

    def logdensity(self, x: ArrayLike) -> Array:
        """Unnormalised log-density: ``-potential(x)`` on K, ``-inf`` outside."""
        x = jnp.asarray(x, jnp.float64)
        inside = self.problem.domain.contains(x, atol=0.0)
        return jnp.where(inside, -self.potential(x), -jnp.inf)

    def functional(self) -> tuple[TargetStructure, dict[str, Any]]:
        """Split the target into its static structure and its traced operands.

        Returns ``(structure, operands)``: ``structure`` is hashable, equal for
        targets of equal loss function, ``n``, dimension, ball and constants (so it
        can be a static argument of ``jax.jit``); ``operands = {"data", "beta",
        "mu"}`` is a pytree to pass traced. ``structure.bind(**operands)`` rebuilds
        the target inside the trace. A compiled chain keyed this way compiles once
        per structure and shapes, whatever the data, ``beta`` or ``mu``.

        Examples:
            >>> import jax.numpy as jnp
            >>> from dpsample import Ball, Problem
            >>> from dpsample.samplers.target import GibbsTarget
            >>> loss = lambda x, z: jnp.abs(x[0] - z)
            >>> def target(data, beta):
            ...     p = Problem(loss, data, Ball(1.0, dim=1), lipschitz=1.0)
            ...     return GibbsTarget.create(p, beta=beta, mu=1.0)
            >>> (s1, _), (s2, ops) = (target(jnp.zeros(3), 1.0).functional(),
            ...                       target(jnp.ones(3), 2.0).functional())
            >>> s1 == s2, float(s2.bind(**ops).potential(jnp.zeros(1)))
            (True, 2.0)
        """
        problem = self.problem
        if not isinstance(problem, Problem):
            raise TypeError("a planned target (from a ProblemSpec) holds no data")
        ball = problem.domain
        assert isinstance(ball, Ball)  # checked by create
        template = copy.copy(problem)
        template.data = None  # the structure never holds (private) data
        center = (
            None
            if ball.center is None
            else tuple(float(v) for v in np.asarray(ball.center).ravel())
        )
        structure = TargetStructure(
            loss_fn=problem.loss_fn,
            n=problem.n,
            dim=problem.dim,
            radius=float(ball.radius),
            center=center,
            constants=tuple(getattr(problem, c) for c in CONSTANTS),
            template=template,
        )
        return structure, {"data": problem.data, "beta": self.beta, "mu": self.mu}


@dataclasses.dataclass(frozen=True)
class TargetStructure:
    """The static part of a :class:`GibbsTarget` (see :meth:`GibbsTarget.functional`).

    Hashable and compared by value: the loss function, ``n``, the dimension, the
    ball (radius and centre) and the declared constants. It holds no data.

    Attributes:
        loss_fn: The per-example loss.
        n: Number of examples.
        dim: Dimension ``d``.
        radius: The ball's radius.
        center: The ball's centre as a tuple (``None``: the origin).
        constants: The declared constants, in :data:`dpsample.problem.CONSTANTS`
            order.
        template: A data-free copy of the problem (not compared).
    """

    loss_fn: Callable[..., Any]
    n: int
    dim: int
    radius: float
    center: tuple[float, ...] | None
    constants: tuple[float | None, ...]
    template: Problem = dataclasses.field(compare=False, repr=False)

    def bind(self, data: Any, beta: Any, mu: Any) -> GibbsTarget:
        """The target on ``data`` at ``(beta, mu)`` (traced values allowed)."""
        problem = copy.copy(self.template)
        problem.data = data
        return GibbsTarget(problem, beta, mu)


def _under_jaxpr_trace(tree: Any) -> bool:
    """Whether a leaf is being traced into a jaxpr (``jit``, ``scan``, ...)."""
    for leaf in jax.tree.leaves(tree):
        while isinstance(leaf, jax.core.Tracer):
            if isinstance(leaf, partial_eval.DynamicJaxprTracer):
                return True
            inner = getattr(leaf, "val", None)
            leaf = getattr(leaf, "primal", None) if inner is None else inner
    return False


def compiled_when_eager(fn: F, static_argnums: tuple[int, ...]) -> F:
    """``fn``, compiled with ``jax.jit`` when called eagerly.

    A call whose array arguments are all concrete and whose static arguments hash
    goes through ``jax.jit(fn, static_argnums=static_argnums)`` (compiled once per
    static value): the fixed-budget oracle is hundreds of small operations, slow one
    by one. Any other call (inside a caller's ``jit``, ``scan`` or ``vmap``, or with
    a target whose ``beta`` is traced) runs ``fn`` itself, traced as before. Both give
    the same results.

    Args:
        fn: The function (a call with keyword arguments runs it as it is).
        static_argnums: Positions of the arguments to compile per value.

    Returns:
        The dispatching function.

    Examples:
        >>> import jax.numpy as jnp
        >>> from dpsample.samplers.target import compiled_when_eager
        >>> f = compiled_when_eager(lambda x, k: x * k, static_argnums=(1,))
        >>> float(f(jnp.asarray(2.0), 3))
        6.0
    """
    compiled = jax.jit(fn, static_argnums=static_argnums)

    @functools.wraps(fn)
    def dispatch(*args: Any, **kwargs: Any) -> Any:
        if kwargs or len(args) <= max(static_argnums):  # keywords: run as written
            return fn(*args, **kwargs)
        static = [args[i] for i in static_argnums]
        try:
            hash(tuple(static))
        except TypeError:
            return fn(*args)
        if any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree.leaves(args)):
            return fn(*args)
        return compiled(*args)

    return dispatch  # type: ignore[return-value]


def scoped_kernel(fn: F) -> F:
    """Scope a kernel (or ``step``) the library returns to float64.

    The returned function runs ``fn`` inside :func:`dpsample._src.precision.float64`,
    so it computes in float64 whatever the caller's ``jax_enable_x64``. Traced by a
    ``jit`` or ``lax.scan`` in 32-bit mode, it raises ``RuntimeError``
    (:data:`X64_TRACE_MESSAGE`) instead of JAX's lowering error: JAX lowers the
    caller's program under the caller's configuration, where float64 random draws
    cannot be lowered; calling the jitted function inside
    ``with jax.enable_x64(True):`` works and gives the 64-bit results.
    """
    inner = precision.scoped(fn)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if not jax.config.read("jax_enable_x64") and _under_jaxpr_trace((args, kwargs)):
            raise RuntimeError(X64_TRACE_MESSAGE)
        return inner(*args, **kwargs)

    setattr(wrapper, precision.MARKER, True)
    return wrapper  # type: ignore[return-value]


#: What a sampler of this package runs on: the private route's
#: :class:`GibbsTarget`, or (MALA and Langevin only) a BlackJAX-style
#: ``logdensity_fn(position) -> scalar`` on any pytree of positions.
Target: TypeAlias = GibbsTarget | Callable[[Any], Array]

#: Named in the refusal of a plain function by the samplers that need a GibbsTarget.
FROM_LOSS_HINT = (
    "build one from your per-example loss with "
    "GibbsTarget.from_loss(loss_fn, data, domain, beta=..., mu=..., lipschitz=...) "
    "(dpsample.samplers.target)"
)


def check_target(target: Any, *, sampler: str, logdensity: bool = True) -> Any:
    """Check that ``target`` is a :class:`GibbsTarget` or, if allowed, a function.

    Args:
        target: The sampler's target.
        sampler: The sampler's name (for the message).
        logdensity: Whether a plain ``logdensity_fn`` is accepted (MALA, Langevin).
            The proximal sampler's privacy needs per-example structure: it refuses
            a function with a message naming :meth:`GibbsTarget.from_loss`.

    Returns:
        ``target`` unchanged.

    Raises:
        TypeError: Anything else.

    Examples:
        >>> from dpsample.samplers.target import check_target
        >>> f = lambda x: -x @ x
        >>> check_target(f, sampler="mala") is f
        True
        >>> try:
        ...     check_target(f, sampler="proximal", logdensity=False)
        ... except TypeError as e:
        ...     print(str(e)[:53])
        the proximal sampler needs a GibbsTarget (its privacy
    """
    if isinstance(target, GibbsTarget):
        return target
    if callable(target):
        if logdensity:
            return target
        raise TypeError(
            f"the {sampler} sampler needs a GibbsTarget (its privacy rests on the "
            f"per-example losses, which a log-density function hides), got the "
            f"function {getattr(target, '__name__', type(target).__name__)!r}: "
            + FROM_LOSS_HINT
        )
    wanted = "a GibbsTarget or a logdensity_fn" if logdensity else "a GibbsTarget"
    raise TypeError(f"Expected {wanted} for {sampler}, got {type(target).__name__}")


def scoped_for_target(fn: F, argnum: int = 1) -> F:
    """Scope ``fn`` to float64 when its argument ``argnum`` is a GibbsTarget.

    The private route (a :class:`GibbsTarget`) runs inside :func:`scoped_kernel`
    (float64 whatever the caller's ``jax_enable_x64``: the samplers' privacy
    arguments are made in float64); a plain ``logdensity_fn`` runs in the
    caller's precision, as BlackJAX's kernels do (float32 positions stay
    float32 in 32-bit mode). The returned function counts as scoped
    (:func:`dpsample._src.precision.is_scoped`): its precision is decided here.

    Examples:
        >>> import jax.numpy as jnp
        >>> from dpsample.samplers.target import scoped_for_target
        >>> f = scoped_for_target(lambda x, target: jnp.asarray(x) * 2, argnum=1)
        >>> str(f(jnp.float32(1.0), lambda p: p).dtype)
        'float32'
    """
    private = scoped_kernel(fn)

    @functools.wraps(fn)
    def dispatch(*args: Any, **kwargs: Any) -> Any:
        target = args[argnum] if len(args) > argnum else kwargs.get("target")
        if isinstance(target, GibbsTarget):
            return private(*args, **kwargs)
        return fn(*args, **kwargs)

    setattr(dispatch, precision.MARKER, True)
    return dispatch  # type: ignore[return-value]


def build_sampling_algorithm(
    kernel: Callable[..., tuple[Any, Any]],
    init: Callable[..., Any],
    target: Any,
    kernel_args: tuple[Any, ...] = (),
) -> SamplingAlgorithm:
    """The one ``as_top_level_api`` helper: ``SamplingAlgorithm(init, step)``.

    As BlackJAX's ``build_sampling_algorithm``: ``init(position, rng_key=None)``
    calls ``init(position, target)`` and ``step(rng_key, state)`` calls
    ``kernel(rng_key, state, target, *kernel_args)``, the target and the
    parameters closed over, so ``jax.jit(algo.step)(key, state)`` needs no
    ``static_argnums``, and ``blackjax.util.run_inference_algorithm`` runs it.
    With a :class:`GibbsTarget` both run in float64 (:func:`scoped_kernel`; a
    ``jit`` of ``step`` in 32-bit mode must then be called inside
    ``with jax.enable_x64(True):``); with a plain ``logdensity_fn`` they run in
    the caller's precision.

    Args:
        kernel: ``kernel(rng_key, state, target, *kernel_args) -> (state, info)``.
        init: ``init(position, target) -> state``.
        target: A :class:`GibbsTarget` or a ``logdensity_fn``.
        kernel_args: The kernel's parameters (step size, ...).

    Returns:
        A ``blackjax.base.SamplingAlgorithm``.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> from dpsample.samplers import mala
        >>> from dpsample.samplers.target import build_sampling_algorithm
        >>> algo = build_sampling_algorithm(mala.build_kernel(), mala.init,
        ...                                 lambda x: -0.5 * x @ x, (0.5,))
        >>> state, info = jax.jit(algo.step)(jax.random.key(0),
        ...                                  algo.init(jnp.zeros(2)))
        >>> state.position.shape
        (2,)
    """
    private = isinstance(target, GibbsTarget)

    def init_fn(position: ArrayLikeTree, rng_key: PRNGKey | None = None) -> Any:
        del rng_key
        return init(position, target)

    def step_fn(rng_key: PRNGKey, state: Any) -> tuple[Any, Any]:
        return kernel(rng_key, state, target, *kernel_args)

    if private:
        return SamplingAlgorithm(precision.scoped(init_fn), scoped_kernel(step_fn))
    return SamplingAlgorithm(init_fn, step_fn)


def check_position(
    target: GibbsTarget, position: ArrayLike, name: str = "position"
) -> Array:
    """A sampler's start point: shape ``(d,)`` and, when concrete, a point of ``K``.

    The samplers' guarantees (the Gibbs target's, the Langevin trajectory's) are
    stated for chains on ``K`` started at a data-independent point of ``K``; a
    concrete position that is not finite or lies outside ``K`` is refused before
    any private computation (within rounding of ``K`` it is projected onto ``K``,
    :func:`~dpsample.domains.require_member`). A traced position (under ``vmap`` or
    ``jit``) cannot be inspected and is the caller's responsibility.

    Raises:
        ValueError: Wrong shape, or a concrete position that is not finite or not
            in ``K``.

    Examples:
        >>> import jax.numpy as jnp
        >>> from dpsample import Ball, Problem
        >>> from dpsample.samplers.target import GibbsTarget, check_position
        >>> p = Problem(lambda x, z: jnp.abs(x[0] - z), jnp.zeros(4),
        ...             Ball(1.0, dim=1), lipschitz=1.0)
        >>> t = GibbsTarget.create(p, beta=1.0, mu=0.0)
        >>> check_position(t, jnp.array([0.5])).tolist()
        [0.5]
    """
    x = jnp.asarray(position, jnp.float64)
    dim = target.problem.dim
    if x.shape != (dim,):
        raise ValueError(f"Expected {name} of shape ({dim},), got shape {x.shape}")
    if isinstance(x, jax.core.Tracer):
        return x
    if not np.all(np.isfinite(np.asarray(x))):
        raise ValueError(f"Expected {name} to be finite, found NaN or inf values")
    return require_member(target.problem.domain, x, name)


precision.scope_public(globals())
