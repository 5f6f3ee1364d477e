"""An item result as one JSON record: how the store keeps it and how results.json shows it.

Encoding a record read back from the store gives the text stored, so a re-rendered report
has the same bytes.
"""
from __future__ import annotations

import dataclasses
import json
import math
import re
from typing import Any

from yamleval.records.reviews import Agreement, HumanVerdict
from yamleval.records.types import (Breakdown, CacheUse, CriterionResult, Item, ItemResult, LatencySummary, ScoreResult,
                            ScorerSummary, Slice, Summary, Throttling, Usage)

# json.dumps(value, ensure_ascii=False, default=str, allow_nan=False) without building an encoder per call
_encode = json.JSONEncoder(ensure_ascii=False, default=str, allow_nan=False).encode

MAX_DEPTH = 200  # levels of nesting written; deeper values (data, metadata) are cut there
_NON_FINITE = {math.inf: "Infinity", -math.inf: "-Infinity"}


def encode(value: Any) -> str:
    """``value`` as JSON text. Values JSON cannot hold are written so that the text stays valid
    JSON: NaN and infinities as the strings "NaN", "Infinity" and "-Infinity", a reference cycle
    or nesting past MAX_DEPTH as a note in brackets, other objects as their ``str()``. That
    repair is made only when plain encoding fails, so ordinary values cost nothing extra."""
    try:
        return _encode(value)
    except (ValueError, TypeError, RecursionError):  # NaN, a cycle, an int of 4300+ digits, odd keys
        return _encode(_writable(value, (), 0))


def _writable(value: Any, parents: tuple, depth: int) -> Any:
    """A copy of ``value`` that JSON can hold (see ``encode``)."""
    if isinstance(value, str) or value is None or value is True or value is False:
        return value
    if isinstance(value, int):
        return value if value.bit_length() < 14_000 else "[an integer too long to write]"
    if isinstance(value, float):
        return value if math.isfinite(value) else _NON_FINITE.get(value, "NaN")
    if depth >= MAX_DEPTH:
        return f"[nested more than {MAX_DEPTH} levels deep]"
    if id(value) in parents:
        return "[circular reference]"
    inner = parents + (id(value),)
    if isinstance(value, dict):
        return {_key(k): _writable(v, inner, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_writable(v, inner, depth + 1) for v in value]
    return _text(value)


def _key(key: Any) -> str:
    return key if isinstance(key, str) else _text(_writable(key, (), 0))


def _text(value: Any) -> str:
    """``str(value)``, or its type's name when even that fails."""
    try:
        return str(value)
    except Exception:
        return f"<{type(value).__name__}>"


def _score(s: ScoreResult) -> dict[str, Any]:
    out = {"score": s.score, "status": s.status, "threshold": s.threshold, "passed": s.passed,
           "reason": s.reason if s.error is None else s.error}
    if s.error is not None:
        out["error"] = s.error
    if s.metadata:
        out["metadata"] = s.metadata
    if s.usage is not None:
        out["tokens"] = tokens(s.usage)
    return out


def tokens(usage: Usage) -> dict[str, Any]:
    out: dict[str, Any] = {"prompt": usage.prompt_tokens, "completion": usage.completion_tokens}
    if usage.cost is not None:
        out["cost"] = usage.cost
    return out


def _usage(d: dict[str, Any] | None) -> Usage | None:
    return None if d is None else Usage(d["prompt"], d["completion"], d.get("cost"))


def item_record(result: ItemResult) -> dict[str, Any]:
    """Everything about one item; optional fields only when they have a value."""
    item = result.item
    out: dict[str, Any] = {
        "id": item.id, "index": item.index, "status": result.status, "input": item.input,
        "expected": item.expected, "output": result.output, "latency_ms": result.latency_ms,
        "error": result.error, "scores": {sid: _score(s) for sid, s in result.scores.items()},
    }
    if item.label is not None:
        out["label"] = item.label
    if item.context is not None:
        out["context"] = item.context
    if item.assertions is not None:
        out["assertions"] = item.assertions
    if item.metadata:
        out["metadata"] = item.metadata
    if item.source is not None:
        out["source"] = item.source
    if item.human_verdict is not None:
        out["human_verdict"] = item.human_verdict
    _add_run(out, result)
    if result.flaky:
        out["flaky"] = True
    if result.human is not None:
        h = result.human
        out["human"] = {"verdict": h.verdict, "machine": h.machine, "source": h.source, "by": h.by, "at": h.at,
                        "note": h.note, "reviews": h.reviews}
    if result.repeats:
        out["repeats"] = [_add_run({"status": r.status, "output": r.output, "latency_ms": r.latency_ms,
                                    "error": r.error, "scores": {sid: _score(s) for sid, s in r.scores.items()}}, r)
                          for r in result.repeats]
    return out


def _cache(use: CacheUse) -> dict[str, Any]:
    out = {"hits": use.hits, "misses": use.misses, "saved_tokens": use.saved_tokens, "saved_cost": use.saved_cost}
    # kept where they happened, so a report rendered from the store says what the run's own said
    out.update({key: getattr(use, key) for key in ("damaged", "not_cached") if getattr(use, key)})
    return out


def _add_run(out: dict[str, Any], result: ItemResult) -> dict[str, Any]:
    """``out`` with what the runner said beside its output, when it said it."""
    if result.usage is not None:
        out["tokens"] = tokens(result.usage)
    if result.metadata:
        out["output_metadata"] = result.metadata
    if result.trace is not None:
        out["trace"] = result.trace
    if result.cache is not None:
        out["cache"] = _cache(result.cache)
    return out


def item_from_record(d: dict[str, Any], text: str | None = None) -> ItemResult:
    """The item a record holds (``text``: the record's text, kept on the result). Arguments go
    by position (the fields' order in ``types``): a report reads back every item of a run, and
    keywords cost a third more."""
    get = d.get
    item = Item(d["id"], d["index"], d["input"], d["expected"], get("context"), get("assertions"), get("metadata"),
                get("label"), get("source"), get("human_verdict"))
    repeats = get("repeats")
    result = _result(item, d, tuple(_result(item, r) for r in repeats) if repeats else (), get("flaky", False))
    human = get("human")
    if human is not None:
        result = dataclasses.replace(result, human=HumanVerdict(**human))
    if text is not None:
        object.__setattr__(result, "record", text)
    return result


def _result(item: Item, d: dict[str, Any], repeats: tuple = (), flaky: bool = False) -> ItemResult:
    get = d.get
    scores = {}
    for sid, s in d["scores"].items():
        if len(s) == 5:  # score, status, threshold, passed, reason: nothing else to look for
            scores[sid] = ScoreResult(sid, s["status"], s["score"], s["passed"], s["threshold"], s["reason"])
        else:
            scores[sid] = ScoreResult(sid, s["status"], s["score"], s["passed"], s["threshold"],
                                      None if "error" in s else s["reason"], s.get("error"), s.get("metadata"),
                                      _usage(s.get("tokens")))
    tokens = get("tokens")
    cache = get("cache")
    return ItemResult(item, d["status"], d["output"], d["error"], d["latency_ms"],
                      None if tokens is None else _usage(tokens), scores, get("output_metadata"), get("trace"),
                      repeats, flaky, None if cache is None else CacheUse(**cache))


def encode_record(result: ItemResult) -> str:
    """The item's record as the store keeps it and ``results.json`` shows it."""
    if result.record is not None:
        return result.record
    return storable_text(encode(item_record(result)))


def storable_text(text: str) -> str:
    """``text`` with lone surrogates (which a runner or dataset may hand over, but UTF-8,
    SQLite and every report file cannot hold) replaced by U+FFFD; ASCII text is checked
    in one fast pass."""
    if text.isascii():
        return text
    return _SURROGATE.sub("\ufffd", text)


_SURROGATE = re.compile("[\ud800-\udfff]")  # in a str every surrogate is a lone one


def summary_to_json(s: Summary) -> str:
    return encode(_summary_fields(s))


def _summary_fields(s: Summary) -> dict[str, Any]:
    return ({
        "total": s.total, "completed": s.completed, "passed": s.passed, "failed": s.failed, "errored": s.errored,
        "skipped": s.skipped, "mean_score": s.mean_score, "pass_rate": s.pass_rate, "duration_ms": s.duration_ms,
        "latency_ms": [s.latency_ms.mean, s.latency_ms.p50, s.latency_ms.p95, s.latency_ms.max, s.latency_ms.p90,
                       s.latency_ms.p99],
        "tokens": [s.tokens.prompt_tokens, s.tokens.completion_tokens, s.tokens.cost],
        "judge_tokens": [s.judge_tokens.prompt_tokens, s.judge_tokens.completion_tokens, s.judge_tokens.cost],
        "scorers": [[x.id, x.name, x.threshold, x.mean, x.min, x.max, x.pass_rate, x.passed, x.failed, x.errored,
                     x.skipped, x.histogram, x.pass_rate_ci, x.mean_ci, x.corpus] for x in s.scorers.values()],
        "criteria": [[c.type, c.min, c.actual, c.passed, c.severity, c.scorer, c.label, c.source, c.max,
                      c.percentile, c.per_item, c.bound, c.confidence, c.baseline, c.alpha, c.margin, c.skipped,
                      c.detail, c.metric] for c in s.criteria],
        "throttling": [s.throttling.calls, s.throttling.throttled, s.throttling.waited_seconds],
        "noted": s.noted,
        "confidence": s.confidence, "pass_rate_ci": s.pass_rate_ci, "mean_score_ci": s.mean_score_ci,
        "flaky": s.flaky, "cache": _cache(s.cache),
    } | ({"breakdowns": [[b.field, b.other, [[x.value, _summary_fields(x.summary)] for x in b.slices]]
                         for b in s.breakdowns]} if s.breakdowns else {})
      | ({"reviewed": s.reviewed, "overruled": s.overruled} if s.reviewed else {})
      | ({"agreement": [[a.scorer, a.matrix, a.rate, a.kappa, a.kappa_ci, a.rate_ci] for a in s.agreement.values()]}
         if s.agreement else {}))


def _interval(value: list | None) -> tuple[float, float] | None:
    return None if value is None else (value[0], value[1])


def summary_from_json(text: str) -> Summary:
    return _summary(json.loads(text))


def _summary(d: dict[str, Any]) -> Summary:
    get = d.get  # what summaries stored before it was kept lack: no throttling, no intervals
    return Summary(
        total=d["total"], completed=d["completed"], passed=d["passed"], failed=d["failed"], errored=d["errored"],
        skipped=d["skipped"], mean_score=d["mean_score"], pass_rate=d["pass_rate"], duration_ms=d["duration_ms"],
        latency_ms=LatencySummary(*d["latency_ms"]), tokens=Usage(*d["tokens"]),
        scorers={x[0]: ScorerSummary(*x[:11], histogram=tuple(x[11]) if len(x) > 11 and x[11] else None,
                                     pass_rate_ci=_interval(x[12]) if len(x) > 12 else None,
                                     mean_ci=_interval(x[13]) if len(x) > 13 else None,
                                     corpus=x[14] if len(x) > 14 else None)
                 for x in d["scorers"]},
        criteria=tuple(CriterionResult(*c) for c in d["criteria"]), judge_tokens=Usage(*d["judge_tokens"]),
        throttling=Throttling(*get("throttling", ())), noted=get("noted", 0), confidence=get("confidence", 0.95),
        pass_rate_ci=_interval(get("pass_rate_ci")), mean_score_ci=_interval(get("mean_score_ci")),
        flaky=get("flaky", 0), cache=CacheUse(**get("cache", {})),
        breakdowns=tuple(Breakdown(field, tuple(Slice(value, _summary(x)) for value, x in slices), other)
                         for field, other, slices in get("breakdowns", ())),
        reviewed=get("reviewed", 0), overruled=get("overruled", 0),
        agreement={a[0]: Agreement(a[0], (tuple(a[1][0]), tuple(a[1][1])), a[2], a[3], _interval(a[4]), _interval(a[5]))
                   for a in get("agreement", ())},
    )
