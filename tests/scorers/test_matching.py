"""Normalised matching (``normalize:`` on the text scorers) and the ``answer`` scorer.

The config error for an unknown option is a golden file, ``tests/data/scorers/<case>.expected.txt``;
after a deliberate change of wording regenerate it and review the diff::

    YAMLEVAL_UPDATE_GOLDEN=1 python -m pytest tests/scorers/test_matching.py
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import run_cli
from yamleval.plugins import OptionError
from yamleval.scorers.normalize import normalizer
from yamleval.scorers.text import contains, contains_all, contains_any, exact_match, starts_with
from yamleval.types import Score

GOLDEN = Path(__file__).parent.parent / "data" / "scorers"
UPDATE = os.environ.get("YAMLEVAL_UPDATE_GOLDEN") == "1"


def _check_golden(case: str, stderr: str) -> None:
    golden = GOLDEN / f"{case}.expected.txt"
    if UPDATE:
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(stderr, encoding="utf-8")
    assert stderr == golden.read_text(encoding="utf-8")


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
    assert caught.value.hint.startswith("did you mean 'punctuation'?")


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
