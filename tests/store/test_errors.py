"""The results database's failures, each in one line that names the file, the cause and what to do."""
from __future__ import annotations

import json
import sqlite3

import pytest

from conftest import run_cli
from yamleval.records.errors import UsageError, display_path
from yamleval.store.writer import Store
from yamleval.store.errors import cannot

CONFIG = """
    store: results.db
    reports: {dir: out}
    experiments:
      - id: e
        dataset: {file: items.jsonl}
        runner: fixture_plugins.steady:answer
        scorers: [exact_match]
"""
OLD_HINT = "is the disk full or the file read-only?"


def _project(write_config, tmp_path, items=300):
    with open(tmp_path / "items.jsonl", "w", encoding="utf-8") as out:
        for i in range(items):
            out.write(json.dumps({"id": f"q-{i}", "input": f"question {i}", "expected": f"answer {i}"}) + "\n")
    write_config(CONFIG)


def _one_line(done):
    """The single line a command printed on standard error."""
    assert "Traceback" not in done.stderr
    [line] = [line for line in done.stderr.splitlines() if line.strip()]
    return line


def _damage(db, first_page):
    """Overwrite the pages from ``first_page`` (1-based) to the one before last with garbage."""
    with sqlite3.connect(db) as con:
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # every page is in the file itself
        page_size, pages = con.execute("PRAGMA page_size").fetchone()[0], con.execute("PRAGMA page_count").fetchone()[0]
    assert pages > first_page + 4, "a database big enough to damage in the middle"
    with open(db, "r+b") as out:
        out.seek((first_page - 1) * page_size)
        out.write(b"\xa5" * page_size * (pages - first_page))


def test_a_damaged_database_is_named_with_what_to_do_and_nothing_is_half_written(write_config, tmp_path):
    _project(write_config, tmp_path)
    assert run_cli("run", "-q", cwd=tmp_path).returncode == 1
    with sqlite3.connect(tmp_path / "results.db") as con:  # the items' pages come after every table's root
        first_item_page = 1 + max(page for (page,) in con.execute("SELECT rootpage FROM sqlite_master"))
    _damage(tmp_path / "results.db", first_item_page)

    listed = run_cli("runs", "--store", "results.db", cwd=tmp_path)
    assert listed.returncode == 0 and " completed " in listed.stdout, listed.stderr  # runs and summaries are intact
    damaged = ("error: cannot read the results database results.db: the file is damaged (database disk image is"
               " malformed); restore it from a backup, or save what is left with"
               " `sqlite3 results.db .recover | sqlite3 recovered.db` and use recovered.db")
    for command in (["show"], ["report", "latest", "--report-dir", "again"], ["compare", "latest", "latest"]):
        done = run_cli(*command, "--store", "results.db", cwd=tmp_path)
        assert (done.returncode, _one_line(done)) == (2, damaged), command
    assert not (tmp_path / "again").exists() or list((tmp_path / "again").iterdir()) == []


def test_another_programs_database_is_refused_and_left_as_it_was(write_config, tmp_path, store_at):
    _project(write_config, tmp_path, items=3)
    store_at.query("results.db", "CREATE TABLE notes (body TEXT)")
    done = run_cli("run", "-q", "--store", store_at.url("results.db"), cwd=tmp_path)
    assert done.returncode == 2
    shown = display_path(store_at.url("results.db"))
    remedy = ("give an empty database, or a schema of yamleval's own: `CREATE SCHEMA yamleval`, then add"
              " `?options=-csearch_path%3Dyamleval` to the URL" if store_at.postgres
              else "give another file with --store or `store:`")
    assert _one_line(done) == (f"error: cannot open the results database {shown}: it is not a yamleval results"
                               f" database (it holds other tables: notes); {remedy}")
    tables = ("SELECT tablename FROM pg_catalog.pg_tables WHERE schemaname = current_schema()" if store_at.postgres
              else "SELECT name FROM sqlite_master")
    assert store_at.query("results.db", tables) == [("notes",)]


def _full(db):
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE t (v TEXT)")
    con.execute("PRAGMA max_page_count = 3")
    con.execute("INSERT INTO t VALUES (?)", ("x" * 100_000,))


def _read_only(db):
    sqlite3.connect(db).execute("CREATE TABLE t (v TEXT)").connection.commit()
    sqlite3.connect(f"file:{db}?mode=ro", uri=True).execute("INSERT INTO t VALUES ('x')")


def _locked(db):
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    sqlite3.connect(db, timeout=0).execute("CREATE TABLE t (v TEXT)")


def _too_big(db):
    con = sqlite3.connect(db)
    if not hasattr(con, "setlimit"):
        pytest.skip("Connection.setlimit needs Python 3.11")
    con.execute("CREATE TABLE t (v TEXT)")
    con.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 1000)
    con.execute("INSERT INTO t VALUES (?)", ("x" * 2000,))


def _not_sqlite(db):
    db.write_text("name,score\nsomething,1\n", encoding="utf-8")
    sqlite3.connect(db).execute("SELECT * FROM sqlite_master").fetchall()


def _no_tables(db):
    sqlite3.connect(db).execute("SELECT * FROM runs").fetchall()


@pytest.mark.parametrize("make, words", [
    (_full, "the disk is full (database or disk is full); free some space, then run again"),
    (_read_only, "the file or its folder is read-only (attempt to write a readonly database); make them writable,"
                 " then run again"),
    (_locked, "another process kept it locked too long (database is locked); let that process finish, then run"
              " again"),
    (_too_big, "a value is too big to store (SQLite keeps at most a billion bytes in one) (string or blob too big);"
               " make the runner return less"),
    (_not_sqlite, "it is not a yamleval results database (file is not a database); give another file with --store"
                  " or `store:`"),
    (_no_tables, "it is not a yamleval results database (no such table: runs); give another file with --store or"
                 " `store:`"),
])
def test_each_cause_has_its_own_words(tmp_path, make, words):
    """Real SQLite errors, each worded by its cause: the disk-full hint only where the disk is full."""
    db = tmp_path / "results.db"
    with pytest.raises(sqlite3.Error) as raised:
        make(db)
    line = cannot("write", str(db), raised.value)
    assert line == f"cannot write the results database {db}: {words}"
    assert OLD_HINT not in line


def test_a_file_that_is_not_a_database_cannot_be_opened_as_a_store(tmp_path):
    (tmp_path / "notes.db").write_text("not a database at all, just some text that fills a page" * 20)
    with pytest.raises(UsageError) as refused:
        Store(str(tmp_path / "notes.db"))
    assert refused.value.message.startswith(f"cannot open the results database {tmp_path / 'notes.db'}: it is not a"
                                            " yamleval results database (file is not a database)")
