"""People's reviews of stored items, in the results database's ``reviews`` table
(``schema.REVIEWS``): appended, never changed or removed, so every change of mind is kept; the
newest review of an item is its human verdict."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from yamleval.records.codec import summary_from_json, summary_to_json
from yamleval.records.reviews import HumanVerdict, Review
from yamleval.records.types import Summary
from yamleval.store.schema import REVIEWS, item_key

KEPT_SINCE = 12  # the schema version whose experiments keep their reviewed summary

_COLUMNS = ("run_id", "experiment_id", "item_id", "verdict", "machine", "reviewer", "note", "at")
_OF_RUN = ("SELECT experiment_id, item_id, verdict, reviewer, at, machine, note FROM reviews WHERE run_id = {p}"
           " ORDER BY rowid")


def add(store, run_id: str, reviews: Sequence[Review]) -> None:
    """Store ``reviews`` of the run ``run_id`` (each item's id as the store keys it), in one transaction."""
    store.insert(REVIEWS, _COLUMNS, [(run_id, r.experiment_id, item_key(r.item_id), r.verdict, r.machine, r.by, r.note,
                                      r.at) for r in reviews], then="then review again")


def listed(store, run_id: str) -> list[Review]:
    """The run's reviews in the order they were given (each item by its key, ``schema.item_key``).
    A read-only database of an older schema, read unmigrated, has none."""
    if not store.has_table("reviews"):
        return []
    return [Review(experiment_id, key, verdict, by, at, machine, note)
            for experiment_id, key, verdict, by, at, machine, note in store.query(_OF_RUN, (run_id,))]


def of_run(store, run_id: str) -> dict[str, dict[str, list[Review]]]:
    """The run's reviews by experiment, then by item key, oldest first."""
    found: dict[str, dict[str, list[Review]]] = {}
    for review in listed(store, run_id):
        found.setdefault(review.experiment_id, {}).setdefault(review.item_id, []).append(review)
    return found


_COPY = (f"INSERT INTO reviews ({', '.join(_COLUMNS)}) SELECT {{p}}, {', '.join(_COLUMNS[1:])} FROM reviews"
         " WHERE run_id = {p} ORDER BY rowid")


def copy(store, source: str, run_id: str) -> None:
    """Give the run ``run_id`` the reviews of the run ``source`` (whose outputs it scored again)."""
    if store.has_table("reviews"):
        store.write(_COPY, [(run_id, source)], then="then score the run again")


def copy_from(store, run_id: str, source_store, source_run: str) -> None:
    """Give the run ``run_id`` of ``store`` the reviews of the run ``source_run`` of another store (a shard's)."""
    if not source_store.has_table("reviews"):
        return
    rows = source_store.query(f"SELECT {', '.join(_COLUMNS[1:])} FROM reviews WHERE run_id = {{p}} ORDER BY rowid",
                              (source_run,))
    if rows:
        store.write(store.database.insert(REVIEWS, _COLUMNS), [(run_id, *row) for row in rows],
                    then="then merge again")


def human_verdict(reviews: Sequence[Review]) -> HumanVerdict:
    """The verdict of an item's reviews (oldest first): its newest."""
    last = reviews[-1]
    return HumanVerdict(last.verdict, last.machine, "review", last.by, last.at, last.note, len(reviews))


def verdicts_of(store, run_id: str) -> dict[str, dict[str, HumanVerdict]]:
    """The human verdict of each reviewed item of the run: by experiment, then by item key."""
    return {experiment_id: {key: human_verdict(found) for key, found in items.items()}
            for experiment_id, items in of_run(store, run_id).items()}


_SETTLED = "UPDATE runs SET passed = {p} WHERE run_id = {p} AND status = 'completed'"


def settled(store, run_id: str, passed: bool) -> None:
    """Store the verdict a completed run has as its reviews count (its items and reviews stay as stored)."""
    store.write(_SETTLED, [(int(passed), run_id)], then="then review again")


def _keeps(store) -> bool:
    """Whether the database keeps reviewed summaries (a read-only one of an older schema is read unmigrated)."""
    return store.database.schema_version() >= KEPT_SINCE


_KEEP = "UPDATE experiments SET reviewed = {p} WHERE run_id = {p} AND experiment_id = {p}"
_KEPT = ("SELECT experiment_id, reviewed, completed_at, status FROM experiments WHERE run_id = {p}"
         " AND reviewed IS NOT NULL")
_ONE = " AND experiment_id = {p}"


@dataclass(frozen=True)
class Kept:
    """An experiment's summary as its reviews counted it (``keep_counted``): how many reviews it
    counts, the end of the experiment it counted and that experiment's end now (None: it runs), its
    items by status, and the summary's JSON, decoded by ``summary()`` only where it is wanted."""

    reviews: int
    ended: str | None
    counts: tuple[int, int, int, int]  # passed, failed, errored, skipped
    text: str
    ended_now: str | None = None

    def summary(self) -> Summary:
        return summary_from_json(self.text)


def kept(reviews: int, ended: str | None, summary: Summary) -> Kept:
    """What ``keep_counted`` stores of ``summary``, counting ``reviews`` at the experiment's end ``ended``."""
    return Kept(reviews, ended, (summary.passed, summary.failed, summary.errored, summary.skipped),
                summary_to_json(summary), ended)


def keep_counted(store, run_id: str, counted: dict[str, Kept]) -> None:
    """Store each experiment's summary as its reviews count it, with how many reviews it counts and
    the end it counted (reviews are only ever added, and an experiment that ends again has a new
    end: together they say whether it is still the summary that counts)."""
    if counted and _keeps(store):
        # what the figures count and their counts, then the figures' JSON: a progress bar reads no JSON
        store.write(_KEEP, [("\t".join((str(k.reviews), k.ended or "", ",".join(map(str, k.counts)), k.text)), run_id,
                             experiment_id) for experiment_id, k in counted.items()], then="then review again")


def kept_counted(store, run_id: str, experiment_id: str | None = None) -> dict[str, Kept]:
    """The summaries ``keep_counted`` stored for the run's experiments (``experiment_id``'s alone, if
    given), by experiment (none in a database older than them)."""
    if not _keeps(store):
        return {}
    found = {}
    statement, parameters = (_KEPT, (run_id,)) if experiment_id is None else (_KEPT + _ONE, (run_id, experiment_id))
    for experiment_id, value, completed_at, status in store.query(statement, parameters):
        parts = value.split("\t", 3)
        counts = parts[2].split(",") if len(parts) == 4 else []
        if len(counts) != 4 or not all(n.isdigit() for n in (parts[0], *counts)):  # not as written: counted anew
            continue
        found[experiment_id] = Kept(int(parts[0]), parts[1] or None, tuple(map(int, counts)), parts[3],
                                    None if status == "running" else completed_at)
    return found
