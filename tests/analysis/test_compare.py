"""Paired verdicts of two runs: what counts as a change, and what chance alone does."""
from __future__ import annotations

import math
import random

import pytest

from yamleval.analysis import compare
from yamleval.records.types import (ExperimentResult, Item, ItemList, ItemResult, LatencySummary, RunInfo, ScorerSummary,
                            ScoreResult, Summary, Usage)

RUN = RunInfo("run", "completed", "2024-01-01T00:00:00Z")


def _experiment(scores: dict[str, float], threshold: float | None = 0.5) -> ExperimentResult:
    """One experiment of items with these ids and scores of one scorer, passing at ``threshold``."""
    items = []
    for index, (item_id, score) in enumerate(scores.items()):
        passed = None if threshold is None else score >= threshold
        items.append(ItemResult(Item(item_id, index, "q"), "failed" if passed is False else "passed",
                                scores={"s": ScoreResult("s", "success", score, passed, threshold)}))
    scorer = ScorerSummary("s", "s", threshold, None, None, None, None, 0, 0, 0, 0)
    summary = Summary(len(items), len(items), 0, 0, 0, 0, None, None, 0.0, LatencySummary(), Usage(), {"s": scorer})
    return ExperimentResult("e", None, True, summary, ItemList(items), "", "")


def _compare(base: dict[str, float], candidate: dict[str, float], threshold: float | None = 0.5,
             **options) -> compare.Comparison:
    return compare.compare(RUN, [_experiment(base, threshold)], RUN, [_experiment(candidate, threshold)], **options)


def test_runs_of_the_same_random_runner_show_no_significant_change_in_95_of_100_trials():
    """Each item passes with probability 1/2 in both runs: any difference is chance."""
    def run(seed: int) -> dict[str, float]:
        draw = random.Random(seed)
        return {f"i{n}": float(draw.random() < 0.5) for n in range(100)}

    unchanged = 0
    for trial in range(100):
        found = _compare(run(2 * trial), run(2 * trial + 1))
        verdicts = {found.experiments[0].change.verdict, found.experiments[0].scorer_changes["s"].verdict}
        unchanged += verdicts == {compare.NO_CHANGE} and found.gate_failure() is None
    assert unchanged >= 95


def test_twenty_more_failures_in_two_hundred_items_is_a_significant_regression():
    base = {f"i{n}": float(n >= 10) for n in range(200)}
    candidate = {f"i{n}": float(n >= 30) for n in range(200)}
    found = _compare(base, candidate)
    change = found.experiments[0].change
    assert (change.pairs, change.worse, change.better, change.verdict) == (200, 20, 0, compare.REGRESSED)
    assert change.p_value == 2 * 0.5 ** 20
    assert change.difference.mean == -0.1 and change.difference.interval[1] < 0
    assert found.significant_regressions == ["e", "e › s"]
    assert found.gate_failure() == "significant regression (alpha 0.05) in e, e › s"
    assert _compare(candidate, base).experiments[0].change.verdict == compare.IMPROVED
    # the same change under a margin of 11 points does not count; at 10 points it does
    assert _compare(base, candidate, margin=0.11).gate_failure() is None
    assert _compare(base, candidate, margin=0.1).significant_regressions == ["e", "e › s"]
    # a stricter alpha than the p-value leaves it to chance
    assert _compare(base, candidate, alpha=1e-6).experiments[0].change.verdict == compare.NO_CHANGE


def test_one_item_worse_fails_only_the_strict_gate():
    base = {f"i{n}": 1.0 for n in range(50)}
    found = _compare(base, {**base, "i7": 0.0})
    assert found.experiments[0].change.verdict == compare.NO_CHANGE and found.gate_failure() is None
    assert found.gate_failure(strict=True) == "1 item got worse"


def test_a_scorer_without_verdicts_is_judged_by_its_mean_scores_interval():
    draw = random.Random(5)
    base = {f"i{n}": draw.uniform(0.5, 1.0) for n in range(60)}
    lower = {item_id: score - 0.1 for item_id, score in base.items()}
    found = _compare(base, lower, threshold=None)
    change = found.experiments[0].scorer_changes["s"]
    assert (change.pairs, change.p_value) == (0, None)
    assert change.difference.mean == pytest.approx(-0.1) and change.difference.method == "bootstrap"
    assert change.verdict == compare.REGRESSED and found.gate_failure() is not None
    same = _compare(base, base, threshold=None).experiments[0].scorer_changes["s"]
    assert (same.difference.interval, same.verdict) == ((0.0, 0.0), compare.NO_CHANGE)


def test_items_in_one_run_only_are_listed_never_paired_and_pairs_meet_in_any_order():
    base = {"a": 1.0, "b": 1.0, "c": 0.0, "gone": 1.0}
    candidate = {"new": 0.0, "c": 1.0, "b": 0.0, "a": 1.0}  # the dataset reordered
    e = _compare(base, candidate).experiments[0]
    assert (e.added, e.removed) == (("new",), ("gone",))
    assert (e.change.pairs, e.change.worse, e.change.better) == (3, 1, 1)
    assert [(f.item_id, f.before, f.after) for f in e.flips] == [("c", "failed", "passed"), ("b", "passed", "failed")]


def test_a_regression_gate_over_runs_that_share_no_experiment_fails():
    renamed = _experiment({"a": 1.0})
    renamed = ExperimentResult("e-renamed", None, True, renamed.summary, renamed.items, "", "")
    found = compare.compare(RUN, [_experiment({"a": 1.0})], RUN, [renamed])
    message = ("the runs share no experiment (base: e; candidate: e-renamed): nothing was compared,"
               " which is not a pass")
    assert found.gate_failure() == message and found.gate_failure(strict=True) == message


def test_the_strict_gate_fails_when_the_candidate_lacks_an_experiment_of_the_base():
    other = _experiment({"a": 1.0})
    other = ExperimentResult("f", None, True, other.summary, other.items, "", "")
    found = compare.compare(RUN, [_experiment({"a": 1.0}), other], RUN, [_experiment({"a": 1.0})])
    assert found.gate_failure() is None
    assert found.gate_failure(strict=True) == "the candidate lacks the base run's f: those were not compared"


def _compared_over_the_command_line(write_config, tmp_path, inputs: str, output: str, fmt: str):
    from conftest import run_cli

    def config(template: str) -> str:
        return f"""
            store: r.db
            experiments:
              - id: qa
                dataset: {{items: [{inputs}]}}
                runner: {{uses: echo, with: {{output: "{template}"}}}}
                scorers: [exact_match]
        """
    write_config(config("{{ input }}"))
    assert run_cli("run", "-q", "--tag", "base", cwd=tmp_path).returncode in (0, 1)
    write_config(config(output))
    assert run_cli("run", "-q", "--tag", "candidate", cwd=tmp_path).returncode in (0, 1)
    done = run_cli("compare", "base", "candidate", "--format", fmt, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return done.stdout, tmp_path


def test_the_headline_gives_both_rates_and_how_many_items_would_show_a_difference_this_size(write_config, tmp_path):
    # 2 of 20 pass, then 6 of 20: 4 fail → pass, McNemar p = 0.125, not significant
    inputs = ", ".join(["{input: a, expected: a}"] * 2 + ["{input: c, expected: a}"] * 4 + ["{input: b, expected: a}"] * 14)
    text, _ = _compared_over_the_command_line(write_config, tmp_path, inputs,
                                              "{{ 'a' if input in ('a', 'c') else input }}", "text")
    assert ("pass rate 10.0% → 30.0% (+20.0 pp): better, not proven with 20 items (about 60 items in each run would"
            " show a difference of this size, 80% of the time)") in text
    from conftest import run_cli
    from statsmodels.stats.power import NormalIndPower
    from statsmodels.stats.proportion import proportion_effectsize

    reference = NormalIndPower().solve_power(effect_size=proportion_effectsize(0.3, 0.1), alpha=0.05, power=0.8)
    assert math.ceil(reference) == 60
    page = run_cli("compare", "base", "candidate", "--format", "html", cwd=tmp_path).stdout
    assert ("<strong>qa</strong>: pass rate 10.0% → 30.0% (+20.0 pp): better, not proven with 20 items (about 60"
            " items in each run") in page


@pytest.mark.parametrize("base, candidate", [(0.1, 0.3), (0.5, 0.55), (0.9, 0.8), (0.0, 0.2), (0.7, 1.0), (0.25, 0.3)])
@pytest.mark.parametrize("alpha, power", [(0.05, 0.8), (0.01, 0.9)])
def test_items_for_power_is_statsmodels_two_proportion_sample_size(base, candidate, alpha, power):
    from statsmodels.stats.power import NormalIndPower
    from statsmodels.stats.proportion import proportion_effectsize

    from yamleval.analysis.stats import items_for_power

    reference = NormalIndPower().solve_power(effect_size=proportion_effectsize(candidate, base), alpha=alpha,
                                             power=power, ratio=1, alternative="two-sided")
    assert items_for_power(base, candidate, alpha, power) == math.ceil(reference)
    assert items_for_power(0.4, 0.4) is None


def test_a_significant_change_reads_better_beyond_chance(write_config, tmp_path):
    inputs = ", ".join(["{input: c, expected: a}"] * 12 + ["{input: b, expected: a}"] * 8)
    text, _ = _compared_over_the_command_line(write_config, tmp_path, inputs, "{{ 'a' if input == 'c' else input }}",
                                              "text")
    assert "pass rate 0.0% → 60.0% (+60.0 pp): better, beyond chance over 20 items" in text


def test_counts_of_one_read_in_the_singular():
    from yamleval.reporting import comparison

    text = comparison.to_text(_compare({"i": 1.0}, {"i": 0.0}))
    assert "run (completed) → run (completed): 1 regression\n" in text
    assert "no significant change: 1 pair, 1 pass → fail, 0 fail → pass" in text
    assert "1 regressions" not in text and "1 pairs" not in text
