"""One chat and one structured answer against a real server, when YAMLEVAL_TEST_BASE_URL names one.

    YAMLEVAL_TEST_BASE_URL=http://127.0.0.1:8765/v1 [YAMLEVAL_TEST_MODEL=...] [YAMLEVAL_TEST_API_KEY=...]
"""
from __future__ import annotations

import os

import pytest

from yamleval.models import ChatClient, ModelConfig

BASE_URL = os.environ.get("YAMLEVAL_TEST_BASE_URL")
pytestmark = pytest.mark.skipif(not BASE_URL, reason="YAMLEVAL_TEST_BASE_URL is not set")


@pytest.fixture
def client():
    config = ModelConfig(name="real", base_url=BASE_URL or "", model=os.environ.get("YAMLEVAL_TEST_MODEL", "test"),
                         api_key=os.environ.get("YAMLEVAL_TEST_API_KEY") or None, temperature=0, seed=1,
                         max_tokens=120, timeout=120)
    with ChatClient(config) as chat_client:
        yield chat_client


def test_chat(client):
    reply = client.chat([{"role": "user", "content": "What is the capital of France?"}], max_tokens=20)
    assert isinstance(reply.text, str) and reply.text.strip()
    assert reply.usage.prompt_tokens > 0 and reply.usage.completion_tokens > 0
    assert reply.latency_ms > 0


def test_structured(client):
    schema = {"type": "object", "properties": {"verdict": {"type": "string", "enum": ["pass", "fail"]},
                                               "reasoning": {"type": "string"}},
              "required": ["verdict", "reasoning"]}
    messages = [{"role": "system", "content": "You grade answers."},
                {"role": "user", "content": "Question: 2+2? Answer: 4. Is the answer right?"}]
    answer, reply = client.structured(messages, schema, "grade")
    assert answer["verdict"] in ("pass", "fail") and isinstance(answer["reasoning"], str)
    assert reply.usage.total_tokens > 0
