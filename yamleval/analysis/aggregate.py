"""A summary built up one item at a time, so no run has to keep its items to count them.

Memory stays small at any size: score sums (and sums of their squares, for the interval of a
mean) are kept exact as a few partial sums (so a mean does not depend on the order items
finish in), and latencies, which percentiles need all of, are kept as sorted runs (4-byte
numbers past the first 65,536) that are merged only as far as a percentile needs.
"""
from __future__ import annotations

import heapq
import itertools
import json
import math
import operator
from array import array
from typing import Any, Callable, Iterable, Mapping, Sequence

from yamleval.analysis import stats
from yamleval.analysis.agreement import Pairs
from yamleval.records.codec import storable_text
from yamleval.records.types import Breakdown, CacheUse, ItemResult, LatencySummary, ScorerSummary, Slice, Summary, Usage

BINS = 10  # score histogram bins over [0, 1]; scores outside it count in the first or last
RUN = 65536  # numbers kept as they come before they are folded (sums) or sorted (latencies)
MAX_SLICES = 50  # values of a breakdown field counted apart; items with later ones are in no slice (``other``)
FEW_VALUES = 12  # a metadata field broken down by default has at most this many values, and two or more
NO_VALUE = "(none)"  # the slice of items without the field


def score_bin(value: float) -> int:
    """The histogram bin of a score: ``BINS`` over [0, 1], anything outside in the first or last."""
    return 0 if value <= 0 else BINS - 1 if value >= 1 else int(value * BINS)


def exact_parts(values) -> list[float]:
    """Floats whose exact sum is the exact sum of ``values``: each is the correctly rounded
    remainder of the exact sum less the parts before it (``math.fsum`` is exact inside),
    so a long run of numbers folds into two or three."""
    values = values if isinstance(values, (list, array)) else array("d", values)
    parts: list[float] = []
    while True:
        rest = math.fsum(itertools.chain(values, (-p for p in parts)))
        if rest == 0.0:
            return parts
        parts.append(rest)


class ExactSum:
    """A sum of floats, and the sum of their squares, each exact until it is read (then correctly
    rounded), in bounded memory. Squares are summed as the numbers fold, not one by one."""

    __slots__ = ("parts", "square_parts", "pending", "count")

    def __init__(self):
        self.parts: list[float] = []
        self.square_parts: list[float] = []
        self.pending = array("d")
        self.count = 0

    def add(self, value: float) -> None:
        self.pending.append(value)
        self.count += 1
        if len(self.pending) >= RUN:
            self.parts = exact_parts(itertools.chain(self.parts, self.pending))
            self.square_parts = exact_parts(itertools.chain(self.square_parts, self._squares()))
            self.pending = array("d")

    def _squares(self):
        return map(operator.mul, self.pending, self.pending)

    def terms(self):
        return itertools.chain(self.parts, self.pending)

    def total(self) -> float:
        return math.fsum(self.terms())

    def interval(self, confidence: float) -> stats.Interval | None:
        """The t interval of the mean of the numbers; None for fewer than two."""
        n = self.count
        if n < 2:
            return None
        total = self.total()
        squares = math.fsum(itertools.chain(self.square_parts, self._squares()))
        return stats.t_interval(n, total / n, (squares - total * total / n) / (n - 1), confidence)


class SortedRuns:
    """Numbers kept as sorted runs; the k-th smallest is found by merging the runs up to k.

    The first ``RUN`` numbers are kept exactly; runs folded past them keep 4-byte floats (7
    significant digits, a nanosecond on a millisecond), so that a million latencies take
    4 MB. The sum and the largest number stay exact."""

    def __init__(self):
        self.runs: list[array] = []
        self.pending = array("d")
        self.count = 0
        self.folded: list[float] = []  # the exact sum of the numbers in ``runs``, as exact_parts
        self.largest = -math.inf

    def add(self, value: float) -> None:
        self.pending.append(value)
        self.count += 1
        if value > self.largest:
            self.largest = value
        if len(self.pending) >= RUN:  # summed exactly before the run loses digits
            self.folded = exact_parts(itertools.chain(self.folded, self.pending))
            self.runs.append(array("f", sorted(self.pending)))
            self.pending = array("d")

    def total(self) -> float:
        """The exact sum of every number, correctly rounded."""
        return math.fsum(itertools.chain(self.folded, self.pending))

    def ranked(self, ranks: list[int]) -> dict[int, float]:
        """The values at these 0-based ranks of the sorted numbers."""
        runs = self.runs + ([array("d", sorted(self.pending))] if self.pending else [])
        wanted, found = sorted(set(ranks)), {}
        merged = runs[0] if len(runs) == 1 else heapq.merge(*runs)
        for rank, value in enumerate(merged):
            if rank == wanted[len(found)]:
                found[rank] = value
                if len(found) == len(wanted):
                    break
        return found


def _score_interval(scores: ExactSum, confidence: float) -> stats.Interval | None:
    """The t interval of a mean of scores, cut to [0, 1], where scores and so their mean lie."""
    found = scores.interval(confidence)
    return None if found is None else (max(0.0, found[0]), min(1.0, found[1]))


class _ScorerTally:
    __slots__ = ("name", "threshold", "values", "low", "high", "passed", "failed", "errored", "skipped", "bins",
                 "corpus", "corpus_stats")

    def __init__(self, name: str, threshold: float | None, corpus: Callable[[list], float] | None = None):
        self.name, self.threshold = name, threshold
        self.corpus = corpus  # the whole run's score from its items' summed ``corpus_stats`` (corpus BLEU)
        self.corpus_stats: list | None = None
        self.values = ExactSum()  # the same mean whatever order items finish in; its count: scores
        self.passed = self.failed = self.errored = self.skipped = 0
        self.low = math.inf
        self.high = -math.inf
        self.bins = [0] * BINS


def _corpus(tally: _ScorerTally) -> float | None:
    if tally.corpus is None or tally.corpus_stats is None:
        return None
    try:
        return tally.corpus(tally.corpus_stats)
    except Exception:  # a scorer's corpus figure that cannot be computed is left out, never fatal
        return None


def _latency(values: SortedRuns) -> LatencySummary:
    """Mean, p50, p90, p95, p99 (linear interpolation between closest ranks, numpy's default) and max."""
    n = values.count
    if not n:
        return LatencySummary()
    fractions = (("p50", 0.5), ("p90", 0.9), ("p95", 0.95), ("p99", 0.99))
    positions = {name: (n - 1) * fraction for name, fraction in fractions}
    ranks = []
    for position in positions.values():
        low = math.floor(position)
        ranks += [low, min(low + 1, n - 1)]
    at = values.ranked(ranks)
    figures = {}
    for name, position in positions.items():
        low = math.floor(position)
        below, above = at[low], at[min(low + 1, n - 1)]
        figures[name] = below + (above - below) * (position - low)
    return LatencySummary(mean=values.total() / n, max=values.largest, **figures)


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


def field_values(result: ItemResult, field: str) -> list[str]:
    """The values of an item field for a breakdown: ``metadata.a.b`` (``tags`` is ``metadata.tags``);
    a list gives each of its values (an item counts in each), a missing field ``NO_VALUE``."""
    value: Any = result.item.metadata
    for key in ("metadata.tags" if field == "tags" else field).split(".")[1:]:
        value = value.get(key) if isinstance(value, Mapping) else None
    values = value if isinstance(value, (list, tuple)) else [value]
    texts = [NO_VALUE if v is None else storable_text(v if isinstance(v, str) else
                                                      json.dumps(v, ensure_ascii=False, default=str))
             for v in values]
    return list(dict.fromkeys(texts)) or [NO_VALUE]


class _Slices:
    """One breakdown as items come: an ``Aggregator`` per value of its field."""

    def __init__(self, field: str, scorers: Mapping[str, tuple], confidence: float, limit: int):
        self.field, self.scorers, self.confidence, self.limit = field, scorers, confidence, limit
        self.by_value: dict[str, Aggregator] = {}
        self.other = 0  # items in no slice: their value came past ``limit`` (by default: before the field was seen)

    def add(self, result: ItemResult) -> bool:
        """Count the item in its slices; False once the field has more values than ``limit``."""
        for value in field_values(result, self.field):
            found = self.by_value.get(value)
            if found is None:
                if len(self.by_value) >= self.limit:
                    self.other += 1
                    if self.limit < MAX_SLICES:  # a field broken down by default: too many values for one
                        return False
                    continue
                found = self.by_value[value] = Aggregator(self.scorers, self.confidence, ())
            found.add(result)
        return True

    def breakdown(self) -> Breakdown:
        slices = [Slice(value, aggregator.summary(0.0)) for value, aggregator in self.by_value.items()]
        return Breakdown(self.field, tuple(sorted(slices, key=_weakest_first)), self.other)


def _weakest_first(found: Slice) -> tuple:
    """Lowest pass rate first, then lowest mean score, then slowest (p95), then by value."""
    s = found.summary
    return (2.0 if s.pass_rate is None else s.pass_rate, 2.0 if s.mean_score is None else s.mean_score,
            -(s.latency_ms.p95 or 0.0), found.value)


def slowest(breakdown: Breakdown) -> Slice | None:
    """The slice with the highest p95 latency."""
    timed = [s for s in breakdown.slices if s.summary.latency_ms.p95 is not None]
    return max(timed, key=lambda s: s.summary.latency_ms.p95) if timed else None


class Aggregator:
    """Counts, score statistics, latency and tokens of the items recorded so far, and the same
    per value of each breakdown field."""

    def __init__(self, scorers: Mapping[str, tuple], confidence: float = 0.95,
                 breakdowns: Sequence[str] | None = ()):
        """``scorers``: by id, (name, threshold) or (name, threshold, corpus), ``corpus`` turning the
        summed ``corpus_stats`` of the scores' metadata into a figure for the whole run.
        ``breakdowns``: the item fields to break the figures down by; None for the default: every
        metadata field with a few values (``FEW_VALUES``), ``tags`` among them."""
        self.tallies = {sid: _ScorerTally(*about) for sid, about in scorers.items()}
        self.slices = {f: _Slices(f, scorers, confidence, MAX_SLICES) for f in breakdowns or ()}
        self.detect = breakdowns is None
        self.scorer_specs = scorers
        self.confidence = confidence
        self.item_means = ExactSum()  # each item's mean score: items are the clusters of a mean's interval
        self.counts = {"passed": 0, "failed": 0, "error": 0, "skipped": 0}
        self.completed = self.noted = self.flaky = 0
        self.latencies = SortedRuns()
        self.tokens = _Tokens()
        self.judge_tokens = _Tokens()
        self.cache = CacheUse()
        self.people = Pairs()

    def add(self, result: ItemResult) -> None:
        if self.slices or self.detect:
            self._slice(result)
        if result.human is not None:
            self.people.add(result)
        self.completed += 1
        self.counts[result.status] += 1
        self.latencies.add(result.latency_ms)
        if result.notes:
            self.noted += 1
        if result.flaky:
            self.flaky += 1
        if result.cache is not None:
            self.cache += result.cache
        if result.usage is not None:
            self.tokens.add(result.usage)
        item_total, item_scores = 0.0, 0
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
                tally.values.add(value)
                item_total += value
                item_scores += 1
                if value < tally.low:
                    tally.low = value
                if value > tally.high:
                    tally.high = value
                tally.bins[score_bin(value)] += 1
            if score.passed is False:
                tally.failed += 1
            elif score.passed:
                tally.passed += 1
            if tally.corpus is not None and score.metadata and "corpus_stats" in score.metadata:
                found = score.metadata["corpus_stats"]
                tally.corpus_stats = list(found) if tally.corpus_stats is None else \
                    [a + b for a, b in zip(tally.corpus_stats, found)]
        if item_scores:
            self.item_means.add(item_total / item_scores)

    def _slice(self, result: ItemResult) -> None:
        if self.detect and result.item.metadata:
            for key in result.item.metadata:
                field = "tags" if key == "tags" else f"metadata.{key}"
                if field not in self.slices:
                    self.slices[field] = _Slices(field, self.scorer_specs, self.confidence, FEW_VALUES)
                    self.slices[field].other = self.completed  # the items before it had no value
        for field, slices in list(self.slices.items()):
            if not slices.add(result):
                self.slices[field] = _Dropped()

    def breakdowns(self) -> tuple[Breakdown, ...]:
        found = [s.breakdown() for s in self.slices.values() if not isinstance(s, _Dropped)]
        if self.detect:  # a field of one value says nothing
            found = [b for b in found if len(b.slices) + (b.other > 0) >= 2]
        return tuple(found)

    def summary(self, duration_ms: float, total: int | None = None) -> Summary:
        counts = self.counts
        judged = self.completed - counts["skipped"]
        latency = _latency(self.latencies)
        scored = sum(t.values.count for t in self.tallies.values())
        scorers = {}
        for sid, t in self.tallies.items():
            decided = t.passed + t.failed
            scorers[sid] = ScorerSummary(
                id=sid, name=t.name, threshold=t.threshold,
                mean=t.values.total() / t.values.count if t.values.count else None,
                min=t.low if t.values.count else None, max=t.high if t.values.count else None,
                pass_rate=t.passed / decided if decided else None,
                passed=t.passed, failed=t.failed, errored=t.errored, skipped=t.skipped, histogram=tuple(t.bins),
                pass_rate_ci=stats.wilson_interval(t.passed, decided, self.confidence),
                mean_ci=_score_interval(t.values, self.confidence), corpus=_corpus(t),
            )
        return Summary(
            total=max(total or 0, self.completed), completed=self.completed,
            passed=counts["passed"], failed=counts["failed"], errored=counts["error"], skipped=counts["skipped"],
            mean_score=(math.fsum(itertools.chain.from_iterable(t.values.terms() for t in self.tallies.values()))
                        / scored) if scored else None,
            pass_rate=counts["passed"] / judged if judged else None,
            duration_ms=duration_ms, latency_ms=latency,
            tokens=self.tokens.usage(), scorers=scorers, judge_tokens=self.judge_tokens.usage(), noted=self.noted,
            confidence=self.confidence, pass_rate_ci=stats.wilson_interval(counts["passed"], judged, self.confidence),
            mean_score_ci=_score_interval(self.item_means, self.confidence),
            flaky=self.flaky, cache=self.cache, breakdowns=self.breakdowns(),
            reviewed=self.people.reviewed, overruled=self.people.overruled,
            agreement=self.people.agreement(self.confidence),
        )


class _Dropped:
    """A field that turned out to have too many values to break down by default."""

    def add(self, result: ItemResult) -> bool:
        return True


def recount(summary: Summary | None, items: Iterable[ItemResult], breakdowns: Sequence[str] | None = None) -> Summary:
    """The summary of ``items`` with the scorers and confidence of ``summary`` (without one, the
    scorers the items name), no criteria: what a stored run that never finished, or one stored
    before a figure was kept, has counted again. ``breakdowns`` as ``Aggregator`` takes them."""
    aggregator = Aggregator({sid: (s.name, s.threshold) for sid, s in summary.scorers.items()} if summary else
                            {sid: (sid, s.threshold) for item in items for sid, s in item.scores.items()},
                            summary.confidence if summary else 0.95, breakdowns)
    for item in items:
        aggregator.add(item)
    return aggregator.summary(0.0)
