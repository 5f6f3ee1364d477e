"""What went wrong with the results database, in one line that says why and what to do: each
cause is known by SQLite's own words ("database or disk is full", "database is locked")."""
from __future__ import annotations

from typing import NamedTuple

from yamleval.errors import UsageError, display_path

RESUME_HINT = "then `yamleval run --resume` continues the run"
FOREIGN = "it holds other tables"  # how the store's own message for another program's database starts
_ANOTHER = "give another file with --store or `store:`"


class Cause(NamedTuple):
    name: str
    why: str
    remedy: str
    passes: bool = False  # whether the command can go on once the remedy is applied


# each cause after words of SQLite's message that name it; the first match wins
_CAUSES = (
    (("database or disk is full",), Cause("full", "the disk is full", "free some space", True)),
    (("disk i/o error",), Cause("disk", "the disk failed to read or write it, it may be full or failing",
                                "free some space or check the disk", True)),
    (("readonly",), Cause("read-only", "the file or its folder is read-only", "make them writable", True)),
    (("unable to open",), Cause("unopenable", "the file cannot be opened",
                                "check that it and its folder exist and can be written", True)),
    (("is locked",), Cause("locked", "another process kept it locked too long", "let that process finish", True)),
    (("too big",), Cause("too big", "a value is too big to store (SQLite keeps at most a billion bytes in one)",
                         "make the runner return less")),
    (("file is not a database",), Cause("not a database", "it is not an SQLite database (another kind of file, or"
                                        " its header is damaged)", _ANOTHER)),
    ((FOREIGN, "no such table", "no such column"), Cause("foreign", "it is not a yamleval results database", _ANOTHER)),
    (("malformed", "corrupt"), Cause("damaged", "the file is damaged", "restore it from a backup, or save what is left"
                                     " with `sqlite3 {path} .recover | sqlite3 recovered.db` and use recovered.db")),
)


def cause(exc: BaseException) -> Cause:
    """Why the database failed, known by the words of SQLite's message (another error is its own cause)."""
    text = str(exc).lower().replace("read-only", "readonly").replace("read only", "readonly")
    return next((found for words, found in _CAUSES if any(word in text for word in words)),
                Cause("other", "", "check the file", True))


def cannot(action: str, path: str, exc: BaseException, then: str = "then run again") -> str:
    """``cannot ACTION the results database PATH: cause (SQLite's words); remedy, then`` in one line."""
    found, shown = cause(exc), display_path(path)
    why = f"{found.why} ({exc})" if found.why else str(exc)
    return f"cannot {action} the results database {shown}: {why}; {found.remedy.replace('{path}', shown)}" + (
        f", {then}" if found.passes and then else "")


class StoreWriteError(UsageError):
    """The results database could not be written: the message says why and what to do."""


class DuplicateItemError(StoreWriteError):
    """Two items of one experiment have the same id (found by the database's key)."""

