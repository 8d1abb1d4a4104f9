"""Timing side channel of the SOSP selections' private work (issue 25, defect 1).

Run as a script (``python tests/fixed_work_timing.py [d] [reps]``) in a fresh process:
it pins itself to one core, expects XLA single-threaded (:data:`XLA_FLAGS`, set by
the caller before JAX is imported), and prints one JSON line with, for each
selection and for its eigensolver before issue 25, the accuracy of a one-shot
distinguisher that tells two replace-one neighbours apart from one CPU-time
measurement of the compiled private step.

The neighbours (all declared constants true): ``f(x; z) = x^T diag(c) x / 2 +
w (u^T x)^2 / 2`` on ``Ball(1)``, with public curvatures ``c`` in ``[0.5, 1]``;
record 0 has ``w = 1`` and a dense unit ``u`` in ``D`` and ``w = 0`` in ``D'``, every
other record ``w = 0``. So ``||hess f|| <= 2``, ``||grad f|| <= 2`` and the Hessian is
constant (``rho = 0 <= 1``). ``D'``'s Hessian is diagonal and ``D``'s is not, which
an eigensolver iterating to convergence takes visibly longer on.

The distinguisher: the runs alternate between ``D`` and ``D'`` in pairs of random
order (interleaved, so drifts of the machine's load hit both alike); the first half
of the pairs choose the best threshold and direction, the second half measure its
accuracy (chance: 0.5).
"""

from __future__ import annotations

import json
import os
import sys
import time

XLA_FLAGS = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"


def _pin_one_core() -> None:
    cores = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cores[-1]})


def distinguisher_accuracy(labels: list[int], times: list[float]) -> float:
    """Best threshold on the first half of the pairs, accuracy on the second.

    The rule is "``D`` iff time ``>= t``" or its mirror, with ``t`` among the
    training times (and ``+inf``) and the direction that classify the training half
    best.
    """
    half = (len(times) // 4) * 2
    train = list(zip(times[:half], labels[:half], strict=True))
    best = (float("inf"), True, -1.0)
    for t in sorted({tm for tm, _ in train} | {float("inf")}):
        up = sum((tm >= t) == (lab == 1) for tm, lab in train) / len(train)
        for direction, acc in ((True, up), (False, 1.0 - up)):
            if acc > best[2]:
                best = (t, direction, acc)
    t, direction, _ = best
    test = list(zip(times[half:], labels[half:], strict=True))
    right = sum(((tm >= t) == (lab == 1)) == direction for tm, lab in test)
    return right / len(test)


def main(dim: int, reps: int) -> dict:
    _pin_one_core()
    import jax
    import jax.numpy as jnp
    import numpy as np

    jax.config.update("jax_enable_x64", True)
    from dpsample.finders.spider_sosp import selection
    from dpsample.mechanisms import select_sosp

    n = 16
    rng = np.random.default_rng(0)
    c = jnp.asarray(np.linspace(0.5, 1.0, dim))
    u = rng.normal(size=dim)
    u /= np.linalg.norm(u)

    def loss(x, z):
        return 0.5 * jnp.sum(c * x * x) + 0.5 * z["w"] * jnp.dot(z["u"], x) ** 2

    def data(w0):
        us, ws = np.zeros((n, dim)), np.zeros(n)
        us[0], ws[0] = u, w0
        return {"u": jnp.asarray(us), "w": jnp.asarray(ws)}

    datasets = (data(0.0), data(1.0))  # label 0: D', label 1: D
    point = jnp.asarray(rng.normal(size=(1, dim)) * 0.3 / np.sqrt(dim))
    l_c = 2.0
    eta = selection.eigenvalue_error(dim, l_c)

    def old_eig(h, bound):
        return jnp.linalg.eigvalsh(0.5 * (h + h.T))[0]

    def steps(eig):
        """The two private steps with ``eig`` as their eigensolver, compiled now
        (fresh closures, so no trace is shared with the other variant)."""
        select_sosp.min_eigenvalue = selection.min_eigenvalue = eig
        fns = {}
        # The default (enforced: clipped per-example gradients and Hessians) and the
        # opted-out (unclipped) private steps; the clipping adds fixed work that
        # dilutes the eigensolver's share of the time, so the power check reads the
        # unclipped steps (test_fixed_work_timing.py).
        for suffix, enforce in (("", True), ("_unclipped", False)):
            fns["select_sosp_iterate" + suffix] = jax.jit(
                lambda d, enforce=enforce: select_sosp._combined_scores(
                    loss, d, point, 0.1, -1.0, 1e-3, 2e-3, l_c, 1.0, enforce
                )
            )
            fns["spider_sosp_selection" + suffix] = jax.jit(
                lambda d, enforce=enforce: selection._min_eig_upper(
                    loss, point[0], d, l_c, eta, enforce
                )
            )
        values = {k: [float(f(d).ravel()[0]) for d in datasets] for k, f in fns.items()}
        return fns, values

    fixed = select_sosp.min_eigenvalue
    try:
        variants = {"fixed": steps(fixed), "eigvalsh": steps(old_eig)}
    finally:
        select_sosp.min_eigenvalue = selection.min_eigenvalue = fixed
    order_rng = np.random.default_rng(1)
    out: dict = {"dim": dim, "reps": reps}
    for variant, (fns, values) in variants.items():
        for name, fn in fns.items():
            for _ in range(5):  # warm up
                for d in datasets:
                    jax.block_until_ready(fn(d))
            labels, times = [], []
            for _ in range(reps):
                for lab in order_rng.permutation(2):
                    d = datasets[lab]
                    t0 = time.process_time()
                    jax.block_until_ready(fn(d))
                    times.append(time.process_time() - t0)
                    labels.append(int(lab))
            med = [
                float(
                    np.median(
                        [t for t, lb in zip(times, labels, strict=True) if lb == k]
                    )
                )
                for k in (0, 1)
            ]
            out[f"{name}/{variant}"] = {
                "accuracy": distinguisher_accuracy(labels, times),
                "median_ms": [1e3 * m for m in med],
                "values": values[name],
            }
    return out


if __name__ == "__main__":
    d = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    r = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    print(json.dumps(main(d, r)))
