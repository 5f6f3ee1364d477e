"""A service that answers at once but sends its body a byte at a time: each read is quick,
the whole reply slow. For checking that a timeout covers the whole reply."""
from __future__ import annotations

import time
from http.server import BaseHTTPRequestHandler

from servers.local import LocalServer


class _Trickle(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _trickle(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = self.server.owner.body
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            for byte in body:
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                time.sleep(self.server.owner.pause)
        except OSError:  # the client gave up, as it should
            pass

    do_GET = do_POST = _trickle

    def log_message(self, *args):
        pass


class TrickleServer(LocalServer):
    """``body`` a byte every ``pause`` seconds."""

    handler = _Trickle
    quiet = True

    def __init__(self, body: bytes = b"[" + b" " * 28 + b"]", pause: float = 0.1):
        super().__init__()
        self.body, self.pause = body, pause
