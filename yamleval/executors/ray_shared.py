"""What the processes of a run on Ray share, kept in one actor (``RunState``) that they ask:

- every endpoint's rate limiter (``throttle``): one limiter per endpoint for the whole cluster,
  not one per worker;
- how the requests to each endpoint ended (``endpoints``): an endpoint that cannot be used stops
  the run early, as on local threads;
- which tasks have started on a worker (``ray_executor``'s timeouts count from then).

The driver and every worker hand ``SharedLimiters`` to ``throttle.share`` and
``SharedEndpoints`` to ``endpoints.share``; both ask the actor.
"""
from __future__ import annotations

import os
import threading

from yamleval.net import health as endpoints
from yamleval.net import limits as throttle
from yamleval.records.errors import YamlevalError, describe_exception
from yamleval.records.types import Throttling

ROOT_VARIABLE = "YAMLEVAL_WORKING_DIR"  # the workers' working_dir as the driver knows it: a path, no secret
task_number: int | None = None  # in a worker: the task it runs (``ray_executor._run_unit``)


class RunState:
    """The actor. Threaded: a call waiting for its turn at a rate limit holds up no other."""

    def __init__(self):
        self._started: list[int] = []
        self._held: dict[int, list[tuple]] = {}  # task number -> the (limiter key, start) it holds
        self._lock = threading.Lock()

    # throttle
    def acquire(self, key: tuple, number: int | None) -> float:
        started = throttle.limiter(*key).acquire()
        with self._lock:
            self._held.setdefault(number, []).append((key, started))
        return started

    def release(self, key: tuple, started: float, status, retry_after, number: int | None) -> None:
        with self._lock:
            held = self._held.get(number, [])
            if (key, started) not in held:
                return  # released already: its task was cancelled
            held.remove((key, started))
            if not held:
                self._held.pop(number, None)
        throttle.limiter(*key).release(started, status, retry_after)

    def forget(self, number: int) -> None:
        """Task ``number`` was cancelled or its worker died: release what it held (no reply)."""
        with self._lock:
            held = self._held.pop(number, [])
        for key, started in held:
            throttle.limiter(*key).release(started, None)

    def charge(self, key: tuple, tokens: int) -> None:
        throttle.limiter(*key).charge(tokens)

    def throttling(self):
        return throttle.snapshot()

    # endpoints
    def ended(self, key, shown: str, where: dict, lasting: str | None) -> None:
        endpoints.endpoint(key, shown, **where).ended(lasting)

    def endpoint_counts(self):
        return endpoints.snapshot()

    def unusable(self, before, first: int):
        return endpoints.unusable(before, first)

    # the tasks' starts
    def started(self, number: int) -> None:
        with self._lock:
            self._started.append(number)

    def take_started(self) -> list[int]:
        with self._lock:
            taken, self._started = self._started, []
        return taken


def worker_folder(base_dir: str) -> str:
    """Where a folder of the driver's (an experiment's) is in this worker's copy of the working
    dir: the same place relative to it; the copy itself when Ray was given a working_dir of
    the user's own."""
    root = os.environ.get(ROOT_VARIABLE)
    if not root:
        return os.getcwd()
    return os.path.normpath(os.path.join(os.getcwd(), os.path.relpath(base_dir, root)))


def start(ray):
    """The actor of a run, on the driver's node (it lives as long as the driver does)."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
    return ray.remote(RunState).options(num_cpus=0, max_concurrency=1000, scheduling_strategy=here).remote()


class StateLost(YamlevalError):
    """The run's actor is gone (its process killed, its node lost), and with it the rate limits,
    endpoint records and task starts it kept: the run cannot go on (exit 3). ``message``: Ray's
    cause, the only argument, so that the error travels from a worker to the driver."""

    def format_message(self) -> str:
        return (f"could not evaluate: the run's state on the Ray cluster (its rate limits and the starts of its"
                f" tasks) was lost: {self.message}. The run stopped early: the items that finished are stored"
                " and reported; run it again to evaluate the rest")


lost: StateLost | None = None  # set when this process finds the actor gone; ``ray_executor._run_unit`` asks


def first_line(exc: BaseException) -> str:
    """The first line of what Ray says of a failure, without its boilerplate."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else describe_exception(exc)


def get(ref):
    """``ray.get`` of a call to the run's actor; StateLost when the actor is gone or out of reach
    (the answer to a call is kept as it came: asking for it again gives the same)."""
    import ray

    global lost
    try:
        return ray.get(ref)
    except ray.exceptions.RayActorError as exc:
        why = first_line(exc).rstrip(".")
        lost = StateLost(why[:1].lower() + why[1:])
        raise lost from None


class SharedLimiters:
    """``throttle.share``'s object: the limiters the actor keeps."""

    def __init__(self, actor):
        self.actor = actor

    def limiter(self, endpoint, rate_limit, adaptive: bool) -> "_SharedLimiter | None":
        if rate_limit is None and not adaptive:
            return None  # as throttle.limiter: nothing is limited
        return _SharedLimiter(self.actor, (endpoint, rate_limit, adaptive))

    def snapshot(self):
        try:
            return get(self.actor.throttling.remote())
        except StateLost:
            return Throttling()  # the counts were the actor's: the run says it was lost


class _SharedLimiter:
    """One endpoint's limiter, used as a ``throttle.Limiter`` is."""

    def __init__(self, actor, key: tuple):
        self.actor, self.key = actor, key

    def acquire(self) -> float:
        return get(self.actor.acquire.remote(self.key, task_number))

    def release(self, started: float, status, retry_after=None) -> None:
        get(self.actor.release.remote(self.key, started, status, retry_after, task_number))

    def charge(self, tokens: int) -> None:
        self.actor.charge.remote(self.key, tokens)


class SharedEndpoints:
    """``endpoints.share``'s object: the records of the endpoints the actor keeps."""

    def __init__(self, actor):
        self.actor = actor

    def endpoint(self, key, shown: str, **where) -> "_SharedEndpoint":
        return _SharedEndpoint(self.actor, key, shown, where)

    def snapshot(self):
        try:
            return get(self.actor.endpoint_counts.remote())
        except StateLost:
            return {}  # the records were the actor's: the run says it was lost

    def unusable(self, before, first: int):
        return get(self.actor.unusable.remote(before, first))


class _SharedEndpoint:
    """One endpoint's record, used as an ``endpoints.Endpoint`` is."""

    def __init__(self, actor, key, shown: str, where: dict):
        self.actor, self.key, self.shown, self.where = actor, key, shown, where

    def ended(self, lasting: str | None) -> None:
        self.actor.ended.remote(self.key, self.shown, self.where, lasting)
