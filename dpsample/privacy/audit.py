r"""Empirical privacy audits: high-confidence lower bounds on epsilon.

A mechanism claimed to be :math:`(\varepsilon, \delta)`-DP must satisfy, for every
pair of neighbouring datasets :math:`D \sim D'` and every measurable event :math:`S`,

.. math::

    \Pr[M(D) \in S] \le e^{\varepsilon} \Pr[M(D') \in S] + \delta
    \quad\Longrightarrow\quad
    \varepsilon \ge \log \frac{p - \delta}{q},
    \qquad p = \Pr[M(D) \in S],\ q = \Pr[M(D') \in S].

:func:`audit` runs the mechanism many times on a chosen pair, picks an event from one
half of the samples and bounds ``p`` from below and ``q`` from above on the other half
with exact Clopper–Pearson intervals; the resulting value is a lower bound on the
true epsilon with the stated confidence. A lower bound above the claimed epsilon
refutes the claim (or its implementation); one below it proves nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import numpy as np
from scipy import stats

from dpsample._src import precision, validation
from dpsample.privacy.result import PrivateResult
from dpsample.types import PRNGKey

__all__ = ["AuditResult", "audit", "clopper_pearson"]


class AuditResult(NamedTuple):
    """The outcome of :func:`audit`.

    Attributes:
        epsilon_lower_bound: ``max(0, log((p_lower - delta) / q_upper))``; the true
            epsilon (at ``delta``) is at least this with probability ``>=
            confidence``.
        confidence: the joint confidence level of the bound.
        threshold: the score threshold ``t`` of the selected event.
        direction: ``"greater"`` for the event ``{score > t}``, ``"less"`` for
            ``{score < t}``.
        swapped: ``False`` if ``p`` is measured on ``dataset`` and ``q`` on
            ``neighbour``; ``True`` for the reverse order.
        count_p: evaluation-half outputs in the event, on the ``p`` side.
        count_q: evaluation-half outputs in the event, on the ``q`` side.
        num_eval: evaluation-half size (per dataset).
        p_lower: the one-sided Clopper–Pearson lower bound on ``p``.
        q_upper: the one-sided Clopper–Pearson upper bound on ``q``.
        num_samples: mechanism runs per dataset (selection plus evaluation).
    """

    epsilon_lower_bound: float
    confidence: float
    threshold: float
    direction: str
    swapped: bool
    count_p: int
    count_q: int
    num_eval: int
    p_lower: float
    q_upper: float
    num_samples: int


def clopper_pearson(
    k: Any, n: Any, confidence: float, *, one_sided: bool = False
) -> tuple[Any, Any]:
    r"""Exact (Clopper–Pearson) confidence bounds for a binomial proportion.

    With :math:`\beta = 1 - \text{confidence}` and tail :math:`\tau = \beta/2`
    (two-sided) or :math:`\tau = \beta` (``one_sided=True``, each bound then holds on
    its own with probability ``>= confidence``):

    .. math::

        \text{lo} = \mathrm{Beta}^{-1}(\tau; k, n - k + 1), \qquad
        \text{hi} = \mathrm{Beta}^{-1}(1 - \tau; k + 1, n - k),

    with ``lo = 0`` when ``k = 0`` and ``hi = 1`` when ``k = n``.

    Args:
        k: number of successes (scalar or array), ``0 <= k <= n``.
        n: number of trials (scalar or array), ``>= 1``.
        confidence: confidence level in ``(0, 1)``.
        one_sided: whether each bound is one-sided at ``confidence``.

    Returns:
        ``(lo, hi)`` as floats (or float arrays for array input).

    Raises:
        ValueError: ``confidence`` outside ``(0, 1)`` or ``k`` outside ``[0, n]``.

    Examples:
        >>> from dpsample.privacy.audit import clopper_pearson
        >>> lo, hi = clopper_pearson(0, 100, 0.95)
        >>> lo, round(hi, 4)
        (0.0, 0.0362)
        >>> lo, hi = clopper_pearson(50, 100, 0.95)
        >>> round(lo, 4), round(hi, 4)
        (0.3983, 0.6017)
    """
    conf = validation.delta_in_open_unit(confidence, name="confidence")
    k_arr = np.asarray(k, dtype=np.float64)
    n_arr = np.asarray(n, dtype=np.float64)
    if np.any(n_arr < 1) or np.any(k_arr < 0) or np.any(k_arr > n_arr):
        raise ValueError(f"Expected 0 <= k <= n and n >= 1, got k={k!r}, n={n!r}")
    tail = (1.0 - conf) if one_sided else (1.0 - conf) / 2.0
    # Safe parameters keep scipy away from Beta(0, .) (NaN and warnings).
    lo = stats.beta.ppf(tail, np.maximum(k_arr, 1.0), n_arr - k_arr + 1.0)
    hi = stats.beta.ppf(1.0 - tail, k_arr + 1.0, np.maximum(n_arr - k_arr, 1.0))
    lo = np.where(k_arr == 0, 0.0, lo)
    hi = np.where(k_arr == n_arr, 1.0, hi)
    if lo.ndim == 0:
        return float(lo), float(hi)
    return lo, hi


def _strip(out: Any) -> Any:
    return out.value if isinstance(out, PrivateResult) else out


def _batched(fn: Callable[[Any], Any], xs: Any, use_vmap: bool) -> np.ndarray:
    """``[fn(x) for x in xs]`` as a float64 array, vmapped when ``fn`` traces."""
    if use_vmap:
        try:
            return np.asarray(jax.vmap(fn)(xs), dtype=np.float64)
        except TypeError:  # jax's tracer errors (concretization, ...) are TypeErrors
            pass
    return np.stack([np.asarray(fn(x), dtype=np.float64) for x in xs])


def _candidate_thresholds(pooled: np.ndarray, max_thresholds: int) -> np.ndarray:
    values = np.unique(pooled)
    if values.size <= max_thresholds + 1:
        if values.size == 1:
            return values
        return 0.5 * (values[:-1] + values[1:])  # every distinct event
    levels = np.linspace(0.0, 1.0, max_thresholds + 2)[1:-1]
    return np.unique(np.quantile(pooled, levels))


def _counts(scores: np.ndarray, thresholds: np.ndarray) -> dict[str, np.ndarray]:
    s = np.sort(scores)
    return {
        "greater": s.size - np.searchsorted(s, thresholds, side="right"),
        "less": np.searchsorted(s, thresholds, side="left"),
    }


def _log_ratio(
    k_p: Any, k_q: Any, n: int, delta: float, side_conf: float
) -> tuple[Any, Any, Any]:
    """``log((p_lower - delta) / q_upper)`` (``-inf`` where ``p_lower <= delta``)."""
    p_lo, _ = clopper_pearson(k_p, n, side_conf, one_sided=True)
    _, q_hi = clopper_pearson(k_q, n, side_conf, one_sided=True)
    num = np.asarray(p_lo) - delta
    with np.errstate(divide="ignore"):
        val = np.where(num > 0, np.log(np.maximum(num, 1e-300) / q_hi), -np.inf)
    return val, p_lo, q_hi


def audit(
    rng_key: PRNGKey,
    mechanism_fn: Callable[[PRNGKey, Any], Any],
    dataset: Any,
    neighbour: Any,
    *,
    num_samples: int = 100_000,
    delta: float = 0.0,
    confidence: float = 0.95,
    score_fn: Callable[[Any], Any] | None = None,
    vmap: bool = True,
    max_thresholds: int = 512,
) -> AuditResult:
    r"""Lower-bound the epsilon of ``mechanism_fn`` on one pair of neighbours.

    1. Run ``mechanism_fn(key_i, dataset)`` and ``mechanism_fn(key_i', neighbour)``
       ``num_samples`` times each with fresh keys (``jax.vmap`` over keys, falling
       back to a Python loop when the mechanism does not trace, or when
       ``vmap=False``). A returned :class:`PrivateResult` is reduced to its value.
    2. Map each output to a scalar score: ``score_fn(output)`` if given; otherwise
       the output itself if it is a scalar, else its projection onto
       :math:`\bar y_D - \bar y_{D'}`, the difference of the two sample means on the
       selection half.
    3. Selection half (the first ``num_samples // 2`` runs of each dataset): among the
       events :math:`\{s > t\}` and :math:`\{s < t\}` (``t`` between distinct scores,
       or at up to ``max_thresholds`` quantiles) and both orders
       :math:`(D, D')`, :math:`(D', D)`, pick the one maximising the estimate
       :math:`\log((\hat p_{lo} - \delta)/\hat q_{hi})` computed with the same
       Clopper–Pearson bounds as below. (Bounds rather than raw frequencies, so
       that events with :math:`\hat q = 0` and a handful of hits are not chosen.)
    4. Evaluation half (independent of the choice): with
       :math:`\beta = 1 - \text{confidence}`, one-sided Clopper–Pearson bounds
       :math:`p \ge p_{lo}` and :math:`q \le q_{hi}`, each at level
       :math:`1 - \beta/2` (Bonferroni), hold jointly with probability
       :math:`\ge 1 - \beta`, and then

       .. math::

           \varepsilon \ge \varepsilon_{lb} =
               \max\Big(0, \log\frac{p_{lo} - \delta}{q_{hi}}\Big).

    The bound is valid for the true privacy parameter of the mechanism as
    implemented (floating point included) at this ``delta``; it is only as strong as
    the chosen pair of datasets and score. For pure DP use ``delta=0``.

    Args:
        rng_key: a PRNG key (consumed).
        mechanism_fn: ``(rng_key, data) -> output`` (an array, a scalar, or a
            :class:`PrivateResult`).
        dataset: the dataset :math:`D` passed to ``mechanism_fn``.
        neighbour: a neighbouring dataset :math:`D'`.
        num_samples: runs per dataset (``>= 4``; half select, half evaluate).
        delta: the delta of the claim being audited, in ``[0, 1)``.
        confidence: joint confidence level of the bound, in ``(0, 1)``.
        score_fn: optional ``output -> scalar`` (vmapped like the mechanism).
        vmap: whether to try ``jax.vmap`` over keys.
        max_thresholds: the most candidate thresholds tried in selection.

    Returns:
        An :class:`AuditResult`.

    Raises:
        ValueError: invalid ``num_samples``, ``delta``, ``confidence`` or
            ``max_thresholds``, or scores that are not one scalar per output.

    Examples:
        >>> import jax
        >>> from dpsample.mechanisms import laplace
        >>> from dpsample.privacy.audit import audit
        >>> def mech(rng_key, x):
        ...     return laplace(rng_key, x, l1_sensitivity=1.0, epsilon=1.0).value
        >>> res = audit(jax.random.key(0), mech, 0.0, 1.0, num_samples=20_000)
        >>> 0.0 < res.epsilon_lower_bound <= 1.0
        True

    References:
        Jagielski, Ullman & Oprea, `Auditing Differentially Private Machine
        Learning: How Private is Private SGD? <https://arxiv.org/abs/2006.07709>`_,
        2020.
        Nasr, Song, Thakurta, Papernot & Carlini, `Adversary Instantiation: Lower
        Bounds for Differentially Private Machine Learning
        <https://arxiv.org/abs/2101.04535>`_, 2021.
        Clopper & Pearson, `The Use of Confidence or Fiducial Limits Illustrated in
        the Case of the Binomial <https://doi.org/10.1093/biomet/26.4.404>`_, 1934.
    """
    num_samples = validation.positive_int("num_samples", num_samples)
    if num_samples < 4:
        raise ValueError(f"Expected num_samples={num_samples} >= 4")
    delta = validation.nonnegative("delta", delta)
    if delta >= 1.0:
        raise ValueError(f"Expected delta={delta!r} < 1")
    confidence = validation.delta_in_open_unit(confidence, name="confidence")
    max_thresholds = validation.positive_int("max_thresholds", max_thresholds)
    side_conf = 1.0 - (1.0 - confidence) / 2.0  # Bonferroni over p and q

    key_d, key_n = jax.random.split(rng_key)
    outputs = []
    for data, k in ((dataset, key_d), (neighbour, key_n)):
        keys = jax.random.split(k, num_samples)

        def run_once(kk: PRNGKey, data: Any = data) -> Any:
            return _strip(mechanism_fn(kk, data))

        outputs.append(_batched(run_once, keys, vmap))
    n_sel = num_samples // 2
    n_eval = num_samples - n_sel

    if score_fn is not None:
        scores = [_batched(score_fn, out, vmap) for out in outputs]
    else:
        flat = [out.reshape(num_samples, -1) for out in outputs]
        if flat[0].shape[1] == 1:
            scores = [f[:, 0] for f in flat]
        else:
            direction = flat[0][:n_sel].mean(axis=0) - flat[1][:n_sel].mean(axis=0)
            scores = [f @ direction for f in flat]
    if any(s.shape != (num_samples,) for s in scores):
        raise ValueError("Expected one scalar score per mechanism output")

    # Selection on the first half.
    sel = [s[:n_sel] for s in scores]
    thresholds = _candidate_thresholds(np.concatenate(sel), max_thresholds)
    sel_counts = [_counts(s, thresholds) for s in sel]
    best = (-np.inf, -math.inf, 0, "greater", False)
    for direction in ("greater", "less"):
        for swapped in (False, True):
            k_p = sel_counts[int(swapped)][direction]
            k_q = sel_counts[1 - int(swapped)][direction]
            crit, _, _ = _log_ratio(k_p, k_q, n_sel, delta, side_conf)
            # Ties (e.g. all -inf) are broken by the smoothed frequency ratio.
            smooth = np.log((k_p + 1.0) / (k_q + 1.0))
            i = int(np.lexsort((smooth, crit))[-1])
            cand = (crit[i], smooth[i], i, direction, swapped)
            if cand[:2] > best[:2]:
                best = cand
    _, _, i, direction, swapped = best
    threshold = float(thresholds[i])

    # Evaluation on the second half.
    ev = [s[n_sel:] for s in scores]
    ev_counts = [_counts(s, np.array([threshold]))[direction][0] for s in ev]
    e_p, e_q = int(ev_counts[int(swapped)]), int(ev_counts[1 - int(swapped)])
    value, p_lo, q_hi = _log_ratio(e_p, e_q, n_eval, delta, side_conf)
    return AuditResult(
        epsilon_lower_bound=max(0.0, float(value)),
        confidence=confidence,
        threshold=threshold,
        direction=direction,
        swapped=swapped,
        count_p=e_p,
        count_q=e_q,
        num_eval=n_eval,
        p_lower=float(p_lo),
        q_upper=float(q_hi),
        num_samples=num_samples,
    )


precision.scope_public(globals())
