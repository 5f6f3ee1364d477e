"""report.html, junit.xml and summary.md written by a second process while the items run.

The second process reads the items from the results database as they are stored, in
dataset order, and renders each experiment's part of those reports into a temporary file
(unnamed: nothing is left behind if it is killed). When the run ends it is sent the run's
summaries: it reads the items stored since, writes each report whole (header, the parts
rendered already, the rest) and answers. Meanwhile this process writes results.json.
On a machine with a second CPU the reports cost the run almost nothing at the end; the
bytes are those one pass over the stored run gives (``yamleval report``).
"""
from __future__ import annotations

import importlib
import json
import os
import pickle
import signal
import sqlite3
import tempfile
import sys
import threading
import time
from typing import IO, Any, Sequence

from yamleval.records import item_from_record
from yamleval.reporting import FORMATS
from yamleval.reporting.files import Named, atomic_output
from yamleval.types import ExperimentResult, RunInfo

POLL_SECONDS = 0.01  # items complete out of order: a gap in positions usually closes within milliseconds
BATCH = 2000  # rows read at once


class ChildLost(Exception):
    """The second process ended (or was not ready) without answering: write the reports here."""


class LiveReports:
    """The second process, from this side: start it, then ``send`` the run's results and
    ``wait`` for its answer. Messages are pickled over two pipes. With ``fork`` it is a fork
    of this process, which has everything but the renderers loaded already; else a plain
    ``python -m yamleval.reporting.live``, which loads only what rendering needs."""

    def __init__(self, names: Sequence[str], fork: bool = False):
        """Start the process: it loads what rendering needs, then waits for ``begin``.
        ``fork`` only where ``forkable()`` and no database is open (SQLite's state must not
        be copied into a process that opens the same database)."""
        self.names = list(names)
        self.begun = False
        self.ready = threading.Event()
        self.answered = threading.Event()
        self.answer: Any = _LOST
        self.closing = False
        if fork:
            self.process: Any = _Fork()
        else:
            import subprocess

            self.process = subprocess.Popen([sys.executable, "-m", "yamleval.reporting.live"], stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        threading.Thread(target=self._listen, name="yamleval-reports", daemon=True).start()

    def begin(self, store_uri: str, run_id: str, experiments: Sequence[tuple[str, Sequence[str]]],
              directory: str) -> None:
        """Start rendering this run's items as they are stored; ``store_uri`` opens the database
        for reading as the store itself does (``Store.reading``: read-only stores too)."""
        self.begun = True
        self._send({"store": store_uri, "run_id": run_id,
                    "experiments": [(e, list(s)) for e, s in experiments], "directory": os.path.abspath(directory),
                    "names": self.names, "parent": os.getpid()})

    def _send(self, message: Any) -> None:
        try:
            pickle.dump(message, self.process.stdin)
            self.process.stdin.flush()
        except (OSError, ValueError):
            pass  # it is gone; ``wait`` says so

    def _listen(self) -> None:
        """Take the process's messages: ``ready``, a ``put`` before each report it puts in
        place (answered ``go`` while this process is alive and not stopping), then its answer."""
        try:
            if pickle.load(self.process.stdout) == "ready":
                self.ready.set()
                while (message := pickle.load(self.process.stdout)) == _PUT:
                    self._send("stop" if self.closing else "go")
                self.answer = message
        except Exception:
            pass
        self.answered.set()

    def send(self, run: RunInfo, results: Sequence[ExperimentResult], patient: bool = False) -> bool:
        """Tell the second process the run is over, so it writes the reports now. False (and the
        process is stopped) if it has not started to render yet, unless ``patient``: for a run
        that ended early, writing them here is sooner."""
        if not self.begun:
            self.close()
            return False
        if patient:  # until it is ready, or gone
            deadline = time.monotonic() + 30
            while not (self.ready.wait(0.02) or self.answered.is_set()) and time.monotonic() < deadline:
                pass
        if not self.ready.is_set():
            self.close()
            return False
        self._send((run, list(results)))
        return True

    def wait(self) -> str | None:
        """The second process's answer: None when its reports are written, else the error's
        message. ChildLost if it ended without one."""
        self.answered.wait()
        self.close()
        if self.answer is _LOST:
            raise ChildLost()
        return self.answer

    def close(self) -> None:
        self.closing = True
        if self.process.poll() is None and not self.answered.is_set():
            self.process.kill()
        for stream in (self.process.stdin, self.process.stdout):
            try:
                stream.close()
            except OSError:
                pass
        self.process.wait()


_LOST = object()
_PUT = "put"  # from the second process: may a finished report be put in place?


def forkable() -> bool:
    """Whether the second process can be a fork of this one: on Linux, with no other thread."""
    return sys.platform.startswith("linux") and threading.active_count() == 1


class _Fork:
    """The second process as a fork of this one, with the few methods of ``subprocess.Popen``
    that ``LiveReports`` uses. It starts in about a millisecond, where a new interpreter takes
    a tenth of a second to import what it needs, which on a short run is most of the time it
    has. Forking is safe when nothing else runs (no other thread could hold a lock) and no
    database is open; the child touches nothing of this process's but the two pipes (not its
    buffered output or its exit handlers: it ends by ``os._exit``)."""

    def __init__(self) -> None:
        down, to_child = os.pipe()
        from_child, up = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # the child
            try:
                os.close(to_child)
                os.close(from_child)
                null = os.open(os.devnull, os.O_RDWR)
                for fd in (0, 1, 2):
                    os.dup2(null, fd)
                serve(open(down, "rb"), open(up, "wb"))
            finally:
                os._exit(0)
        os.close(down)
        os.close(up)
        self.stdin, self.stdout = open(to_child, "wb"), open(from_child, "rb")
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def kill(self) -> None:
        if self.poll() is None:
            os.kill(self.pid, signal.SIGKILL)

    def wait(self) -> int:
        if self.returncode is None:
            _, status = os.waitpid(self.pid, 0)
            self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode


# --- the second process ---------------------------------------------------------------------

class _Experiment:
    """One experiment's parts, rendered as its items are stored."""

    def __init__(self, experiment_id: str, scorer_ids: Sequence[str], names: Sequence[str], directory: str):
        self.experiment_id, self.next = experiment_id, 0
        self.files: dict[str, IO[str] | None] = {}
        self.outs: list[Named] = []  # the part files, as writes that name their report when they fail
        self.bodies = {}
        for name in names:
            module = FORMATS[name].load()
            if name == "markdown":
                self.files[name], self.bodies[name] = None, module.Body()
                continue
            file = tempfile.TemporaryFile("w+", encoding="utf-8", newline="\n", dir=directory)
            self.files[name] = file
            out = Named(file, os.path.join(directory, module.FILE_NAME))
            self.outs.append(out)
            self.bodies[name] = module.Body(out, scorer_ids) if name == "html" else module.Body(out, experiment_id)

    def catch_up(self, db: sqlite3.Connection, run_id: str, whole: bool) -> None:
        """Render the items stored since last time: only an unbroken run of positions while
        items may still come (a missing one may yet be stored), every one at the end."""
        bodies = list(self.bodies.values())
        while True:
            rows = db.execute("SELECT position, record FROM items WHERE run_id = ? AND experiment_id = ?"
                              " AND position >= ? ORDER BY position LIMIT ?",
                              (run_id, self.experiment_id, self.next, BATCH)).fetchall()
            for position, text in rows:
                if position != self.next and not whole:
                    return
                item = item_from_record(json.loads(text))
                for body in bodies:
                    body.item(item)
                self.next = position + 1
            if len(rows) < BATCH:
                return

    def finish(self) -> None:
        for body in self.bodies.values():
            body.flush()
        for out in self.outs:
            out.flush()

    def part(self, name: str) -> Any:
        return self.files[name] if self.files[name] is not None else self.bodies[name]


def main() -> None:
    serve(sys.stdin.buffer, sys.stdout.buffer)


def serve(given: IO[bytes], answers: IO[bytes]) -> None:
    """The second process: render while the run goes on, write the reports when told to,
    answer, and end (its files are written and closed: nothing is left to clean up)."""
    for sig in (signal.SIGINT, signal.SIGTERM):  # yamleval decides what an interrupt means
        signal.signal(sig, signal.SIG_IGN)
    importlib.import_module("yamleval.reporting.html")._template()  # while yamleval starts the run
    importlib.import_module("yamleval.reporting.junit")
    importlib.import_module("yamleval.reporting.markdown")
    try:
        setup = pickle.load(given)
    except Exception:  # yamleval ended, or the run did not need this process
        os._exit(0)
    _end_with(setup["parent"])
    told: list = []
    over = threading.Event()

    def listen() -> None:  # the run's results, once it is over; nothing if yamleval is gone
        try:
            told.append(pickle.load(given))
        except Exception:
            os._exit(1)
        over.set()

    threading.Thread(target=listen, daemon=True).start()
    run_id, directory, names = setup["run_id"], setup["directory"], setup["names"]
    try:
        os.makedirs(directory, exist_ok=True)
        parts = {eid: _Experiment(eid, scorer_ids, names, directory) for eid, scorer_ids in setup["experiments"]}
        db = sqlite3.connect(setup["store"], uri=True, timeout=30)
        pickle.dump("ready", answers)
        answers.flush()
        while not over.wait(POLL_SECONDS):
            for part in parts.values():  # experiments run in this order: none is begun after one that is not
                part.catch_up(db, run_id, whole=False)
                if part.next == 0:
                    break
    except Exception:  # ending without an answer: yamleval writes these reports itself
        os._exit(1)
    run, results = told[0]
    try:
        for result in results:
            part = parts.get(result.experiment_id)
            if part is None:
                continue
            part.catch_up(db, run_id, whole=True)
            part.finish()
        db.close()
        _write(directory, names, run, results, parts, given, answers)
        answer = None
    except _Orphaned:
        os._exit(1)
    except Exception as exc:  # the answer carries it: exceptions may not pickle
        from yamleval.reporting import describe_failure

        answer = describe_failure(exc, run_id)
    pickle.dump(answer, answers)
    answers.flush()
    os._exit(0)


class _Orphaned(Exception):
    """yamleval ended: a report must not be put in place for a run that may be resumed."""


def _write(directory: str, names: list[str], run: RunInfo, results: list[ExperimentResult], parts: dict,
           given: IO[bytes], answers: IO[bytes]) -> None:
    for name in names:
        module = FORMATS[name].load()
        with atomic_output(os.path.join(directory, module.FILE_NAME)) as out:
            writer = module.Writer(out, run, results)
            for result in results:
                writer.begin(result)
                part = parts.get(result.experiment_id)
                if part is not None:
                    writer.take(part.part(name))
                writer.end(result)
            writer.close()
            out.flush()
            if not _allowed(given, answers):  # asked just before the file is put in place
                raise _Orphaned()


def _allowed(given: IO[bytes], answers: IO[bytes]) -> bool:
    """Whether yamleval, still running, lets a finished report be put in place. A report must
    not appear after yamleval was killed: the run may be resumed, and a stale report put over
    a new one. So this is asked, not inferred: a process killed a moment ago is still this
    one's parent while the system takes it down."""
    try:
        pickle.dump(_PUT, answers)
        answers.flush()
        return pickle.load(given) == "go"
    except Exception:  # yamleval is gone
        return False


def _end_with(parent: int) -> None:
    """Make this process end when yamleval ends, even by SIGKILL. Left alone it would finish
    its reports after the run was killed (and maybe resumed, putting stale reports over new
    ones), holding the terminal's or the CI step's output open. (Linux's parent-death signal
    does not serve: it follows the thread that started the process, not the process.)"""
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    if os.getppid() != parent:  # yamleval ended before this process got here
        os._exit(1)


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(0.1)
    os._exit(1)


if __name__ == "__main__":
    main()
