"""The one interface the results database is used through: statements with parameters, rows
as plain tuples or dicts, write transactions, and the few statements each dialect writes its
own way (an insert that ignores or replaces a row of the same key, a field of a JSON column,
a table's creation, the schema's version). ``store.sqlite`` and ``store.postgres`` implement it.

Statements both dialects share are written once, with ``{p}`` where each parameter goes; each
backend puts its own placeholder there (``?`` or ``%s``) and nothing else of the text changes.
Failures are the store's own errors (``store.errors``): ``Busy`` (try again), ``ReadOnly``,
``Conflict`` (a key taken) or else ``DatabaseError``, each with the database's words.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ContextManager, Iterable, Iterator, Literal, Protocol, Sequence

OnConflict = Literal["fail", "ignore", "replace"]  # what an insert does with a row whose key is taken
MARKER = "{p}"


def bound(statement: str, placeholder: str) -> str:
    """``statement`` with the backend's ``placeholder`` for each ``{p}``."""
    return statement.replace(MARKER, placeholder)


@dataclass(frozen=True)
class Table:
    """A table: its name, its columns and constraints as both dialects write them, and its key."""

    name: str
    columns: str
    key: tuple[str, ...]


class Database(Protocol):
    """One results database, open. Not shared between threads at once."""

    name: str  # how messages name it: the path as given, or the URL without its password
    read_only: bool  # nothing can be written (a read-only file): it is read as it is

    def execute(self, statement: str, parameters: Sequence[Any] = ()) -> None:
        """Run one statement."""

    def executemany(self, statement: str, rows: Iterable[Sequence[Any]]) -> None:
        """Run one statement for each of ``rows``."""

    def rows(self, statement: str, parameters: Sequence[Any] = ()) -> list[tuple]:
        """The rows of a query, as tuples."""

    def records(self, statement: str, parameters: Sequence[Any] = ()) -> list[dict[str, Any]]:
        """The rows of a query, each a dict by column name."""

    def stream(self, statement: str, parameters: Sequence[Any] = ()) -> Iterator[tuple]:
        """The rows of a query, read as they are iterated on a connection of their own (so they can
        be read while this one writes, and after it is closed)."""

    def transaction(self) -> ContextManager[None]:
        """One write transaction, holding the write lock from its start: committed at the end of the
        block, rolled back if it raises."""

    def close(self) -> None:
        """Let the connection go."""

    def insert(self, table: Table, columns: Sequence[str], on_conflict: OnConflict = "fail") -> str:
        """The statement that inserts a row of ``columns`` (in that order) into ``table``; a row whose
        key is taken fails it (``Conflict``), is left out (``ignore``) or replaces the row (``replace``)."""

    def json_field(self, column: str, *keys: str) -> str:
        """The expression for the value at ``keys`` of the JSON text in ``column`` (NULL if absent, or
        if ``json_unreadable``); no key holds a quote, a backslash or a brace."""

    def json_unreadable(self, column: str) -> str:
        """The condition that the JSON text in ``column`` is one ``json_field`` cannot read into: the
        text holds what the database's JSON cannot (PostgreSQL's, an escaped U+0000)."""

    def create_table(self, table: Table) -> str:
        """The statement that creates ``table`` (unless it exists)."""

    def has_table(self, name: str) -> bool:
        """Whether the database has a table of that name."""

    def tables(self) -> list[str]:
        """The names of the database's tables (and, in SQLite, indexes)."""

    def schema_version(self) -> int:
        """The version of yamleval's schema the database has (0: none)."""

    def begin_upgrade(self) -> None:
        """In a transaction, before the version is read: take the lock that keeps others from
        creating the schema at once (SQLite's write transaction holds it already)."""

    def begin_items(self) -> None:
        """In a transaction that stores items: take the lock that keeps their ``written`` numbers in
        the order they are committed (SQLite's write transaction holds it already)."""

    def set_schema_version(self, version: int) -> None:
        """In a transaction: record ``version`` as the database's."""
