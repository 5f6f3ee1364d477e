"""The one way yamleval speaks HTTP: the model client, the ``http`` runner, remote datasets and
the web tools all send their requests through ``request``.

An attempt has one timeout for all of it, redirects and body included, and a size cap on its
reply. Connection errors, timeouts, 408, 409, 429 and 5xx are tried again (tenacity) with
exponential backoff and jitter, or after the reply's ``Retry-After`` (at most a minute).
Redirects are followed here, a few at most; one to another origin (scheme, host and port)
goes without the request's headers, and one that would carry a body there is refused.
Every attempt of every caller is one call of ``_attempt``; with a ``limiter`` (``throttle``)
it waits there for its turn and reports how it ended. With an ``endpoint`` (``endpoints``),
each request, its retries done, is counted there as failed for a lasting reason or not.
"""
from __future__ import annotations

import email.message
import email.utils
import socket
import time
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from http.client import RemoteDisconnected
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping
from urllib.parse import urljoin, urlsplit

import requests
import tenacity
from requests.adapters import HTTPAdapter
from urllib3.exceptions import DecodeError, ProtocolError, ReadTimeoutError, SSLError

if TYPE_CHECKING:
    from yamleval.calls.health import Endpoint
    from yamleval.calls.limits import Limiter

MAX_WAIT = 60.0  # seconds: the longest back-off, and the longest Retry-After honoured
MAX_REDIRECTS = 5
_RETRIED_STATUSES = frozenset({408, 409, 429})  # and every 5xx
_LASTING_STATUSES = frozenset({401, 403, 404})  # the same reply to every request until someone changes something


@dataclass(frozen=True)
class Reply:
    """A reply read whole (or, when the caller asked to truncate, its first ``max_bytes``: ``cut``)."""

    status: int
    reason: str
    headers: Mapping[str, str]  # case-insensitive
    body: bytes
    url: str  # the last one, after redirects
    latency_ms: float  # of the attempt that got it
    cut: bool = False
    attempts: int = 1

    @property
    def text(self) -> str:
        """The body in the charset its Content-Type names, else UTF-8 (what JSON and most services mean)."""
        kind = email.message.Message()
        kind["Content-Type"] = self.headers.get("Content-Type", "")
        try:
            return self.body.decode(kind.get_content_charset() or "utf-8", errors="replace")
        except LookupError:
            return self.body.decode("utf-8", errors="replace")


class HttpFailure(Exception):
    """A request that got no acceptable reply. ``kind`` is timeout, connection, status, too large
    or request; the message says why without the URL (it may hold credentials); ``retryable``
    whether another attempt could help; ``reply`` is the refused reply of a status failure;
    ``lasting`` names a cause that will not go away by itself (``connection refused``,
    ``unknown host``, ``HTTP 401``, ``HTTP 403``, ``HTTP 404``), else None."""

    def __init__(self, kind: str, reason: str, *, retryable: bool = False, reply: Reply | None = None,
                 lasting: str | None = None):
        super().__init__(reason)
        self.kind, self.retryable, self.reply = kind, retryable, reply
        self.status = reply.status if reply else None
        self.retry_after = _retry_after(reply.headers.get("Retry-After")) if reply else None
        self.lasting = f"HTTP {self.status}" if self.status in _LASTING_STATUSES else lasting
        self.attempts = 1


class _Session(requests.Session):
    """A ``requests`` session that reads the proxies, NO_PROXY and CA bundle the environment
    gives an origin (scheme, host, port) at its first request there, not at every request:
    ``requests`` scans the whole environment twice per request, a quarter of the processor
    time of a small call. A session lives no longer than the run that opened it."""

    def __init__(self):
        super().__init__()
        self._by_origin: dict[tuple, dict[str, Any]] = {}

    def merge_environment_settings(self, url, proxies, stream, verify, cert):
        if proxies or verify is not None or cert is not None:
            return super().merge_environment_settings(url, proxies, stream, verify, cert)
        parts = urlsplit(url)
        key = (parts.scheme.lower(), parts.netloc.lower(), stream)  # as written: NO_PROXY may name host:port
        found = self._by_origin.get(key)
        if found is None:
            found = self._by_origin[key] = super().merge_environment_settings(url, {}, stream, None, None)
        return {**found, "proxies": dict(found["proxies"])}


def open_session(pool_size: int = 10) -> requests.Session:
    """A session whose connections are kept alive, ``pool_size`` per host; it finds proxies,
    NO_PROXY and a CA bundle in the environment once per origin (``_Session``), ``.netrc``
    credentials per request."""
    session = _Session()
    adapter = HTTPAdapter(pool_maxsize=pool_size)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    session.headers["User-Agent"] = "yamleval"
    return session


@dataclass(frozen=True)
class Sending:
    """How a request is sent: each attempt within ``timeout`` seconds, its body at most
    ``max_bytes`` (unless ``truncate``: then cut there); its ``headers``, query ``params`` and
    body ``data``; up to ``retries`` more attempts while it fails in a way worth another try
    (``backoff``: the initial and longest wait); a status ``accept`` refuses is a failure;
    ``check_url`` may refuse (raise for) the URL and each redirect before it is asked for."""

    timeout: float
    max_bytes: int
    headers: Mapping[str, str] | None = None
    params: Any = None
    data: bytes | None = None
    retries: int = 0
    accept: Callable[[int], bool] = lambda status: 200 <= status < 300
    truncate: bool = False
    check_url: Callable[[str], None] | None = None
    backoff: tuple[float, float] = (0.5, MAX_WAIT)


def request(session: requests.Session, method: str, url: str, *, sleep: Callable[[float], Any] = time.sleep,
            limiter: Limiter | None = None, endpoint: Endpoint | None = None, **sending: Any) -> Reply:
    """Send ``method`` to ``url`` as ``sending`` says (the fields of ``Sending``: ``timeout`` and
    ``max_bytes``, and ``headers``, ``params``, ``data``, ``retries``, ``accept``, ``truncate``,
    ``check_url``, ``backoff`` if given); the reply, or HttpFailure. Retries wait with ``sleep``.
    Each attempt waits for ``limiter`` before it is sent (that wait is not part of its
    ``timeout``). How the request ended is counted at ``endpoint``.
    """
    asked = Sending(**sending)
    initial, longest = asked.backoff
    exponential = tenacity.wait_exponential(multiplier=initial, max=longest) + tenacity.wait_random(0, initial)

    def wait(state: tenacity.RetryCallState) -> float:
        after = state.outcome.exception().retry_after
        return min(after, MAX_WAIT) if after is not None else exponential(state)

    retrying = tenacity.Retrying(
        stop=tenacity.stop_after_attempt(asked.retries + 1), wait=wait, sleep=sleep, reraise=True,
        retry=tenacity.retry_if_exception(lambda exc: isinstance(exc, HttpFailure) and exc.retryable))
    try:
        reply = retrying(_attempt, session, method, url, asked, limiter)
    except HttpFailure as failure:
        failure.attempts = retrying.statistics["attempt_number"]
        if endpoint is not None:
            endpoint.ended(failure.lasting)
        raise
    if endpoint is not None:
        endpoint.ended(None)
    return replace(reply, attempts=retrying.statistics["attempt_number"])


def shown_url(url: str) -> str:
    """The URL as a message may show it: no user:password@, no query string."""
    parts = urlsplit(url.strip())
    return f"{parts.scheme}://{parts.netloc.rsplit('@', 1)[-1]}{parts.path or '/'}"


def _describe_size(size: int) -> str:
    """``10 MB`` for 10,000,000 bytes; exact bytes below a kilobyte."""
    for unit, scale in (("GB", 10 ** 9), ("MB", 10 ** 6), ("kB", 10 ** 3)):
        if size >= scale:
            return f"{size / scale:g} {unit}"
    return f"{size} bytes"


def _attempt(session: requests.Session, method: str, url: str, asked: Sending, limiter: Limiter | None) -> Reply:
    """One attempt, when ``limiter`` lets it start: the request, its redirects and its body,
    all within the timeout."""
    if limiter is None:
        return _send(session, method, url, asked)
    started = limiter.acquire()
    status = retry_after = None
    try:
        reply = _send(session, method, url, asked)
        status = reply.status
        return reply
    except HttpFailure as failure:
        status = failure.status
        retry_after = min(failure.retry_after, MAX_WAIT) if failure.retry_after is not None else None
        raise
    finally:
        limiter.release(started, status, retry_after)


def _send(session: requests.Session, method: str, url: str, asked: Sending) -> Reply:
    timeout, max_bytes, truncate = asked.timeout, asked.max_bytes, asked.truncate
    started = time.perf_counter()
    deadline = time.monotonic() + timeout
    try:
        response = _follow(session, method, url, asked, deadline)
        body, cut = _read(response, max_bytes, deadline, truncate)
    except requests.Timeout:
        raise HttpFailure("timeout", f"no reply within {timeout:g}s", retryable=True) from None
    except (requests.ConnectionError, requests.exceptions.ChunkedEncodingError) as exc:
        # a connection that broke in the middle of the body is as transient as one that broke before it
        reason, lasting = _connection_reason(exc)
        raise HttpFailure("connection", reason, retryable=True, lasting=lasting) from None
    except requests.RequestException as exc:
        raise HttpFailure("request", f"request failed ({type(exc).__name__})") from None
    if cut and not truncate:
        raise HttpFailure("too large", f"larger than {_describe_size(max_bytes)}")
    reply = Reply(response.status_code, response.reason or "", response.headers, body, response.url,
                  (time.perf_counter() - started) * 1000.0, cut)
    if not asked.accept(reply.status):
        retryable = reply.status in _RETRIED_STATUSES or 500 <= reply.status <= 599
        raise HttpFailure("status", f"HTTP {reply.status}", retryable=retryable, reply=reply)
    return reply


def _follow(session: requests.Session, method: str, url: str, asked: Sending, deadline: float) -> requests.Response:
    """The response that is not a redirect, its body unread; each hop within ``deadline``."""
    headers, params, data, check_url = dict(asked.headers or {}), asked.params, asked.data, asked.check_url
    first = origin(url)
    for _ in range(MAX_REDIRECTS + 1):
        if check_url is not None:
            check_url(url)
        if urlsplit(url).scheme not in ("http", "https"):
            raise HttpFailure("request", "redirected to a URL that is neither http nor https")
        left = deadline - time.monotonic()
        if left <= 0:
            raise requests.Timeout()
        response = session.request(method, url, headers=headers, params=params, data=data, timeout=left,
                                   stream=True, allow_redirects=False)
        if not response.is_redirect:
            return response
        response.close()
        url, params = urljoin(response.url, response.headers["Location"]), None
        if response.status_code == 303 and method != "HEAD" or response.status_code in (301, 302) and method == "POST":
            method, data = "GET", None  # what browsers and requests do
        if origin(url) != first:
            if data is not None:
                raise HttpFailure("request", f"redirected to another host ({shown_url(url)}): not followed, "
                                             "so that the request's body and headers go only where configured")
            headers = None
    raise HttpFailure("request", f"more than {MAX_REDIRECTS} redirects")


def origin(url: str) -> tuple[str, str, int | None]:
    """Scheme, host and port of ``url``: what a redirect must keep to take the headers along,
    and what a rate limit is kept for."""
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = None
    return parts.scheme.lower(), (parts.hostname or "").lower(), port or {"http": 80, "https": 443}.get(parts.scheme)


def _read(response: requests.Response, limit: int, deadline: float, truncate: bool) -> tuple[bytes, bool]:
    """The first ``limit`` bytes of a streamed body and whether there was more (then, without
    ``truncate``, no bytes, and at once when Content-Length says so: the reply is refused).

    Past ``deadline``, checked as each piece arrives, requests.Timeout: a server trickling its
    body cannot stretch an attempt beyond its timeout. The connection is dropped when the
    body is not read to its end.
    """
    declared = response.headers.get("Content-Length", "")
    if not truncate and declared.strip().isdigit() and int(declared) > limit:
        response.close()
        return b"", True
    chunks: list[bytes] = []
    size = 0
    complete = False
    try:
        for chunk in _pieces(response, 65536):
            size += len(chunk)
            if size > limit:
                return (b"".join(chunks) + chunk)[:limit] if truncate else b"", True
            chunks.append(chunk)
            if time.monotonic() > deadline:
                raise requests.Timeout()
        complete = True
    except requests.ConnectionError as exc:
        # requests reports a read timeout in the middle of a streamed body as a ConnectionError
        if any(isinstance(arg, ReadTimeoutError) for arg in exc.args):
            raise requests.Timeout() from None
        raise
    finally:
        if not complete:
            response.close()  # the rest of the body is unread: the connection cannot be reused
    return b"".join(chunks), False


def _pieces(response: requests.Response, size: int) -> Iterator[bytes]:
    """The body as it arrives, each piece as soon as the network gives one (``read1``), so
    that a body trickled byte by byte is timed as it comes and not once per ``size`` bytes;
    with the errors ``requests`` would raise. (urllib3 before 2.3 has no ``read1``: there,
    pieces of ``size``.)"""
    read1 = getattr(response.raw, "read1", None)
    if read1 is None:
        yield from response.iter_content(size)
        return
    while True:
        try:
            piece = read1(size, decode_content=True)
        except ProtocolError as exc:
            raise requests.exceptions.ChunkedEncodingError(exc) from None
        except DecodeError as exc:
            raise requests.exceptions.ContentDecodingError(exc) from None
        except ReadTimeoutError as exc:
            raise requests.ConnectionError(exc) from None
        except SSLError as exc:
            raise requests.exceptions.SSLError(exc) from None
        if not piece:
            return
        yield piece


def _retry_after(value: str | None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header: delta-seconds or an HTTP date; None if absent or unreadable."""
    if not value or not value.strip():
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())


def _connection_reason(exc: BaseException) -> tuple[str, str | None]:
    """Why a connection failed, without the URL that requests and urllib3 put in their messages,
    and its lasting cause when it has one (nothing listens at the address, the host name is unknown)."""
    seen: set[int] = set()
    todo = [exc]
    while todo:
        current = todo.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, RemoteDisconnected):
            return "the server closed the connection without replying", None
        if isinstance(current, OSError) and current.strerror:
            lasting = ("connection refused" if isinstance(current, ConnectionRefusedError)
                       else "unknown host" if isinstance(current, socket.gaierror) and current.errno != socket.EAI_AGAIN
                       else None)
            return f"connection failed: {current.strerror}", lasting
        todo.extend(a for a in current.args if isinstance(a, BaseException))
        for name in ("reason", "__cause__", "__context__"):
            value = getattr(current, name, None)
            if isinstance(value, BaseException):
                todo.append(value)
    if isinstance(exc, requests.exceptions.ChunkedEncodingError):
        return "the reply was cut off", None
    return f"connection failed ({type(exc).__name__})", None
