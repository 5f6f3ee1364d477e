"""Errors a user sees, each knowing its exit code and how to show itself.

    YamlevalError(message)                 exit 3, could not evaluate (not a verdict on quality)
    ├─ UsageError                           exit 2, the command line is wrong
    └─ ConfigError(message, location)       exit 2, a file the user wrote is wrong
         └─ ConfigErrors(errors)            several at once, sorted by position
"""
from __future__ import annotations

import enum
import os
from typing import NamedTuple


class ExitCode(enum.IntEnum):
    OK = 0
    FAILED = 1
    CONFIG_ERROR = 2
    COULD_NOT_EVALUATE = 3
    STOPPED_BY_BUDGET = 4
    INTERRUPTED = 130


class Location(NamedTuple):
    """Where in a user's file something stands: 1-based line and column, JSON path.

    A named tuple, not a dataclass: datasets make one per row, so it must be cheap.
    """

    file: str
    line: int | None = None
    col: int | None = None
    path: str = ""

    def prefix(self) -> str:
        where = self.file
        if self.line is not None:
            where += f":{self.line}"
            if self.col is not None:
                where += f":{self.col}"
        return f"{where}: {self.path}: " if self.path else f"{where}: "

    def file_line(self) -> str | None:
        """``file:line``, as records keep where something was read; None without a line."""
        return None if self.line is None else f"{self.file}:{self.line}"

    def sort_key(self) -> tuple:
        return (self.file, self.line or 0, self.col or 0, self.path)


def display_path(path: str) -> str:
    """A file path as messages show it: relative to the current directory when below it (a URL
    as it is)."""
    if "://" in path:
        from yamleval.records.urls import shown_database_url

        return shown_database_url(path)  # never a password
    rel = os.path.relpath(path)
    return path if rel == os.pardir or rel.startswith(os.pardir + os.sep) else rel


class YamlevalError(Exception):
    exit_code = ExitCode.COULD_NOT_EVALUATE

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message

    def format_message(self) -> str:
        return self.message

    def __str__(self) -> str:
        return self.format_message()


class UsageError(YamlevalError):
    exit_code = ExitCode.CONFIG_ERROR

    def format_message(self) -> str:
        return f"error: {self.message}"


class ConfigError(YamlevalError):
    """A mistake in a config or dataset file, pointing at where it is."""

    exit_code = ExitCode.CONFIG_ERROR

    def __init__(self, message: str, location: Location | None = None,
                 hint: str | None = None, context: str | None = None,
                 source_line: str | None = None):
        super().__init__(message)
        self.location = location
        self.hint = hint
        self.context = context
        self.source_line = source_line

    def format_message(self) -> str:
        head = (self.location.prefix() if self.location else "") + "error: " + self.message
        if self.hint:
            head += f" ({self.hint})"
        lines = [head]
        if self.context:
            lines.append(f"  in {self.context}")
        loc = self.location
        if self.source_line is not None and loc and loc.line is not None:
            number = str(loc.line)
            lines.append(f"  {number} | {self.source_line}")
            if loc.col is not None and loc.col <= len(self.source_line) + 1:
                lines.append(f"  {' ' * len(number)} | {' ' * (loc.col - 1)}^")
        return "\n".join(lines)


class ConfigErrors(ConfigError):
    """Every error found in one pass, reported together, in file order."""

    def __init__(self, errors: list[ConfigError]):
        self.errors = sorted(errors, key=lambda e: e.location.sort_key() if e.location else ())
        super().__init__(f"{len(self.errors)} errors")

    def format_message(self) -> str:
        body = "\n".join(e.format_message() for e in self.errors)
        if len(self.errors) > 1:
            body += f"\n{len(self.errors)} errors"
        return body


def raise_all(errors: list[ConfigError]) -> None:
    """Raise the collected errors: one as itself, several together."""
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise ConfigErrors(errors)


def describe_exception(exc: BaseException) -> str:
    """``Type: message`` for an exception raised by a plugin. Plugin code may define an exception
    whose ``str()`` itself raises; the description must not fail with it."""
    try:
        text = str(exc)
    except Exception:
        text = "(its message cannot be shown: str() raised)"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
