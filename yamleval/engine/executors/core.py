"""What every executor does, wherever its items run: one core, and a subclass per place.

The core reads the items (a few ahead, never faster than they finish), stops taking new ones
when ``stop`` or ``abandon`` is set or ``halt`` is called, drops what runs when ``abandon``
is set, turns a result that came back past the item's timeout into a timeout ("late, though
not seen late yet"), says how a timeout reads, and records each result one at a time: a
recording that fails stops the run, its failure kept. A subclass says only how an item runs
there and how what finished is collected: ``_begin``, ``_wait``, ``_drop`` and ``_end``.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable, Iterator

# what the executor runs: an item, or whatever unit of work the engine makes of one (a repeat);
# and what it records: what running one gives
Unit = Any
Done = Any

POLL_SECONDS = 0.05  # how often the run looks at stop and abandon, and at the time


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


class Executor:
    """Items from an iterator through ``process`` (``run``), ``concurrency`` at a time.

    ``record`` is called once per item, one call at a time, in completion order.
    ``lost(item, why, elapsed_ms)`` makes the error result of an item that timed out. An
    item abandoned (``abandon``) is no result at all: it is not recorded, so a resumed run
    runs it. A failure reading the dataset stops reading; it is kept in ``failure``.
    """

    def __init__(self, concurrency: int, timeout: float | None):
        self.concurrency = max(1, int(concurrency))
        self.timeout = timeout
        self.failure: BaseException | None = None
        self._recording = threading.Lock()  # held by whoever records: one result at a time
        self._taking = True  # whether more items start
        self._exhausted = False  # nothing more to read: the end, or a failure
        self._stop: threading.Event | None = None

    def run(self, items: Iterator[Unit], process: RunItem, record: Callable[[Done], None], lost: LostResult,
            stop: threading.Event | None = None, abandon: threading.Event | None = None) -> None:
        """Run every item; return when all have been recorded. ``stop`` set: start no new
        items, wait for those running. ``abandon`` set: stop waiting for them; they are dropped."""
        self._items, self._process, self._record, self._lost = items, process, record, lost
        self._stop = stop
        try:
            self._begin()
            while not self._wait(POLL_SECONDS):
                if (stop is not None and stop.is_set()) or (abandon is not None and abandon.is_set()):
                    self._taking = False  # an item not started is not run: a resumed run starts it
                if abandon is not None and abandon.is_set():
                    self._drop()  # their results are dropped
                    break
        finally:
            self._taking = False
            self._end()

    def halt(self) -> None:
        """Start no more items (those running finish); callable from ``record``."""
        self._taking = False

    def close(self) -> None:
        """Let go of what the executor holds for its run (nothing, unless a subclass says)."""

    # -- where the items run: the subclass's ------------------------------------------------

    def _begin(self) -> None:
        """Start running items."""

    def _wait(self, seconds: float) -> bool:
        """Wait at most ``seconds`` for items to finish, record them; whether every item is done."""
        raise NotImplementedError

    def _drop(self) -> None:
        """Let go of the items running: their results are not recorded."""

    def _end(self) -> None:
        """The run has ended (every item done, or abandoned)."""

    # -- shared by every place --------------------------------------------------------------

    def _read(self, count: int) -> list[Unit]:
        """Up to ``count`` more units (fewer at the end of the items). A failure reading them (a
        broken dataset row or plugin) stops reading, kept in ``failure``: what was read runs."""
        units: list[Unit] = []
        if self._exhausted:
            return units
        try:
            for _ in range(count):
                units.append(next(self._items))
        except StopIteration:
            self._exhausted = True
        except Exception as exc:
            self.failure, self._exhausted = exc, True
        return units

    def _overdue(self, elapsed: float) -> bool:
        """Whether a unit that has run ``elapsed`` seconds is past its timeout."""
        return bool(self.timeout) and elapsed >= self.timeout

    def _in_time(self, unit: Unit, result: Done, elapsed: float, where: Callable[[], str]) -> Done:
        """``result``, or a timeout when it came ``elapsed`` seconds after the start, past the timeout
        (late, though not seen late yet); ``where()`` says where the item was then."""
        return self._late(unit, where(), elapsed) if self._overdue(elapsed) else result

    def _late(self, unit: Unit, where: str, elapsed: float) -> Done:
        """The result of a unit given up on after ``elapsed`` seconds, past its timeout, ``where`` it was."""
        return self._lost(unit, f"timed out after {self.timeout:g}s ({where})", elapsed * 1000.0)

    def _keep(self, done: Done) -> None:
        """Record one result. A recording that fails (after it kept the result: a shared state that
        is gone) stops the run: no more items start, the failure is kept."""
        try:
            self._record(done)
        except Exception as exc:
            if self.failure is None:
                self.failure = exc
            self._taking = False
