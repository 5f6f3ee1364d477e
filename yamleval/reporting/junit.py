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

import math
import xml.etree.ElementTree as ET
from typing import Iterable, Sequence

from yamleval.reporting.files import atomic_output
from yamleval.reporting.text import (as_text, clean_text, criterion_message, criterion_name, item_message, one_line,
                                     score_text, trajectory_steps)
from yamleval.types import CriterionResult, ExperimentResult, ItemResult, RunInfo

NAME_LIMIT = 512
TRAJECTORY_STEPS = 30  # steps of an agent's trace shown in a failure body


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
                line += f" {score_text(s.score)}"
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
    steps = trajectory_steps(result.trace)
    if steps:
        parts.append("trajectory:")
        for title, details in steps[:TRAJECTORY_STEPS]:
            parts.append(f"  {one_line(title)}" + (f" — {one_line(details, 300)}" if details else ""))
        if len(steps) > TRAJECTORY_STEPS:
            parts.append(f"  … and {len(steps) - TRAJECTORY_STEPS} more steps")
    return "\n".join(parts)


def _metrics(result: ItemResult) -> str:
    lines = [f"latency_ms: {result.latency_ms:.3f}" if math.isfinite(result.latency_ms) else "latency_ms: –"]
    if result.usage is not None:
        u = result.usage
        lines.append(f"tokens: {u.total_tokens} ({u.prompt_tokens} prompt, {u.completion_tokens} completion)")
    if result.scores:
        lines.append("scores: " + ", ".join(f"{sid}={score_text(s.score) if s.status == 'success' else s.status}"
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
    with atomic_output(path) as out:
        out.write(render(run, results))
    return path
