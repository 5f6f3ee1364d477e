"""The ``openai`` runner end to end: YAML, the engine, the scripted server on 127.0.0.1."""
from __future__ import annotations

import textwrap

import pytest

import yamleval
from servers.fixtures import openai_server  # noqa: F401
from servers.openai_server import error_reply, text_reply, tool_reply
from yamleval.records.errors import ConfigError

KEY = "sk-runner-test-secret-42"


def _config(tmp_path, base_url: str, runner_with: str, items: str, model_extra: str = "") -> str:
    text = f"""\
        version: 1
        models:
          sut: {{base_url: "{base_url}", model: tiny, api_key: "${{TEST_KEY}}"{model_extra}}}
        experiments:
          - id: chat
            dataset:
              items: {items}
            runner:
              uses: yamleval.builtins.runners.openai:openai
              with: {runner_with}
            scorers: [exact_match]
        """
    path = tmp_path / "evals.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return str(path)


def _run(path: str, **options):
    [experiment] = yamleval.load_experiments(path)
    return yamleval.run_experiment(experiment, concurrency=1, **options)


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("TEST_KEY", KEY)


def test_sends_system_and_rendered_prompt_and_sums_tokens(tmp_path, openai_server):  # noqa: F811
    openai_server.push(text_reply("4", prompt_tokens=12, completion_tokens=1),
                       text_reply("Paris", prompt_tokens=20, completion_tokens=3))
    path = _config(tmp_path, openai_server.base_url,
                   '{model: sut, system: "Answer briefly.", prompt: "Q: {{ input }}", temperature: 0, '
                   'max_tokens: 16}',
                   '[{id: a, input: "2+2?", expected: "4"}, {id: b, input: "Capital of France?", '
                   'expected: "Paris"}]')
    result = _run(path)

    assert [r.status for r in result.items] == ["passed", "passed"]
    assert [r.output for r in result.items] == ["4", "Paris"]
    first, second = openai_server.bodies
    assert first["model"] == "tiny"
    assert first["messages"] == [{"role": "system", "content": "Answer briefly."},
                                 {"role": "user", "content": "Q: 2+2?"}]
    assert second["messages"][1] == {"role": "user", "content": "Q: Capital of France?"}
    assert first["temperature"] == 0 and first["max_tokens"] == 16
    post = [r for r in openai_server.requests if r.method == "POST"][0]
    assert post.path == "/v1/chat/completions"
    assert post.headers["Authorization"] == f"Bearer {KEY}"
    tokens = result.summary.tokens
    assert (tokens.prompt_tokens, tokens.completion_tokens) == (32, 4)
    meta = result.items[0].metadata
    assert meta["model"] == "tiny" and meta["endpoint"] == "sut"
    assert meta["attempts"] == 1 and meta["finish_reason"] == "stop" and meta["latency_ms"] >= 0


def test_default_prompt_is_the_input_as_json_and_messages_are_rendered(tmp_path, openai_server):  # noqa: F811
    openai_server.push(text_reply("ok"))
    path = _config(tmp_path, openai_server.base_url, "{model: sut}",
                   '[{id: a, input: {city: Oslo}, expected: ok}]')
    result = _run(path)
    assert result.items[0].status == "passed"
    assert openai_server.bodies[0]["messages"] == [{"role": "user", "content": '{"city": "Oslo"}'}]

    openai_server.push(text_reply("ok"))
    path = _config(tmp_path, openai_server.base_url,
                   '{model: sut, system: S, messages: [{role: user, content: "hi"}, '
                   '{role: assistant, content: "hello"}, {role: user, content: "say {{ input }}"}]}',
                   '[{id: a, input: ok, expected: ok}]')
    result = _run(path)
    assert result.items[0].status == "passed"
    assert openai_server.bodies[1]["messages"] == [
        {"role": "system", "content": "S"}, {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"}, {"role": "user", "content": "say ok"}]


def test_a_500_is_retried_and_the_attempts_are_recorded(tmp_path, openai_server):  # noqa: F811
    openai_server.push(error_reply(500, "overloaded"), text_reply("4"))
    path = _config(tmp_path, openai_server.base_url, "{model: sut}", '[{id: a, input: "2+2?", expected: "4"}]')
    result = _run(path)
    assert result.items[0].status == "passed"
    assert result.items[0].metadata["attempts"] == 2
    assert len(openai_server.bodies) == 2


def test_a_401_is_that_items_error_and_the_others_pass(tmp_path, openai_server):  # noqa: F811
    openai_server.push(text_reply("one"), error_reply(401, "invalid api key"), text_reply("three"))
    path = _config(tmp_path, openai_server.base_url, "{model: sut}",
                   '[{id: a, input: x, expected: one}, {id: b, input: y, expected: two}, '
                   '{id: c, input: z, expected: three}]')
    result = _run(path)
    assert [r.status for r in result.items] == ["passed", "error", "passed"]
    error = result.items[1].error
    assert "401" in error and "invalid api key" in error and "'sut'" in error
    assert KEY not in error
    assert len(openai_server.bodies) == 3  # a 401 is not retried
    assert not result.passed


def test_tool_calls_without_text_are_the_output_and_the_trace(tmp_path, openai_server):  # noqa: F811
    openai_server.push(tool_reply("lookup", {"city": "Oslo"}))
    path = _config(tmp_path, openai_server.base_url, "{model: sut}", '[{id: a, input: weather?}]')
    result = _run(path)
    item = result.items[0]
    assert item.output == [{"name": "lookup", "arguments": {"city": "Oslo"}}]
    assert item.trace == item.output
    assert item.metadata["finish_reason"] == "tool_calls"


def test_price_in_models_gives_the_cost(tmp_path, openai_server):  # noqa: F811
    openai_server.push(text_reply("ok", prompt_tokens=1000, completion_tokens=500))
    path = _config(tmp_path, openai_server.base_url, "{model: sut}", '[{id: a, input: x, expected: ok}]',
                   model_extra=", price: {prompt: 1.0, completion: 2.0}")
    result = _run(path)
    assert result.items[0].usage.cost == pytest.approx(0.002)


def test_an_unknown_model_is_a_config_error_naming_it_and_the_close_one(tmp_path, openai_server):  # noqa: F811
    path = _config(tmp_path, openai_server.base_url, "{model: sutt}", "[{id: a, input: x}]")
    with pytest.raises(ConfigError) as caught:
        _run(path)
    message = str(caught.value)
    assert "sutt" in message and "did you mean 'sut'" in message
    assert openai_server.bodies == []

    path = _config(tmp_path, openai_server.base_url, "{model: nope}", "[{id: a, input: x}]")
    with pytest.raises(ConfigError) as caught:
        _run(path)
    assert "no model 'nope'" in str(caught.value) and "sut" in str(caught.value)


def test_prompt_and_messages_together_are_that_items_error(tmp_path, openai_server):  # noqa: F811
    path = _config(tmp_path, openai_server.base_url,
                   '{model: sut, prompt: "Q", messages: [{role: user, content: hi}]}', "[{id: a, input: x}]")
    result = _run(path)
    assert result.items[0].status == "error" and "not both" in result.items[0].error
    assert openai_server.bodies == []
