"""A model as the system under test and another as the judge, through YAML and the command line,
against the scripted server: what the reports say it cost is what the server reported."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from conftest import run_cli
from servers.fixtures import openai_server  # noqa: F401  (a fixture)
from servers.openai_server import malformed, text_reply, tool_reply

CONFIG = """
    models:
      sut: {base_url: "BASE", model: tiny, api_key: "${SUT_KEY}", price: {prompt: 2.0, completion: 8.0}}
      grader: {base_url: "BASE", model: tiny-judge, price: {prompt: 1.0, completion: 4.0}}
    defaults: {concurrency: 1}
    reports: {dir: out}
    experiments:
      - id: chat
        dataset:
          items:
            - {id: capital, input: "Capital of France?", expected: "Names Paris", assertions: ["must say Paris"]}
            - {id: sum, input: "2+2?", expected: "Says 4"}
        runner: {uses: openai, with: {model: sut, system: "Be brief.", prompt: "Q: {{ input }}"}}
        scorers:
          - {uses: judge, with: {model: grader}}
"""


def test_tokens_and_costs_in_the_report_equal_what_the_server_reported(openai_server, write_config, tmp_path):  # noqa: F811
    openai_server.push(
        text_reply("Paris.", prompt_tokens=20, completion_tokens=3),
        tool_reply("grade", {"verdict": "pass", "reasoning": "names Paris"}, prompt_tokens=100, completion_tokens=10),
        text_reply("5", prompt_tokens=12, completion_tokens=1),
        tool_reply("grade", {"verdict": "fail", "reasoning": "2+2 is 4"}, prompt_tokens=90, completion_tokens=12),
    )
    write_config(CONFIG.replace("BASE", openai_server.base_url))
    done = run_cli("run", "--store", "r.db", cwd=tmp_path, SUT_KEY="sk-sut-secret-1")
    assert done.returncode == 1, done.stderr
    report = json.loads((tmp_path / "out" / "results.json").read_text())
    [experiment] = report["experiments"]
    summary = experiment["summary"]
    assert (summary["tokens"]["prompt"], summary["tokens"]["completion"]) == (32, 4)
    assert summary["tokens"]["cost"] == pytest.approx((32 * 2.0 + 4 * 8.0) / 1e6)
    assert (summary["judge_tokens"]["prompt"], summary["judge_tokens"]["completion"]) == (190, 22)
    assert summary["judge_tokens"]["cost"] == pytest.approx((190 * 1.0 + 22 * 4.0) / 1e6)
    capital, total = experiment["items"]
    assert capital["status"] == "passed" and capital["scores"]["judge"]["reason"] == "names Paris"
    assert total["status"] == "failed" and total["output"] == "5"
    first_judge_call = openai_server.bodies[1]
    assert first_judge_call["tool_choice"]["function"]["name"] == "grade"
    assert "must say Paris" in json.dumps(first_judge_call["messages"])
    assert openai_server.requests[0].headers.get("Authorization") == "Bearer sk-sut-secret-1"
    for name in ("results.json", "junit.xml", "summary.md", "report.html"):
        assert "sk-sut-secret-1" not in (tmp_path / "out" / name).read_text()


def test_a_judge_that_answers_nonsense_twice_errors_only_that_score(openai_server, write_config, tmp_path):  # noqa: F811
    openai_server.push(
        text_reply("Paris.", prompt_tokens=20, completion_tokens=3),
        tool_reply("grade", {"verdict": "pass", "reasoning": "names Paris"}),
        text_reply("4", prompt_tokens=12, completion_tokens=1),
        *[text_reply("I think it is fine, no JSON from me") for _ in range(6)],
    )
    write_config(CONFIG.replace("BASE", openai_server.base_url))
    run_cli("run", "--store", "r.db", cwd=tmp_path, SUT_KEY="k")
    report = json.loads((tmp_path / "out" / "results.json").read_text())
    capital, total = report["experiments"][0]["items"]
    assert capital["status"] == "passed"
    assert total["status"] == "error" and total["scores"]["judge"]["status"] == "error"
    assert "judge answer did not fit" in total["scores"]["judge"]["reason"]
    assert total["output"] == "4", "the runner's answer is kept"


def test_an_answer_cut_off_at_max_tokens_is_flagged_in_the_terminal_junit_and_json(openai_server, write_config,  # noqa: F811
                                                                                    tmp_path):
    openai_server.push(
        text_reply("Paris is the capital, and it has a long hist", finish_reason="length"),
        tool_reply("grade", {"verdict": "pass", "reasoning": "names Paris"}),
        text_reply("4"),
        tool_reply("grade", {"verdict": "pass", "reasoning": "says 4"}),
    )
    write_config(CONFIG.replace("BASE", openai_server.base_url).replace("model: tiny,", "model: tiny, max_tokens: 12,"))
    done = run_cli("run", "--store", "r.db", cwd=tmp_path, SUT_KEY="k")
    assert done.returncode == 0, done.stdout + done.stderr
    assert openai_server.bodies[0]["max_tokens"] == 12
    assert "  notes       1 item\n    ✓ capital: answer cut off at max_tokens (12)\n" in done.stdout
    junit = (tmp_path / "out" / "junit.xml").read_text()
    capital = junit[junit.index('<testcase name="capital"'):junit.index('<testcase name="sum"')]
    assert "note: answer cut off at max_tokens (12)" in capital
    report = json.loads((tmp_path / "out" / "results.json").read_text())
    [experiment] = report["experiments"]
    assert experiment["summary"]["noted"] == 1
    capital, total = experiment["items"]
    assert capital["output_metadata"]["notes"] == ["answer cut off at max_tokens (12)"]
    assert "notes" not in total["output_metadata"]


PAGES = [{"id": f"r{i}", "question": f"q{i}", "answer": f"q{i}"} for i in range(7)]


class _Pages(BaseHTTPRequestHandler):
    disable_nagle_algorithm = True
    seen: list[str] = []

    def log_message(self, *args):
        pass

    def do_GET(self):
        from urllib.parse import parse_qs, urlsplit

        query = parse_qs(urlsplit(self.path).query)
        _Pages.seen.append(self.headers.get("Authorization", ""))
        offset, limit = int(query["offset"][0]), int(query["limit"][0])
        body = json.dumps({"data": {"rows": PAGES[offset:offset + limit]}, "count": len(PAGES)}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_a_remote_dataset_is_read_page_by_page(write_config, tmp_path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Pages)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        write_config(f"""
            reports: {{dir: out, formats: [json]}}
            experiments:
              - id: remote
                dataset:
                  url: http://127.0.0.1:{server.server_port}/items?lang=en
                  headers: {{Authorization: "Bearer ${{DATA_TOKEN}}"}}
                  page_size: 3
                  items: data.rows
                  total: count
                  fields: {{input: question, expected: answer}}
                runner: echo
                scorers: [exact_match]
        """)
        done = run_cli("run", "--store", "r.db", cwd=tmp_path, DATA_TOKEN="tok-123")
        assert done.returncode == 0, done.stderr
        report = json.loads((tmp_path / "out" / "results.json").read_text())
        [experiment] = report["experiments"]
        assert [i["id"] for i in experiment["items"]] == [f"r{i}" for i in range(7)]
        assert experiment["dataset"] == f"http://127.0.0.1:{server.server_port}/items"
        assert set(_Pages.seen) == {"Bearer tok-123"} and len(_Pages.seen) == 3
        assert "tok-123" not in (tmp_path / "out" / "results.json").read_text()
        assert run_cli("validate", cwd=tmp_path, DATA_TOKEN="x").returncode == 0
    finally:
        server.shutdown()
        server.server_close()
