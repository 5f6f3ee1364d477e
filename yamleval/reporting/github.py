"""GitHub Actions: the job summary and ``::error``/``::warning`` annotations.

Pure functions over the results; the command line prints and writes what they give.

Annotation levels follow what decides the verdict. Failed error-severity
criteria, aborted experiments and errored items are errors: each of them fails
its experiment. Failed warn criteria and interrupted runs are warnings. A failed
item is an error only in an experiment without pass criteria, where any failed
item fails it; with criteria the verdict is the criteria's, so a failed item is
a warning that points at a cause. An errored item is likewise a warning when an
``error_rate`` criterion, not the rule that no item errors, judges the errors.
GitHub shows at most 10 annotations of each level per step, so the most
important come first and a notice tells how many were left out.
"""
from __future__ import annotations

import os
from typing import Callable, Iterable, Iterator, Mapping

from yamleval.records import figures
from yamleval.analysis.verdict import tolerates_errors
from yamleval.records.errors import display_path
from yamleval.reporting.text import as_text, criterion_message, criterion_name, item_message, one_line
from yamleval.records.types import ExperimentResult, ItemResult

PER_KIND = 10  # GitHub keeps 10 errors, 10 warnings and 10 notices per step
MESSAGE_LIMIT = 1000
TITLE_LIMIT = 200


def append_step_summary(markdown: str, environ: Mapping[str, str] | None = None) -> str | None:
    """Append ``markdown`` to the file named by ``GITHUB_STEP_SUMMARY``; its path, or None when unset."""
    path = (os.environ if environ is None else environ).get("GITHUB_STEP_SUMMARY")
    if not path:
        return None
    with open(path, "a", encoding="utf-8", newline="\n") as out:
        out.write(markdown if markdown.endswith("\n") else markdown + "\n")
    return path


def escape_data(text: str) -> str:
    """A workflow command's message: ``%``, CR and LF percent-encoded (``%`` first)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A workflow command's property value: as a message, plus ``:`` and ``,``."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(kind: str, message: str, title: str | None = None, source: str | None = None) -> str:
    """One workflow command line, e.g. ``::error file=data.jsonl,line=3,title=T::M``; ``source``:
    ``file:line`` of what it is about (a dataset row, a criterion), which GitHub shows the message at."""
    properties = []
    if source:
        file, _, line = source.rpartition(":")
        properties += [f"file={escape_property(display_path(file))}", f"line={line}"] if line.isdigit() else []
    if title:
        properties.append(f"title={escape_property(one_line(title, TITLE_LIMIT))}")
    return f"::{kind}{' ' + ','.join(properties) if properties else ''}::{escape_data(message)}"


def _experiment_problems(result: ExperimentResult) -> Iterator[tuple[str, str, str, str | None]]:
    """(kind, title, message, source) for the experiment itself and its failed criteria (at their config line)."""
    name, s = result.experiment_id, result.summary
    if result.aborted:
        yield "error", f"yamleval: {name} stopped", one_line(result.aborted, MESSAGE_LIMIT), None
    if result.interrupted:
        yield "warning", f"yamleval: {name} interrupted", f"interrupted after {s.completed} of {figures.count(s.total, 'item')}", None
    if s.errored and not tolerates_errors(s):  # else its error_rate criterion speaks for them
        yield ("error", f"yamleval: {name}",
               f"{s.errored} of {figures.count(s.total, 'item')} errored; an errored item fails the experiment", None)
    for c in s.criteria:
        if not c.passed:
            warn = c.severity == "warn"
            yield ("warning" if warn else "error", f"yamleval: {name} › {criterion_name(c)}",
                   criterion_message(c) + (" (severity warn, not fatal)" if warn else ""), c.source)


def _item_problem(result: ExperimentResult, item: ItemResult) -> tuple[str, str, str | None]:
    """(title, message, source) for a failed or errored item: at its dataset row, as JUnit places it."""
    message = one_line(item_message(item), MESSAGE_LIMIT)
    if item.output is not None:
        message += "\noutput: " + one_line(as_text(item.output, indent=None), 300)
    return f"yamleval: {result.experiment_id} › {item.item.id} {item.status}", message, item.item.source


def annotations(results: Iterable[ExperimentResult]) -> list[str]:
    """Workflow commands for the problems in ``results``: experiments and criteria
    first, then items in dataset order; at most 10 errors and 10 warnings, then one
    notice if some were left out."""
    results = list(results)
    lines: list[str] = []
    shown = {"error": 0, "warning": 0}
    left_out = {"error": 0, "warning": 0}

    def add(kind: str, make: Callable[[], tuple[str, str, str | None]]) -> None:
        if shown[kind] < PER_KIND:
            shown[kind] += 1
            title, message, source = make()
            lines.append(command(kind, message, title, source))
        else:  # counted without being formatted: a large run may have many
            left_out[kind] += 1

    for result in results:
        for kind, title, message, source in _experiment_problems(result):
            add(kind if result.gated else "warning", lambda t=title, m=message, s=source: (t, m, s))  # gate: false fails nothing
    for result in results:
        failed_kind = "warning" if result.summary.criteria or not result.gated else "error"
        errored_kind = "warning" if tolerates_errors(result.summary) or not result.gated else "error"
        # no more than PER_KIND of each status can be shown: read just those, count the rest
        errored = result.items.with_status(("error",), PER_KIND)
        failed = result.items.with_status(("failed",), PER_KIND)
        for item in sorted(errored + failed, key=lambda r: r.item.index):
            add(errored_kind if item.status == "error" else failed_kind, lambda r=result, i=item: _item_problem(r, i))
        left_out[errored_kind] += max(0, result.summary.errored - len(errored))
        left_out[failed_kind] += max(0, result.summary.failed - len(failed))
    if left_out["error"] or left_out["warning"]:
        counts = " and ".join(f"{n} more {kind}{'s' if n != 1 else ''}" for kind, n in left_out.items() if n)
        lines.append(command("notice", f"{counts} not shown (GitHub shows 10 of each per step); "
                                       "see the job summary and the reports", "yamleval"))
    return lines
