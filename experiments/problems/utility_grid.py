"""The grids of ``experiments/utility.toml`` and ``utility_cluster.toml``, written here.

The benchmark crosses problems (each a block of ``data``, ``loss``/``model`` and
``domain`` keys that go together) with entries (a ``job`` and its ``options``) and
with ``(n, d, epsilon)``; DP-SGD "as practitioners run it" takes options that depend
on ``n`` and on the problem's constants. A sweep spec's ``[[grid]]`` table crosses
independent axes, so the spec lists one table per (problem, entry, n, d), crossed
with the epsilons; this module writes those tables, so that the grid is stated once
(:data:`DEFAULT`, :data:`CLUSTER`, :data:`SMOKE`) and the spec files are its output::

    python -m experiments.problems.utility_grid          # rewrites both spec files

A test checks that the committed files are what this module writes.

**DP-SGD as practitioners run it** (entry ``dp_sgd_practice``), from public
quantities only (:func:`practice_options`): per-example clipping at the declared
Lipschitz constant ``C = G`` (Abadi et al. 2016 clip at a norm bound; with a
declared ``G`` clipping at ``G`` loses nothing); Poisson sampling with expected batch
``B = min(256, max(1, n // 20))`` (256: the batch of Opacus's and TF Privacy's MNIST
tutorials; ``n/20`` keeps at least 20 steps an epoch on small ``n``); a fixed
``EPOCHS = 10`` epochs, ``T = ceil(EPOCHS n / B)`` steps (Opacus's examples and
Ponomareva et al. 2023, "How to DP-fy ML", section 5.4: a fixed epoch budget, not a
tuned one); learning rate ``1/M`` where a smoothness ``M`` is declared (gradient
descent's safe step) and ``D/(G sqrt T)`` otherwise (the projected subgradient
method's step, ``D`` the diameter of ``K``); the last iterate is released (Opacus
releases the trained model). The MLP keeps ``examples/mlp_digits.toml``'s
``clip_norm = 1`` and ``learning_rate = 1``. The cells mark this entry by giving
``options.sampling = "poisson"`` explicitly (the library's default, never written by
the other entries): :func:`entry_label` reads it back.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from experiments.problems import utility

__all__ = [
    "CLUSTER",
    "DATA_SEED",
    "HEADER",
    "SIZING",
    "cells_of",
    "main",
    "spec_path",
    "DEFAULT",
    "ENTRIES",
    "EPOCHS",
    "PROBLEMS",
    "RULE",
    "BASELINES",
    "SMOKE",
    "SPECS",
    "entry_label",
    "practice_options",
    "problem_config",
    "render",
]

MODULE = "experiments.problems.utility"
#: Epochs of DP-SGD as practitioners run it.
EPOCHS = 10
#: The problems, in table order.
PROBLEMS = ("logistic", "welsch", "basins", "saddle", "absolute", "mlp")
#: The entries: (label, job kind, job name). ``jl_glm`` runs on the GLM only, and the
#: MLP takes the two DP-SGD entries only (a model declares no constants, so the
#: configuration refuses every other job before planning).
ENTRIES = (
    ("dp_sgd_practice", "finder", "dp_sgd"),
    ("dp_sgd", "finder", "dp_sgd"),
    ("dp_spider", "finder", "dp_spider"),
    ("spider_sosp", "finder", "spider_sosp"),
    ("dp_trust_region", "finder", "dp_trust_region"),
    ("dp_stochastic_trust_region", "finder", "dp_stochastic_trust_region"),
    ("goldstein_zero_order", "finder", "goldstein_zero_order"),
    ("goldstein_first_order", "finder", "goldstein_first_order"),
    ("net", "sampler", "net"),
    ("gibbs", "sampler", "gibbs"),
    ("quasar_sgd", "sampler", "quasar_sgd"),
    ("kl_spider", "sampler", "kl_spider"),
    ("warm_start", "pipeline", "warm_start"),
    ("jl_glm", "pipeline", "jl_glm"),
)
#: Finders whose steps are not projected: their privacy needs the constants on all of
#: ``R^d``, so they refuse a ``Ball``. They run on ``Unconstrained`` on the problems
#: whose declared constants hold on all of ``R^d`` (:data:`ON_RD`), and are recorded
#: as refusals on the others (the logistic and absolute losses' ranges grow with
#: ``||x||``).
UNPROJECTED = ("spider_sosp", "dp_trust_region", "dp_stochastic_trust_region")
#: Problems whose declared constants (G, M, rho, range) hold on all of ``R^d``.
ON_RD = ("welsch", "basins", "saddle")
#: True quasar-convexity constants (a convex risk is 1-quasar-convex): ``quasar_sgd``
#: gets this problem property; elsewhere it refuses (no constant to declare).
QUASAR = {"logistic": 1.0, "absolute": 1.0}
#: ``examples/mlp_digits.toml``'s options: the MLP's "default" DP-SGD (a model has
#: no theorem defaults: ``dpsample run`` requires these three).
MLP_DEFAULT = {"clip_norm": 1.0, "learning_rate": 1.0, "num_steps": 200}
MLP_N = 1438  # 1,797 digits less round(0.2 * 1797) held out
MLP_D = 2410  # 64 -> 32 -> 10

#: A grid: per problem, its (n, d) points and the epsilons crossed with them.
#: The default grid (issue 24's 2-hour size; see the spec's header for the sizing).
DEFAULT = {
    "seeds": 8,
    "epsilons": (0.25, 1.0, 4.0),
    "points": {
        "logistic": ((10_000, 10),),
        "welsch": ((10_000, 10),),
        "basins": ((1_000, 2),),
        "saddle": ((10_000, 10),),
        "absolute": ((10_000, 10),),
        "mlp": ((MLP_N, MLP_D),),
    },
    # extra (n, d) points at epsilon = 1 only: n = 1,000 everywhere (10,000 for the
    # two basins, whose core is at 1,000: its net sampler took over 150 s wall for
    # two seeds at n = 10,000 on the timing machine), n = 100,000 on the GLM,
    # d = 1 (welsch, basins), 5 (basins) and 100 (saddle)
    "extra": {
        "logistic": ((1_000, 10), (100_000, 10)),
        "welsch": ((1_000, 10), (10_000, 1)),
        "basins": ((10_000, 2), (1_000, 1), (1_000, 5)),
        "saddle": ((1_000, 10), (10_000, 100)),
        "absolute": ((1_000, 10),),
        "mlp": (),
    },
    "extra_epsilons": (1.0,),
    # the Goldstein finders (over 150 s wall for two seeds at n = 10,000, d = 10 on
    # the timing machine, smooth or not) run on the non-smooth problem at n = 1,000;
    # at n = 100,000 only the two DP-SGD entries run (DP-SPIDER's default took 385 s
    # a seed there in the first run of this grid, 2026-11-28: the theorem schedules
    # grow with n, and 8 seeds of each would not fit the 2-hour budget)
    # (the second-order finders and the previous default warm start at d = 100, and
    # that warm start on the saddle at n = 10,000: over 75 s a seed, likewise)
    "restrict": {
        label: {"max_n": 10_000}
        for label, _, _ in ENTRIES
        if label not in ("dp_sgd_practice", "dp_sgd")
    }
    | {
        label: {"max_n": 10_000, "max_d": 10}
        for label in ("spider_sosp", "dp_trust_region", "dp_stochastic_trust_region")
    }
    | {
        "warm_start": {"max_n": 10_000, "max_d": 10, "max_n_on": {"saddle": 1_000}},
        "goldstein_zero_order": {"problems": ("absolute",), "max_n": 1_000},
        "goldstein_first_order": {"problems": ("absolute",), "max_n": 1_000},
    },
}
#: The default rule's grid (``experiments/utility_default.toml``): the entries whose
#: code the default rule changed (issue 24 section 2), at every point of the
#: default grid but the MLP's (a ``[model]`` takes no pipeline): ``warm_start`` with
#: no options (the rule's choice), and ``dp_sgd`` on the non-smooth problem (its
#: default without a smoothness). Written to its own folder; the analysis's
#: ``--default`` option adds its ``warm_start`` cells as the entry ``default``.
RULE = {
    "seeds": DEFAULT["seeds"],
    "epsilons": DEFAULT["epsilons"],
    "points": {k: v for k, v in DEFAULT["points"].items() if k != "mlp"},
    "extra": {k: v for k, v in DEFAULT["extra"].items() if k != "mlp"},
    "extra_epsilons": DEFAULT["extra_epsilons"],
    "only": {"absolute": ("warm_start", "dp_sgd"), "*": ("warm_start",)},
}
#: The baselines' grid (``experiments/utility_baselines.toml``): the two DP-SGD
#: entries (the library's default and the practitioners' schedule) at every point of
#: the default grid, the MLP's included, with the default grid's cell keys (the same
#: configurations), so that the goal table (``--default``) can be re-measured against
#: current baselines without re-running every entry of the default grid.
BASELINES = {
    "seeds": DEFAULT["seeds"],
    "epsilons": DEFAULT["epsilons"],
    "points": DEFAULT["points"],
    "extra": DEFAULT["extra"],
    "extra_epsilons": DEFAULT["extra_epsilons"],
    "only": {"*": ("dp_sgd", "dp_sgd_practice")},
}
#: The cluster grid: the full cross product.
CLUSTER = {
    "seeds": 10,
    "epsilons": (0.25, 0.5, 1.0, 2.0, 4.0),
    "points": {
        name: tuple(
            (n, d) for n in (1_000, 10_000, 100_000) for d in (1, 2, 5, 10, 30, 100)
        )
        for name in PROBLEMS
        if name != "mlp"
    }
    | {"mlp": ((MLP_N, MLP_D),)},
    "extra": {},
    "extra_epsilons": (),
}
#: The smoke grid (CI size, 1 seed): on the two-bump problem the two DP-SGD entries,
#: a sampler, the pipeline, a refusal (``gibbs``) and an unprojected finder on
#: ``Unconstrained`` (``spider_sosp``); DP-SGD as practitioners run it on the others.
SMOKE = {
    "seeds": 1,
    "epsilons": (1.0,),
    "points": {name: ((1_000, 2),) for name in PROBLEMS if name != "mlp"}
    | {"mlp": ((MLP_N, MLP_D),)},
    "extra": {},
    "extra_epsilons": (),
    "only": {
        "basins": (
            "dp_sgd_practice",
            "dp_sgd",
            "net",
            "gibbs",
            "spider_sosp",
            "warm_start",
        ),
        "*": ("dp_sgd_practice",),
    },
}


# ------------------------------------------------------------------ problems
#: Base of the data seeds: every generated dataset is drawn from
#: ``jax.random.key(DATA_SEED)``; the seeds of a grid point vary the run's key only
#: (one dataset per (problem, n, d), shared by every entry and seed: the comparisons
#: are paired on it, and its reference optimum is computed once).
DATA_SEED = 1000


def _declared(name: str, d: int) -> dict[str, float]:
    """The constants a plan sees (declared, or what the library loss derives)."""
    r = {"radius": utility.radius(name, d)}
    if name == "logistic":  # logistic_nonconvex(reg = 0), feature_bound 1
        return {"lipschitz": 1.0, "smoothness": 0.25} | r
    if name == "welsch":  # welsch(scale = 1), feature_bound 1
        return {"lipschitz": math.exp(-0.5), "smoothness": 1.0} | r
    if name == "basins":
        return utility.basins_constants() | r
    if name == "saddle":
        return {
            "lipschitz": math.sqrt(d),
            "smoothness": 1.0,
            "hessian_lipschitz": 1.0,
            "loss_range": 2.0 * d,
            "loss_floor": -float(d),  # sum_j +-cos lies in [-d, d]
        } | r
    if name == "absolute":  # |y - <a, x>| in [0, 3 + R]: |y| <= 3, ||a|| <= 1
        b = 3.0 + r["radius"]
        return {"lipschitz": 1.0, "loss_range": b, "loss_floor": 0.0} | r
    raise ValueError(f"no declared constants for {name!r}")


def problem_config(name: str, n: int, d: int) -> dict[str, dict[str, Any]]:
    """The ``data``, ``loss`` (or ``model``) and ``domain`` sections of a problem.

    Args:
        name: One of :data:`PROBLEMS`.
        n: Training examples (the MLP's is fixed, :data:`MLP_N`).
        d: Dimension (the MLP's is fixed, :data:`MLP_D`).

    Returns:
        ``{section: table}``.

    Examples:
        >>> from experiments.problems.utility_grid import problem_config
        >>> problem_config("absolute", 1000, 2)["loss"]["lipschitz"]
        1.0
    """
    if name == "mlp":
        if (n, d) != (MLP_N, MLP_D):
            raise ValueError(f"the MLP problem is ({MLP_N}, {MLP_D}), not ({n}, {d})")
        frac, seed = utility.MLP_HOLDOUT
        return {
            "data": {
                "source": "sklearn",
                "name": "digits",
                "holdout": frac,
                "holdout_seed": seed,
            },
            "model": {"kind": "mlp", "hidden": [32], "activation": "tanh"},
            "domain": {"kind": "unconstrained"},
        }
    data = {
        "source": "module",
        "function": f"{MODULE}:make_{name}",
        "n": n,
        "d": d,
        "seed": DATA_SEED,
    }
    c = _declared(name, d)
    if name == "logistic":
        loss: dict[str, Any] = {"name": "logistic_nonconvex", "reg": 0.0}
    elif name == "welsch":
        loss = {"name": "welsch", "scale": 1.0}
    else:
        target = "cosine_saddle:loss" if name == "saddle" else f"utility:{name}"
        loss = {"name": f"experiments.problems.{target}"}
        for key in (
            "lipschitz",
            "smoothness",
            "hessian_lipschitz",
            "loss_range",
            "loss_floor",
        ):
            if key in c:
                loss[key] = c[key]
    return {
        "data": data,
        "loss": loss,
        "domain": {"kind": "ball", "radius": c["radius"]},
    }


def practice_options(name: str, n: int, d: int) -> dict[str, Any]:
    """DP-SGD as practitioners run it, from public quantities (module docstring).

    Args:
        name: The problem.
        n: Training examples.
        d: Dimension.

    Returns:
        The ``options`` of the ``dp_sgd_practice`` entry.

    Examples:
        >>> from experiments.problems.utility_grid import practice_options
        >>> o = practice_options("logistic", 10_000, 10)
        >>> o["batch_size"], o["num_steps"], o["learning_rate"], o["clip_norm"]
        (256, 391, 4.0, 1.0)
    """
    batch = min(256, max(1, n // 20))
    steps = math.ceil(EPOCHS * n / batch)
    out: dict[str, Any] = {
        "sampling": "poisson",
        "batch_size": batch,
        "num_steps": steps,
        "output": "last",
    }
    if name == "mlp":
        return out | {"clip_norm": 1.0, "learning_rate": 1.0}
    c = _declared(name, d)
    out["clip_norm"] = c["lipschitz"]
    if "smoothness" in c:
        out["learning_rate"] = 1.0 / c["smoothness"]
    else:
        out["learning_rate"] = 2.0 * c["radius"] / (c["lipschitz"] * math.sqrt(steps))
    return out


def entry_label(cfg: Mapping[str, Any]) -> str:
    """The entry of a cell's configuration (``dp_sgd_practice`` or the job's name).

    Args:
        cfg: A cell's configuration.

    Returns:
        The entry's label.

    Examples:
        >>> from experiments.problems.utility_grid import entry_label
        >>> entry_label({"job": {"name": "dp_sgd"}, "options": {"sampling": "poisson"}})
        'dp_sgd_practice'
        >>> entry_label({"job": {"name": "dp_sgd"}, "options": {}})
        'dp_sgd'
    """
    name = str(cfg["job"]["name"])
    if name == "dp_sgd" and "sampling" in (cfg.get("options") or {}):
        return "dp_sgd_practice"
    return name


def _entries(name: str) -> list[tuple[str, str, str]]:
    if name == "mlp":
        return [e for e in ENTRIES if e[2] == "dp_sgd"]
    return [e for e in ENTRIES if e[2] != "jl_glm" or name == "logistic"]


def _options(label: str, name: str, n: int, d: int) -> dict[str, Any]:
    if label == "dp_sgd_practice":
        return practice_options(name, n, d)
    if name == "mlp":
        return dict(MLP_DEFAULT)
    if label == "quasar_sgd" and name in QUASAR:
        return {"quasar_convexity": QUASAR[name]}
    return {}


def _sections(label: str, name: str, n: int, d: int) -> dict[str, dict[str, Any]]:
    sections = problem_config(name, n, d)
    if label in UNPROJECTED and name in ON_RD:
        sections["domain"] = {"kind": "unconstrained"}
    return sections


# ------------------------------------------------------------------ rendering
#: How each grid was sized (from the timed cells: docs/utility_benchmark.md), the
#: comment in each spec's header.
SIZING = {
    "default": """\
Sizing (re-timed 2026-11-28 after issue 24's DP-SGD lot; docs/utility_benchmark.md
# has the table): 2,168 cells, estimated 5,581 worker CPU-seconds, 0.78 h wall with
# --workers 2 on a quiet 2-core machine. It is a model, not a run: the one run of this
# grid (the shared machine at load average 8-13, unfinished) recorded 3.9x the
# model's per-seed CPU-seconds in wall time on the 962 cells it finished (a worker
# there had about 2/10 of a core: 5x), so at that load it would not fit.
# How: experiments/utility_timing.py ran every entry at each problem's core point
# (epsilon = 1; n = 10,000, d = 10; basins n = 1,000, d = 2; the MLP), seed 0 then
# seed 1 in one process (niced, one at a time): seed 0's CPU time is a grid point's
# first cell (compilation), seed 1's each further seed. Re-timed after the new lot:
# dp_sgd and warm_start at the core points, dp_sgd on the GLM at n = 100,000, and,
# with a 420 s limit, the entries the first timing left over its 150 s limit, where
# this grid runs them (saddle warm_start, the Goldstein finders: n = 1,000). A block
# costs, per epsilon, the first cell plus 7 further seeds, their per-seed part scaled
# from the timed cell nearest in n by (n / n_timed)^1.3 above it, linearly below, and
# by d / d_timed; a refusal costs 1 s a cell; no entry of this grid is over the limit
# (the former guess of 50 CPU-s a seed is gone). The estimate's command:
# python experiments/utility_timing.py --report
#   experiments/results/utility_timing/table_2026-11-28.log
#   experiments/results/utility_timing/retime_u24.log""",
    "baselines": """\
Sizing: the default grid's points, its two DP-SGD entries only (about 0.2-1 CPU-s
# a further seed, 8-17 s a point's first cell: utility_timing's table).""",
    "rule": """\
Sizing: the default grid's points (the MLP's but), two entries; the rule starts
# cold (DP-SGD's cost) but on the small-d points where the net runs.""",
    "cluster": """\
Sizing: 59,500 cells, about 3,200 worker CPU-hours by the default grid's model
# (dominated by n = 100,000 with d = 100; the Goldstein finders scaled up from their
# n = 1,000 cells, and charged 50 CPU-s a seed on the GLM, where they were over the
# first timing's limit: a rough guide): about 50 hours on 64 workers.""",
}

HEADER = """\
# The utility benchmark (issue 24, section 1): every registered algorithm and pipeline
# at its defaults, and DP-SGD as practitioners run it, side by side on six problems
# with different landscapes, paired by seed, at the same (epsilon, delta).
# Problems and measurements: experiments/problems/utility.py. Entries, grids and the
# practitioners' DP-SGD rule: experiments/problems/utility_grid.py, which WRITES this
# file (python -m experiments.problems.utility_grid); do not edit the tables by hand.
# Page: docs/utility_benchmark.md. Analysis: experiments/utility_analysis.py.
#
#   dpsample sweep experiments/utility.toml --workers 2           # the default grid
#   dpsample sweep experiments/utility.toml --smoke --workers 2   # smoke, 1 seed
#   dpsample sweep experiments/utility_cluster.toml --address tcp://HOST:8786
#   python experiments/utility_analysis.py experiments/results/utility
#
# A cell an entry refuses (its plan raises before any private computation) is a failed
# cell on disk (exit status 3); the analysis lists it as a refusal with its message.
# Add --skip-failed to a rerun to leave refusals alone.
#
# {sizing}

[experiment]
name = "{name}"
description = \"\"\"
Utility benchmark: excess empirical risk over a non-private multi-start optimum,
held-out risk, gradient norm, wall time and spent epsilon of every registered
algorithm and pipeline at its defaults and of DP-SGD as practitioners run it, on a
GLM, a robust regression with outliers, two basins of unequal depth, a strict saddle,
a non-smooth loss and a two-layer MLP; delta = 1e-6; seeds vary the run's key on one
dataset per (problem, n, d), so every comparison is paired by seed.
\"\"\"
seeds = {seeds}
seed_keys = ["job.seed"]
measure = ["experiments.problems.utility:measure"]
pythonpath = [".."]

[config.privacy]         # every table below sets job, data, loss or model, domain,
epsilon = 1.0            # options (whole sections) and privacy.epsilon
delta = 1e-6
"""


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return f'"{v}"'
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, Mapping):
        if not v:
            return "{}"
        return "{ " + ", ".join(f"{k} = {_value(x)}" for k, x in v.items()) + " }"
    return str(v)


def cells_of(grid: Mapping[str, Any]) -> list[tuple[str, str, int, int, tuple]]:
    """The (problem, entry, n, d, epsilons) blocks of a grid, in spec order.

    A grid's ``only`` (``{problem or "*": entries}``) keeps the listed entries, and
    its ``restrict`` (``{entry: {"problems": ..., "max_n": ..., "max_d": ...,
    "max_n_on": {problem: n}}}``) runs an entry only on those problems and sizes.

    Args:
        grid: :data:`DEFAULT`, :data:`CLUSTER` or :data:`SMOKE`.

    Returns:
        One tuple per ``[[grid]]`` table.
    """
    only = grid.get("only", {})
    restrict = grid.get("restrict", {})
    out = []
    for points, epsilons in (
        (grid["points"], grid["epsilons"]),
        (grid["extra"], grid["extra_epsilons"]),
    ):
        if not epsilons:
            continue
        for name in PROBLEMS:
            keep = only.get(name, only.get("*"))
            for n, d in points.get(name, ()):
                for label, _, _ in _entries(name):
                    rule = restrict.get(label, {})
                    if keep is not None and label not in keep:
                        continue
                    if name not in rule.get("problems", (name,)):
                        continue
                    if n > rule.get("max_n", n) or d > rule.get("max_d", d):
                        continue
                    if n > rule.get("max_n_on", {}).get(name, n):
                        continue
                    out.append((name, label, n, d, tuple(epsilons)))
    return out


def _tables(grid: Mapping[str, Any], prefix: str) -> str:
    """One table per (problem, entry, n, d); whole sections, crossed with epsilon."""
    kinds = {label: (kind, job) for label, kind, job in ENTRIES}
    blocks = []
    for name, label, n, d, epsilons in cells_of(grid):
        kind, job = kinds[label]
        lines = [f"[[{prefix}]]  # {name}, {label}, n = {n}, d = {d}"]
        lines.append(f'"job" = [{_value({"kind": kind, "name": job})}]')
        for section, table in _sections(label, name, n, d).items():
            lines.append(f'"{section}" = [{_value(table)}]')
        lines.append(f'"options" = [{_value(_options(label, name, n, d))}]')
        lines.append(f'"privacy.epsilon" = {_value(list(epsilons))}')
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"


def render(which: str) -> str:
    """The text of ``experiments/utility.toml`` (``"default"``) or the cluster spec.

    Args:
        which: ``"default"``, ``"cluster"``, ``"rule"`` or ``"baselines"``.

    Returns:
        The TOML text: :data:`HEADER` (the comments, ``[experiment]``, the base
        ``[config]``), then the generated ``[[grid]]`` tables (and, for the default
        spec, ``[smoke]`` with its ``[[smoke.grid]]`` tables).
    """
    if which not in SPECS:
        raise ValueError(f"which is one of {tuple(SPECS)}, not {which!r}")
    grid = {
        "default": DEFAULT,
        "cluster": CLUSTER,
        "rule": RULE,
        "baselines": BASELINES,
    }[which]
    name = SPECS[which].removesuffix(".toml")
    head = HEADER.format(name=name, seeds=grid["seeds"], sizing=SIZING[which])
    body = _tables(grid, "grid")
    if which == "default":
        body += f"\n[smoke]\nseeds = {SMOKE['seeds']}\n\n" + _tables(
            SMOKE, "smoke.grid"
        )
    return head + "\n" + body


#: The spec files this module writes, by grid.
SPECS = {
    "default": "utility.toml",
    "cluster": "utility_cluster.toml",
    "rule": "utility_default.toml",
    "baselines": "utility_baselines.toml",
}


def spec_path(which: str) -> Path:
    """Where a grid's spec file lives (``experiments/utility*.toml``)."""
    return Path(__file__).resolve().parents[1] / SPECS[which]


def main(argv: Sequence[str] = ()) -> int:
    """Write both spec files (or, with ``--check``, fail when they differ)."""
    check = "--check" in argv
    stale = []
    for which in SPECS:
        path, text = spec_path(which), render(which)
        if check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(str(path))
        else:
            path.write_text(text, encoding="utf-8")
    for path in stale:
        print(f"{path} is not what utility_grid.py writes", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
