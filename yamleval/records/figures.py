"""Numbers as people read them, the same in the console and in every report."""
from __future__ import annotations

import math

MISSING = "—"


def number(value: float | None, digits: int = 3) -> str:
    """``0.844``; a dash when there is no value."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return MISSING
    return f"{value:.{digits}f}"


def percent(value: float | None) -> str:
    """A rate in [0, 1] as ``83.3%``."""
    return MISSING if value is None else f"{value * 100:.1f}%"


def ms(value: float | None) -> str:
    """A duration in milliseconds: ``0.04 ms``, ``12.5 ms``, ``340 ms``, ``1.2 s``, ``1,234.5 s``
    (the report's script writes durations the same way)."""
    if value is None:
        return MISSING
    if value >= 999.5:  # what would round to "1000 ms" is "1.0 s"
        return f"{value / 1000:,.1f} s"
    if value >= 99.95:
        return f"{value:.0f} ms"
    return f"{value:.1f} ms" if value >= 1 else f"{value:.2f} ms"


def interval(bounds: tuple[float, float] | None, rate: bool = False) -> str:
    """A confidence interval as ``0.712–0.803``, or of a rate as ``71.2–80.3%``; a dash without one."""
    if bounds is None:
        return MISSING
    if rate:
        return f"{bounds[0] * 100:.1f}–{bounds[1] * 100:.1f}%"
    return f"{number(bounds[0])}–{number(bounds[1])}"


def level(confidence: float) -> str:
    """A confidence level as ``95% CI``."""
    return f"{confidence * 100:g}% CI"


def dollars(cost: float) -> str:
    """``$12.50``, ``$0.00372``, ``$0``, ``< $0.000001``: a cost as every report writes it, never
    with an exponent, at most six decimals below a dollar."""
    if cost >= 1:
        return f"${cost:,.2f}"
    if cost == 0:
        return "$0"
    if cost < 0.0000005:
        return "< $0.000001"
    whole, _, cents = f"{cost:.6f}".rstrip("0").partition(".")
    return f"${whole}.{cents.ljust(2, '0')}"


def count(n: int, noun: str, plural: str | None = None) -> str:
    """``1 error``, ``2 errors``, ``5,120 tokens``: a count with its noun, thousands separated."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"
