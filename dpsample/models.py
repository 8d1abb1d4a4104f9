r"""Layered models whose clipped gradient sum needs no per-example gradients.

:class:`MLP` is a dense network (``x -> act(x W_1 + b_1) -> ... -> x W_L + b_L``) with
a per-example loss head, usable anywhere a ``loss_fn(theta, example)`` is (it *is*
one, on a flat parameter vector ``theta``). Its extra method
:meth:`MLP.clipped_gradient_sum` computes

.. math::
    \sum_i w_i \min\Big(1, \frac{C}{\lVert g_i \rVert}\Big) g_i,
    \qquad g_i = \nabla_\theta f(\theta; z_i),

the statistic of the clipped first-kind oracle (DP-SGD's step), *without forming
the* ``(m, d)`` *matrix of per-example gradients* ("ghost clipping", Goodfellow 2015;
Li, Tramèr, Liang, Hashimoto 2022). For a dense layer with per-example input
``a_i`` and per-example output gradient ``e_i = d f_i / d z_i`` the per-example weight
gradient is the outer product ``a_i e_i^T``, so

.. math::
    \lVert g_i \rVert^2 = \sum_l \big(\lVert a_{l,i}\rVert^2 \lVert e_{l,i}\rVert^2
        + \lVert e_{l,i} \rVert^2\big), \qquad
    \sum_i c_i g_i = \big(A_l^\top (c \odot E_l),\ \textstyle\sum_i c_i e_{l,i}\big)_l .

One forward pass and one backward pass to the layer outputs (``E_l``, obtained as the
gradient of the summed loss with respect to zero perturbations of the pre-activations)
give everything; the cost is that of one non-private minibatch gradient.
:func:`dpsample.finders.oracles.first_kind` (so :func:`~dpsample.finders.dp_sgd`,
:func:`~dpsample.finders.dp_spider`'s anchors, ...) uses this path automatically when
the problem's ``loss_fn`` has it; the result equals the per-example (``vmap``) path up
to rounding (tested), and the privacy argument is unchanged.

Rounding. The oracle clips at ``C / F`` with ``F`` from :meth:`MLP.gradient_margin`:
the squared norm above is a sum of ``2L`` terms, each a product of two sums of at most
``max_l(d_{in} + d_{out})`` squares, so it is within a factor ``1 +- gamma_k`` of the
exact squared norm of the row ``g_i`` (built from the computed ``a``, ``e``) with
``k = max_l(d_in + d_out) + 2L + 1``; each entry of the clipped sum is an
``m``-term dot product of products of two rounded numbers (``gamma_{m+1}``). Hence
:func:`~dpsample.finders.oracles.clip_margin` evaluated at ``rows = m + 1`` and
``dim = max(d, k)`` bounds the ghost path's rounding exactly as it bounds the
per-example path's (whose bound is the same function at ``(m, d)``).

Examples:
    >>> import jax, jax.numpy as jnp
    >>> from dpsample.models import MLP
    >>> net = MLP((4, 8, 3))                  # 4 features, 8 hidden units, 3 classes
    >>> theta = net.init(jax.random.key(0))
    >>> theta.shape                            # 4*8 + 8 + 8*3 + 3
    (67,)
    >>> batch = {"x": jnp.ones((5, 4)), "y": jnp.array([0, 1, 2, 0, 1])}
    >>> ghost = jax.jit(net.clipped_gradient_sum)(theta, batch, jnp.ones(5), 0.5)
    >>> g = jax.jit(jax.vmap(jax.grad(net), (None, 0)))(theta, batch)
    >>> scale = jnp.minimum(1.0, 0.5 / jnp.linalg.norm(g, axis=1))
    >>> bool(jnp.allclose(ghost, scale @ g))
    True
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any, cast

import jax
import jax.numpy as jnp
import numpy as np

from dpsample._src import precision, validation
from dpsample._src.clipping import GhostClippedLoss, clip_coefficients, clip_margin
from dpsample.types import Array, ArrayLike, PRNGKey

__all__ = ["ACTIVATIONS", "HEADS", "MLP"]

_ACT = {
    "tanh": jnp.tanh,
    "relu": jax.nn.relu,
    "sigmoid": jax.nn.sigmoid,
    "softplus": jax.nn.softplus,
    "gelu": jax.nn.gelu,
}
#: Hidden-layer activations (elementwise).
ACTIVATIONS = tuple(_ACT)
#: Loss heads: ``"cross_entropy"`` (integer class labels in ``[0, k)``),
#: ``"logistic"`` (one output, labels in ``{-1, +1}``), ``"squared"``
#: (``0.5 ||out - y||^2``; ``y`` scalar for one output, else a length-``k`` vector).
HEADS = ("cross_entropy", "logistic", "squared")


def _head_losses(head: str, out: Array, y: Array) -> Array:
    """Per-example losses of a batch of outputs ``out`` (``(m, k)``)."""
    if head == "cross_entropy":
        picked = jnp.take_along_axis(out, y[:, None].astype(jnp.int32), axis=1)[:, 0]
        return jax.nn.logsumexp(out, axis=1) - picked
    if head == "logistic":
        return jax.nn.softplus(-y.astype(out.dtype) * out[:, 0])
    resid = out - y.astype(out.dtype).reshape(out.shape)
    return 0.5 * jnp.sum(resid * resid, axis=1)


@dataclasses.dataclass(frozen=True)
class MLP(GhostClippedLoss):
    r"""Dense network with a per-example loss head, on a flat parameter vector.

    ``MLP(layer_sizes)(theta, example)`` is the loss of one example ``{"x": features,
    "y": label}`` (keys configurable), so ``Problem(net, data, domain, ...)`` works;
    :meth:`clipped_gradient_sum` is the fast clipped-sum path the first-kind oracle
    picks up (see the module docstring). The flat layout is ``[W_1 (row-major,
    (d_0, d_1)), b_1, W_2, b_2, ...]``.

    The constants a guarantee may need (Lipschitz, smoothness, ...) are not derived
    here: with per-example clipping (``clip_norm``) DP-SGD needs none; declare them on
    the :class:`~dpsample.problem.Problem` when a finder asks for them.

    Attributes:
        layer_sizes: ``(d_0, d_1, ..., d_L)``: input features, hidden widths, outputs.
        activation: Hidden activation, one of :data:`ACTIVATIONS`.
        head: Loss head, one of :data:`HEADS`.
        features: Key of the feature vector in an example.
        target: Key of the label in an example.

    Examples:
        >>> import jax
        >>> from dpsample.models import MLP
        >>> net = MLP((64, 32, 10), activation="relu")
        >>> net.dim
        2410
        >>> theta = net.init(jax.random.key(1))
        >>> [w.shape for w, _ in net.unravel(theta)]
        [(64, 32), (32, 10)]
    """

    layer_sizes: tuple[int, ...]
    activation: str = "tanh"
    head: str = "cross_entropy"
    features: str = "x"
    target: str = "y"

    def __post_init__(self) -> None:
        sizes = tuple(self.layer_sizes)
        if len(sizes) < 2:
            raise ValueError(
                f"MLP needs at least (inputs, outputs) layer sizes, got {sizes!r}"
            )
        sizes = tuple(validation.positive_int("layer size", s) for s in sizes)
        object.__setattr__(self, "layer_sizes", sizes)
        if self.activation not in _ACT:
            raise ValueError(
                f"Expected activation in {ACTIVATIONS}, got {self.activation!r}"
            )
        if self.head not in HEADS:
            raise ValueError(f"Expected head in {HEADS}, got {self.head!r}")
        if self.head == "logistic" and sizes[-1] != 1:
            raise ValueError(
                f"the logistic head needs one output, got layer_sizes[-1]={sizes[-1]}"
            )
        if self.head == "cross_entropy" and sizes[-1] < 2:
            raise ValueError("the cross_entropy head needs at least two outputs")

    # ------------------------------------------------------------------ layout
    @property
    def dim(self) -> int:
        """Number of parameters ``d``."""
        s = self.layer_sizes
        return sum(s[i] * s[i + 1] + s[i + 1] for i in range(len(s) - 1))

    @property
    def num_layers(self) -> int:
        """Number of dense layers ``L``."""
        return len(self.layer_sizes) - 1

    def unravel(self, theta: Array) -> list[tuple[Array, Array]]:
        """Split a flat ``theta`` into ``[(W_1, b_1), ..., (W_L, b_L)]``."""
        layers, start = [], 0
        s = self.layer_sizes
        for i in range(self.num_layers):
            din, dout = s[i], s[i + 1]
            w = theta[start : start + din * dout].reshape(din, dout)
            start += din * dout
            layers.append((w, theta[start : start + dout]))
            start += dout
        return layers

    def ravel(self, layers: Any) -> Array:
        """Inverse of :meth:`unravel`: a flat float64 vector."""
        return jnp.concatenate(
            [jnp.concatenate([jnp.ravel(w), jnp.ravel(b)]) for w, b in layers]
        ).astype(jnp.float64)

    def init(self, rng_key: PRNGKey) -> Array:
        """LeCun-normal weights (std ``1/sqrt(d_in)``), zero biases; float64 flat.

        The initial point is public (it depends on the key only).
        """
        keys = jax.random.split(rng_key, self.num_layers)
        s = self.layer_sizes
        layers = [
            (
                jax.random.normal(k, (s[i], s[i + 1]), jnp.float64) / math.sqrt(s[i]),
                jnp.zeros(s[i + 1], jnp.float64),
            )
            for i, k in enumerate(keys)
        ]
        return self.ravel(layers)

    # ------------------------------------------------------------------ evaluation
    def _forward(
        self, layers: list[tuple[Array, Array]], a: Array, perturbations: Any = None
    ) -> tuple[Array, list[Array]]:
        """Outputs of a batch ``a`` (``(m, d_0)``) and each layer's input."""
        act = _ACT[self.activation]
        inputs, h = [], a
        for i, (w, b) in enumerate(layers):
            inputs.append(h)
            z = h @ w + b
            if perturbations is not None:
                z = z + perturbations[i]
            h = act(z) if i < self.num_layers - 1 else z
        return h, inputs

    def apply(self, theta: ArrayLike, features: ArrayLike) -> Array:
        """Network outputs (logits) for features of shape ``(d_0,)`` or ``(m, d_0)``."""
        a = jnp.asarray(features)
        single = a.ndim == 1
        theta = jnp.asarray(theta)
        out, _ = self._forward(self.unravel(theta), a[None] if single else a)
        return out[0] if single else out

    def batch_losses(self, theta: ArrayLike, batch: Mapping[str, Any]) -> Array:
        """Per-example losses of a batch (leading axis ``m``)."""
        theta = jnp.asarray(theta)
        out, _ = self._forward(self.unravel(theta), jnp.asarray(batch[self.features]))
        return _head_losses(self.head, out, jnp.asarray(batch[self.target]))

    def __call__(self, theta: Array, example: Mapping[str, Any]) -> Array:
        """Loss of one example (the ``loss_fn`` interface of ``Problem``)."""
        batch = {
            self.features: jnp.asarray(example[self.features])[None],
            self.target: jnp.asarray(example[self.target])[None],
        }
        return self.batch_losses(theta, batch)[0]

    @property
    def __name__(self) -> str:  # shown by Problem's messages
        return f"MLP{self.layer_sizes}"

    # ------------------------------------------------------------------ ghost clipping
    def gradient_margin(self, gradient_dtype: str, rows: int) -> float:
        """Rounding margin ``F`` of :meth:`clipped_gradient_sum` over ``rows`` rows.

        :func:`~dpsample.finders.oracles.clip_margin` at ``rows + 1`` and
        ``max(d, max_l(d_in + d_out) + 2L + 1)`` (module docstring).

        Examples:
            >>> from dpsample.models import MLP
            >>> round(MLP((64, 64, 10)).gradient_margin("float32", 256), 3)
            1.008
        """
        s = self.layer_sizes
        k = max(s[i] + s[i + 1] for i in range(self.num_layers)) + 2 * self.num_layers
        return clip_margin(gradient_dtype, rows + 1, max(self.dim, k + 1))

    def clipped_gradient_sum(
        self,
        theta: ArrayLike,
        batch: Mapping[str, Any],
        weights: ArrayLike,
        bound: ArrayLike,
        gradient_dtype: str = "float64",
    ) -> Array:
        r"""``sum_i w_i min(1, bound / ||g_i||) g_i`` without per-example gradients.

        Computed in ``gradient_dtype`` and returned in float64. Rows whose squared
        norm is not finite contribute zero (as in the per-example path), so no row
        ever contributes more than ``bound`` and a NaN example cannot poison the
        sum. ``bound`` is used as given: the first-kind oracle passes the clip norm
        divided by :meth:`gradient_margin`.

        Args:
            theta: Flat parameters, shape ``(d,)``.
            batch: ``{features: (m, d_0), target: (m,) or (m, k)}``.
            weights: ``w``, shape ``(m,)`` (0 for padding rows).
            bound: Clip bound.
            gradient_dtype: ``"float64"`` or ``"float32"``.

        Returns:
            The sum, shape ``(d,)``, float64.
        """
        ft = jnp.dtype(gradient_dtype)
        layers = self.unravel(jnp.asarray(theta).astype(ft))
        a = jnp.asarray(batch[self.features]).astype(ft)
        y = jnp.asarray(batch[self.target])
        m = a.shape[0]
        zeros = [jnp.zeros((m, w.shape[1]), ft) for w, _ in layers]

        def total(perturbations: list[Array]) -> tuple[Array, list[Array]]:
            out, inputs = self._forward(layers, a, perturbations)
            return jnp.sum(_head_losses(self.head, out, y)), inputs

        errs, inputs = jax.grad(total, has_aux=True)(zeros)
        sq = jnp.zeros(m, ft)
        for h, e in zip(inputs, errs, strict=True):
            e2 = jnp.sum(e * e, axis=1)
            sq = sq + jnp.sum(h * h, axis=1) * e2 + e2
        coef, finite = clip_coefficients(
            sq, jnp.asarray(weights), cast(Array, bound), ft
        )
        parts = []
        hi = jax.lax.Precision.HIGHEST
        for h, e in zip(inputs, errs, strict=True):
            ce = jnp.where(finite[:, None], coef[:, None] * e, 0.0)
            h = jnp.where(finite[:, None], h, 0.0)
            parts.append(jnp.ravel(jnp.matmul(h.T, ce, precision=hi)))
            parts.append(jnp.sum(ce, axis=0))
        return jnp.concatenate(parts).astype(jnp.float64)

    # ------------------------------------------------------------------ data
    def check_data(self, data: Mapping[str, Any]) -> None:
        """Refuse data the model cannot take (before any private computation).

        Features must be a finite ``(n, d_0)`` array; labels must match the head
        (integers in ``[0, k)``, values in ``{-1, +1}``, or finite targets of the
        output shape).

        Raises:
            ValueError: On a shape, value or key mismatch.
        """
        if self.features not in data or self.target not in data:
            raise ValueError(
                f"MLP data need keys {self.features!r} and {self.target!r}, got "
                f"{sorted(data)}"
            )
        x = np.asarray(data[self.features])
        y = np.asarray(data[self.target])
        d0, k = self.layer_sizes[0], self.layer_sizes[-1]
        if x.ndim != 2 or x.shape[1] != d0:
            raise ValueError(f"Expected features of shape (n, {d0}), got {x.shape}")
        if not np.all(np.isfinite(x)):
            raise ValueError("features contain NaN or infinite values")
        n = x.shape[0]
        if self.head == "cross_entropy":
            if y.shape != (n,) or not np.issubdtype(y.dtype, np.integer):
                raise ValueError(
                    f"cross_entropy labels must be integers of shape ({n},), got "
                    f"{y.dtype} {y.shape}"
                )
            if y.size and (y.min() < 0 or y.max() >= k):
                raise ValueError(f"cross_entropy labels must lie in [0, {k})")
        elif self.head == "logistic":
            if y.shape != (n,) or not np.all(np.isin(y, (-1, 1))):
                raise ValueError(f"logistic labels must be -1 or +1, shape ({n},)")
        else:
            want = (n,) if k == 1 else (n, k)
            if y.shape not in (want, (n, k)):
                raise ValueError(
                    f"squared targets must have shape {want}, got {y.shape}"
                )
            if not np.all(np.isfinite(y)):
                raise ValueError("targets contain NaN or infinite values")


precision.scope_public(globals())
