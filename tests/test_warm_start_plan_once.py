"""A warm-start plan is computed once (issue 29 item 4; issue 28's module name).

One default :func:`~dpsample.pipelines.warm_start` call used to run
``check_privacy`` 4 times, ``positive("epsilon")`` 39 times, build 17 ``Budget``s and
account ``epsilon(delta)`` of a guarantee 11 times on the problem below (measured on
main at 6b571cb with the counters of :func:`_counting`): the budget was validated at
every step, the default rule built three budgets per share it tried, the finder's
spend search composed its winner again, a plan's guarantee lost its accounting memo
when the plan attached its report context, and the ledger accounted the planned
composition twice more. The budget is now validated once (the ``Budget`` at the
boundary, and ``delta > 0`` in ``WarmStart``'s plan); the steps read typed values;
the chosen candidate's plan is the one that runs; the composition the search
accounted is the plan's guarantee, and the ledger reads it from the same memo.

The counts are pinned exactly, with the caches that outlive a call (the
calibration's and the shared guarantees', keyed on public descriptions) cleared
first, so that they do not depend on what ran before in the process. Each count's
sites are in the failure message.
"""

from __future__ import annotations

import collections
import inspect
import sys
import types

import jax
import jax.numpy as jnp
import pytest

import dpsample
from dpsample._src import validation
from dpsample.base import PrivateAlgorithm
from dpsample.plan import Budget
from dpsample.privacy import calibration, components
from dpsample.privacy.guarantee import PrivacyGuarantee


def _problem():
    """The docstring example of :func:`~dpsample.pipelines.warm_start`."""
    data = {"z": jnp.linspace(0.2, 0.6, 200)[:, None]}
    return dpsample.Problem(
        lambda x, z: 0.5 * jnp.sum((x - z["z"]) ** 2),
        data,
        dpsample.Ball(1.0, dim=1),
        lipschitz=2.0,
        smoothness=1.0,
        loss_range=2.0,
    )


def _site() -> str:
    """The innermost dpsample frame outside the helpers that count and wrap."""
    frame = sys._getframe(2)
    skip = ("_src/precision.py", "_src/validation.py", "/plan.py", "<string>")
    while frame is not None:
        name = frame.f_code.co_filename
        if "dpsample" in name and not name.endswith(skip) and "tests" not in name:
            return f"{name.split('dpsample/')[-1]}:{frame.f_code.co_name}"
        frame = frame.f_back
    return "?"


def _counting(monkeypatch):
    """Counters on the functions issue 29 named, by call site."""
    counts: dict[str, collections.Counter] = collections.defaultdict(
        collections.Counter
    )
    check_privacy, positive = validation.check_privacy, validation.positive
    post_init, epsilon = Budget.__post_init__, PrivacyGuarantee.epsilon
    plan = PrivateAlgorithm.plan

    def counted_check_privacy(*args, **kwargs):
        counts["check_privacy"][_site()] += 1
        return check_privacy(*args, **kwargs)

    def counted_positive(name, *args, **kwargs):
        if name == "epsilon":
            counts["positive_epsilon"][_site()] += 1
        return positive(name, *args, **kwargs)

    def counted_post_init(self):
        counts["Budget"][_site()] += 1
        post_init(self)

    def counted_epsilon(self, delta):
        if ("epsilon", float(delta)) not in self._cache:
            counts["epsilon_accounted"][_site()] += 1
        return epsilon(self, delta)

    def counted_plan(self, *args, **kwargs):
        counts["plan"][self.name] += 1
        return plan(self, *args, **kwargs)

    monkeypatch.setattr(validation, "check_privacy", counted_check_privacy)
    monkeypatch.setattr(validation, "positive", counted_positive)
    monkeypatch.setattr(Budget, "__post_init__", counted_post_init)
    monkeypatch.setattr(PrivacyGuarantee, "epsilon", counted_epsilon)
    monkeypatch.setattr(PrivateAlgorithm, "plan", counted_plan)
    return counts


#: The counts of one default warm_start call on :func:`_problem` (epsilon 2, delta
#: 1e-5, DP-SGD at 20 steps): the net is chosen at the fourth share tried (0.3).
#: check_privacy: DP-SGD's own plan (twice: at its share, then the spend search's
#: one step); none in the pipeline. positive("epsilon"): the 7 Budgets, the
#: net's plans (2 each: its bound and its exponential mechanism), DP-SGD's plans
#: (3 each: its check, its noise estimate and the calibrator), the two rate shapes
#: of the report, the dispatcher (a public function that validates its own
#: input) and the ledger. Budgets: the boundary's, one per share the default rule
#: tries (4), the finder's share and the search's step. epsilon accounted: the
#: two DP-SGD calibrations, the fallback's and the search step's compositions
#: with the sampler, the ledger's first stage (the net alone), the run's
#: parallel-epsilon read of the net, and the contract's check that each plan is
#: within its budget (``base.plan``) on the net's four plans (a pure epsilon; the
#: other plans' epsilons at their delta are cached by then).
EXPECTED = {
    "check_privacy": 2,
    "positive_epsilon": 25,
    "Budget": 7,
    "epsilon_accounted": 10,
    "plan": {"warm_start": 1, "net": 4, "dp_sgd": 2},
}


@pytest.mark.slow
def test_one_default_warm_start_counts(monkeypatch):
    """Pinned counts (above) and the pipeline's own share of them."""
    calibration._coarse_epsilon_cached.cache_clear()
    calibration._canonical_guarantee_cached.cache_clear()
    components.leaf_pld.cache_clear()
    prob = _problem()
    counts = _counting(monkeypatch)
    res = dpsample.pipelines.warm_start(
        jax.random.key(0),
        prob,
        epsilon=2.0,
        delta=1e-5,
        finder_options={"num_steps": 20},
    )
    assert res.info["sampler"] == "net" and res.info["split"] == 0.3
    got = {k: sum(v.values()) for k, v in counts.items() if k != "plan"}
    got["plan"] = dict(counts["plan"])
    sites = {k: dict(v) for k, v in counts.items()}
    assert got == EXPECTED, sites
    # the pipeline validates the budget nowhere after the boundary
    assert not [s for s in counts["check_privacy"] if s.startswith("pipelines/")]
    # and reads epsilon unchecked but where it builds a Budget (a new value) and in
    # the dispatcher (a public function)
    own = {
        site: n - counts["Budget"][site]
        for site, n in counts["positive_epsilon"].items()
        if site.startswith("pipelines/")
    }
    assert {k: n for k, n in own.items() if n} == {
        "pipelines/choice.py:should_warm_start": 1
    }, sites
    # the warm start accounts a composition once: the fallback's and the step's
    assert counts["epsilon_accounted"]["pipelines/warm_start_plan.py:stage_b_finder"]
    assert counts["epsilon_accounted"]["privacy/ledger.py:charge"] == 1  # the net


def test_the_module_is_reachable_under_its_name(monkeypatch):
    """Issue 28: ``import dpsample.pipelines.warm_start as ws`` is the module."""
    import dpsample.pipelines.warm_start as ws

    assert isinstance(ws, types.ModuleType)
    assert ws.__name__ == "dpsample.pipelines.warm_start"
    assert ws.WarmStart is dpsample.pipelines.WarmStart
    from dpsample.pipelines import warm_start

    assert warm_start is ws is dpsample.pipelines.warm_start
    assert dpsample.warm_start is ws.warm_start  # the function
    assert inspect.isfunction(inspect.unwrap(dpsample.warm_start))
    # calls still work: the module calls its function with the same arguments
    seen = []
    monkeypatch.setattr(ws, "warm_start", lambda *a, **k: seen.append((a, k)) or 7)
    assert warm_start(1, 2, epsilon=3.0) == 7
    assert dpsample.pipelines.warm_start("key", delta=1e-5) == 7
    assert seen == [((1, 2), {"epsilon": 3.0}), (("key",), {"delta": 1e-5})]
    monkeypatch.undo()
    assert inspect.signature(warm_start) == inspect.signature(ws.warm_start)
    with pytest.raises(TypeError, match="PRNG key"):
        warm_start("not a key", _problem(), epsilon=1.0, delta=1e-5)


def test_the_budget_is_checked_once_in_the_plan():
    """``WarmStart``'s plan refuses ``delta = 0`` (a Budget allows it) up front."""
    from dpsample.pipelines import WarmStart

    prob = _problem()
    with pytest.raises(ValueError, match=r"delta=0.0 in the open interval \(0, 1\)"):
        WarmStart().plan(prob.spec, Budget(1.0, 0.0))
    with pytest.raises(ValueError, match=r"delta=0.0 in the open interval \(0, 1\)"):
        WarmStart("net", "dp_sgd").plan(prob.spec, Budget(1.0, 0.0))
    with pytest.raises(TypeError, match="Expected a Budget"):
        from dpsample.pipelines.warm_start_plan import check_budget

        check_budget((1.0, 1e-5))
