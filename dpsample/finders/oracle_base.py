"""What both gradient oracles share: the public record, its accounting, the base.

:class:`OracleRecord` is the public record of one release of an oracle of
:mod:`dpsample.finders.oracles`; :func:`event_and_guarantee` is how each sampling
scheme's release is accounted (the dp_accounting event and the guarantee under
replace-one); :class:`OracleBase` is the construction both oracle kinds share
(validated eagerly, before any private computation), and the rest are the public
texts and margins the oracles' plans state.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from typing import Any, NamedTuple

from dpsample._src import precision, validation
from dpsample._src.clipping import GhostClippedLoss, clip_margin
from dpsample.finders import accounting
from dpsample.finders.batches import draw_batch, resolve_sampling
from dpsample.privacy import PrivacyGuarantee
from dpsample.privacy.guarantee import REPLACE_ONE
from dpsample.problem import Problem, ProblemSpec
from dpsample.types import Array, ArrayLike, PRNGKey

__all__ = [
    "ENFORCED_NOTE",
    "OracleBase",
    "OracleRecord",
    "check_enforce",
    "event_and_guarantee",
    "margin_of",
    "unclipped_difference_assumption",
    "unclipped_gradient_assumption",
]


class OracleRecord(NamedTuple):
    """Public record of one oracle release (what ran and how it is accounted).

    Attributes:
        kind: ``"first"`` (O1) or ``"second"`` (O2).
        sampling: ``"full_batch"``, ``"poisson"``, ``"without_replacement"`` or
            ``"fresh"``.
        batch_size: ``b``, the divisor of the sum (``n``; the fixed size; or the
            expected size ``q n`` for Poisson).
        max_batch_size: Padded buffer size (Poisson), else ``batch_size``.
        sampling_rate: ``b / n``.
        overflow_probability: Probability that a Poisson batch is truncated (0 for the
            other schemes); the truncation is accounted in ``event``.
        contribution_bound: O1: the per-example bound ``C``. O2: ``2 G`` if ``G`` is
            declared, else ``inf`` (the bound is then ``M ||x - y||``).
        smoothness: O2: the declared ``M`` used for ``M ||x - y||`` (``None`` if not
            declared); O1: ``None``.
        noise_multiplier: ``z``, the std of the noise on the *sum* over the
            per-example bound ``C`` (the ecosystem's convention; ``z C / b`` on the
            mean; O2: ``C = C(x, y)`` plus the rounding floor). The accounting reads
            it for ``REPLACE_ONE`` (sensitivity ``2C``).
        clipped: Whether per-example terms are clipped at the bound.
        event: The dp_accounting event of one release (dp_accounting's conventions).
        guarantee: :class:`~dpsample.privacy.PrivacyGuarantee` of one release
            (``REPLACE_ONE``).
        composition: ``"sequential"`` (calls compose) or ``"parallel"`` (fresh
            disjoint batches: a run costs one call).
    """

    kind: str
    sampling: str
    batch_size: float
    max_batch_size: int
    sampling_rate: float
    overflow_probability: float
    contribution_bound: float
    smoothness: float | None
    noise_multiplier: float
    clipped: bool
    event: Any
    guarantee: PrivacyGuarantee
    composition: str


def event_and_guarantee(
    sampling: str, n: int, b: int, m: int, z: float
) -> tuple[Any, PrivacyGuarantee, str]:
    """Event (dp_accounting's reading of ``z``), guarantee and composition."""
    if sampling in ("full_batch", "fresh"):
        ev = accounting.gaussian_event(z)  # PLD doubles C for REPLACE_ONE
        comp = "parallel" if sampling == "fresh" else "sequential"
        return ev, accounting.gaussian_sum_guarantee(z, REPLACE_ONE), comp
    if sampling == "without_replacement":
        ev = accounting.without_replacement_event(n, b, z)  # RDP: z / 2
        return ev, PrivacyGuarantee.from_event(ev, relation=REPLACE_ONE), "sequential"
    # Poisson, truncated to m slots; PLD doubles C for REPLACE_ONE.
    ev = accounting.truncated_poisson_event(n, b / n, m, z)
    return ev, PrivacyGuarantee.from_event(ev, relation=REPLACE_ONE), "sequential"


def margin_of(
    problem: Problem | ProblemSpec,
    gradient_dtype: str,
    rows: int,
    clipping: str = "ghost",
) -> float:
    """Rounding margin of the clipped sum the oracle will run for ``problem``.

    On the ghost path (``clipping="ghost"`` and a
    :class:`~dpsample._src.clipping.GhostClippedLoss`, e.g.
    :class:`dpsample.models.MLP`, whose clipped sum skips per-example gradients) the
    loss states its own margin (``gradient_margin``); the per-example path's is
    :func:`clip_margin`.
    """
    if clipping == "ghost" and isinstance(problem.loss_fn, GhostClippedLoss):
        return float(problem.loss_fn.gradient_margin(gradient_dtype, rows))
    return clip_margin(gradient_dtype, rows, problem.dim)


#: The plan note of a clip bound that defaults to the declared constant.
ENFORCED_NOTE = (
    "the declared lipschitz G, enforced by clipping (enforce_sensitivity=False "
    "opts out)"
)


def check_enforce(enforce_sensitivity: Any) -> bool:
    """Validate the ``enforce_sensitivity`` opt-out (a bool; ``True`` by default)."""
    if not isinstance(enforce_sensitivity, bool):
        raise TypeError(
            f"Expected enforce_sensitivity to be a bool, got {enforce_sensitivity!r}"
        )
    return enforce_sensitivity


def unclipped_gradient_assumption(bound: float) -> str:
    """The assumption of a first-kind oracle that does not clip (public text)."""
    return (
        "every per-example gradient at every queried point has norm <= the declared "
        f"lipschitz G = {bound:.6g} (not enforced: enforce_sensitivity=False, no "
        "clipping)"
    )


def unclipped_difference_assumption(smoothness: float | None, cap: float) -> str:
    """The assumption of an unclipped second-kind oracle (public text)."""
    bounds = []
    if smoothness is not None:
        bounds.append(f"smoothness M = {smoothness:.6g} times ||x - y||")
    if math.isfinite(cap):
        bounds.append(f"2 G = {cap:.6g}")
    return (
        "every per-example gradient difference between queried points has norm <= "
        f"min({', '.join(bounds)}) (not enforced: enforce_sensitivity=False, no "
        "clipping)"
    )


class OracleBase:
    """Shared construction (validated eagerly) of both oracle kinds."""

    kind: str
    _fn: Any
    _operands: dict[str, Any]

    def _setup(
        self,
        problem: Problem | ProblemSpec,
        noise_multiplier: float,
        sampling: str,
        batch_size: int | None,
        max_batch_size: int | None,
    ) -> None:
        if isinstance(problem, Problem):
            self.problem: Problem | None = problem
            self.spec = problem.spec
        elif isinstance(problem, ProblemSpec):
            self.problem = None  # planned: bind the data with with_data()
            self.spec = problem
        else:
            raise TypeError(
                f"Expected a Problem or ProblemSpec, got {type(problem).__name__}"
            )
        self.noise_multiplier = validation.positive(
            "noise_multiplier", noise_multiplier
        )
        self.sampling = sampling
        b, m, overflow = resolve_sampling(
            self.spec, sampling, batch_size, max_batch_size
        )
        self.batch_size = b
        self.max_batch_size = m
        self.overflow_probability = overflow
        self.event, self.guarantee, self.composition = event_and_guarantee(
            sampling, problem.n, b, m, self.noise_multiplier
        )

    def _batch(self, rng_key: PRNGKey, indices: ArrayLike | None) -> tuple[Any, Array]:
        """``(batch pytree, weights)`` of one call."""
        return draw_batch(self._fn, rng_key, self._data(), indices)

    def _data(self) -> Any:
        data = self._operands["data"]
        if data is None:
            raise ValueError(
                "this oracle was planned from a ProblemSpec and holds no data: bind "
                "them with oracle.with_data(data)"
            )
        return data

    def _prepare_data(self, data: Any) -> Any:
        return data

    def with_data(self, data: Any) -> Any:
        """This oracle on ``data`` (a :class:`~dpsample.problem.Problem` or its data).

        Oracles built from a :class:`~dpsample.problem.ProblemSpec` (at plan time)
        hold no data; the run binds them. The structure, noise and guarantee are
        unchanged. The data are checked against the spec (shapes and ``n``).
        """
        problem = data if isinstance(data, Problem) else self.spec.with_data(data)
        if problem.n != self.spec.n:
            raise ValueError(f"the oracle is for n={self.spec.n}, got {problem.n}")
        new = copy.copy(self)
        new.problem = problem
        new._operands = {**self._operands, "data": self._prepare_data(problem.data)}
        return new

    def functional(self) -> tuple[Callable[..., Array], dict[str, Any]]:
        """Split the oracle into a static callable and its traced operands.

        Returns ``(fn, operands)`` with ``fn(operands, rng_key, *points,
        indices=None)`` equal to ``estimate_fn(rng_key, *points, indices)``. ``fn``
        depends only on the oracle's structure (loss function, sampling scheme, batch
        sizes, clipping) and is hashable, with equal structures comparing equal, so it
        can be a static argument of ``jax.jit``; ``operands`` is a pytree (the data
        and the noise parameters) to pass as a traced argument. A jitted loop written
        this way compiles once per structure and shapes, not once per oracle.

        Examples:
            >>> import jax, jax.numpy as jnp
            >>> import dpsample
            >>> from dpsample.finders.oracles import first_kind
            >>> loss = lambda x, z: jnp.sum((x - z["x"]) ** 2) / 8
            >>> def oracle(feats, z):
            ...     prob = dpsample.Problem(loss, {"x": feats},
            ...                             dpsample.Ball(1.0, dim=2), lipschitz=1.0)
            ...     return first_kind(prob, noise_multiplier=z)
            >>> o_a, o_b = oracle(jnp.ones((4, 2)), 1.0), oracle(jnp.zeros((4, 2)), 2.0)
            >>> (fn_a, _), (fn_b, ops_b) = o_a.functional(), o_b.functional()
            >>> fn_a == fn_b  # same structure: a jit keyed on it compiles once
            True
            >>> key, x = jax.random.key(0), jnp.zeros(2)
            >>> bool(jnp.all(fn_b(ops_b, key, x) == o_b.estimate_fn(key, x)))
            True
        """
        return self._fn, self._operands

    def run_guarantee(self, num_calls: int) -> PrivacyGuarantee:
        """Guarantee of ``num_calls`` adaptive calls of this oracle.

        Sequential schemes compose (``guarantee.repeat(num_calls)``); a ``"fresh"``
        oracle whose calls use disjoint batches costs one call (parallel composition).
        """
        k = validation.positive_int("num_calls", num_calls)
        if self.composition == "parallel":
            return self.guarantee
        return self.guarantee.repeat(k)


precision.scope_public(globals())
