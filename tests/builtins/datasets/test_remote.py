"""Remote, paginated datasets against a small JSON service on 127.0.0.1."""
from __future__ import annotations

import json
import socket
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

from yamleval.builtins.datasets.remote import Asking, Paging, RemoteDatasetError, remote_rows

ROWS = [{"id": f"r{i}", "input": f"question {i}", "expected": str(i)} for i in range(7)]
FAST_BACKOFF = (0.001, 0.002)  # a retry waits a millisecond or two
FAST = Asking(backoff=FAST_BACKOFF)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):
        pass

    def do_GET(self):
        owner = self.server.owner
        parts = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        owner.requests.append({"path": parts.path, "query": query, "headers": dict(self.headers.items())})
        if owner.failures:
            status, headers, body = owner.failures.popleft()
            return self._send(status, body, headers)
        if owner.token and self.headers.get("Authorization") != f"Bearer {owner.token}":
            return self._send(401, {"error": "missing or wrong token"})
        if parts.path == "/away":  # another origin: the same server by another name
            self.send_response(307)
            self.send_header("Location", f"http://localhost:{self.server.server_address[1]}/offset?{parts.query}")
            self.send_header("Content-Length", "0")
            return self.end_headers()
        if parts.path == "/offset":
            limit, offset = int(query["limit"]), int(query["offset"])
            return self._send(200, {"data": {"rows": ROWS[offset:offset + limit]}, "meta": {"total": len(ROWS)}})
        if parts.path == "/exact":  # pages are always full: only `total` tells the end
            limit, offset = int(query["limit"]), int(query["offset"])
            rows = (ROWS * 10)[offset:offset + limit]
            return self._send(200, {"rows": rows, "total": 6})
        if parts.path == "/cursor":
            start = int(query.get("cursor", 0))
            page = {"items": ROWS[start:start + 3]}
            if start + 3 < len(ROWS):
                page["links"] = {"next": f"/cursor?cursor={start + 3}"}  # relative
            else:
                page["links"] = {"next": None}
            return self._send(200, page)
        if parts.path == "/loop":
            return self._send(200, {"items": ROWS[:1], "next": "/loop"})
        if parts.path == "/list":
            offset = int(query["offset"])
            return self._send(200, ROWS[offset:offset + int(query["limit"])])
        if parts.path == "/html":
            return self._send(200, "<html>sign in</html>", {"Content-Type": "text/html"})
        if parts.path == "/scalars":
            return self._send(200, {"items": [1, 2]})
        return self._send(404, {"error": f"no route {parts.path}"})

    def _send(self, status, body, headers=None):
        payload = (body if isinstance(body, str) else json.dumps(body)).encode("utf-8")
        self.send_response(status)
        headers = {"Content-Type": "application/json", **(headers or {})}
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


class Service:
    def __init__(self):
        self.requests = []
        self.failures = deque()
        self.token = None
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.daemon_threads = True
        self.httpd.owner = self
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                       daemon=True)

    def url(self, path):
        return f"http://127.0.0.1:{self.httpd.server_address[1]}{path}"


@pytest.fixture
def service():
    svc = Service()
    svc.thread.start()
    try:
        yield svc
    finally:
        svc.httpd.shutdown()
        svc.httpd.server_close()
        svc.thread.join(5)


def test_offset_paging_reads_every_row_in_order_with_headers(service):
    service.token = "s3cret"
    rows = list(remote_rows(service.url("/offset?lang=en"), {"Authorization": "Bearer s3cret"},
                            Paging(3, "data.rows"), FAST))
    assert rows == ROWS
    assert [(r["query"]["limit"], r["query"]["offset"]) for r in service.requests] == [
        ("3", "0"), ("3", "3"), ("3", "6")]  # the last page is short: no fourth request
    assert all(r["query"]["lang"] == "en" for r in service.requests)  # the URL's own query is kept


def test_rows_are_fetched_lazily_page_by_page(service):
    rows = remote_rows(service.url("/offset"), None, Paging(2, "data.rows"), FAST)
    assert service.requests == []
    assert [next(rows) for _ in range(3)] == ROWS[:3]
    assert len(service.requests) == 2
    rows.close()


def test_limit_stops_early_and_asks_only_for_what_it_needs(service):
    rows = list(remote_rows(service.url("/offset"), None, Paging(2, "data.rows", None, 5), FAST))
    assert rows == ROWS[:5]
    assert [(r["query"]["limit"], r["query"]["offset"]) for r in service.requests] == [
        ("2", "0"), ("2", "2"), ("1", "4")]
    assert list(remote_rows(service.url("/offset"), None, Paging(2, "data.rows", None, 0))) == []


def test_total_ends_paging_when_pages_are_always_full(service):
    rows = list(remote_rows(service.url("/exact"), None, Paging(3, "rows", None, None, total_path="total"), FAST))
    assert len(rows) == 6 and len(service.requests) == 2


def test_a_page_that_is_a_list_needs_no_items_path(service):
    assert list(remote_rows(service.url("/list"), None, Paging(4), FAST)) == ROWS


def test_next_links_are_followed_relative_to_the_page(service):
    rows = list(remote_rows(service.url("/cursor"), None, Paging(200, "items", "links.next"), FAST))
    assert rows == ROWS
    assert [r["query"].get("cursor") for r in service.requests] == [None, "3", "6"]
    assert "limit" not in service.requests[0]["query"]


def test_a_next_link_back_to_a_read_page_is_an_error(service):
    with pytest.raises(RemoteDatasetError, match="leads back"):
        list(remote_rows(service.url("/loop"), None, Paging(200, "items", "next"), FAST))


def test_429_and_5xx_are_retried_honouring_retry_after(service):
    service.failures.extend([(503, {}, {"error": "busy"}), (429, {"Retry-After": "0"}, {"error": "slow down"})])
    waits = []
    rows = list(remote_rows(service.url("/offset"), None,
                            Paging(10, "data.rows"), Asking(sleep=waits.append, backoff=FAST_BACKOFF)))
    assert rows == ROWS
    assert len(service.requests) == 3
    assert waits[1] == 0.0  # Retry-After: 0, not the backoff


def test_retries_run_out_with_the_status_and_the_attempts(service):
    service.failures.extend([(502, {}, {"error": "bad gateway"})] * 3)
    with pytest.raises(RemoteDatasetError) as caught:
        list(remote_rows(service.url("/offset?key=abc"), None,
                         Paging(10, "data.rows"), Asking(retries=2, backoff=FAST_BACKOFF)))
    message = str(caught.value)
    assert "HTTP 502" in message and "3 attempts" in message and "page 1" in message
    assert "key=abc" not in message  # query strings may hold credentials


def test_a_client_error_is_not_retried_and_headers_never_show(service):
    service.token = "s3cret"
    with pytest.raises(RemoteDatasetError) as caught:
        list(remote_rows(service.url("/offset"), {"Authorization": "Bearer wrong-token"},
                         Paging(10, "data.rows"), FAST))
    assert "HTTP 401" in str(caught.value) and "wrong-token" not in str(caught.value)
    assert len(service.requests) == 1


def test_a_redirect_to_another_host_goes_without_the_headers(service):
    rows = list(remote_rows(service.url("/away"), {"X-Api-Key": "s3cret"}, Paging(10, "data.rows"), FAST))
    assert rows == ROWS
    away, landed = service.requests
    assert away["headers"]["X-Api-Key"] == "s3cret"
    assert landed["path"] == "/offset" and landed["headers"]["Host"].startswith("localhost:")
    assert "X-Api-Key" not in landed["headers"]


def test_connection_errors_are_retried_then_reported():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    waits = []
    with pytest.raises(RemoteDatasetError, match="connection failed.*after 3 attempts"):
        list(remote_rows(f"http://127.0.0.1:{port}/x", None,
                         Paging(10), Asking(retries=2, sleep=waits.append, backoff=FAST_BACKOFF)))
    assert len(waits) == 2


def test_a_trickled_page_times_out_and_a_huge_one_is_refused(monkeypatch):
    """The timeout covers the whole page, body included; a page has a size limit."""
    from servers.trickle import TrickleServer

    import yamleval.builtins.datasets.remote

    with TrickleServer() as server:
        started = time.monotonic()
        with pytest.raises(RemoteDatasetError, match=r"no reply within 0.5s"):
            list(remote_rows(f"{server.url}/rows", None, Paging(10), Asking(timeout=0.5, retries=0)))
        assert time.monotonic() - started < 1.5
        monkeypatch.setattr(yamleval.builtins.datasets.remote, "MAX_PAGE_BYTES", 10)
        with pytest.raises(RemoteDatasetError, match=r"the page is larger than 10 bytes; ask for smaller pages"):
            list(remote_rows(f"{server.url}/rows", None, Paging(10), Asking(timeout=5, retries=0)))


@pytest.mark.parametrize("path, items, message", [
    ("/html", None, "not JSON"),
    ("/offset", "data.items", "`items: data.items` is not in the page"),
    ("/offset", "meta", "is an object, not a list of rows"),
    ("/scalars", "items", "row 1 is a number"),
])
def test_pages_of_the_wrong_shape_are_errors(service, path, items, message):
    with pytest.raises(RemoteDatasetError, match=message):
        list(remote_rows(service.url(path), None, Paging(10, items), FAST))


@pytest.mark.parametrize("url, paging, message", [
    ("ftp://x/y", Paging(10), "http:// or https://"),
    ("http://127.0.0.1/x", Paging(0), "page_size"),
    ("http://127.0.0.1/x", Paging(10, limit=-1), "limit"),
])
def test_bad_arguments_fail_before_any_request(url, paging, message):
    with pytest.raises(ValueError, match=message):
        remote_rows(url, None, paging)  # at the call, before any row is asked for
