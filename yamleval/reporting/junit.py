"""``junit.xml``: the run as JUnit XML, for test-report actions in CI.

One ``<testsuite>`` per experiment; in it one ``<testcase>`` per item (named by its id),
then one per pass criterion (``criterion: pass_rate >= 0.9``), all with
``classname="yamleval.<experiment id>"``, the dots of the id written as ``·``: readers
split a classname at its last dot (Jenkins into package and class, action-junit-report
takes the last part as the file and the title), so that part is the whole experiment.
A failed item is a ``<failure>``, an errored item an ``<error>``, a skipped item
``<skipped>``; a passed item whose repeats disagree has a ``<flakyFailure>`` per failed
repeat, as Maven Surefire writes a test that passed on a rerun. A failed warn-severity criterion is ``<skipped>`` with the miss as its
message: it must not fail the report, and test-report actions list skipped cases with
their message while they hide passed ones and their ``<system-out>``.

In an experiment that passed its criteria, its failed and errored items did not fail it:
with ``item_failures: allowed`` (the default) each is ``<skipped type="yamleval.allowed_failure">``
(or ``yamleval.allowed_error``) with its whole detail as the element's text, as pytest writes
an xfail, so test-report actions count no failure in a run that passed yet list every such
item with its message. ``item_failures: failure`` writes them as ``<failure>`` and ``<error>``
whatever the verdict. An errored item can only be in a passed experiment when an
``error_rate`` criterion judges its errors, so it is allowed by the same rule.

Two families, as pytest's ``junit_family``: ``xunit2`` (the default) is valid against
Jenkins' ``junit-10.xsd`` as it is; ``xunit1`` adds ``file`` and ``line`` (which that
schema does not declare) to each test case whose source is known: the dataset row of an
item, the config line of a criterion. Every string is cleaned to XML 1.0 characters and
capped, and nothing depends on the clock, so the same results always give the same bytes.
"""
from __future__ import annotations

import math
from typing import IO, Iterable, Sequence

from yamleval.records.errors import UsageError
from yamleval.reporting.files import render_with
from yamleval.reporting.text import (INCOMPLETE, as_text, clean_text, criterion_message, criterion_name, item_message,
                                     one_line, score_text, trajectory_lines)
from yamleval.records.types import CriterionResult, ExperimentResult, ItemResult, RunInfo

FILE_NAME = "junit.xml"  # in the report folder
FAMILIES = ("xunit2", "xunit1")
ITEM_FAILURES = ("allowed", "failure")  # ``reports.junit.item_failures``: the first is the default
ALLOWED = {"failed": ("yamleval.allowed_failure", "failed"), "error": ("yamleval.allowed_error", "errored")}
NAME_LIMIT = 512
TRAJECTORY_STEPS = 30  # steps of an agent's trace shown in a failure body


def _seconds(milliseconds: float | None) -> str:
    # junit-10.xsd allows at most three decimals; no exponent, no NaN
    if milliseconds is None or not math.isfinite(milliseconds) or milliseconds < 0:
        return "0.000"
    return f"{milliseconds / 1000.0:.3f}"


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:.6g}"


def _interval(bounds: tuple[float, float] | None) -> str:
    """``[low, high]``; nothing (the property is left out) without an interval."""
    return "" if bounds is None else f"[{_number(bounds[0])}, {_number(bounds[1])}]"


class _Names:
    """Unique testcase names within one classname: ``a``, ``a #2``, ``a #3``.

    With ``distinct`` (item ids, unique already) only cleaning (whitespace, control
    characters, length) can make two names equal. Every name is remembered up to
    ``REMEMBERED`` of them, so that a run of a million items does not keep a million; past
    that, only the names that cleaning changed (an id equal to one of those is renamed)."""

    REMEMBERED = 100_000

    def __init__(self, distinct: bool = False, taken: Iterable[str] = ()) -> None:
        self.seen: set[str] = set(taken)
        self.distinct = distinct

    def __call__(self, name: str) -> str:
        cleaned = one_line(name, NAME_LIMIT) or "(unnamed)"
        unique, n = cleaned, 1
        while unique in self.seen:
            n += 1
            unique = f"{cleaned} #{n}"
        if not self.distinct or unique != name or len(self.seen) < self.REMEMBERED:
            self.seen.add(unique)
        return unique


def _text(value: str) -> str:
    return value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _attribute(value: str) -> str:
    value = _text(value).replace('"', "&quot;")
    if "\n" in value or "\r" in value or "\t" in value:
        value = value.replace("\r", "&#13;").replace("\n", "&#10;").replace("\t", "&#09;")
    return value


def _attributes(attributes: dict[str, str]) -> str:
    return "".join(f' {k.rstrip("_")}="{_attribute(v)}"' for k, v in attributes.items())


def _element(depth: int, tag: str, text: str | None = None, **attributes: str) -> str:
    """One element on its own indented line: ``<tag a="1" />`` or ``<tag a="1">text</tag>``."""
    attrs = _attributes(attributes)
    indent = "  " * depth
    if text:
        return f"{indent}<{tag}{attrs}>{_text(text)}</{tag}>\n"
    return f"{indent}<{tag}{attrs} />\n"


def _open(depth: int, tag: str, **attributes: str) -> str:
    return f"{'  ' * depth}<{tag}{_attributes(attributes)}>\n"


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
            # "failed 0.000 (threshold 0.5)": the scorer's verdict, not that it ran ("success")
            verdict = s.status if s.status != "success" else None if s.passed is None else "passed" if s.passed else "failed"
            line = f"  {sid}:" + (f" {verdict}" if verdict else "")
            if s.score is not None:
                line += f" {score_text(s.score)}"
            if s.threshold is not None:
                line += f" (threshold {s.threshold:g})"
            if s.error or s.reason:
                line += f" — {one_line(s.error or s.reason or '', 1000)}"
            parts.append(line)
    for title, value in (("input", result.item.input), ("expected", result.item.expected),
                         ("output", result.output)):
        if value is not None:
            parts += [f"{title}:", clean_text(as_text(value))]
    parts += trajectory_lines(result.trace, TRAJECTORY_STEPS)
    return "\n".join(parts)


def _metrics(result: ItemResult) -> str:
    latency = result.latency_ms
    text = f"latency_ms: {latency:.3f}" if math.isfinite(latency) else "latency_ms: –"
    if result.usage is not None:
        u = result.usage
        text += f"\ntokens: {u.total_tokens} ({u.prompt_tokens} prompt, {u.completion_tokens} completion)"
    if result.scores:
        shown = []
        for sid, s in result.scores.items():
            shown.append(f"{sid}={score_text(s.score)}" if s.status == "success" else f"{sid}={s.status}")
        text += "\nscores: " + ", ".join(shown)
    if result.item.label:
        text += f"\nlabel: {one_line(result.item.label, 1000)}"
    for note in result.notes:
        text += f"\nnote: {one_line(note, 1000)}"
    return text


def _classname(experiment_id: str) -> str:
    return "yamleval." + one_line(experiment_id, NAME_LIMIT).replace(".", "·")


def _where(source: str | None, located: bool) -> dict[str, str]:
    """``file`` and ``line`` of a test case, from ``file:line``: in xunit1 (``located``) only."""
    if source is None or not located:
        return {}
    file, _, line = source.rpartition(":")
    return {"file": one_line(file, 1000), "line": line}


def _item_case(classname: str, name: str, result: ItemResult, located: bool, allowed: bool) -> str:
    """One item's ``<testcase>``; ``classname`` is escaped already; ``allowed``: its experiment
    passed, so a failed or errored item is written as an allowed one (``<skipped>``)."""
    where = _attributes(_where(result.item.source, located))
    parts = [f'    <testcase name="{_attribute(name)}" classname="{classname}"{where} '
             f'time="{_seconds(result.latency_ms)}">\n']
    if result.status != "passed":
        message = item_message(result)
        if result.status == "skipped":
            parts.append(_element(3, "skipped", message=one_line(message)))
        elif allowed:
            kind, verb = ALLOWED["failed" if result.status == "failed" else "error"]
            why = f"{verb} within the experiment's criteria: {message}"
            parts.append(_element(3, "skipped", _details(result, why), type_=kind, message=one_line(why)))
        else:
            tag = "failure" if result.status == "failed" else "error"
            parts.append(_element(3, tag, _details(result, message), type_=tag, message=one_line(message)))
    elif result.flaky:  # as Maven Surefire reports a test that passed on a rerun
        for number, repeat in enumerate(result.repeats, 1):
            if repeat.status == "failed":
                message = f"repeat {number} of {len(result.repeats)}: {item_message(repeat)}"
                parts.append(_element(3, "flakyFailure", _details(repeat, message), type_="failure",
                                      message=one_line(message)))
    parts.append(f"      <system-out>{_text(_metrics(result))}</system-out>\n    </testcase>\n")
    return "".join(parts)


def _case(classname: str, name: str, child: str, where: dict[str, str] | None = None) -> str:
    where = where or {}
    return _open(2, "testcase", name=name, classname=classname, **where, time="0.000") + child + "    </testcase>\n"


def _criterion_case(classname: str, name: str, criterion: CriterionResult, located: bool) -> tuple[str, str]:
    """The test case of a pass criterion, and its status."""
    message = criterion_message(criterion)
    where = _where(criterion.source, located)
    if criterion.skipped:
        return _case(classname, name, _element(3, "skipped", message=one_line(message)), where), "skipped"
    if not criterion.passed and criterion.severity == "warn":
        child = _element(3, "skipped", message=one_line(f"warning (severity warn, not fatal): {message}"))
        return _case(classname, name, child, where), "skipped"
    if not criterion.passed:
        child = _element(3, "failure", f"{one_line(message)}\n\nseverity: {criterion.severity}",
                         type_="criterion", message=one_line(message))
        return _case(classname, name, child, where), "failed"
    out = message + (f"\nseverity: {criterion.severity}" if criterion.severity != "error" else "")
    return _case(classname, name, _element(3, "system-out", out), where), "passed"


def _properties(run: RunInfo, result: ExperimentResult) -> str:
    s = result.summary
    values = (("run_id", run.run_id), ("rescored_from", run.rescored_from or ""), ("config_hash", run.config_hash),
              ("git_commit", run.git_commit or ""),
              ("yamleval_version", run.yamleval_version), ("label", result.label or ""),
              ("runner", result.runner or ""), ("dataset", result.dataset or ""),
              ("mean_score", _number(s.mean_score)), ("pass_rate", _number(s.pass_rate)),
              ("confidence", _number(s.confidence)), ("mean_score_ci", _interval(s.mean_score_ci)),
              ("pass_rate_ci", _interval(s.pass_rate_ci)),
              *((f"scorer.{sid}.{name}", _interval(ci)) for sid, sc in s.scorers.items()
                for name, ci in (("mean_ci", sc.mean_ci), ("pass_rate_ci", sc.pass_rate_ci))),
              *((f"scorer.{sid}.corpus", _number(sc.corpus)) for sid, sc in s.scorers.items() if sc.corpus is not None),
              ("cache_hits", str(s.cache.hits) if s.cache.hits or s.cache.misses else ""),
              ("cache_misses", str(s.cache.misses) if s.cache.hits or s.cache.misses else ""),
              ("passed", "true" if result.passed else "false"))
    kept = [(name, value) for name, value in values if value]
    if not kept:
        return ""
    return ("    <properties>\n" + "".join(_element(3, "property", name=name, value=one_line(value, 1000))
                                       for name, value in kept) + "    </properties>\n")


class _Suite:
    """One experiment's ``<testsuite>``: the cases that follow its items, and its counts,
    which are known from the summary before any item is read."""

    def __init__(self, result: ExperimentResult, located: bool, item_failures: str = ITEM_FAILURES[0]):
        self.result, self.located = result, located
        self.allowed = item_failures == "allowed" and result.passed
        self.classname = _classname(result.experiment_id)
        s = result.summary
        if self.allowed:
            item_statuses = {"passed": s.passed, "failed": 0, "error": 0, "skipped": s.skipped + s.failed + s.errored}
        else:
            item_statuses = {"passed": s.passed, "failed": s.failed, "error": s.errored, "skipped": s.skipped}
        self.names = names = _Names()  # of the cases after the items, which the items' names must avoid
        self.trailer: list[str] = []
        statuses = []
        for criterion in s.criteria:
            case, status = _criterion_case(self.classname, names(f"criterion: {criterion_name(criterion)}"), criterion,
                                           located)
            self.trailer.append(case)
            statuses.append(status)
        stop = {"aborted": f"aborted: {result.aborted}", "stopped": result.aborted,
                "interrupted": "interrupted before every item ran", "incomplete": f"incomplete: {INCOMPLETE}"}.get(result.outcome)
        if stop:  # an incomplete run fails its experiment even when every item that ran passed
            self.trailer.append(_case(self.classname, names("run completed"),
                                      _element(3, "error", one_line(stop, 1000), type_=result.outcome,
                                               message=one_line(stop, 1000))))  # its cause comes last
            statuses.append("error")
        if not statuses and not s.completed:  # some readers drop a suite without test cases
            self.trailer.append(_case(self.classname, names("no items"),
                                      _element(3, "skipped", message="the dataset had no items")))
            statuses.append("skipped")
        self.counts = {"tests": s.completed + len(statuses),
                       "failures": item_statuses["failed"] + statuses.count("failed"),
                       "errors": item_statuses["error"] + statuses.count("error"),
                       "skipped": item_statuses["skipped"] + statuses.count("skipped")}

    def head(self, run: RunInfo) -> str:
        result = self.result
        attributes = {"name": one_line(result.experiment_id, NAME_LIMIT) or "(unnamed)",
                      **{key: str(value) for key, value in self.counts.items()},
                      "time": _seconds(result.summary.duration_ms), "timestamp": one_line(result.started_at, 64)}
        if run.host:
            attributes["hostname"] = one_line(run.host, NAME_LIMIT)
        return _open(1, "testsuite", **attributes) + _properties(run, result)

    def tail(self) -> str:
        warnings = self.result.warnings
        out = "".join(self.trailer)
        if warnings:
            out += _element(2, "system-out", clean_text("\n".join(f"warning: {w}" for w in warnings)))
        return out + "  </testsuite>\n"


class _Cases:
    """One experiment's item test cases as items stream by, written to ``out``."""

    def __init__(self, out: IO[str], suite: _Suite):
        self.out, self.located, self.allowed = out, suite.located, suite.allowed
        self.classname_attribute = _attribute(suite.classname)
        self.names = _Names(distinct=True, taken=suite.names.seen)
        self.pending: list[str] = []

    def item(self, result: ItemResult) -> None:
        pending = self.pending
        pending.append(_item_case(self.classname_attribute, self.names(result.item.id), result, self.located,
                                    self.allowed))
        if len(pending) >= 1000:
            self.flush()

    def flush(self) -> None:
        self.out.write("".join(self.pending))
        self.pending = []


class Writer:
    """Writes the document as items stream by: each experiment's items once, in order.
    ``family`` and ``item_failures`` are ``reports.junit``'s settings (``junit:xunit1,failure``)."""

    def __init__(self, out: IO[str], run: RunInfo, results: Sequence[ExperimentResult], family: str = "xunit2",
                 item_failures: str = ITEM_FAILURES[0]):
        if family not in FAMILIES:
            raise UsageError(f"unknown JUnit family '{family}'; choose {' or '.join(FAMILIES)}")
        if item_failures not in ITEM_FAILURES:
            raise UsageError(f"unknown JUnit item_failures '{item_failures}'; choose {' or '.join(ITEM_FAILURES)}")
        self.out, self.run, self.located = out, run, family == "xunit1"
        self.suites = {id(result): _Suite(result, self.located, item_failures) for result in results}
        totals = {"tests": 0, "failures": 0, "errors": 0}  # junit-10.xsd has no `skipped` here
        duration_ms = 0.0
        for result in results:
            for key in totals:
                totals[key] += self.suites[id(result)].counts[key]
            if math.isfinite(result.summary.duration_ms) and result.summary.duration_ms > 0:
                duration_ms += result.summary.duration_ms
        attributes = {"name": "yamleval", **{k: str(v) for k, v in totals.items()}, "time": _seconds(duration_ms)}
        out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
        if results:
            out.write(_open(0, "testsuites", **attributes))
        else:
            out.write(_element(0, "testsuites", **attributes))
        self.closing = "</testsuites>\n" if results else ""

    def begin(self, result: ExperimentResult) -> None:
        suite = self.suites[id(result)]
        self.out.write(suite.head(self.run))
        self.cases = _Cases(self.out, suite)

    def item(self, result: ItemResult) -> None:
        self.cases.item(result)

    def end(self, result: ExperimentResult) -> None:
        self.cases.flush()
        self.out.write(self.suites[id(result)].tail())

    def close(self) -> None:
        self.out.write(self.closing)


def render(run: RunInfo, results: Sequence[ExperimentResult]) -> str:
    """The JUnit XML document for ``results``, as text starting with the XML declaration."""
    return render_with(Writer, run, results)
