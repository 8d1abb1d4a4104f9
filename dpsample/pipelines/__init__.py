"""Pipelines: private algorithms composed under one budget (seed 003).

:class:`WarmStart` (registry ``"warm_start"``) composes two algorithm objects: a
sampler whose plan carries a public bound ``psi`` on its output's excess risk, and a
finder started there with ``initial_gap = psi`` (seed 003 Algorithms 2 and 4);
:func:`warm_start` is its convenience, :func:`choose_sampler` the public cost rule
of its default sampler and :func:`should_warm_start` the dispatcher of spec 003
section 2.9 (``dpsample.pipelines.warm_start`` is the module
:mod:`dpsample.pipelines.warm_start`, callable as its function ``warm_start``). How
the stages share the data is an object too (:mod:`.data_split`: :class:`SharedData`
for Algorithm 2, :class:`DisjointHalves` for Algorithm 4).
:class:`QuasarSGD` (``"quasar_sgd"``, seed 003 Algorithm 3) is a sampler.
:class:`KLSpider` (``"kl_spider"``, seed 003 Lemma 6.2: Menart et al.'s KL-Spider) is
the warm start for KL* losses.
:class:`JLMethod` (``"jl_glm"``, :func:`jl_glm`) runs an inner algorithm on a public
JL projection of a GLM's features (seed 003 Lemma 8.1, Corollary 8.2).
"""

from typing import TYPE_CHECKING

from dpsample.pipelines.data_split import DataSplit, DisjointHalves, SharedData
from dpsample.pipelines.jl import JLMethod, JLMethodInfo, jl_glm
from dpsample.pipelines.kl_spider import KLSpider, kl_spider
from dpsample.pipelines.quasar import QuasarSGD, dp_sgd_quasar
from dpsample.pipelines.warm_start import (
    DEFAULT_MAX_EVALUATIONS,
    WarmStart,
    WarmStartBound,
    WarmStartInfo,
    choose_sampler,
    net_warm_start_bound,
    should_warm_start,
    theorem_3_2_stationarity_bound,
)

if TYPE_CHECKING:  # type checkers see the function (calls are typed)
    from dpsample.pipelines.warm_start import warm_start
else:  # the module, callable as its function (issue 28: the name is both)
    from dpsample.pipelines import warm_start

__all__ = [
    "DEFAULT_MAX_EVALUATIONS",
    "DataSplit",
    "DisjointHalves",
    "JLMethod",
    "JLMethodInfo",
    "KLSpider",
    "QuasarSGD",
    "SharedData",
    "WarmStart",
    "WarmStartBound",
    "WarmStartInfo",
    "choose_sampler",
    "dp_sgd_quasar",
    "jl_glm",
    "kl_spider",
    "net_warm_start_bound",
    "should_warm_start",
    "theorem_3_2_stationarity_bound",
    "warm_start",
]
