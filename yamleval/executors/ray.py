"""Run items on a Ray cluster (``executor: {uses: ray}``): each item, runner and scorers, is a
task on a worker; everything else stays with this process, the driver.

The driver reads the dataset, keeps at most ``concurrency`` tasks in flight (Ray starts as
many at once as the cluster's CPUs hold, ``num_cpus`` each), gives up on a task past its
timeout (cancelled: the item is an error saying so), and records each result as it finishes:
the store, resume, reports and exit codes are the run's, as with local threads. An item's
timeout counts from when its task starts on a worker (told to ``ray_shared.RunState``), not
from when it was sent: a worker still starting, or preparing the experiment, costs the item
none of its time.

A worker gets the experiment as a task argument held in Ray's object store (with the values of
its ``${VAR}``, which never go into the runtime environment or a log), prepares it once per
worker process (``engine._processor_for``), in Ray's copy of the config's folder (its
``working_dir``), so that the project's plugins import there.

The rate limits of every endpoint hold across the cluster, and an endpoint that cannot be
used stops the run as it does on local threads: the driver and the workers share them
through one actor (``ray_shared``).
"""
from __future__ import annotations

import atexit
import importlib.util
import logging
import os
import signal
import socket
import threading
import time
from typing import Any, Callable, Iterator, Sequence

from yamleval.net import health as endpoints
from yamleval.executors import ray_shared
from yamleval.net import limits as throttle
from yamleval.records.errors import UsageError, describe_exception
from yamleval.executors.local import POLL_SECONDS, LostResult, Slot, Unit

INSTALL = "pip install 'yamleval[ray]'"
START_SECONDS = 120.0  # how long a task may wait to start on a worker (a free CPU, a prepared experiment)
CONNECT_SECONDS = 5.0  # how long a cluster's address may take to answer
EXCLUDED = [".git", ".yamleval", ".venv", "venv", "node_modules", "__pycache__"]  # never sent to workers


def installed() -> bool:
    return importlib.util.find_spec("ray") is not None


def _ray():
    if not installed():
        raise UsageError(f"the ray executor needs Ray, which is not installed: {INSTALL}")
    import ray

    return ray


# -- the connection to the cluster, for a run ---------------------------------------------------

class Connection:
    """This process's connection to a Ray cluster for a run: started (a local instance, without
    an address) or joined (``auto`` or host:port); ``close`` ends what it started and leaves
    a joined cluster running."""

    def __init__(self, settings, config_dirs: Sequence[str]):
        """``config_dirs``: the folders of the experiments' files; their common folder is the
        workers' ``working_dir`` unless ``runtime_env`` names one."""
        ray = _ray()
        self.address = settings.address
        self.owned = not ray.is_initialized()  # else the caller's own connection: it stays theirs
        env = dict(settings.runtime_env)
        if "working_dir" not in env:
            env["working_dir"] = os.path.commonpath([os.path.abspath(d) for d in config_dirs])
            # where each experiment's folder is in the workers' copy of it (``engine._processor_for``)
            env["env_vars"] = {**env.get("env_vars", {}), ray_shared.ROOT_VARIABLE: env["working_dir"]}
        env["excludes"] = [*EXCLUDED, *env.get("excludes", [])]
        try:
            if self.owned:
                _reachable(settings.address)
                handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
                ray.init(address=settings.address, runtime_env=env, include_dashboard=False, log_to_driver=False,
                         logging_level=logging.WARNING, configure_logging=False)
                if threading.current_thread() is threading.main_thread():
                    for sig, handler in handlers.items():  # Ray's own SIGTERM handler would end the run at once
                        signal.signal(sig, handler)
        except (ConnectionError, RuntimeError, ValueError, TimeoutError, OSError) as exc:
            why = describe_exception(exc).rstrip(".")
            raise UsageError(f"cannot {_joining(settings.address)}: {why}; start one with `ray start --head`"
                             " and give its address (`executor.address`, `--ray-address`), or"
                             " leave the address out to run on this machine") from None
        self.state = ray_shared.start(ray)
        throttle.share(ray_shared.SharedLimiters(self.state))  # the experiments' figures are the cluster's
        endpoints.share(ray_shared.SharedEndpoints(self.state))
        self._closed = False

    def close(self) -> None:
        global _current
        if self._closed:
            return
        self._closed = True
        throttle.share(None)
        endpoints.share(None)
        if _current is self:
            _current = None
        import ray

        if self.owned:
            ray.shutdown()  # a joined cluster goes on running: this only lets it go
        else:
            ray.kill(self.state)  # the connection stays the caller's; this run's state goes


def _joining(address: str | None) -> str:
    return f"join the Ray cluster at {address}" if address else "start a local Ray instance"


def _reachable(address: str | None) -> None:
    """Fail at once when a host:port address does not answer (Ray itself would retry it for
    minutes); ``auto``, none or a ``ray://`` one are Ray's to find."""
    host, colon, port = (address or "").rpartition(":")
    if not colon or not port.isdigit() or "://" in address or not host:
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_SECONDS).close()
    except OSError as exc:
        raise ConnectionError(f"nothing answers at {address} ({exc.strerror or exc})") from None


_current: Connection | None = None  # Ray's connection is one per process, as ``ray.init`` makes it
_opening = threading.Lock()


def start(experiments) -> Connection | None:
    """The run's connection to Ray, when one of ``experiments`` runs there; they must agree on
    the cluster and its runtime environment (set them in ``defaults``)."""
    global _current
    on_ray = [e for e in experiments if e.executor.uses == "ray"]
    if not on_ray:
        return None
    first = on_ray[0].executor
    for other in on_ray[1:]:
        if (other.executor.address, other.executor.runtime_env) != (first.address, first.runtime_env):
            raise UsageError(f"experiments '{on_ray[0].id}' and '{other.id}' run on Ray with different `address`"
                             " or `runtime_env`: a run joins one cluster; set `executor:` once, in `defaults`")
    with _opening:
        if _current is not None:
            return None  # another caller's: it ends it
        _current = Connection(first, [e.base_dir for e in on_ray])
    try:
        for experiment in on_ray:
            _check_fits(_ray(), experiment.executor.num_cpus)
    except UsageError:
        _current.close()
        raise
    return _current


def current(settings, config_dir: str) -> Connection:
    """The connection of the run under way, or one made now that ends with the process (an
    experiment run by itself through ``yamleval.api.run_experiment``)."""
    global _current
    with _opening:
        if _current is None:
            _current = Connection(settings, [config_dir])
            atexit.register(_current.close)
        return _current


# -- the task a worker runs ---------------------------------------------------------------------

def _run_unit(process: Callable, unit: Unit, state, number: int):
    """On a worker: one item (or one repeat of one) through the experiment's processor (made in
    this process as Ray handed it over), its start told to the run's shared state."""
    from yamleval.engine import experiment as engine

    state.started.remote(number)
    shared = throttle.shared()
    if shared is None or shared.actor != state:  # this run's, not an earlier run's on the same connection
        throttle.share(ray_shared.SharedLimiters(state))
        endpoints.share(ray_shared.SharedEndpoints(state))
    ray_shared.task_number = number  # the rate limits it takes are released for it if it is cancelled
    ray_shared.lost = None
    try:
        result = process(unit, Slot(unit))
    finally:
        engine.flush_sent()  # the worker may end at any time: what the cache keeps is written now
    if ray_shared.lost is not None:  # the item's error (if it has one) would be the cluster's, not its own
        raise ray_shared.lost
    return result


class RayExecutor:
    """``LocalExecutor``'s interface, items run as Ray tasks: ``run`` returns once every item is
    recorded (``record`` is called in this thread, one at a time, in completion order).

    A task whose worker dies (its process killed, out of memory) is run once more when the
    experiment's ``retries`` allow, else its item is an error saying so. After a stop, a task
    that ends that way is dropped, not recorded: a resumed run runs its item.
    """

    def __init__(self, concurrency: int, timeout: float | None, settings, retries: int, config_dir: str):
        self.concurrency = max(1, int(concurrency))
        self.config_dir = config_dir
        self.timeout = timeout
        self.settings = settings
        self.retries = retries
        self.failure: BaseException | None = None
        self.recording = threading.Lock()
        self._taking = True
        self._next_look = 0.0  # when the tasks' starts are looked at next

    def halt(self) -> None:
        self._taking = False

    def run(self, items: Iterator[Unit], process: Callable, record: Callable[[Any], None], lost: LostResult,
            stop: threading.Event | None = None, abandon: threading.Event | None = None) -> None:
        ray = _ray()
        connection = current(self.settings, self.config_dir)
        task = ray.remote(_run_unit).options(num_cpus=self.settings.num_cpus, max_retries=0)
        shipped = ray.put(process)
        running: dict[Any, _Task] = {}
        numbers = iter(range(1 << 62))

        def send(unit: Unit, tries: int = 0) -> None:
            number = next(numbers)
            running[task.remote(shipped, unit, connection.state, number)] = _Task(unit, number, tries, time.monotonic())

        with self.recording:
            try:
                self._go(ray, connection, items, record, lost, stop, abandon, running, send)
            except ray_shared.StateLost as exc:  # the run cannot go on: what runs is dropped, what finished kept
                self.failure = exc
            finally:
                for ref, cancelled in running.items():
                    self._cancel(ray, connection, ref, cancelled)

    def _go(self, ray, connection: Connection, items: Iterator[Unit], record, lost: LostResult, stop, abandon,
            running: dict, send: Callable) -> None:
        """Keep ``running`` full from ``items`` and record what finishes, until every item is
        recorded, or the run stops or is abandoned."""
        exhausted = False
        while True:
            stopping = (stop is not None and stop.is_set()) or (abandon is not None and abandon.is_set())
            while self._taking and not stopping and not exhausted and len(running) < self.concurrency:
                try:
                    unit = next(items)
                except StopIteration:
                    exhausted = True
                    break
                except Exception as exc:  # a broken dataset row or plugin: stop reading; what runs finishes
                    self.failure, exhausted = exc, True
                    break
                send(unit)
            if not running:
                return
            if abandon is not None and abandon.is_set():
                return  # what runs is cancelled, its results dropped: a resumed run runs them
            done, rest = ray.wait(list(running), num_returns=1, timeout=POLL_SECONDS)
            if done and rest:  # and whatever else has finished meanwhile
                done += ray.wait(rest, num_returns=len(rest), timeout=0)[0]
            gone = None  # the run's actor, found gone: what has finished is recorded first
            try:
                self._note_starts(ray, connection, running)
            except ray_shared.StateLost as exc:
                gone = exc
            for ref in done:
                try:
                    self._finished(ray, connection, running.pop(ref), ref, record, lost, stop, send)
                except ray_shared.StateLost as exc:
                    gone = gone or exc
            if gone is not None:
                raise gone
            self._give_up_late(ray, connection, running, record, lost)

    @staticmethod
    def _cancel(ray, connection: Connection, ref, task: "_Task") -> None:
        """Cancel a task (its worker killed) and release the rate limits it held."""
        ray.cancel(ref, force=True)
        connection.state.forget.remote(task.number)

    def _note_starts(self, ray, connection: Connection, running: dict) -> None:
        """Learn which tasks have started, as often as the timeouts need (a tenth of one, at
        most every second): each look is a call to the actor that keeps them."""
        now = time.monotonic()
        if now < self._next_look or all(task.started is not None for task in running.values()):
            return
        self._next_look = now + min(1.0, (self.timeout or 10.0) / 10)
        started = set(ray_shared.get(connection.state.take_started.remote()))
        if started:
            now = time.monotonic()
            for task in running.values():
                if task.number in started:
                    task.started = now

    def _finished(self, ray, connection: Connection, task: "_Task", ref, record, lost, stop, send) -> None:
        now = time.monotonic()
        elapsed = now - (task.started or now)
        try:
            result = ray.get(ref)
        except (ray.exceptions.WorkerCrashedError, ray.exceptions.NodeDiedError, ray.exceptions.LocalRayletDiedError,
                ray.exceptions.OutOfMemoryError) as exc:
            connection.state.forget.remote(task.number)  # the rate limits it held
            if stop is not None and stop.is_set():
                return  # stopping: dropped, so a resumed run runs it
            if task.tries < min(1, self.retries):
                send(task.unit, task.tries + 1)
                return
            why = f"the Ray worker running it died ({_cause(exc)})" + (
                ", and again when it ran once more" if task.tries else
                "; with `retries` above 0 it runs once more" if not self.retries else "")
            record(lost(task.unit, why, elapsed * 1000.0))
            return
        except ray.exceptions.RayError as exc:  # cancelled by someone else, its arguments unreadable, ...
            cause = getattr(exc, "cause", None)
            if isinstance(cause, ray_shared.StateLost):  # not the item's failure: it is not recorded
                raise ray_shared.StateLost(cause.message) from None
            connection.state.forget.remote(task.number)
            record(lost(task.unit, f"on its Ray worker: {_cause(exc)}", elapsed * 1000.0))
            return
        if self.timeout and elapsed >= self.timeout:  # late, though not seen late yet
            result = lost(task.unit, self._timed_out(), elapsed * 1000.0)
        record(result)

    def _give_up_late(self, ray, connection: Connection, running: dict, record, lost) -> None:
        """Cancel the tasks past their timeout, and those that could not start for too long."""
        now = time.monotonic()
        for ref, task in list(running.items()):
            if task.started is not None and self.timeout and now - task.started >= self.timeout:
                why, elapsed = self._timed_out(), now - task.started
            elif task.started is None and now - task.sent >= START_SECONDS + (self.timeout or 0):
                why, elapsed = (f"did not start on a Ray worker within {START_SECONDS + (self.timeout or 0):g}s"
                                " (no free CPU for it, or a worker that cannot prepare the experiment)"), 0.0
            else:
                continue
            del running[ref]
            self._cancel(ray, connection, ref, task)
            record(lost(task.unit, why, elapsed * 1000.0))

    def _timed_out(self) -> str:
        return f"timed out after {self.timeout:g}s (on its Ray worker, whose task was cancelled)"


class _Task:
    """An item sent to the cluster: its unit, its number (its start is told by it), the tries
    before it, when it was sent and when it started on a worker (``time.monotonic``; None: not yet)."""

    __slots__ = ("unit", "number", "tries", "sent", "started")

    def __init__(self, unit: Unit, number: int, tries: int, sent: float):
        self.unit, self.number, self.tries, self.sent, self.started = unit, number, tries, sent, None


def _check_fits(ray, num_cpus: float) -> None:
    """A task that needs more CPUs than any node of the cluster has would wait forever."""
    most = max((node.get("Resources", {}).get("CPU", 0.0) for node in ray.nodes() if node.get("Alive")), default=0.0)
    if num_cpus > most:
        raise UsageError(f"`executor.num_cpus` is {num_cpus:g}, but no node of the Ray cluster has more than"
                         f" {most:g} CPUs: an item would never start; ask for {most:g} or fewer")


def _cause(exc: BaseException) -> str:
    """The first line of what Ray says of a failed task, without its boilerplate."""
    cause = getattr(exc, "cause", None)
    if isinstance(cause, BaseException) and not isinstance(cause, type(exc)):
        return describe_exception(cause)
    return ray_shared.first_line(exc)
