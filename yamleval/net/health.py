"""Whether an endpoint can be used at all. One that is down, refuses the key or has no such
model fails every call the same way: a run against it would only repeat that error per item.

The model client and the ``http`` runner send their requests with the ``Endpoint`` record of
where they go (``transport.request(endpoint=...)``), kept by the run (``Endpoints``, on the
run's ``Network``), which counts the requests that ended (retries done) and those of them that failed for a lasting reason: nothing
listens at the address (connection refused), the host name is unknown, or HTTP 401, 403 or
404. An experiment reads the counts since it started: when the first ``first_calls`` requests
to one endpoint all failed for a lasting reason, and none ended otherwise, it is ``unusable``.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Hashable, Mapping

FIRST_CALLS = (3, 5)  # the fewest and the most first requests that must all fail


def first_calls(concurrency: int) -> int:
    """How many first requests must all fail for a lasting reason: as many as items start
    together, but at least three (one unlucky item, say a 404 for its own URL, does not stop a
    run) and at most five (a wide run does not wait for more)."""
    fewest, most = FIRST_CALLS
    return max(fewest, min(concurrency, most))


@dataclass(frozen=True)
class Unusable:
    """An endpoint whose first ``calls`` requests (at least) all failed for the lasting ``cause``."""

    endpoint: str  # as messages show it: no credentials, no query string
    calls: int
    cause: str
    advice: str

    def message(self) -> str:
        calls = "request" if self.calls == 1 else f"{self.calls} requests"
        return (f"could not evaluate: {self.endpoint}: the first {calls} all failed ({self.cause}); "
                f"{self.advice}. The run stopped early: the items that finished are stored and reported")


class Endpoint:
    """How the requests of a run to one endpoint ended; ``advice`` says what to do about
    each lasting cause."""

    def __init__(self, shown: str, advice: Mapping[str, str], lock: threading.Lock):
        self.shown, self.advice, self._lock = shown, advice, lock
        self.calls = self.lasting = 0
        self.cause: str | None = None

    def ended(self, lasting: str | None) -> None:
        """A request ended; ``lasting``: the cause of its failure, when it will not go away by itself."""
        with self._lock:
            self.calls += 1
            if lasting is not None:
                self.lasting += 1
                self.cause = lasting


Counts = Mapping[Hashable, "tuple[int, int]"]


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
        """The requests ended and those failed for a lasting reason, per endpoint, so far."""
        with self._lock:
            return {key: (record.calls, record.lasting) for key, record in self._endpoints.items()}

    def unusable(self, before: Counts, first: int) -> Unusable | None:
        """An endpoint whose requests since ``before`` are at least ``first``, every one of them
        failed for a lasting reason; None when there is none."""
        with self._lock:
            for key, record in self._endpoints.items():
                calls, lasting = before.get(key, (0, 0))
                calls, lasting = record.calls - calls, record.lasting - lasting
                if calls >= first and lasting == calls:
                    cause = record.cause or "failed"
                    return Unusable(record.shown, first, cause, record.advice.get(cause, "check its settings"))
        return None
