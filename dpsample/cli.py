"""The ``dpsample`` command.

``dpsample quickstart`` is the main job behind ``make demo``: the exponential mechanism
over a net of a ball (seed 000, Theorem 5.8) on scikit-learn's bundled breast-cancer
data under the non-convex sigmoid loss, with a privacy report and a risk report.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Sequence
from typing import Any

__all__ = ["main", "quickstart"]

#: Publicly chosen features of the quickstart (no look at the data's statistics).
QUICKSTART_FEATURES = ("mean concave points", "mean fractal dimension")


def quickstart(
    *,
    epsilon: float = 1.0,
    delta: float = 1e-6,
    radius: float = 8.0,
    seed: int = 0,
    features: Sequence[str] = QUICKSTART_FEATURES,
) -> dict[str, Any]:
    """Run the quickstart job and return its report (a JSON-serialisable dict).

    Args:
        epsilon: privacy budget of the exponential mechanism (pure DP).
        delta: the delta at which the (epsilon, delta) conversion is also reported.
        radius: radius of the ball K centred at the origin (public).
        seed: seed of the PRNG key of the private run.
        features: breast-cancer feature names (chosen publicly).

    Returns:
        The report: ``released``, ``privacy``, ``risk`` (non-private diagnostics,
        labelled), ``bound`` and ``run`` sections.

    Examples:
        >>> from dpsample.cli import quickstart
        >>> report = quickstart(epsilon=1.0, radius=2.0)  # doctest: +SKIP
    """
    import jax
    import numpy as np

    from dpsample import bounds, datasets, losses, nets
    from dpsample.domains import Ball
    from dpsample.problem import Problem

    t0 = time.perf_counter()
    data = datasets.load_sklearn("breast_cancer", features=list(features))
    dim = int(data["x"].shape[1])
    n = int(data["x"].shape[0])
    loss = losses.sigmoid()
    consts = loss.constants(feature_bound=1.0, radius=radius, dim=dim)
    problem = Problem(loss.loss_fn, data, Ball(radius, dim=dim), **consts._asdict())

    result = nets.exponential_mechanism(jax.random.key(seed), problem, epsilon=epsilon)
    x = np.asarray(result.value)
    elapsed = time.perf_counter() - t0

    # ---- non-private diagnostics (they read the private data; nothing is released)
    net = nets.grid_net(problem.domain, spacing=result.info["spacing"])
    best_point, best_risk = nets.net_minimum(problem, net)
    risk_released = float(problem.empirical_risk(x))
    risk_centre = float(problem.empirical_risk(np.zeros(dim)))
    margins = np.asarray(data["y"]) * (np.asarray(data["x"]) @ x)
    accuracy = float(np.mean(margins > 0))

    bound = bounds.theorem_5_8_empirical_risk_bound(
        lipschitz=consts.lipschitz,
        diameter=problem.domain.diameter,
        dim=dim,
        epsilon=epsilon,
        n=n,
        radius=result.info["covering_radius"],
        net_size=result.info["net_size"],
        inverse_temperature=result.info["inverse_temperature"],
    )
    privacy = result.privacy.report(delta)
    return {
        "problem": {
            "dataset": "breast_cancer (scikit-learn, bundled)",
            "features": list(features),
            "rows": "scaled to unit L2 norm (per row)",
            "n": n,
            "dim": dim,
            "loss": "sigmoid 1/(1+exp(y<a,x>)) (non-convex)",
            "domain": f"ball of radius {radius} at the origin",
            "constants": {k: v for k, v in consts._asdict().items() if v is not None},
        },
        "released": {"point": x.tolist()},
        "privacy": {
            "mechanism": "exponential mechanism over a grid net (seed 000 Thm 5.8)",
            "relation": privacy["relation"],
            "pure_epsilon": result.privacy.epsilon(0.0),
            "delta": delta,
            "epsilon_at_delta": privacy["epsilon"],
            "tightest_route": privacy["tightest"],
            "sensitivity": "osc_K(f(.,z)-f(.,z'))/n from declared constants",
        },
        "run": {
            k: result.info[k]
            for k in (
                "net_size",
                "covering_radius",
                "spacing",
                "inverse_temperature",
                "sensitivity_oscillation",
                "num_chunks",
            )
        }
        | {"seconds": elapsed},
        "risk (NON-PRIVATE diagnostic)": {
            "empirical_risk_released": risk_released,
            "min_empirical_risk_over_net": best_risk,
            "argmin_over_net": np.asarray(best_point).tolist(),
            "excess_empirical_risk": risk_released - best_risk,
            "empirical_risk_at_centre": risk_centre,
            "training_accuracy_released": accuracy,
        },
        "bound": {
            "theorem": "seed 000 Thm 5.8, explicit constants: E[F_D(out)] - min_K F_D "
            "<= G r + (log|P| + 1)/k",
            "covering_term": bound.covering,
            "exponential_mechanism_term": bound.exponential_mechanism,
            "total": bound.total,
        },
    }


def _print_quickstart(report: dict[str, Any]) -> None:
    p, priv, run = report["problem"], report["privacy"], report["run"]
    risk, bound = report["risk (NON-PRIVATE diagnostic)"], report["bound"]
    x = ", ".join(f"{v:+.4f}" for v in report["released"]["point"])
    print("dpsample quickstart: exponential mechanism over a net (seed 000, Thm 5.8)")
    print(f"  data      {p['dataset']}, n={p['n']}, features {p['features']}")
    print(f"            {p['rows']}; loss {p['loss']}")
    print(f"  domain    {p['domain']} (d={p['dim']})")
    print(f"  constants {p['constants']}  (declared, public)")
    print(
        f"  net       {run['net_size']:,} grid points, covering radius "
        f"{run['covering_radius']:.4g}, k = {run['inverse_temperature']:.4g}, "
        f"{run['seconds']:.1f} s"
    )
    print()
    print(f"RELEASED POINT  x = [{x}]")
    print()
    print("PRIVACY (replace-one neighbours)")
    print(f"  pure epsilon-DP:   epsilon = {priv['pure_epsilon']:.6g}")
    print(
        f"  (epsilon, delta):  epsilon = {priv['epsilon_at_delta']:.6g} at "
        f"delta = {priv['delta']:g} (route: {priv['tightest_route']})"
    )
    print()
    print("RISK  -- NON-PRIVATE DIAGNOSTIC: evaluated on the private training data,")
    print("         for checking the theorem; not a released quantity")
    print(f"  F_D(released)              = {risk['empirical_risk_released']:.5f}")
    print(f"  min over the net of F_D    = {risk['min_empirical_risk_over_net']:.5f}")
    print(f"  excess empirical risk      = {risk['excess_empirical_risk']:.5f}")
    print(f"  F_D at the centre (x = 0)  = {risk['empirical_risk_at_centre']:.5f}")
    print(f"  training accuracy          = {risk['training_accuracy_released']:.3f}")
    print()
    print("THEOREM BOUND (expected excess empirical risk over K)")
    print(f"  {bound['theorem']}")
    print(
        f"  = {bound['covering_term']:.5f} + {bound['exponential_mechanism_term']:.5f}"
        f" = {bound['total']:.5f}"
    )


def _positive_float(text: str) -> float:
    value = float(text)
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"expected a finite number > 0, got {text}")
    return value


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dpsample",
        description="Differentially private learning with non-convex losses.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    qs = sub.add_parser(
        "quickstart",
        help="the main job: exponential mechanism over a net on breast-cancer data",
    )
    qs.add_argument("--epsilon", type=_positive_float, default=1.0)
    qs.add_argument("--delta", type=_positive_float, default=1e-6)
    qs.add_argument("--radius", type=_positive_float, default=8.0)
    qs.add_argument("--seed", type=int, default=0)
    qs.add_argument("--json", action="store_true", help="print the report as JSON")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dpsample`` command.

    Args:
        argv: command-line arguments (default ``sys.argv[1:]``).

    Returns:
        The process exit status.
    """
    args = _build_parser().parse_args(argv)
    if args.command == "quickstart":
        if not args.delta < 1:
            print("dpsample: error: --delta must lie in (0, 1)", file=sys.stderr)
            return 2
        report = quickstart(
            epsilon=args.epsilon, delta=args.delta, radius=args.radius, seed=args.seed
        )
        if args.json:
            print(json.dumps(report, indent=2))
        else:
            _print_quickstart(report)
        return 0
    return 2  # pragma: no cover (argparse rejects unknown commands)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
