"""``summary.md``: a short Markdown summary of the run, for a CI job summary.

A verdict line, then per experiment a table of counts and statistics, the pass
criteria and the worst items. Model text is escaped so that it stays inside
its table cell and can neither open HTML nor format Markdown. The whole text
stays under GitHub's 1 MiB limit for a step summary.
"""
from __future__ import annotations

import heapq
import itertools
import re
from typing import IO, Iterable, Sequence

from yamleval.records import figures
from yamleval.reporting import people
from yamleval.reporting import variants
from yamleval.reporting import breakdowns
from yamleval.reporting.text import (INCOMPLETE, as_text, clean_text, criterion_mark, criterion_name, criterion_outcome,
                                     item_message, limit_text, reveal_bidi, stop_notice, stopped_because,
                                     throttling_text, cache_text)
from yamleval.records.types import ExperimentResult, ItemResult, RunInfo

FILE_NAME = "summary.md"  # in the report folder
MAX_BYTES = 1024 * 1024  # GitHub refuses a bigger step summary
WORST_ITEMS = 10
CELL_LIMIT = 120  # characters of model text in one table cell

_RANK = {"error": 0, "failed": 1, "passed": 2}
# HTML-significant characters and the cell separator as entities; what would start
# emphasis, links, images, strike-through, math or a heading backslash-escaped
_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", "|": "&#124;", "`": "&#96;"}
_MARKDOWN = re.compile(r"([\\*_\[\]~!$#])")
_NEWLINES = re.compile("\r\n|[\r\n\u2028\u2029]")  # U+2028/9 end lines for some readers
_SPACES = re.compile(r"[ \t\f\v]+")


def escape(text: str) -> str:
    """``text`` safe in a Markdown table cell: no HTML, no formatting, no line break
    except the ``<br>`` it puts in place of newlines."""
    text = _MARKDOWN.sub(r"\\\1", text)
    text = "".join(_ENTITIES.get(ch, ch) for ch in text)
    return _NEWLINES.sub("<br>", text)


def shorten(value: object, limit: int = CELL_LIMIT) -> str:
    """A value as one short escaped cell: cleaned, blank runs collapsed, cut to ``limit`` characters."""
    if value is None:
        return ""
    text = clean_text(as_text(value, indent=None), limit * 4)
    text = _SPACES.sub(" ", text).strip()
    text = _NEWLINES.sub("\n", text)
    if len(text) > limit:
        text = text[:limit - 1].rstrip() + "…"
    # at most three lines per cell, so one item cannot stretch the table
    lines = text.split("\n")
    if len(lines) > 3:
        text = "\n".join(lines[:3]) + " …"
    return escape(reveal_bidi(text))


_VERDICTS = {"aborted": ("❌", "aborted"), "stopped": ("⏹️", "stopped"), "interrupted": ("⏹️", "interrupted"),
             "incomplete": ("❌", "incomplete"), "passed": ("✅", "passed"), "failed": ("❌", "failed")}


def _headline(run: RunInfo, results: Sequence[ExperimentResult]) -> list[str]:
    failed = sum(not r.passed and r.gated for r in results)  # a variant with ``gate: false`` fails nothing
    total = len(results)
    if run.status == "interrupted":
        line = f"## ⏹️ yamleval: interrupted — {total - failed} of {figures.count(total, 'experiment')} passed"
    elif run.status == "stopped":
        line = f"## ⏹️ yamleval: stopped by a budget — {total - failed} of {figures.count(total, 'experiment')} passed"
    elif run.status == "crashed":
        line = "## ❌ yamleval: the run crashed — its results are incomplete"
    elif run.status == "aborted":
        ended = ", ".join(escape(r.experiment_id) for r in results if r.outcome == "aborted")
        line = (f"## ❌ yamleval: aborted — {ended} ended early and the run stopped; {total - failed} of {total} "
                f"experiment{'s' if total != 1 else ''} that ran passed")
    elif failed:
        line = f"## ❌ yamleval: {failed} of {total} experiment{'s' if total != 1 else ''} failed"
    else:
        line = f"## ✅ yamleval: {'all ' if total > 1 else ''}{total} experiment{'s' if total != 1 else ''} passed"
    facts = [f"run {escape(run.run_id)}"]
    if run.rescored_from:
        facts.append(f"rescored from run {escape(run.rescored_from)}")
    if run.retried_from:
        facts.append(f"errors of run {escape(run.retried_from)} retried")
    if run.git_commit:
        facts.append(f"commit {escape(run.git_commit[:12])}" + (" (dirty)" if run.git_dirty else ""))
    facts.append(f"started {escape(run.started_at)}")
    if run.yamleval_version:
        facts.append(f"yamleval {escape(run.yamleval_version)}")
    return [line, "", " · ".join(facts), ""]


def _usage_text(used) -> str:
    """``5,849 tokens (5,120 prompt, 729 completion), \\$0.0037``: what calls used, and cost when
    a price is known (its ``$`` escaped: two of them would start a formula)."""
    if not used.total_tokens:
        return "–"
    cost = "" if used.cost is None else f", {escape(figures.dollars(used.cost))}"
    return (f"{figures.count(used.total_tokens, 'token')} ({used.prompt_tokens:,} prompt, "
            f"{used.completion_tokens:,} completion){cost}")


def _statistics(result: ExperimentResult) -> list[str]:
    s = result.summary
    tokens = _usage_text(s.tokens)
    throttled = throttling_text(s.throttling)
    cached = cache_text(s.cache)
    level = figures.level(s.confidence)
    return ["| items | passed | failed | errored | skipped | pass rate | mean score | p95 latency | tokens "
            "| duration |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
            f"| {s.total} | {s.passed} | {s.failed} | {s.errored} | {s.skipped} | {figures.percent(s.pass_rate)} | "
            f"{figures.number(s.mean_score)} | {figures.ms(s.latency_ms.p95)} | {tokens} | {figures.ms(s.duration_ms)} |",
            "", f"{level}: pass rate {figures.interval(s.pass_rate_ci, rate=True)}, mean score "
            f"{figures.interval(s.mean_score_ci)}."
            + (f" Judges: {_usage_text(s.judge_tokens)}." if s.judge_tokens.total_tokens else ""), ""] + _scorers(result, level) + (
        [f"Throttled: {throttled}.", ""] if throttled else []) + ([f"Cache: {cached}.", ""] if cached else []) + (
        [f"Flaky: {s.flaky} of {figures.count(s.completed, 'item')} (their repeats disagree).", ""] if s.flaky else [])


def _scorers(result: ExperimentResult, level: str) -> list[str]:
    if not result.summary.scorers:
        return []
    lines = [f"| scorer | mean | mean {level} | pass rate | pass rate {level} |", "|---|---:|---:|---:|---:|"]
    for sid, s in result.summary.scorers.items():
        corpus = f" (corpus {figures.number(s.corpus)})" if s.corpus is not None else ""
        lines.append(f"| {shorten(sid, 100)} | {figures.number(s.mean)}{corpus} | {figures.interval(s.mean_ci)} | "
                     f"{figures.percent(s.pass_rate)} | {figures.interval(s.pass_rate_ci, rate=True)} |")
    return lines + [""]


def _breakdowns(result: ExperimentResult) -> list[str]:
    lines = []
    level = figures.level(result.summary.confidence)
    for found in result.summary.breakdowns:
        head = breakdowns.header(found, level)
        lines += [f"By {escape(found.field)}: {shorten(breakdowns.headline(found), 400)}.", "",
                  "| " + " | ".join(escape(h) for h in head) + " |", "|---" + "|---:" * (len(head) - 1) + "|"]
        lines += ["| " + " | ".join([shorten(cells[0])] + cells[1:]) + " |"
                  for cells in map(breakdowns.row, found.slices)] + [""]
    return lines


def _criteria(result: ExperimentResult) -> list[str]:
    if not result.summary.criteria:
        return []
    lines = ["| | criterion | actual | min | severity |", "|:---:|---|---:|---:|---|"]
    for c in result.summary.criteria:
        mark = criterion_mark(c, "✅", "❌", "⚠️", "⏭️ skipped")
        lines.append(f"| {mark} | {shorten(criterion_name(c), 300)} | {shorten(criterion_outcome(c), 300)} | "
                     f"{shorten(limit_text(c))} | {c.severity} |")
    return lines + [""]


def _mean_score(result: ItemResult) -> float:
    scores = [s.score for s in result.scores.values() if s.score is not None]
    return sum(scores) / len(scores) if scores else 1.0


def _worst_key(result: ItemResult) -> tuple[int, float, int] | None:
    """Where an item ranks among the worst (lower is worse), or None if it is not a candidate."""
    if result.status in ("error", "failed"):
        return _RANK[result.status], _mean_score(result), result.item.index
    if result.status == "passed":
        mean = _mean_score(result)
        if mean < 1.0:
            return _RANK["passed"], mean, result.item.index
    return None


class _WorstItems:
    """One experiment's ``limit`` worst items, kept in a heap as items stream by."""

    def __init__(self, limit: int = WORST_ITEMS):
        self.limit = limit
        self.heap: list[tuple] = []  # the negated key on top: the best of the kept items

    def item(self, result: ItemResult) -> None:
        key = _worst_key(result)
        if key is None:
            return
        entry = ((-key[0], -key[1], -key[2]), result)
        if len(self.heap) < self.limit:
            heapq.heappush(self.heap, entry)
        elif entry[0] > self.heap[0][0]:
            heapq.heapreplace(self.heap, entry)

    def items(self) -> list[ItemResult]:
        return [result for _, result in sorted(self.heap, key=lambda entry: entry[0], reverse=True)]


def worst_items(result: ExperimentResult, limit: int = WORST_ITEMS) -> list[ItemResult]:
    """Errored items, then failed ones, then passed items that scored below 1; lowest
    scores first within each, dataset order on ties."""
    worst = _WorstItems(limit=limit)
    for item in result.items:
        worst.item(item)
    return worst.items()


def _items(result: ExperimentResult, shown: list[ItemResult]) -> list[str]:
    if not shown:
        return []
    lines = ["**Worst items**", "",
             "| item | status | why | input | output | expected |", "|---|---|---|---|---|---|"]
    for r in shown:
        why = item_message(r) if r.status != "passed" else ", ".join(
            f"{sid} {figures.number(s.score)}" for sid, s in r.scores.items() if s.score is not None)
        lines.append(f"| {shorten(r.item.id, 60)} | {r.status} | {shorten(why)} | {shorten(r.item.input)} | "
                     f"{shorten(r.output)} | {shorten(r.item.expected)} |")
    hidden = result.summary.failed + result.summary.errored - sum(r.status != "passed" for r in shown)
    if hidden > 0:
        lines += ["", f"{hidden} more failed or errored item{'s' if hidden != 1 else ''} in the full report."]
    return lines + [""]


def _experiment(result: ExperimentResult, worst: list[ItemResult]) -> list[str]:
    mark, verdict = _VERDICTS[result.outcome]
    if result.aborted:  # a budget's stop too: it says which budget
        verdict += f" ({stopped_because(result)})"
    title = escape(result.experiment_id) + (f" — {shorten(result.label, 200)}" if result.label else "")
    lines = [f"### {mark} {title}: {verdict}", ""]
    if result.aborted:
        heading, text = stop_notice(result)
        lines += [f"{heading}: {shorten(text, 600)}", ""]
    if result.incomplete:
        lines += [f"Incomplete: {INCOMPLETE}.", ""]
    lines += (_statistics(result) + people.markdown_lines(result.summary, escape) + _breakdowns(result)
              + _criteria(result) + _items(result, worst))
    lines += [f"- warning: {shorten(w, 500)}" for w in result.warnings]
    return lines + ([""] if result.warnings else [])


def _variants(group: variants.VariantGroup) -> list[str]:
    """The variants table of an experiment: the best figure of each column in bold."""
    columns = variants.columns(group)
    lines = [f"### Variants of {escape(group.experiment_id)}" + (f" — {shorten(group.label, 200)}" if group.label else ""),
             "", "| variant | " + " | ".join(heading for _, heading in columns) + " | against the baseline |",
             "|---|" + "---:|" * len(columns) + "---|"]
    for row in group.rows:
        variant = row.result.variant
        name = escape(variant.id) + (f" ({shorten(variant.label, 80)})" if variant.label else "") + (
            "" if variant.gate else " · not gated")
        figures_ = [f"**{variants.cell(row, c)}**" if c in row.best else variants.cell(row, c) for c, _ in columns]
        lines.append(f"| {name} | " + " | ".join(figures_) + f" | {variants.against_baseline(row, True)} |")
    return lines + [""]


def _blocks(results: list[ExperimentResult], worst: dict[int, list[ItemResult]] | None) -> Iterable[list[str]]:
    """Each experiment's lines; before the first variant of an experiment, its variants table."""
    groups = {g.experiment_id: g for g in variants.tables(results)}
    for result in results:
        group = groups.pop(result.variant.experiment_id, None) if result.variant else None
        if group is not None:
            yield _variants(group)
        yield _experiment(result, worst[id(result)] if worst else worst_items(result))


def render(run: RunInfo, results: Iterable[ExperimentResult], limit: int = MAX_BYTES,
           worst: dict[int, list[ItemResult]] | None = None) -> str:
    """The summary as Markdown, at most ``limit`` bytes of UTF-8.

    ``worst`` holds each experiment's worst items (by ``id`` of the result) when they were
    found already; otherwise the items are read here."""
    results = list(results)
    note = "\n> ⚠️ This summary was cut to stay under GitHub's 1 MiB limit; the full results are in the reports.\n"
    budget = limit - len(note.encode("utf-8"))
    out: list[str] = []
    size = 0
    blocks = itertools.chain([_headline(run, results)], _blocks(results, worst))
    for line in itertools.chain.from_iterable(blocks):
        size += len(line.encode("utf-8")) + 1
        if size > budget:  # cut at a line: a table row is never split
            return "\n".join(out).rstrip("\n") + "\n" + note
        out.append(line)
    return "\n".join(out).rstrip("\n") + "\n"


class Writer:
    """Finds each experiment's worst items as items stream by; writes the summary at the end."""

    def __init__(self, out: IO[str], run: RunInfo, results: Sequence[ExperimentResult]):
        self.out, self.run, self.results = out, run, results
        self.worst: dict[int, list[ItemResult]] = {}
        self.current = _WorstItems()

    def begin(self, result: ExperimentResult) -> None:
        self.current = _WorstItems()

    def item(self, result: ItemResult) -> None:
        self.current.item(result)

    def end(self, result: ExperimentResult) -> None:
        self.worst[id(result)] = self.current.items()

    def close(self) -> None:
        self.out.write(render(self.run, self.results, worst=self.worst))
