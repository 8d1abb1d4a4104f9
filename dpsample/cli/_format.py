"""Text helpers shared by the command's printed reports (quickstart, run)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def _fmt_point(point: Sequence[float], limit: int = 8) -> str:
    shown = ", ".join(f"{v:+.4f}" for v in point[:limit])
    more = f", ... ({len(point)} coordinates)" if len(point) > limit else ""
    return f"[{shown}{more}]"


def _g(value: Any, spec: str = ".4g") -> str:
    return "n/a" if value is None else format(value, spec)


def _print_verdict(indent: str, privacy: dict[str, Any]) -> None:
    """The budget verdict, one assumption a line ("..., conditional, assuming:")."""
    if privacy["within_budget"] and privacy["assumptions"]:
        print(f"{indent}within budget, conditional, assuming:")
        for text in privacy["assumptions"]:
            print(f"{indent}  - {text}")
    else:
        print(f"{indent}{privacy['verdict']}")
