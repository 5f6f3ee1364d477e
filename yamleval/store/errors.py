"""What went wrong with the results database, in one line that says why and what to do: each
cause is known by its kind (``Busy``, ``ReadOnly``) or by the database's own words ("database or
disk is full", "password authentication failed"). Each backend raises these types, never its
driver's, so that the store handles SQLite and PostgreSQL in one way."""
from __future__ import annotations

import json

from yamleval.records.codec import storable_text
from yamleval.records.errors import UsageError, display_path
from yamleval.records.install import install_hint

RESUME_HINT = "then `yamleval run --resume` continues the run"
SCHEMA_OPTION = "?options=-csearch_path%3Dyamleval"  # a URL's way to keep yamleval's tables in that schema
FOREIGN = "it holds other tables"  # how the store's own message for another program's database starts

# cause: (words of SQLite's message that name it, why, what to do, whether the command can go on after)
_CAUSES = {
    "full": (("database or disk is full", "no space left on device"), "the disk is full", "free some space", True),
    "disk": (("disk i/o error",), "the disk failed to read or write it, it may be full or failing",
             "free some space or check the disk", True),
    "read-only": (("readonly",), "the file or its folder is read-only", "make them writable", True),
    "locked": (("is locked",), "another process kept it locked too long", "let that process finish", True),
    "too big": (("too big",), "a value is too big to store (SQLite keeps at most a billion bytes in one)",
                "make the runner return less", False),
    "foreign": ((FOREIGN, "no such table", "no such column", "file is not a database"),
                "it is not a yamleval results database", "give another file with --store or `store:`", False),
    "login": (("password authentication failed", "no password supplied", "role \"", "no pg_hba.conf entry"),
              "the server refused the login", "check the user and password of the URL (keep the password in"
              " an environment variable: `store: ${DATABASE_URL}`)", False),
    "unreachable": (("connection refused", "failed to resolve host", "could not translate host", "timeout expired",
                     "no route to host", "network is unreachable"),
                    "the server cannot be reached", "check the URL's host and port, and that the server runs", True),
    "no database": (("does not exist",), "there is no such database on the server",
                    "create it (`createdb NAME`) or name another in the URL", False),
    "driver": (("psycopg is not installed",), "PostgreSQL needs the psycopg package",
               install_hint("postgres"), False),
    "damaged": (("malformed", "corrupt"), "the file is damaged", "restore it from a backup, or save what is left with"
                " `sqlite3 {path} .recover | sqlite3 recovered.db` and use recovered.db", False),
}


class DatabaseError(Exception):
    """A statement or connection the database refused, in the database's own words (one line)."""


class Busy(DatabaseError):
    """Another process held the database locked too long: the same work may succeed if tried again."""


class ReadOnly(DatabaseError):
    """The database cannot be written (a read-only file or folder, a read-only server): it can be read."""


class Conflict(DatabaseError):
    """A row whose key another row has already (an item id stored twice, a shard that joined before)."""


def cause(exc: BaseException) -> str:
    """What made the database fail (a name of ``_CAUSES``), known by the error's kind or its
    words (a ``sqlite3`` error's too: the answer cache's); else ``other``."""
    if isinstance(exc, (Busy, ReadOnly)):
        return "locked" if isinstance(exc, Busy) else "read-only"
    text = str(exc).lower().replace("read-only", "readonly").replace("read only", "readonly")
    return next((name for name, (words, *_) in _CAUSES.items() if any(word in text for word in words)), "other")


def cannot(action: str, path: str, exc: BaseException, then: str = "then run again",
           what: str = "the results database") -> str:
    """``cannot ACTION WHAT PATH: cause (SQLite's words); remedy, then`` in one line. ``what``: the
    results database, or the answer cache (``cannot open the answer cache``) whose own file it is."""
    found = cause(exc)
    _, why, remedy, goes_on = _CAUSES.get(found, ((), "", "check the file", True))
    if found == "foreign" and what == "the answer cache":
        why, remedy = "it is not a yamleval answer cache", "give another file as `cache: {path: …}`, or remove it"
    if found == "foreign" and "://" in path:  # a PostgreSQL database shared with other tables
        remedy = (f"give an empty database, or a schema of yamleval's own: `CREATE SCHEMA yamleval`, then"
                  f" add `{SCHEMA_OPTION}` to the URL")
    shown = display_path(path)
    return (f"cannot {action} {what} {shown}: {f'{why} ({exc})' if why else exc};"
            f" {remedy.replace('{path}', shown)}" + (f", {then}" if goes_on and then else ""))


class StoreWriteError(UsageError):
    """The results database could not be written: the message says why and what to do."""


class DuplicateItemError(StoreWriteError):
    """Two items of one experiment have the same id (found by the database's key)."""


def duplicate_item(query, rows: list[tuple]) -> DuplicateItemError | None:
    """The error for the first of ``rows`` (of the items table) whose id is taken: stored already
    (``query`` reads the store), or earlier in the batch. Datasets check ids as they are read, but
    only so many, so that a run of any size needs bounded memory; the database's key checks them all."""
    first: dict[tuple, int] = {}
    for run_id, experiment_id, item_key, position, _, record in rows:
        key = (run_id, experiment_id, item_key)
        earlier = first.get(key)
        if earlier is None:
            found = query("SELECT position FROM items WHERE run_id = {p} AND experiment_id = {p} AND item_id = {p}",
                          key)
            earlier = found[0][0] if found else None
        if earlier is not None:
            item_id = storable_text(json.loads(record)["id"])  # the key may be a digest of it (schema.item_key)
            return DuplicateItemError(
                f"duplicate item id '{item_id}' in experiment '{experiment_id}': items {earlier + 1} and"
                f" {position + 1} of the dataset; ids must be unique, so fix the dataset and run again")
        first[key] = position
    return None
