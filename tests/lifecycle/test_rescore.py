"""``yamleval rescore``: a stored run's outputs scored again by today's config, as a new run.

Its messages are golden files, ``tests/data/rescore/<case>.expected.txt``; after a deliberate
change of wording, regenerate them and review the diff::

    YAMLEVAL_UPDATE_GOLDEN=1 python -m pytest tests/lifecycle/test_rescore.py
"""
from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from conftest import assert_golden, run_cli
from servers.fixtures import openai_server  # noqa: F401
from servers.openai_server import tool_reply
from yamleval.store.writer import Store

RUNNER = "fixture_plugins.behaviours:noted"
GOLDEN = Path(__file__).parent.parent / "data" / "rescore"


def config(threshold: float, scorers: str = "", extra: str = "", broken: bool = False) -> str:
    """Three items the runner answers (one a scorer of ``threshold`` 0.5 passes, 0.9 fails), and with
    ``broken`` one it raises on."""
    return f"""
        store: r.db
        {extra}
        experiments:
          - id: e
            dataset:
              items:
                - {{id: same, input: abcd, expected: abcd}}
                - {{id: close, input: abcd, expected: abce}}
                - {{id: far, input: x, expected: yyyy}}
                {'- {id: broken, input: raise, expected: abcd}' if broken else ''}
            runner: {{uses: "{RUNNER}", with: {{log: calls.log}}}}
            scorers: [{{uses: levenshtein, threshold: {threshold}}}{scorers}]
            pass_criteria: [{{type: pass_rate, min: 0.5}}]
    """


def stored_runs(tmp_path) -> list[str]:
    store = Store(str(tmp_path / "r.db"))
    ids = [run.run_id for run in store.runs()]
    store.close()
    return ids


def calls(tmp_path) -> list[str]:
    return (tmp_path / "calls.log").read_text().split()


def stored(tmp_path, run_ref: str = "latest"):
    """The run, and its experiment's items by id, as the store keeps them."""
    store = Store(str(tmp_path / "r.db"))
    run = store.find_run(run_ref)
    [result] = store.results(run.run_id)
    items = {r.item.id: r for r in result.items}
    store.close()
    return run, result, items


def test_a_changed_threshold_gives_a_new_run_with_new_verdicts_and_no_runner_call(write_config, tmp_path):
    write_config(config(0.5))
    assert run_cli("run", "-q", cwd=tmp_path).returncode == 0  # same and close pass: 2 of 3 judged
    source, _, before = stored(tmp_path)
    ran = calls(tmp_path)
    write_config(config(0.9))
    done = run_cli("rescore", "latest", "--report-dir", "again", cwd=tmp_path)
    assert done.returncode == 1, done.stderr  # 1 of 3 passed: the pass_rate criterion fails
    assert calls(tmp_path) == ran, "no runner was called"
    run, result, after = stored(tmp_path)
    assert run.run_id != source.run_id and run.rescored_from == source.run_id and run.status == "completed"
    assert {i: r.status for i, r in before.items()} == {"same": "passed", "close": "passed", "far": "failed"}
    assert {i: r.status for i, r in after.items()} == {"same": "passed", "close": "failed", "far": "failed"}
    assert after["close"].scores["levenshtein"].threshold == 0.9
    for item_id, item in after.items():
        assert (item.output, item.latency_ms, item.usage, item.trace, item.metadata) == (
            before[item_id].output, before[item_id].latency_ms, before[item_id].usage, before[item_id].trace,
            before[item_id].metadata)
    assert not result.passed and result.summary.pass_rate == 1 / 3
    assert result.summary.criteria[0].passed is False
    assert f"run {run.run_id}: run {source.run_id} scored again" in done.stdout


def test_a_no_regression_criterion_judges_the_rescored_run_against_its_baseline(write_config, tmp_path):
    def gated(threshold: float) -> str:
        items = ", ".join(f"{{id: q{n}, input: abcd, expected: abce}}" for n in range(12))
        return f"""
            store: r.db
            experiments:
              - id: e
                dataset: {{items: [{items}]}}
                runner: {{uses: "{RUNNER}", with: {{log: calls.log}}}}
                scorers: [{{uses: levenshtein, threshold: {threshold}}}]
                pass_criteria: [{{type: no_regression, baseline: main}}]
        """

    write_config(gated(0.5))
    assert run_cli("run", "-q", "--tag", "main", cwd=tmp_path).returncode == 0
    source = stored_runs(tmp_path)[0]
    write_config(gated(0.9))  # every item now fails: twelve flips
    assert run_cli("rescore", "latest", "-q", cwd=tmp_path).returncode == 1
    _, result, _ = stored(tmp_path)
    [criterion] = result.summary.criteria
    assert criterion.type == "no_regression" and not criterion.skipped and criterion.passed is False
    assert criterion.detail.startswith(f"baseline {source}: ")


def test_runner_errors_stay_errors(write_config, tmp_path):
    write_config(config(0.5, broken=True))
    run_cli("run", "-q", cwd=tmp_path)
    _, _, before = stored(tmp_path)
    write_config(config(0.1, broken=True))
    run_cli("rescore", "latest", "-q", cwd=tmp_path)
    _, result, after = stored(tmp_path)
    assert after["broken"].status == "error" and after["broken"].scores == {}
    assert after["broken"].error == before["broken"].error and "boom on purpose" in after["broken"].error
    assert result.summary.errored == 1 and calls(tmp_path).count("broken") == 1


def test_the_new_run_records_its_source_in_runs_show_and_reports(write_config, tmp_path):
    write_config(config(0.5))
    run_cli("run", "-q", cwd=tmp_path)
    source, _, _ = stored(tmp_path)
    write_config(config(0.9))
    assert run_cli("rescore", source.run_id[:17], "-q", "--tag", "fixed", "--format", "json,markdown,html",
                   "--report-dir", "again", cwd=tmp_path).returncode == 1
    run, _, _ = stored(tmp_path)
    listed = run_cli("runs", cwd=tmp_path).stdout.splitlines()
    assert listed[0].split()[-2:] == ["rescored", "from"]
    assert listed[1].split()[0] == run.run_id and listed[1].split()[-2:] == ["fixed", source.run_id]
    assert listed[2].split()[0] == source.run_id and source.run_id not in listed[2].split()[1:]
    assert f"· rescored from {source.run_id}" in run_cli("show", "latest", cwd=tmp_path).stdout.splitlines()[0]
    report = json.loads((tmp_path / "again" / "results.json").read_text())
    assert report["run_id"] == run.run_id and report["rescored_from"] == source.run_id
    assert f"rescored from run {source.run_id}" in (tmp_path / "again" / "summary.md").read_text()
    assert f"rescored from run <code>{source.run_id}</code>" in (tmp_path / "again" / "report.html").read_text()
    assert sorted(p.name for p in (tmp_path / "again").iterdir()) == ["report.html", "results.json", "summary.md"]


def test_compare_of_the_source_and_the_rescored_run_reports_the_flips(write_config, tmp_path):
    write_config(config(0.5))
    run_cli("run", "-q", cwd=tmp_path)
    source, _, _ = stored(tmp_path)
    write_config(config(0.9))
    run_cli("rescore", "latest", "-q", cwd=tmp_path)
    rescored, _, _ = stored(tmp_path)
    compared = run_cli("compare", source.run_id, rescored.run_id, cwd=tmp_path)
    assert compared.returncode == 0, compared.stderr
    assert "  close: passed → failed (regressed)" in compared.stdout
    assert "same:" not in compared.stdout and "far:" not in compared.stdout
    assert "threshold: 0.5" in compared.stdout and "threshold: 0.9" in compared.stdout  # the config diff


def test_a_new_llm_judge_calls_only_its_model_once_an_item(write_config, tmp_path, openai_server):  # noqa: F811
    models = f'models: {{grader: {{base_url: "{openai_server.base_url}", model: tiny, retries: 0}}}}'
    write_config(config(0.5, extra=models))
    run_cli("run", "-q", cwd=tmp_path)
    ran = calls(tmp_path)
    for verdict in ("pass", "fail", "pass"):  # one an item
        openai_server.push(tool_reply("grade", {"verdict": verdict, "reasoning": f"judged {verdict}"}))
    write_config(config(0.5, extra=models, scorers=", {uses: judge, id: grader, with: {model: grader}}"))
    done = run_cli("rescore", "latest", "-q", cwd=tmp_path)
    assert done.returncode == 1, done.stderr  # 1 of 3 passed both scorers
    assert calls(tmp_path) == ran, "no runner was called"
    assert len(openai_server.bodies) == 3
    _, result, after = stored(tmp_path)
    assert [after[i].scores["grader"].passed for i in ("same", "close", "far")] == [True, False, True]
    assert [after[i].status for i in ("same", "close", "far")] == ["passed", "failed", "failed"]
    assert result.summary.scorers["grader"].passed == 2 and result.summary.pass_rate == 1 / 3


def test_a_judge_whose_endpoint_cannot_be_used_stops_the_rescore_with_exit_3(write_config, tmp_path):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    models = f'models: {{grader: {{base_url: "http://127.0.0.1:{port}/v1", model: tiny, retries: 0}}}}'
    items = "".join(f"\n                - {{id: q{n}, input: q{n}, expected: q{n}}}" for n in range(10))
    write_config(config(0.5, extra=models).replace("        items:", "        items:" + items, 1))
    assert run_cli("run", "-q", cwd=tmp_path).returncode == 0
    write_config(config(0.5, extra=models, scorers=", {uses: judge, with: {model: grader}}")
                 .replace("        items:", "        items:" + items, 1))
    done = run_cli("rescore", "latest", "-q", cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    assert f"could not evaluate: model 'grader' (tiny at http://127.0.0.1:{port}/v1" in done.stderr
    assert done.stdout.startswith("e: ABORTED (could not evaluate)")
    _, result, after = stored(tmp_path)
    assert result.could_not_evaluate and len(after) == 5, "it stopped at the first five calls, which all failed"


def test_repeats_are_kept_each_scored_again_and_reduced_again(write_config, tmp_path):
    items = ", ".join(f"{{id: {q}, input: {q}, expected: right}}" for q in ("q3", "q4", "q6", "q13"))

    def coin(reduce: str) -> str:
        return f"""
            store: r.db
            experiments:
              - id: coin
                repeats: 5
                reduce: {reduce}
                dataset: {{items: [{items}]}}
                runner: {{uses: fixture_plugins.behaviours:CoinFlip, with: {{log: calls.log}}}}
                scorers: [exact_match]
        """

    write_config(coin("all"))
    assert run_cli("run", "-q", cwd=tmp_path).returncode == 1
    _, _, before = stored(tmp_path)
    assert len(calls(tmp_path)) == 20
    write_config(coin("any"))
    assert run_cli("rescore", "latest", "-q", cwd=tmp_path).returncode == 0
    assert len(calls(tmp_path)) == 20, "no runner was called"
    _, result, after = stored(tmp_path)
    assert {r.status for r in before.values()} == {"failed"} and {r.status for r in after.values()} == {"passed"}
    for item_id, item in after.items():
        assert [r.output for r in item.repeats] == [r.output for r in before[item_id].repeats]
        assert [r.status for r in item.repeats] == [r.status for r in before[item_id].repeats]
    assert result.summary.flaky == 4


def test_a_source_run_cut_short_is_rescored_as_far_as_it_got_with_a_warning(write_config, tmp_path):
    write_config(f"""
        store: r.db
        experiments:
          - id: e
            concurrency: 1
            dataset: {{items: [{{id: a, input: a}}, {{id: b, input: interrupt}}, {{id: c, input: c}}]}}
            runner: fixture_plugins.behaviours:ends_the_run
            scorers: [{{uses: levenshtein, threshold: 0.5}}]
    """)
    assert run_cli("run", "-q", cwd=tmp_path).returncode == 130
    source, _, before = stored(tmp_path)
    assert source.status == "interrupted"
    done = run_cli("rescore", "latest", "-q", cwd=tmp_path)
    assert f"warning: run {source.run_id} is interrupted: only the items it stored are scored again" in done.stderr
    assert done.returncode == 1, done.stderr  # its source never finished: no pass
    run, result, after = stored(tmp_path)
    assert run.status == "aborted" and run.rescored_from == source.run_id
    assert result.incomplete and not result.passed and not run.passed
    assert sorted(after) == sorted(before)
    assert [after[i].output for i in sorted(after)] == [before[i].output for i in sorted(before)]


def two(threshold: float, second: str = "second") -> str:
    """Two experiments; the first's item passes a threshold of 0.5, not one of 0.9."""
    return f"""
        store: r.db
        experiments:
          - id: first
            dataset: {{items: [{{id: a, input: abcd, expected: abce}}]}}
            runner: {{uses: "{RUNNER}", with: {{log: calls.log}}}}
            scorers: [{{uses: levenshtein, threshold: {threshold}}}]
          - id: {second}
            dataset: {{items: [{{id: a, input: abcd, expected: abcd}}]}}
            runner: {{uses: "{RUNNER}", with: {{log: calls.log}}}}
    """


def check_golden(case: str, text: str, run_id: str) -> None:
    """``text`` as ``tests/data/rescore/<case>.expected.txt`` has it, the source run's id written RUN
    (``YAMLEVAL_UPDATE_GOLDEN=1`` writes it instead)."""
    shown = text.replace(run_id, "RUN")
    assert_golden(GOLDEN / f"{case}.expected.txt", shown)


def test_only_experiments_in_both_the_config_and_the_source_run_are_rescored(write_config, tmp_path):
    write_config(two(0.5, second="third"))
    assert run_cli("run", "-q", cwd=tmp_path).returncode == 0
    source = stored_runs(tmp_path)[0]
    write_config(two(0.9))
    done = run_cli("rescore", "latest", "-q", cwd=tmp_path)
    assert done.returncode == 1
    check_golden("skipped", "".join(line for line in done.stderr.splitlines(True) if line.startswith("warning:")),
                 source)
    store = Store(str(tmp_path / "r.db"))
    assert [e.experiment_id for e in store.experiments(store.find_run("latest").run_id)] == ["first"]
    store.close()
    assert calls(tmp_path) == ["a", "a"]


@pytest.mark.parametrize("case, args", [
    ("not-in-run", ["-e", "second"]),
    ("unknown-experiment", ["-e", "fourth"]),
    ("nothing-to-score", ["other.yaml"]),
    ("no-database", ["--store", "none.db"]),
])
def test_what_cannot_be_rescored_is_an_error_that_says_why(write_config, tmp_path, case, args):
    write_config(two(0.5, second="third"))
    assert run_cli("run", "-q", cwd=tmp_path).returncode == 0
    source = stored_runs(tmp_path)[0]
    write_config(two(0.5))
    write_config(two(0.5).replace("id: first", "id: fifth"), name="other.yaml")
    done = run_cli("rescore", source, *args, cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    check_golden(case, done.stderr, source)
    assert stored_runs(tmp_path) == [source], "no run was stored"


def test_a_format_chosen_on_the_command_line_keeps_the_configs_settings_for_it(tmp_path):
    """``--format html,junit`` writes them with the config's ``max_html_mb`` and JUnit family."""
    import random
    import string

    texts = random.Random(7)  # 240 KB that do not compress away
    (tmp_path / "items.jsonl").write_text("".join(
        json.dumps({"id": f"i{n}", "input": "".join(texts.choices(string.ascii_letters, k=4000)), "expected": "y"})
        + "\n" for n in range(60)), encoding="utf-8")
    (tmp_path / "evals.yaml").write_text("""
store: r.db
reports: {formats: [json], max_html_mb: 0.2, junit: {family: xunit1}}
experiments:
  - id: e
    dataset: {file: items.jsonl}
    runner: echo
    scorers: [exact_match]
""", encoding="utf-8")
    assert run_cli("run", cwd=tmp_path).returncode == 1
    done = run_cli("rescore", "latest", "--format", "html,junit", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    page = (tmp_path / "reports" / "report.html").read_bytes()
    assert len(page) <= 200_000 and b'"max_mb":0.2,"budget":true' in page  # the config's 0.2 MB: texts cut to fit
    junit = (tmp_path / "reports" / "junit.xml").read_text(encoding="utf-8")
    assert ' file="items.jsonl" line="1"' in junit  # xunit1: each test case says where its item is
