"""Streaming summary: counts, micro mean, per-scorer statistics, percentiles."""
from __future__ import annotations

import pytest

from yamleval.analysis import aggregate
from yamleval.analysis import stats
from yamleval.analysis.aggregate import Aggregator
from yamleval.records.types import Item, ItemResult, ScoreResult, Usage


def result(index, status, latency, scores=(), usage=None):
    item = Item(id=f"i{index}", index=index, input=index)
    return ItemResult(item=item, status=status, latency_ms=latency, usage=usage,
                      scores={s.scorer_id: s for s in scores})


def test_summary_counts_means_and_percentiles():
    agg = Aggregator({"a": ("A", 0.5), "b": ("b", None)})
    agg.add(result(0, "passed", 10.0, [ScoreResult("a", "success", 1.0, True, 0.5),
                                       ScoreResult("b", "success", 0.2)], Usage(3, 4)))
    agg.add(result(1, "failed", 20.0, [ScoreResult("a", "success", 0.0, False, 0.5),
                                       ScoreResult("b", "skipped")]))
    agg.add(result(2, "error", 30.0, [ScoreResult("a", "error", error="x"), ScoreResult("b", "success", 0.4)]))
    agg.add(result(3, "error", 40.0))
    s = agg.summary(duration_ms=123.0)
    assert (s.total, s.completed, s.passed, s.failed, s.errored, s.skipped) == (4, 4, 1, 1, 2, 0)
    assert s.mean_score == pytest.approx((1.0 + 0.2 + 0.0 + 0.4) / 4)
    assert s.pass_rate == 0.25
    assert (s.latency_ms.mean, s.latency_ms.p50, s.latency_ms.max) == (25.0, 25.0, 40.0)
    assert s.latency_ms.p95 == pytest.approx(38.5)
    assert (s.latency_ms.p90, s.latency_ms.p99) == (pytest.approx(37.0), pytest.approx(39.7))
    assert s.tokens == Usage(3, 4)
    a, b = s.scorers["a"], s.scorers["b"]
    assert (a.name, a.mean, a.min, a.max, a.pass_rate) == ("A", 0.5, 0.0, 1.0, 0.5)
    assert (a.passed, a.failed, a.errored, a.skipped) == (1, 1, 1, 0)
    assert (b.mean, b.pass_rate, b.skipped) == (pytest.approx(0.3), None, 1)


def test_empty_summary():
    s = Aggregator({}).summary(0.0, total=0)
    assert (s.total, s.mean_score, s.pass_rate, s.latency_ms.p50) == (0, None, None, None)
    assert (s.pass_rate_ci, s.mean_score_ci, s.confidence) == (None, None, 0.95)


@pytest.mark.parametrize("confidence", [0.9, 0.95])
def test_pass_rates_and_means_carry_intervals_clustered_by_item(confidence):
    """The mean score's interval counts items, not scores: each item is the mean of its scores."""
    from scipy import stats as scipy_stats
    from statsmodels.stats.proportion import proportion_confint

    agg = Aggregator({"a": ("a", 0.5), "b": ("b", None)}, confidence=confidence)
    rows = [(1.0, 0.8), (0.0, 0.4), (1.0, None), (0.5, 0.1), (0.0, 0.0), (1.0, 0.9)]
    for index, (a, b) in enumerate(rows):
        scores = [ScoreResult("a", "success", a, a >= 0.5, 0.5)] + ([ScoreResult("b", "success", b)] if b is not None
                                                                    else [ScoreResult("b", "skipped")])
        agg.add(result(index, "passed" if a >= 0.5 else "failed", 1.0, scores))
    agg.add(result(len(rows), "skipped", 1.0, [ScoreResult("a", "skipped"), ScoreResult("b", "skipped")]))
    agg.add(result(len(rows) + 1, "error", 1.0))
    s = agg.summary(0.0)

    def wilson(passed, n):
        return pytest.approx(proportion_confint(passed, n, alpha=1 - confidence, method="wilson"), rel=1e-9)

    def t_interval(values):  # cut to [0, 1], where a mean of scores lies
        low, high = scipy_stats.t.interval(confidence, len(values) - 1, loc=sum(values) / len(values),
                                           scale=scipy_stats.sem(values))
        return pytest.approx((max(low, 0.0), min(high, 1.0)), rel=1e-9)

    assert s.confidence == confidence
    assert s.pass_rate_ci == wilson(4, 7)  # the skipped item is not judged; the errored one did not pass
    assert s.mean_score_ci == t_interval([(a + b) / 2 if b is not None else a for a, b in rows])
    a, b = s.scorers["a"], s.scorers["b"]
    assert (a.pass_rate_ci, a.mean_ci) == (wilson(4, 6), t_interval([a for a, _ in rows]))
    assert (b.pass_rate_ci, b.mean_ci) == (None, t_interval([b for _, b in rows if b is not None]))


def test_a_mean_of_one_item_has_no_interval():
    agg = Aggregator({"a": ("a", None)})
    agg.add(result(0, "passed", 1.0, [ScoreResult("a", "success", 0.7)]))
    s = agg.summary(0.0)
    assert (s.mean_score_ci, s.scorers["a"].mean_ci) == (None, None)
    assert s.pass_rate_ci == pytest.approx((0.2065493143772375, 1.0))


def test_large_runs_keep_exact_order_independent_means_and_percentiles():
    """Past one run of numbers, sums fold into exact parts and latencies into sorted runs:
    the figures equal those computed from every value at once, in any finishing order."""
    import math
    import random

    from yamleval.analysis import aggregate
    from yamleval.analysis import stats

    rng = random.Random(7)
    n = aggregate.RUN * 2 + 123
    latencies = [rng.lognormvariate(0, 2) for _ in range(n)]
    scores = [rng.random() ** 3 for _ in range(n)]
    summaries = []
    for seed in (1, 2):
        order = list(range(n))
        random.Random(seed).shuffle(order)
        agg = Aggregator({"s": ("s", None)})
        for i in order:
            agg.add(result(i, "passed", latencies[i], [ScoreResult("s", "success", scores[i])]))
        summaries.append(agg.summary(0.0))
    assert summaries[0] == summaries[1], "the finishing order must not change any figure"
    s = summaries[0]
    ordered = sorted(latencies)

    def percentile(fraction):
        position = (n - 1) * fraction
        low = math.floor(position)
        return ordered[low] + (ordered[low + 1] - ordered[low]) * (position - low)

    # runs folded past the first keep 4-byte floats: 7 significant digits
    assert s.latency_ms.p50 == pytest.approx(percentile(0.5), rel=1e-6)
    assert s.latency_ms.p95 == pytest.approx(percentile(0.95), rel=1e-6)
    assert s.latency_ms.max == ordered[-1] and s.latency_ms.mean == math.fsum(latencies) / n
    assert s.scorers["s"].mean == math.fsum(scores) / n and s.mean_score == math.fsum(scores) / n
    assert s.scorers["s"].mean_ci == s.mean_score_ci == pytest.approx(stats.mean_interval(scores), rel=1e-12)


def test_exact_parts_keep_the_exact_sum():
    from fractions import Fraction

    from yamleval.analysis.aggregate import exact_parts

    values = [1e16, 1.0, -1e16, 3.5e-20, 0.1, 0.2, -0.3, 1e300, -1e300, 2.0 ** -1074]
    parts = exact_parts(values)
    assert sum(map(Fraction, parts)) == sum(map(Fraction, values))


def tagged(index, status, latency, metadata, score=None):
    item = Item(id=f"i{index}", index=index, input=index, metadata=metadata)
    scores = {} if score is None else {"a": ScoreResult("a", "success", score, score >= 0.5, 0.5)}
    return ItemResult(item=item, status=status, latency_ms=latency, scores=scores, usage=Usage(index, 0))


def test_a_breakdown_counts_each_value_apart_weakest_first():
    agg = Aggregator({"a": ("a", 0.5)}, 0.95, ["metadata.topic", "tags", "metadata.who.lang"])
    agg.add(tagged(0, "passed", 10.0, {"topic": "billing", "tags": ["long", "es"], "who": {"lang": "es"}}, 1.0))
    agg.add(tagged(1, "failed", 30.0, {"topic": "billing", "tags": ["long"]}, 0.0))
    agg.add(tagged(2, "passed", 50.0, {"topic": "refunds"}, 1.0))
    agg.add(tagged(3, "passed", 70.0, None, 0.8))
    topic, tags, lang = agg.summary(0.0).breakdowns
    assert [(s.value, s.summary.completed, s.summary.pass_rate) for s in topic.slices] == [
        ("billing", 2, 0.5), ("(none)", 1, 1.0), ("refunds", 1, 1.0)]  # a tie on pass rate: the lower mean first
    billing = topic.slices[0].summary
    assert billing.scorers["a"].mean == 0.5 and billing.latency_ms.p50 == 20.0 and billing.tokens.prompt_tokens == 1
    assert billing.pass_rate_ci == stats.wilson_interval(1, 2)
    assert [(s.value, s.summary.completed) for s in tags.slices] == [("long", 2), ("(none)", 2), ("es", 1)]
    assert [(s.value, s.summary.completed) for s in lang.slices] == [("(none)", 3), ("es", 1)]
    assert aggregate.slowest(topic).value == "(none)"


def test_values_past_the_limit_are_counted_in_no_slice(monkeypatch):
    monkeypatch.setattr(aggregate, "MAX_SLICES", 2)
    agg = Aggregator({}, 0.95, ["metadata.n"])
    agg.slices["metadata.n"].limit = 2
    for n in range(5):
        agg.add(tagged(n, "passed", 1.0, {"n": n % 4}))
    [found] = agg.summary(0.0).breakdowns
    assert [(s.value, s.summary.completed) for s in found.slices] == [("0", 2), ("1", 1)]
    assert found.other == 2


def test_by_default_metadata_fields_of_a_few_values_are_broken_down():
    agg = Aggregator({}, 0.95, None)
    for n in range(40):
        agg.add(tagged(n, "passed" if n % 4 else "failed", 1.0,
                       {"lang": ["en", "es"][n % 2], "source_id": f"s{n}", "constant": "x", "tags": ["a"]}))
    found = {b.field: b for b in agg.summary(0.0).breakdowns}
    assert sorted(found) == ["metadata.lang"]  # too many values, one value (the tags are all the same)
    assert [(s.value, s.summary.pass_rate) for s in found["metadata.lang"].slices] == [("en", 0.5), ("es", 1.0)]
    assert Aggregator({}, 0.95, ()).summary(0.0).breakdowns == ()
