"""Whether an endpoint can be used at all. One that is down, refuses the key or has no such
model fails every call the same way: a run against it would only repeat that error per item.

The model client and the ``http`` runner send their requests with the ``Endpoint`` record of
where they go (``transport.request(endpoint=...)``), kept by the run (``Endpoints``, on the
run's ``Network``), which counts the requests that ended (retries done) and those of them that failed for a lasting reason: nothing
listens at the address (connection refused), the host name is unknown, or HTTP 401, 403 or
404. An experiment reads the counts since it started: when the first ``first_calls`` requests
to one endpoint all failed for a lasting reason, and none ended otherwise, it is ``unusable``;
so is one whose last ``first_calls`` requests in a row found nothing there (it stopped midway).

Nothing answering (connection refused, unknown host) is an outage, not a verdict on the items:
an experiment with any request that ended so is ``unreachable`` at its end, for however few
items, and could not be evaluated; resuming its run runs those items again.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Hashable, Mapping

FIRST_CALLS = (3, 5)  # the fewest and the most first requests that must all fail
UNREACHABLE = frozenset({"connection refused", "unknown host"})  # nothing there to answer: an outage


def first_calls(concurrency: int) -> int:
    """How many first requests must all fail for a lasting reason: as many as items start
    together, but at least three (one unlucky item, say a 404 for its own URL, does not stop a
    run) and at most five (a wide run does not wait for more)."""
    fewest, most = FIRST_CALLS
    return max(fewest, min(concurrency, most))


@dataclass(frozen=True)
class Unusable:
    """An endpoint whose ``calls`` requests failed for the lasting ``cause``: its ``first`` ones
    (at least), its ``last`` ones in a row, or ``some`` of them, nothing answering."""

    endpoint: str  # as messages show it: no credentials, no query string
    calls: int
    cause: str
    advice: str
    which: str = "first"  # first, last or some

    def message(self) -> str:
        calls = "request" if self.calls == 1 else f"{self.calls} requests"
        failed = {"first": f"the first {calls} all failed", "last": f"the last {calls} all failed",
                  "some": f"{calls} failed"}[self.which]
        ended = "The run stopped early" if self.which != "some" else "The run is unfinished"
        # a server that is back needs no change: a changed key or address is a changed config to resume
        then = (", and once it answers, resuming the run (`yamleval run --resume`) evaluates the rest"
                if self.cause in UNREACHABLE else "")
        return (f"could not evaluate: {self.endpoint}: {failed} ({self.cause}); {self.advice}. {ended}: the items"
                f" that finished are stored and reported{then}")


class Endpoint:
    """How the requests of a run to one endpoint ended; ``advice`` says what to do about
    each lasting cause."""

    def __init__(self, shown: str, advice: Mapping[str, str], lock: threading.Lock):
        self.shown, self.advice, self._lock = shown, advice, lock
        self.calls = self.lasting = self.unreachable = 0
        self.streak = 0  # the requests that found nothing there since the last one that did
        self.cause: str | None = None
        self.unreached: str | None = None  # why the last request that found nothing there failed

    def ended(self, lasting: str | None) -> None:
        """A request ended; ``lasting``: the cause of its failure, when it will not go away by itself."""
        with self._lock:
            self.calls += 1
            if lasting is not None:
                self.lasting += 1
                self.cause = lasting
            if lasting in UNREACHABLE:
                self.unreachable += 1
                self.streak += 1
                self.unreached = lasting
            else:
                self.streak = 0

    def unusable(self, since: "tuple[int, int, int]", first: int) -> Unusable | None:
        """This endpoint as unusable, when its requests since ``since`` (its counts then) are at
        least ``first``, all failed for a lasting reason, or its last ``first`` found nothing there."""
        calls, lasting, unreachable = (now - then for now, then in zip(self.counts(), since))
        if calls >= first and lasting == calls:
            cause = self.cause or "failed"
            return Unusable(self.shown, first, cause, self.advice.get(cause, "check its settings"))
        if self.streak >= first and unreachable >= first:
            return self.unreached_as(min(self.streak, unreachable), "last")
        return None

    def counts(self) -> "tuple[int, int, int]":
        """The requests ended, those failed for a lasting reason, and those that found nothing there."""
        return self.calls, self.lasting, self.unreachable

    def unreached_as(self, calls: int, which: str) -> Unusable:
        cause = self.unreached or "connection refused"
        return Unusable(self.shown, calls, cause, self.advice.get(cause, "check its settings"), which)


Counts = Mapping[Hashable, "tuple[int, int, int]"]  # per endpoint: ``Endpoint.counts``


class Endpoints:
    """The endpoint records of one run; thread-safe."""

    def __init__(self):
        self._endpoints: dict[Hashable, Endpoint] = {}
        self._lock = threading.Lock()

    def endpoint(self, key: Hashable, shown: str, *, address: str, credentials: str, missing: str) -> Endpoint:
        """The run's record of ``key``, shown as ``shown``. The advice names the settings to
        check: ``address`` (where it is), ``credentials`` (what it is sent to let the call in);
        ``missing`` is what to do about a 404."""
        found = self._endpoints.get(key)
        if found is not None:
            return found
        with self._lock:
            found = self._endpoints.get(key)
            if found is None:
                found = self._endpoints[key] = Endpoint(shown, {
                    "connection refused": f"nothing accepts connections there: start it, or correct {address}",
                    "unknown host": f"its host name is not known: correct {address}",
                    "HTTP 401": f"it refuses the credentials: check {credentials}, and that the environment "
                                "variables named there are set",
                    "HTTP 403": f"it forbids the call with these credentials: check {credentials}",
                    "HTTP 404": missing}, self._lock)
            return found

    def snapshot(self) -> Counts:
        """The requests ended, those failed for a lasting reason and those that found nothing
        there, per endpoint, so far."""
        with self._lock:
            return {key: record.counts() for key, record in self._endpoints.items()}

    def unusable(self, before: Counts, first: int) -> Unusable | None:
        """An endpoint whose requests since ``before`` are at least ``first``, every one of them
        failed for a lasting reason, or whose last ``first`` found nothing there; None when there is none."""
        with self._lock:
            for key, record in self._endpoints.items():
                found = record.unusable(before.get(key, (0, 0, 0)), first)
                if found is not None:
                    return found
        return None

    def unreachable(self, before: Counts) -> Unusable | None:
        """An endpoint with requests since ``before`` that found nothing there (connection
        refused, unknown host), however few; None when there is none."""
        with self._lock:
            for key, record in self._endpoints.items():
                missed = record.unreachable - before.get(key, (0, 0, 0))[2]
                if missed > 0:
                    return record.unreached_as(missed, "some")
        return None
