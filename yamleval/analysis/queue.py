"""Which items of a run are most worth a person's review: those where a judge (a scorer that
asked a model) and another scorer disagree, where the judge's repeats disagree, or where the
judge's answer was cut off or gave no reasoning. Items people reviewed already are left out."""
from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass
from typing import Iterable

from yamleval.records.types import ExperimentResult, ItemResult, ScoreResult


@dataclass(frozen=True)
class Worth:
    """An item worth a person's time, and why (the most reasons first)."""

    experiment_id: str
    item_id: str
    status: str
    reasons: tuple[str, ...]


def is_judge(score: ScoreResult) -> bool:
    """Whether the score came from a model (its usage is counted, or it names its model)."""
    return score.usage is not None or bool(score.metadata and "model" in score.metadata)


def reasons(result: ItemResult) -> list[str]:
    judges = {sid: s for sid, s in result.scores.items() if is_judge(s)}
    found = []
    for sid, judge in judges.items():
        if judge.status == "error" and "cut off" in (judge.error or ""):
            found.append(f"{sid}'s answer was cut off")
        elif judge.status == "success" and not (judge.reason or "").strip():
            found.append(f"{sid} gave no reasoning")
        if judge.passed is None:
            continue
        others = [o for o, s in result.scores.items() if o not in judges and s.passed is not None and s.passed != judge.passed]
        if others:
            found.append(f"{sid} and {', '.join(others)} disagree")
        votes = (judge.metadata or {}).get("votes")
        repeats = [r.scores[sid].passed for r in result.repeats if sid in r.scores and r.scores[sid].passed is not None]
        if (isinstance(votes, list) and len(set(votes)) > 1) or len(set(repeats)) > 1:
            found.append(f"{sid}'s repeats disagree")
    return found


SCANNED = 50_000  # items looked at, at most: a page shows the queue of a run of any size in about a second


def worth_review(results: Iterable[ExperimentResult], limit: int = 20, scanned: int = SCANNED) -> list[Worth]:
    """The ``limit`` items most worth a review among the run's first ``scanned``: the most reasons
    first, then in run and dataset order."""
    best: list[tuple[int, int, int, Worth]] = []
    for number, result in enumerate(results):
        for item in itertools.islice(result.items, scanned):
            scanned -= 1
            if item.human is not None and item.human.source == "review":
                continue
            why = reasons(item)
            if not why:
                continue
            entry = (len(why), -number, -item.item.index,
                     Worth(result.experiment_id, item.item.id, item.status, tuple(why)))
            if len(best) < limit:
                heapq.heappush(best, entry)
            elif entry[:3] > best[0][:3]:
                heapq.heapreplace(best, entry)
    return [entry[3] for entry in sorted(best, key=lambda e: e[:3], reverse=True)]
