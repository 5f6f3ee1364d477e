"""The trajectory the reports show: the steps and tool calls its scorers count, each call beside its result."""
from __future__ import annotations

import re

import pytest

from records.test_trace import AGENT, EVENTS, OPENAI
from yamleval.reporting.trajectory import ShownCall, read_trajectory
from yamleval.builtins.scorers.tools import tool_call_accuracy
from yamleval.builtins.scorers.trajectory import trajectory

TOOLS_ONLY = [{"type": "tool", "name": "lookup", "arguments": {"q": "x"}, "result": "found"},
              {"type": "tool", "name": "fetch", "error": "timed out"}]
NAMES = ["search", {"tool": "fetch", "args": {"url": "x"}}, 7]
DICT = {"toolCalls": [{"toolName": "search", "args": {"q": "x"}}]}
HELD_BY_A_MESSAGE = [{"role": "user", "content": "hi", "tool_calls": [{"name": "a"}, {"name": "b"}]}]


@pytest.mark.parametrize("trace", [AGENT, OPENAI, EVENTS, TOOLS_ONLY, NAMES, DICT, HELD_BY_A_MESSAGE])
def test_steps_and_calls_are_counted_as_the_scorers_count_them(trace):
    shown = read_trajectory(trace)
    steps = int(re.search(r"(\d+) steps, at most", trajectory(trace, max_steps=0).reason).group(1))
    calls = tool_call_accuracy(trace, expected_tool="none").metadata["tool_call_accuracy"]["actual_tools"]
    assert (shown.step_count, shown.call_count) == (steps, len(calls))
    assert [s.number for s in shown.steps if s.number is not None] == list(range(1, steps + 1))
    assert [c.name for s in shown.steps for c in s.calls if s.number is not None or s.label == "tool call"
            ] == calls


def test_each_call_is_shown_with_the_result_that_answered_it():
    [first, second] = read_trajectory(AGENT).steps
    assert first.calls == (ShownCall("calculator", {"expression": "2+3"}, "5", None, 0.5),)
    assert (second.number, second.text, second.calls) == (2, "5", ())
    user, asked, answered = read_trajectory(OPENAI).steps
    assert (user.number, user.label, user.text) == (None, "user", "Weather in Oslo?")
    assert asked.calls == (ShownCall("lookup", {"city": "Oslo"}, "sunny"),)  # paired by the call's id
    assert answered.text == "Sunny."
    lookup, fetch = read_trajectory(TOOLS_ONLY).steps
    assert lookup.calls == (ShownCall("lookup", {"q": "x"}, "found"),)
    assert fetch.calls == (ShownCall("fetch", error="timed out"),)


def test_a_result_no_call_asked_for_stands_unnumbered():
    trace = [{"type": "model", "tool_calls": []}, {"type": "tool", "name": "stray", "result": "?"}]
    turn, stray = read_trajectory(trace).steps
    assert (turn.number, stray.number, stray.calls) == (1, None, (ShownCall("stray", result="?"),))
    assert read_trajectory(None) is None and read_trajectory([]) is None
