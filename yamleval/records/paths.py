"""Dotted paths into JSON values: ``choices.0.message.content``, ``data.answer``."""
from __future__ import annotations

from typing import Any

_SHOWN_KEYS = 20


class PathNotFound(KeyError):
    """A dotted path that does not lead anywhere in the value; the message says where it stops."""

    def __init__(self, message: str, step: str | None = None):
        super().__init__(message)
        self.step = step  # the step of the path where it stopped

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


def lookup(data: Any, path: str) -> Any:
    """The value at ``path`` in ``data``: keys of objects, integer indexes of lists.

    A step that is a digit string is first tried as an object key, so ``{"0": ...}`` works.
    Raises PathNotFound (a KeyError) naming the failing step and what was there instead.
    """
    if not isinstance(path, str) or not path or any(step == "" for step in path.split(".")):
        raise ValueError(f"invalid path {path!r}: give keys and list indexes separated by dots, "
                         "as in choices.0.message.content")
    value = data
    walked: list[str] = []
    for step in path.split("."):
        where = ".".join(walked) or "the top level"
        if isinstance(value, dict):
            if step not in value:
                raise PathNotFound(f"no key '{step}' at {where} in {path!r}; {_keys(value)}", step)
            value = value[step]
        elif isinstance(value, list):
            try:
                index = int(step)
            except ValueError:
                raise PathNotFound(f"'{step}' is not a list index at {where} in {path!r}; "
                                   f"it is a list of {len(value)}", step) from None
            if not -len(value) <= index < len(value):
                raise PathNotFound(f"index {index} is out of range at {where} in {path!r}; "
                                   f"it is a list of {len(value)}", step)
            value = value[index]
        else:
            raise PathNotFound(f"cannot look up '{step}' at {where} in {path!r}: "
                               f"it is {_kind(value)}, not an object or a list", step)
        walked.append(step)
    return value


def _keys(value: dict) -> str:
    if not value:
        return "it is an empty object"
    names = [str(k) for k in value][:_SHOWN_KEYS]
    more = f" and {len(value) - _SHOWN_KEYS} more" if len(value) > _SHOWN_KEYS else ""
    return f"keys there: {', '.join(names)}{more}"


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", str: "a string", int: "a number", float: "a number"}.get(type(value),
                                                                                      f"a {type(value).__name__}")
