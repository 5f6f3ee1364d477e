"""Breakdowns as the reports show them: one row of figures per value of an item field, the
weakest first, and a line that names the weakest and the slowest value."""
from __future__ import annotations

from typing import Any

from yamleval.records import figures
from yamleval.analysis.aggregate import slowest
from yamleval.records.types import Breakdown, Slice

COLUMNS = ("items", "pass rate", "pass rate CI", "mean score", "p50 latency", "p95 latency", "tokens")


def header(breakdown: Breakdown, level: str) -> list[str]:
    """The column names: the field, the figures, then a mean per scorer."""
    scorers = list(breakdown.slices[0].summary.scorers) if breakdown.slices else []
    return [breakdown.field, *(f"pass rate {level}" if c == "pass rate CI" else c for c in COLUMNS), *scorers]


def row(found: Slice) -> list[str]:
    """One value's figures as text, in the order of ``header``."""
    s = found.summary
    return [found.value, f"{s.completed:,}", figures.percent(s.pass_rate), figures.interval(s.pass_rate_ci, rate=True),
            figures.number(s.mean_score), figures.ms(s.latency_ms.p50), figures.ms(s.latency_ms.p95),
            f"{s.tokens.total_tokens:,}", *(figures.number(x.mean) for x in s.scorers.values())]


def headline(breakdown: Breakdown) -> str:
    """``weakest: billing (62.0% pass rate) · slowest: refunds (p95 1.2 s)``, and the items in no slice."""
    parts = []
    if breakdown.slices:
        weakest = breakdown.slices[0].summary
        parts.append(f"weakest: {breakdown.slices[0].value} ({figures.percent(weakest.pass_rate)} pass rate)")
    slow = slowest(breakdown)
    if slow is not None:
        parts.append(f"slowest: {slow.value} (p95 {figures.ms(slow.summary.latency_ms.p95)})")
    if breakdown.other:
        parts.append(f"{breakdown.other:,} item{'s' * (breakdown.other != 1)} counted in no row")
    return " · ".join(parts)


def as_dict(breakdown: Breakdown) -> dict[str, Any]:
    """A breakdown for results.json: numbers, not text."""
    slow = slowest(breakdown)
    return {"field": breakdown.field, "weakest": breakdown.slices[0].value if breakdown.slices else None,
            "slowest": None if slow is None else slow.value, "other": breakdown.other,
            "values": [{"value": x.value, "items": x.summary.completed, "passed": x.summary.passed,
                        "failed": x.summary.failed, "errored": x.summary.errored, "skipped": x.summary.skipped,
                        "pass_rate": x.summary.pass_rate, "pass_rate_ci": x.summary.pass_rate_ci,
                        "mean_score": x.summary.mean_score,
                        "scorers": {sid: s.mean for sid, s in x.summary.scorers.items()},
                        "latency_ms": {"p50": x.summary.latency_ms.p50, "p95": x.summary.latency_ms.p95},
                        "tokens": x.summary.tokens.total_tokens}
                       for x in breakdown.slices]}


def table_lines(breakdown: Breakdown, level: str) -> list[str]:
    """The breakdown as aligned terminal lines: its headline, then a row per value."""
    from yamleval.reporting.text import terminal_line

    rows = [header(breakdown, level)] + [[terminal_line(cells[0], 60), *cells[1:]]
                                         for cells in map(row, breakdown.slices)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = [f"  by {terminal_line(breakdown.field, 200)}: {terminal_line(headline(breakdown), 600)}"]
    for cells in rows:
        lines.append("    " + "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                                        for i, (c, w) in enumerate(zip(cells, widths))).rstrip())
    return lines
