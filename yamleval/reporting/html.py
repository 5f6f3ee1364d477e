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
from functools import lru_cache
from importlib import resources
from typing import Any, Sequence

from yamleval import figures
from yamleval.reporting.files import atomic_output
from yamleval.reporting.text import trajectory_steps
from yamleval.types import ExperimentResult, ItemResult, RunInfo, ScoreResult

FIELD_CAP = 20_000  # characters of one text field embedded in the page
TRUNCATED = "… (truncated; full text in results.json / the database)"
BINS = 10  # score histogram bins over [0, 1]
STATUSES = ("passed", "failed", "error", "skipped")

# Item rows are arrays (keys once, in the page's script) with these positions.
# An output equal to the expected text is sent as 0, not a second copy (text fields are strings).
SAME_AS_EXPECTED = 0
ROW_FIELDS = ("id", "status", "input", "output", "expected", "error", "latency_ms", "tokens",
              "scores", "label", "metadata", "trajectory")

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


def _text(value: Any) -> str | None:
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
    return [value, _verdict(score), _text(score.error if score.status == "error" else score.reason)]


def _row(result: ItemResult, scorer_ids: Sequence[str]) -> list[Any]:
    item, scores = result.item, result.scores
    output, expected = _text(result.output), _text(item.expected)
    if output is not None and output == expected:
        output = SAME_AS_EXPECTED
    return [_text(item.id), result.status, _text(item.input), output, expected,
            _text(result.error), round(result.latency_ms, 1),
            None if result.usage is None else result.usage.total_tokens,
            [_score_cell(scores.get(sid)) for sid in scorer_ids], _text(item.label),
            _text(item.metadata) if item.metadata else None, _trajectory(result.trace)]


def _trajectory(trace: Any) -> list[list[str]] | None:
    """The runner's steps as [title, details] pairs, each capped like any other field."""
    steps = trajectory_steps(trace)
    return [[_text(title), _text(details)] for title, details in steps] if steps else None


def _histograms(items: Sequence[ItemResult], scorer_ids: Sequence[str]) -> dict[str, list[int]]:
    bins = {sid: [0] * BINS for sid in scorer_ids}
    for result in items:
        for sid, score in result.scores.items():
            counts = bins.get(sid)
            if counts is not None and score.status == "success" and score.score is not None:
                counts[min(int(score.score * BINS), BINS - 1)] += 1
    return bins


def _histogram_svg(counts: list[int]) -> dict[str, Any]:
    """Bar geometry for the template: 10 bars in a 100 x 28 box, with a label per bar."""
    top = max(counts) or 1
    bars = []
    for n, count in enumerate(counts):
        height = 0 if not count else max(1.5, 26 * count / top)
        bars.append({"x": n * 10 + 0.5, "y": round(28 - height, 2), "height": round(height, 2),
                     "title": f"{n / BINS:.1f}–{(n + 1) / BINS:.1f}: {count:,} item{'s' * (count != 1)}"})
    return {"bars": bars, "label": "score histogram: " + ", ".join(map(str, counts))}


def _status(result: ExperimentResult) -> str:
    if result.interrupted:
        return "interrupted"
    return "passed" if result.passed else "failed"


def _run_status(run: RunInfo, results: Sequence[ExperimentResult]) -> str:
    if run.status in ("interrupted", "crashed", "running"):
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


def _experiment_view(number: int, result: ExperimentResult) -> tuple[dict[str, Any], dict[str, Any]]:
    """What the template shows of one experiment, and its part of the data blob."""
    summary = result.summary
    scorer_ids = list(summary.scorers)
    counts = dict.fromkeys(STATUSES, 0)
    for item in result.items:
        counts[item.status] = counts.get(item.status, 0) + 1
    histograms = _histograms(result.items, scorer_ids)
    scorers = [{"id": sid, "name": s.name, "threshold": figures.number(s.threshold, 2) if s.threshold is not None else "—",
                "mean": figures.number(s.mean), "min": figures.number(s.min), "max": figures.number(s.max),
                "pass_rate": figures.percent(s.pass_rate), "passed": s.passed, "failed": s.failed,
                "errored": s.errored, "skipped": s.skipped, "histogram": _histogram_svg(histograms[sid])}
               for sid, s in summary.scorers.items()]
    criteria = [{"name": c.label or (c.type + (f" of {c.scorer}" if c.scorer else "")), "labelled": bool(c.label),
                 "what": c.type + (f" of {c.scorer}" if c.scorer else ""),
                 "actual": figures.number(c.actual), "min": figures.number(c.min), "severity": c.severity, "passed": c.passed}
                for c in summary.criteria]
    view = {
        "anchor": f"exp-{number}", "number": number, "id": result.experiment_id,
        "label": result.label or result.experiment_id, "status": _status(result),
        "description": result.description, "tags": list(result.tags), "runner": result.runner or "—",
        "dataset": result.dataset or "—", "started_at": _when(result.started_at),
        "aborted": result.aborted, "warnings": list(result.warnings), "total": len(result.items),
        "stats": [("Pass rate", figures.percent(summary.pass_rate)), ("Mean score", figures.number(summary.mean_score)),
                  ("Avg latency", figures.ms(summary.latency_ms.mean)), ("p95 latency", figures.ms(summary.latency_ms.p95)),
                  ("Total tokens", f"{summary.tokens.total_tokens:,}"), ("Duration", figures.ms(summary.duration_ms)),
                  ("Items", f"{summary.total:,}")],
        "counts": counts, "shares": _shares(counts), "scorers": scorers, "criteria": criteria,
    }
    data = {"scorers": scorer_ids, "items": [_row(item, scorer_ids) for item in result.items]}
    return view, data


@lru_cache(maxsize=None)
def _asset(name: str) -> str:
    return resources.files("yamleval.reporting").joinpath("templates", name).read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def _template():
    import jinja2

    environment = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined,
                                     trim_blocks=True, lstrip_blocks=True)
    return environment.from_string(_asset("report.html"))


# Stands where the data blob goes; all user text precedes it, so the last occurrence is ours.
_DATA_SLOT = "\x00yamleval-data\x00"


def _parts(run: RunInfo, results: Sequence[ExperimentResult]) -> tuple[str, str, str]:
    """The document as (before the data blob, the blob, after it): no copy of the blob is made."""
    from markupsafe import Markup

    script, style = _asset("report.js"), _asset("report.css")
    views, blobs = [], []
    for number, result in enumerate(results):
        view, data = _experiment_view(number, result)
        views.append(view)
        blobs.append(data)
    csp = ("default-src 'none'; script-src " + csp_hash(script) + "; style-src " + csp_hash(style)
           + "; img-src data:; font-src data:; connect-src 'none'; form-action 'none'; base-uri 'none';"
           " object-src 'none'")
    run_view = {"run_id": run.run_id, "status": _run_status(run, results), "started_at": _when(run.started_at),
                "completed_at": _when(run.completed_at), "version": run.yamleval_version or "—",
                "python": run.python_version or "—", "host": run.host or "—",
                "git_commit": (run.git_commit or "—") + (" (uncommitted changes)" if run.git_dirty else ""),
                "config_files": list(run.config_files), "config_hash": run.config_hash or "—"}
    page = _template().render(
        run=run_view, experiments=views, csp=csp, statuses=STATUSES, field_cap=f"{FIELD_CAP:,}",
        script=Markup(script), style=Markup(style), data=Markup(_DATA_SLOT),
    )
    head, _, tail = page.rpartition(_DATA_SLOT)
    return head, script_json({"fields": ROW_FIELDS, "experiments": blobs}), tail


def render(run: RunInfo, results: Sequence[ExperimentResult]) -> str:
    """The report as one complete HTML document."""
    return "".join(_parts(run, results))


def write(path: str, run: RunInfo, results: Sequence[ExperimentResult]) -> str:
    """Write the report to ``path`` atomically (a temporary file renamed over it)."""
    parts = _parts(run, results)
    with atomic_output(path) as out:
        out.writelines(parts)
    return path
