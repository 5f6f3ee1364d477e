"""The network state of one run: its limiters by endpoint and its endpoint records.

A run makes one ``Network`` (an experiment run by itself makes its own) and hands it down to
whoever calls out: the ``http`` runner gets it as ``network`` in its item context, the model
clients are made with it (``Models.for_run``). Two runs in one process never share a limiter
or an endpoint record. On Ray the workers and the driver use a proxy with the same face
(``RunNetwork``) that asks the run's actor (``executors.ray_shared.SharedNetwork``).
"""
from __future__ import annotations

import threading
from typing import Any, Hashable, Protocol

from yamleval.calls.health import Counts, Endpoint, Endpoints, Unusable
from yamleval.calls.limits import Limiter, Limiters, RateLimit
from yamleval.records.types import Throttling


class RunNetwork(Protocol):
    """What the callers of a run's network use: this process's ``Network``, or a cluster's proxy."""

    def limiter(self, endpoint: Hashable, rate_limit: RateLimit | None, adaptive: bool = True) -> Limiter | None: ...

    def endpoint(self, key: Hashable, shown: str, *, address: str, credentials: str, missing: str) -> Endpoint: ...

    def snapshot(self) -> Counts: ...

    def unusable(self, before: Counts, first: int) -> Unusable | None: ...

    def unreachable(self, before: Counts) -> Unusable | None: ...

    def throttling(self) -> Throttling: ...

    def session(self) -> Any: ...


class Network:
    """The limiters and endpoint records of one run in this process; thread-safe."""

    def __init__(self):
        self._limiters = Limiters()
        self._endpoints = Endpoints()
        self._sessions = threading.local()

    def limiter(self, endpoint: Hashable, rate_limit: RateLimit | None, adaptive: bool = True) -> Limiter | None:
        """The run's limiter of ``endpoint`` (``Limiters.limiter``); None while nothing is limited."""
        return self._limiters.limiter(endpoint, rate_limit, adaptive)

    def endpoint(self, key: Hashable, shown: str, *, address: str, credentials: str, missing: str) -> Endpoint:
        """The run's record of the requests to ``key`` (``Endpoints.endpoint``)."""
        return self._endpoints.endpoint(key, shown, address=address, credentials=credentials, missing=missing)

    def snapshot(self) -> Counts:
        """The requests ended and those failed for a lasting reason, per endpoint, so far."""
        return self._endpoints.snapshot()

    def unusable(self, before: Counts, first: int) -> Unusable | None:
        """An endpoint whose first ``first`` requests since ``before`` all failed for a lasting reason,
        or whose last ``first`` found nothing there."""
        return self._endpoints.unusable(before, first)

    def unreachable(self, before: Counts) -> Unusable | None:
        """An endpoint with requests since ``before`` that found nothing there (``Endpoints.unreachable``)."""
        return self._endpoints.unreachable(before)

    def throttling(self) -> Throttling:
        """The rate limits' counters of every endpoint, added up."""
        return self._limiters.snapshot()

    def session(self) -> Any:
        """This thread's pooled HTTP session of the run (``transport.open_session``): a worker's
        connections are kept alive from one item to the next, and end with the run."""
        session = getattr(self._sessions, "session", None)
        if session is None:
            from yamleval.calls import transport

            session = self._sessions.session = transport.open_session()
        return session
