"""An item run ``repeats`` times: its repeats gathered as they finish, then reduced to one result.

Each repeat is a runner call scored by every scorer, kept as an ``ItemResult`` of its own. The
item's verdict comes from them by the experiment's ``reduce``:

    mean      each scorer's mean score over the repeats, then its threshold (a scorer without one
              passes when at least half its repeats passed); the item's status from those scores
    majority  the item passes when more than half of its repeats passed
    all       every repeat passed
    any       some repeat passed

A repeat that errored makes the item an error, whatever the reducer (DESIGN §4: error first).
An item whose repeats disagree (some passed, some failed) is flaky: a flag beside its status.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Iterable, Iterator, Mapping, Sequence

from yamleval.engine.scoring import item_status
from yamleval.records.types import CacheUse, Item, ItemResult, ScoreResult, Usage

REDUCERS = ("mean", "majority", "all", "any")


@dataclass(frozen=True, slots=True)
class Repeat:
    """One run of one item: the unit of work when an experiment repeats its items."""

    item: Item
    number: int  # from 0


class Gathered:
    """Repeats as they finish, in any order; an item's reduced result once all are in.
    ``finished``: repeats stored before the run was resumed, by item id and number."""

    def __init__(self, count: int, reduce: str, finished: Mapping[str, Mapping[int, ItemResult]] | None = None):
        self.count, self.reduce = count, reduce
        self._open: dict[int, list[ItemResult | None]] = {}  # by the item's position: ids may repeat
        self._finished = dict(finished or {})

    def units(self, items: Iterable[Item]) -> Iterator[Repeat]:
        """Each item's repeats one after another (so few items are open at once); of an item
        resumed, only those it lacks."""
        for item in items:
            numbers: Iterable[int] = range(self.count)
            kept = {n: r for n, r in self._finished.pop(item.id, {}).items() if n < self.count}
            if kept:
                if len(kept) == self.count:  # all in but not the item (they are stored together): one again
                    del kept[self.count - 1]
                self._open[item.index] = [dataclasses.replace(kept[n], item=item) if n in kept else None
                                          for n in numbers]
                numbers = [n for n in numbers if n not in kept]
            for number in numbers:
                yield Repeat(item, number)

    def add(self, repeat: Repeat, result: ItemResult) -> ItemResult | None:
        results = self._open.setdefault(repeat.item.index, [None] * self.count)
        results[repeat.number] = result
        if any(r is None for r in results):
            return None
        del self._open[repeat.item.index]
        return reduced(results, self.reduce)


def _decide(verdicts: Sequence[bool], reduce: str) -> bool:
    passes = sum(verdicts)
    if reduce == "all":
        return passes == len(verdicts)
    if reduce == "any":
        return passes > 0
    if reduce == "majority":
        return passes * 2 > len(verdicts)
    return passes * 2 >= len(verdicts)  # mean, for a verdict without a score: at least half


def _reduced_score(scores: Sequence[ScoreResult], reduce: str) -> ScoreResult:
    first = scores[0]
    errors = [s for s in scores if s.status == "error"]
    if errors:
        return errors[0]
    judged = [s for s in scores if s.status == "success"]
    if not judged:
        return first
    numbers = [s.score for s in judged if s.score is not None]
    mean = math.fsum(numbers) / len(numbers) if numbers else None
    verdicts = [s.passed for s in judged if s.passed is not None]
    if reduce == "mean" and first.threshold is not None and mean is not None:
        passed = mean >= first.threshold
    else:
        passed = _decide(verdicts, reduce) if verdicts else None
    usages = [s.usage for s in scores if s.usage is not None]
    return ScoreResult(first.scorer_id, "success", mean, passed, first.threshold,
                       f"{sum(verdicts)} of {len(judged)} repeats passed" if verdicts else None,
                       usage=summed(usages) if usages else None)


def summed(usages: Sequence[Usage]) -> Usage:
    costs = [u.cost for u in usages if u.cost is not None]
    return Usage(sum(u.prompt_tokens for u in usages), sum(u.completion_tokens for u in usages),
                 math.fsum(costs) if costs else None)


def _status(repeats: Sequence[ItemResult], scores: dict[str, ScoreResult], reduce: str) -> tuple[str, str | None]:
    errored = [r for r in repeats if r.status == "error"]
    if errored:
        return "error", errored[0].error
    if reduce == "mean" or all(r.status == "skipped" for r in repeats):
        return item_status(scores)
    judged = [r.status == "passed" for r in repeats if r.status != "skipped"]
    return ("passed" if _decide(judged, reduce) else "failed"), None


def reduced(repeats: Sequence[ItemResult], reduce: str) -> ItemResult:
    """One item's result from its repeats (in order), which it keeps."""
    scorer_ids = dict.fromkeys(sid for r in repeats for sid in r.scores)  # a repeat whose runner failed has none
    scores = {sid: _reduced_score([r.scores[sid] for r in repeats if sid in r.scores], reduce) for sid in scorer_ids}
    status, error = _status(repeats, scores, reduce)
    shown = next((r for r in repeats if r.status == status), repeats[0])  # an answer that gave the verdict
    usages = [r.usage for r in repeats if r.usage is not None]
    statuses = {r.status for r in repeats}
    caches = [r.cache for r in repeats if r.cache is not None]
    return ItemResult(shown.item, status, shown.output, error,
                      math.fsum(r.latency_ms for r in repeats) / len(repeats),
                      summed(usages) if usages else None, scores, shown.metadata, shown.trace,
                      repeats=tuple(repeats), flaky="passed" in statuses and "failed" in statuses,
                      cache=sum(caches, CacheUse()) if caches else None)
