"""``yamleval export``: a stored run's items as CSV or JSON lines, streamed from the store.

The columns, and the form of every number, are those of the report page's export buttons,
so that the page and the command give the same file for the same filter (texts whole here,
where the page may have cut them)."""
from __future__ import annotations

import csv
import json
import re
from typing import IO, Any, Iterable, Sequence

from yamleval.reporting.html_data import ms, score_value
from yamleval.reporting.text import as_text
from yamleval.records.types import ExperimentResult, ItemResult

FORMATS = ("csv", "jsonl")
COLUMNS = ("experiment", "id", "status", "input", "output", "expected", "error", "latency_ms", "tokens")
_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def _number(value: float | None) -> float | int | None:
    """As JavaScript writes a number: 12, not 12.0."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _text(value: Any) -> str | None:
    return None if value is None else as_text(value)


def record(experiment_id: str, result: ItemResult, scorer_ids: Sequence[str]) -> dict[str, Any]:
    """One item as both formats write it."""
    item, scores = result.item, result.scores
    return {"experiment": experiment_id, "id": _text(item.id), "status": result.status, "input": _text(item.input),
            "output": _text(result.output), "expected": _text(item.expected), "error": result.error,
            "latency_ms": _number(ms(result.latency_ms)),
            "tokens": None if result.usage is None else result.usage.total_tokens,
            "scores": {sid: None if sid not in scores else _number(score_value(scores[sid])) for sid in scorer_ids}}


_FORMULA = re.compile(r"[=+\-@\t\r]")
_NUMBER = re.compile(r"[+-]?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?")


def _cell(value: Any) -> Any:
    """A CSV cell. A text that a spreadsheet would run as a formula (one beginning with =, +, -,
    @, a tab or a carriage return, but for a plain number) gets a leading ' so that it shows as
    the text it is: a model's output must not run on the reader's machine."""
    if value is None:
        return ""
    if isinstance(value, str) and _FORMULA.match(value) and not _NUMBER.fullmatch(value):
        return "'" + value
    return value


def write(out: IO[str], results: Iterable[ExperimentResult], fmt: str, statuses: Sequence[str] = ()) -> int:
    """Write the items of ``results`` (those with one of ``statuses``, when given) in dataset order;
    return how many were written. Score columns: every scorer of the experiments, in order."""
    results = list(results)
    scorer_ids = list(dict.fromkeys(sid for r in results for sid in r.summary.scorers))
    writer = csv.writer(out, lineterminator="\r\n") if fmt == "csv" else None
    if writer is not None:
        writer.writerow([*COLUMNS, *(f"{sid} score" for sid in scorer_ids)])
    count = 0
    for result in results:
        for item in result.items:
            if statuses and item.status not in statuses:
                continue
            row = record(result.experiment_id, item, scorer_ids)
            if writer is None:
                out.write(_dumps(row) + "\n")
            else:
                writer.writerow([*(_cell(row[c]) for c in COLUMNS), *(_cell(v) for v in row["scores"].values())])
            count += 1
    return count
