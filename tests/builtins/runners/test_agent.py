"""The ``agent`` runner end to end: YAML, the engine, the scripted server on 127.0.0.1 as the model."""
from __future__ import annotations

import json
import os
import tempfile
import textwrap
from typing import Any

import pytest

import yamleval
from servers.fixtures import openai_server  # noqa: F401
from servers.openai_server import Reply, completion, text_reply

RUNNER = "yamleval.builtins.runners.agent:agent"
TOOLS = "runners.agent_test_tools"


@pytest.fixture
def sandboxes(monkeypatch):
    """The sandbox folders the runner made, in order."""
    made: list[str] = []
    original = tempfile.mkdtemp

    def mkdtemp(*args: Any, **kwargs: Any) -> str:
        path = original(*args, **kwargs)
        if kwargs.get("prefix") == "yamleval-item-":
            made.append(path)
        return path

    monkeypatch.setattr(tempfile, "mkdtemp", mkdtemp)
    return made


def calls_reply(*calls: tuple[str, str, dict], prompt_tokens: int = 10, completion_tokens: int = 5) -> Reply:
    """An answer calling tools: ``(id, name, arguments)`` each."""
    message = {"role": "assistant", "content": None, "tool_calls": [
        {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        for call_id, name, args in calls]}
    return Reply(body=completion(message, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                                 finish_reason="tool_calls"))


def _config(tmp_path, base_url: str, runner_with: str, items: str, scorers: str = "[exact_match]") -> str:
    text = f"""\
        version: 1
        models:
          m: {{base_url: "{base_url}", model: tiny}}
        experiments:
          - id: agent
            dataset:
              items: {items}
            runner:
              uses: {RUNNER}
              with: {runner_with}
            scorers: {scorers}
        """
    path = tmp_path / "evals.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return str(path)


def _run(path: str):
    [experiment] = yamleval.load_experiments(path)
    return yamleval.run_experiment(experiment, concurrency=1)


def _tool_messages(body: dict) -> list[dict]:
    return [m for m in body["messages"] if m["role"] == "tool"]


def test_two_tool_calls_then_an_answer(tmp_path, openai_server, sandboxes):  # noqa: F811
    openai_server.push(calls_reply(("call_add", "add", {"a": 2, "b": 3}), prompt_tokens=10, completion_tokens=5),
                       calls_reply(("call_mul", "multiply", {"a": 5, "b": 4}), prompt_tokens=20,
                                   completion_tokens=6),
                       text_reply("20", prompt_tokens=30, completion_tokens=7))
    path = _config(tmp_path, openai_server.base_url,
                   f'{{model: m, instructions: "Use the tools.", tools: [{{uses: "{TOOLS}:add"}}, '
                   f'{{uses: "{TOOLS}:multiply"}}]}}',
                   '[{id: a, input: "(2+3)*4?", expected: "20"}]',
                   scorers='[exact_match, {uses: tool_call_accuracy, with: {expected_tools: [add, multiply], '
                           'strict: true}}]')
    result = _run(path)

    [item] = result.items
    assert item.status == "passed", item.error
    assert item.output == "20"
    assert item.scores["tool_call_accuracy"].passed is True
    assert (item.usage.prompt_tokens, item.usage.completion_tokens) == (60, 18)
    assert item.metadata["steps"] == 3
    model_steps = [s for s in item.trace if s["type"] == "model"]
    tool_steps = [s for s in item.trace if s["type"] == "tool"]
    assert [s["step"] for s in model_steps] == [1, 2, 3]
    assert model_steps[0]["tool_calls"] == [{"name": "add", "arguments": {"a": 2, "b": 3}}]
    assert model_steps[2]["text"] == "20" and model_steps[2]["tool_calls"] == []
    assert [s["tokens"] for s in model_steps] == [{"prompt": 10, "completion": 5}, {"prompt": 20, "completion": 6},
                                                  {"prompt": 30, "completion": 7}]
    assert [(s["step"], s["name"], s["arguments"], s["result"]) for s in tool_steps] == [
        (1, "add", {"a": 2, "b": 3}, "5"), (2, "multiply", {"a": 5, "b": 4}, "20")]
    assert all(s["latency_ms"] >= 0 for s in item.trace)

    first, second, third = openai_server.bodies
    assert first["messages"] == [{"role": "system", "content": "Use the tools."},
                                 {"role": "user", "content": "(2+3)*4?"}]
    assert [t["function"]["name"] for t in first["tools"]] == ["add", "multiply"]
    assert "parallel_tool_calls" not in first
    assistant = second["messages"][2]
    assert assistant["role"] == "assistant" and assistant["tool_calls"][0]["id"] == "call_add"
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == {"a": 2, "b": 3}
    assert _tool_messages(second) == [{"role": "tool", "tool_call_id": "call_add", "content": "5"}]
    assert _tool_messages(third) == [{"role": "tool", "tool_call_id": "call_add", "content": "5"},
                                     {"role": "tool", "tool_call_id": "call_mul", "content": "20"}]
    assert len(sandboxes) == 1 and not os.path.exists(sandboxes[0])


def test_several_calls_in_one_turn_keep_their_ids(tmp_path, openai_server):  # noqa: F811
    openai_server.push(calls_reply(("c1", "add", {"a": 1, "b": 1}), ("c2", "add", {"a": 2, "b": 2})),
                       text_reply("2 and 4"))
    path = _config(tmp_path, openai_server.base_url,
                   f'{{model: m, parallel_tool_calls: false, tools: [{{uses: "{TOOLS}:add"}}]}}',
                   '[{id: a, input: "add", expected: "2 and 4"}]')
    result = _run(path)
    assert result.items[0].status == "passed", result.items[0].error
    first, second = openai_server.bodies
    assert first["parallel_tool_calls"] is False
    assert _tool_messages(second) == [{"role": "tool", "tool_call_id": "c1", "content": "2"},
                                      {"role": "tool", "tool_call_id": "c2", "content": "4"}]


def test_tool_errors_are_fed_back_and_recorded(tmp_path, openai_server):  # noqa: F811
    openai_server.push(calls_reply(("e1", "explode", {"reason": "disk full"}), ("e2", "teleport", {}),
                                   ("e3", "nap", {"seconds": 2})),
                       text_reply("sorry"))
    path = _config(tmp_path, openai_server.base_url,
                   f'{{model: m, tool_timeout: 0.2, tools: [{{uses: "{TOOLS}:explode"}}, {{uses: "{TOOLS}:nap"}}]}}',
                   '[{id: a, input: "try", expected: "sorry"}]')
    result = _run(path)

    [item] = result.items
    assert item.status == "passed", item.error
    explode, unknown, nap = [s for s in item.trace if s["type"] == "tool"]
    assert "boom: disk full" in explode["error"] and "result" not in explode
    assert "no tool named 'teleport'" in unknown["error"]
    assert "tool timed out" in nap["error"] and nap["latency_ms"] < 1500
    fed_back = {m["tool_call_id"]: m["content"] for m in _tool_messages(openai_server.bodies[1])}
    assert "boom: disk full" in fed_back["e1"]
    assert "teleport" in fed_back["e2"] and "tool timed out" in fed_back["e3"]


def test_max_steps_is_that_items_error_and_the_others_pass(tmp_path, openai_server, sandboxes):  # noqa: F811
    openai_server.push(calls_reply(("s1", "add", {"a": 1, "b": 1})), calls_reply(("s2", "add", {"a": 1, "b": 2})),
                       text_reply("fine"))
    path = _config(tmp_path, openai_server.base_url,
                   f'{{model: m, max_steps: 2, tools: [{{uses: "{TOOLS}:add"}}]}}',
                   '[{id: loops, input: "go on", expected: x}, {id: b, input: "hi", expected: fine}]')
    result = _run(path)

    assert [r.status for r in result.items] == ["error", "passed"]
    assert "agent reached max_steps (2) without a final answer" in result.items[0].error
    assert result.items[1].output == "fine"
    assert len(openai_server.bodies) == 3
    # no history between items: the second starts from its own question only
    assert openai_server.bodies[2]["messages"] == [{"role": "user", "content": "hi"}]
    assert "tools" in openai_server.bodies[2]
    assert len(sandboxes) == 2 and not any(os.path.exists(p) for p in sandboxes)


def test_without_tools_the_request_offers_none(tmp_path, openai_server):  # noqa: F811
    openai_server.push(text_reply("plain"), text_reply("plain"))
    path = _config(tmp_path, openai_server.base_url, '{model: m, prompt: "Q: {{ input }}"}',
                   '[{id: a, input: hi, expected: plain}]')
    assert _run(path).items[0].status == "passed"
    path = _config(tmp_path, openai_server.base_url, '{model: m}', '[{id: a, input: {x: 1}, expected: plain}]')
    assert _run(path).items[0].status == "passed"
    first, second = openai_server.bodies
    assert first["messages"] == [{"role": "user", "content": "Q: hi"}]
    assert second["messages"] == [{"role": "user", "content": '{"x": 1}'}]
    assert "tools" not in first and "tools" not in second


def test_built_in_calculator_then_file_ops(tmp_path, openai_server, sandboxes):  # noqa: F811
    openai_server.push(calls_reply(("k1", "calculator", {"expression": "(2+3)*4"})),
                       calls_reply(("k2", "file_ops", {"action": "write", "path": "answer.txt",
                                                       "content": "20"})),
                       text_reply("20"))
    path = _config(tmp_path, openai_server.base_url,
                   '{model: m, instructions: "Compute, then save.", tools: [calculator, file_ops]}',
                   '[{id: a, input: "(2+3)*4, saved", expected: "20"}]',
                   scorers='[exact_match, {uses: "yamleval.builtins.scorers.trajectory:trajectory", '
                           'with: {must_call: [calculator, file_ops], max_steps: 3}}]')
    result = _run(path)

    [item] = result.items
    assert item.status == "passed", (item.error, item.trace)
    calc, files = [s for s in item.trace if s["type"] == "tool"]
    assert "20" in calc["result"] and "error" not in files, files
    assert (item.usage.prompt_tokens, item.usage.completion_tokens) == (30, 15)
    assert not os.path.exists(sandboxes[0])


def test_a_final_answer_cut_off_by_its_token_limit_is_noted(tmp_path, openai_server, sandboxes):  # noqa: F811
    openai_server.push(text_reply("The answer is twen", finish_reason="length"))
    path = _config(tmp_path, openai_server.base_url, "{model: m}", "[{input: what, expected: twenty}]")
    [item] = _run(path).items
    assert item.notes == ("answer cut off at the server's default max_tokens (none is set)",)
