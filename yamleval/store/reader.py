"""An experiment's items as the results database keeps them (``store``), read as they are iterated."""
from __future__ import annotations

import json
from typing import Any, Iterator, Sequence

from yamleval.records.codec import item_from_record
from yamleval.records.errors import UsageError
from yamleval.records.types import ItemResult, ItemResults, Variant, Verdicts
from yamleval.store.database import Database
from yamleval.store.errors import DatabaseError, cannot
from yamleval.store.schema import HASHED, item_key

_ITEMS = "SELECT record FROM items WHERE run_id = {p} AND experiment_id = {p} ORDER BY position"
# an item keyed by a digest of its id (schema.item_key), or whose fields the database cannot read
# out of its record, gives its record, read whole
_VERDICTS = ("SELECT item_id, CASE WHEN item_id LIKE {p} OR {unreadable} THEN record END, position, status{fields}"
             " FROM items WHERE run_id = {p} AND experiment_id = {p} ORDER BY position")
_SCORE_FIELDS = ("status", "passed", "score")
_ITEM = "SELECT record FROM items WHERE run_id = {p} AND experiment_id = {p} AND item_id = {p}"
_ITEMS_WITH_STATUS = ("SELECT record FROM items WHERE run_id = {p} AND experiment_id = {p}"
                      " AND status IN ({p}, {p}, {p}, {p}) ORDER BY position LIMIT {p}")
_NOT_IN_A_PATH = set("\"'\\{}")  # a scorer id with one of these is read from whole records instead


def read_rows(database: Database, statement: str, parameters: tuple) -> Iterator[tuple]:
    """The rows of a query, read as they are iterated on a connection of their own; UsageError
    (``cannot read the results database …``) when the database fails."""
    try:
        yield from database.stream(statement, parameters)
    except DatabaseError as exc:
        raise UsageError(cannot("read", database.name, exc, "")) from None


class StoredItems(ItemResults):
    """An experiment's items as the database keeps them: read again, in dataset order, each
    time they are iterated, so a run of any size is never held in memory. Each reading opens
    a connection of its own; the view outlives the ``Store`` it came from."""

    def __init__(self, database: Database, run_id: str, experiment_id: str, count: int):
        self.database, self.run_id, self.experiment_id, self.count = database, run_id, experiment_id, count

    def __len__(self) -> int:
        return self.count

    def _select(self, statement: str, parameters: tuple = ()) -> Iterator[tuple]:
        return read_rows(self.database, statement, (self.run_id, self.experiment_id, *parameters))

    def __iter__(self) -> Iterator[ItemResult]:
        return (item_from_record(json.loads(text), text) for text, in self._select(_ITEMS))

    def verdicts(self, scorers: Sequence[str]) -> Iterator[Verdicts]:
        """As ``ItemResults.verdicts``, the database reading just those fields out of each record: a
        third of the time of reading whole records, for two runs of 100,000 items."""
        if any(_NOT_IN_A_PATH.intersection(sid) for sid in scorers):  # not an id to write into a JSON path
            yield from super().verdicts(scorers)
            return
        fields = "".join(f", {self.database.json_field('record', 'scores', sid, field)}"
                         for sid in scorers for field in _SCORE_FIELDS)
        statement = _VERDICTS.replace("{fields}", fields).replace("{unreadable}",
                                                                  self.database.json_unreadable("record"))
        for item_id, record, position, status, *values in read_rows(self.database, statement,
                                                                    (HASHED + "%", self.run_id, self.experiment_id)):
            if record is not None:
                whole = item_from_record(json.loads(record), record)
                yield whole.item.id, position, status, {sid: (s.status, s.passed, s.score)
                                                        for sid, s in whole.scores.items() if sid in scorers}
                continue
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
        found = list(self._select(_ITEM, (item_key(item_id),)))  # read to the end: the connection closes
        return item_from_record(json.loads(found[0][0]), found[0][0]) if found else None


def variant_of(row: dict[str, Any]) -> Variant | None:
    """What a stored experiment is a variant of (none in a database older than variants)."""
    text = row.get("variant")
    return None if text is None else Variant(**json.loads(text))
