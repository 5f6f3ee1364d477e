"""What an editor shows with the shipped schema: yaml-language-server, driven over stdio as an
editor drives it, completes the built-in names and arguments and flags a misspelt argument.

CI installs the server (.ci/run sets YAML_LANGUAGE_SERVER); elsewhere the test installs the
pinned version with npm into a cache folder the first time.
"""
from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from conftest import ROOT, run_cli

VERSION = "1.25.0"  # .ci/run installs the same
WAIT = 60  # seconds for any one answer; the server answers in well under one


def _server_program() -> str:
    given = os.environ.get("YAML_LANGUAGE_SERVER")
    if given:
        if not os.path.isfile(given):
            pytest.fail(f"YAML_LANGUAGE_SERVER={given}: no such file")
        return given
    if os.environ.get("CI"):
        pytest.fail("YAML_LANGUAGE_SERVER is not set: .ci/run installs yaml-language-server and sets it")
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    folder = cache / "yamleval-tests" / f"yaml-language-server-{VERSION}"
    program = folder / "node_modules" / ".bin" / "yaml-language-server"
    if not program.exists():
        npm = shutil.which("npm")
        if npm is None:
            pytest.fail("the editor test needs npm, to install yaml-language-server")
        subprocess.run([npm, "install", "--prefix", str(folder), "--no-audit", "--no-fund", "--loglevel=error",
                        f"yaml-language-server@{VERSION}"], check=True, capture_output=True, timeout=600)
    return str(program)


class LanguageServer:
    """A language server over stdio: JSON-RPC messages with Content-Length headers. A thread
    reads every message into a queue, so each wait is a bounded ``get``."""

    def __init__(self, program: str):
        self.process = subprocess.Popen([program, "--stdio"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL)
        self.messages: queue.Queue = queue.Queue()
        self.kept: list[dict] = []  # messages read while waiting for another one
        self.last_id = 0
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        out = self.process.stdout
        while True:
            length = None
            while (line := out.readline()) not in (b"\r\n", b""):
                name, _, value = line.decode("ascii").partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            if length is None:
                return  # the server closed its output
            self.messages.put(json.loads(out.read(length)))

    def _send(self, message: dict) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        self.process.stdin.flush()

    def notify(self, method: str, params: dict | None) -> None:
        self._send({"method": method, "params": params})

    def request(self, method: str, params: dict | None) -> dict:
        self.last_id += 1
        asked = self.last_id
        self._send({"id": asked, "method": method, "params": params})
        return self.wait(lambda m: m.get("id") == asked and "method" not in m)["result"]

    def wait(self, wanted) -> dict:
        """The first message ``wanted`` accepts; the server's own requests get an empty answer."""
        for message in self.kept:
            if wanted(message):
                self.kept.remove(message)
                return message
        while True:
            try:
                message = self.messages.get(timeout=WAIT)
            except queue.Empty:
                raise AssertionError(f"no answer from yaml-language-server within {WAIT} s") from None
            if "method" in message and "id" in message:
                self._send({"id": message["id"], "result": None})
            elif wanted(message):
                return message
            else:
                self.kept.append(message)

    def open(self, path: Path, text: str) -> list[dict]:
        """Open a document; its diagnostics."""
        uri = path.as_uri()
        self.notify("textDocument/didOpen",
                    {"textDocument": {"uri": uri, "languageId": "yaml", "version": 1, "text": text}})
        published = self.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                              and m["params"]["uri"] == uri)
        return published["params"]["diagnostics"]

    def completions(self, path: Path, line: int, character: int) -> list[str]:
        found = self.request("textDocument/completion", {"textDocument": {"uri": path.as_uri()},
                                                         "position": {"line": line, "character": character}})
        items = found.get("items", []) if isinstance(found, dict) else found or []
        return [item["label"] for item in items]

    def stop(self) -> None:
        try:
            self.request("shutdown", None)
            self.notify("exit", None)
            self.process.wait(timeout=WAIT)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
            self.reader.join(timeout=WAIT)  # it has read the end of the output
            self.process.stdin.close()
            self.process.stdout.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    started = LanguageServer(_server_program())
    try:
        root = tmp_path_factory.mktemp("editor")
        reply = started.request("initialize", {"processId": os.getpid(), "rootUri": root.as_uri(),
                                               "capabilities": {}})
        assert reply["serverInfo"]["version"] == VERSION
        started.notify("initialized", {})
        started.notify("workspace/didChangeConfiguration",
                       {"settings": {"yaml": {"validate": True, "completion": True, "schemas": {}}}})
        yield started
    finally:
        started.stop()


CURSOR = "@@"
DOCUMENT = """\
# yaml-language-server: $schema=SCHEMA
version: 1
experiments:
  - id: greetings
    dataset: {items: [{input: hello, expected: hello}]}
    runner:
      uses: @@
    scorers:
      - uses: @@
      - uses: contains_any
        with:
          @@
      - {uses: contains_any, with: {ignorecase: true}}
""".replace("SCHEMA", str(ROOT / "schema" / "yamleval.schema.json"))


def _cursors(text: str) -> tuple[str, list[tuple[int, int]]]:
    """``text`` without its cursor marks, and the line and column of each."""
    lines, marks = [], []
    for number, line in enumerate(text.split("\n")):
        while CURSOR in line:
            marks.append((number, line.index(CURSOR)))
            line = line.replace(CURSOR, "", 1)
        lines.append(line)
    return "\n".join(lines), marks


def test_the_editor_completes_builtins_and_flags_a_misspelt_argument(server, tmp_path):
    path = tmp_path / "evals.yaml"
    text, (runner_uses, scorer_uses, scorer_with) = _cursors(DOCUMENT)
    diagnostics = server.open(path, text)

    runners = server.completions(path, *runner_uses)
    assert {"echo", "http", "command", "openai", "agent"} <= set(runners)
    scorers = server.completions(path, *scorer_uses)
    assert {"exact_match", "levenshtein", "contains_any", "judge"} <= set(scorers)
    assert "echo" not in scorers
    assert server.completions(path, *scorer_with) == ["ignore_case", "normalize"]

    misspelt = text.splitlines().index("      - {uses: contains_any, with: {ignorecase: true}}")
    flagged = [d["message"] for d in diagnostics if d["range"]["start"]["line"] == misspelt]
    assert flagged == ["Property ignorecase is not allowed."]


def test_the_editor_offers_the_values_an_argument_takes_and_flags_another(server, tmp_path):
    path = tmp_path / "evals.yaml"
    text, (rouge_type,) = _cursors(f"""\
# yaml-language-server: $schema={ROOT / "schema" / "yamleval.schema.json"}
experiments:
  - id: summaries
    dataset: {{items: [{{input: a cat, expected: the cat}}]}}
    runner: echo
    scorers:
      - uses: rouge
        with:
          type: @@
      - {{uses: rouge, id: bad, with: {{type: rouge9}}}}
""")
    diagnostics = server.open(path, text)
    assert set(server.completions(path, *rouge_type)) == {"rouge1", "rouge2", "rougeL", "rougeLsum"}
    bad = text.splitlines().index("      - {uses: rouge, id: bad, with: {type: rouge9}}")
    assert [d["message"] for d in diagnostics if d["range"]["start"]["line"] == bad] == [
        'Value is not accepted. Valid values: "rouge1", "rouge2", "rougeL", "rougeLsum".']


def test_what_the_editor_flags_names_no_internal_definition(server, tmp_path):
    path = tmp_path / "evals.yaml"
    schema = ROOT / "schema" / "yamleval.schema.json"
    messages = [d["message"] for d in server.open(path, f"""\
# yaml-language-server: $schema={schema}
experiments:
  - 5
  - id: a
    dataset: {{items: []}}
    runner: {{uses: echo, with: 3}}
    scorers: [{{uses: judge}}, 5, {{uses: exact_match, with: {{x: 1}}}}]
""")]
    assert len(messages) >= 5, messages
    internal = [name for name in json.loads(schema.read_text())["$defs"] if "_" in name]
    assert [m for m in messages if any(name in m for name in internal)] == []


def test_the_demo_project_has_nothing_to_flag(server):
    path = ROOT / "evals.yaml"
    assert server.open(path, path.read_text(encoding="utf-8")) == []


def test_a_project_made_by_init_has_nothing_to_flag(server, tmp_path):
    assert run_cli("init", cwd=tmp_path).returncode == 0
    path = tmp_path / "evals.yaml"  # its schema line names the schema beside it
    assert server.open(path, path.read_text(encoding="utf-8")) == []
