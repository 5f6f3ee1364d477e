"""PostgreSQL as the results database (``store: postgresql://…``), through psycopg 3 (the
``postgres`` extra), in its own SQL: ``%s`` placeholders, ``ON CONFLICT`` on each table's key,
``record::json -> 'key'`` paths, a ``rowid BIGSERIAL`` in every table (the number SQLite gives
each row of its own), the schema version in a ``yamleval_schema`` table, tables found in
``pg_catalog`` and the schema created under an advisory lock. The password of a URL is never
shown (``yamleval.records.urls``), nor repeated from a server's or psycopg's words.
"""
from __future__ import annotations

import contextlib
import os
from typing import Any, Iterable, Iterator, Sequence

from yamleval.records.urls import passwords, scrubbed, shown_database_url as shown_url
from yamleval.store.database import OnConflict, Table, bound
from yamleval.store.errors import Busy, Conflict, DatabaseError, ReadOnly

SCHEMES = ("postgresql://", "postgres://")
CONNECT_SECONDS = 10
_SCHEMA_LOCK = "SELECT pg_advisory_xact_lock(7406177)"  # any number: yamleval's own
_ITEMS_LOCK = "SELECT pg_advisory_xact_lock(7406178)"  # the order of stored items (``written``)
_TABLES = "SELECT tablename FROM pg_catalog.pg_tables WHERE schemaname = current_schema()"


def is_url(path: str | None) -> bool:
    return bool(path) and path.startswith(SCHEMES)


def _error(exc: Exception, secrets: Sequence[str] = ()) -> DatabaseError:
    """The store's error for one of psycopg's, in the server's words on one line (no password)."""
    from psycopg import IntegrityError, errors

    words = " ".join(scrubbed(str(exc), list(secrets)).split())  # scrubbed first: a password may hold spaces
    if isinstance(exc, IntegrityError):
        return Conflict(words)
    if isinstance(exc, (errors.LockNotAvailable, errors.DeadlockDetected, errors.SerializationFailure)):
        return Busy(words)
    return (ReadOnly if isinstance(exc, errors.ReadOnlySqlTransaction) else DatabaseError)(words)


@contextlib.contextmanager
def _errors(secrets: Sequence[str] = ()) -> Iterator[None]:
    import psycopg

    try:
        yield
    except psycopg.Error as exc:
        raise _error(exc, secrets) from None


def _connect(url: str):
    try:
        import psycopg
    except ImportError:
        raise DatabaseError("psycopg is not installed") from None
    with _errors(passwords(url, dict(os.environ))):
        return psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_SECONDS)


def _values(parameters: Iterable[Any]) -> tuple:
    """Booleans as the 0 and 1 the INTEGER columns hold (as SQLite stores them)."""
    return tuple(int(v) if isinstance(v, bool) else v for v in parameters)


class PostgresDatabase:
    """A PostgreSQL database as the results database (``Database``)."""

    placeholder = "%s"

    def __init__(self, url: str):
        """Connect to ``url``: DatabaseError with the server's words when it cannot be reached or
        refuses the login, or when psycopg is not installed."""
        self.name, self.read_only, self._url = shown_url(url), False, url
        self._db = _connect(url)

    def execute(self, statement: str, parameters: Sequence[Any] = ()) -> None:
        with _errors():
            self._db.execute(bound(statement, "%s"), _values(parameters))

    def executemany(self, statement: str, rows: Iterable[Sequence[Any]]) -> None:
        with _errors(), self._db.cursor() as cursor:
            cursor.executemany(bound(statement, "%s"), [_values(row) for row in rows])

    def rows(self, statement: str, parameters: Sequence[Any] = ()) -> list[tuple]:
        with _errors():
            cursor = self._db.execute(bound(statement, "%s"), _values(parameters))
            return cursor.fetchall() if cursor.description else []

    def records(self, statement: str, parameters: Sequence[Any] = ()) -> list[dict[str, Any]]:
        from psycopg.rows import dict_row

        with _errors(), self._db.cursor(row_factory=dict_row) as cursor:
            cursor.execute(bound(statement, "%s"), _values(parameters))
            return cursor.fetchall() if cursor.description else []

    def stream(self, statement: str, parameters: Sequence[Any] = ()) -> Iterator[tuple]:
        db = _connect(self._url)
        try:
            with _errors():
                cursor = db.execute(bound(statement, "%s"), _values(parameters))
                yield from cursor if cursor.description else ()
        finally:
            db.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        with _errors(), self._db.transaction():
            yield

    def close(self) -> None:
        self._db.close()

    def insert(self, table: Table, columns: Sequence[str], on_conflict: OnConflict = "fail") -> str:
        statement = f"INSERT INTO {table.name} ({', '.join(columns)}) VALUES ({', '.join(['{p}'] * len(columns))})"
        if on_conflict == "fail":
            return statement
        update = ", ".join(f"{c} = EXCLUDED.{c}" for c in columns if c not in table.key)
        how = f"DO UPDATE SET {update}" if on_conflict == "replace" and update else "DO NOTHING"
        return f"{statement} ON CONFLICT ({', '.join(table.key)}) {how}"

    def json_field(self, column: str, *keys: str) -> str:
        path = "".join(f" -> '{key}'" for key in keys)
        return f"(CASE WHEN NOT {self.json_unreadable(column)} THEN {column}::json{path} END)"

    def json_unreadable(self, column: str) -> str:
        # json's operators turn every string they pass into text, and no text holds U+0000 (JSON
        # keeps one as \u0000: found so, or where a text holds a backslash and u0000, read whole)
        return f"strpos({column}, '\\u0000') > 0"

    def create_table(self, table: Table) -> str:
        return f"CREATE TABLE IF NOT EXISTS {table.name} (rowid BIGSERIAL, {table.columns})"

    def has_table(self, name: str) -> bool:
        return bool(self.rows(_TABLES + " AND tablename = {p}", (name,)))

    def tables(self) -> list[str]:
        return [name for name, in self.rows(_TABLES)]

    def schema_version(self) -> int:
        if not self.has_table("yamleval_schema"):
            return 0
        return self.rows("SELECT version FROM yamleval_schema")[0][0]

    def begin_upgrade(self) -> None:
        self.execute(_SCHEMA_LOCK)  # PostgreSQL's write lock for the schema: held to the transaction's end

    def begin_items(self) -> None:
        self.execute(_ITEMS_LOCK)  # held to the transaction's end: numbers taken in commit order

    def set_schema_version(self, version: int) -> None:
        self.execute("CREATE TABLE IF NOT EXISTS yamleval_schema (version INTEGER NOT NULL)")
        self.execute("DELETE FROM yamleval_schema")
        self.execute("INSERT INTO yamleval_schema (version) VALUES ({p})", (version,))
