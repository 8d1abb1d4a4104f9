"""Primitive differentially private mechanisms (one mechanism per module).

Every mechanism takes a PRNG key first, keyword-only privacy parameters validated
eagerly, and returns a :class:`dpsample.privacy.PrivateResult`.
"""

from dpsample.mechanisms.above_threshold import above_threshold, above_threshold_sosp
from dpsample.mechanisms.exponential import (
    exponential,
    exponential_logits,
    gumbel_max,
)
from dpsample.mechanisms.gaussian import gaussian
from dpsample.mechanisms.laplace import laplace
from dpsample.mechanisms.select_sosp import select_sosp_iterate

__all__ = [
    "above_threshold",
    "above_threshold_sosp",
    "exponential",
    "exponential_logits",
    "gaussian",
    "gumbel_max",
    "laplace",
    "select_sosp_iterate",
]
