r"""Privacy of the exact regularised Gibbs target: every valid bound, and why.

The target (seed 000 Sec. 5.1) is

.. math::
    \pi_D(x) \propto \exp\big(-\beta(F_D(x) + \tfrac{\mu}{2}\|x\|^2)\big)\,
    \mathbf 1_K(x),

on a ball ``K`` of diameter ``D``, for a ``G``-Lipschitz, possibly non-convex and
non-smooth loss. :func:`target_privacy` gives every valid privacy bound of the
*exact* target (the always-valid oscillation bound, the LSI bounds, and the
Gopi–Lee–Liu Gaussian-DP bound for declared-convex losses) in a
:class:`GibbsPrivacyReport` that names the tightest at a given ``delta``. The
calibration of ``(beta, mu)`` is :mod:`dpsample.samplers.gibbs_calibration`; the
private sampler is :mod:`dpsample.samplers.gibbs`.

Bounds on the exact target (replace-one neighbours, ``osc`` the declared
``problem.utility_oscillation()``, a bound on
:math:`\operatorname{osc}_K(f(\cdot,z) - f(\cdot,z'))`):

======================  ==========================================  =================
name                    guarantee                                   valid when
======================  ==========================================  =================
``"pure"``              bounded-range exponential mechanism with    always
                        :math:`\varepsilon = \beta\,osc/n`
                        (:math:`\le 2\beta G D/n`)
``"lsi_zcdp"``          :math:`C\Lambda^2/2`-zCDP,                  ``mu > 0``, ``G``
                        :math:`\Lambda = 2\beta G/n`
``"gll_gdp"``           Gaussian DP with                            declared convex,
                        :math:`s = 2G\sqrt{\beta}/(n\sqrt{\mu})`    ``mu > 0``
``"minami"``            seed 000 Thm 5.1 as printed (E2):           only where
                        :math:`\Lambda\sqrt{C}\sqrt{1+2\log(1/\delta)}`  implied (see
                                                                    :mod:`~dpsample.privacy.lsi`)
======================  ==========================================  =================

``C`` is the best LSI constant of :func:`dpsample.privacy.lsi.gibbs_lsi_constants`.
For non-convex losses it is exponential in ``beta`` (Holley–Stroock
:math:`e^{\beta GD}/(\beta\mu)`), so the pure bound wins at every useful temperature
(errata E23); the report shows that.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from dpsample._src import precision, validation
from dpsample.errors import MissingConstantError
from dpsample.privacy.guarantee import PrivacyGuarantee
from dpsample.privacy.lsi import (
    GibbsLSIConstants,
    gibbs_lsi_constants,
    lsi_zcdp,
    minami,
    minami_epsilon,
    minami_is_implied,
)
from dpsample.problem import ProblemSpec
from dpsample.samplers.target import GibbsTarget

__all__ = [
    "GibbsPrivacyReport",
    "constant_assumptions",
    "gll_gaussian_dp",
    "oscillation_bound",
    "target_privacy",
]


# --------------------------------------------------------------------------------------
# bounds on the exact target


def oscillation_bound(target: GibbsTarget) -> PrivacyGuarantee:
    r"""The always-valid bound: a bounded-range mechanism with ``beta osc / n``.

    With :math:`g = F_D - F_{D'}`, the regulariser cancels and
    :math:`\log\frac{\pi_D(x)}{\pi_{D'}(x)} = -\beta g(x) - \log
    \mathbb{E}_{\pi_{D'}} e^{-\beta g}`, whose range over ``x`` is at most
    :math:`\beta\operatorname{osc}_K g \le \beta\,osc/n` (``osc`` =
    ``problem.utility_oscillation()``, e.g. ``2 G D``). So :math:`\pi_D` is
    :math:`\beta\,osc/n`-DP and, as a bounded-range mechanism, also
    :math:`(\beta\,osc/n)^2/8`-zCDP. No convexity, LSI or ``mu`` is needed (spec 000
    section 3.2).

    Raises:
        dpsample.errors.MissingConstantError: no oscillation bound is declared.

    Examples:
        >>> import jax.numpy as jnp
        >>> import dpsample
        >>> from dpsample import Ball, Problem
        >>> from dpsample.samplers.gibbs_privacy import oscillation_bound
        >>> from dpsample.samplers.target import GibbsTarget
        >>> p = Problem(lambda x, z: jnp.abs(x[0] - z), jnp.zeros(10),
        ...             Ball(1.0, dim=1), lipschitz=1.0)
        >>> oscillation_bound(GibbsTarget.create(p, beta=5.0, mu=0.0)).epsilon(0.0)
        2.0
    """
    eps = target.beta * target.problem.utility_oscillation() / target.problem.n
    return PrivacyGuarantee.exponential_mechanism(eps, relation=target.problem.relation)


def gll_gaussian_dp(target: GibbsTarget) -> PrivacyGuarantee:
    r"""Gopi–Lee–Liu Gaussian DP for declared-convex losses (GLL Thm 4/13).

    If ``F_D`` and ``F_D'`` are convex, :math:`F + \tfrac{\mu}{2}\|x\|^2` is
    :math:`\mu`-strongly convex and :math:`F_D - F_{D'}` is :math:`2G/n`-Lipschitz
    (replace-one), so sampling :math:`\propto e^{-\beta(F + \mu\|x\|^2/2)}` is
    :math:`s`-GDP with :math:`s = (2G/n)\sqrt{\beta/\mu}`: the privacy curve of the
    Gaussian mechanism with noise multiplier ``1/s``. (GLL state ``G sqrt(k)/(n
    sqrt(mu))`` for ``f(., s) - f(., s')`` ``G``-Lipschitz; each ``f`` ``G``-Lipschitz
    gives ``2G``.) Its zCDP parameter ``s^2/2`` equals the LSI route with the
    Bakry–Émery constant; the Gaussian curve is tighter than converting that zCDP.

    Raises:
        dpsample.errors.MissingConstantError: ``G`` not declared.
        ValueError: ``mu == 0``.

    Examples:
        >>> import jax.numpy as jnp
        >>> import dpsample
        >>> from dpsample import Ball, Problem
        >>> from dpsample.samplers.gibbs_privacy import gll_gaussian_dp
        >>> from dpsample.samplers.target import GibbsTarget
        >>> p = Problem(lambda x, z: jnp.abs(x[0] - z), jnp.zeros(100),
        ...             Ball(1.0, dim=1), lipschitz=1.0)
        >>> g = gll_gaussian_dp(GibbsTarget.create(p, beta=100.0, mu=4.0))
        >>> round(g.zcdp_rho(), 12)  # s = 0.1
        0.005
    """
    g = validation.require_constant(
        "lipschitz", target.problem.lipschitz, needed_for="the GLL Gaussian-DP bound"
    )
    if target.mu <= 0:
        raise ValueError("the GLL Gaussian-DP bound needs mu > 0")
    s = 2.0 * g / target.problem.n * math.sqrt(target.beta / target.mu)
    return PrivacyGuarantee.gaussian(1.0 / s, relation=target.problem.relation)


class GibbsPrivacyReport(NamedTuple):
    """Every valid privacy bound of the exact Gibbs target, and why.

    Attributes:
        beta: inverse temperature.
        mu: regularisation.
        convex: whether the losses were declared convex.
        bounds: ``{name: PrivacyGuarantee}`` of the delta-free valid bounds
            (``"pure"``, ``"lsi_zcdp"``, ``"gll_gdp"``).
        lsi_constants: every available LSI constant bound.
        lsi_constant: the best ``(name, value)`` LSI bound, or ``None``.
        notes: ``{name: explanation}`` for every bound, including those not available.
        minami_inputs: ``(C, G, beta, n)`` for the printed Theorem 5.1, or ``None``.
    """

    beta: float
    mu: float
    convex: bool
    bounds: dict[str, PrivacyGuarantee]
    lsi_constants: GibbsLSIConstants
    lsi_constant: tuple[str, float] | None
    notes: dict[str, str]
    minami_inputs: tuple[float, float, float, int] | None

    def minami_epsilon(self, delta: float) -> float:
        """The printed Theorem 5.1 epsilon at ``delta`` (``inf`` if unavailable)."""
        if self.minami_inputs is None:
            return math.inf
        c, g, beta, n = self.minami_inputs
        return minami_epsilon(c, lipschitz=g, beta=beta, n=n, delta=delta)

    def valid_guarantees(self, delta: float) -> dict[str, PrivacyGuarantee]:
        """The valid bounds at ``delta``: :attr:`bounds` plus Minami where implied."""
        out = dict(self.bounds)
        if self.minami_inputs is not None and 0 < delta < 1:
            c, g, beta, n = self.minami_inputs
            if minami_is_implied(c, lipschitz=g, beta=beta, n=n, delta=delta):
                m = minami(c, lipschitz=g, beta=beta, n=n, delta=delta)
                if m is not None:
                    out["minami"] = m
        return out

    def epsilons(self, delta: float) -> dict[str, float]:
        """``{name: epsilon at delta}`` for every valid bound."""
        return {k: g.epsilon(delta) for k, g in self.valid_guarantees(delta).items()}

    def tightest(self, delta: float) -> tuple[str, PrivacyGuarantee]:
        """``(name, guarantee)`` of the valid bound with the least epsilon at delta."""
        guarantees = self.valid_guarantees(delta)
        eps = {k: g.epsilon(delta) for k, g in guarantees.items()}
        name = min(eps, key=lambda k: eps[k])
        return name, guarantees[name]

    def epsilon(self, delta: float) -> float:
        """The smallest valid epsilon at ``delta``."""
        return min(self.epsilons(delta).values())

    def explain(self, delta: float) -> str:
        """A human-readable summary: each bound's epsilon, the tightest and why."""
        eps = self.epsilons(delta)
        name = min(eps, key=lambda k: eps[k])
        lines = [
            f"Gibbs target beta={self.beta:g}, mu={self.mu:g}, "
            f"convex={self.convex}; epsilon at delta={delta:g}:"
        ]
        for k in sorted(eps, key=lambda k: eps[k]):
            lines.append(f"  {k:10s} {eps[k]:.6g}   {self.notes.get(k, '')}")
        for k, note in self.notes.items():
            if k not in eps:
                lines.append(f"  {k:10s} n/a        {note}")
        if self.lsi_constant is not None:
            lines.append(
                f"  best LSI constant: {self.lsi_constant[0]} = "
                f"{self.lsi_constant[1]:.6g}"
            )
        lines.append(f"tightest: {name}")
        return "\n".join(lines)


def target_privacy(
    target: GibbsTarget,
    *,
    convex: bool = False,
    enforced_oscillation: float | None = None,
) -> GibbsPrivacyReport:
    r"""Every valid privacy bound of the exact target :math:`\pi_D`.

    Bounds (all from declared public constants, replace-one neighbours):

    * ``"pure"``: :func:`oscillation_bound`, always valid;
    * ``"lsi_zcdp"``: :func:`dpsample.privacy.lsi.lsi_zcdp` with the best LSI
      constant (Bakry–Émery if ``convex``, else Holley–Stroock / Lipschitz
      perturbation) and :math:`\Lambda = 2\beta G/n`; needs ``mu > 0`` and ``G``;
    * ``"gll_gdp"``: :func:`gll_gaussian_dp`, only for ``convex=True`` and ``mu > 0``;
    * ``"minami"``: seed 000 Theorem 5.1 as printed (erratum E2), added by
      :meth:`GibbsPrivacyReport.valid_guarantees` only at deltas where it is implied
      by the self-contained LSI tail bound.

    With ``enforced_oscillation`` (the bound a clip of the loss values enforces,
    :func:`dpsample.nets.clipped.sensitivity_route`; the default of
    :func:`~dpsample.samplers.gibbs.gibbs`) the target is that of the clipped loss
    and the only bound is ``"pure"`` at that oscillation: it holds whatever the loss
    and data. The LSI, Gaussian-DP and Minami bounds rest on ``G``-Lipschitz
    losses (and convexity), which no clip enforces, so they are not formed (their
    notes say why); the LSI constants are still reported (a sampler's schedule uses
    them).

    Privacy:
        Each bound is a guarantee for releasing one exact sample of
        :math:`\pi_D`; a sampler adds its own error (see :func:`gibbs`).

    Args:
        target: the :class:`~dpsample.samplers.target.GibbsTarget`.
        convex: a public declaration that every ``f(., z)`` is convex on ``K``.
        enforced_oscillation: the oscillation bound a clip of the loss enforces
            (``None``: the declared constants are used, as assumptions).

    Returns:
        A :class:`GibbsPrivacyReport`.

    Raises:
        dpsample.errors.MissingConstantError: if no bound at all can be formed.

    Examples:
        >>> import jax.numpy as jnp
        >>> import dpsample
        >>> from dpsample import Ball, Problem
        >>> from dpsample.samplers.gibbs_privacy import target_privacy
        >>> from dpsample.samplers.target import GibbsTarget
        >>> p = Problem(lambda x, z: jnp.abs(x[0] - z), jnp.zeros(100),
        ...             Ball(1.0, dim=1), lipschitz=1.0)
        >>> r = target_privacy(GibbsTarget.create(p, beta=2.0, mu=0.25))
        >>> sorted(r.bounds), r.tightest(1e-6)[0]
        (['lsi_zcdp', 'pure'], 'pure')
        >>> r.epsilon(1e-6) <= 2 * 2.0 * 1.0 * 2.0 / 100
        True
        >>> e = target_privacy(GibbsTarget.create(p, beta=2.0, mu=0.25),
        ...                    enforced_oscillation=4.0)
        >>> sorted(e.bounds), e.bounds["pure"].epsilon(0.0)  # beta * 4 / n
        (['pure'], 0.08)
    """
    if not isinstance(target, GibbsTarget):
        raise TypeError(f"Expected a GibbsTarget, got {type(target).__name__}")
    problem = target.problem
    beta, mu = float(target.beta), float(target.mu)
    bounds: dict[str, PrivacyGuarantee] = {}
    notes: dict[str, str] = {}
    if enforced_oscillation is not None:
        osc = validation.positive("enforced_oscillation", enforced_oscillation)
        bounds["pure"] = PrivacyGuarantee.exponential_mechanism(
            beta * osc / problem.n, relation=problem.relation
        )
        notes["pure"] = (
            f"beta*osc/n bounded range, osc = {osc:.6g} enforced by clipping the "
            "loss values: holds whatever the data"
        )
        why = (
            "not used: it rests on G-Lipschitz losses (and convexity), which no clip "
            "enforces (enforce_sensitivity=False uses it, conditionally)"
        )
        for name in ("lsi_zcdp", "gll_gdp", "minami"):
            notes[name] = why
        consts = gibbs_lsi_constants(problem, beta=beta, mu=mu, convex=convex)
        return GibbsPrivacyReport(
            beta, mu, bool(convex), bounds, consts, consts.best(), notes, None
        )
    try:
        bounds["pure"] = oscillation_bound(target)
        notes["pure"] = "beta*osc/n bounded range: always valid (no LSI, no convexity)"
    except MissingConstantError:
        notes["pure"] = "needs an oscillation bound (G with a Ball, B, or oscillation)"

    consts = gibbs_lsi_constants(problem, beta=beta, mu=mu, convex=convex)
    best = consts.best()
    g = problem.lipschitz
    minami_inputs = None
    if best is None or g is None:
        why = "mu = 0" if mu == 0 else "needs the Lipschitz constant G"
        notes["lsi_zcdp"] = f"LSI route unavailable: {why}"
        notes["minami"] = f"Theorem 5.1 unavailable: {why}"
    else:
        lam = 2.0 * beta * g / problem.n
        zc = lsi_zcdp(best[1], log_density_lipschitz=lam, relation=problem.relation)
        if zc is None:
            notes["lsi_zcdp"] = f"LSI constant ({best[0]}) overflows: vacuous"
        else:
            bounds["lsi_zcdp"] = zc
            notes["lsi_zcdp"] = (
                f"C*Lambda^2/2-zCDP with C={best[1]:.4g} ({best[0]}), Lambda=2 beta G/n"
            )
        if math.isfinite(best[1]):
            minami_inputs = (best[1], g, beta, problem.n)
        notes["minami"] = (
            "seed 000 Thm 5.1 as printed (E2); used only where implied by the LSI "
            "tail bound"
        )
    if convex and mu > 0 and g is not None:
        bounds["gll_gdp"] = gll_gaussian_dp(target)
        notes["gll_gdp"] = "Gopi-Lee-Liu Gaussian DP (declared-convex losses)"
    else:
        notes["gll_gdp"] = "needs declared-convex losses, mu > 0 and G"
    if not bounds and minami_inputs is None:
        raise MissingConstantError(
            "no privacy bound of the Gibbs target can be formed from the declared "
            "constants; declare lipschitz=G (with a Ball), loss_range=B or oscillation"
        )
    return GibbsPrivacyReport(
        beta, mu, bool(convex), bounds, consts, best, notes, minami_inputs
    )


_NOT_ENFORCED = (
    "not enforced: the sampler's target is built from the loss itself, and no clip "
    "of values or gradients enforces a bound on the loss function"
)


def constant_assumptions(
    spec: ProblemSpec,
    bound: str,
    *,
    convex: bool,
    proximal: bool,
    enforced: bool = False,
) -> tuple[str, ...]:
    r"""The declared constants a Gibbs guarantee rests on, as assumption texts.

    A sample of the exact target (and a sampler within TV of it) is private because
    of properties of the *loss function*: a Lipschitz bound, a loss range, an
    oscillation of differences, convexity. No clip of values or gradients can
    enforce them on the target, so a guarantee built from them states them
    (:meth:`~dpsample.privacy.PrivacyGuarantee.assuming`; it shows as
    conditional):

    * ``"pure"``: the declared bound ``utility_oscillation()`` uses (``2 G D``: each
      ``f(., z)`` ``G``-Lipschitz on ``K``; ``2 B``: values in an interval of
      length ``B``; or the declared ``oscillation``);
    * ``"lsi_zcdp"`` / ``"minami"``: ``G``-Lipschitz (``Lambda = 2 beta G/n``) and
      the declared constants the LSI constant uses (``G``, ``B``, convexity);
    * ``"gll_gdp"``: convexity and ``G``-Lipschitz;
    * ``proximal=True`` adds the proximal sampler's TV slack: its rejection RGO and
      schedule use ``G``-Lipschitz (and ``B`` for the initial KL).

    With ``enforced=True`` the loss values are clipped (the cone or range clip of
    :func:`dpsample.nets.clipped.sensitivity_route`) and ``bound`` is the
    ``"pure"`` bound at the oscillation that clip enforces: it states nothing. What
    no clip enforces remains: ``proximal=True`` adds that the *clipped* loss is
    ``G``-Lipschitz, as the rejection RGO's acceptance bound and the TV schedule
    use, and (``convex``) that it is convex, as the schedule's LSI constant uses.

    The projected-Langevin route needs none of these (its per-example gradients are
    clipped at ``G``: enforced) and does not call this.

    Examples:
        >>> import jax.numpy as jnp
        >>> from dpsample import Ball, Problem
        >>> from dpsample.samplers.gibbs_privacy import constant_assumptions
        >>> p = Problem(lambda x, z: jnp.abs(x[0] - z), jnp.zeros(10),
        ...             Ball(1.0, dim=1), lipschitz=1.0)
        >>> [a[:33] for a in constant_assumptions(p.spec, "pure", convex=False,
        ...                                        proximal=False)]
        ['every f(., z) is G-Lipschitz on K']
        >>> constant_assumptions(p.spec, "pure", convex=False, proximal=False,
        ...                      enforced=True)
        ()
    """
    g, b, osc_decl = spec.lipschitz, spec.loss_range, spec.oscillation
    lip = (
        f"every f(., z) is G-Lipschitz on K with the declared lipschitz G = {g:.6g}"
        if g is not None
        else None
    )
    out: list[str] = []
    if enforced:
        if bound != "pure":
            raise ValueError(f"an enforced Gibbs guarantee is 'pure', got {bound!r}")
        if proximal and lip is not None:
            out.append(
                f"the clipped loss: {lip}, as the proximal sampler's rejection step "
                "(RGO) and its TV schedule use (not enforced: the clip of values "
                "enforces the target's privacy, not a Lipschitz bound)"
            )
        if proximal and convex:
            out.append(
                "every clipped f(., z) is convex on K, as the proximal schedule's "
                "LSI constant uses (convex=True; not enforced)"
            )
        return tuple(out)
    if bound == "pure":
        osc = spec.utility_oscillation()
        if g is not None and osc >= 2.0 * g * spec.domain.diameter:
            out.append(
                f"{lip}, so the target's privacy loss ranges over at most "
                f"beta 2 G D/n ({_NOT_ENFORCED})"
            )
        elif b is not None and osc >= 2.0 * b:
            out.append(
                f"every f(., z) takes values in an interval of length the declared "
                f"loss_range B = {b:.6g} on K ({_NOT_ENFORCED})"
            )
        else:
            out.append(
                f"the declared oscillation {osc_decl:.6g} bounds osc_K(f(., z) - "
                f"f(., z')) for every pair of examples ({_NOT_ENFORCED})"
            )
    else:
        if lip is not None:
            out.append(f"{lip} ({_NOT_ENFORCED})")
        if bound in ("lsi_zcdp", "minami") and b is not None:
            out.append(
                f"every f(., z) takes values in an interval of length the declared "
                f"loss_range B = {b:.6g} on K, as the LSI constant uses "
                f"({_NOT_ENFORCED})"
            )
    if convex and bound in ("gll_gdp", "lsi_zcdp", "minami"):
        out.append(
            "every f(., z) is convex on K, as declared (convex=True; not enforced)"
        )
    if proximal and lip is not None:
        out.append(
            f"{lip}, as the proximal sampler's rejection step (RGO) and its TV "
            f"schedule use ({_NOT_ENFORCED})"
        )
    return tuple(dict.fromkeys(out))


precision.scope_public(globals())
