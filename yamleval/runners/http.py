"""The ``http`` runner: send one request per item to a service and take the answer from its reply.

Header values may hold secrets expanded from ``${VAR}``: they never appear in an error
or in the item's metadata, and neither does the URL's query string.
"""
from __future__ import annotations

import json
import threading
import time
from typing import Any
from urllib.parse import urlsplit

import requests

from yamleval.paths import PathNotFound, lookup
from yamleval.sessions import session_for
from yamleval.types import Item, RunnerResult, Usage
from yamleval.retrying import (ReplyTooLarge, ReplyTooSlow, body_text, connection_reason, read_body,
                               retry_after_seconds, retryable_status, wait_before, with_retries)

_SHOWN_BODY = 500
_SHOWN_TEXT = 200
_local = threading.local()


class _RetryableStatus(Exception):
    """A reply worth asking again for (408, 409, 429, 5xx)."""

    def __init__(self, response: requests.Response, body: bytes):
        super().__init__(response.status_code)
        self.response = response
        self.body = body


_RETRIED = (requests.ConnectionError, requests.Timeout, requests.exceptions.ChunkedEncodingError, ReplyTooSlow,
            _RetryableStatus)


def http(item: Item, url: str, method: str = "POST", headers: dict | None = None,
         query: dict | None = None, body: Any = None, output: str | None = None,
         usage: str | None = None, status: list[int] | None = None, timeout: float = 30,
         retries: int = 2, max_reply_mb: float = 10) -> RunnerResult:
    """Send ``method`` to ``url`` with ``headers``, ``query`` parameters and ``body``.

    ``body`` goes as JSON when it is an object or a list, as text when it is a string; its
    strings are templates rendered per item (``{message: "{{ input }}"}``). ``output`` is a
    dotted path to the answer in the JSON reply (``choices.0.message.content``); without it
    the whole reply is the output (parsed when it is JSON). ``usage`` is a dotted path to an
    object with ``prompt_tokens``/``completion_tokens`` or ``input_tokens``/``output_tokens``.
    ``status`` lists the accepted codes (default: any 2xx).

    Connection errors, timeouts, 408, 409, 429 and 5xx are tried again up to ``retries``
    times, with exponential backoff and jitter, or after the reply's ``Retry-After`` (at
    most 60 s). ``timeout`` is per attempt and covers the whole reply, so a server that
    trickles its body times out too. A reply larger than ``max_reply_mb`` megabytes is
    an error rather than a run that swallows memory; it is not retried.
    """
    # ``item`` reaches the service only through templates in url, query, headers and body
    method, where = _check(url, method, retries)
    limit = _limit(max_reply_mb)
    accepted = _accepted(status)
    request = {"method": method, "url": url, "timeout": float(timeout),
               "headers": {str(k): str(v) for k, v in (headers or {}).items()}}
    if query:
        request["params"] = query
    if isinstance(body, str):
        request["data"] = body.encode("utf-8")
        if not any(k.lower() == "content-type" for k in request["headers"]):
            request["headers"]["Content-Type"] = "text/plain; charset=utf-8"
    elif body is not None:
        request["json"] = body
    session = _session(url)
    attempts = 0

    def send() -> tuple[requests.Response, bytes]:
        nonlocal attempts
        attempts += 1
        deadline = time.monotonic() + float(timeout)
        response = session.request(**request, stream=True)
        body = read_body(response, limit, deadline)
        if not accepted(response.status_code) and retryable_status(response.status_code):
            raise _RetryableStatus(response, body)
        return response, body

    try:
        response, body = with_retries(send, int(retries), lambda exc: isinstance(exc, _RETRIED), _wait)
    except _RetryableStatus as exc:
        response, body = exc.response, exc.body
    except (requests.Timeout, ReplyTooSlow):
        after = f" ({attempts} attempts)" if attempts > 1 else ""
        raise TimeoutError(f"{where}: no reply within {float(timeout):g}s{after}") from None
    except (requests.ConnectionError, requests.exceptions.ChunkedEncodingError) as exc:
        after = f" ({attempts} attempts)" if attempts > 1 else ""
        raise ConnectionError(f"{where}: {connection_reason(exc)}{after}") from None
    except ReplyTooLarge as exc:
        raise ValueError(f"the reply from {where} is {exc}, more than `max_reply_mb` allows; "
                         "raise it if such replies are expected") from None

    text = body_text(response, body)
    code = response.status_code
    if not accepted(code):
        after = f" after {attempts} attempts" if attempts > 1 else ""
        raise RuntimeError(f"HTTP {code} from {where}{after}: "
                           + (text[:_SHOWN_BODY] if text.strip() else "(empty body)"))
    reply, is_json = _parse(text)
    answer = reply
    if output is not None or usage is not None:
        if not is_json:
            kind = response.headers.get("Content-Type", "no content type")
            raise ValueError(f"the reply from {where} is not JSON ({kind}): {text[:_SHOWN_TEXT]!r}")
    if output is not None:
        answer = _find(reply, output, "output")
    tokens = _usage(_find(reply, usage, "usage"), usage) if usage is not None else None
    metadata: dict[str, Any] = {"status": code}
    if attempts > 1:
        metadata["attempts"] = attempts
    return RunnerResult(output=answer, metadata=metadata, usage=tokens)


def _check(url: Any, method: Any, retries: Any) -> tuple[str, str]:
    """The method in capitals and the URL as errors may show it (no credentials, no query)."""
    if not isinstance(url, str) or not url.strip():
        raise ValueError("`url` must be a non-empty string")
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("`url` must start with http:// or https:// and name a host")
    if not isinstance(method, str) or not method.isalpha():
        raise ValueError(f"`method` must be an HTTP method such as GET or POST, not {method!r}")
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise ValueError(f"`retries` must be a whole number of 0 or more, not {retries!r}")
    host = parts.netloc.rsplit("@", 1)[-1]  # user:password@ stays out of errors
    return method.upper(), f"{method.upper()} {parts.scheme}://{host}{parts.path or '/'}"


def _limit(max_reply_mb: Any) -> int:
    """The reply size limit in bytes."""
    if isinstance(max_reply_mb, bool) or not isinstance(max_reply_mb, (int, float)) or not max_reply_mb > 0:
        raise ValueError(f"`max_reply_mb` must be a number of megabytes above 0, not {max_reply_mb!r}")
    return int(max_reply_mb * 1_000_000)


def _accepted(status: list[int] | None):
    if status is None:
        return lambda code: 200 <= code < 300
    codes = [status] if isinstance(status, int) else status
    if not isinstance(codes, (list, tuple)) or not all(isinstance(c, int) and not isinstance(c, bool)
                                                      for c in codes):
        raise ValueError("`status` must be a list of HTTP status codes, such as [200, 201]")
    allowed = frozenset(codes)
    return allowed.__contains__


def _session(url: str) -> requests.Session:
    """One pooled session per worker thread and base URL: connections are kept alive."""
    sessions = getattr(_local, "sessions", None)
    if sessions is None:
        sessions = _local.sessions = {}
    parts = urlsplit(url.strip())
    base = f"{parts.scheme}://{parts.netloc}"
    session = sessions.get(base)
    if session is None:
        session = sessions[base] = session_for(base)
    return session


def _wait(exc: BaseException, attempt: int) -> float:
    after = retry_after_seconds(exc.response.headers.get("Retry-After")) if isinstance(exc, _RetryableStatus) else None
    return wait_before(attempt, after)


def _parse(text: str) -> tuple[Any, bool]:
    """The reply as JSON when it is JSON, else as the text itself."""
    if not text.strip():
        return text, False
    try:
        return json.loads(text), True
    except ValueError:
        return text, False


def _find(reply: Any, path: str, option: str) -> Any:
    try:
        return lookup(reply, path)
    except PathNotFound as exc:
        raise PathNotFound(f"`{option}: {path}` is not in the reply: {exc}") from None


def _usage(value: Any, path: str) -> Usage:
    if not isinstance(value, dict):
        raise ValueError(f"`usage: {path}` is not an object with token counts: {str(value)[:_SHOWN_TEXT]}")
    prompt = _first(value, "prompt_tokens", "input_tokens")
    completion = _first(value, "completion_tokens", "output_tokens")
    if prompt is None and completion is None:
        raise ValueError(f"`usage: {path}` has neither prompt_tokens/completion_tokens nor "
                         f"input_tokens/output_tokens; keys there: {', '.join(map(str, value))}")
    for name, count in (("prompt", prompt), ("completion", completion)):
        if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 0):
            raise ValueError(f"`usage: {path}`: the {name} token count {count!r} is not a whole number")
    return Usage(prompt or 0, completion or 0)


def _first(value: dict, *names: str) -> Any:
    for name in names:
        if value.get(name) is not None:
            return value[name]
    return None
