import math

import pytest

from yamleval.builtins.scorers.structured import is_json, json_diff, json_schema, list_contains, numeric_diff
from yamleval.records.types import Score

SEVEN_WORDS = ["workspaces", "section", "view", "others", "workspace", "team", "pinning"]
THREE_PHRASES = ["starred", "multiple different workspaces", "shortcuts"]


@pytest.mark.parametrize(
    ("output", "expected", "score"),
    [
        (0, 0, 1.0),
        (0, 1, 0.0),
        (1, 2, 0.66667),
        (-1, 2, 0.0),
        (40, 42, 0.97561),
        (3000, 8080, 0.54152),
        (42, 42, 1.0),
    ],
)
def test_numeric_diff_vectors(output, expected, score):
    assert numeric_diff(output, expected) == pytest.approx(score, abs=1e-4)
    assert numeric_diff(expected, output) == pytest.approx(score, abs=1e-4)


@pytest.mark.parametrize(
    ("output", "expected", "score"),
    [
        ("40", 42, 0.97561),
        (" 40 ", "42.0", 0.97561),
        ("1e3", 1000, 1.0),
        ("+2", -2, 0.0),
        (0.0, -0.0, 1.0),
        (-3, -1, 0.5),
        (1e308, 1e308, 1.0),
        (1e308, -1e308, 0.0),
        (0, 5, 0.0),
    ],
)
def test_numeric_diff_edge_cases(output, expected, score):
    assert numeric_diff(output, expected) == pytest.approx(score, abs=1e-4)


@pytest.mark.parametrize(
    "bad", ["abc", "", "  ", "1_000", "nan", "Infinity", "-inf", True, False, None, [5], {"n": 5}, math.nan, math.inf]
)
def test_numeric_diff_refuses_non_numbers(bad):
    with pytest.raises(ValueError, match="must be a"):
        numeric_diff(bad, 1)
    with pytest.raises(ValueError, match="expected must be a"):
        numeric_diff(1, bad)


@pytest.mark.parametrize(
    ("output", "expected", "score"),
    [
        (None, None, 1.0),
        ("", None, 0.0),
        ([], {}, 0.0),
        ([], [], 1.0),
        ({}, {}, 1.0),
        ({"a": 1}, {"a": 2}, 0.66667),
        ({"a": 1}, ["a", 1], 0.5714286),
        ({"a": 1}, {"b": {"a": 1}}, 0.0),
        ({"a": 1}, {"a": None}, 0.0),
        (
            {"mapping": {"a": "foo", "b": "bar"}},
            {"mapping": {"a": "Foo", "b": "Bar"}, "Extra": 5},
            0.33333,
        ),
        ('{"x":1,"y":2}', '{"y":2,"x":1}', 1.0),
        ('{"o1":{"x":2,"y":2}}', '{"o1":{"y":2,"x":1}}', 0.83333),
        ('{"x":1,"y":2}', '{"x":1,"z":2}', 0.33333),
        ("[1, 2]", "[2, 1]", 0.66667),
        (
            {"name": "VoltAgent", "config": {"port": 3000}},
            {"name": "VoltAgent", "config": {"port": 8080}},
            0.77076,
        ),
        ({"name": "VoltAgent", "config": {"port": 3000}}, {"name": "VoltAgent", "config": {"port": 3000}}, 1.0),
    ],
)
def test_json_diff_vectors(output, expected, score):
    assert json_diff(output, expected) == pytest.approx(score, abs=1e-4)


@pytest.mark.parametrize(
    ("output", "expected", "score"),
    [
        # Booleans are not numbers (JS): compared as the JSON texts "true" and "false".
        (True, False, 0.2),
        (True, True, 1.0),
        ({"ok": True}, {"ok": False}, 0.2),
        (True, 1, 0.0),
        ("true", "false", 0.2),
        # Strings that parse to scalars stay strings.
        ("123", "124", 0.66667),
        ("5", 5, 0.33333),
        # Arrays are positional; extra elements count as 0.
        ([1, 2, 3], [1, 2], 0.66667),
        (["a", "b"], ["b", "a"], 0.0),
        ((1, 2), [1, 2], 1.0),
        # Nested structures and missing keys.
        ({"a": {"b": [1, {"c": "x"}]}}, {"a": {"b": [1, {"c": "x"}]}}, 1.0),
        ({"a": {"b": [1, {"c": "x"}]}}, {"a": {"b": [1, {"c": "y"}]}}, 0.5),
        ({"a": None}, {}, 1.0),
        ({"a": 1, "b": 2}, {"a": 1}, 0.5),
        # Unicode is compared by code points and not escaped in the fallback.
        ({"k": "café"}, {"k": "cafe"}, 0.75),
        ({"k": ["é"]}, {"k": "é"}, 0.6),
        # A string holding JSON against the parsed value.
        ('{"a": [1, 2]}', {"a": [1, 2]}, 1.0),
        # A string that does not parse stays a string: '"{not json"' against '{"a":1}'.
        ("{not json", {"a": 1}, 0.09091),
    ],
)
def test_json_diff_edge_cases(output, expected, score):
    assert json_diff(output, expected) == pytest.approx(score, abs=1e-4)


def test_json_diff_preserve_strings_compares_the_text():
    assert json_diff('{"x":1,"y":2}', '{"y":2,"x":1}', preserve_strings=True) == pytest.approx(0.69231, abs=1e-4)
    # The string stays a string: '"{\"a\":1}"' against '{"a":1}' is 4 edits over 11.
    assert json_diff('{"a":1}', {"a": 1}, preserve_strings=True) == pytest.approx(0.63636, abs=1e-4)


def test_json_diff_refuses_nan():
    with pytest.raises(ValueError, match="cannot compare"):
        json_diff({"a": math.nan}, {"a": 1})


@pytest.mark.parametrize(
    ("output", "expected", "kwargs", "score"),
    [
        ([], [], {}, 1.0),
        (["0"], [], {}, 0.0),
        ([], ["0"], {}, 0.0),
        (["a"], ["a", "b"], {}, 0.5),
        (["a", "b"], ["a"], {}, 0.5),
        (["a", "b"], ["b"], {"allow_extra_entities": True}, 1.0),
        (SEVEN_WORDS, THREE_PHRASES, {}, 0.1218),
        (THREE_PHRASES, SEVEN_WORDS, {}, 0.1218),
        (["apple", "banana"], ["apple", "banana", "cherry"], {}, 0.66667),
        (["apple", "banana", "cherry"], ["apple", "banana", "cherry"], {}, 1.0),
        (["apple"], ["apple"], {}, 1.0),
    ],
)
def test_list_contains_vectors(output, expected, kwargs, score):
    result = list_contains(output, expected, **kwargs)
    assert isinstance(result, Score)
    assert result.score == pytest.approx(score, abs=1e-4)
    assert result.passed is None


def test_list_contains_pairs_optimally_not_greedily():
    # Greedy would pair "abcd" with its best match "abce" (0.75), leaving "xbce" with
    # "abcd" (0.5): 1.25. The optimum pairs "abcd"-"abcd" and "xbce"-"abce": 1.75.
    result = list_contains(["abcd", "xbce"], ["abce", "abcd"])
    assert result.score == pytest.approx(0.875, abs=1e-4)
    assert result.metadata["pairs"] == [
        {"output": "abcd", "expected": "abcd", "score": 1.0},
        {"output": "xbce", "expected": "abce", "score": 0.75},
    ]


def test_list_contains_allow_extra_entities_divides_by_expected():
    assert list_contains(["a", "b", "c"], ["a", "b"]).score == pytest.approx(0.66667, abs=1e-4)
    assert list_contains(["a", "b", "c"], ["a", "b"], allow_extra_entities=True).score == 1.0
    assert list_contains(["a"], ["a", "b"], allow_extra_entities=True).score == 0.5


def test_list_contains_compares_elements_as_text():
    assert list_contains([1, 2.0, True, None], ["1", "2", "true", ""]).score == 1.0
    result = list_contains([{"a": 1}], ['{"a":1}'])
    assert result.score == 1.0
    assert result.metadata["pairs"] == [{"output": {"a": 1}, "expected": '{"a":1}', "score": 1.0}]
    assert list_contains(["日本"], ["日本語"]).score == pytest.approx(0.66667, abs=1e-4)


def test_list_contains_accepts_a_json_array_string():
    assert list_contains('["apple", "banana"]', ["banana", "apple"]).score == 1.0
    assert list_contains(("x",), '["x"]').score == 1.0


@pytest.mark.parametrize("bad", ["apple, banana", '{"a": 1}', "", 5, None, {"a": 1}, True])
def test_list_contains_refuses_non_lists(bad):
    with pytest.raises(ValueError, match="output must be a list"):
        list_contains(bad, ["a"])
    with pytest.raises(ValueError, match="expected must be a list"):
        list_contains(["a"], bad)


@pytest.mark.parametrize(
    "output", ['{"a": 1}', " [1, 2] ", '"text"', "3.5", "null", "true", {"a": [1, None]}, [], 0, False, (1, 2)]
)
def test_is_json_accepts_json(output):
    assert is_json(output) == Score(score=1.0, passed=True)


@pytest.mark.parametrize(
    ("output", "reason"),
    [
        ("{'a': 1}", "not valid JSON: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"),
        ("[1, 2,]", "not valid JSON: Expecting value: line 1 column 7 (char 6)"),
        ("", "not valid JSON: Expecting value: line 1 column 1 (char 0)"),
        ("NaN", "not valid JSON: NaN is not valid JSON: line 1 column 1 (char 0)"),
        ('```json\n{"a": 1}\n```', "not valid JSON: Expecting value: line 1 column 1 (char 0)"),
        (None, "no output (None) to read as JSON"),
        (math.nan, "not a JSON value: Out of range float values are not JSON compliant"),
        ({"s": {1, 2}}, "not a JSON value: Object of type set is not JSON serializable"),
    ],
)
def test_is_json_fails_with_the_parse_error(output, reason):
    assert is_json(output) == Score(score=0.0, passed=False, reason=reason)


PRODUCT_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "items": {
            "type": "array",
            "items": {"type": "object", "properties": {"price": {"type": "number", "minimum": 0}}},
        },
    },
    "required": ["name"],
}


def test_json_schema_passes_valid_output():
    assert json_schema({"name": "x", "items": [{"price": 1}]}, PRODUCT_SCHEMA) == Score(score=1.0, passed=True)
    assert json_schema('{"name": "x"}', PRODUCT_SCHEMA) == Score(score=1.0, passed=True)
    assert json_schema("[1, 2]", {"type": "array", "items": {"type": "integer"}}).passed is True
    assert json_schema('"anything"', True).passed is True


def test_json_schema_reason_is_the_error_with_its_path():
    result = json_schema('{"name": "x", "items": [{"price": 2}, {"price": -1}]}', PRODUCT_SCHEMA)
    assert result == Score(score=0.0, passed=False, reason="$.items[1].price: -1 is less than the minimum of 0")


def test_json_schema_counts_further_errors():
    result = json_schema({"name": 5, "items": [{"price": -1}]}, PRODUCT_SCHEMA)
    assert result.passed is False
    assert result.reason.endswith(" (and 1 more error)")
    assert result.reason.startswith("$.")


def test_json_schema_missing_required_key():
    result = json_schema({}, PRODUCT_SCHEMA)
    assert result.reason == "$: 'name' is a required property"


def test_json_schema_fails_output_that_is_not_json():
    result = json_schema("{name: x}", PRODUCT_SCHEMA)
    assert result.passed is False
    assert result.score == 0.0
    assert result.reason.startswith("not valid JSON: Expecting property name")


def test_json_schema_ignores_key_order_for_its_cache():
    reordered = dict(reversed(list(PRODUCT_SCHEMA.items())))
    assert json_schema({"name": "x"}, reordered).passed is True
    assert json_schema({"name": 1}, reordered).passed is False


def test_json_schema_needs_a_schema():
    with pytest.raises(ValueError, match="no schema given"):
        json_schema({"a": 1})
    with pytest.raises(ValueError, match="must be a JSON Schema object"):
        json_schema({"a": 1}, "object")


def test_json_schema_refuses_an_invalid_schema():
    with pytest.raises(ValueError, match=r"invalid schema at \$\.type: 'objec' is not valid under any of the given"):
        json_schema({"a": 1}, {"type": "objec"})


def test_json_schema_refuses_an_unresolvable_ref():
    with pytest.raises(ValueError, match=r"cannot resolve a \$ref"):
        json_schema({"a": 1}, {"$ref": "#/$defs/missing"})
