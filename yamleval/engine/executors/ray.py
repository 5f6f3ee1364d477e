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
worker process (``_task_of``, ``engine.item.processor_for``), in Ray's copy of the config's folder (its
``working_dir``, ``worker_folder``), so that the project's plugins import there.

The rate limits of every endpoint hold across the cluster, and an endpoint that cannot be
used stops the run as it does on local threads: the driver and the workers share the run's
network through one actor (``ray_shared``), the executor's ``network``.

The connection is the run's (``start``, closed by the run), or, for an experiment run by
itself, the executor's own, closed with it (``RayExecutor.close``).
"""
from __future__ import annotations

import itertools
import logging
import os
import signal
import socket
import threading
import time
from typing import Any, Callable, Sequence

from yamleval.config.ray_install import INSTALL, installed
from yamleval.engine.executors import ray_shared
from yamleval.engine.executors.core import Executor, Slot, Unit
from yamleval.records.errors import UsageError, describe_exception

__all__ = ["INSTALL", "Connection", "RayExecutor", "installed", "start"]
START_SECONDS = 120.0  # how long a task may wait to start on a worker (a free CPU, a prepared experiment)
CONNECT_SECONDS = 5.0  # how long a cluster's address may take to answer
EXCLUDED = [".git", ".yamleval", ".venv", "venv", "node_modules", "__pycache__"]  # never sent to workers


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
            # where each experiment's folder is in the workers' copy of it (``engine.item.processor_for``)
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
        self.network = ray_shared.SharedNetwork(self.state)  # the run's limiters and endpoint records
        self._closed = False

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
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


def start(experiments) -> Connection | None:
    """The run's connection to Ray, when one of ``experiments`` runs there (the run closes it);
    they must agree on the cluster and its runtime environment (set them in ``defaults``)."""
    on_ray = [e for e in experiments if e.executor.uses == "ray"]
    if not on_ray:
        return None
    first = on_ray[0].executor
    for other in on_ray[1:]:
        if (other.executor.address, other.executor.runtime_env) != (first.address, first.runtime_env):
            raise UsageError(f"experiments '{on_ray[0].id}' and '{other.id}' run on Ray with different `address`"
                             " or `runtime_env`: a run joins one cluster; set `executor:` once, in `defaults`")
    connection = Connection(first, [e.base_dir for e in on_ray])
    try:
        for experiment in on_ray:
            _check_fits(_ray(), experiment.executor.num_cpus)
    except UsageError:
        connection.close()
        raise
    return connection


# -- the task a worker runs ---------------------------------------------------------------------

def _task_of(shipped: list):
    """The task one executor's items run as: ``shipped`` holds (in a list, so that Ray hands the
    reference over unread) what runs an item and the run's network, put in Ray's object store once.
    A worker process loads a remote function once, and this one reads what it was shipped the
    first time it runs there: the experiment is prepared once per worker process, and what it
    made belongs to the executor's task, not to a module of the worker."""
    held: list = []

    def run_unit(unit: Unit, state, number: int):
        """On a worker: one item (or one repeat of one), its start told to the run's actor."""
        state.started.remote(number)
        if not held:
            import ray

            held.append(ray.get(shipped[0]))
        process, network = held[0]
        network.task, network.lost = number, None  # the rate limits it takes are released for it if it is cancelled
        result = process(unit, Slot(unit))
        if network.lost is not None:  # the item's error (if it has one) would be the cluster's, not its own
            raise network.lost
        return result

    return run_unit


class RayExecutor(Executor):
    """``Executor`` with each item a Ray task: ``record`` is called in the thread of ``run``, one
    at a time, in completion order. ``connection``: the run's; without one the executor opens
    its own, closed by ``close``.

    A task whose worker dies (its process killed, out of memory) is run once more when the
    experiment's ``retries`` allow, else its item is an error saying so. After a stop, a task
    that ends that way is dropped, not recorded: a resumed run runs its item.
    """

    WHERE = "on its Ray worker, whose task was cancelled"  # where a timed-out item was

    def __init__(self, concurrency: int, timeout: float | None, settings, retries: int, config_dir: str,
                 connection: Connection | None = None):
        super().__init__(concurrency, timeout)
        self.settings = settings
        self.retries = retries
        self._owned = connection is None
        self.connection = connection if connection is not None else Connection(settings, [config_dir])
        self.network = self.connection.network
        self._running: dict[Any, _Task] = {}
        self._numbers = itertools.count()
        self._next_look = 0.0  # when the tasks' starts are looked at next

    def close(self) -> None:
        if self._owned:
            self.connection.close()

    def _begin(self) -> None:
        self._recording.acquire()  # records in this thread, from now to the end of the run
        self._ray = _ray()
        # one pickle for both: the network the processor calls out through is the one the task tells its number
        shipped = [self._ray.put((self._process, self.network))]
        self._task = self._ray.remote(_task_of(shipped)).options(num_cpus=self.settings.num_cpus, max_retries=0)

    def _send(self, unit: Unit, tries: int = 0) -> None:
        number = next(self._numbers)
        ref = self._task.remote(unit, self.connection.state, number)
        self._running[ref] = _Task(unit, number, tries, time.monotonic())

    def _wait(self, seconds: float) -> bool:
        try:
            return self._step(seconds)
        except ray_shared.StateLost as exc:  # the run cannot go on: what runs is dropped, what finished kept
            self.failure = exc
            return True

    def _step(self, seconds: float) -> bool:
        """Keep the cluster's tasks full, record what finished; whether every item is done."""
        while self._taking and len(self._running) < self.concurrency and (units := self._read(1)):
            self._send(units[0])
        if not self._running:
            return True
        ray = self._ray
        done, rest = ray.wait(list(self._running), num_returns=1, timeout=seconds)
        if done and rest:  # and whatever else has finished meanwhile
            done += ray.wait(rest, num_returns=len(rest), timeout=0)[0]
        gone = None  # the run's actor, found gone: what has finished is recorded first
        try:
            self._note_starts()
        except ray_shared.StateLost as exc:
            gone = exc
        for ref in done:
            try:
                self._collect(self._running.pop(ref), ref)
            except ray_shared.StateLost as exc:
                gone = gone or exc
        if gone is not None:
            raise gone
        self._give_up_late()
        return False

    def _end(self) -> None:
        try:
            for ref, task in self._running.items():
                self._cancel(ref, task)
            self._running.clear()
        finally:
            self._recording.release()

    def _keep(self, done) -> None:
        super()._keep(done)
        if isinstance(self.failure, ray_shared.StateLost):  # the run's actor is gone: nothing more runs
            raise self.failure

    def _cancel(self, ref, task: "_Task") -> None:
        """Cancel a task (its worker killed) and release the rate limits it held."""
        self._ray.cancel(ref, force=True)
        self.connection.state.forget.remote(task.number)

    def _note_starts(self) -> None:
        """Learn which tasks have started, as often as the timeouts need (a tenth of one, at
        most every second): each look is a call to the actor that keeps them."""
        now = time.monotonic()
        if now < self._next_look or all(task.started is not None for task in self._running.values()):
            return
        self._next_look = now + min(1.0, (self.timeout or 10.0) / 10)
        started = set(self.network.get(self.connection.state.take_started.remote()))
        if started:
            now = time.monotonic()
            for task in self._running.values():
                if task.number in started:
                    task.started = now

    def _collect(self, task: "_Task", ref) -> None:
        """Record what the finished ``task`` gave, or why it gave nothing."""
        ray = self._ray
        now = time.monotonic()
        elapsed = now - (task.started or now)
        try:
            result = ray.get(ref)
        except (ray.exceptions.WorkerCrashedError, ray.exceptions.NodeDiedError, ray.exceptions.LocalRayletDiedError,
                ray.exceptions.OutOfMemoryError) as exc:
            self.connection.state.forget.remote(task.number)  # the rate limits it held
            if self._stop is not None and self._stop.is_set():
                return  # stopping: dropped, so a resumed run runs it
            if task.tries < min(1, self.retries):
                self._send(task.unit, task.tries + 1)
                return
            why = f"the Ray worker running it died ({_cause(exc)})" + (
                ", and again when it ran once more" if task.tries else
                "; with `retries` above 0 it runs once more" if not self.retries else "")
            self._keep(self._lost(task.unit, why, elapsed * 1000.0))
            return
        except ray.exceptions.RayError as exc:  # cancelled by someone else, its arguments unreadable, ...
            cause = getattr(exc, "cause", None)
            if isinstance(cause, ray_shared.StateLost):  # not the item's failure: it is not recorded
                raise ray_shared.StateLost(cause.message) from None
            self.connection.state.forget.remote(task.number)
            self._keep(self._lost(task.unit, f"on its Ray worker: {_cause(exc)}", elapsed * 1000.0))
            return
        self._keep(self._in_time(task.unit, result, elapsed, lambda: self.WHERE))

    def _give_up_late(self) -> None:
        """Cancel the tasks past their timeout, and those that could not start for too long."""
        now = time.monotonic()
        for ref, task in list(self._running.items()):
            if task.started is not None and self._overdue(now - task.started):
                lost = self._late(task.unit, self.WHERE, now - task.started)
            elif task.started is None and now - task.sent >= START_SECONDS + (self.timeout or 0):
                lost = self._lost(task.unit, f"did not start on a Ray worker within"
                                             f" {START_SECONDS + (self.timeout or 0):g}s (no free CPU for it, or a"
                                             " worker that cannot prepare the experiment)", 0.0)
            else:
                continue
            del self._running[ref]
            self._cancel(ref, task)
            self._keep(lost)


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
