"""Item status, isolation of failures, timeouts, callbacks, concurrency (DESIGN §4)."""
from __future__ import annotations

import dataclasses
import json
import math
import sys
import threading
import time

import pytest

import yamleval
import yamleval.engine.executors.local
from yamleval.records.codec import encode_record


def run(write_config, body: str, **options):
    path = write_config(body)
    [experiment] = yamleval.load_experiments(path)
    return yamleval.run_experiment(experiment, **options)


def by_id(result):
    return {r.item.id: r for r in result.items}


BAD_ITEMS = """
    experiments:
      - id: isolation
        timeout: 1
        concurrency: 4
        dataset:
          items:
            - {id: ok-1, input: a, expected: a}
            - {id: raises, input: raise, expected: a}
            - {id: hangs, input: hang, expected: a}
            - {id: junk, input: junk, expected: a}
            - {id: nan, input: nan, expected: a}
            - {id: exits, input: exit, expected: a}
            - {id: ok-2, input: b, expected: b}
        runner: fixture_plugins.behaviours:per_item
        scorers: [exact_match]
"""


def test_a_bad_item_leaves_every_other_result_intact(write_config):
    started = time.perf_counter()
    result = run(write_config, BAD_ITEMS)
    elapsed = time.perf_counter() - started
    items = by_id(result)
    assert [r.item.id for r in result.items] == ["ok-1", "raises", "hangs", "junk", "nan", "exits", "ok-2"]
    assert items["ok-1"].status == "passed" and items["ok-1"].output == "a"
    assert items["ok-2"].status == "passed" and items["ok-2"].output == "b"
    assert items["raises"].error == "runner raised RuntimeError: boom on purpose"
    assert items["hangs"].error == "timed out after 1s (in the runner)"
    assert items["junk"].error.startswith("runner returned a object, which cannot be stored")
    assert items["exits"].error == "runner raised SystemExit: 3"
    for name in ("raises", "hangs", "junk", "exits"):
        assert items[name].status == "error"
        assert items[name].scores == {}, "scorers must not run after a runner error"
    assert items["nan"].status == "failed" and math.isnan(items["nan"].output), "NaN is a number, and not 'a'"
    assert (result.summary.errored, result.summary.failed, result.summary.passed) == (4, 1, 2)
    assert result.passed is False
    assert elapsed < 10, "a hanging item must not hold up the run past its timeout"


def test_runner_error_means_error_and_no_scoring(write_config):
    result = run(write_config, """
        experiments:
          - id: e
            dataset: {items: [{input: raise, expected: x}]}
            runner: fixture_plugins.behaviours:per_item
            scorers: [{uses: fixture_plugins.behaviours:raising_scorer}]
    """)
    [item] = result.items
    assert item.status == "error" and item.scores == {}
    assert result.summary.scorers["raising_scorer"].errored == 0


def test_scorer_error_makes_the_item_error_and_other_scorers_still_run(write_config):
    result = run(write_config, """
        experiments:
          - id: e
            dataset: {items: [{input: a, expected: a}]}
            runner: echo
            scorers:
              - {uses: fixture_plugins.behaviours:raising_scorer, id: broken}
              - exact_match
    """)
    [item] = result.items
    assert item.status == "error"
    assert item.error == "scorer 'broken': ValueError: scorer broke"
    assert item.scores["broken"].status == "error"
    assert item.scores["exact_match"].status == "success" and item.scores["exact_match"].score == 1.0
    assert result.summary.scorers["broken"].errored == 1
    assert result.passed is False


@pytest.mark.parametrize("value, status, error", [
    ("1.5", "error", "returned 1.5; a score must be a number from 0 to 1"),
    ("high", "error", "returned str; return a number from 0 to 1, a bool or yamleval.Score"),
    ("null", "skipped", None),
    ("0.2", "failed", None),
    ("0.9", "passed", None),
])
def test_scorer_return_values(write_config, value, status, error):
    result = run(write_config, """
        experiments:
          - id: e
            dataset: {items: [{input: a}]}
            runner: echo
            scorers: [{uses: fixture_plugins.behaviours:fixed, threshold: 0.5, with: {value: VALUE}}]
    """.replace("VALUE", value))
    [item] = result.items
    assert item.status == status
    assert item.scores["fixed"].error == error


@pytest.mark.parametrize("kind, status, passed, error", [
    ("numpy false", "failed", False, None),
    ("numpy true", "passed", True, None),
    ("numpy float32 0.25", "failed", False, None),
    ("numpy float32 0.75", "passed", True, None),
    ("numpy float32 1.5", "error", None, "returned np.float32(1.5); a score must be a number from 0 to 1"),
    ("Score passed numpy false", "failed", False, None),
    ("Score passed numpy true", "passed", True, None),
    ("Score passed 0", "error", None, "returned passed=0; passed must be True, False or None"),
    ("Score passed 'no'", "error", None, "returned passed='no'; passed must be True, False or None"),
    ("Score score numpy float32 0.25", "failed", False, None),
])
def test_numpy_verdicts_count_as_their_truth_and_other_verdicts_are_errors(write_config, kind, status, passed,
                                                                           error):
    result = run(write_config, """
        experiments:
          - id: e
            dataset: {items: [{input: a}]}
            runner: echo
            scorers: [{uses: fixture_plugins.behaviours:odd_verdict, id: odd, threshold: 0.5, with: {kind: KIND}}]
    """.replace("KIND", json.dumps(kind)))
    [item] = result.items
    assert (item.status, item.scores["odd"].passed, item.scores["odd"].error) == (status, passed, error)
    assert json.loads(encode_record(item))["scores"]["odd"]["passed"] is passed
    if error:
        assert item.error == f"scorer 'odd': {error}"


def test_below_threshold_fails_and_at_threshold_passes(write_config):
    result = run(write_config, """
        experiments:
          - id: e
            dataset:
              items:
                - {id: same, input: abcd, expected: abcd}
                - {id: three-quarters, input: abcd, expected: abcx}
                - {id: half, input: abcd, expected: abxy}
            runner: echo
            scorers: [{uses: levenshtein, threshold: 0.75}]
    """)
    items = by_id(result)
    assert items["same"].status == "passed"
    assert items["three-quarters"].status == "passed", "threshold t passes when score >= t"
    assert items["half"].status == "failed"
    assert items["half"].scores["levenshtein"].passed is False
    summary = result.summary.scorers["levenshtein"]
    assert (summary.passed, summary.failed, summary.pass_rate) == (2, 1, pytest.approx(2 / 3))
    assert result.passed is False, "without criteria, any failed item fails the experiment"


def test_each_items_score_is_its_own_and_cannot_be_changed(write_config):
    result = run(write_config, """
        experiments:
          - id: e
            dataset: {items: [{input: a, expected: a}, {input: b, expected: b}]}
            runner: echo
            scorers: [exact_match]
    """)
    first, second = (r.scores["exact_match"] for r in result.items)
    assert (first.score, first.passed) == (second.score, second.passed) == (1.0, True)
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.reason = "changed for the first item only"
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.items[0].status = "failed"
    assert second.reason is None and first.reason is None
    assert [r.status for r in result.items] == ["passed", "passed"]


def test_the_config_folder_is_importable_while_loading_and_running_only(write_config, tmp_path):
    """A plugin next to the config may import a sibling module when it runs; afterwards
    ``sys.path`` is as it was."""
    (tmp_path / "folder_runner.py").write_text(
        "def run(input):\n    import folder_helper  # imported only when an item runs\n"
        "    return folder_helper.shout(input)\n", encoding="utf-8")
    (tmp_path / "folder_helper.py").write_text("def shout(text):\n    return text.upper()\n", encoding="utf-8")
    before = list(sys.path)
    try:
        result = run(write_config, """
            experiments:
              - id: e
                dataset: {items: [{input: a}]}
                runner: folder_runner:run
        """)
        assert [(r.status, r.output) for r in result.items] == [("passed", "A")]
        assert sys.path == before
    finally:
        sys.modules.pop("folder_runner", None)
        sys.modules.pop("folder_helper", None)


def test_no_scorers_means_passed(write_config):
    result = run(write_config, """
        experiments:
          - id: e
            dataset: {items: [{input: a}, {input: b}]}
            runner: echo
    """)
    assert [r.status for r in result.items] == ["passed", "passed"]
    assert result.summary.mean_score is None and result.summary.pass_rate == 1.0
    assert result.passed is True


def test_own_verdict_negate_and_value(write_config):
    result = run(write_config, """
        experiments:
          - id: e
            dataset: {items: [{id: x, input: hello world, expected: other}]}
            runner: echo
            scorers:
              - {uses: fixture_plugins.behaviours:verdict, id: own}
              - {uses: contains, id: has-hello, value: hello}
              - {uses: contains, id: no-bye, value: bye, negate: true}
              - {uses: levenshtein, id: inverted, value: hello world, negate: true}
    """)
    scores = result.items[0].scores
    assert scores["own"].passed is False and scores["own"].score is None
    assert scores["has-hello"].passed is True and scores["has-hello"].score == 1.0
    assert scores["no-bye"].passed is True and scores["no-bye"].score == 1.0
    assert scores["inverted"].score == 0.0 and scores["inverted"].passed is None
    assert result.items[0].status == "failed"


def test_missing_expected_skips_scorers_that_need_it(write_config):
    result = run(write_config, """
        experiments:
          - id: e
            dataset: {items: [{id: no-expected, input: a}, {id: has, input: a, expected: a}]}
            runner: echo
            scorers: [exact_match, {uses: is_json}]
    """)
    items = by_id(result)
    assert items["no-expected"].scores["exact_match"].status == "skipped"
    assert items["no-expected"].scores["exact_match"].reason == "the item has no expected value"
    assert items["no-expected"].status == "failed"  # is_json still judged "a"
    assert items["has"].scores["exact_match"].passed is True


def test_all_scores_skipped_makes_the_item_skipped(write_config):
    result = run(write_config, """
        experiments:
          - id: e
            dataset: {items: [{input: a}, {input: b, expected: b}]}
            runner: echo
            scorers: [exact_match]
    """)
    assert [r.status for r in result.items] == ["skipped", "passed"]
    s = result.summary
    assert (s.completed, s.passed, s.skipped) == (2, 1, 1)
    assert s.pass_rate == 1.0, "pass rate counts judged items only"


CRITERIA = """
    experiments:
      - id: e
        dataset:
          items:
            - {input: a, expected: a}
            - {input: a, expected: b}
            - {input: c, expected: c}
            - {input: d, expected: d}
        runner: echo
        scorers: [exact_match, {uses: fixture_plugins.behaviours:fixed, id: half, with: {value: 0.5}}]
        pass_criteria:
"""


@pytest.mark.parametrize("criterion, actual, passed", [
    ("{type: mean_score, min: 0.6}", (3 + 2) / 8, True),        # micro mean over all scores
    ("{type: mean_score, min: 0.7}", (3 + 2) / 8, False),
    ("{type: pass_rate, min: 0.75}", 0.75, True),               # item level
    ("{type: pass_rate, min: 0.8}", 0.75, False),
    ("{type: mean_score, scorer: half, min: 0.5}", 0.5, True),
    ("{type: pass_rate, scorer: exact_match, min: 0.76}", 0.75, False),
])
def test_criteria_overall_and_per_scorer(write_config, criterion, actual, passed):
    result = run(write_config, CRITERIA + f"          - {criterion}\n")
    [c] = result.summary.criteria
    assert c.actual == pytest.approx(actual)
    assert c.passed is passed
    assert result.passed is passed, "with criteria, failed items alone do not fail the experiment"


def test_warn_criteria_are_reported_never_fatal(write_config):
    result = run(write_config, CRITERIA + """
          - {type: pass_rate, min: 0.5}
          - {type: pass_rate, min: 0.99, severity: warn, label: stretch goal}
    """)
    hard, warn = result.summary.criteria
    assert hard.passed and not warn.passed and warn.label == "stretch goal"
    assert result.passed is True


def test_an_errored_item_fails_the_experiment_even_when_criteria_pass(write_config):
    result = run(write_config, """
        experiments:
          - id: e
            dataset: {items: [{input: a}, {input: raise}, {input: b}, {input: c}]}
            runner: fixture_plugins.behaviours:per_item
            pass_criteria: [{type: pass_rate, min: 0.5}]
    """)
    assert result.summary.criteria[0].passed is True
    assert result.passed is False


def test_mean_score_criterion_with_no_scores_fails(write_config):
    result = run(write_config, """
        experiments:
          - id: e
            dataset: {items: [{input: a}]}
            runner: echo
            pass_criteria: [{type: mean_score, min: 0.1}]
    """)
    assert result.summary.criteria[0].actual is None
    assert result.passed is False


def test_runner_result_usage_metadata_and_trace(write_config):
    result = run(write_config, """
        experiments:
          - id: e
            dataset: {items: [{input: 1}, {input: 2}]}
            runner: fixture_plugins.behaviours:with_usage
    """)
    item = result.items[0]
    assert item.output == "1" and item.metadata == {"seen": True} and item.trace == [{"tool": "x"}]
    assert result.summary.tokens.total_tokens == 10


def test_dict_output_with_an_output_key_is_not_unwrapped(write_config):
    result = run(write_config, """
        experiments:
          - id: e
            dataset: {items: [{input: {output: inner, other: 1}}]}
            runner: echo
    """)
    assert result.items[0].output == {"output": "inner", "other": 1}


def test_async_and_class_runners(write_config):
    result = run(write_config, """
        experiments:
          - id: e
            dataset: {items: [{input: a}, {input: b}]}
            runner: fixture_plugins.behaviours:async_upper
    """)
    assert [r.output for r in result.items] == ["A", "B"]
    result = run(write_config, """
        experiments:
          - id: f
            dataset: {items: [{input: a}]}
            runner: {uses: fixture_plugins.behaviours:Prefixer, with: {prefix: ">> "}}
    """)
    assert result.items[0].output == ">> a"


def test_templates_in_with_are_rendered_per_item_and_data_is_not(write_config):
    result = run(write_config, """
        experiments:
          - id: e
            vars: {greeting: Hi}
            dataset:
              items:
                - {input: "{{ 7 * 7 }}", expected: Bob}
            runner:
              uses: echo
              with: {output: "{{ vars.greeting }} {{ expected }}, you said {{ input }}"}
    """)
    assert result.items[0].output == "Hi Bob, you said {{ 7 * 7 }}"


def test_callbacks_see_every_item_and_their_errors_are_not_fatal(write_config):
    seen, progress = [], []

    def on_item(result):
        seen.append(result.item.id)
        raise RuntimeError("callback bug")

    def on_progress(completed, total):
        progress.append((completed, total))

    result = run(write_config, """
        experiments:
          - id: e
            dataset: {items: [{id: a, input: 1}, {id: b, input: 2}, {id: c, input: 3}]}
            runner: echo
    """, on_item=on_item, on_progress=on_progress)
    assert sorted(seen) == ["a", "b", "c"]
    assert sorted(progress) == [(1, 3), (2, 3), (3, 3)]
    assert result.summary.completed == 3 and result.passed
    assert result.warnings and "on_item callback raised RuntimeError: callback bug" in result.warnings[0]


def test_concurrency_bounds_items_in_flight(write_config):
    result = run(write_config, """
        experiments:
          - id: e
            concurrency: 5
            dataset: {items: [%s]}
            runner: {uses: fixture_plugins.behaviours:sleeper, with: {seconds: 0.2}}
    """ % ", ".join(f"{{input: {i}}}" for i in range(20)))
    assert result.summary.completed == 20
    # 20 items x 0.2 s on 5 workers: about 0.8 s; sequential would be 4 s, unbounded 0.2 s
    assert 0.75 <= result.summary.duration_ms / 1000 < 3.0


def test_slow_items_spread_over_every_worker(write_config):
    """Items that wait (on a model, say) run on all ``concurrency`` workers at once."""
    slow = run(write_config, """
        experiments:
          - id: e
            concurrency: 8
            dataset: {items: [%s]}
            runner: {uses: fixture_plugins.behaviours:which_thread, with: {seconds: 0.1}}
    """ % ", ".join(f"{{input: {i}}}" for i in range(32)))
    assert len({r.output for r in slow.items}) == 8
    assert slow.summary.duration_ms / 1000 < 1.6, "32 items of 0.1 s on 8 workers: about 0.4 s; one worker: 3.2 s"


def test_a_run_whose_every_call_hangs_ends_with_every_item_an_error(write_config):
    """A runner that never returns cannot hang the run: each item is given up at its timeout,
    its seat goes to the next item, and the run ends in about items x timeout / concurrency."""
    result = run(write_config, """
        experiments:
          - id: e
            timeout: 0.2
            concurrency: 4
            dataset: {items: [%s]}
            runner: fixture_plugins.behaviours:forever
    """ % ", ".join(f"{{input: {i}}}" for i in range(100)))
    assert result.summary.completed == 100 and result.summary.errored == 100
    assert {r.error for r in result.items} == {"timed out after 0.2s (in the runner)"}
    assert result.summary.duration_ms / 1000 < 100 * 0.2 / 4 * 3, "about 5 s: the items' timeouts, four at a time"


def test_a_hang_among_instant_items_loses_none_of_the_others(write_config):
    """A worker stuck in a timed-out item is replaced; every other item still runs, in order."""
    inputs = ["hang" if i in (700, 1500) else f"x{i}" for i in range(2000)]
    result = run(write_config, """
        experiments:
          - id: e
            timeout: 0.5
            concurrency: 2
            dataset: {items: [%s]}
            runner: fixture_plugins.behaviours:per_item
    """ % ", ".join(f"{{id: i{i}, input: {text}}}" for i, text in enumerate(inputs)))
    assert [r.item.id for r in result.items] == [f"i{i}" for i in range(2000)]
    errors = {r.item.id: r.error for r in result.items if r.status == "error"}
    assert errors == {"i700": "timed out after 0.5s (in the runner)", "i1500": "timed out after 0.5s (in the runner)"}
    assert result.summary.passed == 1998


def test_stop_event_finishes_running_items_and_starts_no_more(write_config):
    stop = threading.Event()
    path = write_config("""
        experiments:
          - id: e
            concurrency: 2
            dataset: {items: [%s]}
            runner: {uses: fixture_plugins.behaviours:sleeper, with: {seconds: 0.2}}
    """ % ", ".join(f"{{input: {i}}}" for i in range(50)))
    [experiment] = yamleval.load_experiments(path)
    timer = threading.Timer(0.3, stop.set)
    timer.start()
    result = yamleval.run_experiment(experiment, stop=stop)
    timer.join()
    assert result.interrupted and not result.passed
    assert 2 <= result.summary.completed <= 8
    assert all(r.status == "passed" for r in result.items), "running items finish normally"


def test_limit_reads_lazily_from_an_endless_source(write_config):
    from fixture_plugins import behaviours

    result = run(write_config, """
        experiments:
          - id: e
            dataset: {uses: fixture_plugins.behaviours:countdown, limit: 5}
            runner: echo
            scorers: [exact_match]
    """)
    assert result.summary.completed == 5
    assert behaviours.countdown.pulled == 5, "no item is read past the limit"


def test_a_dataset_failure_mid_run_keeps_what_finished(write_config):
    result = run(write_config, """
        experiments:
          - id: e
            dataset: {uses: fixture_plugins.behaviours:broken_dataset}
            runner: echo
    """)
    assert result.summary.completed == 1
    assert result.aborted and "source went away" in result.aborted
    assert result.passed is False


def test_judge_tokens_and_costs_are_summed_apart_from_the_runners(write_config):
    result = run(write_config, """
        experiments:
          - id: e
            dataset: {items: [{input: a}, {input: b}, {input: c}]}
            runner: fixture_plugins.behaviours:priced
            scorers: [{uses: fixture_plugins.behaviours:judged, id: judge}]
    """)
    s = result.summary
    assert (s.tokens.prompt_tokens, s.tokens.completion_tokens, s.tokens.cost) == (30, 6, 1.5)
    assert (s.judge_tokens.prompt_tokens, s.judge_tokens.completion_tokens, s.judge_tokens.cost) == (15, 3, 0.75)
    assert result.items[0].scores["judge"].usage.cost == 0.25


def test_a_template_of_one_name_renders_as_jinja_would(write_config):
    """``{{ input }}`` is rendered without Jinja; the text is what Jinja gives (str of the value),
    and a name that is not there is Jinja's error on that item."""
    from yamleval.plugins.templating import compile_value

    for template in ("{{ input }}", "{{input}}", "{{  input\t}}"):
        render = compile_value({"q": template, "n": [template]})
        for value in ("text", 3, 2.5, None, True, {"a": [1]}, "{{ not rendered }}"):
            jinja = __import__("yamleval.plugins.templating", fromlist=["_jinja"])._jinja(template)
            assert render({"input": value}) == {"q": jinja({"input": value}), "n": [jinja({"input": value})]}
    with pytest.raises(Exception, match="'missing' is undefined"):
        compile_value("{{ missing }}")({"input": "x"})


def test_an_http_service_that_never_answers_cannot_hang_the_run(write_config):
    """The http runner against a server that accepts connections and never replies: each
    item is an error at the experiment's timeout, and the run ends."""
    import socket

    listener = socket.create_server(("127.0.0.1", 0), backlog=128)
    held = []
    done = threading.Event()

    def accept():
        listener.settimeout(0.05)
        while not done.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        result = run(write_config, """
            experiments:
              - id: e
                timeout: 0.2
                concurrency: 8
                dataset: {items: [%s]}
                runner: {uses: http, with: {url: "http://127.0.0.1:%d/chat", timeout: 60, retries: 0}}
        """ % (", ".join(f"{{input: {i}}}" for i in range(100)), listener.getsockname()[1]))
    finally:
        done.set()
        thread.join()
        for connection in held:
            connection.close()
        listener.close()
    assert result.summary.completed == 100 and result.summary.errored == 100
    assert {r.error for r in result.items} == {"timed out after 0.2s (in the runner)"}


def test_every_item_past_its_timeout_is_an_error_whatever_the_load(write_config):
    """An item that ends after its timeout, before the watchdog has looked, is still timed out."""
    result = run(write_config, """
        experiments:
          - id: e
            timeout: 0.001
            concurrency: 1000
            dataset: {items: [%s]}
            runner: {uses: fixture_plugins.behaviours:sleeper, with: {seconds: 0.05}}
    """ % ", ".join(f"{{input: {i}}}" for i in range(300)))
    assert result.summary.completed == 300
    assert result.summary.passed == 0 and result.summary.errored == 300
    assert {r.error for r in result.items} == {"timed out after 0.001s (in the runner)"}


@pytest.mark.parametrize("concurrency", [1, 4])
def test_a_recording_that_fails_stops_the_run_without_a_hang_and_keeps_the_failure(concurrency):
    """``record`` raising (as when the state a run shares on Ray is gone): every finished result is
    still offered to it, no new item starts, and the failure is kept for the run to report."""
    from yamleval.records.errors import YamlevalError

    executor = yamleval.engine.executors.local.LocalExecutor(concurrency, timeout=None)
    offered = []

    def record(result):
        offered.append(result)
        raise YamlevalError("gone")

    done = threading.Event()
    worker = threading.Thread(target=lambda: (executor.run(iter(range(100)), lambda item, slot: item, record,
                                                           lambda item, why, ms: item), done.set()), daemon=True)
    worker.start()
    assert done.wait(60), "the run hung"
    assert str(executor.failure) == "gone"
    assert 1 <= len(offered) <= 1 + 2 * concurrency  # it stopped taking items at the first failure


def test_the_engine_imports_no_executor_and_the_network_knows_neither():
    """The executor is chosen above the engine (``engine.run_experiment(placement, ...)``), and the
    run's network, below both, imports neither: no import circle between them."""
    import ast
    from pathlib import Path

    package = Path(yamleval.__file__).parent

    def imported(paths) -> set[str]:
        names = set()
        for path in paths:
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and node.module:
                    names |= {node.module, *(f"{node.module}.{alias.name}" for alias in node.names)}
                elif isinstance(node, ast.Import):
                    names |= {alias.name for alias in node.names}
        return names

    engine_own = (package / "engine").glob("*.py")  # its executors (engine/executors/) are chosen above it
    assert not {n for n in imported(engine_own) if n.startswith("yamleval.engine.executors")}
    calls = list((package / "calls").rglob("*.py"))
    assert calls and not {n for n in imported(calls) if n.startswith("yamleval.engine")}
