"""The Eval Center's JSON API: the runs, a run's summary, its items and rows a page at a time, and
its events while it runs (server-sent, one look at the store per followed run for all viewers)."""
from __future__ import annotations

import json

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import StreamingResponse

from yamleval.reporting import html
from yamleval.serve import reading, stream
from yamleval.serve.answers import (HEADERS, MAX_NUMBER, RUNS_PAGE, Served, filters as _filters, find_run as _run,
                                    json_answer, number as _number, of_experiment as _of_experiment)


class Api(Served):
    """The API handlers of one Eval Center."""

    async def api_runs(self, request: Request):
        filters = _filters(request)
        limit = _number(request, "limit", RUNS_PAGE, 1, 1000)

        def work(store):
            listed, total = reading.runs_json(store, filters, limit)
            return json.dumps({"total": total, "offset": filters["offset"], "limit": limit, "runs": listed})

        return json_answer(await self.read(work))

    async def api_run(self, request: Request):
        ref = request.path_params["run"]
        return json_answer(await self.read(lambda store: reading.summary_json(store, _run(store, ref))))

    async def api_items(self, request: Request):
        ref = request.path_params["run"]
        experiment_id = request.query_params.get("experiment") or None
        status = request.query_params.get("status") or None
        if status is not None and status not in html.STATUSES:
            raise HTTPException(400, f"status={status!r}: choose from {', '.join(html.STATUSES)}")
        offset = _number(request, "offset", 0)
        limit = _number(request, "limit", 100, 1, reading.PAGE_LIMIT)
        return json_answer(await self.read(_of_experiment, reading.items_json, ref, experiment_id, status, offset, limit))

    async def api_rows(self, request: Request):
        ref = request.path_params["run"]
        experiment_id = request.query_params.get("experiment") or ""
        if not experiment_id:
            raise HTTPException(400, "give the experiment: ?experiment=ID")
        after = _number(request, "after", -1, -1)
        limit = _number(request, "limit", 2000, 1, reading.PAGE_LIMIT)

        return json_answer(await self.read(_of_experiment, reading.rows_json, ref, experiment_id, after, limit))

    async def api_events(self, request: Request):
        ref = request.path_params["run"]
        since = _number(request, "since", 0)
        again = request.headers.get("last-event-id", "").strip()  # a browser's reconnection: on from there
        if again:
            if not (again.isascii() and again.isdigit() and int(again) <= MAX_NUMBER):
                raise HTTPException(400, f"Last-Event-ID: {again[:40]!r}: give a number from 0 to {MAX_NUMBER}")
            since = max(since, int(again))
        info = await self.read(_run, ref)
        return StreamingResponse(stream.events(self.polls, info.run_id, since), media_type="text/event-stream",
                                 headers={**dict(HEADERS), "x-accel-buffering": "no"})
