"""One small, fast case per registered algorithm, for the contract tests.

Each :class:`Case` builds a problem (its loss optionally wrapped, e.g. by a trace
counter), names a budget and options small enough for the fast suite, and calls the
algorithm's convenience function (the pinned equivalence: same key, same result as
``plan`` + ``run``). Every name of :func:`dpsample.registry.names` must have a case
(``tests/test_contract.py`` checks this).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, NamedTuple

import jax.numpy as jnp
import numpy as np

import dpsample
from dpsample.plan import Budget


class Case(NamedTuple):
    """A contract case.

    Attributes:
        make_problem: ``(seed, n, wrap) -> Problem``; ``wrap`` maps the loss.
        budget: The budget.
        options: Plan options.
        convenience: ``(rng_key, problem, budget, options) -> PrivateResult`` through
            the plain function users call.
        n: Default number of examples.
    """

    make_problem: Callable[[int, int, Callable[[Any], Any]], dpsample.Problem]
    budget: Budget
    options: dict[str, Any]
    convenience: Callable[..., Any]
    n: int = 64


def _identity(f: Any) -> Any:
    return f


def quadratic_ball(seed: int, n: int, wrap: Callable[[Any], Any] = _identity):
    """``f(x; z) = |x - z|^2 / 2`` on ``Ball(2)`` in ``d = 2``, ``|z| <= 1``."""
    rng = np.random.default_rng(seed)
    z = rng.uniform(-0.7, 0.7, size=(n, 2))

    def loss(x, ex):
        return 0.5 * jnp.sum((x - ex["z"]) ** 2)

    return dpsample.Problem(
        wrap(loss),
        {"z": z},
        dpsample.Ball(2.0, dim=2),
        lipschitz=3.0,
        smoothness=1.0,
        hessian_lipschitz=0.0,
        loss_range=4.5,
    )


def cosine_free(seed: int, n: int, wrap: Callable[[Any], Any] = _identity):
    """Seed 000's cosine saddle ``sum_j s_j cos(x_j - z_j)``, ``s = (-1, 1)``, on R^2.

    Constants exact on all of ``R^2``: ``G = sqrt(2)``, ``M = 1``, ``rho = 1``,
    ``B = 4``.
    """
    rng = np.random.default_rng(seed)
    z = rng.normal(0.0, 0.1, size=(n, 2))
    s = jnp.array([-1.0, 1.0])

    def loss(x, ex):
        return jnp.sum(s * jnp.cos(x - ex["z"]))

    return dpsample.Problem(
        wrap(loss),
        {"z": z},
        dpsample.Unconstrained(2),
        lipschitz=float(np.sqrt(2.0)),
        smoothness=1.0,
        hessian_lipschitz=1.0,
        loss_range=4.0,
    )


_GLM = dpsample.losses.glm("sigmoid", feature_bound=1.0)


def sigmoid_glm(seed: int, n: int, wrap: Callable[[Any], Any] = _identity):
    """The sigmoid GLM ``phi_y(<w, x>)`` on ``Ball(1)`` in ``d = 4``, ``||x|| = 1``."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    # a wrapped loss (a trace counter) enters as the family declared with it, since
    # the JL method accepts only a loss known to be its glm's (issue 25)
    return dpsample.Problem(
        dataclasses.replace(_GLM, loss_fn=wrap(_GLM.loss_fn)),
        {"x": x, "y": np.where(x[:, 0] >= 0.0, 1.0, -1.0)},
        dpsample.Ball(1.0, dim=4),
        **_GLM.constants(radius=1.0)._asdict(),
    )


def _convenience(name: str) -> Callable[..., Any]:
    """``(rng_key, problem, budget, options)`` through the plain function ``name``."""

    def call(rng_key, problem, budget, options):
        import dpsample.finders as finders

        fn = getattr(finders, name)
        return fn(
            rng_key, problem, epsilon=budget.epsilon, delta=budget.delta, **options
        )

    return call


def _dp_sgd(rng_key, problem, budget, options):
    from dpsample.finders import dp_sgd

    return dp_sgd(
        rng_key, problem, epsilon=budget.epsilon, delta=budget.delta, **options
    )


def _net(rng_key, problem, budget, options):
    from dpsample.nets import exponential_mechanism

    return exponential_mechanism(rng_key, problem, epsilon=budget.epsilon, **options)


def _gibbs(rng_key, problem, budget, options):
    from dpsample.samplers.gibbs import gibbs

    return gibbs(
        rng_key, problem, epsilon=budget.epsilon, delta=budget.delta, **options
    )


def _dp_spider(rng_key, problem, budget, options):
    from dpsample.finders import dp_spider

    return dp_spider(
        rng_key, problem, epsilon=budget.epsilon, delta=budget.delta, **options
    )


def _quasar_sgd(rng_key, problem, budget, options):
    from dpsample.pipelines import dp_sgd_quasar

    return dp_sgd_quasar(
        rng_key, problem, epsilon=budget.epsilon, delta=budget.delta, **options
    )


def _kl_spider(rng_key, problem, budget, options):
    from dpsample.pipelines import kl_spider

    return kl_spider(
        rng_key, problem, epsilon=budget.epsilon, delta=budget.delta, **options
    )


def _spider_sosp(rng_key, problem, budget, options):
    from dpsample.finders import spider_sosp

    return spider_sosp(
        rng_key, problem, epsilon=budget.epsilon, delta=budget.delta, **options
    )


def _jl_glm(rng_key, problem, budget, options):
    from dpsample.pipelines import jl_glm

    return jl_glm(
        rng_key, problem, epsilon=budget.epsilon, delta=budget.delta, **options
    )


def _warm_start(rng_key, problem, budget, options):
    from dpsample.pipelines import warm_start

    return warm_start(
        rng_key, problem, epsilon=budget.epsilon, delta=budget.delta, **options
    )


CASES: dict[str, Case] = {
    "dp_sgd": Case(
        quadratic_ball,
        Budget(2.0, 1e-5),
        {"num_steps": 6, "batch_size": 8, "x0": [0.1, -0.2]},
        _dp_sgd,
    ),
    "net": Case(quadratic_ball, Budget(2.0, 1e-5), {"spacing": 0.25}, _net),
    "gibbs": Case(
        quadratic_ball,
        Budget(2.0, 1e-5),
        {"method": "langevin", "max_steps": 20},
        _gibbs,
    ),
    "dp_spider": Case(
        quadratic_ball,
        Budget(2.0, 1e-5),
        {
            "num_steps": 6,
            "phase_length": 3,
            "variation_batch_size": 8,
            "x0": [0.1, -0.2],
        },
        _dp_spider,
    ),
    "spider_sosp": Case(
        cosine_free,
        Budget(8.0, 1e-5),
        {"num_iters": 12, "alpha": 2.0, "x0": [0.1, -0.2]},
        _spider_sosp,
    ),
    "dp_trust_region": Case(
        cosine_free,
        Budget(2.0, 1e-5),
        {"num_iters": 3, "x0": [0.1, -0.2]},
        _convenience("dp_trust_region"),
    ),
    "dp_stochastic_trust_region": Case(
        cosine_free,
        Budget(2.0, 1e-5),
        {
            "num_iters": 3,
            "x0": [0.1, -0.2],
            "grad_batch_size": 16,
            "hessian_batch_size": 16,
            "accounting": "tight",
        },
        _convenience("dp_stochastic_trust_region"),
    ),
    "goldstein_zero_order": Case(
        cosine_free,
        Budget(2.0, 1e-5),
        {
            "alpha": 0.2,
            "num_directions": 2,
            "enforce_sensitivity": True,
            "x0": [0.1, -0.2],
        },
        _convenience("goldstein_zero_order"),
    ),
    "goldstein_first_order": Case(
        cosine_free,
        Budget(2.0, 1e-5),
        {"alpha": 0.2, "num_directions": 2, "x0": [0.1, -0.2]},
        _convenience("goldstein_first_order"),
    ),
    "quasar_sgd": Case(
        quadratic_ball,
        Budget(2.0, 1e-5),
        {"quasar_convexity": 1.0, "failure_prob": 0.25, "num_steps": 5},
        _quasar_sgd,
    ),
    "kl_spider": Case(
        quadratic_ball,
        Budget(2.0, 1e-5),
        {
            "kl_gamma": 0.5**0.5,
            "kl_exponent": 2.0,
            "num_rounds": 4,
            "failure_prob": 0.25,
        },
        _kl_spider,
    ),
    "warm_start": Case(
        quadratic_ball,
        Budget(2.0, 1e-5),
        {
            "sampler": "net",
            "finder": "dp_sgd",
            "sampler_options": {"spacing": 0.25},
            "finder_options": {"num_steps": 6, "batch_size": 8},
        },
        _warm_start,
    ),
    "jl_glm": Case(
        sigmoid_glm,
        Budget(2.0, 1e-5),
        {
            "glm": _GLM,
            "projection_dim": 2,
            "inner": "warm_start",
            "inner_options": {
                "sampler": "net",
                "finder": "dp_sgd",
                "sampler_options": {"spacing": 0.25},
                "finder_options": {"num_steps": 6, "batch_size": 8},
            },
        },
        _jl_glm,
    ),
}
