"""People's verdicts on a stored run: one review given on the command line or in the Eval
Center, or many imported from a file (CSV or JSONL: experiment, item, verdict, note, by); and
how far each scorer agrees with them (``yamleval agreement``). A review is checked whole before
any is stored, then kept for good (``store.reviews``)."""
from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from typing import Iterable, Iterator, Sequence

from yamleval.lifecycle.stored_runs import opened
from yamleval.records.errors import UsageError, display_path
from yamleval.records.reviews import JUDGED, Review, machine_verdict, verdict_of
from yamleval.records.types import ExperimentResult, RunInfo, now
from yamleval.analysis import reviewed
from yamleval.store import reviews as stored_reviews

FIELDS = ("experiment", "item", "verdict", "note", "by")
MAX_NOTE = 10_000


@dataclass(frozen=True)
class Asked:
    """A review as asked for, before it is checked: ``where`` says where it was written."""

    experiment: str
    item: str
    verdict: object
    note: str | None
    by: str | None
    where: str = "the command line"


@dataclass(frozen=True)
class Reviewed:
    """Reviews stored, and the experiments they touched as they count now."""

    run: RunInfo
    reviews: tuple[Review, ...]
    results: tuple[ExperimentResult, ...]


@dataclass(frozen=True)
class Agreements:
    """A stored run's experiments as reviewed: each summary's ``agreement`` by scorer."""

    run: RunInfo
    results: tuple[ExperimentResult, ...]


def review(given, run_ref: str, asked: Sequence[Asked]) -> Reviewed:
    """Store ``asked`` as reviews of the run ``run_ref``, each checked against the stored items first."""
    with opened(given) as store:
        info = store.find_run(run_ref)
        found = checked(store, info, asked)
        stored_reviews.add(store, info.run_id, found)
        touched = {r.experiment_id for r in found}
        results = reviewed.settle(store, info.run_id)  # the run's verdict as they count now
        return Reviewed(store.find_run(info.run_id), found, tuple(r for r in results if r.experiment_id in touched))


def checked(store, info: RunInfo, asked: Sequence[Asked]) -> tuple[Review, ...]:
    """``asked`` as reviews of the stored run ``info``: UsageError, saying where, for an unknown
    experiment or item, a verdict that is not pass or fail, no reviewer, or an item with no verdict.
    Each item is looked up as stored: nothing of the run is counted."""
    experiments = [e.experiment_id for e in store.experiments(info.run_id)]
    at, out = now(), []
    for one in asked:
        _storable(one)
        if one.experiment not in experiments:
            raise UsageError(f"{one.where}: run {info.run_id} has no experiment '{one.experiment}'"
                             f" (it has: {', '.join(experiments) or 'none'})")
        verdict = verdict_of(one.verdict)
        if verdict is None:
            raise UsageError(f"{one.where}: verdict {one.verdict!r} for item '{one.item}' is not pass or fail")
        if not one.by or not str(one.by).strip():
            raise UsageError(f"{one.where}: no reviewer for item '{one.item}': give who reviewed it (--by NAME,"
                             " or a `by` column)")
        if one.note is not None and len(one.note) > MAX_NOTE:
            raise UsageError(f"{one.where}: the note on item '{one.item}' is over {MAX_NOTE:,} characters")
        item = store.item_view(info.run_id, one.experiment, 0).find(one.item)
        if item is None:
            raise UsageError(f"{one.where}: experiment '{one.experiment}' of run {info.run_id} has no item"
                             f" '{one.item}' (`yamleval export {info.run_id}` lists its items)")
        machine = machine_verdict(item)
        if machine not in JUDGED:
            raise UsageError(f"{one.where}: item '{one.item}' of experiment '{one.experiment}' {machine}:"
                             " it has no verdict to review (retry it with `yamleval run --retry-errors`)")
        out.append(Review(one.experiment, one.item, verdict, str(one.by).strip(), at, machine, one.note or None))
    return tuple(out)


def _storable(one: Asked) -> None:
    """UsageError, saying where, for text no database can keep: a lone surrogate (valid JSON,
    not UTF-8) or a NUL (PostgreSQL refuses it)."""
    for name, text in (("reviewer", one.by), ("note", one.note)):  # ids are looked up, never stored as given
        if not isinstance(text, str):
            continue
        bad = next((c for c in text if c == "\0" or "\ud800" <= c <= "\udfff"), None)
        if bad is not None:
            what = "a NUL character" if bad == "\0" else "a lone surrogate, no character of UTF-8"
            raise UsageError(f"{one.where}: the {name} holds U+{ord(bad):04X} ({what}), which cannot be stored;"
                             " remove it")


def read_file(path: str, by: str | None) -> list[Asked]:
    """The reviews of a CSV or JSONL file (by its extension; ``by``: the reviewer of rows without one)."""
    try:
        with open(path, encoding="utf-8-sig", newline="") as f:
            text = f.read()
    except OSError as exc:
        raise UsageError(f"cannot read {display_path(path)}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{display_path(path)}: byte {exc.start} is not UTF-8; save the file as UTF-8") from None
    rows = _jsonl(path, text) if path.lower().endswith((".jsonl", ".ndjson")) else _csv(path, text)
    asked = []
    for where, row in _read(path, rows):
        missing = [f for f in ("experiment", "item", "verdict") if row.get(f) in (None, "")]
        if missing:
            raise UsageError(f"{where}: no {', '.join(missing)}: each review names {', '.join(FIELDS[:3])}"
                             " (and may give note, by)")
        asked.append(Asked(str(row["experiment"]), str(row["item"]), row["verdict"], _text(row.get("note")),
                           _text(row.get("by")) or by, where))
    if not asked:
        raise UsageError(f"{display_path(path)} has no reviews")
    return asked


def _read(path: str, rows: Iterable[tuple[str, dict]]) -> Iterator[tuple[str, dict]]:
    """``rows``, a CSV the csv module cannot read said as the file's problem (never a traceback)."""
    try:
        yield from rows
    except csv.Error as exc:
        raise UsageError(f"{display_path(path)}: not CSV that can be read ({exc})") from None


def _text(value) -> str | None:
    return None if value in (None, "") else str(value)


def _csv(path: str, text: str) -> Iterator[tuple[str, dict]]:
    reader = csv.DictReader(io.StringIO(text))
    unknown = [f for f in reader.fieldnames or () if f not in FIELDS]
    if reader.fieldnames is None or unknown:
        raise UsageError(f"{display_path(path)}:1: the header must name the columns {', '.join(FIELDS)}"
                         + (f" (not {', '.join(unknown)})" if unknown else ""))
    for row in reader:
        where = f"{display_path(path)}:{reader.line_num}"
        if None in row:  # DictReader keeps what is past the header's columns under None
            raise UsageError(f"{where}: {len(reader.fieldnames) + len(row[None])} fields where the header names"
                             f" {len(reader.fieldnames)}; quote a note that holds a comma (\"like, this\")")
        yield where, row


def _jsonl(path: str, text: str) -> Iterable[tuple[str, dict]]:
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{display_path(path)}:{number}"
        try:
            row = json.loads(line)
        except (ValueError, RecursionError) as exc:
            raise UsageError(f"{where}: not JSON ({'nested too deeply' if isinstance(exc, RecursionError) else exc})"
                             ) from None
        if not isinstance(row, dict):
            raise UsageError(f"{where}: a review is an object with {', '.join(FIELDS)}")
        yield where, row


def agreement(given, run_ref: str) -> Agreements:
    with opened(given) as store:
        info = store.find_run(run_ref)
        return Agreements(info, tuple(reviewed.results(store, info.run_id)))
