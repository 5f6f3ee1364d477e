"""One chat and one structured answer against a real server, when YAMLEVAL_TEST_BASE_URL names one.

    YAMLEVAL_TEST_BASE_URL=http://127.0.0.1:8765/v1 [YAMLEVAL_TEST_MODEL=...] [YAMLEVAL_TEST_API_KEY=...]
"""
from __future__ import annotations

import os

import pytest

from yamleval.builtins.models import ChatClient, ModelConfig

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


def test_an_experiment_with_the_openai_runner_and_the_judge(tmp_path):
    """The plumbing end to end with a real model; its answers need not be right (a small model's are not)."""
    import yamleval

    path = tmp_path / "evals.yaml"
    path.write_text(f"""
models:
  real: {{base_url: "{BASE_URL}", model: "{os.environ.get('YAMLEVAL_TEST_MODEL', 'test')}",
         api_key: "${{YAMLEVAL_TEST_API_KEY:-none}}", temperature: 0, seed: 7, max_tokens: 48, timeout: 120}}
experiments:
  - id: real
    dataset:
      items:
        - {{id: capital, input: "What is the capital of France?", expected: "Says Paris", assertions: [mentions Paris]}}
        - {{id: colour, input: "What colour is the sky on a clear day?", expected: "Says blue"}}
    runner: {{uses: openai, with: {{model: real, system: "Answer in one short sentence."}}}}
    scorers: [{{uses: judge, with: {{model: real}}}}]
""")
    [experiment] = yamleval.load_experiments(path)
    result = yamleval.run_experiment(experiment)
    assert result.summary.completed == 2
    for item in result.items:
        assert item.status in ("passed", "failed"), item.error
        assert isinstance(item.output, str) and item.scores["judge"].reason
    assert result.summary.tokens.prompt_tokens > 0 and result.summary.judge_tokens.prompt_tokens > 0
