"""docs/adding_an_algorithm.md can be followed: its toy algorithm works end to end.

The page's ```python blocks are executed (in order, in one module namespace) to define
``NoisyGD`` and its options' declaration ``NoisyGDOptions``; the test then does what
the page's sections 6 and 7 tell a contributor to do: register it by its import path
(one entry of ``registry.ALGORITHMS``, for this test only), add a contract case, and
check that the algorithm is reachable by name (registry, ``dpsample list``, a TOML
configuration), that its declared options reach the registry, the TOML schema, the
plan's rows and a docs table, that it passes the contract tests that every
registered algorithm passes, refuses bad input before any private work, and
survives an empirical audit whose half-noise twin it must beat.
"""

from __future__ import annotations

import pathlib
import sys
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import test_contract
from contract_cases import CASES, Case
from test_docs_snippets import blocks

import dpsample
from dpsample import registry
from dpsample.config import ConfigError
from dpsample.config.jobs import resolve_job
from dpsample.errors import MissingConstantError
from dpsample.options import expand_option_tables
from dpsample.plan import Budget, Param

PAGE = pathlib.Path(__file__).resolve().parents[1] / "docs" / "adding_an_algorithm.md"
MODULE = "dpsample_toy_noisy_gd"
PATH = f"{MODULE}:NoisyGD"


def _page_module() -> types.ModuleType:
    """The page's code as an importable module (registered in ``sys.modules``)."""
    if MODULE in sys.modules:
        return sys.modules[MODULE]
    module = types.ModuleType(MODULE)
    sys.modules[MODULE] = module
    for block in blocks(PAGE.read_text()):
        if "print(" in block.code:  # the page's demonstration, not a definition
            continue
        exec(compile(block.code, str(PAGE), "exec"), module.__dict__)
    return module


def _problem(seed: int, n: int, wrap=lambda f: f) -> dpsample.Problem:
    rng = np.random.default_rng(seed)
    z = rng.uniform(-0.5, 0.5, size=(n, 1))

    def loss(x, ex):
        return 0.5 * jnp.sum((x - ex["z"]) ** 2)

    return dpsample.Problem(
        wrap(loss),
        {"z": z},
        dpsample.Ball(1.0, dim=1),
        lipschitz=1.5,
        smoothness=1.0,
        hessian_lipschitz=0.0,
        loss_range=1.125,
    )


@pytest.fixture
def toy(monkeypatch):
    """The page's algorithm, registered (section 6) with a contract case (section 7)."""
    module = _page_module()
    monkeypatch.setattr(registry, "ALGORITHMS", (*registry.ALGORITHMS, PATH))
    registry._entries.cache_clear()

    def convenience(rng_key, problem, budget, options):
        return module.noisy_gd(
            rng_key, problem, epsilon=budget.epsilon, delta=budget.delta, **options
        )

    case = Case(_problem, Budget(1.0, 1e-5), {"num_steps": 5}, convenience)
    monkeypatch.setitem(CASES, "noisy_gd", case)
    yield module
    monkeypatch.undo()
    registry._entries.cache_clear()


def test_the_toy_is_reachable_by_name_once_registered(toy):
    entry = registry.get("noisy_gd", "finder")
    assert entry.cls is toy.NoisyGD
    assert {o.name for o in entry.options()} == {"num_steps", "learning_rate"}
    from dpsample.cli import list_algorithms

    assert "noisy_gd" in str(list_algorithms())
    assert isinstance(registry.create("noisy_gd", num_steps=3), toy.NoisyGD)


def test_the_toys_declared_options_reach_registry_schema_and_docs(toy):
    """Section 2: every surface reads the one declaration (plan rows: next test)."""
    assert toy.NoisyGD.options_type is toy.NoisyGDOptions
    # the registry (so `dpsample list`): names, types and defaults
    options = {o.name: o for o in registry.get("noisy_gd").options()}
    assert list(options) == ["num_steps", "learning_rate"]
    assert options["num_steps"].type == (int | None)
    assert options["learning_rate"].type == (float | None)
    assert options["learning_rate"].default is None
    # the TOML schema: names and annotations checked, the valid ones listed
    job = resolve_job("finder", "noisy_gd")
    assert job.check_options({"num_steps": 4}) == {"num_steps": 4}
    with pytest.raises(ConfigError, match="num_steps"):
        job.check_options({"num_steps": "four"})
    with pytest.raises(ConfigError, match="valid options: .*learning_rate"):
        job.check_options({"steps": 4})
    # the docs' table, from the marker line a docs page carries
    rule = toy.NoisyGDOptions.declared()[0].metadata["rule"]
    table = expand_option_tables(f"<!-- options: {MODULE}:NoisyGDOptions -->")
    assert f"| `num_steps` | `int | None` | `None` | default: {rule} | Steps" in table
    assert "| `learning_rate` | `float | None` | `None` | default: 1/M |" in table


@pytest.mark.slow  # two plans, each a noise calibration (3-4 s on a busy 2-core box)
def test_the_toys_plan_rows_come_from_its_declaration(toy):
    """The plan's rows: the declared source and rule, [user] where given."""
    rule = toy.NoisyGDOptions.declared()[0].metadata["rule"]
    spec = _problem(0, 50).spec
    params = toy.NoisyGD().plan(spec, Budget(1.0, 1e-5)).params
    assert params["num_steps"] == Param(50, "default", rule)
    assert params["learning_rate"] == Param(1.0, "default", "1/M")
    capped = toy.NoisyGD(learning_rate=0.5).plan(
        spec, Budget(1.0, 1e-5, max_evaluations=500)
    )
    assert capped.params["learning_rate"] == Param(0.5, "user", "")
    assert capped.params["num_steps"] == Param(10, "derived", rule)


_SLOW = pytest.mark.slow  # as in tests/test_contract.py


@pytest.mark.parametrize(
    "check",
    [
        "test_registry_entry_describes_the_algorithm",
        pytest.param("test_plan_is_public_frozen_complete_and_printable", marks=_SLOW),
        pytest.param(
            "test_run_returns_the_plans_guarantee_and_typed_info_as_the_function_does",
            marks=_SLOW,
        ),
        "test_mismatched_data_and_foreign_plans_are_refused",
        pytest.param(
            "test_a_second_run_with_the_same_shapes_does_not_recompile", marks=_SLOW
        ),
        "test_every_plan_fits_its_compute_budget_or_refuses",
    ],
)
def test_the_toy_passes_every_contract_check(toy, check):
    getattr(test_contract, check)("noisy_gd")


def test_the_toy_refuses_bad_input_before_any_private_work(toy):
    problem = _problem(0, 50)
    algo = toy.NoisyGD()
    with pytest.raises(ValueError, match="num_steps"):
        algo.plan(problem.spec, Budget(1.0, 1e-5), num_steps=0)
    with pytest.raises(ValueError, match="learning_rate"):
        algo.plan(problem.spec, Budget(1.0, 1e-5), learning_rate=-1.0)
    bare = dpsample.Problem(problem.loss_fn, problem.data, dpsample.Ball(1.0, dim=1))
    with pytest.raises(MissingConstantError, match="lipschitz"):
        algo.plan(bare.spec, Budget(1.0, 1e-5))
    with pytest.raises(TypeError, match="no option"):
        algo.plan(problem.spec, Budget(1.0, 1e-5), clip=1.0)


@pytest.mark.slow
def test_a_configuration_file_plans_and_runs_the_toy_by_name(toy, tmp_path):
    from dpsample.cli import dry_run_config, run_config

    config = tmp_path / "toy.toml"
    config.write_text(
        "\n".join(
            [
                "[job]",
                'kind = "finder"',
                'name = "noisy_gd"',
                "[data]",
                'source = "synthetic"',
                'kind = "classification"',
                "n = 200",
                "d = 2",
                "seed = 0",
                "[loss]",
                'name = "logistic_nonconvex"',
                "[domain]",
                'kind = "ball"',
                "radius = 1.0",
                "[privacy]",
                "epsilon = 1.0",
                "delta = 1e-5",
                "[options]",
                "num_steps = 4",
            ]
        )
        + "\n"
    )
    planned = dry_run_config(str(config), seed=0)
    assert planned["plan"]["algorithm"] == "noisy_gd"
    report = run_config(str(config), output=str(tmp_path / "out"), seed=0)
    assert report["info"]["num_steps"] == 4
    assert "within budget" in report["privacy_text"]


@pytest.mark.slow
def test_the_toy_survives_its_audit_and_its_half_noise_twin_does_not(toy):
    """Section 6's audit: neighbours at the full sensitivity ``2G/n``.

    With ``f(x; z) = G |x - z|`` and every ``|z| = 5`` outside ``K = Ball(1)``, each
    clipped gradient is ``+-G`` wherever the iterate is, so replacing one example
    ``z = 5`` by ``z = -5`` moves every step's mean by exactly ``2G/n``: the release is
    the ``T``-fold Gaussian mechanism the guarantee accounts for (no projection at
    this step size), and the audit's lower bound must stay below the claim; the twin
    (half the noise) must exceed it.
    """
    n, g = 10, 1.0
    z = np.full((n, 1), 5.0)
    z[0] = -5.0
    neighbour = z.copy()
    neighbour[0] = 5.0
    problem = dpsample.Problem(
        lambda x, ex: g * jnp.sum(jnp.abs(x - ex["z"])),
        {"z": z},
        dpsample.Ball(1.0, dim=1),
        lipschitz=g,
        smoothness=1.0,
    )
    plan = toy.NoisyGD().plan(
        problem.spec, Budget(1.0, 1e-5), num_steps=5, learning_rate=0.01
    )
    claim = plan.guarantee.epsilon(1e-5)
    x0 = jnp.zeros((1,))

    def release(noise_std):
        def mechanism(key, data):
            return toy._descend(
                key,
                x0,
                {"z": data},
                loss_fn=problem.loss_fn,
                num_steps=plan["num_steps"],
                learning_rate=plan["learning_rate"],
                clip_norm=plan["clip_norm"],
                noise_std=noise_std,
                projection=plan.internal["projection"],
            )[0]

        return mechanism

    # the audited loop is the one the public call runs
    direct = toy.NoisyGD().run(jax.random.key(3), plan, problem.data).value
    assert float(direct[0]) == float(release(plan["noise_std"])(jax.random.key(3), z))
    honest = dpsample.privacy.audit(
        jax.random.key(1),
        release(plan["noise_std"]),
        jnp.asarray(z),
        jnp.asarray(neighbour),
        num_samples=200_000,
        delta=1e-5,
    )
    twin = dpsample.privacy.audit(
        jax.random.key(2),
        release(plan["noise_std"] / 2.0),
        jnp.asarray(z),
        jnp.asarray(neighbour),
        num_samples=200_000,
        delta=1e-5,
    )
    assert honest.epsilon_lower_bound <= claim, (honest, claim)
    assert twin.epsilon_lower_bound > claim, (twin, claim)
