"""``[loss] name``: the names a configuration accepts are the loss factories (issue 28).

The unknown-loss error once listed ``GLM_LINKS``, ``GLMLoss`` and ``Link`` (a table
and two classes of :mod:`dpsample.losses`), and choosing one crashed.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpsample import config
from dpsample.config import ConfigError


def _raw(name: str) -> dict:
    return {
        "job": {"kind": "finder", "name": "dp_sgd"},
        "data": {"source": "synthetic", "kind": "classification", "n": 20, "d": 2},
        "loss": {"name": name},
        "domain": {"kind": "ball", "radius": 2.0},
        "privacy": {"epsilon": 1.0, "delta": 1e-6},
    }


def test_loss_names_are_the_public_non_class_members_that_build_a_loss():
    names = config.loss_names()
    assert {"glm", "sigmoid", "logistic_nonconvex", "squared"} <= set(names)
    assert not {"GLM_LINKS", "GLMLoss", "Link", "Loss", "LossConstants"} & set(names)


@pytest.mark.parametrize("name", config.loss_names())
def test_every_listed_loss_builds_a_loss_from_a_configuration(name):
    resolved = config.resolve_config(_raw(name))
    problem = config.build_problem(resolved)[0]
    risk = float(problem.empirical_risk(np.zeros(problem.dim)))
    assert np.isfinite(risk)


@pytest.mark.parametrize("name", ["GLM_LINKS", "GLMLoss", "Link", "nonsense"])
def test_a_name_that_is_no_loss_factory_is_refused_with_the_real_choices(name):
    with pytest.raises(ConfigError, match="valid choices") as err:
        config.resolve_config(_raw(name))
    message = str(err.value)
    assert "'sigmoid'" in message
    for bad in ("GLM_LINKS", "GLMLoss", "'Link'"):
        assert bad not in message.replace(f"'{name}'", "")
