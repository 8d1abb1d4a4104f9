"""Nothing computed from the private data sits among the public facts of a report.

Every example configuration in ``examples/`` and the quickstart run through the CLI
(in process, as ``dpsample run CONFIG -o DIR`` / ``dpsample quickstart --json``), twice:
on the configured data ``D`` and on different data ``D'`` of the same size and the same
public properties (rows in reverse order, labels negated, class indices ``y`` mapped to
``k - 1 - y``: the row-norm and label bounds every derived constant rests on still
hold), with the same key and every public input equal. In the report written for each:

* a value that differs between ``D`` and ``D'`` is a function of the private data, so
  it may appear only in the released values (covered by the guarantee), in the
  labelled non-private section, or as the run's wall-clock time (the threat model lets
  an observer see the time anyway); anywhere else it is a leak;
* no key outside the non-private section is named like a non-private diagnostic (a
  labelled value filed under the wrong key, e.g. ``nonprivate_diagnostics``, is not
  caught by the first check when its value happens not to change);
* the budget verdict states the guarantee's assumptions ("within budget, assuming:
  ...") and the ledger carries the same ones.

The runs on ``D`` also carry test_cli's checks of every example's run (what it
prints, the folder it writes, the resolved config), so the examples run once for both.
"""

import contextlib
import dataclasses
import io
import json
import re
import tomllib
from pathlib import Path

import numpy as np
import pytest
from test_cli import _check_output_folder

from dpsample import cli, config, registry
from dpsample.base import AlgorithmInfo, NonPrivateDiagnostics, PrivateAlgorithm
from dpsample.config import execution as config_execution
from dpsample.config import problem as config_problem
from dpsample.config import report as config_report
from dpsample.plan import Cost, Param, Plan
from dpsample.privacy import NON_PRIVATE_KEY

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((REPO / "examples").glob("*.toml"))
QUICKSTART = "quickstart"

#: Report paths (prefixes) that may depend on the private data.
PRIVATE_PATHS = (
    ("released",),  # the released values, covered by the guarantee
    ("info", "warm_start"),  # the pipeline's warm start, released with the output
    (NON_PRIVATE_KEY,),  # labelled NOT PRIVATE
    ("seconds",),  # wall-clock time: visible to the observer by the threat model
    ("run", "seconds"),
)
#: Info entries that are post-processing of released values, so covered by the
#: guarantee (Spider-SOSP's Privacy section: "the branch choices, the counters and the
#: abort are post-processing of released values"; the index AboveThreshold selects).
COVERED_INFO = {
    "spider_sosp": {
        "n_o1_drift",
        "n_o1_kick",
        "n_o2",
        "branch_counts",
        "cap_hit",
        "fallback",
        "selected",
    }
}
LABELLED_NON_PRIVATE = re.compile(r"non.?private|diagnostic", re.IGNORECASE)


def _other_data(data):
    """``D'``: same size and public bounds, different values (see module docstring)."""
    out = dict(data)
    out["x"] = np.asarray(data["x"])[::-1].copy()
    y = np.asarray(data["y"])[::-1]
    # class indices 0..k-1 ([model] cross_entropy) are relabelled k-1-y instead
    out["y"] = (y.max() - y if np.issubdtype(y.dtype, np.integer) else -y).copy()
    return out


def _run_all(tmp: Path, tag: str, printed: dict | None = None) -> dict[str, dict]:
    reports = {}
    for path in EXAMPLES:
        out = tmp / f"{path.stem}-{tag}"
        # the same key on D and D' (a given seed: its report is conditional on it)
        args = ["run", str(path), "--output", str(out), "--seed", "0"]
        with contextlib.redirect_stdout(io.StringIO()) as stdout:
            assert cli.main(args) == 0
        if printed is not None:
            printed[path.stem] = (stdout.getvalue(), out)
        reports[path.stem] = json.loads((out / "report.json").read_text())
    # `dpsample quickstart --json` prints json.dumps(cli.quickstart()); the CLI adds
    # nothing to it, so the dict is checked directly.
    reports[QUICKSTART] = json.loads(
        json.dumps(cli.quickstart(seed=0), allow_nan=False)
    )
    return reports


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """``(reports, printed)``: ``reports`` is ``{name: (report on D, report on D')}``
    for every example and the quickstart, ``printed`` is ``{example: (what the run
    printed, its output folder)}`` for the runs on ``D``."""
    tmp = tmp_path_factory.mktemp("reports")
    printed: dict = {}
    on_d = _run_all(tmp, "d", printed)
    with pytest.MonkeyPatch.context() as mp:
        load = config_problem.load_data
        mp.setattr(config_problem, "load_data", lambda cfg: _other_data(load(cfg)))
        on_other = _run_all(tmp, "other")
    return {name: (on_d[name], on_other[name]) for name in on_d}, printed


@pytest.fixture(scope="module")
def reports(runs):
    """``{name: (report on D, report on D')}`` for every example and the quickstart."""
    return runs[0]


@pytest.mark.slow
@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_every_example_config_runs(runs, example):
    """``dpsample run CONFIG -o DIR`` on each example (the runs on ``D`` above: the
    same command in process; test_cli runs the installed script in a subprocess):
    it prints the released point and the non-private section and writes the folder
    (test_cli's checks), and the resolved config is the example's."""
    stdout, folder = runs[1][example.stem]
    raw = tomllib.loads(example.read_text())
    assert raw["output"]["dir"].startswith("runs/")  # runs/ is git-ignored
    assert "RELEASED POINT" in stdout and "NON-PRIVATE" in stdout
    _, report, resolved = _check_output_folder(folder, raw["privacy"])
    assert resolved["job"] == {k: v for k, v in raw["job"].items() if k != "seed"}
    for key, value in raw.get("options", {}).items():
        assert resolved["options"][key] == value
    if raw["job"]["kind"] == "finder":
        assert len(resolved["options"]["x0"]) == report["problem"]["dim"]


def _leaves(node, path=()):
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _leaves(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _leaves(value, (*path, i))
    else:
        yield path, node


def _private(path, jobs):
    if any(path[: len(p)] == p for p in PRIVATE_PATHS):
        return True
    covered = set().union(*(COVERED_INFO.get(job, ()) for job in jobs))
    return path[0] == "info" and any(key in covered for key in path[1:3])


def _jobs(report):
    """The functions that ran (the job, and a pipeline's finder)."""
    if "job" not in report:  # the quickstart: warm start, net then DP-SPIDER
        return {"warm_start", "net", "dp_spider"}
    info = report["info"]
    return {report["job"]["name"], info.get("sampler"), info.get("finder")} - {None}


def _names():
    return [p.stem for p in EXAMPLES] + [QUICKSTART]


def test_the_examples_cover_every_job_kind_and_a_finder_with_diagnostics():
    kinds = {config.load_config(str(p))["job"]["kind"] for p in EXAMPLES}
    assert kinds == {"pipeline", "sampler", "finder"}
    names = {config.load_config(str(p))["job"]["name"] for p in EXAMPLES}
    assert "goldstein_zero_order" in names  # a job with info-level diagnostics


@pytest.mark.slow
@pytest.mark.parametrize("name", _names())
def test_no_value_computed_from_the_data_is_reported_as_public(reports, name):
    on_d, on_other = reports[name]
    leaves_d, leaves_other = dict(_leaves(on_d)), dict(_leaves(on_other))
    jobs = _jobs(on_d)
    public = {p for p in leaves_d.keys() | leaves_other.keys() if not _private(p, jobs)}
    leaked = sorted(
        (p, leaves_d.get(p), leaves_other.get(p))
        for p in public
        if leaves_d.get(p, "<absent>") != leaves_other.get(p, "<absent>")
    )
    assert not leaked, f"{name}: public values that depend on the data: {leaked}"
    # the check has power: the released point does change with the data
    assert on_d["released"]["point"] != on_other["released"]["point"]
    assert on_d[NON_PRIVATE_KEY] != on_other[NON_PRIVATE_KEY]


@pytest.mark.slow
@pytest.mark.parametrize("name", _names())
def test_labelled_diagnostics_sit_in_the_non_private_section(reports, name):
    for report in reports[name]:
        misfiled = _misfiled(report)
        assert not misfiled, f"{name}: non-private values outside the section"
        assert "NOT PRIVATE" in report[NON_PRIVATE_KEY]["label"]


@pytest.mark.slow
@pytest.mark.parametrize("name", _names())
def test_the_verdict_states_the_guarantees_assumptions(reports, name):
    report = reports[name][0]
    if name == QUICKSTART:
        privacy, ledger = report["privacy"]["total"], report["privacy"]["ledger"]
    else:
        privacy, ledger = report["privacy"], report["privacy"].get("ledger")
    assert privacy["within_budget"]
    assumed = privacy["assumptions"]
    assert config.SEED_ASSUMPTION in assumed  # the runs were given a seed
    if assumed:
        assert privacy[
            "verdict"
        ] == "within budget, conditional, assuming: " + "; ".join(assumed)
    else:
        assert privacy["verdict"] == "within budget"
    if ledger is not None:  # the ledger's total rests on the same assumptions
        assert ledger["assumptions"] == assumed


def _misfiled(report):
    return [
        path
        for path, _ in _leaves(report)
        if path[0] != NON_PRIVATE_KEY
        and any(LABELLED_NON_PRIVATE.search(str(k)) for k in path)
    ]


_GOLDSTEIN = {
    "job": {"kind": "finder", "name": "goldstein_zero_order"},
    "data": {"source": "synthetic", "kind": "classification", "n": 100, "d": 2},
    "loss": {"name": "sigmoid", "lipschitz": 0.25, "loss_range": 1.0},
    "domain": {"kind": "unconstrained"},
    "privacy": {"epsilon": 2.0, "delta": 1e-5},
    "options": {"alpha": 0.1, "num_directions": 4},
}


@dataclasses.dataclass(frozen=True)
class _FakeDiagnostics(NonPrivateDiagnostics):
    count: int


@dataclasses.dataclass(frozen=True)
class _FakeInfo(AlgorithmInfo):
    plan: dict
    finder_info: dict
    diagnostics: _FakeDiagnostics | None = None


class _FakeFinder(PrivateAlgorithm):
    """A registered finder whose typed info has diagnostics, also nested."""

    name = "goldstein_zero_order"
    kind = "finder"
    seed = "test"
    theorem = "none"
    guarantee_type = "pure epsilon (test double)"
    summary = "a test double"

    def _plan(self, spec, budget, *, x0=None):
        from dpsample.privacy import PrivacyGuarantee

        return Plan(
            self.name,
            spec,
            budget,
            {"x0": Param(spec.domain.center_point, "default")},
            PrivacyGuarantee.pure(budget.epsilon),
            Cost(loss_evaluations=spec.n),
        )

    def _run(self, rng_key, plan, problem):
        from dpsample.privacy import PrivateResult

        info = _FakeInfo(
            plan={"n": problem.n},
            finder_info={"noise": 0.5, NON_PRIVATE_KEY: {"count": 2}},
            diagnostics=_FakeDiagnostics(count=1),
        )
        return PrivateResult(np.asarray(plan["x0"]), plan.guarantee, info)


class _FakeEntry(registry.Entry):
    @property
    def cls(self):
        return _FakeFinder


@pytest.mark.parametrize("diagnostics", [True, False])
def test_a_jobs_own_diagnostics_leave_the_public_info(diagnostics, monkeypatch):
    """At any depth of ``info`` (a pipeline nests its stages), reported or not."""
    entry = _FakeEntry("goldstein_zero_order", "finder", "", "", "", "", "test")
    names, get = registry.names, registry.get
    monkeypatch.setattr(registry, "names", lambda kind=None: (*names(kind), entry.name))
    monkeypatch.setattr(
        registry, "get", lambda n, kind=None: entry if n == entry.name else get(n, kind)
    )
    # the CLI's own diagnostics at the output are not what is tested here
    monkeypatch.setattr(
        config_execution, "non_private_diagnostics", lambda problem, x: {}
    )
    cfg = config.resolve_config(_GOLDSTEIN | {"options": {}})
    ex = config.execute(cfg, diagnostics=diagnostics)
    assert isinstance(ex.result.info, _FakeInfo) and ex.plan is not None
    report = ex.report
    assert not _misfiled(report)
    assert report["info"] == {"plan": {"n": 100}, "finder_info": {"noise": 0.5}}
    if diagnostics:
        moved = report[NON_PRIVATE_KEY]["from_job"]
        assert moved == {"count": 1, "finder_info": {"count": 2}}
    else:
        assert NON_PRIVATE_KEY not in report


@pytest.mark.slow
def test_goldsteins_count_of_bound_violations_is_not_reported_as_public():
    """The count reads the data; Goldstein files it under the one constant key."""
    report = config.execute(config.resolve_config(_GOLDSTEIN)).report
    assert not _misfiled(report)
    moved = report[NON_PRIVATE_KEY]["from_job"]
    assert set(moved) == {"bound_exceeded_count", "estimates_checked"}


def test_job_diagnostics_leave_info_at_any_depth_even_when_not_reported():
    """The move itself, on a report whose info nests a stage's diagnostics."""
    info = {
        "plan": {"n": 3},
        NON_PRIVATE_KEY: {"count": 1},
        "finder_info": {"noise": 0.5, NON_PRIVATE_KEY: {"count": 2}},
        "stages": [{NON_PRIVATE_KEY: {"count": 3}}],
    }
    moved = config_report.pop_non_private(info)
    assert moved == {
        "count": 1,
        "finder_info": {"count": 2},
        "stages.0": {"count": 3},
    }
    assert info == {"plan": {"n": 3}, "finder_info": {"noise": 0.5}, "stages": [{}]}
