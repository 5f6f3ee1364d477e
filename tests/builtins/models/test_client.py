"""The Chat Completions client against the scripted server on 127.0.0.1."""
from __future__ import annotations

import time
import traceback

import pytest

from servers.fixtures import openai_server  # noqa: F401
from servers.openai_server import Reply, dropped, error_reply, malformed, text_reply, tool_reply
from yamleval.records.errors import ConfigError
from yamleval.builtins.models import ChatClient, ModelConfig, ModelError, Price, StructuredAnswerError, extract_json
from yamleval.calls import Network
from yamleval.calls.limits import RateLimit
from yamleval.records.types import Usage

KEY = "sk-test-secret-0123456789"
VERDICT = {
    "type": "object",
    "properties": {"verdict": {"enum": ["pass", "fail"]}, "reasoning": {"type": "string"}},
    "required": ["verdict", "reasoning"],
}
ASK = [{"role": "user", "content": "Is 2+2=4?"}]


@pytest.fixture
def client(openai_server):  # noqa: F811
    config = ModelConfig(name="judge", base_url=openai_server.base_url, model="test-model", api_key=KEY,
                         temperature=0, seed=7, retries=2, timeout=5,
                         price=Price(prompt=1.0, completion=2.0))
    with ChatClient(config, backoff=(0.01, 0.05)) as chat_client:
        yield chat_client


def all_text(exc: BaseException) -> str:
    return str(exc) + repr(exc) + "".join(traceback.format_exception(exc))


def test_chat_sends_the_request_and_reads_text_usage_and_cost(openai_server, client):  # noqa: F811
    openai_server.push(text_reply("Yes.", prompt_tokens=1000, completion_tokens=500))
    reply = client.chat(ASK, max_tokens=20)
    assert reply.text == "Yes."
    assert reply.usage == Usage(1000, 500)
    assert reply.cost == pytest.approx((1000 * 1.0 + 500 * 2.0) / 1e6)
    assert reply.attempts == 1 and reply.latency_ms > 0 and reply.finish_reason == "stop"
    assert reply.raw["choices"][0]["message"]["content"] == "Yes."
    (request,) = openai_server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["Authorization"] == f"Bearer {KEY}"
    assert request.body == {"model": "test-model", "messages": ASK, "temperature": 0, "seed": 7, "max_tokens": 20}


def test_tool_calls_are_parsed(openai_server, client):  # noqa: F811
    openai_server.push(tool_reply("get_weather", {"city": "Paris"}), tool_reply("broken", "{not json"))
    assert client.chat(ASK).tool_calls == [{"name": "get_weather", "arguments": {"city": "Paris"}}]
    assert client.chat(ASK).tool_calls == [{"name": "broken", "arguments": "{not json"}]


def test_429_waits_for_retry_after(openai_server, client):  # noqa: F811
    openai_server.push(error_reply(429, "slow down", headers={"Retry-After": "1"}), text_reply("ok"))
    start = time.monotonic()
    reply = client.chat(ASK)
    assert reply.text == "ok" and reply.attempts == 2
    assert len(openai_server.requests) == 2
    gap = openai_server.requests[1].at - openai_server.requests[0].at
    assert gap >= 0.9 and time.monotonic() - start >= 0.9


def test_500_twice_then_200_succeeds(openai_server, client):  # noqa: F811
    openai_server.push(error_reply(500, "boom"), error_reply(503, "busy"), text_reply("ok"))
    reply = client.chat(ASK)
    assert reply.text == "ok" and reply.attempts == 3
    assert len(openai_server.requests) == 3


def test_retries_are_bounded(openai_server, client):  # noqa: F811
    openai_server.push(*[error_reply(502, "bad gateway")] * 4)
    with pytest.raises(ModelError) as info:
        client.chat(ASK)
    assert info.value.status == 502 and info.value.attempts == 3
    assert "bad gateway" in str(info.value) and "after 3 attempts" in str(info.value)
    assert len(openai_server.requests) == 3


def test_dropped_connection_is_retried(openai_server, client):  # noqa: F811
    openai_server.push(dropped(), text_reply("ok"))
    assert client.chat(ASK).text == "ok"
    assert len(openai_server.requests) == 2


def test_slow_reply_times_out_and_is_retried(openai_server):  # noqa: F811
    config = ModelConfig(name="m", base_url=openai_server.base_url, model="x", timeout=0.2, retries=1)
    openai_server.push(text_reply("late", delay=0.6), text_reply("ok"))
    with ChatClient(config, backoff=(0.01, 0.05)) as client:
        assert client.chat(ASK).text == "ok"
    assert len(openai_server.requests) == 2


def test_401_fails_at_once_with_the_servers_message_and_never_the_key(openai_server, client):  # noqa: F811
    openai_server.push(error_reply(401, f"Incorrect API key provided: {KEY}."))
    with pytest.raises(ModelError) as info:
        client.chat(ASK)
    assert info.value.status == 401 and info.value.attempts == 1
    assert "HTTP 401: Incorrect API key provided" in str(info.value)
    assert len(openai_server.requests) == 1
    assert KEY not in all_text(info.value)
    assert KEY not in repr(client.config) and KEY not in repr(client)


def test_plain_text_error_body_is_the_message(openai_server, client):  # noqa: F811
    openai_server.push(Reply(status=404, body="no such model"))
    with pytest.raises(ModelError, match="HTTP 404: no such model"):
        client.chat(ASK)


@pytest.mark.parametrize("reply", [malformed(), Reply(body={"object": "chat.completion"})],
                         ids=["not-json", "no-choices"])
def test_a_reply_that_is_not_a_completion_is_an_error(openai_server, client, reply):  # noqa: F811
    openai_server.push(reply)
    with pytest.raises(ModelError, match="not JSON|no choices"):
        client.chat(ASK)
    assert len(openai_server.requests) == 1


def test_connection_refused_is_an_error_without_the_key():
    config = ModelConfig(name="m", base_url="http://127.0.0.1:9/v1", model="x", api_key=KEY, retries=1)
    with ChatClient(config, backoff=(0.01, 0.02)) as client, pytest.raises(ModelError) as info:
        client.chat(ASK)
    assert "connection failed" in str(info.value) and info.value.attempts == 2
    assert KEY not in all_text(info.value)


def test_a_redirect_to_another_host_is_not_followed_with_the_key_headers_or_body(openai_server):  # noqa: F811
    """127.0.0.1 sends the call on to localhost: neither the key, the headers nor the messages go there."""
    port = openai_server.base_url.split(":")[2].split("/")[0]
    config = ModelConfig(name="m", base_url=openai_server.base_url, model="x", api_key=KEY,
                         headers={"X-Api-Key": KEY}, retries=2)
    openai_server.push(Reply(status=307, headers={"Location": f"http://localhost:{port}/v1/chat/completions"}),
                       text_reply("landed"))
    with ChatClient(config) as client, pytest.raises(ModelError) as info:
        client.chat(ASK)
    assert f"redirected to another host (http://localhost:{port}/v1/chat/completions): not followed" in str(info.value)
    assert info.value.attempts == 1 and not info.value.retryable
    (request,) = openai_server.requests
    assert request.headers["Host"] == f"127.0.0.1:{port}"


# -- structured answers --------------------------------------------------------------------

def test_structured_uses_a_forced_function_call(openai_server, client):  # noqa: F811
    openai_server.push(tool_reply("grade", {"verdict": "pass", "reasoning": "correct"}))
    answer, reply = client.structured(ASK, VERDICT, "grade")
    assert answer == {"verdict": "pass", "reasoning": "correct"}
    body = openai_server.bodies[0]
    assert body["tools"] == [{"type": "function", "function": {"name": "grade", "parameters": VERDICT}}]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "grade"}}
    assert reply.usage == Usage(10, 5)


def test_structured_falls_back_to_json_mode_when_tools_are_rejected(openai_server, client):  # noqa: F811
    openai_server.push(error_reply(400, "tools are not supported by this model"),
                       text_reply('{"verdict": "fail", "reasoning": "wrong"}'),
                       text_reply('{"verdict": "pass", "reasoning": "right"}'))
    answer, _ = client.structured(ASK, VERDICT, "grade")
    assert answer == {"verdict": "fail", "reasoning": "wrong"}
    first, second = openai_server.bodies[:2]
    assert "tools" in first and "tools" not in second
    assert second["response_format"] == {"type": "json_object"}
    assert "JSON Schema" in second["messages"][0]["content"]
    # The refusal is remembered: the next call goes straight to JSON mode.
    client.structured(ASK, VERDICT, "grade")
    assert len(openai_server.requests) == 3


def test_structured_extracts_json_from_fenced_text(openai_server, client):  # noqa: F811
    fenced = 'Sure!\n```json\n{"verdict": "pass", "reasoning": "it says {4}"}\n```\nDone.'
    openai_server.push(text_reply("no tool call here"), text_reply(fenced))
    answer, _ = client.structured(ASK, VERDICT, "grade")
    assert answer == {"verdict": "pass", "reasoning": "it says {4}"}
    assert openai_server.bodies[1]["response_format"] == {"type": "json_object"}


def test_structured_retries_once_then_fails_with_the_raw_text(openai_server, client):  # noqa: F811
    openai_server.push(tool_reply("grade", "{not json", prompt_tokens=3, completion_tokens=4),
                       tool_reply("grade", "{still not json", prompt_tokens=3, completion_tokens=4))
    with pytest.raises(StructuredAnswerError) as info:
        client.structured(ASK, VERDICT, "grade")
    assert info.value.raw == "{still not json"
    assert len(info.value.replies) == 2 and sum(r.usage.total_tokens for r in info.value.replies) == 14
    assert len(openai_server.requests) == 2


def test_structured_retry_fixes_an_answer_that_breaks_the_schema(openai_server, client):  # noqa: F811
    openai_server.push(tool_reply("grade", {"verdict": "maybe", "reasoning": "?"}, prompt_tokens=100),
                       tool_reply("grade", {"verdict": "pass", "reasoning": "ok"}, prompt_tokens=200))
    answer, reply = client.structured(ASK, VERDICT, "grade")
    assert answer["verdict"] == "pass"
    assert reply.usage == Usage(300, 10) and reply.attempts == 2
    assert reply.cost == pytest.approx((300 * 1.0 + 10 * 2.0) / 1e6)


# -- configuration and extraction ------------------------------------------------------------

def test_model_config_from_mapping():
    config = ModelConfig.from_mapping(
        "judge", {"base_url": "http://h/v1", "model": "m", "api_key": KEY, "timeout": 5,
                  "headers": {"X-Team": "qa"}, "price": {"prompt": 0.15, "completion": 0.6}},
        retries=4, timeout=30)
    assert (config.timeout, config.retries, config.headers) == (5.0, 4, {"X-Team": "qa"})
    assert config.price == Price(0.15, 0.6)
    assert (config.rate_limit, config.adaptive) == (None, True)
    assert KEY not in repr(config)
    with pytest.raises(ConfigError, match="unknown key.*modle"):
        ModelConfig.from_mapping("judge", {"base_url": "http://h", "model": "m", "modle": "x"})
    limited = ModelConfig.from_mapping("judge", {"base_url": "http://h", "model": "m", "adaptive": False,
                                                 "rate_limit": {"requests_per_minute": 500}})
    assert (limited.rate_limit, limited.adaptive) == (RateLimit(requests_per_minute=500), False)
    with pytest.raises(ConfigError, match=r"models.judge: `rate_limit.tokens_per_minute` must be a number above 0"):
        ModelConfig.from_mapping("judge", {"base_url": "http://h", "model": "m", "rate_limit": {"tokens_per_minute": -1}})


def test_the_tokens_one_client_used_hold_back_every_client_of_the_endpoint_in_the_run(openai_server):  # noqa: F811
    config = ModelConfig(name="judge", base_url=openai_server.base_url, model="tpm-model", retries=0, timeout=5,
                         rate_limit=RateLimit(tokens_per_minute=6000))  # 100 a second
    openai_server.push(text_reply("one", prompt_tokens=150, completion_tokens=50), text_reply("two"))
    run = Network()
    with ChatClient(config, network=run) as judge, ChatClient(config, network=run) as agent:
        judge.chat(ASK)  # 200 tokens: a second in debt
        agent.chat(ASK)
    first, second = openai_server.requests
    assert second.at - first.at >= 0.9


@pytest.mark.parametrize("text, expected", [
    ('{"a": 1}', {"a": 1}),
    ('prefix {"a": "}"} suffix {"b": 2}', {"a": "}"}),
    ('```\n{"a": [1, {"b": 2}]}\n```', {"a": [1, {"b": 2}]}),
    ("{broken {\"a\": 1}", {"a": 1}),
    ("no json at all", None),
])
def test_extract_json(text, expected):
    assert extract_json(text) == expected
