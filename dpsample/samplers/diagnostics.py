r"""Non-private multi-chain runner for validating the Gibbs samplers.

.. warning::
    **This module releases nothing privately.** :func:`run` reads the private data
    through many chains and many steps, returns every position and per-step
    information (acceptance, projections, rejection-sampler counters), and computes
    ESS and R-hat on them. None of it is covered by a privacy guarantee. Use it to
    validate a sampler on a chosen ``(beta, mu)`` (on public or synthetic data, or in
    a setting where no release happens), never to tune a private run on private
    data. The private entry point is :func:`dpsample.samplers.gibbs.gibbs`.

Chains are independent (``jax.vmap`` over keys) and run under ``jax.lax.scan`` in the
module-level compiled core :func:`dpsample.samplers.chains.trace_chains` (compiled
once per target structure, kernel and shapes); with ``progress=True`` the scan is
split into chunks and the host shows the steps done after each chunk
(:class:`dpsample.progress.Progress`: a bar on a terminal, lines in a log).
The result carries an ArviZ ``InferenceData`` (posterior variable ``"x"`` with
dimensions ``(chain, draw, x_dim)``; ``sample_stats`` with the kernel's per-step
info, e.g. the proximal sampler's ``is_accepted`` and ``num_trials``, MALA's
acceptance, Langevin's ``projected``, and ``step_size``) and its ESS / R-hat.
"""

from __future__ import annotations

import contextlib
import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from dpsample._src import precision, validation
from dpsample._src.arviz import import_arviz
from dpsample.progress import Progress
from dpsample.progress import enabled as progress_bars
from dpsample.samplers import langevin
from dpsample.samplers.chains import trace_chains
from dpsample.samplers.routes import resolve
from dpsample.samplers.target import GibbsTarget
from dpsample.types import ArrayLike, PRNGKey

__all__ = ["DiagnosticsResult", "kernel_for", "run", "sample_stats"]


class DiagnosticsResult(NamedTuple):
    """Output of :func:`run` (**not private**).

    Attributes:
        positions: ``(num_chains, num_draws, d)`` float64 positions after warm-up
            and thinning.
        info: the kernel's per-step info, stacked ``(num_chains, num_steps, ...)``.
        inference_data: ArviZ ``InferenceData``: posterior ``positions`` and
            ``sample_stats`` (:func:`sample_stats`: the kernel's per-step info,
            e.g. acceptance and trial counts, and the step size).
        ess: bulk effective sample size per coordinate, shape ``(d,)``.
        rhat: rank-normalised split R-hat per coordinate, shape ``(d,)``.
        step_size: the step size used.
    """

    positions: np.ndarray
    info: Any
    inference_data: Any
    ess: np.ndarray
    rhat: np.ndarray
    step_size: float


def kernel_for(
    target: GibbsTarget,
    method: str,
    *,
    clip_norm: float | None = None,
    **proximal_options: Any,
) -> tuple[Any, Any]:
    """``(init_fn(position, target), kernel(key, state, target, step_size))``.

    The kernel of the route registered as ``method``
    (:meth:`~dpsample.samplers.routes.base.Route.diagnostics_kernel`).

    Examples:
        >>> import jax.numpy as jnp
        >>> from dpsample import Ball, Problem
        >>> from dpsample.samplers.diagnostics import kernel_for
        >>> from dpsample.samplers.target import GibbsTarget
        >>> p = Problem(lambda x, z: 0.0 * x[0], jnp.zeros(3), Ball(5.0, dim=1),
        ...             lipschitz=1.0)
        >>> init_fn, kernel = kernel_for(GibbsTarget.create(p, beta=1.0, mu=1.0),
        ...                              "langevin")
        >>> callable(init_fn) and callable(kernel)
        True
    """
    route = resolve(method)
    return route.diagnostics_kernel(
        target, clip_norm=clip_norm, **proximal_options
    ).build()


def sample_stats(
    info: Any, *, num_warmup: int = 0, thin: int = 1, step_size: float | None = None
) -> dict[str, np.ndarray]:
    """ArviZ ``sample_stats`` from a kernel's stacked per-step info.

    Every field of the info (a NamedTuple: :class:`~dpsample.samplers.proximal.
    ProximalInfo`, :class:`~dpsample.samplers.langevin.LangevinInfo`, BlackJAX's
    MALA info) with one value per ``(chain, step)`` becomes a variable of that name,
    cut by ``num_warmup`` and ``thin`` like the positions; ``step_size`` is
    broadcast to ``(chain, draw)``. Fields with more dimensions per step (e.g. a
    proposal) are left out. **Not private** (see the module warning).

    Args:
        info: Stacked info, leaves of shape ``(num_chains, num_steps, ...)``.
        num_warmup: Steps dropped at the start of each chain.
        thin: Keep every ``thin``-th step after warm-up.
        step_size: The step size, added as ``"step_size"`` when given.

    Returns:
        ``{name: array (num_chains, num_draws)}``.

    Examples:
        >>> import numpy as np
        >>> from dpsample.samplers.langevin import LangevinInfo
        >>> info = LangevinInfo(np.zeros((2, 10), bool), np.ones((2, 10)))
        >>> stats = sample_stats(info, num_warmup=4, thin=2, step_size=0.1)
        >>> sorted(stats), stats["step_size"].shape
        (['drift_norm', 'projected', 'step_size'], (2, 3))
    """
    fields = info._asdict() if hasattr(info, "_asdict") else {}
    out: dict[str, np.ndarray] = {}
    shape = None
    for name, leaf in fields.items():
        arr = np.asarray(leaf)
        if arr.ndim != 2:
            continue
        out[name] = arr[:, num_warmup::thin]
        shape = out[name].shape
    if step_size is not None and shape is not None:
        out["step_size"] = np.full(shape, float(step_size))
    return out


def run(
    rng_key: PRNGKey,
    target: GibbsTarget,
    *,
    method: str,
    num_chains: int,
    num_steps: int,
    step_size: float | None = None,
    progress: bool = False,
    init_positions: ArrayLike | None = None,
    num_warmup: int = 0,
    thin: int = 1,
    clip_norm: float | None = None,
    num_chunks: int = 10,
    **proximal_options: Any,
) -> DiagnosticsResult:
    r"""Run ``num_chains`` independent chains of a sampler on ``target`` (NOT private).

    **Not differentially private**: everything returned depends on the private data
    without any guarantee (see the module warning).

    Args:
        rng_key: PRNG key (consumed).
        target: the :class:`~dpsample.samplers.target.GibbsTarget`.
        method: a registered route (:data:`dpsample.samplers.routes.ROUTES`:
            ``"proximal"``, ``"mala"``, ``"langevin"``, ...).
        num_chains: number of chains, >= 1.
        num_steps: steps per chain (warm-up included), > ``num_warmup``.
        step_size: step size; default
            :func:`dpsample.samplers.langevin.default_step_size` (all methods).
        progress: show the steps done after each chunk on stderr (off by
            default; :class:`dpsample.progress.Progress`, labelled NOT private);
            with it, the chunks draw no :mod:`dpsample.progress` bar of their own
            (without it, one bar for all the chains when progress bars are on).
        init_positions: ``(num_chains, d)`` starting points in ``K``; default: the
            domain centre for every chain.
        num_warmup: steps dropped at the start of each chain.
        thin: keep every ``thin``-th step after warm-up.
        clip_norm: Langevin per-example clipping (default: the declared ``G``).
        num_chunks: number of chunks when ``progress`` is on.
        **proximal_options: passed to ``proximal.build_kernel``.

    Returns:
        A :class:`DiagnosticsResult`.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> import dpsample
        >>> from dpsample import Ball, Problem
        >>> from dpsample.samplers import diagnostics
        >>> from dpsample.samplers.target import GibbsTarget
        >>> p = Problem(lambda x, z: 0.0 * x[0], jnp.zeros(3), Ball(5.0, dim=1),
        ...             lipschitz=1.0)
        >>> t = GibbsTarget.create(p, beta=1.0, mu=1.0)   # ~ N(0, 1) on [-5, 5]
        >>> res = diagnostics.run(jax.random.key(0), t, method="mala", num_chains=4,
        ...                       num_steps=300, step_size=0.5, num_warmup=50)
        >>> res.positions.shape, bool(res.rhat[0] < 1.1)
        ((4, 250, 1), True)
    """
    route = resolve(method)
    if not isinstance(target, GibbsTarget):
        raise TypeError(f"Expected a GibbsTarget, got {type(target).__name__}")
    num_chains = validation.positive_int("num_chains", num_chains)
    num_steps = validation.positive_int("num_steps", num_steps)
    thin = validation.positive_int("thin", thin)
    num_chunks = validation.positive_int("num_chunks", num_chunks)
    if not 0 <= int(num_warmup) < num_steps:
        raise ValueError(f"Expected 0 <= num_warmup={num_warmup} < {num_steps}")
    num_warmup = int(num_warmup)
    h = (
        langevin.default_step_size(target)
        if step_size is None
        else langevin.check_step_size(target, step_size)
    )
    dim = target.problem.dim
    if init_positions is None:
        x0 = jnp.broadcast_to(target.problem.domain.center_point, (num_chains, dim))
    else:
        x0 = jnp.asarray(init_positions, jnp.float64)
        if x0.shape != (num_chains, dim):
            raise ValueError(
                f"Expected init_positions of shape ({num_chains}, {dim}), got "
                f"{x0.shape}"
            )
        if not bool(jnp.all(target.problem.domain.contains(x0))):
            raise ValueError("Expected every initial position to lie in K")
    az = import_arviz()  # before the chains run: without the extra, fail at once
    spec = route.diagnostics_kernel(target, clip_norm=clip_norm, **proximal_options)
    init_fn, _ = spec.build()
    states = jax.vmap(lambda x: init_fn(x, target))(x0)
    keys = jax.random.split(rng_key, num_chains * num_steps).reshape(
        num_chains, num_steps
    )
    sizes = [num_steps] if not progress else _chunk_sizes(num_steps, num_chunks)
    pos_parts, info_parts, start = [], [], 0
    shown = None
    if progress:
        shown = Progress(f"diagnostics, NOT private, {method} chains", num_steps)
        shown.update(0)
    for size in sizes:
        with progress_bars(False) if progress else contextlib.nullcontext():
            states, (pos, info) = trace_chains(
                keys[:, start : start + size], target, states, spec=spec, step_size=h
            )
        pos_parts.append(np.asarray(pos))
        info_parts.append(info)
        start += size
        if shown is not None:
            shown.update(start)
    if shown is not None:
        shown.close()
    positions = np.concatenate(pos_parts, axis=1)[:, num_warmup::thin]
    info = jax.tree.map(lambda *xs: np.concatenate(xs, axis=1), *info_parts)
    stats = sample_stats(info, num_warmup=num_warmup, thin=thin, step_size=h)
    idata = az.from_dict(posterior={"x": positions}, sample_stats=stats)
    ess = np.asarray(az.ess(idata)["x"].values, np.float64).reshape(dim)
    rhat = np.asarray(az.rhat(idata)["x"].values, np.float64).reshape(dim)
    return DiagnosticsResult(positions, info, idata, ess, rhat, float(h))


def _chunk_sizes(total: int, num_chunks: int) -> list[int]:
    k = min(total, num_chunks)
    base = math.ceil(total / k)
    sizes = []
    left = total
    while left > 0:
        sizes.append(min(base, left))
        left -= sizes[-1]
    return sizes


precision.scope_public(globals())
