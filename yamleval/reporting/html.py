"""``report.html``: the whole run as one self-contained page, safe to open from disk and to share.

Jinja2 (autoescaped) renders the headers, statistics and run details; the items travel as one
JSON blob in a ``<script type="application/json">`` element, escaped so that no text can end
that element, and the page's script renders them a page at a time, inserting every value as
text. A Content-Security-Policy pinned to the hashes of the inline script and stylesheet
forbids every network request.
"""
from __future__ import annotations

import base64
import hashlib
import json
import math
from functools import lru_cache
from importlib import resources
from typing import IO, Any, Sequence

from yamleval import figures
from yamleval.aggregate import BINS
from yamleval.reporting import variants
from yamleval.reporting.files import render_with
from yamleval.reporting.text import INCOMPLETE, criterion_outcome, criterion_subject, limit_text, stop_notice
from yamleval.reporting.trajectory import read_trajectory
from yamleval.types import ExperimentResult, ItemResult, RunInfo, ScoreResult

FILE_NAME = "report.html"  # in the report folder
FIELD_CAP = 20_000  # characters of one text field embedded in the page
TRUNCATED = "… (truncated; full text in results.json / the database)"
STATUSES = ("passed", "failed", "error", "skipped")
EAGER_SECTIONS = 5  # experiments in the page as they are; the page builds later ones when scrolled near

# Item rows are arrays (keys once, in the page's script) with these positions.
# An output equal to the expected text is sent as 0, not a second copy (text fields are strings).
SAME_AS_EXPECTED = 0
ROW_FIELDS = ("id", "status", "input", "output", "expected", "error", "latency_ms", "tokens",
              "scores", "label", "metadata", "trajectory", "assertions", "notes", "flaky", "repeats")

# One compact encoder for the blob; ``default=str`` as in results.json.
_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str).encode
# Inside <script>, "<" could start "</script>" or "<!--"; U+2028/9 end lines in old JS.
_SCRIPT_ESCAPES = (("&", "\\u0026"), ("<", "\\u003c"), (">", "\\u003e"),
                   ("\u2028", "\\u2028"), ("\u2029", "\\u2029"))


def script_json(value: Any) -> str:
    """``value`` as JSON that can sit inside a ``<script>`` element without ending it."""
    text = _dumps(value)
    for char, escape in _SCRIPT_ESCAPES:
        if char in text:
            text = text.replace(char, escape)
    return text


def csp_hash(text: str) -> str:
    """The CSP source expression that allows exactly this inline script or stylesheet."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def field_text(value: Any) -> str | None:
    """A field as the page shows it: text as is, anything else as JSON, capped in size."""
    if value is None:
        return None
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=2, default=str)
    return text if len(text) <= FIELD_CAP else text[:FIELD_CAP] + TRUNCATED


def _verdict(score: ScoreResult) -> str:
    """``pass``/``fail`` (the scorer's verdict), ``""`` (a score without one), ``error``, ``skipped``."""
    if score.status != "success":
        return score.status
    passed = score.passed
    return "" if passed is None else "pass" if passed else "fail"


def _score_cell(score: ScoreResult | None) -> list[Any] | None:
    if score is None:
        return None
    value = score.score
    if value is not None:
        value = round(value, 4)
    return [value, _verdict(score), field_text(score.error if score.status == "error" else score.reason)]


def _assertions(value: Any) -> list[str | None] | None:
    """An item's assertions as a list of texts (one assertion given alone is a list of one)."""
    if value is None or value == "" or value == [] or value == {}:
        return None
    return [field_text(a) for a in (value if isinstance(value, (list, tuple)) else [value])]


def _ms(value: float | None) -> float | None:
    """A step's duration for the page: rounded, and none that JSON cannot carry (NaN, infinity)."""
    return None if value is None or not math.isfinite(value) else round(value, 2 if value < 1 else 1)


def _trajectory(trace: Any) -> list[Any] | None:
    """[steps counted, tool calls, [[number, label, latency, tokens, text, error, calls], ...]],
    each call [name, arguments, result, error, latency]; every text capped as any field."""
    shown = read_trajectory(trace)
    if shown is None:
        return None
    steps = [[s.number, field_text(s.label), _ms(s.latency_ms), None if s.tokens is None else s.tokens.total_tokens,
              field_text(s.text), field_text(s.error),
              [[field_text(c.name), field_text(c.arguments), field_text(c.result), field_text(c.error), _ms(c.latency_ms)] for c in s.calls]]
             for s in shown.steps]
    return [shown.step_count, shown.call_count, steps]


def _row(result: ItemResult, scorer_ids: Sequence[str]) -> list[Any]:
    item, scores = result.item, result.scores
    output, expected = field_text(result.output), field_text(item.expected)
    if output is not None and output == expected:
        output = SAME_AS_EXPECTED
    return [field_text(item.id), result.status, field_text(item.input), output, expected,
            field_text(result.error), _ms(result.latency_ms),
            None if result.usage is None else result.usage.total_tokens,
            [_score_cell(scores.get(sid)) for sid in scorer_ids], field_text(item.label),
            field_text(item.metadata) if item.metadata else None, _trajectory(result.trace), _assertions(item.assertions),
            [field_text(note) for note in result.notes] or None, result.flaky or None,
            [[r.status, field_text(r.output), field_text(r.error), _ms(r.latency_ms),
              [_score_cell(r.scores.get(sid)) for sid in scorer_ids]] for r in result.repeats] or None]


def _histogram_svg(counts: list[int]) -> dict[str, Any]:
    """Bar geometry for the template: 10 bars in a 100 x 28 box, with a label per bar."""
    top = max(counts) or 1
    bars = []
    for n, count in enumerate(counts):
        height = 0 if not count else max(1.5, 26 * count / top)
        bars.append({"x": n * 10 + 0.5, "y": round(28 - height, 2), "height": round(height, 2),
                     "title": f"{n / BINS:.1f}–{(n + 1) / BINS:.1f}: {count:,} item{'s' * (count != 1)}"})
    return {"bars": bars, "label": "score histogram: " + ", ".join(map(str, counts))}


def _run_status(run: RunInfo, results: Sequence[ExperimentResult]) -> str:
    if run.status in ("interrupted", "stopped", "crashed", "running"):
        return run.status
    passed = run.passed if run.passed is not None else all(r.passed for r in results)
    return "passed" if passed else "failed"


def _when(timestamp: str | None) -> str:
    """An ISO timestamp as people read it: ``2025-01-01 12:00:00 UTC``."""
    if not timestamp:
        return "—"
    text = timestamp.replace("T", " ", 1)
    if text.endswith("Z"):
        text = text[:-1].split(".")[0] + " UTC"
    return text


def _shares(counts: dict[str, int]) -> list[dict[str, Any]]:
    """The verdict bar: each status's share of the items, laid end to end."""
    total = sum(counts.values())
    shares, start = [], 0.0
    for status in STATUSES:
        count = counts[status]
        width = 100.0 * count / total if total else 0.0
        shares.append({"status": status, "count": count, "x": round(start, 4), "width": round(width, 4),
                       "percent": f"{width:.1f}%"})
        start += width
    return shares


def _experiment_view(number: int, result: ExperimentResult) -> dict[str, Any]:
    """What the template shows of one experiment: all of it comes from the summary."""
    summary = result.summary
    counts = {"passed": summary.passed, "failed": summary.failed, "error": summary.errored,
              "skipped": summary.skipped}
    scorers = [{"id": sid, "name": s.name, "threshold": figures.number(s.threshold, 2) if s.threshold is not None else "—",
                "mean": figures.number(s.mean), "min": figures.number(s.min), "max": figures.number(s.max),
                "corpus": None if s.corpus is None else figures.number(s.corpus),
                "pass_rate": figures.percent(s.pass_rate), "passed": s.passed, "failed": s.failed,
                "errored": s.errored, "skipped": s.skipped, "histogram": _histogram_svg(list(s.histogram or [0] * BINS))}
               for sid, s in summary.scorers.items()]
    criteria = [{"name": c.label or criterion_subject(c, " of {}"), "labelled": bool(c.label),
                 "what": criterion_subject(c, " of {}"),
                 "actual": criterion_outcome(c), "severity": c.severity, "passed": c.passed, "skipped": c.skipped,
                 "min": limit_text(c)}
                for c in summary.criteria]
    view = {
        "anchor": f"exp-{number}", "number": number, "id": result.experiment_id,
        "label": result.label or result.experiment_id, "status": result.outcome,
        "description": result.description, "tags": list(result.tags), "runner": result.runner or "—",
        "dataset": result.dataset or "—", "started_at": _when(result.started_at),
        "aborted": stop_notice(result) if result.aborted else None, "warnings": list(result.warnings),
        "total": summary.completed,
        "incomplete": INCOMPLETE if result.incomplete else None,
        "stats": [("Pass rate", figures.percent(summary.pass_rate)), ("Mean score", figures.number(summary.mean_score)),
                  (f"Pass rate {figures.level(summary.confidence)}", figures.interval(summary.pass_rate_ci, rate=True)),
                  (f"Mean score {figures.level(summary.confidence)}", figures.interval(summary.mean_score_ci)),
                  ("Avg latency", figures.ms(summary.latency_ms.mean)), ("p95 latency", figures.ms(summary.latency_ms.p95)),
                  ("Total tokens", f"{summary.tokens.total_tokens:,}"), ("Duration", figures.ms(summary.duration_ms)),
                  ("Items", f"{summary.total:,}")] + ([("Flaky items", f"{summary.flaky:,}")] if summary.flaky else []) + (
                      [("From the cache", f"{summary.cache.hits:,} of {summary.cache.hits + summary.cache.misses:,}")]
                      if summary.cache.hits else []),
        "counts": counts, "shares": _shares(counts), "scorers": scorers, "criteria": criteria,
    }
    return view


def _variants_views(results: Sequence[ExperimentResult]) -> list[dict[str, Any]]:
    """What the template shows of each experiment with variants: the variants table (the best
    figure of each column marked) and each variant's comparison with the baseline; ``numbers``
    are the variants' experiment numbers, by which the page finds their items."""
    number = {id(result): n for n, result in enumerate(results)}
    views = []
    for group in variants.groups(results):
        columns = variants.columns(group)
        rows = [{"id": row.result.variant.id, "label": row.result.variant.label, "gate": row.result.variant.gate,
                 "anchor": f"exp-{number[id(row.result)]}", "status": row.result.outcome,
                 "cells": [(variants.cell(row, c), c in row.best) for c, _ in columns],
                 "against": variants.against_baseline(row)} for row in group.rows]
        numbers = [number[id(row.result)] for row in group.rows]
        views.append({"id": group.experiment_id, "label": group.label or group.experiment_id, "anchor": f"variants-{min(numbers)}",
                      "before": min(numbers), "numbers": ",".join(map(str, numbers)),
                      "headings": [heading for _, heading in columns], "rows": rows})
    return views


@lru_cache(maxsize=None)
def asset(name: str) -> str:
    return resources.files("yamleval.reporting").joinpath("templates", name).read_text(encoding="utf-8")


@lru_cache(maxsize=None)
def template(name: str = FILE_NAME):
    """A page template (``report.html``, ``compare.html``), compiled once per machine rather than once per run: compiling it
    takes longer than rendering a small run. Jinja keeps the compiled code in its cache
    folder (a private one under the temporary directory), keyed by the template's checksum,
    as Python keeps bytecode; without a usable cache folder it compiles each time."""
    import jinja2

    try:
        cache = jinja2.FileSystemBytecodeCache()
    except Exception:  # no private temporary folder could be made: compile every time
        cache = None
    environment = jinja2.Environment(loader=jinja2.DictLoader({name: asset(name), "variants": asset("variants.html")}),
                                     autoescape=True, undefined=jinja2.StrictUndefined,
                                     trim_blocks=True, lstrip_blocks=True, bytecode_cache=cache)
    try:
        return environment.get_template(name)
    except OSError:  # the cache folder is unwritable: compile without it
        environment.bytecode_cache = None
        return environment.get_template(name)


# Stands where the data blob goes; all user text precedes it, so the last occurrence is ours.
_DATA_SLOT = "\x00yamleval-data\x00"


def _page(run: RunInfo, results: Sequence[ExperimentResult]) -> tuple[str, str]:
    """The document around the data blob: (before it, after it)."""
    from markupsafe import Markup

    script, style = asset("report.js"), asset("report.css")
    views = [_experiment_view(number, result) for number, result in enumerate(results)]
    csp = ("default-src 'none'; script-src " + csp_hash(script) + "; style-src " + csp_hash(style)
           + "; img-src data:; font-src data:; connect-src 'none'; form-action 'none'; base-uri 'none';"
           " object-src 'none'")
    run_view = {"run_id": run.run_id, "status": (status := _run_status(run, results)),
                "badge": status + (" — incomplete" if any(r.incomplete for r in results) else ""),
                "started_at": _when(run.started_at), "completed_at": _when(run.completed_at),
                "version": run.yamleval_version or "—", "python": run.python_version or "—", "host": run.host or "—",
                "git_commit": (run.git_commit or "—") + (" (uncommitted changes)" if run.git_dirty else ""),
                "config_files": list(run.config_files), "config_hash": run.config_hash or "—",
                "config_text": sorted(run.config_text.items()), "rescored_from": run.rescored_from}
    page = template().render(
        run=run_view, experiments=views, variant_groups=_variants_views(results), csp=csp, statuses=STATUSES, field_cap=f"{FIELD_CAP:,}", eager=EAGER_SECTIONS,
        script=Markup(script), style=Markup(style), data=Markup(_DATA_SLOT),
    )
    head, _, tail = page.rpartition(_DATA_SLOT)
    return head, tail


_ROWS_PER_WRITE = 1000


class _Rows:
    """One experiment's rows of the data blob as items stream by, written to ``out``."""

    def __init__(self, out: IO[str], scorer_ids: Sequence[str]):
        self.out, self.scorer_ids = out, list(scorer_ids)
        self.rows: list[list[Any]] = []
        self.first = True

    def item(self, result: ItemResult) -> None:
        self.rows.append(_row(result, self.scorer_ids))
        if len(self.rows) >= _ROWS_PER_WRITE:
            self.flush()

    def flush(self) -> None:
        if self.rows:
            self.out.write(("" if self.first else ",") + script_json(self.rows)[1:-1])
            self.rows, self.first = [], False


class Writer:
    """Writes the page as items stream by: the header from the summaries first, then the
    data blob one experiment at a time, so a large run is never held in memory."""

    def __init__(self, out: IO[str], run: RunInfo, results: Sequence[ExperimentResult]):
        self.out = out
        head, self.tail = _page(run, results)
        out.write(head)
        out.write('{"fields":' + script_json(ROW_FIELDS) + ',"experiments":[')
        self.separator = ""
        self.rows = _Rows(out, [])

    def begin(self, result: ExperimentResult) -> None:
        scorer_ids = list(result.summary.scorers)
        self.out.write(self.separator + '{"scorers":' + script_json(scorer_ids) + ',"items":[')
        self.separator = ","
        self.rows = _Rows(self.out, scorer_ids)

    def item(self, result: ItemResult) -> None:
        self.rows.item(result)

    def end(self, result: ExperimentResult) -> None:
        self.rows.flush()
        self.out.write("]}")

    def close(self) -> None:
        self.out.write("]}" + self.tail)


def render(run: RunInfo, results: Sequence[ExperimentResult]) -> str:
    """The report as one complete HTML document."""
    return render_with(Writer, run, results)
