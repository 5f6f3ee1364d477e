"""JUnit XML: counts, failure texts, XML-safe text, determinism, validity against junit-10.xsd."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from lxml import etree

import yamleval
from yamleval.reporting import junit, text, write_reports
from yamleval.types import RunInfo

XSD = Path(__file__).parents[1] / "data" / "junit" / "junit-10.xsd"  # from the JUnit project, see SOURCE.md
RUN = RunInfo(run_id="r1", status="completed", started_at="2026-01-01T00:00:00Z", config_hash="c0ffee",
              git_commit="0123456789abcdef", yamleval_version="0.1.0", host="ci-runner")

MIXED = """
    experiments:
      - id: answers
        label: Capital cities
        dataset:
          items:
            - {id: good, input: Paris, expected: Paris}
            - {id: wrong, input: Lyon, expected: Paris}
            - {id: unjudged, input: anything}
        runner: echo
        scorers: [exact_match, {uses: levenshtein, threshold: 0.8}]
        pass_criteria:
          - {type: mean_score, min: 0.9}
          - {type: pass_rate, scorer: exact_match, min: 0.9, severity: warn}
          - {type: pass_rate, min: 0.1, label: some pass}
      - id: crashes
        dataset: {items: [{id: fine, input: ok}, {id: boom, input: raise}]}
        runner: fixture_plugins.behaviours:per_item
"""


@pytest.fixture(scope="module")
def schema():
    return etree.XMLSchema(etree.parse(str(XSD)))


def run_all(write_config, text: str, **options) -> list:
    return [yamleval.run_experiment(e, **options) for e in yamleval.load_experiments(write_config(text))]


def validated(schema, xml: str) -> etree._Element:
    """Parse strictly, drop the one extension attribute (``testsuites@skipped``), validate."""
    root = etree.fromstring(xml.encode("utf-8"))
    root.attrib.pop("skipped")
    schema.assertValid(root)
    return root


def counts(element) -> tuple[int, ...]:
    return tuple(int(element.get(k)) for k in ("tests", "failures", "errors", "skipped"))


def test_items_and_criteria_become_test_cases_with_the_right_counts(write_config, schema):
    results = run_all(write_config, MIXED)
    xml = junit.render(RUN, results)
    root = etree.fromstring(xml.encode("utf-8"))
    assert counts(root) == (8, 2, 1, 2)
    validated(schema, xml)

    answers, crashes = root.findall("testsuite")
    assert answers.get("name") == "answers" and answers.get("timestamp") == results[0].started_at
    assert counts(answers) == (6, 2, 0, 2)
    assert counts(crashes) == (2, 0, 1, 0)
    properties = {p.get("name"): p.get("value") for p in answers.find("properties")}
    assert properties["run_id"] == "r1" and properties["config_hash"] == "c0ffee"
    assert properties["git_commit"] == "0123456789abcdef" and properties["label"] == "Capital cities"
    assert float(properties["mean_score"]) == pytest.approx(results[0].summary.mean_score, abs=1e-5)
    assert "git_commit" not in {p.get("name") for p in
                               etree.fromstring(junit.render(RunInfo("r2", "completed", "x"), results).encode())
                               .find("testsuite/properties")}, "empty properties are left out"

    cases = {c.get("name"): c for c in answers.iter("testcase")}
    assert [c.get("classname") for c in cases.values()] == ["yamleval.answers"] * 3 + ["yamleval.answers.criteria"] * 3
    assert cases["good"].find("failure") is None and cases["good"].find("skipped") is None
    failure = cases["wrong"].find("failure")
    assert failure.get("message").startswith("exact_match failed (0.000); levenshtein 0.")
    assert "< 0.8" in failure.get("message")
    assert failure.text.split("\n", 1)[0] == failure.get("message"), "the body starts with the message"
    assert "input:\nLyon\nexpected:\nParis\noutput:\nLyon" in failure.text
    assert "no expected value" in cases["unjudged"].find("skipped").get("message")

    assert cases["mean_score >= 0.9"].find("failure").get("message").startswith("mean_score 0.")
    warn = cases["pass_rate[exact_match] >= 0.9"]
    assert warn.find("failure") is None
    assert warn.find("skipped").get("message").startswith(
        "warning (severity warn, not fatal): pass_rate of exact_match")
    assert list(cases["some pass (pass_rate >= 0.1)"]) == [cases["some pass (pass_rate >= 0.1)"].find("system-out")]

    boom = crashes.find("testcase[@name='boom']/error")
    assert boom.get("message") == "runner raised RuntimeError: boom on purpose"
    assert boom.text.startswith(boom.get("message") + "\n")


def test_times_are_seconds_with_three_decimals(write_config):
    results = run_all(write_config, MIXED)
    root = etree.fromstring(junit.render(RUN, results).encode())
    for element in [root, *root.iter("testsuite", "testcase")]:
        whole, _, decimals = element.get("time").partition(".")
        assert whole.isdigit() and len(decimals) == 3
    item = results[0].items[1]
    case = root.find("testsuite/testcase[@name='wrong']")
    assert case.get("time") == f"{item.latency_ms / 1000:.3f}"


NASTY = {
    "controls": "nul\x00 bell\x07 vt\x0b ff\x0c del\x7f c1\x85 keep\ttab\nline",
    "cdata": "x]]>y <![CDATA[ & </failure>",
    "ansi": "\x1b[31mred\x1b[0m \x1b]8;;http://x\x07link\x1b]8;;\x07 done",
    "astral": "emoji 😀 lone \ud800 surrogate \ufffe end",
    "huge": "é" * 1_000_000,
}


def test_nasty_outputs_still_give_valid_xml(write_config, tmp_path, schema):
    rows = [{"id": name, "question": text, "answer": "-"} for name, text in NASTY.items()]
    rows.append({"id": "id\x01with\x1b[1mescapes", "question": "q", "answer": "-"})
    (tmp_path / "nasty.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    results = run_all(write_config, """
        experiments:
          - id: nasty
            dataset: {file: nasty.jsonl, fields: {input: question, expected: answer}}
            runner: echo
            scorers: [exact_match]
    """)
    xml = junit.render(RUN, results)
    root = validated(schema, xml)
    assert counts(root.find("testsuite"))[:2] == (6, 6)
    bodies = {c.get("name"): c.find("failure").text for c in root.iter("testcase")}
    assert "nul bell vt ff del c1 keep\ttab\nline" in bodies["controls"]
    assert "x]]>y <![CDATA[ & </failure>" in bodies["cdata"]
    assert "red link done" in bodies["ansi"] and "\x1b" not in xml
    assert "emoji 😀 lone  surrogate  end" in bodies["astral"]
    assert bodies["huge"].count(text.TRUNCATED) == 2, "input and output are each cut"
    assert len(bodies["huge"].encode("utf-8")) < 3 * text.TEXT_LIMIT
    assert "idwithescapes" in bodies, "names are cleaned too"
    assert len(xml.encode("utf-8")) < 1_000_000


def test_the_same_results_give_the_same_bytes(write_config, tmp_path):
    results = run_all(write_config, MIXED)
    first = junit.render(RUN, results)
    assert junit.render(RUN, results) == first
    [path] = write_reports(str(tmp_path / "out"), ["junit"], RUN, results)
    assert Path(path).read_bytes() == first.encode("utf-8")
    assert os.listdir(tmp_path / "out") == ["junit.xml"], "no temporary file is left behind"
    assert first.startswith('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="yamleval" tests="8"')


def test_names_are_unique_and_no_suite_is_empty(write_config, schema):
    results = run_all(write_config, """
        experiments:
          - id: twice
            dataset: {items: [{input: a, expected: a}]}
            runner: echo
            scorers: [exact_match]
            pass_criteria:
              - {type: pass_rate, min: 0.5}
              - {type: pass_rate, min: 0.5}
    """)
    results += run_all(write_config, """
        experiments:
          - id: empty
            dataset: {items: [{input: a}]}
            runner: echo
    """, limit=0)
    root = validated(schema, junit.render(RUN, results))
    twice, empty = root.findall("testsuite")
    assert [c.get("name") for c in twice.iter("testcase")] == ["item-1", "pass_rate >= 0.5", "pass_rate >= 0.5 #2"]
    assert counts(empty) == (1, 0, 0, 1)
    assert empty.find("testcase/skipped").get("message") == "the dataset had no items"


def test_a_run_stopped_by_its_dataset_is_an_error(write_config, schema):
    results = run_all(write_config, """
        experiments:
          - id: cut
            dataset: {uses: fixture_plugins.behaviours:broken_dataset}
            runner: echo
    """)
    root = validated(schema, junit.render(RUN, results))
    assert counts(root.find("testsuite")) == (2, 0, 1, 0)
    error = root.find("testsuite/testcase[@name='run completed']/error")
    assert error.get("type") == "aborted" and "source went away" in error.get("message")


def test_a_failure_body_carries_the_compact_trajectory(write_config, schema):
    results = run_all(write_config, """
        experiments:
          - id: traced
            dataset: {items: [{id: t, input: a, expected: b}]}
            runner: fixture_plugins.behaviours:with_usage
            scorers: [exact_match]
    """)
    root = validated(schema, junit.render(RUN, results))
    [failure] = root.iter("failure")
    assert "trajectory:\n  1. step x — " in failure.text


def test_item_ids_that_clean_to_the_same_name_stay_apart(write_config, schema):
    results = run_all(write_config, r"""
        experiments:
          - id: spaced
            dataset: {items: [{id: "a b", input: x}, {id: "a  b", input: y}, {id: "c\td", input: z},
                              {id: "c d", input: w}]}
            runner: echo
    """)
    root = validated(schema, junit.render(RUN, results))
    assert [c.get("name") for c in root.iter("testcase")] == ["a b", "a b #2", "c d", "c d #2"]
