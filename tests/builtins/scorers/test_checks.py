"""Format and safety checks: contains_json, is_xml, is_sql, is_refusal, length, latency, cost."""
from __future__ import annotations

import json

import pytest

from conftest import run_cli
from yamleval.plugins.registry import OptionError
from yamleval.builtins.scorers.checks import (
    JSON_STARTS,
    contains_json,
    cost,
    is_refusal,
    is_sql,
    is_xml,
    latency,
    length,
)
from yamleval.records.types import Score, Usage

SCHEMA = {"type": "object", "required": ["city"], "properties": {"city": {"type": "string"}}}


@pytest.mark.parametrize(("output", "reason"), [
    ('Here:\n```json\n{"city": "Paris"}\n```\nand {"b": 2}', "a JSON object in a ```json block"),
    ('```\n[1, 2]\n```', "a JSON array in a fenced block"),
    ('```python\nprint(1)\n```\nthen {"a": 1}', "a JSON object in the text at character 29"),
    ('Result {not json} then {"b": [1, 2]} end', "a JSON object in the text at character 24"),
    ('See [1] and {"a": 1}', "a JSON array in the text at character 5"),  # the first that parses
    ('Ville : {"city": "Zürich ✓"}', "a JSON object in the text at character 9"),
    ({"city": "Paris"}, "a JSON object in the output itself"),
])
def test_contains_json_finds_json_inside_text(output, reason):
    assert contains_json(output) == Score(score=1.0, passed=True, reason=reason)


@pytest.mark.parametrize("output", ["", None, "no json here", '{"a": NaN}', "{'a': 1}", '{"a": 1,}', "[1, 2", "42"])
def test_contains_json_fails_without_an_object_or_array(output):
    assert contains_json(output) == Score(score=0.0, passed=False, reason="no JSON object or array in the output")


def test_contains_json_gives_up_after_so_many_openings():
    assert contains_json("{" * JSON_STARTS + ' {"a": 1}').passed is False
    assert contains_json("{" * (JSON_STARTS - 1) + ' {"a": 1}').passed is True


def test_contains_json_validates_against_a_schema():
    valid = contains_json('The answer: {"city": "Paris"}.', schema=SCHEMA)
    assert valid.passed is True and valid.reason == "a JSON object in the text at character 13, valid against the schema"
    invalid = contains_json('```json\n{"town": "Paris"}\n```', schema=SCHEMA)
    assert invalid.passed is False
    assert invalid.reason == "a JSON object in a ```json block, not valid: $: 'city' is a required property"


def test_a_bad_schema_is_refused_at_load_time():
    with pytest.raises(OptionError) as caught:
        contains_json.validate_with({"schema": {"type": "town"}})
    assert caught.value.key == "schema" and str(caught.value).startswith("invalid schema")


@pytest.mark.parametrize(("output", "passed", "reason"), [
    ("<a><b x='1'/></a>", True, "well-formed XML, root <a>"),
    ('  <?xml version="1.0"?>\n<città>é</città>\n', True, "well-formed XML, root <città>"),
    ("<a><b></a>", False, "not well-formed XML: mismatched tag: line 1, column 8"),
    ("<a/><b/>", False, "not well-formed XML: junk after document element: line 1, column 4"),
    ("plain text", False, "not well-formed XML: syntax error: line 1, column 0"),
    ("", False, "no XML: the output is empty"),
    ('<!DOCTYPE r [<!ENTITY e SYSTEM "file:///etc/passwd">]><r>&e;</r>', False,
     "refused: a <!DOCTYPE declaration (DTDs and entities are not read)"),
    ('<r><!ENTITY lol "lol"></r>', False, "refused: a <!ENTITY declaration (DTDs and entities are not read)"),
])
def test_is_xml(output, passed, reason):
    assert is_xml(output) == Score(score=1.0 if passed else 0.0, passed=passed, reason=reason)


@pytest.mark.parametrize(("output", "reason"), [
    ("SELECT 1", "parses as SQL (SQLite): 1 statement"),
    ("select name from users where id = 1;", "parses as SQL (SQLite): 1 statement (SQLite notes, about its"
                                               " empty database: no such table: users)"),
    ("SELECT 'a;b'; SELECT upper_case(2)", "parses as SQL (SQLite): 2 statements (SQLite notes, about its"
                                           " empty database: no such function: upper_case)"),
    ("SELECT * FROM t WHERE id = ?", "parses as SQL (SQLite): 1 statement (SQLite notes, about its empty"
                                     " database: no such table: t)"),
    ("SELECT ?", "parses as SQL (SQLite): 1 statement (SQLite notes, about its empty database: placeholders"
                 " without values)"),
    ("EXPLAIN QUERY PLAN SELECT 1 -- why", "parses as SQL (SQLite): 1 statement"),
    ("CREATE TABLE t (id INTEGER PRIMARY KEY); DROP TABLE t", "parses as SQL (SQLite): 2 statements (SQLite"
                                                             " notes, about its empty database: no such table: t)"),
])
def test_is_sql_passes_what_parses(output, reason):
    assert is_sql(output) == Score(score=1.0, passed=True, reason=reason)


@pytest.mark.parametrize(("output", "reason"), [
    ("SELEC * FROM users", 'not SQL (SQLite): near "SELEC": syntax error'),
    ("SELECT * FROM", "not SQL (SQLite): incomplete input"),
    ("SELECT 1; DELETE users", 'not SQL (SQLite): statement 2: near "users": syntax error'),
    ("SELECT TOP 5 * FROM t", 'not SQL (SQLite): near "5": syntax error'),
    ("SELECT 'unclosed", "not SQL (SQLite): unrecognized token: \"'unclosed\""),
    ("The query is: SELECT 1", 'not SQL (SQLite): near "The": syntax error'),
    ("", "no SQL statement in the output"),
    ("-- nothing\n/* at all */ ;", "no SQL statement in the output"),
])
def test_is_sql_fails_what_does_not(output, reason):
    assert is_sql(output) == Score(score=0.0, passed=False, reason=reason)


def test_is_sql_compiles_without_running(tmp_path):
    target = tmp_path / "attached.db"
    assert is_sql(f"ATTACH DATABASE '{target}' AS other; VACUUM INTO '{target}'").passed is True
    assert not target.exists()


@pytest.mark.parametrize(("output", "found"), [
    ("I'm sorry, but I can't help with that.", "I'm sorry, but"),
    ("I\u2019m unable to do this.", "I\u2019m unable to"),
    ("AS AN AI, I have no opinions.", "AS AN AI"),
    ("Je suis désolé, mais ce n'est pas possible.", "Je suis désolé, mais"),
    ("Es tut mir leid, aber das kann ich nicht.", "Es tut mir leid, aber"),
    ("Lo siento, pero no puedo ayudarte con eso.", "Lo siento, pero"),
])
def test_is_refusal_finds_a_refusal(output, found):
    assert is_refusal(output) == Score(score=1.0, passed=True, reason=f"a refusal: {found!r}")


@pytest.mark.parametrize("output", ["", "Paris is the capital of France.", "As an aid worker, I went there.",
                                    "I can help with that!", None])
def test_is_refusal_passes_nothing_else(output):
    assert is_refusal(output) == Score(score=0.0, passed=False, reason="no refusal phrase found")


def test_is_refusal_takes_more_phrases():
    assert is_refusal("That is outside my remit.").passed is False
    assert is_refusal("That is OUTSIDE my remit.", phrases=["outside my remit"]).reason == "a refusal: 'OUTSIDE my remit'"


@pytest.mark.parametrize(("output", "options", "passed", "reason"), [
    ("Hello, world!", {"max": 13}, True, "13 characters, at most 13"),
    ("Hello, world!", {"max": 3, "unit": "tokens"}, False, "4 tokens, over the maximum of 3"),
    ("one two  three", {"min": 2, "unit": "words"}, True, "3 words, at least 2"),
    ("word", {"min": 2, "max": 5, "unit": "words"}, False, "1 word, under the minimum of 2"),
    ("", {"min": 1}, False, "0 characters, under the minimum of 1"),
    ("", {"max": 0, "unit": "tokens"}, True, "0 tokens, at most 0"),
    ("日本語のテキスト😀", {"min": 9, "max": 9}, True, "9 characters, from 9 to 9"),
    ("l'été, déjà", {"min": 1, "max": 10, "unit": "tokens"}, True, "5 tokens, from 1 to 10"),
])
def test_length(output, options, passed, reason):
    assert length(output, **options) == Score(score=1.0 if passed else 0.0, passed=passed, reason=reason)


@pytest.mark.parametrize(("options", "key", "message"), [
    ({"max": 10, "unit": "chars"}, "unit", "unknown unit 'chars'"),
    ({}, "min", "give `min:`, `max:` or both"),
    ({"min": 5, "max": 2}, "min", "min 5 is more than max 2"),
    ({"max": -1}, "max", "max must be a number, not negative"),
    ({"min": "3"}, "min", "min must be a number, not negative"),
])
def test_length_options_are_checked_at_load_time(options, key, message):
    with pytest.raises(OptionError) as caught:
        length.validate_with(options)
    assert caught.value.key == key and str(caught.value).startswith(message)


def test_latency_and_cost_against_their_maximum():
    assert latency(250.4, max=1000) == Score(score=1.0, passed=True, reason="250 ms, within the maximum of 1,000 ms")
    assert latency(1234.5, max=1000).reason == "1,234 ms, over the maximum of 1,000 ms"
    assert cost(Usage(10, 20, 0.0021), max=0.01) == Score(score=1.0, passed=True,
                                                           reason="$0.0021, within the maximum of $0.01")
    assert cost(Usage(10, 20, 0.5), max=0.01).passed is False


def test_an_unknown_cost_fails():
    for usage in (None, Usage(10, 20)):
        assert cost(usage, max=1) == Score(score=0.0, passed=False,
                                           reason="no cost known: the runner reported none (give the model a price)")


APP = '''\
from yamleval import RunnerResult


def app(input):
    replies = {
        "json": 'Sure:\\n```json\\n{"city": "Paris"}\\n```',
        "bomb": "How to build one? I'm sorry, but I can't help with that.",
        "sql": "SELECT name FROM users WHERE id = 1",
        "xml": "<city>Paris</city>",
    }
    return RunnerResult(output=replies[input], usage={"prompt_tokens": 5, "completion_tokens": 7,
                                                      "cost": 0.002 if input != "xml" else 0.2})
'''


def test_a_run_with_several_checks_gives_readable_reasons(tmp_path):
    (tmp_path / "app.py").write_text(APP, encoding="utf-8")
    (tmp_path / "evals.yaml").write_text("""\
version: 1
experiments:
  - id: checks
    dataset:
      items:
        - {id: json, input: json}
        - {id: bomb, input: bomb}
        - {id: sql, input: sql}
        - {id: xml, input: xml}
    runner: app:app
    scorers:
      - {uses: contains_json, with: {schema: {type: object, required: [city]}}}
      - {uses: is_refusal, id: answers, negate: true}
      - {uses: length, with: {max: 12, unit: words}}
      - {uses: cost, with: {max: 0.01}}
      - {uses: latency, with: {max: 60000}}
      - is_sql
      - is_xml
""", encoding="utf-8")
    done = run_cli("run", "evals.yaml", "--report-dir", "reports", cwd=tmp_path, NO_COLOR="1")
    assert done.returncode == 1, done.stdout + done.stderr
    results = json.loads((tmp_path / "reports" / "results.json").read_text(encoding="utf-8"))
    items = {item["id"]: item for item in results["experiments"][0]["items"]}
    reasons = {item_id: {scorer: (score["passed"], score["reason"]) for scorer, score in item["scores"].items()}
               for item_id, item in items.items()}
    assert reasons["json"]["contains_json"] == (True, "a JSON object in a ```json block, valid against the schema")
    assert reasons["bomb"]["answers"] == (False, "a refusal: \"I'm sorry, but\"")
    assert reasons["json"]["answers"] == (True, "no refusal phrase found")
    assert reasons["bomb"]["length"] == (True, "12 words, at most 12")
    assert reasons["sql"]["is_sql"] == (True, "parses as SQL (SQLite): 1 statement (SQLite notes, about its empty"
                                              " database: no such table: users)")
    assert reasons["xml"]["is_xml"] == (True, "well-formed XML, root <city>")
    assert reasons["xml"]["cost"] == (False, "$0.2, over the maximum of $0.01")
    assert reasons["sql"]["cost"] == (True, "$0.002, within the maximum of $0.01")
    passed, said = reasons["sql"]["latency"]
    assert passed is True and said.endswith(" ms, within the maximum of 60,000 ms")
    assert [item["status"] for item in items.values()] == ["failed"] * 4  # each fails some check


def test_a_bad_option_is_a_located_config_error(tmp_path):
    (tmp_path / "evals.yaml").write_text("""\
version: 1
experiments:
  - id: checks
    dataset: {items: [{input: hi}]}
    runner: echo
    scorers:
      - {uses: length, with: {max: 100, unit: letters}}
""", encoding="utf-8")
    done = run_cli("validate", "evals.yaml", cwd=tmp_path, NO_COLOR="1")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.splitlines()[0] == ("evals.yaml:7:47: $.experiments[0].scorers[0].with.unit: error: unknown"
                                           " unit 'letters' (it accepts: characters, words, tokens)")


@pytest.mark.parametrize("phrases", ["outside my remit", [""], [3]])
def test_refusal_phrases_must_be_a_list_of_texts(phrases):
    with pytest.raises(OptionError) as caught:
        is_refusal.validate_with({"phrases": phrases})
    assert caught.value.key == "phrases"
