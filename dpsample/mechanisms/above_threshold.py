"""AboveThreshold (sparse vector): the first query above a noisy threshold.

Two variants: the textbook one-stream :func:`above_threshold`, and
:func:`above_threshold_sosp`, seed 000's Algorithm 2 that selects an approximate
second-order stationary point (small gradient norm *and* not-too-negative smallest
Hessian eigenvalue) among candidate iterates, with the sensitivity correction of spec
000 section 2.6.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any, cast

import jax
import jax.numpy as jnp
import numpy as np

from dpsample._src import precision, validation
from dpsample.privacy import NeighboringRelation, PrivacyGuarantee, PrivateResult
from dpsample.types import Array, ArrayLike, PRNGKey

__all__ = ["above_threshold", "above_threshold_sosp"]

QueryFn = Callable[[int], ArrayLike]

# Candidates whose per-query noise is drawn in one device call on the lazy path.
_BLOCK = 256


# --------------------------------------------------------------------------- noise
# Query i always receives the noise drawn from ``fold_in(stream_key, i)``, on the
# vectorised and on the lazy path alike, so both paths give the same answer for the
# same key. Each (stream_key, i) pair is used exactly once.


def _indexed_laplace(stream_key: PRNGKey, indices: Array) -> Array:
    return jax.vmap(
        lambda i: jax.random.laplace(
            jax.random.fold_in(stream_key, i), dtype=jnp.float64
        )
    )(indices)


@partial(jax.jit, static_argnames="size")
def _laplace_block(stream_key: PRNGKey, start: Array, size: int) -> Array:
    return _indexed_laplace(stream_key, start + jnp.arange(size))


class _LazyNoise:
    """Standard Laplace noise for indices 0, 1, ... fetched block by block."""

    def __init__(self, stream_key: PRNGKey):
        self._key = stream_key
        self._start = -1
        self._block = np.empty(0)

    def __getitem__(self, i: int) -> float:
        start = (i // _BLOCK) * _BLOCK
        if start != self._start:
            self._block = np.asarray(_laplace_block(self._key, start, _BLOCK))
            self._start = start
        return float(self._block[i - start])


# ---------------------------------------------------------------------- validation
def _is_tracer(x: object) -> bool:
    return isinstance(x, jax.core.Tracer)


def _query_array(name: str, values: ArrayLike) -> Array:
    """Return ``values`` as a float64 1-D array, checking finiteness when concrete."""
    if not _is_tracer(values):
        arr = np.asarray(values)
        if arr.dtype.kind not in "biuf":
            raise TypeError(f"Expected real {name}, got dtype {arr.dtype}")
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"Expected {name} to be finite, found NaN or inf values")
    out = jnp.asarray(values, dtype=jnp.float64)
    if out.ndim != 1 or out.shape[0] == 0:
        raise ValueError(f"Expected a non-empty 1-D array of {name}, got {out.shape}")
    return out


def _count(name: str, streams: Mapping[str, Any], num: int | None) -> int:
    """The number of queries: the arrays' common length, or ``num`` for callables."""
    lengths = {
        k: int(np.shape(v)[0])
        for k, v in streams.items()
        if not callable(v) and np.ndim(v) == 1
    }
    if num is not None:
        num = validation.positive_int(name, num)
    if len(set(lengths.values())) > 1:
        raise ValueError(f"Expected equal lengths, got {lengths}")
    if lengths:
        (length,) = set(lengths.values())
        if num is not None and num != length:
            raise ValueError(f"Expected {name}={num} to equal the length {length}")
        return length
    if num is None:
        raise ValueError(f"Pass {name}=... when the queries are given as callables")
    return num


#: Value taken by a lazy query that is not finite (public rule, no exception mid-run):
#: it fails its test. AboveThreshold's queries never reach the threshold (``-inf``);
#: Algorithm 2's gradient norm is never small (``+inf``) and its eigenvalue never
#: large enough (``-inf``).
_FAILING = {"queries": -math.inf, "grad_norms": math.inf, "min_eigenvalues": -math.inf}


def _evaluate(name: str, stream: QueryFn | Array, i: int) -> float:
    if callable(stream):
        value = float(np.asarray(stream(i)))
        # A callable is evaluated during the run, on the private data: raising on a
        # non-finite value would be a data-dependent exception, so it fails instead.
        return value if math.isfinite(value) else _FAILING[name]
    return float(stream[i])


def _first_passing(passed: Array) -> tuple[Array, Array]:
    """Index of the first True (or -1) and the number of candidates examined."""
    n = passed.shape[0]
    found = jnp.any(passed)
    first = jnp.argmax(passed)
    index = jnp.where(found, first, -1)
    return index, jnp.where(found, first + 1, n)


# ------------------------------------------------------------------ AboveThreshold
def above_threshold(
    rng_key: PRNGKey,
    queries: ArrayLike | QueryFn,
    *,
    threshold: float,
    epsilon: float,
    sensitivity: float,
    num_queries: int | None = None,
    relation: NeighboringRelation = NeighboringRelation.REPLACE_ONE,
) -> PrivateResult:
    r"""AboveThreshold: the first query whose noisy value reaches a noisy threshold.

    .. math::

        \hat T = T + \mathrm{Lap}(2\Delta/\varepsilon), \qquad
        \text{output } \min\{ i : q_i(D) + \nu_i \ge \hat T \},
        \quad \nu_i \sim \mathrm{Lap}(4\Delta/\varepsilon) \text{ fresh},

    or ``-1`` ("none above") when no query passes. The threshold noise is drawn once.

    ``queries`` is either a 1-D array (vectorised, ``vmap``-able over keys) or a
    callable ``i -> q_i(D)`` evaluated lazily in order ``0, 1, ...`` up to
    ``num_queries``, stopping at the first pass; both forms give the same output for
    the same key. On the lazy path every examined query is evaluated once and the
    queries are examined in order up to the output, so the work done
    (``num_examined`` evaluations) reveals only the output index (post-processing).
    Parameters are validated eagerly; ``jit`` is left to the caller (array path
    only). Non-finite values: an array is an input and is refused (``ValueError``)
    before any noise is drawn; a callable is evaluated during the run, so a
    non-finite value it returns raises nothing and *fails* the test (it is treated
    as ``-inf``; public rule). Such a value is outside the sensitivity assumption
    below, which the guarantee rests on.

    Privacy:
        Neighbouring relation: ``relation`` (replace-one by default).
        ``sensitivity`` must bound :math:`\Delta \ge \sup_{D\sim D'} |q_i(D) -
        q_i(D')|` for every ``i`` (the queries, and their number, are fixed in
        advance or chosen adaptively from public information and earlier outputs).
        Standard proof (Dwork & Roth 2014, Thm 3.23; Lyu et al. 2017): shift the
        threshold noise by Δ (cost ε/2) and the noise of the output query by 2Δ
        (cost ε/2), so the mechanism is pure ε-DP whatever the number of queries;
        returned as ``PrivacyGuarantee.pure(epsilon)``.

    Args:
        rng_key: a PRNG key (consumed).
        queries: 1-D array of query values, or a callable ``i -> value``.
        threshold: the public threshold :math:`T` (finite).
        epsilon: privacy parameter, ``> 0`` and finite.
        sensitivity: :math:`\Delta > 0`, finite.
        num_queries: the number of queries; required for a callable, optional
            (must match) for an array.
        relation: the neighbouring relation under which ``sensitivity`` holds.

    Returns:
        ``PrivateResult(value, privacy, info)``: ``value`` the first passing index
        or ``-1`` (integer array); ``info`` has ``threshold``,
        ``threshold_noise_scale`` (2Δ/ε), ``query_noise_scale`` (4Δ/ε),
        ``num_queries`` and ``num_examined`` (a function of the output).

    Raises:
        ValueError: invalid parameters, NaN/inf values in a query array, or a
            missing/mismatched ``num_queries`` (all before any noise is drawn; a
            callable's non-finite value fails its test instead, see above).

    Examples:
        >>> import jax
        >>> import jax.numpy as jnp
        >>> from dpsample.mechanisms import above_threshold
        >>> q = jnp.array([0.0, 0.0, 100.0, 0.0])
        >>> res = above_threshold(jax.random.key(0), q, threshold=50.0,
        ...                       epsilon=1.0, sensitivity=1.0)
        >>> int(res.value), int(res.info["num_examined"])
        (2, 3)
        >>> res = above_threshold(jax.random.key(0), lambda i: -100.0 * i,
        ...                       threshold=50.0, epsilon=1.0, sensitivity=1.0,
        ...                       num_queries=10)
        >>> int(res.value)
        -1

    References:
        Dwork, Naor, Reingold, Rothblum & Vadhan, `On the Complexity of
        Differentially Private Data Release <https://doi.org/10.1145/1536414.1536467>`_,
        2009.
        Dwork & Roth, `The Algorithmic Foundations of Differential Privacy
        <https://doi.org/10.1561/0400000042>`_, 2014 (Algorithm 1).
        Lyu, Su & Li, `Understanding the Sparse Vector Technique for Differential
        Privacy <https://arxiv.org/abs/1603.01699>`_, 2017.
    """
    threshold = validation.finite_scalar("threshold", threshold)
    epsilon = validation.positive("epsilon", epsilon)
    sensitivity = validation.positive("sensitivity", sensitivity)
    n = _count("num_queries", {"queries": queries}, num_queries)
    query_array = None if callable(queries) else _query_array("queries", queries)
    t_scale = 2.0 * sensitivity / epsilon
    q_scale = 4.0 * sensitivity / epsilon

    threshold_key, query_key = jax.random.split(rng_key)
    noisy_threshold = threshold + t_scale * jax.random.laplace(
        threshold_key, dtype=jnp.float64
    )
    if query_array is None:
        query_fn = cast(QueryFn, queries)
        bar = float(noisy_threshold)
        noise = _LazyNoise(query_key)
        first, count = -1, n
        for i in range(n):
            if _evaluate("queries", query_fn, i) + q_scale * noise[i] >= bar:
                first, count = i, i + 1
                break
        index = jnp.asarray(first, dtype=int)
        examined = jnp.asarray(count, dtype=int)
    else:
        # the jitted block (same draws as _indexed_laplace(query_key, arange(n))):
        # an eager vmap would be traced again on every call (~10 ms on the host)
        nu = q_scale * _laplace_block(query_key, jnp.asarray(0), n)
        index, examined = _first_passing(query_array + nu >= noisy_threshold)
    info = {
        "threshold": threshold,
        "threshold_noise_scale": t_scale,
        "query_noise_scale": q_scale,
        "num_queries": n,
        "num_examined": examined,
    }
    return PrivateResult(index, PrivacyGuarantee.pure(epsilon, relation=relation), info)


# ------------------------------------------------------ Algorithm 2 (SOSP selection)
def above_threshold_sosp(
    rng_key: PRNGKey,
    grad_norms: ArrayLike | QueryFn,
    min_eigenvalues: ArrayLike | QueryFn,
    *,
    alpha: float,
    hessian_lipschitz: float,
    epsilon: float,
    grad_sensitivity: float,
    eig_sensitivity: float,
    failure_prob: float = 0.05,
    num_candidates: int | None = None,
    relation: NeighboringRelation = NeighboringRelation.REPLACE_ONE,
) -> PrivateResult:
    r"""Private selection of an approximate SOSP (seed 000, Algorithm 2, corrected).

    Given candidates :math:`x_1, \dots, x_T` (public: e.g. the iterates of a private
    optimiser), the queries are :math:`g_i = \|\nabla F_S(x_i)\|` and
    :math:`\lambda_i = \lambda_{\min}(\nabla^2 F_S(x_i))`. With
    :math:`L = \log(2T/\omega)`, the thresholds are drawn once,

    .. math::

        \hat T_1 = \alpha + \mathrm{Lap}(4\Delta_G/\varepsilon)
            + 16 L \Delta_G / \varepsilon, \qquad
        \hat T_2 = -\sqrt{\rho\alpha} + \mathrm{Lap}(4\Delta_M/\varepsilon)
            - 16 L \Delta_M / \varepsilon,

    and the output is the first ``i`` (0-based) with
    :math:`g_i + \mathrm{Lap}(8\Delta_G/\varepsilon) \le \hat T_1` **and**
    :math:`\lambda_i + \mathrm{Lap}(8\Delta_M/\varepsilon) \ge \hat T_2`
    (fresh noise per candidate and condition), or ``-1`` (⊥) if none passes.

    ``grad_norms`` / ``min_eigenvalues`` are 1-D arrays or callables ``i -> value``
    evaluated lazily in order. On the lazy path every examined candidate costs the
    same: both queries are evaluated and both noises drawn, whatever the outcome of
    its gradient test (evaluating :math:`\lambda_i`, the expensive Hessian query,
    only after a passed gradient test would leave the output law unchanged but
    reveal through the work done which candidates passed it: on worst-case
    neighbours an audit of which eigenvalues were evaluated gives lower bounds of
    2.5 to 5.7 on epsilon, for 256 to 1024 candidates, against a claim of 1). The loop
    stops at the first pass, so the number of evaluations, ``2 num_examined``, is a
    function of the output. Parameters are validated eagerly; ``jit`` is left to the
    caller (array inputs only). Non-finite values: arrays are inputs and are refused
    (``ValueError``) before any noise is drawn; a callable's non-finite value
    (evaluated during the run) raises nothing and fails its test: a gradient norm is
    then treated as ``+inf`` and an eigenvalue as ``-inf`` (public rule), so that
    candidate is never selected.

    Sensitivities (spec 000 §2.6, correction E5): pass
    :math:`\Delta_G = c_{sens} G/|S|` and :math:`\Delta_M = c_{sens} M/|S|` with
    :math:`c_{sens} = 2` under replace-one. The paper prints the scales with
    :math:`G/n, M/n`, which are the sensitivities only under a "difference of one
    example's contribution" convention; under replace-one the sensitivity of
    :math:`\|\nabla F_S\|` is :math:`2G/n`, and the printed algorithm is only
    :math:`2\varepsilon`-DP. Scaling all four Laplace scales **and** both offsets by
    :math:`c_{sens}` restores ε-DP, and Lemma 4.1's slack :math:`32 L G/(n\varepsilon)`
    becomes :math:`32 L \Delta_G/\varepsilon` (reported in ``info``).

    Privacy:
        Neighbouring relation: ``relation`` (replace-one by default). Assumption:
        for all neighbours and all ``i``, :math:`|g_i(D) - g_i(D')| \le \Delta_G`
        and :math:`|\lambda_i(D) - \lambda_i(D')| \le \Delta_M`; the candidates,
        :math:`T`, ``alpha``, ``hessian_lipschitz`` and ``failure_prob`` are public.
        Proof (AboveThreshold with a conjunction): fix the noise of candidates
        before the output ``k``. Couple :math:`D` with :math:`D'` by
        :math:`\hat T_1' = \hat T_1 - \Delta_G`, :math:`\hat T_2' = \hat T_2 +
        \Delta_M` (every failure on :math:`D`, i.e. one violated condition, stays a
        failure on :math:`D'`), and shift the two noises of candidate ``k`` by
        :math:`-2\Delta_G` and :math:`+2\Delta_M` (so ``k`` still passes). The four
        shifts cost :math:`\Delta_G/(4\Delta_G/\varepsilon)`,
        :math:`2\Delta_G/(8\Delta_G/\varepsilon)` and the same for ``M``: ε/4 each,
        :math:`e^{\varepsilon}` in total (⊥ needs only the two threshold shifts).
        Hence pure ε-DP, returned as ``PrivacyGuarantee.pure(epsilon)``. Threat
        model: the output and the work done (each examined candidate evaluates both
        queries once; the candidates are examined in order up to the output), so
        the guarantee covers an observer of the running time and of the query
        evaluations, provided the cost of one query evaluation does not depend on
        the data. Utility (Lemma 4.1): with probability ``>= 1 - failure_prob``
        an output ``i`` has
        :math:`g_i \le \alpha + 32 L\Delta_G/\varepsilon` and
        :math:`\lambda_i \ge -\sqrt{\rho\alpha} - 32 L\Delta_M/\varepsilon`, and if
        some candidate is an α-SOSP a candidate is output.

    Args:
        rng_key: a PRNG key (consumed).
        grad_norms: gradient norms :math:`g_i` (array or callable).
        min_eigenvalues: smallest Hessian eigenvalues :math:`\lambda_i` (array or
            callable), exact: the analysis assumes no data-dependent error.
        alpha: target SOSP accuracy α > 0.
        hessian_lipschitz: the Hessian-Lipschitz constant ρ > 0.
        epsilon: privacy parameter, ``> 0`` and finite.
        grad_sensitivity: :math:`\Delta_G = c_{sens} G/|S| > 0`.
        eig_sensitivity: :math:`\Delta_M = c_{sens} M/|S| > 0`.
        failure_prob: ω in (0, 1), the utility failure probability.
        num_candidates: T; required when both inputs are callables.
        relation: the neighbouring relation under which the sensitivities hold.

    Returns:
        ``PrivateResult(value, privacy, info)``: ``value`` the selected index or
        ``-1``; ``info`` has the public parts ``grad_threshold`` (α + 16LΔ_G/ε) and
        ``eig_threshold`` (−√(ρα) − 16LΔ_M/ε), the noise scales, ``grad_slack``
        and ``eig_slack`` (32LΔ/ε, Lemma 4.1), ``num_candidates`` and
        ``num_examined`` (a function of the output).

    Raises:
        ValueError: invalid parameters, NaN/inf values in a query array,
            mismatched lengths, or a missing ``num_candidates`` (before any noise
            is drawn; a callable's non-finite value fails its test instead).

    Examples:
        >>> import jax
        >>> import jax.numpy as jnp
        >>> from dpsample.mechanisms import above_threshold_sosp
        >>> g = jnp.array([50.0, 0.0, 0.0])
        >>> lam = jnp.array([0.0, -50.0, 0.0])
        >>> res = above_threshold_sosp(
        ...     jax.random.key(0), g, lam, alpha=0.1, hessian_lipschitz=1.0,
        ...     epsilon=1.0, grad_sensitivity=0.01, eig_sensitivity=0.01)
        >>> int(res.value), res.privacy.epsilon(0.0)
        (2, 1.0)

    References:
        Seed 000, Algorithm 2 and Lemma 4.1; spec 000 §2.6 (correction E5).
        Dwork & Roth, `The Algorithmic Foundations of Differential Privacy
        <https://doi.org/10.1561/0400000042>`_, 2014.
    """
    alpha = validation.positive("alpha", alpha)
    rho = validation.positive("hessian_lipschitz", hessian_lipschitz)
    epsilon = validation.positive("epsilon", epsilon)
    delta_g = validation.positive("grad_sensitivity", grad_sensitivity)
    delta_m = validation.positive("eig_sensitivity", eig_sensitivity)
    omega = validation.delta_in_open_unit(failure_prob, name="failure_prob")
    streams = {"grad_norms": grad_norms, "min_eigenvalues": min_eigenvalues}
    n = _count("num_candidates", streams, num_candidates)
    g_stream: QueryFn | Array = (
        grad_norms if callable(grad_norms) else _query_array("grad_norms", grad_norms)
    )
    m_stream: QueryFn | Array = (
        min_eigenvalues
        if callable(min_eigenvalues)
        else _query_array("min_eigenvalues", min_eigenvalues)
    )

    log_term = math.log(2.0 * n / omega)
    grad_threshold = alpha + 16.0 * log_term * delta_g / epsilon
    eig_threshold = -math.sqrt(rho * alpha) - 16.0 * log_term * delta_m / epsilon
    scales = {
        "grad_threshold_noise_scale": 4.0 * delta_g / epsilon,
        "eig_threshold_noise_scale": 4.0 * delta_m / epsilon,
        "grad_query_noise_scale": 8.0 * delta_g / epsilon,
        "eig_query_noise_scale": 8.0 * delta_m / epsilon,
    }
    t1_key, t2_key, g_key, m_key = jax.random.split(rng_key, 4)
    t1 = grad_threshold + scales["grad_threshold_noise_scale"] * jax.random.laplace(
        t1_key, dtype=jnp.float64
    )
    t2 = eig_threshold + scales["eig_threshold_noise_scale"] * jax.random.laplace(
        t2_key, dtype=jnp.float64
    )
    g_scale = scales["grad_query_noise_scale"]
    m_scale = scales["eig_query_noise_scale"]
    if callable(g_stream) or callable(m_stream):
        bar_g, bar_m = float(t1), float(t2)
        g_noise, m_noise = _LazyNoise(g_key), _LazyNoise(m_key)
        first, count = -1, n
        for i in range(n):
            # The same work for every examined candidate: both queries and both
            # noises, whatever the gradient test says (skipping lambda_i after a
            # failed gradient test leaks which candidates passed it through time).
            g = _evaluate("grad_norms", g_stream, i) + g_scale * g_noise[i]
            lam = _evaluate("min_eigenvalues", m_stream, i)
            lam = lam + m_scale * m_noise[i]
            if g <= bar_g and lam >= bar_m:
                first, count = i, i + 1
                break
        index = jnp.asarray(first, dtype=int)
        examined = jnp.asarray(count, dtype=int)
    else:
        idx = jnp.arange(n)
        g_ok = g_stream + g_scale * _indexed_laplace(g_key, idx) <= t1
        m_ok = m_stream + m_scale * _indexed_laplace(m_key, idx) >= t2
        index, examined = _first_passing(g_ok & m_ok)
    info = {
        "grad_threshold": grad_threshold,
        "eig_threshold": eig_threshold,
        **scales,
        "grad_slack": 32.0 * log_term * delta_g / epsilon,
        "eig_slack": 32.0 * log_term * delta_m / epsilon,
        "num_candidates": n,
        "num_examined": examined,
    }
    return PrivateResult(index, PrivacyGuarantee.pure(epsilon, relation=relation), info)


precision.scope_public(globals())
