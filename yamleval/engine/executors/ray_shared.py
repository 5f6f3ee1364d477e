"""What the processes of a run on Ray share, kept in one actor (``RunState``) that they ask:

- the run's network (``yamleval.calls.Network``): one limiter per endpoint for the whole cluster,
  not one per worker, and how the requests to each endpoint ended (an endpoint that cannot be
  used stops the run early, as on local threads);
- which tasks have started on a worker (``ray``'s timeouts count from then).

The driver and every worker reach it through a ``SharedNetwork``: the face of the run's
network, each call asked of the actor. In a worker there is one per executor's task function
(``ray._task_of``), which knows the task it runs (its rate limits are released for it if it is cancelled) and
whether it found the actor gone (``lost``).
"""
from __future__ import annotations

import os
import threading

from yamleval.calls.network import Network
from yamleval.records.errors import YamlevalError, describe_exception
from yamleval.records.types import Throttling

ROOT_VARIABLE = "YAMLEVAL_WORKING_DIR"  # the workers' working_dir as the driver knows it: a path, no secret


class RunState:
    """The actor. Threaded: a call waiting for its turn at a rate limit holds up no other."""

    def __init__(self):
        self._network = Network()
        self._started: list[int] = []
        self._held: dict[int, list[tuple]] = {}  # task number -> the (limiter key, start) it holds
        self._lock = threading.Lock()

    # rate limits
    def acquire(self, key: tuple, number: int | None) -> float:
        started = self._network.limiter(*key).acquire()
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
        self._network.limiter(*key).release(started, status, retry_after)

    def forget(self, number: int) -> None:
        """Task ``number`` was cancelled or its worker died: release what it held (no reply)."""
        with self._lock:
            held = self._held.pop(number, [])
        for key, started in held:
            self._network.limiter(*key).release(started, None)

    def charge(self, key: tuple, tokens: int) -> None:
        self._network.limiter(*key).charge(tokens)

    def throttling(self):
        return self._network.throttling()

    # endpoints
    def ended(self, key, shown: str, where: dict, lasting: str | None) -> None:
        self._network.endpoint(key, shown, **where).ended(lasting)

    def endpoint_counts(self):
        return self._network.snapshot()

    def unusable(self, before, first: int):
        return self._network.unusable(before, first)

    def unreachable(self, before):
        return self._network.unreachable(before)

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


def first_line(exc: BaseException) -> str:
    """The first line of what Ray says of a failure, without its boilerplate."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else describe_exception(exc)


class SharedNetwork:
    """The run's network as a process of the cluster uses it: the face of ``yamleval.calls.Network``,
    every call asked of the run's actor. ``task``: the task this worker runs now (None on the
    driver); ``lost``: set when this process finds the actor gone."""

    def __init__(self, actor):
        self.actor = actor
        self.task: int | None = None
        self.lost: StateLost | None = None

    def __getstate__(self):  # sent to a worker: the run's actor, nothing of this process
        return {"actor": self.actor}

    def __setstate__(self, state):
        self.__init__(state["actor"])

    def get(self, ref):
        """``ray.get`` of a call to the run's actor; StateLost when the actor is gone or out of reach
        (the answer to a call is kept as it came: asking for it again gives the same)."""
        import ray

        try:
            return ray.get(ref)
        except ray.exceptions.RayActorError as exc:
            why = first_line(exc).rstrip(".")
            self.lost = StateLost(why[:1].lower() + why[1:])
            raise self.lost from None

    def session(self):
        """This thread's pooled HTTP session (``Network.session``): kept by the proxy, one per worker thread."""
        import threading

        if "_sessions" not in self.__dict__:
            self._sessions = threading.local()
        session = getattr(self._sessions, "session", None)
        if session is None:
            from yamleval.calls import transport

            session = self._sessions.session = transport.open_session()
        return session

    def limiter(self, endpoint, rate_limit, adaptive: bool = True) -> "_SharedLimiter | None":
        if rate_limit is None and not adaptive:
            return None  # as Network.limiter: nothing is limited
        return _SharedLimiter(self, (endpoint, rate_limit, adaptive))

    def endpoint(self, key, shown: str, **where) -> "_SharedEndpoint":
        return _SharedEndpoint(self.actor, key, shown, where)

    def throttling(self) -> Throttling:
        try:
            return self.get(self.actor.throttling.remote())
        except StateLost:
            return Throttling()  # the counts were the actor's: the run says it was lost

    def snapshot(self):
        try:
            return self.get(self.actor.endpoint_counts.remote())
        except StateLost:
            return {}  # the records were the actor's: the run says it was lost

    def unusable(self, before, first: int):
        return self.get(self.actor.unusable.remote(before, first))

    def unreachable(self, before):
        return self.get(self.actor.unreachable.remote(before))


class _SharedLimiter:
    """One endpoint's limiter, used as a ``limits.Limiter`` is."""

    def __init__(self, network: SharedNetwork, key: tuple):
        self.network, self.key = network, key

    def acquire(self) -> float:
        return self.network.get(self.network.actor.acquire.remote(self.key, self.network.task))

    def release(self, started: float, status, retry_after=None) -> None:
        self.network.get(self.network.actor.release.remote(self.key, started, status, retry_after, self.network.task))

    def charge(self, tokens: int) -> None:
        self.network.actor.charge.remote(self.key, tokens)


class _SharedEndpoint:
    """One endpoint's record, used as a ``health.Endpoint`` is."""

    def __init__(self, actor, key, shown: str, where: dict):
        self.actor, self.key, self.shown, self.where = actor, key, shown, where

    def ended(self, lasting: str | None) -> None:
        self.actor.ended.remote(self.key, self.shown, self.where, lasting)
