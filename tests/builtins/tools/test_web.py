import json
import time
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, urlsplit

import pytest

from servers.local import LocalServer
from yamleval.builtins.tools import ToolError, build_tools

PAGE = """<html><head><title>Tide  tables</title><style>body {color: red}</style>
<script>var secret = 1;</script></head>
<body><h1>High   tide</h1><p>At 06:12 &amp; 18:40.</p><ul><li>Low: 00:05</li></ul></body></html>"""


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        parts = urlsplit(self.path)
        if parts.path == "/page":
            self._send(200, "text/html; charset=utf-8", PAGE.encode())
        elif parts.path == "/big":
            self._send(200, "text/plain", b"z" * 500_000)
        elif parts.path == "/moved":
            self.send_response(302)
            self.send_header("Location", "/page")
            self.end_headers()
        elif parts.path == "/search":
            query = parse_qs(parts.query)["q"][0]
            hits = [{"name": f"{query} result {n}", "href": f"http://example.test/{n}",
                     "text": f"about\n  {query} {n}"} for n in range(1, 8)]
            self._send(200, "application/json", json.dumps({"data": {"hits": hits}}).encode())
        else:
            self._send(404, "text/plain", b"missing")

    def _send(self, status, kind, body):
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class _Server(LocalServer):
    handler = Handler


@pytest.fixture(scope="module")
def server():
    with _Server() as running:
        yield running.url


def tool(entry, tmp_path):
    (built,) = build_tools([entry], str(tmp_path))
    return built


def test_fetch_extracts_text_from_html(server, tmp_path):
    result = tool("web_fetch", tmp_path).call({"url": f"{server}/page"})
    assert result == f"URL: {server}/page\nTitle: Tide tables\n\nHigh tide\nAt 06:12 & 18:40.\nLow: 00:05"


def test_fetch_follows_redirects(server, tmp_path):
    assert "High tide" in tool("web_fetch", tmp_path).call({"url": f"{server}/moved"})


def test_fetch_caps_the_size(server, tmp_path):
    fetch = tool({"uses": "web_fetch", "with": {"max_bytes": 1000, "max_chars": 100}}, tmp_path)
    result = fetch.call({"url": f"{server}/big"})
    assert result.endswith("\n" + "z" * 100 + "\n[truncated]")


def test_fetch_refuses_hosts_outside_allow_domains(server, tmp_path):
    fetch = tool({"uses": "web_fetch", "with": {"allow_domains": ["example.test"]}}, tmp_path)
    with pytest.raises(ToolError, match=r"'127.0.0.1' is not in allow_domains \(example.test\)"):
        fetch.call({"url": f"{server}/page"})
    allowed = tool({"uses": "web_fetch", "with": {"allow_domains": ["127.0.0.1"]}}, tmp_path)
    assert "High tide" in allowed.call({"url": f"{server}/page"})


def test_fetch_reports_http_errors_and_bad_urls(server, tmp_path):
    fetch = tool("web_fetch", tmp_path)
    with pytest.raises(ToolError, match="answered HTTP 404"):
        fetch.call({"url": f"{server}/nothing"})
    with pytest.raises(ToolError, match="only http and https"):
        fetch.call({"url": "file:///etc/passwd"})


def test_search_formats_the_top_results(server, tmp_path):
    search = tool({"uses": "web_search", "with": {
        "url": server + "/search?q={query}", "results": "data.hits", "title": "name",
        "link": "href", "snippet": "text", "max_results": 2}}, tmp_path)
    assert search.call({"query": "tide & moon"}) == (
        "1. tide & moon result 1\n   http://example.test/1\n   about tide & moon 1\n"
        "2. tide & moon result 2\n   http://example.test/2\n   about tide & moon 2")


def test_search_with_a_wrong_result_path(server, tmp_path):
    search = tool({"uses": "web_search", "with": {"url": server + "/search?q={query}",
                                                  "results": "data.items"}}, tmp_path)
    with pytest.raises(ToolError, match="has no 'data.items' \\(stopped at 'items'\\)"):
        search.call({"query": "x"})


def test_search_without_a_url_is_a_config_error(tmp_path):
    with pytest.raises(ValueError, match=r"web_search needs `with: \{url: ...\}`"):
        build_tools(["web_search"], str(tmp_path))


def test_fetch_gives_up_on_a_page_trickled_past_its_timeout():
    from servers.trickle import TrickleServer
    from yamleval.builtins.tools.web import web_fetch

    with TrickleServer() as server:
        started = time.monotonic()
        with pytest.raises(ToolError, match=r"did not send its page within 0.5s"):
            web_fetch(f"{server.url}/page", timeout=0.5)
        assert time.monotonic() - started < 1.5
