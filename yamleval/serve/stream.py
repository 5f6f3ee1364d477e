"""The live view of a running run: a stream of server-sent events (progress, the newest items,
the end) for each viewer, all fed by one poll of the store per run, however many viewers follow it."""
from __future__ import annotations

import json
from typing import Any, AsyncIterator, Awaitable, Callable

import anyio

from yamleval.records.errors import UsageError
from yamleval.serve import reading

POLL_SECONDS = 0.5  # how often the stream of a running run looks for news


class Polls:
    """The latest look at each followed run, shared by its viewers: a viewer asking within
    ``POLL_SECONDS`` of the last look gets that one, and viewers asking at once wait for one look."""

    def __init__(self, read: Callable[..., Awaitable[Any]]):
        self.read = read  # runs ``work(store, *args)`` in a worker thread
        self.looks: dict[str, tuple[float, reading.Live]] = {}  # run id: (when, what was seen)
        self.locks: dict[str, anyio.Lock] = {}
        self.viewers: dict[str, int] = {}

    async def look(self, run_id: str) -> reading.Live:
        """The run as last seen, read again when that is ``POLL_SECONDS`` old."""
        async with self.locks[run_id]:
            taken = self.looks.get(run_id)
            if taken is None or anyio.current_time() - taken[0] >= POLL_SECONDS:
                taken = self.looks[run_id] = (anyio.current_time(), await self.read(reading.live, run_id))
            return taken[1]

    def join(self, run_id: str) -> None:
        self.viewers[run_id] = self.viewers.get(run_id, 0) + 1
        self.locks.setdefault(run_id, anyio.Lock())

    def leave(self, run_id: str) -> None:
        """One viewer fewer; the last one's leaving forgets the run."""
        self.viewers[run_id] -= 1
        if not self.viewers[run_id]:
            for kept in (self.viewers, self.looks, self.locks):
                kept.pop(run_id, None)


async def events(polls: Polls, run_id: str, since: int) -> AsyncIterator[str]:
    """One viewer's stream: progress when it changes, the items stored after number ``since``,
    and the run's verdict once it is no longer running."""
    seen, last = None, since
    polls.join(run_id)
    try:
        while True:
            try:
                found = await polls.look(run_id)
            except UsageError as exc:  # the store failed: say so, and let the browser try again
                yield event("problem", {"error": exc.message})
                return
            if found.progress != seen:
                yield event("progress", found.progress)
                seen = found.progress
            last, items = reading.latest_items(found, last)
            if items:
                yield f"id: {last}\n" + event("items", items)
            if found.info.status != "running":
                yield event("end", {"status": reading.verdict(found.info)})
                return
            await anyio.sleep(POLL_SECONDS)
    finally:
        polls.leave(run_id)


def event(kind: str, data: Any) -> str:
    """A server-sent event of ``kind`` carrying ``data`` as JSON."""
    return f"event: {kind}\ndata: {json.dumps(data)}\n\n"
