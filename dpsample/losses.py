"""Per-example losses used by the seeds, each with its derived public constants.

Every factory returns a :class:`Loss`: ``loss_fn(x, example)`` (``example`` a dict with
feature vector ``"x"`` of shape ``(p,)`` and scalar label ``"y"``; the parameter ``x``
has dimension ``p``) and ``constants(...)`` giving the Lipschitz constant ``G``, the
smoothness ``M``, the Hessian-Lipschitz constant ``rho`` and the range ``B`` that hold
under public assumptions on the data:

* ``||a|| <= feature_bound`` for every feature vector ``a`` (row normalisation gives 1);
* labels ``y in {-1, +1}`` (classification) or ``|y| <= label_bound`` (regression);
* the parameter lies in ``{||x|| <= radius}`` (for a ball with centre ``c`` and radius
  ``R`` use ``radius = ||c|| + R``, i.e. :attr:`dpsample.domains.Ball.max_norm`).

All losses are linear-model losses ``l(x; a, y) = phi(<a, x>, y) (+ r(x))``, so
``grad = phi' a``, ``hess = phi'' a a^T`` and the constants are
``G = F max|phi'|``, ``M = F^2 max|phi''|``, ``rho = F^3 max|phi'''|`` with
``F = feature_bound``, plus the contribution of the data-independent regulariser.
``oscillation`` is the tighter bound on ``osc_K(f(., z) - f(., z'))``: the regulariser
cancels in that difference, so it is twice the range of the data term.
``loss_floor`` locates the range: every value lies in ``[loss_floor, loss_floor + B]``
on the ball (declared only where the derivation of ``B`` proves both ends; e.g. the
sigmoid's data term lies in ``[s(-F R), s(F R)]``, a robust loss in ``[0, B]``).

Constants that need an assumption that was not given (e.g. ``radius=None`` for a loss
whose range grows with ``||x||``) are returned as ``None`` (no finite bound).
"""

from __future__ import annotations

import dataclasses
import inspect
import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from dpsample._src import precision, validation
from dpsample.errors import MissingConstantError
from dpsample.types import Array

__all__ = [
    "GLM_LINKS",
    "GLMLoss",
    "Link",
    "Loss",
    "LossConstants",
    "glm",
    "logistic_nonconvex",
    "sigmoid",
    "tukey_biweight",
    "welsch",
    "linear",
    "squared",
]

_SQRT3 = math.sqrt(3.0)
# max |d/dw 2w/(1+w^2)^2| ... constants of phi(w) = w^2/(1+w^2):
_REG_GRAD_MAX = 3.0 * _SQRT3 / 8.0  # max |phi'|, at w = 1/sqrt(3)
_REG_HESS_MAX = 2.0  # phi'' in [-1/2, 2]
_W3 = math.sqrt(1.0 - 2.0 / math.sqrt(5.0))  # root of 1 - 10 w^2 + 5 w^4
_REG_THIRD_MAX = 24.0 * _W3 * (1.0 - _W3**2) / (1.0 + _W3**2) ** 4  # ~4.6686
_SIGMOID_D2_MAX = 1.0 / (6.0 * _SQRT3)  # max |s(1-s)(1-2s)| ~ 0.0962
_V_WELSCH = math.sqrt(3.0 - math.sqrt(6.0))
_WELSCH_D3_MAX = (
    _V_WELSCH * (3.0 - _V_WELSCH**2) * math.exp(-(_V_WELSCH**2) / 2.0)
)  # ~1.3803
# 3 max |u (1 + u^2)^{-5/2}| (at u = 1/2): h times the pseudo-Huber third derivative
_PSEUDO_HUBER_D3_MAX = 3.0 * 0.5 * 1.25**-2.5  # ~0.8587


class LossConstants(NamedTuple):
    """Declared public constants of a per-example loss (``None``: no finite bound).

    Field names match the keyword arguments of :class:`dpsample.problem.Problem`, so
    ``Problem(loss.loss_fn, data, domain, **consts._asdict())`` works.
    ``loss_floor`` (default ``None``) is the lower end of the interval
    ``[loss_floor, loss_floor + loss_range]`` that holds every value of the loss; it
    is ``None`` whenever ``loss_range`` is.
    """

    lipschitz: float | None
    smoothness: float | None
    hessian_lipschitz: float | None
    loss_range: float | None
    oscillation: float | None
    loss_floor: float | None = None


@dataclasses.dataclass(frozen=True)
class Loss:
    """A per-example loss together with the derivation of its constants.

    Attributes:
        name: Short name.
        loss_fn: ``loss_fn(x, example) -> scalar``; ``example = {"x": a, "y": y}``.
        constants_fn: Function of ``(feature_bound, radius, label_bound, dim)``
            returning :class:`LossConstants`; use :meth:`constants`.
    """

    name: str
    loss_fn: Callable[[Array, Any], Array]
    constants_fn: Callable[..., LossConstants] = dataclasses.field(repr=False)

    def __call__(self, x: Array, example: Any) -> Array:
        """Evaluate ``loss_fn(x, example)``."""
        return self.loss_fn(x, example)

    def constants(
        self,
        *,
        feature_bound: float = 1.0,
        radius: float | None = None,
        label_bound: float = 1.0,
        dim: int | None = None,
    ) -> LossConstants:
        """Constants of the loss under the stated public assumptions.

        Args:
            feature_bound: ``F`` with ``||a|| <= F`` for every example.
            radius: Bound on ``||x||`` over the domain (``None``: unbounded).
            label_bound: ``|y| <= label_bound`` (regression losses only).
            dim: Parameter dimension (tightens some regulariser bounds).

        Returns:
            The :class:`LossConstants`.
        """
        feature_bound = validation.positive("feature_bound", feature_bound)
        label_bound = validation.nonnegative("label_bound", label_bound)
        if radius is not None:
            radius = validation.positive("radius", radius)
        if dim is not None:
            dim = validation.positive_int("dim", dim)
        return self.constants_fn(feature_bound, radius, label_bound, dim)


def _margin(x: Array, example: Any) -> Array:
    return example["y"] * jnp.dot(example["x"], x)


def _residual(x: Array, example: Any) -> Array:
    return example["y"] - jnp.dot(example["x"], x)


def _add(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a + b


def _floor(floor: float | None, loss_range: float | None) -> float | None:
    """The floor, declared only with the range it locates."""
    return None if loss_range is None else floor


def _softplus(t: float) -> float:
    """``log(1 + e^t)`` in float64, without overflow."""
    return max(t, 0.0) + math.log1p(math.exp(-abs(t)))


def _logistic(t: float) -> float:
    """``s(t) = 1/(1 + e^{-t})`` in float64, without overflow."""
    return 1.0 / (1.0 + math.exp(-t)) if t >= 0 else math.exp(t) / (1.0 + math.exp(t))


def logistic_nonconvex(reg: float = 1e-3) -> Loss:
    r"""Logistic loss plus the non-convex regulariser of seed 001 (its Problem A).

    .. math::
        f(x; a, y) = \log(1 + e^{-y \langle a, x \rangle})
            + \lambda \sum_j \frac{x_j^2}{1 + x_j^2}.

    The regulariser is data-independent; adding it to every example adds it once to
    the empirical risk.

    Derivation (``F = feature_bound``, ``R = radius``, ``z = y <a, x>``,
    ``ell(z) = log(1 + e^{-z})``, ``phi(w) = w^2/(1+w^2)``):

    * data term: ``|ell'| = s(-z) <= 1`` so ``G = F``; ``ell'' = s(1-s) <= 1/4`` so
      ``M = F^2/4``; ``|ell'''| = |s(1-s)(1-2s)| <= 1/(6 sqrt 3)`` so
      ``rho = F^3/(6 sqrt 3)``. On the ball ``|z| <= F R``, so ``ell`` lies in
      ``[log(1+e^{-FR}), log(1+e^{FR})]``, an interval of length exactly ``F R``
      (``log(1+e^{z}) - log(1+e^{-z}) = z``).
    * regulariser: ``phi'(w) = 2w/(1+w^2)^2``, ``|phi'| <= 3 sqrt(3)/8`` (at
      ``w = 1/sqrt 3``) and ``|phi'(w)| <= 2|w|``, so
      ``||grad r|| <= lambda min(2R, 3 sqrt(3)/8 sqrt(d))``;
      ``phi'' = 2(1-3w^2)/(1+w^2)^3 in [-1/2, 2]`` (diagonal Hessian) gives
      ``2 lambda``; ``phi''' = -24 w (1-w^2)/(1+w^2)^4``, maximal in absolute value
      ``~4.6686`` at ``w^2 = 1 - 2/sqrt 5``; range
      ``0 <= r <= lambda min(R^2, R^2/(1 + R^2/d))`` (concavity of ``phi`` in ``w^2``).
    * located range: the sum lies in ``[log(1+e^{-FR}), log(1+e^{-FR}) + B]``, so
      ``loss_floor = log(1 + e^{-FR})`` (with a radius; ``None`` without).

    Args:
        reg: ``lambda >= 0`` (seed 001 uses ``1e-3``).

    Returns:
        The :class:`Loss`.

    Examples:
        >>> import jax.numpy as jnp
        >>> import dpsample
        >>> from dpsample.losses import logistic_nonconvex
        >>> loss = logistic_nonconvex(reg=1e-3)
        >>> ex = {"x": jnp.array([1.0, 0.0]), "y": jnp.array(1.0)}
        >>> round(float(loss.loss_fn(jnp.zeros(2), ex)), 6)  # log 2
        0.693147
        >>> c = loss.constants(radius=1.0)
        >>> c.lipschitz, c.smoothness
        (1.002, 0.252)
    """
    lam = validation.nonnegative("reg", reg)

    def loss_fn(x: Array, example: Any) -> Array:
        data = jax.nn.softplus(-_margin(x, example))
        return data + lam * jnp.sum(x**2 / (1.0 + x**2))

    def constants_fn(f, radius, label_bound, dim):
        del label_bound
        reg_g = []
        if radius is not None:
            reg_g.append(2.0 * radius)
        if dim is not None:
            reg_g.append(_REG_GRAD_MAX * math.sqrt(dim))
        g = f + lam * min(reg_g) if reg_g else (f if lam == 0 else None)
        data_range = None if radius is None else f * radius
        if radius is None:
            reg_range = 0.0 if lam == 0 else (lam * dim if dim is not None else None)
        else:
            cap = radius**2 if dim is None else radius**2 / (1.0 + radius**2 / dim)
            reg_range = lam * cap
        return LossConstants(
            lipschitz=g,
            smoothness=f**2 / 4.0 + _REG_HESS_MAX * lam,
            hessian_lipschitz=f**3 * _SIGMOID_D2_MAX + _REG_THIRD_MAX * lam,
            loss_range=_add(data_range, reg_range),
            oscillation=None if data_range is None else 2.0 * data_range,
            loss_floor=_floor(
                None if radius is None else _softplus(-f * radius),
                _add(data_range, reg_range),
            ),
        )

    return Loss("logistic_nonconvex", loss_fn, constants_fn)


def sigmoid(reg: float = 0.0) -> Loss:
    r"""Sigmoid loss (seed 001, Problem B) with the sign fixed, plus ``reg/2 ||x||^2``.

    .. math::
        f(x; a, y) = \frac{1}{1 + e^{y \langle a, x \rangle}}
            + \frac{\lambda}{2} \|x\|^2.

    The seed prints ``exp(-y <a, x>)``, which rewards misclassification; spec 001 fixes
    the sign to ``exp(+y <a, x>)`` (decreasing in the margin), as implemented here.

    Derivation (``F = feature_bound``, ``ell(z) = 1 - s(z)`` with ``s`` the logistic
    function): ``|ell'| = s(1-s) <= 1/4`` so ``G = F/4``;
    ``|ell''| = |s(1-s)(1-2s)| <= 1/(6 sqrt 3)`` so ``M = F^2/(6 sqrt 3)``;
    ``|ell'''| = |s(1-s)(1 - 6s + 6s^2)| <= 1/8`` (at ``z = 0``) so ``rho = F^3/8``.
    The loss lies in ``(0, 1)``, so ``B = 1``; on ``|z| <= F R`` it lies in
    ``[s(-FR), s(FR)]`` of length ``tanh(F R / 2)``. The L2 term adds ``lambda R`` to
    ``G``, ``lambda`` to ``M`` and ``lambda R^2 / 2`` to ``B``. Located range: the
    L2 term is ``>= 0``, so every value lies in ``[s(-FR), s(-FR) + B]``
    (``loss_floor = s(-FR)``; ``0`` without a radius, when ``B = 1``).

    Args:
        reg: ``lambda >= 0`` (seed 001 uses ``1e-3``; default none).

    Returns:
        The :class:`Loss`.

    Examples:
        >>> import jax.numpy as jnp
        >>> import dpsample
        >>> from dpsample.losses import sigmoid
        >>> loss = sigmoid()
        >>> ex = {"x": jnp.array([1.0, 0.0]), "y": jnp.array(1.0)}
        >>> float(loss.loss_fn(jnp.zeros(2), ex))
        0.5
        >>> loss.constants().lipschitz, loss.constants().loss_range
        (0.25, 1.0)
    """
    lam = validation.nonnegative("reg", reg)

    def loss_fn(x: Array, example: Any) -> Array:
        data = jax.nn.sigmoid(-_margin(x, example))
        return data + 0.5 * lam * jnp.sum(x**2)

    def constants_fn(f, radius, label_bound, dim):
        del label_bound, dim
        data_range = 1.0 if radius is None else math.tanh(f * radius / 2.0)
        if lam == 0:
            reg_g, reg_range = 0.0, 0.0
        elif radius is None:
            reg_g, reg_range = None, None
        else:
            reg_g, reg_range = lam * radius, 0.5 * lam * radius**2
        return LossConstants(
            lipschitz=_add(f / 4.0, reg_g),
            smoothness=f**2 * _SIGMOID_D2_MAX + lam,
            hessian_lipschitz=f**3 / 8.0,
            loss_range=_add(data_range, reg_range),
            oscillation=2.0 * data_range,
            loss_floor=_floor(
                0.0 if radius is None else _logistic(-f * radius),
                _add(data_range, reg_range),
            ),
        )

    return Loss("sigmoid", loss_fn, constants_fn)


def tukey_biweight(c: float = 4.685) -> Loss:
    r"""Tukey's biweight (bisquare) loss on the residual ``r = y - <a, x>``.

    .. math::
        f = \frac{c^2}{6}\Big(1 - \big(1 - (r/c)^2\big)^3\Big)
        \text{ if } |r| \le c, \quad \frac{c^2}{6} \text{ otherwise}.

    Bounded and non-convex; the constants do not depend on the labels or the domain.
    Derivation with ``psi = f'(r) = r (1 - (r/c)^2)^2`` on ``|r| <= c`` (0 outside),
    ``u = (r/c)^2``: ``max|psi| = 16 c / (25 sqrt 5)`` at ``u = 1/5``, so
    ``G = 16 c F / (25 sqrt 5)``; ``psi' = (1-u)(1-5u) in [-4/5, 1]`` so ``M = F^2``;
    ``psi'' = -12 r/c^2 + 20 r^3/c^4`` has ``|psi''| <= 8/c`` (at ``|r| = c``;
    ``psi'`` is continuous there) so ``rho = 8 F^3 / c``; ``f in [0, c^2/6]`` so
    ``B = c^2/6`` and ``loss_floor = 0``.

    Args:
        c: Tuning constant ``c > 0`` (4.685 gives 95% Gaussian efficiency).

    Returns:
        The :class:`Loss`.

    Examples:
        >>> import jax.numpy as jnp
        >>> import dpsample
        >>> from dpsample.losses import tukey_biweight
        >>> loss = tukey_biweight(c=1.0)
        >>> ex = {"x": jnp.array([1.0]), "y": jnp.array(5.0)}
        >>> round(float(loss.loss_fn(jnp.zeros(1), ex)), 6)  # saturated: c^2/6
        0.166667
    """
    c = validation.positive("c", c)

    def loss_fn(x: Array, example: Any) -> Array:
        u = jnp.minimum((_residual(x, example) / c) ** 2, 1.0)
        return (c**2 / 6.0) * (1.0 - (1.0 - u) ** 3)

    def constants_fn(f, radius, label_bound, dim):
        del radius, label_bound, dim
        b = c**2 / 6.0
        return LossConstants(
            lipschitz=16.0 * c * f / (25.0 * math.sqrt(5.0)),
            smoothness=f**2,
            hessian_lipschitz=8.0 * f**3 / c,
            loss_range=b,
            oscillation=2.0 * b,
            loss_floor=0.0,
        )

    return Loss("tukey_biweight", loss_fn, constants_fn)


def welsch(scale: float = 1.0) -> Loss:
    r"""Welsch (Leclerc / correntropy) loss, a smoothly saturating ramp on the residual.

    .. math:: f = \frac{s^2}{2}\big(1 - e^{-r^2 / (2 s^2)}\big),
        \qquad r = y - \langle a, x \rangle.

    Bounded, smooth and non-convex (it is quadratic near 0 and flattens beyond
    ``|r| ~ s``). Derivation with ``v = r/s``: ``psi = f' = r e^{-v^2/2}``,
    ``max|psi| = s e^{-1/2}`` (at ``|v| = 1``) so ``G = F s e^{-1/2}``;
    ``psi' = (1 - v^2) e^{-v^2/2} in [-2 e^{-3/2}, 1]`` so ``M = F^2``;
    ``psi'' = (v/s)(v^2 - 3) e^{-v^2/2}``, maximal in absolute value at
    ``v^2 = 3 - sqrt 6`` (value ``~1.3803 / s``) so ``rho = 1.3803 F^3 / s``;
    ``f in [0, s^2/2)`` so ``B = s^2/2`` and ``loss_floor = 0``.

    Args:
        scale: ``s > 0``.

    Returns:
        The :class:`Loss`.

    Examples:
        >>> import dpsample
        >>> from dpsample.losses import welsch
        >>> welsch(2.0).constants().loss_range
        2.0
    """
    s = validation.positive("scale", scale)

    def loss_fn(x: Array, example: Any) -> Array:
        r = _residual(x, example)
        return 0.5 * s**2 * -jnp.expm1(-0.5 * (r / s) ** 2)

    def constants_fn(f, radius, label_bound, dim):
        del radius, label_bound, dim
        b = 0.5 * s**2
        return LossConstants(
            lipschitz=f * s * math.exp(-0.5),
            smoothness=f**2,
            hessian_lipschitz=_WELSCH_D3_MAX * f**3 / s,
            loss_range=b,
            oscillation=2.0 * b,
            loss_floor=0.0,
        )

    return Loss("welsch", loss_fn, constants_fn)


def linear() -> Loss:
    """The linear loss ``f(x; a, y) = -y <a, x>`` (worst-case audits, benchmarks).

    Derivation (labels ``y in {-1, +1}``, or ``|y| <= label_bound`` in general):
    ``grad = -y a`` so ``G = F label_bound``; ``M = rho = 0``; on ``||x|| <= R`` the
    loss lies in ``[-F R, F R]`` (times ``label_bound``), so ``B = 2 R F label_bound``,
    ``loss_floor = -R F label_bound`` and the oscillation bound is ``2 B``.

    Returns:
        The :class:`Loss`.

    Examples:
        >>> import dpsample
        >>> from dpsample.losses import linear
        >>> c = linear().constants(radius=1.0)
        >>> c.lipschitz, c.loss_range
        (1.0, 2.0)
    """

    def loss_fn(x: Array, example: Any) -> Array:
        return -_margin(x, example)

    def constants_fn(f, radius, label_bound, dim):
        del dim
        b = None if radius is None else 2.0 * radius * f * label_bound
        return LossConstants(
            lipschitz=f * label_bound,
            smoothness=0.0,
            hessian_lipschitz=0.0,
            loss_range=b,
            oscillation=None if b is None else 2.0 * b,
            loss_floor=None if b is None else -0.5 * b,
        )

    return Loss("linear", loss_fn, constants_fn)


def squared() -> Loss:
    """Least squares ``f(x; a, y) = (y - <a, x>)^2 / 2`` (convex; a reference loss).

    Derivation (``|y| <= Y = label_bound``, ``||x|| <= R``): ``|r| <= Y + F R`` so
    ``G = F (Y + F R)``; ``hess = a a^T`` so ``M = F^2`` and ``rho = 0``;
    ``f in [0, (Y + F R)^2 / 2]`` so ``B = (Y + F R)^2 / 2`` and ``loss_floor = 0``.
    ``G``, ``B`` and the floor need a radius.

    Returns:
        The :class:`Loss`.

    Examples:
        >>> import dpsample
        >>> from dpsample.losses import squared
        >>> c = squared().constants(radius=1.0, label_bound=1.0)
        >>> c.lipschitz, c.smoothness, c.loss_range
        (2.0, 1.0, 2.0)
    """

    def loss_fn(x: Array, example: Any) -> Array:
        return 0.5 * _residual(x, example) ** 2

    def constants_fn(f, radius, label_bound, dim):
        del dim
        if radius is None:
            g = b = None
        else:
            r_max = label_bound + f * radius
            g, b = f * r_max, 0.5 * r_max**2
        return LossConstants(
            lipschitz=g,
            smoothness=f**2,
            hessian_lipschitz=0.0,
            loss_range=b,
            oscillation=None if b is None else 2.0 * b,
            loss_floor=_floor(0.0, b),
        )

    return Loss("squared", loss_fn, constants_fn)


# ------------------------------------------------------------------------ GLMs
@dataclasses.dataclass(frozen=True)
class Link:
    r"""A GLM link-loss ``phi_y(z)`` (``z = <w, x>``) with declared sup bounds.

    Attributes:
        name: Short name.
        phi: ``phi(z, y) -> scalar`` in JAX.
        lipschitz: ``sup_{z, y} |phi_y'(z)|``.
        smoothness: ``sup |phi_y''(z)|``.
        third: ``sup |phi_y'''(z)|``.
        range_fn: ``(s, label_bound) -> float | None``: a bound on
            ``max phi_y - min phi_y`` over ``|z| <= s`` (``s = None``: over all
            ``z``; ``None``: unbounded).
        label_max: The sups above are over labels ``|y| <= label_max`` (``1``:
            the classification links' ``y in [-1, 1]``); ``None``: over every real
            ``y`` (the labels enter only ``range_fn``).
        key: ``(factory name, parameters)`` for the links :func:`glm` builds by
            name (two such links with equal keys are the same function); ``None``
            for a user's :class:`Link`, which is only ever the same as itself.
        floor_fn: ``(s, label_bound) -> float | None``: a lower bound ``a`` on
            ``phi_y`` over ``|z| <= s`` such that ``phi_y`` lies in ``[a, a +
            range_fn(s, label_bound)]`` (``None``: not located; the default for
            a link of the user's own).
    """

    name: str
    phi: Callable[[Array, Array], Array]
    lipschitz: float
    smoothness: float
    third: float
    range_fn: Callable[[float | None, float], float | None] = dataclasses.field(
        repr=False
    )
    label_max: float | None = 1.0
    key: tuple[Any, ...] | None = dataclasses.field(default=None, repr=False)
    floor_fn: Callable[[float | None, float], float | None] | None = dataclasses.field(
        default=None, repr=False
    )

    def same_as(self, other: Link) -> bool:
        """Whether ``other`` is this link: the same object, or the same named link.

        Examples:
            >>> from dpsample.losses import glm
            >>> glm("logistic").link.same_as(glm("logistic").link)
            True
            >>> glm("logistic").link.same_as(glm("sigmoid").link)
            False
        """
        return self is other or (self.key is not None and self.key == other.key)


def _logistic_link() -> Link:
    return Link(
        "logistic",
        lambda z, y: jax.nn.softplus(-y * z),
        1.0,
        0.25,
        _SIGMOID_D2_MAX,
        lambda s, _y: s,
        # |yz| <= s (|y| <= 1): softplus(-yz) in [softplus(-s), softplus(-s) + s]
        floor_fn=lambda s, _y: None if s is None else _softplus(-s),
    )


def _sigmoid_link() -> Link:
    return Link(
        "sigmoid",
        lambda z, y: jax.nn.sigmoid(-y * z),
        0.25,
        _SIGMOID_D2_MAX,
        0.125,
        lambda s, _y: 1.0 if s is None else math.tanh(s / 2.0),
        # |yz| <= s (|y| <= 1): s(-yz) in [s(-s), s(s)], of length tanh(s/2)
        floor_fn=lambda s, _y: 0.0 if s is None else _logistic(-s),
    )


def _robust_sin_link(a: float = 0.5, h: float = 1.0) -> Link:
    a = validation.nonnegative("a", a)
    if not a < 1.0:
        raise ValueError(f"Expected a={a!r} in [0, 1)")
    h = validation.positive("h", h)

    def phi(z: Array, y: Array) -> Array:
        e = z + a * jnp.sin(z) - y
        return h**2 * (jnp.sqrt(1.0 + (e / h) ** 2) - 1.0)

    def range_fn(s: float | None, label_bound: float) -> float | None:
        if s is None:
            return None
        e_max = s + a * min(s, 1.0) + label_bound
        return h**2 * (math.sqrt(1.0 + (e_max / h) ** 2) - 1.0)

    return Link(
        f"robust_sin(a={a:g}, h={h:g})",
        phi,
        h * (1.0 + a),
        (1.0 + a) ** 2 + a * h,
        _PSEUDO_HUBER_D3_MAX / h * (1.0 + a) ** 3 + 3.0 * a * (1.0 + a) + a * h,
        range_fn,
        label_max=None,  # p_h's derivative bounds hold for every label
        # p_h >= 0 and increasing in |e|: phi in [0, range_fn(s, label_bound)]
        floor_fn=lambda s, _y: None if s is None else 0.0,
    )


#: The GLM links by name: factories of :class:`Link` (keyword parameters).
GLM_LINKS: dict[str, Callable[..., Link]] = {
    "logistic": _logistic_link,
    "sigmoid": _sigmoid_link,
    "robust_sin": _robust_sin_link,
}


@dataclasses.dataclass(frozen=True)
class GLMLoss(Loss):
    """A generalised linear model loss ``f(w; (x, y)) = phi_y(<w, x>)``.

    A :class:`Loss` whose constants come from its :class:`Link`'s declared bounds
    and the family's public feature-norm bound ``X_max`` (``||x|| <= X_max`` for
    every example): ``G = |phi'|_inf X_max``, ``M = |phi''|_inf X_max^2``,
    ``rho = |phi'''|_inf X_max^3`` (``grad = phi' x``, ``hess = phi'' x x^T``, the
    third derivative ``phi''' x (x) x (x) x``), range ``range_phi(X_max R)`` on
    ``||w|| <= R`` (``|<w, x>| <= X_max R``) and oscillation twice the range.

    Attributes:
        link: The link-loss ``phi`` with its bounds.
        feature_bound: ``X_max`` (``None``: not declared; :meth:`constants` then
            refuses unless given one).
    """

    link: Link = dataclasses.field(default_factory=_sigmoid_link)
    feature_bound: float | None = None

    def constants(
        self,
        *,
        feature_bound: float | None = None,
        radius: float | None = None,
        label_bound: float = 1.0,
        dim: int | None = None,
    ) -> LossConstants:
        """Constants at ``X_max = feature_bound`` (default: the family's own).

        Raises:
            dpsample.errors.MissingConstantError: No feature bound, here or on
                the family.
        """
        f = self.feature_bound if feature_bound is None else feature_bound
        if f is None:
            raise MissingConstantError(
                f"the GLM {self.name!r} needs the public feature-norm bound X_max "
                "(||x|| <= X_max for every example): pass feature_bound= to glm()"
            )
        return super().constants(
            feature_bound=f, radius=radius, label_bound=label_bound, dim=dim
        )

    def with_feature_bound(self, feature_bound: float) -> GLMLoss:
        """The same loss (same ``loss_fn``) declared with another ``X_max``."""
        return dataclasses.replace(
            self, feature_bound=validation.positive("feature_bound", feature_bound)
        )


def glm(
    link: str | Link = "sigmoid",
    *,
    feature_bound: float | None = None,
    **link_params: Any,
) -> GLMLoss:
    r"""A GLM loss family ``f(w; (x, y)) = phi_y(<w, x>)`` with derived constants.

    Links (:data:`GLM_LINKS`; labels ``y in {-1, +1}`` for the first two):

    * ``"logistic"``: ``phi_y(z) = log(1 + e^{-y z})`` (convex);
      ``|phi'| <= 1``, ``|phi''| <= 1/4``, ``|phi'''| <= 1/(6 sqrt 3)``; on
      ``|z| <= s`` its range is exactly ``s`` (unbounded on ``R``).
    * ``"sigmoid"``: ``phi_y(z) = 1/(1 + e^{y z})`` (non-convex, seed 001's
      Problem B); ``|phi'| <= 1/4``, ``|phi''| <= 1/(6 sqrt 3)``,
      ``|phi'''| <= 1/8``; range ``tanh(s/2) <= 1``.
    * ``"robust_sin"`` (parameters ``a in [0, 1)``, ``h > 0``; spec 003 problem
      F2, realisable with ``y = sigma(<w*, x>)``): ``phi_y(z) = p_h(sigma(z) - y)``,
      ``sigma(z) = z + a sin z``, ``p_h(e) = h^2 (sqrt(1 + (e/h)^2) - 1)``
      (pseudo-Huber). With ``|p_h'| <= h``, ``0 < p_h'' <= 1``,
      ``|p_h'''| <= 0.8587/h`` (``3 u (1 + u^2)^{-5/2}/h`` at ``u = 1/2``),
      ``sigma' in [1 - a, 1 + a]``, ``|sigma''|, |sigma'''| <= a``:
      ``|phi'| <= h (1 + a)``, ``|phi''| <= (1 + a)^2 + a h``,
      ``|phi'''| <= 0.8587 (1 + a)^3/h + 3 a (1 + a) + a h`` (chain rule); with
      ``|y| <= label_bound`` the range on ``|z| <= s`` is at most
      ``p_h(s + a min(s, 1) + label_bound)``.

    Floors (``loss_floor``, every value in ``[floor, floor + B]``): ``log(1 +
    e^{-s})`` for the logistic, ``s(-s)`` for the sigmoid (``0`` on ``R``), ``0``
    for ``robust_sin`` (``p_h >= 0``); a :class:`Link` without ``floor_fn``
    declares none.

    The GLM's constants are those of :class:`GLMLoss` (``G = |phi'|_inf X_max``,
    ``M = |phi''|_inf X_max^2``, ...). ``X_max`` is a constant of the family:
    :meth:`GLMLoss.constants` refuses when it is missing.

    Args:
        link: A name of :data:`GLM_LINKS` or a :class:`Link`.
        feature_bound: ``X_max > 0``, the public bound on ``||x||``.
        **link_params: Parameters of a named link (``a``, ``h`` for
            ``"robust_sin"``).

    Returns:
        The :class:`GLMLoss`.

    Examples:
        >>> import jax.numpy as jnp
        >>> import dpsample
        >>> from dpsample.losses import glm
        >>> loss = glm("sigmoid", feature_bound=2.0)
        >>> ex = {"x": jnp.array([1.0, 0.0]), "y": jnp.array(1.0)}
        >>> float(loss.loss_fn(jnp.zeros(2), ex))
        0.5
        >>> c = loss.constants()
        >>> c.lipschitz, c.loss_range
        (0.5, 1.0)
        >>> glm("robust_sin", a=0.5, h=1.0, feature_bound=1.0).constants().smoothness
        2.75
    """
    if isinstance(link, str):
        if link not in GLM_LINKS:
            raise ValueError(
                f"Expected link in {tuple(GLM_LINKS)} or a Link, got {link!r}"
            )
        link_obj = GLM_LINKS[link](**link_params)
        bound = inspect.signature(GLM_LINKS[link]).bind(**link_params)
        bound.apply_defaults()  # glm("robust_sin") is glm("robust_sin", a=0.5, h=1)
        params = tuple(sorted((k, float(v)) for k, v in bound.arguments.items()))
        link_obj = dataclasses.replace(link_obj, key=(link, params))
    elif isinstance(link, Link):
        if link_params:
            raise ValueError("link parameters are for a named link")
        link_obj = link
    else:
        raise TypeError(f"Expected a link name or a Link, got {link!r}")
    if feature_bound is not None:
        feature_bound = validation.positive("feature_bound", feature_bound)
    phi = link_obj.phi

    def loss_fn(x: Array, example: Any) -> Array:
        return phi(jnp.dot(example["x"], x), example["y"])

    def constants_fn(f, radius, label_bound, dim):
        del dim
        s = None if radius is None else f * radius
        data_range = link_obj.range_fn(s, label_bound)
        floor = None if link_obj.floor_fn is None else link_obj.floor_fn(s, label_bound)
        return LossConstants(
            lipschitz=link_obj.lipschitz * f,
            smoothness=link_obj.smoothness * f**2,
            hessian_lipschitz=link_obj.third * f**3,
            loss_range=data_range,
            oscillation=None if data_range is None else 2.0 * data_range,
            loss_floor=_floor(floor, data_range),
        )

    return GLMLoss(
        f"glm_{link_obj.name}", loss_fn, constants_fn, link_obj, feature_bound
    )


precision.scope_public(globals())
