"""The items an experiment that could not be evaluated left in error (an endpoint that nothing
answered, a key it refused), forgotten when its run is resumed so that they run again as items
never started: an error met in an outage says nothing about the item. Kept in the ``items``
table (``schema.ITEMS``); the statements live here so the store itself stays about runs and items.
"""
from __future__ import annotations

import json
from typing import Callable

_ERRORED = "SELECT item_id, record FROM items WHERE run_id = {p} AND experiment_id = {p} AND status = 'error'"
_FORGET = "DELETE FROM items WHERE run_id = {p} AND experiment_id = {p} AND item_id = {p}"


def forget_errors(store, run_id: str, experiment_id: str, holds: Callable[[str], bool] = lambda item_id: True) -> int:
    """Delete the experiment's items that ended in error (those whose id ``holds``: a shard's own),
    in one transaction; how many there were."""
    keys = [(run_id, experiment_id, key) for key, text in store.query(_ERRORED, (run_id, experiment_id))
            if holds(json.loads(text)["id"])]
    if keys:
        store.write(_FORGET, keys)
    return len(keys)
