"""tool_call_accuracy (VoltAgent tool-call-accuracy.spec.ts, spec §10.3 and §11.8)."""
from __future__ import annotations

import pytest

import yamleval
from yamleval.builtins.scorers.tools import tool_call_accuracy


def calls(*names):
    return [{"name": name, "arguments": {}} for name in names]


def test_lenient_single_tool_present_among_two_calls():
    score = tool_call_accuracy(calls("searchTool", "weatherTool"), expected_tool="weatherTool")
    assert score.score == 1 and score.passed is True
    assert score.metadata["tool_call_accuracy"]["correct_tool_called"] is True
    assert score.reason == 'Expected tool "weatherTool" was called. Actual tools: ["searchTool", "weatherTool"]'


def test_strict_single_tool_with_an_extra_call_is_zero():
    score = tool_call_accuracy(calls("weatherTool", "searchTool"), expected_tool="weatherTool", strict=True)
    assert score.score == 0 and score.passed is False
    assert "not as the only call" in score.reason
    assert tool_call_accuracy(calls("weatherTool"), expected_tool="weatherTool", strict=True).score == 1


def test_strict_order_needs_the_exact_sequence():
    order = ["search", "filter", "book"]
    assert tool_call_accuracy(calls(*order), expected_tools=order, strict=True).score == 1
    assert tool_call_accuracy(calls(*order, "email"), expected_tools=order, strict=True).score == 0


def test_lenient_order_allows_interleaved_tools_but_not_a_swap():
    score = tool_call_accuracy(calls("search", "log", "filter", "log", "book"), expected_tools=["search", "filter",
                                                                                                 "book"])
    assert score.score == 1 and score.metadata["tool_call_accuracy"]["correct_order_called"] is True
    assert tool_call_accuracy(calls("filter", "search"), expected_tools=["search", "filter"]).score == 0


def test_unordered_expected_tools():
    assert tool_call_accuracy(calls("b", "a", "c"), expected_tools=["a", "b"], ordered=False).score == 1
    assert tool_call_accuracy(calls("b", "a", "c"), expected_tools=["a", "b"], ordered=False, strict=True).score == 0
    assert tool_call_accuracy(calls("b", "a"), expected_tools=["a", "b"], ordered=False, strict=True).score == 1


def test_message_with_type_tool_call():
    trace = [{"type": "user", "content": "weather?"}, {"type": "tool-call", "name": "weatherTool"}]
    assert tool_call_accuracy(trace, expected_tool="weatherTool").score == 1


def test_every_accepted_shape():
    trace = [
        "plain",
        {"tool": "a"},
        {"name": "b", "arguments": {}},
        {"type": "function", "function": {"name": "c", "arguments": "{}"}},
        {"toolName": "d"},
        {"payload": {"toolName": "e"}},
        {"type": "tool_searchProducts"},
        {"type": "tool-f"},
        {"role": "assistant", "content": None, "tool_calls": [{"function": {"name": "g"}}]},
        {"role": "tool", "name": "g", "content": "result"},
        {"role": "assistant", "content": {"parts": [{"type": "tool_call", "toolName": "h"}]}},
    ]
    score = tool_call_accuracy(trace, expected_tool="a")
    assert score.metadata["tool_call_accuracy"]["actual_tools"] == ["plain", "a", "b", "c", "d", "e", "searchProducts",
                                                                    "f", "g", "h"]


def test_dict_trace_with_tool_calls():
    assert tool_call_accuracy({"toolCalls": [{"type": "tool_searchProducts"}]},
                              expected_tool="searchProducts").score == 1
    assert tool_call_accuracy({"messages": [{"type": "tool_call", "name": "x"}]}, expected_tool="x").score == 1


def test_stream_events_are_not_calls():
    trace = [{"type": "tool_input_start", "name": "x"}, {"type": "tool_output_end", "name": "x"},
             {"type": "tool_call_delta", "name": "x"}]
    score = tool_call_accuracy(trace, expected_tool="x")
    assert score.score == 0 and score.metadata["tool_call_accuracy"]["actual_tools"] == []
    assert score.reason == 'No tool calls were made; expected "x".'


def test_no_trace_is_zero_not_skipped():
    score = tool_call_accuracy(None, expected_tools=["a"])
    assert score.score == 0 and score.passed is False and not score.skipped


def test_names_are_trimmed():
    assert tool_call_accuracy(calls("weatherTool"), expected_tool="  weatherTool ").score == 1


@pytest.mark.parametrize("kwargs", [{}, {"expected_tool": "  "}, {"expected_tools": []}])
def test_no_expectation_is_an_error(kwargs):
    with pytest.raises(ValueError, match="requires expected_tool"):
        tool_call_accuracy(calls("a"), **kwargs)


def test_end_to_end_from_yaml(write_config):
    path = write_config("""
        experiments:
          - id: tools
            dataset: {items: [{id: w, input: weather}, {id: o, input: openai}, {id: n, input: none}]}
            runner: scorers.tool_runner_plugin:run
            scorers:
              - {uses: "yamleval.builtins.scorers.tools:tool_call_accuracy", id: weather, with: {expected_tool: weatherTool}}
              - uses: "yamleval.builtins.scorers.tools:tool_call_accuracy"
                id: order
                threshold: 1
                with: {expected_tools: [lookupCity, weatherTool], strict: true}
    """)
    [experiment] = yamleval.load_experiments(path)
    result = yamleval.run_experiment(experiment)
    items = {r.item.id: r for r in result.items}
    assert items["w"].status == "passed"
    assert items["w"].scores["weather"].score == 1 and items["w"].scores["order"].score == 1
    assert items["w"].trace[1]["name"] == "weatherTool"
    assert items["o"].status == "failed"
    assert items["o"].scores["weather"].passed is True and items["o"].scores["order"].passed is False
    assert items["n"].scores["weather"].reason == 'No tool calls were made; expected "weatherTool".'
    assert items["n"].status == "failed"
