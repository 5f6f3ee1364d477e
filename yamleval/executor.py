"""Run items on a bounded pool of local threads, with per-item timeouts and cancellation.

Workers pull the next item themselves, so there is no per-item future or queue hop.
A watchdog thread times out items that run too long: it records them as errors and
starts a replacement worker, leaving the stuck call to finish (and be ignored) on
its own thread, since Python cannot kill a thread.
"""
from __future__ import annotations

import threading
import time
from typing import Callable, Iterator

from yamleval.types import Item, ItemResult


class Slot:
    """What one worker is doing now; ``phase`` says where an item hangs."""

    __slots__ = ("item", "started", "phase", "abandoned")

    def __init__(self):
        self.item: Item | None = None
        self.started = 0.0
        self.phase = ""
        self.abandoned = False


Process = Callable[[Item, Slot], ItemResult]
Lost = Callable[[Item, str, float], ItemResult]


class LocalExecutor:
    """Items from an iterator through ``process`` on ``concurrency`` threads.

    ``record`` is called once per item, under one lock, in completion order.
    ``lost(item, why, elapsed_ms)`` makes the error result of an item that timed out or was abandoned.
    """

    def __init__(self, concurrency: int, timeout: float | None,
                 thread_exit: Callable[[], None] | None = None):
        self.concurrency = max(1, int(concurrency))
        self.thread_exit = thread_exit
        self.timeout = timeout
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.cancelled = False
        self.failure: BaseException | None = None
        self._slots: set[Slot] = set()
        self._seats = 0

    def cancel(self) -> None:
        """Start no new items; those running finish or time out."""
        self.cancelled = True

    def run(self, items: Iterator[Item], process: Process, record: Callable[[ItemResult], None],
            lost: Lost, wait: Callable[[threading.Event], None] | None = None) -> None:
        self._items, self._process, self._record, self._lost = items, process, record, lost
        with self.lock:
            self._seats = self.concurrency
        for _ in range(self.concurrency):
            self._start_worker()
        watchdog = None
        if self.timeout:
            watchdog = threading.Thread(target=self._watch, name="yamleval-watchdog", daemon=True)
            watchdog.start()
        if wait is None:
            self.done.wait()
        else:
            wait(self.done)
        self.done.set()

    def abandon(self) -> None:
        """Stop waiting: record every running item as cancelled and return from ``run``."""
        with self.lock:
            self.cancelled = True
            for slot in list(self._slots):
                if slot.item is not None and not slot.abandoned:
                    slot.abandoned = True
                    elapsed = (time.monotonic() - slot.started) * 1000.0
                    self._record(self._lost(slot.item, "cancelled before it finished", elapsed))
            self.done.set()

    def _start_worker(self) -> None:
        threading.Thread(target=self._work, name="yamleval-worker", daemon=True).start()

    def _next(self, slot: Slot) -> Item | None:
        """The next item, or None when there is none or the run stops. Called under the lock."""
        if self.cancelled:
            return None
        try:
            item = next(self._items)
        except StopIteration:
            return None
        except BaseException as exc:  # a broken dataset row or plugin: stop the run, keep what finished
            self.failure = exc
            self.cancelled = True
            return None
        slot.item, slot.started, slot.phase = item, time.monotonic(), "runner"
        return item

    def _work(self) -> None:
        slot = Slot()
        with self.lock:
            self._slots.add(slot)
            item = self._next(slot)
        try:
            while item is not None:
                result = self._process(item, slot)
                with self.lock:
                    if slot.abandoned:
                        return
                    self._record(result)
                    slot.item = None
                    item = self._next(slot)
        finally:
            if self.thread_exit is not None:
                self.thread_exit()
            with self.lock:
                self._slots.discard(slot)
                if not slot.abandoned:
                    self._seats -= 1
                    if self._seats == 0:
                        self.done.set()

    def _watch(self) -> None:
        interval = min(0.05, self.timeout / 10)
        while not self.done.wait(interval):
            now = time.monotonic()
            with self.lock:
                for slot in list(self._slots):
                    if slot.item is None or slot.abandoned or now - slot.started < self.timeout:
                        continue
                    slot.abandoned = True
                    self._slots.discard(slot)
                    where = "in the runner" if slot.phase == "runner" else f"while {slot.phase}"
                    elapsed = (now - slot.started) * 1000.0
                    self._record(self._lost(slot.item, f"timed out after {self.timeout:g}s ({where})", elapsed))
                    self._start_worker()
