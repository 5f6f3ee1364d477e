"""The shards of a split run as the results database keeps them: the ``run_shards`` table
(``schema.RUN_SHARDS``), a row a shard. What they mean, and when a run of shards is complete,
``yamleval.lifecycle.shards`` says; the statements live here, with the store's others."""
from __future__ import annotations

from yamleval.store.errors import Conflict, DatabaseError, StoreWriteError, cannot
from yamleval.store.schema import RUN_SHARDS

_COLUMNS = ("run_id", "shard", "count", "status", "pid", "host")
_OF_RUN = "SELECT shard, count, status, pid, host, parts FROM run_shards WHERE run_id = {p} ORDER BY shard"
_RESTART = "UPDATE run_shards SET status = 'running', pid = {p}, host = {p} WHERE run_id = {p} AND shard = {p}"
_FINISH = "UPDATE run_shards SET status = {p}, parts = {p} WHERE run_id = {p} AND shard = {p}"


def of_run(store, run_id: str) -> dict[int, tuple]:
    """The run's shards by number: (how many shards, status, pid, host, parts as JSON). Empty for a
    run not split, or a read-only database of an older schema, read unmigrated."""
    if not store.has_table("run_shards"):
        return {}
    return {row[0]: tuple(row[1:]) for row in store.query(_OF_RUN, (run_id,))}


def join(store, run_id: str, number: int, count: int, pid: int, host: str) -> bool:
    """Store shard ``number`` of ``count`` as running in this process; False if it is stored already."""
    try:
        store.transaction(lambda db: db.execute(db.insert(RUN_SHARDS, _COLUMNS),
                                                (run_id, number, count, "running", pid, host)))
    except Conflict:
        return False
    except DatabaseError as exc:
        raise StoreWriteError(cannot("write", store.path, exc, "then run the shard again")) from None
    return True


def restart(store, run_id: str, number: int, pid: int, host: str) -> None:
    """Shard ``number``, stored before, runs again in this process."""
    store.write(_RESTART, [(pid, host, run_id, number)])


def copy(store, run_id: str, shards: dict[int, tuple]) -> None:
    """``shards`` (as ``of_run`` reads them from another store) as this store's run ``run_id``'s."""
    store.insert(RUN_SHARDS, ("run_id", "shard", "count", "status", "parts"),
                 [(run_id, number, count, status, parts) for number, (count, status, _, _, parts) in shards.items()],
                 then="then merge again")


def finish(store, run_id: str, number: int, status: str, parts: str) -> None:
    """Shard ``number`` ends as ``status``, with what its part of each experiment tells (JSON)."""
    store.write(_FINISH, [(status, parts, run_id, number)])
