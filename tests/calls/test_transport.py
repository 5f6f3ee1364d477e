"""The one HTTP layer against scripted servers on 127.0.0.1: what is tried again and after how
long, what one attempt may cost, and where redirects may take a request."""
from __future__ import annotations

import socket
import time
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime

import pytest
import requests

from servers.fixtures import openai_server  # noqa: F401
from servers.openai_server import Reply
from yamleval.calls import transport
from yamleval.calls.transport import HttpFailure

SECRET = "s3cret-header-value"


@pytest.fixture
def post(openai_server):  # noqa: F811
    """POST to the scripted server, recording the waits between attempts instead of sleeping them."""
    waits: list[float] = []
    session = transport.open_session()

    def send(retries=2, path="/v1/chat/completions", **options):
        options = {"timeout": 5, "max_bytes": 1_000_000, "sleep": waits.append, **options}
        return transport.request(session, "POST", openai_server.url + path, data=b'{"q": 1}', retries=retries,
                                 **options)

    send.waits = waits
    yield send
    session.close()


@pytest.mark.parametrize("status", [408, 409, 429, 500, 502, 503, 599])
def test_a_transient_status_is_tried_again_up_to_the_retries(openai_server, post, status):  # noqa: F811
    openai_server.push(*[Reply(status=status, body="busy")] * 3, Reply(body="too late"))
    with pytest.raises(HttpFailure) as caught:
        post(retries=2)
    failure = caught.value
    assert (failure.kind, failure.status, failure.retryable, failure.attempts) == ("status", status, True, 3)
    assert str(failure) == f"HTTP {status}" and failure.reply.text == "busy"
    assert len(openai_server.requests) == 3 and len(post.waits) == 2


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_a_client_error_is_not_tried_again(openai_server, post, status):  # noqa: F811
    openai_server.push(Reply(status=status, body="no"), Reply(body="never asked for"))
    with pytest.raises(HttpFailure) as caught:
        post(retries=2)
    assert (caught.value.status, caught.value.retryable, caught.value.attempts) == (status, False, 1)
    assert len(openai_server.requests) == 1 and post.waits == []


def test_a_success_after_failures_says_how_many_attempts_it_took(openai_server, post):  # noqa: F811
    openai_server.push(Reply(status=503), Reply(status=429), Reply(body={"ok": True}))
    reply = post(retries=2)
    assert (reply.status, reply.text, reply.attempts) == (200, '{"ok": true}', 3)
    assert reply.latency_ms > 0


def test_accept_decides_which_statuses_are_replies(openai_server, post):  # noqa: F811
    openai_server.push(Reply(status=503, body="maintenance"))
    assert post(accept=lambda status: status in (200, 503)).status == 503
    assert len(openai_server.requests) == 1


def test_retry_after_is_waited_for_in_seconds_or_as_a_date_and_capped_at_a_minute(openai_server, post):  # noqa: F811
    later = format_datetime(datetime.now(timezone.utc) + timedelta(seconds=30), usegmt=True)
    earlier = format_datetime(datetime.now(timezone.utc) - timedelta(seconds=30), usegmt=True)
    openai_server.push(*[Reply(status=429, headers={"Retry-After": value})
                         for value in ("7", later, "3600", earlier, "-3")], Reply(body="ok"))
    assert post(retries=5).attempts == 6
    seven, date, capped, past, negative = post.waits
    assert seven == 7.0 and 27 <= date <= 30 and capped == transport.MAX_WAIT and past == 0.0 and negative == 0.0


def test_without_retry_after_the_backoff_doubles_with_jitter_up_to_its_longest(openai_server, post):  # noqa: F811
    openai_server.push(*[Reply(status=500)] * 5, Reply(status=503, headers={"Retry-After": "soon"}), Reply(body="ok"))
    assert post(retries=6, backoff=(0.5, 4.0)).attempts == 7
    for wait, least in zip(post.waits, (0.5, 1.0, 2.0, 4.0, 4.0, 4.0)):  # an unreadable Retry-After: the backoff
        assert least <= wait <= least + 0.5


def test_connection_errors_and_timeouts_are_tried_again(openai_server, post):  # noqa: F811
    openai_server.push(Reply(drop=True), Reply(body="late", delay=0.6), Reply(body="ok"))
    assert post(retries=2, timeout=0.3).attempts == 3
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with transport.open_session() as session, pytest.raises(HttpFailure) as caught:
        transport.request(session, "GET", f"http://127.0.0.1:{port}/", timeout=5, max_bytes=10, retries=1,
                          sleep=lambda seconds: None)
    failure = caught.value
    assert (failure.kind, failure.retryable, failure.attempts) == ("connection", True, 2)
    assert str(failure) == "connection failed: Connection refused"


def test_a_trickled_body_ends_at_the_timeout():
    """Every byte comes within the read timeout, the whole would take 3 s: the attempt ends at its 0.5 s."""
    from servers.trickle import TrickleServer

    with TrickleServer() as server, transport.open_session() as session:
        started = time.monotonic()
        with pytest.raises(HttpFailure) as caught:
            transport.request(session, "GET", server.url, timeout=0.5, max_bytes=1000)
        assert time.monotonic() - started < 1.5
    assert (caught.value.kind, str(caught.value), caught.value.retryable) == ("timeout", "no reply within 0.5s", True)


def test_a_body_over_the_cap_is_refused_once_or_cut_when_asked(openai_server, post):  # noqa: F811
    openai_server.push(Reply(body="x" * 2000), Reply(body="y" * 2000))
    with pytest.raises(HttpFailure) as caught:
        post(retries=2, max_bytes=1000)
    assert (caught.value.kind, str(caught.value), caught.value.retryable) == ("too large", "larger than 1 kB", False)
    assert len(openai_server.requests) == 1, "a reply too large is not asked for again"
    reply = post(max_bytes=1000, truncate=True)
    assert reply.cut and reply.body == b"y" * 1000


def test_a_redirect_on_the_same_host_keeps_the_headers_and_the_body(openai_server, post):  # noqa: F811
    openai_server.push(Reply(status=307, headers={"Location": "/v1/moved"}), Reply(body="ok"))
    reply = post(headers={"X-Api-Key": SECRET})
    assert reply.text == "ok" and reply.url == f"{openai_server.url}/v1/moved"
    first, moved = openai_server.requests
    assert moved.path == "/v1/moved" and moved.headers["X-Api-Key"] == SECRET and moved.body == {"q": 1}


def test_a_redirect_to_another_host_goes_without_the_headers_and_never_with_the_body(openai_server, post):  # noqa: F811
    away = f"http://localhost:{openai_server.port}/v1/models"  # the same server under another name
    openai_server.push(Reply(status=307, headers={"Location": away}))
    with pytest.raises(HttpFailure) as caught:
        post(headers={"X-Api-Key": SECRET})
    assert (caught.value.kind, caught.value.retryable) == ("request", False)
    assert str(caught.value) == (f"redirected to another host ({away}): not followed, so that the request's "
                                 "body and headers go only where configured")
    assert len(openai_server.requests) == 1

    openai_server.push(Reply(status=303, headers={"Location": away}))  # 303: GET the other page, without a body
    assert post(headers={"X-Api-Key": SECRET}).status == 200
    landed = openai_server.requests[-1]
    assert (landed.method, landed.path, landed.body) == ("GET", "/v1/models", None)
    assert landed.headers["Host"] == f"localhost:{openai_server.port}" and "X-Api-Key" not in landed.headers


def test_redirects_are_bounded(openai_server, post):  # noqa: F811
    openai_server.push(*[Reply(status=308, headers={"Location": "/v1/again"})] * 7)
    with pytest.raises(HttpFailure, match="^more than 5 redirects$"):
        post()
    assert len(openai_server.requests) == 6


def test_the_url_shown_has_no_credentials_and_no_query():
    assert transport.shown_url("https://ann:pw@host.test:8443/v1/x?key=abc") == "https://host.test:8443/v1/x"


def test_a_session_gives_each_url_the_proxy_and_ca_bundle_requests_itself_would(monkeypatch):
    """The session reads an origin's settings once; each URL still gets what requests gives it."""
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.invalid:3128")
    monkeypatch.setenv("NO_PROXY", "direct.invalid,plain:80")
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", "/etc/company-ca.pem")
    ours, theirs = transport.open_session(), requests.Session()
    urls = ["http://direct.invalid/a", "http://via.invalid/a", "http://plain:80/x", "http://plain/x",
            "http://via.invalid/b", "https://via.invalid/c", "http://direct.invalid/again"]
    for url in urls + urls:
        assert ours.merge_environment_settings(url, {}, True, None, None) == \
            theirs.merge_environment_settings(url, {}, True, None, None), url
    given = ours.merge_environment_settings("http://via.invalid/a", {}, True, None, None)
    given["proxies"]["http"] = "changed"  # a caller's change to what it was given stays its own
    assert ours.merge_environment_settings("http://via.invalid/a", {}, True, None, None)["proxies"]["http"] == \
        "http://proxy.invalid:3128"
