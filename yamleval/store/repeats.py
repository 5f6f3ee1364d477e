"""The finished repeats of items not yet finished, kept so that a resumed run runs only the
repeats an item still lacks (``repeats``). Kept in the results database's ``repeats`` table
(``schema.REPEATS``), a row a repeat, written with the items in the store's batches. A repeat queued in the same batch
as its item is never written (the item's record holds it), and the rows of finished items are
deleted as their experiment ends: the table keeps only the repeats of items cut short.
"""
from __future__ import annotations

import json
from typing import Sequence

from yamleval.records.codec import encode_record, item_from_record
from yamleval.records.types import ItemResult
from yamleval.store.database import Database
from yamleval.store.schema import REPEATS, item_key

_COLUMNS = ("run_id", "experiment_id", "item_id", "number", "record")
_OF_ITEMS = "SELECT item_id FROM items WHERE run_id = {p} AND experiment_id = {p}"
DONE = f"DELETE FROM repeats WHERE run_id = {{p}} AND experiment_id = {{p}} AND item_id IN ({_OF_ITEMS})"
_UNFINISHED = ("SELECT item_id, number, record FROM repeats WHERE run_id = {p} AND experiment_id = {p}"
               f" AND item_id NOT IN ({_OF_ITEMS}) ORDER BY item_id, number")


def queued(run_id: str, experiment_id: str, number: int, result: ItemResult) -> tuple:
    """Repeat ``number`` (from 0) of an item, as the store queues it: encoded only if written."""
    return run_id, experiment_id, item_key(result.item.id), number, result


def write(db: Database, repeats: Sequence[tuple], items: Sequence[tuple]) -> None:
    """In the store's transaction: the queued ``repeats`` of items not among the queued ``items``
    (rows of the ``items`` table, whose first three fields are the key)."""
    finished = {item[:3] for item in items}
    db.executemany(db.insert(REPEATS, _COLUMNS, on_conflict="replace"),
                   [(*r[:4], encode_record(r[4])) for r in repeats if r[:3] not in finished])


def unfinished(store, run_id: str, experiment_id: str) -> dict[str, dict[int, ItemResult]]:
    """The stored repeats of the experiment's items that have no result yet, by item id and number."""
    found: dict[str, dict[int, ItemResult]] = {}
    if not store.has_table("repeats"):
        return found  # a read-only database of an older schema, read unmigrated
    for _, number, text in store.query(_UNFINISHED, (run_id, experiment_id, run_id, experiment_id)):
        result = item_from_record(json.loads(text))
        found.setdefault(result.item.id, {})[number] = result
    return found
