"""Where a results database is: a SQLite file (a path) or a PostgreSQL database (a
``postgresql://`` URL); the backend that speaks to it, and the one way every command opens a
database (``connect``); ``existing`` says whether stored runs can be there."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING

from yamleval.records.errors import UsageError, display_path
from yamleval.store.postgres import is_url, shown_url

if TYPE_CHECKING:
    from yamleval.store.database import Database

FIRST_RUN = "run `yamleval run` first, or give --store"


def shown(location: str) -> str:
    """How messages name ``location``: a path as given, a URL without its password."""
    return shown_url(location) if is_url(location) else location


def connect(location: str) -> Database:
    """The backend for ``location``, connected (a SQLite file is created if missing)."""
    if is_url(location):
        from yamleval.store.postgres import PostgresDatabase

        return PostgresDatabase(location)
    from yamleval.store.sqlite import SQLiteDatabase

    return SQLiteDatabase(location)


def existing(location: str, remedy: str = FIRST_RUN) -> str:
    """``location``, if a database can be there already: a URL, or a file that exists. UsageError
    (exit 2) else, naming it and ``remedy`` (none: nothing after the name)."""
    if not is_url(location) and not os.path.isfile(location):
        raise UsageError(f"no results database at {display_path(location)}" + (f"; {remedy}" if remedy else ""))
    return location
