"""The ``similar`` scorer end to end: YAML -> engine -> a local embeddings server."""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

import yamleval
from conftest import run_cli
from servers.embeddings import EmbeddingsServer, vector_of

GOLDEN = Path(__file__).parent.parent.parent / "data" / "similar"
UPDATE = os.environ.get("YAMLEVAL_UPDATE_GOLDEN") == "1"
KEY = "sk-embeddings-test-4711"


@pytest.fixture
def server():
    with EmbeddingsServer() as running:
        yield running


def config(server, items: str, concurrency: int = 1, scorer: str = "{uses: similar, with: {model: emb}}") -> str:
    return f"""
        models:
          emb: {{base_url: "{server.base_url}", model: tiny-embed, api_key: "{KEY}", retries: 0}}
        defaults: {{cache: {{path: answers.db}}}}
        experiments:
          - id: e
            concurrency: {concurrency}
            dataset:
              items: {items}
            runner: echo
            scorers: [{scorer}]
    """


def run(write_config, text: str):
    [experiment] = yamleval.load_experiments(write_config(text))
    return yamleval.run_experiment(experiment)


def cosine(a, b) -> float:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_the_score_is_the_cosine_of_output_and_expected(write_config, server):
    server.vectors["away"] = [-x for x in vector_of("home")]  # the opposite direction: cosine -1
    result = run(write_config, config(server, """
                - {id: near, input: "The capital is Paris", expected: "Paris"}
                - {id: same, input: "Paris", expected: "Paris"}
                - {id: opposite, input: "away", expected: "home"}""", scorer="{uses: similar, threshold: 0.9, "
                                                                              "with: {model: emb}}"))
    near, same, opposite = (item.scores["similar"] for item in result.items)
    expected = cosine(vector_of("The capital is Paris"), vector_of("Paris"))
    assert near.score == pytest.approx(max(0.0, expected), abs=1e-12)
    assert near.metadata["similarity"] == pytest.approx(expected, abs=1e-12)
    assert near.reason == f"cosine similarity {expected:.4f} to the expected value"
    assert same.score == pytest.approx(1.0, abs=1e-12) and same.passed is True
    assert opposite.metadata["similarity"] == pytest.approx(-1.0, abs=1e-12)
    assert opposite.score == 0.0 and opposite.passed is False, "a negative cosine is clipped to 0"
    assert [item.status for item in result.items][1:] == ["passed", "failed"]
    assert all(headers["Authorization"] == f"Bearer {KEY}" for headers in server.headers)
    assert near.usage is not None and near.usage.prompt_tokens == 5  # the words of the two texts


def test_an_expected_list_counts_its_closest_value(write_config, server):
    result = run(write_config, config(server, '[{input: "a cat on a mat", expected: ["stock prices", "a cat sat", "rain"]}]'))
    [item] = result.items
    score = item.scores["similar"]
    cosines = [cosine(vector_of("a cat on a mat"), vector_of(text)) for text in ("stock prices", "a cat sat", "rain")]
    best = int(np.argmax(cosines))
    assert score.metadata["similarities"] == pytest.approx(cosines, abs=1e-12)
    assert score.metadata["closest"] == best
    assert score.score == pytest.approx(max(0.0, cosines[best]), abs=1e-12)
    assert score.reason == f"cosine similarity {cosines[best]:.4f} to expected value {best + 1} of 3, the closest"
    assert server.bodies == [{"model": "tiny-embed", "input": ["a cat on a mat", "stock prices", "a cat sat", "rain"]}]


def test_each_distinct_text_is_embedded_once_per_run_and_not_at_all_from_the_cache(write_config, server):
    items = """
                - {id: a, input: "It is Paris", expected: "Paris"}
                - {id: b, input: "Paris, France", expected: "Paris"}
                - {id: c, input: "Lyon", expected: ["Paris", "Lyon"]}
                - {id: d, input: "It is Paris", expected: "Paris"}"""
    first = run(write_config, config(server, items, concurrency=4))
    assert all(item.status != "error" for item in first.items), [item.error for item in first.items]
    assert dict(server.asked) == {"It is Paris": 1, "Paris": 1, "Paris, France": 1, "Lyon": 1}
    assert ["It is Paris", "Paris"] in [body["input"] for body in server.bodies] or \
           ["Paris, France", "Paris"] in [body["input"] for body in server.bodies], \
        "an output and its new expected value are asked for in one request"
    requests = len(server.bodies)

    second = run(write_config, config(server, items, concurrency=4))
    assert len(server.bodies) == requests, "every vector came from the cache"
    assert [item.scores["similar"].score for item in second.items] == \
           [item.scores["similar"].score for item in first.items]
    assert sum(item.cache.hits for item in second.items if item.cache) == 4  # one per distinct text


@pytest.mark.parametrize("reply, reason", [
    ((500, '{"error": {"message": "the embeddings backend is down"}}'),
     "model 'emb': HTTP 500: the embeddings backend is down"),
    ((200, "<html>not json</html>"), "model 'emb': reply is not JSON (HTTP 200, application/json): <html>not json</html>"),
    ((200, '{"data": [{"embedding": [1, 0]}]}'), "model 'emb': embeddings reply (HTTP 200): 1 embeddings for 2 texts"),
    ((200, '{"data": [{"embedding": [1, 0]}, {"embedding": "0.5 0.5"}]}'),
     "model 'emb': embeddings reply (HTTP 200): embedding 2 is not a list of numbers"),
    ((200, '{"object": "list"}'), "model 'emb': embeddings reply (HTTP 200): no `data` list of embeddings"),
])
def test_a_failed_or_malformed_reply_is_an_error_on_the_item(write_config, server, reply, reason):
    server.fail_with.append(reply)
    result = run(write_config, config(server, '[{id: x, input: "hello", expected: "hi"}, '
                                              '{id: y, input: "hello", expected: "hi"}]'))
    broken, fine = result.items
    assert broken.status == "error" and broken.scores["similar"].status == "error"
    assert reason in broken.scores["similar"].error
    assert KEY not in broken.scores["similar"].error
    assert fine.status != "error", "a failure is not kept: the next item asks again"
    assert fine.scores["similar"].score == pytest.approx(max(0.0, cosine(vector_of("hello"), vector_of("hi"))))


def test_vectors_of_different_lengths_are_an_error_on_the_item(write_config, server):
    server.vectors["short"] = [1.0, 0.0, 0.0]
    result = run(write_config, config(server, '[{input: "short", expected: "long enough"}]'))
    [item] = result.items
    assert item.status == "error"
    assert "model 'emb' gave vectors of different lengths (3 for the output, 8 for the expected value)" \
        in item.scores["similar"].error


def test_a_server_error_is_retried_as_the_model_entry_says(write_config, server):
    server.fail_with.append((503, '{"error": {"message": "busy"}}'))
    text = config(server, '[{input: "hello", expected: "hi"}]').replace("retries: 0", "retries: 1")
    [item] = run(write_config, text).items
    assert item.status != "error", item.error
    assert len(server.bodies) == 2


@pytest.mark.parametrize("case, scorer", [
    ("missing_model", "{uses: similar, with: {}}"),
    ("unknown_model", "{uses: similar, with: {model: embb}}"),
])
def test_a_missing_or_unknown_model_is_a_located_config_error(write_config, server, tmp_path, case, scorer):
    write_config(config(server, '[{input: "hello", expected: "hi"}]', scorer=scorer)
                 .replace(server.base_url, "http://127.0.0.1:9/v1"))
    done = run_cli("run", "evals.yaml", cwd=tmp_path, NO_COLOR="1")
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    golden = GOLDEN / f"{case}.expected.txt"
    if UPDATE:
        golden.write_text(done.stderr, encoding="utf-8")
    assert done.stderr == golden.read_text(encoding="utf-8")
    assert server.bodies == []


def test_preview_shows_the_embeddings_request_and_sends_nothing(write_config, server):
    from yamleval.config.loader import load_project
    from yamleval.lifecycle.preview import PLACEHOLDER, preview_experiment

    text = config(server, '[{input: "hello", expected: "hi"}]').replace(
        "tiny-embed,", "tiny-embed, price: {prompt: 1.0, completion: 0},")
    [experiment] = load_project([str(write_config(text))]).experiments
    shown = preview_experiment(experiment)
    [item] = shown.items
    call = item.calls[-1]
    assert call.target == f"model emb: POST {server.base_url}/embeddings"
    assert call.shown == {"model": "tiny-embed", "input": [PLACEHOLDER, "hi"]}
    assert shown.estimate.cost is not None, "an embedding completes nothing: its cost is known"
    assert server.bodies == []


def test_an_empty_output_scores_0_and_an_empty_expected_value_is_an_error(write_config, server):
    result = run(write_config, config(server, '[{id: quiet, input: "", expected: "Paris"}, '
                                              '{id: blank, input: "Paris", expected: ["Paris", " "]}]'))
    quiet, blank = result.items
    assert (quiet.scores["similar"].score, quiet.scores["similar"].reason) == (0.0, "the output is empty")
    assert blank.status == "error" and "an expected value is empty" in blank.scores["similar"].error
    assert server.bodies == []


def test_a_scripted_model_has_no_embeddings(write_config, server, tmp_path):
    (tmp_path / "toy.yaml").write_text('- {when: {content: "."}, reply: {content: "hi"}}\n', encoding="utf-8")
    text = config(server, '[{input: "hello", expected: "hi"}]').replace(
        f'{{base_url: "{server.base_url}", model: tiny-embed, api_key: "{KEY}", retries: 0}}',
        "{model: toy, script: toy.yaml}")
    [item] = run(write_config, text).items
    assert item.status == "error"
    assert "model 'emb' answers from a script, which has no embeddings: give a base_url" in item.scores["similar"].error
