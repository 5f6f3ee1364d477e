"""Reviews in the Eval Center (``yamleval serve --reviews``): a person's verdict on an item,
sent from its page as JSON and stored as ``yamleval review`` stores it; the experiment's figures
as they count then, for the page to show without a reload; and the items most worth a review.
Without ``--reviews`` the server takes no writes (403)."""
from __future__ import annotations

import json
import urllib.parse
from dataclasses import dataclass
from typing import Any, Callable

from starlette.requests import Request
from starlette.routing import Route

from yamleval.analysis.queue import worth_review
from yamleval.lifecycle import reviewing
from yamleval.records.errors import UsageError
from yamleval.reporting import html
from yamleval.reporting.html_data import human_row
from yamleval.serve import is_local, reading
from yamleval.serve.answers import find_run, json_answer
from yamleval.analysis import reviewed, verdict
from yamleval.store import reviews as stored_reviews

MAX_BODY = 64 * 1024
QUEUE = 20


@dataclass(frozen=True)
class Reviewing:
    """The server takes reviews; ``reviewer``: who gives them (None: each review names its reviewer)."""

    reviewer: str | None = None


class Refused(Exception):
    """A review the server does not take: its status and why."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status, self.message = status, message


def asked(body: bytes, content_type: str, reviewer: str | None) -> reviewing.Asked:
    """The review a request's body holds (JSON: experiment, item, verdict, note, by)."""
    if content_type.split(";")[0].strip().lower() != "application/json":
        raise Refused(415, "send the review as JSON (Content-Type: application/json)")
    if len(body) > MAX_BODY:
        raise Refused(413, f"a review is at most {MAX_BODY // 1024} KiB")
    try:
        given = json.loads(body)
    except (ValueError, RecursionError):
        raise Refused(400, "the body is not JSON") from None
    if not isinstance(given, dict) or not all(isinstance(given.get(k), str) for k in ("experiment", "item", "verdict")):
        raise Refused(400, "a review is {experiment, item, verdict: pass|fail, note?, by?}")
    note = given.get("note")
    by = reviewer or given.get("by")
    return reviewing.Asked(given["experiment"], given["item"], given["verdict"],
                           note if isinstance(note, str) else None, by if isinstance(by, str) else None, "the review")


def store_review(store, ref: str, review: reviewing.Asked) -> dict[str, Any]:
    """Store ``review`` of run ``ref``; what the page shows then: the item's verdicts, its
    experiment's figures (as report.html lays them out) and the run's verdict."""
    info = find_run(store, ref)
    try:
        found = reviewing.checked(store, info, [review])
    except UsageError as exc:
        if exc.message.startswith("cannot "):  # the store failed, not the review
            raise
        raise Refused(400, exc.message.removeprefix("the review: ")) from None
    stored_reviews.add(store, info.run_id, found)
    # a completed run's verdict stored as they count now, as every list of runs shows it; of a
    # running run, the experiments that finished
    results = reviewed.settle(store, info.run_id, None if info.status == "completed" else reading.results_of(store, info))
    number = next((n for n, r in enumerate(results) if r.experiment_id == review.experiment), len(results))
    result = results[number] if number < len(results) else reviewed.results(store, info.run_id, {review.experiment})[0]
    item = result.items.find(review.item)
    view = html.experiment_view(number, result)
    return {"review": {"verdict": found[0].verdict, "machine": found[0].machine, "by": found[0].by,
                       "at": found[0].at, "note": found[0].note},
            "item": {"status": item.status, "human": human_row(item.human)},
            "experiment": {"id": result.experiment_id, "status": view["status"], "stats": dict(view["stats"]),
                           "shares": view["shares"], "criteria": view["criteria"], "agreement": view["people"]},
            "verdict": verdict.run_word(verdict.run_counted(info, results))}


def reviews_json(store, ref: str) -> str:
    """``GET /api/runs/{id}/reviews``: every review of the run, in the order given (the audit trail)."""
    info = find_run(store, ref)
    return json.dumps({"run": info.run_id, "reviews": [
        {"experiment": r.experiment_id, "item_key": r.item_id, "verdict": r.verdict, "machine": r.machine, "by": r.by,
         "at": r.at, "note": r.note} for r in stored_reviews.listed(store, info.run_id)]})


def queue_json(store, info) -> list[dict[str, Any]]:
    """The items of the run most worth a person's review, with why."""
    return [{"experiment": w.experiment_id, "id": w.item_id, "status": w.status, "reasons": list(w.reasons)}
            for w in worth_review(reading.results_of(store, info), QUEUE)]


def reviewer(reviews: Reviewing, request: Request) -> str | None:
    """Who gives the request's reviews: the name of the token it brings, else ``--reviewer``."""
    return request.scope.get("state", {}).get("reviewer") or reviews.reviewer


def served(run_id: str, reviews: Reviewing | None, request: Request) -> dict[str, Any] | None:
    """What a served page's script needs to take reviews (None: it offers none)."""
    if reviews is None:
        return None
    return {"post": f"/api/runs/{urllib.parse.quote(run_id, safe='')}/reviews", "reviewer": reviewer(reviews, request)}


def _same_origin(request: Request, guarded: bool) -> bool:
    """A browser's request from a page of this server (one without an Origin, a script's, is taken).
    Without a token, the server is this machine's alone: its address must be too, so that a page
    elsewhere whose name was made to point here (DNS rebinding) cannot send one."""
    host = request.headers.get("x-forwarded-host") or request.headers.get("host", "")
    if not guarded and not is_local(urllib.parse.urlsplit("//" + host).hostname or ""):
        return False
    origin = request.headers.get("origin")
    return origin is None or urllib.parse.urlsplit(origin).netloc == host


async def _body(request: Request) -> bytes:
    """The request's body, read no further than ``MAX_BODY``."""
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY:
            raise Refused(413, f"a review is at most {MAX_BODY // 1024} KiB")
    return body


def routes(read: Callable, reviews: Reviewing | None, guarded: bool) -> list[Route]:
    """The API's review routes: ``POST`` (with ``--reviews``; 403 else) and ``GET /api/runs/{run}/reviews``;
    ``guarded``: every request brings a token."""

    async def post(request: Request):
        if reviews is None:
            return json_answer(json.dumps({"error": "this Eval Center is read-only: start it with"
                                                    " `yamleval serve --reviews` to take reviews"}), 403)
        if not _same_origin(request, guarded):
            return json_answer(json.dumps({"error": "a review comes from this server's own pages"}), 403)
        try:
            content_type = request.headers.get("content-type", "")
            review = asked(await _body(request), content_type, reviewer(reviews, request))
            return json_answer(json.dumps(await read(store_review, request.path_params["run"], review)))
        except Refused as exc:
            return json_answer(json.dumps({"error": exc.message}), exc.status)

    async def listed(request: Request):
        try:
            return json_answer(await read(reviews_json, request.path_params["run"]))
        except Refused as exc:
            return json_answer(json.dumps({"error": exc.message}), exc.status)

    async def queued(request: Request):
        if reviews is None:
            return json_answer(json.dumps({"error": "this Eval Center takes no reviews: start it with"
                                                    " `yamleval serve --reviews` to list the items worth one"}), 403)
        ref = request.path_params["run"]
        return json_answer(json.dumps(await read(lambda store: queue_json(store, find_run(store, ref)))))

    return [Route("/api/runs/{run}/reviews", post, methods=["POST"]), Route("/api/runs/{run}/reviews", listed),
            Route("/api/runs/{run}/queue", queued)]
