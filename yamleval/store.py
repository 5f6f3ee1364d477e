"""The results database: every run, experiment, item and score, written as items finish.

SQLite in WAL mode by default. Every statement is plain, parameterised SQL kept in this
module, so another database can serve the same schema later. Values that are JSON in
the reports (inputs, outputs, scores, summaries) are stored as JSON text, whole.
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import sqlite3
import time
import urllib.parse
from typing import Any, Iterator, Sequence

from yamleval.aggregate import histograms
from yamleval.errors import UsageError, display_path
from yamleval.records import encode, encode_record, item_from_record, storable_text, summary_from_json, summary_to_json
from yamleval.types import ExperimentResult, ItemResult, ItemResults, RunInfo, Summary

SCHEMA_VERSION = 3
FLUSH_ITEMS = 500
FLUSH_SECONDS = 1.0

_SCHEMA = [
    """CREATE TABLE runs (
        run_id TEXT PRIMARY KEY, status TEXT NOT NULL, started_at TEXT NOT NULL, completed_at TEXT,
        passed INTEGER, yamleval_version TEXT, python_version TEXT, host TEXT, pid INTEGER,
        config_files TEXT, config_hash TEXT, config_text TEXT, git_commit TEXT, git_dirty INTEGER,
        plugin_versions TEXT, experiment_ids TEXT)""",
    """CREATE TABLE experiments (
        run_id TEXT NOT NULL, experiment_id TEXT NOT NULL, position INTEGER NOT NULL, label TEXT,
        description TEXT, tags TEXT, runner TEXT, dataset TEXT, scorers TEXT, dataset_hash TEXT,
        status TEXT NOT NULL, passed INTEGER, interrupted INTEGER, aborted TEXT, warnings TEXT,
        started_at TEXT, completed_at TEXT, summary TEXT,
        PRIMARY KEY (run_id, experiment_id))""",
    # ``record``: the item's whole JSON record (yamleval.records): input, expected, output, error,
    # latency, tokens, runner metadata, trace and every score with its reason and metadata
    """CREATE TABLE items (
        run_id TEXT NOT NULL, experiment_id TEXT NOT NULL, item_id TEXT NOT NULL, position INTEGER NOT NULL,
        status TEXT NOT NULL, record TEXT NOT NULL,
        PRIMARY KEY (run_id, experiment_id, item_id))""",
    "CREATE INDEX runs_started ON runs (started_at)",
]
# MIGRATIONS[n] takes a database at version n to n + 1. Past 0, a migration must leave the
# database readable by this version without it: a read-only database is read unmigrated.
MIGRATIONS: dict[int, list[str]] = {
    0: _SCHEMA,
    # reports read a run's items in dataset order; without this index SQLite sorts them all first
    1: ["CREATE INDEX items_position ON items (run_id, experiment_id, position)"],
    # what decides the answers beyond the config text (yamleval.fingerprint): checked on resume
    2: ["ALTER TABLE runs ADD COLUMN fingerprint TEXT"],
}



_RUN_DETAILS = {
    "config_text": "SELECT config_text FROM runs WHERE run_id = ?",
    "plugin_versions": "SELECT plugin_versions FROM runs WHERE run_id = ?",
    "experiment_ids": "SELECT experiment_ids FROM runs WHERE run_id = ?",
    "fingerprint": "SELECT fingerprint FROM runs WHERE run_id = ?",
}
_ITEMS = "SELECT record FROM items WHERE run_id = ? AND experiment_id = ? ORDER BY position"
_ITEMS_WITH_STATUS = ("SELECT record FROM items WHERE run_id = ? AND experiment_id = ? AND status IN (?, ?, ?, ?)"
                      " ORDER BY position LIMIT ?")


@dataclasses.dataclass(frozen=True)
class StoredExperiment:
    """An experiment of a stored run: how far it got, and the hash of the dataset it read."""

    experiment_id: str
    status: str  # running, completed, interrupted or aborted
    dataset_hash: str | None


class StoreWriteError(UsageError):
    """The results database could not be written: a full disk, a read-only file or folder."""


RESUME_HINT = "then `yamleval run --resume` continues the run"
_INSERT_ITEM = ("INSERT INTO items (run_id, experiment_id, item_id, position, status, record)"
                " VALUES (?, ?, ?, ?, ?, ?)")


class DuplicateItemError(StoreWriteError):
    """Two items of one experiment have the same id (found by the database's key)."""


def _cannot_write(path: str, exc: BaseException, then: str = RESUME_HINT) -> StoreWriteError:
    if isinstance(exc, StoreWriteError):
        return exc
    return StoreWriteError(f"cannot write the results database {display_path(path)}: {exc} (is the disk full or the"
                           f" file read-only?); free some space or make it writable, {then}")


@contextlib.contextmanager
def _writing(path: str, then: str = RESUME_HINT) -> Iterator[None]:
    """Turn SQLite's failure to write into an error that names the database and what to do,
    instead of a traceback. SQLite has rolled the transaction back: what was stored stays."""
    try:
        yield
    except sqlite3.Error as exc:
        raise _cannot_write(path, exc, then) from None


def _load(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def _bool(value: int | None) -> bool | None:
    return None if value is None else bool(value)


def _with_histograms(summary: Summary, items: "StoredItems") -> Summary:
    """A summary stored before score histograms were kept, with them counted from its items."""
    missing = [sid for sid, scorer in summary.scorers.items() if scorer.histogram is None]
    if not missing or not items:
        return summary
    counted = histograms(items, missing)
    return dataclasses.replace(summary, scorers={
        sid: dataclasses.replace(scorer, histogram=counted[sid]) if sid in counted else scorer
        for sid, scorer in summary.scorers.items()})


class Store:
    """One results database. Not shared between threads at once: writes come from one place at a time."""

    def __init__(self, path: str):
        self.path = path
        folder = os.path.dirname(os.path.abspath(path))
        os.makedirs(folder, exist_ok=True)
        try:
            self.db = self._connect(path)
            self._migrate()
        except sqlite3.DatabaseError as exc:
            hint = (" (is the disk full or the file read-only?); free some space or make it writable, then run again"
                    if isinstance(exc, sqlite3.OperationalError) else "")
            raise UsageError(f"cannot open the results database {display_path(path)}: {exc}{hint}") from None
        self._pending: list[tuple] = []
        self._flushed = time.monotonic()

    def _connect(self, path: str) -> sqlite3.Connection:
        """The connection, in write-ahead logging mode. A database that cannot be written (a
        read-only file or folder: a CI artefact, a mounted share) serves for reading a stored
        run: read as it is, since nothing can change it, unless a log of writes not yet folded
        into it is there to be read too."""
        self.read_only = False
        self.reading = f"file:{urllib.parse.quote(os.path.abspath(path))}?mode=ro"  # how views open it
        db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        db.row_factory = sqlite3.Row
        db.execute("PRAGMA busy_timeout=5000")
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
        except sqlite3.OperationalError as exc:
            log = path + "-wal"
            if not _read_only(exc) or (os.path.exists(log) and os.path.getsize(log) > 0):
                raise
            db.close()
            self.read_only = True
            self.reading += "&immutable=1"
            db = sqlite3.connect(self.reading, uri=True, check_same_thread=False, isolation_level=None)
            db.row_factory = sqlite3.Row
        return db

    def _migrate(self) -> None:
        version = self.db.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise UsageError(f"{self.path} was written by a newer yamleval (schema {version}); upgrade yamleval")
        if self.read_only and version > 0:
            return  # readable as it is (see MIGRATIONS)
        while version < SCHEMA_VERSION:
            try:
                with self.db:
                    self.db.execute("BEGIN")
                    for statement in MIGRATIONS[version]:
                        self.db.execute(statement)
                    version += 1
                    self.db.execute(f"PRAGMA user_version = {int(version)}")  # a number: PRAGMA takes no parameters
            except sqlite3.OperationalError as exc:
                if version == 0 or not _read_only(exc):
                    raise
                self.read_only = True  # a read-only file in a WAL database: readable as it is
                return

    def close(self) -> None:
        self.flush()
        self.db.close()

    # -- writing -------------------------------------------------------------------------

    def create_run(self, run: RunInfo, config_text: dict[str, str], plugin_versions: dict[str, str],
                   experiment_ids: Sequence[str], fingerprint: dict[str, Any] | None = None) -> None:
        with _writing(self.path, then="then run again"), self.db:
            self.db.execute("BEGIN")
            self.db.execute(
                "INSERT INTO runs (run_id, status, started_at, completed_at, passed, yamleval_version, python_version,"
                " host, pid, config_files, config_hash, config_text, git_commit, git_dirty, plugin_versions,"
                " experiment_ids, fingerprint) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (run.run_id, run.status, run.started_at, run.completed_at, run.passed, run.yamleval_version,
                 run.python_version, run.host, os.getpid(), encode(list(run.config_files)), run.config_hash,
                 encode(config_text), run.git_commit, run.git_dirty, encode(plugin_versions),
                 encode(list(experiment_ids)), None if fingerprint is None else encode(fingerprint)))

    def record_config(self, run_id: str, config_hash: str, config_text: dict[str, str],
                      plugin_versions: dict[str, str], fingerprint: dict[str, Any]) -> None:
        """The config a resumed run goes on with (``--force``): the one that scores its items."""
        with _writing(self.path), self.db:
            self.db.execute("UPDATE runs SET config_hash = ?, config_text = ?, plugin_versions = ?, fingerprint = ?"
                            " WHERE run_id = ?", (config_hash, encode(config_text), encode(plugin_versions),
                                                  encode(fingerprint), run_id))

    def replace_items(self, run_id: str, experiment_id: str, results: Sequence[ItemResult]) -> None:
        """Store these items (of ids stored already) again, as re-scored."""
        with _writing(self.path), self.db:
            self.db.execute("BEGIN")
            self.db.executemany("UPDATE items SET status = ?, record = ? WHERE run_id = ? AND experiment_id = ? AND"
                                " item_id = ?", [(r.status, encode_record(r), run_id, experiment_id,
                                                  storable_text(r.item.id)) for r in results])

    def reopen_run(self, run_id: str) -> None:
        with _writing(self.path), self.db:
            self.db.execute("UPDATE runs SET status = 'running', completed_at = NULL, passed = NULL, pid = ?"
                            " WHERE run_id = ?", (os.getpid(), run_id))

    def start_experiment(self, run_id: str, position: int, experiment_id: str, label: str | None,
                         dataset_hash: str, started_at: str) -> None:
        with _writing(self.path), self.db:
            self.db.execute(
                "INSERT INTO experiments (run_id, experiment_id, position, label, dataset_hash, status, started_at)"
                " VALUES (?, ?, ?, ?, ?, 'running', ?)"
                " ON CONFLICT (run_id, experiment_id) DO UPDATE SET status = 'running'",
                (run_id, experiment_id, position, label, dataset_hash, started_at))

    def add_item(self, run_id: str, experiment_id: str, result: ItemResult) -> None:
        """Queue one finished item; the queue is written in one transaction every
        ``FLUSH_ITEMS`` items or ``FLUSH_SECONDS``, whichever comes first.

        Raises StoreWriteError when a batch cannot be written, so a run whose results cannot
        be kept stops early rather than running (and paying for) every item in vain.
        """
        self._pending.append((run_id, experiment_id, storable_text(result.item.id), result.item.index, result.status,
                              encode_record(result)))
        if len(self._pending) >= FLUSH_ITEMS or time.monotonic() - self._flushed >= FLUSH_SECONDS:
            self.flush()

    def flush(self) -> None:
        """Write the queued items."""
        self._flushed = time.monotonic()
        if not self._pending:
            return
        rows, self._pending = self._pending, []
        try:
            self._insert(rows, _INSERT_ITEM)
        except sqlite3.IntegrityError as exc:  # a repeated id: keep the batch's other items, report it
            duplicate = self._duplicate(rows)
            with _writing(self.path):
                self._insert(rows, _INSERT_ITEM.replace("INSERT", "INSERT OR IGNORE", 1))
            raise duplicate or _cannot_write(self.path, exc)
        except sqlite3.Error as exc:
            raise _cannot_write(self.path, exc) from None

    def _insert(self, rows: list[tuple], statement: str) -> None:
        with self.db:
            self.db.execute("BEGIN")
            self.db.executemany(statement, rows)

    def _duplicate(self, rows: list[tuple]) -> "DuplicateItemError | None":
        """The error for the first item of ``rows`` whose id is taken: stored already, or
        earlier in the batch. Datasets check ids as they are read, but only so many, so
        that a run of any size needs bounded memory; the database's key checks them all."""
        first: dict[tuple, int] = {}
        for run_id, experiment_id, item_id, position, _, _ in rows:
            key = (run_id, experiment_id, item_id)
            earlier = first.get(key)
            if earlier is None:
                found = self.db.execute("SELECT position FROM items WHERE run_id = ? AND experiment_id = ? AND"
                                        " item_id = ?", key).fetchone()
                earlier = found[0] if found else None
            if earlier is not None:
                return DuplicateItemError(
                    f"duplicate item id '{item_id}' in experiment '{experiment_id}': items {earlier + 1} and"
                    f" {position + 1} of the dataset; ids must be unique, so fix the dataset and run again")
            first[key] = position
        return None

    def finish_experiment(self, run_id: str, result: ExperimentResult) -> None:
        self.flush()
        status = "interrupted" if result.interrupted else ("aborted" if result.aborted else "completed")
        with _writing(self.path), self.db:
            self.db.execute(
                "UPDATE experiments SET status = ?, passed = ?, interrupted = ?, aborted = ?, warnings = ?,"
                " completed_at = ?, summary = ?, description = ?, tags = ?, runner = ?, dataset = ?, scorers = ?,"
                " started_at = ? WHERE run_id = ? AND experiment_id = ?",
                (status, result.passed, result.interrupted, result.aborted, encode(list(result.warnings)),
                 result.completed_at, summary_to_json(result.summary), result.description, encode(list(result.tags)),
                 result.runner, result.dataset, encode(list(result.scorers)), result.started_at, run_id,
                 result.experiment_id))

    def finish_run(self, run_id: str, status: str, passed: bool | None, completed_at: str) -> None:
        self.flush()
        with _writing(self.path), self.db:
            self.db.execute("UPDATE runs SET status = ?, passed = ?, completed_at = ? WHERE run_id = ?",
                            (status, passed, completed_at, run_id))

    # -- reading -------------------------------------------------------------------------

    def _run_info(self, row: sqlite3.Row) -> RunInfo:
        status = row["status"]
        if status == "running" and not _alive(row["pid"], row["host"]):
            status = "crashed"
        return RunInfo(run_id=row["run_id"], status=status, started_at=row["started_at"],
                       completed_at=row["completed_at"], passed=_bool(row["passed"]),
                       yamleval_version=row["yamleval_version"], python_version=row["python_version"],
                       host=row["host"], config_files=tuple(json.loads(row["config_files"])),
                       config_hash=row["config_hash"], git_commit=row["git_commit"], git_dirty=_bool(row["git_dirty"]))

    def runs(self, limit: int = 20) -> list[RunInfo]:
        rows = self.db.execute("SELECT * FROM runs ORDER BY started_at DESC, rowid DESC LIMIT ?", (limit,))
        return [self._run_info(row) for row in rows]

    def find_run(self, ref: str) -> RunInfo:
        """A run by id, unique id prefix, or ``latest``."""
        if ref == "latest":
            found = self.runs(1)
            if not found:
                raise UsageError(f"no runs stored in {self.path} yet")
            return found[0]
        rows = self.db.execute("SELECT * FROM runs WHERE run_id LIKE ? ESCAPE '\\' ORDER BY started_at DESC",
                               (ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%",)).fetchall()
        exact = [r for r in rows if r["run_id"] == ref]
        if exact or len(rows) == 1:
            return self._run_info((exact or rows)[0])
        if not rows:
            raise UsageError(f"no run '{ref}' in {self.path} (see `yamleval runs`)")
        raise UsageError(f"'{ref}' matches {len(rows)} runs; give more of the id")

    def run_detail(self, run_id: str, key: str) -> Any:
        """A JSON column of a run: ``config_text``, ``plugin_versions``, ``experiment_ids`` or ``fingerprint``."""
        row = self.db.execute(_RUN_DETAILS[key], (run_id,)).fetchone()
        return _load(row[0]) if row else None

    def experiments(self, run_id: str) -> list[StoredExperiment]:
        """The run's experiments as far as they got, in the order they run."""
        return [StoredExperiment(row["experiment_id"], row["status"], row["dataset_hash"])
                for row in self._experiment_rows(run_id)]

    def _experiment_rows(self, run_id: str) -> list[sqlite3.Row]:
        return self.db.execute("SELECT * FROM experiments WHERE run_id = ? ORDER BY position", (run_id,)).fetchall()

    def item_view(self, run_id: str, experiment_id: str, count: int) -> "StoredItems":
        """The experiment's stored items, read from the database each time they are iterated."""
        return StoredItems(self.path, run_id, experiment_id, count, self.reading)

    def summaries(self, run_id: str) -> list[Summary]:
        """The stored summaries of a run's experiments, without reading their items."""
        return [summary_from_json(row["summary"]) for row in self._experiment_rows(run_id) if row["summary"]]

    def results(self, run_id: str, only: set[str] | None = None) -> list[ExperimentResult]:
        """The stored experiments of a run (those in ``only``, if given) with their items."""
        out = []
        for row in self._experiment_rows(run_id):
            if row["summary"] is None or (only is not None and row["experiment_id"] not in only):
                continue
            out.append(ExperimentResult(
                experiment_id=row["experiment_id"], label=row["label"], passed=bool(row["passed"]),
                summary=_with_histograms(summary := summary_from_json(row["summary"]),
                                         items := self.item_view(run_id, row["experiment_id"], summary.completed)),
                items=items,
                started_at=row["started_at"], completed_at=row["completed_at"], interrupted=bool(row["interrupted"]),
                warnings=tuple(json.loads(row["warnings"] or "[]")), aborted=row["aborted"],
                description=row["description"], tags=tuple(json.loads(row["tags"] or "[]")), runner=row["runner"],
                dataset=row["dataset"], scorers=tuple(json.loads(row["scorers"] or "[]"))))
        return out


class StoredItems(ItemResults):
    """An experiment's items as the database keeps them: read again, in dataset order, each
    time they are iterated, so a run of any size is never held in memory. Each reading opens
    a connection of its own; the view outlives the ``Store`` it came from."""

    def __init__(self, path: str, run_id: str, experiment_id: str, count: int, uri: str):
        """``uri``: how to open the database for reading (``Store.reading``)."""
        self.path, self.run_id, self.experiment_id, self.count, self.uri = path, run_id, experiment_id, count, uri

    def __len__(self) -> int:
        return self.count

    def _select(self, statement: str, parameters: tuple = ()) -> Iterator[str]:
        db = sqlite3.connect(self.uri, uri=True)
        try:
            for (text,) in db.execute(statement, (self.run_id, self.experiment_id, *parameters)):
                yield text
        finally:
            db.close()

    def __iter__(self) -> Iterator[ItemResult]:
        return (item_from_record(json.loads(text)) for text in self._select(_ITEMS))

    def with_status(self, statuses: Sequence[str], limit: int) -> list[ItemResult]:
        """The first ``limit`` items with one of these statuses (at most four), in dataset order."""
        wanted = (tuple(statuses) * 4)[:4]
        return [item_from_record(json.loads(text)) for text in self._select(_ITEMS_WITH_STATUS, (*wanted, limit))]


def _read_only(exc: sqlite3.OperationalError) -> bool:
    """Whether SQLite refused a write because the database file or its folder is read-only."""
    return "readonly" in str(exc).replace(" ", "").replace("-", "").lower()


def _alive(pid: int | None, host: str | None) -> bool:
    """Whether the process that writes a run still runs (only knowable on the same host)."""
    from yamleval.processes import running
    from yamleval.provenance import host as this_host

    return pid is None or host != this_host() or running(pid)
