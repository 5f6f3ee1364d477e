"""Structured answers: tolerant JSON extraction from a model's text, and schema checks."""
from __future__ import annotations

import json
import re
from typing import Any, Mapping

_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n?(.*?)```", re.DOTALL)
_MAX_STARTS = 50  # how many '{' positions to try before giving up


def extract_json(text: str) -> dict[str, Any] | None:
    """The first JSON object in ``text``: inside a code fence when there is one, else the
    first balanced ``{...}`` block that parses. None when there is none."""
    for candidate in [m.group(1) for m in _FENCE.finditer(text)] + [text]:
        found = _first_object(candidate)
        if found is not None:
            return found
    return None


def parse_answer(text: str | None) -> Any:
    """A model's answer text as JSON: parsed whole, else extracted tolerantly; None if neither."""
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return extract_json(text)


def schema_problem(answer: Any, schema: Mapping[str, Any], raw: str) -> str | None:
    """Why ``answer`` does not fit ``schema`` (one line), or None when it fits."""
    if answer is None:
        return "no JSON object found" if raw else "empty answer"
    if not isinstance(answer, dict):
        return f"expected a JSON object, got {type(answer).__name__}"
    import jsonschema  # lazily: only judges need it

    validator_cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    error = jsonschema.exceptions.best_match(validator_cls(schema).iter_errors(answer))
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path)
    return f"{where}: {error.message}" if where else error.message


def _first_object(text: str) -> dict[str, Any] | None:
    start = text.find("{")
    tries = 0
    while start != -1 and tries < _MAX_STARTS:
        tries += 1
        end = _balanced_end(text, start)
        if end is not None:
            try:
                value = json.loads(text[start:end])
            except ValueError:
                value = None
            if isinstance(value, dict):
                return value
        start = text.find("{", start + 1)
    return None


def _balanced_end(text: str, start: int) -> int | None:
    """Index just past the brace that closes the one at ``start``, skipping strings."""
    depth = 0
    in_string = escaped = False
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i + 1
    return None
