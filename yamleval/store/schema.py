"""The results database's tables, the same in SQLite and PostgreSQL, and how an older
database is brought up to this version (``Store`` runs ``upgrade`` under its write lock)."""
from __future__ import annotations

import sqlite3

from yamleval.store import postgres
from yamleval.store import tags as run_tags
from yamleval.lifecycle import shards as shard_runs
from yamleval.store import repeats as stored_repeats
from yamleval.store.errors import FOREIGN

SCHEMA_VERSION = 8

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
    # ``record``: the item's whole JSON record (yamleval.records.codec): input, expected, output, error,
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
    # what decides the answers beyond the config text (yamleval.config.fingerprint): checked on resume
    2: ["ALTER TABLE runs ADD COLUMN fingerprint TEXT"],
    3: [run_tags.TABLE],  # names of runs (yamleval.store.tags)
    4: [stored_repeats.TABLE],  # the finished repeats of items cut short (yamleval.store.repeats)
    5: ["ALTER TABLE runs ADD COLUMN rescored_from TEXT"],  # read as None where it is missing (read-only)
    6: ["ALTER TABLE experiments ADD COLUMN variant TEXT"],  # what a variant is of (types.Variant), as JSON
    7: [shard_runs.TABLE],  # the shards of a split run (yamleval.lifecycle.shards)
}


def has_table(db, on_postgres: bool, name: str) -> bool:
    if on_postgres:
        return postgres.has_table(db, name)
    return bool(db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchall())


def version(db, on_postgres: bool) -> int:
    """The schema version of the database: SQLite's user_version, or PostgreSQL's yamleval_schema."""
    if not on_postgres:
        return db.execute("PRAGMA user_version").fetchone()[0]
    if not has_table(db, True, "yamleval_schema"):
        return 0
    return db.execute("SELECT version FROM yamleval_schema").fetchone()[0]


def upgrade(db, on_postgres: bool) -> None:
    """Inside a write transaction: every migration from the version read now to this one."""
    if on_postgres:  # PostgreSQL's write lock for the schema: held to the transaction's end
        db.execute(postgres.SCHEMA_LOCK)
    found = version(db, on_postgres)
    tables = [row[0] for row in db.execute(postgres.TABLES if on_postgres else "SELECT name FROM sqlite_master")]
    if found == 0 and tables:  # another program's database: yamleval's tables have no place in it
        raise sqlite3.DatabaseError(f"{FOREIGN}: {', '.join(tables[:5])}")
    while found < SCHEMA_VERSION:
        for statement in MIGRATIONS[found]:
            db.execute(statement)
        found += 1
        if on_postgres:
            db.execute(postgres.SCHEMA_TABLE)
            db.execute("DELETE FROM yamleval_schema")
            db.execute("INSERT INTO yamleval_schema (version) VALUES (?)", (found,))
        else:
            db.execute(f"PRAGMA user_version = {int(found)}")  # a number: PRAGMA takes no parameters
