"""Dotted paths into JSON replies (yamleval.records.paths)."""
from __future__ import annotations

import pytest

from yamleval.records.paths import PathNotFound, lookup

REPLY = {"choices": [{"message": {"content": "hi", "role": "bot"}}], "data": {"answer": 42, "0": "zero"},
         "usage": None}


@pytest.mark.parametrize("path, value", [
    ("choices.0.message.content", "hi"),
    ("choices.-1.message.role", "bot"),
    ("data.answer", 42),
    ("data.0", "zero"),
    ("data", {"answer": 42, "0": "zero"}),
    ("usage", None),
])
def test_lookup_follows_keys_and_list_indexes(path, value):
    assert lookup(REPLY, path) == value


def test_a_missing_key_names_the_step_and_the_keys_there():
    with pytest.raises(KeyError) as caught:
        lookup(REPLY, "data.anwser")
    assert str(caught.value) == "no key 'anwser' at data in 'data.anwser'; keys there: answer, 0"


def test_a_missing_key_at_the_top_level():
    with pytest.raises(PathNotFound, match=r"^no key 'text' at the top level in 'text'; keys there: choices, data, usage$"):
        lookup(REPLY, "text")


def test_list_index_out_of_range_and_not_a_number():
    with pytest.raises(LookupError, match=r"index 3 is out of range at choices in 'choices.3.message'; it is a list of 1"):
        lookup(REPLY, "choices.3.message")
    with pytest.raises(LookupError, match=r"'first' is not a list index at choices .* a list of 1"):
        lookup(REPLY, "choices.first")


def test_stepping_into_a_scalar_says_what_is_there():
    with pytest.raises(LookupError, match=r"cannot look up 'x' at data.answer in 'data.answer.x': it is a number"):
        lookup(REPLY, "data.answer.x")
    with pytest.raises(LookupError, match="it is null"):
        lookup(REPLY, "usage.prompt_tokens")


def test_many_keys_are_shortened():
    with pytest.raises(LookupError, match=r"k19 and 5 more$"):
        lookup({f"k{i}": i for i in range(25)}, "nope")


@pytest.mark.parametrize("path", ["", "a..b", ".a", None])
def test_a_malformed_path_is_a_value_error(path):
    with pytest.raises(ValueError, match="invalid path"):
        lookup(REPLY, path)
