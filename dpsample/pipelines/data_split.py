"""How a warm-start pipeline shares the data between its two stages.

:class:`~dpsample.pipelines.WarmStart` composes a sampler (stage A) and a finder
(stage B). What differs between seed 003's Algorithm 2 (ERM) and Algorithm 4
(population) is only how the ``n`` examples reach the stages, and what that costs
the public bound ``psi``. That difference is an object here, not a branch of the
pipeline: a :class:`DataSplit` has

* ``specs``: the stages' public problem specs (their ``n``);
* ``sampler_failure_prob``: the share of ``zeta`` the sampler's ``psi`` may fail;
* ``widen``: how ``psi`` and the finder's initial gap grow (a public bound);
* ``params``: the parameters it adds to the pipeline's plan;
* ``data``: the stages' data, from a public key (never from the data's values);
* ``parallel_epsilon``: the parallel composition, where the stages read disjoint
  data (reported beside the sequential guarantee, which is the one returned).

:class:`SharedData` (``"erm"``) gives both stages all ``n`` examples;
:class:`DisjointHalves` (``"population"``) splits them by a public random
permutation. :data:`VARIANTS` maps the pipeline's ``variant`` option to them.

Examples:
    >>> import jax.numpy as jnp
    >>> from dpsample import Ball, Problem
    >>> from dpsample.pipelines.data_split import VARIANTS
    >>> spec = Problem(lambda x, z: jnp.sum((x - z) ** 2), jnp.zeros((101, 2)),
    ...                Ball(1.0, dim=2), lipschitz=4.0).spec
    >>> a, b = VARIANTS["population"].specs(spec, Ball(1.0, dim=2))
    >>> a.n, b.n, VARIANTS["erm"].specs(spec, Ball(1.0, dim=2))[1].n
    (51, 50, 101)
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import jax
import numpy as np

from dpsample import bounds
from dpsample._src import precision
from dpsample.base import PublicRecord
from dpsample.domains import Ball
from dpsample.plan import Param, Plan
from dpsample.problem import ProblemSpec
from dpsample.types import PRNGKey

__all__ = [
    "VARIANTS",
    "DataSplit",
    "DisjointHalves",
    "HalfDeviations",
    "PsiWidening",
    "SharedData",
]


@dataclasses.dataclass(frozen=True, eq=False)
class HalfDeviations(PublicRecord):
    """The uniform deviation bounds of the two halves (a mapping of them too).

    Attributes:
        sampler_half: ``U(|D_1|)``, for the sampler's half.
        finder_half: ``U(|D_2|)``, for the finder's half.
    """

    sampler_half: bounds.UniformDeviationBound
    finder_half: bounds.UniformDeviationBound


@dataclasses.dataclass(frozen=True)
class PsiWidening:
    """``psi`` after a data split: public, from declared constants and sizes.

    Attributes:
        psi: The bound on the warm start's excess risk (the pipeline's ``psi``).
        finder_initial_gap: The finder's public initial gap.
        failure_prob: The failure probability of both.
        deviation: The uniform deviation bounds used, by half (``None``: none).
    """

    psi: float
    finder_initial_gap: float
    failure_prob: float
    deviation: HalfDeviations | None = None


class DataSplit:
    """How the two stages of a warm start read the data (the ERM default).

    Subclasses override what differs; every method reads public numbers only.
    """

    name: ClassVar[str] = "erm"
    #: Seed 003's algorithm this split makes of the pipeline.
    algorithm: ClassVar[str] = "Algorithm 2 (ERM)"
    #: Whether the sampler's own net is the net of the whole data (diagnostics).
    shares_the_net: ClassVar[bool] = True

    def specs(self, spec: ProblemSpec, ball: Ball) -> tuple[ProblemSpec, ProblemSpec]:
        """The sampler's spec (on the ball ``K``) and the finder's spec."""
        return spec.replace(domain=ball), spec

    def sampler_failure_prob(self, zeta: float) -> float:
        """The failure probability the sampler's ``psi`` is planned at."""
        return zeta

    def widen(
        self,
        psi: float,
        failure_prob: float,
        *,
        spec: ProblemSpec,
        ball: Ball,
        zeta: float,
        lipschitz: float,
    ) -> PsiWidening:
        """``psi`` and the finder's gap; unchanged when both stages read all data."""
        del spec, ball, zeta, lipschitz
        return PsiWidening(psi, psi, failure_prob)

    def params(self, spec_a: ProblemSpec, spec_b: ProblemSpec) -> dict[str, Param]:
        """Parameters the split adds to the pipeline's plan."""
        del spec_a, spec_b
        return {}

    def data(self, rng_key: PRNGKey, plan: Plan, data: Any) -> tuple[Any, Any]:
        """The stages' data (``rng_key`` is public; the values are not read)."""
        del rng_key, plan
        return data, data

    def parallel_epsilon(self, epsilon_a: float, epsilon_b: float) -> float | None:
        """The parallel composition's epsilon where the stages read disjoint data."""
        del epsilon_a, epsilon_b
        return None


class SharedData(DataSplit):
    """Algorithm 2 (ERM): both stages read all ``n`` examples.

    Examples:
        >>> from dpsample.pipelines.data_split import SharedData
        >>> SharedData().parallel_epsilon(1.0, 2.0) is None
        True
    """


class DisjointHalves(DataSplit):
    r"""Algorithm 4 (population): a public random permutation halves the data.

    Stage A reads ``D_1`` (``ceil(n/2)`` examples), stage B ``D_2`` (the rest).
    ``psi`` is planned at ``zeta/2`` and widened by twice the uniform deviation of
    each half (:func:`~dpsample.bounds.uniform_deviation_bound`, at ``zeta/4``
    each): ``psi = psi_A + 2 U(|D_1|)`` bounds the population excess risk of
    ``x_0`` and the finder's gap is ``psi + 2 U(|D_2|)``. A declared ``psi`` is
    the caller's and is not widened. The sequential composition is the returned
    guarantee (valid for any neighbours); the parallel one, ``max(eps_A, eps_B)``,
    is reported (a replaced example lies in one half).

    Examples:
        >>> from dpsample.pipelines.data_split import DisjointHalves
        >>> DisjointHalves().parallel_epsilon(1.0, 2.0)
        2.0
    """

    name: ClassVar[str] = "population"
    algorithm: ClassVar[str] = "Algorithm 4 (population)"
    shares_the_net: ClassVar[bool] = False

    def specs(self, spec: ProblemSpec, ball: Ball) -> tuple[ProblemSpec, ProblemSpec]:
        """``ceil(n/2)`` examples for the sampler (on ``K``); the finder the rest."""
        if spec.n < 4:
            raise ValueError(f"The population variant needs n >= 4, got n={spec.n}")
        n_a = (spec.n + 1) // 2
        return spec.replace(domain=ball, n=n_a), spec.replace(n=spec.n - n_a)

    def sampler_failure_prob(self, zeta: float) -> float:
        """Half of ``zeta``: the deviation bounds take a quarter each."""
        return zeta / 2.0

    def widen(
        self,
        psi: float,
        failure_prob: float,
        *,
        spec: ProblemSpec,
        ball: Ball,
        zeta: float,
        lipschitz: float,
    ) -> PsiWidening:
        """``psi + 2 U(|D_1|)``, and ``+ 2 U(|D_2|)`` more for the finder's gap."""
        n_a = (spec.n + 1) // 2
        dev_a, dev_b = (
            bounds.uniform_deviation_bound(
                lipschitz=lipschitz,
                radius=ball.radius,
                dim=spec.dim,
                n=half,
                failure_prob=zeta / 4.0,
                loss_range=spec.loss_range,
            )
            for half in (n_a, spec.n - n_a)
        )
        psi = psi + 2.0 * dev_a.bound
        return PsiWidening(
            psi=psi,
            finder_initial_gap=psi + 2.0 * dev_b.bound,
            failure_prob=failure_prob + dev_a.failure_prob + dev_b.failure_prob,
            deviation=HalfDeviations(sampler_half=dev_a, finder_half=dev_b),
        )

    def params(self, spec_a: ProblemSpec, spec_b: ProblemSpec) -> dict[str, Param]:
        """``split_sizes``: ``(|D_1|, |D_2|)``."""
        return {
            "split_sizes": Param((spec_a.n, spec_b.n), "derived", "ceil(n/2), rest")
        }

    def data(self, rng_key: PRNGKey, plan: Plan, data: Any) -> tuple[Any, Any]:
        """The halves, by a permutation drawn from the public key alone."""
        n = plan.spec.n
        order = np.asarray(jax.random.permutation(rng_key, n))
        n_a = plan["split_sizes"][0]
        return (
            jax.tree.map(lambda leaf: leaf[order[:n_a]], data),
            jax.tree.map(lambda leaf: leaf[order[n_a:]], data),
        )

    def parallel_epsilon(self, epsilon_a: float, epsilon_b: float) -> float | None:
        """``max(eps_A, eps_B)``: a replaced example lies in one half."""
        return max(epsilon_a, epsilon_b)


VARIANTS: dict[str, DataSplit] = {"erm": SharedData(), "population": DisjointHalves()}
"""The pipeline's ``variant`` option: ``"erm"`` (Algorithm 2, both stages on all
``n``) or ``"population"`` (Algorithm 4 with disjoint halves)."""


precision.scope_public(globals())
