"""A scripted OpenAI-compatible server on 127.0.0.1 for tests.

A test queues replies (``server.push(text_reply("hi"), error_reply(429, ...))``);
each POST takes the next one. Every request is recorded with its path, headers
and JSON body. With the queue empty the server answers 500 so a test notices.
"""
from __future__ import annotations

import json
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from servers.local import LocalServer


@dataclass(frozen=True)
class Reply:
    """One scripted answer: a status, headers and a body (a dict is sent as JSON,
    a str as it is). ``drop`` closes the connection without answering; ``delay``
    waits that many seconds before answering."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    drop: bool = False


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    at: float


def completion(message: dict[str, Any], *, prompt_tokens: int = 10, completion_tokens: int = 5,
               finish_reason: str = "stop", model: str = "test-model") -> dict[str, Any]:
    return {
        "id": "chatcmpl-test", "object": "chat.completion", "created": int(time.time()), "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }


def text_reply(content: str, *, prompt_tokens: int = 10, completion_tokens: int = 5, finish_reason: str = "stop",
               **kw: Any) -> Reply:
    """A plain text answer; ``finish_reason="length"``: one cut off at its token limit."""
    return Reply(body=completion({"role": "assistant", "content": content}, prompt_tokens=prompt_tokens,
                                 completion_tokens=completion_tokens, finish_reason=finish_reason), **kw)


def tool_reply(name: str, arguments: Any, *, prompt_tokens: int = 10, completion_tokens: int = 5,
               finish_reason: str = "tool_calls", **kw: Any) -> Reply:
    """An answer that calls one tool; ``arguments`` is sent as given when a str, else as JSON
    (a str cut short, with ``finish_reason="length"``, is a call cut off at its token limit)."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    message = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": name, "arguments": args}}]}
    return Reply(body=completion(message, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                                 finish_reason=finish_reason), **kw)


def error_reply(status: int, message: str = "error", *, headers: dict[str, str] | None = None,
                **kw: Any) -> Reply:
    """An error in OpenAI's shape ``{"error": {"message": ...}}``."""
    return Reply(status=status, body={"error": {"message": message, "type": "test_error", "code": None}},
                 headers=headers or {}, **kw)


def dropped() -> Reply:
    """Close the connection without answering."""
    return Reply(drop=True)


def malformed(text: str = '{"choices": [', status: int = 200) -> Reply:
    """A body that is not JSON, sent as application/json."""
    return Reply(status=status, body=text)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the client's pooled session expects
    disable_nagle_algorithm = True
    server: Any  # the serving ThreadingHTTPServer; its ``owner`` is the test server object

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._record(None)
        if self.path.rstrip("/").endswith("/models"):
            self._send(Reply(body={"object": "list", "data": [{"id": "test-model", "object": "model"}]}))
        else:
            self._send(error_reply(404, f"no route {self.path}"))

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        self._record(body)
        reply = self.server.owner.next_reply()
        if reply.delay:
            time.sleep(reply.delay)
        if reply.drop:
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        self._send(reply)

    def _record(self, body: Any) -> None:
        self.server.owner.record(RecordedRequest(self.command, self.path, dict(self.headers.items()), body,
                                                 time.monotonic()))

    def _send(self, reply: Reply) -> None:
        data = reply.body if isinstance(reply.body, (str, bytes)) else json.dumps(reply.body)
        payload = data.encode("utf-8") if isinstance(data, str) else data
        try:
            self.send_response(reply.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for key, value in reply.headers.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout test)
            self.close_connection = True




class OpenAIServer(LocalServer):
    """The scripted server; ``base_url`` ends in ``/v1`` like a real endpoint's."""

    handler = _Handler
    thread_name = "openai-test-server"
    queue_size = 5

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[RecordedRequest] = []
        self._replies: deque[Reply] = deque()
        self._lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def push(self, *replies: Reply) -> "OpenAIServer":
        with self._lock:
            self._replies.extend(replies)
        return self

    def next_reply(self) -> Reply:
        with self._lock:
            if self._replies:
                return self._replies.popleft()
        return error_reply(500, "the test scripted no reply for this request")

    def record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    @property
    def bodies(self) -> list[Any]:
        """The JSON bodies of the POST requests, in order."""
        return [r.body for r in self.requests if r.method == "POST"]
