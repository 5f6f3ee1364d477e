"""``python_exec``: Python code in a separate, limited process with an empty environment."""
from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import tempfile

from yamleval.plugins.processes import end, start
from yamleval.builtins.tools.tool import ToolError

MAX_CODE = 100_000

# Limits are set by the child itself before the code runs, rather than in a preexec_fn,
# because a preexec_fn can deadlock when the runner calls tools from several threads.
_PRELUDE = """\
import resource, sys
memory, cpu, fsize = {memory}, {cpu}, {fsize}
resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
code = sys.stdin.read()
sys.stdin = open("/dev/null")


def _isolate():
    # Where the kernel lets any user make them: new user, PID and mount namespaces, so the
    # code sees only its own processes in /proc (not yamleval's environment, which holds
    # API keys) and everything it starts dies with it, even what escaped into a new session.
    import ctypes, os, signal
    libc = ctypes.CDLL(None, use_errno=True)
    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(0x10000000 | 0x20000000 | 0x00020000) != 0:  # NEWUSER | NEWPID | NEWNS
        return
    for name, text in (("setgroups", "deny"), ("uid_map", f"{{uid}} {{uid}} 1"), ("gid_map", f"{{gid}} {{gid}} 1")):
        with open(f"/proc/self/{{name}}", "w") as f:
            f.write(text)
    child = os.fork()
    if child == 0:  # the namespace's first process: when it ends, the kernel ends the rest
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: end with the process yamleval waits for
        if libc.mount(None, b"/", None, 16384 | (1 << 18), None) == 0:  # MS_REC | MS_PRIVATE
            libc.mount(b"proc", b"/proc", b"proc", 2 | 4 | 8, None)  # nosuid, nodev, noexec
        return
    while True:
        try:
            status = os.waitpid(child, 0)[1]
            break
        except InterruptedError:
            continue
    if os.WIFSIGNALED(status):  # die the same way, so the reason reaches the result
        signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
        os.kill(os.getpid(), os.WTERMSIG(status))
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


try:
    _isolate()
except OSError:
    pass
del resource, memory, cpu, fsize, _isolate
exec(compile(code, "<python_exec>", "exec"), {{"__name__": "__main__", "__builtins__": __builtins__}})
"""


def _read_capped(stream, limit: int) -> str:
    stream.seek(0, os.SEEK_END)
    size = stream.tell()
    stream.seek(0)
    text = stream.read(limit * 4).decode("utf-8", errors="replace")
    if len(text) > limit or size > limit * 4:
        text = text[:limit] + f"\n[output truncated: {size} bytes in all]"
    return text


def python_exec(code: str, *, sandbox: str, timeout: float = 10, memory_mb: int = 512,
                max_output: int = 20_000, max_file_mb: int = 64) -> str:
    """Run Python code in a fresh process and return its exit code, stdout and stderr.

    The working directory is a scratch folder that file_ops can also see; print what you need.

    Args:
        code: a complete Python program; use print() to see values.
    """
    if len(code) > MAX_CODE:
        raise ToolError(f"code is longer than {MAX_CODE} characters")
    prelude = _PRELUDE.format(memory=memory_mb * 1024 * 1024, cpu=math.ceil(timeout) + 1,
                              fsize=max_file_mb * 1024 * 1024)
    # No variable of the parent's environment reaches the code: API keys stay out.
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": sandbox, "LC_ALL": "C.UTF-8"}
    with tempfile.TemporaryFile() as stdout, tempfile.TemporaryFile() as stderr:
        process = start([sys.executable, "-I", "-c", prelude], env, stdin=subprocess.PIPE,
                        stdout=stdout, stderr=stderr, cwd=sandbox, close_fds=True)
        try:
            try:
                process.stdin.write(code.encode("utf-8", errors="replace"))
                process.stdin.close()
            except BrokenPipeError:
                pass
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise ToolError(f"python_exec timed out after {timeout:g} s") from None
        finally:
            end(process)  # also ends whatever the code started in the background
        out, err = _read_capped(stdout, max_output), _read_capped(stderr, max_output)
    code_line = f"exit code {process.returncode}"
    if process.returncode < 0:
        name = signal.Signals(-process.returncode).name
        reason = {"SIGXCPU": "CPU time limit", "SIGXFSZ": "file size limit"}.get(name, "")
        code_line = f"killed by {name}" + (f" ({reason} reached)" if reason else "")
    return f"{code_line}\n--- stdout ---\n{out}\n--- stderr ---\n{err}"

