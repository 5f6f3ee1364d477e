"""What every test server here shares: a threading HTTP server on 127.0.0.1 (a free port),
serving on a thread of its own from ``start`` until ``stop``; usable as a context manager."""
from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class LocalServer:
    """Subclasses name their handler; the handler reaches the subclass as ``self.server.owner``."""

    handler: type[BaseHTTPRequestHandler]
    thread_name = "test-server"
    queue_size = 5
    quiet = False  # True: a client that hangs up mid-reply is expected, not worth a traceback

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __init__(self) -> None:
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return self._httpd.server_address[1]

    def start(self, port: int = 0):
        """Serve on ``port`` (0: a free one; a port it served on before: back where it was)."""
        attributes = {"daemon_threads": True, "request_queue_size": self.queue_size}
        if self.quiet:
            attributes["handle_error"] = lambda server, request, client_address: None
        httpd = type("Server", (ThreadingHTTPServer,), attributes)
        self._httpd = httpd(("127.0.0.1", port), self.handler)
        self._httpd.owner = self
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=self.thread_name, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._thread.join(5)
            self._httpd = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
