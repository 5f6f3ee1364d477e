"""Run tags: names given to stored runs (``main``, ``release-1.2``) so that a later run can
find its baseline by name. Kept in the results database's ``run_tags`` table (``schema.RUN_TAGS``);
the statements live here so the store itself stays about its runs and items."""
from __future__ import annotations

import re
from typing import Iterable, Sequence

from yamleval.records.errors import UsageError
from yamleval.store.schema import RUN_TAGS

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,99}")


def checked(names: Iterable[str]) -> tuple[str, ...]:
    """The tag names, each checked: a letter or digit, then letters, digits, ``. _ / -`` (100 at most)."""
    names = tuple(dict.fromkeys(names))
    for name in names:
        if not NAME.fullmatch(name):
            raise UsageError(f"bad tag {name!r}: a tag starts with a letter or digit and has only letters,"
                             " digits, '.', '_', '/' and '-' (at most 100)")
    return names


def add(store, run_id: str, names: Sequence[str]) -> None:
    """Tag the stored run ``run_id`` with each of ``names`` (a tag it has already is kept once)."""
    store.insert(RUN_TAGS, ("run_id", "tag"), [(run_id, name) for name in checked(names)], on_conflict="ignore",
                 then="then tag the run again")


def _readable(store) -> bool:
    """A read-only database of an older schema, read unmigrated, has no tags table (and no tags)."""
    return store.has_table("run_tags")


def of_run(store, run_id: str) -> tuple[str, ...]:
    """The run's tags, in the order they were given."""
    if not _readable(store):
        return ()
    return tuple(row[0] for row in store.query("SELECT tag FROM run_tags WHERE run_id = {p} ORDER BY rowid", (run_id,)))


def named(store, tag: str) -> bool:
    """Whether any stored run has the tag ``tag``."""
    return _readable(store) and bool(store.query("SELECT 1 FROM run_tags WHERE tag = {p} LIMIT 1", (tag,)))


def newest(store, tag: str) -> str | None:
    """The id of the run a tag stands for: its newest completed run (as a ``no_regression``
    baseline reads it), else its newest run; None when no run has it."""
    if not _readable(store):
        return None
    rows = store.query("SELECT runs.run_id FROM runs JOIN run_tags ON run_tags.run_id = runs.run_id"
                       " WHERE run_tags.tag = {p} ORDER BY CASE WHEN runs.status = 'completed' THEN 0 ELSE 1 END,"
                       " runs.started_at DESC, runs.rowid DESC LIMIT 1", (tag,))
    return rows[0][0] if rows else None


def latest_with(store, tag: str, experiment_id: str, other_than: str) -> str | None:
    """The id of the newest completed run (not ``other_than``) tagged ``tag`` whose experiment
    ``experiment_id`` completed, or None."""
    if not _readable(store):
        return None
    rows = store.query(
        "SELECT runs.run_id FROM runs JOIN run_tags ON run_tags.run_id = runs.run_id"
        " JOIN experiments ON experiments.run_id = runs.run_id"
        " WHERE run_tags.tag = {p} AND runs.status = 'completed' AND runs.run_id != {p}"
        " AND experiments.experiment_id = {p} AND experiments.status = 'completed'"
        " ORDER BY runs.started_at DESC, runs.rowid DESC LIMIT 1", (tag, other_than, experiment_id))
    return rows[0][0] if rows else None
