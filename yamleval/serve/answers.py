"""How the Eval Center answers: the headers every answer carries, a JSON answer, a page, a 404
for a run by no name it has; how it reads a request (its path, its numbers, its filters); and
``Served``, what every handler of one Eval Center shares."""
from __future__ import annotations

import urllib.parse
from typing import Any, Callable

import anyio
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from yamleval.records.errors import UsageError
from yamleval.store import views

RUNS_PAGE = 50
MAX_NUMBER = 10 ** 12  # of an offset or position a request gives: what the store can be asked
HISTORY_RUNS = 10
LATEST_SHOWN = 20  # items a running run's page lists as finished last when it opens

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


class Served:
    """What the handlers of one Eval Center share: its store (``center``: read in a worker thread,
    ``read``), the tokens it asks for (None: none), the reviews it takes (None: none) and the
    looks its live viewers share (``stream.Polls``)."""

    def __init__(self, center, tokens: dict[str, str] | None, reviews, polls):
        self.center, self.tokens, self.reviews, self.polls = center, tokens, reviews, polls

    async def read(self, work: Callable, *args):
        """``work(store, *args)`` in a worker thread, on that thread's connection."""
        return await anyio.to_thread.run_sync(self.center.read, work, *args)


def of_experiment(store, answer: Callable, ref: str, experiment_id: str | None, *args):
    """``answer(store, run_id, experiment_id, *args)`` of the run ``ref``; 404 when it says (None)
    that the run has no such experiment."""
    run_id = find_run(store, ref).run_id
    found = answer(store, run_id, experiment_id, *args)
    if found is None:
        raise NotFound(f"run {run_id} has no experiment {experiment_id}")
    return found


def number(request: Request, name: str, default: int, low: int = 0, high: int | None = None) -> int:
    """The whole number a query parameter gives (``default`` without one); 400 when it is none, or
    outside ``low`` to ``high``."""
    value = request.query_params.get(name)
    if value in (None, ""):
        return default
    try:
        found = int(value)
    except ValueError:
        raise HTTPException(400, f"{name}={value!r}: give a whole number") from None
    high = MAX_NUMBER if high is None else high
    if found < low or found > high:
        raise HTTPException(400, f"{name}={found}: give a number from {low} to {high}")
    return found


def filters(request: Request) -> dict[str, Any]:
    """The runs list's filters a request gives: tag, experiment, status and offset."""
    status = request.query_params.get("status") or None
    if status is not None and status not in views.RUN_STATUSES:
        raise HTTPException(400, f"status={status!r}: choose from {', '.join(views.RUN_STATUSES)}")
    return {"tag": request.query_params.get("tag") or None,
            "experiment": request.query_params.get("experiment") or None, "status": status,
            "offset": number(request, "offset", 0)}


def quoted(text: str) -> str:
    """``text`` as one part of a path."""
    return urllib.parse.quote(text, safe="")


def served(info, results, live: bool, since: int = 0, item: bool = False) -> dict[str, Any]:
    """What a run's page is told of where to read more: its API's addresses, its experiments, whether it is live."""
    run = quoted(info.run_id)
    return {"run": info.run_id, "run_href": "/runs/" + run, "results": "/api/runs/" + run,
            "rows": f"/api/runs/{run}/rows", "items": f"/runs/{run}/items/",
            "events": f"/api/runs/{run}/events?since={since}", "experiments": [r.experiment_id for r in results],
            "live": live, "item": item}
