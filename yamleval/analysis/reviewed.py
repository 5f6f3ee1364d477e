"""A stored run counted as it is shown and gated: the store returns what was stored, and here an
experiment that never finished is counted from its items, a summary stored before a figure was kept
has it counted, and each reviewed item counts with its newest review's verdict
(``records.reviews.counted``), its experiment's figures and criteria counted again and its verdict
decided again (``analysis.verdict``). Whatever reads a run for a person reads it through ``results``."""
from __future__ import annotations

import dataclasses
from typing import Callable, Iterator, Sequence

from yamleval.analysis import criteria, verdict
from yamleval.analysis.aggregate import recount
from yamleval.records.reviews import JUDGED, HumanVerdict, counted
from yamleval.records.types import ExperimentResult, ItemResult, ItemResults, Summary, Verdicts
from yamleval.store import reviews as stored_reviews
from yamleval.store.schema import item_key
from yamleval.store.views import ExperimentProgress


class CountedItems(ItemResults):
    """An experiment's items, each counted by ``count``: with a person's verdict (``reviewed``) or its
    scorers' (``machine``)."""

    def __init__(self, items: ItemResults, count: Callable[[ItemResult], ItemResult],
                 verdicts: dict[str, HumanVerdict] | None = None):
        self.items, self.count, self.verdicts_by_key = items, count, verdicts

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[ItemResult]:
        return map(self.count, self.items)

    def verdicts(self, scorers: Sequence[str]) -> Iterator[Verdicts]:
        if self.verdicts_by_key is None:  # the stored status is not the one that counts: whole records
            yield from super().verdicts(scorers)
            return
        for item_id, position, status, scores in self.items.verdicts(scorers):
            found = self.verdicts_by_key.get(item_key(item_id))
            yield item_id, position, found.verdict if found is not None and status in JUDGED else status, scores

    def find(self, item_id: str) -> ItemResult | None:
        found = self.items.find(item_id)
        return None if found is None else self.count(found)


def with_reviews(items: ItemResults, verdicts: dict[str, HumanVerdict]) -> CountedItems:
    """``items``, each with a review counted with its newest one."""
    return CountedItems(items, lambda result: counted(result, verdicts.get(item_key(result.item.id))), verdicts)


def machine(result: ItemResult) -> ItemResult:
    """``result`` with its scorers' verdict, not a person's."""
    human = result.human
    return result if human is None else dataclasses.replace(result, status=human.machine, human=None)


# which verdicts a user may count a stored run with: people's where given, or its scorers' alone
# (``results`` also reads a run as it stored its end: ``stored``)
VERDICTS = ("reviewed", "machine")


def results(store, run_id: str, only: set[str] | None = None, verdicts: str = "reviewed") -> list[ExperimentResult]:
    """The stored experiments of the run ``run_id`` (those in ``only``, if given), counted with
    ``verdicts``: ``reviewed``, an item's newest review counting; ``machine``, its scorers' alone (a
    dataset's labels taken back too); ``stored``, as the run stored its end."""
    found = [_counted(store, run_id, result) for result in store.results(run_id, only)]
    if verdicts == "stored":
        return found
    return applied(store, run_id, found) if verdicts == "reviewed" else machine_only(found)


def _counted(store, run_id: str, result: ExperimentResult) -> ExperimentResult:
    """A stored experiment with what its stored summary lacks counted from its items: all of it for
    one that never finished (no end stored), the figures kept since for an older one."""
    items, stored = result.items, result.summary
    if (result.incomplete and result.completed_at is None) or stored is None:
        summary = criteria.with_criteria(recount(stored, items), stored.criteria if stored else ())
    else:
        summary = with_counted(stored, items)
    if summary is stored:
        return result
    items = store.item_view(run_id, result.experiment_id, summary.completed)
    return dataclasses.replace(result, summary=summary, items=items)


def with_counted(summary: Summary, items: ItemResults) -> Summary:
    """A summary stored before score histograms or intervals were kept (with judged items, a pass
    rate has one), with them counted from its items."""
    if not summary.completed or (all(s.histogram for s in summary.scorers.values())
                                 and (summary.pass_rate_ci or summary.completed == summary.skipped)):
        return summary
    found = criteria.with_criteria(recount(summary, items), summary.criteria)
    scorers = {sid: dataclasses.replace(s, histogram=c.histogram, pass_rate_ci=c.pass_rate_ci, mean_ci=c.mean_ci)
               for (sid, s), c in zip(summary.scorers.items(), found.scorers.values())}
    return dataclasses.replace(summary, scorers=scorers, pass_rate_ci=found.pass_rate_ci,
                               mean_score_ci=found.mean_score_ci)


def machine_only(results: list[ExperimentResult]) -> list[ExperimentResult]:
    """``results`` as their scorers judged them: the labels of their datasets taken back."""
    return [_recounted(result, CountedItems(result.items, machine)) if result.summary.reviewed else result
            for result in results]


def applied(store, run_id: str, results: list[ExperimentResult]) -> list[ExperimentResult]:
    """``results`` of the stored run ``run_id`` with its reviews counted: each finished experiment's
    figures as ``keep`` stored them when its newest review landed, else counted again."""
    reviews = stored_reviews.of_run(store, run_id)
    if not reviews:
        return results
    kept = stored_reviews.kept_counted(store, run_id)
    out = []
    for result in results:
        given = reviews.get(result.experiment_id)
        if given is None:
            out.append(result)
            continue
        verdicts = {key: stored_reviews.human_verdict(found) for key, found in given.items()}
        items = with_reviews(result.items, verdicts)
        found = kept.get(result.experiment_id)
        if _current(found, given) and found.ended == _ended(result):
            out.append(verdict.judged(dataclasses.replace(result, items=items, summary=found.summary())))
        else:
            out.append(_recounted(result, items))
    return out


def _ended(result: ExperimentResult) -> str | None:
    """When the experiment's items ended (None: they still come, or it never ended)."""
    return None if result.incomplete and result.completed_at is None else result.completed_at


def _current(kept: stored_reviews.Kept | None, reviews: dict) -> bool:
    """Whether ``kept`` counts every review of its experiment (``reviews``, by item) and its experiment's end now."""
    return (kept is not None and kept.ended is not None and kept.ended == kept.ended_now
            and kept.reviews == sum(map(len, reviews.values())))


def keep(store, run_id: str, results: list[ExperimentResult]) -> None:
    """Store the summary of each of ``results`` that its reviews count (``applied``), so that the
    next reader of the run counts nothing again: rows pages, lists of runs, progress bars."""
    reviews = stored_reviews.of_run(store, run_id)
    stored_reviews.keep_counted(store, run_id, {
        r.experiment_id: stored_reviews.kept(sum(map(len, reviews[r.experiment_id].values())), _ended(r), r.summary)
        for r in results if r.experiment_id in reviews and _ended(r) is not None})


def _recounted(result: ExperimentResult, items: ItemResults) -> ExperimentResult:
    return verdict.judged(dataclasses.replace(result, items=items, summary=recounted(result.summary, items)))


def recounted(summary: Summary, items: ItemResults) -> Summary:
    """``summary`` counted again from ``items``: what items hold (counts, scores, agreement) anew, what
    they do not (the time, the throttling, a baseline's verdict) as it was."""
    again = recount(summary, items, tuple(b.field for b in summary.breakdowns))
    judged = criteria.evaluate([c for c in summary.criteria if c.type != "no_regression"], again)
    kept = iter(judged)
    both = tuple(c if c.type == "no_regression" else next(kept) for c in summary.criteria)
    scorers = {sid: dataclasses.replace(s, corpus=summary.scorers[sid].corpus) if sid in summary.scorers else s
               for sid, s in again.scorers.items()}  # a corpus figure comes of the scores, which people do not change
    return dataclasses.replace(again, criteria=both, duration_ms=summary.duration_ms, throttling=summary.throttling,
                               total=summary.total, confidence=summary.confidence, scorers=scorers)


def settle(store, run_id: str, found: list[ExperimentResult] | None = None) -> list[ExperimentResult]:
    """After reviews of the run ``run_id``: its results as they count now (``found``, else all of
    them), each experiment's figures and a completed run's verdict stored as they give them, so that
    every reader shows them without counting again (the items' own verdicts, and every review, stay
    as they were stored)."""
    found = results(store, run_id) if found is None else found
    keep(store, run_id, found)
    info = verdict.run_counted(store.find_run(run_id), found)
    if info.status == "completed":
        stored_reviews.settled(store, run_id, bool(info.passed))
    return found


def listed_summaries(store, run_id: str) -> list[Summary]:
    """The run's summaries as a list of runs counts them: each finished experiment's as its reviews
    count it (as ``keep`` stored it), an unfinished one's as stored."""
    found = [r for r in store.results(run_id) if r.summary is not None]
    finished = applied(store, run_id, [r for r in found if not (r.incomplete and r.completed_at is None)])
    counted_by_id = {r.experiment_id: r.summary for r in finished}
    return [counted_by_id.get(r.experiment_id, r.summary) for r in found]


def summary_of(store, run_id: str, experiment_id: str) -> Summary | None:
    """The experiment's summary as its reviews count it: as ``keep`` stored it when that counts every
    review and its end, else counted (None: the run has no such experiment)."""
    given = stored_reviews.of_run(store, run_id).get(experiment_id)
    found = stored_reviews.kept_counted(store, run_id, experiment_id).get(experiment_id) if given else None
    if given and _current(found, given):
        return found.summary()
    counted_now = results(store, run_id, {experiment_id})
    return counted_now[0].summary if counted_now else None


def progress(store, run_id: str, found: list[ExperimentProgress]) -> list[ExperimentProgress]:
    """``found`` (each experiment's items by stored status) with each reviewed experiment's items
    counted as people's verdicts count them, as ``keep`` stored its figures; unchanged without reviews."""
    reviews = stored_reviews.of_run(store, run_id)
    if not reviews:
        return found
    kept = stored_reviews.kept_counted(store, run_id)
    out = []
    for shown in found:
        given, counted_now = reviews.get(shown.experiment_id), kept.get(shown.experiment_id)
        if given is None or not _current(counted_now, given):
            out.append(shown)
            continue
        out.append(dataclasses.replace(shown, counts=dict(zip(("passed", "failed", "error", "skipped"), counted_now.counts))))
    return out
