"""What ``yamleval run`` prints: progress while it runs, then a summary per experiment."""
from __future__ import annotations

import math
import os
import sys
import time
from typing import TextIO

from yamleval.records import figures
from yamleval.reporting import people
from yamleval.reporting.text import (INCOMPLETE, bound, criterion_mark, criterion_outcome, criterion_subject,
                                     item_message, stopped_because, terminal_line, throttling_text, cache_text)
from yamleval.records.types import ExperimentResult, ItemResult

MARKS = {"passed": "✓", "failed": "✗", "error": "!", "skipped": "-"}
SHOWN_PROBLEMS = 10


class Progress:
    """One line per experiment: items done (of the total when known), rate, time left and the
    verdicts so far. On a terminal it is redrawn in place, at most every ``interval`` seconds
    (a tenth); elsewhere (a CI log) it is a plain line at the first item, then every 5 s."""

    def __init__(self, experiment_id: str, stream: TextIO | None = None, interval: float | None = None):
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.interval = interval if interval is not None else (0.1 if self.tty else 5.0)
        self.experiment_id = experiment_id
        self.counts = {"passed": 0, "failed": 0, "error": 0, "skipped": 0}  # those kept from before too
        self.kept = 0  # items finished before: a resumed run's, those a retry keeps
        self.started = time.monotonic()
        self.last = -math.inf
        self.completed = 0  # with those a resumed run had finished before
        self.total: int | None = None

    def on_item(self, result: ItemResult) -> None:
        self.counts[result.status] += 1

    def on_kept(self, result: ItemResult) -> None:
        self.counts[result.status] += 1
        self.kept += 1

    def on_progress(self, completed: int, total: int | None) -> None:
        self.completed, self.total = completed, total
        now = time.monotonic()
        if now - self.last >= self.interval or (self.tty and completed == total):
            self.last = now
            self.draw(now)

    def _text(self, now: float) -> str:
        c = self.counts
        of = f"/{self.total}" if self.total else ""
        noun = "item" if self.completed == 1 and not self.total else "items"
        parts = [f"{self.experiment_id}: {self.completed}{of} {noun}"]
        elapsed = now - self.started
        rate = (sum(c.values()) - self.kept) / elapsed if elapsed > 0 else 0.0  # of the items this run finished
        if rate:
            parts.append(f"{rate:.1f} items/s" if rate < 10 else f"{rate:,.0f} items/s")
            if self.total:
                parts.append(f"ETA {_duration(max(0, self.total - self.completed) / rate)}")
        parts += [f"{c['passed']} passed", f"{c['failed']} failed", figures.count(c['error'], "error")]
        return " · ".join(parts)

    def draw(self, now: float) -> None:
        if self.tty:
            bar = ""
            if self.total:
                filled = int(20 * min(self.completed, self.total) / self.total)
                bar = "[" + "#" * filled + "." * (20 - filled) + "] "
            line, width = bar + self._text(now), self._width()
            if len(line) >= width:  # narrow: the words matter more than the bar
                line = line[len(bar):]
            self.stream.write("\r\x1b[2K" + line[:width - 1])
        else:
            self.stream.write(self._text(now) + "\n")
        self.stream.flush()

    def _width(self) -> int:
        """The terminal's columns: a longer line would wrap, and the next redraw would not cover it."""
        try:
            return os.get_terminal_size(self.stream.fileno()).columns or 80
        except (OSError, ValueError, AttributeError):
            return 80

    def close(self) -> None:
        if self.tty:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()


def _duration(seconds: float) -> str:
    """``42s``, ``3m05s``, ``2h07m``: a time left, to the second below an hour."""
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def _problem_line(result: ItemResult) -> str:
    return (f"    {MARKS[result.status]} {terminal_line(result.item.id, 120)} {result.status}: "
            f"{terminal_line(item_message(result))}")


def summary_text(result: ExperimentResult) -> str:
    s = result.summary
    title = result.experiment_id + (f" — {terminal_line(result.label, 200)}" if result.label else "")
    lines = [title,
             "  items       " + (f"{s.total:,} total" if s.completed == s.total else f"{s.completed:,} of {s.total:,} ran")
             + f" · {s.passed:,} passed · {s.failed:,} failed · "
             f"{figures.count(s.errored, 'error')}"
             + (f" · {s.skipped} skipped" if s.skipped else "") + (f" · {s.flaky} flaky" if s.flaky else ""),
             f"  mean score  {figures.number(s.mean_score)}    pass rate {figures.percent(s.pass_rate)}    "
             f"latency p50 {figures.ms(s.latency_ms.p50)}, p95 {figures.ms(s.latency_ms.p95)}    "
             f"duration {figures.ms(s.duration_ms)}",
             f"  {figures.level(s.confidence):<10}  mean score {figures.interval(s.mean_score_ci)} · "
             f"pass rate {figures.interval(s.pass_rate_ci, rate=True)}"]
    for name, used in (("tokens", s.tokens), ("judge", s.judge_tokens)):
        if used.total_tokens:
            cost = f", {figures.dollars(used.cost)}" if used.cost is not None else ""
            lines.append(f"  {name:<10}  {figures.count(used.total_tokens, 'token')} ({used.prompt_tokens:,} prompt, "
                         f"{used.completion_tokens:,} completion{cost})")
    throttled = throttling_text(s.throttling)
    if throttled:
        lines.append(f"  throttled   {throttled}")
    cached = cache_text(s.cache)
    if cached:
        lines.append(f"  cache       {cached}")
    if s.scorers:
        width = max(10, *(len(sid) for sid in s.scorers))
        lines.append(f"  {'scorer':<{width}}  {'mean':>6} {'min':>6} {'max':>6} {'pass rate':>10}  "
                     f"{'mean CI':>11} {'pass rate CI':>12}  passed/failed/errors/skipped")
        for sid, sc in s.scorers.items():
            threshold = f"  (threshold {sc.threshold:g})" if sc.threshold is not None else ""
            threshold += f"  corpus {figures.number(sc.corpus)}" if sc.corpus is not None else ""
            lines.append(f"  {sid:<{width}}  {figures.number(sc.mean):>6} {figures.number(sc.min):>6} {figures.number(sc.max):>6} "
                         f"{figures.percent(sc.pass_rate):>10}  {figures.interval(sc.mean_ci):>11} "
                         f"{figures.interval(sc.pass_rate_ci, rate=True):>12}  "
                         f"{sc.passed}/{sc.failed}/{sc.errored}/{sc.skipped}{threshold}")
    lines += ["  " + line for line in people.text_lines(s)]
    if s.criteria:
        lines.append("  criteria")
        for c in s.criteria:
            name = terminal_line(c.label, 200) if c.label else criterion_subject(c, "({})")
            warn = " (warn)" if c.severity == "warn" else ""
            mark = criterion_mark(c, "✓", "✗", "✗", "–")
            lines.append(f"    {mark} {name} {bound(c, '≥', '≤')}: {terminal_line(criterion_outcome(c), 400)}{warn}")
    problems = result.items.with_status(("failed", "error"), SHOWN_PROBLEMS)
    if problems:
        lines.append("  not passed")
        lines.extend(_problem_line(r) for r in problems)
        more = s.failed + s.errored - len(problems)
        if more > 0:
            lines.append(f"    … and {more} more (see the report)")
    noted = result.items.with_notes(SHOWN_PROBLEMS) if s.noted else []
    if noted:
        lines.append(f"  notes       {s.noted} item{'s' if s.noted != 1 else ''}")
        lines.extend(f"    {MARKS[r.status]} {terminal_line(r.item.id, 120)}: {terminal_line('; '.join(r.notes))}"
                     for r in noted)
        if s.noted > len(noted):
            lines.append(f"    … and {s.noted - len(noted)} more (see the report)")
    flaky = result.items.flaky(SHOWN_PROBLEMS) if s.flaky else []
    if flaky:
        lines.append(f"  flaky       {s.flaky} item{'s' if s.flaky != 1 else ''} (their repeats disagree)")
        lines.extend(f"    {MARKS[r.status]} {terminal_line(r.item.id, 120)} {r.status}: "
                     f"{sum(x.status == 'passed' for x in r.repeats)} of {figures.count(len(r.repeats), 'repeat')} passed"
                     for r in flaky)
        if s.flaky > len(flaky):
            lines.append(f"    … and {s.flaky - len(flaky)} more (see the report)")
    for warning in result.warnings:
        lines.append(f"  warning: {terminal_line(warning)}")
    lines.append(f"  {verdict_word(result)}" + ("" if result.gated else " (not gated: the run's verdict leaves it out)"))
    return "\n".join(lines)


def verdict_word(result: ExperimentResult, short: bool = False) -> str:
    """``PASSED``, ``FAILED``, ``INTERRUPTED``, ``ABORTED (could not evaluate)``, ``STOPPED (budget
    reached)``, ...: the outcome's name, as every report spells it, and why when it ended early."""
    words = {"aborted": f"ABORTED ({stopped_because(result)})", "stopped": f"STOPPED ({stopped_because(result)})",
             "incomplete": "INCOMPLETE" if short else f"INCOMPLETE: {INCOMPLETE}"}
    return words.get(result.outcome, result.outcome.upper())


def variants_text(results) -> list[str]:
    """Each experiment with variants as one table against its baseline: pass rate and mean score
    with their intervals, cost, and the paired verdict (and pairwise wins, ties and losses)."""
    from yamleval.reporting import variants

    texts = []
    for group in variants.tables(results):
        level = figures.level(group.baseline.summary.confidence)
        header = ("variant", f"pass rate ({level})", f"mean score ({level})", "cost", "against the baseline")
        rows = [header]
        for row in group.rows:
            s = row.result.summary
            # the interval of the mean the row shows: over every scorer, unless a pairwise judge is left out
            interval = figures.interval(s.mean_score_ci) if set(group.scorers) >= set(s.scorers) else "—"
            rows.append((terminal_line(row.result.variant.id, 60) + ("" if row.result.variant.gate else " (not gated)"),
                         variants.cell(row, "pass_rate"),
                         f"{figures.number(row.values['mean_score'])} ({interval})",
                         variants.cell(row, "cost"), terminal_line(variants.against_baseline(row), 400)))
        widths = [max(len(r[i]) for r in rows) for i in range(len(header) - 1)]
        title = group.experiment_id + (f" — {terminal_line(group.label, 200)}" if group.label else "")
        lines = [f"{title}: {figures.count(len(group.rows), 'variant')} against the baseline {group.baseline.variant.id}"]
        lines += ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[-1] for r in rows]
        texts.append("\n".join(lines))
    return texts

