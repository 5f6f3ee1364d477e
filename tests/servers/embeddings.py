"""An OpenAI-compatible ``/v1/embeddings`` server on 127.0.0.1 for tests.

Each text gets a deterministic vector: its entry in ``vectors`` when it has one, else eight
numbers from a hash of the text (``vector_of``). Every text asked for is counted in ``asked``
and every request body kept in ``bodies``. ``fail_with`` scripts the next replies instead:
``(status, body text)`` pairs, sent as they are.
"""
from __future__ import annotations

import hashlib
import json
import threading
from collections import Counter, deque
from http.server import BaseHTTPRequestHandler
from typing import Any

from servers.local import LocalServer


def vector_of(text: str) -> list[float]:
    """The vector the server gives ``text`` unless told otherwise."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return [(byte - 127.5) / 127.5 for byte in digest[:8]]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Any

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        owner = self.server.owner
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"null")
        status, text = owner.answer(self.path, dict(self.headers.items()), body)
        payload = text.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


class EmbeddingsServer(LocalServer):
    handler = _Handler
    thread_name = "embeddings-test-server"

    def __init__(self) -> None:
        super().__init__()
        self.vectors: dict[str, list[float]] = {}
        self.asked: Counter[str] = Counter()
        self.bodies: list[Any] = []
        self.headers: list[dict[str, str]] = []
        self.fail_with: deque[tuple[int, str]] = deque()
        self._lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def answer(self, path: str, headers: dict[str, str], body: Any) -> tuple[int, str]:
        with self._lock:
            self.bodies.append(body)
            self.headers.append(headers)
            if self.fail_with:
                return self.fail_with.popleft()
            if path != "/v1/embeddings":
                return 404, json.dumps({"error": {"message": f"no route {path}"}})
            texts = body["input"]
            self.asked.update(texts)
        data = [{"object": "embedding", "index": index, "embedding": self.vectors.get(text) or vector_of(text)}
                for index, text in enumerate(texts)]
        tokens = sum(len(text.split()) for text in texts)
        return 200, json.dumps({"object": "list", "data": data, "model": body["model"],
                                "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})
