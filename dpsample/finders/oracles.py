r"""Private gradient oracles of the first and second kind (seed 000 Eq. (2)/(3)).

Two oracles feed every first-order finder in :mod:`dpsample.finders`:

* the **first kind** ``O1(x) = (1/b) sum_{i in S} g_i(x) + N(0, s1^2 I)``, a noisy
  minibatch (or full-batch) mean gradient, with ``g_i(x) = grad f(x, z_i)`` clipped at
  the declared Lipschitz bound ``G`` (or at ``clip_norm`` when smaller) by default;
* the **second kind** ``O2(x, y) = (1/b) sum_{i in S} (grad f(x, z_i) - grad f(y,
  z_i)) + N(0, s2(x, y)^2 I)``, a noisy gradient *difference* evaluated on the **same**
  batch at both points, whose noise is proportional to its sensitivity, hence to
  ``min(M ||x - y||, 2 G)``.

Enforced by default. Both oracles clip every per-example term at the bound their
accounting uses (O1 at ``C``, O2 at ``C(x, y)``), so the guarantee holds whatever the
data, even if a declared constant is wrong. ``enforce_sensitivity=False`` (the same
option name in every finder) turns clipping off: the sensitivity then rests on the
declared constants holding for every example, the guarantee lists that in its
``assumptions`` and shows as *conditional* (seed 002's unclipped Algorithm 2 is this
mode).

Sensitivities (replace-one neighbours, ``c_sens = 2``, spec 000 §1.4). Let ``C`` be
a bound on every per-example term of the sum, for every possible example:

* O1: ``C = min(G, clip_norm)`` (``G`` the declared Lipschitz bound; ``clip_norm``
  defaults to ``G``, and without a declared ``G`` it must be given), enforced by
  per-example clipping; with ``enforce_sensitivity=False``, ``C = G`` trusted.
  Replacing ``z`` by ``z'`` moves the sum by ``||g(x, z) - g(x, z')|| <= 2 C``, so
  the released mean moves by at most ``Delta_1 = 2 C / b``.
* O2: each term is ``grad f(x, z) - grad f(y, z)``, whose norm is at most
  ``M ||x - y||`` (declared smoothness) and at most ``2 G`` (declared Lipschitz bound:
  two gradients of norm ``<= G``), so ``C(x, y) = min(M ||x - y||, 2 G)`` (whichever
  are declared) and ``Delta_2(x, y) = 2 C(x, y) / b``. The paper's ``M ||x - y|| / n``
  (App. C.1) is the add/remove-style count; under replace-one it is doubled. With
  ``x == y`` (public) the oracle releases exactly zero with no noise: the statistic
  is *set* to zero, not computed, so no rounding can make it depend on the data; a
  constant release costs nothing (it is still counted as one call).

Here ``b`` is the batch size: ``n`` for the full batch, the fixed size for batches drawn
without replacement, and the **expected** size ``q n`` for Poisson sampling (the sum is
divided by this constant, not by the realised size, so that ``Delta = 2C/b`` holds).

Noise: every oracle takes a ``noise_multiplier`` ``z`` in the ecosystem's convention
(Abadi et al.; Opacus, TF Privacy and dp-accounting read it the same way): the std of
the noise added to the *sum* of the per-example terms, divided by the per-example
bound ``C``. On the released mean the noise std is ``s1 = z C / b`` and ``s2(x, y) = z
C(x, y) / b`` (plus O2's rounding floor, below). The sensitivity ``2C/b`` that
replace-one implies is the accounting's business, not the caller's: one release is a
Gaussian mechanism with noise over sensitivity ``z / 2``
(:func:`~dpsample.finders.accounting.gaussian_sum_guarantee`), whatever ``||x - y||``
is. The same ``z`` means the same noise in
:func:`~dpsample.finders.dp_sgd_transform` and the same guarantee in
:func:`~dpsample.finders.dp_sgd_guarantee`.

Accounting matches the scheme that runs (dp-libraries spec §4.1); each call's
:class:`OracleRecord` names the scheme and carries the per-call
:class:`~dpsample.privacy.PrivacyGuarantee`, stated for ``REPLACE_ONE``:

* ``"full_batch"``: the Gaussian mechanism,
  :func:`~dpsample.finders.accounting.gaussian_sum_guarantee` ``(z)``; its event is
  ``GaussianDpEvent(z)``, whose PLD dp_accounting computes for ``REPLACE_ONE`` with
  the doubled sensitivity.
* ``"without_replacement"``: a uniformly random size-``b`` subset, drawn afresh at
  every call: ``SampledWithoutReplacementDpEvent(n, b, GaussianDpEvent(z / 2))``.
  dp_accounting's RDP accountant analyses it for ``REPLACE_ONE`` with the inner
  noise multiplier relative to the replace-one sensitivity ``2C`` of the sum (Wang,
  Balle, Kasiviswanathan 2019), hence ``z / 2``
  (:func:`~dpsample.finders.accounting.without_replacement_event`).
* ``"poisson"``: every example joins independently with probability ``q = b / n``; the
  batch lives in a fixed padded buffer of ``max_batch_size`` slots, and when more than
  ``max_batch_size`` examples are drawn a uniformly random subset of that size is kept.
  This is exactly dp_accounting's ``TruncatedSubsampledGaussianDpEvent(n, q,
  max_batch_size, z)``, analysed by its PLD accountant for ``REPLACE_ONE``;
  truncation is thus accounted, not ignored. The default padding makes overflow
  probability ``<= 1e-12`` (:func:`~dpsample.finders.accounting.poisson_max_batch`).
  (dp_accounting's RDP analysis of Poisson subsampling is for add/remove only; it is
  not used.)
* ``"fresh"``: the caller passes the batch indices, disjoint across *all* calls of the
  run (population variants, seed 000 Eq. (3): rows of one public random permutation,
  see :func:`~dpsample.finders.batches.fresh_batches`). Each example then influences
  at most one release, so by parallel composition a whole run is covered by one
  call's guarantee (the full batch's, :meth:`FirstKindOracle.run_guarantee`). Runs
  that mix several fresh oracles on one permutation are covered by composing one call
  of each.

Clipping in floating point (O1, enforced). Rows are clipped at ``C / F``,
where ``C = min(G, clip_norm)`` is the accounted bound (so a gradient that breaks the
declared ``G`` is clipped too) and ``F >= 1`` is the rounding margin of
:func:`clip_margin`: the per-example norms, the scale and the weighted sum are then
provably within the sensitivity ``2C/b`` *as computed*, not only in exact arithmetic
(``F - 1`` is about ``1e-11`` in float64). Norms, scale and sum are fused (one pass
for the norms, one matrix-vector product ``c^T G`` for the sum), and rows with a
non-finite squared norm contribute zero. ``gradient_dtype="float32"`` computes the
per-example gradients, norms and sum in float32 (about ``1.3-1.5x`` faster on CPU;
``F - 1 ~ 2 m^2 2^-24``, ``0.8 %`` for ``m = 256``); the noise is drawn and added in
float64 and the guarantee is unchanged. The clip bound must lie in
:data:`~dpsample._src.clipping.CLIP_RANGES` (``[1e-12, 1e12]`` in float32,
``[1e-140, 1e140]`` in float64), where the rounding analysis holds.

Rounding of the paired difference (O2). Without clipping, the exact sensitivity
``2 C(x, y) / b`` vanishes as ``x -> y``, but the rounding of the two float64
gradient sums whose difference is released does not: it scales with the gradients'
*magnitudes* (up to ``G``), not with ``||x - y||``. The noise std is therefore ``z
C_eff(x, y) / b`` with ``C_eff = F C(x, y) + A G`` from
:func:`~dpsample._src.clipping.difference_margin` (Higham-style derivation there;
``F - 1 ~ 2 m u`` and the floor ``A ~ 2 m^2 u``, ``u = 2^-53``), which bounds how far
the *computed* statistics of two neighbouring batches can be apart; the guarantee
holds for what is computed. The floor needs the declared ``G`` (without it only
the enforced oracle is accepted). Enforced (the default), the per-example
differences are clipped at ``C(x, y) / F`` with :func:`clip_margin`'s ``F``,
through the same clipping code as O1 (:func:`~dpsample._src.clipping.clipped_sum`),
so no floor is needed; a bound below ``1e-140`` clips every row to zero
(:func:`~dpsample._src.clipping.usable_clip_bound`). ``||x - y||`` is computed
scaled by its largest entry, so it does not underflow.

Layered models. When the problem's ``loss_fn`` is a :class:`dpsample.models.MLP`, the
clipped sum is computed by ghost clipping (per-layer norms from activations and
backpropagated output gradients; no ``(m, d)`` per-example gradients), with the
model's own rounding margin :meth:`~dpsample.models.MLP.gradient_margin`. Same clip
bound semantics, sensitivity, event and noise; only the arithmetic differs.

The oracles are diagnostics-free: they return only the noisy estimate and the public
record. Noise is drawn with fresh keys (split from the caller's key, never reused).
``estimate_fn`` is a pure JAX function suitable for ``jit``/``lax.scan``; calling the
oracle object eagerly returns ``(estimate, record)``.

Modules: the batches each scheme draws are :mod:`dpsample.finders.batches`; the
static structures and gradient statistics of the functional form are
:mod:`dpsample.finders.functional`; the public record, its accounting and the
construction both kinds share are :mod:`dpsample.finders.oracle_base`; this module
builds and validates the two oracles.

Compilation reuse: ``estimate_fn`` closes over the data and the noise scale, so a jitted
loop that calls it is traced afresh for every oracle object. Loops that should compile
once per shape use :meth:`FirstKindOracle.functional` /
:meth:`SecondKindOracle.functional` instead, which split the oracle into a hashable
*static* callable (loss function, scheme, batch sizes: a valid ``jit`` static argument
that compares equal across oracles of the same structure) and a pytree of *operands*
(the data and the noise parameters, passed as traced arguments). ``estimate_fn`` is
implemented through the same pair, so both paths compute the same release.

References:
    Abadi, Chu, Goodfellow, McMahan, Mironov, Talwar, Zhang, *Deep Learning with
    Differential Privacy*, CCS 2016.
    Arora, Bassily, Gonzalez, Guzman, Menart, Ullah, *Faster Rates of Convergence to
    Stationary Points in Differentially Private Optimization*, ICML 2023.
    Wang, Balle, Kasiviswanathan, *Subsampled Renyi Differential Privacy and
    Analytical Moments Accountant*, AISTATS 2019.
"""

from __future__ import annotations

from typing import Any

from dpsample._src import precision, validation
from dpsample._src.clipping import (
    GRADIENT_DTYPES,
    check_clip_bound,
    check_gradient_dtype,
    clip_margin,
    difference_margin,
    resolve_clipping,
)
from dpsample.errors import MissingConstantError
from dpsample.finders import accounting
from dpsample.finders.functional import FirstKindFn, SecondKindFn, cast_floating
from dpsample.finders.oracle_base import ENFORCED_NOTE as ENFORCED_NOTE
from dpsample.finders.oracle_base import (
    OracleBase,
    OracleRecord,
    check_enforce,
    margin_of,
    unclipped_difference_assumption,
    unclipped_gradient_assumption,
)
from dpsample.problem import Problem, ProblemSpec
from dpsample.types import Array, ArrayLike, PRNGKey

__all__ = [
    "OracleRecord",
    "FirstKindOracle",
    "SecondKindOracle",
    "first_kind",
    "second_kind",
    "clip_margin",
    "GRADIENT_DTYPES",
]


class FirstKindOracle(OracleBase):
    r"""``O1(x) = (1/b) sum_{i in S} clip(grad f(x, z_i)) + N(0, (z C/b)^2 I)``.

    Build it with :func:`first_kind`. ``estimate_fn(rng_key, x, indices=None)`` is a
    pure JAX function; calling the oracle returns ``(estimate, record)``.

    Attributes of note: ``contribution_bound`` (``C``), ``clip_bound`` (the bound the
    rows are clipped at, ``C / F`` with the rounding margin ``F`` of
    :func:`clip_margin`; ``None`` without clipping), ``gradient_dtype``,
    ``sensitivity`` (``2C/b``) and ``noise_std`` (``z C / b``).

    Privacy:
        Replace-one neighbours; per-example term bound ``C`` (declared ``G``, or the
        clip norm); L2 sensitivity of one release ``2 C / b``, noise std ``z C / b``
        (noise over sensitivity ``z / 2``); one release is covered by
        ``record.guarantee`` (see the module docstring for each sampling scheme).
        With clipping, rows are clipped at ``C / F`` so the bound holds for the
        floating-point statistic in either ``gradient_dtype``.
    """

    kind = "first"
    _fn: FirstKindFn

    def __init__(
        self,
        problem: Problem | ProblemSpec,
        *,
        noise_multiplier: float,
        sampling: str = "full_batch",
        batch_size: int | None = None,
        clip_norm: float | None = None,
        max_batch_size: int | None = None,
        gradient_dtype: str = "float64",
        enforce_sensitivity: bool = True,
        clipping: str = "auto",
    ) -> None:
        self._setup(problem, noise_multiplier, sampling, batch_size, max_batch_size)
        self.enforce_sensitivity = check_enforce(enforce_sensitivity)
        self.clipping = resolve_clipping(
            problem.loss_fn, clipping, self.max_batch_size, problem.dim
        )
        if not self.enforce_sensitivity and clip_norm is not None:
            raise ValueError(
                "clip_norm clips, enforce_sensitivity=False asks not to: pass one "
                "of them (clip_norm with enforce_sensitivity=True, the default)"
            )
        self.gradient_dtype = check_gradient_dtype(
            gradient_dtype, clipped=self.enforce_sensitivity
        )
        if not self.enforce_sensitivity:
            self.clip_norm = None
            self.contribution_bound = validation.require_constant(
                "lipschitz",
                problem.lipschitz,
                needed_for="the first-kind gradient oracle without clipping "
                "(enforce_sensitivity=False)",
            )
        else:
            g = problem.lipschitz
            if clip_norm is None and g is None:
                raise MissingConstantError(
                    "the first-kind gradient oracle clips per-example gradients at "
                    "the declared lipschitz G, which was not declared; pass "
                    "lipschitz=... (a data-independent bound) to the Problem or "
                    "clip_norm=... to the oracle"
                )
            self.clip_norm = (
                float(g)
                if clip_norm is None and g is not None
                else validation.positive("clip_norm", clip_norm)
            )
            self.contribution_bound = check_clip_bound(
                self.clip_norm if g is None else min(self.clip_norm, g),
                self.gradient_dtype,
            )
        self.clip_bound = (
            None
            if self.clip_norm is None
            else self.contribution_bound
            / margin_of(
                problem, self.gradient_dtype, self.max_batch_size, self.clipping
            )
        )
        if self.clip_norm is None:  # the sensitivity rests on the declaration
            self.guarantee = self.guarantee.assuming(
                unclipped_gradient_assumption(self.contribution_bound)
            )
        # Clipped rows are clipped at C / F, so the computed sum keeps 2C/b. Without
        # clipping the rows are the gradients themselves (trusted to the declared
        # G): the float64 sums on neighbouring batches can still differ by more than
        # 2G/b through the summation's rounding (about m gamma_m G), so the noise
        # covers the computed statistic with the same factor F (clip_margin).
        self.rounding_margin = (
            1.0
            if self.clip_norm is not None
            else clip_margin("float64", self.max_batch_size, self.spec.dim)
        )
        bound = self.contribution_bound * self.rounding_margin
        self.sensitivity = accounting.C_SENS * bound / self.batch_size
        self.noise_std = self.noise_multiplier * (bound / self.batch_size)
        self.record = OracleRecord(
            kind="first",
            sampling=self.sampling,
            batch_size=self.batch_size,
            max_batch_size=self.max_batch_size,
            sampling_rate=self.batch_size / problem.n,
            overflow_probability=self.overflow_probability,
            contribution_bound=self.contribution_bound,
            smoothness=None,
            noise_multiplier=self.noise_multiplier,
            clipped=self.clip_norm is not None,
            event=self.event,
            guarantee=self.guarantee,
            composition=self.composition,
        )
        self._fn = FirstKindFn(
            loss_fn=problem.loss_fn,
            sampling=self.sampling,
            n=problem.n,
            batch_size=self.batch_size,
            max_batch_size=self.max_batch_size,
            clipped=self.clip_norm is not None,
            gradient_dtype=self.gradient_dtype,
            ghost=self.clipping == "ghost",
        )
        data = problem.data if isinstance(problem, Problem) else None
        self._operands: dict[str, Any] = {
            "data": None if data is None else self._prepare_data(data),
            "noise_std": self.noise_std,
        }
        if self.clip_bound is not None:
            self._operands["clip_bound"] = self.clip_bound

    def _prepare_data(self, data: Any) -> Any:
        if self.gradient_dtype != "float64":
            return cast_floating(data, self.gradient_dtype)  # once, not per call
        return data

    def mean_fn(self, rng_key: PRNGKey, x: Array, indices: Any = None) -> Array:
        """The noiseless batch statistic (for tests/diagnostics; not private)."""
        self._data()
        return self._fn.mean(self._operands, rng_key, x, indices)

    def estimate_fn(self, rng_key: PRNGKey, x: Array, indices: Any = None) -> Array:
        """The private estimate ``O1(x)`` (pure JAX; ``jit`` is left to the caller)."""
        self._data()
        return self._fn(self._operands, rng_key, x, indices)

    def __call__(
        self, rng_key: PRNGKey, x: ArrayLike, indices: Any = None
    ) -> tuple[Array, OracleRecord]:
        """Release ``O1(x)``; returns ``(estimate, record)``."""
        validation.check_key(rng_key)
        x = self.spec.check_point(x, "x")
        return self.estimate_fn(rng_key, x, indices), self.record

    def __repr__(self) -> str:
        return (
            f"FirstKindOracle(sampling={self.sampling!r}, b={self.batch_size}, "
            f"C={self.contribution_bound:g}, noise_multiplier="
            f"{self.noise_multiplier:g})"
        )


class SecondKindOracle(OracleBase):
    r"""``O2(x, y)``: noisy paired gradient difference on one batch.

    .. math::
        O_2(x, y) = \frac1b \sum_{i \in S} \big(\nabla f(x; z_i) - \nabla f(y; z_i)\big)
        + \mathcal N\big(0, (z\,C_{\rm eff}(x, y) / b)^2 I\big),\quad
        C(x, y) = \min(M \|x - y\|, 2G).

    ``C_eff = C`` when enforced (clipped, the default); with
    ``enforce_sensitivity=False`` ``C_eff = F C + A G`` covers the
    rounding of the two gradient sums (module docstring,
    :func:`~dpsample._src.clipping.difference_margin`). At ``x == y`` the release is
    exactly zero (no noise). Build it with :func:`second_kind`.
    ``estimate_fn(rng_key, x, y, indices=None)`` is pure JAX; calling the oracle
    returns ``(estimate, record)``.

    Privacy:
        Replace-one neighbours; per-example difference bound ``C(x, y)`` from the
        declared constants (clipped below that bound by default, which makes
        the guarantee unconditional; ``enforce_sensitivity=False`` makes it
        conditional on the declarations); the computed statistics of neighbouring
        batches are at most ``2 C_eff(x, y) / b`` apart and the noise std is ``z
        C_eff(x, y) / b``, so one release costs ``record.guarantee`` whatever
        ``||x - y||``.
    """

    kind = "second"
    _fn: SecondKindFn

    def __init__(
        self,
        problem: Problem | ProblemSpec,
        *,
        noise_multiplier: float,
        sampling: str = "full_batch",
        batch_size: int | None = None,
        max_batch_size: int | None = None,
        enforce_sensitivity: bool = True,
    ) -> None:
        self._setup(problem, noise_multiplier, sampling, batch_size, max_batch_size)
        if problem.smoothness is None and problem.lipschitz is None:
            raise MissingConstantError(
                "the second-kind gradient-difference oracle needs the public "
                "constant smoothness (M ||x - y||) or lipschitz (2G), neither was "
                "declared; pass "
                "smoothness=... or lipschitz=... (data-independent bounds) to the "
                "Problem"
            )
        self.enforce_sensitivity = check_enforce(enforce_sensitivity)
        self.clip = self.enforce_sensitivity
        if not self.clip and problem.lipschitz is None:
            raise MissingConstantError(
                "the unclipped second-kind oracle (enforce_sensitivity=False) needs "
                "the public constant lipschitz (G): the rounding of the two gradient "
                "sums it subtracts scales with the gradients' size, which only G "
                "bounds; declare lipschitz=... on the Problem or keep "
                "enforce_sensitivity=True (clipping)"
            )
        self.smoothness = problem.smoothness
        self.cap = (
            float("inf") if problem.lipschitz is None else 2.0 * problem.lipschitz
        )
        if not self.clip:  # the sensitivity rests on the declarations
            self.guarantee = self.guarantee.assuming(
                unclipped_difference_assumption(self.smoothness, self.cap)
            )
        self.record = OracleRecord(
            kind="second",
            sampling=self.sampling,
            batch_size=self.batch_size,
            max_batch_size=self.max_batch_size,
            sampling_rate=self.batch_size / problem.n,
            overflow_probability=self.overflow_probability,
            contribution_bound=self.cap,
            smoothness=self.smoothness,
            noise_multiplier=self.noise_multiplier,
            clipped=self.clip,
            event=self.event,
            guarantee=self.guarantee,
            composition=self.composition,
        )
        self._fn = SecondKindFn(
            loss_fn=problem.loss_fn,
            sampling=self.sampling,
            n=problem.n,
            batch_size=self.batch_size,
            max_batch_size=self.max_batch_size,
            clip=self.clip,
            has_smoothness=self.smoothness is not None,
        )
        self._operands: dict[str, Any] = {
            "data": problem.data if isinstance(problem, Problem) else None,
            "noise_multiplier": self.noise_multiplier,
            "cap": self.cap,
        }
        if self.smoothness is not None:
            self._operands["smoothness"] = self.smoothness
        if self.clip:
            self._operands["clip_margin"] = clip_margin(
                "float64", self.max_batch_size, problem.dim
            )
        else:
            margin, floor = difference_margin(self.max_batch_size, problem.dim)
            assert problem.lipschitz is not None  # checked above: needed unclipped
            self._operands["margin"] = margin
            self._operands["floor"] = floor * problem.lipschitz

    def difference_bound(self, x: Array, y: Array) -> Array:
        """Per-example bound ``min(M ||x - y||, 2G)`` (public: ``x, y`` are public)."""
        return self._fn.difference_bound(self._operands, x, y)

    def accounted_bound(self, x: Array, y: Array) -> Array:
        """``C_eff``: ``C`` clipped, ``F C + A G`` unclipped, ``0`` at ``x == y``."""
        return self._fn.accounted_bound(self._operands, x, y)

    def sensitivity(self, x: Array, y: Array) -> Array:
        """L2 sensitivity ``2 C_eff(x, y) / b`` of the computed statistic."""
        return accounting.C_SENS * self.accounted_bound(x, y) / self.batch_size

    def noise_std(self, x: Array, y: Array) -> Array:
        """Noise std ``z C_eff(x, y) / b`` (``z / 2`` times the sensitivity)."""
        return self._fn.noise_std(self._operands, x, y)

    def mean_fn(
        self, rng_key: PRNGKey, x: Array, y: Array, indices: Any = None
    ) -> Array:
        """The noiseless paired-difference statistic (not private)."""
        return self._fn.mean(self._operands, rng_key, x, y, indices)

    def estimate_fn(
        self, rng_key: PRNGKey, x: Array, y: Array, indices: Any = None
    ) -> Array:
        """The private estimate ``O2(x, y)`` (pure JAX)."""
        return self._fn(self._operands, rng_key, x, y, indices)

    def __call__(
        self, rng_key: PRNGKey, x: ArrayLike, y: ArrayLike, indices: Any = None
    ) -> tuple[Array, OracleRecord]:
        """Release ``O2(x, y)``; returns ``(estimate, record)``."""
        validation.check_key(rng_key)
        x = self.spec.check_point(x, "x")
        y = self.spec.check_point(y, "y")
        return self.estimate_fn(rng_key, x, y, indices), self.record

    def __repr__(self) -> str:
        return (
            f"SecondKindOracle(sampling={self.sampling!r}, b={self.batch_size}, "
            f"M={self.smoothness}, cap={self.cap:g}, noise_multiplier="
            f"{self.noise_multiplier:g})"
        )


def first_kind(
    problem: Problem | ProblemSpec,
    *,
    noise_multiplier: float,
    sampling: str = "full_batch",
    batch_size: int | None = None,
    clip_norm: float | None = None,
    max_batch_size: int | None = None,
    gradient_dtype: str = "float64",
    enforce_sensitivity: bool = True,
    clipping: str = "auto",
) -> FirstKindOracle:
    r"""Build the first-kind oracle ``O1`` (noisy mean gradient).

    .. math::
        O_1(x) = \frac1b \sum_{i\in S} \operatorname{clip}_c(\nabla f(x; z_i))
        + \mathcal N\big(0, (z C/b)^2 I_d\big).

    Args:
        problem: The :class:`~dpsample.problem.Problem`.
        noise_multiplier: ``z`` = std of the noise on the sum / per-example bound
            ``C`` (the ecosystem's convention, as in Opacus, TF Privacy and
            dp-accounting; replace-one sensitivity ``2C`` is handled by the
            accounting).
        sampling: ``"full_batch"`` (default), ``"poisson"``,
            ``"without_replacement"`` or ``"fresh"`` (caller-provided disjoint
            indices).
        batch_size: ``b`` (expected size for Poisson); must be omitted or ``n`` for
            the full batch.
        clip_norm: Per-example clipping norm ``c``; then ``C = min(G, c)`` (or
            ``c`` without a declared ``G``). Default: the declared ``G``.
        max_batch_size: Poisson padding (default: overflow probability ``<= 1e-12``;
            any value is accounted exactly).
        gradient_dtype: ``"float64"`` (default) or ``"float32"``: the dtype of the
            per-example gradients, their norms and their clipped sum (clipping
            only). The iterate and the floating data leaves are cast to it; the
            noise std, the noise and its addition stay in float64, and rows are
            clipped at ``C / F`` (:func:`clip_margin`, ``F - 1 ~ 2 m^2 2^-24``)
            so that the float32 sum provably keeps the sensitivity ``2C/b``. The
            guarantee is the same in both dtypes.
        enforce_sensitivity: Clip at ``C`` (default). ``False`` opts out: no
            clipping, ``C = G`` trusted, and the guarantee is conditional on it
            (listed in its ``assumptions``).
        clipping: How the clipped sum is computed
            (:func:`~dpsample._src.clipping.resolve_clipping`): ``"auto"``
            (default: a layered model's ghost path on the CPU, per-example
            gradients on an accelerator or for any other loss), ``"ghost"`` or
            ``"per_example"``. Speed only: the bound, sensitivity and guarantee are
            the same; the release differs in rounding. The oracle's ``clipping``
            attribute says which ran.

    Returns:
        A :class:`FirstKindOracle`.

    Raises:
        MissingConstantError: Without ``clip_norm`` and without a declared
            ``lipschitz``.
        TypeError: ``enforce_sensitivity`` is not a bool.
        ValueError: On a bad scheme, batch size, noise multiplier,
            ``clip_norm`` with ``enforce_sensitivity=False``, or
            ``gradient_dtype`` (float32 needs clipping, a clip bound in
            ``[1e-12, 1e12]`` and a batch and dimension small enough for
            :func:`clip_margin`), or a float64 clip bound outside ``[1e-140,
            1e140]``.

    Privacy:
        Replace-one; sensitivity ``2C/b``, noise std ``z C / b``; per call
        ``record.guarantee``
        (Gaussian for the full batch / fresh batches, sampled-without-replacement
        Gaussian (RDP), truncated-Poisson subsampled Gaussian (PLD)). By default
        the per-example rows are clipped at ``C / F``, which keeps the
        sensitivity of the computed (rounded) statistic at ``2C/b``
        (:func:`clip_margin`), in float64 and in float32, whatever the data. With
        ``enforce_sensitivity=False`` the sensitivity rests on the declared ``G``
        holding for every example, and the guarantee lists that in its
        ``assumptions`` (it is ``conditional``).

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> import dpsample
        >>> from dpsample.finders.oracles import first_kind
        >>> data = {"x": jnp.ones((4, 2)), "y": jnp.ones(4)}
        >>> prob = dpsample.Problem(lambda x, z: jnp.sum((x - z["x"]) ** 2) / 8,
        ...     data, dpsample.Ball(1.0, dim=2), lipschitz=1.0)
        >>> o1 = first_kind(prob, noise_multiplier=4.0)
        >>> est, rec = o1(jax.random.key(0), jnp.zeros(2))
        >>> est.shape, rec.sampling, rec.guarantee.epsilon(1e-5) < 3
        ((2,), 'full_batch', True)
        >>> o1.sensitivity, o1.noise_std  # 2 G / n and z G / n: clipped at G
        (0.5, 1.0)
        >>> o1.clip_bound < 1.0 and 1.0 - o1.clip_bound < 1e-14  # G / F
        True
        >>> rec.guarantee.conditional  # enforced: rests on no declaration
        False
        >>> trusted = first_kind(prob, noise_multiplier=4.0, enforce_sensitivity=False)
        >>> trusted.guarantee.conditional, trusted.rounding_margin - 1 < 1e-14
        (True, True)
        >>> o32 = first_kind(prob, noise_multiplier=4.0, clip_norm=0.5,
        ...                  gradient_dtype="float32")
        >>> o32(jax.random.key(0), jnp.zeros(2))[0].dtype  # noise added in float64
        dtype('float64')
        >>> 0.99 < o32.clip_bound / o32.contribution_bound < 1.0
        True
    """
    return FirstKindOracle(
        problem,
        noise_multiplier=noise_multiplier,
        sampling=sampling,
        batch_size=batch_size,
        clip_norm=clip_norm,
        max_batch_size=max_batch_size,
        gradient_dtype=gradient_dtype,
        enforce_sensitivity=enforce_sensitivity,
        clipping=clipping,
    )


def second_kind(
    problem: Problem | ProblemSpec,
    *,
    noise_multiplier: float,
    sampling: str = "full_batch",
    batch_size: int | None = None,
    max_batch_size: int | None = None,
    enforce_sensitivity: bool = True,
) -> SecondKindOracle:
    r"""Build the second-kind oracle ``O2`` (noisy paired gradient difference).

    .. math::
        O_2(x, y) = \frac1b \sum_{i\in S}\big(\nabla f(x; z_i) - \nabla f(y; z_i)\big)
        + \mathcal N\Big(0, \big(z \, C_{\rm eff}(x, y)/b\big)^2 I_d\Big),

    with ``C_eff = min(M ||x - y||, 2G)`` when clipped (default) and ``F min(M ||x -
    y||, 2G) + A G`` (a rounding floor,
    :func:`~dpsample._src.clipping.difference_margin`) with
    ``enforce_sensitivity=False``;
    exactly zero, without noise, at ``x == y``.

    Args:
        problem: The :class:`~dpsample.problem.Problem` (declares ``smoothness`` and/or
            ``lipschitz``; ``lipschitz`` is needed with
            ``enforce_sensitivity=False``).
        noise_multiplier: ``z`` = std of the noise on the sum / per-example bound
            (the ecosystem's convention, as for :func:`first_kind`).
        sampling: As for :func:`first_kind`; both points use the **same** batch.
        batch_size: ``b``.
        max_batch_size: Poisson padding.
        enforce_sensitivity: Clip every per-example difference at ``min(M ||x -
            y||, 2G) / F`` (:func:`clip_margin`) so the sensitivity holds, as
            computed, even for examples that violate the declared constants
            (default). ``False`` opts out (conditional guarantee).

    Returns:
        A :class:`SecondKindOracle`.

    Raises:
        MissingConstantError: If neither ``smoothness`` nor ``lipschitz`` is declared,
            or ``lipschitz`` is not declared with ``enforce_sensitivity=False``.
        TypeError: ``enforce_sensitivity`` is not a bool.
        ValueError: On a bad scheme, batch size or noise multiplier.

    Privacy:
        Replace-one; the computed statistics of neighbouring batches are at most ``2
        C_eff(x, y) / b`` apart and the noise std is ``z C_eff(x, y) / b``, so each
        call costs ``record.guarantee`` independently of the step. With
        ``enforce_sensitivity=False`` the sensitivity rests on the declared
        constants holding for every example, and the guarantee lists that in its
        ``assumptions`` (it is ``conditional``).

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> import dpsample
        >>> from dpsample.finders.oracles import second_kind
        >>> data = {"x": jnp.ones((4, 2)), "y": jnp.ones(4)}
        >>> prob = dpsample.Problem(lambda x, z: jnp.sum((x - z["x"]) ** 2) / 8,
        ...     data, dpsample.Ball(1.0, dim=2), lipschitz=1.0, smoothness=0.25)
        >>> o2 = second_kind(prob, noise_multiplier=1.0)
        >>> x = jnp.zeros(2)
        >>> est, rec = o2(jax.random.key(0), x, x)  # x = y: zero, noiseless
        >>> est.tolist(), rec.kind
        ([0.0, 0.0], 'second')
        >>> y = x.at[0].set(1e-300)  # clipped: the noise follows M ||x - y||
        >>> float(o2.noise_std(x, y)) < 1e-290
        True
        >>> trusted = second_kind(prob, noise_multiplier=1.0,
        ...                       enforce_sensitivity=False)
        >>> float(trusted.noise_std(x, y)) > 1e-20  # unclipped: a rounding floor
        True
    """
    return SecondKindOracle(
        problem,
        noise_multiplier=noise_multiplier,
        sampling=sampling,
        batch_size=batch_size,
        max_batch_size=max_batch_size,
        enforce_sensitivity=enforce_sensitivity,
    )


precision.scope_public(globals())
