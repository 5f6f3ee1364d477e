"""Run items on a bounded pool of local threads, with per-item timeouts and cancellation.

One coordinator thread reads the dataset a little ahead into a queue and records the
results that workers hand back through a second queue; workers only take an item, run
it and hand its result over. No lock is shared by the workers on their way through an
item: with a shared lock, threads that are quick (an instant runner) end up handing the
lock and the GIL to each other on every item, which costs more than the item itself.

Items travel in chunks whose size adapts to how long items take: one at a time while
they take a millisecond or more, so slow items spread over every worker, and up to
``MAX_CHUNK`` at once when they are instant, so that handing an item from one thread to
another (which costs more than an instant item itself) happens once per chunk.

Workers start one at a time as they prove needed: a single worker at first, and the rest
once an item has waited for one (for ``GROW_SECONDS``), that is once items turn out not to
be instant. Instant items then run on one worker, since extra threads would only hand the
GIL to each other, and slow ones (a model call) get every worker a few milliseconds in.

A watchdog thread times out items that run too long: it records them as errors and
starts a replacement worker, leaving the stuck call to finish (and be ignored) on
its own thread, since Python cannot kill a thread.
"""
from __future__ import annotations

import queue
import threading
import time
from typing import Callable, Iterator

from yamleval.types import Item, ItemResult

_END = object()    # in the item queue: no more items (each worker puts it back for the next)
_EXIT = object()   # in the result queue: a worker holding a seat has ended
_WAKE = object()   # in the result queue: look at ``cancelled`` again
_STOP = object()   # in the result queue: ``run`` is returning; record what came before, then end

MAX_CHUNK = 64        # items handed to a worker at once
CHUNK_SECONDS = 0.002  # work per chunk worth one hand-over between threads
GROW_SECONDS = 0.005  # an item queued this long while every worker is busy: start the other workers


class Slot:
    """What one worker is doing now; ``phase`` says where an item hangs.

    ``guard`` makes the end of an item and its timing out (or abandonment) exclusive:
    exactly one of them records the item.
    """

    __slots__ = ("item", "started", "phase", "abandoned", "guard", "chunk", "position", "done")

    def __init__(self):
        self.item: Item | None = None
        self.chunk: list[Item] = []  # the items this worker holds; ``item`` is chunk[position]
        self.position = 0
        self.done: list[ItemResult] = []  # results of the chunk's earlier items, not yet handed over
        self.started = 0.0
        self.phase = ""
        self.abandoned = False
        self.guard = threading.Lock()


Process = Callable[[Item, Slot], ItemResult]
Lost = Callable[[Item, str, float], ItemResult]


class LocalExecutor:
    """Items from an iterator through ``process`` on ``concurrency`` threads.

    ``record`` is called once per item, under one lock, in completion order.
    ``lost(item, why, elapsed_ms)`` makes the error result of an item that timed out or was abandoned.
    Items are read about ``ahead`` before they start (never past the iterator's end or a limit).
    """

    def __init__(self, concurrency: int, timeout: float | None,
                 thread_exit: Callable[[], None] | None = None):
        self.concurrency = max(1, int(concurrency))
        self.thread_exit = thread_exit
        self.timeout = timeout
        self.ahead = max(64, 2 * self.concurrency)
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.cancelled = False
        self.failure: BaseException | None = None
        self._slots: set[Slot] = set()
        self._seats = 0  # workers started that will say when they end
        self._unstarted = 0  # workers not started yet
        self._todo: queue.SimpleQueue = queue.SimpleQueue()
        self._pace: float | None = None  # seconds per item, recently
        self._finished: queue.SimpleQueue = queue.SimpleQueue()

    def cancel(self) -> None:
        """Start no new items; those running finish or time out."""
        if not self.cancelled:
            self.cancelled = True
            self._finished.put(_WAKE)

    def run(self, items: Iterator[Item], process: Process, record: Callable[[ItemResult], None],
            lost: Lost, wait: Callable[[threading.Event], None] | None = None) -> None:
        self._items, self._process, self._record, self._lost = items, process, record, lost
        with self.lock:
            self._seats, self._unstarted = 1, self.concurrency - 1
        coordinator = threading.Thread(target=self._coordinate, name="yamleval-coordinator", daemon=True)
        coordinator.start()
        self._start_worker()
        if self.timeout:
            threading.Thread(target=self._watch, name="yamleval-watchdog", daemon=True).start()
        if wait is None:
            self.done.wait()
        else:
            wait(self.done)
        self.done.set()
        self._finished.put(_STOP)
        coordinator.join()  # it records what finished before the stop, then ends

    def abandon(self) -> None:
        """Stop waiting: record every running item as cancelled and return from ``run``."""
        with self.lock:
            self.cancelled = True
            for slot in list(self._slots):
                with slot.guard:
                    if slot.item is not None and not slot.abandoned:
                        slot.abandoned = True
                        self._give_up(slot, "cancelled before it finished", time.monotonic())
            self.done.set()
        self._todo.put(_END)

    def _start_worker(self, first: list[Item] | None = None) -> None:
        threading.Thread(target=self._work, args=(first,), name="yamleval-worker", daemon=True).start()

    def _grow(self) -> None:
        """Start the workers not started yet."""
        with self.lock:
            if self.done.is_set():
                return
            count, self._unstarted = self._unstarted, 0
            self._seats += count
        for _ in range(count):
            self._start_worker()

    def _coordinate(self) -> None:
        """Keep the item queue filled and record results as they come, until every worker has ended."""
        todo, finished, record = self._todo, self._finished, self._record
        exhausted = False
        try:
            while True:
                size = self._chunk_size()
                while not exhausted and todo.qsize() * size < self.ahead:
                    if self.cancelled:
                        exhausted = True
                    else:
                        chunk = self._read(size)
                        if chunk:
                            todo.put(chunk)
                        if len(chunk) == size:
                            continue
                        exhausted = True
                    todo.put(_END)
                if self._unstarted:
                    try:
                        entry = finished.get(timeout=GROW_SECONDS)
                    except queue.Empty:  # no result for a while: grow if items wait (besides the end mark)
                        if todo.qsize() > exhausted:
                            self._grow()
                        continue
                else:
                    entry = finished.get()
                with self.lock:
                    while True:
                        if entry is _STOP:
                            return
                        if entry is _EXIT:
                            self._seats -= 1
                            if self._seats == 0:
                                self.done.set()
                        elif entry is not _WAKE:
                            for result in entry:
                                record(result)
                        try:
                            entry = finished.get_nowait()
                        except queue.Empty:
                            break
        except BaseException:  # a bug here must not leave ``run`` or the workers waiting forever
            self.cancelled = True
            self.done.set()
            todo.put(_END)
            raise

    def _read(self, size: int) -> list[Item]:
        """Up to ``size`` items from the iterator; fewer only at its end or on a failure."""
        chunk = []
        try:
            for _ in range(size):
                chunk.append(next(self._items))
        except StopIteration:
            pass
        except BaseException as exc:  # a broken dataset row or plugin: stop reading;
            self.failure = exc        # what was read still runs, what finished is kept
        return chunk

    def _chunk_size(self) -> int:
        """Items per chunk: as many as take ``CHUNK_SECONDS`` at the recent pace, 1 to ``MAX_CHUNK``."""
        pace = self._pace
        if pace is None or pace >= CHUNK_SECONDS:
            return 1
        return max(1, min(MAX_CHUNK, int(CHUNK_SECONDS / max(pace, 1e-6))))

    def _work(self, first: list[Item] | None) -> None:
        """Run chunks of items until the end; ``first``: the rest of a chunk whose worker timed out."""
        slot = Slot()
        todo, finished, process, guard = self._todo, self._finished, self._process, slot.guard
        with self.lock:
            self._slots.add(slot)
        try:
            while True:
                chunk, first = first or todo.get(), None
                if chunk is _END:
                    todo.put(_END)
                    return
                done = []
                began = time.monotonic()
                for position, item in enumerate(chunk):
                    with guard:
                        if self.cancelled:
                            break
                        slot.started, slot.phase, slot.item = time.monotonic(), "runner", item
                        slot.chunk, slot.position, slot.done = chunk, position, done
                    result = process(item, slot)
                    with guard:
                        if slot.abandoned:  # timed out or abandoned: recorded already with the results before
                            return          # it, and the rest of the chunk went to the worker that took over
                        slot.item = None
                    done.append(result)
                if done:
                    # a running mean of seconds per item, which sizes the next chunks (races are harmless)
                    pace = (time.monotonic() - began) / len(done)
                    self._pace = pace if self._pace is None else 0.8 * self._pace + 0.2 * pace
                    finished.put(done)
                if self.cancelled:
                    return
        finally:
            if self.thread_exit is not None:
                self.thread_exit()
            with self.lock:
                self._slots.discard(slot)
            with guard:
                if not slot.abandoned:
                    finished.put(_EXIT)

    def _watch(self) -> None:
        interval = min(0.05, self.timeout / 10)
        while not self.done.wait(interval):
            now = time.monotonic()
            with self.lock:
                for slot in list(self._slots):
                    with slot.guard:
                        if slot.item is None or slot.abandoned or now - slot.started < self.timeout:
                            continue
                        slot.abandoned = True  # its worker adds no more results to the slot
                        rest = slot.chunk[slot.position + 1:]
                    self._slots.discard(slot)
                    where = "in the runner" if slot.phase == "runner" else f"while {slot.phase}"
                    self._give_up(slot, f"timed out after {self.timeout:g}s ({where})", now)
                    self._start_worker(rest)

    def _give_up(self, slot: Slot, why: str, now: float) -> None:
        """Record what ``slot``'s worker finished of its chunk, then its current item as lost (``why``)."""
        for result in slot.done:
            self._record(result)
        self._record(self._lost(slot.item, why, (now - slot.started) * 1000.0))
