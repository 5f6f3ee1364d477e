"""Does a document certainly conform to yamleval's schema? Answered without jsonschema.

Importing jsonschema costs more than the rest of a small run's start-up, and nearly every
config a run reads is valid. This check knows the keywords yamleval's schema uses, with the
schema module's own meaning of "number" (finite) and "integer" (no 2.0). It answers True only
when the document is valid; anything it does not know makes it answer False, and then
jsonschema decides and words the errors.
"""
from __future__ import annotations

import math
import re
from functools import lru_cache
from typing import Any

# Keywords that say nothing about validity.
_NOTES = frozenset({"description", "title", "$schema", "$defs", "$comment", "default", "examples",
                    "markdownDescription", "deprecated"})


class _Unknown(Exception):
    """A keyword or value this check does not decide: leave it to jsonschema."""


def conforms(schema: dict, definition: str, document: Any) -> bool:
    """True only if ``document`` is valid against ``#/$defs/<definition>`` of ``schema``."""
    try:
        return _check(schema["$defs"][definition], document, schema) is not None
    except (_Unknown, RecursionError, KeyError, TypeError, re.error):
        return False


def _is(kind: str, value: Any) -> bool:
    if kind == "object":
        return type(value) is dict
    if kind == "array":
        return type(value) is list
    if kind == "string":
        return type(value) is str
    if kind == "integer":
        return type(value) is int
    if kind == "number":
        return type(value) is int or (type(value) is float and math.isfinite(value))
    if kind == "boolean":
        return type(value) is bool
    if kind == "null":
        return value is None
    raise _Unknown(kind)


def _equal(a: Any, b: Any) -> bool:
    """JSON equality: true is not 1, and 1 is 1.0."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    return a == b


@lru_cache(maxsize=None)
def _pattern(source: str) -> re.Pattern:
    return re.compile(source)


def _check(schema: Any, value: Any, root: dict) -> set[str] | None:
    """None if ``value`` is invalid; else the property names this schema evaluated (for
    ``unevaluatedProperties`` of an enclosing schema)."""
    if schema is True:
        return set()
    if schema is False:
        return None
    if type(schema) is not dict:
        raise _Unknown(schema)
    evaluated: set[str] = set()
    is_object = type(value) is dict
    if is_object and not all(type(k) is str for k in value):
        raise _Unknown("a key that is not text")
    for keyword, rule in schema.items():
        if keyword in _NOTES or keyword == "unevaluatedProperties":
            continue
        if keyword == "$ref":
            if not rule.startswith("#/$defs/"):
                raise _Unknown(rule)
            found = _check(root["$defs"][rule[len("#/$defs/"):]], value, root)
            if found is None:
                return None
            evaluated |= found
        elif keyword == "type":
            kinds = rule if isinstance(rule, list) else [rule]
            if not any(_is(kind, value) for kind in kinds):
                return None
        elif keyword == "enum":
            if not any(_equal(value, choice) for choice in rule):
                return None
        elif keyword == "const":
            if not _equal(value, rule):
                return None
        elif keyword in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            if type(value) in (int, float):
                if not math.isfinite(value):
                    raise _Unknown(value)
                if ((keyword == "minimum" and value < rule) or (keyword == "maximum" and value > rule)
                        or (keyword == "exclusiveMinimum" and value <= rule)
                        or (keyword == "exclusiveMaximum" and value >= rule)):
                    return None
        elif keyword in ("minLength", "maxLength"):
            if type(value) is str and (len(value) < rule if keyword == "minLength" else len(value) > rule):
                return None
        elif keyword == "pattern":
            if type(value) is str and _pattern(rule).search(value) is None:
                return None
        elif keyword in ("minItems", "maxItems"):
            if type(value) is list and (len(value) < rule if keyword == "minItems" else len(value) > rule):
                return None
        elif keyword == "items":
            if type(value) is list and any(_check(rule, item, root) is None for item in value):
                return None
        elif keyword == "uniqueItems":
            if rule and type(value) is list and any(_equal(a, b) for i, a in enumerate(value) for b in value[i + 1:]):
                return None
        elif keyword == "required":
            if is_object and any(name not in value for name in rule):
                return None
        elif keyword == "properties":
            if is_object:
                for name, sub in rule.items():
                    if name in value:
                        if _check(sub, value[name], root) is None:
                            return None
                        evaluated.add(name)
        elif keyword == "additionalProperties":
            if is_object:
                if "patternProperties" in schema:
                    raise _Unknown(keyword)
                known = schema.get("properties", {})
                for name in value:
                    if name not in known:
                        if _check(rule, value[name], root) is None:
                            return None
                        evaluated.add(name)
        elif keyword == "anyOf":
            passed = [found for found in (_check(sub, value, root) for sub in rule) if found is not None]
            if not passed:
                return None
            for found in passed:
                evaluated |= found
        elif keyword == "oneOf":
            passed = [found for found in (_check(sub, value, root) for sub in rule) if found is not None]
            if len(passed) != 1:
                return None
            evaluated |= passed[0]
        elif keyword == "allOf":
            for sub in rule:
                found = _check(sub, value, root)
                if found is None:
                    return None
                evaluated |= found
        else:
            raise _Unknown(keyword)
    rule = schema.get("unevaluatedProperties")
    if rule is not None and is_object:
        for name in value:
            if name not in evaluated:
                if _check(rule, value[name], root) is None:
                    return None
                evaluated.add(name)
    return evaluated
