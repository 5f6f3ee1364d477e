"""The answer cache: a second run asks nothing it asked before and gives the same results; a
change to what decides an answer asks again exactly where it changed; no secret is kept."""
from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

import pytest

from conftest import cli_env, run_cli
from servers.fixtures import openai_server  # noqa: F401  (a fixture)
from servers.openai_server import text_reply, tool_reply

SECRET = "sk-cache-secret-4711"
MODEL_CONFIG = """
    models:
      sut: {base_url: "BASE", model: tiny, api_key: "${CACHE_KEY}", price: {prompt: 2.0, completion: 8.0}}
      grader: {base_url: "BASE", model: tiny-judge, temperature: 0}
    defaults: {concurrency: 1, cache: {runner: true, path: answers.db}}
    store: r.db
    reports: {dir: out, formats: [json]}
    vars: {token: "${CACHE_KEY}"}
    experiments:
      - id: chat
        dataset: {file: items.jsonl}
        runner: {uses: openai, with: {model: sut, system: "{{ metadata.system }}", prompt: "{{ input }} ({{ vars.token }})"}}
        scorers: [exact_match]
"""


def _items(tmp_path, systems):
    with open(tmp_path / "items.jsonl", "w", encoding="utf-8") as out:
        for i, system in enumerate(systems):
            out.write(json.dumps({"id": f"q{i}", "input": f"question {i}", "expected": f"answer {i}",
                                  "metadata": {"system": system}}) + "\n")


def _results(tmp_path):
    [experiment] = json.loads((tmp_path / "out" / "results.json").read_text())["experiments"]
    return experiment


def _answers(server, count):
    server.push(*[text_reply(f"answer {i} {SECRET}", prompt_tokens=10, completion_tokens=2) for i in range(count)])


def _kept_text(tmp_path) -> bytes:
    return b"".join(path.read_bytes() for path in tmp_path.glob("answers.db*"))


def test_a_second_run_asks_the_model_nothing_and_gives_the_same_results(openai_server, write_config, tmp_path):  # noqa: F811
    write_config(MODEL_CONFIG.replace("BASE", openai_server.base_url))
    _items(tmp_path, ["Be brief."] * 4)
    _answers(openai_server, 4)
    first = run_cli("run", "-q", cwd=tmp_path, CACHE_KEY=SECRET)
    assert first.returncode == 1, first.stderr  # the answers carry the secret: none is exact
    assert len(openai_server.requests) == 4
    before = _results(tmp_path)
    assert before["summary"]["cache"] == {"hits": 0, "misses": 4, "saved_tokens": 0, "saved_cost": 0.0,
                                                      "damaged": 0, "not_cached": 0}

    second = run_cli("run", "-q", cwd=tmp_path, CACHE_KEY=SECRET)
    assert second.returncode == 1, second.stderr
    assert len(openai_server.requests) == 4, "every answer came from the cache"
    after = _results(tmp_path)
    assert after["summary"]["cache"]["hits"] == 4 and after["summary"]["cache"]["saved_tokens"] == 48
    assert after["summary"]["cache"]["saved_cost"] == pytest.approx(4 * (10 * 2.0 + 2 * 8.0) / 1e6)
    for old, new in zip(before["items"], after["items"], strict=True):
        assert (new["output"], new["status"], new["scores"], new["tokens"]) == \
               (old["output"], old["status"], old["scores"], old["tokens"])
        assert new["cache"]["hits"] == 1
    assert SECRET.encode() not in _kept_text(tmp_path), "no secret in a key or a kept answer"

    _items(tmp_path, ["Be brief.", "Be brief.", "Be thorough.", "Be brief."])  # one request changes
    _answers(openai_server, 1)
    third = run_cli("run", "-q", cwd=tmp_path, CACHE_KEY=SECRET)
    assert third.returncode == 1, third.stderr
    assert len(openai_server.requests) == 5
    assert openai_server.bodies[-1]["messages"][0]["content"] == "Be thorough."
    assert _results(tmp_path)["summary"]["cache"]["hits"] == 3

    _answers(openai_server, 4)
    refreshed = run_cli("run", "-q", "--refresh-cache", cwd=tmp_path, CACHE_KEY=SECRET)
    assert refreshed.returncode == 1, refreshed.stderr
    assert len(openai_server.requests) == 9, "--refresh-cache asks again"
    assert _results(tmp_path)["summary"]["cache"] == {"hits": 0, "misses": 4, "saved_tokens": 0, "saved_cost": 0.0,
                                                      "damaged": 0, "not_cached": 0}

    _answers(openai_server, 4)
    off = run_cli("run", "-q", "--no-cache", cwd=tmp_path, CACHE_KEY=SECRET)
    assert off.returncode == 1, off.stderr
    assert len(openai_server.requests) == 13, "--no-cache asks every time"
    assert _results(tmp_path)["summary"]["cache"] == {"hits": 0, "misses": 0, "saved_tokens": 0, "saved_cost": 0.0,
                                                      "damaged": 0, "not_cached": 0}


def test_judges_at_temperature_zero_are_cached_by_default_and_runners_only_when_asked(openai_server, write_config,  # noqa: F811
                                                                                       tmp_path):
    write_config(MODEL_CONFIG.replace("BASE", openai_server.base_url)
                 .replace("defaults: {concurrency: 1, cache: {runner: true, path: answers.db}}",
                          "defaults: {concurrency: 1, cache: {path: answers.db}}")
                 .replace("scorers: [exact_match]", "scorers: [{uses: judge, with: {model: grader}}]"))
    _items(tmp_path, ["Be brief."] * 2)
    for _ in range(2):
        openai_server.push(text_reply("an answer"), tool_reply("grade", {"verdict": "pass", "reasoning": "fine"}))
    assert run_cli("run", "-q", cwd=tmp_path, CACHE_KEY=SECRET).returncode == 0
    assert len(openai_server.requests) == 4
    openai_server.push(text_reply("an answer"), text_reply("an answer"))
    assert run_cli("run", "-q", cwd=tmp_path, CACHE_KEY=SECRET).returncode == 0
    asked = [body["model"] for body in openai_server.bodies[4:]]
    assert asked == ["tiny", "tiny"], "the runner is asked again, the judge is not"
    assert _results(tmp_path)["summary"]["cache"]["hits"] == 2


PLUGIN = '''
import os


def answer(input, item, log):
    with open(log, "a") as out:
        out.write(f"{item.id}\\n")
    return f"answer {item.id[1:]}"
'''
PLUGIN_CONFIG = """
    store: r.db
    reports: {dir: out, formats: [json]}
    defaults: {concurrency: CONCURRENCY, cache: {runner: true, path: answers.db}}
    experiments:
      - id: own
        dataset: {file: items.jsonl}
        runner: {uses: "own:answer", with: {log: LOG}}
        scorers: [exact_match]
"""


def _calls(path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def test_a_plugin_runner_is_asked_again_once_its_source_changes(write_config, tmp_path):
    (tmp_path / "own.py").write_text(PLUGIN, encoding="utf-8")
    log = tmp_path / "calls.log"
    write_config(PLUGIN_CONFIG.replace("CONCURRENCY", "2").replace("LOG", str(log)))
    _items(tmp_path, ["x"] * 5)
    assert run_cli("run", "-q", cwd=tmp_path).returncode == 0
    assert _calls(log) == 5
    assert run_cli("run", "-q", cwd=tmp_path).returncode == 0
    assert _calls(log) == 5, "answered from the cache"
    (tmp_path / "own.py").write_text(PLUGIN + "\n# a change\n", encoding="utf-8")
    assert run_cli("run", "-q", cwd=tmp_path).returncode == 0
    assert _calls(log) == 10, "a changed plugin is asked again"
    assert run_cli("run", "-q", "--repeats", "2", cwd=tmp_path).returncode == 0
    assert _calls(log) == 15, "the first repeat is the one kept; the second is asked"


def test_two_runs_sharing_one_cache_at_concurrency_16_end_cleanly_with_the_cache_intact(write_config, tmp_path):
    (tmp_path / "own.py").write_text(PLUGIN, encoding="utf-8")
    log = tmp_path / "calls.log"
    write_config(PLUGIN_CONFIG.replace("CONCURRENCY", "16").replace("LOG", str(log)))
    _items(tmp_path, ["x"] * 600)
    children = [subprocess.Popen([sys.executable, "-m", "yamleval", "run", "-q", "--store", f"r{n}.db"],
                                 cwd=tmp_path, env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True) for n in range(2)]
    for child in children:
        _, stderr = child.communicate(timeout=300)
        assert child.returncode == 0, stderr
        assert "error" not in stderr.lower()
    with sqlite3.connect(tmp_path / "answers.db") as con:
        assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert con.execute("SELECT count(*) FROM entries").fetchone() == (600,)
    stats = run_cli("cache", "stats", "--path", "answers.db", cwd=tmp_path)
    assert stats.returncode == 0 and "600 answers" in stats.stdout
    cleared = run_cli("cache", "clear", "--path", "answers.db", cwd=tmp_path)
    assert cleared.returncode == 0 and "cleared 600 answers" in cleared.stdout
    assert "0 answers" in run_cli("cache", "stats", "--path", "answers.db", cwd=tmp_path).stdout


def test_answers_from_the_cache_count_nothing_against_a_budget(write_config, tmp_path):
    log = tmp_path / "calls.log"
    write_config(f"""
        store: r.db
        reports: {{dir: out, formats: [json]}}
        defaults: {{concurrency: 1, cache: {{runner: true, path: answers.db}}}}
        experiments:
          - id: spend
            dataset: {{file: items.jsonl}}
            runner: {{uses: fixture_plugins.behaviours:spending, with: {{log: "{log}", tokens: 10}}}}
            scorers: [exact_match]
    """)
    _items(tmp_path, ["x"] * 6)
    assert run_cli("run", "-q", cwd=tmp_path).returncode == 1  # the runner echoes the input: none is exact
    assert _calls(log) == 6
    config = tmp_path / "evals.yaml"
    config.write_text(config.read_text().replace("experiments:", "budget: {max_tokens: 25}\nexperiments:"))
    again = run_cli("run", "-q", cwd=tmp_path)
    assert again.returncode == 1, again.stderr  # failed items, not stopped: 60 tokens kept, none spent
    assert _calls(log) == 6
    summary = _results(tmp_path)["summary"]
    assert summary["cache"]["hits"] == 6 and summary["tokens"]["prompt"] + summary["tokens"]["completion"] == 60


@pytest.mark.parametrize("damage", ["not json {", "[1, 2]", '{"tokens": 3}'])
def test_a_damaged_entry_is_ignored_counted_and_asked_again(openai_server, write_config, tmp_path, damage):  # noqa: F811
    """An entry that is not valid JSON, not an object, or lacks the reply: the model is asked, the
    item passes as on the first run, and the run says how many entries it found damaged."""
    write_config(MODEL_CONFIG.replace("BASE", openai_server.base_url))
    _items(tmp_path, ["Be brief."] * 3)
    _answers(openai_server, 3)
    assert run_cli("run", "-q", cwd=tmp_path, CACHE_KEY=SECRET).returncode == 1
    first = _results(tmp_path)
    with sqlite3.connect(tmp_path / "answers.db") as db:
        [key] = db.execute("SELECT key FROM entries ORDER BY key LIMIT 1").fetchone()
        db.execute("UPDATE entries SET value = ? WHERE key = ?", (damage, key))
    _answers(openai_server, 3)
    again = run_cli("run", cwd=tmp_path, CACHE_KEY=SECRET)
    assert again.returncode == 1 and "Traceback" not in again.stderr, again.stderr
    assert len(openai_server.requests) == 4, "only the damaged entry's call is made again"
    after = _results(tmp_path)
    assert after["summary"]["cache"] == {"hits": 2, "misses": 1, "saved_tokens": 24,
                                         "saved_cost": pytest.approx(2 * (10 * 2.0 + 2 * 8.0) / 1e6), "damaged": 1,
                                         "not_cached": 0}
    assert [i["status"] for i in after["items"]] == [i["status"] for i in first["items"]]
    assert [i["error"] for i in after["items"]] == [None, None, None]
    assert "2 answers from the cache, 1 asked" in again.stdout and "1 damaged entry ignored and asked again" in again.stdout
    third = run_cli("run", "-q", cwd=tmp_path, CACHE_KEY=SECRET)
    assert third.returncode == 1 and len(openai_server.requests) == 4, "the new answer replaced the damaged entry"
    assert _results(tmp_path)["summary"]["cache"]["hits"] == 3


MOVED_CONFIG = """
    models:
      sut: {base_url: "BASE", model: tiny, api_key: "${CACHE_KEY}"}
      grader: {base_url: "BASE", model: "${JUDGE_MODEL}", temperature: 0}
    defaults: {concurrency: 1, cache: {runner: true, path: answers.db}}
    store: r.db
    reports: {dir: out, formats: [json]}
    experiments:
      - id: chat
        dataset: {file: items.jsonl}
        runner: {uses: openai, with: {model: sut, prompt: "Describe ${PRODUCT_NAME}: {{ input }}"}}
        scorers: [{uses: contains, value: "${PRODUCT_NAME}"}, {uses: judge, with: {model: grader}}]
"""


def _judge_replies(server, count):
    server.push(*[tool_reply("grade", {"verdict": "pass", "reasoning": "fine"}) for _ in range(count)])


def test_a_judge_moved_through_a_var_is_asked_again_and_a_rotated_key_is_not(openai_server, write_config,  # noqa: F811
                                                                              tmp_path):
    """The key hashes ``${JUDGE_MODEL}``'s value and the prompt's ``${PRODUCT_NAME}``, never the api key;
    a replayed answer holds the product name as the model gave it, so the cached run passes too."""
    write_config(MOVED_CONFIG.replace("BASE", openai_server.base_url))
    _items(tmp_path, ["-"] * 2)
    product = "Acme Rocket Skates 3000"
    env = {"CACHE_KEY": SECRET, "JUDGE_MODEL": "judge-model-first", "PRODUCT_NAME": product}
    for _ in range(2):
        openai_server.push(text_reply(f"{product} go fast", prompt_tokens=10, completion_tokens=2))
        _judge_replies(openai_server, 1)
    first = run_cli("run", "-q", cwd=tmp_path, **env)
    assert first.returncode == 0 and len(openai_server.requests) == 4, first.stderr
    assert product.encode() not in _kept_text(tmp_path) and SECRET.encode() not in _kept_text(tmp_path)

    rotated = run_cli("run", "-q", cwd=tmp_path, **{**env, "CACHE_KEY": "sk-rotated-key-0815"})
    assert rotated.returncode == 0, rotated.stderr
    assert len(openai_server.requests) == 4, "a new api key asks nothing again"
    assert [i["scores"]["contains"]["passed"] for i in _results(tmp_path)["items"]] == [True, True], \
        "a replayed answer is the answer given: it names the product"

    _judge_replies(openai_server, 2)
    moved = run_cli("run", "-q", cwd=tmp_path, **{**env, "JUDGE_MODEL": "judge-model-second"})
    assert moved.returncode == 0, moved.stderr
    assert len(openai_server.requests) == 6, "the new judge model is asked; the runner's answers are kept"
    assert [body["model"] for body in openai_server.bodies[-2:]] == ["judge-model-second"] * 2


def test_a_change_to_a_module_the_plugin_imports_or_to_the_script_a_command_runs_asks_again(write_config,
                                                                                           tmp_path):
    """The key covers the plugin's folder (a helper module beside it) and the files a ``command``
    runner names (its script), not only the plugin's own file."""
    (tmp_path / "helper.py").write_text("def word():\n    return 'answer'\n", encoding="utf-8")
    (tmp_path / "own.py").write_text(PLUGIN.replace('return f"answer {item.id[1:]}"',
                                                    'import helper\n    return f"{helper.word()} {item.id[1:]}"'),
                                     encoding="utf-8")
    log = tmp_path / "calls.log"
    write_config(PLUGIN_CONFIG.replace("CONCURRENCY", "1").replace("LOG", str(log)))
    _items(tmp_path, ["x"] * 3)
    assert run_cli("run", "-q", cwd=tmp_path).returncode == 0 and _calls(log) == 3
    assert run_cli("run", "-q", cwd=tmp_path).returncode == 0 and _calls(log) == 3
    (tmp_path / "helper.py").write_text("def word():\n    return 'broken'\n", encoding="utf-8")
    broken = run_cli("run", "-q", cwd=tmp_path)
    assert broken.returncode == 1 and _calls(log) == 6, "the broken helper is run, not the old answers replayed"

    (tmp_path / "answer.py").write_text("import json, sys\nprint(json.load(sys.stdin)['expected'])\n",
                                        encoding="utf-8")
    write_config(f"""
        store: r.db
        reports: {{dir: out, formats: [json]}}
        defaults: {{concurrency: 1, cache: {{runner: true, path: answers.db}}}}
        experiments:
          - id: program
            dataset: {{file: items.jsonl}}
            runner: {{uses: command, with: {{argv: ["{sys.executable}", answer.py]}}}}
            scorers: [exact_match]
    """)
    assert run_cli("run", "-q", cwd=tmp_path).returncode == 0
    assert run_cli("run", "-q", cwd=tmp_path).returncode == 0
    assert _results(tmp_path)["summary"]["cache"]["hits"] == 3
    (tmp_path / "answer.py").write_text("print('broken')\n", encoding="utf-8")
    changed = run_cli("run", "-q", cwd=tmp_path)
    assert changed.returncode == 1 and _results(tmp_path)["summary"]["cache"]["hits"] == 0


def test_a_judge_not_at_temperature_0_is_asked_every_time_and_the_run_says_so(openai_server, write_config,  # noqa: F811
                                                                              tmp_path):
    write_config(MODEL_CONFIG.replace("BASE", openai_server.base_url)
                 .replace("model: tiny-judge, temperature: 0", "model: tiny-judge, temperature: 0.7")
                 .replace("scorers: [exact_match]", "scorers: [{uses: judge, with: {model: grader}}]"))
    _items(tmp_path, ["Be brief."] * 3)
    grade = tool_reply("grade", {"verdict": "pass", "reasoning": "fine"})
    for _ in range(3):
        openai_server.push(text_reply("an answer"), grade)
    first = run_cli("run", cwd=tmp_path, CACHE_KEY=SECRET)
    assert first.returncode == 0, first.stderr
    openai_server.push(grade, grade, grade)
    second = run_cli("run", cwd=tmp_path, CACHE_KEY=SECRET)
    assert second.returncode == 0 and len(openai_server.requests) == 9, second.stderr
    assert "3 answers from the cache, 0 asked (saved 45 tokens" in second.stdout, second.stdout
    assert "); 3 judge calls asked and not cached (a judge is cached only at temperature 0)" in second.stdout
    assert _results(tmp_path)["summary"]["cache"]["not_cached"] == 3
    # the report's tile counts the judge calls made among the calls, not only the answers kept
    page = run_cli("report", "--format", "html", "--report-dir", "page", cwd=tmp_path)
    assert page.returncode == 0, page.stderr
    assert ('<div class="stat-value">3 of 6 calls</div><div class="stat-name">From the cache</div>'
            in (tmp_path / "page" / "report.html").read_text())


def test_a_kept_answer_comes_back_as_given_even_when_it_wrote_a_var_of_its_own():
    """A model that writes ``${OPENAI_API_KEY}`` literally gets it back literally, never the key;
    the run's own secret values come back as they were."""
    from yamleval.records.redaction import Secrets, kept_redacted, restored

    secrets = Secrets({"Acme Rocket Skates": "${PRODUCT}", "sk-live-123456789": "${OPENAI_API_KEY}"})
    answer = {"reply": {"text": "Acme Rocket Skates: export ${OPENAI_API_KEY}, or $${OPENAI_API_KEY}",
                        "list": ["sk-live-123456789"]}}
    kept = kept_redacted(answer, secrets)
    assert "Acme" not in json.dumps(kept) and "sk-live" not in json.dumps(kept)
    assert restored(kept, secrets) == answer


def test_settings_named_like_credentials_are_left_out_of_a_key_and_nothing_else_is():
    from yamleval.calls.answers import without_credentials

    record = {"with": {"api_key": "a", "token": "b", "max_tokens": 50, "headers": {"Authorization": "c",
                                                                                   "X-Api-Key": "d", "X-Variant": "v2"}},
              "body": {"max_tokens": 50, "password": "stays"}, "item": {"input": {"token": "stays"}}}
    kept = without_credentials(record)
    assert kept["with"] == {"api_key": "<a credential>", "token": "<a credential>", "max_tokens": 50,
                            "headers": {"Authorization": "<a credential>", "X-Api-Key": "<a credential>",
                                        "X-Variant": "v2"}}
    assert kept["body"] == record["body"] and kept["item"] == record["item"]
