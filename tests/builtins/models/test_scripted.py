"""The scripted model: rules from a file answer chat and structured calls, offline."""
from __future__ import annotations

import pytest

import yamleval
from yamleval.builtins.models.scripted import ScriptedClient

RULES = [
    {"when": {"role": "user", "content": "2\\+2"}, "reply": {"tool_calls": [{"name": "calculator",
                                                                          "arguments": {"expression": "2+2"}}]}},
    {"when": {"role": "tool", "content": "^4$"}, "reply": {"content": "It is 4."}},
    {"when": {"content": "grade"}, "reply": {"tool_calls": [{"name": "grade",
                                                              "arguments": {"verdict": "pass", "reasoning": "ok"}}]}},
]


def test_rules_pick_the_reply_by_the_last_message():
    client = ScriptedClient("toy", RULES)
    first = client.chat([{"role": "user", "content": "what is 2+2?"}])
    assert first.tool_calls == [{"name": "calculator", "arguments": {"expression": "2+2"}}]
    assert first.raw["choices"][0]["message"]["tool_calls"][0]["id"] == "call_1_0"
    second = client.chat([{"role": "user", "content": "what is 2+2?"}, {"role": "tool", "content": "4"}])
    assert second.text == "It is 4." and second.usage.completion_tokens == 3
    answer, _ = client.structured([{"role": "user", "content": "please grade this"}], schema={}, name="grade")
    assert answer == {"verdict": "pass", "reasoning": "ok"}
    with pytest.raises(ValueError, match="no rule of its script matches"):
        client.chat([{"role": "user", "content": "something else"}])


def test_bad_rules_are_refused():
    with pytest.raises(ValueError, match="rule 1"):
        ScriptedClient("toy", [{"when": {"speaker": "user"}, "reply": {"content": "x"}}])
    with pytest.raises(ValueError, match="rule 1"):
        ScriptedClient("toy", [{"when": {}}])


def test_an_agent_against_a_scripted_model_from_yaml(write_config, tmp_path):
    (tmp_path / "model.yaml").write_text(
        '- when: {role: user, content: "2\\\\+2"}\n'
        '  reply: {tool_calls: [{name: calculator, arguments: {expression: "2+2"}}]}\n'
        '- when: {role: tool, content: "^4$"}\n'
        '  reply: {content: "It is 4."}\n')
    path = write_config("""
        models:
          toy: {model: toy, script: model.yaml}
        experiments:
          - id: e
            dataset: {items: [{input: "what is 2+2?", expected: "It is 4."}]}
            runner: {uses: agent, with: {model: toy, tools: [calculator]}}
            scorers: [exact_match, {uses: tool_call_accuracy, with: {expected_tool: calculator}}]
    """)
    [experiment] = yamleval.load_experiments(path)
    result = yamleval.run_experiment(experiment)
    [item] = result.items
    assert item.status == "passed", item.error
    assert [step["type"] for step in item.trace] == ["model", "tool", "model"]
    assert item.trace[1]["result"] == "4"
