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
from typing import Callable

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from yamleval.records.errors import UsageError
from yamleval.reporting import center
from yamleval.serve import access, stream
from yamleval.serve.answers import NotFound, Served, json_answer, page

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
        store.abandon()  # a reader's: nothing of it is queued to write
    except Exception:  # a connection that broke already
        pass



def application(location: str, tokens: dict[str, str] | None = None, reviews=None) -> Starlette:
    """The Eval Center over the store at ``location``; ``tokens``: one of them (by its label, who
    holds it) required of every request;
    ``reviews`` (``serve.reviews.Reviewing``): it takes people's verdicts (else it writes nothing)."""
    from yamleval.serve import reviews as reviewing
    from yamleval.serve.api import Api
    from yamleval.serve.pages import Pages

    center_store = Center(location)
    reader = Served(center_store, tokens, reviews, None)
    polls = stream.Polls(reader.read)  # one look at a followed run serves all its viewers
    pages, api = Pages(center_store, tokens, reviews, polls), Api(center_store, tokens, reviews, polls)
    routes = [
        Route("/", pages.runs_page), _AnyId("/runs/{run}/items/{rest:path}", pages.item_page),
        Route("/runs/{run:path}", pages.run_page),
        Route("/compare", pages.compare_page), Route("/compare/{rest:path}", pages.compare_page),
        Route("/history", pages.history_page), Route("/experiments/{experiment:path}", pages.experiment_page),
        Route(access.SIGN_IN, pages.sign_in, methods=["GET", "POST"]),
        Route("/api/runs", api.api_runs), Route("/api/runs/{run}", api.api_run),
        Route("/api/runs/{run}/items", api.api_items), Route("/api/runs/{run}/rows", api.api_rows),
        Route("/api/runs/{run}/events", api.api_events),
        *reviewing.routes(reader.read, reviews, tokens is not None),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(app):
        yield
        center_store.close()

    app = Starlette(routes=routes, exception_handlers={NotFound: _not_found, UsageError: _usage,
                                                       HTTPException: _http_error, Exception: _failed},
                    lifespan=lifespan)
    app.state.center = center_store
    if tokens is not None:
        app.add_middleware(access.TokenRequired, tokens=tokens)
    else:
        app.add_middleware(access.LocalOnly)
    return app


# -- errors: a message, never a traceback -------------------------------------------------------

def _failure(request: Request, status: int, title: str, message: str) -> Response:
    if request.url.path.startswith("/api/"):
        return json_answer(json.dumps({"error": message}), status)
    return page(center.message_page(title, message), status)


async def _not_found(request: Request, exc: NotFound):
    return _failure(request, 404, "Not found", str(exc))


async def _usage(request: Request, exc: UsageError):
    return _failure(request, 503, "The results database could not be read", exc.message)


async def _http_error(request: Request, exc: HTTPException):
    return _failure(request, exc.status_code, "Not answered", str(exc.detail))


async def _failed(request: Request, exc: Exception):
    log.error("%s %s failed: %s: %s", request.method, request.url.path, type(exc).__name__, exc)
    return _failure(request, 500, "Something went wrong", f"this request failed ({type(exc).__name__});"
                    " the server's log says more")


class _AnyId(Route):
    """A route whose ``path`` part takes any id, one with a newline too."""

    def __init__(self, path: str, endpoint: Callable):
        super().__init__(path, endpoint)
        self.path_regex = re.compile(self.path_regex.pattern, re.DOTALL)
