"""What the Eval Center reads of the results database for a request, as the JSON its API
answers with and its pages are made from: runs a page at a time, a run's progress, an
experiment's rows after a position. Nothing here reads a whole run into memory, except a
running experiment's figures, counted from its items as ``yamleval report`` counts them."""
from __future__ import annotations

import json
import math
import urllib.parse
from dataclasses import dataclass
from typing import Any

from yamleval.records.codec import encode_record, summary_from_json
from yamleval.records.types import ExperimentResult, RunInfo
from yamleval.reporting import json_report
from yamleval.reporting.html import STATUSES
from yamleval.reporting.html_data import Texts, dumps, row
from yamleval.records.reviews import counted
from yamleval.analysis import reviewed
from yamleval.analysis.verdict import run_word
from yamleval.store import reviews as stored_reviews, tags as run_tags
from yamleval.store.schema import item_key
from yamleval.store import views

PAGE_LIMIT = 5000  # rows or items one request may ask for
NEWEST_KEPT = 20  # of the items stored since a live view last looked, the newest it is sent


def verdict(info: RunInfo) -> str:
    """A run as the runs page shows it: passed or failed once it completed, else how it stands."""
    return run_word(info)


def progress_json(store, info: RunInfo) -> dict[str, Any]:
    """How far the run is: items finished by status, of how many planned (None: not known yet,
    an experiment has not started), each experiment's share, and the bar's geometry."""
    found = reviewed.progress(store, info.run_id, views.progress(store, info.run_id))
    wanted = store.run_detail(info.run_id, "experiment_ids") or []
    counts = {s: sum(p.counts[s] for p in found) for s in STATUSES}
    finished = sum(counts.values())
    waiting = _waiting(found, wanted)
    known = [p.planned for p in found] + [w["planned"] for w in waiting]
    planned = sum(known) if all(n is not None for n in known) else None
    if info.status != "running" and planned is None:
        planned = finished
    # of an unknown total the finished items are no share: a bar full of two failures would read as all failed
    whole = max(planned or 0, finished, 1) if planned is not None else math.inf
    shares, start = [], 0.0
    for status in STATUSES:
        width = 100.0 * counts[status] / whole
        shares.append({"status": status, "x": round(start, 4), "width": round(width, 4)})
        start += width
    return {"status": info.status, "verdict": verdict(info), "finished": finished,
            "planned": planned, "counts": counts, "done": 100.0 * finished / whole, "shares": shares,
            "experiments": [{**p.as_json(), "label": p.label} for p in found] + waiting,
            "experiment_ids": list(wanted) or [p.experiment_id for p in found]}


def _waiting(found: list, wanted: list[str]) -> list[dict[str, Any]]:
    """The run's experiments not started yet; a variant's planned items are those of a variant of
    the same experiment that has started (the same dataset), else unknown (None)."""
    started = {p.experiment_id for p in found}
    planned_of = {p.experiment_id.rpartition("/")[0]: p.planned for p in found if "/" in p.experiment_id}
    return [{"experiment": eid, "status": "waiting", "finished": 0, "label": None,
             "planned": planned_of.get(eid.rpartition("/")[0]) if "/" in eid else None,
             "counts": dict.fromkeys(STATUSES, 0)} for eid in wanted if eid not in started]


def run_json(store, info: RunInfo) -> dict[str, Any]:
    """A run as ``/api/runs`` lists it: results.json's run fields, its verdict, tags, experiments and progress."""
    return {**json_report.run_dict(info), "verdict": verdict(info), "tags": list(run_tags.of_run(store, info.run_id)),
            "experiments": list(store.run_detail(info.run_id, "experiment_ids") or ()),
            "progress": progress_json(store, info), "href": "/runs/" + urllib.parse.quote(info.run_id, safe="")}


def runs_json(store, filters: dict[str, Any], limit: int) -> tuple[list[dict[str, Any]], int]:
    listed, total = views.runs_page(store, tag=filters.get("tag"), experiment=filters.get("experiment"),
                                    status=filters.get("status"), offset=filters.get("offset") or 0, limit=limit)
    return [run_json(store, info) for info in listed], total


def results_of(store, info: RunInfo) -> list[ExperimentResult]:
    """The run's experiments; of a running run only those that have finished (the others show as progress)."""
    if info.status != "running":
        return reviewed.results(store, info.run_id)
    done = {p.experiment_id for p in views.progress(store, info.run_id) if p.status != "running"}
    return reviewed.results(store, info.run_id, done) if done else []


def summary_json(store, info: RunInfo) -> str:
    """``/api/runs/{id}``: results.json without the items, with the run's progress."""
    import io

    out, results = io.StringIO(), results_of(store, info)
    writer = json_report.Writer(out, info, results)
    for result in results:
        writer.begin(result)
        writer.end(result)
    writer.close()
    document = json.loads(out.getvalue())
    for entry in document["experiments"]:
        entry.pop("items", None)
        for variant in entry.get("variants", ()):
            variant.pop("items", None)
    document["progress"] = progress_json(store, info)
    document["tags"] = list(run_tags.of_run(store, info.run_id))
    return dumps(document)


def _shape(store, run_id: str, experiment_id: str, reviews: bool) -> tuple[list[str], list] | None:
    """An experiment's scorers and breakdown values, as its page's rows are laid out (``reviews``: as
    people reviewed it, which orders its slices anew); None: no such experiment."""
    found = views.started_summary(store, run_id, experiment_id)
    if found is None:
        return None
    summary = summary_from_json(found)  # stored as the experiment starts
    if reviews and summary.breakdowns:
        summary = reviewed.summary_of(store, run_id, experiment_id) or summary
    return list(summary.scorers), [(b.field, {x.value: n for n, x in enumerate(b.slices)}) for b in summary.breakdowns]


def rows_json(store, run_id: str, experiment_id: str, after: int, limit: int) -> str | None:
    """``/api/runs/{id}/rows``: the experiment's next ``limit`` rows past position ``after``, as the page's script reads them."""
    verdicts = stored_reviews.verdicts_of(store, run_id).get(experiment_id, {})
    shape = _shape(store, run_id, experiment_id, bool(verdicts))
    if shape is None:
        return None
    scorer_ids, values = shape
    found = views.items_after(store, run_id, experiment_id, after, limit)
    texts = Texts()
    rows = [row(counted(item, verdicts.get(item_key(item.item.id))), scorer_ids, texts, values) for _, item in found]
    last = found[-1][0] if found else after
    return dumps({"rows": rows, "after": last, "more": len(found) == limit})


def items_json(store, run_id: str, experiment_id: str | None, status: str | None, offset: int,
               limit: int) -> str | None:
    """``/api/runs/{id}/items``: item records as results.json holds them, in run and dataset order;
    None when the run has no experiment ``experiment_id``."""
    if experiment_id and views.started_summary(store, run_id, experiment_id) is None:
        return None
    verdicts = stored_reviews.verdicts_of(store, run_id)
    if status and verdicts:  # people changed some items' status: pick them as they count now
        return _reviewed_items(store, run_id, experiment_id, status, offset, limit)
    total, found = views.items_page(store, run_id, experiment_id, status, offset, limit)
    records = [encode_record(counted(item, verdicts.get(experiment, {}).get(item_key(item.item.id))))
               for experiment, item in found]
    return _page(total, offset, limit, records)


def _reviewed_items(store, run_id: str, experiment_id: str | None, status: str, offset: int, limit: int) -> str:
    """As ``items_json``, of a reviewed run: its items of ``status`` as they count, read one by one."""
    total, records = 0, []
    for result in reviewed.results(store, run_id, {experiment_id} if experiment_id else None):
        for item in result.items:
            if item.status != status:
                continue
            if offset <= total < offset + limit:
                records.append(encode_record(item))
            total += 1
    return _page(total, offset, limit, records)


def _page(total: int, offset: int, limit: int, records: list[str]) -> str:
    return ('{"total":' + str(total) + ',"offset":' + str(offset) + ',"limit":' + str(limit)
            + ',"items":[' + ",".join(records) + "]}")


@dataclass(frozen=True)
class Live:
    """A running run as its live viewers see it at one moment: the run, its progress, and its
    newest stored items (oldest first)."""

    info: RunInfo
    progress: dict[str, Any]
    newest: tuple[views.Written, ...]


def live(store, run_id: str, keep: int = NEWEST_KEPT) -> Live:
    """The run now, read once however many viewers follow it: counts and keys, no item's record."""
    info = store.find_run(run_id)
    return Live(info, progress_json(store, info), tuple(views.newest_written(store, run_id, 0, keep)))


def latest_items(found: Live, since: int) -> tuple[int, list[dict[str, Any]]]:
    """Of the items ``found`` holds, those stored after number ``since``: the last number, and the items."""
    news = [w for w in found.newest if w.number > since]
    last = news[-1].number if news else since
    return last, [{"experiment": w.experiment_id, "id": w.item_id, "status": w.status} for w in news]
