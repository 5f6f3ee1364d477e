"""The ``http`` runner against a scripted local server: replies, retries, errors, runs from YAML."""
from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable
from urllib.parse import parse_qs, urlsplit

import pytest

import yamleval
from yamleval.builtins.runners.http import http
from yamleval.records.paths import PathNotFound
from yamleval.records.types import Item, RunnerResult, Usage

ITEM = Item(id="q1", index=0, input="hello")
DROP = object()   # a reply that closes the connection without answering
SECRET = "s3cret-token-value"


class Server:
    """A local HTTP service whose replies a test scripts: ``reply(request) -> (status, body[, headers])``."""

    def __init__(self):
        self.requests: list[dict[str, Any]] = []
        self.queue: list[Any] = []
        self.reply: Callable[[dict], Any] = lambda request: (200, {"echo": request["json"]})
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"   # keep-alive, so that pooled connections are reused
            disable_nagle_algorithm = True

            def log_message(self, *args):
                pass

            def handle_any(self):
                parts = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                request = {"method": self.command, "path": parts.path, "query": parse_qs(parts.query),
                           "headers": dict(self.headers), "body": raw.decode("utf-8"),
                           "client": self.client_address}
                try:
                    request["json"] = json.loads(raw) if raw else None
                except ValueError:
                    request["json"] = None
                server.requests.append(request)
                answer = server.queue.pop(0) if server.queue else server.reply(request)
                if answer is DROP:
                    self.close_connection = True
                    return
                status, body, *extra = answer
                headers = extra[0] if extra else {}
                if isinstance(body, (dict, list)):
                    data, kind = json.dumps(body).encode(), "application/json"
                else:
                    data, kind = str(body).encode(), "text/plain; charset=utf-8"
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = handle_any

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.httpd.block_on_close = False
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)


@pytest.fixture
def server():
    running = Server()
    yield running
    running.close()


def test_json_reply_with_output_and_usage_paths(server):
    server.reply = lambda request: (200, {
        "choices": [{"message": {"content": request["json"]["messages"][0]["content"].upper()}}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8}})
    result = http(ITEM, url=f"{server.url}/v1/chat?mode=fast", headers={"Authorization": f"Bearer {SECRET}"},
                  query={"lang": "en"}, body={"messages": [{"role": "user", "content": "hello"}]},
                  output="choices.0.message.content", usage="usage")
    assert isinstance(result, RunnerResult)
    assert result.output == "HELLO"
    assert result.usage == Usage(3, 5)
    assert result.metadata == {"status": 200}
    [request] = server.requests
    assert request["method"] == "POST" and request["path"] == "/v1/chat"
    assert request["query"] == {"mode": ["fast"], "lang": ["en"]}
    assert request["headers"]["Authorization"] == f"Bearer {SECRET}"
    assert request["headers"]["Content-Type"] == "application/json"


def test_input_and_output_tokens_are_read_as_usage(server):
    server.reply = lambda request: (200, {"answer": "x", "meta": {"usage": {"input_tokens": 7, "output_tokens": 2}}})
    result = http(ITEM, url=server.url, body={"q": "hi"}, output="answer", usage="meta.usage")
    assert result.usage == Usage(7, 2)


def test_without_output_the_whole_reply_is_the_output(server):
    server.reply = lambda request: (200, {"a": [1, 2]})
    assert http(ITEM, url=server.url).output == {"a": [1, 2]}
    server.reply = lambda request: (200, "plain words, ünïcode")
    assert http(ITEM, url=server.url).output == "plain words, ünïcode"


def test_a_text_body_is_sent_as_text_and_get_sends_none(server):
    server.reply = lambda request: (200, request["body"] or "nothing")
    assert http(ITEM, url=server.url, body="héllo").output == "héllo"
    assert server.requests[0]["headers"]["Content-Type"] == "text/plain; charset=utf-8"
    assert http(ITEM, url=server.url, method="get", query={"q": "x"}).output == "nothing"
    assert server.requests[1]["method"] == "GET" and server.requests[1]["query"] == {"q": ["x"]}


def test_connections_are_pooled_per_thread_of_a_run(server):
    from yamleval.calls import Network

    run, other = Network(), Network()
    http(ITEM, url=server.url, body={}, network=run)
    http(ITEM, url=f"{server.url}/other", body={}, network=run)
    http(ITEM, url=server.url, body={}, network=other)
    clients = [r["client"] for r in server.requests]
    assert clients[0] == clients[1], "the second call of the run opened a new connection"
    assert clients[2] != clients[0], "another run used this run's connection"


def test_429_with_retry_after_is_waited_for_and_retried(server):
    server.queue = [(429, {"error": "slow down"}, {"Retry-After": "1"})]
    started = time.monotonic()
    result = http(ITEM, url=server.url, body={"q": 1})
    assert time.monotonic() - started >= 0.9
    assert result.output == {"echo": {"q": 1}}
    assert result.metadata == {"status": 200, "attempts": 2}
    assert len(server.requests) == 2


def test_500_then_200_succeeds(server):
    server.queue = [(500, "oops")]
    result = http(ITEM, url=server.url, body={"q": 1})
    assert result.output == {"echo": {"q": 1}} and result.metadata["attempts"] == 2


def test_a_dropped_connection_is_retried(server):
    server.queue = [DROP]
    assert http(ITEM, url=server.url, body={"q": 2}).output == {"echo": {"q": 2}}
    assert len(server.requests) == 2


def test_a_dropped_connection_without_retries_is_a_connection_error(server):
    server.queue = [DROP]
    with pytest.raises(ConnectionError, match=r"^POST http://127.0.0.1:\d+/x: the server closed the connection"):
        http(ITEM, url=f"{server.url}/x", body={}, retries=0)


def test_persistent_5xx_gives_up_after_the_retries(server):
    server.reply = lambda request: (503, "down for maintenance")
    with pytest.raises(RuntimeError, match=r"^HTTP 503 from POST http://127.0.0.1:\d+/ after 2 attempts: down for"):
        http(ITEM, url=server.url, body={}, retries=1)
    assert len(server.requests) == 2


def test_401_is_not_retried_and_no_secret_reaches_the_error(server):
    server.reply = lambda request: (401, {"error": "bad key"})
    with pytest.raises(RuntimeError) as caught:
        http(ITEM, url=f"{server.url}/chat?api_key={SECRET}", headers={"X-Api-Key": SECRET}, body={})
    message = str(caught.value)
    assert message == f'HTTP 401 from POST {server.url}/chat: {{"error": "bad key"}}'
    assert SECRET not in message and len(server.requests) == 1


def test_the_body_of_an_error_is_cut_to_500_characters(server):
    server.reply = lambda request: (400, "x" * 600)
    with pytest.raises(RuntimeError) as caught:
        http(ITEM, url=server.url)
    assert str(caught.value).endswith(": " + "x" * 500)


def test_status_lists_the_accepted_codes(server):
    server.reply = lambda request: (404, {"found": False})
    result = http(ITEM, url=server.url, status=[200, 404])
    assert result.output == {"found": False} and result.metadata == {"status": 404}
    server.reply = lambda request: (201, {"created": True})
    with pytest.raises(RuntimeError, match="HTTP 201"):
        http(ITEM, url=server.url, status=[200])


def test_a_missing_output_path_shows_the_keys_there(server):
    server.reply = lambda request: (200, {"data": {"text": "hi", "score": 1}})
    with pytest.raises(PathNotFound) as caught:
        http(ITEM, url=server.url, output="data.answer")
    assert str(caught.value) == ("`output: data.answer` is not in the reply: "
                                 "no key 'answer' at data in 'data.answer'; keys there: text, score")


def test_an_output_path_needs_a_json_reply(server):
    server.reply = lambda request: (200, "<html>hi</html>")
    with pytest.raises(ValueError, match=r"is not JSON \(text/plain; charset=utf-8\): '<html>hi</html>'"):
        http(ITEM, url=server.url, output="answer")


def test_usage_without_token_counts_is_an_error(server):
    server.reply = lambda request: (200, {"answer": "a", "usage": {"tokens": 3}})
    with pytest.raises(ValueError, match="neither prompt_tokens/completion_tokens .* keys there: tokens"):
        http(ITEM, url=server.url, output="answer", usage="usage")


def test_a_slow_reply_times_out(server):
    def slow(request):
        time.sleep(1.5)
        return 200, {}
    server.reply = slow
    with pytest.raises(TimeoutError, match=r"^POST http://127.0.0.1:\d+/: no reply within 0.2s$"):
        http(ITEM, url=server.url, timeout=0.2, retries=0)


def test_a_refused_connection_is_a_connection_error():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(ConnectionError, match=rf"^POST http://127.0.0.1:{port}/: connection failed: Connection refused"):
        http(ITEM, url=f"http://127.0.0.1:{port}", retries=0)


@pytest.mark.parametrize("options, message", [
    ({"url": "ftp://example.invalid/x"}, "`url` must start with http"),
    ({"url": ""}, "`url` must be a non-empty string"),
    ({"url": "http://127.0.0.1:1", "method": "PO ST"}, "`method` must be an HTTP method"),
    ({"url": "http://127.0.0.1:1", "retries": -1}, "`retries` must be a whole number"),
    ({"url": "http://127.0.0.1:1", "status": ["200"]}, "`status` must be a list of HTTP status codes"),
    ({"url": "http://127.0.0.1:1", "rate_limit": {"requests_per_minute": "60"}},
     "`rate_limit.requests_per_minute` must be a number above 0"),
    ({"url": "http://127.0.0.1:1", "adaptive": "no"}, "`adaptive` must be true or false"),
])
def test_bad_options_are_value_errors(options, message):
    with pytest.raises(ValueError, match=message):
        http(ITEM, **options)


# --- end to end, from YAML through the engine ----------------------------------------------------

def test_a_yaml_experiment_posts_each_item_and_one_failure_stays_on_its_item(server, write_config, monkeypatch):
    monkeypatch.setenv("YAMLEVAL_TEST_API_KEY", SECRET)

    def reply(request):
        if request["headers"].get("Authorization") != f"Bearer {SECRET}":
            return 403, {"error": "no key"}
        message = request["json"]["message"]
        if message == "fail":
            return 401, {"error": "refused"}
        return 200, {"reply": {"text": message.upper()}, "usage": {"prompt_tokens": 2, "completion_tokens": 1}}

    server.reply = reply
    path = write_config(f"""
        experiments:
          - id: chat
            concurrency: 2
            dataset:
              items:
                - {{id: a, input: hello, expected: HELLO}}
                - {{id: b, input: fail, expected: FAIL}}
                - {{id: c, input: bye, expected: BYE}}
            runner:
              uses: yamleval.builtins.runners.http:http
              with:
                url: "{server.url}/chat"
                headers: {{Authorization: "Bearer ${{YAMLEVAL_TEST_API_KEY}}"}}
                body: {{message: "{{{{ input }}}}", id: "{{{{ item.id }}}}"}}
                output: reply.text
                usage: usage
            scorers: [exact_match]
    """)
    [experiment] = yamleval.load_experiments(path)
    result = yamleval.run_experiment(experiment)
    items = {r.item.id: r for r in result.items}
    assert items["a"].status == "passed" and items["a"].output == "HELLO"
    assert items["c"].status == "passed" and items["c"].output == "BYE"
    assert items["a"].metadata == {"status": 200} and items["a"].usage == Usage(2, 1)
    assert items["b"].status == "error"
    assert items["b"].error == f'runner raised RuntimeError: HTTP 401 from POST {server.url}/chat: {{"error": "refused"}}'
    assert result.summary.tokens == Usage(4, 2)
    assert sorted(r["json"]["id"] for r in server.requests) == ["a", "b", "c"]
    assert SECRET not in json.dumps([r.metadata for r in result.items]) + str([r.error for r in result.items])


def test_proxies_and_netrc_credentials_come_from_the_environment(server, monkeypatch, tmp_path):
    (tmp_path / "netrc").write_text("machine via-proxy.invalid login ann password pass-word\n", encoding="utf-8")
    monkeypatch.setenv("NETRC", str(tmp_path / "netrc"))
    monkeypatch.setenv("HTTP_PROXY", server.url)
    monkeypatch.setenv("NO_PROXY", "direct.invalid")
    server.reply = lambda request: (200, {"host": request["headers"]["Host"],
                                          "auth": request["headers"].get("Authorization")})
    result = http(ITEM, url="http://via-proxy.invalid/ask", body={"q": "{{ input }}"})
    assert result.output == {"host": "via-proxy.invalid", "auth": "Basic YW5uOnBhc3Mtd29yZA=="}  # ann:pass-word

    with pytest.raises(ConnectionError, match=r"^POST http://direct.invalid/ask: connection failed"):
        http(ITEM, url="http://direct.invalid/ask", retries=0)  # NO_PROXY: straight to a host that does not exist
    assert len(server.requests) == 1


def test_a_ca_bundle_from_the_environment_is_used(monkeypatch):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", "/etc/company-ca.pem")
    with pytest.raises(OSError, match="CA certificate bundle, invalid path: /etc/company-ca.pem"):
        http(ITEM, url=f"https://127.0.0.1:{port}/", retries=0)  # the bundle is looked for before connecting


def test_a_redirect_to_another_host_takes_neither_the_headers_nor_the_body(server):
    """127.0.0.1 sends the request on to localhost: the API key and the body must stay behind."""
    port = server.url.rsplit(":", 1)[1]
    away = {"Location": f"http://localhost:{port}/landed"}
    server.queue = [(307, "", away)]
    with pytest.raises(ValueError, match=rf"^POST {server.url}/: redirected to another host "
                                         rf"\(http://localhost:{port}/landed\): not followed"):
        http(ITEM, url=server.url, headers={"X-Api-Key": SECRET}, body={"secret": SECRET})
    assert len(server.requests) == 1, "the POST was sent on to the other host"

    server.queue = [(307, "", away)]
    result = http(ITEM, url=server.url, method="GET", headers={"X-Api-Key": SECRET})
    first, landed = server.requests[1:]
    assert first["headers"]["X-Api-Key"] == SECRET and landed["path"] == "/landed"
    assert landed["headers"]["Host"] == f"localhost:{port}" and "X-Api-Key" not in landed["headers"]
    assert result.output == {"echo": None}

    server.queue = [(308, "", {"Location": "/again"})]  # the same host: headers and body go along
    assert http(ITEM, url=server.url, headers={"X-Api-Key": SECRET}, body={"q": 1}).output == {"echo": {"q": 1}}
    assert server.requests[-1]["path"] == "/again" and server.requests[-1]["headers"]["X-Api-Key"] == SECRET


def test_a_trickled_body_times_out_at_the_timeout_not_when_it_ends():
    """Each byte comes within the read timeout, the whole would take 3 s: the attempt ends at its 0.5 s."""
    from servers.trickle import TrickleServer

    with TrickleServer() as server:
        started = time.monotonic()
        with pytest.raises(TimeoutError, match=r"no reply within 0.5s"):
            http(ITEM, url=f"{server.url}/", timeout=0.5, retries=0)
        assert time.monotonic() - started < 1.5
