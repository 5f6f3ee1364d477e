"""What every HTTP caller shares about retrying: which replies are worth another try,
how long a server asks us to wait, how long to back off, and how much of a reply to read
before giving up."""
from __future__ import annotations

import email.utils
import random
import time
from datetime import datetime, timezone
from http.client import RemoteDisconnected
from typing import Any, Callable, Iterator

RETRYABLE_STATUSES = frozenset({408, 409, 429})  # and every 5xx
MAX_WAIT = 60.0  # seconds: the longest back-off, and the longest Retry-After honoured


def backoff(attempt: int, initial: float = 0.5, maximum: float = MAX_WAIT) -> float:
    """Seconds to wait after failed attempt ``attempt`` (1, 2, …): ``initial``, twice that,
    four times… up to ``maximum``, plus up to ``initial`` of jitter so that many callers do
    not retry in step."""
    return min(initial * 2 ** (attempt - 1), maximum) + random.uniform(0, initial)


def wait_before(attempt: int, retry_after: float | None, schedule: tuple[float, float] = (0.5, MAX_WAIT),
                cap: float = MAX_WAIT) -> float:
    """Seconds to wait after failed attempt ``attempt``: the server's Retry-After when it gave
    one (at most ``cap``), else the back-off (``schedule``: its initial and longest wait)."""
    return min(retry_after, cap) if retry_after is not None else backoff(attempt, *schedule)


def with_retries(send: Callable[[], Any], retries: int, retry_on: Callable[[BaseException], bool],
                 wait: Callable[[BaseException, int], float], sleep: Callable[[float], Any] = time.sleep) -> Any:
    """``send()``, tried again up to ``retries`` times when it raises an error ``retry_on``
    accepts, after ``wait(error, attempt)`` seconds; the last error is raised as it is."""
    attempt = 0
    while True:
        attempt += 1
        try:
            return send()
        except Exception as exc:
            if attempt > retries or not retry_on(exc):
                raise
            sleep(wait(exc, attempt))


def retryable_status(status: int) -> bool:
    return status in RETRYABLE_STATUSES or 500 <= status <= 599


def retry_after_seconds(value: str | None) -> float | None:
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


class ReplyTooLarge(Exception):
    """A reply body beyond the caller's limit: not retried, since the server would send it again."""

    def __init__(self, limit: int):
        super().__init__(f"larger than {describe_size(limit)}")
        self.limit = limit


class ReplyTooSlow(Exception):
    """A reply body that did not arrive within the attempt's timeout (it stalled or trickled)."""


def describe_size(size: int) -> str:
    """``10 MB`` for 10,000,000 bytes; exact bytes below a kilobyte."""
    for unit, scale in (("GB", 10 ** 9), ("MB", 10 ** 6), ("kB", 10 ** 3)):
        if size >= scale:
            return f"{size / scale:g} {unit}"
    return f"{size} bytes"


def read_body(response: Any, limit: int, deadline: float, chunk_size: int = 65536) -> bytes:
    """The whole body of a ``requests`` reply opened with ``stream=True``.

    Reading stops at ``limit`` bytes (ReplyTooLarge, at once when Content-Length says so),
    so a runaway server cannot fill the memory of a run, and past ``deadline`` (see
    ``read_at_most``). The connection is dropped when the body is refused.
    """
    declared = response.headers.get("Content-Length", "")
    if declared.strip().isdigit() and int(declared) > limit:
        response.close()
        raise ReplyTooLarge(limit)
    body, cut = read_at_most(response, limit, deadline, chunk_size, keep=False)
    if cut:
        raise ReplyTooLarge(limit)
    return body


def read_at_most(response: Any, limit: int, deadline: float, chunk_size: int = 65536,
                 keep: bool = True) -> tuple[bytes, bool]:
    """The first ``limit`` bytes of the body of a ``requests`` reply opened with ``stream=True``,
    and whether there was more (then, without ``keep``, no bytes: the caller refuses the reply).

    Reading stops past ``deadline`` (a ``time.monotonic()`` value, checked as each piece
    arrives; ReplyTooSlow), so a server trickling its body cannot stretch an attempt far
    beyond its timeout; a read timeout mid-body is ReplyTooSlow too. The connection is dropped
    when the body is not read to its end; connection errors propagate as ``requests`` raises them.
    """
    import requests  # slow to import; the callers have already
    from urllib3.exceptions import ReadTimeoutError

    chunks: list[bytes] = []
    size = 0
    complete = False
    try:
        for chunk in _pieces(response, chunk_size):
            size += len(chunk)
            if size > limit:
                if not keep:
                    return b"", True
                chunks.append(chunk[:len(chunk) - (size - limit)])
                return b"".join(chunks), True
            chunks.append(chunk)
            if time.monotonic() > deadline:
                raise ReplyTooSlow()
        complete = True
    except requests.ConnectionError as exc:
        # requests reports a read timeout in the middle of a streamed body as a ConnectionError
        if any(isinstance(arg, ReadTimeoutError) for arg in exc.args):
            raise ReplyTooSlow() from None
        raise
    finally:
        if not complete:
            response.close()  # the rest of the body is unread: the connection cannot be reused
    return b"".join(chunks), False


def body_text(response: Any, body: bytes) -> str:
    """A reply's body as text: in the charset its Content-Type names, else UTF-8 (``requests``
    guesses ISO-8859-1 for text/* without a charset; JSON and most services mean UTF-8)."""
    charset = "charset=" in response.headers.get("Content-Type", "").lower() and response.encoding
    try:
        return body.decode(charset or "utf-8", errors="replace")
    except LookupError:
        return body.decode("utf-8", errors="replace")


def _pieces(response: Any, size: int) -> Iterator[bytes]:
    """The body as it arrives, each piece as soon as the network gives one (``read1``), so
    that a body trickled byte by byte is timed as it comes and not once per ``size`` bytes;
    with the errors ``requests`` would raise. (urllib3 before 2.3 has no ``read1``: there,
    pieces of ``size``.)"""
    import requests
    from urllib3.exceptions import DecodeError, ProtocolError, ReadTimeoutError, SSLError

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


def connection_reason(exc: BaseException) -> str:
    """Why a connection failed, without the URL that requests and urllib3 put in their messages."""
    import requests  # slow to import; the callers have already

    seen: set[int] = set()
    todo = [exc]
    while todo:
        current = todo.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, RemoteDisconnected):
            return "the server closed the connection without replying"
        if isinstance(current, OSError) and current.strerror:
            return f"connection failed: {current.strerror}"
        todo.extend(a for a in current.args if isinstance(a, BaseException))
        for name in ("reason", "__cause__", "__context__"):
            value = getattr(current, name, None)
            if isinstance(value, BaseException):
                todo.append(value)
    if isinstance(exc, requests.exceptions.ChunkedEncodingError):
        return "the reply was cut off"
    return f"connection failed ({type(exc).__name__})"
