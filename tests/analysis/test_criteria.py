"""Pass criteria beyond mean_score and pass_rate: error_rate, items, latency, tokens, cost, and
the lower bound of an interval (DESIGN §4), each passing and failing at its boundary."""
from __future__ import annotations

import json
import re

import pytest

import yamleval
from conftest import run_cli
from yamleval.analysis import criteria
from yamleval.analysis import stats
from yamleval.analysis.aggregate import Aggregator
from yamleval.config.model import CriterionSpec
from yamleval.reporting.text import criterion_message, criterion_name, criterion_outcome
from yamleval.records.types import Item, ItemResult


def run(write_config, runner: str, criterion: str, scorers: str = "[exact_match]"):
    [experiment] = yamleval.load_experiments(write_config(f"""
        experiments:
          - id: e
            dataset:
              items:
                - {{input: a, expected: a}}
                - {{input: raise, expected: a}}
                - {{input: c, expected: c}}
                - {{input: d, expected: d}}
            runner: {runner}
            scorers: {scorers}
            pass_criteria: [{criterion}]
    """))
    return yamleval.run_experiment(experiment)


@pytest.mark.parametrize("most, passed", [(0.25, True), (0.24, False)])
def test_error_rate_judges_errored_items_in_place_of_the_no_errors_rule(write_config, most, passed):
    result = run(write_config, "fixture_plugins.behaviours:per_item", f"{{type: error_rate, max: {most}}}")
    [c] = result.summary.criteria
    assert result.summary.errored == 1 and c.actual == 0.25, "errored of completed items"
    assert (c.passed, result.passed) == (passed, passed)


@pytest.mark.parametrize("fewest, passed", [(4, True), (5, False)])
def test_items_needs_that_many_completed_items(write_config, fewest, passed):
    result = run(write_config, "echo", f"{{type: items, min: {fewest}}}")
    [c] = result.summary.criteria
    assert c.actual == 4 and c.passed is passed and result.passed is passed


# per item: the runner's 12 tokens and $0.5, the judge's 6 tokens and $0.25, for 4 items
@pytest.mark.parametrize("criterion, actual, passed", [
    ("{type: tokens, max: 72}", 72, True),
    ("{type: tokens, max: 71}", 72, False),
    ("{type: tokens, max: 18, per_item: true}", 18, True),
    ("{type: tokens, max: 17.9, per_item: true}", 18, False),
    ("{type: cost, max: 3}", 3.0, True),
    ("{type: cost, max: 2.99}", 3.0, False),
    ("{type: cost, max: 0.75, per_item: true}", 0.75, True),
    ("{type: cost, max: 0.74, per_item: true}", 0.75, False),
])
def test_tokens_and_cost_count_the_runner_and_the_judges(write_config, criterion, actual, passed):
    result = run(write_config, "fixture_plugins.behaviours:priced", criterion,
                 scorers="[{uses: fixture_plugins.behaviours:judged}]")
    [c] = result.summary.criteria
    assert c.actual == pytest.approx(actual) and c.passed is passed and result.passed is passed


def test_a_cost_without_any_price_fails_and_says_why(write_config):
    result = run(write_config, "fixture_plugins.behaviours:with_usage", "{type: cost, max: 1, per_item: true}")
    [c] = result.summary.criteria
    assert c.actual is None and not c.passed and not result.passed
    assert criterion_message(c) == "cost per item: no value (no call had a known price), needs at most $1"
    assert criterion_outcome(c) == "no value: no call had a known price"  # the cell of every report's table


def test_the_terminal_summary_and_report_say_why_a_cost_criterion_has_no_value(write_config, tmp_path):
    write_config("""
        experiments:
          - id: e
            dataset: {items: [{input: a, expected: a}]}
            runner: fixture_plugins.behaviours:with_usage
            scorers: [exact_match]
            pass_criteria: [{type: cost, max: 1}]
    """)
    done = run_cli("run", "--report-dir", "out", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "    ✗ cost ≤ $1: no value: no call had a known price\n" in done.stdout
    assert "no value: no call had a known price" in (tmp_path / "out" / "summary.md").read_text()


def latency_summary():
    aggregator = Aggregator({})
    for ms in range(1, 101):
        aggregator.add(ItemResult(Item(id=f"i{ms}", index=ms, input=ms), "passed", latency_ms=float(ms)))
    return aggregator.summary(0.0)


@pytest.mark.parametrize("percentile, figure", [(50, 50.5), (90, 90.1), (95, 95.05), (99, 99.01), ("max", 100.0)])
def test_latency_holds_the_percentile_it_names_to_max(percentile, figure):
    summary = latency_summary()
    found = criteria.actual_value(CriterionSpec("latency", None, max=0, percentile=percentile), summary)
    at, under = (criteria.evaluate([CriterionSpec("latency", None, max=most, percentile=percentile)], summary)[0]
                 for most in (found, found - 0.01))
    assert at.actual == pytest.approx(figure) and at.passed
    assert not under.passed
    assert criterion_name(at) == f"latency {'max' if percentile == 'max' else f'p{percentile}'} <= {figure:g} ms"


def test_pass_rate_with_bound_lower_holds_the_interval_lower_end_to_min(write_config):
    low = stats.wilson_interval(3, 4, 0.95)[0]  # 3 of 4 items pass
    point = run(write_config, "echo", "{type: pass_rate, min: 0.75}")
    assert point.summary.criteria[0].passed, "bound: point is the pass rate itself"
    for least, passed in ((low, True), (low + 0.001, False), (0.75, False)):
        result = run(write_config, "echo", f"{{type: pass_rate, min: {least!r}, bound: lower}}")
        [c] = result.summary.criteria
        assert c.actual == pytest.approx(low) and c.passed is passed
    assert criterion_name(c) == "pass_rate (lower 95% bound) >= 0.75"


def test_mean_score_of_a_scorer_with_bound_lower_uses_the_scorer_interval(write_config):
    result = run(write_config, "echo", "{type: mean_score, scorer: exact_match, min: 0.1, bound: lower}")
    [c] = result.summary.criteria
    assert c.actual == result.summary.scorers["exact_match"].mean_ci[0] < result.summary.scorers["exact_match"].mean
    assert c.passed is (c.actual >= 0.1)
    assert criterion_message(c).startswith("mean_score of exact_match (lower 95% bound) ")


def test_every_report_names_the_new_criteria(write_config, tmp_path):
    write_config("""
        experiments:
          - id: gates
            dataset: {items: [{input: a, expected: a}, {input: b, expected: b}, {input: c, expected: x}]}
            runner: fixture_plugins.behaviours:priced
            scorers: [exact_match]
            pass_criteria:
              - {type: latency, percentile: 95, max: 60000}
              - {type: pass_rate, min: 0.8, bound: lower, severity: warn}
              - {type: tokens, max: 10, per_item: true}
              - {type: cost, max: 5}
              - {type: items, min: 3}
              - {type: error_rate, max: 0}
    """)
    done = run_cli("run", "--report-dir", "out", cwd=tmp_path)
    assert done.returncode == 1, done.stderr  # 12 tokens per item
    names = ["latency p95 <= 60000 ms", "pass_rate (lower 95% bound) >= 0.8", "tokens per item <= 10",
             "cost <= $5", "items >= 3", "error_rate <= 0"]
    out = tmp_path / "out"
    report = json.loads((out / "results.json").read_text())
    listed = report["experiments"][0]["summary"]["criteria"]
    assert [c["name"] for c in listed] == names
    assert (listed[0]["percentile"], listed[1]["bound"], listed[1]["confidence"], listed[2]["per_item"]) == (
        95, "lower", 0.95, True)
    assert "    ✗ tokens per item ≤ 10: 12.0\n" in done.stdout and "    ✓ cost ≤ $5: $1.50\n" in done.stdout
    assert "    ✗ pass_rate (lower 95% bound) ≥ 0.8: 0.208 (warn)\n" in done.stdout
    markdown = (out / "summary.md").read_text()
    assert "| ❌ | tokens per item &lt;= 10 | 12.0 | ≤ 10 | error |" in markdown
    assert r"| ✅ | cost &lt;= \$5 | \$1.50 | ≤ \$5 | error |" in markdown, "no $ starts a formula"
    assert "| ✅ | items &gt;= 3 | 3 | 3 | error |" in markdown
    junit = (out / "junit.xml").read_text()
    for name in names:
        assert f'name="criterion: {name.replace(">", "&gt;").replace("<", "&lt;")}"' in junit, name
    assert "tokens per item 12.0 &gt; max 10" in junit
    html = " ".join(re.sub(r"<[^>]+>", " ", (out / "report.html").read_text()).split())
    assert "latency p95" in html and "≤ 60000 ms" in html and "pass_rate (lower 95% bound)" in html
    assert "cost $1.50 ≤ $5 error met" in html


def test_validate_refuses_an_items_criterion_the_dataset_can_never_meet(write_config, tmp_path):
    write_config("""
        experiments:
          - id: e
            dataset: {items: [{input: a, expected: a}, {input: b, expected: b}]}
            runner: echo
            scorers: [exact_match]
            pass_criteria:
              - {type: items, min: 2}
              - {type: items, min: 50}
    """)
    done = run_cli("validate", cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.splitlines()[0] == ("evals.yaml:9:28: $.experiments[0].pass_criteria[1].min: error: items min 50"
                                           " can never hold: the dataset has 2 items (lower min, or add items to the"
                                           " dataset)")
    assert run_cli("run", "-q", cwd=tmp_path).returncode == 1, "a run counts it as any criterion: it fails"
