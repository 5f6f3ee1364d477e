"""Reading traces: one reader for the scorers and the reports, over every accepted shape."""
from __future__ import annotations

import json

import pytest

from conftest import run_cli
from yamleval.reporting.text import trajectory_lines
from yamleval.builtins.scorers.tools import tool_call_accuracy
from yamleval.builtins.scorers.trajectory import trajectory
from yamleval.records.trace import TraceStep, read_trace, tool_calls
from yamleval.records.types import Usage

AGENT = [  # what the agent runner records: a call, its result, the answer
    {"type": "model", "step": 1, "text": "", "latency_ms": 3.0, "tokens": {"prompt": 10, "completion": 5},
     "tool_calls": [{"name": "calculator", "arguments": {"expression": "2+3"}}]},
    {"type": "tool", "step": 1, "name": "calculator", "arguments": {"expression": "2+3"}, "result": "5",
     "latency_ms": 0.5},
    {"type": "model", "step": 2, "text": "5", "latency_ms": 2.0, "tokens": {"prompt": 20, "completion": 1},
     "tool_calls": []},
]
OPENAI = [  # chat messages, as a runner keeping the conversation hands them over
    {"role": "user", "content": "Weather in Oslo?"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": '{"city": "Oslo"}'}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
    {"role": "assistant", "content": "Sunny."},
]
EVENTS = [  # a stream: events around one call
    {"type": "tool_input_start", "toolName": "search"},
    {"type": "tool_call_delta", "toolName": "search", "delta": '{"q": '},
    {"type": "tool-call", "toolName": "search", "args": {"q": "tides"}},
    {"type": "tool_output_end", "toolName": "search"},
    {"type": "tool-result", "toolName": "search", "output": "high at noon"},
]


def names(trace) -> list[str]:
    return [call.name for call in tool_calls(read_trace(trace))]


def test_the_agent_trace_reads_as_model_turns_and_tool_steps():
    steps = read_trace(AGENT)
    assert [step.kind for step in steps] == ["model", "tool", "model"]
    first, tool, last = steps
    assert first.calls == (TraceStep("call", name="calculator", arguments={"expression": "2+3"},
                                     raw=AGENT[0]["tool_calls"][0]),)
    assert first.tokens == Usage(10, 5) and first.latency_ms == 3.0 and first.raw is AGENT[0]
    assert (tool.name, tool.arguments, tool.output, tool.error) == ("calculator", {"expression": "2+3"}, "5", None)
    assert last.calls == () and last.tokens == Usage(20, 1)


def test_a_tool_step_answers_a_call_and_is_not_counted_again():
    assert names(AGENT) == ["calculator"]
    assert names(OPENAI) == ["lookup"]


def test_openai_messages_decode_json_text_arguments():
    steps = read_trace(OPENAI)
    assert [step.kind for step in steps] == ["message", "model", "tool", "model"]
    [call] = tool_calls(steps)
    assert (call.name, call.arguments) == ("lookup", {"city": "Oslo"})
    assert steps[2].output == "sunny"


def test_stream_events_are_steps_but_never_calls():
    steps = read_trace(EVENTS)
    assert [step.kind for step in steps] == ["event", "event", "call", "event", "tool"]
    assert steps[0].name == "search"
    [call] = tool_calls(steps)
    assert (call.name, call.arguments) == ("search", {"q": "tides"})
    assert names(EVENTS[:2]) == []


@pytest.mark.parametrize("trace, expected", [
    ({"tool_calls": [{"name": "a"}, {"name": "b"}]}, ["a", "b"]),
    ({"toolCalls": [], "steps": [{"type": "model", "tool_calls": [{"name": "c"}]}]}, ["c"]),
    ({"messages": [{"role": "assistant", "toolInvocations": [{"toolName": "d"}]}]}, ["d"]),
    ({"name": "e", "arguments": {}}, ["e"]),  # a dict without a list of steps is one step
])
def test_a_dict_trace_is_read_from_its_first_list_of_steps(trace, expected):
    assert names(trace) == expected


def test_nested_calls_are_found_in_parts_and_content():
    trace = [{"role": "assistant", "content": {"parts": [{"type": "tool_call", "toolName": "h"}]}},
             {"role": "assistant", "content": [{"type": "text", "text": "hi"}, {"type": "tool_use", "name": "i"}]}]
    assert names(trace) == ["h", "i"]


@pytest.mark.parametrize("trace", [None, "a text", 42, []])
def test_what_is_not_a_list_or_dict_has_no_steps(trace):
    assert read_trace(trace) == [] and tool_calls(read_trace(trace)) == []


def test_strings_are_calls_and_odd_entries_are_messages():
    steps = read_trace(["  search ", "", 7, {"type": "text", "text": "thinking"}])
    assert [(step.kind, step.name) for step in steps] == [("call", "search"), ("message", None), ("message", None),
                                                         ("message", None)]


def test_a_trace_of_tool_steps_only_has_them_as_its_calls():
    """The report shows a tool step; must_call counts it (it used to count nothing)."""
    trace = [{"type": "tool", "name": "lookup", "arguments": {"q": "x"}, "result": "found"}]
    assert names(trace) == ["lookup"]
    assert trajectory(trace, must_call=["lookup"], arguments={"lookup": {"equals": {"q": "x"}}}).passed is True
    assert tool_call_accuracy(trace, expected_tool="lookup").passed is True
    assert trajectory_lines(trace, 30) == ["trajectory: 1 step, 1 tool call", "  step 1",
                                           '    tool call lookup {"q": "x"} → found']


def test_the_report_names_the_calls_the_scorers_count():
    """OpenAI-shaped calls were counted by the scorers but shown as "calls ?" or without a name."""
    assert trajectory_lines(OPENAI, 30) == ["trajectory: 2 steps, 1 tool call", "  user: Weather in Oslo?",
                                            "  step 1 · assistant", '    tool call lookup {"city": "Oslo"} → sunny',
                                            "  step 2 · assistant: Sunny."]
    function = [{"id": "c1", "type": "function", "function": {"name": "weatherTool", "arguments": "{}"}}]
    assert trajectory_lines(function, 30)[2] == "    tool call weatherTool {}"
    assert trajectory(OPENAI, must_call=["lookup"]).passed is True


def test_a_dict_trace_is_shown_in_the_report_as_the_scorers_read_it():
    trace = {"toolCalls": [{"toolName": "search", "args": {"q": "x"}}]}
    assert trajectory_lines(trace, 30)[1:] == ["  step 1", '    tool call search {"q": "x"}']
    assert tool_call_accuracy(trace, expected_tool="search").passed is True


def test_odd_token_and_latency_values_are_left_out_not_a_broken_report():
    trace = [{"type": "model", "tokens": {"prompt": "10", "completion": 2}, "latency_ms": True}]
    [step] = read_trace(trace)
    assert step.tokens == Usage(0, 2) and step.latency_ms is None
    assert trajectory_lines(trace, 30)[1] == "  step 1 · model · 2 tokens"


def test_model_turns_are_the_steps_of_max_steps():
    assert trajectory(AGENT, max_steps=2).passed is True
    assert trajectory(OPENAI, max_steps=1).reason == "1 of 1 checks failed: 2 steps, at most 1 allowed"
    assert trajectory(["a", "b", "c"], max_steps=2).passed is False  # no model turns: the calls are the steps


RUNNER = '''
from yamleval import RunnerResult

TRACE = %s


def run(input):
    return RunnerResult(output="Sunny.", trace=TRACE)
'''


def test_the_stored_trace_stays_as_the_runner_returned_it(write_config, tmp_path):
    (tmp_path / "chat_runner.py").write_text(RUNNER % repr(OPENAI), encoding="utf-8")
    write_config("""
        reports: {formats: [json, junit]}
        experiments:
          - id: chat
            dataset: {items: [{id: oslo, input: Weather in Oslo?, expected: Rainy.}]}
            runner: chat_runner:run
            scorers: [exact_match, {uses: trajectory, with: {must_call: [lookup]}}]
    """)
    done = run_cli("run", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    [item] = json.loads((tmp_path / "reports" / "results.json").read_text())["experiments"][0]["items"]
    assert item["trace"] == OPENAI
    assert item["scores"]["trajectory"]["passed"] is True
    assert '  step 1 · assistant\n    tool call lookup {"city": "Oslo"} → sunny' in (
        tmp_path / "reports" / "junit.xml").read_text()
