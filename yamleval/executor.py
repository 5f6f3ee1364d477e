"""Run items on a pool of ``concurrency`` local threads, with per-item timeouts and cancellation.

Each worker takes the next item from the dataset, runs it and records its result, until
the dataset ends: at most ``concurrency`` items are in flight, and the dataset is read only
as fast as items finish. A watchdog gives up on an item that runs past its timeout: it
records the item as an error and starts a worker in place of the stuck one (Python cannot
stop a thread: the stuck call ends on its own, and is ignored). So every run ends, even
when every call hangs, in about items × timeout / concurrency.
"""
from __future__ import annotations

import threading
import time
from typing import Callable, Iterator

from yamleval.types import Item, ItemResult

POLL_SECONDS = 0.05  # how often a waiting thread looks at stop and abandon, and the watchdog at the time


class Slot:
    """The item one worker is running, and the phases it has entered (when), so that a
    timeout can say where the item was when its time ran out."""

    def __init__(self, item: Item):
        self.item = item
        self.started = time.monotonic()
        self.phases = [("runner", self.started)]
        self.given_up = False  # recorded as lost, or dropped: its worker's result is ignored

    def enter(self, phase: str) -> None:
        self.phases.append((phase, time.monotonic()))

    def phase_at(self, moment: float) -> str:
        return [name for name, since in self.phases if since <= moment][-1]


RunItem = Callable[[Item, Slot], ItemResult]
LostResult = Callable[[Item, str, float], ItemResult]


class LocalExecutor:
    """Items from an iterator through ``process`` on ``concurrency`` threads.

    ``record`` is called once per item, under ``lock``, in completion order.
    ``lost(item, why, elapsed_ms)`` makes the error result of an item that timed out. An
    item abandoned (``abandon``) is no result at all: it is not recorded, so a resumed run
    runs it. A failure reading the dataset stops reading; it is kept in ``failure``.
    """

    def __init__(self, concurrency: int, timeout: float | None,
                 thread_exit: Callable[[], None] | None = None):
        self.concurrency = max(1, int(concurrency))
        self.timeout = timeout
        self.thread_exit = thread_exit
        self.lock = threading.Lock()  # over the running items, the record and the count of workers
        self.failure: BaseException | None = None
        self._reading = threading.Lock()  # over the dataset: one worker reads at a time
        self._taking = True  # whether workers take more items
        self._running: set[Slot] = set()
        self._workers = 0  # those that will take items again (not stuck in an item given up on)
        self._all_ended = threading.Event()

    def run(self, items: Iterator[Item], process: RunItem, record: Callable[[ItemResult], None], lost: LostResult,
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
                    self._drop_running()
        finally:
            self._taking = False
            ended.set()

    def halt(self) -> None:
        """Start no more items (those running finish); callable from ``record``."""
        self._taking = False

    def _start_worker(self) -> None:
        threading.Thread(target=self._work, name="yamleval-worker", daemon=True).start()

    def _next(self) -> Slot | None:
        """A slot for the next item, or None at the end (of the dataset, or of taking items)."""
        with self._reading:
            if not self._taking:
                return None
            try:
                item = next(self._items)
            except StopIteration:
                self._taking = False
                return None
            except Exception as exc:  # a broken dataset row or plugin: stop reading; what was read runs
                self.failure, self._taking = exc, False
                return None
            slot = Slot(item)
            with self.lock:
                self._running.add(slot)
            return slot

    def _work(self) -> None:
        try:
            while (slot := self._next()) is not None:
                result = self._process(slot.item, slot)
                elapsed = time.monotonic() - slot.started
                with self.lock:
                    if slot.given_up:  # recorded already (or dropped); a worker took this one's place
                        return
                    self._running.discard(slot)
                    if self.timeout and elapsed >= self.timeout:  # late, though the watchdog had not seen it yet
                        result = self._lost(slot.item, self._timed_out(slot), elapsed * 1000.0)
                    self._record(result)
            with self.lock:
                self._workers -= 1
                if self._workers == 0:
                    self._all_ended.set()
        finally:
            if self.thread_exit is not None:
                self.thread_exit()

    def _watch(self, ended: threading.Event) -> None:
        """Until the run ends: give up on the items past their timeout."""
        while not ended.wait(min(POLL_SECONDS, self.timeout / 10)):
            now = time.monotonic()
            with self.lock:
                late = [slot for slot in self._running if now - slot.started >= self.timeout]
            for slot in late:
                self._give_up(slot, record=True)

    def _timed_out(self, slot: Slot) -> str:
        phase = slot.phase_at(slot.started + self.timeout)
        where = "in the runner" if phase == "runner" else f"while {phase}"
        return f"timed out after {self.timeout:g}s ({where})"

    def _drop_running(self) -> None:
        with self.lock:
            running = list(self._running)
        for slot in running:
            self._give_up(slot, record=False)

    def _give_up(self, slot: Slot, record: bool) -> None:
        """Stop waiting for ``slot``'s item (recording it as timed out, if ``record``) and put
        a new worker in place of the one stuck in it."""
        with self.lock:
            if slot.given_up or slot not in self._running:
                return  # it finished meanwhile
            slot.given_up = True
            self._running.discard(slot)
            if record:
                self._record(self._lost(slot.item, self._timed_out(slot), (time.monotonic() - slot.started) * 1000.0))
        self._start_worker()
