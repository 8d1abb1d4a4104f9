"""The algorithm contract: plan in public, run in private.

Every private algorithm of dpsample is a :class:`PrivateAlgorithm` with one shape,
learnt once (like Optax's ``GradientTransformation(init, update)`` or BlackJAX's
``init / build_kernel``)::

    algorithm = DPSGD(clip_norm=1.0)                # options bound to the object
    plan = algorithm.plan(spec, Budget(1.0, 1e-5))  # host, public inputs only
    print(plan)                                     # sources, guarantee, cost
    result = algorithm.run(rng_key, plan, data)     # private, jitted
    result.value, result.privacy, result.info       # typed info

* ``plan(spec, budget, **options)`` sees only public things: the
  :class:`~dpsample.problem.ProblemSpec` (n, d, the domain, declared constants, the
  relation, the shapes of one example), the :class:`~dpsample.plan.Budget` and the
  options (those given here override those bound at construction). It validates
  every input, resolves every parameter with its source, calibrates the noise with
  the accountant, and returns a frozen :class:`~dpsample.plan.Plan` with the
  guarantee and the cost. Bad input raises here, before any private computation.
* ``run(rng_key, plan, data)`` checks that ``data`` matches the plan's spec (shapes
  and ``n`` are public), then does the private work and returns
  :class:`~dpsample.privacy.PrivateResult` whose ``privacy`` is the plan's guarantee
  and whose ``info`` is the algorithm's typed :class:`AlgorithmInfo`: public facts,
  with non-private diagnostics (if any) in a separately typed, labelled part.
* The plain functions users call (``dp_sgd(...)``, ``gibbs(...)``, ...) are
  :meth:`PrivateAlgorithm.solve` with the options as keywords: thin conveniences
  with the same results for the same keys.

Both phases run inside :func:`dpsample._src.precision.float64` (privacy-critical
numerics in float64, without changing the caller's global JAX configuration).
"""

from __future__ import annotations

import abc
import dataclasses
import inspect
import math
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

from dpsample._src import precision, validation
from dpsample.errors import PlanRefusal, Search
from dpsample.options import Options
from dpsample.plan import Budget, Plan
from dpsample.privacy.calibration import MAX_EPSILON
from dpsample.privacy.report import ReportContext, StageRecord, within_budget
from dpsample.privacy.result import NON_PRIVATE_KEY, PrivateResult
from dpsample.problem import CONSTANTS, Problem, ProblemSpec, check_problem

__all__ = [
    "KINDS",
    "MAX_COUNTS",
    "MAX_EPSILON",
    "AlgorithmInfo",
    "check_public_sizes",
    "optional",
    "NonPrivateDiagnostics",
    "PrivateAlgorithm",
    "PublicRecord",
]

#: Kinds of private algorithm, as the registry and ``dpsample list`` name them.
KINDS = ("sampler", "finder", "pipeline")

#: The largest value a plan accepts for each public count option (issue 25,
#: docs/privacy.md "Extreme settings"): the host allocates or loops in proportion
#: to these (schedules, accountant compositions, candidate lists, chunks), so a
#: larger value is refused with a ``ValueError`` before anything is allocated.
MAX_COUNTS: dict[str, int] = {
    "num_steps": 10**5,
    "num_iters": 10**6,
    "num_rounds": 10**4,
    "num_runs": 10**4,
    "max_o1_calls": 10**6,
    "num_directions": 10**6,
    "window": 10**6,
    "period": 10**6,
    "phase_length": 10**6,
    "num_trials": 10**6,
    "num_levels": 10**6,
    "max_steps": 10**7,
    "max_proximal_steps": 10**8,
    "chunk_size": 10**7,
}


def check_public_sizes(
    name: str,
    budget: Budget,
    options: Mapping[str, Any],
    *,
    max_epsilon: float = MAX_EPSILON,
    max_counts: Mapping[str, int] | None = None,
) -> None:
    """Refuse an epsilon above ``max_epsilon`` or a count above its cap.

    ``max_epsilon`` is :data:`MAX_EPSILON` unless the algorithm sets its own
    (:attr:`PrivateAlgorithm.max_epsilon`: the net's exponential mechanism, whose
    plan does no calibration, accepts any epsilon); ``max_counts`` lowers caps
    of :data:`MAX_COUNTS` for one algorithm (:attr:`PrivateAlgorithm.max_counts`).

    Called by :meth:`PrivateAlgorithm.plan` on the merged options before the
    algorithm's own plan runs (public inputs only, nothing allocated).

    Raises:
        ValueError: Naming the option and the largest value accepted.

    Examples:
        >>> from dpsample import Budget
        >>> from dpsample.base import check_public_sizes
        >>> check_public_sizes("dp_sgd", Budget(1.0, 1e-5), {"num_steps": 100})
        >>> try:
        ...     check_public_sizes("dp_sgd", Budget(1.0, 1e-5), {"num_steps": 10**7})
        ... except ValueError as err:
        ...     print(str(err).split(" (")[0])
        dp_sgd: num_steps=10000000 is above the largest accepted, 100000
    """
    if budget.epsilon > max_epsilon:
        raise ValueError(
            f"{name}: epsilon={budget.epsilon:g} is above the largest accepted, "
            f'{max_epsilon:g} (docs/privacy.md "Extreme settings": the noise '
            "there is negligible; the calibrators and accountants are not built "
            "for it)"
        )
    for option, cap in {**MAX_COUNTS, **(max_counts or {})}.items():
        value = options.get(option)
        if (
            value is not None
            and not isinstance(value, bool)
            and isinstance(value, (int, float))
            and value > cap
        ):
            raise ValueError(
                f"{name}: {option}={value!r} is above the largest accepted, {cap} "
                '(docs/privacy.md "Extreme settings")'
            )


def optional() -> Any:
    """A dataclass field of an :class:`AlgorithmInfo` that may be absent (``None``).

    An optional field whose value is ``None`` does not appear in the info's mapping
    view (``"iterates" in info`` is ``False`` when no iterates were asked for).
    """
    return dataclasses.field(default=None, metadata={"optional": True})


class PublicRecord(Mapping[str, Any]):
    """Base of the typed records of public numbers inside an info (schedules, noise).

    Subclasses are frozen dataclasses declared with ``eq=False``, with documented,
    typed fields: a run's schedule or calibrated noise, functions of the plan only.
    A record is also a read-only mapping of its fields (``record["num_iters"]`` is
    ``record.num_iters``; an :func:`optional` field that is ``None`` is left out), so
    it compares equal to the dict of the same items and reports walk it like one.

    Examples:
        >>> import dataclasses
        >>> from dpsample.base import PublicRecord, optional
        >>> @dataclasses.dataclass(frozen=True, eq=False)
        ... class Noise(PublicRecord):
        ...     sigma: float
        ...     sigma2: float | None = optional()
        >>> Noise(0.5)["sigma"], dict(Noise(0.5)), Noise(0.5) == {"sigma": 0.5}
        (0.5, {'sigma': 0.5}, True)
    """

    def _names(self) -> list[str]:
        return [
            f.name
            for f in dataclasses.fields(self)  # type: ignore[arg-type]
            if not (f.metadata.get("optional") and getattr(self, f.name) is None)
        ]

    def __getitem__(self, name: str) -> Any:
        if name not in self._names():
            raise KeyError(name)
        return getattr(self, name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())

    def to_dict(self) -> dict[str, Any]:
        """The fields present, as a dict."""
        return {k: getattr(self, k) for k in self._names()}


@dataclasses.dataclass(frozen=True)
class NonPrivateDiagnostics:
    """Base of the non-private part of an algorithm's info.

    Values here are computed from the private data and are **not** covered by the
    guarantee: for checking only, never to be released. Reports put them under the
    one labelled key :data:`dpsample.privacy.result.NON_PRIVATE_KEY`.
    """

    def to_dict(self) -> dict[str, Any]:
        """The fields as a dict."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


@dataclasses.dataclass(frozen=True)
class AlgorithmInfo(Mapping[str, Any]):
    """Base of every algorithm's typed ``info``: public facts of a run.

    Subclasses are frozen dataclasses with documented fields. Every field is public
    (a function of the plan and of released values only) except ``diagnostics``,
    which holds a :class:`NonPrivateDiagnostics` (or ``None``). The info is also a
    read-only mapping of its public fields (``info["num_steps"]`` is
    ``info.num_steps``) so reports can walk it.
    """

    def _public_names(self) -> list[str]:
        return [
            f.name
            for f in dataclasses.fields(self)
            if f.name != "diagnostics"
            and not (f.metadata.get("optional") and getattr(self, f.name) is None)
        ]

    def __getitem__(self, name: str) -> Any:
        if name == NON_PRIVATE_KEY:
            diag = getattr(self, "diagnostics", None)
            if diag is None:
                raise KeyError(name)
            return diag.to_dict()
        if name not in self._public_names():
            raise KeyError(name)
        return getattr(self, name)

    def __iter__(self) -> Iterator[str]:
        names = self._public_names()
        if getattr(self, "diagnostics", None) is not None:
            names.append(NON_PRIVATE_KEY)
        return iter(names)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def public(self) -> dict[str, Any]:
        """The public fields as a dict (no diagnostics)."""
        return {k: getattr(self, k) for k in self._public_names()}

    def to_report(self) -> dict[str, Any]:
        """Public fields, plus the diagnostics under the labelled non-private key."""
        out = self.public()
        diag = getattr(self, "diagnostics", None)
        if diag is not None:
            out[NON_PRIVATE_KEY] = diag.to_dict()
        return out


def _check_within_budget(name: str, plan: Plan, budget: Budget) -> None:
    """Refuse a plan whose guarantee exceeds the budget (the contract's last check).

    Every algorithm calibrates to its budget; this catches what calibration cannot
    resolve, e.g. an epsilon below the resolution of the accountant that composes
    the stages (a PLD's discretisation adds about ``1e-4`` to a composed epsilon),
    so that no plan that would overspend reaches a run.
    """
    spent = plan.guarantee.epsilon(budget.delta)
    if not within_budget(spent, budget.epsilon):
        raise PlanRefusal(
            f"{name} cannot keep epsilon={budget.epsilon!r} at delta={budget.delta!r}: "
            f"its plan's guarantee is epsilon={spent:.6g} at that delta, over the "
            "budget",
            why="Calibration cannot reach so small a budget (e.g. one below the "
            "resolution of the accountant that composes the stages); a larger "
            "epsilon or delta plans",
        )


def _data_of(data: Any, plan: Plan) -> Any:
    """The data to run on: ``data`` itself, or a planned problem's data."""
    if not isinstance(data, Problem):
        return data
    spec = plan.spec
    same = (
        data.loss_fn is spec.loss_fn
        and data.domain == spec.domain
        and all(getattr(data, c) == getattr(spec, c) for c in CONSTANTS)
    )
    if not same:
        raise ValueError(
            "this Problem differs from the spec the plan was made for (loss, domain "
            "or declared constants): plan its own spec (problem.spec), or pass only "
            "the data"
        )
    return data.data


def _with_report_context(plan: Plan) -> Plan:
    """The plan with its budget and stages attached to its guarantee's report.

    Only where the guarantee has no context yet: a pipeline whose guarantee is
    its stage's own (the JL method's inner algorithm) keeps that stage's, and
    the plan keeps the very guarantee object it was given.
    """
    g = plan.guarantee
    if getattr(g, "context", "absent") is not None:
        return plan
    stages = tuple(
        StageRecord(name, p.algorithm, p.guarantee, p.budget.epsilon, p.budget.delta)
        for name, p in plan.stages
    )
    context = ReportContext(
        plan.algorithm, plan.budget.epsilon, plan.budget.delta, stages
    )
    return plan.replace(guarantee=g.with_context(context))


class PrivateAlgorithm(abc.ABC):
    """A private algorithm: ``plan`` in public, ``run`` in private.

    Subclasses set the class attributes below (the registry reads them) and
    implement :meth:`_plan` and :meth:`_run`. The options are declared once, as an
    :class:`~dpsample.options.Options` dataclass named by ``options_type`` (its
    fields' names, types, defaults and docs); an algorithm without one declares
    them as the keyword-only parameters of :meth:`_plan`.

    Attributes:
        name: The registry name (``"dp_sgd"``).
        kind: One of :data:`KINDS`.
        seed: The seed paper (``"002"``) the algorithm implements.
        theorem: The theorem(s) behind the schedule and the guarantee.
        guarantee_type: The kind of guarantee and how it is accounted.
        summary: One line for ``dpsample list``.
        options_type: The options' declaration (``None``: :meth:`_plan`'s
            keyword-only parameters).

    Args:
        **options: Options bound to this object; :meth:`plan` keywords override
            them. Unknown names raise ``TypeError`` here.
    """

    name: ClassVar[str] = ""
    kind: ClassVar[str] = ""
    seed: ClassVar[str] = ""
    theorem: ClassVar[str] = ""
    guarantee_type: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    #: The largest budget epsilon :meth:`plan` accepts (:func:`check_public_sizes`).
    max_epsilon: ClassVar[float] = MAX_EPSILON
    #: Caps of public counts lower than :data:`MAX_COUNTS` for this algorithm.
    max_counts: ClassVar[Mapping[str, int]] = {}
    options_type: ClassVar[type[Options] | None] = None

    def __init__(self, **options: Any) -> None:
        self._check_option_names(options)
        self.options: dict[str, Any] = dict(options)

    # ---------------------------------------------------------------- options
    @classmethod
    def option_parameters(cls) -> dict[str, inspect.Parameter]:
        """The plan options: the declaration's, or :meth:`_plan`'s keyword-only ones."""
        if cls.options_type is not None:
            return cls.options_type.parameters()
        sig = inspect.signature(cls._plan)
        return {
            name: p
            for name, p in sig.parameters.items()
            if p.kind is inspect.Parameter.KEYWORD_ONLY
        }

    @classmethod
    def _check_option_names(cls, options: Mapping[str, Any]) -> None:
        valid = cls.option_parameters()
        unknown = sorted(set(options) - set(valid))
        if unknown:
            raise TypeError(
                f"{cls.name or cls.__name__} has no option(s) {unknown}; valid "
                f"options: {', '.join(sorted(valid))}"
            )

    def with_options(self, **options: Any) -> PrivateAlgorithm:
        """A copy of this algorithm with more options bound."""
        return type(self)(**{**self.options, **options})

    def __repr__(self) -> str:
        opts = ", ".join(f"{k}={v!r}" for k, v in self.options.items())
        return f"{type(self).__name__}({opts})"

    # ---------------------------------------------------------------- contract
    def plan(self, spec: Any, budget: Budget, **options: Any) -> Plan:
        """Plan a run in public: parameters, guarantee and cost (no data).

        Args:
            spec: The public :class:`~dpsample.problem.ProblemSpec` (a
                :class:`~dpsample.problem.Problem` is accepted and reduced to its
                ``spec``: its data are not read).
            budget: The :class:`~dpsample.plan.Budget`.
            **options: Options of this algorithm (override the bound ones).

        Returns:
            The frozen :class:`~dpsample.plan.Plan`.

        Raises:
            TypeError, ValueError, MissingConstantError: On bad input, before any
                private computation.
        """
        if isinstance(spec, Problem):
            spec = spec.spec
        if not isinstance(spec, ProblemSpec):
            raise TypeError(f"Expected a ProblemSpec, got {type(spec).__name__}")
        if not isinstance(budget, Budget):
            raise TypeError(f"Expected a Budget, got {type(budget).__name__}")
        self._check_option_names(options)
        merged = {**self.options, **options}
        check_public_sizes(
            self.name,
            budget,
            merged,
            max_epsilon=self.max_epsilon,
            max_counts=self.max_counts,
        )
        with precision.float64():
            try:
                plan = self._plan(spec, budget, **merged)
            except PlanRefusal as refusal:
                # Searched once, where the option is the algorithm's own: a stage's
                # refusal re-raised by a pipeline arrives searched already.
                if refusal.search is None or refusal.fix or refusal.none_works:
                    raise
                raise _searched(self, spec, budget, merged, refusal) from None
        if not isinstance(plan, Plan) or plan.algorithm != self.name:
            raise TypeError(f"internal error: {self.name}._plan returned {plan!r}")
        _check_within_budget(self.name, plan, budget)
        return _with_report_context(plan)

    def run(self, rng_key: Any, plan: Plan, data: Any) -> PrivateResult:
        """Run a plan on private data.

        Args:
            rng_key: A JAX PRNG key (split internally, never reused).
            plan: A plan made by this algorithm's :meth:`plan`.
            data: The private data: a pytree whose leaves have leading axis
                ``plan.spec.n`` and whose examples have the spec's shapes; or the
                :class:`~dpsample.problem.Problem` whose spec was planned (its data
                are used; a problem with another loss, domain or declared
                constants is refused).

        Returns:
            ``PrivateResult(value, privacy, info)`` with ``privacy`` the plan's
            guarantee and ``info`` this algorithm's typed info.

        Raises:
            TypeError, ValueError: A bad key, a plan of another algorithm, or data
                whose public shape does not match the plan (checked before any
                private computation). Nothing data-dependent is raised later.
        """
        if not isinstance(plan, Plan):
            raise TypeError(f"Expected a Plan, got {type(plan).__name__}")
        if plan.algorithm != self.name:
            raise ValueError(
                f"this plan is for {plan.algorithm!r}, not {self.name!r}: run it with "
                "the algorithm that made it"
            )
        with precision.float64():
            rng_key = validation.check_key(rng_key)
            problem = plan.spec.with_data(_data_of(data, plan))
            return self._run(rng_key, plan, problem)

    def solve(
        self,
        rng_key: Any,
        problem: Any,
        *,
        epsilon: float,
        delta: float,
        max_evaluations: int | None = None,
        **options: Any,
    ) -> PrivateResult:
        """``plan`` then ``run`` in one call (what the convenience functions do).

        Args:
            rng_key: A JAX PRNG key.
            problem: A :class:`~dpsample.problem.Problem` (its spec is planned, its
                data run).
            epsilon: Target epsilon.
            delta: Target delta.
            max_evaluations: Optional compute cap (see :class:`~dpsample.plan.Budget`).
            **options: Options of this algorithm.

        Returns:
            The :class:`~dpsample.privacy.PrivateResult`.
        """
        validation.check_key(rng_key)

        problem = check_problem(problem)
        plan = self.plan(
            problem.spec, Budget(epsilon, delta, max_evaluations), **options
        )
        with precision.float64():
            return self._run(rng_key, plan, problem)

    # ---------------------------------------------------------------- to implement
    @abc.abstractmethod
    def _plan(self, spec: Any, budget: Budget, *args: Any, **options: Any) -> Plan:
        """Resolve the run in public (keyword-only options).

        Subclasses declare their options as keyword-only parameters with
        annotations and defaults (``*, num_steps: int | None = None, ...``); the
        ``*args, **options`` here let a type checker accept any such override.
        """

    @abc.abstractmethod
    def _run(self, rng_key: Any, plan: Plan, problem: Any) -> PrivateResult:
        """The private work, on a problem whose data match the plan's spec."""


def _plan_summary(plan: Plan) -> str:
    """What a plan found by a refusal's search gives (public, for the message)."""
    parts = [f"{plan.cost.evaluations:,} per-example evaluations"]
    ws = plan.warm_start
    psi = getattr(ws, "psi", None)
    if psi is not None:
        rng = plan.spec.loss_range
        text = f"warm-start bound psi = {psi:.3g}"
        if rng is not None:
            text += f" against loss_range {rng:.3g}"
            if psi >= rng:
                text += ": no better than a cold start"
        parts.append(text)
    return ", ".join(parts)


def _search_values(search: Search) -> Iterator[float]:
    value = float(search.start)
    for _ in range(search.max_tries):
        yield value
        value = (
            value * search.factor if search.direction == "up" else value / search.factor
        )


def _as_option(search: Search, value: float) -> Any:
    """``value`` as offered: 3 significant digits, rounded further along the search."""
    up = search.direction == "up"
    if search.integer:
        return math.ceil(value) if up else max(1, math.floor(value))
    if not (math.isfinite(value) and value > 0):
        return value
    exp = math.floor(math.log10(value)) - 2
    digits = value / 10.0**exp
    digits = math.ceil(digits - 1e-9) if up else math.floor(digits + 1e-9)
    return float(f"{max(digits, 1)}e{exp}")


def _searched(
    algorithm: PrivateAlgorithm,
    spec: Any,
    budget: Budget,
    options: Mapping[str, Any],
    refusal: PlanRefusal,
) -> PlanRefusal:
    """``refusal`` with a value of its searched option at which the plan succeeds.

    Public: every trial is a plan (no data). Values are tried along the search's
    direction; with ``refine`` the boundary between the last refused and the first
    working value is bisected in log space. A trial refused for any reason (any
    ``ValueError``, or arithmetic past the float range) counts as refused.
    """
    search = refusal.search
    assert search is not None

    def attempt(value: float) -> Plan | None:
        trial = {
            **options,
            search.option: _as_option(search, value) if search.integer else value,
        }
        try:
            return algorithm._plan(spec, budget, **trial)
        except (ValueError, ArithmeticError):  # refused, or past the float range
            return None

    refused: float | None = None
    found: tuple[float, Plan] | None = None
    for value in _search_values(search):
        plan = attempt(value)
        if plan is not None:
            found = (value, plan)
            break
        refused = value
    if found is None:
        return refusal.resolved(
            None,
            why=refusal.why
            or f"tried {search.max_tries} values from {search.start:.3g} "
            f"({search.direction})",
        )
    if search.refine and refused is not None and not search.integer:
        lo, hi = math.log(refused), math.log(found[0])
        for _ in range(8):
            mid = 0.5 * (lo + hi)
            plan = attempt(math.exp(mid))
            if plan is not None:
                found, hi = (math.exp(mid), plan), mid
            else:
                lo = mid
    value, plan = found
    shown = _as_option(search, value)
    checked = attempt(shown)  # the value offered is the one checked
    if checked is None:  # pragma: no cover - rounding along a monotone search
        shown = value
    else:
        plan = checked
    return refusal.resolved((search.option, shown, _plan_summary(plan)))


precision.scope_public(globals())
