"""What ``yamleval run`` prints: progress while it runs, then a summary per experiment."""
from __future__ import annotations

import sys
import time
from typing import TextIO

from yamleval import figures
from yamleval.reporting.text import INCOMPLETE, item_message, terminal_line, throttling_text
from yamleval.types import ExperimentResult, ItemResult

MARKS = {"passed": "✓", "failed": "✗", "error": "!", "skipped": "-"}
SHOWN_PROBLEMS = 10


class Progress:
    """A bar redrawn in place on a terminal; a plain line every few seconds elsewhere."""

    def __init__(self, experiment_id: str, stream: TextIO | None = None, interval: float | None = None):
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.interval = interval if interval is not None else (0.1 if self.tty else 5.0)
        self.experiment_id = experiment_id
        self.counts = {"passed": 0, "failed": 0, "error": 0, "skipped": 0}
        self.last = time.monotonic()
        self.completed = 0
        self.total: int | None = None

    def on_item(self, result: ItemResult) -> None:
        self.counts[result.status] += 1

    def on_progress(self, completed: int, total: int | None) -> None:
        self.completed, self.total = completed, total
        now = time.monotonic()
        if now - self.last >= self.interval or (self.tty and completed == total):
            self.last = now
            self.draw()

    def _text(self) -> str:
        c = self.counts
        of = f"/{self.total}" if self.total else ""
        return (f"{self.experiment_id}: {self.completed}{of} items · {c['passed']} passed · {c['failed']} failed · "
                f"{c['error']} errors")

    def draw(self) -> None:
        if self.tty:
            bar = ""
            if self.total:
                filled = int(20 * self.completed / self.total)
                bar = "[" + "#" * filled + "." * (20 - filled) + "] "
            self.stream.write("\r\x1b[2K" + bar + self._text())
        else:
            self.stream.write(self._text() + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.tty:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()


def _problem_line(result: ItemResult) -> str:
    return (f"    {MARKS[result.status]} {terminal_line(result.item.id, 120)} {result.status}: "
            f"{terminal_line(item_message(result))}")


def summary_text(result: ExperimentResult) -> str:
    s = result.summary
    title = result.experiment_id + (f" — {terminal_line(result.label, 200)}" if result.label else "")
    lines = [title,
             f"  items       {s.total} total · {s.passed} passed · {s.failed} failed · {s.errored} errors"
             + (f" · {s.skipped} skipped" if s.skipped else ""),
             f"  mean score  {figures.number(s.mean_score)}    pass rate {figures.percent(s.pass_rate)}    "
             f"latency p50 {figures.ms(s.latency_ms.p50)}, p95 {figures.ms(s.latency_ms.p95)}    "
             f"duration {s.duration_ms / 1000:.2f} s",
             f"  {figures.level(s.confidence):<10}  mean score {figures.interval(s.mean_score_ci)} · "
             f"pass rate {figures.interval(s.pass_rate_ci, rate=True)}"]
    for name, used in (("tokens", s.tokens), ("judge", s.judge_tokens)):
        if used.total_tokens:
            cost = f", ${used.cost:.4f}" if used.cost is not None else ""
            lines.append(f"  {name:<10}  {used.total_tokens} tokens ({used.prompt_tokens} prompt, "
                         f"{used.completion_tokens} completion{cost})")
    throttled = throttling_text(s.throttling)
    if throttled:
        lines.append(f"  throttled   {throttled}")
    if s.scorers:
        width = max(10, *(len(sid) for sid in s.scorers))
        lines.append(f"  {'scorer':<{width}}  {'mean':>6} {'min':>6} {'max':>6} {'pass rate':>10}  "
                     f"{'mean CI':>11} {'pass rate CI':>12}  passed/failed/errors/skipped")
        for sid, sc in s.scorers.items():
            threshold = f"  (threshold {sc.threshold:g})" if sc.threshold is not None else ""
            lines.append(f"  {sid:<{width}}  {figures.number(sc.mean):>6} {figures.number(sc.min):>6} {figures.number(sc.max):>6} "
                         f"{figures.percent(sc.pass_rate):>10}  {figures.interval(sc.mean_ci):>11} "
                         f"{figures.interval(sc.pass_rate_ci, rate=True):>12}  "
                         f"{sc.passed}/{sc.failed}/{sc.errored}/{sc.skipped}{threshold}")
    if s.criteria:
        lines.append("  criteria")
        for c in s.criteria:
            name = terminal_line(c.label, 200) if c.label else (f"{c.type}({c.scorer})" if c.scorer else c.type)
            warn = " (warn)" if c.severity == "warn" else ""
            lines.append(f"    {'✓' if c.passed else '✗'} {name} ≥ {c.min:g}: {figures.number(c.actual)}{warn}")
    problems = result.items.with_status(("failed", "error"), SHOWN_PROBLEMS)
    if problems:
        lines.append("  not passed")
        lines.extend(_problem_line(r) for r in problems)
        more = s.failed + s.errored - len(problems)
        if more > 0:
            lines.append(f"    … and {more} more (see the report)")
    for warning in result.warnings:
        lines.append(f"  warning: {terminal_line(warning)}")
    words = {"aborted": "STOPPED (dataset error)", "incomplete": f"INCOMPLETE: {INCOMPLETE}"}
    lines.append(f"  {words.get(result.outcome, result.outcome.upper())}")
    return "\n".join(lines)
