"""A ``${VAR}`` secret never reaches an artefact: the database (with its log), the reports, the
job summary, the terminal, item errors or traces; also when the server fails and tells all.

The secret goes out as an API key, a bearer header, a URL query parameter, a command's
argument and environment. The server on 127.0.0.1 answers 401 and 500 with the request
(headers and all) echoed in its body, stalls past the timeout, echoes the key in a model
reply, and one port refuses connections outright.
"""
from __future__ import annotations

import json
import socket
import sys
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from conftest import run_cli
from servers.local import LocalServer

pytestmark = pytest.mark.security

SECRET = "sk-live-7f3a9c1e5b2d4f6a8c0e"
SECRET_NAME = "YAMLEVAL_SECRET_KEY"


class _Tattletale(BaseHTTPRequestHandler):
    """Answers by path: /401 and /500 echo the whole request, /slow stalls, /echo puts the
    Authorization header in a chat completion's text, /ok answers plainly."""

    def log_message(self, *args) -> None:
        pass

    def _echo(self) -> dict:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode("utf-8", "replace") if length else ""
        return {"error": {"message": f"rejected {self.command} {self.path} with headers "
                                     f"{dict(self.headers)} and body {body}", "type": "echo"},
                "request": {"path": self.path, "headers": dict(self.headers), "body": body}}

    def _send(self, status: int, data: dict) -> None:
        raw = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def do_GET(self) -> None:
        self.do_POST()

    def do_POST(self) -> None:
        path = self.path.split("?")[0]
        if path.startswith("/401"):
            self._send(401, self._echo())
        elif path.startswith("/500"):
            self._send(500, self._echo())
        elif path.startswith("/slow"):
            time.sleep(3)
            self._send(200, {"reply": "too late"})
        elif path.startswith("/echo"):
            echoed = self._echo()
            text = f"your key is {self.headers.get('Authorization')} and you asked {echoed['request']['path']}"
            self._send(200, {"choices": [{"index": 0, "finish_reason": "stop",
                                          "message": {"role": "assistant", "content": text}}],
                             "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                             "reply": {"text": text}})
        else:
            self._send(200, {"reply": {"text": "fine"}})


class _Server(LocalServer):
    handler = _Tattletale
    quiet = True  # a client that gave up on /slow closes the socket


@pytest.fixture(scope="module")
def server():
    with _Server() as running:
        yield running.url


def _refused_port() -> int:
    """A port nothing listens on (bound, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _config(base: str, refused: str) -> str:
    key = "${" + SECRET_NAME + "}"
    printer = "import os, sys; print('arg', sys.argv[1], 'env', os.environ['TOKEN']); sys.exit(int(sys.argv[2]))"
    models = {f"m{name}": {"base_url": f"{base}/{name}/v1", "model": "m", "api_key": key, "retries": 1, "timeout": 1}
              for name in ("401", "500", "slow", "echo")}
    models["mrefused"] = {"base_url": f"{refused}/v1", "model": "m", "api_key": key, "retries": 1, "timeout": 1}
    experiments = [
        {"id": f"openai-{name}", "dataset": {"items": [{"id": "q", "input": "hi", "expected": "fine"}]},
         "runner": {"uses": "openai", "with": {"model": name}},
         "scorers": ["exact_match", {"uses": "judge", "id": "judged", "with": {"model": name}}]}
        for name in models]
    experiments += [
        {"id": f"http-{name}", "dataset": {"items": [{"id": "q", "input": "hi", "expected": "fine"}]},
         "runner": {"uses": "http", "with": {
             "url": f"{where}/{name}?api_key={key}&q={{{{ input }}}}", "timeout": 1, "retries": 1,
             "headers": {"Authorization": f"Bearer {key}", "X-Api-Key": key},
             "query": {"token": key}, "body": {"message": "{{ input }}", "key": key}, "output": "reply.text"}},
         "scorers": ["exact_match"]}
        for name, where in (("401", base), ("500", base), ("slow", base), ("echo", base), ("ok", refused))]
    experiments += [
        {"id": f"command-{code}", "dataset": {"items": [{"id": "q", "input": "hi", "expected": "fine"}]},
         "runner": {"uses": "command", "with": {"argv": [sys.executable, "-c", printer, key, str(code)],
                                                "env": {"TOKEN": key}, "stdin": "none", "timeout": 5}},
         "scorers": ["exact_match"]}
        for code in (0, 3)]
    experiments += [
        {"id": f"dataset-{name}", "dataset": {"url": f"{where}/{name}/items?key={key}", "headers": {"Authorization": key}},
         "runner": "echo", "scorers": ["exact_match"]}
        for name, where in (("401", base), ("500", base), ("gone", refused))]
    # an endpoint nothing answers stops the run (could not evaluate): those experiments come last
    experiments.sort(key=lambda e: e["id"] in REFUSED)
    return json.dumps({"version": 1, "defaults": {"retries": 1, "timeout": 10}, "reports": {"dir": "reports"},
                       "models": models, "experiments": experiments})


REFUSED = ("openai-mrefused", "http-ok", "dataset-gone")  # the experiments whose endpoint refuses every connection


@pytest.fixture(scope="module")
def run(server, tmp_path_factory):
    folder = tmp_path_factory.mktemp("secrets")
    (folder / "evals.yaml").write_text(_config(server, f"http://127.0.0.1:{_refused_port()}"), encoding="utf-8")
    environment = {SECRET_NAME: SECRET, "GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(folder / "step-summary.md")}
    done = run_cli("run", "evals.yaml", "--store", "results.db", "--concurrency", "4", cwd=folder, timeout=120,
                   **environment)
    for experiment in REFUSED[1:]:  # the run stopped at the first: each of the others in a run of its own
        alone = run_cli("run", "evals.yaml", "-e", experiment, "--store", "results.db", "--report-dir", "reports-refused",
                        cwd=folder, timeout=120, **environment)
        assert alone.returncode in (2, 3) and "Traceback" not in alone.stderr, alone.stderr[-2000:]
    done.folder = folder
    return done


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.name != "evals.yaml")


def test_the_secret_really_went_out_and_came_back(run):
    """The run used the secret, and the server echoed it: otherwise the test proves nothing."""
    assert run.returncode == 3, run.stderr[-2000:]  # the remote datasets stop theirs, a refused model the run
    results = json.loads((run.folder / "reports" / "results.json").read_text(encoding="utf-8"))
    text = json.dumps(results)
    assert "rejected POST" in text and "your key is" in text  # echoed bodies reached the results
    assert f"${{{SECRET_NAME}}}" in text  # the secret is named where it stood
    assert sum(r["aborted"] is not None for r in results["experiments"]) == 3


def test_no_file_of_the_run_holds_the_secret(run):
    files = _files(run.folder)
    names = {p.name for p in files}
    assert {"results.db", "report.html", "junit.xml", "results.json", "summary.md", "step-summary.md"} <= names
    for path in files:
        data = path.read_bytes()
        for form in (SECRET, SECRET[3:], json.dumps(SECRET)[1:-1]):
            assert form.encode() not in data, f"{path.name} holds the secret"


def test_the_terminal_never_shows_the_secret(run):
    assert SECRET not in run.stdout and SECRET not in run.stderr
    assert SECRET[3:] not in run.stdout + run.stderr


def test_errors_and_traces_in_the_database_name_the_variable_not_the_value(run):
    import sqlite3

    db = sqlite3.connect(run.folder / "results.db")
    try:
        records = [row[0] for row in db.execute("SELECT record FROM items")]
    finally:
        db.close()
    assert records and all(SECRET not in r for r in records)
    errors = [json.loads(r)["error"] or "" for r in records]
    assert any("HTTP 401" in e for e in errors) and any("HTTP 500" in e for e in errors)


def _load_and_run(write_config, tmp_path, name: str, body: str):
    import yamleval

    [experiment] = yamleval.load_experiments(write_config(body, name=name))
    return yamleval.run_experiment(experiment)


def test_encoded_forms_of_a_secret_are_redacted_too(write_config, tmp_path, monkeypatch):
    """A key with ``/``, ``+`` and ``"`` stands percent-encoded in a URL and escaped in JSON."""
    value = 'k3y/with+odd"chars=='
    encoded = f'GET /x?key=k3y%2Fwith%2Bodd%22chars%3D%3D body {json.dumps({"k": value})} raw {value}'
    monkeypatch.setenv("ODD_SECRET", value)
    result = _load_and_run(write_config, tmp_path, "odd.yaml", """
        experiments:
          - id: odd
            dataset: {items: [{id: q, input: hi}]}
            runner: {uses: echo, with: {output: {text: %s, trace: [{result: "echo ${ODD_SECRET}"}]}}}
    """ % json.dumps(encoded.replace(value, "${ODD_SECRET}")))
    [item] = result.items
    assert item.output == {"text": 'GET /x?key=${ODD_SECRET} body {"k": "${ODD_SECRET}"} raw ${ODD_SECRET}',
                           "trace": [{"result": "echo ${ODD_SECRET}"}]}


def test_short_values_are_not_treated_as_secrets(write_config, tmp_path, monkeypatch):
    monkeypatch.setenv("SHORT_SETTING", "true")
    result = _load_and_run(write_config, tmp_path, "short.yaml", """
        experiments:
          - id: short
            dataset: {items: [{id: q, input: "it is true"}]}
            runner: {uses: echo, with: {delay: 0, output: "${SHORT_SETTING} that it is true"}}
    """)
    assert result.items[0].output == "true that it is true"


def test_a_projects_secrets_are_kept_out_of_its_own_run_only(write_config, tmp_path, monkeypatch):
    """Two projects in one process: the value project A took from ``${TOKEN}`` is a plain
    word in project B, which never referred to it."""
    monkeypatch.setenv("TOKEN", "correcthorse")
    a = _load_and_run(write_config, tmp_path, "a.yaml", """
        experiments:
          - id: a
            dataset: {items: [{id: q, input: hi}]}
            runner: {uses: echo, with: {output: "the token is ${TOKEN}"}}
    """)
    assert a.items[0].output == "the token is ${TOKEN}"
    monkeypatch.delenv("TOKEN")
    b = _load_and_run(write_config, tmp_path, "b.yaml", """
        experiments:
          - id: b
            dataset: {items: [{id: q, input: "the word is correcthorse"}]}
            runner: echo
    """)
    assert b.items[0].output == "the word is correcthorse"


ODD_SECRET = 'sk live+key/é"x=1&y'  # a space, a "+", a "/", a non-ASCII letter, a quote, "=" and "&"


def _url_forms(value: str) -> set[str]:
    """The ways a client or a server may write ``value`` in a URL."""
    from urllib.parse import quote, quote_plus

    forms = {value}
    for safe in ("", "/", "+", "/+", "/+=&", "/:@!$&'()*+,;=~ "):
        for encoded in (quote(value, safe=safe), quote_plus(value, safe=safe)):
            forms |= {encoded, encoded.lower(), encoded.replace("%", "%25")}
    return {form for form in forms if form != "${ODD}"}


def test_a_secret_echoed_in_any_url_encoding_is_stored_as_its_variable(server, write_config, tmp_path, store_at):
    name = "YAMLEVAL_ODD_SECRET"
    write_config(store_at.config(f"""
        store: r.db
        experiments:
          - id: echoed
            dataset: {{items: [{{id: q, input: hi, expected: fine}}]}}
            runner: {{uses: http, with: {{url: "{server}/echo?key=${{{name}}}", method: GET, output: reply.text,
                                          retries: 1, timeout: 5}}}}
            scorers: [exact_match]
          - id: refused
            dataset: {{items: [{{id: q, input: hi, expected: fine}}]}}
            runner: {{uses: http, with: {{url: "{server}/500/${{{name}}}?k=${{{name}}}", retries: 1, timeout: 5}}}}
            scorers: [exact_match]
    """))
    done = run_cli("run", cwd=tmp_path, **{name: ODD_SECRET})
    assert done.returncode == 1, done.stdout + done.stderr
    written = (tmp_path / "reports" / "results.json").read_text(encoding="utf-8")
    assert f"you asked /echo?key=${{{name}}}" in written  # the server echoed it, and it is named
    stored = "\n".join(str(row[0]) for row in store_at.query("r.db", "SELECT record FROM items"))
    assert "HTTP 500" in stored
    for form in _url_forms(ODD_SECRET):
        assert form not in written, form
        assert form not in stored, form
        assert form not in done.stdout + done.stderr, form
