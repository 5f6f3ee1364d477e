"""What the Eval Center (``yamleval.serve``) reads of the results database, a page at a time: the
runs, filtered; a run's progress (its items counted by status, of how many planned); an
experiment's items after a position, or stored after a ``written`` number. Nothing here reads a
whole run into memory."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Sequence

from yamleval.records.codec import item_from_record
from yamleval.records.types import ItemResult, RunInfo
from yamleval.store.reader import read_rows
from yamleval.store.schema import HASHED

# a run's status as the runs page filters it: the stored one, or its verdict
RUN_STATUSES = ("passed", "failed", "running", "interrupted", "stopped", "aborted")
_STATUS_WHERE = {"passed": "status = 'completed' AND passed = 1", "failed": "status = 'completed' AND passed = 0",
                 "running": "status = 'running'", "interrupted": "status = 'interrupted'",
                 "stopped": "status = 'stopped'", "aborted": "status = 'aborted'"}
_WITH_TAG = "run_id IN (SELECT run_id FROM run_tags WHERE tag = {p})"
_WITH_EXPERIMENT = "run_id IN (SELECT run_id FROM experiments WHERE experiment_id = {p})"
_COUNTS = "SELECT experiment_id, status, COUNT(*) FROM items WHERE run_id = {p} GROUP BY experiment_id, status"
_EXPERIMENTS = ("SELECT experiment_id, status, planned, label, variant FROM experiments WHERE run_id = {p}"
                " ORDER BY position")
_EXPERIMENTS_UNPLANNED = ("SELECT experiment_id, status, NULL, label, NULL FROM experiments WHERE run_id = {p}"
                          " ORDER BY position")  # a store of a schema before 9, read unmigrated
_AFTER = ("SELECT position, record FROM items WHERE run_id = {p} AND experiment_id = {p} AND position > {p}"
          " ORDER BY position LIMIT {p}")
_AFTER_WITH_STATUS = ("SELECT position, record FROM items WHERE run_id = {p} AND experiment_id = {p}"
                      " AND position > {p} AND status = {p} ORDER BY position LIMIT {p}")
# the newest items by key and status; the record only of one keyed by a digest of its id (schema.item_key)
_NEWEST = ("SELECT written, experiment_id, item_id, status, CASE WHEN item_id LIKE {p} THEN record END"
           " FROM items WHERE run_id = {p} AND written > {p} ORDER BY written DESC LIMIT {p}")
_WRITTEN = ("SELECT written, experiment_id, record FROM items WHERE run_id = {p} AND written > {p}"
            " ORDER BY written LIMIT {p}")
_LAST_WRITTEN = "SELECT MAX(written) FROM items WHERE run_id = {p}"


def runs_page(store, *, tag: str | None = None, experiment: str | None = None, status: str | None = None,
              offset: int = 0, limit: int = 50) -> tuple[list[RunInfo], int]:
    """The runs matching the filters, newest first, ``limit`` from ``offset``; and how many match."""
    where, parameters = [], []
    if tag and not store.has_table("run_tags"):  # a store of an older schema, read unmigrated: nothing tagged
        return [], 0
    if tag:
        where.append(_WITH_TAG)
        parameters.append(tag)
    if experiment:
        where.append(_WITH_EXPERIMENT)
        parameters.append(experiment)
    if status:
        where.append(_STATUS_WHERE[status])
    clause = (" WHERE " + " AND ".join(where)) if where else ""
    total = store.query("SELECT COUNT(*) FROM runs" + clause, tuple(parameters))[0][0]
    rows = store.records("SELECT * FROM runs" + clause + " ORDER BY started_at DESC, run_id DESC"
                          " LIMIT {p} OFFSET {p}", (*parameters, limit, offset))
    return [store.run_info(row) for row in rows], total


@dataclass(frozen=True)
class ExperimentProgress:
    """How far one experiment of a run is: its items stored, by status, of ``planned`` (None: not known)."""

    experiment_id: str
    status: str
    planned: int | None
    counts: dict[str, int]
    label: str | None = None

    @property
    def finished(self) -> int:
        return sum(self.counts.values())

    def as_json(self) -> dict[str, Any]:
        return {"experiment": self.experiment_id, "status": self.status, "finished": self.finished,
                "planned": self.planned, "counts": dict(self.counts)}


def progress(store, run_id: str) -> list[ExperimentProgress]:
    """Each started experiment of the run, in order, with its items counted by status."""
    counts: dict[str, dict[str, int]] = {}
    for experiment_id, status, count in store.query(_COUNTS, (run_id,)):
        counts.setdefault(experiment_id, {})[status] = count
    found = []
    unplanned = (store.database.read_only or store.outdated) and not _numbered(store)
    for experiment_id, status, planned, label, _ in store.query(_EXPERIMENTS_UNPLANNED if unplanned else _EXPERIMENTS,
                                                                (run_id,)):
        counted = {s: counts.get(experiment_id, {}).get(s, 0) for s in ("passed", "failed", "error", "skipped")}
        found.append(ExperimentProgress(experiment_id, status, planned, counted, label))
    return found


def items_after(store, run_id: str, experiment_id: str, after: int, limit: int,
                status: str | None = None) -> list[tuple[int, ItemResult]]:
    """Up to ``limit`` of the experiment's items past dataset position ``after``, in order (of ``status``
    alone, if given), each with its position."""
    statement, parameters = ((_AFTER_WITH_STATUS, (run_id, experiment_id, after, status, limit)) if status
                             else (_AFTER, (run_id, experiment_id, after, limit)))
    return [(position, item_from_record(json.loads(text), text))
            for position, text in read_rows(store.database, statement, parameters)]


def written_after(store, run_id: str, written: int, limit: int) -> list[tuple[int, str, ItemResult]]:
    """Up to ``limit`` of the run's items stored after the one numbered ``written``, in the order
    stored: (number, experiment id, item)."""
    return [(number, experiment_id, item_from_record(json.loads(text), text))
            for number, experiment_id, text in read_rows(store.database, _WRITTEN, (run_id, written, limit))]


@dataclass(frozen=True)
class Written:
    """An item as the live view announces it: its ``written`` number, experiment, id and status."""

    number: int
    experiment_id: str
    item_id: str
    status: str


def newest_written(store, run_id: str, written: int, limit: int) -> list[Written]:
    """The newest ``limit`` of the run's items stored after the one numbered ``written``, in the
    order stored. Reads keys and statuses, not the items' records (a live view polls this)."""
    found = [Written(number, experiment_id, key if record is None else json.loads(record)["id"], status)
             for number, experiment_id, key, status, record
             in store.query(_NEWEST, (HASHED + "%", run_id, written, limit))]
    return found[::-1]


def last_written(store, run_id: str) -> int:
    """The number of the run's item stored last (0: none numbered)."""
    if (store.database.read_only or store.outdated) and not _numbered(store):
        return 0
    return store.query(_LAST_WRITTEN, (run_id,))[0][0] or 0


def _numbered(store) -> bool:
    """Whether the database numbers its items (one of an older schema, read unmigrated, does not)."""
    try:
        store.query("SELECT written FROM items LIMIT 0")
    except Exception:
        return False
    return True


def experiment_runs(store, experiment_id: str, limit: int) -> list[RunInfo]:
    """The newest ``limit`` runs with the experiment, newest first."""
    rows = store.records("SELECT * FROM runs WHERE " + _WITH_EXPERIMENT + " ORDER BY started_at DESC, run_id DESC"
                          " LIMIT {p}", (experiment_id, limit))
    return [store.run_info(row) for row in rows]


def statuses(store, run_id: str, experiment_id: str) -> Sequence[tuple[str, str]]:
    """The experiment's items in the run, (item key, status), read as iterated."""
    return read_rows(store.database, "SELECT item_id, status FROM items WHERE run_id = {p} AND experiment_id = {p}"
                     " ORDER BY position", (run_id, experiment_id))


_STARTED = "SELECT summary FROM experiments WHERE run_id = {p} AND experiment_id = {p}"
_ITEMS = ("SELECT i.experiment_id, i.record FROM items i JOIN experiments e"
          " ON e.run_id = i.run_id AND e.experiment_id = i.experiment_id WHERE i.run_id = {p}")
_COUNT = "SELECT COUNT(*) FROM items i WHERE i.run_id = {p}"


def started_summary(store, run_id: str, experiment_id: str) -> str | None:
    """An experiment's summary as stored (JSON, from its start on); None: the run has no such experiment."""
    found = store.query(_STARTED, (run_id, experiment_id))
    return found[0][0] if found else None


def items_page(store, run_id: str, experiment_id: str | None, status: str | None, offset: int,
               limit: int) -> tuple[int, list[tuple[str, ItemResult]]]:
    """How many of the run's items there are (of ``experiment_id`` and ``status``, if given), and
    ``limit`` of them from ``offset`` on, in run and dataset order: (experiment id, item)."""
    where, parameters = "", [run_id]
    if experiment_id:
        where += " AND i.experiment_id = {p}"
        parameters.append(experiment_id)
    if status:
        where += " AND i.status = {p}"
        parameters.append(status)
    total = store.query(_COUNT + where, tuple(parameters))[0][0]
    statement = _ITEMS + where + " ORDER BY e.position, i.position LIMIT {p} OFFSET {p}"
    return total, [(experiment, item_from_record(json.loads(text), text))
                   for experiment, text in read_rows(store.database, statement, (*parameters, limit, offset))]
