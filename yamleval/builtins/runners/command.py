"""The ``command`` runner: run a program once per item and take what it prints as the output.

The output is what the program printed by the time it exited; what it left running is
killed then, and at the timeout the program is killed too (``yamleval.plugins.processes`` says how).
"""
from __future__ import annotations

import errno
import json
import os
import selectors
import signal
import subprocess
import time
from typing import Any

from yamleval.plugins.processes import end, start
from yamleval.records.types import Item, RunnerResult

STDIN_MODES = ("json", "input", "none")
_STDERR_LINES = 20
_STDERR_CHARS = 2000
_STDERR_KEPT = 16_384  # bytes, for the last _STDERR_CHARS characters
_SHOWN_STDOUT = 200
_CHUNK = 65_536
_POLL = 0.05  # seconds between looks at whether the program has exited while its pipes are open
# Linux holds at most 131072 bytes in one environment string: "YAMLEVAL_INPUT=", the value, a NUL
ENV_LIMIT = 131_072 - len("YAMLEVAL_INPUT=") - 1


def _input_text(item: Item) -> str:
    """The input as text: itself when it is text, else JSON (anything JSON lacks as its str)."""
    value = item.input
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def _item_variables(item: Item, required: bool) -> dict[str, str]:
    """YAMLEVAL_ITEM_ID and YAMLEVAL_INPUT. An input no variable can hold is left out, or,
    when the program may rely on the variable (``required``), a ValueError."""
    text = _input_text(item)
    size = len(text.encode("utf-8", errors="surrogatepass"))
    problem = ("holds a NUL character" if "\0" in text else
               f"is {size:,} bytes, more than the {ENV_LIMIT:,} of an environment variable" if size > ENV_LIMIT
               else None)
    if problem is None:
        return {"YAMLEVAL_ITEM_ID": item.id, "YAMLEVAL_INPUT": text}
    if required:
        raise ValueError(f"the input {problem}, so it cannot be passed in YAMLEVAL_INPUT; "
                         "read it on stdin instead (`stdin: input`, or `stdin: json` for the whole item)")
    return {"YAMLEVAL_ITEM_ID": item.id}


def command(item: Item, argv: list | None = None, shell: str | None = None, stdin: str = "json",
            parse_json: bool = False, timeout: float = 60, env: dict | None = None,
            cwd: str | None = None, max_output_mb: float = 10, deadline: float | None = None,
            config_dir: str | None = None) -> RunnerResult:
    """Run ``argv`` (a list: program and arguments) or ``shell`` (a ``/bin/sh -c`` line) for one item.

    ``stdin`` is what the program reads: ``json`` (the item as a JSON object with ``id``,
    ``input``, ``expected``, ``context`` and ``metadata``), ``input`` (the input as text, JSON
    when it is not a string) or ``none``. The output is stdout, decoded as UTF-8 without its
    trailing newline, or parsed as JSON with ``parse_json: true``; past ``max_output_mb``
    megabytes it is cut and ends in ``[output cut at N MB]``. ``env`` adds variables to
    the environment; ``cwd`` is the working directory (by default the config file's folder, as
    for every relative path in the config; a relative ``cwd`` starts from there too). The program also finds the item's id
    and input in ``YAMLEVAL_ITEM_ID`` and ``YAMLEVAL_INPUT``: in a ``shell`` line, use
    ``"$YAMLEVAL_INPUT"`` rather than ``{{ input }}``, which would put item text into the
    command line itself. An input no variable can hold (a NUL, or over ``ENV_LIMIT`` bytes)
    is the item's error when stdin does not carry it or the command names YAMLEVAL_INPUT;
    otherwise the variable is left unset.

    The output is what the program printed until it exited; whatever it left running is
    killed then and counted in the metadata as ``killed_leftovers``. After ``timeout``
    seconds, or at ``deadline`` (the ``time.monotonic()`` at which yamleval gives up on the
    item: the experiment's ``timeout``) if that comes first, all of it is killed and
    TimeoutError raised. A non-zero exit raises RuntimeError with the exit code and the end
    of stderr.
    """
    args, data, variables = _invocation(item, argv, shell, stdin, env)
    if isinstance(max_output_mb, bool) or not isinstance(max_output_mb, (int, float)) or not max_output_mb > 0:
        raise ValueError(f"`max_output_mb` must be a number of megabytes above 0, not {max_output_mb!r}")
    environment = {**os.environ, **variables}

    seconds = float(timeout)
    if deadline is not None and deadline - time.monotonic() < seconds:
        seconds = deadline - time.monotonic()
    printed = _Printed(int(max_output_mb * 1_000_000))
    if config_dir is not None:
        cwd = os.path.join(config_dir, cwd or "")  # an absolute cwd stays itself
    exited, code, leftovers = _run(args, data, seconds, environment, cwd, printed)
    if not exited:
        raise TimeoutError(f"command timed out after {timeout:g}s" if seconds == float(timeout)
                           else "command was killed at the experiment's `timeout`")
    tail = _tail(printed.err)
    if code != 0:
        raise RuntimeError(_exit_message(code) + (f"; stderr:\n{tail}" if tail else "; stderr was empty"))
    output = _output(printed, parse_json, max_output_mb)
    metadata: dict[str, Any] = {"exit_code": 0}
    if tail:
        metadata["stderr"] = tail
    if leftovers:
        metadata["killed_leftovers"] = leftovers
    return RunnerResult(output=output, metadata=metadata)


def _invocation(item: Item, argv: Any, shell: Any, stdin: Any, env: Any) -> tuple[list[str], bytes | None, dict]:
    """The program's arguments, what it reads on stdin, and the variables added to its environment."""
    args = _arguments(argv, shell)
    if stdin not in STDIN_MODES:
        raise ValueError(f"stdin must be one of {', '.join(STDIN_MODES)}, not {stdin!r}")
    data = _stdin_bytes(item, stdin)
    if env is not None and not isinstance(env, dict):
        raise ValueError(f"env must be a mapping of names to values, not {type(env).__name__}")
    required = stdin == "none" or any("YAMLEVAL_INPUT" in a for a in args)
    return args, data, {**{str(k): str(v) for k, v in (env or {}).items()}, **_item_variables(item, required)}


def _what_is_run(item: Item, argv: list | None = None, shell: str | None = None, stdin: str = "json",
                 env: dict | None = None, cwd: str | None = None, **options: Any) -> dict[str, Any]:
    """What ``command`` runs for one item, without running it (``yamleval preview``): its argv, its
    stdin and the names of the variables it adds to the environment (their values may be secrets)."""
    args, data, variables = _invocation(item, argv, shell, stdin, env)
    shown: dict[str, Any] = {"argv": args, "stdin": None if data is None else data.decode("utf-8"),
                             "env": sorted(variables)}
    if cwd is not None:
        shown["cwd"] = cwd
    return shown


command.request = _what_is_run


def _output(printed: _Printed, parse_json: bool, max_output_mb: float) -> Any:
    """Stdout as text without its trailing newline, or parsed as JSON; a cut one with its marker."""
    text = printed.out.decode("utf-8", errors="replace")
    if printed.cut:
        if parse_json:
            raise ValueError(f"command output is longer than `max_output_mb` ({max_output_mb:g}) allows, "
                             "so it cannot be parsed as JSON")
        return text + f"\n[output cut at {max_output_mb:g} MB]"
    if text.endswith("\n"):
        text = text[:-2] if text.endswith("\r\n") else text[:-1]
    if not parse_json:
        return text
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ValueError(f"command output is not JSON ({exc}): {text[:_SHOWN_STDOUT]!r}") from None


def _arguments(argv: Any, shell: Any) -> list[str]:
    if (argv is None) == (shell is None):
        raise ValueError("give exactly one of `argv` (a list: program and arguments) "
                         "or `shell` (a line for /bin/sh -c)")
    if shell is not None:
        if not isinstance(shell, str) or not shell.strip():
            raise ValueError("`shell` must be a non-empty string")
        return ["/bin/sh", "-c", shell]
    if not isinstance(argv, (list, tuple)) or not argv:
        raise ValueError("`argv` must be a non-empty list: the program, then its arguments")
    if any(isinstance(a, (dict, list, tuple)) or a is None for a in argv):
        raise ValueError("every entry of `argv` must be text or a number")
    return [str(a) for a in argv]


def _stdin_bytes(item: Item, mode: str) -> bytes | None:
    if mode == "none":
        return None
    if mode == "input":
        text = _input_text(item)
    else:
        text = json.dumps({"id": item.id, "input": item.input, "expected": item.expected,
                           "context": item.context, "metadata": item.metadata},
                          ensure_ascii=False, default=str)
    return text.encode("utf-8")


def _run(args: list[str], data: bytes | None, seconds: float, env: dict, cwd: str | None,
         printed: _Printed) -> tuple[bool, int, int]:
    """Run to the program's exit or to ``seconds``; kill all it left running.

    Returns whether it exited in time, its exit code and how many processes it left running.
    """
    try:
        process = start(args, env, stdin=subprocess.DEVNULL if data is None else subprocess.PIPE,
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd)
    except OSError as exc:
        why = {errno.ENOENT: f"{cwd if cwd and exc.filename == cwd else args[0]!r} was not found",
               errno.EACCES: "permission denied",
               errno.E2BIG: "its arguments and environment are larger than the system allows; "
                            "give long text on stdin"}.get(exc.errno)
        if why is None:
            raise
        raise type(exc)(f"cannot run {args[0]!r}: {why}") from None
    with process:  # closes the pipes
        try:
            exited = _exchange(process, data, time.monotonic() + seconds, printed)
        finally:
            leftovers = end(process)
    return exited, process.returncode, leftovers


def _exchange(process: subprocess.Popen, data: bytes | None, deadline: float, printed: _Printed) -> bool:
    """Feed stdin, read stdout and stderr until the program exits (True) or the deadline (False).

    The program's exit ends it, not the end of its pipes: a process it left running may hold them.
    """
    readers = {process.stdout.fileno(): printed.stdout, process.stderr.fileno(): printed.stderr}
    sent, data = 0, memoryview(data or b"")
    with selectors.DefaultSelector() as selector:
        for fd in readers:
            os.set_blocking(fd, False)
            selector.register(fd, selectors.EVENT_READ)
        if process.stdin is not None:
            os.set_blocking(process.stdin.fileno(), False)
            selector.register(process.stdin.fileno(), selectors.EVENT_WRITE)
        while process.poll() is None:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            if not selector.get_map():  # it closed its pipes: only its exit is left to wait for
                try:
                    process.wait(left)
                except subprocess.TimeoutExpired:
                    return False
                break
            for key, _ in selector.select(min(left, _POLL)):
                if key.fd in readers:
                    if not _read(key.fd, readers[key.fd]):
                        selector.unregister(key.fd)
                    continue
                try:
                    sent += os.write(key.fd, data[sent:sent + _CHUNK])
                except BlockingIOError:
                    pass
                except BrokenPipeError:  # it stopped reading: the rest is not wanted
                    sent = len(data)
                if sent >= len(data):
                    selector.unregister(key.fd)
                    process.stdin.close()
        for fd in readers:  # what it printed before it exited
            if fd in selector.get_map():
                _read(fd, readers[fd])
    return True


def _read(fd: int, take) -> bool:
    """Read what the pipe holds now into ``take``; False at its end."""
    for _ in range(64):  # bounded: a process left running cannot keep this going
        try:
            chunk = os.read(fd, _CHUNK)
        except BlockingIOError:
            return True
        if not chunk:
            return False
        take(chunk)
    return True


class _Printed:
    """What the program printed: stdout up to ``limit`` bytes (the rest is read and dropped,
    so the program never blocks on a full pipe), and the end of stderr."""

    def __init__(self, limit: int):
        self.limit = limit
        self.out = bytearray()
        self.cut = False
        self.err = b""

    def stdout(self, chunk: bytes) -> None:
        room = max(self.limit - len(self.out), 0)
        self.out += chunk[:room]
        self.cut = self.cut or len(chunk) > room

    def stderr(self, chunk: bytes) -> None:
        self.err = (self.err + chunk)[-_STDERR_KEPT:]


def _exit_message(code: int) -> str:
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"command was killed by {name} (exit code {code})"
    return f"command exited with code {code}"


def _tail(stderr: bytes) -> str:
    text = stderr.decode("utf-8", errors="replace").rstrip()
    if not text:
        return ""
    lines = text.splitlines()
    text = "\n".join(lines[-_STDERR_LINES:])
    return text[-_STDERR_CHARS:]
