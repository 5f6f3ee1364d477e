"""Plugins that misbehave: fail to import, return what JSON cannot hold, print, hang, exit.

A plugin that cannot be imported is a config error naming the module and its exception
(exit 2, no traceback). Everything a runner or scorer does per item stays on that item:
the run goes on, every other item is recorded, and ``results.json`` is valid JSON.
tests/engine/test_experiment.py covers the basic raise, hang, junk object, NaN and sys.exit cases;
these are the rest.
"""
from __future__ import annotations

import json
import math
import os
import textwrap
import time

import pytest

import yamleval
from conftest import run_cli
from yamleval.records.errors import ConfigError

pytestmark = pytest.mark.badinput

HOSTILE = '''
import asyncio, sys, threading
from yamleval import RunnerResult, Score


class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("no text for this exception")


def _cycle():
    a = {"name": "loop"}
    a["self"] = a
    return a


OUTPUTS = {
    "set": lambda: {1, 2}, "frozenset": lambda: frozenset("ab"), "bytes": lambda: b"\\xff\\x00",
    "bytearray": lambda: bytearray(b"x"), "inf": lambda: float("inf"), "-inf": lambda: float("-inf"),
    "nan-in-list": lambda: [1.0, float("nan")], "cycle-dict": _cycle, "object": object,
    "tuple-key": lambda: {(1, 2): "x"}, "huge-text": lambda: "x" * 10_000_000,
    "meta-nan": lambda: RunnerResult(output="ok", metadata={"p": float("nan")}),
    "meta-set": lambda: RunnerResult(output="ok", metadata={"s": {1}}),
    "trace-cycle": lambda: RunnerResult(output="ok", trace=[_cycle()]),
    "cost-nan": lambda: RunnerResult(output="ok", usage={"prompt_tokens": 1, "completion_tokens": 1,
                                                         "cost": float("nan")}),
    "tokens-negative": lambda: RunnerResult(output="ok", usage={"prompt_tokens": -5, "completion_tokens": 1}),
}


def runner(input):
    if input in OUTPUTS:
        return OUTPUTS[input]()
    if input == "print":
        print("noise from the plugin on stdout")
        print("noise on stderr", file=sys.stderr)
        return "print"
    if input == "block":
        threading.Event().wait()
    if input == "kbd":
        raise KeyboardInterrupt
    if input == "exit-0":
        sys.exit(0)
    if input == "unprintable":
        raise Unprintable()
    if input == "huge-message":
        raise ValueError("m" * 1_000_000)
    return input


async def async_runner(input):
    if input == "block":
        await asyncio.Event().wait()
    return input


def scorer(output):
    if output == "s-block":
        threading.Event().wait()
    if output == "s-exit":
        sys.exit(5)
    if output == "s-kbd":
        raise KeyboardInterrupt
    if output == "s-unprintable":
        raise Unprintable()
    if output == "s-meta":
        loop = []
        loop.append(loop)
        return Score(score=1.0, reason=b"bytes reason", metadata={"nan": float("nan"), "set": {1}, "loop": loop,
                                                                  "big": 10 ** 5000, "raw": object()})
    returned = {"s-set": {1}, "s-bytes": b"1", "s-nan": float("nan"), "s-inf": float("inf"), "s-text": "0.5",
                "s-list": [1], "s-negative": -0.1}
    return returned.get(output, 1.0)
'''


@pytest.fixture
def project(tmp_path, monkeypatch):
    """Write the hostile plugin and a config over ``items`` into tmp_path; return the config path."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "hostile_plugins.py").write_text(HOSTILE, encoding="utf-8")

    def write(items: list[str], runner: str = "hostile_plugins:runner", timeout: float = 1) -> str:
        rows = ", ".join(f"{{id: {json.dumps(i)}, input: {json.dumps(i)}}}" for i in items + ["ok"])
        (tmp_path / "evals.yaml").write_text(textwrap.dedent(f"""\
            id: hostile
            timeout: {timeout}
            concurrency: 4
            dataset: {{items: [{rows}]}}
            runner: {runner}
            scorers: [hostile_plugins:scorer]
        """), encoding="utf-8")
        return "evals.yaml"
    return write


def run(path: str):
    [experiment] = yamleval.load_experiments(path)
    result = yamleval.run_experiment(experiment)
    items = {r.item.id: r for r in result.items}
    assert items.pop("ok").status == "passed", "the well-behaved item is recorded as usual"
    return items


def _strict_json(text: str):
    def refuse(token):
        raise AssertionError(f"{token} is not JSON")
    return json.loads(text, parse_constant=refuse)


# --- at import: config errors ---------------------------------------------------------------------

IMPORT_FAILURES = {
    "raises": ("x = 1\nraise RuntimeError('broken at import')\n", "raised RuntimeError: broken at import",
               "fix the error at bad_raises.py:2"),
    "syntax": ("def f(:\n    pass\n", "raised SyntaxError: invalid syntax (bad_syntax.py, line 1)",
               "fix the error at bad_syntax.py:1"),
    "exits": ("import sys\nsys.exit(3)\n", "raised SystemExit: 3", "fix the error at bad_exits.py:2"),
    "missing-dependency": ("import not_installed_anywhere\n", "failed: no module named 'not_installed_anywhere'",
                           "imported at bad_missing-dependency.py:1"),
    "unprintable": ("class E(Exception):\n    def __str__(self):\n        raise ValueError\nraise E()\n",
                    "raised E: (its message cannot be shown: str() raised)", None),
}


@pytest.mark.parametrize("case", sorted(IMPORT_FAILURES))
@pytest.mark.parametrize("kind", ["runner", "scorer"])
def test_a_plugin_failing_at_import_is_a_config_error(tmp_path, monkeypatch, case, kind):
    monkeypatch.chdir(tmp_path)
    module = f"bad_{case.replace('-', '_')}"
    source, message, hint = IMPORT_FAILURES[case]
    (tmp_path / f"{module}.py").write_text(source, encoding="utf-8")
    hint = hint and hint.replace(f"bad_{case}", module)
    runner, scorer = (f"{module}:run", "exact_match") if kind == "runner" else ("echo", f"{module}:score")
    (tmp_path / "evals.yaml").write_text(f"id: e\ndataset: {{items: [{{input: a}}]}}\nrunner: {runner}\n"
                                         f"scorers: [{scorer}]\n", encoding="utf-8")
    [experiment] = yamleval.load_experiments("evals.yaml")
    with pytest.raises(ConfigError) as raised:
        yamleval.run_experiment(experiment)
    found = raised.value
    assert found.location.file == "evals.yaml" and found.location.line == (3 if kind == "runner" else 4)
    assert f"'{module}" in found.message and found.message.endswith(message), found.message
    if hint:
        assert found.hint.startswith(hint), found.hint
    done = run_cli("validate", "evals.yaml", cwd=tmp_path, PYTHONPATH=str(tmp_path))
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith(f"evals.yaml:{found.location.line}:"), done.stderr
    assert message in done.stderr


# --- per item: the item reports it, the run goes on ----------------------------------------------

JUNK = ["set", "frozenset", "bytes", "bytearray", "cycle-dict", "object", "tuple-key"]


def test_outputs_json_cannot_hold_are_item_errors(project):
    items = run(project(JUNK))
    for name in JUNK:
        assert items[name].status == "error", name
        assert items[name].error.startswith("runner returned ") and "cannot be stored" in items[name].error, name
        assert items[name].scores == {}


def test_runner_results_with_unusable_metadata_trace_or_usage_are_item_errors(project):
    cases = ["meta-set", "trace-cycle", "cost-nan", "tokens-negative"]
    items = run(project(cases))
    for name in cases:
        assert items[name].status == "error" and "cannot be stored" in items[name].error, (name, items[name].error)
    assert "usage" in items["cost-nan"].error and "finite" in items["cost-nan"].error


def test_nan_and_infinity_in_outputs_are_kept_and_stored_as_the_datasets_are(project, tmp_path):
    """Like the same numbers read from a dataset: scorers see the number, results.json the string."""
    items = run(project(["inf", "-inf", "nan-in-list", "meta-nan"]))
    assert (items["inf"].output, items["-inf"].output) == (math.inf, -math.inf)
    assert math.isnan(items["nan-in-list"].output[1]) and math.isnan(items["meta-nan"].metadata["p"])
    assert all(item.scores for item in items.values()), "no runner error: the scorer ran on each"
    done = run_cli("run", "-q", "evals.yaml", "--store", "r.db", "--report-dir", "out", cwd=tmp_path)
    assert "Traceback" not in done.stderr, done.stderr
    report = _strict_json((tmp_path / "out" / "results.json").read_text())
    stored = {i["id"]: i for i in report["experiments"][0]["items"]}
    assert (stored["inf"]["output"], stored["-inf"]["output"]) == ("Infinity", "-Infinity")
    assert stored["nan-in-list"]["output"] == [1.0, "NaN"] and stored["meta-nan"]["output_metadata"] == {"p": "NaN"}


def test_a_huge_text_output_is_kept_whole(project):
    items = run(project(["huge-text"]))
    assert items["huge-text"].status == "passed" and len(items["huge-text"].output) == 10_000_000


@pytest.mark.parametrize("value", ["s-set", "s-bytes", "s-nan", "s-inf", "s-text", "s-list", "s-negative"])
def test_a_score_that_is_not_a_number_from_0_to_1_is_the_items_error(project, value):
    items = run(project([value]))
    assert items[value].status == "error" and items[value].output == value
    assert items[value].error.startswith("scorer 'scorer': returned "), items[value].error


def test_score_metadata_json_cannot_hold_is_written_as_valid_json(project):
    from yamleval.records.codec import encode_record

    items = run(project(["s-meta"]))
    record = _strict_json(encode_record(items["s-meta"]))
    score = record["scores"]["scorer"]
    assert (score["score"], score["reason"]) == (1.0, "b'bytes reason'")
    assert score["metadata"] == {"nan": "NaN", "set": "{1}", "loop": ["[circular reference]"],
                                 "big": "[an integer too long to write]", "raw": score["metadata"]["raw"]}
    assert score["metadata"]["raw"].startswith("<object object at ")


@pytest.mark.parametrize("where, cases", [
    ("runner", ["kbd", "exit-0", "unprintable", "huge-message"]),
    ("scorer", ["s-exit", "s-kbd", "s-unprintable"]),
])
def test_exits_interrupts_and_unprintable_exceptions_stay_on_their_item(project, where, cases):
    """A KeyboardInterrupt raised by plugin code is that item's error: a real Ctrl-C is delivered
    to the main thread, never to the worker running a plugin, and stops the run there."""
    items = run(project(cases))
    expected = {"kbd": "runner raised KeyboardInterrupt", "exit-0": "runner raised SystemExit: 0",
                "unprintable": "runner raised Unprintable: (its message cannot be shown: str() raised)",
                "s-exit": "scorer 'scorer': SystemExit: 5", "s-kbd": "scorer 'scorer': KeyboardInterrupt",
                "s-unprintable": "scorer 'scorer': Unprintable: (its message cannot be shown: str() raised)"}
    for name in cases:
        assert items[name].status == "error", name
        if name in expected:
            assert items[name].error == expected[name]
    if "huge-message" in items:
        assert items["huge-message"].error.startswith("runner raised ValueError: mmm")


@pytest.mark.parametrize("runner, cases, phase", [
    ("hostile_plugins:runner", ["block"], "in the runner"),
    ("hostile_plugins:async_runner", ["block"], "in the runner"),
    ("hostile_plugins:runner", ["s-block"], "while scoring"),
])
def test_a_plugin_that_blocks_forever_times_out_and_the_run_goes_on(project, runner, cases, phase):
    started = time.perf_counter()
    items = run(project(cases, runner=runner, timeout=0.5))
    assert time.perf_counter() - started < 5
    for name in cases:
        assert (items[name].status, items[name].error) == ("error", f"timed out after 0.5s ({phase})")


def test_a_hostile_run_from_the_command_line_records_every_item(project, tmp_path):
    cases = JUNK + ["print", "kbd", "exit-0", "unprintable", "block", "s-meta", "s-exit", "s-kbd", "s-nan",
                    "cost-nan"]
    path = project(cases)
    done = run_cli("run", "--store", "r.db", "--report-dir", "out", path, cwd=tmp_path, timeout=60,
                   PYTHONPATH=str(tmp_path))
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert "noise from the plugin on stdout" in done.stdout, "a plugin's own output is passed through"
    results = _strict_json((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    [experiment] = results["experiments"]
    statuses = {item["id"]: item["status"] for item in experiment["items"]}
    assert statuses == {**{name: "error" for name in cases}, "print": "passed", "s-meta": "passed", "ok": "passed"}
    assert experiment["summary"]["total"] == len(cases) + 1
    assert experiment["summary"]["tokens"]["cost"] in (None, 0, 0.0)
    first = run_cli("runs", "--ids", "--store", "r.db", cwd=tmp_path).stdout.split()[0]
    again = run_cli("run", "--store", "r.db", "--report-dir", "again", path, cwd=tmp_path, timeout=60,  # a second
                    PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))  # run: not itself
    assert again.returncode == 1 and "Traceback" not in again.stderr, again.stderr[-2000:]
    done = run_cli("compare", first, "latest", "--store", "r.db", "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    _strict_json(done.stdout)  # machine-readable output loads no plugin: nothing of theirs in it


def test_keyboard_interrupt_at_import_stops_validate_as_ctrl_c_would(tmp_path):
    """Raised while the main thread imports a plugin, it cannot be told from a real Ctrl-C, so it
    is treated as one: exit 130 and a one-line message, no traceback."""
    (tmp_path / "bad_interrupt.py").write_text("raise KeyboardInterrupt\n", encoding="utf-8")
    (tmp_path / "evals.yaml").write_text("id: e\ndataset: {items: [{input: a}]}\nrunner: bad_interrupt:run\n",
                                         encoding="utf-8")
    done = run_cli("validate", "evals.yaml", cwd=tmp_path, PYTHONPATH=str(tmp_path))
    assert (done.returncode, done.stderr.strip()) == (130, "interrupted")


# --- dataset plugins ------------------------------------------------------------------------------

DATASET_PLUGIN = '''
def rows(kind):
    yield {"input": "fine", "expected": "fine"}
    if kind == "cycle":
        loop = {"input": "x"}
        loop["self"] = loop
        yield loop
    elif kind == "tuple-key":
        yield {"input": {(1, 2): 3}}
    elif kind == "huge-int":
        yield {"input": 10 ** 5000}
    elif kind == "exit":
        raise SystemExit(3)
    elif kind == "raise":
        raise ConnectionError("source went away")
    yield {"input": "last", "expected": "last"}
'''


@pytest.mark.parametrize("kind, message", [
    ("cycle", "item 2 from the dataset plugin cannot be read as data: ValueError: Circular reference detected"),
    ("tuple-key", "item 2 from the dataset plugin cannot be read as data: TypeError: keys must be str, int, "
                  "float, bool or None, not tuple"),
    ("huge-int", "item 2 from the dataset plugin cannot be read as data: ValueError: Exceeds the limit"),
    ("exit", "dataset plugin 'hostile_rows:rows' raised SystemExit: 3 after 1 items"),
    ("raise", "dataset plugin 'hostile_rows:rows' raised ConnectionError: source went away after 1 items"),
])
def test_a_dataset_plugin_yielding_what_json_cannot_hold_stops_the_run_at_its_entry(tmp_path, monkeypatch,
                                                                                    kind, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "hostile_rows.py").write_text(DATASET_PLUGIN, encoding="utf-8")
    (tmp_path / "evals.yaml").write_text(f"id: e\ndataset: {{uses: hostile_rows:rows, with: {{kind: {kind}}}}}\n"
                                         "runner: echo\nscorers: [exact_match]\n", encoding="utf-8")
    [experiment] = yamleval.load_experiments("evals.yaml")
    result = yamleval.run_experiment(experiment)
    assert [(r.item.input, r.status) for r in result.items] == [("fine", "passed")], "what was read still ran"
    assert result.aborted.startswith(f"evals.yaml:2:17: $.dataset.uses: error: {message}"), result.aborted
    assert result.passed is False
