"""The Eval Center's pages: the runs, a run (live while it runs), an item, a comparison, the
history of runs and of one experiment, and signing in. Each reads the store in a worker thread
(``Served.read``) and answers with a report's template."""
from __future__ import annotations

import urllib.parse

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse

from yamleval.analysis import reviewed
from yamleval.reporting import center, html
from yamleval.serve import access, reading
from yamleval.serve import reviews as reviewing
from yamleval.serve.answers import (HEADERS, HISTORY_RUNS, LATEST_SHOWN, RUNS_PAGE, NotFound, Served, filters as _filters,
                                    find_run as _run, local_path, number as _number, page, quoted as _quoted,
                                    raw_parts, served as _served)
from yamleval.store import views


class Pages(Served):
    """The page handlers of one Eval Center."""

    async def runs_page(self, request: Request):
        filters = _filters(request)

        def work(store):
            listed, total = reading.runs_json(store, filters, RUNS_PAGE)
            return center.runs_page(listed, total, filters, RUNS_PAGE, store.path, views.RUN_STATUSES)

        return page(await self.read(work))

    async def run_page(self, request: Request):
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
            served["review"] = reviewing.served(info.run_id, self.reviews, request)
            if live:
                served["progress"] = reading.progress_json(store, info)
            elif self.reviews is not None:  # read once the page is open: a run of any size opens at once
                served["queue"] = f"/api/runs/{_quoted(info.run_id)}/queue"
            return page(html.served_page(info, results, served))

        return await self.read(work)

    async def item_page(self, request: Request):
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
            served = {**_served(info, found, False, item=item.item.id), "review": reviewing.served(info.run_id, self.reviews, request)}
            return page(html.served_page(info, found, served, [item]))

        return await self.read(work)

    async def compare_page(self, request: Request):
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

        return page(await self.read(work))

    def _history_page(self, store, histories, **options) -> str:
        from yamleval.reporting import history_html

        return history_html.render(histories, "history.html", store.path, link=center.run_href, **options)

    async def history_page(self, request: Request):
        last = _number(request, "last", HISTORY_RUNS, 1, 1000)
        tag = request.query_params.get("tag") or None

        def work(store):
            from yamleval.analysis import history

            return self._history_page(store, history.read(store, history.recent_runs(store, last, tag)))

        return page(await self.read(work))

    async def experiment_page(self, request: Request):
        experiment_id = request.path_params["experiment"]
        last = _number(request, "last", HISTORY_RUNS, 1, 1000)

        def work(store):
            from yamleval.analysis import history

            runs = list(reversed(views.experiment_runs(store, experiment_id, last)))
            if not runs:
                raise NotFound(f"no stored run has an experiment {experiment_id}")
            found = [h for h in history.read(store, runs, failing_first=True) if h.experiment_id == experiment_id]
            return self._history_page(store, found, items_title="Items that fail most often")

        return page(await self.read(work))

    async def sign_in(self, request: Request):
        next_path = request.query_params.get("next") or "/"
        if request.method == "GET":
            return page(center.sign_in_page(False, local_path(next_path)))
        body = urllib.parse.parse_qs((await request.body()).decode("utf-8", "replace"))
        given, next_path = (body.get("token") or [""])[0], local_path((body.get("next") or ["/"])[0])
        if self.tokens is None or access.matching(given, self.tokens) is None:
            return page(center.sign_in_page(True, next_path), 401)
        answer = RedirectResponse(next_path, 303, headers=dict(HEADERS))
        answer.set_cookie(access.COOKIE, access.cookie_value(given), httponly=True, samesite="strict",
                          secure=request.url.scheme == "https", path="/")
        return answer
