"""State belongs to a run: two experiments run at once in one process, through the Python API,
share no limiter and no endpoint record. An endpoint that cannot be used stops only the
experiment that calls it; each experiment's rate-limit counts are its own."""
from __future__ import annotations

import json
import socket
import sys
import textwrap
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import yamleval

GATED = '''
import threading

STARTED = threading.Event()  # the slow experiment's first item is running
GATE = threading.Event()  # let its items finish


def slow(input):
    STARTED.set()
    if not GATE.wait(60):
        raise RuntimeError("the gate never opened")
    return input
'''


@pytest.fixture
def gated(tmp_path, monkeypatch):
    """The plugin module of the slow runner, as the run imports it from the config's folder."""
    (tmp_path / "gated_runner.py").write_text(GATED, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "gated_runner", raising=False)
    import gated_runner

    yield gated_runner
    gated_runner.GATE.set()


def _dead_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # closed on leaving: nothing listens there


def _experiment(tmp_path, name: str, body: str):
    path = tmp_path / f"{name}.yaml"
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    [experiment] = yamleval.load_experiments(str(path))
    return experiment


def _items(count: int, prefix: str) -> str:
    return ", ".join(f"{{id: {prefix}{i}, input: {prefix}{i}, expected: {prefix}{i}}}" for i in range(count))


def _in_thread(target) -> tuple[threading.Thread, dict]:
    out: dict = {}

    def run() -> None:
        try:
            out["result"] = target()
        except BaseException as exc:  # shown by the test
            out["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out


def test_a_dead_endpoint_stops_only_its_own_experiment(tmp_path, gated):
    slow = _experiment(tmp_path, "slow", f"""
        experiments:
          - id: slow-a
            concurrency: 1
            dataset: {{items: [{_items(6, "s")}]}}
            runner: gated_runner:slow
            scorers: [exact_match]
    """)
    dead = _experiment(tmp_path, "dead", f"""
        experiments:
          - id: http-b
            concurrency: 1
            dataset: {{items: [{_items(6, "h")}]}}
            runner: {{uses: http, with: {{url: "http://127.0.0.1:{_dead_port()}/x", retries: 0, timeout: 5}}}}
            scorers: [exact_match]
    """)
    slow_thread, slow_out = _in_thread(lambda: yamleval.run_experiment(slow))
    assert gated.STARTED.wait(60), "the slow experiment never started"
    dead_result = yamleval.run_experiment(dead)  # while slow-a's first item runs
    gated.GATE.set()
    slow_thread.join(60)
    assert not slow_thread.is_alive() and "error" not in slow_out, slow_out

    assert dead_result.could_not_evaluate and not dead_result.passed
    assert "connection refused" in dead_result.aborted and "http runner's POST" in dead_result.aborted
    assert dead_result.summary.completed < 6

    result = slow_out["result"]
    assert (result.aborted, result.could_not_evaluate) == (None, False)
    assert result.passed and (result.summary.completed, result.summary.passed) == (6, 6)


class _Meeting(BaseHTTPRequestHandler):
    """Answers ``{"output": <the body's input>}``; the first request to each path waits until
    the first to the other has come, so that the two experiments' calls overlap."""

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with self.server.lock:
            first = self.path not in self.server.seen
            self.server.seen.add(self.path)
        if first:
            self.server.meeting.wait()
        data = json.dumps({"output": body["input"]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def meeting_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Meeting)
    server.lock, server.seen, server.meeting = threading.Lock(), set(), threading.Barrier(2, timeout=60)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_two_runs_at_once_count_only_their_own_calls_at_the_same_endpoint(tmp_path, meeting_server):
    def limited(name: str, count: int):
        return _experiment(tmp_path, name, f"""
            experiments:
              - id: {name}
                concurrency: 1
                dataset: {{items: [{_items(count, name)}]}}
                runner:
                  uses: http
                  with: {{url: "{meeting_server}/{name}", body: {{input: "{{{{ input }}}}"}}, output: output,
                          rate_limit: {{requests_per_minute: 600000}}}}
                scorers: [exact_match]
        """)

    first, second = limited("one", 3), limited("two", 5)
    thread, out = _in_thread(lambda: yamleval.run_experiment(first))
    other = yamleval.run_experiment(second)
    thread.join(60)
    assert not thread.is_alive() and "error" not in out, out
    mine = out["result"]
    assert mine.passed and other.passed
    assert (mine.summary.throttling.calls, other.summary.throttling.calls) == (3, 5)
