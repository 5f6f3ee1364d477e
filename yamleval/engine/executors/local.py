"""Run items on a pool of ``concurrency`` local threads, with per-item timeouts and cancellation.

Each worker takes the next item, runs it and records its result, until the dataset ends:
at most ``concurrency`` items are in flight, and the dataset is read only as fast as items
finish (a few items ahead). A watchdog gives up on an item that runs past its timeout: it
records the item as an error and starts a worker in place of the stuck one (Python cannot
stop a thread: the stuck call ends on its own, and is ignored). So every run ends, even
when every call hangs, in about items × timeout / concurrency.

No worker ever waits for a lock to take an item or record a result: items are taken from
a queue read ahead, results are put on a queue that whichever worker is free records (one
at a time). A thread waiting for a lock held by a thread that waits for the interpreter
costs two thread switches per item; with fast items (answers from a cache, heavy scorers)
that is most of a run's time.
"""
from __future__ import annotations

import collections
import threading
import time

from yamleval.engine.executors.core import POLL_SECONDS, Done, Executor, LostResult, RunItem, Slot, Unit

__all__ = ["LocalExecutor", "LostResult", "POLL_SECONDS", "RunItem", "Slot", "Unit"]


class LocalExecutor(Executor):
    """``Executor`` on threads of this process."""

    def __init__(self, concurrency: int, timeout: float | None):
        super().__init__(concurrency, timeout)
        self._reading = threading.Lock()  # over the dataset: one thread reads at a time
        self._ahead: collections.deque[Unit] = collections.deque()  # read, not started
        self._closed = False  # the run has ended: nothing more is recorded
        self._running: dict[Slot, None] = {}  # who removes a slot from here records its item
        self._finished: collections.deque[Done] = collections.deque()  # to record
        self._counting = threading.Lock()
        self._workers = 0  # those that will take items again (not stuck in an item given up on)
        self._all_ended = threading.Event()
        self._ended = threading.Event()

    def _begin(self) -> None:
        self._workers = self.concurrency
        for _ in range(self.concurrency):
            self._start_worker()
        if self.timeout:
            threading.Thread(target=self._watch, name="yamleval-watchdog", daemon=True).start()

    def _wait(self, seconds: float) -> bool:
        return self._all_ended.wait(seconds)

    def _drop(self) -> None:
        self._running.clear()

    def _end(self) -> None:
        self._ended.set()
        with self._recording:  # whatever a worker left to record
            self._record_finished()
            self._closed = True

    def _start_worker(self) -> None:
        threading.Thread(target=self._work, name="yamleval-worker", daemon=True).start()

    def _next(self) -> Slot | None:
        """A slot for the next item, or None at the end (of the dataset, or of taking items)."""
        while self._taking:
            try:
                item = self._ahead.popleft()
            except IndexError:
                if self._exhausted:
                    return None
                self._read_ahead()
                continue
            slot = Slot(item)
            self._running[slot] = None
            return slot
        return None

    def _read_ahead(self) -> None:
        """Read up to ``concurrency`` more items, one thread at a time."""
        with self._reading:
            if not self._ahead:  # else another thread has read meanwhile
                self._ahead.extend(self._read(self.concurrency))

    def _work(self) -> None:
        while (slot := self._next()) is not None:
            result = self._process(slot.item, slot)
            elapsed = time.monotonic() - slot.started
            if self._running.pop(slot, False) is False:
                return  # given up on (recorded already, or dropped): a worker took this one's place
            self._finished.append(self._in_time(slot.item, result, elapsed, lambda: self._where(slot)))
            self._record_when_free()
        with self._counting:
            self._workers -= 1
            if self._workers == 0:
                self._all_ended.set()

    def _record_when_free(self) -> None:
        """Record the finished results, unless another thread is recording: it records them.
        More than ``concurrency`` of them waiting: wait for it, then record them (so results
        never pile up faster than they are recorded)."""
        while self._finished:
            if len(self._finished) > self.concurrency:
                self._recording.acquire()
            elif not self._recording.acquire(blocking=False):
                return
            try:
                self._record_finished()
            finally:
                self._recording.release()

    def _record_finished(self) -> None:
        while self._finished and not self._closed:
            self._keep(self._finished.popleft())

    def _watch(self) -> None:
        """Until the run ends: give up on the items past their timeout."""
        while not self._ended.wait(min(POLL_SECONDS, self.timeout / 10)):
            now = time.monotonic()
            for slot in [slot for slot in list(self._running) if self._overdue(now - slot.started)]:
                if self._running.pop(slot, False) is not False:  # else it finished meanwhile
                    self._finished.append(self._late(slot.item, self._where(slot), time.monotonic() - slot.started))
                    self._start_worker()
            self._record_when_free()

    def _where(self, slot: Slot) -> str:
        """Where ``slot``'s item was when its time ran out."""
        phase = slot.phase_at(slot.started + self.timeout)
        return "in the runner" if phase == "runner" else f"while {phase}"
