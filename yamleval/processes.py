"""Child processes yamleval starts for an item (command runners, python_exec)."""
from __future__ import annotations

import os
import signal
import subprocess


def kill_group(process: subprocess.Popen) -> None:
    """Kill ``process`` and every process in its group (it was started in a session of its own)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


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
