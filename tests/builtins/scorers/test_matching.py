"""Normalised matching (``normalize:`` on the text scorers) and the ``answer`` scorer.

The CLI run at the end reads its reasons from results.json as a reader would.

The config error for an unknown option is a golden file, ``tests/data/scorers/<case>.expected.txt``;
after a deliberate change of wording regenerate it and review the diff::

    YAMLEVAL_UPDATE_GOLDEN=1 python -m pytest tests/builtins/scorers/test_matching.py
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import assert_golden, run_cli
from yamleval.plugins.registry import OptionError
from yamleval.builtins.scorers.answer import answer
from yamleval.builtins.scorers.normalize import normalizer
from yamleval.builtins.scorers.text import contains, contains_all, contains_any, exact_match, starts_with
from yamleval.records.types import Score

GOLDEN = Path(__file__).parent.parent.parent / "data" / "scorers"


def _check_golden(case: str, stderr: str) -> None:
    assert_golden(GOLDEN / f"{case}.expected.txt", stderr)


@pytest.mark.parametrize(("names", "text", "normalized"), [
    ("case", "Straße PARIS", "strasse paris"),
    ("whitespace", "  a \t b\n\nc  ", "a b c"),
    ("punctuation", "¡Hola!, «Paris»… 3.14", "Hola Paris 314"),
    ("articles", "The cat and an owl saw a theme", "cat and owl saw theme"),
    ("nfkc", "ﬁne Ａ①", "fine A1"),
    (["whitespace", "articles", "case", "punctuation"], "  The Eiffel   Tower! ", "eiffel tower"),
    ([], "As It Is", "As It Is"),
    ("whitespace", "", ""),
])
def test_each_normalization(names, text, normalized):
    assert normalizer(names)(text) == normalized


def test_normalizations_apply_in_one_order_whatever_the_list_says():
    text = "  THE   Answer.  "
    assert normalizer(["whitespace", "case", "articles"])(text) == normalizer(["articles", "case", "whitespace"])(text)


@pytest.mark.parametrize("bad", ["cse", ["case", "Case"], 3, [None]])
def test_an_unknown_normalization_is_an_option_error(bad):
    with pytest.raises(OptionError) as caught:
        normalizer(bad)
    assert caught.value.key == "normalize"


def test_unknown_normalization_suggests_the_closest():
    with pytest.raises(OptionError) as caught:
        normalizer(["case", "punctation"])
    assert "'punctation'" in str(caught.value)
    assert caught.value.hint.startswith("did you mean 'punctuation'? It accepts")


def test_without_normalize_the_scorers_answer_as_before():
    assert exact_match("Paris", "paris") is False
    assert starts_with("Yes, sure", "yes") is False
    assert contains("Paris", "paris").passed is False


def test_exact_match_normalized_says_what_it_compared():
    same = exact_match("  The PARIS. ", "paris", normalize=["case", "punctuation", "articles", "whitespace"])
    assert same == Score(score=1.0, passed=True, reason="same text (normalized: case, punctuation, articles, whitespace)")
    differ = exact_match("Lyon!", "Paris", normalize=["case", "punctuation"])
    assert differ.passed is False and differ.score == 0.0
    assert differ.reason == "'lyon' is not 'paris' (normalized: case, punctuation)"


def test_exact_match_normalized_on_empty_and_structured_values():
    assert exact_match("", "", normalize="whitespace").passed is True
    assert exact_match("   ", "", normalize="whitespace").passed is True
    assert exact_match('{"A": 1}', {"a": 1}, normalize="case").passed is True  # compact JSON, then folded


def test_unicode_matches_once_nfkc_and_case_fold_it():
    assert exact_match("ＣＡＦÉ", "café", normalize="case").passed is False
    assert exact_match("ＣＡＦÉ", "café", normalize=["nfkc", "case"]).passed is True
    composed, decomposed = "caf\u00e9", "cafe\u0301"
    assert exact_match(composed, decomposed, normalize="nfkc").passed is True


def test_contains_normalized():
    found = contains("The capital is  PARIS.", "capital is paris", normalize=["case", "whitespace"])
    assert found.passed is True and found.reason == "found 'capital is paris' (normalized: case, whitespace)"
    missing = contains("", "paris", normalize="case")
    assert missing.passed is False and missing.reason == "missing 'paris' (normalized: case)"


def test_contains_any_and_all_normalized():
    any_found = contains_any("I'd say LYON.", ["paris", "lyon"], normalize="case")
    assert any_found.passed is True and any_found.reason == "found 'lyon' (normalized: case)"
    none_found = contains_any("Berlin", ["paris", "lyon"], normalize="case")
    assert none_found.reason == "missing all of 'paris', 'lyon' (normalized: case)"
    partial = contains_all("Paris,\nand Lyon", ["paris and lyon", "nice"], normalize=["case", "punctuation", "whitespace"])
    assert partial.score == 0.5 and partial.passed is False
    assert partial.reason == "missing 'nice' (normalized: case, punctuation, whitespace)"


def test_starts_with_normalized():
    yes = starts_with("  «Yes», of course", "yes", normalize=["punctuation", "case"])
    assert yes.passed is True and yes.reason == "starts with 'yes' (normalized: case, punctuation)"
    no = starts_with("No, sorry", "yes", normalize="case")
    assert no.passed is False and no.reason == "starts with 'no, sorry', not 'yes' (normalized: case)"


@pytest.mark.parametrize(("output", "expected", "found"), [
    ("Let me think. ANSWER: Paris", "Paris", "Paris"),
    ("answer: lyon\nOn reflection...\nAnswer:  Paris  ", "Paris", "Paris"),  # the last one, trimmed
    ("Final ANSWER:\nParis", "Paris", "Paris"),
    ("Réponse ANSWER: Zürich ✓", "Zürich ✓", "Zürich ✓"),
])
def test_answer_prefix_takes_the_last_answer_line(output, expected, found):
    score = answer(output, expected, pattern="answer_prefix")
    assert score.passed is True
    assert score.reason == f"extracted {found!r} (answer_prefix), which matches the expected {expected!r}"


def test_answer_prefix_with_normalize_and_without_one():
    assert answer("ANSWER: the Eiffel Tower.", "eiffel tower", pattern="answer_prefix",
                  normalize=["case", "punctuation", "articles"]).passed is True
    assert answer("ANSWER: the Eiffel Tower.", "eiffel tower", pattern="answer_prefix").passed is False
    nothing = answer("Paris, I believe", "Paris", pattern="answer_prefix")
    assert nothing == Score(score=0.0, passed=False, reason="no 'ANSWER:' line in the output")
    assert answer("ANSWER:   ", "Paris", pattern="answer_prefix").reason == "no 'ANSWER:' line in the output"


@pytest.mark.parametrize(("output", "expected", "passed", "found"), [
    ("The total is 1,234.50 dollars.", 1234.5, True, "1,234.50"),
    ("First 3, then 4, finally 42", "42", True, "42"),
    ("It is 42.0", 42, True, "42.0"),
    ("Between -3.5e2 and nothing", -350, True, "-3.5e2"),
    ("about .5 of it", "0.5", True, ".5"),
    ("The answer is 41.", 42, False, "41"),
    ("On 2024-01-05", 5, True, "05"),
])
def test_number_takes_the_last_number_and_compares_numerically(output, expected, passed, found):
    score = answer(output, expected, pattern="number")
    assert score.passed is passed
    assert score.reason.startswith(f"extracted {found!r} (number), which {'matches' if passed else 'is not'} the expected")


def test_number_nothing_found_fails_and_a_non_number_expected_is_an_error():
    assert answer("", 3, pattern="number").reason == "no number in the output"
    assert answer("e5 and version v2", 2, pattern="number").reason == "no number in the output"
    with pytest.raises(ValueError, match="the expected value 'three' is not a number"):
        answer("3", "three", pattern="number")


@pytest.mark.parametrize(("output", "found"), [
    ("Answer: B", "B"),
    ("After weighing them, the answer is (C).", "C"),
    ("The answer is a bit subtle; I choose (D)", "D"),  # "a" is a word, not a choice
    ("A) too small\nB) right", "B"),
    ("  (e)  ", None),  # choices are capitals
    ("B.", "B"),
    ("I think so", None),
    ("", None),
])
def test_letter_finds_a_choice_letter(output, found):
    score = answer(output, "b" if found == "B" else found or "A", pattern="letter")
    if found is None:
        assert score == Score(score=0.0, passed=False, reason="no choice letter in the output")
    else:
        assert score.passed is True and score.reason.startswith(f"extracted {found!r} (letter)")


@pytest.mark.parametrize("expected", ["B", "b", "(B)", "B)"])
def test_letter_reads_the_expected_letter_as_written(expected):
    assert answer("I'd go with (B).", expected, pattern="letter").passed is True
    assert answer("I'd go with (C).", expected, pattern="letter").passed is False


def test_line_takes_the_last_line_that_is_not_blank():
    assert answer("Reasoning...\n\n  Paris  \n\n", "Paris", pattern="line").passed is True
    wrong = answer("Paris\nLyon", "Paris", pattern="line")
    assert wrong.reason == "extracted 'Lyon' (line), which is not the expected 'Paris'"
    assert answer(" \n\t\n", "Paris", pattern="line").reason == "no line that is not blank in the output"


def test_regex_takes_its_first_group_of_the_last_match():
    assert answer("score=7 ... score=9", "9", pattern="regex", regex=r"score=(\d+)").passed is True
    assert answer("id 12 then id 13", "id 13", pattern="regex", regex=r"id \d+").passed is True
    assert answer("nothing", "9", pattern="regex", regex=r"score=(\d+)").reason == "no match of the regex in the output"


@pytest.mark.parametrize(("options", "key", "message"), [
    ({"pattern": "leter"}, "pattern", "unknown pattern 'leter'"),
    ({"pattern": "regex"}, "pattern", "pattern 'regex' needs `regex:`"),
    ({"pattern": "regex", "regex": "(unclosed"}, "regex", "invalid regular expression '(unclosed'"),
    ({"pattern": "line", "regex": "x"}, "regex", "`regex:` is used only with pattern 'regex'"),
    ({"pattern": "line", "normalize": ["case", "nfc"]}, "normalize", "unknown normalization 'nfc'"),
])
def test_answer_options_are_checked_at_load_time(options, key, message):
    with pytest.raises(OptionError) as caught:
        answer.validate_with(options)
    assert caught.value.key == key and str(caught.value).startswith(message)


def _write(tmp_path: Path, scorers: str, items: str) -> Path:
    (tmp_path / "evals.yaml").write_text(f"""\
version: 1
experiments:
  - id: matching
    dataset:
      items:
{items}
    runner: echo
    scorers:
{scorers}
""", encoding="utf-8")
    return tmp_path


def test_an_unknown_normalization_is_a_located_config_error(tmp_path):
    _write(tmp_path, "      - {uses: contains, with: {normalize: [case, whitespaces]}}",
           '        - {input: "Paris", expected: "paris"}')
    for command in ("validate", "run"):
        done = run_cli(command, "evals.yaml", cwd=tmp_path, NO_COLOR="1")
        assert done.returncode == 2, done.stdout + done.stderr
        assert "Traceback" not in done.stderr
    _check_golden("unknown_normalization", done.stderr)


def test_a_run_with_normalized_matching_and_answers_gives_readable_reasons(tmp_path):
    _write(tmp_path, """\
      - {uses: answer, id: final, with: {pattern: answer_prefix, normalize: [case, punctuation]}}
      - {uses: answer, id: total, value: 1234, with: {pattern: number}}
      - {uses: contains_any, with: {normalize: [nfkc, case]}}
      - {uses: exact_match, value: "answer: paris", with: {normalize: [case, whitespace, punctuation]}}""", """\
        - {id: right, input: "Roughly 1,234 people.\\nANSWER: Paris!", expected: paris}
        - {id: wrong, input: "ＰＡＲＩＳ? No: 12 people.", expected: [paris]}""")
    done = run_cli("run", "evals.yaml", "--report-dir", "reports", cwd=tmp_path, NO_COLOR="1")
    assert done.returncode == 1, done.stdout + done.stderr
    results = json.loads((tmp_path / "reports" / "results.json").read_text(encoding="utf-8"))
    reasons = {item["id"]: {scorer: (score["passed"], score["reason"]) for scorer, score in item["scores"].items()}
               for item in results["experiments"][0]["items"]}
    assert reasons["right"] == {
        "final": (True, "extracted 'Paris!' (answer_prefix), which matches the expected 'paris'"
                        " (normalized: case, punctuation)"),
        "total": (True, "extracted '1,234' (number), which matches the expected '1234'"),
        "contains_any": (True, "found 'paris' (normalized: nfkc, case)"),
        "exact_match": (False, "'roughly 1234 people answer paris' is not 'answer paris'"
                               " (normalized: case, punctuation, whitespace)"),
    }
    assert reasons["wrong"]["final"] == (False, "no 'ANSWER:' line in the output")
    assert reasons["wrong"]["total"] == (False, "extracted '12' (number), which is not the expected '1234'")
    assert reasons["wrong"]["contains_any"] == (True, "found 'paris' (normalized: nfkc, case)")
