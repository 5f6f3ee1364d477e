"""Child processes yamleval starts for an item (command runners, python_exec).

Each program starts in a session of its own with a tag of its own in its environment,
``YAMLEVAL_PROCESS``. Ending it kills its process group and every process that still
carries the tag, so what it left running dies with it, also a daemon that called
``setsid``. Only a process that drops the variable from its environment and leaves the
group, or runs as another user, escapes. Programs still running when yamleval exits
(normally or by Ctrl-C) are ended then: each one started is registered with ``atexit``
until it is ended.
"""
from __future__ import annotations

import atexit
import os
import secrets
import signal
import subprocess
import threading

TAG = "YAMLEVAL_PROCESS"


class Program(subprocess.Popen):
    """A program started for an item: its process, in a session of its own, and the ``tag`` that
    it and what it starts carry in their environment."""

    def __init__(self, args: list[str], env: dict[str, str], tag: str, **options):
        super().__init__(args, env={**env, TAG: tag}, start_new_session=True, **options)
        self.tag = tag
        self._ending = threading.Lock()
        self._ended = False
        atexit.register(self.kill_all)  # until ``end``: yamleval exiting ends it

    def kill_all(self) -> set[int]:
        """Kill it and all it left running (at exit, or by ``end``); the others it killed."""
        with self._ending:
            if self._ended:
                return set()
            self._ended = True
        atexit.unregister(self.kill_all)
        return _kill(self.pid, self.tag)


def start(args: list[str], env: dict[str, str], **options) -> Program:
    """``subprocess.Popen`` in a new session, tagged; ``end`` it when done with it."""
    return Program(args, env, secrets.token_hex(8), **options)


def end(process: Program) -> int:
    """Kill ``process`` and all it left running, reap it; return how many others were running."""
    killed = process.kill_all()
    process.kill()  # a no-op once it has been reaped
    process.wait()
    return len(killed - {process.pid})


def _kill(pid: int, tag: str | None) -> set[int]:
    """Kill group ``pid`` and the processes tagged ``tag``, again while new ones appear."""
    killed: set[int] = set()
    for _ in range(10):  # a program forking in a loop may add a few between two looks
        found = (_tagged(tag) if tag else set()) - killed
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        for other in found:
            try:
                os.kill(other, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if not found:
            break
        killed |= found
    return killed


def _tagged(tag: str) -> set[int]:
    """The running processes whose environment holds ``tag`` (readable ones: this user's)."""
    marker = f"{TAG}={tag}\0".encode()
    found = set()
    try:
        names = os.listdir("/proc")
    except OSError:  # no /proc: the process group is all there is to kill
        return found
    for name in names:
        if name.isdigit():
            try:
                with open(f"/proc/{name}/environ", "rb") as environ:
                    if marker in environ.read():
                        found.add(int(name))
            except OSError:  # gone meanwhile, or another user's
                pass
    return found


def running(pid: int) -> bool:
    """Whether process ``pid`` still runs (on this machine). A zombie does not: a killed
    process stays one for good where nothing reaps orphans (a container whose first
    process does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):  # no /proc: take the signal's word
        return True
