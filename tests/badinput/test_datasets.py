"""Dataset files as they arrive from elsewhere: other encodings, byte-order marks, huge lines,
ragged rows, blank and broken lines, NUL bytes, empty files, the wrong top level.

Each is either read (a BOM, a 1 MB line, blank JSONL lines, CSV values with a NUL) or a
ConfigError at the file, line and column — in process and from ``validate`` and ``run``,
which exit 2 without a traceback. The handling is described in the manual's datasets page (docs/datasets.md).
"""
from __future__ import annotations

import codecs
import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import run_cli
from yamleval.engine import plan
from yamleval.config.loader import load_project
from yamleval.records.errors import ConfigError
from yamleval.records.codec import encode

pytestmark = pytest.mark.badinput

MB = 1_000_000
ONE = {"jsonl": b'{"input": "a", "expected": "a"}\n', "json": b'[{"input": "a", "expected": "a"}]\n',
       "yaml": b"- {input: a, expected: a}\n", "csv": b"input,expected\na,a\n"}


@pytest.fixture(autouse=True)
def _in_tmp_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # messages name files relative to here


def _config(tmp_path, name: str, data: bytes):
    (tmp_path / name).write_bytes(data)
    path = tmp_path / "evals.yaml"
    path.write_text(f"id: e\ndataset: {{file: {name}}}\nrunner: echo\nscorers: [exact_match]\n", encoding="utf-8")
    return path


def read(tmp_path, name: str, data: bytes) -> list:
    """The items of the dataset, after ``validate``'s checks have passed."""
    [experiment] = load_project([_config(tmp_path, name, data)]).experiments
    assert plan.check(experiment) == []
    return list(plan.prepare(experiment).open_dataset())


def error(tmp_path, name: str, data: bytes) -> ConfigError:
    """The one error ``validate`` finds in the dataset; reading it in a run raises the same."""
    [experiment] = load_project([_config(tmp_path, name, data)]).experiments
    [found] = plan.check(experiment)
    with pytest.raises(ConfigError) as raised:
        list(plan.prepare(experiment).open_dataset())
    assert raised.value.format_message() == found.format_message()
    return found


def where(found: ConfigError) -> str:
    loc = found.location
    return f"{loc.file}:{loc.line}:{loc.col}"


# --- read as data --------------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", sorted(ONE))
def test_a_utf8_byte_order_mark_is_dropped(tmp_path, fmt):
    [item] = read(tmp_path, f"data.{fmt}", codecs.BOM_UTF8 + ONE[fmt])
    assert (item.input, item.expected, item.metadata) == ("a", "a", None)


@pytest.mark.parametrize("fmt, data", [
    ("jsonl", json.dumps({"input": "x" * MB}).encode() + b"\n" + ONE["jsonl"]),
    ("json", json.dumps([{"input": "x" * MB}, {"input": "a"}]).encode()),
    ("yaml", b"- input: " + b"x" * MB + b"\n- {input: a}\n"),
    ("csv", b"input\n" + b"x" * MB + b"\na\n"),
])
def test_a_one_megabyte_line_is_read(tmp_path, fmt, data):
    big, small = read(tmp_path, f"data.{fmt}", data)
    assert big.input == "x" * MB and small.input == "a"


def test_blank_and_white_space_lines_of_jsonl_are_skipped(tmp_path):
    items = read(tmp_path, "data.jsonl", b'\n{"input": "a"}\n\n   \r\n\t\n{"input": "b"}\n\n')
    assert [(i.id, i.input) for i in items] == [("item-1", "a"), ("item-2", "b")]


def test_csv_line_endings_empty_rows_and_nul_in_values(tmp_path):
    items = read(tmp_path, "data.csv", b'input,expected\r\na,a\r\n\r\n"b\x00c","multi\nline"\r\n')
    assert [(i.input, i.expected) for i in items] == [("a", "a"), ("b\x00c", "multi\nline")]


@pytest.mark.parametrize("name, data", [("data.json", b"[]"), ("data.yaml", b"[]\n"), ("data.csv", b"input\n")])
def test_a_deliberately_empty_list_is_zero_items(tmp_path, name, data):
    assert read(tmp_path, name, data) == []


def test_unicode_separators_and_escaped_surrogates_are_data(tmp_path):
    items = read(tmp_path, "data.jsonl", '{"input": "a\u2028b\x85c\u202e"}\n{"input": "\\ud800"}\n'.encode())
    assert [i.input for i in items] == ["a\u2028b\x85c\u202e", "\ud800"]


# --- located errors ------------------------------------------------------------------------------

@pytest.mark.parametrize("name, data, at", [
    ("data.jsonl", b'{"input": "ok"}\n{"input": "caf\xe9"}\n', "data.jsonl:2:15"),
    ("data.json", b'[{"input": "ok"},\n {"input": "caf\xe9"}]\n', "data.json:2:16"),
    ("data.yaml", b"- {input: ok}\n- {input: caf\xe9}\n", "data.yaml:2:14"),
    ("data.csv", b"input,expected\nok,ok\ncaf\xe9,x\n", "data.csv:3:4"),
    ("data.csv", codecs.BOM_UTF8 + b"input\n\xff\n", "data.csv:2:1"),
])
def test_latin1_bytes_are_located(tmp_path, name, data, at):
    found = error(tmp_path, name, data)
    assert where(found) == at
    assert "not UTF-8" in found.message and "save the file as UTF-8" in found.format_message()


@pytest.mark.parametrize("fmt", sorted(ONE))
@pytest.mark.parametrize("encoding", ["utf-16", "utf-32"])
def test_utf16_and_utf32_files_are_named(tmp_path, fmt, encoding):
    found = error(tmp_path, f"data.{fmt}", ONE[fmt].decode().encode(encoding))
    assert where(found) == f"data.{fmt}:1:1"
    assert found.message == f"the file is {encoding.upper()} text, not UTF-8" and found.hint == "save it as UTF-8"


@pytest.mark.parametrize("fmt", sorted(ONE))
@pytest.mark.parametrize("data", [b"", b"\n\n  \n", codecs.BOM_UTF8, codecs.BOM_UTF8 + b" " * 70_000 + b"\n"])
def test_an_empty_file_is_an_error(tmp_path, fmt, data):
    found = error(tmp_path, f"data.{fmt}", data)
    assert where(found) == f"data.{fmt}:1:1" and found.message == "the dataset file is empty"
    assert "items: []" in found.hint


@pytest.mark.parametrize("data", [b"# only a comment\n", b"\n\xef\xbb\xbf"])
def test_a_yaml_file_of_comments_is_empty_too(tmp_path, data):
    found = error(tmp_path, "data.yaml", data)
    assert where(found) == "data.yaml:1:1" and found.message == "the dataset file is empty"


def test_ragged_csv_rows_are_located(tmp_path):
    found = error(tmp_path, "data.csv", b"input,expected\na,a\nb\nc,c\n")
    assert where(found) == "data.csv:3:1" and found.message == "row has 1 fields but the header has 2"
    found = error(tmp_path, "data.csv", b"input,expected\na,a\nb,b,b\n")
    assert where(found) == "data.csv:3:1" and found.message == "row has 3 fields but the header has 2"


def test_a_csv_column_named_twice_is_located(tmp_path):
    found = error(tmp_path, "data.csv", b"input,expected,input\na,b,c\n")
    assert where(found) == "data.csv:1:1" and found.message == "the header names the column 'input' twice"


@pytest.mark.parametrize("data, at, message", [
    (b'{"input": "a"}\n\n{"input": \n', "data.jsonl:3:11", "line is not valid JSON: Expecting value"),
    (b'{"input": "a"}\nnot json\n', "data.jsonl:2:1", "line is not valid JSON: Expecting value"),
    (b'{"input": "a\x00"}\n', "data.jsonl:1:13", "line is not valid JSON: Invalid control character at"),
    (b'{"input": "a"} {"input": "b"}\n', "data.jsonl:1:16", "line is not valid JSON: Extra data"),
    (b'{"input": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n", "data.jsonl:1:1", "a value is nested too deeply to read"),
    (b'{"input": ' + b"9" * 5000 + b"}\n", "data.jsonl:1:1", "a value cannot be read: Exceeds the limit (4300 "
                                                              "digits) for integer string conversion: value has "
                                                              "5000 digits"),
    (b'"just text"\n', "data.jsonl:1:1", "the item must be a mapping of fields (input, expected, ...), got a string"),
])
def test_invalid_jsonl_lines_are_located(tmp_path, data, at, message):
    found = error(tmp_path, "data.jsonl", data)
    assert (where(found), found.message) == (at, message)


@pytest.mark.parametrize("data, at, message", [
    (b'\n  {"input": "a"}', "data.json:2:3", "a .json dataset must be an array of objects"),
    (b'"text"', "data.json:1:1", "a .json dataset must be an array of objects"),
    (b'[{"input": "[[[["},\n ' + b"[" * 100_000 + b"]" * 100_000 + b"]", "data.json:2:101",
     "a value is nested too deeply to read"),
    (b'[{"input": 1},\n {"input": ' + b"9" * 5000 + b"}]", "data.json:2:12",
     "a value cannot be read: Exceeds the limit (4300 digits) for integer string conversion: value has 5000 digits"),
])
def test_a_json_file_that_is_not_a_list_of_objects(tmp_path, data, at, message):
    found = error(tmp_path, "data.json", data)
    assert (where(found), found.message) == (at, message)


def test_a_nul_byte_in_a_yaml_dataset_is_located(tmp_path):
    found = error(tmp_path, "data.yaml", b"- {input: a}\n- {input: b\x00}\n")
    assert where(found) == "data.yaml:2:12" and "#x0000 is not allowed" in found.message


# --- the same from the command line --------------------------------------------------------------

CLI_CASES = {
    "latin1.jsonl": (b'{"input": "ok", "expected": "ok"}\n{"input": "caf\xe9"}\n', "latin1.jsonl:2:15: error: "),
    "utf16.csv": (ONE["csv"].decode().encode("utf-16"), "utf16.csv:1:1: error: the file is UTF-16"),
    "empty.jsonl": (b"", "empty.jsonl:1:1: error: the dataset file is empty"),
    "ragged.csv": (b"input,expected\na,a\nb\n", "ragged.csv:3:1: error: row has 1 fields"),
    "deep.jsonl": (b'{"input": "a", "expected": "a"}\n{"input": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n",
                   "deep.jsonl:2:1: error: a value is nested too deeply"),
    "huge.json": (b'[{"input": ' + b"9" * 5000 + b"}]", "huge.json:1:12: error: a value cannot be read"),
}


@pytest.mark.parametrize("name", sorted(CLI_CASES))
def test_validate_and_run_exit_2_at_the_spot(tmp_path, name):
    data, first = CLI_CASES[name]
    _config(tmp_path, name, data)
    done = run_cli("validate", "evals.yaml", cwd=tmp_path)
    assert (done.returncode, "Traceback" in done.stderr) == (2, False), done.stderr
    assert done.stderr.startswith(first), done.stderr[:300]
    done = run_cli("run", "-q", "--store", "r.db", "--report-dir", "out", "evals.yaml", cwd=tmp_path)
    assert (done.returncode, "Traceback" in done.stderr) == (2, False), done.stderr
    assert first in done.stderr, done.stderr[:300]


def _strict_json(text: str):
    def refuse(token):
        raise AssertionError(f"{token} is not JSON")
    return json.loads(text, parse_constant=refuse)


def test_nan_and_infinity_in_data_keep_results_json_valid_and_echo_as_they_are_stored(tmp_path):
    _config(tmp_path, "data.jsonl", b'{"input": NaN, "expected": Infinity, "metadata": {"low": -Infinity}}\n'
                                    b'{"input": [NaN, -Infinity], "expected": [NaN, -Infinity]}\n'
                                    b'{"input": "b", "expected": "b"}\n')
    done = run_cli("run", "-q", "--store", "r.db", "--report-dir", "out", "evals.yaml", cwd=tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    results = _strict_json((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    first, second, third = results["experiments"][0]["items"]
    assert (first["input"], first["expected"], first["metadata"]) == ("NaN", "Infinity", {"low": "-Infinity"})
    assert (first["status"], first["output"], first["error"]) == ("failed", "NaN", None)  # NaN is not Infinity
    assert (second["status"], second["output"]) == ("passed", ["NaN", "-Infinity"])
    assert third["status"] == "passed"


def test_the_readme_describes_the_handling():
    from conftest import ROOT

    section = (ROOT / "docs" / "datasets.md").read_text(encoding="utf-8")
    for words in ("byte-order mark", "UTF-16", "empty", "blank lines", "ragged", "NaN"):
        assert re.search(re.escape(words), section, re.IGNORECASE), words


# --- any bytes at all ----------------------------------------------------------------------------

_PIECES = [b"{", b"}", b"[", b"]", b'"', b",", b":", b"\n", b"\r\n", b" ", b"input", b'"input"', b"expected",
           b"NaN", b"-Infinity", b"1e999", b"9" * 5000, b"\\ud800", b"\\u0000", b"\x00", b"\xe9", b"\xef\xbb\xbf",
           b"\xff\xfe", b"- ", b"&a ", b"*a", b"!!python/object:os.system", b"a,b", b'"a,""b"', b"\t"]
dataset_bytes = st.one_of(st.binary(max_size=200), st.lists(st.sampled_from(_PIECES), max_size=30).map(b"".join))


@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.sampled_from(sorted(ONE)), dataset_bytes)
def test_any_bytes_in_a_dataset_file_are_items_or_a_located_error(tmp_path, fmt, data):
    name = f"data.{fmt}"
    [experiment] = load_project([_config(tmp_path, name, data)]).experiments
    errors = plan.check(experiment)
    for found in errors:
        assert type(found) is ConfigError and found.location.file in (name, "evals.yaml"), found.format_message()
        assert found.location.line is not None, found.format_message()
    if not errors:
        for item in plan.prepare(experiment).open_dataset():
            for value in (item.input, item.expected, item.metadata):
                _strict_json(encode(value))
