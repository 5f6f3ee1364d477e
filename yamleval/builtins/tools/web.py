"""``web_fetch`` and ``web_search``: GET requests with a timeout, a size cap and text out."""
from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from typing import Any, Optional
from urllib.parse import quote_plus, urlsplit

from yamleval.records.paths import PathNotFound, lookup
from yamleval.builtins.tools.tool import ToolError

_SKIPPED = {"script", "style", "noscript", "template", "svg", "head"}
_BLOCKS = {"p", "div", "br", "li", "ul", "ol", "tr", "table", "section", "article", "header",
           "footer", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "blockquote", "hr", "title"}


class _TextExtractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title = ""
        self._skipping = 0
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag == "title":
            self._in_title = True
        elif tag in _SKIPPED:
            self._skipping += 1
        if tag in _BLOCKS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        elif tag in _SKIPPED and self._skipping:
            self._skipping -= 1
        if tag in _BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        elif not self._skipping:
            self.parts.append(data)


def html_to_text(html: str) -> tuple[str, str]:
    """Title and visible text of an HTML page, whitespace collapsed."""
    parser = _TextExtractor()
    parser.feed(html)
    parser.close()
    lines = (" ".join(line.split()) for line in "".join(parser.parts).splitlines())
    text = "\n".join(line for line in lines if line)
    return " ".join(parser.title.split()), text


def _host_allowed(host: str, allow_domains: Optional[list]) -> bool:
    if not allow_domains:
        return True
    host = host.lower().rstrip(".")
    return any(host == d.lower().strip(".") or host.endswith("." + d.lower().strip("."))
               for d in allow_domains)


def _get(url: str, timeout: float, max_bytes: int, allow_domains: Optional[list] = None,
         headers: Optional[dict] = None) -> Any:
    """The reply (its body cut at max_bytes) within ``timeout``, redirects included; each one checked."""
    from yamleval.calls import transport

    def check(target: str) -> None:
        parts = urlsplit(target)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ToolError(f"only http and https URLs can be fetched, not '{target}'")
        if not _host_allowed(parts.hostname, allow_domains):
            raise ToolError(f"'{parts.hostname}' is not in allow_domains ({', '.join(allow_domains)})")

    with transport.open_session() as session:
        try:
            return transport.request(session, "GET", url, headers=headers, timeout=timeout, max_bytes=max_bytes,
                                     truncate=True, check_url=check)
        except transport.HttpFailure as failure:
            if failure.reply is not None:
                raise ToolError(f"{url} answered HTTP {failure.status} {failure.reply.reason}".rstrip()) from None
            if failure.kind == "timeout":
                raise ToolError(f"{url} did not send its page within {timeout:g}s") from None
            raise ToolError(f"could not fetch {url}: {failure}") from None


def web_fetch(url: str, *, timeout: float = 15, max_bytes: int = 2_000_000,
              max_chars: int = 20_000, allow_domains: Optional[list] = None) -> str:
    """Fetch a web page (http or https) and return its text.

    Args:
        url: the full URL, starting with http:// or https://.
    """
    reply = _get(url, timeout, max_bytes, allow_domains)
    text = reply.text
    kind = reply.headers.get("content-type", "").lower()
    title = ""
    if "html" in kind or (not kind and text.lstrip()[:1] == "<"):
        title, text = html_to_text(text)
    if reply.cut or len(text) > max_chars:
        text = text[:max_chars] + "\n[truncated]"
    head = f"URL: {reply.url}\n" + (f"Title: {title}\n" if title else "")
    return f"{head}\n{text}"


def _at_path(data: Any, path: str) -> Any:
    if not path:
        return data
    try:
        return lookup(data, path)
    except PathNotFound as exc:
        raise ToolError(f"the search response has no '{path}' (stopped at '{exc.step}')") from None
    except ValueError as exc:
        raise ToolError(str(exc)) from None


def web_search(query: str, *, url: str, results: str = "", title: str = "title",
               link: str = "url", snippet: str = "snippet", max_results: int = 5,
               timeout: float = 15, max_bytes: int = 2_000_000,
               headers: Optional[dict] = None) -> str:
    """Search the web and return the top results (title, link and snippet).

    Args:
        query: what to search for.
    """
    # str.replace, not format: a URL template may hold other braces.
    reply = _get(url.replace("{query}", quote_plus(query)), timeout, max_bytes, headers=headers)
    if reply.cut:
        raise ToolError(f"the search response is larger than {max_bytes} bytes")
    try:
        data = json.loads(reply.text)
    except ValueError:
        raise ToolError("the search response is not JSON") from None
    found = _at_path(data, results)
    if not isinstance(found, list):
        raise ToolError(f"'{results or '(the response)'}' in the search response is not a list")
    lines = []
    for number, result in enumerate(found[:max_results], 1):
        if not isinstance(result, dict):
            lines.append(f"{number}. {result}")
            continue
        lines.append(f"{number}. {result.get(title, '(no title)')}")
        for field in (link, snippet):
            value = result.get(field)
            if value:
                lines.append("   " + re.sub(r"\s+", " ", str(value)).strip())
    return "\n".join(lines) if lines else f"no results for {query!r}"
