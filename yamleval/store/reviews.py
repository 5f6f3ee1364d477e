"""People's reviews of stored items, in the results database's ``reviews`` table
(``schema.REVIEWS``): appended, never changed or removed, so every change of mind is kept; the
newest review of an item is its human verdict."""
from __future__ import annotations

import json
from typing import Sequence

from yamleval.records.codec import summary_from_json, summary_to_json
from yamleval.records.reviews import HumanVerdict, Review
from yamleval.records.types import Summary
from yamleval.store.schema import REVIEWS, item_key

KEPT_SINCE = 12  # the schema version whose experiments keep their reviewed summary
Stamp = tuple  # (reviews counted, the experiment's completed_at): which reviewed summary is current

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
_KEPT = "SELECT experiment_id, reviewed FROM experiments WHERE run_id = {p} AND reviewed IS NOT NULL"


def keep_counted(store, run_id: str, counted: dict[str, tuple[Stamp, Summary]]) -> None:
    """Store each experiment's summary as its reviews count it, stamped with how many reviews it
    counts and when the experiment's items ended (reviews are only ever added, and an experiment
    that ends again has a new end: the stamp says whether it is still the summary that counts)."""
    if counted and _keeps(store):
        store.write(_KEEP, [(json.dumps({"reviews": stamp[0], "ended": stamp[1],
                                         "summary": json.loads(summary_to_json(summary))}), run_id, experiment_id)
                            for experiment_id, (stamp, summary) in counted.items()], then="then review again")


def kept_counted(store, run_id: str) -> dict[str, tuple[Stamp, Summary]]:
    """The summaries ``keep_counted`` stored for the run's experiments, by experiment, each with its
    stamp (none in a database older than them)."""
    if not _keeps(store):
        return {}
    found = {}
    for experiment_id, text in store.query(_KEPT, (run_id,)):
        kept = json.loads(text)
        found[experiment_id] = ((kept["reviews"], kept["ended"]), summary_from_json(json.dumps(kept["summary"])))
    return found
