"""Check a parsed file against the JSON Schema and word every error for a YAML author."""
from __future__ import annotations

import difflib
import json
from functools import lru_cache
from importlib import resources
from typing import Any

from yamleval.config.yaml_source import SourceMap
from yamleval.errors import ConfigError

SCHEMA_FILE = "yamleval.schema.json"
_TYPE_NAMES = {"object": "a mapping", "array": "a list", "string": "a string", "integer": "a whole number",
               "number": "a number", "boolean": "true or false", "null": "null"}


def schema_text() -> str:
    """The schema as shipped in the package (a copy of the top-level ``schema/`` file)."""
    return resources.files("yamleval.config").joinpath(SCHEMA_FILE).read_text(encoding="utf-8")


@lru_cache(maxsize=None)
def _validator(definition: str):
    import jsonschema

    schema = dict(_schema())
    schema.pop("anyOf", None)
    schema["$ref"] = f"#/$defs/{definition}"
    return jsonschema.Draft202012Validator(schema)


def _type_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    for python, name in ((float, "number"), (str, "string"), (list, "array"), (dict, "object")):
        if isinstance(value, python):
            return name
    return type(value).__name__


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def _expected_types(schema: dict) -> list[str]:
    kind = schema.get("type")
    if isinstance(kind, list):
        return kind
    return [kind] if kind else []


def _branch_types(error) -> list[str]:
    """The types the branches of an anyOf/oneOf accept."""
    names: list[str] = []
    for branch in error.validator_value:
        target = _resolve(branch["$ref"]) if "$ref" in branch else branch
        for kind in _expected_types(target):
            if kind not in names:
                names.append(kind)
    return names


@lru_cache(maxsize=None)
def _schema() -> dict:
    return json.loads(schema_text())


def _resolve(ref: str) -> dict:
    """The definition a local ``$ref`` points at, following chains of refs."""
    node = _schema()
    for part in ref.lstrip("#/").split("/"):
        node = node[part]
    if "$ref" in node and "type" not in node:
        return _resolve(node["$ref"])
    return node


def _matching_branch_errors(error) -> list:
    """For anyOf/oneOf: the errors of the branch meant for this value's type."""
    subs = list(error.context or ())
    wrong_type = {s.schema_path[0] for s in subs if s.validator == "type" and not s.relative_path}
    return [s for s in subs if s.schema_path and s.schema_path[0] not in wrong_type]


def _messages(error, source: SourceMap, path: tuple) -> list[ConfigError]:
    """One or more located errors for one jsonschema error."""
    v, value = error.validator, error.validator_value
    instance = error.instance if isinstance(error.instance, (dict, list)) else source.raw_value(path, error.instance)
    if v in ("additionalProperties", "unevaluatedProperties"):
        allowed = sorted(error.schema.get("properties", {}))
        if "$ref" in error.schema:
            allowed = sorted(set(allowed) | set(_resolve(error.schema["$ref"]).get("properties", {})))
        known = set(allowed)
        out = []
        for key in instance:
            if key in known:
                continue
            close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
            hint = f"did you mean '{close[0]}'?" if close else f"allowed keys: {', '.join(allowed)}"
            out.append(source.error(path + (key,), f"unknown key '{key}'", key=True, hint=hint))
        return out
    if v == "required":
        missing = [k for k in value if k not in instance]
        return [source.error(path, f"missing required key '{k}'") for k in missing]
    if v == "type":
        wanted = " or ".join(_TYPE_NAMES.get(t, t) for t in _expected_types(error.schema))
        return [source.error(path, f"expected {wanted}, got {_TYPE_NAMES.get(_type_of(instance), 'a value')} {_show(instance)}")]
    if v == "enum":
        allowed = ", ".join(_show(x) for x in value)
        close = difflib.get_close_matches(str(instance), [str(x) for x in value], n=1, cutoff=0.6)
        hint = f"did you mean '{close[0]}'?" if close else None
        return [source.error(path, f"{_show(instance)} is not one of {allowed}", hint=hint)]
    if v == "const":
        return [source.error(path, f"must be {_show(value)}, got {_show(instance)}")]
    if v in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        word = {"minimum": "at least", "maximum": "at most", "exclusiveMinimum": "more than",
                "exclusiveMaximum": "less than"}[v]
        low, high = error.schema.get("minimum"), error.schema.get("maximum")
        if low is not None and high is not None:
            return [source.error(path, f"must be between {low} and {high}, got {_show(instance)}")]
        return [source.error(path, f"must be {word} {value}, got {_show(instance)}")]
    if v == "pattern":
        what = error.schema.get("description", f"must match {value}")
        return [source.error(path, f"{_show(instance)} is not valid here: {what}")]
    if v == "minLength":
        return [source.error(path, "must not be empty")]
    if v == "uniqueItems":
        return [source.error(path, "must not list the same value twice")]
    if v == "oneOf" and all(sub.validator == "required" for sub in error.context or ()):
        options = [branch["required"][0] for branch in value]
        given = [k for k in options if k in instance]
        if given:
            return [source.error(path, f"give only one of {', '.join(options)}; found {', '.join(given)}")]
        return [source.error(path, f"needs one of {', '.join(options)}")]
    if v in ("anyOf", "oneOf"):
        subs = _matching_branch_errors(error)
        if subs:
            out = []
            for sub in subs:
                out.extend(_messages(sub, source, tuple(sub.absolute_path)))
            return out
        wanted = " or ".join(_TYPE_NAMES.get(t, t) for t in _branch_types(error))
        return [source.error(path, f"expected {wanted}, got {_TYPE_NAMES.get(_type_of(instance), 'a value')} {_show(instance)}")]
    return [source.error(path, error.message)]


def validate(data: Any, source: SourceMap, definition: str) -> list[ConfigError]:
    """All schema errors of ``data`` against ``#/$defs/<definition>``, each located."""
    errors: list[ConfigError] = []
    seen: set[tuple] = set()
    for error in _validator(definition).iter_errors(data):
        for found in _messages(error, source, tuple(error.absolute_path)):
            key = (found.location.path if found.location else None, found.message)
            if key not in seen:
                seen.add(key)
                errors.append(found)
    return errors
