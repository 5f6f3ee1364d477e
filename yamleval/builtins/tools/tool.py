"""The Tool record the agent runner offers to a model, and the schema derived from a function."""
from __future__ import annotations

import inspect
import json
import re
import types
import typing
from dataclasses import dataclass
from typing import Any, Callable, Literal, Union

from yamleval.records.errors import describe_exception


class ToolError(Exception):
    """A tool call that could not be done; its message goes back to the model as the result."""


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: dict
    function: Callable[..., Any]

    def spec(self) -> dict:
        """The tool as the Chat Completions ``tools`` list expects it."""
        return {"type": "function", "function": {
            "name": self.name, "description": self.description, "parameters": self.parameters}}

    def call(self, arguments: dict | str) -> str:
        """Run the tool with the model's arguments; the result as text (JSON unless a string)."""
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except json.JSONDecodeError as exc:
                raise ToolError(f"{self.name}: arguments are not valid JSON: {exc}") from None
        if not isinstance(arguments, dict):
            raise ToolError(f"{self.name}: arguments must be a JSON object, got {type(arguments).__name__}")
        problem = _argument_problem(self.parameters, arguments)
        if problem:
            raise ToolError(f"{self.name}: bad arguments: {problem}")
        try:
            result = self.function(**arguments)
        except ToolError:
            raise
        except Exception as exc:
            raise ToolError(f"{self.name} failed: {describe_exception(exc)}") from exc
        if isinstance(result, str):
            return result
        return json.dumps(result, ensure_ascii=False, default=str)


def _argument_problem(schema: dict, arguments: dict) -> str | None:
    """The clearest reason ``arguments`` do not match ``schema``, or None."""
    import jsonschema

    try:
        validator = jsonschema.validators.validator_for(schema)(schema)
        error = jsonschema.exceptions.best_match(validator.iter_errors(arguments))
    except jsonschema.exceptions.SchemaError:
        return None
    if error is None:
        return None
    where = "".join(f"[{p!r}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    return f"{where.lstrip('.')}: {error.message}" if where else error.message


_JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean",
               list: "array", tuple: "array", dict: "object", type(None): "null"}


def json_schema_of(hint: Any) -> dict:
    """JSON schema for a type hint; an unknown hint gives ``{}`` (any value)."""
    if hint is inspect.Parameter.empty or hint is Any:
        return {}
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is Literal:
        kinds = {_JSON_TYPES.get(type(a)) for a in args}
        schema: dict = {"enum": list(args)}
        if len(kinds) == 1 and None not in kinds:
            schema["type"] = kinds.pop()
        return schema
    if origin is Union or origin is types.UnionType:
        options = [json_schema_of(a) for a in args if a is not type(None)]
        nullable = type(None) in args
        if len(options) == 1 and nullable and "type" in options[0] and "enum" not in options[0]:
            return {**options[0], "type": [options[0]["type"], "null"]}
        if nullable:
            options.append({"type": "null"})
        return options[0] if len(options) == 1 else {"anyOf": options}
    if origin in (list, tuple, set, frozenset) or hint in (list, tuple, set, frozenset):
        schema = {"type": "array"}
        if args and args[-1] is not Ellipsis:
            schema["items"] = json_schema_of(args[0])
        return schema
    if origin is dict or hint is dict:
        schema = {"type": "object"}
        if len(args) == 2 and args[1] is not Any:
            schema["additionalProperties"] = json_schema_of(args[1])
        return schema
    if hint in _JSON_TYPES:
        return {"type": _JSON_TYPES[hint]}
    return {}


def _docstring_parts(func: Callable) -> tuple[str, dict[str, str]]:
    """First paragraph of the docstring, and per-argument text from ``Args:`` or ``:param x:``."""
    doc = inspect.getdoc(func) or ""
    description = " ".join(doc.split("\n\n", 1)[0].split())
    params: dict[str, str] = {}
    for name, text in re.findall(r":param\s+(?:\w+\s+)?(\w+):\s*(.+)", doc):
        params[name] = text.strip()
    section = re.search(r"^(?:Args|Arguments|Parameters):\s*\n((?:[ \t]+.*\n?|\s*\n)+)", doc, re.M)
    if section:
        current = None
        for line in section.group(1).splitlines():
            entry = re.match(r"^[ \t]{1,4}(\w+)(?:\s*\([^)]*\))?:\s*(.*)$", line)
            if entry:
                current = entry.group(1)
                params.setdefault(current, entry.group(2).strip())
            elif current and line.strip() and params.get(current) is not None:
                params[current] = f"{params[current]} {line.strip()}".strip()
    return description, params


def schema_from_function(func: Callable, hidden: set[str] = frozenset()) -> tuple[str, dict]:
    """Description and JSON schema of the arguments of ``func``, leaving out ``hidden`` ones."""
    try:
        hints = typing.get_type_hints(func)
    except Exception:
        hints = {}
    description, texts = _docstring_parts(func)
    properties: dict[str, dict] = {}
    required: list[str] = []
    for name, param in inspect.signature(func).parameters.items():
        if name in hidden or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        schema = json_schema_of(hints.get(name, param.annotation))
        if name in texts:
            schema["description"] = texts[name]
        if param.default is param.empty:
            required.append(name)
        elif isinstance(param.default, (str, int, float, bool, type(None))):
            schema["default"] = param.default
        properties[name] = schema
    parameters = {"type": "object", "properties": properties, "required": required,
                  "additionalProperties": False}
    return description, parameters
