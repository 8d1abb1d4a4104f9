"""The options of the Goldstein finders, declared once (:mod:`dpsample.options`).

:class:`GoldsteinOptions` declares every option of a Goldstein run, in the order the
plan's parameter table lists them; :class:`GoldsteinZeroOrderOptions` and
:class:`GoldsteinFirstOrderOptions` fix what each finder does not let the caller
choose (the estimator; the first-order finder's single pass). The plan's keywords,
the registry's and the TOML schema's ``[options]``, the plan's table and the docs'
option tables (docs/goldstein.md) are read from these classes;
:func:`~dpsample.finders.goldstein.goldstein_theorem_parameters` takes the schedule's
options (those not marked ``plan only``) as keywords.

Examples:
    >>> from dpsample.finders.goldstein.options import GoldsteinFirstOrderOptions
    >>> "passes" in GoldsteinFirstOrderOptions.parameters()
    False
    >>> GoldsteinFirstOrderOptions.from_options({"alpha": 0.2}).passes
    'single'
"""

from __future__ import annotations

import dataclasses
from typing import Any

from dpsample._src import precision
from dpsample.options import Options, fixed, option
from dpsample.types import ArrayLike

__all__ = [
    "ESTIMATORS",
    "GOLDSTEIN_PRESETS",
    "GOLDSTEIN_SIZINGS",
    "PASSES",
    "PLAN_ONLY",
    "GoldsteinFirstOrderOptions",
    "GoldsteinOptions",
    "GoldsteinZeroOrderOptions",
]

_THEOREM = "theorem"

PASSES = ("single", "multi")
#: ``"practical"`` (the first-order finder's default since issue 24; not in the
#: paper; single pass):
#: the smallest batch whose release noise norm is at most ``L`` (``Sigma = 1``: no
#: tree), ``T = n / B``, ``D = Phi/(L T)``, the tail average of the iterates
#: (:func:`~dpsample.finders.goldstein.goldstein_theorem_parameters`);
#: ``"corrected"`` (the zero-order finder's and the schedule's default; the
#: first-order one's before issue 24): Theorem 3.1 corrected (spec 004 §2.4.5);
#: ``"paper"``: the theorems as printed. Multi pass: ``"practical"`` runs the
#: corrected schedule. Measured: ``benchmarks/bench_goldstein_defaults.py``.
GOLDSTEIN_PRESETS = ("corrected", "paper", "practical")
#: How ``m`` (directions per sample) and the default privacy mode are chosen:
#: ``"practical"`` (default; spec 004 §3.4-3.5): Mode B (enforced sensitivity),
#: where privacy holds for any ``m``, and the smallest ``m`` that keeps the clip
#: bounds near the signal bounds. Zero order: a difference sample's two estimates
#: share their directions, which bounds ``||a - b|| <= d L ||z_t - z_{t-1}||/alpha``
#: for every draw, so only the anchors need ``e <= L``: ``m = 2 (d+1)^2
#: log(2/gamma)`` (hundreds, not ``1e5``). First order: §3.4's coupled difference
#: rule. ``"theory"``: the theorems' variance-driven ``m`` (``~ d^2 B1^2 log`` zero
#: order, single pass) with independent directions, maxed with §3.4's ``m`` in Mode
#: A. Either sizing runs Mode B by default; Mode A is the opt-in
#: ``enforce_sensitivity=False`` (conditional on the declared ``L``).
GOLDSTEIN_SIZINGS = ("practical", "theory")
ESTIMATORS = ("zero_order", "first_order")


@dataclasses.dataclass(frozen=True, kw_only=True)
class GoldsteinOptions(Options):
    """Every option of a Goldstein finder run (both estimators, both passes).

    The fields are the options of :class:`GoldsteinZeroOrderOptions` with the
    estimator settable: what
    :func:`~dpsample.finders.goldstein.goldstein_theorem_parameters` takes, less
    :data:`PLAN_ONLY`.
    """

    x0: ArrayLike | None = option(
        None, "Public starting point in the domain.", rule="the centre of K"
    )
    initial_gap: float | None = option(
        None, "Public `Phi >= F(x0) - inf F`.", rule="the declared loss_range"
    )
    enforce_sensitivity: bool | None = option(
        None,
        "Clip the estimates to their bounds (Mode B); `False`: Mode A, conditional "
        "on the declared `L`.",
        rule="enforced by default (Mode B, clipping)",
    )
    alpha: float | None = option(
        None,
        "Smoothing radius; the certified Goldstein radius is `2 alpha`.",
        rule="default_alpha: 2 alpha L / Phi = beta(alpha) / L (the theorem's rate)",
    )
    calibration: str = option(
        "tight",
        "`'tight'`: the smallest noise the returned guarantee certifies; `'rdp'`: "
        "the smallest dp_accounting's RDP accountant certifies.",
    )
    passes: str = option(
        "single", "`'single'` (tree mechanism) or `'multi'` (ERM, Algorithm 4)."
    )
    preset: str = option(
        "corrected",
        "`'corrected'` (Theorem 3.1 corrected), `'paper'` (the theorems as "
        "printed) or `'practical'` (single pass, not in the paper: batches sized "
        "by the noise, tail average).",
    )
    sizing: str = option(
        "practical",
        "`'practical'`: the smallest `m` the sensitivity bounds need; `'theory'`: "
        "the theorems' `m`.",
    )
    estimator: str = option("zero_order", "`'zero_order'` or `'first_order'`.")
    beta: float | None = option(
        None, "Multi-pass target norm.", source=_THEOREM, rule=""
    )
    num_iters: int | None = option(None, "Override `T`.", source=_THEOREM)
    clip_radius: float | None = option(None, "Override `D`.", source=_THEOREM)
    period: int | None = option(None, "Override `Sigma`.", source=_THEOREM)
    window: int | None = option(None, "Override `M`.", source=_THEOREM)
    num_directions: int | None = option(None, "Override `m`.", source=_THEOREM)
    step_size: float | None = option(None, "Override `eta`.", source=_THEOREM)
    concentration_radius: float | None = option(
        None, "Mode B only: the `e` of the clip bounds.", source="derived"
    )
    c_d: float = option(1.0, "O(.) multiplier of `D`.", note="O(1) constant")
    c_sigma: float = option(1.0, "O(.) multiplier of `Sigma`.", note="O(1) constant")
    c_m: float = option(1.0, "O(.) multiplier of `m`.", note="O(1) constant")
    c_g: float = option(1.0, "`G1 = c_g L` in `eta`.", note="O(1) constant")
    c_t: float = option(
        1.0, "O(.) multiplier of `T` (multi pass).", note="O(1) constant"
    )
    return_iterates: bool = option(
        False, "Put the window means and `z` iterates in `info`."
    )

    def schedule_options(self) -> dict[str, Any]:
        """The schedule's options: :class:`GoldsteinOptions`'s but :data:`PLAN_ONLY`.

        What :func:`~dpsample.finders.goldstein.goldstein_theorem_parameters`
        takes as keywords.
        """
        names = GoldsteinOptions.parameters().keys() - set(PLAN_ONLY)
        return {k: getattr(self, k) for k in names}


#: Options the plan resolves itself; the schedule does not take them.
PLAN_ONLY = ("x0", "initial_gap", "alpha", "calibration", "return_iterates")


@dataclasses.dataclass(frozen=True, kw_only=True)
class GoldsteinZeroOrderOptions(GoldsteinOptions):
    """The options of :class:`~dpsample.finders.goldstein.GoldsteinZeroOrder`."""

    algorithm = "goldstein_zero_order"
    estimator: str = fixed("zero_order", "The two-point zero-order oracle.")


@dataclasses.dataclass(frozen=True, kw_only=True)
class GoldsteinFirstOrderOptions(GoldsteinOptions):
    """The options of :class:`~dpsample.finders.goldstein.GoldsteinFirstOrder`."""

    algorithm = "goldstein_first_order"
    passes: str = fixed("single", "Single pass only (Algorithm 5).")
    estimator: str = fixed("first_order", "The first-order oracle.")
    preset: str = option(
        "practical",
        "`'practical'` (not in the paper: batches sized by the noise, tail "
        "average; issue 24), `'corrected'` (Theorem C.4 corrected, the default "
        "before) or `'paper'`.",
    )
    beta: float | None = fixed(None, "Multi pass only.")
    c_t: float = fixed(1.0, "Multi pass only.", shown=False)


precision.scope_public(globals())
