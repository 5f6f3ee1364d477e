"""Dataset rows from a paginated JSON service, fetched page by page as the run needs them.

Two ways to page: ``limit``/``offset`` query parameters (the default), or following a
next-page URL found in each page (``next``). Connection errors, timeouts, 408, 409, 429 and
5xx are tried again with exponential backoff, honouring ``Retry-After``.

Header values may hold credentials, and query strings may too: neither appears in an error.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from functools import partial
from typing import Any, Callable, Iterator, Mapping
from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit, urlunsplit

from yamleval.records.paths import PathNotFound, lookup

MAX_PAGE_BYTES = 50_000_000  # a page past this is refused: ask for smaller pages
_SHOWN_BODY = 300


class RemoteDatasetError(ValueError):
    """The service's pages could not be read as a dataset; the message says which page and why."""


@dataclass(frozen=True)
class Paging:
    """How the service pages its rows: ``page_size`` rows a page (``limit``/``offset`` asked for in
    the URL's query), or the next page's URL at ``next_path``; the rows of a page at ``items_path``
    (None: the page is the list), the row count at ``total_path``, and ``limit`` rows at most."""

    page_size: int = 200
    items_path: str | None = None
    next_path: str | None = None
    limit: int | None = None
    total_path: str | None = None


@dataclass(frozen=True)
class Asking:
    """How each page is asked for: within ``timeout`` seconds, tried again ``retries`` times after
    a failure that may pass, waiting between ``backoff`` seconds (growing) and its upper bound."""

    timeout: float = 30.0
    retries: int = 3
    backoff: tuple[float, float] = (0.5, 8.0)
    sleep: Callable[[float], None] = time.sleep


def remote_rows(spec_url: str, headers: Mapping[str, Any] | None = None, paging: Paging = Paging(),
                asking: Asking = Asking()) -> Iterator[dict[str, Any]]:
    """Yield the rows (dicts) of a paginated JSON service, one page at a time, lazily.

    Without ``paging.next_path`` pages are asked for with ``limit=<page_size>`` and
    ``offset=<rows so far>`` added to the URL's query; paging stops at a short or empty page, or
    once the row count at ``total_path`` is reached. With ``next_path`` the URL is fetched as
    given and the next page is the URL (absolute or relative) at that path, until it is missing,
    null or empty. ``limit`` stops after that many rows without asking for more pages than needed.
    ``headers`` go with every request (they may hold credentials: no error shows them).

    Bad arguments raise ValueError when called; while rows are read, RemoteDatasetError (a
    ValueError) reports a failed request, a reply that is not JSON or pages of the wrong shape.
    """
    _check(spec_url, paging.page_size, paging.limit, asking.retries)  # here: bad arguments fail at once
    return _rows_of(spec_url, paging, _Asking(headers, float(asking.timeout), int(asking.retries), asking.backoff,
                                              asking.sleep))


@dataclass(frozen=True)
class _Asking:
    """How each page is asked for: with these headers, within ``timeout``, tried again ``retries`` times."""

    headers: Mapping[str, Any] | None
    timeout: float
    retries: int
    backoff: tuple[float, float]
    sleep: Callable[[float], None]


def _rows_of(spec_url: str, paging: Paging, asking: _Asking) -> Iterator[dict[str, Any]]:
    from yamleval.calls import transport  # requests is slow to import: only remote datasets pay for it

    page_size, items_path, next_path, limit, total_path = (paging.page_size, paging.items_path, paging.next_path,
                                                            paging.limit, paging.total_path)
    session = transport.open_session()
    sent = {"Accept": "application/json", **{str(k): str(v) for k, v in (asking.headers or {}).items()}}
    get = partial(transport.request, session, "GET", headers=sent, timeout=asking.timeout, max_bytes=MAX_PAGE_BYTES,
                  retries=asking.retries, backoff=asking.backoff, sleep=asking.sleep)
    produced = 0
    page_number = 0
    seen_urls: set[str] = set()
    url: str | None = spec_url
    try:
        while url is not None and (limit is None or produced < limit):
            page_number += 1
            if next_path is None:
                size = page_size if limit is None else min(page_size, limit - produced)
                request_url = _with_query(spec_url, limit=size, offset=produced)
            else:
                if url in seen_urls:
                    raise RemoteDatasetError(f"page {page_number} from {transport.shown_url(url)}: the next-page link "
                                             "leads back to a page already read")
                seen_urls.add(url)
                request_url = url
            where = f"page {page_number} from {transport.shown_url(request_url)}"
            page = _page(get, request_url, where)
            rows = _rows(page, items_path, where)
            for index, row in enumerate(rows):
                if limit is not None and produced >= limit:
                    return
                if not isinstance(row, dict):
                    raise RemoteDatasetError(f"{where}: row {index + 1} is {_kind(row)}, not an object "
                                             "of fields (input, expected, ...)")
                produced += 1
                yield row
            if next_path is not None:
                url = _next_url(page, next_path, request_url, where)
            elif not rows or len(rows) < size:
                url = None
            elif total_path is not None and produced >= _total(page, total_path, where):
                url = None
    finally:
        session.close()


def _check(url: Any, page_size: Any, limit: Any, retries: Any) -> None:
    if not isinstance(url, str) or not url.strip():
        raise ValueError("`url` must be a non-empty string")
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("`url` must start with http:// or https:// and name a host")
    for name, value, least in (("page_size", page_size, 1), ("limit", limit, 0), ("retries", retries, 0)):
        if value is None and name == "limit":
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise ValueError(f"`{name}` must be a whole number of {least} or more, not {value!r}")


def _with_query(url: str, **params: int) -> str:
    """``url`` with ``params`` set in its query (replacing any of the same name)."""
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k not in params]
    query.extend((k, str(v)) for k, v in params.items())
    return urlunsplit(parts._replace(query=urlencode(query)))


def _rows(page: Any, items_path: str | None, where: str) -> list:
    rows = page
    if items_path is not None:
        try:
            rows = lookup(page, items_path)
        except PathNotFound as exc:
            raise RemoteDatasetError(f"{where}: `items: {items_path}` is not in the page: {exc}") from None
    if not isinstance(rows, list):
        what = f"`items: {items_path}`" if items_path else "the page (give `items:`, the path to its list of rows)"
        raise RemoteDatasetError(f"{where}: {what} is {_kind(rows)}, not a list of rows")
    return rows


def _next_url(page: Any, next_path: str, current: str, where: str) -> str | None:
    try:
        value = lookup(page, next_path)
    except PathNotFound:
        return None  # the last page often leaves the link out
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise RemoteDatasetError(f"{where}: `next: {next_path}` is {_kind(value)}, not a URL")
    return urljoin(current, value)


def _total(page: Any, total_path: str, where: str) -> int:
    try:
        value = lookup(page, total_path)
    except PathNotFound as exc:
        raise RemoteDatasetError(f"{where}: `total: {total_path}` is not in the page: {exc}") from None
    if isinstance(value, bool) or not isinstance(value, int):
        raise RemoteDatasetError(f"{where}: `total: {total_path}` is {_kind(value)}, not a whole number")
    return value


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", str: "a string", int: "a number", float: "a number", dict: "an object",
            list: "a list"}.get(type(value), f"a {type(value).__name__}")


def _page(get: Callable[[str], Any], url: str, where: str) -> Any:
    """One page as JSON; transient failures were tried again by ``get``."""
    from yamleval.calls.transport import HttpFailure

    try:
        reply = get(url)
    except HttpFailure as failure:
        problem = f"{failure}: {_snippet(failure.reply.text) or '(empty body)'}" if failure.reply else failure
        if failure.kind == "too large":
            problem = f"the page is {failure}; ask for smaller pages with `page_size`"
        after = f" (after {failure.attempts} attempts)" if failure.attempts > 1 else ""
        raise RemoteDatasetError(f"{where}: {problem}{after}") from None
    try:
        return json.loads(reply.text)
    except ValueError:
        kind = reply.headers.get("Content-Type", "no content type")
        raise RemoteDatasetError(f"{where}: the reply is not JSON ({kind}): {_snippet(reply.text)!r}") from None


def _snippet(text: str) -> str:
    text = text.strip()
    return text if len(text) <= _SHOWN_BODY else text[:_SHOWN_BODY] + "…"
