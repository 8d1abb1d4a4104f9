"""Nets of a ball and the exponential mechanism over them (Theorem 5.8), streamed.

Theorem 5.8 of Ganesh, Liu, Oh and Thakurta runs the exponential mechanism with utility
``-F_D`` over an ``r``-net ``P`` of the domain ``K``. Nets of useful radius have
``(D/r)^d`` points, so this package never materialises them:

* :mod:`~dpsample.nets.grid`: :class:`GridNet` enumerates the cubic lattice net of a
  ball by a flat index over the net points only (row-compressed, via a small host-side
  row table), chunk by chunk; :func:`grid_net` builds one for a given spacing.
* :mod:`~dpsample.nets.points`: :class:`PointNet` wraps an explicit,
  data-independent set of points, e.g. from :func:`random_net` (uniform points;
  :func:`random_net_size` gives a size that makes it an ``r``-net with a stated
  probability).
* :mod:`~dpsample.nets.mechanism`: :class:`NetExponentialMechanism` (registry name
  ``"net"``) plans the net, temperature, guarantee, cost and warm-start bound in
  public and scans the net in chunks with Gumbel-max sampling, so its memory does not
  grow with the net; :func:`exponential_mechanism` is plan then run in one call.
* :mod:`~dpsample.nets.clipped`: the clips that enforce the mechanism's score
  sensitivity (:class:`~dpsample.nets.clipped.ConeClippedLoss`, the ``2 G D`` route;
  :class:`~dpsample.nets.clipped.RangeClippedLoss`, the ``2 B`` route).
* :mod:`~dpsample.nets.minimum`: :func:`net_minimum` is a **non-private** diagnostic:
  the exact minimiser of the empirical risk over the same net, streamed the same way
  (never release it).
* :mod:`~dpsample.nets.resolve`, :mod:`~dpsample.nets.stream`,
  :mod:`~dpsample.nets.ball`: the shared parts (which net runs and its checks, the
  jitted streaming cores, the ball ``K``).

Nets depend only on public quantities (the domain, the spacing or a public key), never
on the data: that is what makes the exponential mechanism over them private.
"""

from dpsample.nets.grid import GridNet, grid_net, grid_net_size_bound
from dpsample.nets.mechanism import (
    NetExponentialMechanism,
    NetInfo,
    exponential_mechanism,
)
from dpsample.nets.minimum import net_minimum
from dpsample.nets.points import PointNet, random_net, random_net_size
from dpsample.nets.resolve import check_net_in_ball
from dpsample.nets.stream import NOISE_BLOCK

__all__ = [
    "NOISE_BLOCK",
    "GridNet",
    "NetExponentialMechanism",
    "NetInfo",
    "PointNet",
    "check_net_in_ball",
    "exponential_mechanism",
    "grid_net",
    "grid_net_size_bound",
    "net_minimum",
    "random_net",
    "random_net_size",
]
