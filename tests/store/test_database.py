"""The ``Database`` interface, the same on each backend: SQLite files and a real PostgreSQL
server (``store_at``), each speaking its own SQL behind it."""
from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import cli_env
from yamleval.store import locations
from yamleval.store.errors import Conflict, DatabaseError
from yamleval.store.database import Table

NOTES = Table("notes", "id TEXT NOT NULL, number INTEGER, body TEXT, PRIMARY KEY (id)", ("id",))


@pytest.fixture
def database(store_at):
    db = locations.connect(store_at.absolute("notes.db"))
    with db.transaction():
        db.execute(db.create_table(NOTES))
    yield db
    db.close()


def _insert(db, rows, on_conflict="fail"):
    with db.transaction():
        db.executemany(db.insert(NOTES, ("id", "number", "body"), on_conflict), rows)


def _all(db):
    return db.rows("SELECT id, number, body FROM notes ORDER BY id")


def test_rows_come_back_as_tuples_and_dicts_and_streamed(database):
    _insert(database, [("a", 1, "one"), ("b", 2, "two")])
    assert _all(database) == [("a", 1, "one"), ("b", 2, "two")]
    assert database.records("SELECT id, body FROM notes WHERE number = {p}", (2,)) == [{"id": "b", "body": "two"}]
    streamed = database.stream("SELECT id FROM notes WHERE number >= {p} ORDER BY id", (1,))
    database.close()  # a stream reads on a connection of its own
    assert list(streamed) == [("a",), ("b",)]


def test_a_transaction_is_written_whole_or_not_at_all(database):
    with pytest.raises(RuntimeError):
        with database.transaction():
            database.execute(database.insert(NOTES, ("id", "number")), ("a", 1))
            raise RuntimeError("the work failed")
    assert _all(database) == []
    _insert(database, [("a", 1, None)])
    with pytest.raises(Conflict):  # the second row's key is the first's: neither is written
        _insert(database, [("b", 2, None), ("a", 3, None)])
    assert _all(database) == [("a", 1, None)]


def test_an_insert_fails_ignores_or_replaces_a_row_whose_key_is_taken(database):
    _insert(database, [("a", 1, "first")])
    _insert(database, [("a", 2, "ignored")], on_conflict="ignore")
    assert _all(database) == [("a", 1, "first")]
    _insert(database, [("a", 3, "replaced")], on_conflict="replace")
    assert _all(database) == [("a", 3, "replaced")]


def test_booleans_are_stored_as_the_integers_0_and_1(database):
    _insert(database, [("t", True, None), ("f", False, None)])
    assert [number for _, number, _ in _all(database)] == [0, 1]


def test_a_json_field_is_read_out_of_its_text(database):
    body = '{"scores": {"close.enough": {"status": "passed", "passed": true, "score": 0.75}}}'
    _insert(database, [("a", 1, body), ("b", 2, "{}")])
    fields = ", ".join(database.json_field("body", "scores", "close.enough", key) for key in ("status", "passed", "score"))
    found = database.rows(f"SELECT id, {fields} FROM notes ORDER BY id")
    assert [(i, status, None if passed is None else bool(passed), score) for i, status, passed, score in found] == [
        ("a", "passed", True, 0.75), ("b", None, None, None)]


def test_tables_and_the_schema_version(database):
    assert database.has_table("notes") and not database.has_table("runs")
    assert "notes" in database.tables()
    assert database.schema_version() == 0
    with database.transaction():
        database.begin_upgrade()
        database.set_schema_version(5)
    assert database.schema_version() == 5


def test_a_statement_the_database_refuses_is_a_database_error_in_its_words(database):
    with pytest.raises(DatabaseError) as refused:
        database.rows("SELECT body FROM nowhere")
    assert "nowhere" in str(refused.value) and "\n" not in str(refused.value)


def test_the_postgresql_backend_needs_no_sqlite3():
    script = ("import sys; sys.modules['sqlite3'] = None; from yamleval.store import postgres, writer; "
              "print(postgres.PostgresDatabase.__name__)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=cli_env())
    assert done.returncode == 0 and done.stdout == "PostgresDatabase\n", done.stderr
