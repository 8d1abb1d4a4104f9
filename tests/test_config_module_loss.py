"""``[loss] name = "package.module:factory"``: a user's own loss in a configuration."""

from __future__ import annotations

import textwrap

import jax
import numpy as np
import pytest

from dpsample.config import ConfigError, build_spec, execute, resolve_config

MODULE = textwrap.dedent(
    """
    import jax.numpy as jnp

    def cosine(a=1.0, signs=(-1.0, 1.0)):
        s = jnp.asarray(signs)

        def loss(x, ex):
            return a * jnp.sum(s * jnp.cos(x - ex["x"]))

        return loss

    def not_a_loss():
        return 3
    """
)


@pytest.fixture
def module(tmp_path, monkeypatch):
    (tmp_path / "my_losses.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    return "my_losses"


def _cfg(name, loss_extra=None, domain=None):
    return {
        "job": {"kind": "finder", "name": "dp_sgd"},
        "data": {"source": "synthetic", "kind": "classification", "n": 50, "d": 2},
        "loss": {"name": name, **(loss_extra or {})},
        "domain": domain or {"kind": "unconstrained"},
        "privacy": {"epsilon": 1.0, "delta": 1e-6},
    }


@pytest.mark.slow
def test_a_plain_loss_function_takes_declared_constants_and_params(module):
    cfg = resolve_config(
        _cfg(
            f"{module}:cosine",
            {
                "params": {"a": 2.0},
                "lipschitz": 2.9,
                "smoothness": 2.0,
                "loss_range": 8.0,
            },
        )
    )
    spec, facts = build_spec(cfg)
    assert (
        spec.lipschitz == 2.9 and facts["constant_sources"]["lipschitz"] == "declared"
    )
    assert facts["constant_sources"]["hessian_lipschitz"] == "none"
    x = jax.numpy.zeros(2)
    ex = {"x": jax.numpy.array([0.0, 0.0]), "y": 1.0}
    assert float(spec.loss_fn(x, ex)) == pytest.approx(0.0)  # 2 (-1 + 1)
    # the same configuration gives the same loss object (compiled cores reused)
    assert build_spec(cfg)[0].loss_fn is spec.loss_fn
    report = execute(cfg | {"job": cfg["job"] | {"seed": 3}}).report
    assert np.isfinite(report["released"]["point"]).all()


def test_a_library_loss_by_reference_derives_its_constants(module):
    by_ref = build_spec(
        resolve_config(
            _cfg("dpsample.losses:sigmoid", domain={"kind": "ball", "radius": 2.0})
        )
    )[0]
    by_name = build_spec(
        resolve_config(_cfg("sigmoid", domain={"kind": "ball", "radius": 2.0}))
    )[0]
    assert by_ref.lipschitz == by_name.lipschitz
    assert by_ref.smoothness == by_name.smoothness


def test_bad_module_losses_are_refused_before_any_data(module):
    with pytest.raises(ConfigError, match="cannot be imported|No module"):
        resolve_config(_cfg("no_such_module_xyz:f"))
    with pytest.raises(ConfigError, match="returned int"):
        build_spec(resolve_config(_cfg(f"{module}:not_a_loss")))
    with pytest.raises(ConfigError, match="params"):
        resolve_config(_cfg(f"{module}:cosine", {"a": 2.0}))
