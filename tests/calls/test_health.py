"""An endpoint that cannot be used (nothing listens, the key is refused, no such model or URL)
stops the run early with exit 3 and one message saying which, why and what to do; a few
failures among answers are item errors, as ever.

The messages are golden files, ``tests/data/endpoints/<case>.expected.txt``, with the test
server's port written ``PORT``. After a deliberate change of wording, regenerate them and
review the diff::

    YAMLEVAL_UPDATE_GOLDEN=1 python -m pytest tests/calls/test_health.py
"""
from __future__ import annotations

import json
import socket
from pathlib import Path

import yamleval
from conftest import assert_golden, run_cli
from servers.fixtures import openai_server  # noqa: F401  (a fixture)
from servers.openai_server import error_reply, text_reply, tool_reply

GOLDEN = Path(__file__).parent.parent / "data" / "endpoints"
ITEMS = 20


def _config(runner: str, scorers: str = "[exact_match]", concurrency: int = 2, base: str = "") -> str:
    items = ", ".join(f"{{id: q{n:02d}, input: q{n:02d}, expected: fine}}" for n in range(ITEMS))
    return f"""
        models:
          sut: {{base_url: "{base}", model: tiny, retries: 0}}
          grader: {{base_url: "{base}", model: tiny-judge, api_key: "${{GRADER_KEY:-none}}", retries: 0}}
        defaults: {{concurrency: {concurrency}, retries: 0}}
        reports: {{dir: out}}
        experiments:
          - id: chat
            dataset: {{items: [{items}]}}
            runner: {runner}
            scorers: {scorers}
          - id: never
            dataset: {{items: [{{input: a, expected: a}}]}}
            runner: echo
            scorers: [exact_match]
    """


def _closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _check_golden(case: str, stderr: str, port: int) -> None:
    shown = "\n".join(line for line in stderr.splitlines() if line.startswith("could not evaluate"))
    shown = shown.replace(str(port), "PORT") + "\n"
    assert_golden(GOLDEN / f"{case}.expected.txt", shown)


def _stopped_early(tmp_path, done) -> dict:
    """The run exited 3, stored and reported the items that finished, and ran nothing more."""
    assert done.returncode == 3, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    report = json.loads((tmp_path / "out" / "results.json").read_text())
    [experiment] = report["experiments"]  # the next experiment never started
    assert 3 <= len(experiment["items"]) < ITEMS, "it stopped after the first items"
    assert all(item["status"] == "error" for item in experiment["items"])
    assert experiment["aborted"].startswith("could not evaluate: ")
    assert "ABORTED (could not evaluate)" in done.stdout
    return experiment


def test_a_model_nothing_listens_for_stops_the_run_with_exit_3(write_config, tmp_path):
    port = _closed_port()
    write_config(_config("{uses: openai, with: {model: sut}}", base=f"http://127.0.0.1:{port}/v1"))
    done = run_cli("run", "--store", "r.db", cwd=tmp_path)
    _stopped_early(tmp_path, done)
    _check_golden("model_refused", done.stderr, port)
    quiet = run_cli("run", "-q", "--store", "r.db", cwd=tmp_path)
    assert quiet.returncode == 3 and quiet.stdout.startswith("chat: ABORTED (could not evaluate) ("), quiet.stdout


def test_a_judge_that_refuses_its_key_stops_the_run_with_exit_3(openai_server, write_config, tmp_path):  # noqa: F811
    openai_server.push(*[error_reply(401, "Incorrect API key provided")] * ITEMS)
    write_config(_config("echo", "[{uses: judge, with: {model: grader}}]", base=openai_server.base_url))
    done = run_cli("run", "--store", "r.db", cwd=tmp_path, GRADER_KEY="sk-wrong-key-123")
    experiment = _stopped_early(tmp_path, done)
    assert "Incorrect API key" in experiment["items"][0]["error"], "each item keeps its own error"
    assert "sk-wrong-key-123" not in done.stdout + done.stderr
    _check_golden("judge_401", done.stderr, openai_server.port)
    again = run_cli("report", "--store", "r.db", "--report-dir", "again", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    # one name for the state in every report: aborted, because it could not evaluate
    summary = (tmp_path / "again" / "summary.md").read_text()
    assert summary.startswith("## ❌ yamleval: aborted — chat ended early and the run stopped; 0 of 1 experiment that ran")
    assert "chat: aborted (could not evaluate)" in summary
    page = (tmp_path / "again" / "report.html").read_text()
    assert page.count('badge-aborted">ABORTED</span>') == 2 and "FAILED" not in page and "STOPPED" not in page
    assert json.loads((tmp_path / "again" / "results.json").read_text())["status"] == "aborted"
    junit = (tmp_path / "again" / "junit.xml").read_text()
    assert '<error type="aborted" message="aborted: could not evaluate: ' in junit


def test_an_http_runner_url_that_is_not_there_stops_the_run_with_exit_3(openai_server, write_config,  # noqa: F811
                                                                         tmp_path):
    runner = f"{{uses: http, with: {{url: '{openai_server.url}/nothing/here?token=abc', method: GET, retries: 0}}}}"
    write_config(_config(runner, concurrency=8))
    done = run_cli("run", "--store", "r.db", cwd=tmp_path)
    experiment = _stopped_early(tmp_path, done)
    assert len(experiment["items"]) <= 8 + 4, "the eight first items, and those started before the fifth failed"
    assert "token=abc" not in done.stderr
    _check_golden("http_404", done.stderr, openai_server.port)


def test_a_few_refusals_among_answers_are_item_errors(openai_server, write_config, tmp_path):  # noqa: F811
    # the first requests: refused, answered, refused, ...: the endpoint works, some items do not
    openai_server.push(*[error_reply(404, "no such thing") if n % 2 == 0 else text_reply("fine")
                         for n in range(ITEMS)])
    write_config(_config("{uses: openai, with: {model: sut}}", concurrency=1, base=openai_server.base_url))
    done = run_cli("run", "--store", "r.db", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    report = json.loads((tmp_path / "out" / "results.json").read_text())
    chat, never = report["experiments"]
    assert (chat["summary"]["passed"], chat["summary"]["errored"]) == (ITEMS // 2, ITEMS // 2)
    assert chat["aborted"] is None and never["passed"] is True
    assert "could not evaluate" not in done.stderr


def test_the_python_api_says_could_not_evaluate(openai_server, write_config, tmp_path):  # noqa: F811
    openai_server.push(*[error_reply(404, "The model `tiny` does not exist")] * ITEMS)
    config = write_config(_config("{uses: openai, with: {model: sut}}", base=openai_server.base_url))
    outcome = yamleval.run(config, store=str(tmp_path / "r.db"), formats=[])
    assert outcome.exit_code == 3
    [result] = outcome.results
    assert result.could_not_evaluate and not outcome.passed and outcome.run.status == "aborted"
    assert "HTTP 404" in result.aborted and "check `model` and `base_url` of models.sut" in result.aborted
    assert result.summary.completed < ITEMS


def test_an_answer_first_keeps_the_run_going_when_refusals_follow(openai_server, write_config,  # noqa: F811
                                                                  tmp_path):
    openai_server.push(tool_reply("grade", {"verdict": "pass", "reasoning": "ok"}),
                       *[error_reply(401, "key revoked")] * ITEMS)
    write_config(_config("echo", "[{uses: judge, with: {model: grader}}]", concurrency=1,
                         base=openai_server.base_url))
    done = run_cli("run", "--store", "r.db", cwd=tmp_path, GRADER_KEY="k")
    assert done.returncode == 1, done.stdout + done.stderr
    report = json.loads((tmp_path / "out" / "results.json").read_text())
    assert report["experiments"][0]["summary"]["errored"] == ITEMS - 1



def test_a_base_url_from_the_environment_is_named_and_how_to_see_it_is_said(write_config, tmp_path):
    port = _closed_port()
    write_config(_config("{uses: openai, with: {model: sut}}", base="${LLM_BASE_URL}"))
    done = run_cli("run", "--store", "r.db", cwd=tmp_path, LLM_BASE_URL=f"http://127.0.0.1:{port}/v1")
    experiment = _stopped_early(tmp_path, done)
    _check_golden("model_refused_from_environment", done.stderr, port)
    assert f"127.0.0.1:{port}" not in done.stdout + done.stderr, "the variable's value is never printed"
    assert experiment["aborted"].endswith(
        '${LLM_BASE_URL} stands for the value of the environment variable, which yamleval never prints:'
        ' `echo "$LLM_BASE_URL"` shows what was tried')
    assert f"127.0.0.1:{port}".encode() not in (tmp_path / "r.db").read_bytes()


def test_a_refused_endpoint_with_fewer_items_than_the_first_calls_still_could_not_evaluate(write_config, tmp_path):
    port = _closed_port()
    write_config(_config("{uses: openai, with: {model: sut}}", concurrency=8, base=f"http://127.0.0.1:{port}/v1"))
    done = run_cli("run", "--store", "r.db", "--limit", "4", cwd=tmp_path)
    assert done.returncode == 3, done.stdout + done.stderr
    report = json.loads((tmp_path / "out" / "results.json").read_text())
    assert report["status"] == "aborted" and len(report["experiments"]) == 1
    assert report["experiments"][0]["aborted"].startswith("could not evaluate: model 'sut'")
    assert "4 requests failed (connection refused)" in done.stderr
    assert f"finish the run with `yamleval run --resume {report['run_id']} --limit 4 --store r.db`" in done.stderr


def test_a_runner_exception_or_a_wrong_answer_stays_a_verdict(write_config, tmp_path):
    write_config("""
        reports: {dir: out}
        experiments:
          - id: chat
            dataset: {items: [{id: a, input: a, expected: a}, {id: b, input: b, expected: c}]}
            runner: echo
            scorers: [exact_match]
          - id: broken
            dataset: {items: [{id: a, input: raise, expected: a}]}
            runner: {uses: "fixture_plugins.behaviours:per_item"}
            scorers: [exact_match]
    """)
    done = run_cli("run", "--store", "r.db", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    report = json.loads((tmp_path / "out" / "results.json").read_text())
    assert report["status"] == "completed"
    chat, broken = report["experiments"]
    assert (chat["summary"]["failed"], broken["summary"]["errored"]) == (1, 1)
    assert chat["aborted"] is None and broken["aborted"] is None and "could not evaluate" not in done.stderr
