"""A summary built up one item at a time, so no run has to keep its items to count them."""
from __future__ import annotations

import itertools
import math
from array import array
from typing import Mapping

from yamleval.types import ItemResult, LatencySummary, ScorerSummary, Summary, Usage

BINS = 10  # score histogram bins over [0, 1]; scores outside it count in the first or last


class _ScorerTally:
    __slots__ = ("name", "threshold", "values", "count", "low", "high", "passed", "failed", "errored", "skipped",
                 "bins")

    def __init__(self, name: str, threshold: float | None):
        self.name, self.threshold = name, threshold
        self.values = array("d")  # summed exactly at the end: the same mean whatever order items finish in
        self.count = self.passed = self.failed = self.errored = self.skipped = 0
        self.low = math.inf
        self.high = -math.inf
        self.bins = [0] * BINS


def _percentile(ordered: list[float], fraction: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    position = (len(ordered) - 1) * fraction
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


class _Tokens:
    """A running sum of usage; the cost stays None until some call had a price."""

    __slots__ = ("prompt", "completion", "cost")

    def __init__(self):
        self.prompt = self.completion = 0
        self.cost: float | None = None

    def add(self, usage: Usage) -> None:
        self.prompt += usage.prompt_tokens
        self.completion += usage.completion_tokens
        if usage.cost is not None:
            self.cost = (self.cost or 0.0) + usage.cost

    def usage(self) -> Usage:
        return Usage(self.prompt, self.completion, self.cost)


class Aggregator:
    """Counts, score statistics, latency and tokens of the items recorded so far."""

    def __init__(self, scorers: Mapping[str, tuple[str, float | None]]):
        self.tallies = {sid: _ScorerTally(name, threshold) for sid, (name, threshold) in scorers.items()}
        self.counts = {"passed": 0, "failed": 0, "error": 0, "skipped": 0}
        self.completed = 0
        self.latencies = array("d")
        self.tokens = _Tokens()
        self.judge_tokens = _Tokens()

    def add(self, result: ItemResult) -> None:
        self.completed += 1
        self.counts[result.status] += 1
        self.latencies.append(result.latency_ms)
        if result.usage is not None:
            self.tokens.add(result.usage)
        for sid, score in result.scores.items():
            tally = self.tallies[sid]
            if score.usage is not None:
                self.judge_tokens.add(score.usage)
            if score.status == "error":
                tally.errored += 1
                continue
            if score.status == "skipped":
                tally.skipped += 1
                continue
            if score.score is not None:
                value = score.score
                tally.values.append(value)
                tally.count += 1
                if value < tally.low:
                    tally.low = value
                if value > tally.high:
                    tally.high = value
                tally.bins[0 if value <= 0 else BINS - 1 if value >= 1 else int(value * BINS)] += 1
            if score.passed is False:
                tally.failed += 1
            elif score.passed:
                tally.passed += 1

    def summary(self, duration_ms: float, total: int | None = None) -> Summary:
        counts = self.counts
        scores = array("d", itertools.chain.from_iterable(t.values for t in self.tallies.values()))
        judged = self.completed - counts["skipped"]
        ordered = sorted(self.latencies)
        latency = LatencySummary(
            mean=sum(ordered) / len(ordered), p50=_percentile(ordered, 0.5), p95=_percentile(ordered, 0.95),
            max=ordered[-1],
        ) if ordered else LatencySummary()
        scorers = {}
        for sid, t in self.tallies.items():
            decided = t.passed + t.failed
            scorers[sid] = ScorerSummary(
                id=sid, name=t.name, threshold=t.threshold,
                mean=math.fsum(t.values) / t.count if t.count else None,
                min=t.low if t.count else None, max=t.high if t.count else None,
                pass_rate=t.passed / decided if decided else None,
                passed=t.passed, failed=t.failed, errored=t.errored, skipped=t.skipped, histogram=tuple(t.bins),
            )
        return Summary(
            total=max(total or 0, self.completed), completed=self.completed,
            passed=counts["passed"], failed=counts["failed"], errored=counts["error"], skipped=counts["skipped"],
            mean_score=math.fsum(scores) / len(scores) if scores else None,
            pass_rate=counts["passed"] / judged if judged else None,
            duration_ms=duration_ms, latency_ms=latency,
            tokens=self.tokens.usage(), scorers=scorers, judge_tokens=self.judge_tokens.usage(),
        )
