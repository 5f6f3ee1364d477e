"""How the Eval Center answers: the headers every answer carries, a JSON answer, a page, a 404
for a run by no name it has; and how it reads a request's path."""
from __future__ import annotations

import urllib.parse

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from yamleval.records.errors import UsageError

# what every answer carries: no framing, no sniffing, nothing sent elsewhere, nothing kept by a proxy
HEADERS = (("x-content-type-options", "nosniff"), ("x-frame-options", "DENY"), ("referrer-policy", "no-referrer"),
           ("cache-control", "no-store"))


class NotFound(Exception):
    """No run, experiment or item by that name: a 404 that says which."""


def find_run(store, ref: str):
    """The run ``ref`` names; NotFound when there is none (a store that fails raises as it does)."""
    try:
        return store.find_run(ref)
    except UsageError as exc:
        if exc.message.startswith("cannot "):  # the store failed, not the name
            raise
        raise NotFound(exc.message) from None


def json_answer(text: str, status: int = 200) -> Response:
    return Response(text, status_code=status, media_type="application/json", headers=dict(HEADERS))


def page(text: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(text, status_code=status, headers=dict(HEADERS))


def raw_parts(request: Request) -> list[str]:
    """The request's path split at each "/" as sent, then each part unquoted: an id with a "/" in
    it comes quoted (``%2F``), and so stays one part."""
    raw = request.scope.get("raw_path") or request.url.path.encode("utf-8")
    return [urllib.parse.unquote(part) for part in raw.decode("latin-1").split("?")[0].split("/")]


def local_path(path: str) -> str:
    """Where to go after signing in: a path of this server only (never another site)."""
    return path if path.startswith("/") and not path.startswith("//") and "\\" not in path else "/"
