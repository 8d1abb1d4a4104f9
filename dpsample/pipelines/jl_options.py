"""The JL method's options, declared once (:mod:`dpsample.options`).

:class:`JLMethodOptions` declares every option of
:class:`~dpsample.pipelines.jl.JLMethod` (registry name ``"jl_glm"``), in the order of
:func:`~dpsample.pipelines.jl.jl_glm`'s keywords: the plan's keywords, the registry's
and the TOML schema's ``[options]``, the plan's option rows and the docs' option table
(docs/warm_start.md) are read from it; :func:`~dpsample.pipelines.jl.jl_glm` keeps the
same keywords (``glm`` required there), checked against it by
``tests/test_options.py``. ``glm`` and ``inner_options`` have no row of their own (the
plan shows ``X_max`` as ``feature_bound`` and the inner plan as its stage); the
``inner`` row shows the inner algorithm's registry name. The plan's public checks of
``glm`` against the problem (a GLM family with ``X_max``, GLM-shaped data, the
problem's loss known to be the family's, declared constants equal to the family's)
are here too, beside the option they check.

Examples:
    >>> from dpsample.pipelines.jl_options import JLMethodOptions
    >>> list(JLMethodOptions.parameters())[:3]
    ['glm', 'inner', 'projection_dim']
    >>> JLMethodOptions.from_options({"label_bound": 0.5}).given()
    {'label_bound': 0.5}
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from dpsample._src import precision
from dpsample.base import PrivateAlgorithm
from dpsample.domains import Ball
from dpsample.errors import MissingConstantError
from dpsample.losses import GLMLoss
from dpsample.options import Options, option
from dpsample.problem import ProblemSpec

__all__ = ["JLMethodOptions"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class JLMethodOptions(Options):
    """Every option of the JL method for GLMs (seed 003 Lemma 8.1, Corollary 8.2).

    ``glm`` is required (the plan refuses ``None``); ``projection_dim`` left at
    ``None`` is Lemma 8.1's rule, which needs the inner algorithm's rate shape.
    """

    algorithm = "jl_glm"

    glm: GLMLoss | None = option(
        None,
        "The `GLMLoss` family of the problem's loss, with its feature bound `X_max` "
        "(required: the projected constants come from its link and `X_max`).",
        rule="refused (required)",
    )
    inner: PrivateAlgorithm | str | None = option(
        None,
        "The inner algorithm, an object or a registry name, run on the projected "
        "features (`None`: `WarmStart()`, Algorithm 2).",
    )
    projection_dim: int | None = option(
        None,
        "The projected dimension `k`, at most `d`.",
        source="theorem",
        rule="Lemma 8.1: argmin_j g(j) + L X_max/sqrt(j), j <= min(d, rank_bound)",
    )
    rank_bound: int | None = option(
        None,
        "A declared public bound on the features' rank (never computed from the "
        "data); caps Lemma 8.1's `j`.",
    )
    inner_radius: float | None = option(
        None,
        "Radius of the inner ball in `R^k` (required on `Unconstrained`).",
        rule="2 R: ||Phi w|| <= 2 ||w|| off the JL event (utility only)",
    )
    label_bound: float = option(
        1.0,
        "Labels are clipped to `[-label_bound, label_bound]` (at most the link's "
        "`label_max`).",
        note="labels clipped to [-label_bound, label_bound] before the inner run",
    )
    inner_options: Mapping[str, Any] | None = option(
        None, "Plan options of the inner algorithm."
    )


# ---------------------------------------------- the glm option against the problem
def _feature_bound(glm: Any) -> float:
    """``X_max`` of ``glm``, refused unless it is a GLM family with a feature bound."""
    if glm is None:
        raise MissingConstantError(
            "the JL method needs the GLM family of the loss (glm=losses.glm(link, "
            "feature_bound=X_max)): the projected problem's constants come from "
            "its link and X_max"
        )
    if not isinstance(glm, GLMLoss):
        raise TypeError(f"Expected glm to be a losses.GLMLoss, got {glm!r}")
    if glm.feature_bound is None:
        raise MissingConstantError(
            f"the JL method needs the public feature-norm bound X_max of "
            f"{glm.name!r}: pass feature_bound= to losses.glm()"
        )
    return glm.feature_bound


def _glm_example(spec: ProblemSpec) -> Any:
    """The spec's example, checked to be a GLM's ``{"x": (d,), "y": ()}``."""
    example = spec.example
    if not (isinstance(example, Mapping) and set(example) == {"x", "y"}):
        raise ValueError(
            "the JL method needs GLM data {'x': (n, d) features, 'y': (n,) labels}, "
            f"got examples {example!r}"
        )
    if tuple(example["x"].shape) != (spec.dim,) or tuple(example["y"].shape) != ():
        raise ValueError(
            f"Expected features of shape (n, {spec.dim}) and labels of shape (n,), got "
            f"one example's x of shape {tuple(example['x'].shape)} and y of shape "
            f"{tuple(example['y'].shape)}"
        )
    return example


#: Relative tolerance of the check that the problem's declared constants are the
#: GLM family's (:func:`_check_declared_constants`).
_CONSTANTS_RTOL = 1e-9


def _check_family(spec: ProblemSpec, glm: GLMLoss) -> None:
    """Refuse unless the problem's loss is known to be the GLM ``glm``.

    The projected problem's constants come from ``glm``'s link, and the problem's
    loss is what runs: an arbitrary function cannot be told to be that GLM, so
    the loss must be ``glm`` itself, its ``loss_fn``, or a
    :class:`~dpsample.losses.GLMLoss` whose link is ``glm``'s (the same object, or
    the same named link with the same parameters:
    :meth:`~dpsample.losses.Link.same_as`).
    """
    loss = spec.loss_fn
    if loss is glm or loss is glm.loss_fn:
        return
    how = (
        f"build the problem from the family: Problem(loss, data, domain, "
        f"**loss.constants(radius=R)._asdict()) with loss = the glm= you pass here "
        f"({glm.name!r}) or its loss_fn"
    )
    if isinstance(loss, GLMLoss):
        if loss.link.same_as(glm.link):
            return
        raise ValueError(
            f"the problem's loss is the GLM {loss.name!r}, not glm={glm.name!r}: the "
            "JL method's constants come from glm=, so glm= must be the problem's "
            f"family; {how}"
        )
    name = getattr(loss, "__name__", None) or type(loss).__name__
    raise ValueError(
        f"the JL method cannot tell that the problem's loss {name!r} is the GLM "
        f"{glm.name!r} (its constants would not bound the loss that runs otherwise); "
        f"{how}"
    )


def _domain_radius(spec: ProblemSpec) -> float | None:
    """A bound on ``||w||`` over the problem's domain (``None``: unbounded)."""
    if not isinstance(spec.domain, Ball):
        return None
    center = spec.domain.center
    shift = 0.0 if center is None else float(np.linalg.norm(np.asarray(center)))
    return shift + spec.domain.radius


def _check_declared_constants(
    spec: ProblemSpec, glm: GLMLoss, label_bound: float
) -> None:
    """Refuse where a declared constant of the problem is not the family's.

    Each constant the problem declares must equal ``glm.constants(radius=R,
    label_bound=label_bound)`` at the family's ``X_max`` and the domain's radius
    ``R`` (to :data:`_CONSTANTS_RTOL`): a disagreement means a wrong family or a
    wrong ``X_max``.
    """
    derived = glm.constants(
        radius=_domain_radius(spec), label_bound=label_bound
    )._asdict()
    bad = []
    for field, value in derived.items():
        declared = getattr(spec, field)
        if declared is None:
            continue
        if value is None or not math.isclose(
            declared, value, rel_tol=_CONSTANTS_RTOL, abs_tol=0.0
        ):
            bad.append(f"{field} = {declared!r} declared, {value!r} from the family")
    if bad:
        raise ValueError(
            f"the problem's declared constants disagree with glm={glm.name!r} at "
            f"X_max = {glm.feature_bound!r}, label_bound = {label_bound!r}: "
            + "; ".join(bad)
            + " (declare the family's: glm.constants(radius=R, label_bound=...))"
        )


precision.scope_public(globals())
