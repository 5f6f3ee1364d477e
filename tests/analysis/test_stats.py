"""Intervals and tests against scipy and statsmodels, to 1e-9."""
from __future__ import annotations

import random

import pytest
from scipy import stats as scipy_stats
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.proportion import proportion_confint

from yamleval.analysis import stats

CLOSE = dict(rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("n, successes", [(1, 0), (1, 1), (10, 0), (10, 3), (10, 10),
                                          (1000, 0), (1000, 1), (1000, 500), (1000, 999), (1000, 1000)])
@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_wilson_interval_is_statsmodels(n, successes, confidence):
    low, high = proportion_confint(successes, n, alpha=1 - confidence, method="wilson")
    assert stats.wilson_interval(successes, n, confidence) == (pytest.approx(max(low, 0.0), **CLOSE),
                                                               pytest.approx(min(high, 1.0), **CLOSE))


def test_wilson_interval_of_no_items_is_none():
    assert stats.wilson_interval(0, 0) is None


@pytest.mark.parametrize("df", [1, 2, 3, 9, 29, 99, 100, 101, 999, 99_999, 10**7])
@pytest.mark.parametrize("confidence", [0.5, 0.9, 0.95, 0.99, 0.99999])
def test_t_critical_is_scipys_quantile(df, confidence):
    assert stats.t_critical(confidence, df) == pytest.approx(scipy_stats.t.ppf((1 + confidence) / 2, df), **CLOSE)


@pytest.mark.parametrize("n", [2, 3, 10, 1000, 100_000])
def test_mean_interval_of_item_means_is_scipys_t_interval(n):
    draw = random.Random(n)
    means = [draw.random() for _ in range(n)]
    low, high = scipy_stats.t.interval(0.95, n - 1, loc=sum(means) / n, scale=scipy_stats.sem(means))
    assert stats.mean_interval(means, 0.95) == (pytest.approx(low, **CLOSE), pytest.approx(high, **CLOSE))


def test_a_mean_of_fewer_than_two_items_has_no_interval():
    assert stats.mean_interval([], 0.95) is None
    assert stats.mean_interval([0.5], 0.95) is None
    assert stats.mean_interval([0.5, 0.5], 0.95) == (0.5, 0.5)


@pytest.mark.parametrize("worse, better", [(0, 0), (1, 0), (0, 1), (7, 7), (500, 500), (3, 10), (10, 3), (0, 20),
                                           (480, 520), (400, 600), (0, 1000), (1000, 0)])
def test_mcnemar_exact_p_value_is_statsmodels_and_scipys(worse, better):
    p = stats.mcnemar_p_value(worse, better)
    assert p == pytest.approx(mcnemar([[0, worse], [better, 0]], exact=True).pvalue, **CLOSE)
    if worse + better:
        assert p == pytest.approx(scipy_stats.binomtest(worse, worse + better).pvalue, **CLOSE)


def test_mcnemar_of_a_hundred_thousand_discordant_pairs():
    assert stats.mcnemar_p_value(49_500, 50_500) == pytest.approx(
        scipy_stats.binomtest(49_500, 100_000).pvalue, rel=1e-9)


def test_paired_difference_of_many_pairs_is_scipys_paired_t_interval():
    draw = random.Random(7)
    base = [draw.random() for _ in range(1000)]
    candidate = [min(1.0, b + draw.gauss(0.02, 0.1)) for b in base]
    found = stats.paired_difference([c - b for b, c in zip(base, candidate)], 0.95)
    expected = scipy_stats.ttest_rel(candidate, base).confidence_interval(0.95)
    assert found.method == "t" and found.pairs == 1000
    assert found.mean == pytest.approx(sum(candidate) / 1000 - sum(base) / 1000, **CLOSE)
    assert found.interval == (pytest.approx(expected.low, **CLOSE), pytest.approx(expected.high, **CLOSE))


def test_paired_bootstrap_of_few_pairs_is_seeded_and_near_the_t_interval():
    draw = random.Random(3)
    differences = [draw.gauss(-0.05, 0.2) for _ in range(400)]
    found = stats.paired_difference(differences, 0.95)
    assert found.method == "bootstrap"
    assert stats.paired_difference(differences, 0.95) == found  # the same seed, the same resamples
    assert stats.paired_difference(differences, 0.95, seed=1) != found
    low, high = stats.mean_interval(differences, 0.95)
    assert found.interval[0] == pytest.approx(low, abs=0.2 * (high - low))
    assert found.interval[1] == pytest.approx(high, abs=0.2 * (high - low))


def test_paired_difference_without_variation_or_pairs():
    assert stats.paired_difference([0.0] * 50) == stats.Difference(50, 0.0, (0.0, 0.0), "bootstrap")
    assert stats.paired_difference([0.25]) == stats.Difference(1, 0.25, None, None)
    assert stats.paired_difference([]) == stats.Difference(0, None, None, None)
