"""Named presets of the first-order finders' public schedules.

A finder's ``preset`` picks the rule behind every parameter the caller leaves at
``None``; a parameter the caller gives is used as given whatever the preset. The names
mean the same in every finder that takes them (:func:`~dpsample.finders.dp_sgd`,
:func:`~dpsample.finders.dp_spider`, DP-TR and DP-STR of
:mod:`dpsample.finders.trust_region`):

* ``"practical"`` (the default): the schedule and output rule that end nearest
  stationarity on the problems the finder's theorem covers, chosen from public
  structure and measured (``benchmarks/bench_spider_defaults.py``); where it departs
  from the theorem, the plan's :class:`~dpsample.plan.Param` notes say so.
* ``"theorem"``: the theorem's own schedule and output, as the project implements it
  (with its documented corrections of the printed statements), i.e. the point the
  theorem's rate speaks of.

Every preset is public (it reads the declared constants, ``n``, ``d`` and the budget,
never the data), and the output rules are post-processing of the released trajectory
(:mod:`dpsample.finders.outputs`): the preset changes the answer, never the kind of
guarantee. The plan's ``"preset"`` parameter records which one ran, and the note of
each parameter it set names it. Other finders keep their own preset vocabularies
(Spider-SOSP's ``"practical"``/``"paper"``, Goldstein's ``"corrected"``/``"paper"``),
where ``"paper"`` is the printed statement's constants.
"""

from __future__ import annotations

from dpsample._src import precision, validation
from dpsample.finders.outputs import check_output
from dpsample.plan import Param

__all__ = ["FINDER_PRESETS", "check_preset", "label_schedule", "output_param"]

#: The presets, the default first.
FINDER_PRESETS = ("practical", "theorem")


def check_preset(preset: str) -> str:
    """``preset`` if it is one of :data:`FINDER_PRESETS`, else a ``ValueError``.

    Examples:
        >>> from dpsample.finders.presets import check_preset
        >>> check_preset("paper")
        Traceback (most recent call last):
            ...
        ValueError: Expected preset in ('practical', 'theorem'), got 'paper'
    """
    return validation.one_of("preset", preset, FINDER_PRESETS)


def output_param(
    output: str | None,
    preset: str,
    *,
    practical: tuple[str, str],
    theorem: tuple[str, str],
) -> Param:
    """The plan's ``"output"`` parameter: the caller's rule, or the preset's.

    Args:
        output: The caller's rule, or ``None`` for the preset's.
        preset: The finder's preset.
        practical: The ``"practical"`` preset's ``(rule, why)``.
        theorem: The ``"theorem"`` preset's ``(rule, why)``.

    Returns:
        ``Param(rule, "user")`` for a given rule, else the preset's rule with source
        ``"default"`` (practical) or ``"theorem"`` and the note ``"preset '...':
        why"``.

    Raises:
        ValueError: An unknown rule or preset.

    Examples:
        >>> from dpsample.finders.presets import output_param
        >>> rules = dict(practical=("tail_average", "mean of the tail"),
        ...              theorem=("random", "Thm 3.4's uniform iterate"))
        >>> p = output_param(None, "theorem", **rules)
        >>> p.value, p.source, p.note
        ('random', 'theorem', "preset 'theorem': Thm 3.4's uniform iterate")
        >>> output_param("last", "theorem", **rules).source
        'user'
    """
    check_preset(preset)
    if output is not None:
        return Param(check_output(output), "user")
    rule, why = practical if preset == "practical" else theorem
    source = "default" if preset == "practical" else "theorem"
    return Param(check_output(rule), source, f"preset {preset!r}: {why}")


def label_schedule(params: dict[str, Param], preset: str) -> dict[str, Param]:
    """``params`` with the preset named in the note of every theorem-set value.

    A :class:`~dpsample.plan.Param` whose source is ``"theorem"`` was set by the
    preset's schedule (both presets take the theorem's schedule where they do not
    depart from it); its note gets the prefix ``"preset '...': "``.

    Args:
        params: The plan's parameters.
        preset: The preset that set them.

    Returns:
        A new dict (the other parameters are the same objects).

    Examples:
        >>> from dpsample.finders.presets import label_schedule
        >>> from dpsample.plan import Param
        >>> ps = label_schedule({"eta": Param(0.5, "theorem", "1/(2M)"),
        ...                      "b": Param(4, "user")}, "practical")
        >>> ps["eta"].note, ps["b"].note
        ("preset 'practical': 1/(2M)", '')
    """
    check_preset(preset)
    prefix = f"preset {preset!r}: "
    return {
        k: Param(p.value, p.source, prefix + p.note)
        if p.source == "theorem" and not p.note.startswith("preset ")
        else p
        for k, p in params.items()
    }


precision.scope_public(globals())
