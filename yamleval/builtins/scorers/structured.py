"""Structured-value scorers: numeric_diff, json_diff, list_contains, is_json, json_schema.

yamleval follows the JavaScript autoevals library that VoltAgent uses:

- numbers: numeric strings are read as numbers (``" 42 "`` is 42, as JS ``Number()``), but
  an empty string, a boolean, NaN, infinity or any other value is refused with
  ``ValueError`` rather than coerced;
- booleans are not numbers: in ``json_diff``, ``True`` against ``False`` is compared as the
  JSON texts ``"true"`` and ``"false"`` (0.2), not as 1 against 0;
- list elements are compared as ``to_text`` of each element (compact JSON for objects,
  where JS would see ``"[object Object]"``);
- JSON text is parsed strictly: ``NaN`` and ``Infinity`` are not JSON.
"""
from __future__ import annotations

import functools
import json
import math
from typing import Any

from yamleval.builtins.scorers.assignment import max_weight_assignment
from yamleval.builtins.scorers.text import parse_json, similarity, to_json, to_text
from yamleval.records.types import Score


def numeric_diff(output: Any, expected: Any) -> float:
    """Closeness of two numbers: ``1 - |e - o| / (|e| + |o|)``, and 1.0 when both are 0.

    Equal numbers give 1.0, numbers of opposite signs give 0.0, and 40 against 42 gives
    0.9756. Ints, floats and numeric strings (surrounding whitespace allowed, as JS
    ``Number()``) are accepted; booleans, ``None``, empty or non-numeric strings, NaN and
    infinity raise ``ValueError``.
    """
    return _number_similarity(_as_number("output", output), _as_number("expected", expected))


def _as_number(role: str, value: Any) -> float:
    if isinstance(value, bool):
        raise ValueError(f"numeric_diff: {role} must be a number, got the boolean {value!r}")
    if isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str):
        text = value.strip()
        try:
            # "_" and "nan"/"inf" spellings are Python-only; JS Number() refuses them.
            if not text or "_" in text or text.lower().lstrip("+-").startswith(("nan", "inf")):
                raise ValueError
            number = float(text)
        except ValueError:
            raise ValueError(f"numeric_diff: {role} must be a number, got the string {value!r}") from None
    else:
        raise ValueError(f"numeric_diff: {role} must be a number, got {type(value).__name__} {value!r}")
    if not math.isfinite(number):
        raise ValueError(f"numeric_diff: {role} must be a finite number, got {value!r}")
    return number


def _number_similarity(o: float, e: float) -> float:
    if o == 0 and e == 0:
        return 1.0
    # Scaling by the larger magnitude keeps |e - o| and |e| + |o| from overflowing.
    scale = max(abs(o), abs(e))
    o, e = o / scale, e / scale
    return 1.0 - abs(e - o) / (abs(e) + abs(o))


def json_diff(output: Any, expected: Any, preserve_strings: bool = False) -> float:
    """Structural similarity of two JSON values, in [0, 1], computed recursively.

    Strings that parse as a JSON object or array are parsed first (unless
    ``preserve_strings``). Two objects: the mean score over the union of their keys (a
    missing key counts as ``None``); two empty objects give 1. Two arrays: the sum of
    the positional scores over the shorter length divided by the longer length; two
    empty arrays give 1. Two strings: ``levenshtein``. Two numbers: ``numeric_diff``.
    Two ``None``: 1; exactly one ``None``: 0. Anything else (mixed types, booleans):
    ``levenshtein`` of both as compact JSON with sorted keys, so ``True`` against
    ``False`` gives 0.2 and ``{"a": 1}`` against ``["a", 1]`` gives 0.5714.
    """
    return _diff(output, expected, preserve_strings)


def _diff(a: Any, b: Any, preserve_strings: bool) -> float:
    if not preserve_strings:
        a, b = _parsed_if_structured(a), _parsed_if_structured(b)
    if isinstance(a, dict) and isinstance(b, dict):
        if not a and not b:
            return 1.0
        keys = list(a) + [key for key in b if key not in a]
        return sum(_diff(a.get(key), b.get(key), preserve_strings) for key in keys) / len(keys)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if not a and not b:
            return 1.0
        total = sum(_diff(x, y, preserve_strings) for x, y in zip(a, b))
        return total / max(len(a), len(b))
    if isinstance(a, str) and isinstance(b, str):
        return similarity(a, b)
    if _is_number(a) and _is_number(b):
        if not (math.isfinite(a) and math.isfinite(b)):
            raise ValueError(f"json_diff: cannot compare the numbers {a!r} and {b!r}")
        return _number_similarity(float(a), float(b))
    if a is None and b is None:
        return 1.0
    if a is None or b is None:
        return 0.0
    return similarity(to_json(a, sort_keys=True), to_json(b, sort_keys=True))


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _parsed_if_structured(value: Any) -> Any:
    if isinstance(value, str) and value.lstrip()[:1] in ("{", "["):
        try:
            parsed = parse_json(value)
        except ValueError:
            return value
        if isinstance(parsed, (dict, list)):
            return parsed
    return value


def list_contains(output: Any, expected: Any, allow_extra_entities: bool = False) -> Score:
    """How well the output list covers the expected list, pairing elements one to one.

    Each output element is compared with each expected element by ``levenshtein`` of
    their ``to_text``; the best one-to-one pairing (maximum total similarity, not greedy)
    is summed and divided by ``max(len(output), len(expected))``, or by
    ``len(expected)`` with ``allow_extra_entities`` (extra output elements then cost
    nothing), and clamped to [0, 1]. Two empty lists give 1; exactly one empty list
    gives 0. A JSON string holding an array is accepted as a list; any other value
    raises ``ValueError``. The metadata lists the chosen ``pairs`` as
    ``{output, expected, score}``.
    """
    outputs, expecteds = _as_list("output", output), _as_list("expected", expected)
    if not outputs and not expecteds:
        return Score(score=1.0, metadata={"pairs": []})
    if not outputs or not expecteds:
        return Score(score=0.0, metadata={"pairs": []})
    output_texts = [to_text(item) for item in outputs]
    expected_texts = [to_text(item) for item in expecteds]
    scores = [[similarity(o, e) for e in expected_texts] for o in output_texts]
    pairs = max_weight_assignment(scores)
    total = sum(scores[i][j] for i, j in pairs)
    denominator = len(expecteds) if allow_extra_entities else max(len(outputs), len(expecteds))
    return Score(
        score=min(1.0, max(0.0, total / denominator)),
        metadata={
            "pairs": [
                {"output": outputs[i], "expected": expecteds[j], "score": scores[i][j]} for i, j in pairs
            ]
        },
    )


def _as_list(role: str, value: Any) -> list[Any]:
    if isinstance(value, (list, tuple)):
        return list(value)
    if isinstance(value, str):
        try:
            parsed = parse_json(value)
        except ValueError:
            parsed = None
        if isinstance(parsed, list):
            return parsed
        raise ValueError(
            f"list_contains: {role} must be a list (or a JSON array string), got the string {value!r}"
        )
    raise ValueError(f"list_contains: {role} must be a list, got {type(value).__name__} {value!r}")


def is_json(output: Any) -> Score:
    """Passes when the output is valid JSON.

    A string must parse as strict JSON (surrounding whitespace allowed; ``NaN``, trailing
    commas and Markdown code fences are not JSON); the reason then gives the parse
    error. A dict, list, number, boolean or a structure of those passes as it is (NaN,
    infinity and non-JSON objects inside it fail). ``None`` (no output) fails.
    """
    if output is None:
        return Score(score=0.0, passed=False, reason="no output (None) to read as JSON")
    if isinstance(output, str):
        try:
            parse_json(output)
        except ValueError as err:
            return Score(score=0.0, passed=False, reason=f"not valid JSON: {err}")
        return Score(score=1.0, passed=True)
    try:
        json.dumps(output, allow_nan=False)
    except (TypeError, ValueError) as err:
        return Score(score=0.0, passed=False, reason=f"not a JSON value: {err}")
    return Score(score=1.0, passed=True)


def json_schema(output: Any, schema: dict | None = None) -> Score:
    """Passes when the output is JSON that validates against ``schema`` (JSON Schema 2020-12).

    A string output is parsed as strict JSON first (a parse failure fails with the parse
    error as reason); any other output is validated as it is. On failure the reason is
    the most relevant validation error prefixed with its JSON path (``$.items[0].price:
    -1 is less than the minimum of 0``), followed by how many more errors there are.
    ``format`` is an annotation only, as the 2020-12 default says. A missing schema or
    one that is not a valid JSON Schema raises ``ValueError``. Validators are cached per
    schema.
    """
    if schema is None:
        raise ValueError("json_schema: no schema given; set it under `with: {schema: ...}`")
    if not isinstance(schema, (dict, bool)):
        raise ValueError(f"json_schema: schema must be a JSON Schema object, got {type(schema).__name__}")
    try:
        schema_key = json.dumps(schema, sort_keys=True)
    except (TypeError, ValueError) as err:
        raise ValueError(f"json_schema: schema is not plain JSON: {err}") from None
    validator = _validator(schema_key)
    if isinstance(output, str):
        try:
            output = parse_json(output)
        except ValueError as err:
            return Score(score=0.0, passed=False, reason=f"not valid JSON: {err}")
    from jsonschema.exceptions import best_match
    from referencing.exceptions import Unresolvable

    try:
        errors = list(validator.iter_errors(output))
    except Unresolvable as err:
        raise ValueError(f"json_schema: cannot resolve a $ref in the schema: {err}") from None
    if not errors:
        return Score(score=1.0, passed=True)
    error = best_match(errors)
    reason = f"{error.json_path}: {error.message}"
    if len(errors) > 1:
        reason += f" (and {len(errors) - 1} more error{'s' if len(errors) > 2 else ''})"
    return Score(score=0.0, passed=False, reason=reason)


@functools.lru_cache(maxsize=128)
def _validator(schema_key: str) -> Any:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    schema = json.loads(schema_key)
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as err:
        raise ValueError(f"json_schema: invalid schema at {err.json_path}: {err.message}") from None
    return Draft202012Validator(schema)
