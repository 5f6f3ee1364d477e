"""trajectory: step limits, required and forbidden tools, argument matching."""
from __future__ import annotations

import pytest

from yamleval.builtins.scorers.tools import tool_call_accuracy
from yamleval.builtins.scorers.trajectory import trajectory


def agent_trace() -> list[dict]:
    """What the agent runner records for: calculator, then file_ops, then an answer."""
    return [
        {"type": "model", "step": 1, "text": "", "latency_ms": 3.0, "tokens": {"prompt": 10, "completion": 5},
         "tool_calls": [{"name": "calculator", "arguments": {"expression": "2+3"}}]},
        {"type": "tool", "step": 1, "name": "calculator", "arguments": {"expression": "2+3"}, "result": "5",
         "latency_ms": 0.1},
        {"type": "model", "step": 2, "text": "", "latency_ms": 3.0, "tokens": {"prompt": 20, "completion": 5},
         "tool_calls": [{"name": "file_ops", "arguments": {"operation": "write", "path": "a.txt",
                                                           "content": "5"}}]},
        {"type": "tool", "step": 2, "name": "file_ops", "arguments": {"operation": "write", "path": "a.txt",
                                                                      "content": "5"},
         "error": "disk full", "latency_ms": 0.1},
        {"type": "model", "step": 3, "text": "5", "latency_ms": 3.0, "tokens": {"prompt": 30, "completion": 2},
         "tool_calls": []},
    ]


def test_all_checks_pass():
    score = trajectory(agent_trace(), max_steps=3, must_call=["calculator", "file_ops"], must_not_call=["web_fetch"],
                       arguments={"calculator": {"equals": {"expression": "2+3"}},
                                  "file_ops": {"schema": {"type": "object", "required": ["path"],
                                                          "properties": {"path": {"pattern": r"\.txt$"}}}}})
    assert score.score == 1.0 and score.passed is True
    assert score.reason == "all 6 checks passed"
    assert score.metadata["trajectory"]["tools"] == ["calculator", "file_ops"]


def test_the_score_is_the_fraction_passed_and_the_reason_lists_the_failures():
    score = trajectory(agent_trace(), max_steps=2, must_call=["calculator", "web_search"],
                       must_not_call=["file_ops"])
    assert score.score == pytest.approx(1 / 4) and score.passed is False
    assert score.reason.startswith("3 of 4 checks failed: ")
    assert "3 steps, at most 2 allowed" in score.reason
    assert "web_search was not called (must be)" in score.reason
    assert "file_ops was called 1 time(s) (must not be)" in score.reason
    assert "calculator" not in score.reason


def test_arguments_equals_needs_one_exact_call():
    trace = [{"name": "search", "arguments": {"q": "oslo"}}, {"name": "search", "arguments": {"q": "bergen"}}]
    assert trajectory(trace, arguments={"search": {"equals": {"q": "bergen"}}}).passed is True
    score = trajectory(trace, arguments={"search": {"equals": {"q": "Oslo"}}})
    assert score.passed is False and score.score == 0
    assert '{"q": "Oslo"}' in score.reason and '{"q": "oslo"}' in score.reason
    missing = trajectory(trace, arguments={"book": {"equals": {}}})
    assert "book arguments: book was not called" in missing.reason


def test_arguments_schema_reports_why_no_call_fits():
    score = trajectory(agent_trace(), arguments={"calculator": {"schema": {
        "type": "object", "properties": {"expression": {"type": "integer"}}}}})
    assert score.passed is False
    assert "no call fits the schema" in score.reason and "expression" in score.reason


def test_openai_shaped_calls_and_string_arguments_are_read():
    trace = [{"role": "assistant", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": '{"city": "Oslo"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"}]
    assert trajectory(trace, must_call=["lookup"], arguments={"lookup": {"equals": {"city": "Oslo"}}}).score == 1


def test_steps_are_model_turns_else_tool_calls():
    assert trajectory(agent_trace(), max_steps=3).passed is True
    assert trajectory([{"name": "a"}, {"name": "b"}], max_steps=1).passed is False
    assert trajectory(None, max_steps=0, must_not_call=["a"]).passed is True


def test_tool_call_accuracy_reads_the_agent_trace():
    assert tool_call_accuracy(agent_trace(), expected_tools=["calculator", "file_ops"], strict=True).passed is True


@pytest.mark.parametrize("kwargs, message", [
    ({}, "at least one check"),
    ({"must_call": "calculator"}, "must_call must be a list"),
    ({"arguments": {"calculator": {"equal": {}}}}, "arguments.calculator must be"),
    ({"arguments": {"calculator": {"schema": "object"}}}, "must be a JSON schema"),
    ({"max_steps": -1}, "max_steps must be a whole number"),
])
def test_bad_settings_raise(kwargs, message):
    with pytest.raises(ValueError, match=message):
        trajectory(agent_trace(), **kwargs)


def test_every_trace_shape_tool_call_accuracy_reads_has_its_arguments_read_too():
    """One walker: a call that counts for must_call also counts for arguments."""
    trace = [{"tool": "search", "args": {"q": "tides"}}, {"toolName": "fetch", "arguments": '{"url": "x"}'},
             {"payload": {"toolName": "ignored"}}]
    score = trajectory(trace, must_call=["search", "fetch"],
                       arguments={"search": {"equals": {"q": "tides"}}, "fetch": {"equals": {"url": "x"}}})
    assert score.passed, score.reason
