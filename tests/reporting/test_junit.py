"""JUnit XML: counts, failure texts, XML-safe text, determinism, validity against junit-10.xsd,
and how test-report actions read its names and files."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from lxml import etree

import yamleval
from conftest import ROOT, cli_env, run_cli
from yamleval.records.errors import UsageError
from yamleval.reporting import junit, text, write_reports
from yamleval.reporting.files import render_with
from yamleval.records.types import RunInfo

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
    """Parse strictly and validate against junit-10.xsd as it is."""
    root = etree.fromstring(xml.encode("utf-8"))
    schema.assertValid(root)
    return root


def counts(element) -> tuple[int, ...]:
    keys = ("tests", "failures", "errors", "skipped")
    return tuple(int(element.get(k)) for k in keys if k in element.attrib)


def test_items_and_criteria_become_test_cases_with_the_right_counts(write_config, schema):
    results = run_all(write_config, MIXED)
    xml = junit.render(RUN, results)
    root = validated(schema, xml)
    assert counts(root) == (8, 2, 1), "junit-10.xsd has no `skipped` on <testsuites>"

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
    assert [c.get("classname") for c in cases.values()] == ["yamleval.answers"] * 6
    assert cases["good"].find("failure") is None and cases["good"].find("skipped") is None
    failure = cases["wrong"].find("failure")
    assert failure.get("message").startswith("exact_match failed (0.000); levenshtein 0.")
    assert "< 0.8" in failure.get("message")
    assert failure.text.split("\n", 1)[0] == failure.get("message"), "the body starts with the message"
    assert "input:\nLyon\nexpected:\nParis\noutput:\nLyon" in failure.text
    assert "scores:\n  exact_match: failed 0.000\n  levenshtein: failed 0.000 (threshold 0.8) — " in failure.text, "the scorer's verdict, not that it ran"
    assert "success" not in failure.text
    assert "no expected value" in cases["unjudged"].find("skipped").get("message")

    assert cases["criterion: mean_score >= 0.9"].find("failure").get("message").startswith("mean_score 0.")
    warn = cases["criterion: pass_rate[exact_match] >= 0.9"]
    assert warn.find("failure") is None
    assert warn.find("skipped").get("message").startswith(
        "warning (severity warn, not fatal): pass_rate of exact_match")
    some = cases["criterion: some pass (pass_rate >= 0.1)"]
    assert list(some) == [some.find("system-out")]
    assert not [c for c in root.iter("testcase") if "file" in c.attrib], "xunit2 has no file or line"

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
            dataset: {items: [{input: a, expected: a}, {id: "criterion: pass_rate >= 0.5", input: b}]}
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
    assert [c.get("name") for c in twice.iter("testcase")] == [
        "item-1", "criterion: pass_rate >= 0.5 #3", "criterion: pass_rate >= 0.5", "criterion: pass_rate >= 0.5 #2"
    ], "items and criteria share the experiment's classname, and an item takes no criterion's name"
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
    assert "trajectory: 1 step, 1 tool call\n  step 1\n    tool call x" in failure.text


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


# -- how test-report actions read the file ---------------------------------------------------

def _int(text: str | None) -> int | None:
    """JavaScript's ``parseInt`` as safeParseInt uses it: leading digits, else None."""
    found = re.match(r"\s*[+-]?\d+", text or "")
    return int(found.group()) if found else None


def _file_and_line(file: str | None, line: str | None, classname: str, output: str) -> tuple[str, int]:
    """resolveFileAndLine: the file attribute, else the classname's last dot-separated part;
    without a line attribute, the last ``<file>…:N`` of the failure text."""
    file_name = file or classname.split(".")[-1]
    number = _int(line)
    if file_name and number:
        return file_name, number
    matches = re.findall(f" [^ ]*{re.escape(file_name).replace('::', '/', 1)}.*?:\\d+", output)
    if not matches:
        return file_name, number or 1
    return file_name, _int(matches[-1].split(":")[-1]) or -1


def _resolved(workspace: Path, file_name: str) -> str:
    """A file that exists is taken as it is; else resolvePath globs ``**/<name>.*``: a guess."""
    if (workspace / file_name).exists():
        return file_name
    name = file_name.removeprefix("./")
    for found in sorted(workspace.glob(f"**/{name}.*")):
        if not any(part in str(found.resolve()) for part in ("/build/", "/__pycache__/", "/node_modules/")):
            return found.relative_to(workspace).as_posix()
    return name


def action_junit_report(xml: bytes, workspace: Path, template: str | None = None) -> dict[tuple[str, str], tuple]:
    """(classname, name) -> (path, line, title) of each test case as mikepenz/action-junit-report
    (src/testParser.ts, createTestCaseAnnotation) annotates it, with ``check_title_template``
    ``template`` when given, for a case with a failure (passed and skipped cases are resolved
    the same way with ``include_passed`` and ``annotate_notice``)."""
    root = etree.fromstring(xml)
    bread_crumb = f"{root.get('name')}/" if root.get("name") else ""
    shown = {}
    for suite in root.iter("testsuite"):
        for case in suite.iter("testcase"):
            name, classname = case.get("name"), case.get("classname")
            issue = next(iter(case.findall("failure") + case.findall("error")), None)
            get = issue.get if issue is not None else lambda key: None
            stack = (issue.text or "").strip() if issue is not None else ""
            file_name, line = _file_and_line(case.get("file") or get("file") or suite.get("file"),
                                             case.get("line") or get("line") or suite.get("line"),
                                             classname or name, stack)
            path = _resolved(workspace, file_name)
            if template is None:
                title = f"{file_name}.{name}" if file_name != name else name
            else:
                title = (template.replace("{{FILE_NAME}}", path if file_name != name else "", 1)
                         .replace("{{BREAD_CRUMB}}", bread_crumb, 1).replace("{{SUITE_NAME}}", suite.get("name"), 1)
                         .replace("{{TEST_NAME}}", name, 1)
                         .replace("{{CLASS_NAME}}", (classname or name).split(".")[-1], 1))
            shown[classname, name] = (path, line, title)
    return shown


DOTTED = """
  # failures, errors and a warn criterion under a dotted id; its item ids repeat the demo's
  - id: v1.2
    dataset: {file: datasets/v12.jsonl}
    runner: fixture_plugins.behaviours:per_item
    scorers: [exact_match]
    pass_criteria:
      - {type: pass_rate, min: 1.0}
      - {type: pass_rate, scorer: exact_match, min: 0.9, severity: warn}
"""
V12 = [{"id": "greeting", "input": "hello", "expected": "hello"}, {"id": "boom", "input": "raise"},
       {"id": "junk", "input": "junk", "expected": "x"}]


def test_test_report_actions_read_every_case_whole(tmp_path, schema):
    """The demo with one more experiment, run as the composite action runs it (xunit1), then
    rendered again as xunit2: every case reads whole in action-junit-report (its own rules,
    above), Jenkins and dorny/test-reporter (both by class name), and xunit1 puts each item at
    its dataset row and each criterion at its line in the config."""
    for name in ("evals.yaml", "datasets", "plugins"):
        source = ROOT / name
        (shutil.copytree if source.is_dir() else shutil.copy)(source, tmp_path / name)
    with open(tmp_path / "evals.yaml", "a", encoding="utf-8") as config:
        config.write(DOTTED)
    (tmp_path / "datasets" / "v12.jsonl").write_text("".join(json.dumps(row) + "\n" for row in V12))
    script = next(step["run"] for step in yaml.safe_load((ROOT / "action.yml").read_text())["runs"]["steps"]
                  if step.get("id") == "run")
    env = cli_env(YAMLEVAL_CONFIG="evals.yaml", YAMLEVAL_ARGS="", YAMLEVAL_REPORT_DIR="reports",
                  GITHUB_OUTPUT=str(tmp_path / "output"), PATH=f"{Path(sys.executable).parent}{os.pathsep}"
                  f"{os.environ['PATH']}")
    env.pop("GITHUB_ACTIONS", None)
    done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert "exit-code=1" in (tmp_path / "output").read_text(), done.stdout + done.stderr  # v1.2 errored
    xunit1 = (tmp_path / "reports" / "junit.xml").read_bytes()
    again = run_cli("report", "--format", "junit", "--report-dir", "xunit2", "--junit-family", "xunit2",
                    "--store", ".yamleval/results.db", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    xunit2 = (tmp_path / "xunit2" / "junit.xml").read_bytes()
    schema.assertValid(etree.fromstring(xunit2))
    assert not schema.validate(etree.fromstring(xunit1)), "xunit1's file and line are not in junit-10.xsd"

    root = etree.fromstring(xunit2)
    experiments = [suite.get("name") for suite in root.iter("testsuite")]
    assert experiments[-1] == "v1.2" and root.get("failures") != "0" and root.get("errors") != "0"
    for suite in root.iter("testsuite"):
        # dorny groups cases by classname; Jenkins splits it at its last dot into package and class
        [classname] = {case.get("classname") for case in suite.iter("testcase")}
        assert classname.split(".") == ["yamleval", suite.get("name").replace(".", "·")]

    plain = action_junit_report(xunit2, tmp_path)
    titles = [title for _, _, title in plain.values()]
    assert len(set(titles)) == len(titles), "no two rows read the same"
    criteria = sorted(title for title in titles if ".criterion: " in title)
    assert criteria == ["agent-tools.criterion: pass_rate >= 1",
                        "arithmetic.criterion: mean_score[numeric_diff] >= 0.95",
                        "json-answers.criterion: mean_score[json_diff] >= 0.99",
                        "model-choice/large-chatty.criterion: pass_rate >= 0.6",
                        "model-choice/large.criterion: pass_rate >= 0.6",
                        "model-choice/small.criterion: pass_rate >= 0.6",
                        "shout-command.criterion: pass_rate >= 1",
                        "support-answers.criterion: overall quality (mean_score >= 0.75)",
                        "support-answers.criterion: pass_rate >= 0.8",
                        "support-answers.criterion: pass_rate[exact_match] >= 0.9",
                        "v1·2.criterion: pass_rate >= 1", "v1·2.criterion: pass_rate[exact_match] >= 0.9"]
    assert plain["yamleval.v1·2", "boom"][2] == "v1·2.boom"
    assert plain["yamleval.arithmetic", "add"][:2] == ("datasets/arithmetic.csv", 1), "a file guessed from a name"

    template = re.search(r'check_title_template: "(.*?)"', (ROOT / "docs" / "ci.md").read_text()).group(1)
    located = action_junit_report(xunit1, tmp_path, template)
    assert located.keys() == plain.keys()
    lines = {path: (tmp_path / path).read_text().splitlines() for path, _, _ in located.values()}
    assert sorted(lines) == ["datasets/arithmetic.csv", "datasets/support.jsonl", "datasets/v12.jsonl", "evals.yaml"]
    for (classname, name), (path, line, title) in located.items():
        experiment = classname.removeprefix("yamleval.")
        assert title == f"{experiment} › {name}", "the README's template titles each case by its experiment"
        text = lines[path][line - 1]
        if name.startswith("criterion: "):
            assert path == "evals.yaml" and "type:" in text
        else:
            assert name in text, (path, line, text)
    assert located["yamleval.v1·2", "boom"][:2] == ("datasets/v12.jsonl", 2)
    assert located["yamleval.shout-command", "greeting"][:2] == ("evals.yaml", 72)
    assert located["yamleval.arithmetic", "add"][:2] == ("datasets/arithmetic.csv", 2)


def test_an_unknown_family_is_refused(tmp_path):
    with pytest.raises(UsageError, match="unknown JUnit family 'xunit3'; choose xunit2 or xunit1"):
        write_reports(str(tmp_path), ["junit:xunit3"], RUN, [])
    assert os.listdir(tmp_path) == [], "no file is left"


def test_the_failed_repeats_of_a_passed_flaky_item_are_flaky_failures(write_config, schema):
    [result] = run_all(write_config, """
        experiments:
          - id: coin
            repeats: 5
            reduce: any
            dataset: {items: [{id: mostly, input: q3, expected: right}, {id: rarely, input: q13, expected: right}]}
            runner: fixture_plugins.behaviours:CoinFlip
            scorers: [exact_match]
    """)
    root = validated(schema, junit.render(RUN, [result]))
    cases = {case.get("name"): case for case in root.iter("testcase")}
    for name, failed in (("mostly", 1), ("rarely", 4)):  # CoinFlip is right 4 times and once in 5 for them
        flaky = cases[name].findall("flakyFailure")
        assert len(flaky) == failed and cases[name].find("failure") is None
        assert all(f.get("type") == "failure" and " of 5: exact_match failed (0.000)" in f.get("message")
                   and "output:\nwrong" in f.text for f in flaky)
    assert counts(root.find("testsuite"))[:3] == (2, 0, 0), "a flaky item that passed is a passed test"


PASSING = """
    reports: {junit: {item_failures: %s}}
    experiments:
      - id: gated
        dataset:
          items:
            - {id: good, input: Paris, expected: Paris}
            - {id: fine, input: Rome, expected: Rome}
            - {id: wrong, input: Lyon, expected: Paris}
        runner: echo
        scorers: [exact_match]
        pass_criteria: [{type: pass_rate, min: 0.5}]
      - id: tolerant
        dataset: {items: [{id: fine, input: ok}, {id: ok, input: ok}, {id: boom, input: raise}]}
        runner: fixture_plugins.behaviours:per_item
        pass_criteria: [{type: error_rate, max: 0.5}]
"""


def enricomi_counts(xml: bytes) -> dict[str, int]:
    """Cases by state as EnricoMi/publish-unit-test-result-action counts them
    (python/publish/junit.py, get_results/get_result): junitparser's result elements, the most
    severe of error, failure, success, skipped; a case without one is a success."""
    from junitparser import JUnitXml

    tally = {"error": 0, "failure": 0, "success": 0, "skipped": 0}
    for suite in JUnitXml.fromstring(xml):
        for case in suite:
            states = {result._tag for result in case.result}
            tally[next((s for s in ("error", "failure", "skipped") if s in states), "success")] += 1
    return tally


def dorny_counts(xml: bytes) -> dict[str, int]:
    """Cases by result as dorny/test-reporter counts them (src/parsers/java-junit/java-junit-parser.ts,
    getTestCaseResult): failed with a `failure` or `error` child, else skipped with `skipped`."""
    tally = {"failed": 0, "skipped": 0, "success": 0}
    for case in etree.fromstring(xml).iter("testcase"):
        tally["failed" if case.find("failure") is not None or case.find("error") is not None else
              "skipped" if case.find("skipped") is not None else "success"] += 1
    return tally


def test_a_passed_experiment_lists_its_failed_items_as_allowed(write_config, schema, tmp_path):
    from junitparser import JUnitXml

    project = yamleval.load_project(write_config(PASSING % "allowed"))
    results = [yamleval.run_experiment(e) for e in project.experiments]
    assert [r.passed for r in results] == [True, True]
    write_reports(str(tmp_path), project.report_formats, RUN, results)
    xml = (tmp_path / "junit.xml").read_bytes()
    root = validated(schema, xml.decode())
    assert counts(root) == (8, 0, 0)
    gated, tolerant = root.findall("testsuite")
    assert counts(gated) == (4, 0, 0, 1) and counts(tolerant) == (4, 0, 0, 1)
    wrong = gated.find("testcase[@name='wrong']/skipped")
    assert wrong.get("type") == "yamleval.allowed_failure"
    assert wrong.get("message") == "failed within the experiment's criteria: exact_match failed (0.000)"
    assert "input:\nLyon\nexpected:\nParis\noutput:\nLyon" in wrong.text, "the detail stays in sight"
    boom = tolerant.find("testcase[@name='boom']/skipped")
    assert boom.get("type") == "yamleval.allowed_error"
    assert boom.get("message").startswith("errored within the experiment's criteria: runner raised RuntimeError")

    parsed = JUnitXml.fromstring(xml)
    assert (parsed.failures, parsed.errors) == (0, 0)
    assert enricomi_counts(xml) == {"error": 0, "failure": 0, "success": 6, "skipped": 2}
    assert dorny_counts(xml) == {"failed": 0, "skipped": 2, "success": 6}
    listed = {case.name: case.result[0].type for suite in parsed for case in suite if case.result}
    assert listed == {"wrong": "yamleval.allowed_failure", "boom": "yamleval.allowed_error"}


def test_item_failures_failure_keeps_every_failed_item_red(write_config, schema, tmp_path):
    from junitparser import JUnitXml

    project = yamleval.load_project(write_config(PASSING % "failure"))
    assert project.report_formats[1] == "junit:xunit2,failure"
    results = [yamleval.run_experiment(e) for e in project.experiments]
    write_reports(str(tmp_path), project.report_formats, RUN, results)
    xml = (tmp_path / "junit.xml").read_bytes()
    root = validated(schema, xml.decode())
    assert counts(root) == (8, 1, 1)
    assert root.find("testsuite/testcase[@name='wrong']/failure") is not None
    parsed = JUnitXml.fromstring(xml)
    assert (parsed.failures, parsed.errors) == (1, 1)
    assert enricomi_counts(xml) == {"error": 1, "failure": 1, "success": 6, "skipped": 0}
    assert dorny_counts(xml) == {"failed": 2, "skipped": 0, "success": 6}


def test_a_stored_run_rendered_again_keeps_the_junit_settings_of_its_own_config(write_config, tmp_path):
    write_config(PASSING.replace("reports: {junit:", "store: r.db\n    reports: {dir: out, junit:") % "failure")
    assert run_cli("run", "-q", cwd=tmp_path).returncode == 0
    ran = (tmp_path / "out" / "junit.xml").read_bytes()
    (tmp_path / "evals.yaml").unlink()  # rendered from the store alone, as a merged run's reports are
    again = run_cli("report", "latest", "--store", "r.db", "--format", "junit", "--report-dir", "again", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    rendered = (tmp_path / "again" / "junit.xml").read_bytes()
    assert dorny_counts(rendered) == dorny_counts(ran) == {"failed": 2, "skipped": 0, "success": 6}
    xunit1 = run_cli("report", "latest", "--store", "r.db", "--format", "junit", "--junit-family", "xunit1",
                     "--report-dir", "x1", cwd=tmp_path)
    assert xunit1.returncode == 0, xunit1.stderr  # a family given keeps the run's item_failures
    assert dorny_counts((tmp_path / "x1" / "junit.xml").read_bytes())["failed"] == 2


def test_a_failed_experiment_keeps_its_failures_whatever_the_setting(write_config, schema):
    results = run_all(write_config, MIXED)
    assert junit.render(RUN, results) == render_with(junit.Writer, RUN, results), "allowed is the default"
    xml = junit.render(RUN, results)
    assert enricomi_counts(xml.encode())["failure"] == 2 and dorny_counts(xml.encode())["failed"] == 3


def test_an_unknown_item_failures_is_refused(tmp_path):
    with pytest.raises(UsageError, match="unknown JUnit item_failures 'red'; choose allowed or failure"):
        write_reports(str(tmp_path), ["junit:xunit2,red"], RUN, [])


def test_junit_family_from_the_command_line_keeps_item_failures_from_the_config(write_config):
    from yamleval.config.loader import with_junit_family

    project = yamleval.load_project(write_config(PASSING % "failure"))
    assert with_junit_family(project.report_formats, "xunit1")[1] == "junit:xunit1,failure"
    assert with_junit_family(("junit", "json"), "xunit1") == ("junit:xunit1", "json")
