"""The results database: every run, experiment, item and score, written as items finish.

SQLite in WAL mode by default, shared by any number of processes, or PostgreSQL (a URL):
``Store`` speaks to either through one ``Database`` (``store.database``), each backend in its
own SQL. The statements both share are kept here (and in ``reader``, which reads items, and
``tags``, ``repeats``, ``shards``). JSON values (inputs, outputs, scores, summaries) are stored
whole; ``store.errors`` words failures.
"""
from __future__ import annotations

import itertools
import json
from dataclasses import asdict
import os
import threading
import time
from typing import Any, Callable, Iterable, Iterator, Sequence

import tenacity

from yamleval.store import locations, schema as store_schema, repeats as stored_repeats, tags as run_tags
from yamleval.config.model import Experiment
from yamleval.records.errors import UsageError, display_path
from yamleval.records.codec import encode, encode_record, summary_from_json, summary_to_json
from yamleval.store.database import Database, OnConflict, Table
from yamleval.store.flushing import FlushClock, numbered
from yamleval.store.errors import (RESUME_HINT, Conflict, DatabaseError, ReadOnly, StoreWriteError, cannot, cause,
                                   duplicate_item)
from yamleval.store.schema import SCHEMA_VERSION  # noqa: F401  (the store's version, for callers)
from yamleval.store.reader import StoredItems, read_rows, variant_of
from yamleval.records.types import ExperimentResult, ItemResult, RunInfo, StoredExperiment, Summary

FLUSH_ITEMS = 500
FLUSH_SECONDS = 1.0
LOCKED_TRIES = 6  # tries of a write transaction still refused "database is locked" after that wait

_RUN_COLUMNS = ("run_id", "status", "started_at", "completed_at", "passed", "yamleval_version", "python_version",
                "host", "pid", "config_files", "config_hash", "config_text", "git_commit", "git_dirty",
                "plugin_versions", "experiment_ids", "fingerprint", "rescored_from", "retried_from")
_EXPERIMENT_COLUMNS = ("run_id", "experiment_id", "position", "label", "description", "tags", "runner", "dataset",
                       "scorers", "dataset_hash", "status", "started_at", "summary", "variant")
_ITEM_COLUMNS = ("run_id", "experiment_id", "item_id", "position", "status", "record")
_WRITTEN_COLUMNS = (*_ITEM_COLUMNS, "written")
_PLANNED = "UPDATE experiments SET planned = {p} WHERE run_id = {p} AND experiment_id = {p}"
_RUN_DETAILS = {key: f"SELECT {key} FROM runs WHERE run_id = {{p}}" for key in ("plugin_versions", "experiment_ids",
                                                                                "fingerprint")}
# ``yamleval merge``: a shard's experiment and items, as the merged run's
_COPIED_COLUMNS = ("run_id", "experiment_id", "position", "label", "description", "tags", "runner", "dataset",
                   "scorers", "dataset_hash", "started_at", "summary", "variant", "status")
_EXPERIMENT_ROW = (f"SELECT {', '.join(_COPIED_COLUMNS[1:-1])} FROM experiments"
                   " WHERE run_id = {p} AND experiment_id = {p}")
_ITEM_ROWS = ("SELECT item_id, position, status, record FROM items WHERE run_id = {p} AND experiment_id = {p}"
              " ORDER BY position")


class Store:
    """One results database, used by one thread at a time (its flush clock's writes take the same
    lock); its statements are written with ``{p}`` for each parameter (``store.database``)."""

    def __init__(self, path: str, migrate: bool = True):
        """``path``: a SQLite file or a PostgreSQL URL; ``migrate``: an older schema brought up to date now."""
        self.path = locations.shown(path)  # a URL's password is never shown
        self.database: Database | None = None
        self.outdated = False  # of an older schema, read as it is until the first write migrates it
        self._lock = threading.RLock()  # the connection's writes: the run's thread and the flush clock's
        try:
            self.database = locations.connect(path)
            self.read_only = self.database.read_only
            self._migrate(migrate)
        except (DatabaseError, UsageError) as exc:
            if self.database is not None:
                self.database.close()
            if isinstance(exc, UsageError):
                raise
            raise UsageError(cannot("open", self.path, exc)) from None
        self._pending: list[tuple] = []
        self._repeats: list[tuple] = []  # rows of stored_repeats, written with the items
        self._flushed = time.monotonic()
        self._clock = FlushClock(self._write_queued, lambda: bool(self._pending or self._repeats),
                                 lambda: self._flushed, FLUSH_SECONDS, self._lock)

    def has_table(self, name: str) -> bool:
        """Whether the database has that table (a read-only one of an older schema may lack some)."""
        return self.database.has_table(name)

    def _migrate(self, now: bool) -> None:
        """Bring the schema up to date under the write lock (a new database's tables made once); unless
        ``now``, an older one is read as it is until its first write: a store only read is never migrated."""
        version = self.database.schema_version()
        if version > SCHEMA_VERSION:
            raise UsageError(f"{self.path} was written by a newer yamleval (schema {version}); upgrade yamleval")
        self.outdated = 0 < version < SCHEMA_VERSION and not self.read_only
        if version == 0 or (now and self.outdated):
            self.outdated = False
            try:
                self.transaction(store_schema.upgrade)
            except ReadOnly:
                if version == 0:
                    raise
                self.read_only = True  # a read-only file in a WAL database: readable as it is

    def transaction(self, work: Callable[[Database], Any]) -> None:
        """``work(database)`` as one write transaction that holds the write lock from its start;
        still ``Busy`` after the database's wait, tried again (LOCKED_TRIES in all). Raises the
        database's errors (``store.errors.DatabaseError``)."""
        if self.outdated:  # the first write: the schema is brought up to date first
            self.outdated = False
            self.transaction(store_schema.upgrade)
        for attempt in tenacity.Retrying(stop=tenacity.stop_after_attempt(LOCKED_TRIES), reraise=True,
                                         wait=tenacity.wait_random_exponential(multiplier=0.2, max=2.0),
                                         retry=tenacity.retry_if_exception(lambda e: cause(e) == "locked")):
            with attempt, self._lock, self.database.transaction():
                work(self.database)

    def write(self, statement: str, rows: Iterable[tuple], then: str = RESUME_HINT) -> None:
        """``statement`` once for each of ``rows``, in one write transaction; StoreWriteError (saying
        why, what to do, ``then``) when it cannot be written."""
        try:
            self.transaction(lambda db: db.executemany(statement, rows))
        except DatabaseError as exc:
            raise StoreWriteError(cannot("write", self.path, exc, then)) from None

    def insert(self, table: Table, columns: Sequence[str], rows: Iterable[tuple], on_conflict: OnConflict = "fail",
               then: str = RESUME_HINT) -> None:
        """``rows`` of ``columns`` into ``table``, as ``write``; a row whose key is taken fails the
        whole write, or is left out (``ignore``) or replaces the row stored (``replace``)."""
        self.write(self.database.insert(table, columns, on_conflict), rows, then)

    def stream(self, statement: str, parameters: tuple = ()) -> Iterator[tuple]:
        """The rows of a query, read as they are iterated (on a connection of their own)."""
        return read_rows(self.database, statement, parameters)

    def query(self, statement: str, parameters: tuple = ()) -> list[tuple]:
        """The rows of a query; UsageError (``cannot read the results database …``) when it fails."""
        try:
            return self.database.rows(statement, parameters)
        except DatabaseError as exc:
            raise UsageError(cannot("read", self.path, exc, "")) from None

    def records(self, statement: str, parameters: tuple = ()) -> list[dict[str, Any]]:
        try:
            return self.database.records(statement, parameters)
        except DatabaseError as exc:
            raise UsageError(cannot("read", self.path, exc, "")) from None

    def close(self) -> None:
        self._clock.close()
        self.flush()
        self.database.close()

    def abandon(self) -> None:
        """Let the database go without writing what is queued (the run has failed)."""
        self._clock.close()
        self._pending, self._repeats = [], []
        self.database.close()

    # -- writing -------------------------------------------------------------------------

    def create_run(self, run: RunInfo, plugin_versions: dict[str, str], experiment_ids: Sequence[str],
                   fingerprint: dict[str, Any] | None = None, if_absent: bool = False) -> None:
        """Store a new run; ``if_absent``: unless one of that id is there (made by another shard)."""
        self.insert(
            store_schema.RUNS, _RUN_COLUMNS,
            [(run.run_id, run.status, run.started_at, run.completed_at, run.passed, run.yamleval_version,
              run.python_version, run.host, os.getpid(), encode(list(run.config_files)), run.config_hash,
              encode(dict(run.config_text)), run.git_commit, run.git_dirty, encode(plugin_versions),
              encode(list(experiment_ids)), None if fingerprint is None else encode(fingerprint),
              run.rescored_from, run.retried_from)],
            on_conflict="ignore" if if_absent else "fail", then="then run again")

    def record_config(self, run_id: str, config_hash: str, config_text: dict[str, str],
                      plugin_versions: dict[str, str], fingerprint: dict[str, Any]) -> None:
        """The config a resumed run goes on with (``--force``): the one that scores its items."""
        self.write("UPDATE runs SET config_hash = {p}, config_text = {p}, plugin_versions = {p}, fingerprint = {p}"
                   " WHERE run_id = {p}", [(config_hash, encode(config_text), encode(plugin_versions),
                                            encode(fingerprint), run_id)])

    def replace_items(self, run_id: str, experiment_id: str, results: Sequence[ItemResult]) -> None:
        """Store these items (of ids stored already) again, as re-scored."""
        self.write("UPDATE items SET status = {p}, record = {p}"
                   " WHERE run_id = {p} AND experiment_id = {p} AND item_id = {p}",
                   [(r.status, encode_record(r), run_id, experiment_id, store_schema.item_key(r.item.id)) for r in results])

    def reopen_run(self, run_id: str) -> None:
        self.write("UPDATE runs SET status = 'running', completed_at = NULL, passed = NULL, pid = {p}"
                   " WHERE run_id = {p}", [(os.getpid(), run_id)])

    def start_experiment(self, run_id: str, position: int, experiment: Experiment, dataset_hash: str,
                         started_at: str, summary: Summary, shared: bool = False) -> None:
        """The experiment as it starts (again, when resumed): what it runs, and its ``summary`` before
        any item, whose scorers and criteria count its items should the run never finish it.
        ``shared``: by one shard of several, which keeps it as the first shard started it."""
        self.insert(
            store_schema.EXPERIMENTS, _EXPERIMENT_COLUMNS,
            [(run_id, experiment.id, position, experiment.label, experiment.description, encode(list(experiment.tags)),
              experiment.runner.written(), experiment.dataset.describe(),
              encode([s.plugin.written() for s in experiment.scorers]), dataset_hash, "running", started_at,
              summary_to_json(summary), None if experiment.variant is None else encode(asdict(experiment.variant)))],
            on_conflict="ignore" if shared else "replace")

    def plan_experiment(self, run_id: str, experiment_id: str, planned: int) -> None:
        """How many items the experiment has in all (of every shard), as its run's progress counts them."""
        self.write(_PLANNED, [(planned, run_id, experiment_id)])

    def add_item(self, run_id: str, experiment_id: str, result: ItemResult) -> None:
        """Queue one finished item; the queue is written in one transaction every
        ``FLUSH_ITEMS`` items or ``FLUSH_SECONDS``, whichever comes first.

        Raises StoreWriteError when a batch cannot be written, so a run whose results cannot
        be kept stops early rather than running (and paying for) every item in vain.
        """
        row = (run_id, experiment_id, store_schema.item_key(result.item.id), result.item.index, result.status,
               encode_record(result))
        with self._lock:
            self._pending.append(row)
            if len(self._pending) >= FLUSH_ITEMS or time.monotonic() - self._flushed >= FLUSH_SECONDS:
                self.flush()
            else:
                self._clock.wake()

    def add_repeat(self, run_id: str, experiment_id: str, number: int, result: ItemResult) -> None:
        """Queue repeat ``number`` of an item whose other repeats are not all in (``stored_repeats``);
        written with the items, so a resumed run need not run it again."""
        with self._lock:
            self._repeats.append(stored_repeats.queued(run_id, experiment_id, number, result))
            if time.monotonic() - self._flushed >= FLUSH_SECONDS:
                self.flush()
            else:
                self._clock.wake()

    def flush(self) -> None:
        """Write the queued items (and repeats); raise what a flush on the clock's thread met."""
        with self._lock:
            self._clock.raise_failure()
            self._write_queued()

    def _write_queued(self) -> None:
        self._flushed = time.monotonic()
        if not self._pending and not self._repeats:
            return
        rows, self._pending = self._pending, []
        repeats, self._repeats = self._repeats, []
        try:
            self.transaction(lambda db: (db.executemany(db.insert(store_schema.ITEMS, _WRITTEN_COLUMNS),
                                                        numbered(db, rows)),
                                         repeats and stored_repeats.write(db, repeats, rows)))
        except Conflict as exc:  # a repeated id: keep the batch's other items, report it
            duplicate = duplicate_item(self.query, rows)
            self.insert(store_schema.ITEMS, _ITEM_COLUMNS, rows, on_conflict="ignore")
            raise duplicate or StoreWriteError(cannot("write", self.path, exc, RESUME_HINT))
        except DatabaseError as exc:
            raise StoreWriteError(cannot("write", self.path, exc, RESUME_HINT)) from None

    def copy_experiment(self, run_id: str, source: "Store", source_run_id: str, experiment_id: str) -> None:
        """An experiment of ``source``'s run, its items stored, into this store's run ``run_id``, as
        unfinished: the part of a merged run a shard ran (``yamleval merge``), read and written a
        batch at a time. UsageError when one of its items is in the run already (another shard's)."""
        self.flush()
        [row] = source.query(_EXPERIMENT_ROW, (source_run_id, experiment_id))
        rows = ((run_id, experiment_id, *item) for item in source.stream(_ITEM_ROWS, (source_run_id, experiment_id)))
        try:
            self.transaction(lambda db: (
                db.execute(db.insert(store_schema.EXPERIMENTS, _COPIED_COLUMNS, on_conflict="ignore"), (run_id, *row, "running")),
                [db.executemany(db.insert(store_schema.ITEMS, _ITEM_COLUMNS), batch) for batch in _batches(rows)]))
        except Conflict:
            raise UsageError(f"{display_path(source.path)} holds items of '{experiment_id}' that another shard"
                             " holds too: the shards overlap; merge the stores of one sharded run") from None
        except DatabaseError as exc:
            raise StoreWriteError(cannot("write", self.path, exc, "then merge again")) from None

    def finish_experiment(self, run_id: str, result: ExperimentResult) -> None:
        self.flush()
        self.write(stored_repeats.DONE, [(run_id, result.experiment_id) * 2])
        status = ("interrupted" if result.interrupted else "unevaluated" if result.could_not_evaluate
                  else "stopped" if result.stopped_by_budget else "aborted" if result.aborted
                  else "incomplete" if result.incomplete else "completed")
        self.write(
            "UPDATE experiments SET status = {p}, passed = {p}, interrupted = {p}, aborted = {p}, warnings = {p},"
            " completed_at = {p}, summary = {p}, started_at = {p} WHERE run_id = {p} AND experiment_id = {p}",
            [(status, result.passed, result.interrupted, result.aborted, encode(list(result.warnings)),
              result.completed_at, summary_to_json(result.summary), result.started_at, run_id, result.experiment_id)])

    def finish_run(self, run_id: str, status: str, passed: bool | None, completed_at: str) -> None:
        self.flush()
        self.write("UPDATE runs SET status = {p}, passed = {p}, completed_at = {p} WHERE run_id = {p}",
                   [(status, passed, completed_at, run_id)])

    # -- reading -------------------------------------------------------------------------

    def run_info(self, row: dict[str, Any]) -> RunInfo:
        status = row["status"]
        if status == "running" and not _alive(row["pid"], row["host"]):
            status = "crashed"
        passed, dirty = (None if row[key] is None else bool(row[key]) for key in ("passed", "git_dirty"))
        return RunInfo(run_id=row["run_id"], status=status, started_at=row["started_at"], passed=passed,
                       completed_at=row["completed_at"], yamleval_version=row["yamleval_version"], host=row["host"],
                       python_version=row["python_version"], config_files=tuple(json.loads(row["config_files"])),
                       config_hash=row["config_hash"], git_commit=row["git_commit"], git_dirty=dirty,
                       config_text=json.loads(row["config_text"] or "{}"),
                       rescored_from=row.get("rescored_from"), retried_from=row.get("retried_from"))

    def runs(self, limit: int = 20) -> list[RunInfo]:
        rows = self.records("SELECT * FROM runs ORDER BY started_at DESC, rowid DESC LIMIT {p}", (limit,))
        return [self.run_info(row) for row in rows]

    def find_run(self, ref: str) -> RunInfo:
        """A run by id, tag (``tags.newest``), unique id prefix, or ``latest``, in that order."""
        if ref == "latest":
            found = self.runs(1)
            if not found:
                raise UsageError(f"no runs stored in {self.path} yet")
            return found[0]
        rows = self.records("SELECT * FROM runs WHERE run_id LIKE {p} ESCAPE '\\' ORDER BY started_at DESC",
                           (ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%",))
        exact = [r for r in rows if r["run_id"] == ref]
        tagged = None if exact else run_tags.newest(self, ref)
        if tagged is not None:
            exact = self.records("SELECT * FROM runs WHERE run_id = {p}", (tagged,))
        if exact or len(rows) == 1:
            return self.run_info((exact or rows)[0])
        if not rows:
            raise UsageError(f"no run or tag '{ref}' in {self.path} (see `yamleval runs`)")
        raise UsageError(f"'{ref}' matches {len(rows)} runs; give more of the id")

    def has_run(self, run_id: str) -> bool:
        return bool(self.query("SELECT 1 FROM runs WHERE run_id = {p}", (run_id,)))

    def run_detail(self, run_id: str, key: str) -> Any:
        """A JSON column of a run: ``plugin_versions``, ``experiment_ids`` or ``fingerprint``."""
        rows = self.query(_RUN_DETAILS[key], (run_id,))
        return json.loads(rows[0][0]) if rows and rows[0][0] is not None else None

    def experiments(self, run_id: str) -> list[StoredExperiment]:
        """The run's experiments as far as they got, in the order they run."""
        return [StoredExperiment(row["experiment_id"], row["status"], row["dataset_hash"],
                                 json.loads(row["summary"])["duration_ms"] if row["summary"] else 0.0)
                for row in self._experiment_rows(run_id)]

    def _experiment_rows(self, run_id: str) -> list[dict[str, Any]]:
        return self.records("SELECT * FROM experiments WHERE run_id = {p} ORDER BY position", (run_id,))

    def item_view(self, run_id: str, experiment_id: str, count: int) -> StoredItems:
        """The experiment's stored items, read from the database each time they are iterated."""
        return StoredItems(self.database, run_id, experiment_id, count)

    def summaries(self, run_id: str) -> list[Summary]:
        """The stored summaries of a run's experiments, without reading their items."""
        return [summary_from_json(row["summary"]) for row in self._experiment_rows(run_id) if row["summary"]]

    def results(self, run_id: str, only: set[str] | None = None) -> list[ExperimentResult]:
        """The stored experiments of a run (those in ``only``, if given) with their items, as the run
        stored them (its dataset's labels, no review); one that never finished (its run crashed, or
        still runs) is marked incomplete, with the summary it started with. ``analysis.reviewed``
        counts what the store does not: such an experiment's items, and people's reviews."""
        out = []
        for row in self._experiment_rows(run_id):
            if only is not None and row["experiment_id"] not in only:
                continue
            items = self.item_view(run_id, row["experiment_id"], 0)
            unfinished = row["status"] == "running"
            incomplete = unfinished or row["status"] == "incomplete"  # or scored again from such a run
            stored = summary_from_json(row["summary"]) if row["summary"] else None
            items.count = 0 if unfinished or stored is None else stored.completed
            out.append(ExperimentResult(
                experiment_id=row["experiment_id"], label=row["label"], passed=bool(row["passed"]), summary=stored,
                items=items, incomplete=incomplete, started_at=row["started_at"], completed_at=row["completed_at"],
                interrupted=bool(row["interrupted"]), warnings=tuple(json.loads(row["warnings"] or "[]")),
                aborted=row["aborted"], could_not_evaluate=row["status"] == "unevaluated",
                stopped_by_budget=row["status"] == "stopped", variant=variant_of(row),
                description=row["description"], tags=tuple(json.loads(row["tags"] or "[]")), runner=row["runner"],
                dataset=row["dataset"], scorers=tuple(json.loads(row["scorers"] or "[]"))))
        return out


def _batches(rows, size: int = 1000):
    rows = iter(rows)
    while batch := list(itertools.islice(rows, size)):
        yield batch


def _alive(pid: int | None, host: str | None) -> bool:
    """Whether the process that writes a run still runs (only knowable on the same host)."""
    from yamleval.plugins.processes import running
    from yamleval.config.provenance import host as this_host

    return pid is None or host != this_host() or running(pid)


def open_store(location: str, remedy: str = locations.FIRST_RUN) -> Store:
    """The results database at ``location`` (a path or a ``postgresql://`` URL), to read its stored
    runs and write more: UsageError (exit 2) when no file is there, or what is there is not a
    yamleval results database (or cannot be reached), the message naming it without its password."""
    return Store(locations.existing(location, remedy), migrate=False)
