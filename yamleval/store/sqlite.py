"""SQLite as the results database (the default): a file in write-ahead logging mode, shared by
any number of processes, each waiting its turn for the write lock. ``?`` placeholders,
``INSERT OR IGNORE`` / ``INSERT OR REPLACE``, ``json_extract``, the schema version in
``PRAGMA user_version``; a table's rows are numbered by SQLite's own ``rowid``."""
from __future__ import annotations

import contextlib
import os
import sqlite3
import urllib.parse
from typing import Any, Iterable, Iterator, Sequence

from yamleval.store.database import OnConflict, Table, bound
from yamleval.store.errors import Busy, Conflict, DatabaseError, ReadOnly, cause

BUSY_SECONDS = 10.0  # how long a statement waits for another process's lock (Ctrl-C waits as long)
_INSERT = {"fail": "INSERT", "ignore": "INSERT OR IGNORE", "replace": "INSERT OR REPLACE"}


def _error(exc: sqlite3.Error) -> DatabaseError:
    """The store's error for one of SQLite's, in SQLite's words."""
    if isinstance(exc, sqlite3.IntegrityError):
        return Conflict(str(exc))
    found = cause(exc)
    return (Busy if found == "locked" else ReadOnly if found == "read-only" else DatabaseError)(str(exc))


@contextlib.contextmanager
def _errors() -> Iterator[None]:
    try:
        yield
    except sqlite3.Error as exc:
        raise _error(exc) from None


def _unwritable(path: str, exc: sqlite3.OperationalError) -> bool:
    """Whether ``exc`` says the database cannot be written: a read-only file, or a folder (a
    read-only mount) where the WAL's shared-memory file cannot be made ("unable to open")."""
    return cause(exc) == "read-only" or not os.access(os.path.dirname(os.path.abspath(path)), os.W_OK)


class SQLiteDatabase:
    """A SQLite file as the results database (``Database``)."""

    placeholder = "?"

    def __init__(self, path: str):
        """Open (and create, with its folder) the database file ``path``. A database that cannot be
        written (a read-only file or folder: a CI artefact, a mounted share) is read as it is, since
        nothing can change it, unless a log of writes not yet folded into it is there to be read too."""
        self.name, self.read_only = path, False
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        self._reading = f"file:{urllib.parse.quote(os.path.abspath(path))}?mode=ro"  # how streams open it
        with _errors():
            self._db = sqlite3.connect(path, timeout=BUSY_SECONDS, check_same_thread=False, isolation_level=None)
            try:
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")
            except sqlite3.OperationalError as exc:
                self._db.close()
                if not _unwritable(path, exc) or (os.path.exists(log := path + "-wal") and os.path.getsize(log) > 0):
                    raise
                self.read_only = True
                self._reading += "&immutable=1"
                self._db = sqlite3.connect(self._reading, uri=True, check_same_thread=False, isolation_level=None)

    def execute(self, statement: str, parameters: Sequence[Any] = ()) -> None:
        with _errors():
            self._db.execute(bound(statement, "?"), parameters)

    def executemany(self, statement: str, rows: Iterable[Sequence[Any]]) -> None:
        with _errors():
            self._db.executemany(bound(statement, "?"), rows)

    def rows(self, statement: str, parameters: Sequence[Any] = ()) -> list[tuple]:
        with _errors():
            return self._db.execute(bound(statement, "?"), parameters).fetchall()

    def records(self, statement: str, parameters: Sequence[Any] = ()) -> list[dict[str, Any]]:
        with _errors():
            cursor = self._db.execute(bound(statement, "?"), parameters)
            names = [column[0] for column in cursor.description or ()]
            return [dict(zip(names, row)) for row in cursor.fetchall()]

    def stream(self, statement: str, parameters: Sequence[Any] = ()) -> Iterator[tuple]:
        with _errors():
            db = sqlite3.connect(self._reading, uri=True, timeout=BUSY_SECONDS)
        try:
            with _errors():
                yield from db.execute(bound(statement, "?"), parameters)
        finally:
            db.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        # IMMEDIATE: the write lock is taken before anything is read (a lock upgraded later fails
        # at once, without waiting, if another process wrote meanwhile)
        with _errors():
            self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
            with _errors():
                self._db.execute("COMMIT")
        except BaseException:
            if self._db.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    self._db.execute("ROLLBACK")
            raise

    def close(self) -> None:
        self._db.close()

    def insert(self, table: Table, columns: Sequence[str], on_conflict: OnConflict = "fail") -> str:
        return (f"{_INSERT[on_conflict]} INTO {table.name} ({', '.join(columns)})"
                f" VALUES ({', '.join(['{p}'] * len(columns))})")

    def json_field(self, column: str, *keys: str) -> str:
        return f"json_extract({column}, '$" + "".join(f'."{key}"' for key in keys) + "')"

    def json_unreadable(self, column: str) -> str:
        return "FALSE"  # SQLite's JSON reads any JSON text

    def create_table(self, table: Table) -> str:
        return f"CREATE TABLE IF NOT EXISTS {table.name} ({table.columns})"

    def has_table(self, name: str) -> bool:
        return bool(self.rows("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)))

    def tables(self) -> list[str]:
        return [name for name, in self.rows("SELECT name FROM sqlite_master")]

    def schema_version(self) -> int:
        return self.rows("PRAGMA user_version")[0][0]

    def begin_upgrade(self) -> None:
        """Nothing to do: the write transaction (BEGIN IMMEDIATE) holds the lock already."""

    def begin_items(self) -> None:
        """Nothing to do: the write transaction (BEGIN IMMEDIATE) holds the lock already."""

    def set_schema_version(self, version: int) -> None:
        self.execute(f"PRAGMA user_version = {int(version)}")  # a number: PRAGMA takes no parameters
