"""A ``budget:`` as the config writes it: how many tokens, dollars and how much time a run or an
experiment may spend (``engine.budget`` holds the run to it)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping

_UNITS = {"w": 604800.0, "d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0}
_PART = re.compile(r"([0-9]+(?:\.[0-9]+)?)([wdhms])")


def seconds(duration: float | str) -> float:
    """``90`` (seconds), ``"90s"``, ``"30m"``, ``"2h"``, ``"1h30m"`` or ``"7d"`` in seconds; the
    schema has checked the form."""
    if not isinstance(duration, str):
        return float(duration)
    return sum(float(number) * _UNITS[unit] for number, unit in _PART.findall(duration))


@dataclass(frozen=True)
class Budget:
    """The limits written under one ``budget:``; each is None when not set."""

    max_cost_usd: float | None = None
    max_tokens: int | None = None
    max_duration: float | None = None  # seconds
    duration_text: str | None = None  # max_duration as written (``30m``), for messages

    @classmethod
    def read(cls, written: Mapping[str, Any] | None) -> "Budget | None":
        """The budget of a validated ``budget:`` mapping; None when it sets no limit."""
        if not written:
            return None
        duration = written.get("max_duration")
        return cls(max_cost_usd=written.get("max_cost_usd"), max_tokens=written.get("max_tokens"),
                   max_duration=None if duration is None else seconds(duration),
                   duration_text=None if duration is None else
                   duration if isinstance(duration, str) else f"{duration:g}s")
