"""A fault-injecting HTTP server on 127.0.0.1 for the fault suite.

Every POST names an item: the first ``it-NNNN`` in its body. The test gives each item a
*plan*, a list of faults for its successive attempts (the last one repeats), so what an
item meets is the same on every run whatever the order of requests. The server counts
the attempts per item, so a test can check that retries stop where they should.

The successful reply is a Chat Completions object, so the same server answers the
``http`` runner (``output: choices.0.message.content``), the ``openai`` runner and a
judge (a forced ``grade`` function call when the request offers tools; without tools the
plain answer text, as a server that ignores ``response_format`` would).
"""
from __future__ import annotations

import json
import re
import socket
import struct
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler
from typing import Any, Callable, Mapping, Sequence

from servers.local import LocalServer

ITEM_ID = re.compile(rb"it-\d{4}")
HUGE = 50 * 1024 * 1024
CHUNK = b"x" * (1024 * 1024)


def answer_for(item_id: str) -> str:
    """The right answer for an item: what the test's ``expected`` holds."""
    return f"answer {item_id}"


def completion(content: str | None, *, tool: str | None = None, arguments: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool is not None:
        message["tool_calls"] = [{"id": "call_1", "type": "function",
                                  "function": {"name": tool, "arguments": json.dumps(arguments)}}]
    return {"id": "chatcmpl-fault", "object": "chat.completion", "created": 0, "model": "faulty",
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if tool else "stop"}],
            "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the pooled sessions of the clients expect
    disable_nagle_algorithm = True
    server: Any  # the serving ThreadingHTTPServer; its ``owner`` is the test server object

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        found = ITEM_ID.search(raw)
        item_id = found.group().decode() if found else "?"
        fault = self.server.owner.attempt(item_id)
        try:
            FAULTS[fault](self, item_id, raw)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up: a timeout or a size cap
            self.close_connection = True

    # -- the pieces faults are made of -------------------------------------------------------

    def send(self, status: int, body: bytes, content_type: str = "application/json",
             headers: Mapping[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)

    def send_json(self, status: int, value: Any, **kw: Any) -> None:
        self.send(status, json.dumps(value).encode("utf-8"), **kw)

    def reset(self) -> None:
        """Close with a TCP reset (SO_LINGER 0) rather than an orderly FIN."""
        self.close_connection = True
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.connection.close()


def good_body(item_id: str, raw: bytes, verdict: str = "pass") -> bytes:
    """A right answer; a judge's request (it offers tools) gets a ``grade`` call with ``verdict``."""
    if b'"tools"' in raw:
        body = completion(None, tool="grade", arguments={"verdict": verdict, "reasoning": f"graded {item_id}"})
    else:
        body = completion(answer_for(item_id) if verdict == "pass" else "a wrong answer")
    return json.dumps(body).encode("utf-8")


def _good(handler: _Handler, item_id: str, raw: bytes, *, verdict: str = "pass",
          content_type: str = "application/json") -> None:
    handler.send(200, good_body(item_id, raw, verdict), content_type=content_type)


def _error(status: int, retry_after: str | None = None) -> Callable[..., None]:
    def fault(handler: _Handler, item_id: str, raw: bytes) -> None:
        headers = {"Retry-After": retry_after} if retry_after is not None else {}
        handler.send_json(status, {"error": {"message": f"injected {status} for {item_id}"}}, headers=headers)
    return fault


def _too_long(handler: _Handler, item_id: str, raw: bytes) -> None:
    """The 400 a real endpoint gives one oversized request; it happens to mention functions."""
    handler.send_json(400, {"error": {"message": f"{item_id}: this model's maximum context length is 4096 tokens, "
                                                 "but your messages and functions use 5120 tokens",
                                      "code": "context_length_exceeded"}})


def _headers(handler: _Handler, body: bytes) -> None:
    """A 200 JSON reply's headers, declaring the whole body (which the fault may then not send)."""
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()


def _reset_mid_body(handler: _Handler, item_id: str, raw: bytes) -> None:
    body = good_body(item_id, raw)
    _headers(handler, body)
    handler.wfile.write(body[: len(body) // 2])
    handler.reset()


def _slow(handler: _Handler, item_id: str, raw: bytes) -> None:
    """No reply until well after the client's timeout."""
    time.sleep(handler.server.owner.slow_seconds)
    _good(handler, item_id, raw)


def _trickle(handler: _Handler, item_id: str, raw: bytes) -> None:
    """Headers at once, then the body a few bytes at a time: each read is quick, the whole is slow."""
    body = good_body(item_id, raw)
    _headers(handler, body)
    pieces = 10
    step = len(body) // pieces + 1
    for start in range(0, len(body), step):
        handler.wfile.write(body[start:start + step])
        time.sleep(handler.server.owner.slow_seconds / pieces)


def _stall_mid_body(handler: _Handler, item_id: str, raw: bytes) -> None:
    """Half the body, then silence for longer than the client's timeout, then a close."""
    body = good_body(item_id, raw)
    _headers(handler, body)
    handler.wfile.write(body[: len(body) // 2])
    time.sleep(handler.server.owner.slow_seconds)
    handler.close_connection = True


def _truncated_json(handler: _Handler, item_id: str, raw: bytes) -> None:
    body = good_body(item_id, raw)
    handler.send(200, body[: len(body) // 2])  # a complete HTTP reply whose JSON stops halfway


def _html(handler: _Handler, item_id: str, raw: bytes) -> None:
    """A proxy's error page served with 200."""
    handler.send(200, b"<html><body><h1>Gateway says hello</h1></body></html>", content_type="text/html")


def _huge(handler: _Handler, item_id: str, raw: bytes, *, declared: bool = True) -> None:
    """50 MB of body, with its Content-Length or (``declared=False``) ended by closing the connection."""
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    if declared:
        handler.send_header("Content-Length", str(HUGE))
    else:
        handler.send_header("Connection", "close")
        handler.close_connection = True
    handler.end_headers()
    for _ in range(HUGE // len(CHUNK)):
        handler.wfile.write(CHUNK)


FAULTS: dict[str, Callable[[_Handler, str, bytes], None]] = {
    "ok": _good,
    "wrong": lambda h, i, r: _good(h, i, r, verdict="fail"),
    "json-as-text": lambda h, i, r: _good(h, i, r, content_type="text/plain"),
    "429": _error(429),
    "429-ra0": _error(429, "0"),
    "400": _error(400),
    "400-too-long": _too_long,
    "500": _error(500),
    "500-ra0": _error(500, "0"),
    "502-ra0": _error(502, "0"),
    "503": _error(503),
    "503-ra1": _error(503, "1"),
    "reset": _reset_mid_body,
    "slow": _slow,
    "trickle": _trickle,
    "stall": _stall_mid_body,
    "truncated": _truncated_json,
    "html": _html,
    "huge": _huge,
    "huge-undeclared": lambda h, i, r: _huge(h, i, r, declared=False),
}




class FaultyServer(LocalServer):
    """The server: ``plans`` maps an item id to its faults, attempt by attempt (the last repeats);
    an item without a plan is answered well. ``attempts`` counts the requests per item."""

    handler = _Handler
    thread_name = "faulty-server"
    queue_size = 128

    def __init__(self, plans: Mapping[str, Sequence[str]] | None = None, slow_seconds: float = 1.0):
        super().__init__()
        self.plans = {k: list(v) for k, v in (plans or {}).items()}
        for plan in self.plans.values():
            unknown = [fault for fault in plan if fault not in FAULTS]
            assert plan and not unknown, f"unknown faults {unknown} in plan {plan}"
        self.slow_seconds = slow_seconds
        self.attempts: Counter[str] = Counter()
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def attempt(self, item_id: str) -> str:
        """Count one request for ``item_id`` and return the fault it meets."""
        with self._lock:
            self.attempts[item_id] += 1
            number = self.attempts[item_id]
        plan = self.plans.get(item_id, ["ok"])
        return plan[min(number, len(plan)) - 1]
