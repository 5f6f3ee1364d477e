"""The results database's tables, their columns the same in SQLite and PostgreSQL, and how an
older database is brought up to this version (``Store`` runs ``upgrade`` under its write lock).
How a table is created, and where the version is kept, each backend says (``Database``)."""
from __future__ import annotations

import hashlib

from yamleval.records.codec import storable_text
from yamleval.store.database import Database, Table
from yamleval.store.errors import FOREIGN, DatabaseError

SCHEMA_VERSION = 12


RUNS = Table("runs", "run_id TEXT PRIMARY KEY, status TEXT NOT NULL, started_at TEXT NOT NULL, completed_at TEXT,"
             " passed INTEGER, yamleval_version TEXT, python_version TEXT, host TEXT, pid INTEGER,"
             " config_files TEXT, config_hash TEXT, config_text TEXT, git_commit TEXT, git_dirty INTEGER,"
             " plugin_versions TEXT, experiment_ids TEXT", ("run_id",))
EXPERIMENTS = Table(
    "experiments", "run_id TEXT NOT NULL, experiment_id TEXT NOT NULL, position INTEGER NOT NULL, label TEXT,"
    " description TEXT, tags TEXT, runner TEXT, dataset TEXT, scorers TEXT, dataset_hash TEXT,"
    " status TEXT NOT NULL, passed INTEGER, interrupted INTEGER, aborted TEXT, warnings TEXT,"
    " started_at TEXT, completed_at TEXT, summary TEXT, PRIMARY KEY (run_id, experiment_id)",
    ("run_id", "experiment_id"))
# ``record``: the item's whole JSON record (yamleval.records.codec): input, expected, output, error,
# latency, tokens, runner metadata, trace and every score with its reason and metadata
ITEMS = Table("items", "run_id TEXT NOT NULL, experiment_id TEXT NOT NULL, item_id TEXT NOT NULL,"
              " position INTEGER NOT NULL, status TEXT NOT NULL, record TEXT NOT NULL,"
              " PRIMARY KEY (run_id, experiment_id, item_id)", ("run_id", "experiment_id", "item_id"))
# An item's key (``item_id``) is its id, or, for an id no key of PostgreSQL's can hold (one with
# U+0000, or of more than KEY_BYTES: an index entry has room for about 2,700), a digest of it, on
# both backends alike, so that their stores merge; the record keeps the id.
KEY_BYTES = 2000
HASHED = "\x1fsha256:"  # how a digest key starts: an id that starts so is a digest key too


def item_key(item_id: str) -> str:
    """How the store keys the item ``item_id`` (its id, or a digest of it)."""
    text = storable_text(item_id)
    if "\x00" in text or text.startswith(HASHED) or (len(text) > KEY_BYTES // 4 and len(text.encode()) > KEY_BYTES):
        return HASHED + hashlib.sha256(text.encode()).hexdigest()
    return text


# names of runs (yamleval.store.tags)
RUN_TAGS = Table("run_tags", "run_id TEXT NOT NULL, tag TEXT NOT NULL, PRIMARY KEY (run_id, tag)", ("run_id", "tag"))
# the finished repeats of items cut short (yamleval.store.repeats)
REPEATS = Table("repeats", "run_id TEXT NOT NULL, experiment_id TEXT NOT NULL, item_id TEXT NOT NULL,"
                " number INTEGER NOT NULL, record TEXT NOT NULL, PRIMARY KEY (run_id, experiment_id, item_id, number)",
                ("run_id", "experiment_id", "item_id", "number"))
# the shards of a split run (yamleval.store.shards)
RUN_SHARDS = Table("run_shards", "run_id TEXT NOT NULL, shard INTEGER NOT NULL, count INTEGER NOT NULL,"
                   " status TEXT NOT NULL, pid INTEGER, host TEXT, parts TEXT, PRIMARY KEY (run_id, shard)",
                   ("run_id", "shard"))
# people's verdicts on items (yamleval.store.reviews): appended, never changed; the newest of an item counts
REVIEWS = Table("reviews", "run_id TEXT NOT NULL, experiment_id TEXT NOT NULL, item_id TEXT NOT NULL,"
                " verdict TEXT NOT NULL, machine TEXT NOT NULL, reviewer TEXT NOT NULL, note TEXT, at TEXT NOT NULL", ())
TABLES = {table.name: table for table in (RUNS, EXPERIMENTS, ITEMS, RUN_TAGS, REPEATS, RUN_SHARDS, REVIEWS)}

# MIGRATIONS[n] takes a database at version n to n + 1: tables to create, statements to run.
# Past 0, a migration must leave the database readable by this version without it: a read-only
# database is read unmigrated.
MIGRATIONS: dict[int, list[Table | str]] = {
    0: [RUNS, EXPERIMENTS, ITEMS, "CREATE INDEX runs_started ON runs (started_at)"],
    # reports read a run's items in dataset order; without this index SQLite sorts them all first
    1: ["CREATE INDEX items_position ON items (run_id, experiment_id, position)"],
    # what decides the answers beyond the config text (yamleval.config.fingerprint): checked on resume
    2: ["ALTER TABLE runs ADD COLUMN fingerprint TEXT"],
    3: [RUN_TAGS],
    4: [REPEATS],
    5: ["ALTER TABLE runs ADD COLUMN rescored_from TEXT"],  # read as None where it is missing (read-only)
    6: ["ALTER TABLE experiments ADD COLUMN variant TEXT"],  # what a variant is of (types.Variant), as JSON
    7: [RUN_SHARDS],
    8: ["ALTER TABLE runs ADD COLUMN retried_from TEXT"],  # read as None where it is missing (read-only)
    # the live view (yamleval.serve): ``written`` numbers a run's items in the order they were stored,
    # so a viewer asks for those after the last it has; ``planned``: the items an experiment has in all
    9: ["ALTER TABLE items ADD COLUMN written INTEGER", "CREATE INDEX items_written ON items (run_id, written)",
        "ALTER TABLE experiments ADD COLUMN planned INTEGER"],
    10: [REVIEWS, "CREATE INDEX reviews_item ON reviews (run_id, experiment_id, item_id)"],
    # an experiment's summary as its reviews count it, and how many reviews it counts
    # (yamleval.store.reviews.keep_counted), so that no reader counts a reviewed run again
    11: ["ALTER TABLE experiments ADD COLUMN reviewed TEXT"],
}


def upgrade(db: Database) -> None:
    """Inside a write transaction: every migration from the version read now to this one.
    DatabaseError when the database is another program's (it has tables, none of them yamleval's)."""
    db.begin_upgrade()
    found = db.schema_version()
    tables = db.tables()
    if found == 0 and tables:  # another program's database: yamleval's tables have no place in it
        raise DatabaseError(f"{FOREIGN}: {', '.join(tables[:5])}")
    while found < SCHEMA_VERSION:
        for step in MIGRATIONS[found]:
            db.execute(db.create_table(step) if isinstance(step, Table) else step)
        found += 1
        db.set_schema_version(found)
