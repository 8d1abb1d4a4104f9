"""The core install works without the extras; each extra's part names it when missing.

Dask, pandas, matplotlib (``sweep``), ArviZ (``diagnostics``) and scikit-learn
(``datasets``) are optional (``pyproject.toml``, ``dpsample/_src/extras.py``). The slow
test runs Python in a subprocess where a meta-path finder refuses to import any of
them, as on a machine with only the core install.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from dpsample._src import extras

ROOT = Path(__file__).resolve().parents[1]

BLOCKED = ("dask", "distributed", "pandas", "matplotlib", "sklearn", "arviz", "xarray")

#: Run in the subprocess: blocks the optional modules, then uses the core and each part.
SCRIPT = textwrap.dedent(
    """
    import json, sys

    BLOCKED = set(sys.argv[1].split(","))

    class Block:
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] in BLOCKED:
                raise ImportError(f"blocked for the test: {name}", name=name)
            return None

    sys.meta_path.insert(0, Block())

    import jax, jax.numpy as jnp
    import dpsample
    from dpsample.finders.dp_sgd import DPSGD
    from dpsample.plan import Budget

    out = {}
    data = {"z": jnp.linspace(-1.0, 1.0, 8)[:, None]}
    prob = dpsample.Problem(lambda x, z: 0.5 * jnp.sum((x - z["z"]) ** 2),
        data, dpsample.Ball(2.0, dim=1), lipschitz=3.0, smoothness=1.0,
        loss_range=4.5)
    algo = DPSGD(num_steps=3, batch_size=4)
    plan = algo.plan(prob.spec, Budget(2.0, 1e-5))
    res = algo.run(jax.random.key(0), plan, prob.data)
    out["dp_sgd"] = [list(res.value.shape), res.privacy.epsilon(1e-5) <= 2.0]

    import dpsample.samplers, dpsample.pipelines, dpsample.privacy, dpsample.datasets
    from dpsample import cli
    out["cli_list"] = cli.main(["list"])

    def error(fn):
        try:
            fn()
        except ImportError as err:
            return [type(err).__name__, str(err)]
        return None

    from dpsample._src.arviz import import_arviz
    from dpsample.datasets import load_sklearn
    out["sweep"] = error(lambda: dpsample.validation)
    out["sweep_cli"] = cli.main(["sweep", "no-such-spec.toml", "--dry-run"])
    out["diagnostics"] = error(import_arviz)
    out["datasets"] = error(lambda: load_sklearn("iris"))
    out["loaded"] = sorted(
        m for m in sys.modules if m.partition(".")[0] in BLOCKED
    )
    print("RESULT " + json.dumps(out))
    """
)


def test_require_and_import_optional_name_the_extra(monkeypatch):
    monkeypatch.setitem(extras.EXTRAS, "datasets", ("sklearn", "no_such_module_xyz"))
    with pytest.raises(extras.MissingExtraError, match=r"dpsample\[datasets\]"):
        extras.require("datasets", feature="load_sklearn")
    with pytest.raises(ImportError, match=r'pip install "dpsample\[datasets\]"'):
        extras.import_optional("no_such_module_xyz.sub", "datasets", feature="f")
    with pytest.raises(ValueError, match="Unknown extra"):
        extras.import_optional("sklearn", "nope", feature="f")


def test_import_optional_reraises_errors_inside_an_installed_package(tmp_path):
    # A broken install is not a missing extra: its own ImportError surfaces.
    pkg = tmp_path / "broken_pkg_xyz"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("import no_such_dependency_xyz\n")
    sys.path.insert(0, str(tmp_path))
    try:
        with pytest.raises(ModuleNotFoundError) as info:
            extras.import_optional("broken_pkg_xyz", "sweep", feature="f")
        assert not isinstance(info.value, extras.MissingExtraError)
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("broken_pkg_xyz", None)


def test_extras_match_pyproject():
    import tomllib

    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    optional = meta["optional-dependencies"]
    assert set(extras.EXTRAS) <= set(optional)
    assert optional["all"] == ["dpsample[sweep,diagnostics,datasets]"]
    core = " ".join(meta["dependencies"])
    for names in extras.EXTRAS.values():
        for name in names:
            dist = {"sklearn": "scikit-learn"}.get(name, name)
            assert dist not in core, f"{dist} is an extra, not a core dependency"


@pytest.mark.slow
def test_core_works_without_extras_and_each_part_names_its_extra(tmp_path):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    env["DPSAMPLE_COMPILE_CACHE"] = "0"  # the sweep command writes no cache
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, ",".join(BLOCKED)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT "))
    import json

    out = json.loads(line.removeprefix("RESULT "))
    assert out["dp_sgd"] == [[1], True]
    assert out["cli_list"] == 0
    for part in ("sweep", "diagnostics", "datasets"):
        kind, message = out[part]
        assert kind == "MissingExtraError"
        assert f'pip install "dpsample[{part}]"' in message
    # The command line reports it as one error line, exit status 2.
    assert out["sweep_cli"] == 2
    assert 'pip install "dpsample[sweep]"' in proc.stderr
    assert out["loaded"] == []
