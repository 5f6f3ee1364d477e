"""Endpoints that go away: a judge that stops listening after a number of answers and comes back
on the same port, and a runner's service that counts the calls it answers.

Each reply closes its connection, so that a request after the judge stopped listening opens a
new one and is refused, as it would be by a server that went down (a kept-alive connection
would still reach the handler thread serving it).
"""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler
from typing import Any

from servers.local import LocalServer
from servers.openai_server import tool_reply


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # one request a connection
    server: Any

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        payload = json.dumps(self.server.owner.answer()).encode("utf-8")
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


class StoppingJudge(LocalServer):
    """An OpenAI-compatible judge that grades every answer "pass"; with ``stop_after``, it stops
    listening as it gives that answer (before sending it), so every later request is refused.
    ``start(port)`` starts it again where it was."""

    handler = _Handler
    thread_name = "stopping-judge"

    def __init__(self, stop_after: int | None = None):
        super().__init__()
        self.stop_after, self.answers = stop_after, 0
        self._lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def answer(self) -> Any:
        with self._lock:
            self.answers += 1
            last = self.answers == self.stop_after
        if last:  # nothing listens any more once this answer is on its way
            self._httpd.shutdown()
            self._httpd.server_close()
        return tool_reply("grade", {"verdict": "pass", "reasoning": "fine"}).body


class CountingService(LocalServer):
    """A runner's service that answers every POST with ``{"output": "ok", "usage": ...}``
    (``tokens`` a call) after ``seconds``, and counts the calls it answered (``calls``)."""

    handler = _Handler
    thread_name = "counting-service"
    queue_size = 64

    def __init__(self, tokens: int = 100, seconds: float = 0.0):
        super().__init__()
        self.tokens, self.seconds, self.calls = tokens, seconds, 0
        self._lock = threading.Lock()

    def answer(self) -> Any:
        time.sleep(self.seconds)
        with self._lock:
            self.calls += 1
        return {"output": "ok", "usage": {"prompt_tokens": self.tokens, "completion_tokens": 0}}
