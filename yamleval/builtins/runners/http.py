"""The ``http`` runner: send one request per item to a service and take the answer from its reply.

Header values may hold secrets expanded from ``${VAR}``: they never appear in an error
or in the item's metadata, and neither does the URL's query string.
"""
from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

from yamleval.calls import transport
from yamleval.calls.limits import RateLimit, check_adaptive
from yamleval.calls.network import Network, RunNetwork
from yamleval.records.paths import PathNotFound, lookup
from yamleval.records.types import Item, RunnerResult, Usage

_SHOWN_BODY = 500
_SHOWN_TEXT = 200


def http(item: Item, url: str, method: str = "POST", headers: dict | None = None,
         query: dict | None = None, body: Any = None, output: str | None = None,
         usage: str | None = None, status: list[int] | None = None, timeout: float = 30,
         retries: int = 2, max_reply_mb: float = 10, rate_limit: dict | None = None,
         adaptive: bool = True, network: RunNetwork | None = None) -> RunnerResult:
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

    ``rate_limit`` (``{requests_per_minute, tokens_per_minute}``, tokens as ``usage`` counts
    them) and ``adaptive`` concurrency (fewer calls at once after a 429 or 503) hold for the
    service's host and port, shared by every experiment of the run that calls it (``network``,
    the run's: its limiters and endpoint records; called by itself, the call has its own).
    """
    # ``item`` reaches the service only through templates in url, query, headers and body
    method, where = _check(url, method, retries)
    limit = _limit(max_reply_mb)
    origin = transport.origin(url.strip())
    network = network if network is not None else Network()
    limiter = network.limiter(origin, RateLimit.from_value(rate_limit), check_adaptive(adaptive))
    endpoint = network.endpoint(("http", origin), f"the http runner's {where}", address="the runner's `url`",
                                credentials="the runner's `headers`",
                                missing="nothing is at that URL: correct the runner's `url` (or, when 404 is "
                                        "an answer to score, list it in `status`)")
    request = _request(headers, query, body)
    try:
        reply = transport.request(network.session(), method, url, timeout=float(timeout), max_bytes=limit,
                                  retries=int(retries), accept=_accepted(status), limiter=limiter,
                                  endpoint=endpoint, **request)
    except transport.HttpFailure as failure:
        raise _error(failure, where) from None
    text = reply.text
    parsed, is_json = _parse(text)
    if (output is not None or usage is not None) and not is_json:
        kind = reply.headers.get("Content-Type", "no content type")
        raise ValueError(f"the reply from {where} is not JSON ({kind}): {text[:_SHOWN_TEXT]!r}")
    answer = _find(parsed, output, "output") if output is not None else parsed
    tokens = _usage(_find(parsed, usage, "usage"), usage) if usage is not None else None
    if tokens is not None and limiter is not None:
        limiter.charge(tokens.total_tokens)
    metadata: dict[str, Any] = {"status": reply.status}
    if reply.attempts > 1:
        metadata["attempts"] = reply.attempts
    return RunnerResult(output=answer, metadata=metadata, usage=tokens)


def _request(headers: dict | None, query: dict | None, body: Any) -> dict[str, Any]:
    """The headers, query parameters and encoded body of the request, as ``transport.request`` takes them."""
    request = {"headers": {str(k): str(v) for k, v in (headers or {}).items()}, "params": query or None}
    if body is not None:
        kind = "text/plain; charset=utf-8" if isinstance(body, str) else "application/json"
        request["data"] = (body if isinstance(body, str) else json.dumps(body)).encode("utf-8")
        if not any(k.lower() == "content-type" for k in request["headers"]):
            request["headers"]["Content-Type"] = kind
    return request


def _what_is_sent(item: Item, url: str, method: str = "POST", headers: dict | None = None,
                  query: dict | None = None, body: Any = None, retries: int = 2, **options: Any) -> dict[str, Any]:
    """What ``http`` sends for one item, without sending it (``yamleval preview``): the method,
    the URL as messages show it, the query, the headers and the body, as the request holds them."""
    method, _ = _check(url, method, retries)
    request = _request(headers, query, body)
    sent: dict[str, Any] = {"method": method, "url": transport.shown_url(url), "headers": request["headers"]}
    if request["params"]:
        sent["query"] = request["params"]
    if "data" in request:
        sent["body"] = request["data"].decode("utf-8") if isinstance(body, str) else json.loads(request["data"])
    return sent


http.request = _what_is_sent


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
    return method.upper(), f"{method.upper()} {transport.shown_url(url)}"


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


def _error(failure: transport.HttpFailure, where: str) -> Exception:
    """The runner's error for a failed request, in the words its users know."""
    if failure.reply is not None:
        text = failure.reply.text
        after = f" after {failure.attempts} attempts" if failure.attempts > 1 else ""
        return RuntimeError(f"HTTP {failure.status} from {where}{after}: "
                            + (text[:_SHOWN_BODY] if text.strip() else "(empty body)"))
    if failure.kind == "too large":
        return ValueError(f"the reply from {where} is {failure}, more than `max_reply_mb` allows; "
                          "raise it if such replies are expected")
    after = f" ({failure.attempts} attempts)" if failure.attempts > 1 else ""
    kind = {"timeout": TimeoutError, "connection": ConnectionError}.get(failure.kind, ValueError)
    return kind(f"{where}: {failure}{after}")


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
