import math

import pytest

from yamleval.builtins.scorers.text import (
    contains,
    contains_all,
    contains_any,
    exact_match,
    levenshtein,
    parse_json,
    regex,
    similarity,
    starts_with,
    to_json,
    to_text,
)
from yamleval.records.types import Score


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("abc", "abc"),
        ("", ""),
        (None, ""),
        (True, "true"),
        (False, "false"),
        (42, "42"),
        (-7, "-7"),
        (1.0, "1"),
        (-0.0, "0"),
        (0.5, "0.5"),
        (1e21, "1e+21"),
        (1e-7, "1e-7"),
        (1.5e-6, "0.0000015"),
        (0.00001, "0.00001"),
        (math.nan, "NaN"),
        (math.inf, "Infinity"),
        (-math.inf, "-Infinity"),
        ({"b": 1, "a": [1.0, None, True]}, '{"b":1,"a":[1,null,true]}'),
        (["é", "日本"], '["é","日本"]'),
        ((1, 2), "[1,2]"),
    ],
)
def test_to_text_coerces_like_javascript(value, text):
    assert to_text(value) == text


def test_to_json_sorts_keys_on_request_and_writes_nan_as_null():
    assert to_json({"b": 2, "a": {"d": 1, "c": math.nan}}, sort_keys=True) == '{"a":{"c":null,"d":1},"b":2}'


def test_to_json_refuses_circular_values():
    value = []
    value.append(value)
    with pytest.raises(ValueError, match="JSON"):
        to_json(value)


def test_parse_json_is_strict():
    assert parse_json(' {"a": [1, 2]} ') == {"a": [1, 2]}
    for text in ("NaN", "[Infinity]", "{'a': 1}", "[1,]"):
        with pytest.raises(ValueError):
            parse_json(text)


@pytest.mark.parametrize(
    ("output", "expected", "score"),
    [
        ("", "", 1.0),
        ("", "a", 0.0),
        ("ab", "ac", 0.5),
        ("abc", "axc", 0.66667),
        ("xabxcdxxefxgx", "1ab2cd34ef5g6", 0.53846),
        ("apple", "banana", 0.16667),
        ("VoltAgent", "VoltAgent", 1.0),
    ],
)
def test_levenshtein_vectors(output, expected, score):
    assert levenshtein(output, expected).score == pytest.approx(score, abs=1e-4)
    assert similarity(output, expected) == pytest.approx(score, abs=1e-4)


def test_levenshtein_edge_cases():
    assert levenshtein(None, None).score == 1.0
    assert levenshtein(None, "abcd").score == 0.0
    assert levenshtein(12, "13").score == pytest.approx(0.5, abs=1e-4)
    assert levenshtein(True, "true").score == 1.0
    assert levenshtein(1.0, "1").score == 1.0
    assert levenshtein("Hello", "hello").score == pytest.approx(0.8, abs=1e-4)
    # Code points, not UTF-16 units or bytes: one substitution in four characters.
    assert levenshtein("café", "cafe").score == pytest.approx(0.75, abs=1e-4)
    assert levenshtein("a😀", "ab").score == pytest.approx(0.5, abs=1e-4)
    assert levenshtein({"a": 1}, '{"a":1}').score == 1.0


def test_levenshtein_gives_the_distance_and_both_lengths():
    assert levenshtein("Shipping takes 5 days", "Shipping takes 3 days") == Score(
        score=pytest.approx(1 - 1 / 21), reason="distance 1 (output 21 characters, expected 21)")
    assert levenshtein("apple", "banana").reason == "distance 5 (output 5 characters, expected 6)"
    assert levenshtein("same", "same") == Score(score=1.0)  # nothing to explain
    assert levenshtein("x" * 2000, "").reason == "distance 2,000 (output 2,000 characters, expected 0)"


@pytest.mark.parametrize(
    ("output", "expected", "score"),
    [
        ("hello", "hello", 1.0),
        (123, "123", 1.0),
        ({"a": 1, "b": 2}, {"b": 2, "a": 1}, 0.0),
        ({"a": 1, "b": 2}, '{"a":1, "b":2}', 1.0),
        ({"a": 1, "b": 2}, '{"b":2, "a":1}', 0.0),
        ([1, 2, 3], [3, 2, 1], 0.0),
        (None, None, 1.0),
    ],
)
def test_exact_match_vectors(output, expected, score):
    assert exact_match(output, expected) == score
    assert exact_match(expected, output) == score


@pytest.mark.parametrize(
    ("output", "expected", "score"),
    [
        ("hello", "Hello", 0.0),
        ("hello", "hello ", 0.0),
        ("", "", 1.0),
        (5, [5], 0.0),
        ([5], "[5]", 1.0),
        ([5], " [ 5 ] ", 1.0),
        ("[5]", 5, 0.0),
        (True, "true", 1.0),
        (1.0, 1, 1.0),
        (1.5, "1.5", 1.0),
        (None, "null", 1.0),
        (None, "", 0.0),
        (None, "None", 0.0),
        ({"a": None}, '{"a": null}', 1.0),
        ({"a": 1.0}, {"a": 1}, 1.0),
        ({"k": "é"}, '{"k": "\\u00e9"}', 1.0),
        ({"a": {"b": [1, 2]}}, {"a": {"b": [1, 2]}}, 1.0),
        ({"a": 1}, "not json", 0.0),
        ("{\"a\": 1}", '{"a":1}', 0.0),
        ((1, 2), [1, 2], 1.0),
    ],
)
def test_exact_match_edge_cases(output, expected, score):
    assert exact_match(output, expected) == score


@pytest.mark.parametrize(
    ("output", "expected", "kwargs", "result"),
    [
        ("The capital is Paris.", "Paris", {}, True),
        ("The capital is Paris.", "paris", {}, False),
        ("The capital is Paris.", "paris", {"ignore_case": True}, True),
        ("STRASSE", "straße", {"ignore_case": True}, True),
        ("anything", "", {}, True),
        ("", "x", {}, False),
        (None, "x", {}, False),
        ("answer: 42", 42, {}, True),
        ({"city": "Paris"}, '"city":"Paris"', {}, True),
        ("日本語のテキスト", "テキスト", {}, True),
    ],
)
def test_contains(output, expected, kwargs, result):
    score = contains(output, expected, **kwargs)
    assert (score.passed, score.score) == (result, 1.0 if result else 0.0)


def test_contains_says_what_was_missing_or_found():
    assert contains("The capital is Paris.", "Lyon") == Score(score=0.0, passed=False, reason="missing 'Lyon'")
    assert contains("The capital is Paris.", "paris", ignore_case=True).reason == "found 'paris'"
    long = "a very long expected answer " * 10
    assert contains("short", long).reason == "missing " + repr(long[:80] + "…")


def test_contains_any():
    assert contains_any("red and blue", ["green", "blue"]) == Score(score=1.0, passed=True, reason="found 'blue'")
    assert contains_any("red and blue", ["green", "BLUE"]) == Score(
        score=0.0, passed=False, reason="missing all of 'green', 'BLUE'")
    assert contains_any("red and blue", ["green", "BLUE"], ignore_case=True).reason == "found 'BLUE'"
    assert contains_any("red and blue", "red").passed is True
    assert contains_any("red and blue", "green").reason == "missing all of 'green'"
    assert contains_any("version 3", [3]).passed is True


def test_contains_all_passes_with_every_string():
    assert contains_all("red, green and blue", ["red", "blue"]) == Score(score=1.0, passed=True, reason="found all 2")
    assert contains_all("RED and Blue", ["red", "blue"], ignore_case=True).passed is True
    assert contains_all("red", "red") == Score(score=1.0, passed=True, reason="found all 1")


def test_contains_all_names_what_is_missing():
    result = contains_all("red and blue", ["red", "green", "blue", "pink"])
    assert result.passed is False
    assert result.score == pytest.approx(0.5, abs=1e-4)
    assert result.reason == "missing 'green', 'pink'"


@pytest.mark.parametrize("scorer", [contains_any, contains_all])
@pytest.mark.parametrize("expected", [[], None, {"a": 1}, ["ok", None], ["ok", ["nested"]]])
def test_contains_any_and_all_refuse_bad_expected(scorer, expected):
    with pytest.raises(ValueError, match="expected must be"):
        scorer("text", expected)


@pytest.mark.parametrize(
    ("output", "pattern", "kwargs", "result"),
    [
        ("order #12345 shipped", r"#\d{5}\b", {}, True),
        ("order #1234 shipped", r"#\d{5}\b", {}, False),
        ("Hello World", r"^hello", {}, False),
        ("Hello World", r"^hello", {"ignore_case": True}, True),
        ("line one\nline two", r"two$", {}, True),
        (12345, r"^\d+$", {}, True),
        (None, r"^$", {}, True),
        ({"ok": True}, r'"ok":true', {}, True),
        ("naïve café", r"caf\w", {}, True),
    ],
)
def test_regex(output, pattern, kwargs, result):
    assert regex(output, pattern, **kwargs) is result


def test_regex_refuses_an_invalid_pattern_and_names_it():
    with pytest.raises(ValueError, match=r"invalid regular expression '\(unclosed'"):
        regex("text", "(unclosed")
    # The failure is not cached away: it is raised again.
    with pytest.raises(ValueError, match="unclosed"):
        regex("text", "(unclosed")


@pytest.mark.parametrize("pattern", [None, 5, ["a"]])
def test_regex_refuses_a_non_string_pattern(pattern):
    with pytest.raises(ValueError, match="pattern string"):
        regex("text", pattern)


@pytest.mark.parametrize(
    ("output", "expected", "kwargs", "result"),
    [
        ("Yes, it is.", "Yes", {}, True),
        ("  \n Yes, it is.", "Yes", {}, True),
        ("Yes, it is.", "  Yes", {}, True),
        ("yes, it is.", "Yes", {}, False),
        ("yes, it is.", "Yes", {"ignore_case": True}, True),
        ("No. Yes.", "Yes", {}, False),
        ("", "", {}, True),
        ("", "a", {}, False),
        (42, 4, {}, True),
        ("Élan vital", "élan", {"ignore_case": True}, True),
    ],
)
def test_starts_with(output, expected, kwargs, result):
    assert starts_with(output, expected, **kwargs) is result


def test_levenshtein_refuses_texts_too_long_to_compare_within_a_timeout(write_config, tmp_path):
    """Two 2 MB texts would hold the interpreter for minutes (no timeout, no Ctrl-C): an error at once."""
    import json

    import yamleval

    row = {"id": "long", "input": "ab" * 1_000_000, "expected": "ba" * 1_000_000}
    (tmp_path / "long.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")
    path = write_config("""
        experiments:
          - id: e
            timeout: 2
            dataset: {file: long.jsonl}
            runner: echo
            scorers: [levenshtein]
    """)
    [experiment] = yamleval.load_experiments(path)
    [item] = yamleval.run_experiment(experiment).items
    assert item.status == "error"
    assert "texts too long to compare (2,000,000 and 2,000,000 characters" in item.scores["levenshtein"].error
