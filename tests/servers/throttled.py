"""A service with a provider's rate limit: a token bucket admits ``rate`` requests a second
(``burst`` at once); an admitted POST is answered after ``delay`` seconds with
``{"output": <the request's "input">}``, one beyond the allowance at once with 429 and
``Retry-After``. ``admitted`` and ``refused`` count the requests; GET answers them as JSON.

The benchmark runs it as a process of its own: ``python throttled.py RATE BURST DELAY``
prints the port, then serves until stopped.
"""
from __future__ import annotations

import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler

if __package__ in (None, ""):  # run as a script: ``servers`` is the folder above this file
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from servers.local import LocalServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the pooled sessions of the clients expect
    disable_nagle_algorithm = True

    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:
        owner = self.server.owner
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if not owner.admit():
            self._send(429, {"error": {"message": "rate limit exceeded"}}, {"Retry-After": owner.retry_after})
            return
        time.sleep(owner.delay)
        self._send(200, {"output": json.loads(body or b"{}").get("input")})

    def do_GET(self) -> None:
        owner = self.server.owner
        self._send(200, {"admitted": owner.admitted, "refused": owner.refused})

    def _send(self, status: int, value: object, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(value).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, text in (headers or {}).items():
            self.send_header(key, text)
        self.end_headers()
        self.wfile.write(data)


class ThrottledServer(LocalServer):
    handler = _Handler
    thread_name = "throttled-server"
    queue_size = 256  # many clients connecting at once must not be refused by the socket

    def __init__(self, rate: float = 100.0, burst: int = 10, delay: float = 0.2, retry_after: str = "1"):
        super().__init__()
        self.rate, self.burst, self.delay, self.retry_after = rate, burst, delay, retry_after
        self.admitted = self.refused = 0
        self._tokens = float(burst)
        self._refilled = time.monotonic()
        self._lock = threading.Lock()

    def admit(self) -> bool:
        """Whether the bucket has a request's token now (and take it); counted either way."""
        with self._lock:
            now = time.monotonic()
            self._tokens = min(self.burst, self._tokens + (now - self._refilled) * self.rate)
            self._refilled = now
            if self._tokens >= 1:
                self._tokens -= 1
                self.admitted += 1
                return True
            self.refused += 1
            return False


if __name__ == "__main__":
    rate, burst, delay = float(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    server = ThrottledServer(rate, burst, delay).start()
    print(server.port, flush=True)
    threading.Event().wait()
