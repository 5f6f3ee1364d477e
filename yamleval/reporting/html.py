"""``report.html``: the whole run as one self-contained page, safe to open from disk and to share.

Jinja2 (autoescaped) renders the headers, statistics, breakdowns and run details; the items
travel in a ``<script type="application/json">`` element as compressed chunks (``html_data``),
in JSON escaped so that no text can end that element, and the page's script renders them a
page at a time, inserting every value as text. A Content-Security-Policy pinned to the hashes
of the inline script and stylesheet forbids every network request.
"""
from __future__ import annotations

import base64
import hashlib
from functools import lru_cache
from importlib import resources
from typing import IO, Any, Sequence

from yamleval.records import figures
from yamleval.analysis.aggregate import BINS
from yamleval.analysis.verdict import run_passed
from yamleval.reporting import variants
from yamleval.reporting import breakdowns
from yamleval.reporting import people
from yamleval.reporting.files import render_with
from yamleval.reporting.html_data import FIELD_CAP, MAX_MB, ROW_FIELDS, Budget, Rows, Texts, dumps
from yamleval.reporting.text import INCOMPLETE, criterion_outcome, criterion_subject, limit_text, shown_label, stop_notice
from yamleval.records.types import Breakdown, ExperimentResult, ItemResult, RunInfo

FILE_NAME = "report.html"  # in the report folder
STATUSES = ("passed", "failed", "error", "skipped")
EAGER_SECTIONS = 5  # experiments in the page as they are; the page builds later ones when scrolled near

# Inside <script>, "<" could start "</script>" or "<!--"; U+2028/9 end lines in old JS.
_SCRIPT_ESCAPES = (("&", "\\u0026"), ("<", "\\u003c"), (">", "\\u003e"),
                   ("\u2028", "\\u2028"), ("\u2029", "\\u2029"))


def script_json(value: Any) -> str:
    """``value`` as JSON that can sit inside a ``<script>`` element without ending it."""
    text = dumps(value)
    for char, escape in _SCRIPT_ESCAPES:
        if char in text:
            text = text.replace(char, escape)
    return text


def csp_hash(text: str) -> str:
    """The CSP source expression that allows exactly this inline script or stylesheet."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


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
    if run.status in ("interrupted", "stopped", "aborted", "crashed", "running"):
        return run.status
    passed = run.passed if run.passed is not None else run_passed(results)
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


def _cache_tile(use) -> str:
    """``14 of 26 calls``: the answers read from the cache of every call the items asked for, the
    judge calls never cached (at a temperature above 0) among them, so that what was paid shows."""
    asked = use.hits + use.misses + use.not_cached
    return f"{use.hits:,} of {asked:,} call{'s' * (asked != 1)}"


def experiment_view(number: int, result: ExperimentResult) -> dict[str, Any]:
    """What the template shows of one experiment: all of it comes from the summary."""
    summary = result.summary
    counts = {"passed": summary.passed, "failed": summary.failed, "error": summary.errored,
              "skipped": summary.skipped}
    scorers = [{"id": sid, "name": s.name, "threshold": format(s.threshold, ".15g") if s.threshold is not None else "—",
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
        "label": shown_label(result), "status": result.outcome,
        "description": result.description, "tags": list(result.tags), "runner": result.runner or "—",
        "dataset": result.dataset or "—", "started_at": _when(result.started_at),
        "aborted": stop_notice(result) if result.aborted else None, "warnings": list(result.warnings),
        "total": summary.completed,
        "incomplete": INCOMPLETE if result.incomplete else None,
        "stats": [("Pass rate", figures.percent(summary.pass_rate)), ("Mean score", figures.number(summary.mean_score)),
                  (f"Pass rate {figures.level(summary.confidence)}", figures.interval(summary.pass_rate_ci, rate=True)),
                  (f"Mean score {figures.level(summary.confidence)}", figures.interval(summary.mean_score_ci)),
                  ("Mean latency", figures.ms(summary.latency_ms.mean)), ("p95 latency", figures.ms(summary.latency_ms.p95)),
                  ("Total tokens", f"{summary.tokens.total_tokens:,}")]
                 + ([("Cost", figures.dollars(summary.tokens.cost))] if summary.tokens.cost is not None else [])
                 + ([("Judge tokens", f"{summary.judge_tokens.total_tokens:,}")] if summary.judge_tokens.total_tokens else [])
                 + ([("Judge cost", figures.dollars(summary.judge_tokens.cost))]
                    if summary.judge_tokens.cost is not None else [])
                 + [("Duration", figures.ms(summary.duration_ms)),
                  ("Items", f"{summary.completed:,}" + ("" if summary.completed == summary.total else f" of {summary.total:,}"))] + ([("Flaky items", f"{summary.flaky:,}")] if summary.flaky else []) + (
                      [("Reviewed", people.reviewed_tile(summary))] if summary.reviewed else []) + (
                      [("From the cache", _cache_tile(summary.cache))] if summary.cache.hits else []),
        "counts": counts, "shares": _shares(counts), "flaky": summary.flaky, "scorers": scorers, "criteria": criteria,
        "people": people.html_view(summary),
        "breakdowns": [_breakdown_view(b, figures.level(summary.confidence)) for b in summary.breakdowns],
    }
    return view


def _variants_views(results: Sequence[ExperimentResult]) -> list[dict[str, Any]]:
    """What the template shows of each experiment with variants: the variants table (the best
    figure of each column marked) and each variant's comparison with the baseline; ``numbers``
    are the variants' experiment numbers, by which the page finds their items."""
    number = {id(result): n for n, result in enumerate(results)}
    views = []
    for group in variants.tables(results):
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


def _breakdown_view(breakdown: Breakdown, level: str) -> dict[str, Any]:
    """A breakdown's table, each row with the geometry of its pass-rate bar (and interval) in a 100 x 10 box."""
    rows = []
    for found in breakdown.slices:
        rate, ci = found.summary.pass_rate, found.summary.pass_rate_ci
        rows.append({"cells": breakdowns.row(found), "width": round(100 * (rate or 0), 2),
                     "ci": None if ci is None else (round(100 * ci[0], 2), round(100 * ci[1], 2))})
    return {"field": breakdown.field, "headline": breakdowns.headline(breakdown),
            "header": breakdowns.header(breakdown, level), "rows": rows}


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
    pages = {name: asset(name), "head": asset("head.html"), "variants": asset("variants.html"),
             "served_nav": asset("served_nav.html"), "live": asset("live.html")}
    environment = jinja2.Environment(loader=jinja2.DictLoader(pages),
                                     autoescape=True, undefined=jinja2.StrictUndefined,
                                     trim_blocks=True, lstrip_blocks=True, bytecode_cache=cache)
    environment.filters["count"] = figures.count  # {{ n | count("variant") }}: "1 variant", "3 variants"
    try:
        return environment.get_template(name)
    except OSError:  # the cache folder is unwritable: compile without it
        environment.bytecode_cache = None
        return environment.get_template(name)


# Stands where the data blob goes; all user text precedes it, so the last occurrence is ours.
_DATA_SLOT = "\x00yamleval-data\x00"


CONFIG_SHARE = 0.1  # of the page's size, at most, for the stored config files' text


def _config_text(texts: dict[str, str], max_bytes: float) -> list[tuple[str, str]]:
    """The config files as the page shows them: each cut to its share of ``max_bytes``."""
    share = int(max_bytes / max(len(texts), 1))
    shown = []
    for name, text in sorted(texts.items()):
        size = len(text.encode("utf-8"))
        if size > share:
            kept = text.encode("utf-8")[:share].decode("utf-8", "ignore")
            text = (f"{kept}\n… cut here: the file is {size:,} bytes, more than this page keeps of it"
                    " (`max_html_mb`); the results database keeps it whole")
        shown.append((name, text))
    return shown


def page_csp(scripts: Sequence[str], style: str, connect: str = "'none'", form_action: str = "'none'") -> str:
    """The Content-Security-Policy of a page with exactly these inline scripts and stylesheet:
    nothing else runs or loads; ``connect``: where its script may send requests (a served page: 'self');
    ``form_action``: where its forms may send (the Eval Center's own pages: 'self')."""
    script_src = " ".join(csp_hash(s) for s in scripts) or "'none'"
    return ("default-src 'none'; script-src " + script_src + "; style-src " + csp_hash(style)
            + f"; img-src data:; font-src data:; connect-src {connect}; form-action {form_action}; base-uri 'none';"
            " object-src 'none'")


def _page(run: RunInfo, results: Sequence[ExperimentResult], max_mb: float = MAX_MB,
          served: dict[str, Any] | None = None) -> tuple[str, str]:
    """The document around the data blob: (before it, after it). ``served``: what the Eval
    Center adds (``served_page``); then the page's script reads its rows from the server."""
    from markupsafe import Markup

    script, style = asset("report.js"), asset("report.css")
    served_script = asset("served.js") if served else ""
    views = [experiment_view(number, result) for number, result in enumerate(results)]
    csp = page_csp([served_script, script] if served else [script], style, "'self'" if served else "'none'")
    run_view = {"run_id": run.run_id, "status": (status := _run_status(run, results)),
                "badge": status + (" — incomplete" if any(r.incomplete for r in results) else ""),
                "started_at": _when(run.started_at), "completed_at": _when(run.completed_at),
                "version": run.yamleval_version or "—", "python": run.python_version or "—", "host": run.host or "—",
                "git_commit": (run.git_commit or "—") + (" (uncommitted changes)" if run.git_dirty else ""),
                "config_files": list(run.config_files), "config_hash": run.config_hash or "—",
                "config_text": _config_text(dict(run.config_text), max_mb * 1e6 * CONFIG_SHARE), "rescored_from": run.rescored_from,
                "retried_from": run.retried_from}
    page = template().render(
        run=run_view, experiments=views, variant_groups=_variants_views(results), csp=csp, statuses=STATUSES, field_cap=f"{FIELD_CAP:,}", eager=EAGER_SECTIONS,
        script=Markup(script), style=Markup(style), data=Markup(_DATA_SLOT),
        served=served, served_script=Markup(served_script),
    )
    head, _, tail = page.rpartition(_DATA_SLOT)
    return head, tail


class Writer:
    """Writes the page as items stream by: the header from the summaries first, then the
    data blob one experiment at a time, so a large run is never held in memory.
    ``max_mb`` (a format variant, ``html:10``): the size the page keeps within by cutting long texts."""

    def __init__(self, out: IO[str], run: RunInfo, results: Sequence[ExperimentResult], max_mb: str | None = None,
                 served: dict[str, Any] | None = None):
        self.out = out
        self.max_mb = float(max_mb) if max_mb else MAX_MB
        head, self.tail = _page(run, results, self.max_mb, served)
        out.write(head)
        out.write('{"fields":' + script_json(ROW_FIELDS) + ("" if served is None else ',"served":' + script_json(served))
                  + ',"experiments":[')
        page = len(head.encode("utf-8")) + len(self.tail.encode("utf-8"))
        self.budget = Budget(self.max_mb * 1e6 - page - 1000 * len(results),
                              sum(r.summary.completed for r in results))
        self.texts = Texts()
        self.separator = ""
        self.rows = Rows(out, [], [], self.texts, self.budget)

    def begin(self, result: ExperimentResult) -> None:
        scorer_ids = list(result.summary.scorers)
        thresholds = [s.threshold for s in result.summary.scorers.values()]
        self.out.write(self.separator + '{"scorers":' + script_json(scorer_ids) + ',"thresholds":'
                       + script_json(thresholds) + ',"count":' + str(result.summary.completed) + ',"chunks":[')
        self.separator = ","
        values = [(b.field, {x.value: n for n, x in enumerate(b.slices)}) for b in result.summary.breakdowns]
        self.rows = Rows(self.out, scorer_ids, values, self.texts, self.budget)

    def item(self, result: ItemResult) -> None:
        self.rows.item(result)

    def end(self, result: ExperimentResult) -> None:
        self.rows.flush()
        self.out.write("]}")

    def close(self) -> None:
        cut = {"texts": self.texts.cut, "cap": self.texts.cap, "max_mb": self.max_mb, "budget": self.texts.cap < FIELD_CAP}
        self.out.write('],"cut":' + script_json(cut) + "}" + self.tail)


def render(run: RunInfo, results: Sequence[ExperimentResult]) -> str:
    """The report as one complete HTML document."""
    return render_with(Writer, run, results)


def served_page(run: RunInfo, results: Sequence[ExperimentResult], served: dict[str, Any],
                items: Sequence[ItemResult] = ()) -> str:
    """The report of a run as ``yamleval serve`` serves it: the same page, its items read from
    the server a page at a time (``served["rows"]``: where), or only ``items`` (one item's page,
    ``served["item"]``), with the run's live progress while it runs (``served["live"]``)."""
    import io

    out = io.StringIO()
    writer = Writer(out, run, results, served=served)
    for result in results:
        writer.begin(result)
        for item in items:
            writer.item(item)
        writer.end(result)
    writer.close()
    return out.getvalue()
