"""``junit.xml``: the run as JUnit XML, for test-report actions in CI.

One ``<testsuite>`` per experiment and one ``<testcase>`` per item
(``classname="yamleval.<experiment id>"``), then one per pass criterion
(``classname="yamleval.<experiment id>.criteria"``). A failed item is a
``<failure>``, an errored item an ``<error>``, a skipped item ``<skipped>``.
A failed warn-severity criterion is ``<skipped>`` with the miss as its message:
it must not fail the report, and test-report actions list skipped cases with
their message while they hide passed ones and their ``<system-out>``.

The shape follows the lenient ``junit-10.xsd`` (pytest's target) plus one
extension that consumers read: ``skipped`` on ``<testsuites>``. Every string is
cleaned to XML 1.0 characters and capped, and nothing depends on the clock,
so the same results always give the same bytes.
"""
from __future__ import annotations

import json
import math
import os
import re
import xml.etree.ElementTree as ET
from typing import Any, Iterable, Sequence

from yamleval.types import CriterionResult, ExperimentResult, ItemResult, RunInfo

TEXT_LIMIT = 64 * 1024  # bytes of UTF-8 per text; libxml2-based readers refuse nodes over 10 MB
MESSAGE_LIMIT = 200  # the one-line message attribute
NAME_LIMIT = 512
TRUNCATED = "… (truncated)"

# CSI (colours, cursor moves), OSC (titles, hyperlinks) and two-byte escapes
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]")
# outside XML 1.0 Char (even as &#NN;), plus DEL and C1 controls; 8-digit escapes for astral
_ILLEGAL = re.compile("[^\t\n\r\x20-\x7e\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_SPACE = re.compile(r"\s+")


def clean_text(text: str, limit: int = TEXT_LIMIT) -> str:
    """``text`` without ANSI escapes and characters XML 1.0 cannot hold, cut to
    ``limit`` bytes of UTF-8 with a visible marker when it was longer."""
    cut = len(text) > limit
    if cut:  # cleaning only removes characters: no need to look past the limit
        text = text[:limit]
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    text = _ILLEGAL.sub("", text)
    if len(text) * 4 > limit:
        data = text.encode("utf-8")
        if len(data) > limit:
            text, cut = data[:limit].decode("utf-8", "ignore"), True
    return text + TRUNCATED if cut else text


def one_line(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """``text`` cleaned, its whitespace runs collapsed to one space, at most ``limit`` characters."""
    text = _SPACE.sub(" ", clean_text(text, limit * 4)).strip()
    return text if len(text) <= limit else text[:limit - len(TRUNCATED)] + TRUNCATED


def as_text(value: Any, indent: int | None = 2) -> str:
    """A value as people read it: strings as they are, anything else as JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str, indent=indent)


def _score(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def item_message(result: ItemResult) -> str:
    """Why an item did not pass, in a line: the error, or each failing scorer with
    its score against the threshold and its reason."""
    if result.error:
        return result.error
    if result.status == "skipped":
        return "skipped: " + "; ".join(f"{sid}: {s.reason or 'no score'}" for sid, s in result.scores.items())
    misses = []
    for sid, s in result.scores.items():
        if s.passed is not False:
            continue
        if s.threshold is not None and s.score is not None and s.score < s.threshold:
            miss = f"{sid} {_score(s.score)} < {s.threshold:g}"
        else:
            miss = f"{sid} failed" + (f" ({_score(s.score)})" if s.score is not None else "")
        misses.append(miss + (f": {s.reason}" if s.reason else ""))
    return "; ".join(misses) or result.status


def criterion_name(criterion: CriterionResult) -> str:
    """``pass_rate[exact_match] >= 0.9``, after the label when there is one."""
    subject = criterion.type + (f"[{criterion.scorer}]" if criterion.scorer else "")
    rule = f"{subject} >= {criterion.min:g}"
    return f"{criterion.label} ({rule})" if criterion.label else rule


def criterion_message(criterion: CriterionResult) -> str:
    subject = criterion.type + (f" of {criterion.scorer}" if criterion.scorer else "")
    if criterion.actual is None:
        return f"{subject}: no value (nothing was scored), needs at least {criterion.min:g}"
    relation = ">=" if criterion.passed else "<"
    return f"{subject} {criterion.actual:.3f} {relation} min {criterion.min:g}"


def _seconds(milliseconds: float | None) -> str:
    # junit-10.xsd allows at most three decimals; no exponent, no NaN
    if milliseconds is None or not math.isfinite(milliseconds) or milliseconds < 0:
        return "0.000"
    return f"{milliseconds / 1000.0:.3f}"


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:.6g}"


class _Names:
    """Unique testcase names within one classname: ``a``, ``a #2``, ``a #3``."""

    def __init__(self) -> None:
        self.seen: set[str] = set()

    def __call__(self, name: str) -> str:
        name = one_line(name, NAME_LIMIT) or "(unnamed)"
        unique, n = name, 1
        while unique in self.seen:
            n += 1
            unique = f"{name} #{n}"
        self.seen.add(unique)
        return unique


def _sub(parent: ET.Element, tag: str, text: str | None = None, **attributes: str) -> ET.Element:
    element = ET.SubElement(parent, tag, {k.rstrip("_"): v for k, v in attributes.items()})
    if text:
        element.text = text
    return element


def _details(result: ItemResult, message: str) -> str:
    """The body of a failure or error: the one-line message first (some readers show
    only the start of the text), then the whole message if that was cut, the scores,
    input, expected and output."""
    first = one_line(message)
    parts = [first, ""]
    whole = clean_text(message)
    if whole != first:
        parts += ["message:", whole]
    if result.scores:
        parts.append("scores:")
        for sid, s in result.scores.items():
            line = f"  {sid}: {s.status}"
            if s.score is not None:
                line += f" {_score(s.score)}"
            if s.threshold is not None:
                line += f" (threshold {s.threshold:g})"
            if s.passed is not None:
                line += " passed" if s.passed else " failed"
            if s.error or s.reason:
                line += f" — {one_line(s.error or s.reason or '', 1000)}"
            parts.append(line)
    for title, value in (("input", result.item.input), ("expected", result.item.expected),
                         ("output", result.output)):
        if value is not None:
            parts += [f"{title}:", clean_text(as_text(value))]
    return "\n".join(parts)


def _metrics(result: ItemResult) -> str:
    lines = [f"latency_ms: {result.latency_ms:.3f}" if math.isfinite(result.latency_ms) else "latency_ms: –"]
    if result.usage is not None:
        u = result.usage
        lines.append(f"tokens: {u.total_tokens} ({u.prompt_tokens} prompt, {u.completion_tokens} completion)")
    if result.scores:
        lines.append("scores: " + ", ".join(f"{sid}={_score(s.score) if s.status == 'success' else s.status}"
                                             for sid, s in result.scores.items()))
    if result.item.label:
        lines.append(f"label: {one_line(result.item.label, 1000)}")
    return "\n".join(lines)


def _item_case(suite: ET.Element, classname: str, name: str, result: ItemResult) -> str:
    case = _sub(suite, "testcase", name=name, classname=classname, time=_seconds(result.latency_ms))
    if result.status != "passed":
        message = item_message(result)
        if result.status == "skipped":
            _sub(case, "skipped", message=one_line(message))
        else:
            tag = "failure" if result.status == "failed" else "error"
            _sub(case, tag, _details(result, message), type_=tag, message=one_line(message))
    _sub(case, "system-out", _metrics(result))
    return result.status


def _criterion_case(suite: ET.Element, classname: str, name: str, criterion: CriterionResult) -> str:
    case = _sub(suite, "testcase", name=name, classname=classname, time="0.000")
    message = criterion_message(criterion)
    if not criterion.passed and criterion.severity == "warn":
        _sub(case, "skipped", message=one_line(f"warning (severity warn, not fatal): {message}"))
        return "skipped"
    if not criterion.passed:
        _sub(case, "failure", f"{one_line(message)}\n\nseverity: {criterion.severity}",
             type_="criterion", message=one_line(message))
        return "failed"
    _sub(case, "system-out", message + (f"\nseverity: {criterion.severity}" if criterion.severity != "error" else ""))
    return "passed"


def _properties(suite: ET.Element, run: RunInfo, result: ExperimentResult) -> None:
    s = result.summary
    values = (("run_id", run.run_id), ("config_hash", run.config_hash), ("git_commit", run.git_commit or ""),
              ("yamleval_version", run.yamleval_version), ("label", result.label or ""),
              ("runner", result.runner or ""), ("dataset", result.dataset or ""),
              ("mean_score", _number(s.mean_score)), ("pass_rate", _number(s.pass_rate)),
              ("passed", "true" if result.passed else "false"))
    kept = [(name, value) for name, value in values if value]
    if kept:
        properties = _sub(suite, "properties")
        for name, value in kept:
            _sub(properties, "property", name=name, value=one_line(value, 1000))


def _suite(parent: ET.Element, run: RunInfo, result: ExperimentResult) -> dict[str, int]:
    # counters are set once known; placing them now keeps the attribute order fixed
    suite = _sub(parent, "testsuite", name=one_line(result.experiment_id, NAME_LIMIT) or "(unnamed)",
                 tests="", failures="", errors="", skipped="", time=_seconds(result.summary.duration_ms),
                 timestamp=one_line(result.started_at, 64))
    if run.host:
        suite.set("hostname", one_line(run.host, NAME_LIMIT))
    _properties(suite, run, result)
    statuses: list[str] = []
    classname = f"yamleval.{one_line(result.experiment_id, NAME_LIMIT)}"
    names = _Names()
    for item in result.items:
        statuses.append(_item_case(suite, classname, names(item.item.id), item))
    names = _Names()
    for criterion in result.summary.criteria:
        statuses.append(_criterion_case(suite, classname + ".criteria", names(criterion_name(criterion)), criterion))
    if result.aborted or result.interrupted:
        # an incomplete run fails its experiment even when every item that ran passed
        message = f"stopped: {result.aborted}" if result.aborted else "interrupted before every item ran"
        case = _sub(suite, "testcase", name=names("run completed"), classname=classname + ".criteria",
                    time="0.000")
        _sub(case, "error", one_line(message, 1000), type_="aborted" if result.aborted else "interrupted",
             message=one_line(message))
        statuses.append("error")
    if not statuses:  # some readers drop a suite without test cases
        case = _sub(suite, "testcase", name="no items", classname=classname, time="0.000")
        _sub(case, "skipped", message="the dataset had no items")
        statuses.append("skipped")
    counts = {"tests": len(statuses), "failures": statuses.count("failed"), "errors": statuses.count("error"),
              "skipped": statuses.count("skipped")}
    for key, value in counts.items():
        suite.set(key, str(value))
    if result.warnings:
        _sub(suite, "system-out", clean_text("\n".join(f"warning: {w}" for w in result.warnings)))
    return counts


def render(run: RunInfo, results: Iterable[ExperimentResult]) -> str:
    """The JUnit XML document for ``results``, as text starting with the XML declaration."""
    root = ET.Element("testsuites", {"name": "yamleval"})
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    duration_ms = 0.0
    for result in results:
        for key, value in _suite(root, run, result).items():
            totals[key] += value
        if math.isfinite(result.summary.duration_ms) and result.summary.duration_ms > 0:
            duration_ms += result.summary.duration_ms
    for key, value in totals.items():
        root.set(key, str(value))
    root.set("time", _seconds(duration_ms))
    ET.indent(root, space="  ")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write(path: str, run: RunInfo, results: Sequence[ExperimentResult]) -> str:
    """Write the report to ``path`` atomically (a temporary file renamed over it)."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    temporary = f"{path}.tmp-{os.getpid()}"
    with open(temporary, "w", encoding="utf-8", newline="\n") as out:
        out.write(render(run, results))
    os.replace(temporary, path)
    return path
