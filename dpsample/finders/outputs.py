r"""Output rules of the iterative finders: which point of a trajectory is released.

A first-order finder (:func:`~dpsample.finders.dp_sgd`,
:func:`~dpsample.finders.dp_spider`) releases iterates ``x_1, ..., x_T`` that are
post-processing of its noisy oracle answers, so *any* public function of the
trajectory has the run's guarantee. The rules, with the same names and meaning in
every finder that takes ``output=``:

* ``"tail_average"``: the mean of the last ``ceil(T/2)`` iterates
  ``x_{floor(T/2)+1}, ..., x_T``, projected onto ``K`` when ``K`` is a
  :class:`~dpsample.domains.Ball` (the mean of points of a ball is in it up to
  rounding). Not a theorem's output: it cancels most of the injected noise around the
  minimum the run has settled in, and a tail that visits two basins averages to a
  point between them.
* ``"random"``: a uniform iterate of ``x_1..x_T``, drawn from a key only (the
  theorems' output: seed 002 Thm 3.4, Arora et al. Thm B.3).
* ``"last"``: ``x_T``.

``info["output_index"]`` is the released iterate's index (0-based), or for
``"tail_average"`` the first averaged index ``floor(T/2)``: a function of ``T`` and
the key only, never of the data.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from dpsample._src import precision, validation
from dpsample.domains import Ball, Domain
from dpsample.types import Array, PRNGKey

__all__ = ["OUTPUT_RULES", "check_output", "release"]

#: The output rules, DP-SGD's default first (all post-processing of the trajectory).
OUTPUT_RULES = ("tail_average", "random", "last")


def check_output(output: str) -> str:
    """``output`` if it is one of :data:`OUTPUT_RULES`, else a ``ValueError``.

    Examples:
        >>> from dpsample.finders.outputs import check_output
        >>> check_output("mean")
        Traceback (most recent call last):
            ...
        ValueError: Expected output in ('tail_average', 'random', 'last'), got 'mean'
    """
    return validation.one_of("output", output, OUTPUT_RULES)


def release(
    rng_key: PRNGKey, iterates: Array, output: str, domain: Domain
) -> tuple[Array, int]:
    """The point ``output`` releases from ``iterates`` ``x_1..x_T`` (shape ``(T, d)``).

    Post-processing: the released point has the guarantee of the trajectory. The key
    is used by ``"random"`` only.

    Args:
        rng_key: Key of the ``"random"`` draw (independent of the run's noise).
        iterates: The trajectory, shape ``(T, d)``, ``T >= 1``.
        output: One of :data:`OUTPUT_RULES`.
        domain: The problem's domain (a ``Ball`` projects the tail average).

    Returns:
        ``(value, index)``: the released point and ``info["output_index"]`` (see the
        module docstring).

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> from dpsample.domains import Ball
        >>> from dpsample.finders.outputs import release
        >>> xs = jnp.arange(1.0, 6.0)[:, None]  # x_1..x_5 = 1..5
        >>> key, big, small = jax.random.key(0), Ball(9.0, dim=1), Ball(3.5, dim=1)
        >>> value, index = release(key, xs, "tail_average", big)
        >>> value.tolist(), index  # the mean of x_3, x_4, x_5
        ([4.0], 2)
        >>> release(key, xs, "last", big)[0].tolist()
        [5.0]
        >>> release(key, xs, "tail_average", small)[0].tolist()  # projected onto K
        [3.5]
    """
    check_output(output)
    num_steps = int(iterates.shape[0])
    if output == "last":
        index = num_steps - 1
        return iterates[index], index
    if output == "tail_average":
        index = num_steps // 2
        value = jnp.mean(iterates[index:], axis=0)
        if isinstance(domain, Ball):
            value = domain.project(value)
        return value, index
    index = int(jax.random.randint(rng_key, (), 0, num_steps))
    return iterates[index], index


precision.scope_public(globals())
