"""PostgreSQL as the results database (``store: postgresql://…``), through psycopg 3 (the
``postgres`` extra): a connection that runs the store's statements, written for SQLite, there.

The statements are plain, parameterised SQL; four things differ and are translated here, once:
``?`` placeholders become ``%s``; ``INSERT OR IGNORE`` and ``INSERT OR REPLACE`` become
``ON CONFLICT`` clauses (on each table's key); every table has a ``rowid`` column, which SQLite
gives each table of its own; ``json_extract(record, '$.a."b".c')`` becomes ``record::json``
paths. Failures come out as the ``sqlite3`` exception of the same kind (integrity, operational),
so that the store handles both databases in one way, and their words say the cause
(``store_errors``). The password of a URL is never shown: ``shown_url`` hides it.
"""
from __future__ import annotations

import re
import sqlite3
import urllib.parse
from typing import Any, Iterable, Iterator, Sequence

SCHEMES = ("postgresql://", "postgres://")
KEYS = {"runs": ("run_id",), "experiments": ("run_id", "experiment_id"),
        "items": ("run_id", "experiment_id", "item_id"), "run_tags": ("run_id", "tag"),
        "repeats": ("run_id", "experiment_id", "item_id", "number")}
_INSERT = re.compile(r"INSERT OR (IGNORE|REPLACE) INTO (\w+) \(([^)]*)\)(.*)", re.S)
_JSON = re.compile(r"json_extract\(record, '\$\.scores\.\"([^\"']*)\"\.(\w+)'\)")
_TABLE = re.compile(r"CREATE TABLE (IF NOT EXISTS )?(\w+) \(")


def is_url(path: str | None) -> bool:
    return bool(path) and path.startswith(SCHEMES)


def shown_url(url: str) -> str:
    """The URL without its password: how messages, logs and reports name the database."""
    parts = urllib.parse.urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)
    user = netloc[0].split(":", 1)[0]
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{user}:***@{netloc[1]}"))


def translated(statement: str) -> str:
    """A statement written for SQLite, as PostgreSQL runs it."""
    found = _INSERT.match(statement)
    if found:
        how, table, columns, rest = found.groups()
        names = [c.strip() for c in columns.split(",")]
        key = ", ".join(KEYS[table])
        update = ", ".join(f"{c} = EXCLUDED.{c}" for c in names if c not in KEYS[table])
        conflict = "DO NOTHING" if how == "IGNORE" or not update else f"DO UPDATE SET {update}"
        statement = f"INSERT INTO {table} ({columns}){rest} ON CONFLICT ({key}) {conflict}"
    statement = _JSON.sub(lambda m: f"(record::json -> 'scores' -> '{m[1]}' -> '{m[2]}')", statement)
    statement = _TABLE.sub(lambda m: f"CREATE TABLE {m[1] or ''}{m[2]} (rowid BIGSERIAL, ", statement)
    return statement.replace("%", "%%").replace("?", "%s")


def _row_factory(cursor):
    names = [column.name for column in cursor.description or ()]
    return lambda values: Row(names, values)


class Row(tuple):
    """A result row read by position or by column name, as ``sqlite3.Row``."""

    def __new__(cls, names: Sequence[str], values: Sequence[Any]):
        row = super().__new__(cls, values)
        row._names = names
        return row

    def __getitem__(self, key):
        if isinstance(key, str):
            return tuple.__getitem__(self, self._names.index(key))
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        return list(self._names)


def _as_sqlite_error(exc: Exception) -> sqlite3.Error:
    import psycopg

    kind = (sqlite3.IntegrityError if isinstance(exc, psycopg.IntegrityError) else
            sqlite3.OperationalError if isinstance(exc, psycopg.OperationalError) else sqlite3.DatabaseError)
    return kind(" ".join(str(exc).split()))  # one line


def _values(parameters: Iterable[Any]) -> tuple:
    """Booleans as the 0 and 1 SQLite stores (the columns are INTEGER)."""
    return tuple(int(v) if isinstance(v, bool) else v for v in parameters)


class Connection:
    """A PostgreSQL connection with the calls the store makes of a ``sqlite3`` one: ``execute``,
    ``executemany`` and, as a context manager, a transaction that commits or rolls back."""

    def __init__(self, url: str):
        import psycopg

        try:
            self._db = psycopg.connect(url, autocommit=True, row_factory=_row_factory, connect_timeout=10)
        except psycopg.Error as exc:
            raise _as_sqlite_error(exc) from None
        self.in_transaction = False

    def execute(self, statement: str, parameters: Sequence[Any] = ()) -> "_Cursor":
        if statement == "BEGIN IMMEDIATE":
            statement = "BEGIN"
        try:
            cursor = self._db.execute(translated(statement), _values(parameters))
        except Exception as exc:
            raise _as_sqlite_error(exc) from None
        if statement == "BEGIN":
            self.in_transaction = True
        return _Cursor(cursor)

    def executemany(self, statement: str, rows: Iterable[Sequence[Any]]) -> None:
        try:
            with self._db.cursor() as cursor:
                cursor.executemany(translated(statement), [_values(row) for row in rows])
        except Exception as exc:
            raise _as_sqlite_error(exc) from None

    def __enter__(self) -> "Connection":
        return self

    def __exit__(self, kind, value, traceback) -> None:
        if not self.in_transaction:
            return
        self.in_transaction = False
        try:
            self._db.execute("ROLLBACK" if kind is not None else "COMMIT")
        except Exception as exc:
            if kind is None:
                raise _as_sqlite_error(exc) from None

    def close(self) -> None:
        self._db.close()


class _Cursor:
    def __init__(self, cursor):
        self._cursor = cursor

    def fetchall(self) -> list:
        return self._cursor.fetchall() if self._cursor.description else []

    def fetchone(self):
        return self._cursor.fetchone() if self._cursor.description else None

    def __iter__(self) -> Iterator:
        return iter(self._cursor) if self._cursor.description else iter(())


def connect(url: str) -> Connection:
    """The database at ``url``; sqlite3.OperationalError (with the server's words) when it cannot
    be reached or the login fails, ImportError's message when psycopg is not installed."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        raise sqlite3.OperationalError("psycopg is not installed") from None
    return Connection(url)


SCHEMA_LOCK = "SELECT pg_advisory_xact_lock(7406177)"  # any number: yamleval's own
SCHEMA_TABLE = "CREATE TABLE IF NOT EXISTS yamleval_schema (version INTEGER NOT NULL)"
TABLES = "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"


def has_table(db, name: str) -> bool:
    return bool(db.execute("SELECT 1 FROM information_schema.tables WHERE table_schema = current_schema()"
                           " AND table_name = ?", (name,)).fetchall())
