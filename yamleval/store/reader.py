"""An experiment's items as the results database keeps them (``store``), read as they are iterated."""
from __future__ import annotations

import json
import sqlite3
from typing import Iterator, Sequence

from yamleval.store import postgres
from yamleval.records.errors import UsageError
from yamleval.records.codec import item_from_record, storable_text
from yamleval.store.errors import cannot
from yamleval.records.types import ItemResult, ItemResults, Verdicts

BUSY_SECONDS = 10.0  # how long a statement waits for another process's lock (Ctrl-C waits as long)

_ITEMS = "SELECT record FROM items WHERE run_id = ? AND experiment_id = ? ORDER BY position"
_VERDICTS = "SELECT item_id, position, status{} FROM items WHERE run_id = ? AND experiment_id = ? ORDER BY position"
_SCORE_FIELDS = ("status", "passed", "score")
_ITEM = "SELECT record FROM items WHERE run_id = ? AND experiment_id = ? AND item_id = ?"
_ITEMS_WITH_STATUS = ("SELECT record FROM items WHERE run_id = ? AND experiment_id = ? AND status IN (?, ?, ?, ?)"
                      " ORDER BY position LIMIT ?")


def read_rows(uri: str, path: str, statement: str, parameters: tuple) -> Iterator[tuple]:
    """The rows of a query, read as they are iterated, on a connection of their own to the
    database ``uri`` (a SQLite URI or a PostgreSQL URL) named ``path`` in messages."""
    try:
        db = postgres.connect(uri) if postgres.is_url(uri) else sqlite3.connect(uri, uri=True, timeout=BUSY_SECONDS)
    except sqlite3.Error as exc:
        raise UsageError(cannot("read", path, exc, "")) from None
    try:
        yield from db.execute(statement, parameters)
    except sqlite3.Error as exc:
        raise UsageError(cannot("read", path, exc, "")) from None
    finally:
        db.close()


class StoredItems(ItemResults):
    """An experiment's items as the database keeps them: read again, in dataset order, each
    time they are iterated, so a run of any size is never held in memory. Each reading opens
    a connection of its own; the view outlives the ``Store`` it came from."""

    def __init__(self, path: str, run_id: str, experiment_id: str, count: int, uri: str):
        """``uri``: how to open the database for reading (``Store.reading``)."""
        self.path, self.run_id, self.experiment_id, self.count, self.uri = path, run_id, experiment_id, count, uri

    def __len__(self) -> int:
        return self.count

    def _select(self, statement: str, parameters: tuple = ()) -> Iterator[tuple]:
        return read_rows(self.uri, self.path, statement, (self.run_id, self.experiment_id, *parameters))

    def __iter__(self) -> Iterator[ItemResult]:
        return (item_from_record(json.loads(text), text) for text, in self._select(_ITEMS))

    def verdicts(self, scorers: Sequence[str]) -> Iterator[Verdicts]:
        """As ``ItemResults.verdicts``, SQLite reading just those fields out of each record: a
        third of the time of reading whole records, for two runs of 100,000 items."""
        if any('"' in sid for sid in scorers):  # not a scorer id the config allows: not a path to write
            yield from super().verdicts(scorers)
            return
        fields = "".join(f", json_extract(record, '$.scores.\"{sid}\".{field}')"
                         for sid in scorers for field in _SCORE_FIELDS)
        for item_id, position, status, *values in self._select(_VERDICTS.format(fields)):
            found = {}
            for at, sid in enumerate(scorers):
                scored, passed, score = values[3 * at:3 * at + 3]
                if scored is not None:
                    found[sid] = (scored, None if passed is None else bool(passed), score)
            yield item_id, position, status, found

    def with_status(self, statuses: Sequence[str], limit: int) -> list[ItemResult]:
        """The first ``limit`` items with one of these statuses (at most four), in dataset order."""
        wanted = (tuple(statuses) * 4)[:4]
        return [item_from_record(json.loads(text), text) for text, in self._select(_ITEMS_WITH_STATUS, (*wanted, limit))]

    def find(self, item_id: str) -> ItemResult | None:
        """The stored item with this id, or None."""
        found = list(self._select(_ITEM, (storable_text(item_id),)))  # read to the end: the connection closes
        return item_from_record(json.loads(found[0][0]), found[0][0]) if found else None
