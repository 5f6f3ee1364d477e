"""A stored run's figures over all its experiments, as ``yamleval runs`` lists them: counted
from the experiments' stored summaries, without reading an item."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from yamleval.records.types import Summary


@dataclass(frozen=True)
class RunSummary:
    """The pass rate of a run's judged items (skipped ones are not judged) and its mean score
    (each experiment's weighted by its completed items); None where there is nothing to count."""

    pass_rate: float | None
    mean_score: float | None


def summarize(summaries: Iterable[Summary]) -> RunSummary:
    """The figures of a run whose experiments have these ``summaries``."""
    summaries = list(summaries)
    judged = sum(s.completed - s.skipped for s in summaries)
    passed = sum(s.passed for s in summaries)
    scores = [(s.mean_score, s.completed) for s in summaries if s.mean_score is not None]
    weight = sum(n for _, n in scores)
    return RunSummary(passed / judged if judged else None,
                      sum(m * n for m, n in scores) / weight if weight else None)
