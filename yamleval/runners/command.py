"""The ``command`` runner: run a program once per item and take what it prints as the output.

Every call starts a new process group, so a timeout ends the program and everything it
started, not only the program itself.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
from typing import Any

from yamleval.processes import kill_group
from yamleval.types import Item, RunnerResult

STDIN_MODES = ("json", "input", "none")
_STDERR_LINES = 20
_STDERR_CHARS = 2000
_SHOWN_STDOUT = 200


_ENV_LIMIT = 100_000  # characters; Linux refuses a single variable of 128 KiB or more


def _input_text(item: Item) -> str:
    """The input as text: itself when it is text, else JSON (anything JSON lacks as its str)."""
    value = item.input
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def _item_variables(item: Item) -> dict[str, str]:
    text = _input_text(item)
    variables = {"YAMLEVAL_ITEM_ID": item.id}
    if len(text) < _ENV_LIMIT and "\0" not in text:
        variables["YAMLEVAL_INPUT"] = text
    return variables


def command(item: Item, argv: list | None = None, shell: str | None = None, stdin: str = "json",
            parse_json: bool = False, timeout: float = 60, env: dict | None = None,
            cwd: str | None = None) -> RunnerResult:
    """Run ``argv`` (a list: program and arguments) or ``shell`` (a ``/bin/sh -c`` line) for one item.

    ``stdin`` is what the program reads: ``json`` (the item as a JSON object with ``id``,
    ``input``, ``expected``, ``context`` and ``metadata``), ``input`` (the input as text, JSON
    when it is not a string) or ``none``. The output is stdout, decoded as UTF-8 without its
    trailing newline, or parsed as JSON with ``parse_json: true``. ``env`` adds variables to
    the environment; ``cwd`` is the working directory. The program also finds the item's id
    and input in ``YAMLEVAL_ITEM_ID`` and ``YAMLEVAL_INPUT``: in a ``shell`` line, use
    ``"$YAMLEVAL_INPUT"`` rather than ``{{ input }}``, which would put item text into the
    command line itself.

    After ``timeout`` seconds the process group is killed and TimeoutError raised; keep it
    below the experiment's ``timeout`` so that this error, not the item timeout, is recorded.
    A non-zero exit raises RuntimeError with the exit code and the end of stderr.
    """
    args = _arguments(argv, shell)
    if stdin not in STDIN_MODES:
        raise ValueError(f"stdin must be one of {', '.join(STDIN_MODES)}, not {stdin!r}")
    data = _stdin_bytes(item, stdin)
    if env is not None and not isinstance(env, dict):
        raise ValueError(f"env must be a mapping of names to values, not {type(env).__name__}")
    environment = {**os.environ, **{str(k): str(v) for k, v in (env or {}).items()}, **_item_variables(item)}

    stdout, stderr, code = _run(args, data, float(timeout), environment, cwd)
    tail = _tail(stderr)
    if code != 0:
        raise RuntimeError(_exit_message(code) + (f"; stderr:\n{tail}" if tail else "; stderr was empty"))
    text = stdout.decode("utf-8", errors="replace")
    if text.endswith("\n"):
        text = text[:-2] if text.endswith("\r\n") else text[:-1]
    output: Any = text
    if parse_json:
        try:
            output = json.loads(text)
        except ValueError as exc:
            raise ValueError(f"command output is not JSON ({exc}): {text[:_SHOWN_STDOUT]!r}") from None
    metadata: dict[str, Any] = {"exit_code": 0}
    if tail:
        metadata["stderr"] = tail
    return RunnerResult(output=output, metadata=metadata)


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


def _run(args: list[str], data: bytes | None, timeout: float, env: dict | None,
         cwd: str | None) -> tuple[bytes, bytes, int]:
    """Run to the end or to the timeout; no process of the group outlives the call."""
    try:
        process = subprocess.Popen(args, stdin=subprocess.DEVNULL if data is None else subprocess.PIPE,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=cwd,
                                   start_new_session=True)
    except FileNotFoundError as exc:
        missing = cwd if cwd and exc.filename == cwd else args[0]
        raise FileNotFoundError(f"cannot run {args[0]!r}: {missing!r} was not found") from None
    except PermissionError:
        raise PermissionError(f"cannot run {args[0]!r}: permission denied") from None
    try:
        stdout, stderr = process.communicate(data, timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(process)
        _drain(process)
        raise TimeoutError(f"command timed out after {timeout:g}s") from None
    except BaseException:
        kill_group(process)
        _drain(process)
        raise
    # whatever the program left running in the background ends with the item
    kill_group(process)
    return stdout, stderr, process.returncode


def _drain(process: subprocess.Popen) -> None:
    """Reap the killed process; a descendant that left the group may hold the pipes, so wait briefly."""
    try:
        process.communicate(timeout=5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


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
