"""Rate limits and adaptive concurrency per endpoint, shared by every caller in one run.

An endpoint (scheme, host and port; and the model, for a model endpoint) has one ``Limiter``
in a run (``Limiters``, kept by the run's ``Network``), whichever experiment, judge or agent
calls it. Every attempt passes through it:

- ``requests_per_minute``: attempts start evenly spaced, 60/rpm seconds apart (no burst), so
  a provider that counts per second sees the same rate as one that counts per minute;
- ``tokens_per_minute``: the tokens a call used are charged when it ends (no estimate is
  reserved before); while the bucket is in debt, no call starts. It refills at tpm/60 a
  second and holds at most a second's worth;
- adaptive concurrency (unless ``adaptive: false``): nothing is held back until the endpoint
  refuses a call (429 or 503). Then the calls allowed in flight drop to those still in flight
  and, once per refusal window (its Retry-After, else a second), by 15%. Past the window they
  grow back by two per ``limit`` answers (two a round trip) while the limit holds calls back, so
  never past what the experiment's concurrency asks for. (A deeper cut or a slower growth leaves
  the allowance unused for seconds after each refusal, and after a small burst at the start.)
  A refusal before any call was answered tells only that the endpoint's burst is spent, not how
  fast it answers: the calls allowed grow back from the first answers, not after the window.
  While limited, attempts are paced, one every latency/limit seconds: the calls allowed are
  spread over a round trip, not sent in a burst.
  A refusal at one call at a time means the allowance is spent: no call starts until its
  Retry-After has passed. (Pausing every call on every Retry-After would idle the endpoint
  for a whole window each time the limit probes one call too far.)

A limiter's settings are fixed when the run makes it: the first caller of an endpoint decides,
and a later caller asking for other settings gets the stricter of the two (the lower rate of
each kind; adaptive concurrency when either asks for it).

Counters (calls, refusals, seconds waited) are read as a snapshot of all endpoints; an
experiment reports the difference between the snapshots at its start and its end (``since``).
"""
from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass
from typing import Any, Hashable

from yamleval.records.types import Throttling

THROTTLED = frozenset({429, 503})
DECREASE = 0.85  # the share of the limit kept on a refusal, at most once per window
GROWTH = 2  # calls added to the limit per round trip (``limit`` answers) while it holds calls back
WINDOW = 1.0  # seconds: a refusal window when the reply names no Retry-After


@dataclass(frozen=True)
class RateLimit:
    """The allowance of one endpoint; None: no limit of that kind."""

    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None

    @classmethod
    def from_value(cls, value: Any) -> "RateLimit | None":
        """A ``rate_limit:`` mapping as a RateLimit (None for none); ValueError says what is wrong."""
        if value is None:
            return None
        if not isinstance(value, dict):
            raise ValueError("`rate_limit` must be a mapping such as {requests_per_minute: 600}")
        unknown = sorted(set(value) - {"requests_per_minute", "tokens_per_minute"})
        if unknown:
            raise ValueError(f"`rate_limit` has unknown key(s) {', '.join(unknown)}: "
                             "use requests_per_minute and tokens_per_minute")
        for key, number in value.items():
            if isinstance(number, bool) or not isinstance(number, (int, float)) or not 0 < number < math.inf:
                raise ValueError(f"`rate_limit.{key}` must be a number above 0, not {number!r}")
        return cls(value.get("requests_per_minute"), value.get("tokens_per_minute"))

    def stricter(self, other: "RateLimit") -> "RateLimit":
        """The lower allowance of each kind of this and ``other``."""
        def lower(mine: float | None, theirs: float | None) -> float | None:
            return theirs if mine is None else mine if theirs is None else min(mine, theirs)

        return RateLimit(lower(self.requests_per_minute, other.requests_per_minute),
                         lower(self.tokens_per_minute, other.tokens_per_minute))


def check_adaptive(value: Any) -> bool:
    """``adaptive:`` as given; ValueError unless it is true or false."""
    if not isinstance(value, bool):
        raise ValueError(f"`adaptive` must be true or false, not {value!r}")
    return value


class Limiter:
    """What one endpoint allows; thread-safe. ``acquire`` before an attempt, ``release`` after it."""

    def __init__(self, rate_limit: RateLimit | None, adaptive: bool):
        self._changed = threading.Condition()
        self._turn = threading.Lock()
        self._limit = math.inf  # calls allowed in flight
        self._settle(rate_limit or RateLimit(), adaptive)
        self._in_flight = self._answered = 0
        self._calm_until = self._grow_from = self._last_start = self._paused_until = -math.inf
        self._latency: float | None = None  # seconds, smoothed over answered attempts
        self._tokens = self._token_rate  # the bucket holds a second's worth
        self._refilled = time.monotonic()
        self.calls = self.throttled = 0
        self.waited = 0.0

    def tighten(self, rate_limit: RateLimit | None, adaptive: bool) -> None:
        """Hold to the stricter of these settings and its own (another caller of the endpoint)."""
        with self._changed:
            stricter = self.rate_limit.stricter(rate_limit or RateLimit())
            if (stricter, self.adaptive or adaptive) != (self.rate_limit, self.adaptive):
                self._settle(stricter, self.adaptive or adaptive)

    def _settle(self, rate_limit: RateLimit, adaptive: bool) -> None:
        self.rate_limit, self.adaptive = rate_limit, adaptive
        self._interval = 60.0 / rate_limit.requests_per_minute if rate_limit.requests_per_minute else 0.0
        self._token_rate = rate_limit.tokens_per_minute / 60.0 if rate_limit.tokens_per_minute else 0.0

    @property
    def limit(self) -> float:
        """The calls allowed in flight now (``math.inf``: as many as callers make)."""
        return self._limit

    def acquire(self) -> float:
        """Wait until a call may start; the time it starts (``time.monotonic``)."""
        asked = time.monotonic()
        with self._changed:
            while True:
                now = time.monotonic()
                wait = max(self._refill(now), self._paused_until - now)
                if self._in_flight < self._limit and wait <= 0:
                    break
                self._changed.wait(wait if wait > 0 else None)
            self._in_flight += 1
            self.calls += 1
            if not self._spacing():  # nothing asks for spacing: the call starts now, no turn taken
                start = self._last_start = time.monotonic()
                self.waited += start - asked
                return start
        with self._turn:  # one call at a time waits for its start: a process that stalls sends no burst after
            time.sleep(max(0.0, self._last_start + self._spacing() - time.monotonic()))
            start = self._last_start = time.monotonic()
        with self._changed:
            self.waited += start - asked
        return start

    def _spacing(self) -> float:
        """The seconds from one start to the next: what ``requests_per_minute`` allows, and while
        adaptive concurrency limits the calls, the latency shared among those allowed."""
        if self.adaptive and self._limit < math.inf and self._latency:
            return max(self._interval, self._latency / self._limit)
        return self._interval

    def release(self, started: float, status: int | None, retry_after: float | None = None) -> None:
        """The attempt begun at ``started`` ended with ``status`` (None: no reply)."""
        now = time.monotonic()
        with self._changed:
            self._in_flight -= 1
            if status in THROTTLED:
                self.throttled += 1
                if self.adaptive:
                    self._slow_down(now, retry_after)
            elif status is not None and status < 500 and self.adaptive:
                self._speed_up(now, now - started)
            self._changed.notify_all()

    def _speed_up(self, now: float, latency: float) -> None:
        """After an answer: ``GROWTH`` calls more per ``limit`` answers, while the limit holds calls
        back (the call ended with it reached) and the last refusal's window has passed (or it came
        before any answer)."""
        self._latency = latency if self._latency is None else 0.9 * self._latency + 0.1 * latency
        if self._in_flight + 1 >= self._limit and now >= self._grow_from:
            self._answered += 1
            if self._answered * GROWTH >= self._limit:
                self._answered, self._limit = 0, self._limit + 1

    def _slow_down(self, now: float, retry_after: float | None) -> None:
        """After a refusal: no more calls in flight than there are now (the server took those),
        and 15% fewer, once per window (the Retry-After, else a second). Refused at one
        call at a time, the endpoint is out of its allowance: no call starts until its Retry-After."""
        if now >= self._calm_until:
            self._limit = max(1, int(min(self._limit, self._in_flight + 1) * DECREASE))
            self._calm_until = now + (retry_after or WINDOW)
            self._grow_from = self._calm_until if self._latency is not None else now
        self._limit = max(1, min(self._limit, self._in_flight))
        self._answered = 0
        if self._limit == 1 and retry_after:
            self._paused_until = max(self._paused_until, now + retry_after)

    def charge(self, tokens: int) -> None:
        """Count the tokens a call used against ``tokens_per_minute``."""
        if self._token_rate and tokens > 0:
            with self._changed:
                self._refill(time.monotonic())
                self._tokens -= tokens

    def _refill(self, now: float) -> float:
        """Refill the token bucket; the seconds until it is out of debt (0 when it is not)."""
        if not self._token_rate:
            return 0.0
        self._tokens = min(self._token_rate, self._tokens + (now - self._refilled) * self._token_rate)
        self._refilled = now
        return -self._tokens / self._token_rate if self._tokens < 0 else 0.0


class Limiters:
    """The limiters of one run, one per endpoint; thread-safe."""

    def __init__(self):
        self._limiters: dict[Hashable, Limiter] = {}
        self._lock = threading.Lock()

    def limiter(self, endpoint: Hashable, rate_limit: RateLimit | None, adaptive: bool = True) -> Limiter | None:
        """The run's limiter of ``endpoint``, made with these settings by its first caller (a later
        one's stricter settings tighten it); None while nothing is limited there."""
        found = self._limiters.get(endpoint)
        if found is None:
            if rate_limit is None and not adaptive:
                return None
            with self._lock:
                found = self._limiters.get(endpoint)
                if found is None:
                    found = self._limiters[endpoint] = Limiter(rate_limit, adaptive)
                    return found
        if (rate_limit is not None and found.rate_limit != rate_limit) or (adaptive and not found.adaptive):
            found.tighten(rate_limit, adaptive)
        return found

    def snapshot(self) -> Throttling:
        """The counters of every endpoint, added up."""
        with self._lock:
            limiters = list(self._limiters.values())
        return Throttling(sum(x.calls for x in limiters), sum(x.throttled for x in limiters),
                          sum(x.waited for x in limiters))


def since(before: Throttling, now: Throttling) -> Throttling:
    """What happened on every endpoint between the snapshots ``before`` and ``now``."""
    return Throttling(max(0, now.calls - before.calls), max(0, now.throttled - before.throttled),
                      round(max(0.0, now.waited_seconds - before.waited_seconds), 3))
