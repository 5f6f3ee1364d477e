"""A stored run as people reviewed it: each reviewed item counted with its newest review's
verdict (``records.reviews.counted``), its experiment's figures, criteria and verdict counted
again. The store reads every run so (``Store.results``): reports, comparisons, gates and the
Eval Center all see the verdict that counts."""
from __future__ import annotations

import dataclasses
from typing import Callable, Iterator, Sequence

from yamleval.analysis import criteria
from yamleval.analysis.aggregate import recount
from yamleval.records.reviews import JUDGED, HumanVerdict, Review, counted
from yamleval.records.types import ExperimentResult, ItemResult, ItemResults, RunInfo, Summary, Verdicts
from yamleval.store import reviews as stored_reviews
from yamleval.store.schema import item_key


def human_verdict(reviews: Sequence[Review]) -> HumanVerdict:
    """The verdict of an item's reviews (oldest first): its newest."""
    last = reviews[-1]
    return HumanVerdict(last.verdict, last.machine, "review", last.by, last.at, last.note, len(reviews))


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
# (``Store.results`` also reads a run as it stored its end: ``stored``)
VERDICTS = ("reviewed", "machine")


def machine_only(results: list[ExperimentResult]) -> list[ExperimentResult]:
    """``results`` as their scorers judged them: the labels of their datasets taken back."""
    return [_recounted(result, CountedItems(result.items, machine)) if result.summary.reviewed else result for result in results]


def verdicts_of(store, run_id: str) -> dict[str, dict[str, HumanVerdict]]:
    """The human verdict of each reviewed item of the run: by experiment, then by item key."""
    return {experiment_id: {key: human_verdict(found) for key, found in items.items()}
            for experiment_id, items in stored_reviews.of_run(store, run_id).items()}


def applied(store, run_id: str, results: list[ExperimentResult]) -> list[ExperimentResult]:
    """``results`` of the stored run ``run_id`` with its reviews counted."""
    verdicts = verdicts_of(store, run_id)
    if not verdicts:
        return results
    return [_reviewed(result, verdicts[result.experiment_id]) if result.experiment_id in verdicts else result
            for result in results]


def _reviewed(result: ExperimentResult, verdicts: dict[str, HumanVerdict]) -> ExperimentResult:
    return _recounted(result, with_reviews(result.items, verdicts))


def _recounted(result: ExperimentResult, items: ItemResults) -> ExperimentResult:
    summary = recounted(result.summary, items)
    return dataclasses.replace(result, items=items, summary=summary,
                               passed=criteria.verdict(summary, bool(summary.criteria)) and not result.interrupted
                               and result.aborted is None and not result.incomplete)


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


def run_info(info: RunInfo, results: Sequence[ExperimentResult]) -> RunInfo:
    """``info`` with the verdict ``results`` give it, counted however they are: a completed run
    passes when every gated experiment does."""
    if info.status != "completed":
        return info
    return dataclasses.replace(info, passed=all(r.passed for r in results if r.gated))


_SETTLE = "UPDATE runs SET passed = {p} WHERE run_id = {p} AND status = 'completed'"


def settle(store, run_id: str) -> list[ExperimentResult]:
    """After reviews of the run ``run_id``: its results as they count now, and a completed run's
    verdict stored as they give it, so that every list of runs shows it (the items' own verdicts,
    and every review, stay as they were stored)."""
    results = store.results(run_id)
    info = run_info(store.find_run(run_id), results)
    if info.status == "completed":
        store.write(_SETTLE, [(int(bool(info.passed)), run_id)], then="then review again")
    return results
