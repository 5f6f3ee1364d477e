"""Finished items the writer queued are written within about a second whatever else runs: a
slow item must not hold back the others in memory, where a crash would lose them. A fast run
is not slowed: its items come often enough to be written as they come (``Store.add_item``)."""
from __future__ import annotations

import threading
import time
from typing import Callable

from yamleval.store.database import Database

_LAST_WRITTEN = "SELECT MAX(written) FROM items WHERE run_id = {p}"


class FlushClock:
    """Calls ``flush()`` once ``seconds`` have passed since ``last()`` while ``waiting()`` says
    something is queued, on a thread of its own that ``wake`` starts and that ends once nothing
    is queued. ``lock`` is held by every use of the store's connection, this thread's flush too.
    A flush that fails is kept for ``raise_failure`` to raise on the thread that writes."""

    def __init__(self, flush: Callable[[], None], waiting: Callable[[], bool], last: Callable[[], float],
                 seconds: float, lock: threading.RLock):
        self.flush, self.waiting, self.last, self.seconds, self.lock = flush, waiting, last, seconds, lock
        self.thread: threading.Thread | None = None
        self.failure: Exception | None = None
        self.closed = False

    def wake(self) -> None:
        """Something was queued (called with ``lock`` held): it is written within ``seconds``."""
        if self.thread is None and not self.closed:
            self.thread = threading.Thread(target=self._run, name="yamleval-store-flush", daemon=True)
            self.thread.start()

    def _run(self) -> None:
        while True:
            with self.lock:
                if self.closed or not self.waiting() or self.failure is not None:
                    self.thread = None
                    return
                due = self.last() + self.seconds - time.monotonic()
                if due <= 0:
                    try:
                        self.flush()
                    except Exception as exc:  # the writer's thread raises it at its next write
                        self.failure = exc
                    continue
            time.sleep(min(due, self.seconds))

    def raise_failure(self) -> None:
        """Raise the failure of a flush made on the clock's thread, once."""
        if self.failure is not None:
            failure, self.failure = self.failure, None
            raise failure

    def close(self) -> None:
        """Write nothing more on the clock's thread (the store closes)."""
        with self.lock:
            self.closed = True


def numbered(db: Database, rows: list[tuple]) -> list[tuple]:
    """Queued item rows, each with its ``written`` number: the next of its run's, in the order stored
    (under the lock that orders them, so that a viewer asking for those after the last it read misses none)."""
    db.begin_items()
    last: dict[str, int] = {}
    written = []
    for row in rows:
        run_id = row[0]
        if run_id not in last:
            last[run_id] = db.rows(_LAST_WRITTEN, (run_id,))[0][0] or 0
        last[run_id] += 1
        written.append((*row, last[run_id]))
    return written
