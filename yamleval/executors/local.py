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
from typing import Any, Callable, Iterator

# what the executor runs: an item, or whatever unit of work the engine makes of one (a repeat);
# and what it records: what running one gives
Unit = Any
Done = Any

POLL_SECONDS = 0.05  # how often a waiting thread looks at stop and abandon, and the watchdog at the time


class Slot:
    """The item one worker is running, and the phases it has entered (when), so that a
    timeout can say where the item was when its time ran out."""

    def __init__(self, item: Unit):
        self.item = item
        self.started = time.monotonic()
        self.phases = [("runner", self.started)]

    def enter(self, phase: str) -> None:
        self.phases.append((phase, time.monotonic()))

    def phase_at(self, moment: float) -> str:
        return [name for name, since in self.phases if since <= moment][-1]


RunItem = Callable[[Unit, Slot], Done]
LostResult = Callable[[Unit, str, float], Done]


class LocalExecutor:
    """Items from an iterator through ``process`` on ``concurrency`` threads.

    ``record`` is called once per item, one call at a time, in completion order.
    ``lost(item, why, elapsed_ms)`` makes the error result of an item that timed out. An
    item abandoned (``abandon``) is no result at all: it is not recorded, so a resumed run
    runs it. A failure reading the dataset stops reading; it is kept in ``failure``.
    """

    def __init__(self, concurrency: int, timeout: float | None,
                 thread_exit: Callable[[], None] | None = None):
        self.concurrency = max(1, int(concurrency))
        self.timeout = timeout
        self.thread_exit = thread_exit
        self.failure: BaseException | None = None
        self._reading = threading.Lock()  # over the dataset: one thread reads at a time
        self._ahead: collections.deque[Unit] = collections.deque()  # read, not started
        self._exhausted = False  # nothing more to read: the end, or a failure
        self._taking = True  # whether workers take more items
        self._closed = False  # the run has ended: nothing more is recorded
        self._running: dict[Slot, None] = {}  # who removes a slot from here records its item
        self._finished: collections.deque[Done] = collections.deque()  # to record
        self.recording = threading.Lock()  # held by the one thread recording
        self._counting = threading.Lock()
        self._workers = 0  # those that will take items again (not stuck in an item given up on)
        self._all_ended = threading.Event()

    def run(self, items: Iterator[Unit], process: RunItem, record: Callable[[Done], None], lost: LostResult,
            stop: threading.Event | None = None, abandon: threading.Event | None = None) -> None:
        """Run every item; return when all have been recorded. ``stop`` set: start no new
        items, wait for those running. ``abandon`` set: stop waiting for them; they are dropped."""
        self._items, self._process, self._record, self._lost = items, process, record, lost
        self._workers = self.concurrency
        for _ in range(self.concurrency):
            self._start_worker()
        ended = threading.Event()
        if self.timeout:
            threading.Thread(target=self._watch, args=(ended,), name="yamleval-watchdog", daemon=True).start()
        try:
            while not self._all_ended.wait(POLL_SECONDS):
                if (stop is not None and stop.is_set()) or (abandon is not None and abandon.is_set()):
                    self._taking = False  # an item not started is not run: a resumed run starts it
                if abandon is not None and abandon.is_set():
                    self._running.clear()  # their results are dropped
                    break
        finally:
            self._taking = False
            ended.set()
            with self.recording:  # whatever a worker left to record
                self._record_finished()
                self._closed = True

    def halt(self) -> None:
        """Start no more items (those running finish); callable from ``record``."""
        self._taking = False

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
            if self._ahead or self._exhausted:
                return  # another thread has read meanwhile
            try:
                for _ in range(self.concurrency):
                    self._ahead.append(next(self._items))
            except StopIteration:
                self._exhausted = True
            except Exception as exc:  # a broken dataset row or plugin: stop reading; what was read runs
                self.failure, self._exhausted = exc, True

    def _work(self) -> None:
        try:
            while (slot := self._next()) is not None:
                result = self._process(slot.item, slot)
                elapsed = time.monotonic() - slot.started
                if self._running.pop(slot, False) is False:
                    return  # given up on (recorded already, or dropped): a worker took this one's place
                if self.timeout and elapsed >= self.timeout:  # late, though the watchdog had not seen it yet
                    result = self._lost(slot.item, self._timed_out(slot), elapsed * 1000.0)
                self._finished.append(result)
                self._record_when_free()
            with self._counting:
                self._workers -= 1
                if self._workers == 0:
                    self._all_ended.set()
        finally:
            if self.thread_exit is not None:
                self.thread_exit()

    def _record_when_free(self) -> None:
        """Record the finished results, unless another thread is recording: it records them.
        More than ``concurrency`` of them waiting: wait for it, then record them (so results
        never pile up faster than they are recorded)."""
        while self._finished:
            if len(self._finished) > self.concurrency:
                self.recording.acquire()
            elif not self.recording.acquire(blocking=False):
                return
            try:
                self._record_finished()
            finally:
                self.recording.release()

    def _record_finished(self) -> None:
        while self._finished and not self._closed:
            try:
                self._record(self._finished.popleft())
            except Exception as exc:  # after it kept the result (a shared state that is gone): the run stops
                if self.failure is None:
                    self.failure = exc
                self._taking = False

    def _watch(self, ended: threading.Event) -> None:
        """Until the run ends: give up on the items past their timeout."""
        while not ended.wait(min(POLL_SECONDS, self.timeout / 10)):
            now = time.monotonic()
            for slot in [slot for slot in list(self._running) if now - slot.started >= self.timeout]:
                if self._running.pop(slot, False) is not False:  # else it finished meanwhile
                    self._finished.append(self._lost(slot.item, self._timed_out(slot),
                                                     (time.monotonic() - slot.started) * 1000.0))
                    self._start_worker()
            self._record_when_free()

    def _timed_out(self, slot: Slot) -> str:
        phase = slot.phase_at(slot.started + self.timeout)
        where = "in the runner" if phase == "runner" else f"while {phase}"
        return f"timed out after {self.timeout:g}s ({where})"
