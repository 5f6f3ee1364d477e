"""``yamleval preview`` shows what a run would send and what it would cost, and sends nothing.

The output of one small config is a golden file, ``tests/data/preview/small.expected.txt``.
After a deliberate change of wording, regenerate it and review the diff::

    YAMLEVAL_UPDATE_GOLDEN=1 python -m pytest tests/lifecycle/test_preview.py
"""
from __future__ import annotations

import os
import shutil
import socket
from pathlib import Path

import pytest

from conftest import ROOT, run_cli
from servers.fixtures import openai_server  # noqa: F401  (a fixture)
from yamleval.config.loader import load_project
from yamleval.lifecycle.preview import PLACEHOLDER, preview_experiment

GOLDEN = Path(__file__).parent.parent / "data" / "preview" / "small.expected.txt"
UPDATE = os.environ.get("YAMLEVAL_UPDATE_GOLDEN") == "1"
KEY = "sk-preview-0123456789"


def _closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _chat_config(base_url: str) -> str:
    return f"""
        models:
          sut: {{base_url: "{base_url}", model: tiny, api_key: "${{SOME_KEY}}", max_tokens: 50}}
          grader: {{base_url: "{base_url}", model: tiny-judge, api_key: "${{SOME_KEY}}"}}
        experiments:
          - id: chat
            vars: {{key: "${{SOME_KEY}}"}}
            dataset:
              items:
                - {{id: capital, input: What is the capital of France?, expected: Paris}}
                - {{id: colour, input: Name a colour., expected: any colour}}
            runner:
              uses: openai
              with:
                model: sut
                system: "You hold the key {{{{ vars.key }}}}: never tell it."
                temperature: 0
            scorers:
              - {{uses: judge, with: {{model: grader}}}}
    """


def test_the_demo_project_previews_three_items_with_nothing_running(tmp_path):
    for name in ("evals.yaml", "datasets", "plugins"):
        source = ROOT / name
        (shutil.copytree if source.is_dir() else shutil.copy)(source, tmp_path / name)
    done = run_cli("preview", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert "experiment support-answers (datasets/support.jsonl): 3 of 6 items" in done.stdout
    assert "runner plugins.support:answer -> Python code, not called" in done.stdout
    assert '"argv": ["python3", "plugins/shout.py"]' in done.stdout  # the command runner, not run
    assert "runner agent -> model toy (its script plugins/agent_model.yaml)" in done.stdout
    assert '{"role": "user", "content": "What is 17 * 23?"}' in done.stdout
    assert "estimate (approximate" in done.stdout
    assert not (tmp_path / ".yamleval").exists() and not (tmp_path / "reports").exists()  # nothing ran


def test_the_rendered_request_masks_the_key_and_nothing_is_sent(write_config, openai_server):  # noqa: F811
    config = write_config(_chat_config(openai_server.base_url))
    done = run_cli("preview", str(config), cwd=config.parent, SOME_KEY=KEY)
    assert done.returncode == 0, done.stderr
    assert openai_server.requests == []
    assert KEY not in done.stdout + done.stderr
    assert f"runner openai -> model sut: POST {openai_server.base_url}/chat/completions" in done.stdout
    assert '{"role": "system", "content": "You hold the key ${SOME_KEY}: never tell it."}' in done.stdout
    assert '{"role": "user", "content": "What is the capital of France?"}' in done.stdout
    assert '"max_tokens": 50' in done.stdout and '"temperature": 0' in done.stdout


def test_a_judge_prompt_is_shown_with_a_placeholder_answer(write_config):
    config = write_config(_chat_config(f"http://127.0.0.1:{_closed_port()}/v1"))
    done = run_cli("preview", str(config), "--limit", "1", cwd=config.parent, SOME_KEY=KEY)
    assert done.returncode == 0, done.stderr
    assert "scorer judge -> model grader" in done.stdout
    assert (r"<prompt>\nWhat is the capital of France?\n</prompt>\n\n<expected_behaviour>\nParis\n"
            r"</expected_behaviour>") in done.stdout
    assert f"<answer>\\n{PLACEHOLDER}\\n</answer>" in done.stdout
    assert "item colour" not in done.stdout  # --limit 1


def test_the_estimate_is_counted_from_the_previewed_prompts(write_config):
    # 4 items, 2 repeats; the prompt is the input: 8 characters, 2 tokens; at most 10 completion tokens.
    # calls 4 × 2 × 1 = 8; prompt 8 × 2 = 16 tokens; completion ≤ 8 × 10 = 80;
    # cost (16 × 3 + 80 × 5) / 1e6 = 0.000448
    config = write_config(f"""
        models:
          m: {{base_url: "http://127.0.0.1:{_closed_port()}/v1", model: tiny, max_tokens: 10,
               price: {{prompt: 3, completion: 5}}}}
        experiments:
          - id: sums
            repeats: 2
            dataset:
              items: [{{input: "1 + 1 = "}}, {{input: "2 + 2 = "}}, {{input: "3 + 3 = "}}, {{input: "4 + 4 = "}}]
            runner: {{uses: openai, with: {{model: m}}}}
    """)
    experiment = load_project([str(config)]).experiments[0]
    estimate = preview_experiment(experiment, limit=2).estimate
    assert (estimate.calls, estimate.prompt_tokens, estimate.completion_tokens) == (8, 16, 80)
    assert estimate.cost == pytest.approx(0.000448)
    done = run_cli("preview", str(config), cwd=config.parent)
    assert done.returncode == 0, done.stderr
    assert ("sums: 4 items × 2 repeats × (1 runner + 0 judge calls) = 8 calls, prompt ≈ 16 tokens, "
            "completion ≤ 80 tokens, cost ≈ $0.000448") in done.stdout


def test_a_judge_without_a_price_makes_the_cost_unknown_and_its_repeats_are_calls(write_config):
    config = write_config(f"""
        models:
          m: {{base_url: "http://127.0.0.1:{_closed_port()}/v1", model: tiny, max_tokens: 10, price: {{prompt: 1}}}}
          grader: {{base_url: "http://127.0.0.1:{_closed_port()}/v1", model: judge}}
        experiments:
          - id: judged
            dataset: {{items: [{{input: a, expected: b}}, {{input: c, expected: d}}]}}
            runner: {{uses: openai, with: {{model: m}}}}
            scorers: [{{uses: judge, with: {{model: grader, repeats: 3}}}}]
    """)
    done = run_cli("preview", str(config), cwd=config.parent)
    assert done.returncode == 0, done.stderr
    assert ("judged: 2 items × 1 repeat × (1 runner + 3 judge calls) = 8 calls" in done.stdout)
    assert "cost unknown (models.grader has no price)" in done.stdout
    assert '"max_tokens": 1024' in done.stdout  # what the judge asks for when its model sets none


def test_the_output_of_a_small_config(write_config):
    config = write_config("""
        models:
          sut: {base_url: "https://llm.example.com/v1", model: tiny, api_key: "${SOME_KEY}", max_tokens: 20,
                price: {prompt: 0.5, completion: 1.5}}
        experiments:
          - id: chat
            dataset: {items: [{id: hello, input: Say hello., expected: hello}]}
            runner: {uses: openai, with: {model: sut, prompt: "Answer in one word: {{ input }}"}}
            scorers:
              - exact_match
              - {uses: classifier, with: {model: sut, prompt: "Is {{ output }} a greeting?", choices: {Y: 1, N: 0},
                                          use_cot: false}}
          - id: service
            dataset: {items: [{id: one, input: ping}]}
            runner:
              uses: http
              with:
                url: "https://me:pw@api.example.com/chat?key=${SOME_KEY}"
                headers: {Authorization: "Bearer ${SOME_KEY}"}
                body: {message: "{{ input }}"}
          - id: program
            dataset: {items: [{id: one, input: ping}]}
            runner: {uses: command, with: {argv: [./answer, "{{ input }}"], stdin: input, env: {TOKEN: "${SOME_KEY}"}}}
          - id: plugin
            dataset: {items: [{id: one, input: ping}]}
            runner: {uses: echo}
          - id: remote
            dataset: {url: "https://data.example.com/items"}
            runner: echo
    """)
    done = run_cli("preview", str(config), cwd=config.parent, SOME_KEY=KEY)
    assert done.returncode == 0, done.stderr
    assert KEY not in done.stdout
    if UPDATE:
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(done.stdout, encoding="utf-8")
    assert done.stdout == GOLDEN.read_text(encoding="utf-8")


def test_a_config_error_is_exit_2_with_its_location(write_config):
    config = write_config("""
        experiments:
          - id: chat
            dataset: {items: [{input: a}]}
            runner: {uses: openai, with: {model: nowhere}}
    """)
    done = run_cli("preview", str(config), cwd=config.parent)
    assert done.returncode == 2
    assert "evals.yaml:5:" in done.stderr and "Traceback" not in done.stderr
    unknown = run_cli("preview", str(config), "-e", "chta", cwd=config.parent)
    assert unknown.returncode == 2 and "did you mean 'chat'" in unknown.stderr


def test_a_short_value_from_the_environment_is_hidden_in_the_requests_shown(write_config):
    config = write_config("""
        experiments:
          - id: service
            dataset: {items: [{id: one, input: ping}]}
            runner:
              uses: http
              with:
                url: "https://api.example.com/chat?k=${SHORT}"
                headers: {Authorization: "Bearer ${SHORT}"}
                body: {message: "{{ input }}", token: "${SHORT}"}
    """)
    done = run_cli("preview", str(config), cwd=config.parent, SHORT="tk12345")
    assert done.returncode == 0, done.stderr
    assert "tk12345" not in done.stdout
    assert "Bearer ${SHORT}" in done.stdout and '"token": "${SHORT}"' in done.stdout
