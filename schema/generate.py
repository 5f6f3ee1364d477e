"""Write the parts of the JSON Schema that describe the built-in runners and scorers, from the
plugins themselves, so that editors complete and check them as yamleval does:

    runner_uses, scorer_uses   the built-in names (yamleval's entry points) offered for `uses:`,
                               each with the first sentence of its docstring; any other
                               reference that yamleval resolves is accepted too
    runner_with, scorer_with   the `with:` arguments of each built-in: its signature's options,
                               with their defaults (and their values, for a Literal); those
                               without a default are required

Run it after adding a built-in or changing one's arguments; tests/project/test_packaging.py fails
until the committed schema is what it writes:

    python schema/generate.py
"""
from __future__ import annotations

import builtins
import inspect
import json
import re
import sys
import types
import typing
from collections import abc
from pathlib import Path

from yamleval.plugins import calls
from yamleval.plugins import registry as plugins

ROOT = Path(__file__).resolve().parent.parent
SCHEMA_FILES = (ROOT / "schema" / "yamleval.schema.json", ROOT / "yamleval" / "config" / "yamleval.schema.json")
KINDS = {"runner": calls.RUNNER_CONTEXT, "scorer": calls.SCORER_CONTEXT}


def _summary(function) -> str:
    """The first sentence of a docstring, on one line, its ``code`` written as `code`."""
    paragraph = " ".join((inspect.getdoc(function) or "").split("\n\n")[0].split()).replace("``", "`")
    found = re.match(r".*?\.(?=\s|$)", paragraph)
    return found.group(0) if found else paragraph


JSON_TYPES = {str: "string", bool: "boolean", int: "integer", float: "number", list: "array", tuple: "array",
              dict: "object", type(None): "null"}


def _hints(function) -> dict:
    """Each parameter's type hint, those that name only what the function's module has (a name
    imported for type checkers alone leaves its parameter without one)."""
    found = {}
    space = {**vars(builtins), **vars(typing), **getattr(function, "__globals__", {})}
    for name, annotation in getattr(function, "__annotations__", {}).items():
        try:
            found[name] = eval(annotation, space) if isinstance(annotation, str) else annotation
        except Exception:
            continue
    return found


def _typed(hint) -> dict:
    """What a type hint says of a value in YAML: its JSON types (an int is a number where a float
    is asked), or a Literal's values; nothing for a hint JSON has no type for (``Any``)."""
    if hint is None:
        return {}
    if typing.get_origin(hint) is typing.Literal:  # the values it takes
        return {"enum": list(typing.get_args(hint))}
    members = typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)
    found = []
    for member in members:
        origin = typing.get_origin(member) or member
        if typing.get_origin(member) is typing.Literal:
            return {}  # a Literal among other types: left to the plugin's own check
        json_type = JSON_TYPES.get(origin) or ("object" if isinstance(origin, type) and issubclass(origin, abc.Mapping)
                                               else "array" if isinstance(origin, type) and issubclass(origin, abc.Sequence)
                                               and origin is not str else None)
        if json_type is None:
            return {}  # a type JSON cannot say: any value, as the plugin takes it
        found.append(json_type)
    found = list(dict.fromkeys(found))
    return {"type": found[0] if len(found) == 1 else found}


def _described(doc: str, name: str) -> str | None:
    """The first sentence of a docstring that names ``name`` (as ``name``), on one line."""
    text = " ".join(doc.split())
    for sentence in re.split(r"(?<=[.;])\s+(?=[A-Z`(])", text):
        if f"``{name}``" in sentence:
            return sentence.replace("``", "`")
    return None


def _arguments(name: str, plugin, reserved: tuple[str, ...]) -> dict:
    """``if uses is name then with: takes these keys`` for one built-in, read as the loader reads
    it: a class takes its ``with:`` in its constructor."""
    constructor, call = plugins.unwrap_class(plugin)
    function = constructor or call
    sig = plugins.signature_of(function, () if constructor else reserved)
    options = {}
    hints = _hints(function)
    doc = inspect.getdoc(constructor or plugin) or ""
    for parameter in inspect.signature(function).parameters.values():
        if parameter.name in sig.options:
            default = parameter.default  # a None default is no value to offer
            option = options[parameter.name] = _typed(hints.get(parameter.name))
            if isinstance(default, (str, bool, int, float)):
                option["default"] = default
            described = _described(doc, parameter.name)
            if described:
                option["description"] = described
    arguments = {"description": f"The arguments of the built-in '{name}'.", "properties": options}
    if not sig.any_keyword:
        arguments["additionalProperties"] = False
    then: dict = {"properties": {"with": arguments}}
    if sig.required:
        arguments["required"] = list(sig.required)
        then["required"] = ["with"]
    return {"if": {"properties": {"uses": {"const": name}}, "required": ["uses"]}, "then": then}


def builtin_definitions() -> dict[str, dict]:
    """The generated ``$defs``, by name."""
    definitions = {}
    for kind, reserved in KINDS.items():
        names = sorted(plugins.builtins(f"{kind}s"))
        functions = [plugins.load(f"{kind}s", name) for name in names]
        definitions[f"{kind}_uses"] = {
            "description": f"A built-in {kind}, an entry point in `yamleval.{kind}s`, or `package.module:attribute`.",
            "anyOf": [
                {"enum": names, "enumDescriptions": [_summary(f) for f in functions],
                 "errorMessage": f"Expected a built-in {kind}'s name, an entry point's name or package.module:function."},
                {"$ref": "#/$defs/plugin_ref"},
            ],
        }
        definitions[f"{kind}_with"] = {
            "description": f"The `with:` of each built-in {kind}.",
            "allOf": [_arguments(name, f, reserved) for name, f in zip(names, functions)],
        }
    return definitions


def schema_text(current: str) -> str:
    """``current`` (the schema's text) with its generated definitions written anew."""
    schema = json.loads(current)
    schema["$defs"].update(builtin_definitions())
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def main() -> int:
    text = schema_text(SCHEMA_FILES[0].read_text(encoding="utf-8"))
    for path in SCHEMA_FILES:
        path.write_text(text, encoding="utf-8")
    print(f"wrote {', '.join(str(p.relative_to(ROOT)) for p in SCHEMA_FILES)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
