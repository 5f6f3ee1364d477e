"""The Eval Center's web application (Starlette, served by uvicorn): the pages and the JSON API
over one results database, read-only, read while other processes write it. Each request reads
the store in a worker thread, on that thread's own connection; every page is a report's
template fed from here, its items a page at a time."""
from __future__ import annotations

import contextlib
import json
import logging
import re
import threading
import urllib.parse
from typing import Any, Callable

import anyio
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from yamleval.analysis import reviewed
from yamleval.records.errors import UsageError
from yamleval.reporting import center, html
from yamleval.serve import access, reading, stream
from yamleval.serve.answers import HEADERS, NotFound, find_run as _run, json_answer, local_path, page, raw_parts
from yamleval.store import views

RUNS_PAGE = 50
MAX_NUMBER = 10 ** 12  # of an offset or position a request gives: what the store can be asked
HISTORY_RUNS = 10
LATEST_SHOWN = 20  # items a running run's page lists as finished last when it opens
log = logging.getLogger("yamleval.serve")



class Center:
    """The store as requests read it: one connection per worker thread, opened when first needed,
    dropped after an error (the next request connects again); all closed when the server stops."""

    def __init__(self, location: str):
        self.location = location
        self.local = threading.local()
        self.lock = threading.Lock()
        self.opened: list = []  # (worker thread, its store)

    def open(self):
        from yamleval.store import open_store

        store = getattr(self.local, "store", None)
        if store is None:
            self._close_orphans()
            store = open_store(self.location)
            self.local.store = store
            with self.lock:
                self.opened.append((threading.current_thread(), store))
        return store

    def _close_orphans(self) -> None:
        """Close the connections of worker threads that have ended (the pool lets idle ones go)."""
        with self.lock:
            ended = [store for thread, store in self.opened if not thread.is_alive()]
            self.opened = [(thread, store) for thread, store in self.opened if thread.is_alive()]
        for store in ended:
            _close(store)

    def read(self, work: Callable, *args):
        store = self.open()
        try:
            return work(store, *args)
        except UsageError:
            self.drop(store)
            raise

    def drop(self, store) -> None:
        self.local.store = None
        with self.lock:
            self.opened = [(thread, kept) for thread, kept in self.opened if kept is not store]
        _close(store)

    def close(self) -> None:
        with self.lock:
            opened, self.opened = self.opened, []
        for _, store in opened:
            _close(store)


def _close(store) -> None:
    try:
        store.database.close()
    except Exception:  # a connection that broke already
        pass



def _of_experiment(store, answer: Callable, ref: str, experiment_id: str | None, *args):
    """``answer(store, run_id, experiment_id, *args)`` of the run ``ref``; 404 when it says (None)
    that the run has no such experiment."""
    run_id = _run(store, ref).run_id
    found = answer(store, run_id, experiment_id, *args)
    if found is None:
        raise NotFound(f"run {run_id} has no experiment {experiment_id}")
    return found


def _number(request: Request, name: str, default: int, low: int = 0, high: int | None = None) -> int:
    value = request.query_params.get(name)
    if value in (None, ""):
        return default
    try:
        number = int(value)
    except ValueError:
        raise HTTPException(400, f"{name}={value!r}: give a whole number") from None
    high = MAX_NUMBER if high is None else high
    if number < low or number > high:
        raise HTTPException(400, f"{name}={number}: give a number from {low} to {high}")
    return number


def _filters(request: Request) -> dict[str, Any]:
    status = request.query_params.get("status") or None
    if status is not None and status not in views.RUN_STATUSES:
        raise HTTPException(400, f"status={status!r}: choose from {', '.join(views.RUN_STATUSES)}")
    return {"tag": request.query_params.get("tag") or None,
            "experiment": request.query_params.get("experiment") or None, "status": status,
            "offset": _number(request, "offset", 0)}


def _quoted(text: str) -> str:
    return urllib.parse.quote(text, safe="")


def _served(info, results, live: bool, since: int = 0, item: str | None = None) -> dict[str, Any]:
    run = _quoted(info.run_id)
    return {"run": info.run_id, "run_href": "/runs/" + run, "results": "/api/runs/" + run,
            "rows": f"/api/runs/{run}/rows", "items": f"/runs/{run}/items/",
            "events": f"/api/runs/{run}/events?since={since}", "experiments": [r.experiment_id for r in results],
            "live": live, "item": item}


def application(location: str, tokens: dict[str, str] | None = None, reviews=None) -> Starlette:
    """The Eval Center over the store at ``location``; ``tokens``: one of them (by its label, who
    holds it) required of every request;
    ``reviews`` (``serve.reviews.Reviewing``): it takes people's verdicts (else it writes nothing)."""
    from yamleval.serve import reviews as reviewing

    center_store = Center(location)

    async def read(work: Callable, *args):
        return await anyio.to_thread.run_sync(center_store.read, work, *args)

    polls = stream.Polls(read)  # one look at a followed run serves all its viewers

    # -- pages ------------------------------------------------------------------------------

    async def runs_page(request: Request):
        filters = _filters(request)

        def work(store):
            listed, total = reading.runs_json(store, filters, RUNS_PAGE)
            return center.runs_page(listed, total, filters, RUNS_PAGE, store.path, views.RUN_STATUSES)

        return page(await read(work))

    async def run_page(request: Request):
        ref = request.path_params["run"]

        def work(store):
            info = _run(store, ref)
            if info.run_id != ref:
                return RedirectResponse("/runs/" + _quoted(info.run_id), 303)
            live = info.status == "running"
            results = reading.results_of(store, info)
            # the stream starts a few items back, so the page lists those that finished last at once
            since = max(0, views.last_written(store, info.run_id) - LATEST_SHOWN) if live else 0
            served = _served(info, results, live, since)
            served["review"] = reviewing.served(info.run_id, reviews, request)
            if live:
                served["progress"] = reading.progress_json(store, info)
            elif reviews is not None:
                served["queue"] = reviewing.queue_json(store, info)
            return page(html.served_page(info, results, served))

        return await read(work)

    async def item_page(request: Request):
        parts = raw_parts(request)  # /runs/RUN/items/EXPERIMENT/ITEM, each part quoted: ids may hold "/"
        if len(parts) < 6:
            raise HTTPException(404, "an item's address is /runs/RUN/items/EXPERIMENT/ITEM")
        # an id that is "." or ".." comes as ?item=: a browser drops such a part of a path, quoted or not
        ref, experiment_id = parts[2], parts[4]
        item_id = request.query_params.get("item", "/".join(parts[5:]))

        def work(store):
            info = _run(store, ref)
            found = reviewed.results(store, info.run_id, {experiment_id})
            if not found:
                raise NotFound(f"run {info.run_id} has no experiment {experiment_id}")
            item = found[0].items.find(item_id)
            if item is None:
                raise NotFound(f"experiment {experiment_id} of run {info.run_id} has no item {item_id}")
            served = {**_served(info, found, False, item=item.item.id), "review": reviewing.served(info.run_id, reviews, request)}
            return page(html.served_page(info, found, served, [item]))

        return await read(work)

    async def compare_page(request: Request):
        parts = raw_parts(request)  # /compare/BASE/CANDIDATE, each quoted: tags may hold "/"
        if len(parts) == 2:  # the runs page's form
            base, candidate = request.query_params.get("base"), request.query_params.get("candidate")
            if base and candidate:
                return RedirectResponse(f"/compare/{_quoted(base)}/{_quoted(candidate)}", 303)
        if len(parts) != 4 or not parts[2] or not parts[3]:
            raise HTTPException(400, "give a base and a candidate run: /compare/BASE/CANDIDATE (ids or tags)")
        base, candidate = parts[2], parts[3]

        def work(store):
            from yamleval.analysis import compare
            from yamleval.reporting import compare_html

            (base_ref, base_variant), (candidate_ref, candidate_variant) = map(compare.split_variant, (base, candidate))
            before, after = _run(store, base_ref), _run(store, candidate_ref)
            base_results, candidate_results = reviewed.results(store, before.run_id), reviewed.results(store, after.run_id)
            found = compare.compare_named(before, base_results, base_variant, after, candidate_results, candidate_variant)
            return compare_html.render(found, base_results, candidate_results)

        return page(await read(work))

    def _history_page(store, histories, **options) -> str:
        from yamleval.reporting import history_html

        return history_html.render(histories, "history.html", store.path, link=center.run_href, **options)

    async def history_page(request: Request):
        last = _number(request, "last", HISTORY_RUNS, 1, 1000)
        tag = request.query_params.get("tag") or None

        def work(store):
            from yamleval.analysis import history

            return _history_page(store, history.read(store, history.recent_runs(store, last, tag)))

        return page(await read(work))

    async def experiment_page(request: Request):
        experiment_id = request.path_params["experiment"]
        last = _number(request, "last", HISTORY_RUNS, 1, 1000)

        def work(store):
            from yamleval.analysis import history

            runs = list(reversed(views.experiment_runs(store, experiment_id, last)))
            if not runs:
                raise NotFound(f"no stored run has an experiment {experiment_id}")
            found = [h for h in history.read(store, runs, failing_first=True) if h.experiment_id == experiment_id]
            return _history_page(store, found, items_title="Items that fail most often")

        return page(await read(work))

    async def sign_in(request: Request):
        next_path = request.query_params.get("next") or "/"
        if request.method == "GET":
            return page(center.sign_in_page(False, local_path(next_path)))
        body = urllib.parse.parse_qs((await request.body()).decode("utf-8", "replace"))
        given, next_path = (body.get("token") or [""])[0], local_path((body.get("next") or ["/"])[0])
        if tokens is None or access.matching(given, tokens) is None:
            return page(center.sign_in_page(True, next_path), 401)
        answer = RedirectResponse(next_path, 303, headers=dict(HEADERS))
        answer.set_cookie(access.COOKIE, access.cookie_value(given), httponly=True, samesite="strict",
                          secure=request.url.scheme == "https", path="/")
        return answer

    # -- the API ----------------------------------------------------------------------------

    async def api_runs(request: Request):
        filters = _filters(request)
        limit = _number(request, "limit", RUNS_PAGE, 1, 1000)

        def work(store):
            listed, total = reading.runs_json(store, filters, limit)
            return json.dumps({"total": total, "offset": filters["offset"], "limit": limit, "runs": listed})

        return json_answer(await read(work))

    async def api_run(request: Request):
        ref = request.path_params["run"]
        return json_answer(await read(lambda store: reading.summary_json(store, _run(store, ref))))

    async def api_items(request: Request):
        ref = request.path_params["run"]
        experiment_id = request.query_params.get("experiment") or None
        status = request.query_params.get("status") or None
        if status is not None and status not in html.STATUSES:
            raise HTTPException(400, f"status={status!r}: choose from {', '.join(html.STATUSES)}")
        offset = _number(request, "offset", 0)
        limit = _number(request, "limit", 100, 1, reading.PAGE_LIMIT)
        return json_answer(await read(_of_experiment, reading.items_json, ref, experiment_id, status, offset, limit))

    async def api_rows(request: Request):
        ref = request.path_params["run"]
        experiment_id = request.query_params.get("experiment") or ""
        if not experiment_id:
            raise HTTPException(400, "give the experiment: ?experiment=ID")
        after = _number(request, "after", -1, -1)
        limit = _number(request, "limit", 2000, 1, reading.PAGE_LIMIT)

        return json_answer(await read(_of_experiment, reading.rows_json, ref, experiment_id, after, limit))

    async def api_events(request: Request):
        ref = request.path_params["run"]
        since = _number(request, "since", 0)
        again = request.headers.get("last-event-id", "").strip()  # a browser's reconnection: on from there
        if again:
            if not (again.isascii() and again.isdigit() and int(again) <= MAX_NUMBER):
                raise HTTPException(400, f"Last-Event-ID: {again[:40]!r}: give a number from 0 to {MAX_NUMBER}")
            since = max(since, int(again))
        info = await read(_run, ref)
        return StreamingResponse(stream.events(polls, info.run_id, since), media_type="text/event-stream",
                                 headers={**dict(HEADERS), "x-accel-buffering": "no"})

    # -- errors: a message, never a traceback -------------------------------------------------

    def _failure(request: Request, status: int, title: str, message: str) -> Response:
        if request.url.path.startswith("/api/"):
            return json_answer(json.dumps({"error": message}), status)
        return page(center.message_page(title, message), status)

    async def not_found(request: Request, exc: NotFound):
        return _failure(request, 404, "Not found", str(exc))

    async def usage(request: Request, exc: UsageError):
        return _failure(request, 503, "The results database could not be read", exc.message)

    async def http_error(request: Request, exc: HTTPException):
        return _failure(request, exc.status_code, "Not answered", str(exc.detail))

    async def failure(request: Request, exc: Exception):
        log.error("%s %s failed: %s: %s", request.method, request.url.path, type(exc).__name__, exc)
        return _failure(request, 500, "Something went wrong", f"this request failed ({type(exc).__name__});"
                        " the server's log says more")

    routes = [
        Route("/", runs_page), _AnyId("/runs/{run}/items/{rest:path}", item_page), Route("/runs/{run:path}", run_page),
        Route("/compare", compare_page), Route("/compare/{rest:path}", compare_page),
        Route("/history", history_page), Route("/experiments/{experiment:path}", experiment_page),
        Route(access.SIGN_IN, sign_in, methods=["GET", "POST"]),
        Route("/api/runs", api_runs), Route("/api/runs/{run}", api_run), Route("/api/runs/{run}/items", api_items),
        Route("/api/runs/{run}/rows", api_rows), Route("/api/runs/{run}/events", api_events),
        *reviewing.routes(read, reviews, tokens is not None),
    ]
    @contextlib.asynccontextmanager
    async def lifespan(app):
        yield
        center_store.close()

    app = Starlette(routes=routes, exception_handlers={NotFound: not_found, UsageError: usage,
                                                       HTTPException: http_error, Exception: failure},
                    lifespan=lifespan)
    app.state.center = center_store
    if tokens is not None:
        app.add_middleware(access.TokenRequired, tokens=tokens)
    else:
        app.add_middleware(access.LocalOnly)
    return app


class _AnyId(Route):
    """A route whose ``path`` part takes any id, one with a newline too."""

    def __init__(self, path: str, endpoint: Callable):
        super().__init__(path, endpoint)
        self.path_regex = re.compile(self.path_regex.pattern, re.DOTALL)
