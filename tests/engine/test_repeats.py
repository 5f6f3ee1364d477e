"""Repeats: each item run N times, reduced to one verdict; items whose repeats disagree are flaky."""
from __future__ import annotations

import collections
import json
import threading

import pytest

import yamleval
from conftest import run_cli
from yamleval.records.codec import encode_record, item_from_record

# CoinFlip answers right for these inputs this many times in 5 calls (fixed by its hash)
RIGHT_OF_5 = {"q3": 4, "q4": 2, "q6": 3, "q13": 1}


def coin_config(reduce: str = "mean", threshold: str = "", criteria: str = "", repeats: int = 5) -> str:
    items = ", ".join(f"{{id: {q}, input: {q}, expected: right}}" for q in RIGHT_OF_5)
    return f"""
        experiments:
          - id: coin
            repeats: {repeats}
            reduce: {reduce}
            concurrency: 3
            dataset: {{items: [{items}]}}
            runner: fixture_plugins.behaviours:CoinFlip
            scorers: [{{uses: exact_match{threshold}}}]
            {criteria}
    """


def run(write_config, body: str):
    [experiment] = yamleval.load_experiments(write_config(body))
    return yamleval.run_experiment(experiment)


def statuses(result) -> dict[str, str]:
    return {r.item.id: r.status for r in result.items}


def test_each_item_runs_n_times_and_keeps_every_repeat(write_config):
    result = run(write_config, coin_config())
    for item in result.items:
        assert len(item.repeats) == 5
        passed = [r for r in item.repeats if r.status == "passed"]
        assert len(passed) == RIGHT_OF_5[item.item.id]
        assert all(r.output == "right" and r.scores["exact_match"].score == 1.0 for r in passed)
        assert all(r.output == "wrong" and r.status == "failed" for r in item.repeats if r not in passed)
        assert item.scores["exact_match"].score == pytest.approx(RIGHT_OF_5[item.item.id] / 5)
        assert item.flaky is True  # every one of them was right some times and wrong others
    assert result.summary.flaky == 4
    assert result.summary.completed == 4, "an item counts once, however many times it ran"


@pytest.mark.parametrize("reduce, threshold, expected", [
    ("mean", "", {"q3": "passed", "q4": "failed", "q6": "passed", "q13": "failed"}),  # half the verdicts
    ("mean", ", threshold: 0.7", {"q3": "passed", "q4": "failed", "q6": "failed", "q13": "failed"}),
    ("majority", "", {"q3": "passed", "q4": "failed", "q6": "passed", "q13": "failed"}),
    ("all", "", {"q3": "failed", "q4": "failed", "q6": "failed", "q13": "failed"}),
    ("any", "", {"q3": "passed", "q4": "passed", "q6": "passed", "q13": "passed"}),
])
def test_reduce_turns_the_repeats_into_the_items_verdict(write_config, reduce, threshold, expected):
    assert statuses(run(write_config, coin_config(reduce, threshold))) == expected


def test_a_repeat_that_errors_makes_the_item_an_error(write_config):
    result = run(write_config, """
        experiments:
          - id: e
            repeats: 3
            dataset: {items: [{input: raise, expected: a}, {input: a, expected: a}]}
            runner: fixture_plugins.behaviours:per_item
            scorers: [exact_match]
    """)
    broken, fine = result.items
    assert broken.status == "error" and broken.error == "runner raised RuntimeError: boom on purpose"
    assert [r.status for r in broken.repeats] == ["error"] * 3 and broken.flaky is False
    assert fine.status == "passed" and fine.flaky is False and len(fine.repeats) == 3


def test_an_item_whose_first_repeat_failed_to_run_keeps_the_scores_of_the_others(write_config):
    [item] = run(write_config, """
        experiments:
          - id: e
            repeats: 3
            concurrency: 1
            timeout: 1
            dataset: {items: [{input: a, expected: a}]}
            runner: fixture_plugins.behaviours:FailsFirst
            scorers: [exact_match]
    """).items
    assert [r.status for r in item.repeats] == ["error", "passed", "passed"]
    assert item.status == "error" and item.error == "runner raised RuntimeError: the first call fails"
    assert item.scores["exact_match"].score == 1.0 and item.scores["exact_match"].reason == "2 of 2 repeats passed"


def test_repeats_and_reduce_are_inherited_from_defaults(write_config):
    [experiment] = yamleval.load_experiments(write_config("""
        defaults: {repeats: 3, reduce: any}
        experiments:
          - id: e
            dataset: {items: [{input: a}]}
            runner: echo
    """))
    assert (experiment.repeats, experiment.reduce) == (3, "any")


@pytest.mark.parametrize("most, passed", [(1.0, True), (0.5, False)])
def test_flaky_rate_gates_on_the_share_of_flaky_items(write_config, most, passed):
    result = run(write_config, coin_config(criteria=f"pass_criteria: [{{type: flaky_rate, max: {most}}}]",
                                           reduce="any"))
    [criterion] = result.summary.criteria
    assert (criterion.actual, criterion.max, criterion.passed) == (1.0, most, passed)
    assert result.passed is passed


def test_one_repeat_is_an_ordinary_run_and_its_records_do_not_change(write_config):
    result = run(write_config, coin_config(repeats=1))
    for item in result.items:
        record = json.loads(encode_record(item))
        assert item.repeats == () and item.flaky is False
        assert "repeats" not in record and "flaky" not in record
    assert result.summary.flaky == 0


def test_a_record_keeps_the_repeats_and_reads_back_the_same(write_config):
    for item in run(write_config, coin_config()).items:
        text = encode_record(item)
        back = item_from_record(json.loads(text))
        assert back == item
        assert encode_record(back) == text


def test_a_resumed_run_keeps_every_finished_repeat_and_runs_only_the_missing_ones(write_config, tmp_path):
    from yamleval.api import run as run_project
    from yamleval.lifecycle.run import RunWatcher

    log = tmp_path / "calls.log"
    config = write_config(f"""
        experiments:
          - id: e
            repeats: 3
            concurrency: 2
            dataset: {{items: [{", ".join(f"{{id: q-{i}, input: a, expected: a}}" for i in range(10))}]}}
            runner: {{uses: fixture_plugins.behaviours:counting, with: {{log: "{log}", seconds: 0.01}}}}
            scorers: [exact_match]
    """)
    stop = threading.Event()
    first: list[str] = []

    class StopAfterOne(RunWatcher):
        def item_finished(self, experiment_id, result):
            first.append(result.item.id)
            stop.set()

    store, options = str(tmp_path / "results.db"), {"report_dir": str(tmp_path / "out"), "formats": ()}
    stopped = run_project(config, store=store, stop=stop, watcher=StopAfterOne(), **options)
    assert stopped.interrupted and 1 <= len(first) < 10
    resumed = run_project(config, store=store, resume="latest", **options)
    [result] = resumed.results
    assert result.summary.completed == 10
    assert all(len(item.repeats) == 3 for item in result.items)
    calls = collections.Counter(line.split()[1] for line in log.read_text().splitlines())
    assert all(calls[f"q-{i}"] == 3 for i in range(10)), "a finished repeat is never run again"


def test_acceptance_a_coin_flip_runner_repeated_is_flaky_gated_and_reported(write_config, tmp_path):
    write_config(coin_config(reduce="majority", criteria="pass_criteria: [{type: flaky_rate, max: 0.5}]"))
    done = run_cli("run", "--report-dir", "out", "--store", "results.db", cwd=tmp_path)
    assert done.returncode == 1, done.stderr  # all four items are flaky: more than half
    report = json.loads((tmp_path / "out" / "results.json").read_text())
    [experiment] = report["experiments"]
    assert experiment["summary"]["flaky"] == 4
    assert "4 total · 2 passed · 2 failed · 0 errors · 4 flaky" in done.stdout
    assert "  flaky       4 items (their repeats disagree)\n    ✓ q3 passed: 4 of 5 repeats passed\n" in done.stdout
    assert "    ✗ q13 failed: 1 of 5 repeats passed\n" in done.stdout
    assert all(item["flaky"] and len(item["repeats"]) == 5 for item in experiment["items"])
    junit = (tmp_path / "out" / "junit.xml").read_text()
    assert junit.count("<flakyFailure ") == 1 + 2, "q3 failed once, q6 twice; q4 and q13 did not pass"
    assert "Flaky: 4 of 4 items (their repeats disagree)." in (tmp_path / "out" / "summary.md").read_text()
    assert "flaky_rate &lt;= 0.5" in junit and "flaky_rate 1.000 &gt; max 0.5" in junit
    once = run_cli("run", "--repeats", "1", "--report-dir", "once", "--store", "results.db", cwd=tmp_path)
    assert once.returncode == 0, once.stderr  # one answer each: nothing can be flaky
    assert json.loads((tmp_path / "once" / "results.json").read_text())["experiments"][0]["summary"]["flaky"] == 0


def test_scoring_again_scores_each_repeat_and_reduces_them_anew(write_config):
    from yamleval.engine import experiment as engine
    from yamleval.engine import plan

    first = run(write_config, coin_config(reduce="all"))
    [again] = yamleval.load_experiments(write_config(coin_config(reduce="any"), name="again.yaml"))
    rescored = list(engine.rescored(plan.prepare(again), first.items))
    assert [r.status for r in first.items] == ["failed"] * 4
    assert [r.status for r in rescored] == ["passed"] * 4
    assert [[x.output for x in r.repeats] for r in rescored] == [[x.output for x in r.repeats] for r in first.items]
