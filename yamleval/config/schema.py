"""Check a parsed file against the JSON Schema and word every error for a YAML author."""
from __future__ import annotations

import difflib
import json
import math
import os
import re
import unicodedata
from functools import lru_cache
from typing import Any

from yamleval.config.yaml_source import SourceMap
from yamleval.records.errors import ConfigError

SCHEMA_FILE = "yamleval.schema.json"
_TYPE_NAMES = {"object": "a mapping", "array": "a list", "string": "a string", "integer": "a whole number",
               "number": "a number", "boolean": "true or false", "null": "null",
               "non-finite": "a value that is not a finite number"}


def schema_text() -> str:
    """The schema as shipped in the package (a copy of the top-level ``schema/`` file): beside
    this module when the package is files on disk (importlib.resources costs a few ms to import)."""
    try:
        with open(os.path.join(os.path.dirname(__file__), SCHEMA_FILE), encoding="utf-8") as file:
            return file.read()
    except OSError:  # a zipped or otherwise packed install
        from importlib import resources

        return resources.files("yamleval.config").joinpath(SCHEMA_FILE).read_text(encoding="utf-8")


NO_NUL = "^[^\\u0000]*$"  # the schema's pattern for paths: the OS cannot open a name holding a NUL


def _finite(value: Any) -> bool:
    return not isinstance(value, float) or math.isfinite(value)


@lru_cache(maxsize=None)
def _validator(definition: str):
    """A validator for one definition. Its "number" excludes .inf and .nan, which YAML can write
    but no setting can use (a NaN timeout would time every item out at once); its "integer"
    excludes 2.0, which JSON Schema counts as one but Python's range() and islice() refuse."""
    import jsonschema

    schema = dict(_schema())
    schema.pop("anyOf", None)
    schema["$ref"] = f"#/$defs/{definition}"
    base = jsonschema.Draft202012Validator
    checker = base.TYPE_CHECKER.redefine_many({
        "number": lambda checker, value: base.TYPE_CHECKER.is_type(value, "number") and _finite(value),
        "integer": lambda checker, value: isinstance(value, int) and not isinstance(value, bool),
    })
    return jsonschema.validators.extend(base, type_checker=checker)(schema)


def _type_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if not _finite(value):
        return "non-finite"
    for python, name in ((float, "number"), (str, "string"), (list, "array"), (dict, "object")):
        if isinstance(value, python):
            return name
    return type(value).__name__


_YAML_SPECIALS = {"inf": ".inf", "-inf": "-.inf", "nan": ".nan"}


def _show(value: Any) -> str:
    if not _finite(value):
        return _YAML_SPECIALS[repr(value)]
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def _got(value: Any) -> str:
    """What a value is, for "expected a list, got ...": its kind, then the value unless it is null."""
    kind = _TYPE_NAMES.get(_type_of(value), "a value")
    return kind if value is None else f"{kind} {_show(value)}"


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


# What the schema says of the built-in runners and scorers (schema/generate.py writes it from
# their signatures) is for editors: the loader leaves it to the registry, which checks every
# plugin's `with:` the same way and words it with the plugin's name and a "did you mean".
_FOR_EDITORS = {"runner_uses": {"$ref": "#/$defs/plugin_ref"}, "scorer_uses": {"$ref": "#/$defs/plugin_ref"},
                "runner_with": {}, "scorer_with": {}}


@lru_cache(maxsize=None)
def _schema() -> dict:
    schema = json.loads(schema_text())
    schema["$defs"].update(_FOR_EDITORS)
    return schema


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


def _share_hint(percent: float) -> str:
    return f"a share from 0 to 1: write {percent / 100:g} for {percent:g}%"


def _within(number: float, schema: dict) -> bool:
    """Whether ``number`` is inside the bounds ``schema`` sets: advice never names a refused value."""
    low, high, above = schema.get("minimum"), schema.get("maximum"), schema.get("exclusiveMinimum")
    return (low is None or number >= low) and (high is None or number <= high) and (above is None or number > above)


def _number_hint(value: Any, schema: dict) -> str | None:
    """For a number written as text (``"8"``, ``10s``, ``50%``): the plain number to write instead."""
    kinds = _expected_types(schema)
    if not isinstance(value, str) or not {"integer", "number"} & set(kinds):
        return None
    found = re.fullmatch(r"\s*(-?\d+(?:\.\d+)?)\s*([A-Za-z%]*)\s*", value)
    if not found or ("number" not in kinds and "." in found.group(1)):
        return None
    number, unit = float(found.group(1)), found.group(2)
    if unit == "%" and (schema.get("minimum"), schema.get("maximum")) == (0, 1):
        return _share_hint(number) if _within(number / 100, schema) else None
    if not _within(number, schema):
        return None
    if unit:
        return f"write a plain number without a unit: {found.group(1)}"
    return f"write the number without quotes: {found.group(1)}"


def _either(options: list[str]) -> str:
    return ", ".join(options[:-1]) + " or " + options[-1] if len(options) > 1 else "".join(options)


def _pattern_problem(pattern: str, value: Any, description: str) -> tuple[str, str | None]:
    """Message and hint for a string that does not match; the two patterns YAML authors meet,
    slugs and plugin references, get a corrected value."""
    defs = _schema()["$defs"]
    if isinstance(value, str) and pattern == NO_NUL:
        return f"{_show(value)} holds a NUL character (\\0), which no file name can", "remove it"
    if isinstance(value, str) and pattern == defs["slug"]["pattern"]:
        # The fix only replaces what separates words: a name with letters an id cannot hold (ñ, 实)
        # has no fix that keeps the whole of it.
        if any(not c.isascii() and (c.isalnum() or unicodedata.combining(c)) for c in value):
            hint = "an id's letters are ASCII, A to Z, without accents"
        else:
            fixed = re.sub(r"[^A-Za-z0-9_.-]+", "-", value.strip()).strip("-_.")
            hint = f"did you mean '{fixed}'?" if fixed and re.match(pattern, fixed) else None
        return (f"{_show(value)} is not a valid id: use letters, digits, '_', '.' and '-', "
                "starting with a letter or digit"), hint
    if isinstance(value, str) and pattern == defs["plugin_ref"]["pattern"]:
        module, sep, attr = value.strip().partition(":")
        module = re.sub(r"\.py$", "", module).replace("\\", "/").strip("/").replace("/", ".")
        fixed = module + sep + attr
        if fixed != value and re.match(pattern, fixed):
            hint = f"did you mean '{fixed}'? a module is named with dots, without '.py'"
        else:
            hint = "use a built-in name such as exact_match, or package.module:function"
        return f"{_show(value)} is not a valid plugin reference", hint
    return f"{_show(value)} is not valid here: {description}", None


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
    if v == "not" and value == {}:  # a key that the rest of its mapping rules out
        return [source.error(path, f"key '{path[-1]}' is not allowed here", key=True,
                             hint=error.schema.get("description"))]
    if v == "required":
        missing = [k for k in value if k not in instance]
        return [source.error(path, f"missing required key '{k}'", key=True) for k in missing]
    if v == "type":
        kinds = _expected_types(error.schema)
        wanted = " or ".join(_TYPE_NAMES.get(t, t) for t in kinds)
        return [source.error(path, f"expected {wanted}, got {_got(instance)}",
                             hint=_number_hint(instance, error.schema))]
    if v == "enum":
        allowed = ", ".join(_show(x) for x in value)
        options = [str(x) for x in value]
        close = difflib.get_close_matches(str(instance), options, n=1, cutoff=0.6) or [
            x for x in options if isinstance(instance, str) and instance and x.startswith(instance)][:1]
        hint = f"did you mean '{close[0]}'?" if close else None
        return [source.error(path, f"{_show(instance)} is not one of {allowed}", hint=hint)]
    if v == "const":
        return [source.error(path, f"must be {_show(value)}, got {_show(instance)}")]
    if v in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        word = {"minimum": "at least", "maximum": "at most", "exclusiveMinimum": "more than",
                "exclusiveMaximum": "less than"}[v]
        low, high = error.schema.get("minimum"), error.schema.get("maximum")
        if low is not None and high is not None:
            hint = None
            if ((low, high) == (0, 1) and _type_of(instance) in ("integer", "number") and 10 <= instance <= 100
                    and instance == int(instance)):
                hint = _share_hint(instance)
            return [source.error(path, f"must be between {low} and {high}, got {_show(instance)}", hint=hint)]
        why = None if "type" in error.schema else error.schema.get("description")  # a rule beside the key's own schema
        return [source.error(path, f"must be {word} {value}, got {_show(instance)}", hint=why)]
    if v == "pattern":
        message, hint = _pattern_problem(value, instance, error.schema.get("description", f"must match {value}"))
        return [source.error(path, message, hint=hint)]
    if v == "minLength":
        return [source.error(path, "must not be empty")]
    if v == "uniqueItems":
        return [source.error(path, "must not list the same value twice")]
    if v == "oneOf" and all(sub.validator == "required" for sub in error.context or ()):
        if not isinstance(instance, dict):
            return []  # not a mapping at all: its type error says so
        options = [branch["required"][0] for branch in value]
        given = [k for k in instance if k in options]
        if given:
            return [source.error(path, f"give only one of {_either(options)}; found {' and '.join(given)}",
                                 key=True)]
        return [source.error(path, f"needs one of {_either(options)}", key=True)]
    if v in ("anyOf", "oneOf"):
        subs = _matching_branch_errors(error)
        if subs:
            out = []
            for sub in subs:
                out.extend(_messages(sub, source, tuple(sub.absolute_path)))
            return out
        wanted = " or ".join(_TYPE_NAMES.get(t, t) for t in _branch_types(error))
        return [source.error(path, f"expected {wanted}, got {_got(instance)}")]
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
