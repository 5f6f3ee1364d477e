"""The results database: every run, experiment, item and score, written as items finish.

SQLite in WAL mode by default. Every statement is plain, parameterised SQL kept in this
module, so another database can serve the same schema later. Values that are JSON in
the reports (inputs, outputs, scores, summaries) are stored as JSON text, whole.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import queue
import sqlite3
import threading
import time
import urllib.parse
from typing import Any, Iterator, Sequence

from yamleval.aggregate import histograms
from yamleval.errors import UsageError, display_path
from yamleval.records import encode, encode_record, item_from_record, storable_text
from yamleval.types import (CriterionResult, ExperimentResult, ItemResult, ItemResults, LatencySummary, RunInfo,
                            ScorerSummary, Summary, Throttling, Usage)

SCHEMA_VERSION = 2
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
}



class StoreWriteError(UsageError):
    """The results database could not be written: a full disk, a read-only file or folder."""


RESUME_HINT = "then `yamleval run --resume` continues the run"


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


def _json(value: Any) -> str | None:
    return None if value is None else encode(value)


def _load(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def _bool(value: int | None) -> bool | None:
    return None if value is None else bool(value)


def summary_to_json(s: Summary) -> str:
    return encode({
        "total": s.total, "completed": s.completed, "passed": s.passed, "failed": s.failed, "errored": s.errored,
        "skipped": s.skipped, "mean_score": s.mean_score, "pass_rate": s.pass_rate, "duration_ms": s.duration_ms,
        "latency_ms": [s.latency_ms.mean, s.latency_ms.p50, s.latency_ms.p95, s.latency_ms.max],
        "tokens": [s.tokens.prompt_tokens, s.tokens.completion_tokens, s.tokens.cost],
        "judge_tokens": [s.judge_tokens.prompt_tokens, s.judge_tokens.completion_tokens, s.judge_tokens.cost],
        "scorers": [[x.id, x.name, x.threshold, x.mean, x.min, x.max, x.pass_rate, x.passed, x.failed, x.errored,
                     x.skipped, x.histogram] for x in s.scorers.values()],
        "criteria": [[c.type, c.min, c.actual, c.passed, c.severity, c.scorer, c.label] for c in s.criteria],
        "throttling": [s.throttling.calls, s.throttling.throttled, s.throttling.waited_seconds],
    })


def summary_from_json(text: str) -> Summary:
    d = json.loads(text)
    return Summary(
        total=d["total"], completed=d["completed"], passed=d["passed"], failed=d["failed"], errored=d["errored"],
        skipped=d["skipped"], mean_score=d["mean_score"], pass_rate=d["pass_rate"], duration_ms=d["duration_ms"],
        latency_ms=LatencySummary(*d["latency_ms"]), tokens=Usage(*d["tokens"]),
        scorers={x[0]: ScorerSummary(*x[:11], histogram=tuple(x[11]) if len(x) > 11 and x[11] else None)
                 for x in d["scorers"]},
        criteria=tuple(CriterionResult(*c) for c in d["criteria"]), judge_tokens=Usage(*d["judge_tokens"]),
        throttling=Throttling(*d.get("throttling", ())),  # stored before it was kept: none
    )


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
        self._writer: _ItemWriter | None = None

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
                    self.db.execute(f"PRAGMA user_version = {version}")
            except sqlite3.OperationalError as exc:
                if version == 0 or not _read_only(exc):
                    raise
                self.read_only = True  # a read-only file in a WAL database: readable as it is
                return

    def close(self) -> None:
        self.flush()
        if self._writer is not None:
            self._writer.close()
        self.db.close()

    # -- writing -------------------------------------------------------------------------

    def create_run(self, run: RunInfo, config_text: dict[str, str], plugin_versions: dict[str, str],
                   experiment_ids: Sequence[str]) -> None:
        with _writing(self.path, then="then run again"), self.db:
            self.db.execute("BEGIN")
            self.db.execute(
                "INSERT INTO runs (run_id, status, started_at, completed_at, passed, yamleval_version, python_version,"
                " host, pid, config_files, config_hash, config_text, git_commit, git_dirty, plugin_versions,"
                " experiment_ids) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (run.run_id, run.status, run.started_at, run.completed_at, run.passed, run.yamleval_version,
                 run.python_version, run.host, os.getpid(), encode(list(run.config_files)), run.config_hash,
                 encode(config_text), run.git_commit, run.git_dirty, encode(plugin_versions),
                 encode(list(experiment_ids))))

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
        """Queue one finished item; written in a batch within a second.

        Raises StoreWriteError once a batch has failed, so a run whose results cannot be
        kept stops early rather than running (and paying for) every item in vain.
        """
        if self._writer is not None and self._writer.failure is not None:
            raise _cannot_write(self.path, self._writer.failure)
        self._pending.append((run_id, experiment_id, storable_text(result.item.id), result.item.index, result.status,
                              encode_record(result)))
        if len(self._pending) >= FLUSH_ITEMS or time.monotonic() - self._flushed >= FLUSH_SECONDS:
            self.flush(wait=False)

    def flush(self, wait: bool = True) -> None:
        """Hand the queued items to the writer; with ``wait``, return once they are in the database."""
        self._flushed = time.monotonic()
        if self._pending:
            if self._writer is None:
                self._writer = _ItemWriter(self.path)
            rows, self._pending = self._pending, []
            self._writer.put(rows)
        if wait and self._writer is not None:
            self._writer.wait()
            if self._writer.failure is not None:
                raise _cannot_write(self.path, self._writer.failure)

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
        """A JSON column of a run: ``config_text``, ``plugin_versions`` or ``experiment_ids``."""
        row = self.db.execute(f"SELECT {key} FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        return _load(row[0]) if row else None

    def experiment_rows(self, run_id: str) -> list[sqlite3.Row]:
        return self.db.execute("SELECT * FROM experiments WHERE run_id = ? ORDER BY position", (run_id,)).fetchall()

    def item_view(self, run_id: str, experiment_id: str, count: int) -> "StoredItems":
        """The experiment's stored items, read from the database each time they are iterated."""
        return StoredItems(self.path, run_id, experiment_id, count, self.reading)

    def summaries(self, run_id: str) -> list[Summary]:
        """The stored summaries of a run's experiments, without reading their items."""
        return [summary_from_json(row["summary"]) for row in self.experiment_rows(run_id) if row["summary"]]

    def results(self, run_id: str, only: set[str] | None = None) -> list[ExperimentResult]:
        """The stored experiments of a run (those in ``only``, if given) with their items."""
        out = []
        for row in self.experiment_rows(run_id):
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

    def _select(self, where: str = "", parameters: tuple = (), limit: int = -1) -> Iterator[str]:
        db = sqlite3.connect(self.uri, uri=True)
        try:
            rows = db.execute(f"SELECT record FROM items WHERE run_id = ? AND experiment_id = ?{where}"
                              " ORDER BY position LIMIT ?", (self.run_id, self.experiment_id, *parameters, limit))
            for (text,) in rows:
                yield text
        finally:
            db.close()

    def __iter__(self) -> Iterator[ItemResult]:
        return (item_from_record(json.loads(text)) for text in self._select())

    def with_status(self, statuses: Sequence[str], limit: int) -> list[ItemResult]:
        """The first ``limit`` items with one of these statuses, in dataset order."""
        marks = ", ".join("?" * len(statuses))
        return [item_from_record(json.loads(text))
                for text in self._select(f" AND status IN ({marks})", tuple(statuses), limit)]


ROWS_PER_INSERT = 500  # 3,000 parameters: well inside SQLite's limit of 32,766


@functools.lru_cache(maxsize=8)
def _insert_statement(verb: str, rows: int) -> str:
    return (f"{verb} INTO items (run_id, experiment_id, item_id, position, status, record) VALUES "
            + ", ".join(["(?, ?, ?, ?, ?, ?)"] * rows))


class _ItemWriter:
    """Writes batches of items on a thread and a connection of its own, so SQLite's work
    (which runs without the GIL) overlaps with running and scoring the next items."""

    def __init__(self, path: str):
        self.db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute("PRAGMA busy_timeout=5000")
        self.queue: queue.SimpleQueue = queue.SimpleQueue()
        self.failure: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="yamleval-store", daemon=True)
        self.thread.start()

    def put(self, rows: list[tuple]) -> None:
        self.queue.put(rows)

    def wait(self) -> None:
        """Return once every batch put before is written, or has failed (see ``failure``)."""
        done = threading.Event()
        self.queue.put(done)
        done.wait()

    def close(self) -> None:
        self.queue.put(None)
        self.thread.join()
        self.db.close()

    def _run(self) -> None:
        while True:
            entry = self.queue.get()
            if entry is None:
                return
            if isinstance(entry, threading.Event):
                entry.set()
                continue
            try:
                self._insert(entry, "INSERT")
            except sqlite3.IntegrityError as exc:  # a repeated id: keep the batch's other items, report it
                self.failure = self._duplicate(entry) or exc
                try:
                    self._insert(entry, "INSERT OR IGNORE")
                except sqlite3.Error as again:
                    self.failure = again
            except sqlite3.Error as exc:  # kept: the store raises it at the next item or flush
                self.failure = exc

    def _insert(self, rows: list[tuple], verb: str) -> None:
        """Many rows per statement: each statement gives the GIL up and takes it back once,
        where one statement a row would wait for it once a row while items are running."""
        with self.db:
            self.db.execute("BEGIN")
            for start in range(0, len(rows), ROWS_PER_INSERT):
                group = rows[start:start + ROWS_PER_INSERT]
                self.db.execute(_insert_statement(verb, len(group)), [value for row in group for value in row])

    def _duplicate(self, rows: list[tuple]) -> DuplicateItemError | None:
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


def _read_only(exc: sqlite3.OperationalError) -> bool:
    """Whether SQLite refused a write because the database file or its folder is read-only."""
    return "readonly" in str(exc).replace(" ", "").replace("-", "").lower()


def _alive(pid: int | None, host: str | None) -> bool:
    """Whether the process that writes a run still runs (only knowable on the same host)."""
    from yamleval.processes import running
    from yamleval.provenance import host as this_host

    return pid is None or host != this_host() or running(pid)
